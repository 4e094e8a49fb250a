"""GET /metrics per-job gauges (README, Job signals and alerts): the last committed decision's
parallelism and backlog, the age of the last sample, governor.slo.lag and its breach; the
series cap (metrics-max-jobs) and its count of dropped jobs; a deleted job's series go; a job
without an objective has no SLO series."""
import re
import sys

import dashdata
import gov

c = gov.Checks()


def gauges(s):
    st, text, _ = s.req("GET", "/metrics")
    c.check(st == 200, "scrape")
    out = {}
    for line in text.splitlines():
        m = re.match(r'^(governor_job_\w+)(?:\{job_id="([^"]+)"\})? (\S+)$', line)
        if m:
            out[(m.group(1), m.group(2))] = float(m.group(3))
    return out


s = gov.Server()
dashdata.CONFIG["governor.slo.lag"] = "2 min"
decs = dashdata.post_trace(s, job="b-orders")
dashdata.CONFIG.pop("governor.slo.lag")
dashdata.post_trace(s, job="a-clicks")
g = gauges(s)
last = decs[-1]
cur = sum(v["current"] for v in last["vertices"])
tgt = sum(v["target"] for v in last["vertices"])
c.check(g.get(("governor_job_parallelism", "b-orders")) == cur, "current parallelism")
c.check(g.get(("governor_job_target_parallelism", "b-orders")) == tgt, "target parallelism")
src = [v for v in last["vertices"] if v["evaluated"].get("lag") is not None][0]["evaluated"]
c.check(abs(g.get(("governor_job_backlog_seconds", "b-orders"), -1) -
            src["lag"] / src["target_data_rate"]) < 1e-3, "backlog seconds = lag / rate")
c.check(g.get(("governor_job_slo_lag_seconds", "b-orders")) == 120, "SLO from the options")
c.check(g.get(("governor_job_slo_breach", "b-orders")) == 1, "600 s above 120 s: breach")
c.check(("governor_job_slo_breach", "a-clicks") not in g, "no objective, no breach series")
c.check(g.get(("governor_job_seconds_since_last_sample", "a-clicks"), 0) > 86400,
        "a trace of 2025 is old data")
c.check(g.get(("governor_job_series_dropped", None)) == 0, "nothing dropped")
# The SLO set with the stored job layer applies from the next decision.
st, _, _ = s.req("PUT", "/v1/jobs/a-clicks/config", {"config": {"governor.slo.lag": "1 h"}})
c.check(st == 200, "PUT config")
st, body, _ = s.req("PUT", "/v1/jobs/a-clicks/config", {"config": {"governor.slo.lag": "soon"}})
c.check(st == 422 and body["error"]["field"].endswith("governor.slo.lag") or
        "governor.slo.lag" in body["error"]["message"], "a bad SLO is refused naming it")
# DELETE forgets the job's series.
st, _, _ = s.req("DELETE", "/v1/jobs/b-orders")
c.check(st in (200, 204), "DELETE")
g = gauges(s)
c.check(not any(k[1] == "b-orders" for k in g), "a deleted job has no series")
c.check(s.stop() == 0, "clean exit")

# The cap: one job's series, the other counted as dropped; 0 drops them all.
for cap, shown in (("1", ["a-clicks"]), ("0", [])):
    s = gov.Server(args=["--metrics-max-jobs", cap])
    dashdata.post_trace(s, job="b-orders")
    dashdata.post_trace(s, job="a-clicks")
    g = gauges(s)
    jobs = sorted({k[1] for k in g if k[1]})
    c.check(jobs == shown, "cap %s shows %s, got %s" % (cap, shown, jobs))
    c.check(g.get(("governor_job_series_dropped", None)) == 2 - len(shown), "dropped count")
    c.check(s.stop() == 0, "clean exit")
sys.exit(c.done())
