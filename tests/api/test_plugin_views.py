"""ctx.config and ctx.params are the job's options of this decision, whatever decisions of other
jobs or other configs came before on the same revision (the server keeps these views per
revision and config hash): an executor that vetoes with what it reads sees each job's own
options, a request's own `config`, a changed job config, and an option of the request
that is not in the hash of another; the views stay read-only."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample  # noqa: E402

ECHO = """return { kind = 'executor', execute = function(decision, ctx)
  local ok, err = pcall(function() ctx.config['job.autoscaler.utilization.target'] = '0.1' end)
  local ok2 = pcall(function() rawset(ctx.params, 'tag', 'x') end)
  local n = 0
  for _ in pairs(ctx.config) do n = n + 1 end
  local vs, ids = ctx.job.vertices, {}
  for i, v in ipairs(vs) do ids[#ids + 1] = v.id .. ':' .. #v.inputs .. ':' .. v.metrics.busy_avg end
  local nested_ro = true
  for _, v in pairs(vs) do
    nested_ro = nested_ro and not pcall(function() v.metrics.busy_avg = 1 end)
      and not pcall(function() rawset(v, 'id', 'x') end)
  end
  local job = 'job=' .. #vs .. ' ' .. table.concat(ids, ',') .. ' same='
    .. tostring(vs == ctx.job.vertices and vs[1] == ctx.job.vertices[1]) .. ' nro='
    .. tostring(nested_ro)
  return nil, job .. ' target=' .. tostring(ctx.config['job.autoscaler.utilization.target'])
    .. ' tag=' .. tostring(ctx.params.tag) .. ' other=' .. tostring(ctx.params.other)
    .. ' keys=' .. n .. ' ro=' .. tostring(not ok and not ok2)
end }
"""

c = Checks()
tmp = tempfile.mkdtemp(prefix="governor-views-")
pdir = os.path.join(tmp, "policies")
os.mkdir(pdir)
with open(os.path.join(pdir, "echo.lua"), "w") as f:
    f.write(ECHO)
s = Server(tmp=tmp, args=["--policies", pdir])

P = "job.autoscaler.scaling.custom-executor.e."


def cfg(target, tag, other=None):
    d = {"job.autoscaler.scaling.custom-executors": "e",
         P + "class": "echo",
         P + "tag": tag,
         "job.autoscaler.utilization.target": target,
         "job.autoscaler.stabilization.interval": "0 ms",
         "job.autoscaler.metrics.window": "1 min"}
    if other is not None:
        d[P + "other"] = other
    return d


def why(job, i, config=None, put=None):
    """The veto's reason in the message of job's i-th decision."""
    if put is not None:
        st, _, _ = s.req("PUT", "/v1/jobs/%s/config" % job, {"config": put})
        c.check(st in (200, 204), "PUT config of %s: %s" % (job, st))
    st, body, _ = s.req("POST", "/v1/jobs/%s/metrics" % job, sample(i, busy_agg=1000.0,
                                                                    config=config))
    if st != 200:
        c.check(False, "decision %s/%d: %s %r" % (job, i, st, body))
        return ""
    return body.get("message", "")


# Two jobs on two configs, interleaved: each sees its own, every time (once the metric
# window is full: the executor runs on a decision to change).
W = 4
seen = {}
for i in range(W + 4):
    seen.setdefault("a", []).append(why("a", i, config=cfg("0.6", "alpha")))
    seen.setdefault("b", []).append(why("b", i, config=cfg("0.8", "beta", other="x")))
for m in seen["a"][W:]:
    c.check("target=0.6 tag=alpha other=nil" in m and "ro=true" in m, "job a sees its own: %r" % m)
for m in seen["b"][W:]:
    c.check("target=0.8 tag=beta other=x" in m and "ro=true" in m, "job b sees its own: %r" % m)
c.check(all(m == seen["a"][-1] for m in seen["a"][W:]), "job a, same config: the same views")
c.check("job=2 source:0:700,agg:1:1000 same=true nro=true" in seen["a"][-1],
        "ctx.job read-only all the way down, each nested table one proxy: %r" % seen["a"][-1])

# The same job with a changed config: the new values at once, then the old ones again.
m = why("a", W + 4, config=cfg("0.65", "gamma"))
c.check("target=0.65 tag=gamma other=nil" in m, "a changed request config is seen: %r" % m)
m = why("a", W + 5, config=cfg("0.6", "alpha"))
c.check("target=0.6 tag=alpha other=nil" in m, "and the earlier one again: %r" % m)

# A job config (PUT) rather than the request's: seen the same way.
m = why("c", 0, put=cfg("0.7", "delta"))
for i in range(1, W + 1):
    m = why("c", i)
c.check("target=0.7 tag=delta other=nil" in m, "a job's stored config is seen: %r" % m)
m = why("c", W + 1, put=cfg("0.7", "delta", other="y"))
c.check("target=0.7 tag=delta other=y" in m, "a changed stored config is seen: %r" % m)

c.check(s.stop() == 0, "the server stops cleanly")
c.done()
