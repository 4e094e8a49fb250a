"""The token file is read by whole lines: a token of 1,024 characters or more is one token
(it used to be split at 1,023 bytes, and its last character became a token of its own); a
line above the limit, or with a NUL byte, refuses the start with an error naming the file
and the line. A token-file option given but empty (`--token-file ""`, `token-file =`) refuses
the start instead of serving without authentication."""
import os
import subprocess
import tempfile

from gov import BINARY, Server, Checks

c = Checks()
tmp = tempfile.mkdtemp(prefix="governor-tokens-")


def start_fails(args, words, what):
    """The server must exit non-zero at once, saying words."""
    db = os.path.join(tmp, "never.db")
    try:
        p = subprocess.run([BINARY, "serve", "--listen", "127.0.0.1:0", "--db", db] + args,
                           capture_output=True, text=True, timeout=10)
        out, rc = p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stderr or b"").decode(errors="replace") + " (still serving)", None
    c.check(rc not in (0, None) and all(w in out for w in words),
            "%s: rc=%r, want %r in %r" % (what, rc, words, out[-300:]))


# A 1,024-character token: the whole line is the token, its tail is not.
long_token = "A" * 1023 + "z"
tf = os.path.join(tmp, "tokens")
with open(tf, "w") as f:
    f.write("short-one\n" + long_token + "\n")
s = Server(args=["--token-file", tf], tmp=tmp)
for token, want in (("z", 401), (long_token, 200), (long_token[:1023], 401), ("short-one", 200)):
    st, _, _ = s.req("GET", "/v1/jobs", headers={"Authorization": "Bearer " + token})
    c.check(st == want, "token of %d characters: %d, want %d" % (len(token), st, want))
s.stop()
c.check(long_token not in s.logs(), "the token is not logged")

# 4,096 bytes is the longest token; a longer line is refused, naming file and line.
with open(tf, "w") as f:
    f.write("# ops\n" + "B" * 4096 + "\n")
s = Server(args=["--token-file", tf], tmp=tmp)
st, _, _ = s.req("GET", "/v1/jobs", headers={"Authorization": "Bearer " + "B" * 4096})
c.check(st == 200, "a 4,096-byte token works: %d" % st)
s.stop()
with open(tf, "w") as f:
    f.write("# ops\nok-token\n" + "C" * 5000 + "\n")
start_fails(["--token-file", tf], [tf + ":3", "4096"], "5,000-byte token line")
with open(tf, "wb") as f:
    f.write(b"ok-token\nsec\x00ret\n")
start_fails(["--token-file", tf], [tf + ":2", "NUL"], "token with a NUL byte")

# Given but empty: refuse to start (no silent "no authentication").
start_fails(["--token-file", ""], ["token-file", "empty"], '--token-file ""')
start_fails(["--token-file="], ["token-file", "empty"], "--token-file=")
for text in ("token-file =\n", 'token-file = ""\n', "token-file =   \n"):
    conf = os.path.join(tmp, "governor.conf")
    with open(conf, "w") as f:
        f.write(text)
    start_fails(["--config", conf], [conf + ":1", "token-file", "empty"], "config %r" % text)

# Left out: no authentication, said in the log.
s = Server(tmp=tmp)
st, _, _ = s.req("GET", "/v1/jobs")
c.check(st == 200 and "auth=none" in s.logs(), "no token-file: open, logged auth=none")
s.stop()
c.done()
