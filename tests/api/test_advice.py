"""GET /v1/jobs/{job}/advice on a real history: the backlog case's trace (a scale-up 2 -> 4 of
the source for HIGH_BACKLOG), then 40 minutes at 4 with the backlog gone and every vertex far
below its lower bound: excessive up-scaling for a backlog, advised as a longer catch-up
duration, with the replay of the history under the advised value. A window without decisions
advises nothing; bad parameters are 400s naming the field."""
import copy
import json
import re
import sys

import dashdata
import gov

c = gov.Checks()
s = gov.Server()
decs = dashdata.post_trace(s, job="orders")
c.check(decs[-1]["action"] == "SCALE_UP" and decs[-1]["reason"] == "HIGH_BACKLOG",
        "the trace ends with a scale-up for the backlog")
last = [json.loads(x) for x in open(dashdata.TRACE) if x.strip()][-1]
last.pop("job")
t0 = last["at"] + 30000
rin = last["vertices"][0]["metrics"]["records_in"]
for i in range(80):
    x = copy.deepcopy(last)
    x["at"] = t0 + i * 30000
    x["running_since"] = t0
    x["config"] = dashdata.CONFIG
    rin += 30000
    src, agg = x["vertices"]
    src["parallelism"] = 4
    src["metrics"].update({"busy_ms_per_s": 150, "pending_records": 0, "records_in": rin,
                           "records_out": rin})
    agg["metrics"].update({"busy_ms_per_s": 200, "records_in": rin, "records_out": rin / 10})
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", x)
    c.check(st == 200, "sample %d: %s" % (i, body))
end = t0 + 80 * 30000

st, adv, h = s.req("GET", "/v1/jobs/orders/advice?window=2h&to=%d" % end)
c.check(st == 200, "advice: %s" % adv)
c.check(h.get("ETag"), "an ETag")
a = adv["advice"]
c.check(len(a) == 1, "one piece of advice: %s" % a)
x = a[0] if a else {}
c.check(x.get("pattern") == "EXCESSIVE_UP_SCALING", "pattern")
c.check(x.get("option") == "job.autoscaler.catch-up.duration", "option")
c.check(x.get("advised") and x.get("current") and x["advised"] != x["current"], "advised value")
case = (x.get("evidence", {}).get("cases") or [{}])[0]
c.check(case.get("scale_up_decision") == decs[-1]["decision_id"], "evidence names the scale-up")
c.check(case.get("utilization_after", 1) < 0.4, "utilization after below the lower bound")
rp = x.get("replay", {})
c.check(rp.get("decisions") == adv["decisions"], "the replay compared the window's decisions")
c.check(rp.get("changed", 0) >= 1 and "Replayed with" in rp.get("message", ""),
        "the replay says what the advised value changes: %s" % rp)
# Its figures named one by one, the caveat a sentence of its own.
c.check(re.search(r"Executed scalings: \d+ recorded, \d+ with the advice\. "
                  r"Subtask-minutes: [+-]\d+\.\d\. Read these as an upper bound past the "
                  r"first change", rp.get("message", "")) is not None,
        "the replay's figures and caveat read as sentences: %r" % rp.get("message"))

# Nothing in the window: no advice.
st, adv2, _ = s.req("GET", "/v1/jobs/orders/advice?window=1h")
c.check(st == 200 and adv2["advice"] == [] and adv2["decisions"] == 0, "empty window")
fp = gov.fingerprint(s.db)
for q, field in [("?window=soon", "window"), ("?window=0", "window"), ("?window=40d", "window"),
                 ("?to=later", "to")]:
    st, body, _ = s.req("GET", "/v1/jobs/orders/advice" + q)
    c.check(st == 400 and body["error"]["field"] == field, "%s: %s %s" % (q, st, body))
c.check(gov.fingerprint(s.db) == fp, "advice stores nothing")
c.check(s.stop() == 0, "clean exit")
sys.exit(c.done())
