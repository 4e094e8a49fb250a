"""`governor flink --once`: exit codes and lines (docs/flink.md). Usage errors exit 2; an unreachable
Flink exits 3 after --retries (a warn line per attempt naming the URL, the request and the cause,
then `governor flink: URL: cause`); an unreachable or refusing governor 4; a refused rescale 5
(Flink's `errors` named). The retry contract with a server: after a 503 with Retry-After, and
after a reply lost on the way back, and after a proxy's 502 for a decision that was stored, the
same `at` and the same body are sent again, and the job ends with exactly one decision for the
sample. --apply print writes the operator's overrides
value; --apply rest PUTs the resource requirements; --all governs each RUNNING job by its id."""
import json
import os
import socket
import sqlite3
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from flinktest import (JID, SRC, Checks, FakeJobManager, Job, V, run, three_vertex_job,
                       tmpdir)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api"))
from gov import Server  # noqa: E402

c = Checks()
d = tmpdir()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


FAST = ["--set", "job.autoscaler.metrics.window=1 min",
        "--set", "job.autoscaler.stabilization.interval=0 ms"]

# ---- usage: exit 2, a line naming what is wrong ----
jm = FakeJobManager([three_vertex_job()])
U = ["--rest", jm.url, "--job", JID, "--once"]
for args, what in (
        (["--job", JID, "--once"], "--rest URL is required"),
        (["--rest", jm.url, "--once"], "give one of --job JOBID and --all"),
        (U + ["--all"], "give one of --job JOBID and --all"),
        (["--rest", "https://jm:8081", "--job", JID], "only http:// URLs"),
        (["--rest", "http://jm:0", "--job", JID], "the port must be in"),
        (U + ["--apply", "yes"], "--apply: \"yes\" is not one of none, rest, print"),
        (U + ["--interval", "500 ms"], "--interval: \"500 ms\" is out of range [1 s, 1 h]"),
        (U + ["--interval", "soon"], "--interval:"),
        (U + ["--retries", "-1"], "--retries:"),
        (U + ["--set", "job.autoscaler.utilization.target=2"],
         "job.autoscaler.utilization.target: \"2\" is out of range"),
        (U + ["--set", "job.autoscaler.nope=1"], "job.autoscaler.nope: unknown option"),
        (U + ["--set", "novalue"], "--set: expected KEY=VALUE"),
        (["--rest", jm.url, "--all", "--name", "x"], "--name goes with --job"),
        (U + ["--name", "a/b"], "--name:"),
        (["--rest", jm.url, "--job", "a/b"], "--job:"),
        (U + ["--server", "http://127.0.0.1:1", "--db", "x.db"], "--db is for deciding in this"),
        (U + ["--token-file", "t"], "--token-file goes with --server"),
        (U + ["--timeout", "0 ms"], "--timeout:"),
        (U + ["--bogus", "1"], "unknown flag --bogus"),
        (U + ["--server", "ftp://x"], "only http:// URLs")):
    rc, lines, err = run(args)
    c.check(rc == 2 and what in err and "governor flink: " in err and not lines,
            "usage %r: exit %d, %r" % (args, rc, err[-300:]))
rc, lines, err = run(["--help"])
c.check(rc == 0 and any("--apply" in str(ln) for ln in lines), "--help: %d" % rc)

# ---- Flink unreachable: exit 3 after the retries, a warn line per attempt ----
dead = free_port()
t0 = time.monotonic()
rc, lines, err = run(["--rest", "http://127.0.0.1:%d" % dead, "--job", JID, "--once",
                      "--retries", "1", "--db", os.path.join(d, "a.db")])
c.check(rc == 3 and not lines, "Flink unreachable: exit 3, nothing on stdout: %d %r" % (rc, lines))
c.check(err.count('msg="flink unreachable"') == 2 and
        'url=http://127.0.0.1:%d' % dead in err and
        'request="GET /jobs/%s"' % JID in err and
        "refused" in err, "two warn lines naming url, request and cause: %s" % err[-600:])
c.check("governor flink: http://127.0.0.1:%d: GET /jobs/%s: " % (dead, JID) in err,
        "the exit line: %s" % err[-300:])
c.check(time.monotonic() - t0 >= 0.9, "one backoff of 1 s between the attempts")
# a JobManager that does not know the job: 404 with Flink's errors
rc, lines, err = run(["--rest", jm.url, "--job", "f" * 32, "--once", "--retries", "0",
                      "--db", os.path.join(d, "a.db")])
c.check(rc == 3 and "HTTP 404, errors: Job ffff" in err, "unknown job: %d %s" % (rc, err[-300:]))

# ---- governor unreachable: exit 4, the sample line then an answer line with the error ----
rc, lines, err = run(["--rest", jm.url, "--job", JID, "--once", "--retries", "0",
                      "--server", "http://127.0.0.1:%d" % dead])
c.check(rc == 4 and len(lines) == 2 and "sample" in lines[0] and
        lines[1].get("error", {}).get("code") == "UNAVAILABLE",
        "governor unreachable: %d %r" % (rc, lines[1:]))
c.check('msg="governor unreachable"' in err and
        "governor flink: http://127.0.0.1:%d: POST /v1/jobs/%s/metrics: " % (dead, JID) in err,
        "the warn and exit lines: %s" % err[-500:])

# ---- the retry contract, through a proxy in front of a real server ----
srv = Server(tmp=d)


class Proxy:
    """Forwards POSTs to srv; the first `fail` ones get `mode` instead: "503" (Retry-After: 1,
    not forwarded), "lost" (forwarded, then the connection dropped without the reply) or "502"
    (forwarded, then answered 502 as HAProxy does when the replica's reply did not come back:
    the decision was stored)."""

    def __init__(self, mode, fail=1):
        self.mode, self.fail, self.bodies, self.times = mode, fail, [], []
        proxy = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                proxy.bodies.append(body)
                proxy.times.append(time.monotonic())
                if proxy.fail > 0 and proxy.mode == "503":
                    proxy.fail -= 1
                    data = b'{"error": {"code": "UNAVAILABLE", "message": "busy"}}'
                    self.send_response(503)
                    self.send_header("Retry-After", "1")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                req = urllib.request.Request("http://127.0.0.1:%d%s" % (srv.port, self.path),
                                             data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                if proxy.fail > 0 and proxy.mode == "lost":
                    proxy.fail -= 1
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if proxy.fail > 0 and proxy.mode == "502":
                    proxy.fail -= 1
                    status, data = 502, b"<html><body><h1>502 Bad Gateway</h1></body></html>"
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


for mode in ("503", "lost", "502"):
    px = Proxy(mode)
    job = "retry-" + mode
    rc, lines, err = run(["--rest", jm.url, "--job", JID, "--name", job, "--once",
                          "--server", px.url])
    c.check(rc == 0 and len(lines) == 2 and "answer" in lines[1],
            "%s: decided after one retry: %d %r %s" % (mode, rc, lines[1:], err[-400:]))
    c.check(len(px.bodies) == 2 and px.bodies[0] == px.bodies[1],
            "%s: the retry sent the same body (the same at): %r" % (mode, px.bodies))
    if mode == "503":
        c.check(px.times[1] - px.times[0] >= 0.95, "503: waited out Retry-After: 1")
    else:
        c.check(lines[1]["answer"].get("repeat") is True,
                "%s: the retry got the stored decision, marked as the repeat: %r" % (mode,
                                                                                      lines[1]))
    con = sqlite3.connect(srv.db)
    n = con.execute("SELECT count(*) FROM decisions WHERE job = ?", (job,)).fetchone()[0]
    con.close()
    c.check(n == 1, "%s: exactly one decision for the sample: %d" % (mode, n))
    px.httpd.shutdown()

# a refusal of the server (422: a bad option of --set in the server's eyes) is not retried
tokdir = os.path.join(d, "tokens")
with open(tokdir, "w") as f:
    f.write("# comment\nsecret-token\nother\n")
rc, lines, err = run(["--rest", jm.url, "--job", JID, "--name", "auth", "--once",
                      "--server", "http://127.0.0.1:%d" % srv.port, "--token-file", tokdir])
c.check(rc == 0, "a token file's first token is sent (the server has none: accepted): %d" % rc)
srv.stop()
srv2 = Server(tmp=d, args=["--token-file", tokdir])
rc, lines, err = run(["--rest", jm.url, "--job", JID, "--name", "auth", "--once",
                      "--server", "http://127.0.0.1:%d" % srv2.port])
c.check(rc == 4 and lines[1]["error"]["status"] == 401,
        "no token: the refusal is the answer line's error, exit 4: %d %r" % (rc, lines[1:]))
rc, lines, err = run(["--rest", jm.url, "--job", JID, "--name", "auth", "--once",
                      "--server", "http://127.0.0.1:%d" % srv2.port, "--token-file", tokdir])
c.check(rc == 0 and "answer" in lines[1], "with the token: %d %r" % (rc, lines[1:]))
srv2.stop()
jm.close()

# ---- --apply print and --apply rest, and a refused rescale ----


def until_execute(jm, job, args):
    """--once polls until an answer says execute (at most 6)."""
    for _ in range(6):
        rc, lines, err = run(["--rest", jm.url, "--job", job.jid, "--once"] + args)
        if rc != 0 or (len(lines) > 1 and lines[1].get("answer", {}).get("execute")):
            return rc, lines, err
    return rc, lines, err


job = three_vertex_job()
jm = FakeJobManager([job])
rc, lines, err = until_execute(jm, job, FAST + ["--db", os.path.join(d, "p.db"),
                                                "--apply", "print"])
ans = lines[1]["answer"] if len(lines) > 1 else {}
want = ",".join("%s:%d" % kv for kv in ans.get("parallelism", {}).items())
c.check(rc == 0 and len(lines) == 3 and lines[1]["applied"] == "print" and lines[2] == want,
        "--apply print: the overrides value as the third line: %r" % lines)
c.check(not job.puts, "--apply print PUTs nothing")
jm.close()

job = three_vertex_job()
jm = FakeJobManager([job])
jm.refuse_put = (409, {"errors": ["Job 0123 does not support rescaling: the adaptive scheduler "
                                  "is not enabled"]})
rc, lines, err = until_execute(jm, job, FAST + ["--db", os.path.join(d, "r.db"),
                                                "--apply", "rest"])
c.check(rc == 5 and len(lines) == 2 and lines[1].get("error", {}).get("code") ==
        "RESCALE_REFUSED" and lines[1]["error"]["status"] == 409 and lines[1]["applied"] is None
        and "answer" in lines[1], "a refused PUT: exit 5 and the error: %d %r" % (rc, lines[1:]))
c.check("HTTP 409, errors: Job 0123 does not support rescaling" in err and
        "governor flink: %s: PUT /jobs/%s/resource-requirements" % (jm.url, JID) in err,
        "the exit line names the request, the status and Flink's errors: %s" % err[-500:])
jm.refuse_put = None
rc, lines, err = run(["--rest", jm.url, "--job", JID, "--once", "--apply", "rest",
                      "--db", os.path.join(d, "r.db")] + FAST)
c.check(rc == 0 and lines[1]["applied"] == "rest" and len(job.puts) == 1,
        "accepted: applied rest, one PUT: %d %r %r" % (rc, lines[1:], job.puts))
body = [b for m, p, b in jm.requests if m == "PUT"][-1]
put = json.loads(body)
c.check(put == {vid: {"parallelism": {"lowerBound": 1, "upperBound": p}}
                for vid, p in lines[1]["answer"]["parallelism"].items()},
        "the PUT body: every vertex {lowerBound 1, upperBound P}: %r" % put)
jm.close()

# ---- --all: each RUNNING job, named by its id ----
a = three_vertex_job(jid="b" * 32)
b = three_vertex_job(jid="a" * 32)
f = three_vertex_job(jid="f" * 32)
f.state_override = "FINISHED"
jm = FakeJobManager([a, b, f])
rc, lines, err = run(["--rest", jm.url, "--all", "--once", "--db", os.path.join(d, "all.db")])
c.check(rc == 0 and [(ln["job"], "sample" in ln) for ln in lines] ==
        [("a" * 32, True), ("a" * 32, False), ("b" * 32, True), ("b" * 32, False)] and
        all(ln["flink_job"] == ln["job"] for ln in lines),
        "--all: the RUNNING jobs only, each two lines: %d %r" % (rc, lines))
jm.close()
c.done()
