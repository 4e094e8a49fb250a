"""The command line as a new user meets it: every sub-command's --help exits 0 and cites no
document outside the repository, the general usage puts each form under its own command,
`serve --help` lists every server flag of the options table, an unknown flag is named as
unknown, and a bare `governor` is an error (exit 2, usage on stderr)."""
import re
import subprocess
import sys

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

rc, out, err = run("frobnicate")
check(rc == 2 and "unknown command: frobnicate" in err, "an unknown command is named")

print("%s" % ("ok" if failures == 0 else "%d failed" % failures))
sys.exit(1 if failures else 0)
