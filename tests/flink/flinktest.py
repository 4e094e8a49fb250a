"""flinktest.py - helpers of the `governor flink` tests: the binary (argv[1]), a run of the
command with its stdout lines parsed, the jobs the tests use, and the checks' tally. Python 3
stdlib only."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fakejm import FakeJobManager, Job, V, START_MS  # noqa: E402,F401

BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/governor")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICIES = os.path.join(ROOT, "policies")

JID = "0123456789abcdef0123456789abcdef"
SRC = "bc764cd8ddf7a0cff126f51c16239658"
MAP = "20ba6b65f97481d5570070de90e4e791"
AGG = "7a2fa9a3f4ab4b5a6f3a2ad1e6d0f2d7"


def tmpdir():
    return tempfile.mkdtemp(prefix="governor-flink-")


def three_vertex_job(version="1.20", p=(2, 2, 2), rate=10000, jid=JID, interval=30,
                     restart=60, partitions=48, steps=()):
    """Kafka source (48 partitions) -> REBALANCE map -> HASH aggregate, the model's figures."""
    return Job(jid, "orders", [
        V(SRC, "Source: Kafka Source", p[0], 2000, partitions=partitions, rate=rate,
          op="Source__Kafka_Source", steps=steps),
        V(MAP, "Map -> Filter", p[1], 2500, scaling=0.95, inputs=[(SRC, "REBALANCE")],
          op="Map"),
        V(AGG, "Aggregate", p[2], 4000, scaling=0.9, selectivity=0.1, inputs=[(MAP, "HASH")],
          op="Aggregate")], version=version, interval=interval, restart=restart)


def run(args, timeout=120, env=None):
    """`governor flink ARGS`: (exit code, stdout lines (JSON parsed where they are), stderr)."""
    p = subprocess.run([BINARY, "flink"] + list(args), capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT, env=env)
    lines = []
    for ln in p.stdout.splitlines():
        try:
            lines.append(json.loads(ln))
        except ValueError:
            lines.append(ln)
    return p.returncode, lines, p.stderr


class Checks:
    def __init__(self):
        self.failed = self.passed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)
        return cond

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
