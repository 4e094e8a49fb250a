"""The README's quick start, run as written against a real server (on a free port instead of
8080): its samples, stamped from the clock, give two COLLECTING_METRICS answers and then an
executed scaling (agg 4 -> 6 for HIGH_UTILIZATION, the source kept at 4), which the history
records as a scaling (audit_scalings); the answer shown in the README (action, execute, reason,
parallelism, message, each vertex's current, target and raw_target) is the one the server
gives; then the newest decision and the whole record of decision 3 come back."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
c = Checks()
readme = open(os.path.join(ROOT, "README.md")).read()
start = readme.index("## Quick start")
qs = readme[start:readme.index("\n## ", start)]
blocks = re.findall(r"```sh\n(.*?)```", qs, re.S)
shown = re.findall(r"```json\n(.*?)```", qs, re.S)
c.check(len(blocks) == 2 and len(shown) == 1,
        "the quick start: the samples, the history, one answer shown: %d %d" % (len(blocks),
                                                                               len(shown)))
s = Server()


def run(script):
    script = script.replace("localhost:8080", "127.0.0.1:%d" % s.port)
    p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], capture_output=True,
                       text=True, timeout=60)
    c.check(p.returncode == 0, "the commands run: %s" % p.stderr)
    docs = []
    for line in p.stdout.splitlines():
        if line.strip():
            try:
                docs.append(json.loads(line))
            except ValueError:
                c.check(False, "not JSON: %r" % line[:200])
    return docs


before = int(time.time() * 1000)
answers = run(blocks[0])
after = int(time.time() * 1000)
c.check(len(answers) == 3, "three answers: %d" % len(answers))
if len(answers) == 3:
    c.check([a.get("decision_id") for a in answers] == [1, 2, 3], "decision ids 1, 2, 3")
    c.check(all(before - 61000 <= a["at"] <= after for a in answers),
            "the samples are stamped from the clock, the last one now: %r" %
            [a["at"] - after for a in answers])
    c.check([a["reason"] for a in answers[:2]] == ["COLLECTING_METRICS"] * 2,
            "the first two collect metrics: %r" % [a["reason"] for a in answers])
    third = answers[2]
    v = {x["id"]: x for x in third["vertices"]}
    c.check(third["action"] == "SCALE_UP" and third["execute"] is True
            and third["reason"] == "HIGH_UTILIZATION"
            and third["parallelism"] == {"source": 4, "agg": 6},
            "the third scales agg 4 -> 6: %r" % {k: third[k] for k in ("action", "execute",
                                                                       "reason", "parallelism")})
    c.check(v["agg"]["outside_bounds"] is True and v["source"]["outside_bounds"] is False,
            "agg is outside its bounds, the source inside")
    # The answer the README shows is this one.
    text = shown[0] if shown else ""
    for key in ("action", "reason", "message"):
        m = re.search(r'"%s": "([^"]*)"' % key, text)
        c.check(m is not None and m.group(1) == third[key],
                "the README shows the answer's %s: %r vs %r" % (key, m and m.group(1),
                                                                third[key]))
    c.check('"execute": true' in text and
            '"parallelism": %s' % json.dumps(third["parallelism"]) in text,
            "the README shows execute and parallelism as answered")
    for vid, x in v.items():
        want = '{"id": "%s", "current": %d, "target": %d, "raw_target": %d, "reason": "%s"' % (
            vid, x["current"], x["target"], x["raw_target"], x["reason"])
        c.check(want in text, "the README shows %s as answered: %s" % (vid, want))

# An executed scaling, in the history.
st, r, _ = s.req("POST", "/v1/sql", {"sql": "SELECT decision_id, action, changes FROM "
                                     "audit_scalings WHERE job = 'orders'"})
c.check(st == 200 and r["rows"] == [[3, "SCALE_UP", "agg 4->6"]],
        "the history records the scaling: %r" % r)

history = run(blocks[1])
c.check(len(history) == 2, "the newest decision and a record: %d" % len(history))
if len(history) == 2:
    c.check(history[0]["decisions"][0]["decision_id"] == 3, "the newest decision is 3")
    c.check(history[1]["decision_id"] == 3 and "input" in history[1] and "config" in history[1],
            "the record of decision 3 has its input and config")
c.check(s.stop() == 0, "clean stop")
c.done()
