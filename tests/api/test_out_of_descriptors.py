"""Out of descriptors: with its hard limit at 120 and 200 clients connected, the server
pauses accepting (100 ms at a time, logged at most about once a second) instead of spinning
on accept() errors, and serves again once clients leave. It used to spin, printing libevent's
"Error from accept() call" on every turn of the loop."""
import re
import socket
import subprocess
import sys
import tempfile
import time

from gov import BINARY, Checks

c = Checks()
tmp = tempfile.mkdtemp(prefix="governor-fds-")
log_path = tmp + "/server.log"
log = open(log_path, "w")
p = subprocess.Popen(["bash", "-c", 'ulimit -n 120 && exec "$0" serve --listen 127.0.0.1:0 '
                      '--db "$1" --read-timeout 30s', BINARY, tmp + "/governor.db"],
                     stdout=subprocess.DEVNULL, stderr=log)
try:
    port = None
    for _ in range(200):
        m = re.search(r'addr=127\.0\.0\.1:(\d+)', open(log_path).read())
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.05)
    assert port, open(log_path).read()
    c.check('msg="descriptor limit" nofile=120' in open(log_path).read(),
            "the limit in force is logged")

    def ticks():
        with open("/proc/%d/stat" % p.pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return int(v[11]) + int(v[12])  # utime + stime

    ks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(200)]
    time.sleep(0.5)
    t0, c0 = time.monotonic(), ticks()
    time.sleep(2)
    cpu = (ticks() - c0) / 100.0 / (time.monotonic() - t0)
    print("server CPU while out of descriptors: %.0f%%" % (cpu * 100))
    c.check(cpu < 0.10, "the server does not spin: %.0f%% CPU" % (cpu * 100))
    for k in ks:
        k.close()
    got = b""
    for _ in range(50):  # the closed clients' descriptors come back within moments
        try:
            k = socket.create_connection(("127.0.0.1", port), timeout=5)
            k.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = k.recv(100)
            k.close()
            if got.startswith(b"HTTP/1.1 200"):
                break
        except OSError:
            pass
        time.sleep(0.1)
    c.check(got.startswith(b"HTTP/1.1 200"), "serves again: %r" % got[:40])
finally:
    p.terminate()
    p.wait(timeout=20)
    log.close()
text = open(log_path).read()
n = text.count("cannot accept connections")
c.check(1 <= n <= 6, "the pause is logged, rate-limited: %d lines" % n)
c.check("Error from accept() call" not in text,
        "libevent's accept warnings: %d" % text.count("Error from accept() call"))
c.done()
