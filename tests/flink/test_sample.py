"""The sample `governor flink --once` builds from recorded Flink payloads (tests/flink/recorded/,
in the shapes of Flink 1.18, 1.19 and 1.20) equals, field by field, a sample built here by hand
from the same payloads following docs/flink.md's table (What is read, and what each figure becomes):

  details   now -> at, timestamps.RUNNING -> running_since, state -> status; per vertex id, name,
            parallelism, maxParallelism -> max_parallelism, slotSharingGroupId ->
            slot_sharing_group (1.19+), status FINISHED -> finished, read-records -> records_in
            (not on sources), write-records -> records_out, accumulated-busy-time ->
            accumulated_busy_ms ("NaN": left out)
  plan      nodes[].inputs[] -> inputs [{from, ship}] (verbatim); no inputs: a source
  values    busyTimeMsPerSecond -> busy_ms_per_s {min, avg, max} clamped into [0, 1000], avg into
            [min, max] ("NaN" avg: left out); backPressuredTimeMsPerSecond avg ->
            backpressured_ms_per_s; not a source: numRecordsInPerSecond sum -> records_in_per_s;
            a source: Source__*.numRecordsIn sum -> records_in, Source__*.numRecordsInPerSecond sum
            (else Source__*.numRecordsOutPerSecond) -> records_in_per_s, *.pendingRecords sum ->
            pending_records
  names     distinct Kafka (cluster, topic, partition) of *.currentOffset and Pulsar (topic,
            partition) of *.numMsgsReceived -> partitions
  JM, TMs   taskSlotsTotal/Available -> task_slots_total/available; heap, managed, metaspace, GC
            (agg max) -> heap_used, heap_max, managed_used, metaspace_used, gc_ms_per_s

Also: the vertices come in a topological order (the details list the sink first); each metric
Flink does not list is a warning naming the vertex and the metric (never a guess), and the
decision is still made on the rest; every metric name was listed before its value was asked
for (the fake JobManager answers [] to a ?get= of a name it does not list, as the strict case
of Flink's handler); --set lands in the sample's config."""
import math

from flinktest import Checks, run
from fakejm import RecordedJobManager, recorded

c = Checks()


def kafka_pulsar_partitions(names):
    keys = set()
    for n in names:
        if n.endswith(".currentOffset") and ".KafkaSourceReader.topic." in n:
            head, _, tail = n[:-len(".currentOffset")].partition(".KafkaSourceReader.topic.")
            topic, _, part = tail.rpartition(".partition.")
            cluster = head.split(".kafkaCluster.", 1)[1] if ".kafkaCluster." in head else None
            if part.isdigit() and topic:
                keys.add(("kafka", cluster, topic, int(part)))
        elif n.endswith(".numMsgsReceived") and ".PulsarConsumer." in n:
            rest = n.split(".PulsarConsumer.", 1)[1]
            topic, _, after = rest.partition("-partition-")
            part = after.split(".", 1)[0]
            if part.isdigit():
                keys.add(("pulsar", topic, int(part)))
    return len(keys)


def num(x):
    """A Flink number: a JSON number or a numeric string; "NaN" and the like: None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def expected(version, config):
    """The sample, by hand, from the recorded payloads (and the warnings' (vertex, metric))."""
    det = recorded("details-%s.json" % ("1.18" if version < "1.19" else "1.20"))
    plan = recorded("plan.json")
    names = {k: [e["id"] for e in v] for k, v in recorded("names.json").items()}
    vals = recorded("values.json")
    warns = set()
    inputs = {n["id"]: [{"from": i["id"], "ship": i["ship_strategy"]} for i in n.get("inputs", [])]
              for n in plan["plan"]["nodes"]}
    s = {"at": det["now"], "running_since": det["timestamps"]["RUNNING"], "status": det["state"],
         "config": config}
    jm = {e["id"]: num(e["value"]) for e in recorded("jobmanager.json")}
    tm = {e["id"]: num(e["max"]) for e in recorded("taskmanagers.json")}
    s["job_metrics"] = {}
    for key, field in (("taskSlotsTotal", "task_slots_total"),
                       ("taskSlotsAvailable", "task_slots_available")):
        s["job_metrics"][field] = jm[key]
    for key, field in (("Status.JVM.Memory.Heap.Used", "heap_used"),
                       ("Status.JVM.Memory.Heap.Max", "heap_max"),
                       ("Status.Flink.Memory.Managed.Used", "managed_used"),
                       ("Status.JVM.Memory.Metaspace.Used", "metaspace_used"),
                       ("Status.JVM.GarbageCollector.All.TimeMsPerSecond", "gc_ms_per_s")):
        if key in tm:
            s["job_metrics"][field] = tm[key]
        else:
            warns.add((None, key))
    vs = {}
    for v in det["vertices"]:
        vid = v["id"]
        src = not inputs[vid]
        ns, va = names[vid], vals[vid]
        e = {"id": vid, "name": v["name"], "parallelism": v["parallelism"],
             "max_parallelism": v["maxParallelism"], "inputs": inputs[vid]}
        if "slotSharingGroupId" in v:
            e["slot_sharing_group"] = v["slotSharingGroupId"]
        fin = v["status"] == "FINISHED"
        if fin:
            e["finished"] = True
        if src:
            parts = kafka_pulsar_partitions(ns)
            if parts:
                e["partitions"] = parts
        m = {}
        io = v["metrics"]
        if "busyTimeMsPerSecond" in ns:
            b = va["busyTimeMsPerSecond"]
            avg = num(b["avg"])
            if avg is not None:
                lo = min(max(num(b["min"]), 0), 1000)
                hi = min(max(num(b["max"]), 0), 1000)
                lo, hi = min(lo, hi), max(lo, hi)
                m["busy_ms_per_s"] = {"min": lo, "avg": min(max(avg, lo), hi), "max": hi}
        elif not fin:
            warns.add((vid, "busyTimeMsPerSecond"))
        if "backPressuredTimeMsPerSecond" in ns:
            m["backpressured_ms_per_s"] = min(max(va["backPressuredTimeMsPerSecond"]["avg"], 0),
                                              1000)
        elif not fin:
            warns.add((vid, "backPressuredTimeMsPerSecond"))
        if not src:
            m["records_in"] = io["read-records"]
            if "numRecordsInPerSecond" in ns:
                m["records_in_per_s"] = va["numRecordsInPerSecond"]["sum"]
            elif not fin:
                warns.add((vid, "numRecordsInPerSecond"))
        else:
            def total(pred):
                hits = [n for n in ns if pred(n)]
                return sum(va[n]["sum"] for n in hits) if hits else None
            rin = total(lambda n: n.startswith("Source__") and n.endswith(".numRecordsIn"))
            rate = total(lambda n: n.startswith("Source__") and
                         n.endswith(".numRecordsInPerSecond"))
            if rate is None:
                rate = total(lambda n: n.startswith("Source__") and
                             n.endswith(".numRecordsOutPerSecond"))
            pend = total(lambda n: n.endswith(".pendingRecords"))
            for key, x, metric in (("records_in", rin, "Source__*.numRecordsIn"),
                                   ("records_in_per_s", rate, "Source__*.numRecordsInPerSecond"),
                                   ("pending_records", pend, "*.pendingRecords")):
                if x is not None:
                    m[key] = x
                elif not fin:
                    warns.add((vid, metric))
        m["records_out"] = io["write-records"]
        if num(io["accumulated-busy-time"]) is not None:
            m["accumulated_busy_ms"] = io["accumulated-busy-time"]
        e["metrics"] = m
        vs[vid] = e
    return s, vs, warns


def same(a, b, path, diffs):
    """Field by field: numbers as numbers (1203400 == 1203400.0)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                diffs.append("%s.%s: %s" % (path, k, "missing from governor's" if k not in a
                                            else "not expected: %r" % (a[k],)))
            else:
                same(a[k], b[k], "%s.%s" % (path, k), diffs)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append("%s: %d items vs %d" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (path, i), diffs)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            not isinstance(a, bool) and not isinstance(b, bool):
        if abs(a - b) > 1e-9 * max(1.0, abs(b)):
            diffs.append("%s: %r vs %r" % (path, a, b))
    elif a != b:
        diffs.append("%s: %r vs %r" % (path, a, b))


config = {"job.autoscaler.metrics.window": "1 min",
          "job.autoscaler.stabilization.interval": "0 ms"}
for version in ("1.18", "1.19", "1.20"):
    jm = RecordedJobManager(version)
    rc, lines, err = run(["--rest", jm.url, "--job", jm.jid, "--once", "--server",
                          "http://127.0.0.1:1", "--retries", "0", "--timeout", "2 s"] +
                         ["--set=%s=%s" % kv for kv in config.items()])
    # no governor at port 1: the sample line is written all the same, then exit 4
    c.check(rc == 4 and len(lines) == 2, "%s: exit 4 and two lines: %d %r %s"
            % (version, rc, lines, err[-500:]))
    if not lines or "sample" not in lines[0]:
        continue
    got = lines[0]
    s, vs, warns = expected(version, config)
    c.check(got["job"] == jm.jid and got["flink_job"] == jm.jid, "%s: names %r" % (version, got))
    sample = got["sample"]
    diffs = []
    same({k: v for k, v in sample.items() if k != "vertices"}, s, "sample", diffs)
    gv = {v["id"]: v for v in sample["vertices"]}
    same(gv, vs, "vertices", diffs)
    c.check(not diffs, "%s: the sample differs from the one built by hand:\n  %s"
            % (version, "\n  ".join(diffs)))
    order = [v["id"] for v in sample["vertices"]]
    pos = {vid: i for i, vid in enumerate(order)}
    c.check(all(pos[i["from"]] < pos[v["id"]] for v in sample["vertices"] for i in v["inputs"]),
            "%s: vertices in a topological order: %r" % (version, order))
    gw = {(w.get("vertex"), w.get("metric")) for w in got["warnings"]
          if w.get("metric") and "Flink lists no" in w["message"] or
          "reports no" in w.get("message", "")}
    c.check(gw == warns, "%s: the missing metrics warned: %r, expected %r" % (version, gw, warns))
    nan = [w for w in got["warnings"] if "not a number" in w["message"]]
    c.check(len(nan) >= 2, "%s: the NaN busy avg and accumulated busy time are warnings: %r"
            % (version, got["warnings"]))
    # every ?get= named only listed names, and came after the listing
    listed, bad = set(), []
    for method, path, _ in jm.requests:
        if "/subtasks/metrics" not in path:
            continue
        vid = path.split("/vertices/")[1].split("/")[0]
        if "get=" not in path:
            listed.add(vid)
        elif vid not in listed:
            bad.append(path)
    c.check(not bad, "%s: values asked before the names were listed: %r" % (version, bad))
    c.check(lines[1].get("error", {}).get("status") == 0 and lines[1]["applied"] is None,
            "%s: the answer line says governor could not be reached: %r" % (version, lines[1]))
    c.check("governor flink: http://127.0.0.1:1: POST /v1/jobs/%s/metrics:" % jm.jid in err,
            "%s: the exit line names the server and the request: %s" % (version, err[-400:]))
    c.check(err.count('msg="metric missing"') == len(warns),
            "%s: one stderr line per missing metric: %d vs %d"
            % (version, err.count('msg="metric missing"'), len(warns)))
    jm.close()

# The same sample decided in process: the decision is made on what is there (the join without
# its busy time is evaluated but excluded from scaling, as core/README.md, Cycle says).
jm = RecordedJobManager("1.20")
rc, lines, err = run(["--rest", jm.url, "--job", jm.jid, "--once", "--db", ":memory:",
                      "--set", "job.autoscaler.metrics.window=1 min"])
c.check(rc == 0 and len(lines) == 2 and lines[1]["answer"]["reason"] == "COLLECTING_METRICS" and
        len(lines[1]["answer"]["vertices"]) == 4,
        "decided in process on the sample with its warnings: %d %r %s" % (rc, lines[1:], err[-300:]))
jm.close()
c.done()
