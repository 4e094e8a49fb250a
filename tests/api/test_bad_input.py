"""The issue's "Bad input" list, one check each: a clear 4xx that names the problem, and
every stored row as it was (a fingerprint of all tables before and after)."""
import copy
import os
import select
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from gov import Server, Checks, sample, fingerprint  # noqa: E402

c = Checks()
s = Server(args=["--read-timeout", "2 s"])
JOB = "/v1/jobs/orders/metrics"
st, body, _ = s.req("POST", JOB, sample(5))
assert st == 200, body
st, body, _ = s.req("PUT", "/v1/jobs/orders/config", {"config": {"job.autoscaler.enabled": "true"}})
assert st == 200, body


def bad(name, status, body, field=None, path=JOB, words=(), ctype="application/json", method="POST"):
    before = fingerprint(s.db)
    st, resp, _ = s.req(method, path, body, ctype=ctype)
    err = resp.get("error", {}) if isinstance(resp, dict) else {}
    ok = st == status and err.get("code") and err.get("message")
    if field is not None:
        ok = ok and err.get("field") == field
    for w in words:
        ok = ok and w in err.get("message", "")
    c.check(ok, "%s: want %d field=%r, got %d %r" % (name, status, field, st, resp))
    c.check(fingerprint(s.db) == before, "%s: stored rows unchanged" % name)


def mutate(fn, i=6):
    x = copy.deepcopy(sample(i))
    fn(x)
    return x


bad("malformed JSON", 400, '{"at": 1,', words=("malformed",))
bad("not an object", 400, "[1, 2]")
bad("wrong type", 400, mutate(lambda x: x["vertices"][0].update(parallelism="four")),
    field="vertices[0].parallelism")
bad("missing vertices", 400, mutate(lambda x: x.pop("vertices")), field="vertices")
bad("zero parallelism", 400, mutate(lambda x: x["vertices"][1].update(parallelism=0)),
    field="vertices[1].parallelism")
bad("negative parallelism", 400, mutate(lambda x: x["vertices"][1].update(parallelism=-2)),
    field="vertices[1].parallelism")
bad("parallelism above max", 400,
    mutate(lambda x: x["vertices"][0].update(parallelism=200, max_parallelism=128)),
    field="vertices[0].parallelism")
bad("duplicate vertex id", 400, mutate(lambda x: x["vertices"][1].update(id="source")),
    words=("source",))
bad("unknown input vertex", 400,
    mutate(lambda x: x["vertices"][1]["inputs"][0].update({"from": "nowhere"})),
    field="vertices[1].inputs[0].from", words=("nowhere",))
bad("cycle", 400,
    mutate(lambda x: x["vertices"][0].update(inputs=[{"from": "agg", "ship": "HASH"}])),
    words=("cycle",))
bad("at earlier than the last sample", 409, sample(2), field="at")
bad("unknown option", 422, sample(6, config={"job.autoscaler.no-such-thing": "1"}),
    words=("job.autoscaler.no-such-thing",))
bad("out-of-range value", 422, sample(6, config={"job.autoscaler.utilization.target": "1.5"}),
    words=("job.autoscaler.utilization.target",))
bad("NaN", 400, '{"at": 1764410600000, "vertices": [{"id": "a", "parallelism": 1, '
    '"max_parallelism": 8, "metrics": {"busy_ms_per_s": NaN}}]}')
bad("Infinity", 400, '{"at": 1764410600000, "vertices": [{"id": "a", "parallelism": 1, '
    '"max_parallelism": 8, "metrics": {"busy_ms_per_s": Infinity}}]}')
bad("number overflow", 400, '{"at": 1764410600000, "vertices": [{"id": "a", "parallelism": 1, '
    '"max_parallelism": 8, "metrics": {"busy_ms_per_s": 1e999}}]}')
bad("job id with an encoded slash", 400, sample(6), path="/v1/jobs/a%2Fb/metrics", field="job")
bad("job id with a slash", 400, sample(6), path="/v1/jobs/a/b/metrics", field="job")
bad("job id of 500 chars", 400, sample(6), path="/v1/jobs/%s/metrics" % ("j" * 500), field="job")
bad("job id of 129 chars", 400, sample(6), path="/v1/jobs/%s/metrics" % ("j" * 129), field="job")
bad("not JSON content type", 415, sample(6), ctype="text/plain")
bad("bad config body", 400, {"cfg": {}}, path="/v1/jobs/orders/config", field="config",
    method="PUT")

# PUT config errors leave the stored layer as it was.
before = fingerprint(s.db)
st, body, _ = s.req("PUT", "/v1/jobs/orders/config", {"config": {"job.autoscaler.nope": "1"}})
c.check(st == 422 and "job.autoscaler.nope" in body["error"]["message"], "PUT unknown key 422")
st, body, _ = s.req("PUT", "/v1/jobs/orders/config",
                    {"config": {"job.autoscaler.utilization.target": "2"}})
c.check(st == 422 and body["error"]["field"] == "config.job.autoscaler.utilization.target",
        "PUT out of range 422 naming the key: %r" % body)
st, body, _ = s.req("GET", "/v1/jobs/orders/config")
c.check(body["stored"] == {"job.autoscaler.enabled": "true"}, "stored layer unchanged")
c.check(fingerprint(s.db) == before, "PUT errors: stored rows unchanged")

# A 10 MB body: 413 with the envelope.
before = fingerprint(s.db)
big = '{"at": 1764410600000, "pad": "' + "x" * (10 * 1024 * 1024) + '"}'
try:
    st, body, _ = s.req("POST", JOB, big)
    c.check(st == 413 and body["error"]["code"] == "PAYLOAD_TOO_LARGE", "10 MB: %r" % (st,))
except (ConnectionError, OSError) as e:  # the server may close while we still send
    c.check(False, "10 MB body: connection error %r" % e)
c.check(fingerprint(s.db) == before, "10 MB: stored rows unchanged")

# A client sending one byte a second is dropped after read-timeout (2 s here).
before = fingerprint(s.db)
raw = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       "Content-Length: 200\r\n\r\n" % JOB).encode()
sk = socket.create_connection(("127.0.0.1", s.port))
t0 = time.time()
answered = None  # when the server's refusal arrived: what read-timeout bounds (the socket's
got = b""        # close comes later, after the drain that lets the client read it)
try:
    for b in raw + b"{" * 200:
        sk.send(bytes([b]))
        r, _, _ = select.select([sk], [], [], 0.1 if time.time() - t0 < 1 else 1.0)
        if r:
            chunk = sk.recv(4096)
            got += chunk
            if answered is None:
                answered = time.time() - t0
            if not chunk:
                break
        if time.time() - t0 > 8:
            break
except (BrokenPipeError, ConnectionResetError):
    pass
sk.close()
c.check(answered is not None and answered < 5 and got.startswith(b"HTTP/1.1 408"),
        "slow client refused with 408 after read-timeout (2 s): %s s, %r"
        % (None if answered is None else "%.1f" % answered, got[:40]))
c.check(fingerprint(s.db) == before, "slow client: stored rows unchanged")
st, body, _ = s.req("GET", "/healthz")
c.check(st == 200, "server still answers")
c.check(s.stop() == 0, "SIGTERM exits 0")
c.done()
