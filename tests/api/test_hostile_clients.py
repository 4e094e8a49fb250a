"""Hostile clients: 10,000 idle connections, slow headers, slow bodies, oversized headers and
bodies that stop half-way, all at once. Each gets a clear status or a closed connection within
read-timeout, the server's memory stays bounded, and a normal client keeps its latency: the
test prints p50/p99 of a normal client with and without the attack, and their ratio.

The test raises its own descriptor limit (resource.setrlimit) and scales the idle crowd down,
saying so, when the hard limit does not allow 10,000."""
import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time

from gov import Server, Checks, sample

READ_TIMEOUT = 6  # seconds, the server's read-timeout here
c = Checks()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = 10000 + 600
if hard != resource.RLIM_INFINITY and hard < want:
    IDLE = max(100, hard - 600)
    print("descriptor hard limit %d: %d idle connections instead of 10,000" % (hard, IDLE))
else:
    IDLE = 10000
    resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY
                                                else max(soft, min(hard, want)), hard))

# synchronous OFF: a commit's fsync would add the disk's jitter to what is measured here
s = Server(args=["--read-timeout", "%d s" % READ_TIMEOUT, "--synchronous", "OFF"])
m = [l for l in s.logs().splitlines() if 'msg="descriptor limit"' in l]
c.check(m, "the server logs its descriptor limit")
if m:
    print(m[0].split("msg=")[1])


def rss_kb():
    with open("/proc/%d/status" % s.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


# The normal client runs in its own process, so that the attack's threads in this one (and
# its 10,000 sockets) do not slow it down: what is measured is the server.
CLIENT = r"""
import http.client, json, sys, time
sys.path.insert(0, sys.argv[3])
from gov import sample
port, n, first = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[4])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
out = []
for i in range(first, first + n):
    body = json.dumps(sample(i))
    t = time.perf_counter()
    conn.request("POST", "/v1/jobs/normal/metrics", body=body,
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    out.append((time.perf_counter() - t) * 1000 if r.status == 200 else -r.status)
print(json.dumps(out))
"""
step = [1]


def normal_client(n=300):
    """Latencies (ms) of n decisions on one keep-alive connection, from another process."""
    p = subprocess.run([sys.executable, "-c", CLIENT, str(s.port), str(n),
                        os.path.dirname(os.path.abspath(__file__)), str(step[0])],
                       capture_output=True, text=True, timeout=120)
    step[0] += n
    out = json.loads(p.stdout) if p.returncode == 0 else [-1]
    c.check(all(x >= 0 for x in out), "normal client: %r" % (p.stderr[-300:] or out[:5]))
    return [x for x in out if x >= 0] or [0.0]


def connect():
    k = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    k.setblocking(False)
    return k


normal_client(50)  # warm up
base = normal_client()
rss0 = rss_kb()

# ---- the attack
idle = []
t0 = time.monotonic()
for i in range(IDLE):
    idle.append(connect())
t_open = time.monotonic() - t0

HEAD = (b"POST /v1/jobs/slow/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n")
slow_head = [connect() for _ in range(50)]      # one header byte at a time
slow_body = [connect() for _ in range(50)]      # the head, then one body byte at a time
stopped = [connect() for _ in range(20)]        # the head and half the body, then nothing
big_head = [connect() for _ in range(20)]       # a 40 KB header block (max-header is 16 kb)
for k in slow_body:
    k.sendall(HEAD)
for k in stopped:
    k.sendall(HEAD + b" " * 500)
for k in big_head:
    try:
        k.send(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 40000 + b"\r\n\r\n")
    except BlockingIOError:
        pass
stop = threading.Event()


def trickle():
    i = 0
    while not stop.is_set():
        for k in slow_head:
            try:
                k.send(HEAD[i % len(HEAD):i % len(HEAD) + 1])
            except OSError:
                pass
        for k in slow_body:
            try:
                k.send(b" ")
            except OSError:
                pass
        i += 1
        stop.wait(0.2)


th = threading.Thread(target=trickle, daemon=True)
th.start()
time.sleep(0.5)
during = normal_client()
rss1 = rss_kb()
n_attack = IDLE + len(slow_head) + len(slow_body) + len(stopped) + len(big_head)

b50, b99, d50, d99 = pct(base, 50), pct(base, 99), pct(during, 50), pct(during, 99)
# Floors keep a sub-millisecond baseline from turning scheduling noise into a large ratio.
r50, r99 = d50 / max(b50, 1.0), d99 / max(b99, 10.0)
print("%d idle connections opened in %.1f s; %d hostile connections in all"
      % (IDLE, t_open, n_attack))
print("normal client without the attack: p50 %.2f ms p99 %.2f ms" % (b50, b99))
print("normal client during the attack:   p50 %.2f ms p99 %.2f ms" % (d50, d99))
print("ratio during/without (floors 1 ms, 10 ms): p50 x%.2f p99 x%.2f" % (r50, r99))
print("server memory: %d MB before, %d MB with the attack (%.1f KB a connection)"
      % (rss0 // 1024, rss1 // 1024, (rss1 - rss0) / float(n_attack)))
# A server the attack starves answers the normal client late by whole timeouts (seconds): the
# ratio shows it, and on a machine so busy that scheduling alone triples a sub-millisecond
# median, a median still under 20 ms (and a p99 under 250 ms) is not the attack's doing.
c.check((r50 < 3 or d50 < 20) and (r99 < 10 or d99 < 250),
        "normal latency kept: p50 x%.2f (%.1f ms) p99 x%.2f (%.1f ms)" % (r50, d50, r99, d99))
c.check((rss1 - rss0) / float(n_attack) < 32, "memory bounded: %.1f KB a connection"
        % ((rss1 - rss0) / float(n_attack)))


def outcome(k, until):
    """What the server did with a connection by `until`: b'' closed, or the bytes it sent,
    or None (still open)."""
    got = b""
    p = select.poll()  # select() cannot take descriptors above 1023
    p.register(k, select.POLLIN)
    while time.monotonic() < until:
        if not p.poll(max(0, min(500, int((until - time.monotonic()) * 1000)))):
            continue
        try:
            d = k.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError as e:
            return got or ("%r" % e).encode()
        if not d:
            return got
        got += d
    return None


# Oversized headers: 431 at once (well before the read timeout).
until = time.monotonic() + 3
for k in big_head:
    o = outcome(k, until)
    c.check(o is not None and o.startswith(b"HTTP/1.1 431 "), "oversized header: %r" % (o or b"")[:60])
# The rest: by the read timeout (counted from their opening) plus slack.
until = t0 + t_open + READ_TIMEOUT + 8
for name, group, want in [("slow header", slow_head, b"HTTP/1.1 408 "),
                          ("slow body", slow_body, b"HTTP/1.1 408 "),
                          ("body stopped half-way", stopped, b"HTTP/1.1 408 ")]:
    outs = [outcome(k, until) for k in group]
    bad = [o for o in outs if o is None or not o.startswith(want)]
    c.check(not bad, "%s: %d of %d without %r: %r" % (name, len(bad), len(group), want,
                                                      (bad[:1] or [b""])[0][:80]))
stop.set()
th.join()

# Every idle connection closed by the server, without a reply (nothing was asked).
open_ = set(idle)
p = select.poll()
byfd = {}
for k in idle:
    p.register(k, select.POLLIN)
    byfd[k.fileno()] = k
replied = 0
while open_ and time.monotonic() < until:
    for fd, ev in p.poll(500):
        k = byfd[fd]
        try:
            d = k.recv(4096)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            d = b""
        if d:
            replied += 1
        p.unregister(k)
        open_.discard(k)
c.check(not open_, "%d of %d idle connections still open after read-timeout"
        % (len(open_), IDLE))
c.check(replied == 0, "%d idle connections got bytes" % replied)
for k in idle + slow_head + slow_body + stopped + big_head:
    k.close()

# And the server is none the worse.
after = normal_client(50)
st, _, _ = s.req("GET", "/healthz")
c.check(st == 200, "healthz after the attack")
time.sleep(0.5)
print("server memory after: %d MB" % (rss_kb() // 1024))
s.stop()
c.done()
