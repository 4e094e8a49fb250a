"""The README's "Batch jobs and rebalancing" examples, run as written against a real server (on
a free port instead of 8080): the backfill gets 104 workers, the advice splits D at 0.6."""
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
start = readme.index("## Batch jobs and rebalancing")
sec = readme[start:readme.index("\n## ", start)]
blocks = re.findall(r"```sh\n(.*?)```", sec, re.S)
c.check(len(blocks) == 2, "two curl blocks: %d" % len(blocks))
s = Server()
out = []
for b in blocks:
    p = subprocess.run(["bash", "-e", "-c", b.replace("localhost:8080", "127.0.0.1:%d" % s.port)],
                       capture_output=True, text=True, timeout=60)
    c.check(p.returncode == 0, "the commands run: %s" % p.stderr)
    out.append(json.loads(p.stdout) if p.stdout.strip() else {})
if len(out) == 2:
    w = out[0].get("workers", {})
    c.check(w.get("target") == 104 and w.get("raw") == 104 and w.get("current") == 10,
            "the backfill gets 104 workers: %r" % out[0])
    c.check(round(out[0]["evaluated"]["remaining_worker_seconds"]) == 159700, "W = 159,700")
    r = out[1]
    c.check(r.get("action") == "REBALANCE" and r.get("makespan_before_s") == 400
            and abs(r.get("makespan_after_s", 0) - 200) < 1e-9, "400 s -> 200 s: %r" % r)
    sp = r.get("splits", [{}])[0]
    c.check(sp.get("item") == "D" and abs(sp["split_at_fraction"] - 0.6) < 1e-12
            and abs(sp["piece_finish_s"] - 110) < 1e-9, "D split at 0.6: %r" % sp)
    un = r.get("unsplittable", [{}])[0]
    c.check(un.get("item") == "E" and un.get("cause") == "HOT_RECORD"
            and abs(r.get("free_finish_s", 0) - 2300 / 35) < 1e-6, "E holds the stage: %r" % r)
s.stop()
c.done()
