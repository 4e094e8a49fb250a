"""The command line as a new user meets it: every sub-command's --help exits 0 and cites no
document outside the repository, the general usage puts each form under its own command,
`serve --help` lists every server flag of the options table, an unknown flag is named as
unknown, and a bare `governor` is an error (exit 2, usage on stderr)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BINARY = sys.argv[1] if len(sys.argv) > 1 else "build/governor"
failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print("FAIL: " + what)


def run(*args):
    p = subprocess.run([BINARY] + list(args), capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


OUTSIDE = re.compile(r"\bDESIGN\b|\bspec [0-9§]|spec/flink")

rc, out, err = run()
check(rc == 2, "bare governor exits 2, got %d" % rc)
check("usage: governor" in err and out == "", "bare governor prints the usage on stderr")

rc, out, err = run("--help")
check(rc == 0 and "usage: governor" in out, "--help exits 0 with the usage")
# Each form under its own command: replay --db belongs to replay, before simulate and test.
blocks = {}
current = None
for line in out.splitlines():
    m = re.match(r"  (\w+)\s", line)
    if m and not line.startswith("   "):
        current = m.group(1)
    if current:
        blocks.setdefault(current, []).append(line)
for cmd in ("serve", "replay", "simulate", "test", "options"):
    check(cmd in blocks, "--help lists the command %s" % cmd)
check(any("replay --db" in l for l in blocks.get("replay", [])),
      "--help lists `replay --db` under replay")
check(not any("replay" in l for l in blocks.get("test", [])),
      "--help lists nothing of replay under test")

for args in (["--help"], ["serve", "--help"], ["replay", "--help"],
             ["replay", "--db", "x.db", "--help"], ["simulate", "--help"], ["test", "--help"],
             ["options"]):
    rc, out, err = run(*args)
    check(rc == 0, "governor %s exits 0, got %d: %s" % (" ".join(args), rc, err[:200]))
    bad = OUTSIDE.findall(out + err)
    check(not bad, "governor %s cites documents outside the repository: %r" %
          (" ".join(args), bad))

# Every sub-command's --help prints that command's own usage, not the general one.
for cmd in ("serve", "replay", "simulate", "test", "flink", "options", "reference"):
    rc, out, err = run(cmd, "--help")
    check(rc == 0 and out.startswith("usage: governor %s" % cmd),
          "governor %s --help prints its own usage: %d %r" % (cmd, rc, out[:80]))
for cmd in ("options", "reference"):
    rc, out, err = run(cmd, "--bogus")
    check(rc == 2 and ("unknown option for %s: --bogus" % cmd) in err,
          "governor %s --bogus: exit 2 naming it: %d %r" % (cmd, rc, err[:120]))

# The options listing and serve --help fit in 100 columns.
for args in (["options"], ["serve", "--help"]):
    rc, out, _ = run(*args)
    wide = [l for l in out.splitlines() if len(l) > 100]
    check(rc == 0 and not wide, "governor %s: no line above 100 columns: %r" %
          (" ".join(args), wide[:2]))

# serve --help lists every server option of the options table, as a flag.
rc, table, _ = run("options")
server_part = table.split("Server options", 1)[1] if "Server options" in table else ""
names = re.findall(r"^  ([a-z][a-z0-9.-]+)\s", server_part, re.M)
check(len(names) >= 10, "governor options lists the server options (%d found)" % len(names))
rc, out, _ = run("serve", "--help")
check(out.startswith("usage: governor serve"), "serve --help prints serve's own usage")
for n in names:
    check(("--%s " % n) in out, "serve --help lists --%s" % n)

for args, want in ((["serve", "--bogus"], "unknown option --bogus"),
                   (["serve", "--bogus=1"], "unknown option --bogus"),
                   (["serve", "--listen"], "missing value for --listen")):
    rc, out, err = run(*args)
    check(rc == 2 and want in err, "governor %s: exit 2 and %r, got %d %r" %
          (" ".join(args), want, rc, err[:120]))

# A policies directory that is named must exist (a flag or the config file): the start is
# refused, naming it. Without the option, an absent ./policies serves native decisions.
tmp = tempfile.mkdtemp(prefix="governor-cli-")
rc, out, err = run("serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp, "a.db"),
                   "--policies", "/nonexistent/policies")
check(rc == 2 and "--policies /nonexistent/policies: No such file or directory" in err,
      "serve --policies /nonexistent: exit 2 naming it, got %d %r" % (rc, err[:300]))
conf = os.path.join(tmp, "governor.conf")
with open(conf, "w") as f:
    f.write("policies = %s\n" % conf)
rc, out, err = run("serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp, "a.db"),
                   "--config", conf)
check(rc == 2 and ("--policies %s: not a directory" % conf) in err,
      "policies = FILE in the config file: exit 2 naming it, got %d %r" % (rc, err[:300]))
check(not os.path.exists(os.path.join(tmp, "a.db")), "a refused start creates no database")
p = subprocess.Popen([os.path.abspath(BINARY), "serve", "--listen", "127.0.0.1:0", "--db",
                      "a.db"], cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                     text=True)
log = ""
deadline = time.time() + 20
while time.time() < deadline and "listening" not in log:
    line = p.stderr.readline()
    if not line:
        break
    log += line
p.send_signal(signal.SIGTERM)
rest = p.communicate(timeout=30)[1]
check("listening" in log and "no policies directory: native decisions only" in log,
      "without --policies, an absent ./policies serves native decisions: %r" % (log + rest)[-400:])
shutil.rmtree(tmp, ignore_errors=True)

rc, out, err = run("frobnicate")
check(rc == 2 and "unknown command: frobnicate" in err, "an unknown command is named")

print("%s" % ("ok" if failures == 0 else "%d failed" % failures))
sys.exit(1 if failures else 0)
