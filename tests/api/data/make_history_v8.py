#!/usr/bin/env python3
"""Writes tests/api/data/history_v8.json.xz, the fixture of test_history_migration.py: a history
written by a governor of schema 8 (the version before migration 009), with what that version
answered about it. Run it with that version's binary:

    python3 tests/api/data/make_history_v8.py OLD_BUILD/governor

It posts audit_sim.py's 1,000 steps (three jobs, a config change, a deletion, a job under the
shipped `freeze` executor) to OLD_BUILD/governor with the shipped policies, then records every
row of the database (as SQL statements), GET /v1/jobs/{job}/decisions and /events, GET
/v1/decisions/{id} of every decision, and `governor replay --db` of each job (as recorded and
with a candidate option), each as the exact text the old version printed."""
import json
import lzma
import os
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import audit_sim  # noqa: E402
from gov import Server  # noqa: E402

POLICIES = os.path.join(HERE, "..", "..", "..", "policies")
JOBS = ("orders", "clicks", "payments")
CANDIDATE = "job.autoscaler.utilization.target=0.9"


def get_text(s, path):
    c = s.conn()
    c.request("GET", path)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    assert r.status == 200, (path, r.status, body)
    return body


def replays(binary, db):
    out = {}
    for job in JOBS:
        for cand in (None, CANDIDATE):
            args = [binary, "replay", "--db", db, "--job", job, "--policies", POLICIES]
            if cand:
                args += ["--set", cand]
            p = subprocess.run(args, capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, p.stderr
            out["%s %s" % (job, cand or "")] = p.stdout
    return out


def main():
    binary = sys.argv[1]
    s = Server(args=["--synchronous", "OFF", "--policies", POLICIES])
    s_bin = s.proc.args[0]
    assert s_bin == binary, "run gov.Server with the old binary: argv[1]"
    audit_sim.run(s.port, steps=1000)
    got = {}
    for job in JOBS:
        got["/v1/jobs/%s/decisions?limit=1000" % job] = get_text(
            s, "/v1/jobs/%s/decisions?limit=1000" % job)
        got["/v1/jobs/%s/events?limit=1000" % job] = get_text(
            s, "/v1/jobs/%s/events?limit=1000" % job)
    c = sqlite3.connect(s.db)
    ids = [r[0] for r in c.execute("SELECT id FROM decisions ORDER BY id")]
    version = c.execute("PRAGMA user_version").fetchone()[0]
    c.close()
    for i in ids:
        got["/v1/decisions/%d" % i] = get_text(s, "/v1/decisions/%d" % i)
    s.stop()
    c = sqlite3.connect(s.db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sql = [line for line in c.iterdump()]
    c.close()
    fixture = {"user_version": version, "sql": sql, "get": got,
               "replay": replays(binary, s.db)}
    with lzma.open(os.path.join(HERE, "history_v8.json.xz"), "wt", preset=9) as f:
        json.dump(fixture, f)


if __name__ == "__main__":
    main()
