#!/usr/bin/env python3
"""A scenario where each of the governor profile's mechanisms of issue 23 matters.

usage: mechanisms.py GOVERNOR POLICIES_DIR WORK_DIR

Each check runs one scenario of tests/scenarios/mechanisms/ under the governor profile twice,
as it is and with the mechanism's option turned off (--set), and asserts that the mechanism
does what it is there for, on the figure it is there for (minutes over the lag SLO, rescales,
decisions executed, subtask-hours), without costing more on the objectives before it (the
SLO, then restarts, then cost). Most scenarios are seeds of the tuning range of a family,
written out with `governor simulate --family F --seeds N --emit DIR`; the others are the
shipped ones with a client that misbehaves.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mechanisms")

# (scenario, option turned off, figure, how much lower it must be with the mechanism).
CHECKS = [
    # A spike is sized at its level once it held for a restart time, not on a diluted mean.
    ("level_shift", "governor.rates.level-shift=0", "minutes_over_slo", 0.5),
    # A source at 90.2% of its capacity under GC pauses is no overload beyond the noise.
    ("bounds_confidence", "governor.bounds.confidence=0", "rescales", 1.0),
    # A ramp is met by steps sized for where it goes, not where it was.
    ("trend", "governor.rates.trend=0", "rescales", 0.75),
    ("trend", "governor.rates.trend=0", "minutes_over_slo", 0.5),
    # Two daily peaks are scaled down in fewer, larger steps.
    ("restart_cost", "governor.scale-down.restart-cost=0", "rescales", 0.8),
    # After the spike the job goes back in one step, not one per scale-down.max-factor.
    ("level_shift", "governor.scale-down.in-one-step=false", "rescales", 0.8),
    # A sink capped by a database is not scaled on and on (EXTERNAL_LIMIT).
    ("external_limit", "governor.scalability.curve=false", "rescales", 0.2),
    ("external_limit", "governor.scalability.curve=false", "subtask_hours", 0.5),
    # A hot key that emerged above the knee is scaled back to it (KEY_PARALLELISM_LIMIT): one
    # restart, which governor.scale-down.restart-cost finds worth the 236 subtask-hours.
    ("key_knee", "governor.scalability.curve=false", "subtask_hours", 0.5),
    # After a 2 h gap the window refills: the 90 s burst that follows is not chased.
    ("refill_after_gap", "governor.window.refill-after-gap=false", "rescales", 0.5),
    # A client that never applies scale-downs is not sent the same one on every sample.
    ("not_applied", "governor.not-applied.max=1000", "executed", 0.1),
]
# The objectives before a check's figure must not get worse (within 1%).
BEFORE = {"minutes_over_slo": [], "rescales": ["minutes_over_slo"],
          "executed": ["minutes_over_slo"],
          "subtask_hours": ["minutes_over_slo", "rescales"]}


def simulate(gov, path, policies, out, sets):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [gov, "simulate", path, "--only", "governor", "--policies", policies, "--out", out]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return p


def figures(gov, name, policies, work, sets):
    out = os.path.join(work, name + ("_off" if sets else ""))
    p = simulate(gov, os.path.join(HERE, name + ".json"), policies, out, sets)
    if p.returncode != 0:
        print("FAIL: %s: governor simulate exited %d: %s" % (name, p.returncode, p.stderr))
        sys.exit(1)
    return json.load(open(os.path.join(out, name + ".json")))["policies"][0]


def main():
    gov, policies, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = []
    cache = {}
    for name, off, figure, ratio in CHECKS:
        if name not in cache:
            cache[name] = figures(gov, name, policies, work, [])
        on = cache[name]
        without = figures(gov, name, policies, work, [off])
        a, b = on[figure], without[figure]
        ok = a <= ratio * b and a < b
        before = ["minutes_over_slo"] if name == "key_knee" else BEFORE[figure]
        for f in before:
            if on[f] > without[f] * 1.01 + 1e-9:
                ok = False
                failures.append("%s: %s %s with it, %s without (%s)" % (name, f, on[f],
                                                                       without[f], off))
        print("%-18s %-45s %-16s %10.3f  without: %10.3f  %s"
              % (name, off, figure, a, b, "ok" if ok else "FAIL"))
        if not ok:
            failures.append("%s: %s %s with it, %s without (%s): not <= %g of it"
                            % (name, figure, a, b, off, ratio))
    # The floor of the utilization target: refused before anything runs, naming the option.
    p = simulate(gov, os.path.join(HERE, "min_target.json"), policies,
                 os.path.join(work, "min_target"), [])
    want = "governor.utilization.min-target"
    if p.returncode != 2 or want not in p.stderr:
        failures.append("min_target: exit %d, %r" % (p.returncode, p.stderr))
    else:
        print("%-18s refused: %s" % ("min_target", p.stderr.strip()))
    if failures:
        print("\nFAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("\nok: every mechanism matters where it should")


if __name__ == "__main__":
    main()
