"""HEAD on every GET route: the status and headers GET would send (Content-Length included)
and no body, so that the connection stays in step. It used to answer 405 with a body and no
Content-Length, and the next response on the connection was read as that body. A 405 names
the methods the path takes in `Allow`."""
import socket

from gov import Server, Checks, sample

c = Checks()
s = Server()
st, body, _ = s.req("POST", "/v1/jobs/orders/metrics", sample(1))
assert st == 200, body
did = body["decision_id"]

GETS = ["/healthz", "/readyz", "/metrics", "/", "/v1/jobs", "/v1/jobs/orders/config",
        "/v1/jobs/orders/decisions", "/v1/jobs/orders/events", "/v1/decisions/%d" % did,
        "/v1/policies", "/v1/jobs/nosuch/config", "/v1/decisions/999999"]

# One keep-alive connection for all: a body after a HEAD would be read as the next status line.
conn = s.conn()
for path in GETS:
    conn.request("HEAD", path)
    r = conn.getresponse()
    hb = r.read()
    hh = {k.lower(): v for k, v in r.getheaders()}
    conn.request("GET", path)
    g = conn.getresponse()
    gb = g.read()
    gh = {k.lower(): v for k, v in g.getheaders()}
    c.check(r.status == g.status, "HEAD %s: %d, GET %d" % (path, r.status, g.status))
    c.check(hb == b"", "HEAD %s: no body" % path)
    # /metrics grows between the two requests (they are counted): its length only exists
    want = str(len(gb)) if path != "/metrics" else hh.get("content-length", "missing")
    c.check(hh.get("content-length") == want and want.isdigit(),
            "HEAD %s: Content-Length %r, GET body %d bytes" % (path, hh.get("content-length"),
                                                               len(gb)))
    c.check(hh.get("content-type") == gh.get("content-type"),
            "HEAD %s: Content-Type %r vs %r" % (path, hh.get("content-type"), gh.get("content-type")))
conn.close()

# Raw bytes: HEAD /healthz then GET /healthz pipelined; exactly two responses, the first
# without a body.
k = socket.create_connection(("127.0.0.1", s.port), timeout=10)
k.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
          b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = k.recv(65536)
    if not d:
        break
    data += d
k.close()
head, _, rest = data.partition(b"\r\n\r\n")
c.check(head.startswith(b"HTTP/1.1 200") and rest.startswith(b"HTTP/1.1 200"),
        "pipelined HEAD + GET: %r" % data[:300])

# HEAD on a path without GET, and a wrong method: 405 with Allow.
st, body, hdr = s.req("HEAD", "/v1/sql")
c.check(st == 405 and hdr.get("Allow") == "POST", "HEAD /v1/sql: %d Allow=%r" % (st, hdr.get("Allow")))
st, body, hdr = s.req("DELETE", "/healthz")
c.check(st == 405 and hdr.get("Allow") == "GET, HEAD" and body["error"]["code"] ==
        "METHOD_NOT_ALLOWED", "DELETE /healthz: %d %r %r" % (st, hdr.get("Allow"), body))
s.stop()
c.done()
