"""Ids and numeric query parameters are read strictly (README, Client contract: names, limits, timeouts): `/v1/decisions/1%00`,
`/+1`, `/%201` and `/01` all returned decision 1. An id is decimal digits only (no sign, no
space, no leading zero, within int64); so are `limit` and epoch-ms `since`/`until` (a '-'
allowed before 1970); anything else is a 400 naming the field, and a NUL byte (%00) is never
cut off silently."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, T0  # noqa: E402

c = Checks()
s = Server()
for i in range(3):
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body


def get(path):
    st, body, _ = s.req("GET", path)
    e = body.get("error", {}) if isinstance(body, dict) else {}
    return st, e.get("field"), e.get("message", ""), body


st, _, _, body = get("/v1/decisions/1")
c.check(st == 200 and body.get("job") == "orders", "decision 1: %d" % st)
for bad in ["1%00", "+1", "%2B1", "%201", "1%20", "01", "001", "0", "-1", "1.0", "0x1", "1e0",
            "9223372036854775808", "%31%00"]:
    st, field, msg, body = get("/v1/decisions/" + bad)
    c.check(st == 400 and field == "id" and ("decimal digits" in msg or "NUL" in msg),
            "/v1/decisions/%s: 400 naming id, got %d %r" % (bad, st, body))

st, _, _, body = get("/v1/jobs/orders/decisions?limit=2&since=%d&until=%d" % (T0, T0 + 60000))
c.check(st == 200 and len(body["decisions"]) == 2, "strict parameters that are fine: %d" % st)
st, _, _, body = get("/v1/jobs/orders/decisions?since=-1000")
c.check(st == 200, "a negative epoch (before 1970) is a time: %d" % st)
for key, bad in [("limit", "05"), ("limit", "%205"), ("limit", "+5"), ("limit", "%2B5"),
                 ("limit", "5%00"), ("limit", "5%20"), ("limit", "0"), ("limit", "1001"),
                 ("limit", "%FF"), ("since", "01"), ("since", "+1"), ("since", "%201"),
                 ("since", "1%00"), ("until", "-0"), ("until", "1%00x"),
                 ("until", "99999999999999999999")]:
    path = "/v1/jobs/orders/decisions?%s=%s" % (key, bad)
    st, field, msg, body = get(path)
    c.check(st == 400 and field == key and msg, "%s: 400 naming %s, got %d %r"
            % (path, key, st, body))
st, field, msg, body = get("/v1/jobs/orders/events?limit=010")
c.check(st == 400 and field == "limit", "events?limit=010: 400 naming limit, got %d %r"
        % (st, body))
st, field, msg, body = get("/v1/jobs/ord%00ers/decisions")
c.check(st == 400 and field == "job", "a job id with %%00: 400 naming job, got %d %r" % (st, body))
c.check(s.stop() == 0, "clean stop")
c.done()
