#!/usr/bin/env python3
"""The governor profile's goals, measured with `governor simulate`, as a table and a verdict.

usage: goals.py GOVERNOR POLICIES_DIR WORK_DIR [--scenarios DIR] [--no-grid] [--no-shipped]
                [--flink] [--markdown] [--quick]

1. The shipped scenarios (tests/scenarios/*.json, or --scenarios DIR), every policy. Per
   scenario, under the governor profile: no more minutes over the lag SLO than the fixed
   deployment (hot_key: within 2%), no more rescales than the flink profile, and fewer
   subtask-hours than the hpa baseline unless the hpa baseline buys them with more minutes
   over the SLO (the order of objectives: the SLO, then restarts, then cost; a cheaper run
   that lags more is not a better one). Where a goal is known to be out of reach in the model
   (KNOWN_MISSES, each with its reason in the README), the test holds the figure at most at
   the recorded bound instead, so that it cannot get worse unnoticed.
2. The convergence grid: steady loads started at the wrong parallelism (GRAPHS x RATES x
   STARTS runs, generated into WORK_DIR/grid). Per run: the rescales, the reversals (a vertex
   going up then down, or down then up, within an hour), and whether every vertex ends within
   one subtask of its size at the utilization target (the fixed deployment's size: the
   smallest parallelism that serves the load at the target). Goals: one rescale in at least
   90% of runs, never more than two, no reversal, every run settled.

--flink adds the flink profile's grid table; --quick (the sanitized build) runs every ninth
grid run and checks each run's rescales and reversals, not the shares.

Prints the tables and exits 1 when a goal (or a recorded bound) is missed.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Goals out of reach so far, each with the bound the test holds instead (the README's "Where
# governor differs" gives the figures and why): a regression past a bound fails like a goal.
KNOWN_MISSES = {
    "ramp": {"rescales": 4},            # goal: <= flink's 3
    "steady": {"subtask_hours": 103.1},  # goal: < hpa's 102.3
}
GRID_KNOWN = {"settled": 33}  # goal: every run (of 36)

# ------------------------------------------------------------------ the grid -- #

# Three graphs, each a list of vertices as the scenario format takes them, without the
# arrival (a constant rate, set per run) and the parallelism (set per run).
GRAPHS = {
    "chain": [
        {"id": "source", "partitions": 48, "capacity": 6000},
        {"id": "parse", "capacity": 2500, "scaling": 0.95,
         "inputs": [{"from": "source", "ship": "REBALANCE"}]},
        {"id": "aggregate", "capacity": 4000, "scaling": 0.9, "selectivity": 0.1,
         "inputs": [{"from": "parse", "ship": "HASH"}]},
        {"id": "sink", "capacity": 800, "inputs": [{"from": "aggregate", "ship": "REBALANCE"}]},
    ],
    "pair": [
        {"id": "source", "partitions": 32, "capacity": 5000},
        {"id": "window", "capacity": 3000, "max_parallelism": 120,
         "inputs": [{"from": "source", "ship": "HASH"}]},
    ],
    "diamond": [
        {"id": "source", "partitions": 64, "capacity": 9000},
        {"id": "parse", "capacity": 3000, "scaling": 0.97,
         "inputs": [{"from": "source", "ship": "REBALANCE"}]},
        {"id": "enrich", "capacity": 1500, "scaling": 0.9, "selectivity": 0.5,
         "inputs": [{"from": "parse", "ship": "HASH"}]},
        {"id": "count", "capacity": 5000, "selectivity": 0.05,
         "inputs": [{"from": "parse", "ship": "HASH"}]},
        {"id": "sink", "capacity": 2000,
         "inputs": [{"from": "enrich", "ship": "REBALANCE"}, {"from": "count", "ship": "FORWARD"}]},
    ],
}
RATES = {"chain": [3000, 9000, 24000], "pair": [2000, 7000, 20000],
         "diamond": [4000, 12000, 30000]}
# The start: each vertex at its size at the target times this factor (at least 1, and not
# the size itself).
STARTS = [0.4, 0.7, 1.6, 2.5]
GRID_HORIZON = "4 h"


def grid_scenarios(gov, policies, work):
    """Writes the grid's scenarios and returns their paths. Each vertex's size at the target
    comes from the fixed baseline of a first run (the smallest parallelism serving the load at
    the target utilization)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    paths = []
    probe = os.path.join(work, "probe")
    os.makedirs(probe)
    probes = []
    for g, vs in GRAPHS.items():
        for rate in RATES[g]:
            sc = scenario(g, vs, rate, None, "probe_%s_%d" % (g, rate))
            path = os.path.join(probe, sc["name"] + ".json")
            json.dump(sc, open(path, "w"))
            probes.append((g, rate, path))
    out = os.path.join(work, "probe_out")
    simulate(gov, [p for _, _, p in probes], policies, out, ["--only", "fixed", "--horizon", "60"])
    for g, rate, path in probes:
        doc = json.load(open(os.path.join(out, os.path.basename(path))))
        size = {v: x["last"] for v, x in doc["policies"][0]["parallelism"].items()}
        for f in STARTS:
            start = {}
            for v, n in size.items():
                s = max(1, int(round(n * f)))
                if s == n:
                    s = n - 1 if f < 1 and n > 1 else n + 1
                start[v] = s
            sc = scenario(g, GRAPHS[g], rate, start, "grid_%s_%d_x%s" % (g, rate, f))
            path = os.path.join(work, sc["name"] + ".json")
            json.dump(sc, open(path, "w"), indent=1)
            paths.append(path)
    return paths


def scenario(g, vs, rate, start, name):
    out = []
    for v in vs:
        x = dict(v)
        x["parallelism"] = start[v["id"]] if start else 1
        if "inputs" not in x:
            x["arrival"] = [{"type": "constant", "rate": rate}]
        out.append(x)
    return {"name": name, "about": "%s graph, %d records/s, started at the wrong size" % (g, rate),
            "horizon": GRID_HORIZON, "interval": "30 s", "restart": "90 s", "vertices": out}


def simulate(gov, paths, policies, out, extra):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [gov, "simulate"] + paths + ["--policies", policies, "--out", out] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        print("FAIL: %s exited %d: %s" % (" ".join(cmd[:3]), p.returncode, p.stderr))
        sys.exit(1)
    return p.stdout


def runs_of(doc):
    return {p["policy"]: p for p in doc["policies"]}


def convergence(doc, policy):
    """rescales, reversals, settled and the vertices off their target size, of one run."""
    runs = runs_of(doc)
    run, fixed = runs[policy], runs["fixed"]
    reversals = 0
    off = []
    for v, x in run["parallelism"].items():
        prev_p, prev_dir, prev_t = x["first"], 0, None
        for t, p in x["steps"]:
            d = 1 if p > prev_p else -1
            if prev_dir and d != prev_dir and t - prev_t < 3600:
                reversals += 1
            prev_p, prev_dir, prev_t = p, d, t
        want = fixed["parallelism"][v]["last"]
        if abs(x["last"] - want) > 1:
            off.append("%s %d (target %d)" % (v, x["last"], want))
    return run["rescales"], reversals, not off, off


# --------------------------------------------------------------- the checks -- #

def main():
    argv = sys.argv[1:]
    scen_dir = HERE
    if "--scenarios" in argv:
        k = argv.index("--scenarios")
        scen_dir = argv[k + 1]
        del argv[k:k + 2]
    args = [a for a in argv if not a.startswith("--")]
    flags = [a for a in argv if a.startswith("--")]
    gov, policies, work = args[:3]
    md = "--markdown" in flags
    failures = []
    if "--no-shipped" not in flags:
        paths = sorted(glob.glob(os.path.join(scen_dir, "*.json")))
        out = os.path.join(work, "shipped")
        simulate(gov, paths, policies, out, [])
        print("Shipped scenarios (minutes over SLO / subtask-hours / rescales):")
        hdr = ["scenario", "governor", "flink", "hpa", "fixed", "goals"]
        rows = []
        for path in paths:
            name = json.load(open(path)).get("name") or os.path.basename(path)[:-5]
            doc = json.load(open(os.path.join(out, name + ".json")))
            r = runs_of(doc)
            g, fl, h, fx = r["governor"], r["flink"], r.get("hpa"), r["fixed"]
            miss, known_miss = [], []
            known = KNOWN_MISSES.get(name, {})

            def judge(key, bad, text):
                if not bad:
                    return
                if key in known and g[key] <= known[key] + 1e-9:
                    known_miss.append("%s (known; bound %g)" % (text, known[key]))
                else:
                    miss.append(text)

            slo_bound = fx["minutes_over_slo"] * (1.02 if name == "hot_key" else 1.0)
            judge("minutes_over_slo", g["minutes_over_slo"] > slo_bound + 1e-9,
                  "SLO %.1f > %.1f" % (g["minutes_over_slo"], slo_bound))
            if h:
                cheaper_by_lag = h["minutes_over_slo"] > g["minutes_over_slo"] + 1e-9
                judge("subtask_hours", g["subtask_hours"] >= h["subtask_hours"] and
                      not cheaper_by_lag,
                      "subtask-h %.1f >= hpa %.1f" % (g["subtask_hours"], h["subtask_hours"]))
            judge("rescales", g["rescales"] > fl["rescales"],
                  "rescales %d > flink %d" % (g["rescales"], fl["rescales"]))
            cell = lambda p: "-" if not p else "%.1f / %.1f / %d" % (
                p["minutes_over_slo"], p["subtask_hours"], p["rescales"])
            rows.append([name, cell(g), cell(fl), cell(h), cell(fx),
                         "; ".join(miss + known_miss) or "met"])
            failures += ["%s: %s" % (name, m) for m in miss]
        table(hdr, rows, md)
    if "--no-grid" not in flags:
        paths = grid_scenarios(gov, policies, os.path.join(work, "grid"))
        if "--quick" in flags:  # the sanitized build: a sample of the grid, every goal checked
            paths = paths[::9]
        out = os.path.join(work, "grid_out")
        pols = "governor,flink,fixed" if "--flink" in flags else "governor,fixed"
        simulate(gov, paths, policies, out, ["--only", pols])
        for policy in pols.split(",")[:-1]:
            one = two = 0
            worst = rev_total = settled = 0
            rows = []
            for path in paths:
                name = os.path.basename(path)[:-5]
                doc = json.load(open(os.path.join(out, name + ".json")))
                n, rev, ok, off = convergence(doc, policy)
                one += n == 1
                two += n <= 2
                worst = max(worst, n)
                rev_total += rev
                settled += ok
                if n != 1 or rev or not ok:
                    rows.append([name, str(n), str(rev), ", ".join(off) or "settled"])
            total = len(paths)
            print("\nConvergence grid, %s profile: %d runs; one rescale in %d (%.0f%%), at most "
                  "two in %d, most %d; %d reversals within an hour; settled within one subtask "
                  "in %d" % (policy, total, one, 100.0 * one / total, two, worst, rev_total,
                             settled))
            if rows:
                table(["run", "rescales", "reversals", "end"], rows, md)
            if policy == "governor":
                if one < 0.9 * total and "--quick" not in flags:
                    failures.append("grid: one rescale in %d of %d runs (< 90%%)" % (one, total))
                if worst > 2:
                    failures.append("grid: a run took %d rescales" % worst)
                if rev_total:
                    failures.append("grid: %d reversals" % rev_total)
                if settled < min(total, GRID_KNOWN.get("settled", total)) and "--quick" not in flags:
                    failures.append("grid: %d runs not settled" % (total - settled))
    if failures:
        print("\nFAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("\nok: every goal met")


def table(hdr, rows, md):
    if md:
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(hdr)]
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
    for r in rows:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)))


if __name__ == "__main__":
    main()
