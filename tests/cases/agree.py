#!/usr/bin/env python3
"""Every reason and message checked against its action (core/README.md, Explanations).

agreement(decision) lists what is incoherent in one decision: an action that contradicts its
reason or its vertices' moves, a vertex that moves against its own reason, a message that
promises what the decision does not do, text that is not proofread. Walker.feed(sample,
decision) checks a job's decisions in order, with what the samples say (a restart the client
did not declare is not "after the job started"). run.py applies both to every decision of
the case corpus; run as a program, this walks every decision of `governor simulate` over the
scenario corpus (every shipped scenario, every policy, and the batch scenario):

usage: agree.py GOVERNOR_BINARY SCENARIO_DIR POLICIES_DIR WORK_DIR [HORIZON]
"""
import json
import os
import re
import shutil
import subprocess
import sys

UP_REASONS = {"HIGH_BACKLOG", "HIGH_UTILIZATION", "KEY_PARALLELISM_LIMIT", "EXTERNAL_LIMIT"}
# LIMIT_REACHED: idle source subtasks; the two limits: a vertex back to its knee.
DOWN_REASONS = {"LOW_UTILIZATION", "LIMIT_REACHED", "KEY_PARALLELISM_LIMIT", "EXTERNAL_LIMIT"}
MOVE_REASONS = {"HIGH_BACKLOG", "HIGH_UTILIZATION", "LOW_UTILIZATION"}
# Job reasons an action cannot have.
NOT_FOR = {"SCALE_UP": {"LOW_UTILIZATION", "SCALE_DOWN_DELAYED", "WITHIN_TARGET"},
           "SCALE_DOWN": {"HIGH_BACKLOG", "HIGH_UTILIZATION", "WITHIN_TARGET"},
           "SCALE": {"SCALE_DOWN_DELAYED", "WITHIN_TARGET"},
           "NO_CHANGE": MOVE_REASONS}

# Text no message may contain: number agreement, doubled words and punctuation.
PROOF = [
    (re.compile(r"(?<![\d.])1 (subtasks|partitions|workers|key groups|samples|pieces|slots|"
                r"stragglers|records)\b"), "1 with a plural noun"),
    (re.compile(r"(?<![\d.])1 subtask (process|are|need|read)\b"), "'1 subtask' with a plural verb"),
    (re.compile(r"(?<![\d.])(?!1 )\d+ subtask (?!process|of)\b"), "a count above 1 with 'subtask'"),
    (re.compile(r"\b(\d+|several|many) subtasks (processes|is|needs|reads)\b"),
     "'subtasks' with a singular verb"),
    (re.compile(r"\bit them\b|\bthem it\b"), "'it them'"),
    (re.compile(r"\b(the|a|an|to|of|and|is|in) \1\b"), "a doubled word"),
    (re.compile(r";;|,,|\.\.(?!\.)| ,| ;|\(\s|\s\)"), "doubled or misplaced punctuation"),
    (re.compile(r"\s$|^\s|  "), "stray spaces"),
    (re.compile(r"\b(nan|inf)\b|-nan\b"), "a number printed as nan or inf"),
]

MOVE = re.compile(r"^(\S+): (\d+) -> (\d+):")
NEEDING = re.compile(r"needing (?:it|them) (\d+)% of the time \(target utilization (\d+)%\)")


def proofread(text, where):
    return ["%s: %s in %r" % (where, what, text) for rx, what in PROOF if rx.search(text or "")]


def batch_agreement(d):
    """What is incoherent in a batch decision: the pool's move and the reason, the holds."""
    out = []
    w = d.get("workers", {})
    cur, tgt, cons = w.get("current"), w.get("target"), set(w.get("constraints", []))
    action, reason, execute = d["action"], d["reason"], d["execute"]
    want = "SCALE_UP" if tgt > cur else "SCALE_DOWN" if tgt < cur else "NO_CHANGE"
    if action != want:
        out.append("action %s but the pool %d -> %d" % (action, cur, tgt))
    if execute != (tgt != cur):
        out.append("execute %s for the pool %d -> %d" % (execute, cur, tgt))
    held = any(c.startswith("HELD_") or c == "WITHIN_DEAD_BAND" for c in cons)
    if action == "SCALE_UP" and reason not in {"HIGH_BACKLOG", "LIMIT_REACHED",
                                               "UNSPLITTABLE_WORK"}:
        out.append("a larger pool with reason %s" % reason)
    if action == "SCALE_DOWN" and reason not in {"LOW_BACKLOG", "LIMIT_REACHED",
                                                 "UNSPLITTABLE_WORK"}:
        out.append("a smaller pool with reason %s" % reason)
    if action == "NO_CHANGE" and reason in {"HIGH_BACKLOG", "LOW_BACKLOG"} and not held:
        out.append("NO_CHANGE with reason %s and no hold" % reason)
    if reason == "LIMIT_REACHED" and not cons & {"CLAMPED_MIN_WORKERS", "CLAMPED_MAX_WORKERS"}:
        out.append("LIMIT_REACHED without a min or max clamp: %s" % sorted(cons))
    if reason == "SCALE_DOWN_DELAYED" and "HELD_FOR_CONFIRMATION" not in cons:
        out.append("SCALE_DOWN_DELAYED without HELD_FOR_CONFIRMATION")
    m = re.search(r"; (\d+) -> (\d+)", d.get("message", ""))
    if m and (int(m.group(1)), int(m.group(2))) != (cur, tgt):
        out.append("the message says %s -> %s, the pool %d -> %d" % (m.group(1), m.group(2),
                                                                    cur, tgt))
    out += proofread(d.get("message"), "message")
    for e in d.get("events", []):
        out += proofread(e.get("message"), "event %s" % e.get("reason"))
    return out


def agreement(d):
    """What is incoherent in decision d (a list of descriptions, empty when none)."""
    if d.get("mode") == "BATCH":
        return batch_agreement(d)
    out = []
    vs = d.get("vertices", [])
    if d.get("parallelism") != {v["id"]: v["target"] for v in vs}:
        out.append("parallelism %r is not the vertices' targets" % d.get("parallelism"))
    up = any(v["target"] > v["current"] for v in vs)
    down = any(v["target"] < v["current"] for v in vs)
    action = "SCALE" if up and down else "SCALE_UP" if up else "SCALE_DOWN" if down else \
        "NO_CHANGE"
    if d["action"] != action:
        out.append("action %s but the vertices %s" % (d["action"], action))
    if d["execute"] and d["action"] == "NO_CHANGE":
        out.append("execute with NO_CHANGE")
    if d["reason"] in NOT_FOR.get(d["action"], ()):
        out.append("action %s with reason %s" % (d["action"], d["reason"]))
    moved = {v["reason"] for v in vs if v["target"] != v["current"]}
    if d["action"] != "NO_CHANGE" and d["reason"] in MOVE_REASONS | DOWN_REASONS | UP_REASONS \
            and d["reason"] not in moved:
        out.append("reason %s but no moving vertex has it (%s)" % (d["reason"], sorted(moved)))
    if d["action"] == "NO_CHANGE" and d["reason"] in {"SCALE_DOWN_DELAYED", "LIMIT_REACHED",
                                                      "KEY_PARALLELISM_LIMIT",
                                                      "EXTERNAL_LIMIT",
                                                      "INEFFECTIVE_SCALING"} \
            and not any(v["reason"] == d["reason"] for v in vs):
        out.append("job reason %s but no vertex has it" % d["reason"])
    out += proofread(d.get("message"), "message")
    for e in d.get("events", []):
        out += proofread(e.get("message"), "event %s" % e.get("reason"))
    for v in vs:
        msg = v.get("message") or ""
        out += proofread(msg, "%s's message" % v["id"])
        if "CHANGED_BY_EXECUTOR" in v.get("constraints", []):
            continue  # a plugin's change keeps the native reason
        move = "%s %d -> %d with reason %s" % (v["id"], v["current"], v["target"], v["reason"])
        if v["target"] > v["current"] and v["reason"] not in UP_REASONS:
            out.append(move)
        elif v["target"] < v["current"] and v["reason"] not in DOWN_REASONS:
            out.append(move)
        elif v["target"] == v["current"] and v["reason"] in MOVE_REASONS:
            out.append(move)
        # A message that states a move states the decided one.
        m = MOVE.match(msg)
        if m and m.group(1) == v["id"] and d["reason"] not in {"SCALING_DISABLED",
                                                               "EXCLUDED_PERIOD", "VETOED",
                                                               "QUOTA_REACHED"} \
                and (int(m.group(2)), int(m.group(3))) != (v["current"], v["target"]):
            out.append("%s's message says %s -> %s, the decision %d -> %d" % (
                v["id"], m.group(2), m.group(3), v["current"], v["target"]))
        # A scale-down waits out its delay only for a vertex outside its bounds: one inside
        # them is scaled only with another, which "delayed ... applied" does not say.
        if v["reason"] == "SCALE_DOWN_DELAYED" and not v.get("outside_bounds"):
            out.append("%s: SCALE_DOWN_DELAYED inside its bounds" % v["id"])
        # A move up by a vertex busy less than its target says what drives it.
        n = NEEDING.search(msg)
        if n and v["target"] > v["current"] and int(n.group(1)) <= int(n.group(2)) \
                and "restart" not in msg and "sized for" not in msg:
            out.append("%s moves up needing %s%% of %s%% without saying why" % (
                v["id"], n.group(1), n.group(2)))
    return out


class Walker:
    """A job's decisions in order, with their samples: what one decision's text must agree
    with from the ones before it."""

    def __init__(self):
        self.jobs = {}

    def feed(self, sample, d):
        job = sample.get("job") if isinstance(sample, dict) else None
        st = self.jobs.setdefault(job, {"since": None, "inferred": False})
        out = []
        if isinstance(sample, dict) and sample.get("running_since") != st["since"]:
            st["since"], st["inferred"] = sample.get("running_since"), False
        if any(e.get("reason") == "RestartInferred" for e in d.get("events", [])):
            st["inferred"] = True
        if st["inferred"] and "after the job started" in (d.get("message") or ""):
            out.append("'after the job started' after a restart governor inferred: %r"
                       % d["message"])
        return out + agreement(d)


def walk_simulations(gov, scenarios, policies, work, horizon=None):
    """Every decision of `governor simulate` over each scenario (every policy): the problems."""
    problems, n = [], 0
    trace = os.path.join(work, "trace")
    shutil.rmtree(trace, ignore_errors=True)  # only this run's traces are walked
    os.makedirs(trace, exist_ok=True)
    for sc in scenarios:
        cmd = [gov, "simulate", sc, "--policies", policies, "--trace", trace, "--out",
               os.path.join(work, "out")]
        if horizon:
            cmd += ["--horizon", horizon]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            problems.append("%s: simulate failed: %s" % (sc, p.stderr.strip()))
            continue
    for name in sorted(os.listdir(trace)):
        w = Walker()
        with open(os.path.join(trace, name)) as f:
            for k, line in enumerate(f, 1):
                rec = json.loads(line)
                d = rec.pop("decision", None)
                if d is None:
                    continue
                n += 1
                problems += ["%s line %d: %s" % (name, k, m) for m in w.feed(rec, d)]
    return problems, n


def main():
    gov, scen_dir, policies, work = [os.path.abspath(a) for a in sys.argv[1:5]]
    horizon = sys.argv[5] if len(sys.argv) > 5 else None
    scenarios = sorted(os.path.join(scen_dir, f) for f in os.listdir(scen_dir)
                       if f.endswith(".json"))
    batch = os.path.join(scen_dir, "batch")
    if os.path.isdir(batch):
        scenarios += sorted(os.path.join(batch, f) for f in os.listdir(batch)
                            if f.endswith(".json"))
    problems, n = walk_simulations(gov, scenarios, policies, work, horizon)
    for p in problems[:50]:
        print("  " + p)
    print("%d decisions of %d scenarios walked, %d problems" % (n, len(scenarios),
                                                              len(problems)))
    return 1 if problems or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
