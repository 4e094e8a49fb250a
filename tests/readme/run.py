#!/usr/bin/env python3
"""run.py BUILD_DIR - runs README.md's code blocks as a new user would paste them, in the
order written, and fails when one fails.

What it does, in order:
  1. Copies the repository (its tracked and untracked-but-not-ignored files) into a temporary
     directory, the "fresh clone", and points its `build` at BUILD_DIR (the README's first
     command builds there).
  2. Does what the README's first command leaves behind: `./build/governor serve` on its
     defaults (./governor.db, ./policies) in the clone, running.
  3. Runs every ```sh block in one bash session (`set -eE -o pipefail`, so a function or a
     variable a block defines is there for the next ones), from the clone's root, with `curl`
     failing on an HTTP error (--fail-with-body). A block marked with
     `<!-- readme-test: file PATH -->` on the line before it is written to PATH in the clone
     at its place in the order (a plugin, its test, a scenario); one marked
     `<!-- readme-test: skip (why) -->` is not run. Any other block is an error: each block
     of the README either runs or says why not.
  4. Stops every process the blocks left running (a server started with `&`) and the
     quick start's server.

The README's ports 8080, 8081 and 8082 are replaced by free ports, so that the test does not collide
with a server already running on the machine or with tests run at the same time; nothing else
of a block is changed. --keep keeps the temporary clone and prints its path.
"""
import argparse
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
FENCE = re.compile(r"^( *)```(\S*)\s*$")
PORTS = (8080, 8081, 8082)


def blocks(text):
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
            raise SystemExit("README.md:%d: a block that is never closed" % (start + 1))
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in
                lines[i + 1:j]]
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mm = MARKER.match(lines[k].strip()) if k >= 0 else None
        yield start + 1, lang, mm.group(1) if mm else None, "\n".join(body) + "\n"
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


def script_of(readme, ports):
    """The bash script of the README's blocks, and how many were run, written, skipped."""
    out = ["set -eE -o pipefail",
           "trap 'echo \"README.md line $README_LINE: the block failed (exit $?)\" >&2' ERR",
           "curl() { command curl --fail-with-body \"$@\"; }"]
    n = {"run": 0, "file": 0, "skip": 0}
    errors = []
    for line, lang, marker, body in blocks(readme):
        if marker and marker.startswith("skip"):
            if not re.match(r"skip \(.+\)$", marker):
                errors.append("README.md:%d: write why a block is skipped: "
                              "<!-- readme-test: skip (why) -->" % line)
            n["skip"] += 1
            continue
        if marker and marker.startswith("file "):
            path = marker[5:].strip()
            if os.path.isabs(path) or ".." in path.split("/"):
                errors.append("README.md:%d: a file marker names a path in the clone" % line)
                continue
            out.append("README_LINE=%d" % line)
            out.append("mkdir -p \"$(dirname '%s')\"" % path)
            out.append("cat > '%s' <<'README_BLOCK_END'\n%sREADME_BLOCK_END" % (path, body))
            n["file"] += 1
            continue
        if marker:
            errors.append("README.md:%d: unknown marker %r" % (line, marker))
            continue
        if lang != "sh":
            errors.append("README.md:%d: a ```%s block without a marker: mark it "
                          "<!-- readme-test: file PATH --> or <!-- readme-test: skip (why) -->"
                          % (line, lang))
            continue
        for readme_port, port in ports.items():
            body = re.sub(r"\b%d\b" % readme_port, str(port), body)
        out.append("README_LINE=%d" % line)
        out.append("echo \"---- README.md line %d (at $SECONDS s)\" >&2" % line)
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


def answers_hold(db, tmp):
    """The audit questions' sample answers are what the history the README's blocks made
    (audit.db) answers: a README that answers from another history, or from an older server,
    fails."""
    if not os.path.exists(db):
        print("FAIL: the README's blocks made no audit.db for the audit questions")
        return False
    sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
    import readme_answers
    path = os.path.join(tmp, "README.answers.md")
    shutil.copy(os.path.join(ROOT, "README.md"), path)
    readme_answers.rewrite(db, path)
    old = open(os.path.join(ROOT, "README.md")).read().splitlines()
    new = open(path).read().splitlines()
    if old == new:
        print("the audit questions' sample answers are what audit.db answers")
        return True
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else "(nothing)"
        b = new[i] if i < len(new) else "(nothing)"
        if a != b:
            print("README.md:%d: the sample answer is\n  %s\nbut audit.db answers\n  %s"
                  % (i + 1, a[:300], b[:300]))
            break
    print("FAIL: the audit questions' sample answers are stale (python3 "
          "tests/api/readme_answers.py audit.db, on the database the blocks make, rewrites them)")
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", help="the build directory (holds governor)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary clone")
    ap.add_argument("--timeout", type=float, default=170, help="seconds for all the blocks")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if not os.access(os.path.join(build, "governor"), os.X_OK):
        raise SystemExit("%s/governor: not built" % build)
    for tool in ("curl", "sqlite3"):
        if not shutil.which(tool):
            raise SystemExit("the README needs %s (bash tests/install-deps.sh)" % tool)

    readme = open(os.path.join(ROOT, "README.md")).read()
    ports = {p: free_port() for p in PORTS}
    script, n, errors = script_of(readme, ports)
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
            print("FAIL: the README's blocks stopped (%s); the last one run is the last "
                  "'---- README.md line' above" % rc)
        else:
            print("%d blocks run, %d written as files, %d skipped, in %.1f s" %
                  (n["run"], n["file"], n["skip"], time.time() - started))
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
        if a.keep or not ok:
            print("the clone: %s" % clone)
        if not a.keep and ok:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
