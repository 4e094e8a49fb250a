"""POST /v1/replay loads policies only from directories the server allows (README, Security):
`"policies": "/etc"` loaded .lua files from any directory, and the error told which paths
exist. Allowed are the server's --policies directory, those of --replay-policies, and any
directory under one of them, compared after realpath (no way out with ".." or a symbolic
link); every other path, existing or not, gets the same 400."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample  # noqa: E402

c = Checks()
SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "policies")
s_tmp = __import__("tempfile").mkdtemp(prefix="governor-api-")
T = lambda *p: os.path.join(s_tmp, *p)  # noqa: E731
shutil.copytree(SHIPPED, T("policies"))
shutil.copytree(SHIPPED, T("cand", "v2"))
shutil.copytree(SHIPPED, T("extra"))
shutil.copytree(SHIPPED, T("outside"))
shutil.copytree(SHIPPED, T("cand2"))  # shares a prefix with "cand"
os.makedirs(T("cand", "bad"))
with open(T("cand", "bad", "broken.lua"), "w") as f:
    f.write("return {evaluate = function( end}\n")
os.symlink("/etc", T("cand", "escape"))
os.symlink(T("outside"), T("cand", "escape2"))



def replay(srv, pol):
    st, r, _ = srv.req("POST", "/v1/replay", {"job": "orders", "policies": pol})
    return st, r


def refusals(srv, paths, what):
    answers = set()
    for pol in paths:
        st, r = replay(srv, pol)
        err = r.get("error", {}) if isinstance(r, dict) else {}
        c.check(st == 400 and err.get("field") == "policies",
                "%s: refused %r: 400 naming policies, got %d %.200r" % (what, pol, st, r))
        answers.add((st, str(r)))
    c.check(len(answers) == 1, "%s: every refusal reads the same, whether the path exists or "
            "not: %d kinds" % (what, len(answers)))
    c.check(all("/etc" not in a and "exist" not in a and "No such" not in a for a in answers),
            "%s: the refusal names no path: %.300r" % (what, answers))


# ---- only the server's --policies directory (and what is under it) ----
t = Server(tmp=s_tmp, args=["--policies", T("policies")])
for i in range(4):
    st, body, _ = t.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body
st, r = replay(t, T("policies"))
c.check(st == 200 and "summary" in r, "the server's --policies: 200, got %d %.200r" % (st, r))
st, r = replay(t, T("policies", "lib"))
c.check(st == 422, "a directory under it is allowed (lib does not load as policies): %d" % st)
refusals(t, ["/etc", "/nonexistent", "/etc/passwd", T("outside"), T("policies", "..", "outside"),
             T("extra"), T("cand", "escape"), T("policies", "freeze.lua"), "", "/", "."],
         "no --replay-policies")
c.check(t.stop() == 0, "clean stop")

# ---- with --replay-policies ----
try:
    s = Server(tmp=s_tmp, db=T("second.db"), args=["--policies", T("policies"),
                                "--replay-policies", "%s ; %s" % (T("cand"), T("extra"))])
except RuntimeError as e:
    c.check(False, "the server starts with --replay-policies: %s" % str(e)[-200:])
    c.done()
for i in range(4):
    st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(i))
    assert st == 200, body
for pol in [T("policies"), T("cand"), T("cand", "v2"), T("extra"), T("cand", "v2", "..", "v2")]:
    st, r = replay(s, pol)
    c.check(st == 200 and "summary" in r, "allowed %s: 200, got %d %.200r" % (pol, st, r))
st, r = replay(s, T("cand", "bad"))
err = r.get("error", {}) if isinstance(r, dict) else {}
c.check(st == 422 and err.get("field") == "policies" and "broken.lua" in err.get("message", ""),
        "an allowed directory that does not load: 422 with the file, got %d %r" % (st, r))
refusals(s, ["/etc", "/nonexistent", "/etc/passwd", T("outside"), T("cand", "..", "outside"),
             T("policies", "..", "outside"), T("cand", "escape"), T("cand", "escape2"),
             T("cand", "nope"), T("cand2"), T("policies", "freeze.lua"), "", "/", ".",
             "policies"], "--replay-policies")
c.check(s.stop() == 0, "clean stop")
c.done()
