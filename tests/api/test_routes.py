"""Every route of `governor serve` against the real binary: decide, config PUT/GET, jobs
list and delete, decisions list (order, since, until, limit) and get, events, healthz,
readyz, keep-alive, 404/405/415, and SIGTERM committing and exiting 0 with the job state
surviving the restart."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, count, connect, T0  # noqa: E402

c = Checks()
s = Server()

st, body, _ = s.req("GET", "/healthz")
c.check(st == 200 and body["status"] == "ok", "healthz")
st, body, _ = s.req("GET", "/readyz")
c.check(st == 200 and body["status"] == "ready", "readyz")
c.check(body.get("policy_revision") not in (None, ""), "readyz names the policy revision")
st, pol, _ = s.req("GET", "/v1/policies")
c.check(st == 200 and pol["revision"] == body.get("policy_revision"), "GET /v1/policies")
st, body, _ = s.req("GET", "/v1/jobs")
c.check(st == 200 and body == {"jobs": []}, "no jobs at first: %r" % (body,))

# Decide, three samples on one keep-alive connection.
conn = s.conn()
ids = []
for i in range(3):
    st, body, hdr = s.req("POST", "/v1/jobs/orders/metrics", sample(i), conn=conn)
    c.check(st == 200, "decide %d: %r" % (i, body))
    if st != 200:
        continue
    ids.append(body["decision_id"])
    c.check(body["job"] == "orders" and body["at"] == T0 + i * 30000, "decide echoes job and at")
    c.check(body["action"] in ("SCALE_UP", "SCALE_DOWN", "SCALE", "NO_CHANGE"), "action")
    c.check(set(body["parallelism"]) == {"source", "agg"}, "parallelism of every vertex")
    c.check([v["id"] for v in body["vertices"]] == ["source", "agg"], "vertices in topo order")
    c.check(body["policy_revision"] == pol["revision"], "policy revision")
    c.check(isinstance(body["config_hash"], str) and len(body["config_hash"]) == 16, "hash")
    c.check(body["warnings"] == [], "no warnings")
    c.check("X-Request-Id" in hdr, "request id header")
conn.close()
c.check(ids == sorted(ids) and len(set(ids)) == 3, "increasing decision ids %r" % ids)
c.check(count(s.db, "decisions") == 3, "three decisions stored")
c.check(count(s.db, "audit_vertex_decisions") == 6, "two vertex rows each")

# An ignored key is named in warnings.
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics",
                    sample(3, config={"pipeline.name": "x"}))
c.check(st == 200 and body.get("warnings") == ["pipeline.name"], "warnings: %r" % (body,))

# History: newest first, limit, since, until (epoch ms and RFC 3339).
st, body, _ = s.req("GET", "/v1/jobs/orders/decisions")
ats = [d["at"] for d in body["decisions"]]
c.check(st == 200 and ats == sorted(ats, reverse=True) and len(ats) == 4, "newest first %r" % ats)
st, body, _ = s.req("GET", "/v1/jobs/orders/decisions?limit=2")
c.check(len(body["decisions"]) == 2 and body["decisions"][0]["at"] == T0 + 90000, "limit")
st, body, _ = s.req("GET", "/v1/jobs/orders/decisions?since=%d&until=%d" % (T0 + 30000, T0 + 60000))
c.check([d["at"] for d in body["decisions"]] == [T0 + 60000, T0 + 30000], "since/until ms")
st, body, _ = s.req("GET", "/v1/jobs/orders/decisions?since=2025-11-29T10:00:30Z"
                    "&until=2025-11-29T11:01:00%2B01:00")
c.check([d["at"] for d in body["decisions"]] == [T0 + 60000, T0 + 30000],
        "since/until RFC 3339: %r" % (body,))
for bad in ("limit=0", "limit=1001", "limit=x", "since=yesterday", "until=2025-13-01T00:00:00Z"):
    st, body, _ = s.req("GET", "/v1/jobs/orders/decisions?" + bad)
    c.check(st == 400 and body["error"]["field"] == bad.split("=")[0], "bad %s: %r" % (bad, body))

# One decision, whole record.
st, rec, _ = s.req("GET", "/v1/decisions/%d" % ids[0])
c.check(st == 200 and rec["decision_id"] == ids[0], "get decision")
c.check(rec["input"]["vertices"][0]["id"] == "source", "record has the input sample")
c.check(rec["config"].get("job.autoscaler.utilization.target") is not None, "effective config")
c.check(all("raw_target" in v and "evaluated" in v and "constraints" in v
            for v in rec["vertices"]), "vertex rows with raw target, evaluated, constraints")
c.check(isinstance(rec["events"], list) and isinstance(rec["plugin_calls"], list), "events")
st, body, _ = s.req("GET", "/v1/decisions/999999")
c.check(st == 404 and body["error"]["code"] == "NOT_FOUND", "unknown decision 404")
st, body, _ = s.req("GET", "/v1/decisions/abc")
c.check(st == 400 and body["error"]["field"] == "id", "bad decision id 400")

# Events.
st, body, _ = s.req("GET", "/v1/jobs/orders/events")
c.check(st == 200 and isinstance(body["events"], list), "events list")

# Config: PUT replaces the stored layer; GET shows every effective option and its layer.
st, body, _ = s.req("PUT", "/v1/jobs/orders/config",
                    {"config": {"job.autoscaler.utilization.target": 0.5}})
c.check(st == 200 and body["config"] == {"job.autoscaler.utilization.target": "0.5"},
        "put config: %r" % (body,))
st, body, _ = s.req("GET", "/v1/jobs/orders/config")
eff = body["effective"]
c.check(eff["job.autoscaler.utilization.target"] == {"value": "0.5", "source": "job"},
        "job layer wins: %r" % eff.get("job.autoscaler.utilization.target"))
c.check(eff["job.autoscaler.scale-up.max-factor"]["source"] == "default", "default layer")
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(4))
st2, rec, _ = s.req("GET", "/v1/decisions/%d" % body["decision_id"])
c.check(rec["config"]["job.autoscaler.utilization.target"] == "0.5", "decide uses the job layer")
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics",
                    sample(5, config={"job.autoscaler.utilization.target": "0.7"}))
st2, rec, _ = s.req("GET", "/v1/decisions/%d" % body["decision_id"])
c.check(rec["config"]["job.autoscaler.utilization.target"] == "0.7", "request layer wins")
st, body, _ = s.req("GET", "/v1/jobs/nosuch/config")
c.check(st == 404, "config of an unknown job")

# Jobs list.
st, body, _ = s.req("GET", "/v1/jobs")
c.check(st == 200 and [j["job"] for j in body["jobs"]] == ["orders"], "jobs list %r" % (body,))
c.check(body["jobs"][0]["last_at"] == T0 + 5 * 30000, "last_at")

# Routing errors.
st, body, _ = s.req("GET", "/v1/nothing")
c.check(st == 404 and body["error"]["code"] == "NOT_FOUND", "404 envelope")
st, body, _ = s.req("PATCH", "/v1/jobs/orders/metrics", {})
c.check(st == 405, "405 on a known path: %r" % (st,))
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", "at=1", ctype="text/plain")
c.check(st == 415 and body["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE", "415")

# SIGTERM: everything committed, exit 0; the state survives a restart.
before = count(s.db, "decisions")
rc = s.stop()
c.check(rc == 0, "SIGTERM exits 0 (got %r)" % rc)
c.check('msg="stopping"' in s.logs(), "logs the stop")
s2 = Server(db=s.db, tmp=s.tmp)
st, body, _ = s2.req("GET", "/v1/jobs")
c.check([j["job"] for j in body["jobs"]] == ["orders"], "job loaded at start")
st, body, _ = s2.req("POST", "/v1/jobs/orders/metrics", sample(1, rate=2000.0))
c.check(st == 409 and body["error"]["field"] == "at", "last_at survives the restart: %r" % body)
st, body, _ = s2.req("GET", "/v1/jobs/orders/config")
c.check(body["stored"] == {"job.autoscaler.utilization.target": "0.5"}, "config survives")
c.check(count(s2.db, "decisions") == before, "no decision lost")

# Delete: state forgotten, history kept, 404 the second time.


def window_rows(db):
    con = connect(db)
    n = con.execute("SELECT count(*) FROM job_window WHERE job = 'orders'").fetchone()[0]
    con.close()
    return n


c.check(window_rows(s2.db) > 0, "the window is stored, one row per sample")
st, body, _ = s2.req("DELETE", "/v1/jobs/orders")
c.check(st == 200, "delete")
c.check(window_rows(s2.db) == 0, "delete forgets the stored window")
st, body, _ = s2.req("DELETE", "/v1/jobs/orders")
c.check(st == 404, "delete unknown 404")
st, body, _ = s2.req("GET", "/v1/jobs")
c.check(body["jobs"] == [], "deleted job gone")
st, body, _ = s2.req("GET", "/v1/jobs/orders/decisions")
c.check(len(body["decisions"]) == before, "history kept")
st, body, _ = s2.req("POST", "/v1/jobs/orders/metrics", sample(0))
c.check(st == 200, "a deleted job starts afresh")

# GET /metrics: Prometheus text with the requests, decisions and commits of this process.
st, text, hdr = s2.req("GET", "/metrics")
c.check(st == 200 and hdr.get("Content-Type", "").startswith("text/plain"), "metrics text")
lines = text.splitlines() if isinstance(text, str) else []


def value(prefix):
    for line in lines:
        if line.startswith(prefix + " "):
            return float(line.split()[-1])
    return None


c.check(value('governor_http_requests_total{route="/v1/jobs/{job}/metrics",method="POST",'
              'status="409"}') == 1, "the 409 of this process is counted")
c.check(value('governor_http_requests_total{route="/v1/jobs/{job}",method="DELETE",'
              'status="404"}') == 1, "requests by route, method and status")
c.check(sum(v for v in (value('governor_decisions_total{reason="%s"}' % r) for r in (
    "COLLECTING_METRICS", "WITHIN_TARGET", "HIGH_UTILIZATION", "HIGH_BACKLOG")) if v) == 1,
    "one committed decision in this process")
c.check(value("governor_commit_group_size_count") >= 1, "group commits counted")
c.check(value("governor_jobs_tracked") == 1, "jobs tracked")
c.check(value('governor_policy_reloads_total{result="ok"}') == 1, "the start load counted")
c.check(any(line.startswith('governor_http_request_duration_seconds_bucket{route='
                            '"/v1/jobs/{job}/metrics",le="+Inf"} ') for line in lines),
        "latency histogram per route")
c.check(s2.stop() == 0, "second SIGTERM exits 0")
c.check('method=POST path="/v1/jobs/orders/metrics" status=200' in s.logs(), "request log line")
c.done()
