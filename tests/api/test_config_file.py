"""`governor serve --config FILE`: server options and job defaults from a key = value file,
flags winning over the file, the server layer showing in GET /v1/jobs/{job}/config, and a
bad file refused at start with file:line."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from gov import BINARY, Server, Checks, sample  # noqa: E402

c = Checks()
tmp = tempfile.mkdtemp(prefix="governor-cfg-")
cfg = os.path.join(tmp, "governor.conf")
with open(cfg, "w") as f:
    f.write("# server options and job defaults\n"
            "max-body = 4 kb\n"
            "log-level = info\n"
            "job.autoscaler.utilization.target = 0.55\n"
            "job.autoscaler.stabilization.interval = 1 min\n")
s = Server(tmp=tmp, args=["--config", cfg, "--max-body", "8 kb"])
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(0))
c.check(st == 200, "decide: %r" % (body,))
st, body, _ = s.req("GET", "/v1/jobs/orders/config")
eff = body.get("effective", {})
c.check(eff.get("job.autoscaler.utilization.target") == {"value": "0.55", "source": "server"},
        "the file's job default is the server layer: %r" %
        eff.get("job.autoscaler.utilization.target"))
c.check(eff.get("job.autoscaler.metrics.window", {}).get("source") == "default",
        "other options keep their defaults")
big = sample(1)
big["pad"] = "x" * 6000  # 6 kB: above the file's 4 kb, below the flag's 8 kb
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", big)
c.check(st == 200, "the --max-body flag wins over the file: %d" % st)
big["pad"] = "x" * 9000
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", big)
c.check(st == 413, "above the flag's 8 kb: 413, got %d" % st)
c.check(s.stop() == 0, "clean stop")

bad = os.path.join(tmp, "bad.conf")
with open(bad, "w") as f:
    f.write("max-body = 1 mb\njob.autoscaler.utilization.target = 1.5\n")
p = subprocess.run([BINARY, "serve", "--listen", "127.0.0.1:0", "--db",
                    os.path.join(tmp, "bad.db"), "--config", bad],
                   capture_output=True, text=True, timeout=20)
c.check(p.returncode != 0 and "bad.conf:2" in p.stderr and "utilization.target" in p.stderr,
        "a bad value in the file is refused with file:line: %r" % p.stderr[-300:])
c.done()
