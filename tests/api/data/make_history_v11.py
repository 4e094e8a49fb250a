#!/usr/bin/env python3
"""Writes tests/api/data/history_v11.json.xz, the fixture of test_history_two_parts.py: a history
written by the version before the history in two parts (SQLite schema 11, PostgreSQL schema 3),
on each store, with what that version answered about it. Run it with that version's binary:

    python3 tests/api/data/make_history_v11.py OLD_BUILD/governor

For SQLite, and for PostgreSQL when its binaries are installed (tests/pg/pgtmp.py), it posts
audit_sim.py's 1,000 steps (three jobs, a config change, a deletion, a job under the shipped
`freeze` executor) to OLD_BUILD/governor with the shipped policies, then records every row of
the database (SQLite: as SQL statements; PostgreSQL: each table as CSV), GET
/v1/jobs/{job}/decisions, /events, /timeline and /advice, GET /v1/decisions/{id} of every
decision, POST /v1/replay and `governor replay --db` of each job (as recorded and with a
candidate option), each as the exact text the old version printed."""
import json
import lzma
import os
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", "..", "pg"))
import audit_sim  # noqa: E402
import pgtmp  # noqa: E402
from gov import Server  # noqa: E402

POLICIES = os.path.join(HERE, "..", "..", "..", "policies")
JOBS = ("orders", "clicks", "payments")
CANDIDATE = "job.autoscaler.utilization.target=0.9"
FROM, TO = audit_sim.T0, audit_sim.T0 + 1000 * audit_sim.STEP_MS
PG_TABLES = ["decision_configs", "decisions", "vertex_decisions", "events", "plugin_calls",
             "policy_revisions", "config_changes", "jobs", "job_window"]


def req_text(s, method, path, body=None):
    c = s.conn(timeout=120)
    c.request(method, path, json.dumps(body) if body is not None else None,
              {"Content-Type": "application/json"} if body is not None else {})
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    assert r.status == 200, (path, r.status, text)
    return text


def answers(s, ids):
    """Every GET of the history, and POST /v1/replay, as the server printed them."""
    got = {}
    for job in JOBS:
        for path in ("/v1/jobs/%s/decisions?limit=1000" % job, "/v1/jobs/%s/events?limit=1000" % job,
                     "/v1/jobs/%s/timeline?from=%d&to=%d" % (job, FROM, TO),
                     "/v1/jobs/%s/timeline?from=%d&to=%d&step=600000" % (job, FROM, TO),
                     "/v1/jobs/%s/advice?window=17h&to=%d" % (job, TO)):
            got[path] = req_text(s, "GET", path)
        got["POST /v1/replay %s" % job] = req_text(s, "POST", "/v1/replay", {"job": job})
        got["POST /v1/replay %s candidate" % job] = req_text(
            s, "POST", "/v1/replay",
            {"job": job, "config": dict([CANDIDATE.split("=", 1)])})
    for i in ids:
        got["/v1/decisions/%d" % i] = req_text(s, "GET", "/v1/decisions/%d" % i)
    return got


def replays(binary, db):
    out = {}
    for job in JOBS:
        for cand in (None, CANDIDATE):
            args = [binary, "replay", "--db", db, "--job", job, "--policies", POLICIES]
            if cand:
                args += ["--set", cand]
            p = subprocess.run(args, capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, p.stderr
            out["%s %s" % (job, cand or "")] = p.stdout
    return out


def on_sqlite(binary):
    s = Server(args=["--synchronous", "OFF", "--policies", POLICIES])
    assert s.proc.args[0] == binary, "run gov.Server with the old binary: argv[1]"
    audit_sim.run(s.port, steps=1000)
    c = sqlite3.connect(s.db)
    ids = [r[0] for r in c.execute("SELECT id FROM decisions ORDER BY id")]
    version = c.execute("PRAGMA user_version").fetchone()[0]
    c.close()
    got = answers(s, ids)
    s.stop()
    c = sqlite3.connect(s.db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sql = list(c.iterdump())
    c.close()
    return {"user_version": version, "sql": sql, "get": got, "replay": replays(binary, s.db)}


def on_pg(binary):
    with pgtmp.Cluster() as pg:
        url = pg.create_db("history")
        s = Server(db=url, args=["--policies", POLICIES])
        audit_sim.run(s.port, steps=1000)
        ids = [int(r[0]) for r in pgtmp.rows(url, "SELECT id FROM decisions ORDER BY id")]
        version = int(pgtmp.rows(url, "SELECT max(version) FROM schema_version")[0][0])
        got = answers(s, ids)
        s.stop()
        tables = {}
        for t in PG_TABLES:
            cols = [r[0] for r in pgtmp.rows(
                url, "SELECT column_name FROM information_schema.columns WHERE table_name = '%s' "
                     "ORDER BY ordinal_position" % t)]
            csv = pg.psql(url, "\\copy (SELECT %s FROM %s ORDER BY 1) TO STDOUT WITH (FORMAT csv)"
                          % (", ".join(cols), t))
            tables[t] = {"columns": cols, "csv": csv}
        return {"version": version, "tables": tables, "get": got, "replay": replays(binary, url)}


def main():
    binary = os.path.abspath(sys.argv[1])
    fixture = {"sqlite": on_sqlite(binary)}
    if not pgtmp.missing():
        fixture["pg"] = on_pg(binary)
    with lzma.open(os.path.join(HERE, "history_v11.json.xz"), "wt", preset=9) as f:
        json.dump(fixture, f)


if __name__ == "__main__":
    main()
