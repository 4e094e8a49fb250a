"""pgcopy.py - copies governor's tables from a SQLite database into a PostgreSQL one that has
schema/pg/ (every migration), row for row (the same ids), through psql's COPY: the tests that
compare what the two stores answer for the same history fill PostgreSQL with it this way.
Python 3 stdlib only."""
import os
import sqlite3
import subprocess

TABLES = ["decision_configs", "decision_outcomes", "plugin_names", "decisions", "events",
          "policy_revisions", "config_changes", "jobs", "job_window", "sample_chunks"]


def csv_value(v):
    if v is None:
        return ""
    if isinstance(v, bytes):
        return '"\\x%s"' % v.hex()
    if isinstance(v, (int, float)):
        return repr(v)
    return '"%s"' % str(v).replace('"', '""')


def copy(sqlite_path, pg, url):
    """Copies every table of TABLES; pg is a pgtmp.Cluster (for its psql), url the database."""
    db = sqlite3.connect("file:%s?mode=ro" % sqlite_path, uri=True)
    for t in TABLES:
        cols = [r[1] for r in db.execute("PRAGMA table_info(%s)" % t)]
        rows = db.execute("SELECT %s FROM %s" % (", ".join(cols), t))
        text = "".join(",".join(csv_value(v) for v in r) + "\n" for r in rows)
        p = subprocess.run([os.path.join(pg.bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                            "-d", url, "-c",
                            "\\copy %s (%s) FROM STDIN WITH (FORMAT csv)" % (t, ", ".join(cols))],
                           input=text, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError("copy of %s: %s" % (t, p.stderr))
    # the identity columns go on after the copied ids
    pg.psql(url, "".join(
        "SELECT setval(pg_get_serial_sequence('%s', 'id'), coalesce(max(id), 0) + 1, false) "
        "FROM %s;" % (t, t) for t in ("decision_configs", "decision_outcomes", "plugin_names",
                                      "decisions", "events", "config_changes")))
    db.close()
