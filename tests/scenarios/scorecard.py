#!/usr/bin/env python3
"""The scorecard: the governor profile against the flink profile and the HPA-style rule, per
scenario family, on held-out seeds; and the convergence grid.

usage: scorecard.py GOVERNOR [--policies DIR] [--work DIR] [--families a,b,...] [--tuning]
                    [--validation] [--quick | --sanitized] [--check] [--no-grid] [--markdown]
                    [--json FILE]
                    [--set KEY=VALUE ...]

Order of objectives (the README's "Where governor differs"): first the lag SLO, then restarts,
then cost. A change that saves subtask-hours by lagging or restarting more is a regression.
Per family, over its held-out seeds (HELD_OUT), the governor profile's goals:
  slo       mean minutes over the SLO no more than the flink profile's, within the noise
            between seeds: mean(governor - flink) <= max(2 x its standard error, 0.5 min)
            (paired by seed: both profiles see the same job, arrivals and noise);
  rescales  mean rescales no more than the flink profile's;
  cost      mean subtask-hours below the HPA-style rule's.
Options are chosen on the tuning seeds (TUNING, printed with --tuning); the README's table
shows held-out seeds only (HELD_OUT; VALIDATION, printed with --validation, are seeds that were
looked at while the mechanisms were built).

The convergence grid: the steady loads of goals.py's grid (3 graphs x 3 rates x 4 wrong
starts) and the `converge` family's held-out seeds (its job shapes, every vertex started at
0.4 to 2.5 times its size). Goals: at least 90% of runs in one rescale, none over two, no
reversal within an hour, at least 90% within one subtask of the size at the target.

--quick runs QUICK seeds of each family and the grid's every ninth run (the CI form);
--sanitized less still (the ASan build); --check exits 1 when a verdict in CHECKED fails (the
goals that hold with margin), or, without --quick, when any goal fails. Prints how long it
took.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import goals  # noqa: E402  (the convergence grid)

FAMILIES = ["bursts", "gc", "spike", "staircase", "cycle", "ramp", "outage", "hot_key",
            "capped_sink"]
TUNING = (1, 20)
# Seeds 1001..1030 were looked at while the mechanisms were built (a validation range, printed
# with --validation); the held-out seeds were not looked at before the options were fixed.
VALIDATION = (1001, 1030)
HELD_OUT = (2001, 2030)
QUICK = (1001, 1003)
SLO_FLOOR = 0.5  # minutes: below this a mean difference is no difference

# The verdicts the quick form (ctest) asserts: those that hold with margin on QUICK seeds
# (the others are reported). --sanitized (the ASan build, several times slower) runs one seed
# of three families and asserts SANITIZED_CHECKED.
CHECKED = {"bursts": ["cost"], "gc": ["cost"], "spike": ["slo", "rescales"],
           "staircase": ["rescales"], "cycle": ["cost"], "ramp": ["cost"],
           "outage": ["rescales"], "hot_key": ["rescales"], "capped_sink": ["rescales", "cost"]}
SANITIZED = (1001, 1001)
SANITIZED_FAMILIES = ["spike", "staircase", "capped_sink"]
SANITIZED_CHECKED = {"spike": ["rescales"], "staircase": ["rescales"],
                     "capped_sink": ["rescales", "cost"]}


def run(gov, args, timeout=3600):
    p = subprocess.run([gov, "simulate"] + args, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        print("FAIL: governor simulate %s exited %d: %s" % (" ".join(args), p.returncode,
                                                            p.stderr))
        sys.exit(1)
    return p.stdout


def family_runs(gov, fam, seeds, work, policies, sets, only="governor,flink,hpa,fixed"):
    out = os.path.join(work, "%s_%d_%d" % (fam, seeds[0], seeds[1]))
    shutil.rmtree(out, ignore_errors=True)
    args = ["--family", fam, "--seeds", "%d..%d" % seeds, "--out", out, "--only", only,
            "--policies", policies]
    for s in sets:
        args += ["--set", s]
    run(gov, args)
    return json.load(open(os.path.join(out, fam + ".json")))["runs"]


def by_policy(doc):
    return {p["policy"]: p for p in doc["policies"]}


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def stderr(xs):
    n = len(xs)
    if n < 2:
        return 0.0
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1) / n)


def figures(runs):
    """Per policy: mean minutes over SLO, rescales, subtask-hours; and the paired differences
    governor - flink of the minutes over SLO."""
    out = {}
    for pol in ("governor", "flink", "hpa", "fixed"):
        rs = [by_policy(d)[pol] for d in runs if pol in by_policy(d)]
        if rs:
            out[pol] = {"slo": mean([r["minutes_over_slo"] for r in rs]),
                        "rescales": mean([r["rescales"] for r in rs]),
                        "hours": mean([r["subtask_hours"] for r in rs]), "n": len(rs)}
    d = [by_policy(x)["governor"]["minutes_over_slo"] - by_policy(x)["flink"]["minutes_over_slo"]
         for x in runs]
    out["slo_diff"] = mean(d)
    out["slo_se"] = stderr(d)
    return out


def verdicts(f):
    g, fl, h = f["governor"], f["flink"], f.get("hpa")
    tol = max(2 * f["slo_se"], SLO_FLOOR)
    v = {"slo": f["slo_diff"] <= tol,
         "rescales": g["rescales"] <= fl["rescales"] + 1e-9,
         "cost": h is not None and g["hours"] < h["hours"]}
    why = {"slo": "%+.1f min (noise %.1f)" % (f["slo_diff"], tol),
           "rescales": "%.2f vs %.2f" % (g["rescales"], fl["rescales"]),
           "cost": "%.1f vs %.1f" % (g["hours"], h["hours"] if h else float("nan"))}
    return v, why


def cell(p):
    return "%.1f / %.2f / %.1f" % (p["slo"], p["rescales"], p["hours"])


def table(hdr, rows, md):
    goals.table(hdr, rows, md)


def grid(gov, policies, work, every, sets, conv_seeds):
    """The convergence grid: goals.py's 36 runs (every `every`-th) and the converge family's
    seeds."""
    paths = goals.grid_scenarios(gov, policies, os.path.join(work, "grid"))[::every]
    out = os.path.join(work, "grid_out")
    extra = ["--only", "governor,flink,fixed"]
    for s in sets:
        extra += ["--set", s]
    goals.simulate(gov, paths, policies, out, extra)
    docs = [(os.path.basename(p)[:-5], json.load(open(os.path.join(out, os.path.basename(p)))))
            for p in paths]
    docs += [(d["scenario"], d) for d in
             family_runs(gov, "converge", conv_seeds, work, policies, sets,
                         only="governor,flink,fixed")]
    res = {}
    for pol in ("governor", "flink"):
        one = two = rev_total = settled = worst = 0
        rows = []
        for name, doc in docs:
            n, rev, ok, off = goals.convergence(doc, pol)
            one += n == 1
            two += n <= 2
            worst = max(worst, n)
            rev_total += rev
            settled += ok
            if pol == "governor" and (n != 1 or rev or not ok):
                rows.append([name, str(n), str(rev), ", ".join(off) or "settled"])
        res[pol] = {"runs": len(docs), "one": one, "two": two, "worst": worst,
                    "reversals": rev_total, "settled": settled, "rows": rows}
    return res


def main():
    argv = sys.argv[1:]
    opts = {"--policies": os.path.join(HERE, "..", "..", "policies"),
            "--work": os.path.join(os.getcwd(), "scorecard-out"), "--families": None,
            "--json": None}
    sets, flags, pos = [], set(), []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in opts and i + 1 < len(argv):
            opts[a] = argv[i + 1]
            i += 2
        elif a == "--set" and i + 1 < len(argv):
            sets.append(argv[i + 1])
            i += 2
        elif a.startswith("--"):
            flags.add(a)
            i += 1
        else:
            pos.append(a)
            i += 1
    if len(pos) != 1:
        print(__doc__)
        sys.exit(2)
    gov = pos[0]
    quick, md, check = "--quick" in flags, "--markdown" in flags, "--check" in flags
    sanitized = "--sanitized" in flags
    work, policies = opts["--work"], opts["--policies"]
    fams = opts["--families"].split(",") if opts["--families"] else \
        SANITIZED_FAMILIES if sanitized else FAMILIES
    held = SANITIZED if sanitized else QUICK if quick else HELD_OUT
    checked = SANITIZED_CHECKED if sanitized else CHECKED
    quick = quick or sanitized
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    report = {"held_out": list(held), "tuning": list(TUNING), "families": {}}
    failures = []
    sections = [("held-out", held)]
    if "--validation" in flags:
        sections.insert(0, ("validation", VALIDATION))
    if "--tuning" in flags:
        sections.insert(0, ("tuning", TUNING))
    for label, seeds in sections:
        rows = []
        for fam in fams:
            f = figures(family_runs(gov, fam, seeds, work, policies, sets))
            v, why = verdicts(f)
            if label == "held-out":
                report["families"][fam] = {"figures": f, "verdicts": v}
                for goal, ok in v.items():
                    if ok:
                        continue
                    if not quick or goal in checked.get(fam, ()):
                        failures.append("%s: %s %s" % (fam, goal, why[goal]))
            marks = ["%s %s" % (goal, "met" if ok else "MISSED (%s)" % why[goal])
                     for goal, ok in v.items()]
            rows.append([fam, str(f["governor"]["n"]), cell(f["governor"]), cell(f["flink"]),
                         cell(f["hpa"]) if "hpa" in f else "-", "; ".join(marks)])
        print("\n%s seeds %d..%d (mean minutes over SLO / rescales / subtask-hours):"
              % (label.capitalize(), seeds[0], seeds[1]))
        table(["family", "seeds", "governor", "flink", "hpa", "goals"], rows, md)
    if "--no-grid" not in flags:
        conv = SANITIZED if sanitized else (1001, 1003) if quick else HELD_OUT
        g = grid(gov, policies, work, 18 if sanitized else 9 if quick else 1, sets, conv)
        report["grid"] = {k: {x: y for x, y in v.items() if x != "rows"} for k, v in g.items()}
        for pol in ("governor", "flink"):
            r = g[pol]
            print("\nConvergence grid, %s profile: %d runs; one rescale in %d (%.0f%%), at most "
                  "two in %d, most %d; %d reversals within an hour; within one subtask of the "
                  "target in %d (%.0f%%)" % (pol, r["runs"], r["one"], 100.0 * r["one"] / r["runs"],
                                             r["two"], r["worst"], r["reversals"], r["settled"],
                                             100.0 * r["settled"] / r["runs"]))
        r = g["governor"]
        if r["rows"]:
            table(["run", "rescales", "reversals", "end"], r["rows"], md)
        if r["one"] < 0.9 * r["runs"] and not quick:
            failures.append("grid: one rescale in %d of %d runs" % (r["one"], r["runs"]))
        if r["worst"] > 2:
            failures.append("grid: a run took %d rescales" % r["worst"])
        if r["reversals"]:
            failures.append("grid: %d reversals" % r["reversals"])
        if r["settled"] < 0.9 * r["runs"] and not quick:
            failures.append("grid: within one subtask in %d of %d runs" % (r["settled"], r["runs"]))
    if opts["--json"]:
        json.dump(report, open(opts["--json"], "w"), indent=1)
    print("\n%.0f s" % (time.time() - t0))
    if failures:
        print("\nGoals missed:\n  " + "\n  ".join(failures))
        if check:
            sys.exit(1)
    else:
        print("\nok: every goal met")


if __name__ == "__main__":
    main()
