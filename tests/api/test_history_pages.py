"""A page of GET /v1/jobs/{job}/decisions holds at most max-page-rows vertex rows (the sum of its
decisions' vertices; always its first decision) and says where the rest begins (`next`: the
same query from the last decision listed, `until` its `at` and `before` its id): the pages
together list every decision once, newest first, a rebalance advice counting its items. Runs
on SQLite and, under GOVERNOR_TEST_PG=1, on PostgreSQL (the two stores page alike)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, T0  # noqa: E402

c = Checks()
# 2-vertex decisions, 5 rows a page: two decisions, then the one that would pass it waits.
s = Server(args=["--max-page-rows", "5"])
ids = []
for i in range(5):
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body
    ids.append(body["decision_id"])
# A rebalance advice at the same `at` as the last sample: paged by (at, id), not by at alone.
st, body, _ = s.req("POST", "/v1/jobs/orders/rebalance", {
    "at": T0 + 4 * 30000, "idle_slots": 2,
    "items": [{"id": "a", "remaining": 100, "rate": 1}, {"id": "b", "remaining": 1, "rate": 1}]})
assert st == 200, body
ids.append(body["decision_id"])
newest_first = sorted(ids, key=lambda d: (T0 + 4 * 30000 if d == ids[-1] else
                                         T0 + ids.index(d) * 30000, d), reverse=True)


def pages(path):
    seen, n, nxt = [], 0, path
    while nxt and n < 20:
        st, body, _ = s.req("GET", nxt)
        c.check(st == 200, "%s: %d %r" % (nxt, st, body))
        if st != 200:
            break
        seen.append([d["decision_id"] for d in body["decisions"]])
        nxt, n = body.get("next"), n + 1
    return seen


got = pages("/v1/jobs/orders/decisions?limit=1000")
c.check(sum(got, []) == newest_first,
        "the pages list every decision once, newest first: %r, expected %r" % (got, newest_first))
c.check([len(p) for p in got] == [3, 2, 1],
        "5 rows a page (the advice counts its one split, a decision its 2 vertices): %r" % got)
st, body, _ = s.req("GET", "/v1/jobs/orders/decisions?limit=2")
c.check(st == 200 and len(body["decisions"]) == 2 and "next" not in body,
        "a page that stops at its limit, not at its rows, has no next: %r" % body.get("next"))
since = T0 + 30000
got = pages("/v1/jobs/orders/decisions?limit=1000&since=%d" % since)
c.check(sum(got, []) == newest_first[:-1], "next keeps since: %r" % got)
for bad in ("0", "-1", "01", "x", "1%00"):
    st, body, _ = s.req("GET", "/v1/jobs/orders/decisions?before=" + bad)
    c.check(st == 400 and body.get("error", {}).get("field") == "before",
            "before=%s: 400 naming before, got %d %r" % (bad, st, json.dumps(body)[:200]))
s.stop()
c.done()
