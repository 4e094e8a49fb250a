"""common.py - what the replica tests and the replica benchmark share: a throwaway PostgreSQL
(tests/pg/pgtmp.py), governor replicas on it, HAProxy started from docs/haproxy.cfg with the
ports filled in, a client that retries as the README's client contract says, and the skip
rules (exit 77, the reason printed) for a machine without PostgreSQL, HAProxy, or a binary
that does not take `--db postgresql://`. Python 3 stdlib only."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "pg"))
sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
import pgtmp  # noqa: E402
import gov  # noqa: E402

SKIP = pgtmp.SKIP
HAPROXY_CFG = os.path.join(ROOT, "docs", "haproxy.cfg")


def skip(why):
    print("SKIP: " + why, flush=True)
    sys.exit(SKIP)


def need_tools(haproxy=True):
    """Exits 77 when PostgreSQL (or HAProxy) is not installed."""
    why = pgtmp.missing()
    if why:
        skip(why)
    if haproxy and not shutil.which("haproxy"):
        skip("HAProxy is not installed (apt-get install haproxy)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_replica(url, args=(), tmp=None):
    """A `governor serve --db URL` on a free port (gov.Server). Raises RuntimeError when the
    binary refuses it."""
    return gov.Server(db=url, args=list(args), tmp=tmp, start_timeout=60)


def need_pg_support(pg, url):
    """Exits 77 when the binary does not store in PostgreSQL: it refuses the URL, or starts
    without creating governor's tables there (it took the URL for a file name)."""
    try:
        s = start_replica(url)
    except RuntimeError as e:
        tail = str(e).strip().splitlines()[-1:] or [""]
        skip("this governor does not take --db postgresql:// (%s)" % tail[0][:200])
    tables = pg.psql(url, "SELECT to_regclass('jobs') IS NOT NULL").strip()
    s.stop()
    if tables != "t":
        skip("this governor started on --db postgresql:// without creating its tables there")


class HAProxy:
    """HAProxy from docs/haproxy.cfg: its frontend on a free port, its servers those given."""

    def __init__(self, ports, tmp):
        text = open(HAPROXY_CFG).read()
        self.port = free_port()
        text = re.sub(r"bind 127\.0\.0\.1:\d+", "bind 127.0.0.1:%d" % self.port, text)
        lines, servers = [], 0
        for line in text.splitlines():
            m = re.match(r"^(\s*)server g(\d) 127\.0\.0\.1:\d+ check$", line)
            if m:
                if servers == 0:
                    for k, p in enumerate(ports):
                        lines.append("%sserver g%d 127.0.0.1:%d check" % (m.group(1), k + 1, p))
                servers += 1
                continue
            lines.append(line)
        if servers == 0:
            raise RuntimeError("docs/haproxy.cfg has no `server gN 127.0.0.1:PORT check` lines")
        self.cfg = os.path.join(tmp, "haproxy.cfg")
        with open(self.cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log = open(os.path.join(tmp, "haproxy.log"), "w")
        # -db: foreground, no daemon; stopped by us
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", self.cfg], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("haproxy exited: " + open(self.log.name).read())
            try:
                st, _, _ = request(self.port, "GET", "/readyz")
                if st == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        # every server checked up (rise 2, inter 1 s) before the load starts
        time.sleep(2.5)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)  # soft stop
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def request(port, method, path, body=None, timeout=30):
    """One request on a new connection: (status, parsed JSON or text, headers)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body) if body is not None else None
        c.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        raw = r.read()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw.decode(errors="replace")
        return r.status, parsed, dict(r.getheaders())
    finally:
        c.close()


def post_until_decided(port, job, body, give_up_s=60, stats=None):
    """Sends one sample the way the README's client contract says: the same request again
    after a dropped connection or a 503 (after its Retry-After, at most 1 s here), until a
    200. Returns (status, answer) of the last try; stats (a dict) counts retries by cause."""
    deadline = time.time() + give_up_s
    while True:
        try:
            st, r, h = request(port, "POST", "/v1/jobs/%s/metrics" % job, body)
        except (OSError, http.client.HTTPException) as e:
            st, r, h = 0, str(e), {}
        if st == 200 or time.time() > deadline or (st not in (0, 502, 503, 504)):
            return st, r
        if stats is not None:
            code = r.get("error", {}).get("code") if isinstance(r, dict) else None
            key = "%d %s" % (st, code or "")
            stats[key] = stats.get(key, 0) + 1
        try:
            wait = min(1.0, float(h.get("Retry-After", "0.2")))
        except ValueError:
            wait = 0.2
        time.sleep(max(0.05, wait))


def trace(jobs, j, i):
    """Sample i of job j: a load that rises and falls, so that decisions change over time and
    depend on the window and the scaling history (deterministic)."""
    k = jobs.index(j)
    rate = 1000.0 * (1 + (i % 30) / 10.0) * (1 + k / 8.0)
    busy = min(990.0, 300.0 + 20.0 * (i % 30) + 10 * k)
    cfg = {"job.autoscaler.metrics.window": "3 min",
           "job.autoscaler.stabilization.interval": "1 min",
           "job.autoscaler.scale-down.interval": "2 min"}
    return gov.sample(i, rate=rate, busy_src=busy, busy_agg=min(990.0, busy + 100), config=cfg)


def stored_pg(pg, url):
    """Every stored decision on PostgreSQL: [(id, job, at, action, reason, parallelism)]."""
    out = pg.psql(url, "SELECT id, job, at, action, reason, parallelism FROM audit_decisions "
                       "ORDER BY id", "-F", "\t")
    rows = []
    for line in out.splitlines():
        if line:
            i, job, at, action, reason, par = line.split("\t")
            rows.append((int(i), job, int(at), action, reason,
                         sorted(json.loads(par).items())))
    return rows


def stored_sqlite(db):
    import sqlite3
    c = sqlite3.connect(db)
    rows = [(i, job, at, action, reason, sorted(json.loads(par).items()))
            for i, job, at, action, reason, par in c.execute(
                "SELECT id, job, at, action, reason, parallelism FROM audit_decisions "
                "ORDER BY id")]
    c.close()
    return rows


def by_job(rows):
    out = {}
    for _, job, at, action, reason, par in rows:
        out.setdefault(job, []).append((at, action, reason, par))
    return out


def tmpdir(prefix):
    return tempfile.mkdtemp(prefix=prefix)
