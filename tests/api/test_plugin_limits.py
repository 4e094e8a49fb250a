"""Hostile plugins against a running server (README, Sandbox and limits): each
reproduction fails to hurt the server. While each runs, a thread times GET /healthz: it must
keep answering (the plugin calls of one decision together get plugin-decision-timeout,
100 ms by default; the limit checked here is 1 s, for a loaded or sanitized machine, where
the unbounded server did not answer for seconds, or ever). Each decision says PLUGIN_ERROR
naming the plugin and why; a policy file whose top level loops fails its reload (automatic
or requested) and a replay with it, and the server stays up; SIGTERM during a hostile call
stops the server."""
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, vertex, connect, T0  # noqa: E402

HEALTH_MAX = 1.0  # seconds
# GOV_ONLY=xloop,tmove,lists,ranges,flood,load,sigterm runs only those parts (to try one on an
# older binary, which hangs on the first).
ONLY = [x for x in os.environ.get("GOV_ONLY", "").split(",") if x]


def want(part):
    return not ONLY or part in ONLY


PLUGINS = {
    # item 1: a message handler that loops
    "xloop": "return { kind = 'evaluator', evaluate = function()\n"
             "  return xpcall(error, function() while true do end end)\n"
             "end }\n",
    # item 2: a library call whose work is set by its arguments
    "tmove": "return { kind = 'evaluator', evaluate = function()\n"
             "  return table.move({}, 1, 300000000, 2)\n"
             "end }\n",
    "cheap": "return { kind = 'evaluator', evaluate = function() return nil end }\n",
    # item 8: integers out of range
    "bigalign": "return { kind = 'alignment', align = function(a, ctx) return 1 << 31 end }\n",
    # item 9: figures out of range
    "infeval": "return { kind = 'evaluator', evaluate = function()\n"
               "  return { target_data_rate = math.huge }\n"
               "end }\n",
    # item 10: a log flood
    "flood": "return { kind = 'evaluator', evaluate = function()\n"
             "  local line = string.rep('x', 1024)\n"
             "  for i = 1, 100000 do print(line) end\n"
             "end }\n",
}
TOP_LOOP = "xpcall(error, function() while true do end end)\nreturn {}\n"

c = Checks()
tmp = tempfile.mkdtemp(prefix="governor-limits-")
pdir = os.path.join(tmp, "policies")
os.mkdir(pdir)
for name, text in PLUGINS.items():
    with open(os.path.join(pdir, name + ".lua"), "w") as f:
        f.write(text)
s = Server(tmp=tmp, args=["--policies", pdir])


class Health(threading.Thread):
    """Times GET /healthz every 20 ms until stopped; worst is the longest wait seen."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.worst, self.failures = server, 0.0, 0
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            t = time.monotonic()
            try:
                st, _, _ = self.server.req("GET", "/healthz")
                if st != 200:
                    self.failures += 1
            except Exception:  # noqa: BLE001
                self.failures += 1
            self.worst = max(self.worst, time.monotonic() - t)
            time.sleep(0.02)

    def stop(self):
        self.halt.set()
        self.join(timeout=60)
        return self.worst


def guarded(what, fn):
    """Runs fn while timing /healthz; checks it kept answering; returns fn's result."""
    h = Health(s)
    h.start()
    time.sleep(0.05)
    result = None
    try:
        result = fn()
    except Exception as e:  # noqa: BLE001
        c.check(False, "%s: %r" % (what, e))
    worst = h.stop()
    print("%s: /healthz answered within %.0f ms" % (what, worst * 1000), flush=True)
    c.check(worst < HEALTH_MAX and h.failures == 0,
            "%s: /healthz kept answering: worst %.3f s, %d failures" % (what, worst, h.failures))
    return result


def decide(job, body):
    return s.req("POST", "/v1/jobs/%s/metrics" % job, body, conn=s.conn(timeout=30))


WINDOW = {"job.autoscaler.stabilization.interval": "0 ms", "job.autoscaler.metrics.window": "1 min"}


def with_config(i, cfg, **kw):
    smp = sample(i, **kw)
    smp["config"] = dict(WINDOW, **cfg)
    return smp


def series(job, cfg, n=4, **kw):
    """Posts n samples of a job (the window fills after 3): the last answer."""
    r = None
    for i in range(n):
        r = decide(job, with_config(i, cfg, **kw))
    return r


# ---- items 1 and 2: a looping message handler, a long library call ----
for name in ("xloop", "tmove"):
    if want(name):
        cfg = {"job.autoscaler.metrics.custom-evaluators": name}
        r = guarded(name, lambda: series("job-" + name, cfg))
        if r:
            st, body, _ = r
            c.check(st == 200 and body.get("reason") == "PLUGIN_ERROR" and
                    name in body.get("message", "") and "budget" in body.get("message", ""),
                    "%s: PLUGIN_ERROR naming the plugin and the budget: %d %r" % (
                        name, st, body.get("message") if isinstance(body, dict) else body))

# ---- item 3: a list of 20,000 names, and 17 different ones ----
if want("lists"):
    def wide(i):
        return {"at": T0 + i * 30000, "running_since": T0 - 600000, "status": "RUNNING",
                "vertices": [vertex("v%d" % k, 2, ["v%d" % (k - 1)] if k else [],
                                    rin=1000.0 * 30 * i, rate=1000.0) for k in range(50)],
                "config": dict(WINDOW, **{
                    "job.autoscaler.metrics.custom-evaluators": ";".join(["cheap"] * 20000)})}

    for i in range(3):
        decide("wide", wide(i))
    t = time.monotonic()
    r = guarded("20,000 names", lambda: decide("wide", wide(3)))
    took = time.monotonic() - t
    if r:
        st, body, _ = r
        c.check(st == 200, "20,000 repeated names: %d %r" % (st, body if st != 200 else ""))
        if st == 200:
            db = connect(s.db)
            deadline = time.time() + 10
            n = 0
            while time.time() < deadline:
                n = db.execute("SELECT count(*) FROM audit_plugin_calls WHERE decision_id = ?",
                               (body["decision_id"],)).fetchone()[0]
                if n:
                    break
                time.sleep(0.05)
            db.close()
            c.check(n == 50, "one evaluator call per vertex (the name counts once): %d rows" % n)
    print("20,000 names: %.3f s" % took)
    distinct = ";".join("e%d" % i for i in range(17))
    st, body, _ = decide("many", with_config(0, {"job.autoscaler.metrics.custom-evaluators": distinct}))
    msg = body.get("error", {}).get("message", "") if isinstance(body, dict) else ""
    c.check(st == 422 and "job.autoscaler.metrics.custom-evaluators" in (
        body.get("error", {}).get("field", "") + msg) and "more than 16" in msg,
        "17 different names: 422 naming the option: %d %r" % (st, body))

# ---- items 8 and 9: numbers out of range ----
if want("ranges"):
    cfg = {"job.autoscaler.scaling.parallelism-alignment.mode": "bigalign"}
    last = None
    for i in range(6):
        st, last, _ = decide("align", with_config(i, cfg, busy_agg=1000.0))
    c.check(st == 200 and last.get("reason") == "PLUGIN_ERROR" and
            "bigalign" in last.get("message", "") and "2147483648" in last.get("message", ""),
            "an alignment of 1 << 31 is PLUGIN_ERROR naming it and the value: %r" % (
                {k: last.get(k) for k in ("reason", "message")},))
    cfg = {"job.autoscaler.metrics.custom-evaluators": "infeval"}
    st, body, _ = series("inf", cfg)
    c.check(st == 200 and body.get("reason") == "PLUGIN_ERROR" and
            "infeval" in body.get("message", "") and "target_data_rate" in body.get("message", ""),
            "math.huge as a rate is PLUGIN_ERROR naming the figure: %r" % (
                {k: body.get(k) for k in ("reason", "message")},))

# ---- item 10: a log flood ----
if want("flood"):
    size0 = os.path.getsize(s.log_path)
    cfg = {"job.autoscaler.metrics.custom-evaluators": "flood"}
    guarded("flood", lambda: series("flood", cfg))
    grown = os.path.getsize(s.log_path) - size0
    c.check(grown < 200 * 1024, "100,000 printed lines of 1 KB grew the log by %d bytes" % grown)
    c.check("log lines suppressed" in s.logs(), "the log says lines were suppressed")

# ---- item 1 at load time: the automatic reload, a requested one, a replay ----
if want("load"):
    series("stored", {"job.autoscaler.metrics.custom-evaluators": "cheap"})
    with open(os.path.join(pdir, "zz_top.lua"), "w") as f:
        f.write(TOP_LOOP)

    def wait_reload_failed():
        deadline = time.time() + 20
        while time.time() < deadline:
            st, pol, _ = s.req("GET", "/v1/policies")
            err = pol["last_reload"].get("error") or ""
            if "zz_top.lua" in err:
                return err
            time.sleep(0.05)
        return None

    err = guarded("automatic reload", wait_reload_failed)
    c.check(err and "budget" in err, "the automatic reload fails naming the file: %r" % err)
    r = guarded("requested reload", lambda: s.req("POST", "/v1/policies/reload"))
    if r:
        c.check(r[0] == 422 and "zz_top.lua" in r[1]["error"]["message"],
                "POST /v1/policies/reload: 422 naming the file: %r" % (r,))

    results = []

    def replays():
        def one():
            try:
                results.append(s.req("POST", "/v1/replay", {"job": "stored", "policies": pdir},
                                     conn=s.conn(timeout=30)))
            except Exception as e:  # noqa: BLE001
                results.append((0, repr(e), {}))
        ts = [threading.Thread(target=one) for _ in range(2)]
        for x in ts:
            x.start()
        for x in ts:
            x.join(timeout=60)

    guarded("replay", replays)
    c.check(len(results) == 2 and all(x[0] == 422 and "zz_top.lua" in str(x[1]) for x in results),
            "two replays with the looping file: 422 naming it: %r" % (results,))
    os.remove(os.path.join(pdir, "zz_top.lua"))
    st, body, _ = s.req("POST", "/v1/replay", {"job": "stored"}, conn=s.conn(timeout=60))
    c.check(st == 200, "the replay slots are free afterwards: %d %r" % (st, body))

st, _, _ = s.req("GET", "/healthz")
c.check(st == 200, "the server is up")
rc = s.stop(timeout=30)
c.check(rc == 0, "SIGTERM: exit 0, got %r" % rc)

# ---- SIGTERM while a plugin runs (a long deadline, so that the signal lands in it) ----
if want("sigterm"):
    tmp2 = tempfile.mkdtemp(prefix="governor-limits-")
    pdir2 = os.path.join(tmp2, "policies")
    os.mkdir(pdir2)
    with open(os.path.join(pdir2, "xloop.lua"), "w") as f:
        f.write(PLUGINS["xloop"])
    s2 = Server(tmp=tmp2, args=["--policies", pdir2, "--plugin-instructions", "1000000000000",
                                "--plugin-decision-instructions", "1000000000000",
                                "--plugin-timeout", "2 s", "--plugin-decision-timeout", "2 s"])
    answer = []

    sent = threading.Event()  # the sample that runs the plugin is on its way

    def hostile():
        try:
            for i in range(4):
                if i == 3:
                    sent.set()
                answer.append(s2.req("POST", "/v1/jobs/term/metrics",
                                     with_config(i, {"job.autoscaler.metrics.custom-evaluators":
                                                     "xloop"}), conn=s2.conn(timeout=30)))
        except Exception as e:  # noqa: BLE001
            answer.append((0, repr(e), {}))
        sent.set()

    th = threading.Thread(target=hostile)
    th.start()
    sent.wait(timeout=60)
    time.sleep(0.5)
    t = time.monotonic()
    s2.proc.send_signal(signal.SIGTERM)
    try:
        rc = s2.proc.wait(timeout=20)
        took = time.monotonic() - t
        print("SIGTERM during a plugin call: exit %d after %.3f s" % (rc, took))
        c.check(rc == 0 and took < 10, "SIGTERM during a plugin call: exit %r after %.1f s" % (rc, took))
    except Exception as e:  # noqa: BLE001
        c.check(False, "SIGTERM during a plugin call: no exit: %r" % e)
        s2.proc.kill()
        s2.proc.wait()
    th.join(timeout=30)
    c.check(any(a[0] == 200 and a[1].get("reason") == "PLUGIN_ERROR" for a in answer),
            "the decision in flight is answered (PLUGIN_ERROR): %r" % (
                [(a[0], a[1].get("reason") if isinstance(a[1], dict) else a[1]) for a in answer],))
    s2.log.close()
    if not c.failed:
        shutil.rmtree(tmp2, ignore_errors=True)
if not c.failed:
    shutil.rmtree(tmp, ignore_errors=True)
c.done()
