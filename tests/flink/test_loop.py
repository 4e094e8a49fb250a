"""`governor flink` without --once: a loop that outlives its peers. Flink goes away (the
JobManager's port closed) and comes back: warn lines name the URL, the request and the cause,
polls are tried again with backoff, and decisions go on once it is back. A governor server goes
away and comes back: the sample not answered is sent again as it was (the same at, the same
body: one decision for it), then the loop goes on. A metric the source stops listing is one
warn line (not one a poll) and the decisions go on without it. SIGTERM ends the loop with 0."""
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time

from flinktest import BINARY, JID, POLICIES, ROOT, SRC, Checks, FakeJobManager, \
    three_vertex_job, tmpdir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api"))
from gov import Server  # noqa: E402

c = Checks()
d = tmpdir()


class Loop:
    """`governor flink ARGS` running, its stderr in a file."""

    def __init__(self, args):
        self.log = os.path.join(d, "loop-%d.log" % time.monotonic_ns())
        self.f = open(self.log, "w")
        self.p = subprocess.Popen([BINARY, "flink"] + args, stdout=subprocess.DEVNULL,
                                  stderr=self.f, cwd=ROOT)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def wait(self, pattern, count=1, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if len(re.findall(pattern, self.text())) >= count:
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=30)
        self.f.close()
        return rc


DECISION = r'msg="decision"'
FAST = ["--set", "job.autoscaler.metrics.window=1 min",
        "--set", "job.autoscaler.stabilization.interval=0 ms"]

# ---- Flink goes away and comes back; a metric goes missing ----
job = three_vertex_job()
jm = FakeJobManager([job])
jm.missing[SRC] = ["Source__Kafka_Source.pendingRecords"]
db = os.path.join(d, "loop.db")
lp = Loop(["--rest", jm.url, "--job", JID, "--interval", "1 s", "--db", db, "--policies",
           POLICIES, "--apply", "rest"] + FAST)
c.check(lp.wait(DECISION, 2), "two decisions: %s" % lp.text()[-1500:])
c.check(lp.text().count('msg="metric missing"') == 1 and
        'vertex="%s" metric="*.pendingRecords"' % SRC in lp.text(),
        "one warn line for the missing pendingRecords over two polls: %s" % lp.text()[-1500:])
jm.down()
c.check(lp.wait(r'msg="flink unreachable"', 2),
        "warn lines while Flink is away: %s" % lp.text()[-800:])
away = lp.text()
m = re.search(r'msg="flink unreachable" url=(\S+) job=\S+ request="([^"]+)" cause="([^"]+)"',
              away)
c.check(m and m.group(1) == jm.url and m.group(2).startswith("GET /jobs/") and
        "Connection refused" in m.group(3), "the warn line names url, request, cause: %r"
        % ((m.groups(),) if m else away[-600:]))
n_before = lp.text().count(DECISION)
time.sleep(1.0)
jm.up()
c.check(lp.wait(DECISION, n_before + 1), "decisions again once Flink is back: %s"
        % lp.text()[-1000:])
c.check(lp.p.poll() is None, "the loop outlived Flink's absence")
c.check(lp.stop() == 0 and 'msg="stopped"' in lp.text(), "SIGTERM: exit 0")
c.check(lp.text().count('msg="metric missing"') == 1,
        "still one missing-metric line after Flink came back (the same metric, still missing): %s"
        % "\n".join(ln for ln in lp.text().splitlines() if "missing" in ln))
con = sqlite3.connect(db)
ats = [r[0] for r in con.execute("SELECT at FROM decisions WHERE job = ? ORDER BY id", (JID,))]
con.close()
c.check(len(ats) >= 3 and ats == sorted(set(ats)),
        "the stored decisions' at go forward: %r" % ats)
jm.close()

# ---- a governor server goes away and comes back ----
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
gdb = os.path.join(d, "server.db")
srv = Server(db=gdb, tmp=d, args=["--listen", "127.0.0.1:%d" % port])
job = three_vertex_job()
jm = FakeJobManager([job])
lp = Loop(["--rest", jm.url, "--job", JID, "--name", "orders", "--interval", "1 s",
           "--server", "http://127.0.0.1:%d" % port] + FAST)
c.check(lp.wait(DECISION, 1), "a decision by the server: %s" % lp.text()[-800:])
srv.stop()
c.check(lp.wait(r'msg="governor unreachable"', 2), "warn lines while governor is away: %s"
        % lp.text()[-800:])
c.check("url=http://127.0.0.1:%d" % port in lp.text() and
        'request="POST /v1/jobs/orders/metrics"' in lp.text(),
        "naming the server and the request: %s" % lp.text()[-600:])
polls_away = sum(1 for m, p, _ in jm.requests if m == "GET" and p == "/jobs/" + JID)
time.sleep(1.0)
c.check(sum(1 for m, p, _ in jm.requests if m == "GET" and p == "/jobs/" + JID) == polls_away,
        "while governor is away the sample is kept, Flink is not polled again")
n_before = lp.text().count(DECISION)
srv = Server(db=gdb, tmp=d, args=["--listen", "127.0.0.1:%d" % port])
c.check(lp.wait(DECISION, n_before + 1), "decisions again once governor is back: %s"
        % lp.text()[-800:])
c.check(lp.stop() == 0, "SIGTERM: exit 0")
con = sqlite3.connect(gdb)
ats = [r[0] for r in con.execute("SELECT at FROM decisions WHERE job = 'orders' ORDER BY id")]
con.close()
polled = len([1 for m, p, _ in jm.requests if m == "GET" and p == "/jobs/" + JID])
c.check(ats == sorted(set(ats)) and len(ats) >= polled - 1,
        "every sample polled decided once (the one in flight at the stop may not be): "
        "%d polls, %r" % (polled, ats))
srv.stop()
jm.close()
c.done()
