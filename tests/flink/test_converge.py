"""A Flink job governed by `governor flink --apply rest` converges as the simulator's job does.

The fake JobManager's job is the simulator's model (fakejm.py); `governor simulate` runs the same
scenario (--only governor, --trace). Then, poll after poll, `governor flink --once --apply rest
--db` reads the fake job through Flink's REST shapes, has it decided in process, and PUTs the
resource requirements of every answer with execute true; the job restarts at the new
parallelism (RESTARTING for the restart downtime, then RUNNING with a new running_since and its
counters at 0), which the next poll shows. The load (10,000 records/s on a job started at 2
subtasks a vertex) steps down to 4,000/s after 10 minutes: a scale-up, then a scale-down. Checked: every decision (action, reason, parallelism)
is the simulator's at the same instant, the sample governor flink built from the REST payloads
carries the simulator's figures, the job ends at the simulator's final parallelism, each
executed answer was one PUT whose upper bounds are the answer's parallelism, and the job's
history is in the --db store."""
import json
import os
import sqlite3
import subprocess
import time

from flinktest import (AGG, BINARY, JID, MAP, POLICIES, ROOT, SRC, Checks, FakeJobManager,
                       run, three_vertex_job, tmpdir)

c = Checks()
d = tmpdir()
CFG = {"job.autoscaler.metrics.window": "3 min",
       "job.autoscaler.stabilization.interval": "1 min",
       "job.autoscaler.scale-down.interval": "5 min"}
scenario = {
    "name": "orders", "horizon": "25 min", "interval": 30, "restart": 60, "config": CFG,
    "vertices": [
        {"id": SRC, "parallelism": 2, "max_parallelism": 128, "partitions": 48,
         "capacity": 2000, "arrival": [{"type": "constant", "rate": 10000},
                                       {"type": "step", "at": "10 min", "rate": 4000}]},
        {"id": MAP, "parallelism": 2, "max_parallelism": 128, "capacity": 2500,
         "scaling": 0.95, "inputs": [{"from": SRC, "ship": "REBALANCE"}]},
        {"id": AGG, "parallelism": 2, "max_parallelism": 128, "capacity": 4000,
         "scaling": 0.9, "selectivity": 0.1, "inputs": [{"from": MAP, "ship": "HASH"}]}]}
path = os.path.join(d, "orders.json")
with open(path, "w") as f:
    json.dump(scenario, f)
p = subprocess.run([BINARY, "simulate", path, "--only", "governor", "--policies", POLICIES,
                    "--trace", d, "--out", d], capture_output=True, text=True, cwd=ROOT,
                   timeout=300)
c.check(p.returncode == 0, "simulate: %d %s" % (p.returncode, p.stderr[-500:]))
with open(os.path.join(d, "orders.governor.jsonl")) as f:
    trace = [json.loads(ln) for ln in f]
c.check(len(trace) == 50, "50 samples in 25 min: %d" % len(trace))

job = three_vertex_job(version="1.20", steps=[(600, 4000)])
jm = FakeJobManager([job])
db = os.path.join(d, "governor.db")
args = ["--rest", jm.url, "--job", JID, "--name", "orders", "--once", "--db", db,
        "--policies", POLICIES, "--apply", "rest"]
for k, v in CFG.items():
    args += ["--set", "%s=%s" % (k, v)]


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


FIGURES = ("records_in", "records_out", "accumulated_busy_ms", "records_in_per_s",
           "pending_records", "backpressured_ms_per_s")
executed = 0
t0 = time.monotonic()
for i, sim in enumerate(trace):
    rc, lines, err = run(args)
    if not c.check(rc == 0 and len(lines) == 2 and "answer" in lines[1],
                   "poll %d: exit %d, %r %s" % (i, rc, lines, err[-800:])):
        break
    sample, ans, want = lines[0]["sample"], lines[1]["answer"], sim["decision"]
    c.check((ans["action"], ans["reason"], ans["parallelism"]) ==
            (want["action"], want["reason"], want["parallelism"]),
            "poll %d (t = %d s): governor flink decided %s %s %s, the simulator %s %s %s"
            % (i, 30 * i, ans["action"], ans["reason"], ans["parallelism"], want["action"],
               want["reason"], want["parallelism"]))
    c.check(sample["at"] == sim["at"] and sample.get("running_since") == sim["running_since"] and
            sample["status"] == sim["status"],
            "poll %d: at/running_since/status %r vs %r" % (
                i, [sample["at"], sample.get("running_since"), sample["status"]],
                [sim["at"], sim["running_since"], sim["status"]]))
    for fv, sv in zip(sample["vertices"], sim["vertices"]):
        fm, sm = fv.get("metrics"), sv.get("metrics")
        c.check((fm is None) == (sm is None), "poll %d: metrics sent as the simulator does" % i)
        if sm is None:  # restarting: the simulator sends no figures
            continue
        for key in FIGURES:
            c.check(close(fm.get(key), sm.get(key)),
                    "poll %d vertex %s %s: %r vs the simulator's %r"
                    % (i, fv["id"], key, fm.get(key), sm.get(key)))
        for agg in ("min", "avg", "max"):
            c.check(close(fm["busy_ms_per_s"][agg], sm["busy_ms_per_s"][agg]),
                    "poll %d vertex %s busy %s: %r vs %r" % (
                        i, fv["id"], agg, fm["busy_ms_per_s"][agg], sm["busy_ms_per_s"][agg]))
        c.check(fv["parallelism"] == sv["parallelism"] and
                fv.get("partitions") == sv.get("partitions") and
                fv["max_parallelism"] == sv["max_parallelism"] and
                [(e["from"], e["ship"]) for e in fv["inputs"]] ==
                [(e["from"], e["ship"]) for e in sv["inputs"]],
                "poll %d vertex %s: shape %r vs %r" % (i, fv["id"], fv, sv))
    if ans["execute"]:
        executed += 1
        c.check(lines[1]["applied"] == "rest", "poll %d: applied rest: %r" % (i, lines[1]))
        c.check(job.puts and job.puts[-1] == ans["parallelism"],
                "poll %d: the PUT's upper bounds are the answer: %r vs %r"
                % (i, job.puts[-1:], ans["parallelism"]))
    else:
        c.check(lines[1]["applied"] is None, "poll %d: nothing applied" % i)
elapsed = time.monotonic() - t0
final = {x.id: x.p for x in job.v}
c.check(final == trace[-1]["decision"]["parallelism"],
        "the job converged where the simulator's did: %r vs %r"
        % (final, trace[-1]["decision"]["parallelism"]))
c.check(executed >= 1 and len(job.puts) == executed and job.rescales == executed,
        "each executed answer one PUT and one restart: %d executed, %d PUTs, %d restarts"
        % (executed, len(job.puts), job.rescales))
c.check(final[SRC] > 2, "the source was scaled up from 2: %r" % final)
con = sqlite3.connect(db)
n = con.execute("SELECT count(*) FROM decisions WHERE job = 'orders'").fetchone()[0]
con.close()
c.check(n == len(trace), "the job's history is in the store: %d decisions" % n)
print("%d polls, %d rescales, final %s, %.1f s" % (len(trace), executed,
                                                   [final[v] for v in (SRC, MAP, AGG)], elapsed))
jm.close()
c.done()
