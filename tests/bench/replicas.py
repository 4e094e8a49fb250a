#!/usr/bin/env python3
"""replicas.py - decisions per second with 1, 2 and 3 governor replicas on one PostgreSQL
store, against the SQLite single process, on this machine (README, Running several replicas on PostgreSQL).

    python3 tests/bench/replicas.py [--build build] [--seconds 10] [--jobs 200] [--conns 16]
    python3 tests/bench/replicas.py --smoke      (CTest: every configuration for a second)

Each configuration runs behind HAProxy started from docs/haproxy.cfg (so every one pays the
same proxy hop): `sqlite` is one `governor serve` on its SQLite file; `pg-1`, `pg-2`, `pg-3`
are 1, 2 or 3 replicas on a throwaway PostgreSQL (tests/pg/pgtmp.py; fsync on,
synchronous_commit on). bench_load (tests/bench/load.c) drives keep-alive connections, one
request in flight each, over --jobs jobs; a warm-up fills the jobs' windows first, then the
measured phase continues each job's time. Prints one JSON line per configuration and the
ratios to `sqlite`. Everything shares this machine's cores with PostgreSQL, HAProxy and the
load generator: the ratios say how the store and the replicas scale here, not on a cluster.
Exits 77 (skipped) without PostgreSQL or HAProxy, or when the binary does not take
`--db postgresql://` (after measuring `sqlite`)."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "replicas"))

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("governor", nargs="?", help="the governor binary (default BUILD/governor)")
ap.add_argument("--build", default=os.path.join(ROOT, "build"))
ap.add_argument("--seconds", type=float, default=10)
ap.add_argument("--warmup", type=float, default=3)
ap.add_argument("--jobs", type=int, default=200)
ap.add_argument("--conns", type=int, default=16)
ap.add_argument("--smoke", action="store_true")
a = ap.parse_args()
if a.governor:
    a.build = os.path.dirname(os.path.abspath(a.governor))
if a.smoke:
    a.seconds, a.warmup, a.jobs, a.conns = 1, 1, 16, 4
sys.argv = [sys.argv[0], os.path.join(a.build, "governor")]  # gov.py reads the binary here

import common  # noqa: E402
from common import gov, pgtmp  # noqa: E402

common.need_tools(haproxy=True)
LOAD = os.path.join(a.build, "bench_load")
if not os.access(LOAD, os.X_OK):
    common.skip("no bench_load in %s (build it first)" % a.build)


def load(port, seconds, first):
    p = subprocess.run([LOAD, "--port", str(port), "--conns", str(a.conns), "--jobs",
                        str(a.jobs), "--first", str(first), "--seconds", str(seconds)],
                       capture_output=True, text=True, timeout=seconds * 10 + 120)
    if p.returncode != 0:
        raise RuntimeError("bench_load: " + p.stderr)
    return json.loads(p.stdout)


def measure(name, servers):
    tmp = common.tmpdir("governor-bench-")
    hap = common.HAProxy([s.port for s in servers], tmp)
    try:
        warm = load(hap.port, a.warmup, 0)
        r = load(hap.port, a.seconds, warm["next_first"])
    finally:
        hap.stop()
        for s in servers:
            s.stop()
    r["config"] = name
    print(json.dumps(r), flush=True)
    return r


results = {}
results["sqlite"] = measure("sqlite", [gov.Server()])
with pgtmp.Cluster() as pg:
    url = pg.create_db("bench")
    common.need_pg_support(pg, url)
    for n in (1, 2, 3):
        db = pg.create_db("bench%d" % n)
        reps = [common.start_replica(db) for _ in range(n)]
        results["pg-%d" % n] = measure("pg-%d" % n, reps)
base = results["sqlite"]["rps"] or 1
print("decisions/s: " + ", ".join("%s %.0f (%.2fx sqlite)" % (k, v["rps"], v["rps"] / base)
                                  for k, v in results.items()))
bad = {k: v["status_other"] for k, v in results.items() if v["status_other"]}
if bad:
    print("answers other than 2xx: %r" % bad)
    sys.exit(1)
