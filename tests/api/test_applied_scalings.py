"""Decided versus applied (README, Audit views: audit_scalings): the trace of tests/cases/not_applied is posted to a
real server. Its scale-up agg 2 -> 4 is decided at 10:03:00 and again at 10:03:30 and 10:04:00
while the job keeps reporting agg at 2; the sample of 10:04:30 runs agg at 4. audit_scalings
keeps counting every executed scaling (the README's questions answer as before) and tells,
in its new last columns, which were applied and by which decision that was seen; the events
say the same (ScalingNotApplied warnings, one ScalingApplied)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASE = os.path.join(HERE, "..", "cases", "not_applied")

c = Checks()
config = {}
with open(os.path.join(CASE, "config")) as f:
    for line in f:
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            config[k.strip()] = v.strip()
s = Server()
ids = []
with open(os.path.join(CASE, "trace.jsonl")) as f:
    for line in f:
        body = json.loads(line)
        job = body.pop("job")
        body["config"] = config
        st, r, _ = s.req("POST", "/v1/jobs/%s/metrics" % job, body)
        c.check(st == 200, "sample at %d: 200, got %d %r" % (body["at"], st, r))
        ids.append(r.get("decision_id") if st == 200 else None)


def sql(q, *params):
    st, r, _ = s.req("POST", "/v1/sql", {"sql": q, "params": list(params)})
    c.check(st == 200, "%s: 200, got %d %r" % (q, st, r))
    return r.get("rows", []) if st == 200 else []


rows = sql("SELECT decision_id, at_utc, changes, applied, applied_decision_id FROM audit_scalings "
           "WHERE job = 'orders' ORDER BY decision_id")
want = [[ids[6], "2025-11-29T10:03:00.000Z", "agg 2->4", 0, ids[7]],
        [ids[7], "2025-11-29T10:03:30.000Z", "agg 2->4", 0, ids[8]],
        [ids[8], "2025-11-29T10:04:00.000Z", "agg 2->4", 1, ids[9]]]
c.check(rows == want, "three executed scalings, the last one applied: %r" % rows)

# The README's question 5 counts executed scalings as before; applied ones are a filter away.
rows = sql("SELECT count(*), sum(applied) FROM audit_scalings WHERE job = 'orders'")
c.check(rows == [[3, 1]], "3 decided, 1 applied: %r" % rows)

rows = sql("SELECT decision_id, type, reason, suppressed FROM audit_events WHERE job = 'orders' "
           "AND reason IN ('ScalingApplied', 'ScalingNotApplied') ORDER BY id")
c.check(rows == [[ids[7], "Warning", "ScalingNotApplied", 0],
                 [ids[8], "Warning", "ScalingNotApplied", 1],
                 [ids[9], "Normal", "ScalingApplied", 0]], "the outcomes as events: %r" % rows)

# A scaling with no running sample after it is not known yet: NULL (the trace up to it).
with open(os.path.join(CASE, "trace.jsonl")) as f:
    for line in list(f)[:7]:
        b = json.loads(line)
        b.pop("job")
        b["config"] = config
        st, r, _ = s.req("POST", "/v1/jobs/other/metrics", b)
        c.check(st == 200, "other: 200, got %d %r" % (st, r))
rows = sql("SELECT action, applied, applied_decision_id FROM audit_scalings WHERE job = 'other'")
c.check(rows == [["SCALE_UP", None, None]], "not known yet: %r" % rows)
s.stop()
c.done()
