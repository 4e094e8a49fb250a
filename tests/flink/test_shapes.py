"""Payloads of another shape than Flink's never crash `governor flink` (CI runs this under
ASan+UBSan too): a payload whose structure is not Flink's (not JSON, an array for an object, a
required field missing or mistyped, an input naming no vertex) fails the poll naming the
request and the field, exit 3 with --once; a value that is not a number or out of its range is
left out with a warning and the sample is decided on the rest (exit 0). Then 24 payloads with
values replaced at random (seeded) by values of other types: every run ends with 0, 3 or 4,
never a signal or a sanitizer report."""
import json
import os
import random

from flinktest import JID, Checks, FakeJobManager, Job, V, run, three_vertex_job, tmpdir
from fakejm import RecordedJobManager

c = Checks()
S1 = "cbc357ccb763df2852fee8c4fc7d55f2"
J = "ea632d67b7d595e5b851708ae9ad79d6"
K = "0a448493b4782967b150582570326227"


def vertex(d, vid):
    return next(v for v in d["vertices"] if v["id"] == vid)


def edit(fn):
    """A mutation that edits the payload in place and serves it."""
    def f(p):
        fn(p)
        return p
    return f


def nodes(p):
    return p["plan"]["nodes"]


CASES = [
    # (kind, mutation, exit code, text in stderr)
    ("details", lambda d: (200, b"<html><body>Bad gateway</body></html>"), 3,
     "the body is not JSON"),
    ("details", lambda d: [], 3, "expected an object"),
    ("details", lambda d: (200, b""), 3, "expected an object"),
    ("details", lambda d: (200, b"[" * 100000), 3, "the body is not JSON"),
    ("details", lambda d: (200, b'{"now": 1e999}'), 3, "the body is not JSON"),
    ("details", lambda d: (502, b"<html>upstream</html>"), 3, "HTTP 502: <html>upstream"),
    ("details", edit(lambda d: d.pop("now")), 3, "now: expected epoch milliseconds"),
    ("details", edit(lambda d: d.update(now="1764410400000")), 3, "now:"),
    ("details", edit(lambda d: d.update(now=-1)), 3, "now:"),
    ("details", edit(lambda d: d.update(now=1.7644104e12)), 3, "now:"),
    ("details", edit(lambda d: d.pop("state")), 3, "state: expected a job status"),
    ("details", edit(lambda d: d.update(state=42)), 3, "state:"),
    ("details", edit(lambda d: d.update(vertices={})), 3, "vertices: expected an array"),
    ("details", edit(lambda d: d.update(vertices=[5])), 3, "vertices[0]: expected an object"),
    ("details", edit(lambda d: d["vertices"][0].pop("id")), 3, "vertices[0].id"),
    ("details", edit(lambda d: d["vertices"][1].update(id=7)), 3, "vertices[1].id"),
    ("details", edit(lambda d: d["vertices"][1].update(id="x" * 200)), 3, "vertices[1].id"),
    ("details", edit(lambda d: d["vertices"][2].update(parallelism="4")), 3,
     "vertices[2].parallelism"),
    ("details", edit(lambda d: d["vertices"][2].update(parallelism=0)), 3,
     "vertices[2].parallelism"),
    ("details", edit(lambda d: d["vertices"][2].update(parallelism=2.5)), 3,
     "vertices[2].parallelism"),
    ("details", edit(lambda d: d["vertices"][2].update(parallelism=2 ** 40)), 3,
     "vertices[2].parallelism"),
    ("details", edit(lambda d: d["vertices"].append(dict(d["vertices"][0]))), 3, "appears twice"),
    ("details", edit(lambda d: d["vertices"][3].update(metrics="x")), 3,
     "vertices[3].metrics: expected an object"),
    ("details", edit(lambda d: vertex(d, S1).update(maxParallelism=1)), 0,
     "maxParallelism is not an integer >= parallelism"),
    ("details", edit(lambda d: vertex(d, S1).update(maxParallelism="big")), 0, ""),
    ("details", edit(lambda d: vertex(d, S1).update(slotSharingGroupId=5)), 0, ""),
    ("details", edit(lambda d: vertex(d, J)["metrics"].update({"read-records": "NaN"})), 0, ""),
    ("details", edit(lambda d: vertex(d, J)["metrics"].update({"read-records": -3})), 0, ""),
    ("details", edit(lambda d: d.update(timestamps="x")), 0, ""),
    ("details", edit(lambda d: d["timestamps"].update(RUNNING=d["now"] + 1000)), 0, ""),
    ("details", edit(lambda d: d["timestamps"].update(RUNNING="abc")), 0, ""),
    ("details", edit(lambda d: d.update(state="RESTARTING")), 0, ""),
    ("plan", lambda p: (200, b"null"), 3, "plan.nodes: expected an array"),
    ("plan", edit(lambda p: p["plan"].update(nodes={})), 3, "plan.nodes: expected an array"),
    ("plan", edit(lambda p: nodes(p)[0].pop("id")), 3, "plan.nodes[0].id"),
    ("plan", edit(lambda p: nodes(p)[0].update(inputs="x")), 3,
     "plan.nodes[0].inputs: expected an array"),
    ("plan", edit(lambda p: nodes(p)[0]["inputs"][0].update(id="f" * 32)), 3,
     "is not a vertex of the job"),
    ("plan", edit(lambda p: nodes(p)[0]["inputs"][0].update(ship_strategy=5)), 3,
     "ship_strategy: expected a string"),
    ("plan", edit(lambda p: nodes(p).pop()), 3, "plan.nodes: no node for vertex"),
    ("plan", edit(lambda p: nodes(p).append(dict(nodes(p)[0]))), 3, "has two nodes"),
    # a cycle is Flink's shape: the server refuses the topology (400), exit 4
    ("plan", edit(lambda p: nodes(p)[3].update(inputs=[{"id": K, "ship_strategy": "HASH"}])), 4,
     "cycle"),
    ("plan", edit(lambda p: nodes(p)[0]["inputs"][0].update(ship_strategy="WEIRD")), 0, ""),
    ("names", lambda n: (200, {"not": "an array"}), 3, "expected an array of {\"id\"}"),
    ("names", lambda n: [{"id": 5}, "x", None, {"id": ["a"]}], 0, "Flink lists no"),
    ("names", lambda n: [], 0, "Flink lists no"),
    ("names", lambda n: (500, b"Internal Server Error"), 3, "HTTP 500: Internal Server Error"),
    ("values", lambda v: {"x": 1}, 3, "expected an array of {\"id\", \"min\""),
    ("values", lambda v: [{"id": "busyTimeMsPerSecond", "min": "abc", "avg": {}, "max": []}],
     0, "is not a number"),
    ("values", lambda v: [{"id": "busyTimeMsPerSecond", "min": -1e308, "avg": 1e308,
                           "max": 1e308}], 0, ""),
    ("values", lambda v: [dict(e, avg="Infinity", sum="-Infinity") for e in v], 0,
     "is not a number"),
    ("values", lambda v: v + v + [5, None, "x", {"id": None}], 0, ""),
    ("values", lambda v: [dict(e, sum=-5) for e in v], 0, "is negative"),
    ("jobmanager", lambda j: {"a": 1}, 3, "expected an array of {\"id\", \"value\"}"),
    ("jobmanager", lambda j: [{"id": "taskSlotsTotal", "value": "lots"}], 0,
     "taskSlotsTotal is not a number"),
    ("taskmanagers", lambda t: [], 0, "Flink reports no Status.JVM.Memory.Heap.Used"),
    ("taskmanagers", lambda t: [{"id": 5}, {"id": "Status.JVM.Memory.Heap.Max", "max": -1}], 0,
     ""),
]


def clean(err):
    return "Sanitizer" not in err and "runtime error" not in err


jm = RecordedJobManager("1.20")
for i, (kind, fn, code, text) in enumerate(CASES):
    jm.mutate = {kind: fn}
    rc, lines, err = run(["--rest", jm.url, "--job", jm.jid, "--once", "--retries", "0",
                          "--db", ":memory:", "--timeout", "5 s"])
    ok = rc == code and text in err + json.dumps(lines) and clean(err)
    if rc == 3:
        ok = ok and not lines and "governor flink: %s: GET /" % jm.url in err
    if rc == 0:
        ok = ok and len(lines) == 2 and "answer" in lines[1]
    c.check(ok, "case %d (%s): exit %d (want %d), %r in %s" % (
        i, kind, rc, code, text, (err + json.dumps(lines))[-700:]))

# --all: GET /jobs of another shape
for fn, code, text in ((lambda j: {"jobs": "x"}, 3, "jobs: expected an array"),
                       (lambda j: {"jobs": [{"id": 5}]}, 3, "jobs[0]: expected"),
                       (lambda j: {"jobs": [{"id": "../etc", "status": "RUNNING"}]}, 0,
                        "job id is no governor job name")):
    jm.mutate = {"jobs": fn}
    rc, lines, err = run(["--rest", jm.url, "--all", "--once", "--retries", "0", "--db",
                          ":memory:"])
    c.check(rc == code and text in err and not lines and clean(err),
            "--all, /jobs %r: %d %s" % (text, rc, err[-400:]))

# --apply rest: resource requirements of another shape (after an answer with execute true)
for body, text in (([], "expected an object of vertex id"),
                   ({"v": {"parallelism": {"lowerBound": "1"}}}, "v.parallelism: expected")):
    job = three_vertex_job()
    jm = FakeJobManager([job])
    jm.override("/jobs/%s/resource-requirements" % JID, lambda m, p, b, body=body: (200, body))
    rc = None
    db = os.path.join(tmpdir(), "r.db")
    for _ in range(6):
        rc, lines, err = run(["--rest", jm.url, "--job", JID, "--once", "--retries", "0",
                              "--db", db, "--apply", "rest",
                              "--set", "job.autoscaler.metrics.window=1 min",
                              "--set", "job.autoscaler.stabilization.interval=0 ms"])
        if rc != 0:
            break
    c.check(rc == 3 and text in err and clean(err) and not job.puts,
            "requirements %r: %d %s" % (body, rc, err[-400:]))
    jm.close()

# The longest ids a job name and a vertex take (128 characters): every request still fits.
long_job = Job("j" * 128, "long", [
    V("s" * 128, "Source: Kafka Source", 2, 2000, partitions=4, rate=1000,
      op="Source__" + "K" * 200),
    V("m" * 128, "Map", 2, 2500, inputs=[("s" * 128, "REBALANCE")], op="M" * 300)])
jm = FakeJobManager([long_job])
rc, lines, err = run(["--rest", jm.url, "--job", "j" * 128, "--once", "--retries", "0",
                      "--db", ":memory:"])
c.check(rc == 0 and clean(err) and len(lines) == 2 and all(
    "busy_ms_per_s" in v["metrics"] for v in lines[0]["sample"]["vertices"]),
    "128-character ids: %d %s" % (rc, err[-500:]))
jm.close()

# Random values of other types (seeded): 0, 3 or 4, never a crash.
rng = random.Random(27)
JUNK = [None, True, -1, 0, 2 ** 63, -2 ** 70, 1e308, -0.0, "", "NaN", "x" * 300, [], {},
        [1, [2, [3]]], {"id": 1}]


def scramble(p, depth=0):
    if isinstance(p, dict):
        for k in list(p):
            if rng.random() < 0.08:
                p[k] = rng.choice(JUNK)
            else:
                scramble(p[k], depth + 1)
    elif isinstance(p, list):
        for i in range(len(p)):
            if rng.random() < 0.08:
                p[i] = rng.choice(JUNK)
            else:
                scramble(p[i], depth + 1)
    return p


kinds = ["details", "plan", "names", "values", "jobmanager", "taskmanagers"]
codes = {}
recorded = {v: RecordedJobManager(v) for v in ("1.18", "1.20")}
for i in range(24):
    jm = recorded[rng.choice(["1.18", "1.20"])]
    kind = kinds[i % len(kinds)]
    jm.mutate = {kind: scramble}
    rc, lines, err = run(["--rest", jm.url, "--job", jm.jid, "--once", "--retries", "0",
                          "--db", ":memory:"])
    codes[rc] = codes.get(rc, 0) + 1
    c.check(rc in (0, 3, 4) and clean(err), "random %d (%s): exit %d %s" % (i, kind, rc,
                                                                            err[-500:]))
print("random payloads, exit codes:", codes)
c.done()
