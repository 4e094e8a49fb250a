#!/usr/bin/env python3
"""audit_sim.py - fills a governor database with a realistic history: three simulated jobs
whose load follows a 4-hour wave, posted to a running server in a closed loop (when governor
says execute, the simulated job restarts at the new parallelism). Deterministic: the same
server answers give the same trace. Used by the audit tests and to produce the README's sample
answers:

    python3 tests/api/audit_sim.py --port 8080 [--steps 1000] [--trace trace.jsonl]

Jobs (one sample a minute from 2025-11-29T10:00:00Z):
  orders    src (32 partitions) -> op (HASH); 1,000-11,000 rec/s; every step. At step 500 its
            stored config is changed (utilization target 0.6).
  clicks    src -> op (HASH) with 30% of the records on one key: KEY_PARALLELISM_LIMIT at peak.
  payments  src -> op with max_parallelism 4: LIMIT_REACHED at peak. Deleted (DELETE
            /v1/jobs/payments) and configured again at step 600.
clicks and payments post every second step. Python 3 stdlib only.
"""
import argparse
import http.client
import json
import math

T0 = 1764410400000  # 2025-11-29T10:00:00Z
STEP_MS = 60000
BASE_CONFIG = {"job.autoscaler.stabilization.interval": "1 min",
               "job.autoscaler.metrics.window": "5 min",
               "job.autoscaler.scale-down.interval": "30 min",
               "job.autoscaler.restart.time": "1 min"}


class Job:
    """One simulated pipeline: src -> op (HASH). Capacities are records/s per subtask."""

    def __init__(self, name, base, amp, src_cap, op_cap, p_src, p_op, op_maxp=128,
                 partitions=0, hot=0.0, phase=0.0):
        self.name, self.base, self.amp, self.phase = name, base, amp, phase
        self.src_cap, self.op_cap, self.hot = src_cap, op_cap, hot
        self.p = {"src": p_src, "op": p_op}
        self.op_maxp, self.partitions = op_maxp, partitions
        self.lag = 0.0
        self.rin = 0.0
        self.running_since = T0

    def rate(self, step):
        return self.base + self.amp * math.sin(2 * math.pi * step / 240.0 + self.phase)

    def op_capacity(self):
        p, c = self.p["op"], self.op_cap
        if self.hot and p > 1:
            # the hot subtask carries hot + (1 - hot) / p of the input
            return min(p * c, c / (self.hot + (1 - self.hot) / p))
        return p * c

    def sample(self, step):
        at = T0 + step * STEP_MS
        rate = self.rate(step)
        cap_src, cap_op = self.p["src"] * self.src_cap, self.op_capacity()
        cap = min(cap_src, cap_op)
        processed = min(rate + self.lag / 60.0, cap)
        self.lag = max(0.0, self.lag + (rate - processed) * 60.0)
        self.rin += processed * 60.0
        busy_src = min(1000.0, 1000.0 * processed / cap_src)
        bp = max(0.0, 1000.0 - busy_src) if cap_op < cap_src and processed >= cap_op else 0.0
        p = self.p["op"]
        avg = min(1000.0, 1000.0 * processed / (p * self.op_cap))
        if self.hot:
            mx = min(1000.0, 1000.0 * processed * (self.hot + (1 - self.hot) / p) / self.op_cap)
            mn = min(avg, 1000.0 * processed * (1 - self.hot) / p / self.op_cap)
            busy_op = {"min": round(mn, 1), "avg": round(avg, 1), "max": round(mx, 1)}
        else:
            busy_op = round(avg, 1)
        src = {"id": "src", "parallelism": self.p["src"], "max_parallelism": 128, "inputs": [],
               "metrics": {"busy_ms_per_s": round(busy_src, 1),
                           "backpressured_ms_per_s": round(bp, 1),
                           "records_in": round(self.rin), "records_out": round(self.rin),
                           "records_in_per_s": round(processed, 1),
                           "pending_records": round(self.lag)}}
        if self.partitions:
            src["partitions"] = self.partitions
        op = {"id": "op", "parallelism": p, "max_parallelism": self.op_maxp,
              "inputs": [{"from": "src", "ship": "HASH"}],
              "metrics": {"busy_ms_per_s": busy_op, "records_in": round(self.rin),
                          "records_out": round(self.rin / 10)}}
        return {"at": at, "running_since": self.running_since, "status": "RUNNING",
                "vertices": [src, op]}

    def apply(self, decision):
        """A decision to execute: the job restarts at the new parallelism."""
        if decision.get("execute"):
            for vid, p in decision["parallelism"].items():
                self.p[vid] = p
            self.running_since = decision["at"]


# clicks runs under the shipped `freeze` executor, limiting each scale-up to 1.5x and vetoing
# any scaling from 10:10 to 10:29 UTC, so its decisions depend on the policies: replaying them
# needs the same policies directory.
PLUGIN_CONFIG = {"job.autoscaler.scaling.custom-executors": "step",
                 "job.autoscaler.scaling.custom-executor.step.class": "freeze",
                 "job.autoscaler.scaling.custom-executor.step.max-factor": "1.5",
                 "job.autoscaler.scaling.custom-executor.step.freeze": "* 10-29 10 * * ?"}


def jobs():
    return [Job("orders", 6000, 5000, 2500, 1200, 2, 6, partitions=32),
            Job("clicks", 2000, 600, 1000, 800, 2, 4, hot=0.3, phase=1.0),
            Job("payments", 1500, 700, 2000, 500, 2, 3, op_maxp=4, phase=2.0)]


def request(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    raw = r.read()
    return r.status, (json.loads(raw) if raw else None)


def run(port, steps=1000, trace=None, host="127.0.0.1"):
    """Posts the whole history; returns the number of decisions stored."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    out = open(trace, "w") if trace else None
    js = jobs()
    n = 0
    for j in js:
        cfg = dict(BASE_CONFIG, **PLUGIN_CONFIG) if j.name == "clicks" else BASE_CONFIG
        st, body = request(conn, "PUT", "/v1/jobs/%s/config" % j.name, {"config": cfg})
        assert st == 200, body
    for step in range(steps):
        if step == 500:
            cfg = dict(BASE_CONFIG, **{"job.autoscaler.utilization.target": "0.6"})
            st, body = request(conn, "PUT", "/v1/jobs/orders/config", {"config": cfg})
            assert st == 200, body
        if step == 600:
            st, body = request(conn, "DELETE", "/v1/jobs/payments")
            assert st in (200, 204), body
            st, body = request(conn, "PUT", "/v1/jobs/payments/config", {"config": BASE_CONFIG})
            assert st == 200, body
        for j in js:
            if j.name != "orders" and step % 2:
                continue
            s = j.sample(step)
            st, d = request(conn, "POST", "/v1/jobs/%s/metrics" % j.name, s)
            assert st == 200, (j.name, step, d)
            n += 1
            if out:
                out.write(json.dumps(dict(s, job=j.name), sort_keys=True) + "\n")
            j.apply(d)
    conn.close()
    if out:
        out.close()
    return n


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--trace", help="also write the posted samples here (JSONL, with job)")
    a = ap.parse_args()
    print("%d decisions posted" % run(a.port, a.steps, a.trace, a.host))
