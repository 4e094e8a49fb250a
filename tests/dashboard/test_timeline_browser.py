"""The view over time in a real browser: headless Chromium, driven over the DevTools pipe
(cdp.py), loads /?job=orders&from=&to=&step= from a real server seeded with a fixed history
(the backlog case's trace, a scale-up for HIGH_BACKLOG, then 40 minutes over-provisioned, so
that the advice finds excessive up-scaling). For a chosen bucket the readout under the shared
cursor and each chart's data table show the same numbers as GET /v1/jobs/{job}/timeline; a
mouse move on one chart moves the cursor of all; the rationale band has one segment per run
linking to its first decision; the advice is a banner; zooming asks the server for the new
range; and every request the page made went to the server. Exits 77 (skipped) without
Chromium.

usage: test_timeline_browser.py GOVERNOR_BINARY"""
import copy
import json
import os
import shutil
import sys
from urllib.parse import parse_qs, urlparse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "api"))
sys.path.insert(0, HERE)
import dashdata  # noqa: E402
from gov import Server, Checks  # noqa: E402
from cdp import Browser  # noqa: E402

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
if not CHROMIUM:
    print("SKIP: chromium is not installed (apt-get install chromium)")
    sys.exit(77)

c = Checks()
s = Server()
# An SLO 30 s under the lag threshold (5 min): their lines nearly meet, their labels must not.
dashdata.CONFIG["governor.slo.lag"] = "270 s"
decs = dashdata.post_trace(s, job="orders")
last = [json.loads(x) for x in open(dashdata.TRACE) if x.strip()][-1]
last.pop("job")
t0 = last["at"] + 30000
rin = last["vertices"][0]["metrics"]["records_in"]
for i in range(80):
    x = copy.deepcopy(last)
    x.update(at=t0 + i * 30000, running_since=t0, config=dashdata.CONFIG)
    rin += 30000
    src, agg = x["vertices"]
    src["parallelism"] = 4
    src["metrics"].update(busy_ms_per_s=150, pending_records=0, records_in=rin, records_out=rin)
    agg["metrics"].update(busy_ms_per_s=200, records_in=rin, records_out=rin / 10)
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", x)
    c.check(st == 200, "sample %d" % i)
frm, to, step = decs[0]["at"], t0 + 80 * 30000, 300000
st, tl, _ = s.req("GET", "/v1/jobs/orders/timeline?from=%d&to=%d&step=%d" % (frm, to, step))
c.check(st == 200, "timeline")
origin = "http://127.0.0.1:%d" % s.port
b = Browser(CHROMIUM, "%s/?job=orders&from=%d&to=%d&step=%d" % (origin, frm, to, step))
try:
    c.check(b.wait("document.getElementById('timeline').dataset.state === 'ready'", 30),
            "the view over time is drawn")
    # A bucket with data in the middle: the readout and the tables show the API's numbers.
    i = 2
    b.eval("governorTimeline.select(%d); 1" % i)
    c.check(b.eval("document.getElementById('tl-readout').dataset.bucket") == str(i),
            "cursor on bucket %d" % i)
    shown = b.eval("""Array.from(document.querySelectorAll('#tl-readout span[data-field]'))
                      .map(e => [e.dataset.vertex, e.dataset.field, e.textContent])""")
    got = {(v, f): t for v, f, t in shown}
    for v in tl["vertices"]:
        for f, digits in (("current", None), ("target", None), ("min", None), ("max", None),
                          ("util", 3), ("util_target", 2), ("util_min", 2), ("util_max", 2),
                          ("backlog_s", 1)):
            want = v[f][i]
            text = got.get((v["id"], f))
            if want is None:
                c.check(text == "–", "%s.%s empty in bucket %d: %r" % (v["id"], f, i, text))
            else:
                c.check(text is not None and abs(float(text) - want) <= (0.5 * 10 ** -digits
                                                                         if digits else 0),
                        "%s.%s of bucket %d: page %r, API %r" % (v["id"], f, i, text, want))
        row = b.eval("""Array.from(document.querySelectorAll(
            'figure[data-chart="parallelism"][data-vertex="%s"] tr[data-bucket="%d"] td'))
            .map(e => e.textContent)""" % (v["id"], i))
        c.check(row == [str(v[k][i]) for k in ("current", "target", "min", "max")],
                "%s: data table row of bucket %d %r" % (v["id"], i, row))
    util_row = b.eval("""Array.from(document.querySelectorAll(
        'figure[data-chart="utilization"] tr[data-bucket="%d"] td')).map(e => e.textContent)""" % i)
    c.check(util_row[:len(tl["vertices"])] == ["%.3f" % v["util"][i] for v in tl["vertices"]],
            "utilization table row %r" % util_row)
    c.check(b.eval("document.querySelectorAll('#tl-figures tr.sel').length") >= 3,
            "the bucket's rows are marked in the tables")

    # A mouse move over one chart moves the cursor of every chart.
    xs = b.eval("""(() => {
        const s = document.querySelector('figure[data-chart="utilization"] svg');
        const r = s.getBoundingClientRect(), w = +s.getAttribute('width');
        const x = r.left + 64 + (w - 64 - 84) * (1.5 / %d);
        s.dispatchEvent(new MouseEvent('mousemove', {clientX: x, clientY: r.top + 20, bubbles: true}));
        return Array.from(document.querySelectorAll('.tl-cursor')).map(l => l.getAttribute('x1'));
    })()""" % len(tl["t"]))
    c.check(b.eval("document.getElementById('tl-readout').dataset.bucket") == "1",
            "hovering bucket 1 selects it")
    c.check(len(xs) == len(tl["vertices"]) + 3 and len(set(xs)) == 1,
            "one cursor on every chart, at the same x: %r" % xs)

    # The rationale band: one segment per run, linking to its first decision.
    runs = b.eval("""Array.from(document.querySelectorAll('a.tl-run'))
                     .map(a => [a.dataset.reason, a.dataset.first, a.getAttribute('href')])""")
    want_runs = [[tl["reasons"]["codes"][r[2]], str(r[3]), "/v1/decisions/%d" % r[3]]
                 for r in tl["reasons"]["runs"]]
    c.check(runs == want_runs, "rationale segments %r" % runs[:3])

    # The advice: one banner.
    st, adv, _ = s.req("GET", "/v1/jobs/orders/advice?window=%d&to=%d" % (max(to - frm, 86400000), to))
    banners = b.eval("Array.from(document.querySelectorAll('.advice-banner')).map(e => [e.dataset.pattern, e.textContent])")
    c.check([p for p, _ in banners] == [a["pattern"] for a in adv["advice"]] and banners,
            "advice banners %r" % banners)
    c.check(banners and adv["advice"][0]["advised"] in banners[0][1], "the banner names the advised value")

    # The replay's figures and its caveat on a line of their own under the advice.
    replay = b.eval("Array.from(document.querySelectorAll('.advice-banner .advice-replay'))"
                    ".map(e => [e.tagName, e.textContent])")
    c.check(replay and replay[0][0] == "DIV" and "upper bound" in replay[0][1]
            and replay[0][1].startswith("Replayed with"),
            "the replay under the advice, a block of its own: %r" % replay)

    # The backlog chart's threshold and SLO labels do not overlap.
    boxes = b.eval("""Array.from(document.querySelectorAll(
        'figure[data-chart="backlog"] text.tl-line-label')).map(e => {
        const r = e.getBBox(); return [e.dataset.line, r.y, r.y + r.height]; })""")
    c.check(len(boxes) == 2 and (boxes[0][2] <= boxes[1][1] or boxes[1][2] <= boxes[0][1]),
            "the threshold and SLO labels do not overlap: %r" % boxes)

    # Zooming asks for the new range.
    b.eval("document.getElementById('tl-zoom-in').click(); 1")
    c.check(b.wait("""performance.getEntriesByType('resource').filter(
        e => e.name.includes('/timeline?')).length >= 2""", 20), "zoom fetched again")
    urls = b.eval("performance.getEntriesByType('resource').map(e => e.name)")
    tls = [u for u in urls if "/timeline?" in u]
    q0, q1 = (parse_qs(urlparse(u).query) for u in (tls[0], tls[-1]))
    span0 = int(q0["to"][0]) - int(q0["from"][0])
    span1 = int(q1["to"][0]) - int(q1["from"][0])
    c.check(span1 * 2 == span0 or abs(span1 * 2 - span0) <= int(q1["step"][0]) * 2,
            "zoom in halves the range: %d -> %d" % (span0, span1))
    # Nothing left the server: every resource the page loaded is of its origin.
    c.check(urls and all(u.startswith(origin + "/") for u in urls),
            "every request went to the server: %r" % [u for u in urls if not u.startswith(origin)])
finally:
    b.close()
c.check(s.stop() == 0, "SIGTERM exits 0")
c.done()
