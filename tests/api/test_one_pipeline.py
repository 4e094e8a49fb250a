"""One decision pipeline: the server, `governor replay` and `governor replay --db` decide through
the same service, so they agree on every sample, accepted or refused.

A job's samples, with refused ones among them (a bad value, a request option that does not
parse, options that do not hold together, a topology the core refuses, an `at` that goes
back), are posted to a real server and replayed from a trace. Every decision the replay prints
is the server's response (decision id and warnings aside); every refusal has the server's
status, code, field and message (the message aside for `at`, where the server also looks for
a retry); and replaying the stored history reproduces every stored decision."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, Server, Checks, sample  # noqa: E402

c = Checks()
POLICIES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "policies")
s = Server(args=["--policies", POLICIES])

T = "job.autoscaler.utilization.target"
bad_value = sample(3)
bad_value["vertices"][0]["parallelism"] = 0
bad_option = sample(3, config={T: 7})
bad_options = sample(3, config={T: 0})
unknown_input = sample(3)
unknown_input["vertices"][1]["inputs"][0]["from"] = "nowhere"
duplicate = sample(3)
duplicate["vertices"][1]["id"] = "source"
lines = [sample(0), sample(1), sample(2), bad_value, bad_option, bad_options, unknown_input,
         duplicate, sample(3), sample(2, rate=900.0), sample(4, config={T: 0.9}), sample(5),
         sample(6)]

replies = []
for body in lines:
    st, r, _ = s.req("POST", "/v1/jobs/orders/metrics", body)
    replies.append((st, r))
c.check([st for st, _ in replies] == [200, 200, 200, 400, 422, 422, 400, 400, 200, 409, 200,
                                      200, 200], "the server's statuses: %r" % [
    st for st, _ in replies])

tmp = tempfile.mkdtemp(prefix="governor-pipeline-")
trace = os.path.join(tmp, "trace.jsonl")
with open(trace, "w") as f:
    for body in lines:
        f.write(json.dumps(dict(body, job="orders")) + "\n")
p = subprocess.run([BINARY, "replay", trace, "--policies", POLICIES], capture_output=True,
                   text=True, timeout=60)
out = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
c.check(p.returncode == 0 and len(out) == len(lines), "replay printed a line per sample: %d %s" % (
    p.returncode, p.stderr))

for n, ((st, r), got) in enumerate(zip(replies, out), 1):
    if st == 200:
        want = {k: v for k, v in r.items() if k not in ("decision_id", "warnings")}
        c.check(got == want, "line %d: the replayed decision is the server's:\n  %r\n  %r" % (
            n, got, want))
        continue
    e, ge = r["error"], got.get("error", {})
    c.check(ge.get("status") == st, "line %d: status %d: %r" % (n, st, got))
    c.check(ge.get("code") == e["code"], "line %d: code %s: %r" % (n, e["code"], got))
    c.check(ge.get("field") == e.get("field", ""), "line %d: field %r: %r" % (
        n, e.get("field"), got))
    if st != 409:
        c.check(ge.get("message") == e["message"], "line %d: message %r: %r" % (
            n, e["message"], got))

# The stored history, replayed with the same policies, is every stored decision again.
p = subprocess.run([BINARY, "replay", "--db", s.db, "--job", "orders", "--policies", POLICIES],
                   capture_output=True, text=True, timeout=60)
res = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
summ = res[-1].get("summary") if res else None
c.check(p.returncode == 0 and summ and summ["decisions"] == 7 and summ["identical"] == 7 and
        summ["changed"] == 0, "replay --db reproduces the 7 decisions: %r %s" % (summ, p.stderr))

s.stop()
c.done()
