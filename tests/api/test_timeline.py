"""GET /v1/jobs/{job}/timeline against a real server seeded with the backlog case's trace
(dashdata.py): the series per bucket agree with the stored decisions (read back through
GET /v1/decisions/{id}), the reasons' runs name their first decision, executed decisions are
events, the ETag turns a refresh into a 304, and bad parameters are 400s naming the field."""
import sys

import dashdata
import gov

c = gov.Checks()


def eq(a, b, what):
    c.check(a == b, "%s: %r != %r" % (what, a, b))


c.eq = eq
c.ok = c.check
s = gov.Server()
decs = dashdata.post_trace(s, job="orders")
first, last = decs[0]["at"], decs[-1]["at"]
base = "/v1/jobs/orders/timeline"

# One bucket per minute over the trace (30 s apart: two decisions a bucket).
q = "%s?from=%d&to=%d&step=1%%20min" % (base, first, last + 1)
st, tl, h = s.req("GET", q)
c.eq(st, 200, "timeline status")
n = len(tl["t"])
c.eq(n, (last + 1 - first + 59999) // 60000, "bucket count")
c.eq(tl["t"][0], first, "first bucket starts at from")
c.eq(tl["step_ms"], 60000, "step")
c.eq(tl["decisions"], len(decs), "every decision read")
for v in tl["vertices"]:
    for k in ("current", "target", "min", "max", "util", "util_target", "util_min", "util_max",
              "backlog_s"):
        c.eq(len(v[k]), n, "series %s.%s as long as t" % (v["id"], k))

# Each bucket's last decision gives its current and target, read back from the record.
by_bucket = {}
for d in decs:
    by_bucket[(d["at"] - first) // 60000] = d
src = [v for v in tl["vertices"] if v["id"] == "src"][0]
for b, d in by_bucket.items():
    st, rec, _ = s.req("GET", "/v1/decisions/%d" % d["decision_id"])
    vert = [v for v in rec["vertices"] if v["id"] == "src"][0]
    c.eq(src["current"][b], vert["current"], "bucket %d current = its last decision's" % b)
    c.eq(src["target"][b], vert["target"], "bucket %d target = its last decision's" % b)
    ev = vert["evaluated"]
    if ev.get("lag") is not None and ev.get("target_data_rate"):
        c.ok(src["backlog_s"][b] >= round(ev["lag"] / ev["target_data_rate"], 3) - 1e-6,
             "bucket %d backlog_s is the largest lag / input rate" % b)

# The trace's lag (600 s of input) is above the 300 s threshold: the bounds are off.
c.eq(tl["lag_threshold_s"], 300.0, "lag threshold from the options")
c.ok(all(x is True for x in tl["bounds_off"]), "bounds off during the backlog")
c.eq(src["util_min"][0], 0.0, "bounds [0, 1] while off")
c.eq(src["util_target"][0], 0.7, "utilization target")

# Reasons: runs with their first decision id and counts that add up.
runs = tl["reasons"]["runs"]
codes = tl["reasons"]["codes"]
c.eq(sum(r[4] for r in runs), len(decs), "runs cover every decision")
c.eq(runs[0][3], decs[0]["decision_id"], "first run starts at the first decision")
c.eq(codes[runs[-1][2]], decs[-1]["reason"], "last run's reason")
c.eq(runs[-1][3], decs[-1]["decision_id"], "last run's first decision")
# Executed decisions are the events.
executed = [d["decision_id"] for d in decs if d["execute"] and d["action"] != "NO_CHANGE"]
c.eq([e["decision_id"] for e in tl["events"]], executed, "events are the executed decisions")

# ETag: the same request again with If-None-Match is a 304 without a body.
etag = h.get("ETag")
c.ok(etag, "an ETag")
st, body, h2 = s.req("GET", q, headers={"If-None-Match": etag})
c.eq(st, 304, "refresh with If-None-Match")
c.eq(body, "", "304 has no body")
st, _, _ = s.req("GET", q, headers={"If-None-Match": '"0000000000000000"'})
c.eq(st, 200, "another ETag gets the body")
# A new decision changes the ETag.
more = dashdata.post_trace(s, job="orders2")
st, tl2, h3 = s.req("GET", "/v1/jobs/orders2/timeline?from=%d&to=%d" % (first, last + 1))
c.eq(st, 200, "second job")
c.ok(h3.get("ETag") != etag, "another history, another ETag")

# vertices= filters.
st, tl3, _ = s.req("GET", q + "&vertices=agg")
c.eq([v["id"] for v in tl3["vertices"]], ["agg"], "vertices filter")

# Defaults: the last six hours of now (the trace lies in 2025: nothing there).
st, tl4, _ = s.req("GET", base)
c.eq(st, 200, "default range")
c.eq(tl4["to"] - tl4["from"], 6 * 3600 * 1000, "default range is 6 h")
c.eq(len(tl4["t"]), 360, "default step gives 360 buckets")
c.eq(tl4["decisions"], 0, "nothing in the last 6 h")
# An unknown job is an empty timeline, not an error.
st, tl5, _ = s.req("GET", "/v1/jobs/nobody/timeline?from=%d&to=%d" % (first, last + 1))
c.eq((st, tl5["decisions"], tl5["vertices"]), (200, 0, []), "unknown job")

# Bad parameters: 400 naming the field; the store is unchanged.
fp = gov.fingerprint(s.db)
for query, field in [("?step=1s", "step"),                       # 21,600 buckets
                     ("?from=%d&to=%d&step=1" % (first, first + 2001), "step"),
                     ("?from=yesterday", "from"),
                     ("?to=12x", "to"),
                     ("?from=%d&to=%d" % (last, first), "from"),
                     ("?step=0", "step"),
                     ("?step=-5s", "step"),
                     ("?vertices=a,,b", "vertices"),
                     ("?vertices=", "vertices")]:
    st, body, _ = s.req("GET", base + query)
    c.eq(st, 400, "status of %s" % query)
    c.eq(body.get("error", {}).get("field"), field, "field of %s" % query)
st, body, _ = s.req("GET", "/v1/jobs/orders/timeline?from=%d&to=%d&step=1" % (first, first + 2000))
c.eq(st, 200, "2000 buckets are allowed")
c.eq(len(body["t"]), 2000, "2000 buckets")
c.eq(gov.fingerprint(s.db), fp, "reads store nothing")

c.eq(s.stop(), 0, "clean exit")
sys.exit(c.done())
