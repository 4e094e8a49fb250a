"""POST /v1/sql against hostile queries (README, Audit with SQL): the byte limits hold inside a
row (a value, a row and the body are measured before they are built), the time limit holds
inside one SQL function call (the query's process is killed), neither delays /healthz or a
decision, and SIGTERM stops the server at once whatever a query is doing."""
import http.client
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import gov  # noqa: E402
from gov import Server, Checks, sample  # noqa: E402

c = Checks()
MAX_BYTES = 8 * 1024 * 1024  # --sql-max-bytes default
# instr() of a 2 MB haystack and a 1 MB needle that matches up to its last byte at every
# position: about 1e12 byte comparisons inside one call, minutes of work, where SQLite's
# progress handler is never called.
INSTR = "SELECT instr(printf('%.*c', 2000000, 'a'), printf('%.*c', 1000000, 'a') || 'b')"


def sql_raw(srv, q, timeout=120):
    """(status, raw body bytes, parsed body or None, seconds)."""
    t = time.monotonic()
    cn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    try:
        cn.request("POST", "/v1/sql", body=json.dumps({"sql": q}),
                   headers={"Content-Type": "application/json"})
        r = cn.getresponse()
        raw = r.read()
        st = r.status
    except (OSError, http.client.HTTPException) as e:
        return None, repr(e).encode(), None, time.monotonic() - t
    finally:
        cn.close()
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    return st, raw, parsed, time.monotonic() - t


def err(parsed):
    e = (parsed or {}).get("error", {}) if isinstance(parsed, dict) else {}
    return e.get("code"), e.get("message", "")


class Probe:
    """While running: GET /healthz and POST a decision, one after the other, each on its own
    connection; keeps the worst latency of each and whether every answer was 200."""

    def __init__(self, srv, first_sample):
        self.srv, self.i = srv, first_sample
        self.worst = {"healthz": 0.0, "decide": 0.0}
        self.n, self.ok = 0, True
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.run)

    def run(self):
        h, d = self.srv.conn(timeout=60), self.srv.conn(timeout=60)
        while not self.stop.is_set():
            for name, args in (("healthz", ("GET", "/healthz")),
                               ("decide", ("POST", "/v1/jobs/orders/metrics", sample(self.i)))):
                t = time.monotonic()
                st, _, _ = self.srv.req(*args, conn=h if name == "healthz" else d)
                self.worst[name] = max(self.worst[name], time.monotonic() - t)
                self.ok = self.ok and st == 200
            self.i += 1
            self.n += 1
            time.sleep(0.01)

    def __enter__(self):
        self.th.start()
        time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        time.sleep(0.2)
        self.stop.set()
        self.th.join()


# The byte limits are checked with a generous time limit, so that on a loaded machine they,
# not the clock, are what stops the queries (SQLite itself takes a while to build twenty
# 3 MB zeroblobs); the time limit is checked on a second server, at 2 s.
s = Server(args=["--sql-timeout", "30s", "--synchronous", "NORMAL"])
for i in range(5):
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body
n_sample = 5

# The latency of an idle server on this machine: the bound below is relative to it, so that
# a loaded machine does not fail the test, and a loop stalled for seconds does.
with Probe(s, n_sample) as base:
    time.sleep(1.0)
n_sample = base.i
idle = max(base.worst.values())
bound = max(1.0, 10 * idle)


def probed(q, srv=None):
    global n_sample
    srv = srv or s
    with Probe(srv, n_sample) as p:
        res = sql_raw(srv, q)
    n_sample = p.i
    c.check(p.ok and p.n >= 2, "%s...: /healthz and decisions answered 200 meanwhile (%d rounds)"
            % (q[:40], p.n))
    c.check(max(p.worst.values()) < bound,
            "%s...: /healthz and a decision answer promptly meanwhile: worst %.3f s / %.3f s, "
            "bound %.3f s" % (q[:40], p.worst["healthz"], p.worst["decide"], bound))
    return res


# ---- 4. a row of twenty 3 MB blobs: 4 MB of JSON each, under the value limit, 80 MB
# together: refused at once, without building it, saying which limit ----
st, raw, r, took = probed("SELECT " + ", ".join("zeroblob(3000000)" for _ in range(20)))
code, msg = err(r)
c.check(st == 400 and code == "RESOURCE_EXHAUSTED" and "sql-max-bytes" in msg,
        "a row above the body's limit: 400 naming sql-max-bytes, got %r %r %.80r"
        % (st, code, msg or raw))
c.check(len(raw) < 4096, "the refusal is short: %d bytes" % len(raw))
c.check(took < 25, "refused without building it: %.2f s" % took)

# ---- one value above the value limit: what the issue built ten of ----
st, raw, r, took = probed("SELECT zeroblob(16000000), zeroblob(16000000)")
code, msg = err(r)
c.check(st == 400 and code == "RESOURCE_EXHAUSTED" and "sql-max-value" in msg,
        "a 16 MB value: 400 naming sql-max-value, got %r %r %.80r" % (st, code, msg or raw))

# ---- rows of 4 MB of JSON each: the body stops within its limit (two rows) ----
st, raw, r, took = probed("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                          "WHERE x < 50) SELECT x, zeroblob(3000000) FROM c")
c.check(st == 200 and r is not None and r.get("truncated") is True and len(r["rows"]) == 2,
        "rows of 4 MB: the first two, truncated, got %r %r" % (st, (r or {}).get("truncated")))
c.check(len(raw) <= MAX_BYTES, "the body is within sql-max-bytes: %d bytes" % len(raw))

logs = s.logs()
c.check(s.stop() == 0, "clean stop")
c.check(logs.count('path="/v1/sql" status=400') == 2,
        "the log says what the clients got: two 400s on /v1/sql")

# ---- a value past sql-max-value from any function: 400 RESOURCE_EXHAUSTED naming the limit,
# never null or a cut value (SQLite's printf() answers NULL when its result would be too long;
# README, Request budget). 64 KiB here, so that each query builds little; a generous time limit, as above, so
# that on a loaded machine the value limit, not the clock, is what stops them. ----
LIMIT = 64 * 1024
v = Server(args=["--sql-max-value", "64 kb", "--sql-timeout", "30s", "--synchronous", "NORMAL"])
N = LIMIT + 1
TOO_BIG = [
    "SELECT printf('%.*c', 100000000, 'x')",
    "SELECT format('%.*c', {n}, 'x')",
    "SELECT printf('%{n}d', 1)",
    "SELECT printf('%-{n}s|', 'x')",
    "SELECT printf('%.{n}f', 1.5)",
    "SELECT printf('%.*e', {n}, 1.5)",
    "SELECT printf('%,{n}d', 7)",
    "SELECT printf('%{n}x', 255)",
    "SELECT printf('%s%s', printf('%.*c', {h}, 'x'), printf('%.*c', {h}, 'y'))",
    "SELECT printf('%q', printf('%.*c', {h}, char(39)))",
    "SELECT printf('%Q', printf('%.*c', {n1}, 'x'))",
    "SELECT printf('%w', printf('%.*c', {h}, '\"'))",
    "SELECT length(printf('%.*c', {n}, 'x'))",
    "SELECT zeroblob({n})",
    "SELECT length(zeroblob({n}))",
    "SELECT randomblob({n})",
    "SELECT replace(printf('%.*c', {q}, 'x'), 'x', 'xxxxx')",
    "SELECT hex(randomblob({h}))",
    "SELECT quote(randomblob({h}))",
    "SELECT upper(printf('%.*c', {n1}, 'x')) || 'yy'",
    "SELECT printf('%.*c', {h}, 'x') || printf('%.*c', {h}, 'y')",
    "SELECT CAST(zeroblob({h}) || zeroblob({h}) AS TEXT)",
    "SELECT CAST(randomblob({n}) AS TEXT)",
    "SELECT json_array(printf('%.*c', {h}, 'x'), printf('%.*c', {h}, 'y'))",
    "SELECT json_object('a', printf('%.*c', {n1}, 'x'))",
    "SELECT json_quote(printf('%.*c', {h}, '\"'))",
    "SELECT json_insert('{{}}', '$.a', printf('%.*c', {n1}, 'x'))",
    "SELECT group_concat(printf('%.*c', 1000, 'x')) FROM (WITH RECURSIVE c(i) AS "
    "(SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100) SELECT i FROM c)",
    "SELECT json_group_array(printf('%.*c', 1000, 'x')) FROM (WITH RECURSIVE c(i) AS "
    "(SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100) SELECT i FROM c)",
    "SELECT length(s) FROM (WITH RECURSIVE c(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM c "
    "WHERE length(s) < 200000) SELECT max(s) AS s FROM c)",
    "SELECT substr(printf('%.*c', {n1}, 'x'), 1) || 'abc'",
    "SELECT char(65) || printf('%.*c', {n1}, 'x')",
    "SELECT strftime(printf('%.*c', {h}, 'Y') || printf('%.*c', {h}, 'Y'), 'now')",
]


def too_big():
    for q in TOO_BIG:
        q = q.format(n=N, h=N // 2 + 1, n1=N - 1, q=N // 5 + 1)
        st, raw, r, _ = sql_raw(v, q)
        code, msg = err(r)
        c.check(st == 400 and code == "RESOURCE_EXHAUSTED" and "sql-max-value" in msg and
                str(LIMIT) in msg,
                "%s: 400 RESOURCE_EXHAUSTED naming sql-max-value, got %r %r %.100r"
                % (q[:70], st, code, msg or raw))


# another job's decisions meanwhile, as a ratio to their idle latency
_, ratio = gov.Probe(v).ratio(too_big)
print("another job's worst decision during the queries: %.1f x its idle latency" % ratio)
c.check(ratio < 200, "another job keeps answering during the queries: %.1f x idle" % ratio)
# ... and what fits is answered as SQLite's own printf answers it
FITS = [
    ("SELECT length(printf('%.*c', {n}, 'x'))", [[LIMIT]]),
    ("SELECT length(format('%{n}d', 7))", [[LIMIT]]),
    ("SELECT printf(''), printf('%s', ''), printf(NULL), printf('%d|%5.2f|%s|%q|%Q', 7, 3.14159, "
     "'a', 'it''s', NULL), format('%,d', 1234567), printf('%.3c', 'é'), printf('%s %s', 'one'), "
     "printf('%d', '12abc'), printf('%!.3s', 'ééééé'), printf(x'41252e3263', 'z'), "
     "printf('%n%p%r%%', 1, 255, 22), typeof(printf(12))", None),
]
for q, want in FITS:
    q = q.format(n=LIMIT)
    st, raw, r, _ = sql_raw(v, q)
    if want is None:
        import sqlite3
        want = [list(sqlite3.connect(":memory:").execute(q).fetchone())]
    c.check(st == 200 and r.get("rows") == want,
            "%s: %r, got %r %.160r" % (q[:70], want, st, (r or {}).get("rows") or raw))
c.check(v.stop() == 0, "clean stop")

# ---- 5. one slow function call is stopped at the time limit (2 s, plus 0.5 s of grace) ----
s2 = Server(args=["--sql-timeout", "2s", "--synchronous", "NORMAL"])
n_sample = 0
st, raw, r, took = probed(INSTR, s2)
code, msg = err(r)
c.check(st == 400 and code == "DEADLINE_EXCEEDED" and "2000 ms" in msg,
        "instr() of megabytes: 400 DEADLINE_EXCEEDED, got %r %r %.80r" % (st, code, msg or raw))
c.check(1.9 < took < 6.0, "instr() stopped near the 2 s limit: %.2f s" % took)
# the server and the engine are fine afterwards
st, raw, r, took = sql_raw(s2, "SELECT count(*) FROM decisions")
c.check(st == 200 and r["rows"][0][0] >= 1, "a query afterwards: %r %.80r" % (st, raw))
logs = s2.logs()
c.check(s2.stop() == 0, "clean stop")
c.check(logs.count('path="/v1/sql" status=400') == 1,
        "the log says what the client got: a 400 on /v1/sql")

# ---- SIGTERM while a query is inside one long function call: the server does not wait for
# it (the limit is 60 s here); the client gets 503 ----
t = Server(args=["--sql-timeout", "60s"])
got = {}


def stuck():
    got["res"] = sql_raw(t, INSTR)


th = threading.Thread(target=stuck)
th.start()
time.sleep(1.0)  # inside instr() by now
t0 = time.monotonic()
t.proc.send_signal(signal.SIGTERM)
try:
    rc = t.proc.wait(timeout=60)
except Exception:  # noqa: BLE001
    t.proc.kill()
    rc = t.proc.wait()
stopped = time.monotonic() - t0
t.log.close()
th.join()
c.check(rc == 0 and stopped < 5.0,
        "SIGTERM during a stuck query: exit 0 within 5 s, got rc %r after %.2f s" % (rc, stopped))
st, raw, r, _ = got["res"]
c.check(st == 503 and err(r)[0] == "UNAVAILABLE",
        "the stuck query answers 503 UNAVAILABLE: %r %.80r" % (st, raw))
c.done()
