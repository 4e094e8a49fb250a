#!/usr/bin/env python3
"""The data-driven case runner: every tests/cases/<case>/ holds trace.jsonl (samples, one
request body per line plus "job"), an optional `config` (key = value, the server layer), an
optional `policies/` directory (Lua plugins, passed as --policies) and
expected.jsonl (hand-written: {"line": N, ...} objects, each a subset that decision N must
match). Each trace is replayed three times through `governor replay`: plainly, again (the
output must be byte-identical: decisions are deterministic), and with --roundtrip (the job
state goes through JSON before every sample: still byte-identical). Every decision of the
trace, not only the expected ones, must be coherent: its action agrees with its vertices'
moves and reasons (agreement() below).

usage: run.py GOVERNOR_BINARY [CASE ...]
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def subset(exp, act, path):
    """Returns a list of mismatch descriptions (empty when exp is a subset of act)."""
    if isinstance(exp, dict):
        if not isinstance(act, dict):
            return [f"{path}: expected an object, got {act!r}"]
        out = []
        for k, v in exp.items():
            if k not in act:
                out.append(f"{path}.{k}: missing (expected {v!r})")
            else:
                out += subset(v, act[k], f"{path}.{k}")
        return out
    if isinstance(exp, list):
        if not isinstance(act, list) or len(exp) != len(act):
            return [f"{path}: expected {exp!r}, got {act!r}"]
        out = []
        for i, (e, a) in enumerate(zip(exp, act)):
            out += subset(e, a, f"{path}[{i}]")
        return out
    if isinstance(exp, float) or (isinstance(exp, int) and isinstance(act, float)):
        if isinstance(act, (int, float)) and not isinstance(act, bool) and \
                abs(exp - act) <= 1e-9 * max(1.0, abs(exp)):
            return []
        return [f"{path}: expected {exp!r}, got {act!r}"]
    if exp != act or type(exp) is not type(act):
        return [f"{path}: expected {exp!r}, got {act!r}"]
    return []


UP_REASONS = {"HIGH_BACKLOG", "HIGH_UTILIZATION", "KEY_PARALLELISM_LIMIT", "EXTERNAL_LIMIT"}
# LIMIT_REACHED: idle source subtasks; the two limits: a vertex back to its knee.
DOWN_REASONS = {"LOW_UTILIZATION", "LIMIT_REACHED", "KEY_PARALLELISM_LIMIT", "EXTERNAL_LIMIT"}
MOVE_REASONS = {"HIGH_BACKLOG", "HIGH_UTILIZATION", "LOW_UTILIZATION"}
# Job reasons an action cannot have.
NOT_FOR = {"SCALE_UP": {"LOW_UTILIZATION", "SCALE_DOWN_DELAYED", "WITHIN_TARGET"},
           "SCALE_DOWN": {"HIGH_BACKLOG", "HIGH_UTILIZATION", "WITHIN_TARGET"},
           "SCALE": {"SCALE_DOWN_DELAYED", "WITHIN_TARGET"},
           "NO_CHANGE": MOVE_REASONS}


def agreement(d):
    """What is incoherent in decision d (a list of descriptions, empty when none): an action
    that contradicts its reason or its vertices' moves, a vertex that moves against its own
    reason (a scale-up labelled LOW_UTILIZATION, say), a parallelism map that is not the
    vertices' targets, an executed NO_CHANGE."""
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
    for v in vs:
        if "CHANGED_BY_EXECUTOR" in v.get("constraints", []):
            continue  # a plugin's change keeps the native reason
        move = "%s %d -> %d with reason %s" % (v["id"], v["current"], v["target"], v["reason"])
        if v["target"] > v["current"] and v["reason"] not in UP_REASONS:
            out.append(move)
        elif v["target"] < v["current"] and v["reason"] not in DOWN_REASONS:
            out.append(move)
        elif v["target"] == v["current"] and v["reason"] in MOVE_REASONS:
            out.append(move)
    return out


def replay(gov, case_dir, *extra):
    cmd = [gov, "replay", os.path.join(case_dir, "trace.jsonl")]
    cfg = os.path.join(case_dir, "config")
    if os.path.exists(cfg):
        cmd += ["--config", cfg]
    pol = os.path.join(case_dir, "policies")
    if os.path.isdir(pol):
        cmd += ["--policies", pol]
    cmd += list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def run_case(gov, name):
    d = os.path.join(HERE, name)
    rc, out, err = replay(gov, d)
    if rc != 0 and not out:
        return [f"replay failed (exit {rc}): {err.strip()}"]
    problems = []
    _, again, _ = replay(gov, d)
    if again != out:
        problems.append("a second replay printed different decisions")
    _, rt, rterr = replay(gov, d, "--roundtrip")
    if rt != out:
        problems.append("decisions changed when the state went through JSON: " + rterr.strip())
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    for n, dec in enumerate(lines, 1):
        if "error" not in dec:
            problems += ["line %d: %s" % (n, m) for m in agreement(dec)]
    with open(os.path.join(d, "expected.jsonl")) as f:
        for raw in f:
            if not raw.strip():
                continue
            exp = json.loads(raw)
            n = exp.pop("line")
            if n < 1 or n > len(lines):
                problems.append(f"line {n}: no such decision ({len(lines)} printed)")
                continue
            problems += [f"line {n}: {m}" for m in subset(exp, lines[n - 1], "")]
    return problems


def main():
    gov = os.path.abspath(sys.argv[1])
    names = sys.argv[2:] or sorted(
        n for n in os.listdir(HERE)
        if os.path.exists(os.path.join(HERE, n, "expected.jsonl")))
    passed = failed = 0
    for name in names:
        problems = run_case(gov, name)
        if problems:
            failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print(f"  {p}")
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
