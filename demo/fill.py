#!/usr/bin/env python3
"""fill.py - the demo: fills a running governor with a day of history from the simulator's
scenarios, so that the dashboard (GET /) has something to show over time.

It runs `governor simulate` on the scenarios with --trace, then posts every traced sample to
the server as the job "<scenario>-<policy>", shifted in time so that each history ends now,
with the scenario's options and its SLO as governor.slo.lag. Python 3 stdlib only.

usage: demo/fill.py [--server http://127.0.0.1:8080] [--token TOKEN]
                    [--governor ./build/governor] [--policies ./policies]
                    [--policy governor,flink] [SCENARIO.json ...]
Default scenarios: tests/scenarios/daily.json (24 h) and tests/scenarios/ramp.json (12 h); under
the flink policy the ramp's scale-ups come late (its upper utilization bound is 1.0), which the
tuning advice reports.
Then open the server's address in a browser and pick a job."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def post(server, token, path, body):
    req = urllib.request.Request(server + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="http://127.0.0.1:8080")
    ap.add_argument("--token", default=os.environ.get("GOVERNOR_TOKEN", ""))
    ap.add_argument("--governor", default=os.path.join(ROOT, "build", "governor"))
    ap.add_argument("--policies", default=os.path.join(ROOT, "policies"))
    ap.add_argument("--policy", default="governor,flink")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a job option, for the simulation and the server alike")
    ap.add_argument("--suffix", default="", help="appended to the job names")
    ap.add_argument("scenarios", nargs="*",
                    default=[os.path.join(ROOT, "tests", "scenarios", n)
                             for n in ("daily.json", "ramp.json")])
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="governor-demo-")
    subprocess.run([a.governor, "simulate", *a.scenarios, "--policies", a.policies,
                    "--only", a.policy, "--trace", tmp, "--out", tmp] +
                   [x for kv in a.set for x in ("--set", kv)], check=True,
                   stdout=subprocess.DEVNULL)
    now = int(time.time() * 1000) // 60000 * 60000
    for path in a.scenarios:
        sc = json.load(open(path))
        config = dict(sc.get("config") or {})
        if sc.get("slo"):
            config["governor.slo.lag"] = sc["slo"]
        for kv in a.set:
            k, _, v = kv.partition("=")
            config[k] = v
        for policy in a.policy.split(","):
            trace = os.path.join(tmp, "%s.%s.jsonl" % (sc["name"], policy))
            samples = [json.loads(x) for x in open(trace) if x.strip()]
            job = "%s-%s%s" % (sc["name"], policy, a.suffix)
            shift = now - samples[-1]["at"]
            cfg = dict(config, **({"governor.profile": "flink"} if policy == "flink" else {}))
            n = 0
            for x in samples:
                x.pop("job", None)
                x.pop("decision", None)
                x["at"] += shift
                x["running_since"] += shift
                x["config"] = cfg
                st, body = post(a.server, a.token, "/v1/jobs/%s/metrics" % job, x)
                if st != 200:
                    print("%s: %s %s" % (job, st, body), file=sys.stderr)
                    return 1
                n += 1
            print("%s: %d samples, %s to now" % (job, n, time.strftime(
                "%Y-%m-%d %H:%M UTC", time.gmtime((samples[0]["at"]) / 1000))))
    print("open %s/ and pick a job" % a.server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
