#!/usr/bin/env python3
"""Writes the trace.jsonl of each case under tests/cases/ from its scenario.json.

A trace is what a client would POST, one sample per line, plus "job". Counters are
cumulative (rate x seconds since the job started), gauges are per second, so a reader can
check each case's expected figures by hand from the numbers here.

A case's scenario.json declares its trace: "about" (one sentence, for the reader) and
"samples", a list of segments, each {"shape": NAME, "times": [t, ...], PARAM: VALUE, ...}:
one sample per t (seconds after T0) drawn by the shape function NAME below (`pipeline` or
`hot_key`) with the given keyword parameters; "running_since_s": S stands for
running_since = T0 + S seconds. The segments' samples are concatenated in order.

usage: gen.py [--check] [CASE ...]
  Rewrites the trace of every case that has a scenario.json (or of the CASEs named). With
  --check nothing is written: the exit status says whether every trace is up to date.
The expected.jsonl files are written by hand.
"""
import inspect
import json
import os
import sys

T0 = 1764410400000  # 2025-11-29T10:00:00Z: the job enters RUNNING
HERE = os.path.dirname(os.path.abspath(__file__))


def vertex(vid, p, t, busy, rate_in, rate_out=None, maxp=128, partitions=0, inputs=(),
           pending=None, bp=0.0, rin_ps=None, extra=None, counters=True, counted_s=None,
           in_jump=0, counter_scale=1.0):
    """One vertex at t seconds after T0: counters grow at rate_in/rate_out records/s for the
    counted_s seconds they have been counting (default t: since T0), records_in plus in_jump,
    both times counter_scale (a sum read a little off: 0.9998); counters=False leaves them out
    (a client that only has rates)."""
    rate_out = rate_in if rate_out is None else rate_out
    counted_s = t if counted_s is None else counted_s
    v = {"id": vid, "parallelism": p, "max_parallelism": maxp,
         "inputs": [{"from": f, "ship": s} for f, s in inputs],
         "metrics": {"busy_ms_per_s": busy,
                     "records_in_per_s": rate_in if rin_ps is None else rin_ps}}
    if counters:
        v["metrics"]["records_in"] = rate_in * counted_s + in_jump
        v["metrics"]["records_out"] = rate_out * counted_s
        if counter_scale != 1.0:
            for c in ("records_in", "records_out"):
                v["metrics"][c] = round(v["metrics"][c] * counter_scale, 3)
    if partitions:
        v["partitions"] = partitions
    if not inputs:
        v["metrics"]["backpressured_ms_per_s"] = bp
        v["metrics"]["pending_records"] = 0 if pending is None else pending
    if extra:
        v.update(extra)
    return v


def sample(t, vertices, job="orders", running_since=T0, clock="ms", **kw):
    """One sample at t seconds after T0. clock: the unit the client's clock is sent in: "ms"
    (right), "s" (at and running_since in seconds, the commonest client bug), "since_s"
    (running_since alone in seconds), "us" (both in microseconds)."""
    at = int(round(T0 + t * 1000))
    if clock == "s":
        at, running_since = at // 1000, running_since // 1000
    elif clock == "since_s":
        running_since //= 1000
    elif clock == "us":
        at, running_since = at * 1000, running_since * 1000
    elif clock != "ms":
        raise TypeError(f"clock: expected ms, s, since_s or us, got {clock!r}")
    s = {"job": job, "at": at, "running_since": running_since, "status": "RUNNING",
         "vertices": vertices}
    s.update(kw)
    return s


def pipeline(t, src_busy=500, agg_busy=950, src_p=2, agg_p=2, lag_per_s=100, rate=1000,
             agg_maxp=128, lag=None, src_bp=0.0, partitions=0, groups=False, ship="HASH",
             counters=True, counters_since_s=0, agg_in_jump=0, counters_at_s=None,
             counter_scale=1.0, gauge_scale=1.0, **kw):
    """src (a source) -> agg (`ship`, HASH by default): the base scenario of most cases. The
    backlog grows lag_per_s records/s unless a constant `lag` is given. Counters count from
    counters_since_s (a negative value: the job had been running before T0; a later one: they
    were reset then); counters=False sends rates only; agg_in_jump is added to agg's
    records_in. counters_at_s: the counters read as at that time instead of t, times
    counter_scale (a step back: the previous sample's time and 0.9998). gauge_scale multiplies
    both records_in_per_s gauges (1 / p: a gauge per subtask sent for the sum)."""
    extra = {"slot_sharing_group": "default"} if groups else None
    read_at = t if counters_at_s is None else counters_at_s
    counted = {"counters": counters, "counted_s": read_at - counters_since_s,
               "counter_scale": counter_scale}
    return sample(t, [
        vertex("src", src_p, t, src_busy, rate, bp=src_bp, partitions=partitions,
               pending=lag_per_s * t if lag is None else lag, extra=extra,
               rin_ps=rate * gauge_scale if gauge_scale != 1.0 else None, **counted),
        vertex("agg", agg_p, t, agg_busy, rate, rate_out=rate / 10, maxp=agg_maxp,
               inputs=[("src", ship)], extra=extra, in_jump=agg_in_jump,
               rin_ps=rate * gauge_scale if gauge_scale != 1.0 else None, **counted),
    ], **kw)


def hot_key(t):
    """The hot-key seed case (server/core/README.md, Skew): 25,000 rec/s arrive for `keyed` (HASH, p = 48) but one key
    carries ~30% of them. keyed's hot subtask is busy all the time (max 1000 ms/s) while the
    average subtask is busy 66 ms/s, and the job gets through 19,000 rec/s: the backlog grows
    6,000 rec/s."""
    return sample(t, [
        vertex("src", 8, t, 450, 19000, pending=6000 * t, bp=550),
        vertex("keyed", 48, t, {"min": 40, "avg": 66, "max": 1000}, 19000, rate_out=19000,
               inputs=[("src", "HASH")]),
    ], job="clicks")


SHAPES = {"pipeline": pipeline, "hot_key": hot_key}
# Parameters any shape passes on to the sample itself (see sample()).
SAMPLE_KEYS = {"status", "job_metrics", "running_since", "config", "clock"}


def render(case):
    """The trace.jsonl text of case, from its scenario.json."""
    path = os.path.join(HERE, case, "scenario.json")
    with open(path) as f:
        scenario = json.load(f)
    lines = []
    for i, seg in enumerate(scenario["samples"]):
        seg = dict(seg)
        where = f"{path}: samples[{i}]"
        shape = SHAPES.get(seg.pop("shape", None))
        if shape is None:
            sys.exit(f"{where}.shape: expected one of {sorted(SHAPES)}")
        times = seg.pop("times", None)
        if not isinstance(times, list) or not times:
            sys.exit(f"{where}.times: expected a non-empty list of seconds")
        if "running_since_s" in seg:
            seg["running_since"] = T0 + seg.pop("running_since_s") * 1000
        params = inspect.signature(shape).parameters
        passes_on = any(p.kind == p.VAR_KEYWORD for p in params.values())
        for key in seg:
            if key not in params and not (passes_on and key in SAMPLE_KEYS):
                sys.exit(f"{where}.{key}: not a parameter of {shape.__name__}")
        for t in times:
            try:
                s = shape(t, **seg)
            except TypeError as e:
                sys.exit(f"{where}: {e}")
            lines.append(json.dumps(s, sort_keys=True) + "\n")
    return "".join(lines)


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if a != "--check"] or sorted(
        n for n in os.listdir(HERE) if os.path.exists(os.path.join(HERE, n, "scenario.json")))
    stale = []
    for case in names:
        text = render(case)
        path = os.path.join(HERE, case, "trace.jsonl")
        if check:
            old = open(path).read() if os.path.exists(path) else None
            if old != text:
                stale.append(case)
        else:
            with open(path, "w") as f:
                f.write(text)
    for case in stale:
        print(f"{case}/trace.jsonl differs from what {case}/scenario.json generates "
              f"(run tests/cases/gen.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
