#!/usr/bin/env python3
"""soak.py - a long run of `governor serve` at half its measured maximum throughput, with a
policy reload every minute; prints resident memory, open descriptors and p99 latency at the
start and at the end (and every chunk in between). Not part of CI: it takes --minutes (30 by
default) and the machine's whole attention.

    python3 tests/soak/soak.py [--binary build/governor] [--minutes 30]
    python3 tests/soak/soak.py --valgrind --minutes 2      # under memcheck: must be clean

How: the server runs on a temporary database (audit retention short, so that the file stays
bounded) and a copy of ./policies. wrk (tests/soak/soak.lua, 1,000 jobs) first measures the
maximum rate for --measure seconds, then runs --warmup seconds (while the jobs' metric windows
fill, so that the start figures are not those of a growing state) and then --minutes in chunks
of --chunk seconds, paced at half the maximum (each run's pacing corrected from the rate the
previous one reached; a machine too busy to give the server that rate gets less, and the
summary says so). A thread edits one
plugin file and POSTs /v1/policies/reload every --reload seconds while the load runs. After
each chunk (a second before its end, under load) the driver reads VmRSS and the descriptor
count from /proc. With --valgrind the
server runs under valgrind's memcheck (leaks: definite and indirect are errors), is stopped
with SIGTERM at the end, and the run fails unless memcheck reports no error.

Exit status: 0 when every request got a 2xx, every reload was accepted and (with --valgrind)
memcheck is clean; 1 otherwise. Python 3 stdlib and wrk only."""
import argparse
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
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def proc_figures(pid):
    """(resident MiB, open descriptors) of pid."""
    rss = 0.0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024.0
    return rss, len(os.listdir("/proc/%d/fd" % pid))


def post(port, path, body=b"", timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, body=body, headers={"Content-Type": "application/json"} if body
              else {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def run_wrk(port, seconds, base, delay_ms, conns, threads):
    """One wrk run; returns the figures its done() printed, plus the rate."""
    env = dict(os.environ, SOAK_BASE=str(base), SOAK_DELAY="%.4f" % delay_ms)
    out = subprocess.run(
        ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % seconds, "--timeout", "30s",
         "-s", os.path.join(HERE, "soak.lua"), "http://127.0.0.1:%d" % port],
        capture_output=True, text=True, env=env)
    m = re.search(r"^SOAK (\{.*\})$", out.stdout, re.M)
    if not m:
        sys.exit("wrk failed: %s %s" % (out.stdout, out.stderr))
    r = json.loads(m.group(1))
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6) if r["duration_us"] else 0.0
    return r


class Reloader(threading.Thread):
    """Every `every` seconds: change a plugin file (a new revision) and POST the reload."""

    def __init__(self, port, policies, every):
        super().__init__(daemon=True)
        self.port, self.every = port, every
        self.file = os.path.join(policies, "freeze.lua")
        self.stop = threading.Event()
        self.ok = self.failed = 0
        self.errors = []

    def run(self):
        n = 0
        while not self.stop.wait(self.every):
            n += 1
            with open(self.file, "a") as f:
                f.write("-- soak reload %d\n" % n)
            try:
                st, data = post(self.port, "/v1/policies/reload")
            except OSError as e:
                st, data = 0, str(e).encode()
            if st == 200:
                self.ok += 1
            else:
                self.failed += 1
                self.errors.append((st, data[:200]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "governor"))
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--chunk", type=int, default=60, help="seconds per wrk run (default 60)")
    ap.add_argument("--measure", type=int, default=10, help="seconds to measure the maximum")
    ap.add_argument("--warmup", type=int, default=None,
                    help="seconds at the soak rate before the start figures are taken, while "
                    "the jobs' metric windows fill (default 60; 0 with --valgrind)")
    ap.add_argument("--reload", type=float, default=60.0, help="seconds between reloads")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--retention", default="2 min", help="--audit-retention of the server")
    ap.add_argument("--valgrind", action="store_true", help="run the server under memcheck")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    if a.warmup is None:
        a.warmup = 0 if a.valgrind else 60
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed (apt-get install wrk)")
    if a.valgrind and not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (apt-get install valgrind)")

    tmp = tempfile.mkdtemp(prefix="governor-soak-")
    policies = os.path.join(tmp, "policies")
    shutil.copytree(os.path.join(ROOT, "policies"), policies)
    port = free_port()
    cmd = [a.binary, "serve", "--listen", "127.0.0.1:%d" % port, "--db",
           os.path.join(tmp, "soak.db"), "--policies", policies, "--log-level", "warn",
           "--audit-retention", a.retention]
    vlog = os.path.join(tmp, "valgrind.log")
    if a.valgrind:
        cmd = ["valgrind", "--tool=memcheck", "--leak-check=full",
               "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
               "--error-exitcode=99", "--log-file=" + vlog] + cmd
    log = open(os.path.join(tmp, "server.log"), "w")
    srv = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + (120 if a.valgrind else 20)
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if srv.poll() is not None or time.time() > deadline:
                sys.exit("the server did not start; see %s" % tmp)
            time.sleep(0.1)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print("soak: %s%s, %.1f min, db and policies in %s; load average %s" % (
        "valgrind memcheck: " if a.valgrind else "", a.binary, a.minutes, tmp, " ".join(load)),
        flush=True)

    # The maximum, on the same jobs the soak then runs.
    base = 0
    mx = run_wrk(port, a.measure, base, 0.0, a.conns, a.threads)
    base += (mx["requests"] // 500 + 2) * 10
    target = mx["rps"] / 2.0
    print("maximum: %.0f req/s over %d s (p99 %.2f ms); soak target %.0f req/s" % (
        mx["rps"], a.measure, mx["p99_us"] / 1000.0, target), flush=True)
    bad = mx["errors"] + mx["non2xx"]

    # The soak: chunks paced at the target, after a warm-up at the same pace.
    delay = a.conns * 1000.0 / target  # ms a connection waits between requests
    rel = Reloader(port, policies, a.reload)
    rel.start()
    if a.warmup > 0:
        r = run_wrk(port, a.warmup, base, delay, a.conns, a.threads)
        base += (r["requests"] // 500 + 2) * 10
        bad += r["errors"] + r["non2xx"]
        rss, fds = proc_figures(srv.pid)
        print("warm-up: %d s, %.0f req/s, p99 %.2f ms, rss %.1f MiB, fds %d" % (
            a.warmup, r["rps"], r["p99_us"] / 1000.0, rss, fds), flush=True)
        if r["rps"] > 0:
            delay = max(0.0, delay * r["rps"] / target)
    rows = []
    t_end = time.time() + a.minutes * 60.0
    while time.time() < t_end - 1:
        secs = int(min(a.chunk, max(1, t_end - time.time())))
        # Memory and descriptors are read under load, a second before the chunk ends.
        fig = []
        timer = threading.Timer(max(0.5, secs - 1.0), lambda: fig.append(proc_figures(srv.pid)))
        timer.start()
        r = run_wrk(port, secs, base, delay, a.conns, a.threads)
        timer.join()
        base += (r["requests"] // 500 + 2) * 10
        rss, fds = fig[0] if fig else proc_figures(srv.pid)
        rows.append((time.time(), r, rss, fds))
        bad += r["errors"] + r["non2xx"]
        print("  %5.1f min  %7.0f req/s  p99 %7.2f ms  rss %7.1f MiB  fds %4d  reloads %d" % (
            (time.time() - (t_end - a.minutes * 60.0)) / 60.0, r["rps"], r["p99_us"] / 1000.0,
            rss, fds, rel.ok), flush=True)
        if r["rps"] > 0:  # pace the next chunk from what this one reached
            delay = max(0.0, delay * r["rps"] / target)
    rel.stop.set()
    rel.join()

    srv.send_signal(signal.SIGTERM)
    try:
        rc = srv.wait(timeout=300 if a.valgrind else 60)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc = srv.wait()
    log.close()

    first, last = rows[0], rows[-1]
    total = sum(r[1]["requests"] for r in rows)
    secs = sum(r[1]["duration_us"] for r in rows) / 1e6
    print()
    print("soak: %.1f min, %d requests, %.0f req/s on average (target %.0f = half of %.0f)" % (
        secs / 60.0, total, total / secs if secs else 0, target, mx["rps"]))
    if secs and total / secs < 0.9 * target:
        print("note: %.0f%% of the target rate only: the machine (load average %s at the start) "
              "did not give the server more" % (100.0 * total / secs / target, " ".join(load)))
    print("reloads: %d accepted, %d refused %s" % (rel.ok, rel.failed, rel.errors[:2] or ""))
    print("%-22s %12s %12s" % ("", "start", "end"))
    print("%-22s %12.1f %12.1f" % ("resident memory (MiB)", first[2], last[2]))
    print("%-22s %12d %12d" % ("open descriptors", first[3], last[3]))
    print("%-22s %12.2f %12.2f" % ("p99 latency (ms)", first[1]["p99_us"] / 1000.0,
                                   last[1]["p99_us"] / 1000.0))
    print("%-22s %12.0f %12.0f" % ("requests/s", first[1]["rps"], last[1]["rps"]))
    ok = bad == 0 and rel.failed == 0 and rc == 0
    print("non-2xx or failed requests: %d; server exit status %d" % (bad, rc))
    if a.valgrind:
        text = open(vlog).read() if os.path.exists(vlog) else ""
        for line in text.splitlines():
            if re.search(r"ERROR SUMMARY|definitely lost|indirectly lost|possibly lost", line):
                print("valgrind:", line.split("== ", 1)[-1])
        clean = rc == 0 and re.search(r"ERROR SUMMARY: 0 errors", text) is not None
        print("memcheck:", "clean" if clean else "NOT clean (see %s)" % vlog)
        ok = ok and clean
    if not a.keep and ok:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("kept:", tmp)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
