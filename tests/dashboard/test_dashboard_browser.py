"""The dashboard rendered by a real browser: headless Chromium loads GET /?job=orders from the
real server holding tests/cases/backlog (7 decisions: six COLLECTING_METRICS, then a SCALE_UP
of src from 2 to 4 for HIGH_BACKLOG) and another job, and the DOM it dumps must hold the charts
drawn from that data: one parallelism chart per vertex with its current and target step lines
and the min/max lines, one reason mark per decision (in time order, with the decision's
message), a utilization line per vertex, a backlog line for the source only. The browser's
fetches must all have been answered 200. A server with a token file must show the token field;
driven over the DevTools pipe (cdp.py), the page must refuse a wrong token, draw the charts with
the right one, keep it in localStorage across a reload and drop it on "forget token"; clicking
another job must draw that job. Exits 77 (skipped) when no Chromium is installed.

usage: test_dashboard_browser.py GOVERNOR_BINARY"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "api"))
sys.path.insert(0, HERE)
from gov import Server, Checks, sample  # noqa: E402
from dashdata import post_trace  # noqa: E402
from cdp import Browser  # noqa: E402

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
if not CHROMIUM:
    print("SKIP: chromium is not installed (apt-get install chromium; tests/install-deps.sh "
          "lists it)")
    sys.exit(77)

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children, self.text = [], ""

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def all(self):
        for ch in self.children:
            yield ch
            yield from ch.all()

    def find(self, tag=None, cls=None, **attrs):
        """Descendants with this tag, class and attribute values (data_x for data-x)."""
        out = []
        for n in self.all():
            if tag and n.tag != tag:
                continue
            if cls and cls not in n.classes():
                continue
            if any(n.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append(n)
        return out

    def alltext(self):
        return self.text + "".join(ch.alltext() for ch in self.children)


class Tree(HTMLParser):
    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.text += data


def chromium(port, query, *extra):
    """Runs headless Chromium on the page; returns its stdout (the DOM with --dump-dom)."""
    profile = tempfile.mkdtemp(prefix="governor-chromium-")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--user-data-dir=" + profile, "--virtual-time-budget=5000"]
    cmd += list(extra) + ["http://127.0.0.1:%d/%s" % (port, query)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if p.returncode != 0:
        print("chromium exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    return p.stdout


def requests_after(s, mark):
    """(method, path, status) of the requests the server logged after byte offset mark."""
    return [(m.group(1), m.group(2), int(m.group(3))) for m in re.finditer(
        r'msg="request" method=(\S+) path="((?:[^"\\]|\\.)*)" status=(\d+)', s.logs()[mark:])]


def points(poly):
    return [tuple(map(float, p.split(","))) for p in poly.attrs.get("points", "").split()]


c = Checks()
s = Server()
decisions = post_trace(s)
# A second job, so that the list has two entries and ?job= must pick the right one.
for i in range(3):
    st, _, _ = s.req("POST", "/v1/jobs/clicks/metrics", sample(i))
    c.check(st == 200, "decide clicks %d" % i)
st, pol, _ = s.req("GET", "/v1/policies")

mark = len(s.logs())
dom = chromium(s.port, "?job=orders", "--dump-dom")
t = Tree(dom).root
body = t.find("body")
c.check(body and body[0].attrs.get("data-state") == "ready",
        "page rendered (body data-state=ready): %r" % (body and body[0].attrs))
title = t.find(id="job-title")
c.check(title and title[0].alltext().strip() == "orders", "the job's name is the title")
links = t.find("a", data_job="orders") + t.find("a", data_job="clicks")
c.check(len(links) == 2, "both jobs listed")
c.check(links and "selected" in links[0].classes() and "selected" not in links[-1].classes(),
        "orders is the selected job")
rev = t.find(id="policy-revision")
c.check(rev and rev[0].alltext() == pol["revision"], "the active policy revision is shown")

# Parallelism: one chart per vertex, src and agg (the trace's vertices, topological order).
charts = t.find("svg", cls="chart-parallelism")
c.check([ch.attrs.get("data-vertex") for ch in charts] == ["src", "agg"],
        "one parallelism chart per vertex: %r" % [ch.attrs.get("data-vertex") for ch in charts])
for ch in charts:
    vid = ch.attrs.get("data-vertex")
    cur, tgt = ch.find("polyline", cls="series-current"), ch.find("polyline", cls="series-target")
    c.check(len(cur) == 1 and len(tgt) == 1, "%s: one current and one target line" % vid)
    c.check(len(ch.find("line", cls="limit-min")) == 1 and len(ch.find("line", cls="limit-max")) == 1,
            "%s: dashed min and max parallelism lines" % vid)
    if len(cur) != 1 or len(tgt) != 1:
        continue
    # Step lines: two points per decision (it holds until the next one).
    c.check(len(points(cur[0])) == 14 and len(points(tgt[0])) == 14, "%s: 7 steps each" % vid)
    ys_cur = {round(y, 1) for _, y in points(cur[0])}
    ys_tgt = [round(y, 1) for _, y in points(tgt[0])]
    # current stays at 2 in every decision; the target of src goes 2 -> 4 at the 7th (so the
    # line has two levels, the last two points higher on screen, i.e. a smaller y), agg stays 2.
    c.check(len(ys_cur) == 1, "%s: current is flat at 2" % vid)
    if vid == "src":
        c.check(len(set(ys_tgt)) == 2 and ys_tgt[-1] < ys_tgt[0] and ys_tgt[:12] == [ys_tgt[0]] * 12,
                "src: target steps up at the last decision")
        c.check(ys_tgt[0] in ys_cur, "src: target equals current before the scale-up")
    else:
        c.check(len(set(ys_tgt)) == 1 and ys_tgt[0] in ys_cur, "agg: target equals current")
    xs = [x for x, _ in points(cur[0])]
    c.check(xs == sorted(xs), "%s: time runs left to right" % vid)

# Reasons: one mark per decision, oldest first, each with the decision's message on hover.
reasons = t.find("svg", id="reasons")
marks = reasons[0].find("rect", cls="reason-mark") if reasons else []
c.check(len(marks) == len(decisions), "one reason mark per decision (%d)" % len(marks))
c.check([m.attrs.get("data-reason") for m in marks] == [d["reason"] for d in decisions],
        "reason marks in time order")
for m, d in zip(marks, decisions):
    ti = m.find("title")
    c.check(ti and d["message"] in ti[0].alltext() and d["reason"] in ti[0].alltext(),
            "mark %s carries its reason and message" % d["decision_id"])
c.check(len(set(m.attrs.get("fill") for m in marks)) == 2, "two reasons, two colors")
c.check(len(reasons[0].find("path", cls="exec-mark")) == 1 if reasons else False,
        "one executed decision marked")
legend = t.find(id="reason-legend")
c.check(legend and "HIGH_BACKLOG" in legend[0].alltext() and
        "COLLECTING_METRICS" in legend[0].alltext(), "reason legend")
vmarks = reasons[0].find("rect", cls="vertex-reason-mark") if reasons else []
c.check(len(vmarks) == 2 * len(decisions), "a reason row per vertex")

# Utilization: a line per vertex, on a 0..1 scale.
util = t.find("svg", id="utilization")
lines = util[0].find("polyline", cls="series-load") if util else []
c.check(sorted(p.attrs.get("data-vertex") for p in lines) == ["agg", "src"],
        "a utilization line per vertex")
for p in lines:
    # One point per decision that has a load: not the first (one sample evaluates nothing).
    vid = p.attrs.get("data-vertex")
    want = sum(1 for d in decisions for v in d["vertices"]
               if v["id"] == vid and v["evaluated"].get("load") is not None)
    c.check(want == 6 and len(points(p)) == want, "utilization of %s: %d points" % (vid, want))
if len(lines) == 2:
    # load src 0.9 > agg 0.5 (busy 900 and 500 ms/s): src's line is higher (smaller y).
    ys = {p.attrs["data-vertex"]: points(p)[-1][1] for p in lines}
    c.check(ys["src"] < ys["agg"], "src busier than agg")

# Backlog: only the source reports a lag.
backlog = t.find("svg", id="backlog")
lags = backlog[0].find("polyline", cls="series-lag") if backlog else []
c.check([p.attrs.get("data-vertex") for p in lags] == ["src"], "a backlog line for the source only")
if lags:
    # pending_records is 600000 in every sample: a flat line, one point per evaluated decision.
    pts = points(lags[0])
    c.check(len(pts) == 6 and len({y for _, y in pts}) == 1, "src backlog: 6 points, flat")
c.check(not t.find("form", id="token-form") or "hidden" in t.find("form", id="token-form")[0].attrs,
        "no token field on an open server")

# What the browser fetched: the page, then the API, all 200 (and no favicon or other miss).
reqs = requests_after(s, mark)
paths = {p for _, p, _ in reqs}
for p in ("/", "/v1/jobs", "/v1/policies", "/v1/jobs/orders/decisions", "/v1/jobs/orders/config",
          "/v1/decisions/%d" % decisions[-1]["decision_id"]):
    c.check(p in paths, "the browser requested %s" % p)
bad = [r for r in reqs if r[2] != 200]
c.check(not bad, "every request of the browser answered 200: %r" % bad)

# A screenshot at a laptop size: a PNG of that size.
shot = os.path.join(s.tmp, "dashboard.png")
chromium(s.port, "?job=orders", "--screenshot=" + shot, "--window-size=1280,900")
ok = os.path.exists(shot)
if ok:
    with open(shot, "rb") as f:
        head = f.read(24)
    ok = head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, 900)
c.check(ok, "screenshot 1280x900 written")

# Driven over the DevTools pipe: clicking another job redraws it and keeps it in the URL.
b = Browser(CHROMIUM, "http://127.0.0.1:%d/?job=orders" % s.port)
try:
    c.check(b.wait("document.body.dataset.state === 'ready'"), "page ready (DevTools)")
    b.eval("document.querySelector('a[data-job=\"clicks\"]').click(); 1")
    c.check(b.wait("document.getElementById('job-title').textContent === 'clicks'"),
            "clicking a job shows it")
    c.check(b.eval("location.search") == "?job=clicks", "the selected job is in the URL")
    c.check(b.eval("document.querySelectorAll('svg#reasons rect.reason-mark').length") == 3,
            "clicks: 3 reason marks for its 3 decisions")
finally:
    b.close()
c.check(s.stop() == 0, "SIGTERM exits 0")

# A server with a token file: the page loads, its API answers 401, the token field shows.
tmp = tempfile.mkdtemp(prefix="governor-dash-")
tf = os.path.join(tmp, "tokens")
with open(tf, "w") as f:
    f.write("dash-secret\n")
s = Server(args=["--token-file", tf], tmp=tmp)
post_trace(s, headers={"Authorization": "Bearer dash-secret"})
mark = len(s.logs())
t = Tree(chromium(s.port, "?job=orders", "--dump-dom")).root
form = t.find("form", id="token-form")
c.check(form and "hidden" not in form[0].attrs, "the token field is shown")
c.check(bool(t.find("input", id="token-input")), "with its input")
c.check(t.find("body") and t.find("body")[0].attrs.get("data-state") == "token",
        "body data-state=token")
c.check(not t.find("svg", cls="chart-parallelism"), "no chart without the token")
reqs = requests_after(s, mark)
c.check(("GET", "/", 200) in reqs and ("GET", "/v1/jobs", 401) in reqs,
        "page 200, API 401: %r" % reqs)

# The token flow, driven over the DevTools pipe: a wrong token is refused and says so, the
# right one draws the charts and is kept in localStorage across a reload, "forget" drops it.
b = Browser(CHROMIUM, "http://127.0.0.1:%d/?job=orders" % s.port)
state = "document.body.dataset.state"
submit = ("document.getElementById('token-input').value = %s; "
          "document.getElementById('token-form').requestSubmit(); 1")
try:
    c.check(b.wait(state + " === 'token'"), "token field first (DevTools)")
    b.eval(submit % "'wrong'")
    c.check(b.wait("document.getElementById('token-hint').textContent.includes('refused')"),
            "a wrong token is refused")
    c.check(b.eval(state) == "token", "still asking after a wrong token")
    b.eval(submit % "'dash-secret'")
    c.check(b.wait(state + " === 'ready'"), "the right token loads the data")
    c.check(b.eval("document.querySelectorAll('svg.chart-parallelism').length") == 2,
            "charts drawn with the token")
    c.check(b.eval("document.getElementById('token-form').hidden") is True, "token field hidden")
    c.check(b.eval("localStorage.getItem('governor.token')") == "dash-secret",
            "token kept in localStorage")
    b.eval("location.reload(); 1")
    time.sleep(0.3)
    c.check(b.wait(state + " === 'ready'"), "after a reload the kept token is used")
    b.eval("document.getElementById('forget').click(); 1")
    c.check(b.wait(state + " === 'token'"), "forget token asks again")
    c.check(b.eval("localStorage.getItem('governor.token')") is None, "token forgotten")
finally:
    b.close()
c.check(s.stop() == 0, "SIGTERM exits 0 (token server)")
c.check("dash-secret" not in s.logs(), "the token is never logged")
c.done()
