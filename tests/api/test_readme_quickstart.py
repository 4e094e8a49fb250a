"""The README's quick start, run as written: its curl commands against a real server (on a
free port instead of 8080): three decisions come back, then the newest from the history, then
the whole record of decision 3."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
c = Checks()
readme = open(os.path.join(ROOT, "README.md")).read()
qs = readme[readme.index("## Quick start"):readme.index("\n## ", readme.index("## Quick start"))]
blocks = re.findall(r"```sh\n(.*?)```", qs, re.S)
script = next((b for b in blocks if "curl" in b), None)
c.check(script is not None, "the quick start has a curl block")
s = Server()
script = script.replace("localhost:8080", "127.0.0.1:%d" % s.port)
p = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=60)
c.check(p.returncode == 0, "the commands run: %s" % p.stderr)
docs = []
for line in p.stdout.splitlines():
    if line.strip():
        try:
            docs.append(json.loads(line))
        except ValueError:
            c.check(False, "not JSON: %r" % line[:200])
c.check(len(docs) == 5, "three decisions, a list, a record: %d" % len(docs))
if len(docs) == 5:
    c.check([d.get("decision_id") for d in docs[:3]] == [1, 2, 3], "decision ids 1, 2, 3")
    c.check(all(d.get("reason") for d in docs[:3]), "each decision has a reason")
    c.check(docs[3]["decisions"][0]["decision_id"] == 3, "the newest decision is 3")
    c.check(docs[4]["decision_id"] == 3 and "input" in docs[4] and "config" in docs[4],
            "the record of decision 3 has its input and config")
c.check(s.stop() == 0, "clean stop")
c.done()
