#!/usr/bin/env python3
"""The profile of one decision: instructions per request, by part (HTTP, JSON, options, Lua,
core, SQLite, ...), under the benchmark's load (tests/bench/bench.py).

A governor server warms its jobs up (every metric window full), is stopped, and is started
again on the same database under valgrind's callgrind with instrumentation off; then
instrumentation is turned on, a few requests warm it, the counters are zeroed, and a fixed
number of requests of the jobs without plugins is run and dumped, then as many of the jobs
with two plugins. Each dump is split by the source file (or library) of every function:
libc, libm and the loader are charged to their caller's part (an allocation made by jansson
is JSON's). Instructions are not time: system calls (fsync, socket I/O, timers) cost the
kernel's time, which callgrind does not count.

usage: tests/bench/profile.py [--build DIR] [--requests N] [--jobs J] [--out DIR]
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

NEUTRAL_OBJ = ("libc.so", "libc-", "libm.so", "ld-linux", "libpthread", "vgpreload", "linux-vdso",
               "libgcc_s")

PARTS = [
    # (part, predicate on (object, file)); the server's sources are in folders that are layers
    # (server/<layer>/), so most parts are a folder.
    ("HTTP", lambda ob, fl: "libevent" in ob or (re.search(r"server/http/", fl)
                                                 and not fl.endswith("api_decide.c"))),
    ("JSON", lambda ob, fl: "libjansson" in ob
     or re.search(r"server/decision/jsn_", fl)
     or fl.endswith(("server/base/jarena.c", "server/base/text.c"))),
    ("options", lambda ob, fl: "server/options/" in fl),
    ("Lua", lambda ob, fl: "liblua" in ob or re.search(r"server/(plugin|time)/", fl)),
    ("core", lambda ob, fl: "/server/core/" in fl and not fl.endswith("server/core/state.c")),
    ("state codec", lambda ob, fl: fl.endswith("server/core/state.c")),
    ("SQLite", lambda ob, fl: "libsqlite3" in ob or "server/store/" in fl),
    ("decide glue", lambda ob, fl: fl.endswith(("server/http/api_decide.c",
                                                "server/decision/decision.c",
                                                "server/decision/unit.c",
                                                "server/decision/jobs.c"))),
]


def part_of(ob, fl):
    if any(n in ob for n in NEUTRAL_OBJ) or fl.endswith("xmem.h") or ob == "???":
        return None  # charged to the caller
    for name, pred in PARTS:
        if pred(ob, fl):
            return name
    return "other"


class Profile:
    """A callgrind output file: self cost by function, and call edges with inclusive cost."""

    def __init__(self, path):
        self.self = collections.Counter()  # (ob, fl, fn) -> Ir
        self.edges = collections.Counter()  # ((ob, fl, fn), (cob, cfn)) -> inclusive Ir
        self.calls = collections.Counter()  # same key -> number of calls
        self.fn_of_name = {}  # (ob, fn) -> (ob, fl, fn)
        names = {"ob": {}, "fl": {}, "fn": {}}
        space = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl",
                 "cfl": "fl", "fn": "fn", "cfn": "fn"}
        ob = fl = fn = cob = cfn = None
        pending_call = None
        self.total = 0
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                c = line[0]
                if c.isdigit() or c in "+-*":
                    parts = line.split()
                    cost = int(parts[1]) if len(parts) > 1 else 0
                    if pending_call is not None:
                        key = ((ob, fl, fn), (cob, cfn))
                        self.edges[key] += cost
                        self.calls[key] += pending_call
                        pending_call = None
                        cob = ob
                    else:
                        self.self[(ob, fl, fn)] += cost
                        self.total += cost
                    continue
                k, _, v = line.partition("=")
                if k in space:
                    m = re.match(r"\((\d+)\)(?: (.*))?$", v)
                    if m:
                        tab = names[space[k]]
                        if m.group(2) is not None:
                            tab[m.group(1)] = m.group(2)
                        v = tab.get(m.group(1), "?")
                    if k == "ob":
                        ob = v
                    elif k == "fl":
                        fl = v
                    elif k == "fn":
                        fn = v
                        cob, cfn = ob, None
                        self.fn_of_name.setdefault((ob, fn), (ob, fl, fn))
                    elif k == "cob":
                        cob = v
                    elif k == "cfn":
                        cfn = v
                    # fi/fe/cfi/cfl: inlined code and callee files do not move a function
                elif k == "calls":
                    pending_call = int(v.split()[0])
                elif k in ("jump", "jcnd"):
                    pending_call = None

    def parts(self):
        """Ir by part: each function's own instructions go to its part; those of libc, libm,
        the loader and unnamed stubs go to the parts of their callers, in proportion to the
        instructions of each caller's calls (through chains of such functions too)."""
        part = {k: part_of(k[0] or "", k[1] or "") for k in self.self}
        callers = collections.defaultdict(list)  # neutral callee key -> [(caller key, ir)]
        for (c, (cob, cfn)), ir in self.edges.items():
            k = self.fn_of_name.get((cob, cfn))
            if k is not None and part.get(k) is None and ir:
                callers[k].append((c, ir))
        dist = {k: {p: 1.0} for k, p in part.items() if p}
        for _ in range(30):
            changed = False
            for k, cs in callers.items():
                tot = collections.Counter()
                for c, ir in cs:
                    for p, share in dist.get(c, {}).items():
                        tot[p] += ir * share
                s = sum(tot.values())
                new = {p: v / s for p, v in tot.items()} if s else {}
                if new != dist.get(k):
                    dist[k], changed = new, True
            if not changed:
                break
        own, via = collections.Counter(), collections.Counter()
        for k, ir in self.self.items():
            for p, share in dist.get(k, {}).items():
                own[p] += ir * share
                if part.get(k) is None:
                    via[p] += ir * share
        return own, via

    def files(self):
        by = collections.Counter()
        for (ob, fl, fn), ir in self.self.items():
            name = fl if fl and "/server/" in fl else os.path.basename(ob or "?")
            by[re.sub(r".*/(server/)", r"\1", name)] += ir
        return by

    def key(self, name):
        for (ob, fn), k in self.fn_of_name.items():
            if fn == name and "governor" in os.path.basename(ob or ""):
                return k
        for (ob, fn), k in self.fn_of_name.items():
            if fn == name:
                return k
        return None

    def inclusive(self, name):
        k = self.key(name)
        if not k:
            return 0
        return self.self[k] + sum(ir for (c, _), ir in self.edges.items() if c == k)

    def ncalls(self, name):
        """How many times name was called (from anywhere)."""
        return sum(n for (_, (cob, cfn)), n in self.calls.items() if cfn == name)

    def out_edges(self, name):
        k = self.key(name)
        out = collections.Counter()
        for (c, (cob, cfn)), ir in self.edges.items():
            if c == k:
                out[cfn] += ir
        return out


def table(rows, head):
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    out = ["| " + " | ".join(str(h).ljust(w[i]) for i, h in enumerate(head)) + " |",
           "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i])
                                     for i, c in enumerate(r)) + " |")
    return "\n".join(out)


def report(prof, n, label):
    out = [f"### {label}: {n} requests, {prof.total / n:,.0f} instructions a request", ""]
    own, via = prof.parts()
    tot = prof.total
    rows = []
    for name in [p for p, _ in PARTS] + ["other"]:
        t = own[name]
        if t:
            rows.append([name, f"{t / n:,.0f}", f"{100 * t / tot:.1f}%",
                         f"{via[name] / n:,.0f}"])
    acc = sum(own.values())
    rows.append(["(no caller in a part: thread start, loader)", f"{(tot - acc) / n:,.0f}",
                 f"{100 * (tot - acc) / tot:.1f}%", ""])
    out.append(table(rows, ["part", "Ir / request", "share", "of which libc/libm"]))
    out.append("")
    files = prof.files().most_common(14)
    out.append("Own instructions by source file or library (top 14): " + ", ".join(
        f"{f} {ir / n:,.0f}" for f, ir in files) + ".")
    out.append("")
    # The decision's steps (inclusive, per request).
    steps = [("the handler (api_decide), all of it", "api_decide"),
             ("  parse the body (api_json_body)", "api_json_body"),
             ("  the sample (jsn_parse_sample)", "jsn_parse_sample"),
             ("  the plugin call context (plugin_call_new)", "plugin_call_new"),
             ("  core_decide, plugin hooks included", "core_decide"),
             ("    evaluator hooks (hook_evaluate)", "hook_evaluate"),
             ("    executor hooks (hook_execute)", "hook_execute"),
             ("  render the answer (jsn_render_decision)", "jsn_render_decision"),
             ("  the decision service (decision_run)", "decision_run"),
             ("  rows of the write unit (unit_new)", "unit_new"),
             ("  the stored options text (options_text)", "options_text"),
             ("  print JSON texts (jarena_dump)", "jarena_dump"),
             ("  the state blob (core_state_encode_meta)", "core_state_encode_meta"),
             ("  the window's new sample (core_state_encode_sample)", "core_state_encode_sample"),
             ("  end of the decision (plugin_call_free)", "plugin_call_free"),
             ("the writer thread (commit groups)", "commit"),
             ("  apply one decision's rows (db_write_apply)", "db_write_apply"),
             ("reply after commit (api_committed)", "api_committed"),
             ("send the reply (evhttp_send_reply)", "evhttp_send_reply")]
    rows = []
    for label_, fn in steps:
        inc = prof.inclusive(fn)
        if inc:
            rows.append([label_, f"{inc / n:,.0f}", f"{prof.ncalls(fn) / n:.2f}"])
    out.append(table(rows, ["step (inclusive)", "Ir / request", "calls / request"]))
    commits = prof.ncalls("db_commit")
    if commits:
        out.append("")
        out.append(f"Group commit: {commits} commits for {n} decisions ({n / commits:.1f} a "
                   "commit).")
    calls = prof.ncalls("run_call")
    if calls:
        out.append("")
        out.append(f"One plugin call: {calls / n:.2f} calls a request, "
                   f"{(prof.inclusive('hook_evaluate') + prof.inclusive('hook_execute')) / calls:,.0f}"
                   " instructions a call (hook_evaluate + hook_execute inclusive / calls), of "
                   "which:")
        out.append("")
        rows = []
        seen = collections.Counter()
        for fn in ("hook_evaluate", "hook_execute", "run_hook", "run_call", "hook_tramp"):
            for callee, ir in prof.out_edges(fn).items():
                if callee in ("run_hook", "run_call", "lua_pcallk", "trampoline", "hook_tramp",
                              "luaD_call", "luaD_callnoyield", "luaD_rawrunprotected",
                              "luaD_pcall", "precallC"):
                    continue
                seen[(fn, callee)] += ir
        for (fn, callee), ir in seen.most_common(16):
            rows.append([f"{fn} -> {callee}", f"{ir / calls:,.0f}"])
        out.append(table(rows, ["call (inclusive)", "Ir / plugin call"]))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(bench.ROOT, "build"))
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds over the jobs profiled per set (requests = rounds x jobs)")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--warm-rounds", type=int, default=bench.WINDOW_SAMPLES + 5)
    ap.add_argument("--out", default=None, help="keep the callgrind files here")
    ap.add_argument("--tmpdir", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    # Bench wants these for its own options.
    a.seconds, a.repeat, a.reloads, a.json = 1, 1, 0, None
    b = bench.Bench(a)
    out_dir = os.path.abspath(a.out or os.path.join(b.tmp, "callgrind"))
    os.makedirs(out_dir, exist_ok=True)
    try:
        b.machine()
        b.setup_policies()
        db = os.path.join(b.tmp, "governor.db")
        gov = b.start_governor("governor", db)
        b.put_configs(gov, "pl", a.jobs, bench.PLUGIN_CONFIG)
        b.warm_up(gov, "np", a.jobs, 64)
        b.warm_up(gov, "pl", a.jobs, 64)
        b.check_steady(gov, "np", "SCALING_DISABLED", 0)
        b.check_steady(gov, "pl", "VETOED", 5)
        b.stop(gov)
        vg = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
              f"--callgrind-out-file={out_dir}/callgrind.out.%p"]
        port = bench.free_port()
        argv = vg + [os.path.join(b.build, "governor"), "serve", "--listen",
                     f"127.0.0.1:{port}", "--db", db, "--policies", b.policies, "--config",
                     b.server_conf, "--synchronous", "FULL", "--log-level", "warn",
                     "--plugin-timeout", "10 s", "--plugin-decision-timeout", "10 s",
                     "--read-timeout", "60 s"]
        # The SQL engine starts its query processes from /proc/self/exe, valgrind's tool
        # under valgrind: the shim starts governor itself (spawn_shim.c).
        shim = os.path.join(b.build, "libbench_spawn_shim.so")
        env = dict(os.environ, GOVERNOR_EXE=os.path.join(b.build, "governor"),
                   LD_PRELOAD=shim)
        gov = bench.Server("governor-callgrind", argv, port, os.path.join(b.tmp, "vg.log"),
                           env=env, timeout=300)
        b.servers.append(gov)
        pid = str(gov.proc.pid)

        def ctl(*args):
            subprocess.run(["callgrind_control", *args, pid], check=True,
                           capture_output=True)

        ctl("-i", "on")
        # A round of every job first: after a restart a job's first decision resolves its
        # options and loads its state, which the steady state does not do.
        b.load(gov, "np", a.conns, a.jobs, rounds=1, tag="callgrind warm np")
        b.load(gov, "pl", a.conns, a.jobs, rounds=1, tag="callgrind warm pl")
        ctl("-z")
        n_np = b.load(gov, "np", a.conns, a.jobs, rounds=a.rounds, tag="callgrind np")["requests"]
        ctl("-d", "np")
        n_pl = b.load(gov, "pl", a.conns, a.jobs, rounds=a.rounds, tag="callgrind pl")["requests"]
        ctl("-d", "pl")
        time.sleep(1)
        b.stop(gov)
        dumps = sorted((f for f in os.listdir(out_dir) if f.startswith(f"callgrind.out.{pid}.")),
                       key=lambda f: int(f.rsplit(".", 1)[1]))
        if len(dumps) < 2:
            raise SystemExit(f"profile: expected two dumps in {out_dir}, found {dumps}")
        prof_np = Profile(os.path.join(out_dir, dumps[0]))
        prof_pl = Profile(os.path.join(out_dir, dumps[1]))
    finally:
        b.cleanup()
    m = b.results["machine"]
    print(f"Profile of a decision (callgrind, {m['cores']} cores, {m['cpu']}, commit "
          f"{m['commit']}; {a.jobs} jobs a set, {a.conns} connections)\n")
    print(report(prof_np, n_np, "No plugins"))
    print()
    print(report(prof_pl, n_pl, "Two plugins (freeze executor, external_limit evaluator)"))
    print()
    d = prof_pl.total / n_pl - prof_np.total / n_np
    print(f"The two plugins add {d:,.0f} instructions a decision "
          f"({100 * d / (prof_np.total / n_np):.0f}% of a decision without plugins).")
    if a.out:
        print(f"\n(callgrind files in {out_dir}: callgrind_annotate {out_dir}/{dumps[1]})")


if __name__ == "__main__":
    main()
