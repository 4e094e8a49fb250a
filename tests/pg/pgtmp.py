"""pgtmp.py - a throwaway PostgreSQL cluster for tests (Python 3 stdlib only).

One cluster per test process, started on first use in a temporary directory on a free
127.0.0.1 port (with fsync on), and stopped when the process exits; `createdb()` makes a fresh
database in it and returns its libpq URL. PostgreSQL refuses to run as root: as root the
cluster runs as the `postgres` user (runuser), who owns the directory. `available()` says
whether the PostgreSQL server binaries are installed."""
import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading

_lock = threading.Lock()
_cluster = None
_n = 0


def bindir():
    """The directory of initdb and pg_ctl (Debian: /usr/lib/postgresql/NN/bin), or None."""
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    p = shutil.which("pg_ctl")
    return os.path.dirname(p) if p else None


def available():
    return bindir() is not None


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cluster:
    def __init__(self):
        self.bin = bindir()
        if not self.bin:
            raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
        self.root = os.geteuid() == 0
        self.dir = tempfile.mkdtemp(prefix="governor-pg-")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        if self.root:
            os.chmod(self.dir, 0o755)
            shutil.chown(self.dir, "postgres", "postgres")
        self.user = "postgres"
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", self.user, "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self.port = _free_port()
        opts = ("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=on -c max_connections=200"
                % (self.port, self.dir))
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o", opts,
                  "start")
        self.up = True
        atexit.register(self.stop)

    def _cmd(self, name, *args):
        cmd = [os.path.join(self.bin, name)] + list(args)
        return (["runuser", "-u", "postgres", "--"] + cmd) if self.root else cmd

    def _run(self, name, *args):
        r = subprocess.run(self._cmd(name, *args), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, cwd=self.dir, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s" % (name, r.stdout))
        return r.stdout

    def url(self, db):
        return "postgresql://%s@127.0.0.1:%d/%s" % (self.user, self.port, db)

    def createdb(self, name):
        psql = shutil.which("psql") or os.path.join(self.bin, "psql")
        subprocess.run([psql, "-q", "-v", "ON_ERROR_STOP=1", self.url("postgres"), "-c",
                        'CREATE DATABASE "%s" TEMPLATE template0' % name],
                       check=True, stdout=subprocess.DEVNULL)
        return self.url(name)

    def stop(self):
        if not self.up:
            return
        self.up = False
        subprocess.run(self._cmd("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


def cluster():
    """The process's cluster, started on first use."""
    global _cluster
    with _lock:
        if _cluster is None:
            _cluster = Cluster()
        return _cluster


def createdb(prefix="governor"):
    """A fresh database in the process's cluster: its libpq URL."""
    global _n
    c = cluster()
    with _lock:
        _n += 1
        name = "%s_%d_%d" % (prefix, os.getpid(), _n)
    return c.createdb(name)


def query(url, sql):
    """Rows of sql (psql's unaligned output, one tuple of strings per row; NULL is '')."""
    psql = shutil.which("psql") or os.path.join(bindir(), "psql")
    r = subprocess.run([psql, "-X", "-q", "-A", "-t", "-F", "\x1f", "-R", "\x1e",
                        "-v", "ON_ERROR_STOP=1", url, "-c", sql],
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
        psql = shutil.which("psql") or os.path.join(bindir(), "psql")
        self.p = subprocess.Popen([psql, "-X", "-q", "-A", "-t", url], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
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
