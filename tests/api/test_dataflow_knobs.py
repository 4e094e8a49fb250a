"""Dataflow's knobs (README, Next to a Flink job, or under KEDA) through the server: a knob PUT on a job shows in
GET /v1/jobs/{job}/config on each option it maps onto with "via": KNOB and the knob's layer,
a mapped option set in the same layer wins, a request's knob wins over a stored option, an
out-of-range knob is a 422 naming it and stores nothing, a decision is made on the mapped
values, and `governor options` lists every knob."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, Server, Checks, sample, fingerprint  # noqa: E402

c = Checks()
s = Server()
st, body, _ = s.req("PUT", "/v1/jobs/orders/config", {"config": {
    "taskmanager.numberOfTaskSlots": 2,
    "governor.dataflow.max-num-workers": 3,
    "governor.dataflow.worker-utilization-hint": "0.6",
    "governor.dataflow.max-backlog": "10 min",
    "job.autoscaler.catch-up.duration": "20 min"}})
c.check(st == 200, "PUT config: %d %r" % (st, body))
st, body, _ = s.req("GET", "/v1/jobs/orders/config")
eff = body.get("effective", {}) if isinstance(body, dict) else {}
c.check(eff.get("job.autoscaler.vertex.max-parallelism") ==
        {"value": "6", "source": "job", "via": "governor.dataflow.max-num-workers"},
        "max workers x slots, via the knob: %r" % eff.get("job.autoscaler.vertex.max-parallelism"))
c.check(eff.get("governor.batch.max-workers") ==
        {"value": "3", "source": "job", "via": "governor.dataflow.max-num-workers"},
        "batch max workers: %r" % eff.get("governor.batch.max-workers"))
c.check(eff.get("job.autoscaler.utilization.target") ==
        {"value": "0.6", "source": "job", "via": "governor.dataflow.worker-utilization-hint"},
        "utilization target: %r" % eff.get("job.autoscaler.utilization.target"))
c.check(eff.get("governor.slo.lag") ==
        {"value": "10 min", "source": "job", "via": "governor.dataflow.max-backlog"},
        "slo lag: %r" % eff.get("governor.slo.lag"))
c.check(eff.get("job.autoscaler.catch-up.duration") == {"value": "20 min", "source": "job"},
        "the mapped option set in the same layer wins, without via: %r"
        % eff.get("job.autoscaler.catch-up.duration"))
c.check("via" not in eff.get("job.autoscaler.metrics.window", {"via": 1}),
        "an option no knob sets has no via")

# A decision on the mapped values: the source may not go above 3 workers x 2 slots.
cfg = {"job.autoscaler.metrics.window": "1 min", "job.autoscaler.stabilization.interval": "0 ms"}
last = None
for i in range(4):
    st, last, _ = s.req("POST", "/v1/jobs/orders/metrics",
                        sample(i, busy_src=990, busy_agg=990, config=cfg))
    c.check(st == 200, "decide %d: %d %r" % (i, st, last))
tops = [v["target"] for v in last.get("vertices", [])] if isinstance(last, dict) else []
c.check(tops and max(tops) <= 6, "targets within max-num-workers x slots: %r" % tops)
c.check(any("CLAMPED_MAX_PARALLELISM" in v.get("constraints", []) for v in last["vertices"]),
        "clamped at the knob's bound: %r" % last.get("vertices"))
# A request's knob wins over the stored option of a lower layer: the decision's effective
# options have 1 worker x 2 slots.
req = dict(cfg)
req["governor.dataflow.max-num-workers"] = 1
st, ans, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(5, busy_src=990, config=req))
c.check(st == 200, "decide with the request's knob: %d %r" % (st, ans))
st, rec, _ = s.req("GET", "/v1/decisions/%d" % ans.get("decision_id", 0))
c.check(st == 200 and rec["config"].get("job.autoscaler.vertex.max-parallelism") == "2",
        "the request's knob wins: %r" % (rec.get("config", {}).get(
            "job.autoscaler.vertex.max-parallelism") if isinstance(rec, dict) else rec))

# Out of range: a 422 naming the knob, nothing stored.
before = fingerprint(s.db)
for key, value in (("governor.dataflow.worker-utilization-hint", "0.95"),
                   ("governor.dataflow.max-num-workers", 0),
                   ("governor.dataflow.max-backlog", "10 ms"),
                   ("governor.dataflow.autoscaling-algorithm", "BASIC")):
    st, body, _ = s.req("PUT", "/v1/jobs/orders/config", {"config": {key: value}})
    field = body.get("error", {}).get("field") if isinstance(body, dict) else None
    c.check(st == 422 and field == "config." + key, "PUT %s=%r: %d %r" % (key, value, st, body))
    sm = sample(9, config={key: value})
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sm)
    c.check(st == 422 and key in str(body), "decide with %s=%r: %d %r" % (key, value, st, body))
c.check(fingerprint(s.db) == before, "refused knobs stored nothing")
c.check(s.stop() == 0, "clean stop")

out = subprocess.run([BINARY, "options"], capture_output=True, text=True, timeout=30).stdout
for knob in ("max-num-workers", "min-num-workers", "worker-utilization-hint", "max-backlog",
             "autoscaling-algorithm"):
    c.check("governor.dataflow." + knob in out, "governor options lists %s" % knob)
c.done()
