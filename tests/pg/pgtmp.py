#!/usr/bin/env python3
"""pgtmp.py - a throwaway PostgreSQL cluster for tests (Python 3 stdlib only).

As a module:

    with pgtmp.Cluster() as pg:          # initdb, start, wait until it accepts connections
        url = pg.create_db("governor")   # postgresql://postgres@127.0.0.1:PORT/governor
        pg.psql(url, "SELECT 1")         # runs psql, returns its output (raises on error)
        sb = pg.standby()                # a hot standby streaming from it (sb.url("governor"))
        pg.wait_replayed(sb)             # until it has replayed what pg wrote
    # stopped and removed here, also after an exception

As a command:

    python3 tests/pg/pgtmp.py run [--db NAME] -- CMD ARG...   CMD with GOVERNOR_PG_URL set
    python3 tests/pg/pgtmp.py check                          exit 0, or SKIP (77) and why

The cluster lives in a new temporary directory, listens on 127.0.0.1 on a free port (and on a
Unix socket in that directory only), runs with fsync on, trusts local connections (the
superuser is `postgres`), and is stopped (pg_ctl -m immediate) and removed on exit: at the end
of the `with` block, at interpreter exit, and on SIGTERM / SIGINT / SIGHUP (which end the
process after the cleanup). PostgreSQL refuses to run as root: as root every PostgreSQL
program runs through `runuser -u postgres` in a directory chown'd to that user; as any other
user it runs directly.

The binaries come from $PG_BINDIR, else /usr/lib/postgresql/15/bin, else pg_config --bindir.
"""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77  # CTest SKIP_RETURN_CODE of the tests that need PostgreSQL
SUPERUSER = "postgres"
OS_USER = "postgres"  # the account PostgreSQL runs as when we are root


def bindir():
    """The directory of pg_ctl, initdb and postgres, or None when PostgreSQL is missing."""
    cands = [os.environ.get("PG_BINDIR"), "/usr/lib/postgresql/15/bin"]
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            cands.append(subprocess.run([pg_config, "--bindir"], capture_output=True,
                                        text=True, timeout=10).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    for d in cands:
        if d and all(os.access(os.path.join(d, p), os.X_OK)
                     for p in ("pg_ctl", "initdb", "postgres", "psql")):
            return d
    return None


def missing():
    """Why a cluster cannot start here (a sentence), or None when it can."""
    if not bindir():
        return "PostgreSQL is not installed (no pg_ctl; apt-get install postgresql)"
    if os.geteuid() == 0:
        if not shutil.which("runuser"):
            return "running as root without runuser"
        try:
            import pwd
            pwd.getpwnam(OS_USER)
        except KeyError:
            return "running as root and there is no '%s' user to run PostgreSQL" % OS_USER
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """One temporary cluster. start() (or `with`) brings it up; stop() removes it."""

    def __init__(self, bindir_=None, settings=None):
        self.bin = bindir_ or bindir()
        if not self.bin:
            raise RuntimeError(missing())
        self.settings = dict(settings or {})
        self.dir = None
        self.port = None
        self.proc_env = dict(os.environ, LC_ALL="C", LANG="C")
        self._old = {}

    # -- running PostgreSQL programs ------------------------------------------------------
    def _cmd(self, prog, *args):
        path = prog if os.path.isabs(prog) else os.path.join(self.bin, prog)
        argv = [path] + list(args)
        if os.geteuid() == 0:
            argv = ["runuser", "-u", OS_USER, "--"] + argv
        return argv

    def _run(self, prog, *args, input=None, timeout=120, check=True):
        p = subprocess.run(self._cmd(prog, *args), input=input, capture_output=True, text=True,
                           timeout=timeout, env=self.proc_env, cwd=self.dir)
        if check and p.returncode != 0:
            raise RuntimeError("%s failed (%d): %s%s" % (prog, p.returncode, p.stderr, p.stdout))
        return p

    # -- life cycle -----------------------------------------------------------------------
    def start(self):
        self._make_dir()
        try:
            self._run("initdb", "-D", os.path.join(self.dir, "data"), "-U", SUPERUSER, "-A",
                      "trust", "-E", "UTF8", "--locale=C", "--no-sync")
            return self._serve()
        except BaseException:
            self.stop()
            raise

    def standby(self):
        """A hot standby of this cluster: a new Cluster (its own directory and port) copied with
        pg_basebackup and streaming from this one, started and accepting read-only queries.
        Stop it before this one (or let both stop at exit)."""
        sb = Cluster(self.bin, self.settings)
        sb._make_dir()
        try:
            sb._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER,
                    "-D", os.path.join(sb.dir, "data"), "-R", "-X", "stream", "-c", "fast",
                    "--no-sync")
            return sb._serve()
        except BaseException:
            sb.stop()
            raise

    def wait_replayed(self, standby, timeout=60):
        """Waits until standby has replayed everything this cluster has written so far."""
        lsn = self.psql(self.url(), "SELECT pg_current_wal_lsn()").strip()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            done = self.psql(standby.url(), "SELECT pg_last_wal_replay_lsn() >= '%s'" % lsn)
            if done.strip() == "t":
                return
            time.sleep(0.1)
        raise RuntimeError("the standby did not replay up to %s in %d s" % (lsn, timeout))

    def _make_dir(self):
        self.dir = tempfile.mkdtemp(prefix="pgtmp-")
        self._hook()
        if os.geteuid() == 0:
            import pwd
            pw = pwd.getpwnam(OS_USER)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)

    def halt(self, mode="immediate"):
        """Stops the server but keeps its data (a crash with "immediate"); resume() starts it
        again on the same port, so that URLs handed out stay valid."""
        self._run("pg_ctl", "-D", os.path.join(self.dir, "data"), "-m", mode, "-w", "stop")

    def resume(self):
        return self._serve(port=self.port)

    def _serve(self, port=None):
        data = os.path.join(self.dir, "data")
        opts = {"listen_addresses": "127.0.0.1", "unix_socket_directories": self.dir,
                "fsync": "on", "max_connections": "100", "shared_buffers": "32MB",
                "log_min_messages": "warning"}
        opts.update(self.settings)
        last = None
        for _ in range(5):  # a free port may be taken between the probe and the bind
            self.port = port or free_port()
            o = " ".join("-c %s=%s" % (k, v) for k, v in opts.items())
            o += " -p %d" % self.port
            p = self._run("pg_ctl", "-D", data, "-l", os.path.join(self.dir, "log"), "-o", o,
                          "-w", "-t", "120", "start", check=False, timeout=180)
            if p.returncode == 0 and self._ready():
                return self
            last = p.stderr + p.stdout + self.log()[-2000:]
            self._run("pg_ctl", "-D", data, "-m", "immediate", "stop", check=False)
        raise RuntimeError("PostgreSQL did not start: " + last)

    def _ready(self, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            p = self._run("pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER,
                          "-d", "postgres", check=False, timeout=30)
            if p.returncode == 0:
                return True
            time.sleep(0.2)
        return False

    def stop(self):
        """Stops the server and removes the directory; safe to call more than once."""
        d, self.dir = self.dir, None
        if not d:
            return
        data = os.path.join(d, "data")
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            try:
                subprocess.run(self._cmd("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"),
                               capture_output=True, timeout=60, env=self.proc_env)
            except (OSError, subprocess.SubprocessError):
                pass
        shutil.rmtree(d, ignore_errors=True)
        self._unhook()

    def log(self):
        try:
            with open(os.path.join(self.dir, "log"), errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # cleanup on exit and on the signals that end a test run (ctest's timeout sends SIGTERM)
    def _hook(self):
        atexit.register(self.stop)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            try:
                self._old[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread
                pass

    def _unhook(self):
        atexit.unregister(self.stop)
        for sig, old in self._old.items():
            try:
                signal.signal(sig, old)
            except (ValueError, TypeError):
                pass
        self._old = {}

    def _on_signal(self, sig, frame):
        self.stop()
        sys.exit(128 + sig)

    # -- databases ------------------------------------------------------------------------
    def url(self, db="postgres", user=SUPERUSER):
        return "postgresql://%s@127.0.0.1:%d/%s" % (user, self.port, db)

    def create_db(self, name):
        """Creates database `name` (a plain identifier) and returns its URL."""
        if not name.replace("_", "").isalnum():
            raise ValueError("database name must be letters, digits and _: %r" % name)
        self.psql(self.url(), 'CREATE DATABASE "%s"' % name)
        return self.url(name)

    def psql(self, url, sql, *args, timeout=120):
        """Runs sql (one or more statements, stopping at the first error) through psql on url;
        returns its output (unaligned, tuples only, fields separated by |). Raises
        RuntimeError with psql's message on an error."""
        p = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t",
                            "-v", "ON_ERROR_STOP=1", "-d", url] + list(args),
                           input=sql, capture_output=True, text=True, timeout=timeout,
                           env=self.proc_env)
        if p.returncode != 0:
            raise RuntimeError("psql: %s" % p.stderr.strip())
        return p.stdout


# -- one cluster per test process (tests/api/gov.py under GOVERNOR_TEST_PG=1) -------------
_lock = threading.Lock()
_cluster = None
_n = 0


def cluster():
    """The process's cluster, started on first use (stopped at exit)."""
    global _cluster
    with _lock:
        if _cluster is None:
            c = Cluster()
            c.start()
            _cluster = c
        return _cluster


def createdb(prefix="governor"):
    """A fresh database in the process's cluster: its libpq URL."""
    global _n
    c = cluster()
    with _lock:
        _n += 1
        name = "%s_%d_%d" % (prefix, os.getpid(), _n)
    return c.create_db(name)


def query(url, sql):
    """Rows of sql (psql's unaligned output, one tuple of strings per row; NULL is '')."""
    r = subprocess.run([os.path.join(bindir(), "psql"), "-X", "-q", "-A", "-t", "-F", "\x1f",
                        "-R", "\x1e", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("psql: " + r.stderr.strip())
    out = r.stdout
    if out.endswith("\n"):
        out = out[:-1]
    return [tuple(row.split("\x1f")) for row in out.split("\x1e") if row != ""]


def rows(url, sql):
    """Rows of a SELECT as tuples of typed values (numbers, strings, None; through JSON)."""
    import json
    out = query(url, "SELECT coalesce(json_agg(t), '[]') FROM (%s) t" % sql)
    return [tuple(r.values()) for r in json.loads(out[0][0], object_pairs_hook=dict)]


class Locker:
    """A session holding an EXCLUSIVE lock on tables (writes wait, reads go on) until
    execute("ROLLBACK") or close(): what a SQLite test does with BEGIN EXCLUSIVE."""

    def __init__(self, url, tables=("jobs", "decisions")):
        self.p = subprocess.Popen([os.path.join(bindir(), "psql"), "-X", "-q", "-A", "-t", url],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.p.stdin.write("BEGIN; LOCK TABLE %s IN EXCLUSIVE MODE; SELECT 'locked';\n"
                           % ", ".join(tables))
        self.p.stdin.flush()
        if self.p.stdout.readline().strip() != "locked":
            raise RuntimeError("psql did not take the lock")

    def execute(self, sql):
        self.p.stdin.write(sql + ";\n")
        self.p.stdin.flush()

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=20)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run CMD with GOVERNOR_PG_URL pointing at a new database")
    r.add_argument("--db", default="governor", help="name of the database to create")
    r.add_argument("argv", nargs=argparse.REMAINDER)
    sub.add_parser("check", help="exit 0 if a cluster can start here, else 77 and why")
    a = ap.parse_args(argv)
    why = missing()
    if a.cmd == "check":
        if why:
            print("SKIP: " + why)
            return SKIP
        return 0
    cmd = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    if not cmd:
        ap.error("run needs a command after --")
    if why:
        print("SKIP: " + why, file=sys.stderr)
        return SKIP
    with Cluster() as pg:
        env = dict(os.environ, GOVERNOR_PG_URL=pg.create_db(a.db))
        p = subprocess.Popen(cmd, env=env)
        try:
            return p.wait()
        except BaseException:
            p.terminate()
            p.wait()
            raise


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
