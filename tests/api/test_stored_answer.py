"""The answer the history gives back is the answer sent, member for member: the store keeps a
decision's response in its rows plus the members no row holds (core_dfields, CORE_DS_REST),
and rebuilds it in the order of the one table of the answer's fields. A memory-tuning decision
(job.autoscaler.memory.tuning.enabled, a process size) answers config_changes and
config_removals, which no row holds: they were dropped from the stored response, so the
history showed a scaling without the memory it came with."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample  # noqa: E402

c = Checks()
s = Server()
cfg = {"job.autoscaler.memory.tuning.enabled": "true", "taskmanager.memory.process.size": "4 gb",
       "job.autoscaler.stabilization.interval": "0", "job.autoscaler.metrics.window": "1 min"}
sent = {}
tuned = 0
for i in range(12):
    smp = sample(i, busy_src=950, busy_agg=950, rate=5000, config=cfg)
    smp["job_metrics"] = {"heap_used": 1e9, "heap_max": 2e9, "managed_used": 1e8,
                          "metaspace_used": 1e8, "task_slots_total": 8,
                          "task_slots_available": 0}
    st, body, _ = s.req("POST", "/v1/jobs/tuned/metrics", smp)
    c.check(st == 200, "sample %d: %d %r" % (i, st, body))
    if st != 200:
        continue
    sent[body["decision_id"]] = body
    tuned += "config_changes" in body and "config_removals" in body
c.check(tuned >= 1, "a decision with memory tuning's config_changes and config_removals")

st, page, _ = s.req("GET", "/v1/jobs/tuned/decisions?limit=100")
c.check(st == 200, "the history: %d" % st)
stored = {d["decision_id"]: d for d in page.get("decisions", [])}
c.check(set(stored) == set(sent), "every decision stored: %s" % sorted(set(sent) ^ set(stored)))
for i, body in sent.items():
    got = stored.get(i)
    c.check(got == body and list(got or {}) == list(body),
            "decision %d stored as sent (members and order): missing %s, extra %s" %
            (i, sorted(set(body) - set(got or {})), sorted(set(got or {}) - set(body))))
s.stop()
c.done()
