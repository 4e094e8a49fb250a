"""dashdata.py - the data of the dashboard tests (tests/api/test_dashboard.py,
tests/dashboard/test_dashboard_browser.py): the backlog case's trace (tests/cases/backlog: six
COLLECTING_METRICS, then src scales 2 -> 4 for HIGH_BACKLOG), posted to a real server."""
import json
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRACE = os.path.join(ROOT, "tests", "cases", "backlog", "trace.jsonl")
# The case's config file, sent as the samples' own config layer.
CONFIG = {"job.autoscaler.stabilization.interval": "1 min", "job.autoscaler.metrics.window": "2 min"}


def post_trace(s, path=TRACE, job=None, headers=None):
    """POSTs every line of a trace to server s (gov.Server); returns the decisions in order."""
    out = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            sample = json.loads(line)
            name = job or sample.pop("job")
            sample.pop("job", None)
            sample["config"] = CONFIG
            st, body, _ = s.req("POST", "/v1/jobs/%s/metrics" % name, sample, headers=headers)
            assert st == 200, body
            out.append(body)
    return out
