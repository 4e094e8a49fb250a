"""Two governor processes on one SQLite file (WAL lets both read and write it) must never both
advance one job: each write of a job's row is fenced by the row's version, the process that
lost answers 503 "conflict" (Retry-After: 1) and reloads the job, and a process that receives a
job it does not hold loads its state, config and window from the store first.

1. Race: one thread per process posts the same sample sequence of one job, both threads posting
   each sample at the same moment. Exactly one decision is stored per sample; every 200 reply is
   the stored decision (the same decision_id and response, the loser's retry answered as a
   repeat); every other reply is a 503 conflict.
2. Move: a job decided by A until its window is full and a scale-down is pending, then sent to
   B: B neither starts over (COLLECTING_METRICS) nor loses the pending scale-down, and every
   decision equals that of a fresh single process fed the whole trace. Once with B not holding
   the job (a cold load), once with B holding an older state of it (a fenced write, then a
   reload).
3. Config: PUT /v1/jobs/{job}/config on A, then a sample on B: B decides with the new config,
   whether it held the job already or not; and a DELETE on A makes B start the job over.
"""
import os
import sqlite3
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample  # noqa: E402

CFG = {"job.autoscaler.metrics.window": "3 min", "job.autoscaler.stabilization.interval": "1 min",
       "job.autoscaler.scale-down.interval": "10 min",
       # the delay is the reference's: the restart's cost (governor profile) would wait longer
       "governor.scale-down.restart-cost": "0"}
N = 40


def trace(i):
    """Busy until sample 10, then idle: the window is full at 6, a scale-down is proposed and
    delayed from 12 on, and done at 32 (10 min later), by a single process."""
    busy = 700.0 if i < 10 else 150.0
    return sample(i, rate=1000.0, busy_src=busy, busy_agg=busy + 50, config=CFG)


def metrics(job):
    return "/v1/jobs/%s/metrics" % job


def is_conflict(st, body, hdr, job):
    e = body.get("error", {}) if isinstance(body, dict) else {}
    return (st == 503 and e.get("code") == "conflict" and hdr.get("Retry-After") == "1"
            and job in e.get("message", "") and "another governor process" in e["message"])


def post(s, job, body, replies, tries=200, method="POST", path=None):
    """Posts until a 200, retrying a 503 conflict at once (a client would wait Retry-After);
    every reply goes to replies. The last (status, body)."""
    for _ in range(tries):
        st, b, h = s.req(method, path or metrics(job), body)
        replies.append((st, b, h))
        if st != 200 and not is_conflict(st, b, h, job):
            return st, b
        if st == 200:
            return st, b
        time.sleep(0.005)
    return st, b


def essence(b):
    return (b.get("action"), b.get("reason"), sorted(b.get("parallelism", {}).items()))


def stored(db, job):
    """{at: (count, id)} of job's decisions."""
    c = sqlite3.connect(db)
    out = {at: (n, i) for at, n, i in c.execute(
        "SELECT at, count(*), max(id) FROM decisions WHERE job = ? GROUP BY at", (job,))}
    c.close()
    return out


ck = Checks()
t_start = time.time()
a = Server()
b = Server(db=a.db, tmp=a.tmp)
ref = Server()  # the uninterrupted single process
want = []
for i in range(N):
    st, body, _ = ref.req("POST", metrics("moved"), trace(i))
    want.append(essence(body) if st == 200 else (st,))
ck.check(all(len(w) == 3 for w in want), "the reference decides every sample")
reasons = [w[1] for w in want]
ck.check(reasons[5] == "COLLECTING_METRICS" and reasons[6] != "COLLECTING_METRICS" and
         reasons[20] == "SCALE_DOWN_DELAYED" and "LOW_UTILIZATION" in reasons[21:],
         "the trace fills the window, delays a scale-down past sample 20 and then makes it: %r"
         % reasons)

# ---------------------------------------------------------------------------------- race --
JOB = "race"
barrier = threading.Barrier(2, timeout=60)
replies = {"A": [], "B": []}


def racer(name, s):
    try:
        for i in range(N):
            barrier.wait()
            post(s, JOB, trace(i), replies[name])
    except threading.BrokenBarrierError:
        pass


ths = [threading.Thread(target=racer, args=(n, s)) for n, s in (("A", a), ("B", b))]
[t.start() for t in ths]
[t.join() for t in ths]
rows = stored(a.db, JOB)
ats = [trace(i)["at"] for i in range(N)]
ck.check(sorted(rows) == ats, "race: a decision is stored for every sample (%d of %d)"
         % (len(rows), N))
twice = {at: n for at, (n, _) in rows.items() if n != 1}
ck.check(not twice, "race: exactly one stored decision per sample (more: %r)" % twice)
st, listed, _ = a.req("GET", "/v1/jobs/%s/decisions?limit=1000" % JOB)
by_id = {d["decision_id"]: d for d in listed.get("decisions", [])} if st == 200 else {}
oks = conflicts = repeats = 0
bad = []
for name in "AB":
    for st, body, hdr in replies[name]:
        if st == 200:
            oks += 1
            repeats += bool(body.get("repeat"))
            sid = by_id.get(body.get("decision_id"))
            got = {k: v for k, v in body.items() if k != "repeat"}
            if sid is None or got != sid:
                bad.append((name, "200 is not the stored decision", body.get("decision_id")))
        elif is_conflict(st, body, hdr, JOB):
            conflicts += 1
        else:
            bad.append((name, st, body))
ck.check(oks == 2 * N, "race: every sample answered 200 by both (%d of %d)" % (oks, 2 * N))
ck.check(not bad, "race: every 200 is the stored decision, every other reply a 503 conflict: %r"
         % bad[:3])
ck.check(conflicts > 0 and repeats > 0,
         "race: the race was run (%d conflicts, %d repeats)" % (conflicts, repeats))
print("race: %d conflicts, %d answered as repeats" % (conflicts, repeats), flush=True)

# ---------------------------------------------------------------------------------- move --


def run_moves(job, plan):
    """plan: [(server, first, end)] in order. Returns the essence of each sample's 200 reply
    (or its last status) and every reply."""
    got, log = [], []
    for s, first, end in plan:
        for i in range(first, end):
            st, body = post(s, job, trace(i), log)
            got.append(essence(body) if st == 200 else (st, body))
    return got, log


# A job B never held: its first sample on B loads it from the store.
got, log = run_moves("moved", [(a, 0, 20), (b, 20, N)])
ck.check(got[20][1] != "COLLECTING_METRICS", "move (cold): B goes on where A was, not from the "
         "start: %r" % (got[20],))
ck.check(got == want, "move (cold): every decision equals the single process's: %r"
         % [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w][:3])
ck.check(all(st == 200 for st, _, _ in log), "move (cold): no conflict when nobody raced")

# A job B held an older state of: its first write on B is fenced, B reloads, the retry decides.
got, log = run_moves("moved2", [(b, 0, 8), (a, 8, 24), (b, 24, N)])
ck.check(got == want, "move (stale): every decision equals the single process's: %r"
         % [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w][:3])
fenced = [r for r in log if r[0] != 200]
ck.check(len(fenced) == 1 and is_conflict(*fenced[0], "moved2"),
         "move (stale): B's first write of the moved job is one 503 conflict: %r"
         % [(st, body) for st, body, _ in fenced][:3])
for job in ("moved", "moved2"):
    rows = stored(a.db, job)
    ck.check(len(rows) == N and all(n == 1 for n, _ in rows.values()),
             "move: %s has one stored decision per sample" % job)

# -------------------------------------------------------------------------------- config --
OFF = {"job.autoscaler.enabled": "false"}


def effective(s, decision_id, key):
    st, rec, _ = s.req("GET", "/v1/decisions/%d" % decision_id)
    return rec.get("config", {}).get(key) if st == 200 else None


# B holds the job when A changes its config.
for i in range(8):
    post(b, "cfg", trace(i), [])
st, _, _ = a.req("PUT", "/v1/jobs/cfg/config", {"config": OFF})
ck.check(st == 200, "config: PUT on A")
log = []
st, body = post(b, "cfg", trace(8), log)
ck.check(st == 200 and body.get("reason") == "SCALING_DISABLED",
         "config (held): B decides with A's new config: %r" % (essence(body) if st == 200 else body,))
ck.check(st == 200 and effective(a, body["decision_id"], "job.autoscaler.enabled") == "false",
         "config (held): the stored decision's effective options have A's value")
st, cfg, _ = b.req("GET", "/v1/jobs/cfg/config")
ck.check(st == 200 and cfg.get("stored") == OFF,
         "config (held): B shows A's config: %r" % (cfg.get("stored", cfg),))

# B does not hold the job: A creates it with a config and decides a few samples.
st, _, _ = a.req("PUT", "/v1/jobs/cfg2/config", {"config": OFF})
ck.check(st == 200, "config: PUT on A (a new job)")
st, cfg, _ = b.req("GET", "/v1/jobs/cfg2/config")
ck.check(st == 200 and cfg.get("stored") == OFF,
         "config (new): B finds the job A made: %r" % (cfg.get("stored", cfg),))
st, body = post(b, "cfg2", trace(0), [])
ck.check(st == 200 and effective(a, body["decision_id"], "job.autoscaler.enabled") == "false",
         "config (new): B decides with A's config")

# A deletes a job B holds: B's next sample starts it over, without the old config.
log = []
st, _ = post(a, "cfg", None, log, method="DELETE", path="/v1/jobs/cfg")
ck.check(st == 200 and [r[0] for r in log] == [503, 200],
         "delete on A: fenced once (B decided the job since A last wrote it), then done: %r"
         % [(r[0], r[1]) for r in log])
st, body = post(b, "cfg", trace(9), [])
ck.check(st == 200 and body.get("reason") == "COLLECTING_METRICS" and
         effective(a, body["decision_id"], "job.autoscaler.enabled") != "false",
         "delete: B starts the job over after A deleted it: %r"
         % (essence(body) if st == 200 else body,))

for s in (a, b, ref):
    ck.check(s.stop() == 0, "server exits 0")
print("%.1f s" % (time.time() - t_start))
ck.done()
