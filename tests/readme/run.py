#!/usr/bin/env python3
"""run.py BUILD_DIR - runs the code blocks of README.md and of every page of docs/ as a new
user would paste them, page after page in the order of PAGES, and fails when one fails.

What it does, in order:
  1. Copies the repository (its tracked and untracked-but-not-ignored files) into a temporary
     directory, the "fresh clone", and points its `build` at BUILD_DIR (the README's first
     command builds there).
  2. Does what the README's first command leaves behind: `./build/governor serve` on its
     defaults (./governor.db, ./policies) in the clone, running on the quick start's port; it
     runs while every page is followed, as it would on the reader's machine.
  3. Runs every ```sh block in one bash session (`set -eE -o pipefail`, so a function or a
     variable a block defines is there for the next ones), from the clone's root, with `curl`
     failing on an HTTP error (--fail-with-body, unless the block asks for -f itself). The marker on the line before a block (other
     HTML comments may stand between them) says what else to do with it:
       <!-- readme-test: file PATH -->         write the block to PATH in the clone, at its
                                               place in the order (a plugin, a scenario);
       <!-- readme-test: skip (why) -->         do not run it;
       <!-- readme-test: only-if TEST (why) --> run it when the shell command TEST succeeds
                                               (PostgreSQL installed, root), else say so.
     Any other block without a marker is an error: each block runs or says why not.
  4. Stops every process the blocks left running (a server started with `&`) and the quick
     start's server, and a PostgreSQL cluster a block left running.

Ports. Each section that starts a server has a port of its own (PORTS: the README's table), so
that following one never collides with a server another left running. In the blocks (and in
the clone's docs/haproxy.cfg) each documented port is replaced by a free port, the same one
wherever it appears, so that the test does not collide with a server already running on the
machine or with tests run at the same time, while two sections that used one port would still
collide here. A `serve --listen` on a port that is not documented, or on a port another page's
server uses, is an error. The throwaway PostgreSQL cluster's directory (/tmp/govpg) is made
unique the same way. Nothing else of a block is changed. --keep keeps the clone.
"""
import argparse
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKER = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->$")
COMMENT = re.compile(r"^<!--.*-->$")
FENCE = re.compile(r"^( *)```(\S*)\s*$")
# The order a reader follows (README.md first; a page of docs/ not listed comes after these, in
# name order, so that a new page is run too).
PAGES = ["README.md", "docs/api.md", "docs/decisions.md", "docs/batch.md", "docs/replay.md",
         "docs/plugins.md", "docs/simulate.md", "docs/audit.md", "docs/storage.md",
         "docs/replicas.md", "docs/operations.md", "docs/dashboard.md", "docs/options.md",
         "docs/flink.md", "docs/keda.md", "docs/development.md"]
# The documented ports (README.md, "Ports"): the page whose server listens on each.
PORTS = {8080: "README.md", 8090: "docs/plugins.md", 8091: "docs/audit.md",
         8092: "docs/storage.md", 8100: "docs/replicas.md", 8101: "docs/replicas.md",
         8102: "docs/replicas.md", 8103: "docs/replicas.md", 5433: "docs/storage.md"}
PG_DIR = "/tmp/govpg"
LISTEN = re.compile(r"--listen[ =]\S*?:(\d+)\b")


def pages():
    have = [p for p in PAGES if os.path.exists(os.path.join(ROOT, p))]
    rest = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return have + [p for p in rest if p not in have]


def blocks(text, page):
    """Yields (line, lang, marker, body) for each fenced block; line is 1-based."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise SystemExit("%s:%d: a block that is never closed" % (page, start + 1))
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in
                lines[i + 1:j]]
        k, marker = start - 1, None
        while k >= 0 and (not lines[k].strip() or COMMENT.match(lines[k].strip())):
            mm = MARKER.match(lines[k].strip())
            if mm:
                marker = mm.group(1)
                break
            k -= 1
        yield start + 1, lang, marker, "\n".join(body) + "\n"
        i = j + 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_repo(dst):
    """The repository's files as a clone would have them (no build directories)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"],
                             capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
    for f in files:
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src) or f.startswith(("build/", "build-")):
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, f))


def substitute(text, ports, pg_dir):
    for doc_port, port in ports.items():
        text = re.sub(r"\b%d\b" % doc_port, str(port), text)
    return text.replace(PG_DIR, pg_dir)


def script_of(docs, ports, pg_dir):
    """The bash script of the pages' blocks, what was run, written, skipped, and the errors.
    docs: [(page, text)]."""
    out = ["set -eE -o pipefail",
           "trap 'echo \"$README_PAGE line $README_LINE: the block failed (exit $?)\" >&2' ERR",
           # curl fails on an HTTP error, as a reader would notice one (a block that asks
           # for -f itself, waiting for a server, keeps it: curl refuses both together)
           "curl() { if [[ \" $* \" =~ \\ -[a-zA-Z]*f|\\ --fail ]]; then command curl \"$@\"; "
           "else command curl --fail-with-body \"$@\"; fi; }"]
    n = {"run": 0, "file": 0, "skip": 0, "only-if": 0}
    errors = []
    listens = {}
    for page, text in docs:
        for line, lang, marker, body in blocks(text, page):
            where = "%s:%d" % (page, line)
            if marker and marker.startswith("skip"):
                if not re.match(r"skip \(.+\)$", marker):
                    errors.append("%s: write why a block is skipped: "
                                  "<!-- readme-test: skip (why) -->" % where)
                n["skip"] += 1
                continue
            if marker and marker.startswith("file "):
                path = marker[5:].strip()
                if os.path.isabs(path) or ".." in path.split("/"):
                    errors.append("%s: a file marker names a path in the clone" % where)
                    continue
                out.append("README_PAGE=%s README_LINE=%d" % (page, line))
                out.append("mkdir -p \"$(dirname '%s')\"" % path)
                out.append("cat > '%s' <<'README_BLOCK_END'\n%sREADME_BLOCK_END" % (path, body))
                n["file"] += 1
                continue
            test = None
            if marker and marker.startswith("only-if "):
                mm = re.match(r"only-if (.+?) \((.+)\)$", marker)
                if not mm:
                    errors.append("%s: write the test and why: "
                                  "<!-- readme-test: only-if TEST (why) -->" % where)
                    continue
                test = mm.group(1)
            elif marker:
                errors.append("%s: unknown marker %r" % (where, marker))
                continue
            if lang != "sh":
                errors.append("%s: a ```%s block without a marker: mark it "
                              "<!-- readme-test: file PATH --> or <!-- readme-test: skip (why) -->"
                              % (where, lang))
                continue
            for m in LISTEN.finditer(body):
                port = int(m.group(1))
                if port not in PORTS:
                    errors.append("%s: a server on port %d, which the README's port table does "
                                  "not list" % (where, port))
                elif PORTS[port] != page:
                    errors.append("%s: a server on port %d, which is %s's (each section's "
                                  "server has a port of its own)" % (where, port, PORTS[port]))
                listens.setdefault(port, where)
            body = substitute(body, ports, pg_dir)
            out.append("README_PAGE=%s README_LINE=%d" % (page, line))
            out.append("echo \"---- %s (at $SECONDS s)\" >&2" % where)
            if test:
                out.append("if ( %s ) >/dev/null 2>&1; then" % substitute(test, ports, pg_dir))
                out.append(body)
                out.append("else echo \"---- %s: not run here (%s: false)\" >&2; fi"
                           % (where, test.replace('"', '\\"').replace("$", "\\$")))
                n["only-if"] += 1
            else:
                out.append(body)
                n["run"] += 1
    out.append("echo '---- every block ran' >&2")
    return "\n".join(out) + "\n", n, errors


def wait_ready(port, proc, log, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the quick start's server exited: %s" % open(log).read()[-2000:])
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the quick start's server did not answer within %d s" % timeout)


def stop_group(proc):
    """Stops proc's whole process group (it was started in a session of its own); proc's exit
    status, or None when it had to be killed."""
    if proc is None:
        return None
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    rc = None
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return rc


def stop_pg(pg_dir):
    """A throwaway PostgreSQL cluster the blocks left running (a block that failed before its
    stop) is stopped, and its directory removed."""
    if not os.path.isdir(pg_dir):
        return
    ctl = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if ctl and os.path.exists(os.path.join(pg_dir, "postmaster.pid")):
        cmd = [ctl[-1], "-D", pg_dir, "stop", "-m", "immediate"]
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, capture_output=True, timeout=60)
    shutil.rmtree(pg_dir, ignore_errors=True)


def answers_hold(db, tmp):
    """The audit questions' sample answers are what the history the blocks made (audit.db)
    answers: a page that answers from another history, or from an older server, fails."""
    if not os.path.exists(db):
        print("FAIL: the blocks made no audit.db for the audit questions")
        return False
    sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
    import readme_answers
    page = readme_answers.PAGE
    path = os.path.join(tmp, "answers.md")
    shutil.copy(os.path.join(ROOT, page), path)
    readme_answers.rewrite(db, path)
    old = open(os.path.join(ROOT, page)).read().splitlines()
    new = open(path).read().splitlines()
    if old == new:
        print("the audit questions' sample answers are what audit.db answers")
        return True
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else "(nothing)"
        b = new[i] if i < len(new) else "(nothing)"
        if a != b:
            print("%s:%d: the sample answer is\n  %s\nbut audit.db answers\n  %s"
                  % (page, i + 1, a[:300], b[:300]))
            break
    print("FAIL: the audit questions' sample answers are stale (python3 "
          "tests/api/readme_answers.py audit.db, on the database the blocks make, rewrites them)")
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", help="the build directory (holds governor)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary clone")
    ap.add_argument("--timeout", type=float, default=240, help="seconds for all the blocks")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if not os.access(os.path.join(build, "governor"), os.X_OK):
        raise SystemExit("%s/governor: not built" % build)
    for tool in ("curl", "sqlite3"):
        if not shutil.which(tool):
            raise SystemExit("the README needs %s (bash tests/install-deps.sh)" % tool)

    docs = [(p, open(os.path.join(ROOT, p)).read()) for p in pages()]
    ports = {p: free_port() for p in PORTS}
    pg_dir = "%s-%d-%d" % (PG_DIR, os.getpid(), ports[5433])
    script, n, errors = script_of(docs, ports, pg_dir)
    if errors:
        raise SystemExit("\n".join(errors))

    tmp = tempfile.mkdtemp(prefix="governor-readme-")
    clone = os.path.join(tmp, "governor")
    os.makedirs(clone)
    server = run = None
    started = time.time()
    ok = False
    try:
        copy_repo(clone)
        os.symlink(build, os.path.join(clone, "build"))
        cfg = os.path.join(clone, "docs", "haproxy.cfg")
        if os.path.exists(cfg):
            text = open(cfg).read()
            open(cfg, "w").write(substitute(text, ports, pg_dir))
        with open(os.path.join(clone, "readme.sh"), "w") as f:
            f.write(script)
        log = os.path.join(tmp, "quickstart-serve.log")
        server = subprocess.Popen(
            ["./build/governor", "serve", "--listen", "127.0.0.1:%d" % ports[8080]],
            cwd=clone, stdout=subprocess.DEVNULL, stderr=open(log, "w"),
            start_new_session=True)
        wait_ready(ports[8080], server, log)
        out_path = os.path.join(tmp, "readme.out")
        with open(out_path, "w") as out:
            run = subprocess.Popen(["bash", "readme.sh"], cwd=clone, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
            try:
                rc = run.wait(timeout=a.timeout)
            except subprocess.TimeoutExpired:
                rc = "timeout after %d s" % a.timeout
        text = open(out_path, errors="replace").read()
        ok = rc == 0
        if not ok:
            print(text[-6000:])
            print("FAIL: the blocks stopped (%s); the last one run is the last '---- PAGE:LINE' "
                  "above" % rc)
        else:
            not_run = len(re.findall(r"^---- \S+: not run here", text, re.M))
            print("%d pages: %d blocks run, %d written as files, %d skipped, %d of %d "
                  "conditional blocks run, in %.1f s" %
                  (len(docs), n["run"], n["file"], n["skip"], n["only-if"] - not_run,
                   n["only-if"], time.time() - started))
            for line in re.findall(r"^---- \S+: not run here.*$", text, re.M):
                print(line)
            ok = answers_hold(os.path.join(clone, "audit.db"), tmp)
        stop_group(run)
        run = None
        rc = stop_group(server)
        server = None
        if rc != 0:
            print(open(log, errors="replace").read()[-3000:])
            print("FAIL: the quick start's server stopped with %s on SIGTERM (0 expected)" % rc)
            ok = False
    finally:
        stop_group(run)
        stop_group(server)
        stop_pg(pg_dir)
        if a.keep or not ok:
            print("the clone: %s" % clone)
        if not a.keep and ok:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
