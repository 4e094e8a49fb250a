"""Batch mode and rebalancing advice over HTTP (README, Batch jobs and rebalancing): the README's batch sample gets 104
workers on its first decision, the README's rebalance example exactly; both stored in the history and
shown by the audit views; `governor replay --db` reproduces them; bad input is refused with the
field named and nothing stored."""
import copy
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, Server, Checks, fingerprint  # noqa: E402

c = Checks()
s = Server()

T0 = 1764410400000
BATCH = {"at": T0 + 30000, "running_since": T0, "status": "RUNNING", "mode": "BATCH",
         "workers": {"current": 10, "slots_per_worker": 4, "cpu_utilization": 0.63,
                     "shuffle_on_workers": False},
         "vertices": [
             {"id": "read", "batch": {"state": "RUNNING", "unit": "bytes", "total_work": 4.0e12,
                                      "work_done": 7.5e9, "fraction_consumed": None,
                                      "remaining_parallelism": None, "fixed_shards": None}},
             {"id": "write", "batch": {"state": "PENDING", "fixed_shards": 8}}]}

st, d, _ = s.req("POST", "/v1/jobs/backfill/metrics", BATCH)
c.check(st == 200, "batch sample: 200: %s %r" % (st, d))
if st == 200:
    w = d.get("workers", {})
    c.check(w.get("target") == 104 and w.get("raw") == 104 and w.get("current") == 10,
            "4 TB at 25 MB/s from 10 workers: 104: %r" % w)
    c.check(w.get("min") == 1 and w.get("max") == 2000 and w.get("constraints") == [],
            "min, max, no constraint: %r" % w)
    c.check(d["action"] == "SCALE_UP" and d["execute"] is True and d["reason"] == "HIGH_BACKLOG",
            "scale up for the backlog: %r" % d)
    c.check(abs(d["evaluated"]["remaining_worker_seconds"] - 159700) < 1e-6,
            "159,700 remaining worker-seconds: %r" % d["evaluated"])
    c.check(d["parallelism"] == {} and d["mode"] == "BATCH", "empty parallelism map")
    bid = d["decision_id"]
    st, rec, _ = s.req("GET", "/v1/decisions/%d" % bid)
    c.check(st == 200 and json.dumps(rec).find("4000000000000") >= 0,
            "the stored decision has its input: %s" % st)

# the audit views show it as a scaling of the pool
st, q, _ = s.req("POST", "/v1/sql", {"sql": "SELECT vertex, current, raw_target, target, reason "
                                            "FROM audit_vertex_decisions WHERE job = 'backfill'"})
c.check(st == 200 and q["rows"] == [["workers", 10, 104, 104, "HIGH_BACKLOG"]],
        "audit_vertex_decisions: %r" % (q,))
st, q, _ = s.req("POST", "/v1/sql", {"sql": "SELECT action, reason, changes FROM audit_scalings "
                                            "WHERE job = 'backfill'"})
c.check(st == 200 and q["rows"] == [["SCALE_UP", "HIGH_BACKLOG", "workers 10->104"]],
        "audit_scalings: %r" % (q,))

# a later sample 10 s on: one change per 30 s holds the pool
later = copy.deepcopy(BATCH)
later["at"] = T0 + 40000
later["workers"]["current"] = 104
later["vertices"][0]["batch"]["work_done"] = 7.5e9 + 104 * 10 * 25e6 * 0.5
st, d, _ = s.req("POST", "/v1/jobs/backfill/metrics", later)
c.check(st == 200 and d["workers"]["target"] == 104 and d["execute"] is False,
        "held within the change interval or the dead band: %r" % (d.get("workers"),))


def refused(path, body, field, what):
    before = fingerprint(s.db)
    st, d, _ = s.req("POST", path, body)
    err = d.get("error", {}) if isinstance(d, dict) else {}
    c.check(st == 400 and err.get("field") == field,
            "%s: 400 naming %s: %s %r" % (what, field, st, d))
    c.check(fingerprint(s.db) == before, "%s: nothing stored" % what)


bad = copy.deepcopy(BATCH)
bad["at"] = T0 + 90000
bad["vertices"][0]["batch"]["work_done"] = -1
refused("/v1/jobs/backfill/metrics", bad, "vertices[0].batch.work_done", "negative work")
bad["vertices"][0]["batch"]["work_done"] = 5e12
refused("/v1/jobs/backfill/metrics", bad, "vertices[0].batch.work_done", "done above total")
bad["vertices"][0]["batch"]["work_done"] = None
bad["vertices"][0]["batch"]["fraction_consumed"] = 1.5
refused("/v1/jobs/backfill/metrics", bad, "vertices[0].batch.fraction_consumed",
        "a fraction above 1")
bad["vertices"][0]["batch"]["fraction_consumed"] = 0.5
bad["vertices"][1]["batch"]["state"] = "SLEEPING"
refused("/v1/jobs/backfill/metrics", bad, "vertices[1].batch.state", "an unknown stage state")
bad = copy.deepcopy(BATCH)
bad["at"] = T0 + 90000
del bad["workers"]
refused("/v1/jobs/backfill/metrics", bad, "workers", "no worker pool")
bad = copy.deepcopy(BATCH)
bad["mode"] = "BATCHY"
refused("/v1/jobs/fresh/metrics", bad, "mode", "an unknown mode")

# ---- the pool as running and requested workers (core/README.md, Batch) ----
POOL = copy.deepcopy(BATCH)
POOL["workers"] = {"running": 10, "requested": 10, "slots_per_worker": 4}
st, d, _ = s.req("POST", "/v1/jobs/pool/metrics", POOL)
c.check(st == 200 and d["workers"]["current"] == 10 and d["workers"]["running"] == 10
        and d["workers"]["target"] == 104, "running and requested: 10 -> 104: %s %r" % (st, d))
nxt = copy.deepcopy(POOL)
nxt["at"] = T0 + 60000
nxt["workers"].update({"running": 12, "requested": 104})
nxt["vertices"][0]["batch"]["work_done"] = 7.5e9 + 12 * 30 * 25e6
st, d, _ = s.req("POST", "/v1/jobs/pool/metrics", nxt)
c.check(st == 200 and d["workers"]["current"] == 104 and d["workers"]["running"] == 12
        and d["workers"]["target"] == 104 and d["execute"] is False,
        "12 of the 104 asked for run: the pool is kept: %s %r" % (st, d.get("workers")))
back = copy.deepcopy(nxt)
back["at"] = T0 + 90000
back["workers"]["running"] = 104
back["vertices"][0]["batch"]["work_done"] = 1e9
st, d, _ = s.req("POST", "/v1/jobs/pool/metrics", back)
ev = d.get("events", []) if st == 200 else []
c.check(st == 200 and len(ev) == 1 and ev[0]["reason"] == "ProgressWentBack"
        and ev[0]["type"] == "Warning" and ev[0]["message"].startswith(
            "read: work_done went back from 16500000000 to 1000000000")
        and d["workers"]["target"] == 104 and d["workers"]["raw"] == 104,
        "progress that goes back is a warning, not new work: %s %r" % (st, d))
bad = copy.deepcopy(POOL)
bad["at"] = T0 + 120000
bad["workers"] = {"running": 20, "requested": 10}
refused("/v1/jobs/pool/metrics", bad, "workers.running", "more running than requested")
bad["workers"] = {"slots_per_worker": 4}
refused("/v1/jobs/pool/metrics", bad, "workers.current", "no pool at all")

# ---- rebalance ----
REB = {"at": T0 + 60000, "stage": "read", "unit": "MB", "idle_slots": 3, "startup_s": 10,
       "min_piece": 1, "nominal_rate": 10,
       "items": [{"id": "D", "remaining": 2000, "rate": 5, "fraction_consumed": 0.20,
                  "remaining_parallelism": 2000},
                 {"id": "E", "remaining": 30, "rate": 0.15, "fraction_consumed": 0.97,
                  "remaining_parallelism": 1}]}
st, d, _ = s.req("POST", "/v1/jobs/backfill/rebalance", REB)
c.check(st == 200, "rebalance: 200: %s %r" % (st, d))
if st == 200:
    c.check(d["action"] == "REBALANCE" and d["execute"] is False and d["reason"] == "STRAGGLERS",
            "advice, not an action: %r" % d)
    c.check(abs(d["target_finish_s"] - 200) < 1e-9 and abs(d["makespan_before_s"] - 400) < 1e-9
            and abs(d["makespan_after_s"] - 200) < 1e-9, "400 s -> 200 s: %r" % d)
    sp = d["splits"]
    c.check(len(sp) == 1 and sp[0]["item"] == "D" and abs(sp[0]["fraction_of_remainder"] - 0.5)
            < 1e-12 and abs(sp[0]["split_at_fraction"] - 0.6) < 1e-12
            and sp[0]["pieces"] == 1 and abs(sp[0]["piece_fraction"] - 0.4) < 1e-12
            and abs(sp[0]["piece_size"] - 1000) < 1e-9 and abs(sp[0]["piece_finish_s"] - 110)
            < 1e-9, "D split at 0.6: %r" % sp)
    un = d["unsplittable"]
    c.check(len(un) == 1 and un[0]["item"] == "E" and un[0]["cause"] == "HOT_RECORD"
            and abs(un[0]["finish_s"] - 200) < 1e-9, "E is a hot record: %r" % un)
    c.check(d.get("held_by") == "E" and un and un[0].get("holds_stage") is True
            and un[0]["message"].startswith("E holds the stage until 200.0 s (65.7 s without "
                                            "it)"), "E holds the stage: %r" % (d,))
    c.check(isinstance(d.get("decision_id"), int), "stored with an id")
    st, q, _ = s.req("POST", "/v1/sql", {"sql": "SELECT action, reason FROM audit_decisions "
                                                "WHERE job = 'backfill' ORDER BY id"})
    c.check(st == 200 and q["rows"][-1] == ["REBALANCE", "STRAGGLERS"],
            "audit_decisions shows the advice: %r" % (q,))

bad = copy.deepcopy(REB)
bad["items"][0]["remaining"] = -3
refused("/v1/jobs/backfill/rebalance", bad, "items[0].remaining", "negative remaining work")
bad = copy.deepcopy(REB)
bad["items"][1]["fraction_consumed"] = 1.2
refused("/v1/jobs/backfill/rebalance", bad, "items[1].fraction_consumed", "a fraction above 1")
bad = copy.deepcopy(REB)
del bad["items"]
bad["workers"] = [{"id": "w1", "items": [REB["items"][0]]}, {"id": "w2", "items": []}]
refused("/v1/jobs/backfill/rebalance", bad, "workers[1].items", "a worker with no items")
bad = copy.deepcopy(REB)
bad["items"][0]["fraction_consumed"] = 1.0
refused("/v1/jobs/backfill/rebalance", bad, "items[0].fraction_consumed",
        "the whole range consumed with 2,000 MB left")
bad = copy.deepcopy(REB)
del bad["items"][0]["rate"]
refused("/v1/jobs/backfill/rebalance", bad, "items[0].rate", "no rate")

# A stuck worker (rate 0) is the straggler rebalancing exists for (core/README.md, Rebalance): all of D's
# remainder is handed out from where it stands, in two pieces, and the stage finishes when E
# does, instead of never.
stuck = copy.deepcopy(REB)
stuck["at"] = T0 + 60500
stuck["items"][0]["rate"] = 0
st, d, _ = s.req("POST", "/v1/jobs/backfill/rebalance", stuck)
c.check(st == 200 and d.get("reason") == "STRAGGLERS" and d.get("makespan_before_s") is None
        and abs(d.get("makespan_after_s", 0) - 200) < 1e-9 and d.get("held_by") == "E",
        "a stuck worker is split: %s %r" % (st, d))
if st == 200:
    sp = d["splits"]
    c.check(len(sp) == 1 and sp[0]["item"] == "D" and sp[0]["fraction_of_remainder"] == 0
            and round(sp[0]["split_at_fraction"], 12) == 0.2
            and round(sp[0]["piece_fraction"], 12) == 0.4 and sp[0]["pieces"] == 2, "D hands all of its remainder out: %r" % sp)
    c.check(d["message"].startswith("split 1 straggler onto 2 idle slots: the stage finishes at "
                                    "200.0 s instead of never"), "said: %r" % d["message"])

# Two single records: D (400 s) holds the stage, not E (200 s), and E's entry says so.
two = copy.deepcopy(REB)
two["at"] = T0 + 60700
two["items"][0]["remaining_parallelism"] = 1
st, d, _ = s.req("POST", "/v1/jobs/backfill/rebalance", two)
c.check(st == 200 and d.get("reason") == "UNSPLITTABLE_WORK" and d.get("held_by") == "D"
        and "D, which cannot be split (HOT_RECORD), holds the stage until 400.0 s"
        in d.get("message", ""), "D holds the stage: %s %r" % (st, d))
if st == 200:
    un = {u["item"]: u for u in d["unsplittable"]}
    c.check(un["D"]["holds_stage"] and un["D"]["message"].startswith(
        "D holds the stage until 400.0 s (200.0 s without it)") and not un["E"]["holds_stage"]
        and "D holds the stage longer (until 400.0 s)" in un["E"]["message"],
        "each entry names the holder with its figure: %r" % un)

# the workers form gives the same advice
wf = copy.deepcopy(REB)
del wf["items"]
wf["at"] = T0 + 61000
wf["workers"] = [{"id": "w1", "items": [REB["items"][0]]}, {"id": "w2", "items": [REB["items"][1]]}]
st, d, _ = s.req("POST", "/v1/jobs/backfill/rebalance", wf)
c.check(st == 200 and abs(d.get("target_finish_s", 0) - 200) < 1e-9, "workers form: %r" % (d,))

# ---- replay against history reproduces every stored decision, batch and advice ----
s.stop()
p = subprocess.run([BINARY, "replay", "--db", s.db, "--job", "backfill"], capture_output=True,
                   text=True, timeout=120)
lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
summ = lines[-1].get("summary") if lines else None
c.check(p.returncode == 0 and summ is not None, "replay ran: %s %s" % (p.returncode, p.stderr))
if summ:
    c.check(summ["replayed"] == 6 and summ["identical"] == 6 and summ["changed"] == 0
            and summ["errors"] == 0, "replay: 6 decisions, identical: %r" % summ)
p = subprocess.run([BINARY, "replay", "--db", s.db, "--job", "backfill", "--set",
                    "governor.batch.speed-weight=1"], capture_output=True, text=True, timeout=120)
lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
summ = lines[-1].get("summary") if lines else None
c.check(summ is not None and summ["changed"] >= 1 and lines[0].get("changed") == ["targets"],
        "a candidate speed-weight changes the pool: %r" % (lines,))
if lines and lines[0].get("candidate"):
    c.check(lines[0]["candidate"]["message"].find("= 52 workers") >= 0,
            "lambda 1: ceil(sqrt(159700 / 60)) = 52: %r" % lines[0]["candidate"])
c.done()
