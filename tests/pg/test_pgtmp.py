#!/usr/bin/env python3
"""The throwaway PostgreSQL cluster of the tests (tests/pg/pgtmp.py): it starts on 127.0.0.1
with fsync on, creates databases, runs a command with GOVERNOR_PG_URL set, and leaves nothing
behind: not after its `with` block, not after an exception, not after SIGTERM. Exits 77 (CTest
skip) when PostgreSQL is not installed."""
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pgtmp  # noqa: E402

why = pgtmp.missing()
if why:
    print("SKIP: " + why)
    sys.exit(pgtmp.SKIP)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


with pgtmp.Cluster() as pg:
    d, port = pg.dir, pg.port
    url = pg.create_db("t1")
    check(url == "postgresql://postgres@127.0.0.1:%d/t1" % port, "create_db's URL: " + url)
    check(pg.psql(url, "SHOW fsync").strip() == "on", "fsync is on")
    check(pg.psql(url, "SHOW listen_addresses").strip() == "127.0.0.1", "127.0.0.1 only")
    check(pg.psql(url, "SELECT current_database()").strip() == "t1", "the database exists")
    check(pg.psql(url, "SELECT 1; SELECT 2").split() == ["1", "2"], "psql runs statements")
    pg.psql(url, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
    sb = pg.standby()
    pg.psql(url, "INSERT INTO t VALUES (2)")
    pg.wait_replayed(sb)
    check(pg.psql(sb.url("t1"), "SELECT count(*), pg_is_in_recovery() FROM t").strip() == "2|t",
          "a hot standby streams from it")
    sbdir = sb.dir
    sb.stop()
    check(not os.path.exists(sbdir), "the standby's directory is removed")
    try:
        pg.psql(url, "SELECT * FROM nothing_here")
        check(False, "psql raises on an error")
    except RuntimeError as e:
        check("nothing_here" in str(e), "psql raises with the message: %s" % e)
check(not os.path.exists(d), "the directory is removed after the with block")
check(not listening(port), "the server is stopped after the with block")

# an exception inside the block still removes everything
try:
    with pgtmp.Cluster() as pg:
        d, port = pg.dir, pg.port
        raise KeyError("boom")
except KeyError:
    pass
check(not os.path.exists(d) and not listening(port), "an exception stops and removes it")

# the command form: CMD sees GOVERNOR_PG_URL, its exit status is pgtmp's
show = ("import os, subprocess, sys; u = os.environ['GOVERNOR_PG_URL']; print(u, flush=True); "
        "sys.exit(3)")
p = subprocess.run([sys.executable, os.path.join(HERE, "pgtmp.py"), "run", "--",
                    sys.executable, "-c", show], capture_output=True, text=True, timeout=180)
check(p.returncode == 3, "run passes the command's status on: %d %s" % (p.returncode, p.stderr))
check(p.stdout.startswith("postgresql://postgres@127.0.0.1:") and
      p.stdout.strip().endswith("/governor"), "run sets GOVERNOR_PG_URL: %r" % p.stdout)

# SIGTERM to the command form: the cluster is stopped and removed before it exits
wait = ("import os, time; print(os.environ['GOVERNOR_PG_URL'], flush=True); time.sleep(120)")
p = subprocess.Popen([sys.executable, os.path.join(HERE, "pgtmp.py"), "run", "--",
                      sys.executable, "-c", wait], stdout=subprocess.PIPE, text=True)
line = p.stdout.readline().strip()
port = int(line.split(":")[2].split("/")[0]) if line else 0
check(port > 0 and listening(port), "the cluster is up under the command: %s" % line)
p.send_signal(signal.SIGTERM)
rc = p.wait(timeout=120)
check(rc != 0, "SIGTERM ends run (status %d)" % rc)
deadline = time.monotonic() + 30
while listening(port) and time.monotonic() < deadline:
    time.sleep(0.2)
check(not listening(port), "SIGTERM stops the cluster")
left = subprocess.run(["pgrep", "-f", "pgtmp-.*-p %d" % port], capture_output=True, text=True)
check(left.stdout.strip() == "", "no postgres process of it is left")

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
