"""A client cannot forge log fields or lines: the request path (and every other value a
client controls) is logged quoted, with '"', '\\', tabs, CR and other control bytes escaped.
It used to be logged raw: `path=/x<TAB>level=error`. A control byte in the request line is
refused before any route (400: no URI holds one, and a proxy could split the line there),
its refusal logged with the byte named, never raw."""
import re
import socket

from gov import Server, Checks

c = Checks()
s = Server()

PATHS = [b'/x" level=error msg="forged', b"/caf\xc3\xa9", b"/x\\\" level=error"]
CONTROL = [b"/x\tlevel=error", b"/x\x1b[31mred", b"/x\rlevel=error", b"/x\x0bts=0"]
for p in PATHS + CONTROL:
    k = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    k.sendall(b"GET " + p + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    got = b""
    while True:
        d = k.recv(65536)
        if not d:
            break
        got += d
    k.close()
    want = b"HTTP/1.1 400 " if p in CONTROL else b"HTTP/1.1 "
    c.check(got.startswith(want), "%r answered: %r" % (p, got[:40]))
st, _, _ = s.req("GET", "/healthz")
s.stop()

# Strict logfmt: key=bare or key="quoted with \\ escapes"; nothing else on a line.
FIELD = re.compile(r'([a-z_]+)=("(?:[^"\\\x00-\x1f\x7f]|\\.)*"|[^\s"=\x00-\x1f\x7f]+)(?: |$)')
raw = open(s.log_path, "rb").read()
c.check(b"\t" not in raw and b"\r" not in raw and b"\x1b" not in raw and b"\x0b" not in raw,
        "no raw control byte in the log")
lines = raw.decode("utf-8", errors="replace").splitlines()
requests = refused = 0
for line in lines:
    pos, keys = 0, []
    while pos < len(line):
        m = FIELD.match(line, pos)
        if not m:
            break
        keys.append(m.group(1))
        pos = m.end()
    c.check(pos == len(line), "not logfmt at %d: %r" % (pos, line))
    c.check(len(keys) == len(set(keys)) and keys[:4] == ["ts", "level", "mod", "msg"],
            "fields %r in %r" % (keys, line))
    c.check("level=error" not in line.split(" msg=")[0] or 'mod=main' in line, "forged: %r" % line)
    if 'msg="request" method=GET path="/x' in line or 'path="/caf' in line:
        requests += 1
    if 'msg="request refused" status=400 reason="a ' in line:
        refused += 1
c.check(requests == len(PATHS), "%d request lines for %d requests" % (requests, len(PATHS)))
c.check(refused == len(CONTROL), "%d refusals logged for %d request lines with a control byte" %
        (refused, len(CONTROL)))
c.check('reason="a control character (0x09) in the request line"' in raw.decode(errors="replace"),
        "the tab's refusal names the byte")
c.done()
