"""Bearer-token auth: with --token-file every route but /healthz and /readyz needs
`Authorization: Bearer <token>` (401 otherwise), any token of the file works, and no token
ever appears in the log."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample  # noqa: E402
import tempfile  # noqa: E402

c = Checks()
tmp = tempfile.mkdtemp(prefix="governor-auth-")
tf = os.path.join(tmp, "tokens")
with open(tf, "w") as f:
    f.write("# operators\nsecret-one\n\n  secret-two  \n")
s = Server(args=["--token-file", tf], tmp=tmp)
for path in ("/healthz", "/readyz"):
    st, _, _ = s.req("GET", path)
    c.check(st == 200, "%s open without a token" % path)
for hdr in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer secret-on"},
            {"Authorization": "Bearer secret-one2"}, {"Authorization": "Basic secret-one"},
            {"Authorization": "secret-one"}):
    st, body, h = s.req("GET", "/v1/jobs", headers=hdr)
    c.check(st == 401 and body["error"]["code"] == "UNAUTHENTICATED", "401 with %r" % hdr)
    c.check(h.get("WWW-Authenticate") == "Bearer", "WWW-Authenticate")
    st, body, _ = s.req("POST", "/v1/jobs/j/metrics", sample(0), headers=hdr)
    c.check(st == 401, "decide needs a token %r" % hdr)
for t in ("secret-one", "secret-two"):
    st, body, _ = s.req("GET", "/v1/jobs", headers={"Authorization": "Bearer " + t})
    c.check(st == 200, "token %s accepted" % t)
st, body, _ = s.req("POST", "/v1/jobs/j/metrics", sample(0),
                    headers={"Authorization": "Bearer secret-two"})
c.check(st == 200, "decide with a token")
c.check(s.stop() == 0, "SIGTERM exits 0")
log = s.logs()
c.check("secret" not in log and "wrong" not in log, "tokens never logged")

bad = Server.__new__(Server)
import subprocess  # noqa: E402
from gov import BINARY  # noqa: E402
r = subprocess.run([BINARY, "serve", "--listen", "127.0.0.1:0", "--db",
                    os.path.join(tmp, "x.db"), "--token-file", os.path.join(tmp, "missing")],
                   capture_output=True, text=True, timeout=10)
c.check(r.returncode != 0 and "token file" in r.stderr, "missing token file refused")
c.done()
