#!/usr/bin/env python3
"""history.py - bytes of history per decision: posts N decisions of the issue-13 load (4-vertex
jobs source -> map -> HASH aggregation -> sink, busy time as {min, avg, max}, round-robin over
--jobs jobs, samples 10 s of job time apart) to `governor serve`, checkpoints the WAL, and
prints the database's size divided by the number of decisions, with where the bytes are
(each table and index, from the dbstat virtual table when the sqlite3 module has it). Given
a second binary (--before, e.g. the previous version's), it runs the same load through both
and prints the ratio. Python 3 stdlib only.

With --retention it then measures what audit retention costs the decisions: the history just
written is all older than `--audit-retention 1s`, so a server started on a copy of it deletes
it in batches (500 decisions each) while a client posts new decisions one after another; the
p50/p99 of those decisions is printed with the same figures on another copy kept whole
(`--audit-retention 0`), and how long the delete took.

usage: python3 tests/bench/history.py [--binary build/governor] [--before OLD_BINARY]
                                      [--decisions 20000] [--jobs 1000] [--retention]
"""
import shutil
import argparse
import http.client
import json
import os
import re
import sqlite3
import subprocess
import tempfile
import time

AT0 = 1764410400000  # 2025-11-29T10:00:00Z
STEP_MS = 10000


def body(k):
    """Sample k of a job (the same for every job): 10 s of job time after sample k-1."""
    t = k * 10
    return json.dumps(
        {"at": AT0 + k * STEP_MS, "running_since": AT0 - 3600000, "status": "RUNNING",
         "vertices": [
             {"id": "source", "parallelism": 4, "max_parallelism": 128, "partitions": 32,
              "inputs": [],
              "metrics": {"busy_ms_per_s": {"min": 380, "avg": 420, "max": 470},
                          "backpressured_ms_per_s": 0, "pending_records": 900000,
                          "records_in": 1000 * t, "records_out": 1000 * t,
                          "records_in_per_s": 1000}},
             {"id": "map", "parallelism": 4, "max_parallelism": 128,
              "inputs": [{"from": "source", "ship": "FORWARD"}],
              "metrics": {"busy_ms_per_s": {"min": 250, "avg": 300, "max": 340},
                          "backpressured_ms_per_s": 0, "records_in": 1000 * t,
                          "records_out": 1000 * t, "records_in_per_s": 1000}},
             {"id": "agg", "parallelism": 2, "max_parallelism": 128,
              "inputs": [{"from": "map", "ship": "HASH"}],
              "metrics": {"busy_ms_per_s": {"min": 840, "avg": 880, "max": 920},
                          "backpressured_ms_per_s": 0, "records_in": 1000 * t,
                          "records_out": 100 * t, "records_in_per_s": 1000}},
             {"id": "sink", "parallelism": 2, "max_parallelism": 128,
              "inputs": [{"from": "agg", "ship": "FORWARD"}],
              "metrics": {"busy_ms_per_s": {"min": 150, "avg": 200, "max": 260},
                          "backpressured_ms_per_s": 0, "records_in": 100 * t,
                          "records_out": 100 * t, "records_in_per_s": 100}}]},
        separators=(",", ":"))


def start(binary, db, log, args=()):
    p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--db", db,
                          "--synchronous", "OFF", "--log-level", "info"] + list(args),
                         stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        with open(log.name) as f:
            m = re.search(r'msg="listening" addr=127\.0\.0\.1:(\d+)', f.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    raise SystemExit("%s did not start: see %s" % (binary, log.name))


def post_all(port, n, jobs):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for i in range(n):
        job, k = i % jobs, i // jobs
        conn.request("POST", "/v1/jobs/bench-%d/metrics" % job, body=body(k),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit("decision %d: status %d" % (i, r.status))
    conn.close()


def latencies(binary, db, retention, n):
    """Posts n decisions (new jobs) one after another; returns (p50, p99 in ms, seconds until
    the old history was gone or None)."""
    log = open(db + ".log", "w")
    p, port = start(binary, db, log, ["--audit-retention", retention])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    lat, gone = [], None
    t0 = time.time()
    ro = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    old = ro.execute("SELECT max(id) FROM decisions").fetchone()[0]
    for i in range(n):
        t = time.perf_counter()
        conn.request("POST", "/v1/jobs/ret-%d/metrics" % (i % 50), body=body(i // 50),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        lat.append(time.perf_counter() - t)
        if r.status != 200:
            raise SystemExit("decision %d: status %d" % (i, r.status))
        if gone is None and i % 100 == 0 and ro.execute(
                "SELECT count(*) FROM decisions WHERE id <= ?", (old,)).fetchone()[0] == 0:
            gone = time.time() - t0
    ro.close()
    conn.close()
    p.terminate()
    p.wait(timeout=30)
    lat.sort()
    return lat[len(lat) // 2] * 1000, lat[int(len(lat) * 0.99)] * 1000, gone


def retention(binary, db, n):
    keep, drop = db + ".keep.db", db + ".drop.db"
    shutil.copy(db, keep)
    shutil.copy(db, drop)
    time.sleep(1.5)  # every stored row is older than a second now
    k50, k99, _ = latencies(binary, keep, "0", n)
    d50, d99, gone = latencies(binary, drop, "1s", n)
    print("decisions while retention deletes the %s history (batches of 500): p50 %.2f ms, "
          "p99 %.2f ms; with retention off: p50 %.2f ms, p99 %.2f ms (p99 ratio %.2f); "
          "the old history was gone after %s" % (
              binary, d50, d99, k50, k99, d99 / k99,
              "%.1f s" % gone if gone is not None else "the run (not yet)"))


def measure(binary, n, jobs, tmp):
    db = os.path.join(tmp, "history-%d.db" % time.monotonic_ns())
    log = open(db + ".log", "w")
    p, port = start(binary, db, log)
    t0 = time.time()
    post_all(port, n, jobs)
    secs = time.time() - t0
    p.terminate()
    p.wait(timeout=30)
    c = sqlite3.connect(db)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    decisions = c.execute("SELECT count(*) FROM decisions").fetchone()[0]
    parts = []
    try:
        parts = c.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                          "ORDER BY 2 DESC").fetchall()
    except sqlite3.Error:
        pass
    c.close()
    size = os.path.getsize(db)
    return {"binary": binary, "db": db, "decisions": decisions, "bytes": size, "secs": secs,
            "per_decision": size / max(decisions, 1), "parts": parts}


def report(m):
    print("%s: %d decisions, %d bytes after a checkpoint: %.0f bytes per decision "
          "(%.0f decisions/s posted)" % (m["binary"], m["decisions"], m["bytes"],
                                          m["per_decision"], m["decisions"] / m["secs"]))
    state = ("job_window", "jobs", "sqlite_autoindex_jobs_1", "store_probe", "sqlite_schema")
    hist = sum(size for name, size in m["parts"] if name not in state)
    if m["parts"]:
        print("  history alone (without the jobs' state and windows): %.0f bytes per decision"
              % (hist / max(m["decisions"], 1)))
    for name, size in m["parts"]:
        print("  %-28s %8.0f bytes per decision" % (name, size / max(m["decisions"], 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/governor")
    ap.add_argument("--before", help="another governor binary to compare with")
    ap.add_argument("--decisions", type=int, default=20000)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--retention", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="governor-history-")
    before = measure(a.before, a.decisions, a.jobs, tmp) if a.before else None
    after = measure(a.binary, a.decisions, a.jobs, tmp)
    if before:
        report(before)
    report(after)
    if before:
        print("ratio after/before: %.3f (%.1fx smaller)" % (
            after["per_decision"] / before["per_decision"],
            before["per_decision"] / after["per_decision"]))
    if a.retention:
        retention(a.binary, after["db"], 6000)
    per_day = 86400 / (STEP_MS / 1000) * after["per_decision"]
    print("disk per job: %.1f MB a day at one sample every 10 s, %.2f GB for 90 days" % (
        per_day / 1e6, per_day * 90 / 1e9))


if __name__ == "__main__":
    main()
