"""kill -9 at random moments under a load of concurrent clients, 20 times over the same
database, loses no acknowledged decision and no integrity, and in the end each job's decisions
are those of an uninterrupted run over the same trace (action, parallelism, reason compared
sample by sample).

Each job has one client thread that posts its trace in order (as a job would). A kill comes
after a random number of acknowledgements (at a random point of the server's work), or, in some
rounds, a random few milliseconds after the server started listening. After each kill the
database is checked (every acknowledged decision stored under its job and `at`, no sample
decided twice, PRAGMA integrity_check), the server is started again on it, and each client
resumes with the first sample it has no answer for, as a real client would: when that sample's
decision was committed but its reply lost in the kill, the retry must get the stored decision
back (the same decision_id, marked as a repeat) rather than a second decision.

KILLS (default 20) and SEED (default 7) come from the environment."""
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, connect, is_pg, sample  # noqa: E402

JOBS = ["job-%d" % i for i in range(8)]
N = 100
KILLS = int(os.environ.get("KILLS", "20"))
CFG = {"job.autoscaler.metrics.window": "3 min", "job.autoscaler.stabilization.interval": "1 min",
       "job.autoscaler.scale-down.interval": "2 min"}
T0 = sample(0)["at"]


def trace(j, i):
    """Deterministic per job: load ramps up, then down, so decisions change over time."""
    k = JOBS.index(j)
    rate = 1000.0 * (1 + (i % 30) / 10.0) * (1 + k / 8.0)
    busy = min(990.0, 300.0 + 20.0 * (i % 30) + 10 * k)
    return sample(i, rate=rate, busy_src=busy, busy_agg=min(990.0, busy + 100), config=CFG)


class Client(threading.Thread):
    """Posts job's samples from `start` on, until the end, a dead server or `stop`."""

    def __init__(self, server, job, start, acked, stop):
        super().__init__()
        self.server, self.job, self.start_i, self.acked, self.stop = server, job, start, acked, stop
        self.next = start  # the first sample without an answer

    def run(self):
        try:
            conn = self.server.conn(timeout=30)
        except OSError:
            return
        for i in range(self.start_i, N):
            if self.stop.is_set():
                return
            try:
                st, body, _ = self.server.req("POST", "/v1/jobs/%s/metrics" % self.job,
                                              trace(self.job, i), conn=conn)
            except (ConnectionError, OSError, ValueError):
                return
            if st != 200:
                self.acked.append((self.job, i, None, "status %d %r" % (st, body)))
                return
            self.acked.append((self.job, i, body["decision_id"], bool(body.get("repeat"))))
            self.next = i + 1


def decisions(db):
    c = connect(db)
    out = {}
    for job, at, action, reason, dj in c.execute(
            "SELECT job, at, action, reason, parallelism FROM audit_decisions ORDER BY id"):
        par = json.loads(dj) if isinstance(dj, str) else dj
        out.setdefault(job, []).append((at, action, reason, sorted(par.items())))
    c.close()
    return out


def integrity_of(con, db):
    """SQLite's own check of its file; on PostgreSQL (GOVERNOR_TEST_PG=1) the server's crash
    recovery is PostgreSQL's, and what is checked is the rows below."""
    return "ok" if is_pg(db) else con.execute("PRAGMA integrity_check").fetchone()[0]


c = Checks()
seed = int(os.environ.get("SEED", "7"))
rnd = random.Random(seed)
print("seed", seed, "kills", KILLS, flush=True)
t_start = time.time()

# The reference: an uninterrupted run.
ref = Server()
acked = []
ths = [Client(ref, j, 0, acked, threading.Event()) for j in JOBS]
[t.start() for t in ths]
[t.join() for t in ths]
c.check(all(a[2] for a in acked) and len(acked) == N * len(JOBS),
        "reference run complete: %r" % [a for a in acked if not a[2]][:3])
c.check(ref.stop() == 0, "reference exits 0")
want = decisions(ref.db)

# The interrupted runs, all on one database.
s = None
db = None
tmp = None
nxt = {j: 0 for j in JOBS}
all_acked = []
repeats = 0
total = N * len(JOBS)
for k in range(KILLS + 1):
    s = Server(db=db, tmp=tmp)
    db, tmp = s.db, s.tmp
    acked = []
    stop = threading.Event()
    ths = [Client(s, j, nxt[j], acked, stop) for j in JOBS]
    [t.start() for t in ths]
    if k == KILLS:
        [t.join() for t in ths]  # the last run goes to the end
        break
    if k % 7 == 3:
        # Soon after the start: while the first requests arrive (or before).
        time.sleep(rnd.uniform(0, 0.03))
    else:
        # After a random share of what is left, at whatever point the server is then.
        left = total - sum(nxt.values())
        goal = rnd.randint(1, max(1, 2 * left // (KILLS - k + 1)))
        deadline = time.time() + 20
        while len(acked) < goal and time.time() < deadline and any(t.is_alive() for t in ths):
            time.sleep(0.0005)
    s.kill()
    stop.set()
    [t.join() for t in ths]
    bad = [a for a in acked if not a[2]]
    c.check(not bad, "round %d: only 200s before the kill: %r" % (k, bad[:3]))
    for t in ths:
        nxt[t.job] = t.next
    all_acked += acked
    repeats += sum(1 for a in acked if a[3] is True)
    con = connect(db)
    integrity = integrity_of(con, db)
    stored = {r[0]: (r[1], r[2]) for r in con.execute("SELECT id, job, at FROM decisions")}
    dup = con.execute("SELECT job, at, count(*) FROM decisions GROUP BY job, at "
                      "HAVING count(*) > 1 LIMIT 3").fetchall()
    con.close()
    c.check(integrity == "ok", "round %d: integrity_check: %s" % (k, integrity))
    lost = [a for a in all_acked if a[2] and stored.get(a[2]) != (a[0], trace(a[0], a[1])["at"])]
    c.check(not lost, "round %d: every acknowledged decision is stored (lost: %r)" % (k, lost[:5]))
    c.check(not dup, "round %d: no sample decided twice: %r" % (k, dup))

bad = [a for a in acked if not a[2]]
c.check(not bad and all(nxt_i == N for nxt_i in [t.next for t in ths]),
        "the last run completes: %r" % bad[:3])
all_acked += acked
repeats += sum(1 for a in acked if a[3] is True)
c.check(s.stop() == 0, "the last server exits 0")
con = connect(db)
c.check(integrity_of(con, db) == "ok", "integrity at the end")
con.close()
got = decisions(db)
for j in JOBS:
    c.check(got.get(j) == want.get(j), "%s: decisions equal the uninterrupted run" % j)
    if got.get(j) != want.get(j):
        print("  %d decisions, %d in the reference" % (len(got.get(j, [])), len(want.get(j, []))))
        for a, b in zip(got.get(j, []), want.get(j, [])):
            if a != b:
                print("  first difference:", a, "!=", b)
                break
kinds = {(d[1], d[2]) for j in JOBS for d in want.get(j, [])}
print("actions and reasons seen in the reference:", sorted(kinds))
print("kills: %d, retries answered as repeats: %d, %.1f s" % (KILLS, repeats,
                                                              time.time() - t_start))
c.check(len(kinds) >= 3, "the trace exercises stateful decisions")
c.done()
