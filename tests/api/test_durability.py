"""kill -9 in the middle of a load of concurrent clients loses no acknowledged decision,
and after a restart each job's decisions are those of an uninterrupted run over the same
trace (action, parallelism, reason compared sample by sample).

Each job has one client thread that posts its trace in order (as a job would). After the
kill, a client resumes after the last sample the store holds, as a real client would do
by reading its history."""
import os
import random
import signal
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample  # noqa: E402

JOBS = ["job-%d" % i for i in range(8)]
N = 60
CFG = {"job.autoscaler.metrics.window": "3 min", "job.autoscaler.stabilization.interval": "1 min",
       "job.autoscaler.scale-down.interval": "2 min"}


def trace(j, i):
    """Deterministic per job: load ramps up, then down, so decisions change over time."""
    k = JOBS.index(j)
    rate = 1000.0 * (1 + (i % 30) / 10.0) * (1 + k / 8.0)
    busy = min(990.0, 300.0 + 20.0 * (i % 30) + 10 * k)
    return sample(i, rate=rate, busy_src=busy, busy_agg=min(990.0, busy + 100), config=CFG)


def run(server, job, start, acked, stop):
    conn = server.conn(timeout=30)
    for i in range(start, N):
        if stop.is_set():
            return
        try:
            st, body, _ = server.req("POST", "/v1/jobs/%s/metrics" % job, trace(job, i),
                                     conn=conn)
        except (ConnectionError, OSError):
            return
        if st != 200:
            acked.append((job, i, None, "status %d %r" % (st, body)))
            return
        acked.append((job, i, body["decision_id"], None))


def decisions(db):
    c = sqlite3.connect(db)
    out = {}
    for job, at, action, reason, dj in c.execute(
            "SELECT job, at, action, reason, decision_json FROM decisions ORDER BY id"):
        import json
        out.setdefault(job, []).append((at, action, reason,
                                        sorted(json.loads(dj)["parallelism"].items())))
    c.close()
    return out


c = Checks()
random.seed(int(os.environ.get("SEED", "7")))

# The reference: an uninterrupted run.
ref = Server()
acked = []
ths = [threading.Thread(target=run, args=(ref, j, 0, acked, threading.Event())) for j in JOBS]
[t.start() for t in ths]
[t.join() for t in ths]
c.check(all(a[3] is None for a in acked) and len(acked) == N * len(JOBS),
        "reference run complete: %r" % [a for a in acked if a[3]][:3])
c.check(ref.stop() == 0, "reference exits 0")
want = decisions(ref.db)

# The interrupted run: SIGKILL while every client is posting.
s = Server()
acked = []
stop = threading.Event()
ths = [threading.Thread(target=run, args=(s, j, 0, acked, stop)) for j in JOBS]
[t.start() for t in ths]
deadline = time.time() + 20
while len(acked) < N * len(JOBS) // 3 and time.time() < deadline:
    time.sleep(0.005)
s.kill()
stop.set()
[t.join() for t in ths]
n_acked = len([a for a in acked if a[2]])
c.check(0 < n_acked < N * len(JOBS), "killed mid-load (%d of %d acknowledged)"
        % (n_acked, N * len(JOBS)))
db = sqlite3.connect(s.db)
stored = {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, job, at FROM decisions")}
db.close()
lost = [a for a in acked if a[2] and stored.get(a[2]) != (a[0], sample(a[1])["at"])]
c.check(not lost, "every acknowledged decision is stored (lost: %r)" % lost[:5])

# Restart, resume each job after its last stored sample.
s2 = Server(db=s.db, tmp=s.tmp)
acked2 = []
ths = []
for j in JOBS:
    st, body, _ = s2.req("GET", "/v1/jobs/%s/decisions?limit=1" % j)
    last = body["decisions"][0]["at"] if body["decisions"] else None
    start = 0 if last is None else (last - sample(0)["at"]) // 30000 + 1
    ths.append(threading.Thread(target=run, args=(s2, j, start, acked2, threading.Event())))
[t.start() for t in ths]
[t.join() for t in ths]
c.check(all(a[3] is None for a in acked2), "resumed run: %r" % [a for a in acked2 if a[3]][:3])
c.check(s2.stop() == 0, "restarted server exits 0")
got = decisions(s2.db)
for j in JOBS:
    c.check(got.get(j) == want.get(j), "%s: decisions equal the uninterrupted run" % j)
    if got.get(j) != want.get(j):
        for a, b in zip(got.get(j, []), want.get(j, [])):
            if a != b:
                print("  first difference:", a, "!=", b)
                break
kinds = {(d[1], d[2]) for j in JOBS for d in want.get(j, [])}
print("actions and reasons seen in the reference:", sorted(kinds))
c.check(len(kinds) >= 3, "the trace exercises stateful decisions")
c.done()
