"""Mistakes that speak: `governor simulate` never writes over its input. Run in the scenario's
own folder it writes its report into ./simulate-out/ (a folder of its own), and the scenario is
unchanged; with `--out .` the report would replace the scenario (a scenario named "backfill" in
backfill.json): it is refused, naming both, and the scenario is still unchanged. Batch and
streaming scenarios alike."""
import hashlib
import os
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
shutil.rmtree(tmp, ignore_errors=True)
c.done()
