"""A lost reply has a safe retry: the same job, the same `at` and the same body again get the
decision stored the first time (200, the same decision_id, "repeat": true) and change nothing;
the same `at` with another body is a 409. Also across a restart, for an older sample, with the
body's members reordered, and while the first request still waits for its commit (the writer
held up by another process's lock)."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, fingerprint, count, lock_store  # noqa: E402

c = Checks()
URL = "/v1/jobs/r/metrics"
CFG = {"job.autoscaler.metrics.window": "2 min", "job.autoscaler.stabilization.interval": "1 min"}


def smp(i, **kw):
    return sample(i, rate=1000.0 + 400 * i, busy_src=min(990.0, 500.0 + 60 * i), config=CFG, **kw)


def essence(d):
    """What a decision says, without its id."""
    return {k: v for k, v in d.items() if k not in ("decision_id", "repeat")}


# The reference: each sample once.
ref = Server()
want = []
for i in range(7):
    st, body, _ = ref.req("POST", URL, smp(i))
    c.check(st == 200, "reference %d: %r" % (i, body))
    want.append(essence(body))
ref.stop()

s = Server()
got = {}
for i in range(3):
    st, body, _ = s.req("POST", URL, smp(i))
    c.check(st == 200 and "repeat" not in body, "sample %d decided, no repeat marker" % i)
    got[i] = body

# The same sample again: the stored answer, nothing stored, nothing changed.
fp = fingerprint(s.db)
st, body, hdr = s.req("POST", URL, smp(2))
c.check(st == 200, "a retry is a 200: %d %r" % (st, body))
c.check(body.get("repeat") is True, "marked as a repeat: %r" % body.get("repeat"))
c.check(body.get("decision_id") == got[2]["decision_id"], "the same decision_id")
c.check(essence(body) == essence(got[2]), "the answer of then, exactly")
c.check(list(body)[:2] == ["decision_id", "repeat"], "decision_id, then the marker: %r"
        % list(body)[:3])
c.check(fingerprint(s.db) == fp, "a retry stores nothing")

# The same JSON value, printed another way (members reordered, spaces): still the same sample.
st, body, _ = s.req("POST", URL, json.dumps(smp(2), sort_keys=True, indent=3))
c.check(st == 200 and body.get("repeat") is True and
        body.get("decision_id") == got[2]["decision_id"], "reordered body is a retry: %r" % body)

# The same at, another body: 409 naming at, nothing stored.
st, body, _ = s.req("POST", URL, smp(2, p_src=5))
c.check(st == 409 and body["error"]["field"] == "at", "another body at the same at: 409: %r" % body)
c.check("decision %d" % got[2]["decision_id"] in body.get("error", {}).get("message", ""),
        "the 409 names the stored decision: %r" % body)
odd = smp(2)
odd["at"] = "2025-11-29T10:01:00Z"  # the same instant, written as RFC 3339: another body
st, body, _ = s.req("POST", URL, odd)
c.check(st == 409, "the same instant in another form is another body: %d" % st)
c.check(fingerprint(s.db) == fp, "the 409s store nothing")

# An older sample, retried after a newer one was decided.
st, body, _ = s.req("POST", URL, smp(1))
c.check(st == 200 and body.get("repeat") is True and
        body.get("decision_id") == got[1]["decision_id"], "an older sample's retry: %r" % body)
# Older than the job's last and never sent: 409.
st, body, _ = s.req("POST", URL, dict(smp(1), at=smp(1)["at"] + 1))
c.check(st == 409 and body["error"]["field"] == "at", "a new sample back in time: 409")
c.check(fingerprint(s.db) == fp, "still nothing stored")

# The job goes on as if no retry had happened.
st, body, _ = s.req("POST", URL, smp(3))
c.check(st == 200 and "repeat" not in body, "the next sample is decided")
c.check(body.get("decision_id") == got[2]["decision_id"] + 1, "with the next id")
c.check(essence(body) == want[3], "and as the run without retries decided it")
got[3] = body

# After a restart the retry still finds its decision.
s.stop()
s = Server(db=s.db, tmp=s.tmp)
st, body, _ = s.req("POST", URL, smp(3))
c.check(st == 200 and body.get("repeat") is True and
        body.get("decision_id") == got[3]["decision_id"] and essence(body) == want[3],
        "a retry after a restart: %r" % body)

# A retry while the first request still waits for its commit: another process holds the
# write lock (less than the writer's 5 s busy timeout), both requests wait, both get the
# same decision, one of them marked as the repeat.
lock = lock_store(s.db)
n_before = count(s.db, "decisions")
answers = []


def post(i, **kw):
    t = time.monotonic()
    st, body, _ = s.req("POST", URL, smp(i, **kw))
    answers.append((st, body))
    if body.get("repeat"):
        print("the repeat waited %.2f s for the commit it repeats" % (time.monotonic() - t))


def decided(i):
    """Waits until the server has decided sample i (its commit may still wait)."""
    deadline = time.time() + 4
    while time.time() < deadline:
        st, body, _ = s.req("GET", "/v1/jobs")
        if any(j["job"] == "r" and j["last_at"] == smp(i)["at"] for j in body["jobs"]):
            return True
        time.sleep(0.02)
    return False


t1 = threading.Thread(target=post, args=(4,))
t1.start()
c.check(decided(4), "the first request is decided, its commit held up")
t2 = threading.Thread(target=post, args=(4,))
t2.start()
time.sleep(0.6)
lock.execute("ROLLBACK")
lock.close()
t1.join()
t2.join()
c.check([a[0] for a in answers] == [200, 200], "both answered 200: %r" % answers)
if [a[0] for a in answers] == [200, 200]:
    ids = {a[1]["decision_id"] for a in answers}
    c.check(len(ids) == 1, "one decision_id for both: %r" % ids)
    c.check(sorted(bool(a[1].get("repeat")) for a in answers) == [False, True],
            "exactly one is the repeat")
    c.check(all(essence(a[1]) == want[4] for a in answers), "both the same decision")
c.check(count(s.db, "decisions") == n_before + 1, "one decision stored")

# The same while waiting, with another body: 409 once the first one is committed.
lock = lock_store(s.db)
answers = []
t1 = threading.Thread(target=post, args=(5,))
t1.start()
c.check(decided(5), "the first request is decided, its commit held up")
t2 = threading.Thread(target=post, args=(5,), kwargs={"p_src": 7})
t2.start()
time.sleep(0.6)
lock.execute("ROLLBACK")
lock.close()
t1.join()
t2.join()
sts = sorted(a[0] for a in answers)
c.check(sts == [200, 409], "the first 200, the other body 409: %r" % answers)

st, body, _ = s.req("POST", URL, smp(6))
c.check(st == 200 and essence(body) == want[6], "the job goes on as without retries: %r" % body)
c.check(s.stop() == 0, "exits 0")
c.done()
