#!/usr/bin/env python3
"""Writes the trace.jsonl of every case under tests/cases/ from the scenarios below.

A trace is what a client would POST, one sample per line, plus "job". Counters are
cumulative (rate x seconds since the job started), gauges are per second, so a reader can
check each case's expected figures by hand from the numbers here. Run it after changing a
scenario: `python3 tests/cases/gen.py`. The expected.jsonl files are written by hand.
"""
import json
import os

T0 = 1764410400000  # 2025-11-29T10:00:00Z: the job enters RUNNING
HERE = os.path.dirname(os.path.abspath(__file__))


def vertex(vid, p, t, busy, rate_in, rate_out=None, maxp=128, partitions=0, inputs=(),
           pending=None, bp=0.0, rin_ps=None, extra=None):
    """One vertex at t seconds after T0: counters grow at rate_in/rate_out records/s."""
    rate_out = rate_in if rate_out is None else rate_out
    v = {"id": vid, "parallelism": p, "max_parallelism": maxp,
         "inputs": [{"from": f, "ship": s} for f, s in inputs],
         "metrics": {"busy_ms_per_s": busy, "records_in": rate_in * t,
                     "records_out": rate_out * t,
                     "records_in_per_s": rate_in if rin_ps is None else rin_ps}}
    if partitions:
        v["partitions"] = partitions
    if not inputs:
        v["metrics"]["backpressured_ms_per_s"] = bp
        v["metrics"]["pending_records"] = 0 if pending is None else pending
    if extra:
        v.update(extra)
    return v


def sample(t, vertices, job="orders", running_since=T0, **kw):
    s = {"job": job, "at": T0 + t * 1000, "running_since": running_since, "status": "RUNNING",
         "vertices": vertices}
    s.update(kw)
    return s


def pipeline(t, src_busy=500, agg_busy=950, src_p=2, agg_p=2, lag_per_s=100, rate=1000,
             agg_maxp=128, lag=None, src_bp=0.0, partitions=0, groups=False, **kw):
    """src (a source) -> agg (HASH): the base scenario of most cases. The backlog grows
    lag_per_s records/s unless a constant `lag` is given."""
    extra = {"slot_sharing_group": "default"} if groups else None
    return sample(t, [
        vertex("src", src_p, t, src_busy, rate, bp=src_bp, partitions=partitions,
               pending=lag_per_s * t if lag is None else lag, extra=extra),
        vertex("agg", agg_p, t, agg_busy, rate, rate_out=rate / 10, maxp=agg_maxp,
               inputs=[("src", "HASH")], extra=extra),
    ], **kw)


TIMES = [0, 30, 60, 90, 120, 150, 180]


def write(case, samples):
    d = os.path.join(HERE, case)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "trace.jsonl"), "w") as f:
        for s in samples:
            f.write(json.dumps(s, sort_keys=True) + "\n")


def main():
    write("scale_up_utilization", [pipeline(t) for t in TIMES])
    write("within_target", [pipeline(t, agg_busy=600) for t in TIMES])
    write("advisor_mode", [pipeline(t) for t in TIMES])
    write("disabled", [pipeline(t) for t in TIMES[:2]])
    write("not_running", [pipeline(t) for t in TIMES[:2]] +
          [dict(pipeline(60), status="RESTARTING")])
    write("excluded_period", [pipeline(t) for t in TIMES])
    write("vertex_excluded", [pipeline(t) for t in TIMES])
    write("limit_reached", [pipeline(t, agg_maxp=2) for t in TIMES])
    write("memory_pressure",
          [pipeline(t, job_metrics={"gc_ms_per_s": 600, "heap_used": 1e9, "heap_max": 4e9})
           for t in TIMES])
    # Restart: the job restarts at t=120 (running_since moves): the window starts over.
    write("hot_key", [hot_key(t) for t in TIMES])
    later = TIMES + [210, 240]
    write("scale_down_delayed", [pipeline(t, agg_busy=100) for t in later])
    write("backlog", [pipeline(t, src_busy=900, lag=600000, partitions=8) for t in TIMES])
    write("partitions_cap", [pipeline(t, src_busy=900, lag=600000, partitions=3) for t in TIMES])
    write("quota", [pipeline(t, groups=True) for t in TIMES])
    for mode in ("balanced", "evenly_spread", "off"):
        write("align_" + mode, [pipeline(t, agg_p=3) for t in TIMES])
    # The 2 -> 4 scale-up of line 7 is applied; the job restarts at t=200 with agg at 4 but
    # no faster than before: the scale-up was ineffective.
    restarted = [200, 230, 260, 290, 320, 350, 380]
    write("ineffective", [pipeline(t) for t in TIMES] +
          [pipeline(t, agg_p=4, running_since=T0 + 200000) for t in restarted])
    write("hot_key_flink", [hot_key(t) for t in TIMES])
    write("restart", [pipeline(t) for t in TIMES[:4]] +
          [pipeline(t, running_since=T0 + 120000) for t in (120, 150)])


def hot_key(t):
    """DESIGN 4's seed case: 25,000 rec/s arrive for `keyed` (HASH, p = 48) but one key
    carries ~30% of them. keyed's hot subtask is busy all the time (max 1000 ms/s) while the
    average subtask is busy 66 ms/s, and the job gets through 19,000 rec/s: the backlog grows
    6,000 rec/s."""
    return sample(t, [
        vertex("src", 8, t, 450, 19000, pending=6000 * t, bp=550),
        vertex("keyed", 48, t, {"min": 40, "avg": 66, "max": 1000}, 19000, rate_out=19000,
               inputs=[("src", "HASH")]),
    ], job="clicks")


if __name__ == "__main__":
    main()
