"""Durations are bounded (README, Options): `106751991167 d` (2^63 ms, the most Flink's parser
reads) overflowed `at + interval`, and a scale-down was "delayed until" year -292274999. Every
duration option now has a range in the options table; a value past it is a 422 naming the key
(a request's config, a job's stored config, a replay's candidate), stores nothing, and a
server flag past it refuses to start."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, Server, Checks, sample, fingerprint  # noqa: E402

c = Checks()
HUGE = "106751991167 d"
s = Server()
for i in range(3):
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body

KEYS = ["job.autoscaler.scale-down.interval", "job.autoscaler.metrics.window",
        "job.autoscaler.stabilization.interval", "job.autoscaler.history.max.age",
        "job.autoscaler.scaling.event.interval", "job.autoscaler.catch-up.duration",
        "job.autoscaler.restart.time", "kubernetes.operator.job.autoscaler.scale-down.interval"]
for key in KEYS:
    field = "config." + key
    before = fingerprint(s.db)
    st, body, _ = s.req("PUT", "/v1/jobs/orders/config", {"config": {key: HUGE}})
    err = body.get("error", {}) if isinstance(body, dict) else {}
    c.check(st == 422 and err.get("field") == field and "out of range" in err.get("message", "")
            and "3650 d" in err.get("message", ""),
            "PUT config %s = %s: 422 naming it and the range, got %d %r" % (key, HUGE, st, body))
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(3, config={key: HUGE}))
    err = body.get("error", {}) if isinstance(body, dict) else {}
    c.check(st == 422 and key in err.get("field", ""),
            "a request's config %s = %s: 422 naming it, got %d %r" % (key, HUGE, st, body))
    c.check(fingerprint(s.db) == before, "%s: nothing stored" % key)

# the most a job duration may be still works, all the way to a decision
st, body, _ = s.req("PUT", "/v1/jobs/orders/config",
                    {"config": {"job.autoscaler.scale-down.interval": "3650 d"}})
c.check(st == 200, "3650 d is accepted: %d %r" % (st, body))
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(3))
c.check(st == 200 and "-29227" not in str(body), "a decision with it: %d %.200r" % (st, body))

st, body, _ = s.req("POST", "/v1/replay",
                    {"job": "orders", "config": {"job.autoscaler.scale-down.interval": HUGE}})
c.check(st == 422 and body.get("error", {}).get("field") == "config.job.autoscaler.scale-down"
        ".interval", "a replay's candidate: 422 naming it, got %d %r" % (st, body))
c.check(s.stop() == 0, "clean stop")

# server flags: refused at start, naming the flag
for flag in ["--sql-timeout", "--read-timeout", "--plugin-timeout", "--audit-retention"]:
    p = subprocess.Popen([BINARY, "serve", "--listen", "127.0.0.1:0", "--db",
                          os.path.join(s.tmp, "flags.db"), flag, HUGE],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # it started: the bug
        p.kill()
        _, err = p.communicate()
    c.check(p.returncode > 0 and flag[2:] in err and "out of range" in err,
            "%s %s: refused at start, got rc %d %r" % (flag, HUGE, p.returncode, err[-200:]))
c.done()
