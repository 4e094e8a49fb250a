#!/usr/bin/env python3
"""Runs `governor simulate` on one shipped scenario and checks what it leaves.

usage: run.py GOVERNOR SCENARIO.json POLICIES_DIR WORK_DIR [HORIZON]
       run.py GOVERNOR docs/simulate.md POLICIES_DIR WORK_DIR [HORIZON]   (the page's example)

Twice, into two directories: the command exits 0, prints the table header and one row per
policy (governor, flink, hpa, fixed), writes <name>.json with every figure of every policy and
<name>.svg that parses as an SVG document; both runs write the same JSON (deterministic for
a seed). HORIZON (e.g. "2 h") shortens the run for the sanitized build.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

POLICIES = ["governor", "flink", "hpa", "fixed"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(gov, scenario, policies, out, horizon):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [gov, "simulate", scenario, "--policies", policies, "--out", out]
    if horizon:
        cmd += ["--horizon", horizon]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    return p.stdout


def readme_example(readme, work):
    """The JSON block of docs/simulate.md's "Scenario format" section, as a scenario file."""
    text = open(readme).read()
    i = re.search(r"(?m)^#+ Scenario format", text).start()
    m = re.search(r"```json\n(.*?)```", text[i:], re.S)
    if not m:
        fail("no JSON example under docs/simulate.md's Scenario format")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "readme_example.json")
    with open(path, "w") as f:
        f.write(m.group(1))
    return path


def main():
    gov, scenario, policies, work = sys.argv[1:5]
    horizon = sys.argv[5] if len(sys.argv) > 5 else None
    if scenario.endswith(".md"):
        scenario = readme_example(scenario, work)
    name = json.load(open(scenario)).get("name") or os.path.basename(scenario)[:-5]
    docs = []
    for k in range(2):
        out = os.path.join(work, "run%d" % k)
        table = run(gov, scenario, policies, out, horizon).splitlines()
        if not table or not table[0].startswith("scenario"):
            fail("no table header: %r" % table[:1])
        rows = [r.split() for r in table[1:]]
        if [r[1] for r in rows] != POLICIES or any(r[0] != name for r in rows):
            fail("table rows: %r" % table)
        text = open(os.path.join(out, name + ".json")).read()
        doc = json.loads(text)
        docs.append(text)
        got = [p["policy"] for p in doc["policies"]]
        if got != POLICIES:
            fail("policies in the report: %r" % got)
        for p in doc["policies"]:
            for key in ("max_lag_s", "p95_lag_s", "minutes_over_slo", "subtask_hours"):
                v = p[key]
                if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                    fail("%s.%s = %r" % (p["policy"], key, v))
            if p["p95_lag_s"] > p["max_lag_s"] or p["subtask_hours"] <= 0:
                fail("%s: inconsistent figures %r" % (p["policy"], p))
            if p["policy"] == "fixed" and (p["rescales"] or p["decisions"]):
                fail("the fixed deployment decided: %r" % p)
            if p["policy"] != "fixed":
                expect = -(-doc["horizon_s"] // doc["interval_s"])
                if p["decisions"] != expect:
                    fail("%s: %d decisions, expected one per interval: %d"
                         % (p["policy"], p["decisions"], expect))
        root = ET.parse(os.path.join(out, name + ".svg")).getroot()
        if root.tag != "{http://www.w3.org/2000/svg}svg":
            fail("the chart's root is %s" % root.tag)
        if not root.findall(".//{http://www.w3.org/2000/svg}polyline"):
            fail("the chart has no series")
    if docs[0] != docs[1]:
        fail("two runs of the same seed differ")
    print("ok: %s (%d policies, deterministic)" % (name, len(POLICIES)))


if __name__ == "__main__":
    main()
