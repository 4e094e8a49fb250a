#!/usr/bin/env python3
"""Three replicas behind HAProxy on one PostgreSQL store; one is killed with SIGKILL under
concurrent load (README, Running several replicas on PostgreSQL). A throwaway PostgreSQL (tests/pg/pgtmp.py), three
`governor serve --db URL` replicas, HAProxy from docs/haproxy.cfg with the ports filled in;
one client thread per job posts the job's trace in order through HAProxy, retrying as the
client contract says (the same request again after a dropped connection or a 503). After a
third of the samples are acknowledged the replica that serves the most jobs is killed; the
load goes on. Then:
  - every sample was acknowledged (200) and every acknowledged decision is stored exactly once
    (its decision_id under its job and `at`, no sample decided twice), read from PostgreSQL;
  - no job answered COLLECTING_METRICS where the single process did not (the jobs that moved
    kept their window);
  - each job's decisions (action, reason, parallelism, sample by sample) equal those of an
    uninterrupted single-process run of the same traces on SQLite.
Exits 77 (skipped) without PostgreSQL or HAProxy, or with a binary that does not take
`--db postgresql://`. JOBS and SAMPLES come from the environment (default 12 and 60)."""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import gov, pgtmp  # noqa: E402

common.need_tools(haproxy=True)
JOBS = ["fo-%d" % i for i in range(int(os.environ.get("JOBS", "12")))]
N = int(os.environ.get("SAMPLES", "60"))
c = gov.Checks()


def drive(port, results, stats, acked_count, kill_at=None, on_kill=None):
    """One thread per job through `port`; results[job] = [(i, status, answer)]."""
    lock = threading.Lock()

    def one(job):
        for i in range(N):
            st, r = common.post_until_decided(port, job, common.trace(JOBS, job, i),
                                              stats=stats)
            results[job].append((i, st, r))
            with lock:
                acked_count[0] += st == 200
            if st != 200:
                return

    ths = [threading.Thread(target=one, args=(j,)) for j in JOBS]
    [t.start() for t in ths]
    if kill_at is not None:
        while acked_count[0] < kill_at and any(t.is_alive() for t in ths):
            time.sleep(0.01)
        on_kill()
    [t.join() for t in ths]


with pgtmp.Cluster() as pg:
    url = pg.create_db("governor")
    common.need_pg_support(pg, url)
    t0 = time.time()
    # The reference: one process on SQLite, uninterrupted, the same traces.
    ref = gov.Server()
    ref_results = {j: [] for j in JOBS}
    drive(ref.port, ref_results, {}, [0])
    c.check(all(len(v) == N and all(x[1] == 200 for x in v) for v in ref_results.values()),
            "the reference run decides every sample")
    c.check(ref.stop() == 0, "the reference exits 0")
    want = common.by_job(common.stored_sqlite(ref.db))

    tmp = common.tmpdir("governor-replicas-")
    reps = [common.start_replica(url, tmp=tmp) for _ in range(3)]
    hap = common.HAProxy([r.port for r in reps], tmp)
    results = {j: [] for j in JOBS}
    stats = {}
    killed = []

    def kill():
        # the replica serving the most jobs: the one whose log names most job routes
        counts = [sum(r.logs().count("/v1/jobs/%s/" % j) > 0 for j in JOBS) for r in reps]
        victim = counts.index(max(counts))
        reps[victim].proc.send_signal(signal.SIGKILL)
        reps[victim].proc.wait()
        killed.append((victim, counts[victim], time.time()))
        print("killed replica %d (it had served %d jobs)" % (victim + 1, counts[victim]),
              flush=True)

    acked = [0]
    drive(hap.port, results, stats, acked, kill_at=len(JOBS) * N // 3, on_kill=kill)
    print("retries by cause:", stats)
    c.check(killed and killed[0][1] > 0, "a replica that served jobs was killed")
    incomplete = {j: v[-1][1:] for j, v in results.items()
                  if len(v) != N or any(x[1] != 200 for x in v)}
    c.check(not incomplete, "every sample acknowledged through HAProxy: %r" % (
        list(incomplete.items())[:3],))

    rows = common.stored_pg(pg, url)
    by_id = {r[0]: (r[1], r[2]) for r in rows}
    seen = {}
    for r in rows:
        seen[(r[1], r[2])] = seen.get((r[1], r[2]), 0) + 1
    dup = [k for k, n in seen.items() if n > 1]
    c.check(not dup, "no sample decided twice: %r" % dup[:3])
    lost = [(j, i) for j, v in results.items() for i, st, r in v
            if st == 200 and by_id.get(r["decision_id"]) != (j, common.trace(JOBS, j, i)["at"])]
    c.check(not lost, "every acknowledged decision is stored under its job and at: %r" % lost[:3])
    c.check(len(rows) == len(JOBS) * N, "one decision per sample: %d rows for %d samples" % (
        len(rows), len(JOBS) * N))

    # A job whose window restarts after a scaling it executed collects again in the
    # uninterrupted run too: "back" is a COLLECTING_METRICS the single process did not answer.
    back = []
    for j, v in results.items():
        ref = {at: reason for at, _, reason, _ in want.get(j, [])}
        for i, st, r in v:
            at = common.trace(JOBS, j, i)["at"]
            if st == 200 and r.get("reason") == "COLLECTING_METRICS" and \
                    ref.get(at) != "COLLECTING_METRICS":
                back.append((j, i))
                break
    c.check(not back, "no job back to COLLECTING_METRICS where the single process was not: %r"
            % back)

    got = common.by_job(rows)
    for j in JOBS:
        ok = got.get(j) == want.get(j)
        c.check(ok, "%s: decisions equal the uninterrupted single process" % j)
        if not ok:
            for a, b in zip(got.get(j, []), want.get(j, [])):
                if a != b:
                    print("  first difference:", a, "!=", b)
                    break
    hap.stop()
    for r in reps:
        if r.proc.poll() is None:
            c.check(r.stop() == 0, "a surviving replica exits 0")
print("%.1f s" % (time.time() - t0))
c.done()
