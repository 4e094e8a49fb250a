"""docs/flink.md and docs/keda.md as a user follows them: the blocks marked
`<!-- flink-doc-test: ... -->` run against the fake JobManager (its address put in place of
http://localhost:8081; the page's job id is the fake's), the one command as a loop that makes
decisions and stops on SIGTERM, the `--once` one printing its two lines; the block marked
`<!-- keda-doc-test: samples -->` runs against a governor server on a free port, and prints the
JSON the page shows after it."""
import json
import os
import re
import signal
import subprocess
import sys
import time

from flinktest import BINARY, JID, ROOT, Checks, FakeJobManager, three_vertex_job, tmpdir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api"))
from gov import Server  # noqa: E402

c = Checks()
d = tmpdir()


def marked(path, marker):
    """The fenced blocks after each marker line, and the block that follows each."""
    with open(os.path.join(ROOT, path)) as f:
        lines = f.read().split("\n")
    out = []
    for i, ln in enumerate(lines):
        m = re.match(r"<!-- %s: (.*) -->" % marker, ln)
        if not m:
            continue
        blocks, j = [], i + 1
        while len(blocks) < 2 and j < len(lines):
            if lines[j].startswith("```"):
                k = j + 1
                while not lines[k].startswith("```"):
                    k += 1
                blocks.append("\n".join(lines[j + 1:k]))
                j = k + 1
            else:
                j += 1
        out.append((m.group(1), blocks[0], blocks[1] if len(blocks) > 1 else None))
    return out


job = three_vertex_job()
jm = FakeJobManager([job])
flink = dict((name, (cmd, after)) for name, cmd, after in marked("docs/flink.md",
                                                                  "flink-doc-test"))
c.check(set(flink) == {"the one command", "try it once"}, "docs/flink.md's blocks: %r" % flink)


def as_run(cmd):
    cmd = cmd.replace("http://localhost:8081", jm.url).replace("./build/governor", BINARY)
    c.check(JID in cmd, "the page's job id is the fake JobManager's")
    return cmd


cmd, _ = flink["try it once"]
p = subprocess.run(["bash", "-c", as_run(cmd)], capture_output=True, text=True, cwd=d,
                   timeout=120)
lines = [json.loads(ln) for ln in p.stdout.splitlines()]
c.check(p.returncode == 0 and len(lines) == 2 and "sample" in lines[0] and
        lines[1]["applied"] is None and lines[1]["answer"]["reason"] == "COLLECTING_METRICS",
        "try it once: %d %r %s" % (p.returncode, lines, p.stderr[-500:]))

cmd, _ = flink["the one command"]
log = open(os.path.join(d, "loop.log"), "w")
proc = subprocess.Popen(["bash", "-c", "exec " + as_run(cmd) + " --interval '1 s'"],
                        stdout=subprocess.DEVNULL, stderr=log, cwd=d)
end = time.monotonic() + 30
while time.monotonic() < end:
    with open(log.name) as f:
        if f.read().count('msg="decision"') >= 2:
            break
    time.sleep(0.1)
proc.send_signal(signal.SIGTERM)
rc = proc.wait(timeout=30)
log.close()
with open(log.name) as f:
    text = f.read()
c.check(rc == 0 and text.count('msg="decision"') >= 2 and "applied=" in text,
        "the one command: decisions until SIGTERM: %d %s" % (rc, text[-800:]))
c.check(os.path.exists(os.path.join(d, "governor.db")), "the history in ./governor.db")
jm.close()

keda = marked("docs/keda.md", "keda-doc-test")
c.check(len(keda) == 1, "docs/keda.md's walk-through block")
srv = Server(tmp=tmpdir())
_, cmd, shown = keda[0]
p = subprocess.run(["bash", "-c", "set -e -o pipefail\n" +
                    cmd.replace("localhost:8080", "127.0.0.1:%d" % srv.port)],
                   capture_output=True, text=True, cwd=d, timeout=60)
try:
    got = json.loads(p.stdout)
except ValueError:
    got = p.stdout
c.check(p.returncode == 0 and got == json.loads(shown),
        "the walk-through prints what the page shows: %r vs %s" % (got, shown))
c.check(srv.stop() == 0, "clean stop")
c.done()
