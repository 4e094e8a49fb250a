"""Replay against history (README, Replay against history): `governor replay --db` and POST /v1/replay.

A 1,000-sample history of `orders` (plus `clicks` and `payments`, with a config change and a
job deletion) is posted to a real server by audit_sim.py. Replayed with the recorded config,
every recorded decision is reproduced exactly (the whole response, not only the action); a
candidate config changes some decisions and the summary counts them consistently; nothing is
written to the database."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import audit_sim  # noqa: E402
from gov import BINARY, PG, Server, Checks, fingerprint  # noqa: E402

c = Checks()
POLICIES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "policies")
s = Server(args=["--synchronous", "NORMAL", "--policies", POLICIES])
n = audit_sim.run(s.port, steps=1000)
c.check(n == 2000, "2,000 decisions posted (1,000 of orders): %d" % n)


def replay(*args):
    p = subprocess.run([BINARY, "replay", "--db", s.db] + list(args), capture_output=True,
                       text=True, timeout=120)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    summary = lines[-1].get("summary") if lines else None
    return p.returncode, lines[:-1], summary, p.stderr


before = fingerprint(s.db)
# ---- the recorded config reproduces every recorded decision exactly ----
for job, count in (("orders", 1000), ("clicks", 500), ("payments", 500)):
    rc, changes, summ, err = replay("--job", job, "--policies", POLICIES)
    c.check(rc == 0 and summ is not None, "%s: replay ran: rc %d %s" % (job, rc, err))
    if summ:
        c.check(summ["decisions"] == count and summ["replayed"] == count,
                "%s: %d decisions compared: %r" % (job, count, summ))
        c.check(summ["changed"] == 0 and changes == [], "%s: zero changes: %r" % (job, changes[:2]))
        c.check(summ["identical"] == count, "%s: every response identical: %d" % (
            job, summ["identical"]))
        c.check(summ["scalings_added"] == 0 and summ["scalings_removed"] == 0 and
                summ["subtask_minutes_delta"] == 0, "%s: no scaling added or removed" % job)

# The recorded scalings are those of the audit_scalings view.
# (PostgreSQL numbers its parameters: $1 there, ? on SQLite.)
st, r, _ = s.req("POST", "/v1/sql", {"sql": "SELECT count(*) FROM audit_scalings WHERE job = "
                                     + ("$1" if PG else "?"), "params": ["orders"]})
rc, _, summ, _ = replay("--job", "orders")
c.check(st == 200 and summ and summ["scalings_recorded"] == r["rows"][0][0] > 0,
        "scalings_recorded = executed scalings in audit_scalings: %r %r" % (r, summ))

# ---- a candidate config changes some decisions ----
rc, changes, cand, err = replay("--job", "orders", "--set", "job.autoscaler.utilization.target=0.9")
c.check(rc == 0 and cand is not None, "candidate replay ran: %s" % err)
if cand:
    c.check(0 < cand["changed"] <= cand["decisions"] == 1000,
            "a higher utilization target changes some decisions: %r" % cand)
    c.check(len(changes) == cand["changed"], "one line per changed decision: %d vs %d" % (
        len(changes), cand["changed"]))
    c.check(cand["figures_only"] > 0 and cand["changed"] + cand["identical"]
            + cand["figures_only"] == cand["decisions"],
            "decisions = changed + identical + figures_only (another target moves the "
            "thresholds of unchanged decisions): %r" % cand)
    c.check(cand["scalings_candidate"] - cand["scalings_recorded"] ==
            cand["scalings_added"] - cand["scalings_removed"],
            "scalings: candidate - recorded = added - removed: %r" % cand)
    c.check(cand["subtask_minutes_candidate"] < cand["subtask_minutes_recorded"],
            "a target of 0.9 runs fewer subtask-minutes: %r" % cand)
    ok = all(set(x["changed"]) and x["recorded"] != x["candidate"] or x["vertices"]
             for x in changes)
    c.check(ok, "each change line says what changed")
    first = changes[0] if changes else {}
    c.check({"decision_id", "at", "at_utc", "changed", "recorded", "candidate", "vertices"} <=
            set(first), "change line fields: %r" % sorted(first))

# ---- --from / --to: earlier decisions only warm the state up ----
T0 = audit_sim.T0
rc, changes, w, err = replay("--job", "orders", "--from", str(T0 + 300 * 60000), "--to",
                             "2025-11-29T20:59:00Z")
c.check(rc == 0 and w and w["warmup"] == 300 and w["decisions"] == 360 and w["changed"] == 0,
        "window of 360 decisions after 300 of warm-up, unchanged: %r %s" % (w, err))

# ---- bad use ----
rc, _, _, err = replay("--job", "orders", "--set", "job.autoscaler.utilization.target=2")
c.check(rc == 2 and "utilization.target" in err, "bad candidate value: exit 2 naming it: %s" % err)
rc, _, _, err = replay("--job", "orders", "--policies", "/nonexistent")
c.check(rc == 2 and "/nonexistent" in err, "--policies that do not load: exit 2: %s" % err)

# clicks ran under the freeze executor: its calls are recorded, and without the policies
# some decisions come out differently (the scale-ups are no longer limited to 1.5x).
st, r, _ = s.req("POST", "/v1/sql", {"sql": "SELECT count(*) FROM audit_plugin_calls WHERE "
                                            "job = 'clicks' AND plugin = 'freeze'"})
c.check(st == 200 and r["rows"][0][0] > 0, "freeze calls recorded for clicks: %r" % (r,))
rc, changes, summ, err = replay("--job", "clicks")
c.check(rc == 0 and summ and summ["changed"] > 0,
        "without its policies clicks' history is not reproduced: %r" % (summ,))
p = subprocess.run([BINARY, "replay", "--db", os.path.join(s.tmp, "missing.db"), "--job", "x"],
                   capture_output=True, text=True)
c.check(p.returncode == 1 and not os.path.exists(os.path.join(s.tmp, "missing.db")),
        "a missing database: exit 1, not created")
c.check(fingerprint(s.db) == before, "replay wrote nothing to the database")

# ---- POST /v1/replay ----
# (a replay of 1,000 decisions takes seconds under the sanitizers on a busy machine)
slow = s.conn(timeout=120)
st, r, _ = s.req("POST", "/v1/replay", {"job": "orders"}, conn=slow)
c.check(st == 200 and r["summary"]["changed"] == 0 and r["decisions"] == [] and
        r["summary"]["identical"] == 1000, "HTTP replay, recorded config: %d %r" % (
            st, r.get("summary") if isinstance(r, dict) else r))
st, r, _ = s.req("POST", "/v1/replay", {"job": "orders", "from": T0, "to": "2025-11-30T02:39:00Z",
                                        "config": {"job.autoscaler.utilization.target": 0.9}},
                 conn=slow)
c.check(st == 200 and r["summary"]["changed"] == len(r["decisions"]) > 0 and
        r["summary"]["decisions"] == 1000,
        "HTTP replay, candidate config: %d %r" % (st, r.get("summary") if isinstance(r, dict) else r))
if st == 200 and cand:
    c.check({k: v for k, v in r["summary"].items() if k not in ("from", "to")} ==
            {k: v for k, v in cand.items() if k not in ("from", "to")},
            "HTTP and CLI replays agree: %r vs %r" % (r["summary"], cand))
for name, body, status, field in [
        ("no job", {}, 400, "job"),
        ("bad job id", {"job": "a/b"}, 400, "job"),
        ("bad from", {"job": "orders", "from": "yesterday"}, 400, "from"),
        ("unknown option", {"job": "orders", "config": {"job.autoscaler.nope": "1"}}, 422,
         "config.job.autoscaler.nope"),
        ("bad value", {"job": "orders", "config": {"job.autoscaler.utilization.target": "2"}},
         422, "config.job.autoscaler.utilization.target"),
        ("policies", {"job": "orders", "policies": "/nonexistent"}, 400, "policies")]:
    st, r, _ = s.req("POST", "/v1/replay", body, conn=slow)
    err = r.get("error", {}) if isinstance(r, dict) else {}
    c.check(st == status and err.get("field") == field and err.get("message"),
            "%s: %d field %s, got %d %r" % (name, status, field, st, r))
st, r, _ = s.req("POST", "/v1/replay", {"job": "nobody"}, conn=slow)
slow.close()
c.check(st == 404, "a job without history: 404, got %d" % st)
c.check(fingerprint(s.db) == before, "HTTP replays wrote nothing")
c.check(s.stop() == 0, "clean stop")
c.done()
