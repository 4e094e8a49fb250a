"""Mistakes that speak: a field of a metrics sample that governor does not read (a misspelt
`"runing_since"`, a vertex's `"metrcs"`, a metric's `"busy_ms_per_sec"`) is named in the answer's
`warnings`, with the known field it is nearest to; a sample that sends every documented field, in
streaming and in batch mode, gets no such warning; a retry of the sample answers the same
warnings; and under `--strict-samples` the same sample is a 400 naming the field, and nothing is
stored."""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gov import T0, Checks, Server, count, fingerprint  # noqa: E402

c = Checks()

# Every field of the request reference (docs/api.md), streaming.
FULL = {
    "at": T0, "running_since": T0 - 3600000, "status": "RUNNING", "mode": "STREAMING",
    "config": {"job.autoscaler.utilization.target": "0.6"},
    "job_metrics": {"heap_used": 2147483648, "heap_max": 4294967296, "gc_ms_per_s": 20,
                    "managed_used": 1073741824, "metaspace_used": 134217728,
                    "task_slots_total": 8, "task_slots_available": 2},
    "vertices": [
        {"id": "source", "name": "Source: Kafka", "parallelism": 2, "max_parallelism": 128, "partitions": 8, "inputs": [],
         "slot_sharing_group": "default", "finished": False,
         "metrics": {"busy_ms_per_s": {"min": 400, "avg": 500, "max": 650},
                     "backpressured_ms_per_s": 0, "records_in": 3600000, "records_out": 3600000,
                     "accumulated_busy_ms": 3600000, "records_in_per_s": 1000,
                     "records_out_per_s": 1000, "pending_records": 20000}},
        {"id": "sink", "parallelism": 2, "inputs": [{"from": "source", "ship": "HASH"}],
         "metrics": {"busy_ms_per_s": 300, "records_in": 3600000, "records_out": 0}}]}

# Every field of a batch sample (docs/api.md, Batch jobs).
BATCH = {
    "at": T0 + 30000, "running_since": T0, "status": "RUNNING", "mode": "BATCH",
    "config": {"governor.batch.max-workers": "50"},
    "workers": {"current": 10, "running": 10, "requested": 10, "slots_per_worker": 4,
                "cpu_utilization": 0.63, "shuffle_on_workers": False},
    "vertices": [
        {"id": "read", "batch": {"state": "RUNNING", "unit": "bytes", "total_work": 4.0e12,
                                 "work_done": 7.5e9, "busy_s": 300,
                                 "remaining_parallelism": 1000}},
        {"id": "write", "batch": {"state": "PENDING", "fixed_shards": 8,
                                  "fraction_consumed": 0}}]}


def unknown_warnings(ans):
    return [w for w in ans.get("warnings", []) if "unknown field" in w]


s = Server()
st, ans, _ = s.req("POST", "/v1/jobs/full/metrics", FULL)
c.check(st == 200 and unknown_warnings(ans) == [],
        "every documented field: no unknown-field warning: %d %r" % (st, ans))
st, ans, _ = s.req("POST", "/v1/jobs/batch/metrics", BATCH)
c.check(st == 200 and unknown_warnings(ans) == [],
        "every documented batch field: no unknown-field warning: %d %r" % (st, ans))

bad = copy.deepcopy(FULL)
bad["at"] = T0 + 30000
bad["runing_since"] = bad.pop("running_since")
bad["vertices"][1]["metrcs"] = bad["vertices"][1].pop("metrics")
bad["vertices"][0]["metrics"]["busy_ms_per_sec"] = 5
bad["vertices"][1]["inputs"][0]["shp"] = "HASH"
bad["vertices"][0]["nothing_like_it"] = None  # null is absent, as everywhere
bad["xyzzy"] = 1
st, ans, _ = s.req("POST", "/v1/jobs/typo/metrics", bad)
warn = unknown_warnings(ans) if isinstance(ans, dict) else []
c.check(st == 200, "a sample with unknown fields is decided: %d %r" % (st, ans))
want = ['runing_since: unknown field, ignored: did you mean "running_since"?',
        'xyzzy: unknown field, ignored',
        'vertices[0].metrics.busy_ms_per_sec: unknown field, ignored: did you mean '
        '"busy_ms_per_s"?',
        'vertices[1].metrcs: unknown field, ignored: did you mean "metrics"?',
        'vertices[1].inputs[0].shp: unknown field, ignored: did you mean "ship"?']
c.check(sorted(warn) == sorted(want), "each unknown field named, with the nearest known one:\n"
        "  got  %r\n  want %r" % (warn, want))
st2, again, _ = s.req("POST", "/v1/jobs/typo/metrics", bad)
c.check(st2 == 200 and again.get("repeat") is True and again.get("warnings") == ans.get("warnings"),
        "the retry is the stored answer, its warnings too: %d %r" % (st2, again))

# Many unknown fields: the first 16 listed, the rest counted.
many = copy.deepcopy(FULL)
many["at"] = T0 + 60000
many["running_since"] = T0 - 3600000
for i in range(20):
    many["extra_%02d" % i] = i
st, ans, _ = s.req("POST", "/v1/jobs/typo/metrics", many)
warn = unknown_warnings(ans) if isinstance(ans, dict) else []
c.check(st == 200 and len(warn) == 17 and warn[-1] == "... and 4 more unknown fields, ignored",
        "20 unknown fields: 16 named, 4 counted: %r" % warn[-2:])
c.check(s.stop() == 0, "clean stop")

# --strict-samples: the same mistake is a 400 naming the field; nothing is stored.
t = Server(args=["--strict-samples", "true"])
st, ans, _ = t.req("POST", "/v1/jobs/full/metrics", FULL)
c.check(st == 200, "strict: every documented field is accepted: %d %r" % (st, ans))
before = fingerprint(t.db)
st, ans, _ = t.req("POST", "/v1/jobs/typo/metrics", bad)
err = ans.get("error", {}) if isinstance(ans, dict) else {}
c.check(st == 400 and err.get("field") == "runing_since"
        and 'did you mean "running_since"' in err.get("message", "")
        and "strict-samples" in err.get("message", ""),
        "strict: a 400 naming the first unknown field and the option: %d %r" % (st, ans))
one = copy.deepcopy(FULL)
one["at"] = T0 + 30000
one["vertices"][1]["metrcs"] = one["vertices"][1].pop("metrics")
st, ans, _ = t.req("POST", "/v1/jobs/typo/metrics", one)
err = ans.get("error", {}) if isinstance(ans, dict) else {}
c.check(st == 400 and err.get("field") == "vertices[1].metrcs",
        "strict: a vertex's unknown field is named by its path: %d %r" % (st, ans))
c.check(fingerprint(t.db) == before, "strict: a refused sample stores nothing")
c.check(count(t.db, "decisions") == 1, "strict: one decision stored (the full sample's)")
c.check(t.stop() == 0, "clean stop")
c.done()
