"""Delete means gone (README, Storage). DELETE /v1/jobs/{job} clears the job's state whole, so
that a job made again under the same name is a new job: the server decides it as a job never
seen (its samples may be older than the deleted job's), and replay (`POST /v1/replay` and
`governor replay --db`) and advice reproduce exactly what the server decided, reading the
deletion as a start over.

1. The reported case: a job deleted, then made again with samples older than its former last
   one; and the variants: made again with later samples, deleted twice, deleted while one of its
   decisions waits for its commit. Each time the decisions of the job made again, and its
   stored state, are those of a job never deleted fed the same samples (another server), and
   both replays reproduce every decision, with no error.
2. Advice: a history that advises (an excessive scale-up, tests/api/test_advice.py's trace),
   deleted, then a few samples of the job made again: no advice, from the new job's decisions
   only.
3. The fence across incarnations: process B holds a job at version 3; process A deletes it and
   makes it again, three writes, so that the new job is at version 3 too. B's next sample must
   not pass the fence with its old state: it is refused (503 conflict), B reloads the job, and
   the client's retry is decided from what A stored, as one process would.
Runs on SQLite and, under GOVERNOR_TEST_PG=1, on PostgreSQL."""
import copy
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import dashdata  # noqa: E402
from gov import BINARY, Server, Checks, sample, connect, lock_store  # noqa: E402

c = Checks()
s = Server(args=["--synchronous", "NORMAL"])
fresh = Server(args=["--synchronous", "NORMAL"])  # the same samples, jobs never deleted


def post(srv, job, body):
    st, b, _ = srv.req("POST", "/v1/jobs/%s/metrics" % job, body)
    return st, b


def essence(b):
    """A decision's answer without what differs between two servers (its id)."""
    b = dict(b)
    b.pop("decision_id", None)
    return b


def state(srv, job):
    con = connect(srv.db)
    row = con.execute("SELECT state_bin, last_at FROM jobs WHERE job = ?", (job,)).fetchone()
    con.close()
    return row


def replays(job, what, n):
    """Both replays of job reproduce its n decisions exactly."""
    st, b, _ = s.req("POST", "/v1/replay", {"job": job})
    summ = b.get("summary", {}) if isinstance(b, dict) else {}
    c.check(st == 200 and summ.get("decisions") == n and summ.get("identical") == n and
            summ.get("changed") == 0 and summ.get("errors") == 0,
            "%s: POST /v1/replay reproduces all %d decisions: %r" % (what, n, summ or b))
    p = subprocess.run([BINARY, "replay", "--db", s.db, "--job", job], capture_output=True,
                       text=True, timeout=120)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    summ = lines[-1].get("summary", {}) if lines else {}
    c.check(p.returncode == 0 and summ.get("decisions") == n and summ.get("identical") == n and
            summ.get("errors") == 0 and len(lines) == 1,
            "%s: replay --db reproduces all %d decisions: rc %d %r %s"
            % (what, n, p.returncode, summ, p.stderr[-300:]))


def case(job, runs, what, in_flight=False):
    """runs: the sample numbers of each incarnation of job, a DELETE between two. The last
    incarnation's answers and state must be a fresh job's."""
    n = 0
    last = []
    for k, numbers in enumerate(runs):
        if k > 0 and not (in_flight and k == 1):  # in flight: the DELETE was sent below
            st, b, _ = s.req("DELETE", "/v1/jobs/%s" % job)
            c.check(st == 200 and b == {"job": job, "deleted": True},
                    "%s: DELETE %d: %r" % (what, k, b))
        last = []
        for i in numbers:
            st, b = post(s, job, sample(i))
            c.check(st == 200, "%s: sample %d of incarnation %d: %d %s" % (what, i, k + 1, st, b))
            last.append(b)
            n += 1
        if in_flight and k == 0:
            # One more decision of the first incarnation, held before its commit (the store's
            # write lock), and the DELETE sent meanwhile: the delete is queued behind it.
            lock = lock_store(s.db)
            got = {}
            th = threading.Thread(target=lambda: got.setdefault("r", post(s, job, sample(
                numbers[-1] + 1))))
            th.start()
            time.sleep(0.3)
            dl = {}
            th2 = threading.Thread(target=lambda: dl.setdefault("r", s.req(
                "DELETE", "/v1/jobs/%s" % job)))
            th2.start()
            time.sleep(0.3)
            lock.execute("ROLLBACK")
            lock.close()
            th.join()
            th2.join()
            c.check(got["r"][0] == 200 and dl["r"][0] == 200,
                    "%s: the decision in flight and the DELETE both answer 200: %r %r"
                    % (what, got["r"][0], dl["r"][:2]))
            n += 1
    # the same samples to a job never deleted
    for i, b in zip(runs[-1], last):
        st, f = post(fresh, job, sample(i))
        c.check(st == 200 and essence(f) == essence(b),
                "%s: sample %d decided as by a job never deleted: %s / %s"
                % (what, i, json.dumps(essence(b))[:160], json.dumps(essence(f))[:160]))
    c.check(state(s, job) == state(fresh, job),
            "%s: the stored state is a new job's, every field (last sample included)" % what)
    replays(job, what, n)


# ---- 1. the reported case and its variants ----
case("older", [range(0, 12), range(3, 9)], "made again with older samples")
case("later", [range(0, 10), range(20, 28)], "made again with later samples")
case("twice", [range(0, 6), range(2, 7), range(1, 5)], "deleted twice")
case("flight", [range(0, 6), range(2, 8)], "deleted while a decision waits for its commit",
     in_flight=True)

# ---- 2. advice reads the job as it is since it was made again ----
decs = dashdata.post_trace(s, job="adv")
last = [json.loads(x) for x in open(dashdata.TRACE) if x.strip()][-1]
last.pop("job")
t0 = last["at"] + 30000
rin = last["vertices"][0]["metrics"]["records_in"]


def quiet(i):
    """The trace's job at 4 with the backlog gone, far below its lower bound (test_advice.py):
    an excessive up-scaling."""
    global rin
    x = copy.deepcopy(last)
    x["at"] = t0 + i * 30000
    x["running_since"] = t0
    x["config"] = dashdata.CONFIG
    rin += 30000
    src, agg = x["vertices"]
    src["parallelism"] = 4
    src["metrics"].update({"busy_ms_per_s": 150, "pending_records": 0, "records_in": rin,
                           "records_out": rin})
    agg["metrics"].update({"busy_ms_per_s": 200, "records_in": rin, "records_out": rin / 10})
    return x


for i in range(80):
    st, b = post(s, "adv", quiet(i))
end = t0 + 80 * 30000
st, adv, _ = s.req("GET", "/v1/jobs/adv/advice?window=4h&to=%d" % end)
c.check(st == 200 and [a.get("pattern") for a in adv.get("advice", [])] == ["EXCESSIVE_UP_SCALING"],
        "before the delete, the history advises: %s" % json.dumps(adv)[:200])
st, _, _ = s.req("DELETE", "/v1/jobs/adv")
for i in range(6):
    x = quiet(i)  # older samples than the deleted job's last
    st, b = post(s, "adv", x)
    c.check(st == 200, "adv made again: sample %d: %s" % (i, b))
st, adv, _ = s.req("GET", "/v1/jobs/adv/advice?window=4h&to=%d" % end)
c.check(st == 200 and adv.get("advice") == [] and adv.get("decisions") == 6,
        "after the delete, advice reads the 6 decisions of the job made again only: %s"
        % json.dumps(adv)[:300])

# ---- 3. the fence across incarnations: another process holding the deleted job ----
b2 = Server(db=s.db, tmp=s.tmp, args=["--synchronous", "NORMAL"])
for i in range(3):
    st, b = post(b2, "fenced", sample(i))  # B holds the job at version 3
st, _, _ = s.req("DELETE", "/v1/jobs/fenced")
c.check(st == 200, "A deletes the job B holds")
ref = []
for i in range(10, 13):
    st, b = post(s, "fenced", sample(i))  # A makes it again: versions 1, 2, 3
    ref.append(b)
st, b = post(b2, "fenced", sample(13))
err = b.get("error", {}) if isinstance(b, dict) else {}
c.check(st == 503 and err.get("code") == "conflict",
        "B's old job at the same version does not pass the fence: %d %s" % (st, b))
st, b = post(b2, "fenced", sample(13))  # the client's retry
for i in range(10, 14):
    st2, f = post(fresh, "fenced", sample(i))
c.check(st == 200 and essence(b) == essence(f),
        "the retry is decided from what A stored, as one process would: %s / %s"
        % (json.dumps(essence(b))[:160], json.dumps(essence(f))[:160]))
c.check(state(s, "fenced") == state(fresh, "fenced"), "the stored state is the new job's")

for srv in (s, fresh, b2):
    c.check(srv.stop() == 0, "clean stop")
c.done()
