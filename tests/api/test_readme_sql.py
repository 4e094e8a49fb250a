"""The README's audit questions keep working (README, Audit with SQL): every `q "SQL"` command of the
"Audit with SQL" section is run through POST /v1/sql, and its `sqlite3 -readonly audit.db
"SQL"` twin through the sqlite3 shell, against a database filled by audit_sim.py (the history
the README's sample answers come from). Each must answer 200 (rc 0 for the shell).

With README_SQL_PRINT=1 in the environment it also prints each answer as the README shows it
(`python3 tests/api/test_readme_sql.py build/governor` regenerates the sample answers)."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import audit_sim  # noqa: E402
from gov import Server, Checks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "..", "docs", "audit.md")

c = Checks()
text = open(README).read()
m = re.search(r"^#+ Ten audit questions\n(.*)", text, re.S | re.M)
c.check(m is not None, "docs/audit.md has a section 'Ten audit questions'")
section = m.group(1) if m else ""
queries = re.findall(r'^q "([^"]*)"\s*$', section, re.M)
shell = re.findall(r'^sqlite3 -readonly audit\.db "([^"]*)"\s*$', section, re.M)
c.check(len(queries) == 10, "ten audit questions with a q command: %d" % len(queries))
c.check(shell == queries, "each q command has the same SQL as its sqlite3 twin")
for sql in queries:
    c.check(not re.search(r'[$`!\\]', sql), "no shell-special character in: %s" % sql[:60])

s = Server(args=["--synchronous", "NORMAL"])
audit_sim.run(s.port, steps=1000)
printing = os.environ.get("README_SQL_PRINT")
sqlite3 = shutil.which("sqlite3")


def fmt(v):
    if isinstance(v, float):
        return ("%.3f" % v).rstrip("0").rstrip(".")
    return "NULL" if v is None else str(v)


for i, sql in enumerate(queries, 1):
    st, r, _ = s.req("POST", "/v1/sql", {"sql": sql})
    c.check(st == 200, "question %d: 200, got %d %r" % (i, st, r))
    if sqlite3:
        p = subprocess.run([sqlite3, "-readonly", s.db, sql], capture_output=True, text=True,
                           timeout=60)
        c.check(p.returncode == 0 and not p.stderr, "question %d in the shell: %s" % (i, p.stderr))
    if printing and st == 200:
        print("--- %d" % i)
        print(" | ".join(r["columns"]))
        for row in r["rows"][:8]:
            print(" | ".join(fmt(v) for v in row))
        if len(r["rows"]) > 8:
            print("... (%d rows in all)" % len(r["rows"]))
        if not r["rows"]:
            print("(no rows)")
c.check(s.stop() == 0, "clean stop")
c.done()
