"""fakejm.py - a fake Flink JobManager for the tests of `governor flink`: a REST server (Python 3
stdlib only) that serves the shapes of Flink's own REST responses (1.18, 1.19 and 1.20, from
Flink's documented REST API: JobDetailsInfo, JobPlanInfo, the aggregated subtask metrics
[{"id", "min", "max", "avg", "sum"}], metric name lists [{"id"}] with Kafka source reader
partition metrics, /jobmanager/metrics [{"id", "value"}] with string values, the TaskManagers'
aggregated metrics, and the adaptive scheduler's /jobs/:jobid/resource-requirements GET and PUT)
for jobs whose figures come from the same fluid model as `governor simulate`
(server/sim/sim_model.c), ported second for second: a source reads its backlog up to its
capacity (the subtask with the most partitions saturates first), a vertex downstream that
cannot take the flow back-pressures it, busy time is the mean of the last 5 s, records_in_per_s
Flink's 60 s meter, counters start again at 0 after a restart, and a rescale stops the job for
the restart downtime. So a job driven by `governor flink --apply rest` sees the decisions the
simulator's job sees, sample for sample.

Time is simulated: each GET /jobs/:jobid but the first moves the job's clock on by its interval
(`now` in the answer is the job's clock), as if a poll came every interval.

Differences between the versions served: `slotSharingGroupId` in the job details' vertices
(1.19 and later, FLINK-20090); `job-type` in the job details (1.19 and later).

Faults: `down()` closes the listening socket (connections refused) and `up()` opens it again
on the same port; `override(prefix, fn)` answers every request whose path starts with prefix
with fn(method, path, body) -> (status, body bytes or JSON value); `refuse_put` makes the PUT of
resource requirements a 409 with Flink's {"errors": [...]}; `strict_get` (on by default)
answers a ?get= that names a metric the vertex does not list with [] (so a client that asks for
names without listing them first gets nothing)."""
import json
import os
import math
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GAUGE_S = 5
METER_S = 60
START_MS = 1764374400000  # the simulator's default start: 2025-11-29T00:00:00Z


class V:
    """A vertex of a job: its place in the model and its Flink face."""

    def __init__(self, vid, name, p, capacity, maxp=128, partitions=0, rate=None, scaling=1.0,
                 selectivity=1.0, inputs=(), op=None, topic="orders", ssg=None, steps=()):
        self.id, self.name, self.p, self.capacity = vid, name, p, float(capacity)
        self.maxp, self.partitions, self.rate = maxp, partitions, rate
        self.steps = list(steps)  # [(at second, rate)]: the simulator's "step" terms
        self.scaling, self.selectivity = float(scaling), float(selectivity)
        self.inputs = list(inputs)  # [(from vertex id, ship strategy)]
        self.op = op or name.replace(" ", "_").replace(":", "_")
        self.topic = topic
        self.ssg = ssg or "a" * 31 + "1"
        self.source = not self.inputs
        # run state
        self.backlog = self.read = self.rec_in = self.rec_out = self.busy_acc = 0.0
        self.meter = [0.0] * (METER_S + 1)
        self.g = {k: [0.0] * GAUGE_S for k in ("min", "avg", "max", "bp")}
        self.hot = 0.0

    def reset_counters(self):
        self.rec_in = self.rec_out = self.busy_acc = 0.0
        self.meter = [0.0] * (METER_S + 1)
        self.g = {k: [0.0] * GAUGE_S for k in ("min", "avg", "max", "bp")}


class Job:
    """One job: the model (sim_model.c for constant arrivals, no noise, no hot key, no rate
    cap) and its REST answers."""

    def __init__(self, jid, name, vertices, version="1.20", interval=30, restart=60,
                 start_ms=START_MS, slots=64):
        self.jid, self.name, self.v = jid, name, vertices
        self.version, self.interval, self.restart, self.start_ms = version, interval, restart, \
            start_ms
        self.slots = slots
        self.t = 0
        self.running_since = 0
        self.down = False
        self.down_until = 0
        self.polled = False
        self.rescales = 0
        self.puts = []
        self.state_override = None
        self.ix = {x.id: i for i, x in enumerate(vertices)}
        n = len(vertices)
        self.gain = [[0.0] * n for _ in range(n)]
        self.reach = [[False] * n for _ in range(n)]
        for s in range(n):
            if not vertices[s].source:
                continue
            self.gain[s][s] = 1.0
            for w in range(s + 1, n):
                for f, _ in vertices[w].inputs:
                    fi = self.ix[f]
                    self.gain[s][w] += self.gain[s][fi] * vertices[fi].selectivity
        for w in range(n):
            for f, _ in vertices[w].inputs:
                fi = self.ix[f]
                self.reach[fi][w] = True
                for u in range(n):
                    if self.reach[u][fi]:
                        self.reach[u][w] = True

    # ---- the model (sim_model.c) ----
    def shares(self, x, p):
        if p <= 1:
            return 1.0, 1.0
        k = x.partitions if x.source else (x.maxp if any(s == "HASH" for _, s in x.inputs) else 0)
        if k <= 0:
            hi = lo = 1.0 / p
        elif p >= k:
            hi = 1.0 / k
            lo = 0.0 if p > k else 1.0 / k
        else:
            hi = ((k + p - 1) // p) / k
            lo = (k // p) / k
        return lo, hi  # (smin, smax) with no hot key

    def subtask_rate(self, x, p):
        return x.capacity * math.pow(p, x.scaling - 1.0)

    def capacity(self, x, p):
        _, smax = self.shares(x, p)
        return self.subtask_rate(x, p) / smax

    def run_second(self):
        n = len(self.v)
        desired = [0.0] * n
        for s, x in enumerate(self.v):
            if x.source:
                c = self.capacity(x, x.p)
                desired[s] = x.backlog if x.backlog < c else c
        ld = [sum(self.gain[s][v] * desired[s] for s in range(n)) for v in range(n)]
        theta, wlim = [1.0] * n, [-1] * n
        for s, x in enumerate(self.v):
            if not x.source:
                continue
            for v in range(n):
                if v == s or self.gain[s][v] <= 0 or ld[v] <= 0:
                    continue
                ratio = self.capacity(self.v[v], self.v[v].p) / ld[v]
                if ratio < theta[s]:
                    theta[s], wlim[s] = ratio, v
        lam = [sum(self.gain[s][v] * theta[s] * desired[s] for s in range(n)) for v in range(n)]
        thr = [False] * n
        for s in range(n):
            w = wlim[s]
            if w < 0:
                continue
            for v in range(n):
                if (v == s or self.gain[s][v] > 0) and self.reach[v][w]:
                    thr[v] = True
        k = self.t % GAUGE_S
        for i, x in enumerate(self.v):
            la = lam[i]
            if x.source:
                x.backlog = max(0.0, x.backlog - la)
                x.read += la
            p = x.p
            mu = self.subtask_rate(x, p)
            smin, smax = self.shares(x, p)
            bmin, bavg, bmax = (min(la * smin / mu, 1.0), min(la / (p * mu), 1.0),
                                min(la * smax / mu, 1.0))
            bp = max(0.0, 1.0 - bavg) if thr[i] else 0.0
            x.rec_in += la
            x.rec_out += la * x.selectivity
            x.busy_acc += bavg * p * 1000.0
            x.g["min"][k], x.g["avg"][k], x.g["max"][k], x.g["bp"][k] = bmin, bavg, bmax, bp

    def step(self):
        for x in self.v:
            if x.source:
                rate = x.rate
                for at, r in x.steps:
                    if self.t >= at:
                        rate = r
                x.backlog += rate
        if not self.down:
            self.run_second()
        self.t += 1
        for x in self.v:
            x.meter[self.t % (METER_S + 1)] = x.rec_in
        if self.down and self.t >= self.down_until:
            self.down = False
            self.running_since = self.t
            for x in self.v:
                x.reset_counters()

    def rescale(self, ps):
        if all(ps.get(x.id, x.p) == x.p for x in self.v):
            return 0
        for x in self.v:
            x.p = ps.get(x.id, x.p)
        until = self.t + self.restart
        if not self.down or until > self.down_until:
            self.down_until = until
        self.down = True
        if self.t >= self.down_until:
            self.down = False
            self.running_since = self.t
            for x in self.v:
                x.reset_counters()
        self.rescales += 1
        return 1

    def poll(self):
        """A GET of the job's details: the clock moves on by the interval (not the first)."""
        if self.polled:
            for _ in range(self.interval):
                self.step()
        self.polled = True

    # ---- what the job reports ----
    def gauges(self, x):
        up = self.t - self.running_since
        k = up if up < GAUGE_S else GAUGE_S
        out = {}
        for key in ("min", "avg", "max", "bp"):
            s = sum(x.g[key][(self.t - i) % GAUGE_S] for i in range(1, k + 1))
            out[key] = s / k if k > 0 else 0.0
        return out

    def rate(self, x):
        return (x.meter[self.t % (METER_S + 1)] - x.meter[(self.t + 1) % (METER_S + 1)]) / METER_S

    @staticmethod
    def ms(frac):
        v = frac * 1000.0
        return 1000.0 if v > 1000.0 else 0.0 if v < 0 else v

    def now_ms(self):
        return self.start_ms + self.t * 1000

    def state(self):
        if self.state_override:
            return self.state_override
        return "RESTARTING" if self.down else "RUNNING"

    def details(self):
        now = self.now_ms()
        since = self.start_ms + self.running_since * 1000
        verts = []
        for x in self.v:
            m = {"read-bytes": 0, "read-bytes-complete": True, "write-bytes": 0,
                 "write-bytes-complete": True,
                 "read-records": 0 if x.source or self.down else int(round(x.rec_in)),
                 "read-records-complete": True,
                 "write-records": 0 if self.down else int(round(x.rec_out)),
                 "write-records-complete": True,
                 "accumulated-backpressured-time": 0, "accumulated-idle-time": 0,
                 "accumulated-busy-time": 0.0 if self.down else float(round(x.busy_acc))}
            d = {"id": x.id, "name": x.name, "maxParallelism": x.maxp, "parallelism": x.p,
                 "status": "SCHEDULED" if self.down else "RUNNING", "start-time": since,
                 "end-time": -1, "duration": now - since,
                 "tasks": {"RUNNING": 0 if self.down else x.p, "SCHEDULED": x.p if self.down else 0,
                           "FINISHED": 0, "CANCELED": 0, "FAILED": 0},
                 "metrics": m}
            if self.version >= "1.19":
                d["slotSharingGroupId"] = x.ssg
            verts.append(d)
        out = {"jid": self.jid, "name": self.name, "isStoppable": False, "state": self.state(),
               "start-time": self.start_ms, "end-time": -1, "duration": now - self.start_ms,
               "maxParallelism": -1, "now": now,
               "timestamps": {"CREATED": self.start_ms, "INITIALIZING": self.start_ms,
                              "RUNNING": since, "FAILING": 0, "FAILED": 0, "CANCELLING": 0,
                              "CANCELED": 0, "FINISHED": 0,
                              "RESTARTING": since - self.restart * 1000 if self.rescales else 0,
                              "SUSPENDED": 0, "RECONCILING": 0},
               "vertices": verts,
               "status-counts": {"RUNNING": 0 if self.down else len(self.v), "SCHEDULED": 0,
                                 "FINISHED": 0, "CANCELED": 0, "FAILED": 0},
               "plan": self.plan()["plan"]}
        if self.version >= "1.19":
            out["job-type"] = "STREAMING"
        return out

    def plan(self):
        nodes = []
        for x in self.v:
            node = {"id": x.id, "parallelism": x.p, "operator": "", "operator_strategy": "",
                    "description": x.name, "optimizer_properties": {}}
            if x.inputs:
                node["inputs"] = [{"num": i, "id": f, "ship_strategy": s,
                                   "exchange": "pipelined_bounded"}
                                  for i, (f, s) in enumerate(x.inputs)]
            nodes.append(node)
        return {"plan": {"jid": self.jid, "name": self.name, "type": "STREAMING", "nodes": nodes}}

    def names(self, x, missing=()):
        """The metric names of vertex x's subtasks (none while the job restarts)."""
        if self.down:
            return []
        task = ["numRecordsIn", "numRecordsOut", "numRecordsInPerSecond",
                "numRecordsOutPerSecond", "numBytesInPerSecond", "numBytesOutPerSecond",
                "busyTimeMsPerSecond", "backPressuredTimeMsPerSecond", "idleTimeMsPerSecond",
                "Shuffle.Netty.Input.Buffers.inPoolUsage", "checkpointStartDelayNanos"]
        op = x.op
        ops = [op + "." + s for s in ("numRecordsIn", "numRecordsOut", "numRecordsInPerSecond",
                                      "numRecordsOutPerSecond", "currentInputWatermark")]
        if x.source:
            ops += [op + ".pendingRecords", op + ".sourceIdleTime",
                    op + ".KafkaSourceReader.KafkaConsumer.records-consumed-rate"]
            for i in range(x.partitions):
                base = "%s.KafkaSourceReader.topic.%s.partition.%d." % (op, x.topic, i)
                ops += [base + "currentOffset", base + "committedOffset"]
        return [n for n in task + ops if n not in missing]

    def values(self, x, name):
        """(min, max, avg, sum) of one metric over x's subtasks."""
        g = self.gauges(x)
        p = x.p
        if name == "busyTimeMsPerSecond":
            mn, avg, mx = self.ms(g["min"]), self.ms(g["avg"]), self.ms(g["max"])
            return mn, mx, avg, avg * p
        if name == "backPressuredTimeMsPerSecond":
            b = self.ms(g["bp"])
            return b, b, b, b * p
        if name == "idleTimeMsPerSecond":
            b = max(0.0, 1000.0 - self.ms(g["avg"]) - self.ms(g["bp"]))
            return b, b, b, b * p
        per = None
        if (not x.source and name == "numRecordsInPerSecond") or \
                (x.source and name == x.op + ".numRecordsInPerSecond"):
            per = self.rate(x)
        elif x.source and name == x.op + ".numRecordsIn":
            per = float(round(x.rec_in))
        elif x.source and name == x.op + ".pendingRecords":
            per = float(round(x.backlog))
        if per is None:
            return 0.0, 0.0, 0.0, 0.0
        return per / p, per / p, per / p, per

    def requirements(self):
        return {x.id: {"parallelism": {"lowerBound": 1, "upperBound": x.p}} for x in self.v}


class FakeJobManager:
    def __init__(self, jobs, port=0):
        self.jobs = {j.jid: j for j in jobs}
        self.lock = threading.Lock()
        self.requests = []
        self.overrides = []
        self.refuse_put = None
        self.strict_get = True
        self.missing = {}  # vertex id -> metric names it does not list
        self.port = port
        self.httpd = None
        self.up()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def override(self, prefix, fn):
        self.overrides.append((prefix, fn))

    def up(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _answer(self, status, body):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _do(self, method):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with fake.lock:
                    fake.requests.append((method, self.path, body))
                    for prefix, fn in fake.overrides:
                        if self.path.startswith(prefix):
                            st, out = fn(method, self.path, body)
                            if st is None:
                                # drop the connection without an answer
                                self.close_connection = True
                                return
                            return self._answer(st, out)
                    st, out = fake.route(method, self.path, body)
                self._answer(st, out)

            def do_GET(self):
                self._do("GET")

            def do_PUT(self):
                self._do("PUT")

            def do_POST(self):
                self._do("POST")

        ThreadingHTTPServer.allow_reuse_address = True
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def down(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def close(self):
        self.down()

    # ---- routes ----
    def route(self, method, path, body):
        u = urllib.parse.urlsplit(path)
        q = urllib.parse.parse_qs(u.query)
        parts = [p for p in u.path.split("/") if p]
        if parts[:1] == ["v1"]:
            parts = parts[1:]
        if method == "GET" and parts == ["jobs"]:
            return 200, {"jobs": [{"id": j.jid, "status": j.state()} for j in self.jobs.values()]}
        if method == "GET" and parts == ["jobmanager", "metrics"]:
            total = sum(max(x.p for x in j.v) for j in self.jobs.values())
            slots = sum(j.slots for j in self.jobs.values())
            vals = {"taskSlotsTotal": str(slots), "taskSlotsAvailable": str(slots - total)}
            want = q.get("get", [""])[0].split(",")
            return 200, [{"id": k, "value": vals[k]} for k in want if k in vals]
        if method == "GET" and parts == ["taskmanagers", "metrics"]:
            vals = {"Status.JVM.Memory.Heap.Used": 1.2e9, "Status.JVM.Memory.Heap.Max": 4.0e9,
                    "Status.Flink.Memory.Managed.Used": 0.0,
                    "Status.JVM.Memory.Metaspace.Used": 1.0e8,
                    "Status.JVM.GarbageCollector.All.TimeMsPerSecond": 12.0}
            want = q.get("get", [""])[0].split(",")
            aggs = q.get("agg", ["min,max,avg,sum"])[0].split(",")
            return 200, [dict({"id": k}, **{a: vals[k] for a in aggs}) for k in want if k in vals]
        if len(parts) >= 2 and parts[0] == "jobs":
            job = self.jobs.get(parts[1])
            if not job:
                return 404, {"errors": ["Job %s not found" % parts[1]]}
            rest = parts[2:]
            if method == "GET" and not rest:
                job.poll()
                return 200, job.details()
            if method == "GET" and rest == ["plan"]:
                return 200, job.plan()
            if rest == ["resource-requirements"]:
                if method == "GET":
                    return 200, job.requirements()
                if method == "PUT":
                    return self.put_requirements(job, body)
            if method == "GET" and len(rest) == 4 and rest[0] == "vertices" and \
                    rest[2:] == ["subtasks", "metrics"]:
                x = next((x for x in job.v if x.id == rest[1]), None)
                if not x:
                    return 404, {"errors": ["Vertex %s not found" % rest[1]]}
                names = job.names(x, self.missing.get(x.id, ()))
                if "get" not in q:
                    return 200, [{"id": n} for n in names]
                want = q["get"][0].split(",")
                if self.strict_get and any(w not in names for w in want):
                    return 200, []
                aggs = q.get("agg", ["min,max,avg,sum"])[0].split(",")
                out = []
                for w in want:
                    if w not in names:
                        continue
                    mn, mx, avg, sm = job.values(x, w)
                    vals = {"min": mn, "max": mx, "avg": avg, "sum": sm}
                    out.append(dict({"id": w}, **{a: vals[a] for a in aggs if a in vals}))
                return 200, out
        return 404, {"errors": ["Not found: %s" % u.path]}

    def put_requirements(self, job, body):
        if self.refuse_put:
            return self.refuse_put
        try:
            req = json.loads(body)
        except ValueError:
            return 400, {"errors": ["Request body is not valid JSON"]}
        ids = {x.id for x in job.v}
        if not isinstance(req, dict) or set(req) != ids:
            return 400, {"errors": ["The request must name every vertex of the job"]}
        ps = {}
        for vid, r in req.items():
            par = r.get("parallelism") if isinstance(r, dict) else None
            lo = par.get("lowerBound") if isinstance(par, dict) else None
            hi = par.get("upperBound") if isinstance(par, dict) else None
            x = job.v[job.ix[vid]]
            if not isinstance(lo, int) or not isinstance(hi, int) or not 1 <= lo <= hi or \
                    hi > x.maxp:
                return 400, {"errors": ["Invalid parallelism of vertex %s" % vid]}
            ps[vid] = hi
        job.puts.append(ps)
        job.rescale(ps)
        return 200, {}


RECORDED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recorded")


def recorded(name):
    with open(os.path.join(RECORDED, name)) as f:
        return json.load(f)


class RecordedJobManager(FakeJobManager):
    """A JobManager answering with the payloads of tests/flink/recorded/ (one job, in the shape
    of Flink `version`: 1.18 without slotSharingGroupId and job-type, 1.19 and 1.20 with):
    the details, the plan, each vertex's metric names, the aggregated values of the names
    asked for (only those it lists: the strict answer), the JobManager's and TaskManagers'
    metrics, GET /jobs and the resource requirements. `mutate[kind]`, kind one of details,
    plan, names, values, jobmanager, taskmanagers, jobs, requirements, is a function of the
    payload (a deep copy) returning the payload to serve, or (status, body) to answer."""

    def __init__(self, version="1.20"):
        self.version = version
        self.mutate = {}
        self.details_ = recorded("details-%s.json" % ("1.18" if version < "1.19" else "1.20"))
        self.jid = self.details_["jid"]
        self.plan_ = recorded("plan.json")
        self.names_ = recorded("names.json")
        self.values_ = recorded("values.json")
        self.puts = []
        self.requirements_ = {v["id"]: {"parallelism": {"lowerBound": 1,
                                                        "upperBound": v["parallelism"]}}
                              for v in self.details_["vertices"]}
        super().__init__([])

    def _serve(self, kind, payload):
        fn = self.mutate.get(kind)
        if fn is None:
            return 200, payload
        out = fn(json.loads(json.dumps(payload)))
        if isinstance(out, tuple):
            return out
        return 200, out

    def route(self, method, path, body):
        u = urllib.parse.urlsplit(path)
        q = urllib.parse.parse_qs(u.query)
        parts = [p for p in u.path.split("/") if p]
        if method == "GET" and parts == ["jobs"]:
            return self._serve("jobs", recorded("jobs.json"))
        if method == "GET" and parts == ["jobmanager", "metrics"]:
            want = q.get("get", [""])[0].split(",")
            return self._serve("jobmanager", [e for e in recorded("jobmanager.json")
                                              if e["id"] in want])
        if method == "GET" and parts == ["taskmanagers", "metrics"]:
            want = q.get("get", [""])[0].split(",")
            aggs = q.get("agg", ["min,max,avg,sum"])[0].split(",")
            return self._serve("taskmanagers", [
                dict({"id": e["id"]}, **{a: e[a] for a in aggs if a in e})
                for e in recorded("taskmanagers.json") if e["id"] in want])
        if len(parts) < 2 or parts[0] != "jobs" or parts[1] != self.jid:
            return 404, {"errors": ["Not found: %s" % u.path]}
        rest = parts[2:]
        if method == "GET" and not rest:
            return self._serve("details", self.details_)
        if method == "GET" and rest == ["plan"]:
            return self._serve("plan", self.plan_)
        if rest == ["resource-requirements"] and method == "GET":
            return self._serve("requirements", self.requirements_)
        if rest == ["resource-requirements"] and method == "PUT":
            if self.refuse_put:
                return self.refuse_put
            self.puts.append(json.loads(body))
            return 200, {}
        if method == "GET" and len(rest) == 4 and rest[0] == "vertices" and \
                rest[2:] == ["subtasks", "metrics"]:
            names = [e["id"] for e in self.names_.get(rest[1], [])]
            if "get" not in q:
                return self._serve("names", [{"id": n} for n in names])
            want = q["get"][0].split(",")
            if self.strict_get and any(w not in names for w in want):
                return 200, []
            aggs = q.get("agg", ["min,max,avg,sum"])[0].split(",")
            vals = self.values_.get(rest[1], {})
            return self._serve("values", [dict({"id": w}, **{a: vals[w][a] for a in aggs
                                                            if a in vals.get(w, {})})
                                          for w in want if w in vals])
        return 404, {"errors": ["Not found: %s" % u.path]}
