"""POST /v1/sql: read-only by construction, bounded in time and rows,
SQL types kept, run off the loop so that a slow query does not delay decisions, and the
database stays readable by the sqlite3 shell while the server is under load."""
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, fingerprint  # noqa: E402

c = Checks()
s = Server(args=["--sql-timeout", "300ms", "--sql-max-rows", "5"])
for i in range(8):
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body


def sql(srv, q, params=None, timeout=30):
    body = {"sql": q}
    if params is not None:
        body["params"] = params
    return srv.req("POST", "/v1/sql", body, conn=srv.conn(timeout=timeout))[:2]


# ---- answers keep SQL types ----
st, r = sql(s, "SELECT id, job, execute, message IS NULL, 0.5, NULL, x'00ff' FROM audit_decisions "
               "WHERE job = ? ORDER BY id LIMIT 1", ["orders"])
c.check(st == 200, "select: 200, got %d %r" % (st, r))
if st == 200:
    row = r["rows"][0]
    c.check(r["columns"][:2] == ["id", "job"], "columns named: %r" % r["columns"])
    c.check(isinstance(row[0], int) and row[1] == "orders" and row[2] in (0, 1),
            "integer stays integer, text is text: %r" % row)
    c.check(row[4] == 0.5 and row[5] is None and row[6] == "AP8=",
            "real, NULL as null, blob as base64: %r" % row)
    c.check(r["truncated"] is False, "not truncated")
st, r = sql(s, "SELECT id FROM decisions ORDER BY id")
c.check(st == 200 and len(r["rows"]) == 5 and r["truncated"] is True,
        "--sql-max-rows 5: five rows and truncated, got %d %r" % (st, r))
st, r = sql(s, "SELECT count(*) FROM audit_decisions")
c.check(st == 200 and r["rows"] == [[8]], "the audit views are readable: %r" % (r,))

# ---- every refusal of the list: a 400 that says why, nothing changed ----
vacuum_target = os.path.join(s.tmp, "copy.db")
REFUSED = [
    ("INSERT", "INSERT INTO jobs (job, created_at) VALUES ('x', 1)"),
    ("UPDATE", "UPDATE decisions SET action = 'SCALE_UP'"),
    ("DELETE", "DELETE FROM decisions"),
    ("writing CTE", "WITH old AS (SELECT id FROM decisions) DELETE FROM decisions "
                    "WHERE id IN (SELECT id FROM old)"),
    ("ATTACH", "ATTACH DATABASE '%s' AS other" % os.path.join(s.tmp, "other.db")),
    ("writing PRAGMA", "PRAGMA user_version = 99"),
    ("writing PRAGMA journal_mode", "PRAGMA journal_mode = DELETE"),
    ("load_extension", "SELECT load_extension('/lib/x86_64-linux-gnu/libm.so.6')"),
    ("two statements", "SELECT 1; DELETE FROM decisions"),
    ("two selects", "SELECT 1; SELECT 2"),
    ("VACUUM INTO", "VACUUM INTO '%s'" % vacuum_target),
    ("CREATE TEMP TABLE", "CREATE TEMP TABLE t (x)"),
    ("CREATE TEMP VIEW", "CREATE TEMP VIEW v AS SELECT 1"),
    ("CREATE TEMP TRIGGER", "CREATE TEMP TRIGGER tr AFTER INSERT ON jobs BEGIN SELECT 1; END"),
    ("DROP VIEW", "DROP VIEW audit_decisions"),
]
for name, q in REFUSED:
    before = fingerprint(s.db)
    st, r = sql(s, q)
    err = r.get("error", {}) if isinstance(r, dict) else {}
    c.check(st == 400 and err.get("code") == "INVALID_ARGUMENT" and len(err.get("message", "")) > 5,
            "%s: want 400 with a reason, got %d %r" % (name, st, r))
    c.check(fingerprint(s.db) == before, "%s: nothing changed" % name)
c.check(not os.path.exists(vacuum_target), "VACUUM INTO wrote no file")
st, r = sql(s, "SELECT count(*) FROM decisions")
c.check(st == 200 and r["rows"] == [[8]], "all decisions still there: %r" % (r,))
for name, body in [("no sql", {}), ("sql not a string", {"sql": 1}),
                   ("params not an array", {"sql": "SELECT ?", "params": {"a": 1}}),
                   ("wrong number of params", {"sql": "SELECT ?, ?", "params": [1]}),
                   ("empty statement", {"sql": " ;"})]:
    st, r, _ = s.req("POST", "/v1/sql", body)
    c.check(st == 400 and r.get("error", {}).get("message"), "%s: 400, got %d %r" % (name, st, r))
st, r, _ = s.req("POST", "/v1/sql", "SELECT 1", ctype="text/plain")
c.check(st == 415, "text/plain: 415, got %d" % st)

# ---- a recursive query that would run forever is stopped at the limit (300 ms) ----
t0 = time.monotonic()
st, r = sql(s, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT count(*) FROM c")
took = time.monotonic() - t0
c.check(st == 400 and r.get("error", {}).get("code") == "DEADLINE_EXCEEDED",
        "runaway query: 400 DEADLINE_EXCEEDED, got %d %r" % (st, r))
c.check(0.25 < took < 3.0, "runaway query stopped near 300 ms, took %.2f s" % took)
# The server is fine afterwards.
st, r = sql(s, "SELECT 1")
c.check(st == 200 and r["rows"] == [[1]], "a query after the runaway one: %r" % (r,))

# ---- 503 when the queue is full: 2 workers + 64 queued, 100 runaway queries at once ----
statuses = []
lock = threading.Lock()


def runaway():
    st, _ = sql(s, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                   "SELECT count(*) FROM c", timeout=120)
    with lock:
        statuses.append(st)


ths = [threading.Thread(target=runaway) for _ in range(100)]
for t in ths:
    t.start()
for t in ths:
    t.join()
c.check(set(statuses) <= {400, 503} and statuses.count(503) > 0 and statuses.count(400) > 0,
        "100 runaway queries at once: some 400 (stopped), some 503 (queue full): %r"
        % sorted(set(statuses)))
s.stop()

# ---- auth like every other route ----
tmp = s.tmp
tok = os.path.join(tmp, "tokens")
with open(tok, "w") as f:
    f.write("sekrit\n")
a = Server(args=["--token-file", tok])
st, r, _ = a.req("POST", "/v1/sql", {"sql": "SELECT 1"})
c.check(st == 401, "no token: 401, got %d" % st)
st, r, _ = a.req("POST", "/v1/sql", {"sql": "SELECT 1"}, headers={"Authorization": "Bearer sekrit"})
c.check(st == 200, "with the token: 200, got %d %r" % (st, r))
a.stop()

# ---- a 2-second query in one connection does not delay decisions in another ----
# The slow query runs until its time limit, so that it lasts 2 s on any machine: a query
# sized by timing a shorter one first ran anywhere from under a second to past the limit
# when the machine's load changed in between (the flake of a loaded 2-core run).
b = Server(args=["--sql-timeout", "2s", "--synchronous", "NORMAL"])
for i in range(8):
    st, body, _ = b.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body
# the decide latency of this machine without a query, for a bound that is relative to it
idle = 0.0
cn = b.conn()
for i in range(8, 28):
    t = time.monotonic()
    b.req("POST", "/v1/jobs/orders/metrics", sample(i), conn=cn)
    idle = max(idle, time.monotonic() - t)
bound = max(1.0, 10 * idle)
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
slow = {}


def slow_query():
    t = time.monotonic()
    slow["status"], slow["body"] = sql(b, ENDLESS)
    slow["took"] = time.monotonic() - t
    slow["end"] = time.monotonic()


th = threading.Thread(target=slow_query)
th.start()
time.sleep(0.1)
lat = []
i = 28
conn = b.conn()
while th.is_alive() and i < 400:
    t = time.monotonic()
    st, body, _ = b.req("POST", "/v1/jobs/orders/metrics", sample(i), conn=conn)
    lat.append((time.monotonic() - t, st, t))
    i += 1
    time.sleep(0.02)
th.join()
during = [x for x in lat if x[2] < slow["end"]]
c.check(slow.get("status") == 400 and slow.get("took", 0) > 1.9,
        "the slow query ran to its 2 s limit: %r %.2f s" % (slow.get("status"), slow.get("took", 0)))
c.check(len(during) >= 10, "decisions answered during the slow query: %d" % len(during))
c.check(all(st == 200 for _, st, _ in during), "every decision during it: 200")
worst = max((x[0] for x in during), default=99)
c.check(worst < bound, "decide latency during a slow query < %.2f s, worst %.3f s" % (bound, worst))

# ---- the sqlite3 shell reads the live database while the server is under load ----
shell = shutil.which("sqlite3")
c.check(shell is not None, "the sqlite3 shell is installed (tests/install-deps.sh)")
if shell:
    stop = threading.Event()
    posted = [0]

    def loader():
        cn = b.conn()
        k = 1000
        while not stop.is_set():
            st, _, _ = b.req("POST", "/v1/jobs/load-%d/metrics" % (k % 4), sample(k // 4),
                             conn=cn)
            if st == 200:
                posted[0] += 1
            k += 1

    lt = threading.Thread(target=loader)
    lt.start()
    counts = []
    try:
        for _ in range(6):
            time.sleep(0.2)
            p = subprocess.run([shell, "-readonly", b.db, "SELECT count(*) FROM decisions"],
                               capture_output=True, text=True, timeout=20)
            c.check(p.returncode == 0, "sqlite3 shell under load: rc %d %s" % (p.returncode,
                                                                               p.stderr))
            if p.returncode == 0:
                counts.append(int(p.stdout.strip()))
    finally:
        stop.set()
        lt.join()
    c.check(len(counts) == 6 and counts == sorted(counts) and counts[-1] > counts[0],
            "the shell sees the count grow while decisions are posted: %r" % counts)
    c.check(posted[0] > 20, "the loader posted decisions meanwhile: %d" % posted[0])
c.check(b.stop() == 0, "clean stop")
c.done()
