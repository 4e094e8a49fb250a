"""GET /v1/jobs/{job}/target[?vertex=ID], KEDA's metrics-api count (docs/keda.md): before any
executed decision the running size; after a scale-up its target, kept while later answers are
NO_CHANGE (the count not applied yet does not flap back), with `current` the newest decision's;
`vertex` may be left out only for a one-vertex job (400 naming it), an unknown vertex or a job
without decisions is a 404, and the route needs the token like the others."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, T0, sample  # noqa: E402

c = Checks()
tmp_tokens = None
s = Server()

CFG = {"job.autoscaler.metrics.window": "1 min", "job.autoscaler.stabilization.interval": "0 ms"}


def consumer(i, p=4, busy=950, pending=180000):
    """docs/keda.md's queue-consumer pool: one vertex, 30 s apart, 1,000 messages/s."""
    n = 3120000 + 30000 * i
    return {"at": T0 + 30000 * i, "running_since": T0 - 600000, "config": CFG,
            "vertices": [{"id": "consumer", "parallelism": p, "max_parallelism": 48,
                          "partitions": 48, "inputs": [],
                          "metrics": {"busy_ms_per_s": busy, "records_in": n, "records_out": n,
                                      "pending_records": pending}}]}


st, body, _ = s.req("GET", "/v1/jobs/orders-consumer/target")
c.check(st == 404 and body["error"]["field"] == "job", "no decision: 404 naming job: %r" % body)

st, first, _ = s.req("POST", "/v1/jobs/orders-consumer/metrics", consumer(0))
c.check(st == 200 and first["execute"] is False, "first sample collects: %r" % first)
st, body, _ = s.req("GET", "/v1/jobs/orders-consumer/target")
c.check(st == 200 and body == {"job": "orders-consumer", "vertex": "consumer", "replicas": 4,
                               "current": 4, "decision_id": first["decision_id"],
                               "at": T0, "reason": first["reason"], "execute": False},
        "no executed decision yet: the running size, from the newest decision: %r" % body)

ans = None
for i in range(1, 4):
    st, ans, _ = s.req("POST", "/v1/jobs/orders-consumer/metrics", consumer(i))
    if ans.get("execute"):
        break
c.check(ans.get("execute") is True and ans["parallelism"]["consumer"] > 4,
        "the backlog scales the pool up: %r" % ans)
up = ans["parallelism"]["consumer"]
st, body, _ = s.req("GET", "/v1/jobs/orders-consumer/target")
c.check(st == 200 and body["replicas"] == up and body["current"] == 4 and
        body["decision_id"] == ans["decision_id"] and body["execute"] is True and
        body["reason"] == ans["reason"] and body["at"] == ans["at"],
        "replicas is the executed target: %r" % body)

# A later answer that is a recommendation only (scaling disabled for one sample): the count
# the client was told to apply stays.
rec = consumer(i + 1)
rec["config"] = dict(CFG, **{"job.autoscaler.scaling.enabled": "false"})
st, later, _ = s.req("POST", "/v1/jobs/orders-consumer/metrics", rec)
c.check(st == 200 and later["execute"] is False, "a later answer without execute: %r" % later)
st, body, _ = s.req("GET", "/v1/jobs/orders-consumer/target?vertex=consumer")
c.check(st == 200 and body["replicas"] == up and body["decision_id"] == ans["decision_id"] and
        body["current"] == 4, "the executed count does not flap back: %r" % body)
# Applied: the pool runs at the new size; current follows the newest decision.
st, later, _ = s.req("POST", "/v1/jobs/orders-consumer/metrics",
                     dict(consumer(i + 2, p=up, busy=600), running_since=T0 + 30000 * (i + 2)))
st, body, _ = s.req("GET", "/v1/jobs/orders-consumer/target")
c.check(st == 200 and body["replicas"] == up and body["current"] == up,
        "after the restart at the new size: %r" % body)

# A job of two vertices: vertex must be named.
for k in range(2):
    s.req("POST", "/v1/jobs/orders/metrics", sample(k))
st, body, _ = s.req("GET", "/v1/jobs/orders/target")
c.check(st == 400 and body["error"]["field"] == "vertex", "two vertices, none named: %r" % body)
st, body, _ = s.req("GET", "/v1/jobs/orders/target?vertex=agg")
c.check(st == 200 and body["vertex"] == "agg" and body["replicas"] == 4, "named: %r" % body)
st, body, _ = s.req("GET", "/v1/jobs/orders/target?vertex=nope")
c.check(st == 404 and body["error"]["field"] == "vertex", "unknown vertex: %r" % body)
st, body, _ = s.req("GET", "/v1/jobs/orders/target?vertex=")
c.check(st == 400 and body["error"]["field"] == "vertex", "empty vertex: %r" % body)
st, body, _ = s.req("GET", "/v1/jobs/orders/target?vertex=" + "v" * 129)
c.check(st == 400 and body["error"]["field"] == "vertex", "a 129-character vertex: %r" % body)
st, body, _ = s.req("GET", "/v1/jobs/a%2Fb/target")
c.check(st == 400 and body["error"]["field"] == "job", "a bad job name: %r" % body)
st, body, _ = s.req("HEAD", "/v1/jobs/orders/target?vertex=agg")
c.check(st == 200, "HEAD: %r" % st)
st, body, _ = s.req("POST", "/v1/jobs/orders/target")
c.check(st == 405, "POST: 405, got %r" % st)
c.check(s.stop() == 0, "clean stop")

# With a token file the route needs the token (KEDA's authMode: bearer).
tokens = os.path.join(s.tmp, "tokens")
with open(tokens, "w") as f:
    f.write("keda-token\n")
s = Server(args=["--token-file", tokens])
st, _, _ = s.req("GET", "/v1/jobs/orders/target")
c.check(st == 401, "no token: 401, got %d" % st)
st, body, _ = s.req("GET", "/v1/jobs/orders/target", headers={"Authorization": "Bearer keda-token"})
c.check(st == 404, "the token lets it through (no decision yet): %d %r" % (st, body))
c.check(s.stop() == 0, "clean stop")
c.done()
