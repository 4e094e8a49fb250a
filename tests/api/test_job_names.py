"""The job name grammar, [A-Za-z0-9._:-]{1,128}, on every route that takes {job}: a name
outside it gets 400 naming the field `job`, and nothing is stored. Path parameters are
percent-decoded with their length: `a%00b` used to be cut at the NUL and write into job `a`."""
import json

from gov import Server, Checks, sample, fingerprint

c = Checks()
s = Server()

BAD = {
    "NUL escape": "a%00b",
    "NUL escape alone": "%00",
    "escape cut short": "a%0",
    "lone percent": "a%",
    "non-hex escape": "a%zzb",
    "encoded tab": "a%09b",
    "encoded space": "a%20b",
    "encoded slash": "a%2Fb",
    "slash": "a/b",
    "non-ASCII": "caf%C3%A9",
    "129 characters": "j" * 129,
    "5,000 characters": "j" * 5000,
}
ROUTES = [
    ("POST", "/v1/jobs/%s/metrics", sample(1)),
    ("PUT", "/v1/jobs/%s/config", {"config": {"job.autoscaler.utilization.target": 0.5}}),
    ("GET", "/v1/jobs/%s/config", None),
    ("DELETE", "/v1/jobs/%s", None),
    ("GET", "/v1/jobs/%s/decisions", None),
    ("GET", "/v1/jobs/%s/events", None),
    ("HEAD", "/v1/jobs/%s/config", None),
]

before = fingerprint(s.db)
for what, name in BAD.items():
    for method, pattern, body in ROUTES:
        st, resp, _ = s.req(method, pattern % name, body)
        if method == "HEAD":
            c.check(st == 400, "HEAD %s: %d" % (what, st))
            continue
        err = resp.get("error", {}) if isinstance(resp, dict) else {}
        c.check(st == 400 and err.get("field") == "job" and err.get("code") == "INVALID_ARGUMENT",
                "%s %s (%s): want 400 field job, got %d %r"
                % (method, pattern, what, st, str(resp)[:200]))
c.check(fingerprint(s.db) == before, "nothing stored by the refused names")
st, body, _ = s.req("GET", "/v1/jobs")
c.check(st == 200 and body["jobs"] == [], "no job was created: %r" % (body,))



def message(path):
    st, resp, _ = s.req("POST", path, sample(1))
    return resp.get("error", {}).get("message", "") if isinstance(resp, dict) else "", resp


# The messages say what is wrong.
m, resp = message("/v1/jobs/a%00b/metrics")
c.check("NUL" in m, "NUL named: %r" % resp)
m, resp = message("/v1/jobs/%s/metrics" % ("j" * 5000))
c.check("5000 characters" in m and len(json.dumps(resp)) < 600,
        "length named, the name not echoed: %r" % str(resp)[:300])
m, resp = message("/v1/jobs/a%09b/metrics")
c.check("0x09" in m, "the bad byte named: %r" % resp)

# The edges of the grammar are accepted, on a route of each kind.
for name in ("j" * 128, "orders-eu.1:v_2", "A", "0", "..", "a%2Db"):
    st, resp, _ = s.req("POST", "/v1/jobs/%s/metrics" % name, sample(1))
    c.check(st == 200, "POST %r: %d %r" % (name[:20], st, str(resp)[:200]))
    st, resp, _ = s.req("GET", "/v1/jobs/%s/decisions" % name)
    c.check(st == 200 and len(resp["decisions"]) == 1, "GET decisions %r: %d" % (name[:20], st))
st, body, _ = s.req("GET", "/v1/jobs")
c.check(sorted(j["job"] for j in body["jobs"]) == sorted(["j" * 128, "orders-eu.1:v_2", "A", "0",
                                                          "..", "a-b"]),
        "the jobs stored under their decoded names: %r" % [j["job"][:20] for j in body["jobs"]])

s.stop()
c.done()
