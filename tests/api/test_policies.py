"""Policies in a running server: GET /v1/policies, POST /v1/policies/reload (a broken plugin
is a 422 with file:line and the old revision stays, /readyz stays ready), SIGHUP, a change in
the directory (inotify, debounced), a plugin vetoing a decision with its call recorded in
plugin_calls, and every revision stored. Then reload under load: 200 concurrent clients post
while the policies are reloaded 50 times, some of them broken on purpose: no request fails,
and each decision names the revision it ran on, one that was active at the time."""
import os
import shutil
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, connect  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

c = Checks()
tmp = __import__("tempfile").mkdtemp(prefix="governor-pol-")
pdir = os.path.join(tmp, "policies")
shutil.copytree(os.path.join(ROOT, "policies"), pdir,
                ignore=shutil.ignore_patterns("*_test.lua", "*.test"))
s = Server(tmp=tmp, args=["--policies", pdir])


def revision():
    return s.req("GET", "/v1/policies")[1]["revision"]


def write(name, text):
    with open(os.path.join(pdir, name), "w") as f:
        f.write(text)


st, pol, _ = s.req("GET", "/v1/policies")
c.check(st == 200 and len(pol["revision"]) == 8, "a revision: %r" % (pol,))
names = {p["name"]: p for p in pol["plugins"]}
c.check("freeze" in names and names["freeze"]["kind"] == "executor", "freeze is an executor")
c.check(pol["last_reload"]["ok"] is True, "the start load is ok")
r0 = pol["revision"]

# A broken plugin: 422 naming file:line, the old revision stays, /readyz stays ready.
write("broken.lua", "return {\n  kind = 'executor',\n  execute = function(d, ctx)\n    return d\n")
st, body, _ = s.req("POST", "/v1/policies/reload")
c.check(st == 422 and "broken.lua:" in body["error"]["message"], "broken reload: %r" % (body,))
c.check(revision() == r0, "the old revision stays active")
st, body, _ = s.req("GET", "/readyz")
c.check(st == 200, "readyz stays ready after a failed reload")
st, pol, _ = s.req("GET", "/v1/policies")
c.check(pol["last_reload"]["ok"] is False and "broken.lua" in pol["last_reload"]["error"],
        "GET /v1/policies shows the failed reload")
# The server's own events (reloads) are read at GET /v1/events, newest first.
deadline = time.time() + 5  # the event is committed by the writer, after the 422
while True:
    st, body, _ = s.req("GET", "/v1/events")
    reasons = [e["reason"] for e in body.get("events", [])] if st == 200 else []
    if reasons[:1] == ["PolicyReloadFailed"] or time.time() > deadline:
        break
    time.sleep(0.05)
c.check(st == 200 and reasons[:1] == ["PolicyReloadFailed"] and "PolicyReloaded" in reasons
        and "broken.lua" in body["events"][0]["message"],
        "GET /v1/events lists the reloads: %d %r" % (st, reasons))

# Fixed: a new revision.
write("broken.lua", "return {kind = 'executor', execute = function(d, ctx) return d end}\n")
st, body, _ = s.req("POST", "/v1/policies/reload")
r1 = body.get("revision")
c.check(st == 200 and r1 and r1 != r0, "a fixed reload gives a new revision")

# SIGHUP reloads.
write("broken.lua", "return {kind = 'executor', priority = 5,\n"
      "  execute = function(d, ctx) return d end}\n")
s.proc.send_signal(signal.SIGHUP)
deadline = time.time() + 5
while time.time() < deadline and revision() == r1:
    time.sleep(0.05)
r2 = revision()
c.check(r2 != r1, "SIGHUP reloads")

# A change in the directory reloads by itself (inotify, debounced).
os.remove(os.path.join(pdir, "broken.lua"))
deadline = time.time() + 5
while time.time() < deadline and revision() == r2:
    time.sleep(0.05)
r3 = revision()
c.check(r3 != r2, "a change in the directory reloads")
c.check(r3 == r0, "the same files give the same revision")

# A plugin in a decision: the freeze executor vetoes; the call is recorded.
cfg = {"job.autoscaler.scaling.custom-executors": "freeze",
       "job.autoscaler.scaling.custom-executor.freeze.class": "freeze",
       "job.autoscaler.scaling.custom-executor.freeze.until": "2099-01-01T00:00:00Z",
       "job.autoscaler.stabilization.interval": "0 ms",
       "job.autoscaler.metrics.window": "1 min"}
last = None
for i in range(6):
    smp = sample(i, busy_agg=1000.0, config=cfg)
    st, last, _ = s.req("POST", "/v1/jobs/frozen/metrics", smp)
c.check(st == 200 and last["reason"] == "VETOED" and "freeze" in last["message"],
        "the freeze executor vetoes: %r" % ({k: last.get(k) for k in ("reason", "message")},))
c.check(last["policy_revision"] == r3, "the decision names its revision")
db = connect(s.db)
calls = db.execute("SELECT plugin, hook, outcome FROM audit_plugin_calls WHERE decision_id = ?",
                   (last["decision_id"],)).fetchall()
c.check(("freeze", "execute", "veto") in calls, "plugin_calls records the veto: %r" % (calls,))
revs = {r[0] for r in db.execute("SELECT revision FROM policy_revisions")}
c.check({r0, r1, r2} <= revs, "every active revision is stored: %r" % (revs,))
ev = db.execute("SELECT count(*) FROM audit_events WHERE reason = 'PolicyReloadFailed'").fetchone()[0]
c.check(ev >= 1, "a failed reload is an event")
db.close()

# Reload under load.
CLIENTS, PER_CLIENT, RELOADS = 200, 8, 50
errors = []
seen = []  # (decision_id, revision)
lock = threading.Lock()
start = threading.Barrier(CLIENTS + 1)


def client(k):
    conn = s.conn(timeout=30)
    start.wait()
    for i in range(PER_CLIENT):
        try:
            st, body, _ = s.req("POST", "/v1/jobs/load-%d/metrics" % k, sample(i), conn=conn)
        except Exception as e:  # noqa: BLE001
            with lock:
                errors.append("client %d: %r" % (k, e))
            conn = s.conn(timeout=30)
            continue
        with lock:
            if st != 200:
                errors.append("client %d sample %d: %d %r" % (k, i, st, body))
            else:
                seen.append((body["decision_id"], body["policy_revision"]))


threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
for t in threads:
    t.start()
start.wait()
good = set()
for n in range(RELOADS):
    if n % 5 == 4:
        write("zz_broken.lua", "return {kind = 'nope'}\n")  # fails the kind check
    else:
        write("zz_broken.lua", "return {kind = 'executor', priority = %d,\n"
              "  execute = function(d, ctx) return d end}\n" % n)
    st, body, _ = s.req("POST", "/v1/policies/reload")
    if st == 200:
        good.add(body["revision"])
    time.sleep(0.01)
for t in threads:
    t.join()
c.check(not errors, "no request failed during reloads: %r" % (errors[:5],))
c.check(len(seen) == CLIENTS * PER_CLIENT, "every decision answered: %d" % len(seen))
good |= {r3}
c.check(all(rev in good for _, rev in seen),
        "each decision names a revision that was active: %r" % (
            {rev for _, rev in seen} - good,))
db = connect(s.db)
stored = dict(db.execute("SELECT id, policy_revision FROM audit_decisions"))
db.close()
c.check(all(stored.get(i) == rev for i, rev in seen), "the stored revision is the answered one")
c.check(s.stop() == 0, "SIGTERM exits 0")
shutil.rmtree(tmp, ignore_errors=True)
c.done()
