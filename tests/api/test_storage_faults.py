"""Storage faults under concurrent load: the disk full (a small tmpfs), the database made
read-only (chattr +i on the database and its WAL: writes through the server's open files fail
with EPERM on ext4), and the database locked by another process (BEGIN EXCLUSIVE held). While a
fault lasts the server answers 503 with a clear error and Retry-After, stores nothing, and
/readyz says not ready; it recovers by itself when the fault goes away. Each client retries its
sample on 503 (as the client contract says), and in the end every job's decisions are those of
a run without the fault: no acknowledged decision lost, no half-written one, no in-memory state
left ahead of the store. A part that the machine cannot stage (no root, no tmpfs mount, a file
system without immutable files) is skipped with a message."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample  # noqa: E402

JOBS = ["f-%d" % i for i in range(4)]
N = 24
CFG = {"job.autoscaler.metrics.window": "2 min", "job.autoscaler.stabilization.interval": "1 min",
       "job.autoscaler.scale-down.interval": "2 min"}
c = Checks()


def trace(j, i):
    k = JOBS.index(j)
    rate = 1000.0 * (1 + (i % 12) / 4.0) * (1 + k / 4.0)
    busy = min(990.0, 300.0 + 50.0 * (i % 12) + 20 * k)
    return sample(i, rate=rate, busy_src=busy, busy_agg=min(990.0, busy + 100), config=CFG)


class Client(threading.Thread):
    """Posts a job's trace in order; on a 503 it waits a little and sends the sample again."""

    def __init__(self, server, job, pace):
        super().__init__()
        self.server, self.job, self.pace = server, job, pace
        self.acked = []          # (i, decision_id, repeat)
        self.unavailable = []    # (i, message, Retry-After)
        self.other = []          # anything else: (i, status, body)

    def run(self):
        i = 0
        deadline = time.time() + 90
        while i < N and time.time() < deadline:
            try:
                st, body, hdr = self.server.req("POST", "/v1/jobs/%s/metrics" % self.job,
                                                trace(self.job, i))
            except OSError as e:
                self.other.append((i, "conn", str(e)))
                return
            if st == 200:
                self.acked.append((i, body["decision_id"], bool(body.get("repeat"))))
                i += 1
                time.sleep(self.pace)
            elif st == 503:
                self.unavailable.append((i, body.get("error", {}).get("message", ""),
                                         hdr.get("Retry-After")))
                time.sleep(0.1)
            else:
                self.other.append((i, st, body))
                return


def decisions(db):
    con = sqlite3.connect(db)
    out = {}
    for job, at, action, reason, dj in con.execute(
            "SELECT job, at, action, reason, parallelism FROM audit_decisions ORDER BY id"):
        out.setdefault(job, []).append((at, action, reason,
                                        sorted(json.loads(dj).items())))
    con.close()
    return out


def n_decisions(db):
    con = sqlite3.connect(db, timeout=10)
    n = con.execute("SELECT count(*) FROM decisions").fetchone()[0]
    con.close()
    return n


def wait_ready(s, want, limit=20):
    """Polls /readyz until its status is want; returns (status, body, headers) of the last."""
    deadline = time.time() + limit
    while True:
        got = s.req("GET", "/readyz")
        if got[0] == want or time.time() > deadline:
            return got
        time.sleep(0.05)


# The reference: the same trace without faults.
ref = Server()
refc = [Client(ref, j, 0) for j in JOBS]
[t.start() for t in refc]
[t.join() for t in refc]
c.check(all(len(t.acked) == N and not t.other for t in refc), "reference run complete")
ref.stop()
want = decisions(ref.db)


def scenario(name, db, start_fault, end_fault, words, peek=None):
    """Runs the trace on a server over db; the fault is started once a third of the samples
    are acknowledged and ended once every client has seen a 503 (or 4 s have passed)."""
    print("--", name, flush=True)
    s = Server(db=db, tmp=os.path.dirname(db))
    clients = [Client(s, j, 0.01) for j in JOBS]
    [t.start() for t in clients]
    deadline = time.time() + 30
    while sum(len(t.acked) for t in clients) < N * len(JOBS) // 3 and time.time() < deadline:
        time.sleep(0.01)
    started = False
    try:
        start_fault()
        started = True
        # Whatever was acknowledged before now is stored; nothing is added while it lasts.
        st, body, hdr = wait_ready(s, 503)
        msg = body.get("error", {}).get("message", "") if isinstance(body, dict) else ""
        c.check(st == 503, "%s: /readyz says not ready: %d %r" % (name, st, body))
        c.check(any(w in msg for w in words), "%s: /readyz says why: %r" % (name, msg))
        c.check((hdr.get("Retry-After") or "").isdigit(), "%s: /readyz has Retry-After: %r"
                % (name, hdr.get("Retry-After")))
        n0 = peek() if peek else n_decisions(db)
        deadline = time.time() + 4
        while time.time() < deadline and not all(t.unavailable for t in clients):
            time.sleep(0.05)
        n1 = peek() if peek else n_decisions(db)
        c.check(n1 == n0, "%s: nothing stored while the fault lasts (%d -> %d)" % (name, n0, n1))
        c.check(wait_ready(s, 503, 0)[0] == 503, "%s: still not ready" % name)
    finally:
        if started:
            end_fault()
    st, body, _ = wait_ready(s, 200)
    c.check(st == 200, "%s: ready again by itself: %d %r" % (name, st, body))
    [t.join() for t in clients]
    una = [u for t in clients for u in t.unavailable]
    c.check(not any(t.other for t in clients), "%s: only 200s and 503s: %r"
            % (name, [t.other for t in clients if t.other][:2]))
    c.check(una, "%s: the fault was seen by the clients" % name)
    c.check(all(u[2] and u[2].isdigit() and int(u[2]) >= 1 for u in una),
            "%s: every 503 has Retry-After: %r" % (name, {u[2] for u in una}))
    c.check(any(any(w in u[1] for w in words) for u in una), "%s: the 503 says why: %r"
            % (name, sorted({u[1] for u in una})[:3]))
    c.check(all(len(t.acked) == N for t in clients), "%s: every sample decided in the end: %r"
            % (name, [len(t.acked) for t in clients]))
    c.check(s.stop() == 0, "%s: exits 0" % name)
    con = sqlite3.connect(db)
    c.check(con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "%s: integrity" % name)
    ids = {r[0]: r[1] for r in con.execute("SELECT id, job FROM decisions")}
    con.close()
    acked = [(t.job, a[1]) for t in clients for a in t.acked]
    c.check(all(ids.get(i) == j for j, i in acked), "%s: every acknowledged decision stored" % name)
    c.check(len(ids) == len(set(acked)) == N * len(JOBS),
            "%s: no decision without an acknowledgement (%d stored, %d acknowledged)"
            % (name, len(ids), len(set(acked))))
    got = decisions(db)
    for j in JOBS:
        c.check(got.get(j) == want.get(j), "%s: %s decided as without the fault" % (name, j))
    log = s.logs()
    c.check("store writable again" in log, "%s: the recovery is logged" % name)


# 1. Disk full: the database on a small tmpfs, then a file that takes the rest of it.
mnt = tempfile.mkdtemp(prefix="governor-full-")
mounted = False
if os.geteuid() != 0:
    print("SKIP disk full: needs root to mount a tmpfs")
else:
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("SKIP disk full: cannot mount a tmpfs here: %s" % r.stderr.strip())
    else:
        mounted = True
if mounted:
    filler = os.path.join(mnt, "filler")

    def fill():
        with open(filler, "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass

    try:
        scenario("disk full", os.path.join(mnt, "governor.db"), fill,
                 lambda: os.unlink(filler), ["full"])
    finally:
        subprocess.run(["umount", "-l", mnt])
shutil.rmtree(mnt, ignore_errors=True)

# 2. Read-only: the database file and its WAL made immutable under the running server.
ro = tempfile.mkdtemp(prefix="governor-ro-")
probe = os.path.join(ro, "probe")
fd = os.open(probe, os.O_RDWR | os.O_CREAT)
can = subprocess.run(["chattr", "+i", probe], capture_output=True).returncode == 0
if can:
    try:
        os.pwrite(fd, b"x", 0)
        can = False  # the file system lets an open file be written anyway (tmpfs)
    except OSError:
        pass
    subprocess.run(["chattr", "-i", probe])
os.close(fd)
os.unlink(probe)
if not can:
    print("SKIP read-only: chattr +i does not stop writes through open files here")
else:
    db = os.path.join(ro, "governor.db")
    files = [db, db + "-wal"]
    try:
        scenario("read-only", db, lambda: subprocess.run(["chattr", "+i"] + files, check=True),
                 lambda: subprocess.run(["chattr", "-i"] + files, check=True),
                 ["I/O", "read-only", "readonly"])
    finally:
        subprocess.run(["chattr", "-i"] + files, capture_output=True)
shutil.rmtree(ro, ignore_errors=True)

# 3. Locked: another process holds the write lock (BEGIN EXCLUSIVE) for a while. The first
# writes wait for it (the busy timeout, 5 s) and then fail; the rest fail at once.
lk = tempfile.mkdtemp(prefix="governor-lock-")
db = os.path.join(lk, "governor.db")
holder = {}


def lock():
    holder["c"] = sqlite3.connect(db, isolation_level=None, timeout=10)
    holder["c"].execute("BEGIN EXCLUSIVE")


def unlock():
    holder["c"].execute("ROLLBACK")
    holder["c"].close()


def peek_locked():
    return holder["c"].execute("SELECT count(*) FROM decisions").fetchone()[0]


scenario("locked", db, lock, unlock, ["locked"], peek=peek_locked)
shutil.rmtree(lk, ignore_errors=True)
c.done()
