#!/usr/bin/env python3
"""The decide benchmark: every figure of the performance targets, each beside its baseline
from the same run (tests/bench/README.md says what each figure is and how it is measured).

The load: 4-vertex jobs (source -> map -> HASH aggregation -> sink, busy time as {min, avg,
max}) posted round-robin by build/bench_load over 1,000 jobs, each job's samples 10 s of job
time apart, to `governor serve` at synchronous=FULL (every reply after its commit). Two sets
of jobs live in one server: `np-*` run without plugins (advisor mode, so that each decision
computes a scale-up and the job's state stays steady), `pl-*` with the `freeze` executor
(vetoing every change) and the `external_limit` evaluator (capping the sink): five plugin
calls a decision. Both sets are warmed up until their metric windows are full before anything
is measured. The baselines run in the same run: `bench_bare fixed` (drain the body, answer a
fixed 1 KB JSON) and `bench_bare parse` (parse the body with jansson).

usage: tests/bench/run.sh [--build DIR] [--quick] [--seconds S] [--repeat N] [--scale]
                          [--scale-jobs N] [--no-main] [--json FILE] [--smoke]
"""
import argparse
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WINDOW_SAMPLES = 90  # 15 min of 10 s samples: the default job.autoscaler.metrics.window
SAMPLES_PER_DAY = 86400 // 10
RETENTION_DAYS = 90  # the default --audit-retention

PLUGIN_CONFIG = {
    "job.autoscaler.scaling.enabled": "true",
    "job.autoscaler.scaling.custom-executors": "freeze",
    "job.autoscaler.scaling.custom-executor.freeze.until": "2099-01-01T00:00:00Z",
    "job.autoscaler.metrics.custom-evaluators": "external_limit",
    "job.autoscaler.metrics.custom-evaluator.external_limit.vertex": "sink",
    "job.autoscaler.metrics.custom-evaluator.external_limit.max-rate": "120",
}
# The server's job defaults: advisor mode, so that a job without plugins computes its
# scale-up on every sample and keeps its state (the plugin jobs turn scaling on again and
# have freeze veto it).
SERVER_CONFIG = "job.autoscaler.scaling.enabled = false\n"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, what, timeout=60):
    t_end = time.time() + timeout
    while time.time() < t_end:
        if proc.poll() is not None:
            raise SystemExit(f"bench: {what} exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"bench: {what} does not listen on {port}")


def cpu_seconds(pid):
    """(user, system) CPU seconds of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tck, int(fields[12]) / tck


def rss_mib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) / 1024
    return out


def clone_jobs(db, prefix, n0, n):
    """Jobs prefix-n0 .. prefix-(n-1) as copies of prefix-(i mod n0): their jobs and job_window
    rows, in one transaction."""
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode=WAL")
    cols = [r[1] for r in c.execute("PRAGMA table_info(jobs)") if r[1] != "job"]
    wcols = [r[1] for r in c.execute("PRAGMA table_info(job_window)") if r[1] != "job"]
    c.execute("BEGIN")
    for i in range(n0, n):
        src, dst = f"{prefix}-{i % n0}", f"{prefix}-{i}"
        c.execute(f"INSERT INTO jobs (job, {', '.join(cols)}) SELECT ?, {', '.join(cols)} "
                  "FROM jobs WHERE job = ?", (dst, src))
        c.execute(f"INSERT INTO job_window (job, {', '.join(wcols)}) SELECT ?, "
                  f"{', '.join(wcols)} FROM job_window WHERE job = ?", (dst, src))
    c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()


class Server:
    """A process that listens on a port of its own; stopped with SIGTERM."""

    def __init__(self, name, argv, port, logpath, env=None, timeout=60):
        self.name, self.argv, self.port = name, argv, port
        self.logf = open(logpath, "ab")
        self.proc = subprocess.Popen(argv, stdout=self.logf, stderr=self.logf, env=env)
        wait_port(port, self.proc, name, timeout)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        return self.proc.returncode


class Bench:
    def __init__(self, args):
        self.a = args
        self.build = os.path.abspath(args.build)
        self.tmp = tempfile.mkdtemp(prefix="governor-bench-", dir=args.tmpdir)
        self.servers = []
        self.results = {"machine": {}, "runs": []}
        self.next_first = {}  # prefix -> the next sample index of its jobs
        for exe in ("governor", "bench_bare", "bench_load"):
            if not os.access(os.path.join(self.build, exe), os.X_OK):
                raise SystemExit(f"bench: build {self.build} first ({exe} is missing)")

    # ------------------------------------------------------------------ servers --
    def start_bare(self, mode):
        port = free_port()
        s = Server(f"bare-{mode}", [os.path.join(self.build, "bench_bare"), str(port), mode],
                   port, os.path.join(self.tmp, f"bare-{mode}.log"))
        self.servers.append(s)
        return s

    def start_governor(self, name, db, sync="FULL", extra=(), timeout=60, build=None):
        port = free_port()
        argv = [os.path.join(build or self.build, "governor"), "serve", "--listen", f"127.0.0.1:{port}",
                "--db", db, "--policies", self.policies, "--config", self.server_conf,
                "--synchronous", sync, "--log-level", "warn", *extra]
        s = Server(name, argv, port, os.path.join(self.tmp, f"{name}.log"), timeout=timeout)
        self.servers.append(s)
        return s

    def stop(self, s):
        rc = s.stop()
        if s in self.servers:
            self.servers.remove(s)
        return rc

    # --------------------------------------------------------------------- load --
    def load(self, server, prefix, conns, jobs, seconds=None, rounds=None, tag=""):
        """Runs bench_load against server; returns its figures plus the server's CPU."""
        first = self.next_first.get(prefix, 0)
        argv = [os.path.join(self.build, "bench_load"), "--port", str(server.port), "--conns",
                str(conns), "--jobs", str(jobs), "--prefix", prefix, "--first", str(first)]
        if seconds is not None:
            argv += ["--seconds", str(seconds)]
        if rounds is not None:
            argv += ["--rounds", str(rounds)]
        cpu0 = cpu_seconds(server.proc.pid)
        out = subprocess.run(argv, capture_output=True, text=True)
        cpu1 = cpu_seconds(server.proc.pid) if server.alive() else cpu0
        sys_s = cpu1[1] - cpu0[1]
        if out.returncode != 0:
            raise SystemExit(f"bench: bench_load failed: {out.stderr}")
        r = json.loads(out.stdout)
        if out.stderr:
            log(out.stderr.rstrip())
        r.update(server=server.name, prefix=prefix, conns=conns, jobs=jobs, tag=tag,
                 server_cpu_s=sum(cpu1) - sum(cpu0), server_sys_s=sys_s,
                 load1=os.getloadavg()[0])
        r["server_cpu_us_per_req"] = 1e6 * r["server_cpu_s"] / max(1, r["requests"])
        if prefix != "bare":
            self.next_first[prefix] = r["next_first"]
        if r["status_other"] or not server.alive():
            raise SystemExit(f"bench: {r['status_other']} answers other than 2xx from "
                             f"{server.name} ({tag}); its log: {server.logf.name}")
        self.results["runs"].append(r)
        log(f"  {tag:28s} {r['rps']:9.0f} req/s  p50 {r['p50_ms']:7.2f} ms  "
            f"p99 {r['p99_ms']:7.2f} ms  server {r['server_cpu_us_per_req']:6.0f} us CPU/req  "
            f"load {r['load1']:.1f}")
        return r

    def put_configs(self, server, prefix, jobs, config):
        c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        body = json.dumps({"config": config})
        for j in range(jobs):
            c.request("PUT", f"/v1/jobs/{prefix}-{j}/config", body,
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            text = r.read()
            if r.status != 200:
                raise SystemExit(f"bench: PUT config of {prefix}-{j}: {r.status} {text[:300]}")
        c.close()

    def sql(self, server, query, params=()):
        c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        c.request("POST", "/v1/sql", json.dumps({"sql": query, "params": list(params)}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        body = json.loads(r.read())
        c.close()
        if r.status != 200:
            raise SystemExit(f"bench: POST /v1/sql: {r.status} {body}")
        return body["rows"]

    def check_steady(self, server, prefix, want_reason, want_calls):
        """The newest decision of the set is what the load means to measure."""
        rows = self.sql(server, "SELECT d.id, d.reason, (SELECT count(*) FROM audit_plugin_calls "
                        "p WHERE p.decision_id = d.id) FROM audit_decisions d WHERE d.job = ? "
                        "ORDER BY d.id DESC LIMIT 1", [f"{prefix}-0"])
        if not rows or rows[0][1] != want_reason or rows[0][2] != want_calls:
            raise SystemExit(f"bench: {prefix}-0 decides {rows}, not {want_reason} with "
                             f"{want_calls} plugin calls: the load is not what it should be")

    # ------------------------------------------------------------------- fsync --
    def fsync_floor(self, seconds):
        """write(4 KB) + fdatasync in the database's directory: what one commit waits for."""
        path = os.path.join(self.tmp, "fsync.probe")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        block = b"x" * 4096
        times = []
        t_end = time.time() + seconds
        i = 0
        while time.time() < t_end or len(times) < 20:
            t0 = time.perf_counter()
            os.pwrite(fd, block, (i % 256) * 4096)
            os.fdatasync(fd)
            times.append((time.perf_counter() - t0) * 1000)
            i += 1
        os.close(fd)
        os.unlink(path)
        times.sort()
        return {"n": len(times), "p50_ms": times[len(times) // 2],
                "p99_ms": times[min(len(times) - 1, int(0.99 * len(times)))],
                "mean_ms": statistics.mean(times)}

    # ------------------------------------------------------------------ reload --
    def reload_during(self, server, seconds, n):
        """n policy reloads spread over `seconds`, each a new revision. The file is changed
        through a descriptor held open (the server's watcher reacts to a close after a write,
        so it does not reload a second time), then POST /v1/policies/reload."""
        out = {"ok": 0, "failed": 0, "revisions": set(), "ms": []}

        def run():
            c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            t0 = time.time()
            for i in range(n):
                wait = t0 + (i + 0.5) * seconds / n - time.time()
                if wait > 0:
                    time.sleep(wait)
                self.revision += 1
                os.pwrite(self.rev_fd, b"-- bench revision %08d\n" % self.revision,
                          self.rev_off)
                t = time.perf_counter()
                c.request("POST", "/v1/policies/reload", "{}",
                          {"Content-Type": "application/json"})
                r = c.getresponse()
                body = r.read()
                out["ms"].append((time.perf_counter() - t) * 1000)
                if r.status == 200:
                    out["ok"] += 1
                    out["revisions"].add(json.loads(body).get("revision"))
                else:
                    out["failed"] += 1
                    log(f"bench: reload {i}: {r.status} {body[:300]}")
            c.close()

        th = threading.Thread(target=run)
        th.start()
        return th, out

    # -------------------------------------------------------------------- main --
    def setup_policies(self):
        self.policies = os.path.join(self.tmp, "policies")
        shutil.copytree(os.path.join(ROOT, "policies"), self.policies)
        self.server_conf = os.path.join(self.tmp, "server.conf")
        with open(self.server_conf, "w") as f:
            f.write(SERVER_CONFIG)
        # The line reloads rewrite, appended once to a file of the executor.
        path = os.path.join(self.policies, "freeze.lua")
        self.rev_fd = os.open(path, os.O_RDWR)
        self.rev_off = os.fstat(self.rev_fd).st_size
        self.revision = 0
        os.pwrite(self.rev_fd, b"-- bench revision %08d\n" % 0, self.rev_off)

    def machine(self):
        m = self.results["machine"]
        m["cores"] = os.cpu_count()
        m["load_start"] = os.getloadavg()
        try:
            m["commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip()
        except OSError:
            m["commit"] = "?"
        with open("/proc/cpuinfo") as f:
            m["cpu"] = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")),
                            "?")
        log(f"machine: {m['cores']} cores ({m['cpu']}), load average {m['load_start'][0]:.2f} "
            f"{m['load_start'][1]:.2f} {m['load_start'][2]:.2f}; commit {m['commit']}")

    def warm_up(self, gov, prefix, jobs, conns):
        t = time.time()
        r = self.load(gov, prefix, conns, jobs, rounds=self.a.warm_rounds, tag=f"warm-up {prefix}")
        log(f"  warm-up of {jobs} {prefix} jobs: {r['requests']} requests in {time.time() - t:.0f} s")

    def main_figures(self):
        a = self.a
        S, J, C = a.seconds, a.jobs, a.conns
        self.results["fsync"] = f = self.fsync_floor(a.fsync_seconds)
        log(f"fsync floor: write 4 KB + fdatasync: p50 {f['p50_ms']:.2f} ms, p99 "
            f"{f['p99_ms']:.2f} ms, mean {f['mean_ms']:.2f} ms over {f['n']}")
        fixed, parse = self.start_bare("fixed"), self.start_bare("parse")
        db = os.path.join(self.tmp, "governor.db")
        gov = self.start_governor("governor", db)
        self.put_configs(gov, "pl", J, PLUGIN_CONFIG)
        log("warm-up (every job's metric window filled):")
        self.warm_up(gov, "np", J, C)
        self.warm_up(gov, "pl", J, C)
        self.check_steady(gov, "np", "SCALING_DISABLED", 0)
        self.check_steady(gov, "pl", "VETOED", 5)
        self.results["decisions_after_warmup"] = self.sql(gov, "SELECT count(*) FROM decisions")[0][0]
        for rep in range(a.repeat):
            log(f"repetition {rep + 1} of {a.repeat}:")
            self.load(fixed, "bare", C, J, seconds=S, tag=f"bare-fixed c{C}")
            self.load(gov, "np", C, J, seconds=S, tag=f"gov-np c{C}")
            self.load(gov, "pl", C, J, seconds=S, tag=f"gov-pl c{C}")
            self.load(parse, "bare", C, J, seconds=S, tag=f"bare-parse c{C}")
            self.load(fixed, "bare", 1, J, seconds=S, tag="bare-fixed c1")
            self.load(gov, "np", 1, J, seconds=S, tag="gov-np c1")
            self.load(gov, "pl", 1, J, seconds=S, tag="gov-pl c1")
            self.load(gov, "pl", C, J, seconds=S, tag=f"reload-none c{C}")
            th, out = self.reload_during(gov, S, a.reloads)
            r = self.load(gov, "pl", C, J, seconds=S, tag=f"reload-{a.reloads} c{C}")
            th.join()
            r["reloads_ok"], r["reloads_failed"] = out["ok"], out["failed"]
            r["reload_revisions"] = len(out["revisions"])
            r["reload_ms_max"] = max(out["ms"]) if out["ms"] else 0
            if out["failed"] or out["ok"] != a.reloads:
                raise SystemExit(f"bench: {out['failed']} reloads failed")
        # The old figure: synchronous=NORMAL (the same database, the state survives the restart).
        self.stop(gov)
        gov = self.start_governor("governor-normal", db, sync="NORMAL")
        log("synchronous=NORMAL (the same jobs, restarted):")
        self.load(fixed, "bare", C, J, seconds=S, tag=f"bare-fixed c{C} (normal)")
        self.load(gov, "np", C, J, seconds=S, tag=f"gov-np c{C} NORMAL")
        self.load(gov, "pl", C, J, seconds=S, tag=f"gov-pl c{C} NORMAL")
        self.stop(gov)
        self.stop(fixed)
        self.stop(parse)
        self.results["history"] = self.history(db)

    def history(self, db):
        """Bytes per decision: the database and its WAL after a checkpoint, over decisions."""
        c = sqlite3.connect(db)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        n = c.execute("SELECT count(*) FROM decisions").fetchone()[0]
        size = os.path.getsize(db) + (os.path.getsize(db + "-wal")
                                      if os.path.exists(db + "-wal") else 0)
        h = {"decisions": n, "bytes": size, "bytes_per_decision": size / max(1, n)}
        try:
            h["tables"] = {name: b for name, b in c.execute(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")}
        except sqlite3.Error:
            h["tables"] = {}
        h["plugin_calls"] = {hook: (avg, n) for hook, avg, n in c.execute(
            "SELECT hook, avg(duration_us), count(*) FROM audit_plugin_calls GROUP BY hook")}
        h["columns"] = {}
        for prefix in ("np", "pl"):
            row = c.execute(
                "SELECT avg(coalesce(length(d.calls), 0)), count(DISTINCT d.outcome_id), "
                "avg(length(o.vertices) + coalesce(length(o.events), 0)), count(*) "
                "FROM decisions d JOIN decision_outcomes o ON o.id = d.outcome_id "
                "WHERE d.job LIKE ? AND o.reason != 'COLLECTING_METRICS'",
                [prefix + "-%"]).fetchone()
            h["columns"][prefix] = dict(zip(("calls", "outcomes", "outcome_bytes",
                                             "decisions"), row))
        h["samples"] = c.execute("SELECT count(*), coalesce(sum(length(chunk)), 0) "
                                 "FROM sample_chunks").fetchone()
        c.close()
        return h

    def lua_calls(self):
        """bench_lua: a plugin's own work in a plain Lua state (CPU time)."""
        exe = os.path.join(self.build, "bench_lua")
        if not os.access(exe, os.X_OK):
            return
        n = "20000" if self.a.smoke else "200000"
        runs = []
        for _ in range(1 if self.a.smoke else 3):
            out = subprocess.run([exe, self.policies, n], capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"bench: bench_lua failed: {out.stderr}")
            runs.append(json.loads(out.stdout))
        self.results["lua"] = runs

    def codec(self):
        """Bytes a sample in the samples' codec (bench_codec) against the same samples' raw
        sizes: the benchmark's own job (a day of samples), the simulator's scenarios (their
        traces, written by `governor simulate --trace`) and the decision cases' traces."""
        exe = os.path.join(self.build, "bench_codec")
        if not os.access(exe, os.X_OK):
            return
        trace = os.path.join(self.tmp, "sim-trace")
        scen = sorted(glob.glob(os.path.join(ROOT, "tests", "scenarios", "*.json")))
        for sc in scen:
            out = subprocess.run([os.path.join(self.build, "governor"), "simulate", sc,
                                  "--policies", os.path.join(ROOT, "policies"), "--only",
                                  "governor", "--out", os.path.join(self.tmp, "sim"), "--trace",
                                  trace], capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"bench: governor simulate {sc} failed: {out.stderr[-500:]}")
        traces = sorted(glob.glob(os.path.join(trace, "*.jsonl")))
        cases = sorted(glob.glob(os.path.join(ROOT, "tests", "cases", "*", "trace.jsonl")))
        argv = [exe, "--bench-job", str(SAMPLES_PER_DAY),
                f"the simulator's {len(scen)} scenarios=" + ",".join(traces),
                f"the {len(cases)} decision cases' traces=" + ",".join(cases)]
        out = subprocess.run(argv, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"bench: bench_codec failed: {out.stderr}")
        self.results["codec"] = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]

    def scale(self):
        """Resident memory and time per decision with N jobs, each with a full window; with
        --baseline, the same for the baseline build's governor on copies of the same
        databases, one build after the other."""
        a = self.a
        C, S, N = a.conns, a.seconds, a.scale_jobs
        db = os.path.join(self.tmp, "scale.db")
        extra = ("--audit-retention", a.scale_retention)
        self.results["scale"] = {"jobs": N, "builds": []}
        log(f"scale: {a.jobs} jobs, then {N}:")
        # One warm-up for every build: the first jobs get their samples over HTTP (this build);
        # the database then holds what a job that had every sample posted holds.
        gov = self.start_governor("governor-scale", db, extra=extra)
        t = time.time()
        self.warm_up(gov, "sc", a.jobs, C)
        warm_s = time.time() - t
        self.stop(gov)
        first = self.next_first["sc"]
        small_db, big_db = db + ".small", db + ".big"
        for ext in ("", "-wal", "-shm"):
            if os.path.exists(db + ext):
                shutil.copy(db + ext, small_db + ext)
        t = time.time()
        cloned_s = None
        if not a.scale_http:
            # The other jobs are copies of the first ones' stored rows (state, options and
            # window), made while no server runs; a server then starts on the N jobs as it
            # would after a restart.
            clone_jobs(db, "sc", a.jobs, N)
            cloned_s = time.time() - t
            os.replace(db, big_db)
            for ext in ("-wal", "-shm"):
                if os.path.exists(db + ext):
                    os.replace(db + ext, big_db + ext)
        builds = [("baseline", a.baseline)] if a.baseline else []
        builds.append(("this build", self.build))
        fixed = self.start_bare("fixed")
        if a.baseline:
            self.results["interleaved"] = self.interleaved(small_db, first, extra)
        for label, build in builds:
            sc = {"label": label, "build": build, "warm_up_s": warm_s, "cloned_s": cloned_s}
            self.results["scale"]["builds"].append(sc)
            tag = "" if label == "this build" else " (baseline)"
            # 1,000 jobs: a fresh start on the warmed database, a round to load every job
            work = os.path.join(self.tmp, "scale-run.db")
            for ext in ("", "-wal", "-shm"):
                if os.path.exists(work + ext):
                    os.unlink(work + ext)
                if os.path.exists(small_db + ext):
                    shutil.copy(small_db + ext, work + ext)
            self.next_first["sc"] = first
            gov = self.start_governor("governor-scale", work, extra=extra, build=build)
            self.load(gov, "sc", C, a.jobs, rounds=1, tag=f"first round of {a.jobs} jobs{tag}")
            sc["rss_small"] = rss_mib(gov.proc.pid)
            small, big, sub, bare = [], [], [], []
            for rep in range(a.repeat):
                bare.append(self.load(fixed, "bare", C, a.jobs, seconds=S, tag=f"bare-fixed c{C}"))
                small.append(self.load(gov, "sc", C, a.jobs, seconds=S,
                                       tag=f"scale {a.jobs} jobs{tag}"))
            self.stop(gov)
            # N jobs
            for ext in ("", "-wal", "-shm"):
                if os.path.exists(work + ext):
                    os.unlink(work + ext)
                src = big_db if not a.scale_http else small_db
                if os.path.exists(src + ext):
                    shutil.copy(src + ext, work + ext)
            self.next_first["sc"] = first
            t = time.time()
            gov = self.start_governor("governor-scale", work, timeout=3600, extra=extra,
                                      build=build)
            sc["start_s"] = time.time() - t
            if a.scale_http:
                self.load(gov, "sc", C, N, rounds=a.warm_rounds, tag=f"warm-up {N} jobs{tag}")
            else:
                # every job's first decision after a start loads it and resolves its options
                self.load(gov, "sc", C, N, rounds=1, tag=f"first round of {N} jobs{tag}")
            sc["rss_big"] = rss_mib(gov.proc.pid)
            for rep in range(a.repeat):
                bare.append(self.load(fixed, "bare", C, a.jobs, seconds=S, tag=f"bare-fixed c{C}"))
                big.append(self.load(gov, "sc", C, N, rounds=1,
                                     tag=f"scale {N} jobs (a round){tag}"))
            # The first jobs again, in the server that now holds N.
            for rep in range(a.repeat):
                sub.append(self.load(gov, "sc", C, a.jobs, seconds=S,
                                     tag=f"scale {a.jobs} of {N}{tag}"))
            sc["rss_end"] = rss_mib(gov.proc.pid)
            sc["small"], sc["big"], sc["sub"], sc["bare"] = small, big, sub, bare
            self.stop(gov)
        self.stop(fixed)

    def interleaved(self, small_db, first, extra):
        """The baseline build's governor and this one's, each on its own copy of the warmed
        1,000-job database, both running, measured in turn (baseline, this, baseline, ...)
        at --conns connections: decisions/s and server CPU a decision, before and after,
        with the machine's other load shared alike."""
        a = self.a
        govs, nf = {}, {}
        for label, build in (("baseline", a.baseline), ("this build", self.build)):
            work = os.path.join(self.tmp, f"interleaved-{len(govs)}.db")
            for ext in ("", "-wal", "-shm"):
                if os.path.exists(small_db + ext):
                    shutil.copy(small_db + ext, work + ext)
            govs[label] = self.start_governor(f"governor-{len(govs)}", work, extra=extra,
                                              build=build)
            self.next_first["sc"] = first
            self.load(govs[label], "sc", a.conns, a.jobs, rounds=1,
                      tag=f"first round, {label} (interleaved)")
            nf[label] = self.next_first["sc"]
        runs = {"baseline": [], "this build": []}
        for rep in range(max(3, a.repeat)):
            for label in ("baseline", "this build"):
                self.next_first["sc"] = nf[label]
                runs[label].append(self.load(govs[label], "sc", a.conns, a.jobs,
                                             seconds=a.seconds, tag=f"{label} (interleaved)"))
                nf[label] = self.next_first["sc"]
        for g in govs.values():
            self.stop(g)
        return runs

    def decide_path(self):
        """bench_core (the decide path without HTTP and storage) of the baseline build and of
        this one, one after the other, --repeat times: nanoseconds a request."""
        runs = {"baseline": [], "this build": []}
        n = "2000" if self.a.smoke else "20000"
        for rep in range(max(3, self.a.repeat)):
            for label, build in (("baseline", self.a.baseline), ("this build", self.build)):
                exe = os.path.join(build, "bench_core")
                # line-buffered: an older bench_core could crash while it freed its buffers,
                # after it printed
                argv = (["stdbuf", "-oL"] if shutil.which("stdbuf") else []) + [exe, n]
                out = subprocess.run(argv, capture_output=True, text=True)
                ns = [float(l.split(":")[1].split()[0]) for l in out.stdout.splitlines()
                      if l.startswith("decide path")]
                if not ns:
                    raise SystemExit(f"bench: {exe} printed no figure: {out.stderr[-300:]}")
                runs[label].append(ns[0])
        return runs

    def history_day(self):
        """A day of one 4-vertex job sampled every 10 s (8,640 decisions), once without plugins
        and once with two, each on a fresh database of this build (and of --baseline's): the
        bytes a decision, over the whole day and past its first 1,000 decisions (the server is
        stopped there and the file checkpointed: what a decision adds once the job's window,
        state and first outcomes are stored), and 90 days extrapolated from them."""
        a = self.a
        n = 300 if a.smoke else SAMPLES_PER_DAY
        first = n // 8 if a.smoke else 1000
        builds = ([("baseline", a.baseline)] if a.baseline else []) + [("this build", self.build)]
        out = {}
        for label, build in builds:
            out[label] = {}
            for prefix in ("np", "pl"):
                db = os.path.join(self.tmp, f"day-{prefix}-{len(out)}.db")
                sizes = []
                for k, (start, rounds) in enumerate(((0, first), (first, n - first))):
                    gov = self.start_governor(f"day-{prefix}-{label.split()[0]}", db, sync="OFF",
                                              build=build)
                    if prefix == "pl" and k == 0:
                        self.put_configs(gov, "dpl", 1, PLUGIN_CONFIG)
                    argv = [os.path.join(self.build, "bench_load"), "--port", str(gov.port),
                            "--conns", "1", "--jobs", "1", "--prefix", "d" + prefix,
                            "--first", str(start), "--rounds", str(rounds)]
                    r = subprocess.run(argv, capture_output=True, text=True)
                    self.stop(gov)
                    if r.returncode != 0:
                        raise SystemExit(f"bench: bench_load (a day) failed: {r.stderr}")
                    c = sqlite3.connect(db)
                    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    d = c.execute("SELECT count(*) FROM decisions").fetchone()[0]
                    try:
                        tables = {name: b for name, b in c.execute(
                            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")}
                    except sqlite3.Error:
                        tables = {}
                    c.close()
                    sizes.append((d, os.path.getsize(db), tables))
                (d1, b1, _), (d2, b2, t2) = sizes
                out[label][prefix] = {"decisions": d2, "bytes": b2, "per_decision": b2 / max(1, d2),
                                      "marginal": (b2 - b1) / max(1, d2 - d1), "tables": t2}
                log(f"  a day of one job ({prefix}, {label}): {d2} decisions, {b2} bytes, "
                    f"{b2 / max(1, d2):.0f} B a decision, {(b2 - b1) / max(1, d2 - d1):.0f} B "
                    "past the first 1,000")
        return out

    def cleanup(self):
        for s in list(self.servers):
            s.stop()
        if getattr(self, "rev_fd", None) is not None:
            os.close(self.rev_fd)
        if self.a.keep:
            log(f"bench: kept {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


# ------------------------------------------------------------------------ report --
def spread(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    med = statistics.median(xs)
    if len(xs) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def verdict(value, limit, below=True, fmt="{:.2f}"):
    """'met' or 'missed by ...' for a median against a target."""
    if value is None:
        return "-"
    ok = value <= limit if below else value >= limit
    if ok:
        return "met"
    return f"missed: x{value / limit:.1f} the limit" if below else \
        f"missed: {fmt.format(value)} is {value / limit:.2f} of {fmt.format(limit)}"


def report(b):
    res, a = b.results, b.a
    runs = res["runs"]

    def by(tag, key):
        return [r[key] for r in runs if r["tag"] == tag]

    def ratio(tag_a, tag_b, key):
        return [x / y if x and y else None for x, y in zip(by(tag_a, key), by(tag_b, key))]

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    m = res["machine"]
    m["load_end"] = os.getloadavg()
    C = a.conns
    out = []
    p = out.append
    p(f"governor decide benchmark: {m['cores']} cores ({m['cpu']}), load average "
      f"{m['load_start'][0]:.2f} at the start, {m['load_end'][0]:.2f} at the end; commit "
      f"{m['commit']}")
    p(f"load: {a.jobs} jobs x 4 vertices round-robin, samples 10 s of job time apart, "
      f"synchronous=FULL; {a.seconds:g} s a measurement; figures are the median (min-max) of "
      f"{a.repeat} repetition(s), each ratio taken within one repetition")
    p("the figures depend on the machine and on what else runs on it (a busy machine lowers "
      "governor's ratios most: its loop and writer threads compete for the cores the one-thread "
      "baseline needs less of); only ratios from one run compare")
    if "fsync" in res:
        f = res["fsync"]
        p("")
        p(f"throughput at {C} keep-alive connections (req/s)")
        p(f"  bare server, fixed 1 KB answer   {spread(by(f'bare-fixed c{C}', 'rps'), '{:.0f}')}")
        p(f"  bare server, parses the body     {spread(by(f'bare-parse c{C}', 'rps'), '{:.0f}')}")
        for name, tag in (("no plugins", f"gov-np c{C}"), ("two plugins", f"gov-pl c{C}")):
            r1 = ratio(tag, f"bare-fixed c{C}", "rps")
            r2 = ratio(tag, f"bare-parse c{C}", "rps")
            line = (f"  governor, {name:11s}          {spread(by(tag, 'rps'), '{:.0f}')}: "
                    f"{spread(r1, '{:.3f}')} of the 1 KB server, {spread(r2, '{:.3f}')} of the "
                    "parsing one")
            if name == "two plugins":
                line += f"; target >= 0.30 of the 1 KB server: {verdict(med(r1), 0.30, False)}"
            p(line)
        add_tp = [(x - 1) * 100 if x else None
                  for x in ratio(f"gov-np c{C}", f"gov-pl c{C}", "rps")]
        add_cpu = [(x - 1) * 100 if x else None
                   for x in ratio(f"gov-pl c{C}", f"gov-np c{C}", "server_cpu_us_per_req")]
        p(f"  plugins add {spread(add_tp, '{:+.0f}%')} to a decision's time (1 / req/s) and "
          f"{spread(add_cpu, '{:+.0f}%')} to its server CPU time; target <= 15%: "
          f"{verdict(med(add_tp), 15, True)}")
        p(f"  server CPU time a request: bare 1 KB {spread(by(f'bare-fixed c{C}', 'server_cpu_us_per_req'), '{:.0f}')}"
          f" us, governor {spread(by(f'gov-np c{C}', 'server_cpu_us_per_req'), '{:.0f}')} us without "
          f"plugins, {spread(by(f'gov-pl c{C}', 'server_cpu_us_per_req'), '{:.0f}')} us with two; "
          "in the kernel: "
          + ", ".join(spread([100 * r["server_sys_s"] / r["server_cpu_s"] for r in runs
                              if r["tag"] == t and r["server_cpu_s"]], "{:.0f}%")
                      for t in (f"bare-fixed c{C}", f"gov-np c{C}", f"gov-pl c{C}")))
        np_n, pl_n = by(f"gov-np c{C} NORMAL", "rps"), by(f"gov-pl c{C} NORMAL", "rps")
        if np_n:
            p(f"  at synchronous=NORMAL (restarted on the same jobs): {spread(np_n, '{:.0f}')} "
              f"without plugins, {spread(pl_n, '{:.0f}')} with; the 1 KB server "
              f"{spread(by(f'bare-fixed c{C} (normal)', 'rps'), '{:.0f}')}: "
              f"{spread(ratio(f'gov-np c{C} NORMAL', f'bare-fixed c{C} (normal)', 'rps'), '{:.3f}')}"
              f" and {spread(ratio(f'gov-pl c{C} NORMAL', f'bare-fixed c{C} (normal)', 'rps'), '{:.3f}')}")
        p("")
        p("latency (p99; p50 in brackets)")
        for conns, target in ((1, 2.0), (C, 10.0)):
            for name, tag in (("no plugins", f"gov-np c{conns}"),
                              ("two plugins", f"gov-pl c{conns}")):
                p(f"  {conns:2d} conn{'s,' if conns > 1 else ', '} {name:11s}  "
                  f"{spread(by(tag, 'p99_ms'), '{:.1f}')} ms ({spread(by(tag, 'p50_ms'), '{:.1f}')}"
                  f" ms); target < {target:g} ms: {verdict(med(by(tag, 'p99_ms')), target)}")
            p(f"  {conns:2d} conn{'s,' if conns > 1 else ', '} bare 1 KB    "
              f"{spread(by(f'bare-fixed c{conns}', 'p99_ms'), '{:.2f}')} ms "
              f"({spread(by(f'bare-fixed c{conns}', 'p50_ms'), '{:.2f}')} ms)")
        p(f"  the fsync floor (write 4 KB + fdatasync, {f['n']} times, in the database's "
          f"directory): p50 {f['p50_ms']:.2f} ms, p99 {f['p99_ms']:.2f} ms, mean "
          f"{f['mean_ms']:.2f} ms: a 1-connection decision waits for one commit's fsync")
        rl = ratio(f"reload-{a.reloads} c{C}", f"reload-none c{C}", "p99_ms")
        p(f"  {a.reloads} policy reloads (each a new revision) during {a.seconds:g} s at {C} "
          f"conns, two plugins: p99 {spread(by(f'reload-{a.reloads} c{C}', 'p99_ms'), '{:.1f}')}"
          f" ms against {spread(by(f'reload-none c{C}', 'p99_ms'), '{:.1f}')} ms without: "
          f"x{spread(rl, '{:.2f}')}; target <= 2: {verdict(med(rl), 2.0)}")
        h = res["history"]
        per_day = h["bytes_per_decision"] * SAMPLES_PER_DAY
        p("")
        p(f"history: {h['bytes'] / 2**20:.1f} MiB after {h['decisions']} decisions (database + "
          f"WAL after a checkpoint): {h['bytes_per_decision']:.0f} bytes a decision; target "
          f"<= 1536: {verdict(h['bytes_per_decision'], 1536)}")
        p(f"  a job sampled every 10 s writes {per_day / 2**20:.1f} MiB a day; the default "
          f"{RETENTION_DAYS}-day audit retention keeps {per_day * RETENTION_DAYS / 2**30:.2f} "
          f"GiB a job ({per_day * RETENTION_DAYS * 1000 / 2**40:.2f} TiB for 1,000 jobs)")
        if h["tables"]:
            tot = sum(h["tables"].values())
            p("  by table and index: " + ", ".join(
                f"{k} {v / tot * 100:.0f}%" for k, v in list(h["tables"].items())[:6]))
        for prefix, c in h["columns"].items():
            if c["decisions"]:
                p(f"  {'without' if prefix == 'np' else 'with'} plugins: {c['decisions']} "
                  f"decisions share {c['outcomes']} outcomes (their vertices and events' texts, "
                  f"{c['outcome_bytes'] or 0:.0f} B each), a row's plugin calls "
                  f"{c['calls'] or 0:.0f} B")
        if h.get("samples") and h["samples"][0]:
            p(f"  the samples: {h['samples'][0]} closed chunks, {h['samples'][1] / 2**20:.1f} MiB "
              f"(and each job's chunk being filled, with its state)")
        if h.get("plugin_calls") and res.get("lua"):
            pc = h["plugin_calls"]
            lua = res["lua"]
            ev, ex = pc.get("evaluate", (0, 0)), pc.get("execute", (0, 0))
            p("")
            p(f"a plugin call in governor (plugin_calls.duration_us, wall clock, every call of the "
              f"run): evaluate {ev[0]:.1f} us ({ev[1]} calls), execute {ex[0]:.1f} us ({ex[1]} "
              "calls)")
            p("  the same in a plain Lua state with the count hook (bench_lua, CPU time): a bare "
              f"call {spread([r['bare_call_ns'] / 1000 for r in lua], '{:.2f}')} us, "
              "external_limit's evaluate "
              f"{spread([r['external_limit_evaluate_ns'] / 1000 for r in lua], '{:.1f}')} us, "
              f"freeze's execute {spread([r['freeze_execute_ns'] / 1000 for r in lua], '{:.2f}')}"
              " us")
        ld = [r for r in runs if r["tag"] == f"bare-fixed c{C}"]
        if ld:
            busy = [100 * r["cpu_s"] / r["seconds"] for r in ld]
            rel = [r["cpu_s"] / r["server_cpu_s"] for r in ld if r["server_cpu_s"]]
            p("")
            p(f"the load generator against the bare 1 KB server: busy {spread(busy, '{:.0f}')}% "
              f"of one core, {spread(rel, '{:.2f}')} of the server's CPU time a request (it "
              "waits for the server, not the other way round)")
    if res.get("history_day"):
        hd = res["history_day"]
        p("")
        p("history of one 4-vertex job sampled every 10 s (the load's job; a day is 8,640 "
          "decisions; 90 days extrapolated from the day's run: the bytes a decision past the "
          "first 1,000, times 777,600, plus the first 1,000's); target <= 150 MB for 90 days "
          "(the issue's 1.2 GB before)")
        for prefix, name in (("np", "no plugins"), ("pl", "two plugins")):
            for label in ("baseline", "this build"):
                h = hd.get(label, {}).get(prefix)
                if not h:
                    continue
                first = h["bytes"] - h["marginal"] * (h["decisions"] - 1000) \
                    if h["decisions"] > 1000 else h["bytes"]
                d90 = first + h["marginal"] * (SAMPLES_PER_DAY * RETENTION_DAYS - 1000)
                line = (f"  {name:11s} {label:10s} {h['per_decision']:6.0f} B a decision over the "
                        f"day ({h['bytes'] / 1e6:.1f} MB), {h['marginal']:.0f} B past the first "
                        f"1,000: {d90 / 1e6:.0f} MB for 90 days")
                if label == "this build":
                    line += f"; target <= 150 MB: {verdict(d90 / 1e6, 150, fmt='{:.0f}')}"
                p(line)
            h = hd.get("this build", {}).get(prefix)
            if h and h["tables"]:
                tot = sum(h["tables"].values())
                p(f"    by table and index ({name}): " + ", ".join(
                    f"{k} {v / h['decisions']:.0f} B" for k, v in list(h["tables"].items())[:8]))
    if res.get("codec"):
        p("")
        p("samples' codec (server/core/codec.h): bytes a sample in chunks of up to 360 samples or "
          "60 min, headers and layouts included, against the same samples' raw sizes")
        for c in res["codec"]:
            n = c["codec_bytes"] or 1e-9
            p(f"  {c['stream']} ({c['jobs']} job{'s' if c['jobs'] != 1 else ''}, "
              f"{c['samples']} samples): {c['codec_bytes']:.1f} B; its numbers as doubles "
              f"{c['raw_bytes']:.0f} B (x{c['raw_bytes'] / n:.0f}), the packed request history "
              f"keeps today {c['packed_bytes']:.0f} B (x{c['packed_bytes'] / n:.0f}), its JSON "
              f"{c['json_bytes']:.0f} B (x{c['json_bytes'] / n:.0f})")
            if c.get("window_rows"):
                w = c["window_bytes_per_row"] or 1e-9
                p(f"    its metric windows in memory after the last sample: {c['window_bytes']:.0f} "
                  f"B a job for {c['window_rows']:.0f} samples, {c['window_bytes_per_row']:.1f} B a "
                  f"sample against {c['window_raw_per_row']:.0f} B as doubles "
                  f"(x{c['window_raw_per_row'] / w:.0f})")
    if res.get("interleaved"):
        iv = res["interleaved"]
        b, t = iv["baseline"], iv["this build"]
        rps = [y["rps"] / x["rps"] for x, y in zip(b, t)]
        cpu = [y["server_cpu_us_per_req"] / x["server_cpu_us_per_req"] for x, y in zip(b, t)]
        p("")
        p(f"decisions over {a.jobs} jobs with full windows, the baseline's governor and this "
          f"build's both running on copies of the same database, measured in turn {len(t)} "
          f"times at {C} connections: {spread([r['rps'] for r in t], '{:.0f}')} req/s against "
          f"{spread([r['rps'] for r in b], '{:.0f}')}, decisions/s x{spread(rps, '{:.2f}')} the "
          f"baseline's; server CPU a decision {spread([r['server_cpu_us_per_req'] for r in t], '{:.0f}')}"
          f" us against {spread([r['server_cpu_us_per_req'] for r in b], '{:.0f}')} us "
          f"(x{spread(cpu, '{:.2f}')})")
    if res.get("decide_path"):
        dp = res["decide_path"]
        base, this = dp["baseline"], dp["this build"]
        ratio = [b / t for b, t in zip(base, this)]
        p("")
        p(f"the decide path without HTTP and storage (bench_core, a 2-vertex job with a full "
          f"window, {len(this)} runs of each build one after the other): "
          f"{spread([x / 1000 for x in this], '{:.0f}')} us a request, the baseline "
          f"{spread([x / 1000 for x in base], '{:.0f}')} us: decisions/s x"
          f"{spread(ratio, '{:.2f}')} the baseline's")
    if "scale" in res:
        sc_all = res["scale"]
        N = sc_all["jobs"]
        per = {}
        for sc in sc_all["builds"]:
            label = sc["label"]
            small = [r["server_cpu_us_per_req"] for r in sc["small"]]
            big = [r["server_cpu_us_per_req"] for r in sc["big"]]
            sub = [r["server_cpu_us_per_req"] for r in sc["sub"]]
            rs = [r["rps"] for r in sc["small"]]
            rb = [r["rps"] for r in sc["big"]]
            per_job = (sc["rss_big"]["VmRSS"] - sc["rss_small"]["VmRSS"]) * 1024 / (N - a.jobs)
            at_100k = sc["rss_small"]["VmRSS"] + per_job * (100000 - a.jobs) / 1024
            per[label] = (per_job, at_100k, med(rs), med(rb))
            p("")
            if sc.get("cloned_s") is not None:
                p(f"scale ({label}, {sc['build']}): {N} jobs, each with a full window ({a.jobs} "
                  f"warmed up with {a.warm_rounds} samples 10 s apart, the others copies of their "
                  f"stored rows made in {sc['cloned_s']:.0f} s; the server started on them in "
                  f"{sc['start_s']:.1f} s)")
            else:
                p(f"scale ({label}, {sc['build']}): {N} jobs, each with a full window "
                  f"({a.warm_rounds} samples 10 s apart)")
            p(f"  resident memory {sc['rss_big']['VmRSS']:.0f} MiB with {N} jobs (peak "
              f"{sc['rss_big']['VmHWM']:.0f} MiB), {sc['rss_small']['VmRSS']:.0f} MiB with "
              f"{a.jobs}: {per_job:.1f} KiB a job; at the end {sc['rss_end']['VmRSS']:.0f} MiB; "
              f"{at_100k:.0f} MiB at 100,000 jobs"
              + ("" if N == 100000 else " (extrapolated from the KiB a job)")
              + f"; target < 2048 MiB: {verdict(at_100k, 2048)}")
            x_rps = med(rs) / med(rb) if med(rb) else None
            x_cpu = med(big) / med(small) if med(small) else None
            p(f"  time a decision at {N} jobs against {a.jobs}: req/s {spread(rb, '{:.0f}')} "
              f"against {spread(rs, '{:.0f}')} (x{x_rps:.2f}); server CPU {spread(big, '{:.0f}')} "
              f"us against {spread(small, '{:.0f}')} us (x{x_cpu:.2f}); target <= 1.5: "
              f"{verdict(x_rps, 1.5)}")
            p(f"  the first {a.jobs} jobs again, in the server that holds {N}: "
              f"{spread([r['rps'] for r in sc['sub']], '{:.0f}')} req/s, {spread(sub, '{:.0f}')} "
              f"us CPU a decision; the bare 1 KB server meanwhile: "
              f"{spread([r['rps'] for r in sc['bare']], '{:.0f}')} req/s")
        if "baseline" in per and "this build" in per:
            b, t = per["baseline"], per["this build"]
            p("")
            p(f"before and after (the baseline build, then this one, on copies of the same "
              f"databases): {b[0]:.1f} -> {t[0]:.1f} KiB a job (x{t[0] / b[0]:.2f}); "
              f"{b[1]:.0f} -> {t[1]:.0f} MiB at 100,000 jobs; req/s at {a.jobs} jobs "
              f"{b[2]:.0f} -> {t[2]:.0f} (x{t[2] / b[2]:.2f}), at {N} jobs {b[3]:.0f} -> "
              f"{t[3]:.0f} (x{t[3] / b[3]:.2f})")
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=10, help="length of one measurement")
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of the main figures")
    ap.add_argument("--quick", action="store_true",
                    help="a couple of minutes: --seconds 4 --repeat 1 --fsync-seconds 1")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--reloads", type=int, default=50)
    ap.add_argument("--warm-rounds", type=int, default=WINDOW_SAMPLES + 5,
                    help="samples each job gets before anything is measured")
    ap.add_argument("--fsync-seconds", type=float, default=3)
    ap.add_argument("--no-main", action="store_true", help="skip the main figures")
    ap.add_argument("--no-codec", action="store_true",
                    help="skip the samples' codec figures (a few seconds)")
    ap.add_argument("--no-history-day", action="store_true",
                    help="skip the day of one job's history (8,640 decisions, each set)")
    ap.add_argument("--scale", action="store_true",
                    help="also the scale figures (--scale-jobs jobs with full windows; long)")
    ap.add_argument("--scale-jobs", type=int, default=100000)
    ap.add_argument("--baseline", metavar="BUILD_DIR",
                    help="a build directory of another commit (e.g. the one before a change): "
                         "--scale measures its governor too, on copies of the same databases, "
                         "and bench_core's decide path beside this build's")
    ap.add_argument("--scale-http", action="store_true",
                    help="warm the scale jobs up by posting every sample (hours) instead of "
                         "copying the first jobs' stored rows")
    ap.add_argument("--scale-retention", default="2 min",
                    help="--audit-retention of the scale server (bounds its disk)")
    ap.add_argument("--smoke", action="store_true",
                    help="a few seconds on 20 jobs, to check that every figure is produced")
    ap.add_argument("--tmpdir", default=None, help="where the databases go (default: TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the databases and logs")
    ap.add_argument("--json", help="also write every measurement to this file")
    a = ap.parse_args()
    if a.quick:
        a.seconds, a.repeat, a.fsync_seconds = 4, 1, 1
    if a.smoke:
        a.seconds, a.repeat, a.fsync_seconds, a.jobs, a.reloads = 0.3, 1, 0.2, 10, 3
        a.warm_rounds = WINDOW_SAMPLES + 2
        a.conns = min(a.conns, 8)
        if a.scale:
            a.scale_jobs = 200
    b = Bench(a)
    try:
        b.machine()
        b.setup_policies()
        if not a.no_main:
            b.main_figures()
            b.lua_calls()
        if not a.no_codec:
            b.codec()
        if not a.no_history_day:
            b.results["history_day"] = b.history_day()
        if a.scale:
            b.scale()
        if a.baseline:
            b.results["decide_path"] = b.decide_path()
    finally:
        b.cleanup()
    report(b)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(b.results, f, indent=1, default=list)


if __name__ == "__main__":
    main()
