#!/usr/bin/env python3
"""The data-driven case runner: every tests/cases/<case>/ holds trace.jsonl (samples, one
request body per line plus "job"), an optional `config` (key = value, the server layer), an
optional `policies/` directory (Lua plugins, passed as --policies) and
expected.jsonl (hand-written: {"line": N, ...} objects, each a subset that decision N must
match). Each trace is replayed three times through `governor replay`: plainly, again (the
output must be byte-identical: decisions are deterministic), and with --roundtrip (the job
state goes through JSON before every sample: still byte-identical). Every decision of the
trace, not only the expected ones, must be coherent: its action agrees with its vertices'
moves and reasons, and its messages with what it decided (agree.py).

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


from agree import Walker  # every reason and message against its action (agree.py)


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
    with open(os.path.join(d, "trace.jsonl")) as f:
        samples = [json.loads(l) for l in f if l.strip()]
    walker = Walker()
    for n, dec in enumerate(lines, 1):
        if "error" not in dec:
            sample = samples[n - 1] if n <= len(samples) else {}
            problems += ["line %d: %s" % (n, m) for m in walker.feed(sample, dec)]
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
