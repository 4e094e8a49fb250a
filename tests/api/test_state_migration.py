"""A database whose jobs hold their state in the forms older versions wrote (JSON in
jobs.state_json, before and after the window's numbering; a whole-state blob with the window's
samples inside, from before job_window) opens: migration 008 converts every such row to the
form written today (the state without its window in jobs.state_bin, one job_window row per
sample) inside its transaction, drops jobs.state_json, and each job goes on exactly: its
decisions, across a restart too, are those of an uninterrupted run over the same trace. A row
whose JSON does not load is logged and the job starts empty, as before.

The fixture (tests/api/data/state_v7.sql) was written by the previous version from samples
0-44 of trace() below; this test posts samples 45-59. Run against the previous version, it
fails: no migration 008, and "full" loses its window at the restart."""
import json
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, vertex, T0  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "state_v7.sql")
SCHEMA = os.path.join(os.path.dirname(__file__), "..", "..", "schema")
JOBS = ["json", "old", "full"]
K, M, N = 45, 47, 60  # the fixture's samples, a restart, the end
# A row from before migration 002 lacks the pending scaling and what the window knew of the
# counters: until the window has refilled (5 samples), "old" decides from less than the
# uninterrupted run knew, as it did when the previous version loaded it.
OLD_FROM = K + 5
STEP = 60000
CFG = {"job.autoscaler.metrics.window": "5 min",
       "job.autoscaler.stabilization.interval": "1 min",
       "job.autoscaler.scale-down.interval": "10 min",
       "job.autoscaler.scaling.event.interval": "3 min"}
# The fixture was written before the governor profile gained these options (each on by default
# under it now): off, so that the run the old state continues decides as the version that
# wrote it did, and the test compares the codec, not the profile.
CFG.update({"governor." + k: "false" for k in (
    "source-rate.guard", "catch-up.in-headroom", "scale-down.with-restart", "scale-down.early",
    "skew.knee", "skew.limit-flow", "rates.from-counters", "source.stall",
    "alignment.busiest-share")})
CFG["governor.utilization.ceiling"] = "1.0"
CFG.update({"governor.rates.level-shift": "0", "governor.bounds.confidence": "0",
            "governor.rates.trend": "0", "governor.scale-down.restart-cost": "0",
            "governor.scale-down.in-one-step": "false", "governor.scalability.curve": "false",
            "governor.window.refill-after-gap": "false", "governor.not-applied.max": "1000"})


def trace(k, i):
    """Sample i of job k: the aggregation runs hot, is rescaled (a restart at sample 20), then
    idles, so the state holds history, restart tracking, delayed scale-downs, events, a
    pending scaling and counters."""
    if i < 20:
        since, p, busy = T0 - 600000, 4, 900.0
    elif i < 40:
        since, p, busy = T0 + 20 * STEP - 30000, 6, 600.0
    else:
        since, p, busy = T0 + 20 * STEP - 30000, 6, 150.0

    def rate(t):
        return 1000.0 * (1 + k / 4.0) * (1 + (t % 7) / 20.0)

    rin = sum(rate(t) for t in range(i)) * STEP / 1000.0
    return {"at": T0 + i * STEP, "running_since": since, "status": "RUNNING", "config": CFG,
            "vertices": [vertex("source", 2, busy=busy / 2 + 10 * k, rin=rin, rate=rate(i),
                                pending=5000 + 100 * i),
                         vertex("agg", p, ["source"], busy=busy + 5 * k, rin=rin, rout=rin / 10)]}


def post(s, job, body, ck):
    st, d, _ = s.req("POST", "/v1/jobs/%s/metrics" % job, body)
    ck.check(st == 200, "%s at %d: status %d %s" % (job, body["at"], st, d))
    if isinstance(d, dict):
        d.pop("decision_id", None)
    return d


def main():
    ck = Checks()

    # The uninterrupted run, and a job's first decision on sample K.
    ref = Server()
    want = {j: {} for j in JOBS}
    for i in range(N):
        for k, j in enumerate(JOBS):
            d = post(ref, j, trace(k, i), ck)
            if i >= K:
                want[j][i] = d
    fresh = post(ref, "bad", trace(0, K), ck)
    ref.stop()

    # The old database, migrated at start.
    path = os.path.join(ref.tmp, "old.db")
    c = sqlite3.connect(path)
    for name in sorted(os.listdir(SCHEMA)):
        if re.match(r"00[1-7]_.*\.sql$", name):
            with open(os.path.join(SCHEMA, name)) as f:
                c.executescript(f.read())
    with open(FIXTURE) as f:
        c.executescript(f.read())
    c.execute("PRAGMA user_version = 7")
    c.commit()
    c.close()
    got = {j: {} for j in JOBS}
    s = Server(db=path)
    logs = ""
    for i in range(K, N):
        if i == M:  # what was converted must also come back from storage as written today
            s.stop()
            logs += s.logs()
            s = Server(db=path)
        for k, j in enumerate(JOBS):
            got[j][i] = post(s, j, trace(k, i), ck)
    bad = post(s, "bad", trace(0, K), ck)
    s.stop()
    logs += s.logs()

    for j in JOBS:
        for i in range(OLD_FROM if j == "old" else K, N):
            same = got[j][i] == want[j][i]
            ck.check(same, "%s, sample %d: the migrated job decides otherwise:\n  got  %s\n  want %s"
                     % (j, i, json.dumps(got[j][i], sort_keys=True),
                        json.dumps(want[j][i], sort_keys=True)))
            if not same:
                break
    ck.check(bad == fresh, "a job whose state did not load starts empty: %s" % json.dumps(bad))
    for j in JOBS:
        complaints = [ln for ln in logs.splitlines() if "stored state unreadable" in ln and
                      re.search(r'job="?%s[" ]' % j, ln)]
        ck.check(not complaints, "%s converted without a complaint: %s" % (j, complaints))
    ck.check("migration=008" in logs,
             "the conversion is logged as migration 008")
    ck.check('job="bad"' in logs and "unsupported state version 99" in logs,
             "the row that does not load is named in the log")

    c = sqlite3.connect(path)
    ck.check(c.execute("PRAGMA user_version").fetchone()[0] >= 8, "user_version bumped")
    cols = [r[1] for r in c.execute("PRAGMA table_info(jobs)")]
    ck.check("state_json" not in cols, "jobs.state_json is gone: %s" % cols)
    for job, blob in c.execute("SELECT job, state_bin FROM jobs WHERE job != 'bad'"):
        ck.check(blob is not None and bytes(blob[:3]) == b"GVM",
                 "%s: the state without its window in state_bin" % job)
        n = c.execute("SELECT count(*) FROM job_window WHERE job = ?", (job,)).fetchone()[0]
        ck.check(n > 0, "%s: the window's samples in job_window" % job)
    c.close()
    ck.done()


if __name__ == "__main__":
    main()
