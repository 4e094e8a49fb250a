#!/usr/bin/env python3
"""Two replicas fed the same job at once (README, Running several replicas on PostgreSQL): both clients post the same
samples of one job, each to its own replica, at the same time, retrying a 503 (the "conflict"
of the replica that lost the race) as the client contract says. Exactly one decision per
sample is stored, and both clients get that decision's id for every sample (one of them as the
repeat). Exits 77 (skipped) without PostgreSQL or with a binary that does not take
`--db postgresql://`."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import gov, pgtmp  # noqa: E402

common.need_tools(haproxy=False)
N = int(os.environ.get("SAMPLES", "30"))
JOBS = ["twin"]
c = gov.Checks()

with pgtmp.Cluster() as pg:
    url = pg.create_db("governor")
    common.need_pg_support(pg, url)
    tmp = common.tmpdir("governor-twins-")
    reps = [common.start_replica(url, tmp=tmp) for _ in range(2)]
    answers = [[], []]
    stats = [{}, {}]
    barrier = threading.Barrier(2)

    def client(k):
        for i in range(N):
            barrier.wait()  # both send sample i at the same moment
            st, r = common.post_until_decided(reps[k].port, "twin",
                                              common.trace(JOBS, "twin", i), stats=stats[k])
            answers[k].append((st, r.get("decision_id") if isinstance(r, dict) else None,
                               r.get("repeat") if isinstance(r, dict) else None))

    ths = [threading.Thread(target=client, args=(k,)) for k in range(2)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    print("retries by cause:", stats)
    c.check(all(a[0] == 200 for a in answers[0] + answers[1]) and
            len(answers[0]) == len(answers[1]) == N, "every sample decided for both clients")
    same = all(a[1] == b[1] for a, b in zip(answers[0], answers[1]))
    c.check(same, "both clients got the same decision for each sample")
    repeats = sum(1 for a, b in zip(answers[0], answers[1]) if bool(a[2]) != bool(b[2]))
    c.check(repeats == N, "for each sample exactly one answer is the repeat: %d of %d" % (
        repeats, N))
    rows = common.stored_pg(pg, url)
    ats = [r[2] for r in rows if r[1] == "twin"]
    c.check(len(ats) == N and len(set(ats)) == N,
            "exactly one decision per sample stored: %d rows, %d samples" % (len(ats), N))
    for r in reps:
        c.check(r.stop() == 0, "a replica exits 0")
c.done()
