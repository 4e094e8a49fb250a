"""gov.py - helpers of the API tests: start the real `governor serve` on a free 127.0.0.1
port with a temporary database, speak HTTP to it, build samples, and fingerprint the
stored rows so that a test can prove a bad request stored nothing. Python 3 stdlib only.

GOVERNOR_TEST_PG=1 in the environment runs the same tests against PostgreSQL: each server
started without a db gets a fresh database of a throwaway cluster (tests/pg/pgtmp.py) as its
--db, and fingerprint() and count() read it there."""
import atexit
import hashlib
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

BINARY = sys.argv[1] if len(sys.argv) > 1 else "build/governor"
PG = os.environ.get("GOVERNOR_TEST_PG") == "1"
if PG:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pg"))
    import pgtmp  # noqa: E402


def is_pg(db):
    return isinstance(db, str) and db.startswith(("postgresql://", "postgres://"))
T0 = 1764410400000  # 2025-11-29T10:00:00Z


class Server:
    """One governor process. `db` defaults to a fresh file in a temporary directory (under
    GOVERNOR_TEST_PG=1: a fresh PostgreSQL database)."""

    def __init__(self, db=None, args=(), tmp=None, start_timeout=10):
        self.tmp = tmp or tempfile.mkdtemp(prefix="governor-api-")
        if not db and PG:
            db = pgtmp.createdb()
        self.db = db or os.path.join(self.tmp, "governor.db")
        self.log_path = os.path.join(self.tmp, "server-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--listen", "127.0.0.1:0", "--db", self.db] + list(args),
            stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = None
        deadline = time.time() + start_timeout  # a migration of a large history takes longer
        while time.time() < deadline and self.port is None:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: " + self.logs())
            m = re.search(r'msg="listening" addr=127\.0\.0\.1:(\d+)', self.logs())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.02)
        if self.port is None:
            raise RuntimeError("server did not start: " + self.logs())
        atexit.register(self._reap)

    def _reap(self):
        """A test that ends early (an exception) leaves no server behind."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def logs(self):
        with open(self.log_path) as f:
            return f.read()

    def conn(self, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def req(self, method, path, body=None, headers=None, conn=None, ctype="application/json"):
        """Returns (status, parsed JSON or text, headers). body: dict -> JSON, str/bytes as is."""
        c = conn or self.conn()
        h = dict(headers or {})
        if body is not None:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
            if ctype:
                h.setdefault("Content-Type", ctype)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        if conn is None:
            c.close()
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = data.decode(errors="replace")
        return r.status, parsed, dict(r.getheaders())

    def stop(self, sig=signal.SIGTERM, timeout=20):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        self.log.close()
        return rc

    def kill(self):
        return self.stop(signal.SIGKILL)


def vertex(vid, p, inputs=(), busy=500.0, rin=0.0, rout=None, rate=None, pending=None, maxp=128):
    m = {"busy_ms_per_s": busy, "records_in": rin, "records_out": rin if rout is None else rout}
    if rate is not None:
        m["records_in_per_s"] = rate
    if pending is not None:
        m["pending_records"] = pending
    return {"id": vid, "parallelism": p, "max_parallelism": maxp,
            "inputs": [{"from": f, "ship": "HASH"} for f in inputs], "metrics": m}


def sample(i, p_src=4, p_agg=4, rate=1000.0, busy_src=700.0, busy_agg=800.0, step_ms=30000,
           config=None):
    """The i-th sample of a steady two-vertex job (source -> agg), step_ms apart."""
    at = T0 + i * step_ms
    rin = rate * i * step_ms / 1000.0
    s = {"at": at, "running_since": T0 - 600000, "status": "RUNNING",
         "vertices": [vertex("source", p_src, busy=busy_src, rin=rin, rate=rate, pending=5000),
                      vertex("agg", p_agg, ["source"], busy=busy_agg, rin=rin, rout=rin / 10)]}
    if config is not None:
        s["config"] = config
    return s


def fingerprint(db):
    """A hash of every row of every table (WAL included): equal before and after = nothing
    stored."""
    if is_pg(db):
        return _pg_fingerprint(db)
    c = sqlite3.connect(db)
    h = hashlib.sha256()
    tables = [r[0] for r in c.execute(
        "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    for t in tables:
        # ORDER BY every column: also right for WITHOUT ROWID tables.
        n = len(c.execute("SELECT * FROM %s LIMIT 0" % t).description)
        order = ", ".join(str(i + 1) for i in range(n))
        for row in c.execute("SELECT * FROM %s ORDER BY %s" % (t, order)):
            h.update(repr(row).encode())
    c.close()
    return h.hexdigest()


def _pg_fingerprint(db):
    h = hashlib.sha256()
    tables = [r[0] for r in pgtmp.query(
        db, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
        "AND table_type = 'BASE TABLE' ORDER BY table_name COLLATE \"C\"")]
    if tables:
        sql = " UNION ALL ".join("SELECT '%s'::text AS t, x::text AS r FROM %s x" % (t, t)
                                 for t in tables)
        sql = "SELECT t, r FROM (%s) u ORDER BY t COLLATE \"C\", r COLLATE \"C\"" % sql
        for row in pgtmp.query(db, sql):
            h.update(repr(row).encode())
    return h.hexdigest()


class _Rows(list):
    def fetchone(self):
        return self[0] if self else None

    def fetchall(self):
        return list(self)


class _PGConn:
    """The part of a sqlite3 connection the tests use to read a store, on PostgreSQL: execute
    (with ? parameters, numbers and strings) and close."""

    def __init__(self, url):
        self.url = url

    def execute(self, sql, params=()):
        parts = sql.split("?")
        if len(parts) != len(params) + 1:
            raise ValueError("parameters do not match: %r" % sql)
        text = parts[0]
        for p, rest in zip(params, parts[1:]):
            lit = ("'%s'" % p.replace("'", "''")) if isinstance(p, str) else repr(p)
            text += lit + rest
        return _Rows(pgtmp.rows(self.url, text))

    def close(self):
        pass


def connect(db, **kw):
    """A connection that reads the store db: sqlite3's, or on PostgreSQL a small stand-in."""
    return _PGConn(db) if is_pg(db) else sqlite3.connect(db, **kw)


def lock_store(db):
    """Holds the store's write lock until .execute("ROLLBACK") and .close(): writers wait."""
    if is_pg(db):
        return pgtmp.Locker(db)
    con = sqlite3.connect(db, isolation_level=None, timeout=10)
    con.execute("BEGIN EXCLUSIVE")
    return con


def count(db, table):
    if is_pg(db):
        return int(pgtmp.query(db, "SELECT count(*) FROM %s" % table)[0][0])
    c = sqlite3.connect(db)
    n = c.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
    c.close()
    return n


class Checks:
    """Collects failures so that one run reports all of them, then exits non-zero."""

    def __init__(self):
        self.failed = 0
        self.passed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)


class Probe:
    """Another job's decisions, timed while a test makes the server do something else: the
    measure of "other jobs keep answering". Each probe decision opens a new connection (as a
    client that does so would) and posts the next sample of a steady job of its own."""

    def __init__(self, srv, job="probe-job"):
        self.srv = srv
        self.job = job
        self.i = 0

    def one(self, timeout=60):
        """One decision of the probe job; its latency in seconds (timeout: the latency)."""
        self.i += 1
        body = json.dumps(sample(self.i)).encode()
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=timeout)
            c.request("POST", "/v1/jobs/%s/metrics" % self.job, body=body,
                      headers={"Content-Type": "application/json"})
            c.getresponse().read()
            c.close()
        except OSError:
            pass
        return time.monotonic() - t0

    def baseline(self, n=20):
        """The idle latency: the median of n decisions, none concurrent with anything."""
        lat = sorted(self.one() for _ in range(n))
        return lat[len(lat) // 2]

    def during(self, fn, pause=0.01):
        """Runs fn() while the probe decides in a loop on another thread; returns (fn's result,
        the probe's worst latency while fn ran). The loop's last decision, started before fn
        returned, is waited for, so a stall that outlasts fn is still counted."""
        stop = threading.Event()
        worst = [0.0]

        def loop():
            while not stop.is_set():
                worst[0] = max(worst[0], self.one())
                time.sleep(pause)

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        try:
            out = fn()
        finally:
            stop.set()
            t.join()
        return out, worst[0]

    def ratio(self, fn, base=None):
        """(fn's result, the probe's worst latency during fn over its idle median)."""
        base = base or self.baseline()
        out, worst = self.during(fn)
        return out, worst / max(base, 1e-4)
