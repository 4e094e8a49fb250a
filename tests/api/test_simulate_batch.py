"""`governor simulate` of the batch scenario tests/scenarios/batch/backfill.json: a 4 TB
backfill with a noisy progress signal (+-30% per interval) and one 100 GB file that cannot be
split, sized by the batch rule through the decision service, against its fixed starting pool.
The rule finishes within a few minutes of the hot file's own 4,000 s (the fixed pool takes
4.4 h) for about the same worker-hours, with few changes; the pool goes to one worker once
only the hot file is left; the same seed gives the same report."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "tests", "scenarios", "batch", "backfill.json")
c = Checks()
docs = []
for k in range(2):
    out = tempfile.mkdtemp(prefix="simbatch")
    p = subprocess.run([BINARY, "simulate", SCENARIO, "--out", out], capture_output=True,
                       text=True, timeout=120)
    c.check(p.returncode == 0, "simulate exits 0: %s" % p.stderr)
    rows = [r.split() for r in p.stdout.splitlines()[1:]]
    c.check([r[1] for r in rows] == ["governor", "fixed"], "one row per policy: %r" % p.stdout)
    text = open(os.path.join(out, "backfill.json")).read()
    docs.append(text)
c.check(docs[0] == docs[1], "the same seed gives the same report")
pol = {p["policy"]: p for p in json.loads(docs[0])["policies"]}
g, f = pol["governor"], pol["fixed"]
c.check(4000 <= g["finish_s"] <= 4200, "governor finishes with the hot file: %r" % g["finish_s"])
c.check(f["finish_s"] > 15000, "the fixed pool of 10 takes 4.4 h: %r" % f["finish_s"])
c.check(g["worker_hours"] < 1.1 * f["worker_hours"],
        "about the same worker-hours: %r vs %r" % (g["worker_hours"], f["worker_hours"]))
c.check(1 <= g["changes"] <= 10, "few changes under the noise: %r" % g["changes"])
c.check(g["pools"][-1][1] == 1 and g["reasons"].get("UNSPLITTABLE_WORK", 0) > 0,
        "one worker for the unsplittable file at the end: %r %r" % (g["pools"], g["reasons"]))
c.check(g["pools"][1] == [30, 115], "the first decision sizes the pool from the estimate: %r"
        % g["pools"][:3])
c.done()
