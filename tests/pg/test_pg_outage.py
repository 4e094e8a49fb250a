#!/usr/bin/env python3
"""PostgreSQL goes away under a running governor (a crash, or a failover before the URL reaches
the new primary) and comes back: meanwhile a decision is not stored and answers 503 with
Retry-After, /readyz answers 503, nothing acknowledged is lost, and once the store is back the
client's retry of the same sample is decided and stored once, without a restart of governor.
Exits 77 (skipped) without PostgreSQL."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "api"))
import pgtmp  # noqa: E402

why = pgtmp.missing()
if why:
    print("SKIP:", why)
    sys.exit(pgtmp.SKIP)
from gov import Server, Checks, sample  # noqa: E402

c = Checks()
with pgtmp.Cluster() as pg:
    url = pg.create_db("outage")
    s = Server(db=url)
    path = "/v1/jobs/o/metrics"
    ids = []
    for i in range(5):
        st, r, _ = s.req("POST", path, sample(i))
        c.check(st == 200, "sample %d decided before the outage: %d %r" % (i, st, r))
        ids.append(r.get("decision_id") if st == 200 else None)

    pg.halt("immediate")
    st, r, h = s.req("POST", path, sample(5))
    c.check(st == 503 and "Retry-After" in h,
            "a decision while PostgreSQL is down: 503 with Retry-After (%d %r %r)" % (st, r, h))
    ready = None
    for _ in range(40):
        ready = s.req("GET", "/readyz")[0]
        if ready == 503:
            break
        time.sleep(0.25)
    c.check(ready == 503, "/readyz answers 503 while the store is down (%s)" % ready)

    pg.resume()
    deadline = time.time() + 60
    st = None
    while time.time() < deadline:
        st, r, h = s.req("POST", path, sample(5))
        if st == 200:
            break
        c.check(st == 503, "only 503 until the store is back: %d %r" % (st, r))
        time.sleep(min(2.0, float(h.get("Retry-After", "1"))))
    c.check(st == 200, "the retry is decided once PostgreSQL is back: %s" % st)
    ids.append(r.get("decision_id") if st == 200 else None)
    st, r, _ = s.req("POST", path, sample(6))
    c.check(st == 200, "and the next sample too: %d" % st)
    c.check(s.req("GET", "/readyz")[0] == 200, "/readyz is 200 again")

    rows = pgtmp.rows(url, "SELECT id, at FROM decisions WHERE job = 'o' ORDER BY id")
    c.check([r[1] for r in rows] == [sample(i)["at"] for i in range(7)],
            "one stored decision per sample, in order: %r" % rows)
    c.check(all(x in [r[0] for r in rows] for x in ids),
            "every acknowledged decision is stored: %r" % ids)
    c.check(s.stop() == 0, "governor exits 0")
c.done()
