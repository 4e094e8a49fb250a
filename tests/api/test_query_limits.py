"""Every query parameter of every route that reads one, with extreme values: a 400 naming
the parameter and its allowed range, or a sane 200; never a 500, never `from` after `to`,
never a crash. GET /v1/jobs/orders/advice?to=-9223372036854775807&window=31d used to answer
200 with `from` after `to` (to - window overflowed). Run under the sanitized build, UBSan
stops the server at any signed overflow, which the last checks would see.

The table: each route's parameters, each with its kind (a time, a duration with its maximum,
a count with its range), and for each kind values around every limit (INT64_MIN/MAX and
+-1, the range of times and +-1, huge durations, negative, empty, garbage, RFC 3339 edge
years); whether a value is acceptable is computed here from the documented range, not taken
from the server."""
import json
import re
import urllib.parse

from gov import Server, Checks, Probe, sample

c = Checks()
s = Server()
for i in range(1, 4):
    s.req("POST", "/v1/jobs/orders/metrics", sample(i))

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
T_MIN, T_MAX = -62167219200000, 253402300799999  # 0000-01-01T00:00:00Z, 9999-12-31T23:59:59.999Z
DAY = 86400000
TIME_RANGE = "from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z"

# Texts that are not numbers of any kind.
GARBAGE = ["", " ", "x", "-", "--1", "+1", "1e3", "0x10", " 1", "1 ", "1.5", "NaN", "inf",
           "\u00e9", "1;2", "%", "1,2"]
EPOCHS = sorted({I64_MIN, I64_MIN + 1, -1, 0, 1, I64_MAX - 1, I64_MAX, I64_MAX + 1, -(I64_MAX + 2),
                 T_MIN - 1, T_MIN, T_MIN + 1, T_MAX - 1, T_MAX, T_MAX + 1, 10 ** 25, -(10 ** 25),
                 1764410400000})
# RFC 3339 texts and the instant each names (None: not a date-time, or outside the range).
RFC3339 = {
    "0000-01-01T00:00:00Z": T_MIN,
    "0000-01-01T00:00:00.001Z": T_MIN + 1,
    "0000-01-01T00:00:00+00:01": None,   # a minute before year 0
    "0000-01-01T00:00:00-23:59": T_MIN + 23 * 3600000 + 59 * 60000,
    "9999-12-31T23:59:59.999Z": T_MAX,
    "9999-12-31T23:59:59.999-00:01": None,  # a minute after year 9999
    "9999-12-31T23:59:60Z": None,        # a leap second: the next minute, year 10000
    "9999-12-31T00:00:00+23:59": T_MAX + 1 - DAY - 23 * 3600000 - 59 * 60000,
    "10000-01-01T00:00:00Z": None,
    "-0001-01-01T00:00:00Z": None,
    "2025-11-29T10:00:00Z": 1764410400000,
    "2025-02-29T00:00:00Z": None,
    "2025-11-29T10:00:00": None,
}


def time_value(v):
    """The instant text v names within the range of times, or None."""
    if v in RFC3339:
        return RFC3339[v]
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", v) and v != "-0":
        n = int(v)
        return n if T_MIN <= n <= T_MAX else None
    return None


# Duration texts; what each is worth follows the options' grammar (digits, an optional unit).
DURATIONS = ["1", "1ms", "0", "0ms", "-1", "-1ms", "30 s", "5min", "1h", "31d", "31 d",
             "2678400001", "32d", "3652425d", "3652426d", "106751991167d", "106751991168d",
             str(I64_MAX), str(I64_MAX) + "ms", str(I64_MAX + 1), "99999999999999999999999d",
             "1 fortnight", "1.5h", " 1 min "]
UNITS = {"ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
         "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
         "m": 60000, "min": 60000, "mins": 60000, "minute": 60000, "minutes": 60000,
         "h": 3600000, "hour": 3600000, "hours": 3600000, "d": DAY, "day": DAY, "days": DAY}


def duration_value(v, top):
    """The milliseconds of duration text v when they are 1 to top, else None."""
    m = re.fullmatch(r"[ \t\n\v\f\r]*([0-9]+)[ \t\n\v\f\r]*([A-Za-z]*)[ \t\n\v\f\r]*", v)
    if not m or (m.group(2) and m.group(2).lower() not in UNITS):
        return None
    ms = int(m.group(1)) * UNITS.get(m.group(2).lower(), 1)
    return ms if int(m.group(1)) <= I64_MAX and ms <= I64_MAX and 1 <= ms <= top else None


def count_value(v, lo, hi):
    if re.fullmatch(r"0|[1-9][0-9]*", v) and lo <= int(v) <= hi:
        return int(v)
    return None


TIME = ("time", None)
ROUTES = {  # route: {param: kind}
    "/v1/jobs/orders/decisions": {"since": TIME, "until": TIME, "limit": ("count", (1, 1000))},
    "/v1/jobs/orders/events": {"limit": ("count", (1, 1000))},
    "/v1/events": {"limit": ("count", (1, 1000))},
    "/v1/jobs/orders/timeline": {"from": TIME, "to": TIME,
                                 "step": ("duration", 3652425 * DAY)},
    "/v1/jobs/orders/advice": {"window": ("duration", 31 * DAY), "to": TIME},
}
VALUES = [str(n) for n in EPOCHS] + list(RFC3339) + DURATIONS + GARBAGE + \
         ["1000", "1001", "01", "00", "100"]


def acceptable(kind, v):
    k, arg = kind
    if k == "time":
        return time_value(v) is not None
    if k == "duration":
        return duration_value(v, arg) is not None
    return count_value(v, *arg) is not None


conn = s.conn(timeout=30)
n_req = 0


def get(path, query):
    """(status, body) of GET path?query, on the keep-alive connection."""
    global conn, n_req
    q = "&".join("%s=%s" % (k, urllib.parse.quote(v, safe="")) for k, v in query)
    n_req += 1
    try:
        st, b, _ = s.req("GET", path + ("?" + q if q else ""), conn=conn)
    except OSError as e:  # the server died: every later check fails too
        conn = s.conn(timeout=30)
        return 0, {"error": {"message": repr(e)}}
    return st, b


def sane(route, query, st, b):
    """The checks of a 200: from before to, within what the route allows."""
    if not isinstance(b, dict):
        return "not JSON: %r" % (b,)
    if route.endswith("/timeline"):
        f, t, step = b.get("from"), b.get("to"), b.get("step_ms")
        if not (isinstance(f, int) and isinstance(t, int) and f < t):
            return "from %r, to %r" % (f, t)
        if not (T_MIN - 6 * 3600000 <= f and t <= T_MAX and 1 <= step and b["t"] and b["t"][0] == f
                and len(b["t"]) <= 2000 and all(x < t for x in b["t"])):
            return "from %r to %r step %r t[%d]" % (f, t, step, len(b.get("t") or []))
    if route.endswith("/advice"):
        f, t = b.get("from"), b.get("to")
        if not (isinstance(f, int) and isinstance(t, int) and f < t <= T_MAX and t - f <= 31 * DAY):
            return "from %r, to %r" % (f, t)
    return None


bad = []
for route, params in ROUTES.items():
    for p, kind in params.items():
        for v in VALUES:
            st, b = get(route, [(p, v)])
            e = b.get("error", {}) if isinstance(b, dict) else {}
            if acceptable(kind, v):
                # a 400 here may only be about the combination (too many buckets, from not
                # before the default to), naming one of the route's parameters
                if st == 200:
                    why = sane(route, [(p, v)], st, b)
                elif st == 400 and e.get("field") in params and "must be a" not in e.get("message", ""):
                    why = None
                else:
                    why = "want 200, got %d %s" % (st, e)
            else:
                why = None if (st == 400 and e.get("field") == p and
                               re.search(r"must be (a time from|a duration from 1 ms to|an integer in \[)",
                                         e.get("message", ""))) else \
                    "want 400 naming %s and its range, got %d %s" % (p, st, str(b)[:200])
            if why:
                bad.append("%s?%s=%r: %s" % (route, p, v, why))
c.check(not bad, "%d of %d single parameters answered as documented; %d not:\n  %s" %
        (n_req - len(bad), n_req, len(bad), "\n  ".join(bad[:30])))

# Combinations: where the parameters meet in arithmetic.
COMBOS = [
    # (route, query, want: 200, or the field a 400 names)
    ("/v1/jobs/orders/advice", [("to", str(I64_MIN + 1)), ("window", "31d")], "to"),
    ("/v1/jobs/orders/advice", [("to", str(T_MIN)), ("window", "31d")], 200),
    ("/v1/jobs/orders/advice", [("to", str(T_MAX)), ("window", "31d")], 200),
    ("/v1/jobs/orders/advice", [("to", "0000-01-01T00:00:00Z"), ("window", "1ms")], 200),
    ("/v1/jobs/orders/timeline", [("from", str(T_MIN)), ("to", str(T_MAX))], 200),
    ("/v1/jobs/orders/timeline", [("from", str(T_MAX - 1)), ("to", str(T_MAX)), ("step", "1ms")], 200),
    ("/v1/jobs/orders/timeline", [("from", str(T_MIN)), ("to", str(T_MAX)), ("step", "1ms")], "step"),
    ("/v1/jobs/orders/timeline", [("from", str(T_MIN)), ("to", str(T_MAX)), ("step", "3652425d")], 200),
    ("/v1/jobs/orders/timeline", [("from", str(T_MAX)), ("to", str(T_MIN))], "from"),
    ("/v1/jobs/orders/timeline", [("from", str(T_MAX))], "from"),
    ("/v1/jobs/orders/timeline", [("to", str(T_MIN))], 200),
    ("/v1/jobs/orders/timeline", [("step", "3652425d")], 200),
    ("/v1/jobs/orders/timeline", [("step", "106751991167d")], "step"),
    ("/v1/jobs/orders/timeline", [("to", str(I64_MAX)), ("step", str(I64_MAX))], "to"),
    ("/v1/jobs/orders/decisions", [("since", str(T_MAX)), ("until", str(T_MIN))], "since"),
    ("/v1/jobs/orders/decisions", [("since", str(T_MIN)), ("until", str(T_MAX)), ("limit", "1000")], 200),
    ("/v1/jobs/orders/decisions", [("since", str(I64_MIN)), ("until", str(I64_MAX))], "since"),
    # a parameter given twice: which one counts would be a guess
    ("/v1/jobs/orders/advice", [("to", "1"), ("to", str(I64_MIN + 1))], "to"),
    ("/v1/jobs/orders/decisions", [("limit", "5"), ("limit", "5")], "limit"),
    # a parameter no route reads is ignored, whatever it holds
    ("/v1/jobs/orders/decisions", [("unknown", str(I64_MIN)), ("x", "")], 200),
    ("/v1/jobs", [("limit", str(I64_MIN)), ("from", "garbage")], 200),
    ("/v1/jobs/orders/config", [("to", str(I64_MAX + 1))], 200),
    ("/healthz", [("window", "-1")], 200),
    # more parameters than are read: refused, not silently cut
    ("/v1/jobs/orders/advice", [("p%d" % i, "1") for i in range(32)] + [("to", str(I64_MIN + 1))], None),
]


def combos():
    for route, query, want in COMBOS:
        st, b = get(route, query)
        e = b.get("error", {}) if isinstance(b, dict) else {}
        if want == 200:
            why = sane(route, query, st, b) if st == 200 else "got %d %s" % (st, e)
        else:
            why = None if st == 400 and e.get("field") == want else "got %d %s" % (st, str(b)[:200])
        c.check(why is None, "%s?%s: want %s: %s" % (
            route, "&".join("%s=%s" % kv for kv in query[-3:]), want if want is not None else "400",
            why))


# another job's decisions meanwhile take about what they take on an idle server (the bound
# is generous for a loaded machine and this client's own threads; a stalled loop is thousands)
_, ratio = Probe(s).ratio(combos)
c.check(ratio < 100, "another job's decisions during the combinations: worst %.1fx the idle median" % ratio)
print("another job's decisions during the combinations: worst %.1fx the idle median" % ratio)

st, b, _ = s.req("GET", "/healthz")
c.check(st == 200, "the server still answers after %d requests" % n_req)
c.check(s.stop() == 0, "the server stops cleanly (no sanitizer report)")
c.check("runtime error" not in s.logs() and "Sanitizer" not in s.logs(), "no sanitizer report in the log")
c.done()
