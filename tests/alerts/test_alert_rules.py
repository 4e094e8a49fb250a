"""docs/operations.md's example alert rules (between <!-- alert-rules:begin --> and :end -->) pass
`promtool check rules`, and `promtool test rules` against series scraped from a real governor:
a job whose backlog is above its governor.slo.lag and which stopped reporting pages twice, a
job that reports and keeps within its objective pages never, and a governor that does not
answer its scrape pages. Exit 77 (skipped) without promtool."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
import dashdata  # noqa: E402
import gov  # noqa: E402

PROMTOOL = shutil.which("promtool")
if not PROMTOOL:
    print("promtool not installed (apt-get install prometheus): skipped")
    sys.exit(77)

c = gov.Checks()
with open(os.path.join(ROOT, "docs", "operations.md")) as f:
    readme = f.read()
m = re.search(r"<!-- alert-rules:begin -->\s*(?:<!--[^\n]*-->\s*)?```yaml\n(.*?)```\s*<!-- alert-rules:end -->",
              readme, re.S)
c.check(m is not None, "docs/operations.md holds the alert rules block")
rules = m.group(1)
tmp = tempfile.mkdtemp(prefix="governor-alerts-")
rules_path = os.path.join(tmp, "rules.yml")
with open(rules_path, "w") as f:
    f.write(rules)
r = subprocess.run([PROMTOOL, "check", "rules", rules_path], capture_output=True, text=True)
c.check(r.returncode == 0, "promtool check rules: " + r.stdout + r.stderr)

# A real governor: "late" replays the backlog case in 2025 (600 s of backlog, SLO 2 min, its
# last sample a year old); "fresh" sends the same samples ending now, with an SLO of 1 h.
s = gov.Server()
dashdata.CONFIG["governor.slo.lag"] = "2 min"
dashdata.post_trace(s, job="late")
dashdata.CONFIG["governor.slo.lag"] = "1 h"
lines = [json.loads(x) for x in open(dashdata.TRACE) if x.strip()]
now = int(time.time() * 1000)
shift = now - lines[-1]["at"]
for x in lines:
    x.pop("job", None)
    x["at"] += shift
    x["running_since"] += shift
    x["config"] = dashdata.CONFIG
    st, body, _ = s.req("POST", "/v1/jobs/fresh/metrics", x)
    c.check(st == 200, "fresh sample: %s" % body)
st, text, _ = s.req("GET", "/metrics")
c.check(st == 200, "scrape")
c.check(s.stop() == 0, "clean exit")

# The scraped governor_job_* samples, with the labels Prometheus adds to a scraped target.
target = 'instance="governor:8080",job="governor"'
series = {}
for line in text.splitlines():
    mm = re.match(r'^(governor_job_\w+)\{job_id="([^"]+)"\} (\S+)$', line)
    if mm:
        series[(mm.group(1), mm.group(2))] = float(mm.group(3))
for k in [("governor_job_slo_breach", "late"), ("governor_job_slo_breach", "fresh"),
          ("governor_job_seconds_since_last_sample", "late"),
          ("governor_job_seconds_since_last_sample", "fresh")]:
    c.check(k in series, "scraped %s{job_id=%s}" % k)
c.check(series.get(("governor_job_slo_breach", "late")) == 1, "late breaches its SLO")
c.check(series.get(("governor_job_slo_breach", "fresh")) == 0, "fresh keeps its SLO")
c.check(series.get(("governor_job_seconds_since_last_sample", "fresh"), 1e9) < 60,
        "fresh reported just now")

# 30 minutes of scrapes at 1/min: gauges hold their value, except that the age of the last
# sample grows by 60 s a minute for the job that stopped (late) and stays for the one that
# goes on reporting (fresh, a sample every 30 s).
inputs = []
for (name, job), v in sorted(series.items()):
    grow = 60 if name == "governor_job_seconds_since_last_sample" and job == "late" else 0
    inputs.append({"series": '%s{%s,job_id="%s"}' % (name, target, job),
                   "values": "%g+%gx30" % (v, grow)})
inputs.append({"series": "up{%s}" % target, "values": "1x10 0x20"})


def alert(name, job):
    summary = {"GovernorJobDataTooOld":
               "Job %s: its backlog has been above governor.slo.lag for 10 minutes",
               "GovernorJobStoppedReporting": "Job %s: no sample for more than 10 minutes"}
    return {"exp_labels": {"severity": "page", "instance": "governor:8080", "job": "governor",
                           "job_id": job},
            "exp_annotations": {"summary": summary[name] % job}}


tests = {"rule_files": [rules_path], "evaluation_interval": "1m", "tests": [{
    "interval": "1m",
    "input_series": inputs,
    "alert_rule_test": [
        # Not yet: each rule waits out its `for`.
        {"eval_time": "4m", "alertname": "GovernorJobDataTooOld", "exp_alerts": []},
        {"eval_time": "4m", "alertname": "GovernorJobStoppedReporting", "exp_alerts": []},
        {"eval_time": "12m", "alertname": "GovernorJobDataTooOld",
         "exp_alerts": [alert("GovernorJobDataTooOld", "late")]},
        {"eval_time": "12m", "alertname": "GovernorJobStoppedReporting",
         "exp_alerts": [alert("GovernorJobStoppedReporting", "late")]},
        {"eval_time": "12m", "alertname": "GovernorDown", "exp_alerts": []},
        {"eval_time": "20m", "alertname": "GovernorDown", "exp_alerts": [{
            "exp_labels": {"severity": "page", "instance": "governor:8080", "job": "governor"},
            "exp_annotations": {
                "summary": "governor does not answer its scrape: no job gets decisions"}}]},
    ]}]}
tests_path = os.path.join(tmp, "tests.yml")
with open(tests_path, "w") as f:
    json.dump(tests, f, indent=1)  # JSON is YAML
r = subprocess.run([PROMTOOL, "test", "rules", tests_path], capture_output=True, text=True)
c.check(r.returncode == 0, "promtool test rules:\n" + r.stdout + r.stderr)
shutil.rmtree(tmp, ignore_errors=True)
c.done()
