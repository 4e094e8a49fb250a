"""Mistakes that speak: `governor simulate` never writes over its input. Run in the scenario's
own folder it writes its report into ./simulate-out/ (a folder of its own), and the scenario is
unchanged; with `--out .` the report would replace the scenario (a scenario named "backfill" in
backfill.json): it is refused, naming both, and the scenario is still unchanged. Batch and
streaming scenarios alike. The chart says how long the run simulated, and labels parallelism in
whole subtasks."""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
c = Checks()
tmp = tempfile.mkdtemp(prefix="governor-simout-")
for src in ("tests/scenarios/batch/backfill.json", "tests/scenarios/steady.json"):
    shutil.copy(os.path.join(ROOT, src), tmp)


def digest(name):
    return hashlib.sha256(open(os.path.join(tmp, name), "rb").read()).hexdigest()


def simulate(*args):
    return subprocess.run([os.path.abspath(BINARY), "simulate"] + list(args), cwd=tmp,
                          capture_output=True, text=True, timeout=120)


before = {n: digest(n) for n in ("backfill.json", "steady.json")}
runs = {"backfill.json": ["backfill.json"],
        "steady.json": ["steady.json", "--only", "fixed", "--horizon", "30 min"]}
for name, args in runs.items():
    p = simulate(*args)
    c.check(p.returncode == 0, "%s in its folder: exit 0: %s" % (name, p.stderr[-300:]))
    c.check(digest(name) == before[name], "%s in its folder: the scenario is unchanged" % name)
    c.check(os.path.exists(os.path.join(tmp, "simulate-out", name)),
            "%s: the report is in ./simulate-out/: %r" % (name, os.listdir(tmp)))
    p = simulate(*(args + ["--out", "."]))
    c.check(p.returncode != 0 and
            ("./%s would be written over the scenario %s" % (name, name)) in p.stderr,
            "%s with --out .: refused, naming the scenario: %d %r" % (name, p.returncode,
                                                                      p.stderr[-300:]))
    c.check(digest(name) == before[name], "%s with --out .: the scenario is unchanged" % name)

# The chart of the 30 min run: its subtitle gives the time simulated (the scenario's own text
# says 6 h), and every parallelism panel is labelled in whole subtasks.
svg = open(os.path.join(tmp, "simulate-out", "steady.svg")).read()
sub = re.search(r'class="s">([^<]*)<', svg)
c.check(sub and sub.group(1).endswith("simulated: 30 min of 6 h"),
        "the subtitle gives the real duration: %r" % (sub and sub.group(1)))
panels = re.split(r'class="h">', svg)[1:]
par = [p for p in panels if p.startswith("parallelism of")]
c.check(len(par) == 4, "a parallelism panel per vertex: %d" % len(par))
for p in par:
    labels = re.findall(r'class="yl">([^<]*)<', p)
    c.check(labels and all(re.fullmatch(r"\d+", x) for x in labels),
            "%s: whole labels: %r" % (p.split("<")[0], labels))
shutil.rmtree(tmp, ignore_errors=True)
c.done()
