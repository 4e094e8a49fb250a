"""Reads that cannot grow the disk (README, Storage). Readers that follow one another without
a gap (clients reading one job's timeline back to back, with advice, history and SQL readers)
while two clients decide kept SQLite's checkpoints from ever starting the write-ahead
log over: it grew by megabytes a second and was never cut back until a restart. Now each reader
holds a snapshot for one page of its read only, and past `wal-max` the writer truncates the log,
holding writes back while the readers on older snapshots finish.

The test samples the size of the `-wal` file during the reads and after them, and asserts the
bound of the README's storage section: under WAL_BOUND x wal-max during the reads, and back
under wal-max once they stop. It prints the decisions per second with and without the readers
(asserted only loosely: the readers take CPU from the deciders on a small machine). SQLite only
(PostgreSQL's log is not governor's)."""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, PG, Server, Checks, sample  # noqa: E402

if PG:
    print("SKIP: the write-ahead log bounded here is SQLite's")
    sys.exit(0)

if len(sys.argv) > 2 and sys.argv[2] == "--decide":
    # A decider, in a process of its own (so that the readers' threads do not slow it down):
    # posts samples of its job back to back on one connection until its time is up, then
    # prints how many it decided.
    import http.client
    port, job, seconds = int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    cn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    n, bad, end = 0, 0, time.monotonic() + seconds
    while time.monotonic() < end:
        cn.request("POST", "/v1/jobs/%s/metrics" % job, body=json.dumps(sample(n)),
                   headers={"Content-Type": "application/json"})
        r = cn.getresponse()
        r.read()
        bad += r.status != 200
        n += 1
    print(n, bad)
    sys.exit(0)

c = Checks()
WAL_MAX = 8 * 1024 * 1024
WAL_BOUND = 3  # the README's bound during reads: 3 x wal-max
HISTORY = 1500
s = Server(args=["--synchronous", "NORMAL", "--wal-max", "8 mb", "--sql-timeout", "20 s"])
wal = s.db + "-wal"

conn = s.conn()
for i in range(HISTORY):
    st, b, _ = s.req("POST", "/v1/jobs/tl/metrics", sample(i), conn=conn)
    assert st == 200, b
FROM, TO = sample(0)["at"], sample(HISTORY)["at"]


def wal_size():
    try:
        return os.path.getsize(wal)
    except OSError:
        return 0


stop = threading.Event()
counts = {}
errors = []


def loop(name, method, path, body=None):
    """One reader, back to back on one connection. The answer is read, not parsed: the
    clients of this process must not be what limits the rates measured."""
    cn = s.conn(timeout=120)
    data = json.dumps(body).encode() if body is not None else None
    hdr = {"Content-Type": "application/json"} if data else {}
    while not stop.is_set():
        cn.request(method, path, body=data, headers=hdr)
        r = cn.getresponse()
        raw = r.read()
        if r.status != 200:
            errors.append((name, r.status, raw[:200]))
        counts[name] = counts.get(name, 0) + 1


def run(readers, seconds, tag):
    """Two deciders (processes) and the readers for seconds: (decisions per second, the largest
    WAL)."""
    stop.clear()
    counts.clear()
    deciders = [subprocess.Popen([sys.executable, __file__, BINARY, "--decide", str(s.port),
                                  "%s%d" % (tag, k), str(seconds)], stdout=subprocess.PIPE,
                                 text=True) for k in range(2)]
    th = [threading.Thread(target=loop, args=r) for r in readers]
    for t in th:
        t.start()
    peak = 0
    while any(p.poll() is None for p in deciders):
        peak = max(peak, wal_size())
        time.sleep(0.02)
    stop.set()
    for t in th:
        t.join()
    decided = 0
    for p in deciders:
        n, bad = (int(x) for x in p.stdout.read().split())
        decided += n
        if bad:
            errors.append(("decide", bad, "decisions not answered 200"))
    return decided / seconds, peak


timeline = "/v1/jobs/tl/timeline?from=%d&to=%d" % (FROM, TO)
# A query that holds its snapshot for a few tenths of a second, sent back to back: with it, some
# reader holds a snapshot at every moment (so SQLite's own checkpoints never start the log
# over), and the writer's truncation must wait for a query to end.
LONG_SQL = ("SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
            "WHERE x < 300000) SELECT x FROM c) JOIN (SELECT max(id) AS m FROM decisions)")
READERS = [("timeline", "GET", timeline)] * 3 + [
    ("advice", "GET", "/v1/jobs/tl/advice?window=31d&to=%d" % TO),
    ("history", "GET", "/v1/jobs/tl/decisions?limit=20"),
    ("sql", "POST", "/v1/sql", {"sql": LONG_SQL}),
]
alone, peak0 = run([], 2.0, "a")
with_readers, peak = run(READERS, 8.0, "b")
reads = dict(counts)
c.check(not errors, "every request answered 200: %r" % errors[:3])
c.check(reads.get("timeline", 0) >= 8, "the timeline readers read: %r" % reads)
print("decisions/s: %.0f alone, %.0f with %d readers (ratio %.2f); reads %r" % (
    alone, with_readers, len(READERS), with_readers / max(alone, 1), reads))
print("WAL: %.1f MB at most alone, %.1f MB at most with readers (wal-max %.0f MB)" % (
    peak0 / 1e6, peak / 1e6, WAL_MAX / 1e6))
c.check(peak <= WAL_BOUND * WAL_MAX,
        "the WAL stays under %d x wal-max while readers follow one another: %.1f MB"
        % (WAL_BOUND, peak / 1e6))
# Loosely: the readers take most of the CPU of a small machine (more so under ASan, with other
# tests beside), and a truncation holds the writes while the SQL query ends; decisions must go
# on all the same, not stall.
c.check(with_readers >= alone / 200,
        "decisions go on while the readers read: %.0f/s against %.0f/s" % (with_readers, alone))

# After the reads: a few more decisions, and the WAL is back under wal-max.
after, t0 = wal_size(), time.monotonic()
i = 10 ** 6
while time.monotonic() - t0 < 3.0 and after > WAL_MAX:
    s.req("POST", "/v1/jobs/w0/metrics", sample(i))
    i += 1
    time.sleep(0.01)
    after = wal_size()
print("WAL after the reads: %.1f MB" % (after / 1e6))
c.check(after <= WAL_MAX, "the WAL is back under wal-max after the reads: %.1f MB" % (after / 1e6))
c.check(s.stop() == 0, "clean stop")
c.done()
