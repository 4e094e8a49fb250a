"""GET /: the dashboard page and its files (page.css, page.js, timeline.js) are
served by the binary itself, open without a token, each with its type and a strict
Content-Security-Policy; they reference no external host (no internet needed) and hold no
inline script or style; and every JSON API URL the page fetches answers 200 with the fields
the page draws from, on a server holding a trace that scales (tests/cases/backlog: six
COLLECTING_METRICS, then a SCALE_UP for HIGH_BACKLOG)."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks  # noqa: E402
from dashdata import CONFIG, TRACE, post_trace  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DASH = os.path.join(ROOT, "server", "http", "dashboard")
PAGE = os.path.join(DASH, "index.html")
# The files of the page: path, file, Content-Type.
FILES = [("/", "index.html", "text/html; charset=utf-8"),
         ("/page.css", "page.css", "text/css; charset=utf-8"),
         ("/page.js", "page.js", "text/javascript; charset=utf-8"),
         ("/timeline.js", "timeline.js", "text/javascript; charset=utf-8")]
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
# The fetches the page makes (its API tables); a new one must be added here and checked below.
EXPECTED_TEMPLATES = {"/v1/jobs", "/v1/policies", "/v1/jobs/{job}/decisions?limit={limit}",
                      "/v1/jobs/{job}/config", "/v1/decisions/{id}",
                      "/v1/jobs/{job}/timeline?from={from}&to={to}&step={step}",
                      "/v1/jobs/{job}/advice?window={window}&to={to}"}


def static_checks(c, page):
    """No byte of the page may send the browser elsewhere."""
    c.check("http://" not in page and "https://" not in page, "no http(s):// URL in the page")
    c.check(not re.search(r"""(src|href|action)\s*=\s*["']?//""", page, re.I),
            "no protocol-relative URL")
    for m in re.finditer(r"<script([^>]*)>", page, re.I):
        c.check(re.search(r"""\bsrc\s*=\s*["']/(page|timeline)\.js["']""", m.group(1)),
                "a script is one of the page's files, none inline: %r" % m.group(0))
    c.check(not re.search(r"<style", page, re.I) and not re.search(r"\sstyle\s*=", page, re.I),
            "no inline style")
    c.check(not re.search(r"""\son[a-z]+\s*=\s*["']""", page, re.I), "no inline handler")
    c.check("@import" not in page and "url(" not in page, "no CSS import or url()")
    for m in re.finditer(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""", page, re.I):
        v = m.group(1)
        c.check(v.startswith("data:") or v.startswith("?") or v.startswith("#") or
                v in ("/page.css", "/page.js", "/timeline.js"),
                "link stays on the page or its files: %r" % v)
    c.check(not re.search(r"""fetch\(\s*['"`](?!/)""", page), "fetch only takes same-origin paths")


c = Checks()
s = Server()
decisions = post_trace(s)
c.check([d["reason"] for d in decisions] == ["COLLECTING_METRICS"] * 6 + ["HIGH_BACKLOG"],
        "the trace scales up at its 7th sample")

sources = {}
for path, name, ctype in FILES:
    with open(os.path.join(DASH, name), encoding="utf-8") as f:
        sources[name] = f.read()
    queries = ("", "?job=orders", "?job=orders&limit=50") if path == "/" else ("",)
    for q in queries:
        st, body, h = s.req("GET", path + q)
        c.check(st == 200, "GET %s is 200" % (path + q))
        c.check(h.get("Content-Type") == ctype, "GET %s is %s" % (path + q, ctype))
        c.check(body == sources[name], "GET %s serves %s as built" % (path + q, name))
        c.check(h.get("Content-Security-Policy") == CSP, "GET %s: strict CSP" % (path + q))
        c.check(h.get("X-Content-Type-Options") == "nosniff", "GET %s: nosniff" % (path + q))
    static_checks(c, sources[name])
source = sources["page.js"] + sources["timeline.js"]
st, body, _ = s.req("POST", "/", {"x": 1})
c.check(st == 405, "POST / is 405")

# The API table of the page, filled in as the page does, each answering 200.
templates = set(re.findall(r"'(/v1/[^']*)'", source.split("const API = {")[1].split("};")[0]))
templates |= set(re.findall(r"'(/v1/[^']*)'", source.split("const TL_API = {")[1].split("};")[0]))
c.check(templates == EXPECTED_TEMPLATES, "the page's API table: %r" % sorted(templates))
newest = decisions[-1]["decision_id"]
fill = {"job": "orders", "limit": "200", "id": str(newest), "from": str(decisions[0]["at"]),
        "to": str(decisions[-1]["at"] + 1), "step": "60000", "window": "86400000"}
for t in sorted(templates):
    url = re.sub(r"\{(\w+)\}", lambda m: fill[m.group(1)], t)
    st, body, _ = s.req("GET", url)
    c.check(st == 200, "GET %s (page's %s) is 200: %r" % (url, t, body))

# The fields the page draws from.
st, jobs, _ = s.req("GET", "/v1/jobs")
c.check([j["job"] for j in jobs["jobs"]] == ["orders"] and "last_at" in jobs["jobs"][0],
        "job list with last_at")
st, pol, _ = s.req("GET", "/v1/policies")
c.check(isinstance(pol.get("revision"), str) and "plugins" in pol and "last_reload" in pol,
        "policies: revision, plugins, last_reload")
for limit in (50, 200, 1000):
    st, dec, _ = s.req("GET", "/v1/jobs/orders/decisions?limit=%d" % limit)
    c.check(st == 200 and len(dec["decisions"]) == 7, "decisions?limit=%d: all 7" % limit)
ds = dec["decisions"]
c.check([d["decision_id"] for d in ds] == sorted((d["decision_id"] for d in ds), reverse=True),
        "decisions newest first")
for d in ds:
    c.check(all(k in d for k in ("at", "action", "execute", "reason", "message", "vertices")),
            "decision %s has at/action/execute/reason/message/vertices" % d.get("decision_id"))
    for v in d["vertices"]:
        c.check(all(k in v for k in ("id", "current", "target", "reason", "evaluated")) and
                "load" in v["evaluated"] and "lag" in v["evaluated"],
                "vertex %s of decision %s: current/target/reason/evaluated.load/lag" %
                (v.get("id"), d.get("decision_id")))
src = [v for v in ds[0]["vertices"] if v["id"] == "src"][0]
# The trace's source reports pending_records 600000: its evaluated lag; busy 900 ms/s: load 0.9.
c.check(src["evaluated"]["lag"] == 600000 and abs(src["evaluated"]["load"] - 0.9) < 1e-9,
        "source lag 600000 and load 0.9")
st, cfg, _ = s.req("GET", "/v1/jobs/orders/config")
eff = cfg["effective"]
for k in ("job.autoscaler.vertex.min-parallelism", "job.autoscaler.vertex.max-parallelism",
          "job.autoscaler.utilization.target"):
    c.check(k in eff and "value" in eff[k] and "source" in eff[k], "config names %s and its layer" % k)
st, rec, _ = s.req("GET", "/v1/decisions/%d" % newest)
c.check(rec["config"].get("job.autoscaler.metrics.window") == "2 min",
        "the decision record holds the sample's own config layer")

# A job id with the punctuation the API allows, URL-encoded as the page does.
st, _, _ = s.req("POST", "/v1/jobs/team.a:orders-1/metrics",
                 dict(json.loads(open(TRACE).readline()), config=CONFIG))
c.check(st == 200, "decide for team.a:orders-1")
st, dec, _ = s.req("GET", "/v1/jobs/team.a%3Aorders-1/decisions?limit=200")
c.check(st == 200 and len(dec["decisions"]) == 1, "encoded job id in the decisions URL")
st, _, _ = s.req("GET", "/v1/jobs/team.a%3Aorders-1/config")
c.check(st == 200, "encoded job id in the config URL")
c.check(s.stop() == 0, "SIGTERM exits 0")

# With a token file: the page itself is open, its API is not.
tmp = tempfile.mkdtemp(prefix="governor-dash-")
tf = os.path.join(tmp, "tokens")
with open(tf, "w") as f:
    f.write("dash-secret\n")
s = Server(args=["--token-file", tf], tmp=tmp)
st, body, h = s.req("GET", "/?job=orders")
c.check(st == 200 and h.get("Content-Type", "").startswith("text/html"), "GET / open with a token file")
st, _, h = s.req("GET", "/v1/jobs")
c.check(st == 401 and h.get("WWW-Authenticate") == "Bearer", "the API it calls needs the token")
st, _, _ = s.req("GET", "/v1/jobs", headers={"Authorization": "Bearer dash-secret"})
c.check(st == 200, "the API with the token")
c.check(s.stop() == 0, "SIGTERM exits 0 (token server)")
c.done()
