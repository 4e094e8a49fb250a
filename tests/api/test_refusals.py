"""Every refusal gets its status, with the error envelope, promptly, and readable by a client
that sends its whole request before it reads. What evhttp refuses on its own (a request line
or header block above max-header, a body above max-body, a malformed request, an unknown
method or Expect) used to be an HTML 400/413, or no reply at all: a silent close, a reset
(the server closed with the client's bytes unread), or a wait until the read timeout.

Each case runs on a new connection: a thread sends the whole request (ignoring errors) while
the main thread reads until the server closes."""
import json
import socket
import threading
import time
import urllib.error
import urllib.request

from gov import Server, Checks, sample, fingerprint

c = Checks()
s = Server()  # defaults: max-header 16 kb, max-body 1 mb, read-timeout 10 s
PROMPT = 3.0  # seconds; the read timeout is 10 s


def exchange(data):
    """Sends data whole from a thread while reading one reply (until its Content-Length, or
    the close); returns (status, headers, body, secs)."""
    k = socket.create_connection(("127.0.0.1", s.port), timeout=12)
    t0 = time.monotonic()

    def send():
        try:
            k.sendall(data)
        except OSError:
            pass
    th = threading.Thread(target=send)
    th.start()
    got = b""
    try:
        while True:
            d = k.recv(65536)
            if not d:
                break
            got += d
            head, sep, rest = got.partition(b"\r\n\r\n")
            n = [l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
            if sep and n and len(rest) >= int(n[0]):
                break  # a whole reply (a keep-alive connection stays open)
    except OSError as e:
        got += ("<%r>" % e).encode()
    secs = time.monotonic() - t0
    th.join()
    k.close()
    head, _, body = got.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    try:
        status = int(lines[0].split(" ")[1])
    except (IndexError, ValueError):
        status = 0
    hdrs = {}
    for l in lines[1:]:
        k_, _, v = l.partition(":")
        hdrs[k_.strip().lower()] = v.strip()
    return status, hdrs, body, secs


def envelope(body):
    try:
        e = json.loads(body)["error"]
        return e if e.get("code") and e.get("message") else None
    except (ValueError, KeyError, TypeError):
        return None


CODES = {400: "INVALID_ARGUMENT", 413: "PAYLOAD_TOO_LARGE", 414: "URI_TOO_LONG",
         417: "EXPECTATION_FAILED", 431: "HEADERS_TOO_LARGE", 501: "NOT_IMPLEMENTED"}


def case(name, data, status, field=None, words=()):
    st, hdrs, body, secs = exchange(data)
    e = envelope(body)
    ok = st == status and e is not None and secs < PROMPT and e.get("code") == CODES[status]
    ok = ok and (field is None or e.get("field") == field)
    ok = ok and all(w in (e or {}).get("message", "") for w in words)
    c.check(ok, "%s: want %d, got %d in %.1f s: %r" % (name, status, st, secs, body[:200]))
    if st == status and status in (413, 414, 417, 431, 501):
        c.check(hdrs.get("connection") == "close", "%s: Connection: close" % name)
    return st


def post(path, body, extra=b"", ctype=b"application/json"):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: " + ctype + b"\r\n" +
            extra + b"Content-Length: %d\r\n\r\n" % len(body) + body)


SAMPLE = json.dumps(sample(1)).encode()
before = fingerprint(s.db)

case("job name of 5,000 characters", post(b"/v1/jobs/" + b"j" * 5000 + b"/metrics", SAMPLE),
     400, field="job")
case("request line above max-header", post(b"/v1/jobs/" + b"j" * 20000 + b"/metrics", SAMPLE),
     414, words=("max-header",))
case("body nested 10,000 arrays deep", post(b"/v1/jobs/deep/metrics", b"[" * 10000 + b"]" * 10000),
     400, words=("depth",))
case("2 MiB body without Expect", post(b"/v1/jobs/big/metrics", b" " * (2 << 20)), 413,
     words=("max-body",))
case("10 MiB body sent before reading", post(b"/v1/jobs/big/metrics", b" " * (10 << 20)), 413)
case("40 MiB body sent before reading", post(b"/v1/jobs/big/metrics", b" " * (40 << 20)), 413)
case("Content-Length of 1 TB with Expect: 100-continue",
     b"POST /v1/jobs/big/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Expect: 100-continue\r\nContent-Length: 1000000000000\r\n\r\n", 413)
chunk = b"%x\r\n" % (256 << 10) + b" " * (256 << 10) + b"\r\n"
case("chunked body above max-body",
     b"POST /v1/jobs/big/metrics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 8 + b"0\r\n\r\n", 413)
case("Authorization header above max-header",
     b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + b"t" * 20000 + b"\r\n\r\n",
     431, words=("max-header",))
case("many headers above max-header",
     b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" +
     b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 100) for i in range(200)) + b"\r\n", 431)
case("malformed request line", b"HELLO\r\n\r\n", 400)
case("malformed header line", b"GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n", 400)
case("bad Content-Length", post(b"/v1/jobs/x/metrics", b"", extra=b"Content-Length: abc\r\n")
     .replace(b"Content-Length: 0\r\n", b""), 400)
case("unsupported Expect",
     b"POST /v1/jobs/x/metrics HTTP/1.1\r\nHost: x\r\nExpect: tea\r\nContent-Length: 2\r\n\r\n{}",
     417)
case("unknown method", b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n", 501)
CODES.update({404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"})
case("path that is not UTF-8", b"GET /caf\xe9 HTTP/1.1\r\nHost: x\r\n\r\n", 404)
case("path that is not UTF-8, known route", b"GET /v1/jobs/caf\xe9/metrics HTTP/1.1\r\nHost: x\r\n\r\n",
     405)

# urllib sends everything before reading: it must get the statuses, not a reset.
for name, path, body, want in [
        ("urllib 5,000-character job", "/v1/jobs/%s/metrics" % ("j" * 5000), SAMPLE, 400),
        ("urllib 10 MiB body", "/v1/jobs/big/metrics", b" " * (10 << 20), 413),
        ("urllib deep body", "/v1/jobs/deep/metrics", b"[" * 10000 + b"]" * 10000, 400)]:
    t0 = time.monotonic()
    try:
        r = urllib.request.Request("http://127.0.0.1:%d%s" % (s.port, path), data=body,
                                   headers={"Content-Type": "application/json"})
        urllib.request.urlopen(r, timeout=12)
        got = 200
    except urllib.error.HTTPError as e:
        got = e.code
        e.read()
    except OSError as e:
        got = repr(e)
    secs = time.monotonic() - t0
    c.check(got == want and secs < PROMPT, "%s: want %d, got %r in %.1f s" % (name, want, got, secs))

c.check(fingerprint(s.db) == before, "nothing stored by the refused requests")
st, _, _ = s.req("GET", "/healthz")
c.check(st == 200, "the server still answers")
s.stop()
c.check("request refused" in s.logs(), "refusals are logged")
c.done()
