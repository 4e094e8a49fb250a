/*
 * json.c - jansson in and out of the core: the decide request (DESIGN 3.1) into a
 * struct core_sample, a struct core_decision into the response object, and a job's
 * struct core_state to JSON and back.
 *
 * The request parser is on the path of every request, so it allocates nothing per field:
 * the sample's vertex and input arrays live in buffers that json_sample keeps between
 * requests, and every string (vertex ids, input names, slot-sharing groups) is borrowed
 * from the request body. The body must therefore outlive the sample (and any decision
 * made from it, which borrows the ids in turn).
 *
 * Error paths are built lazily: each level of the document is a `struct path` node on the
 * stack, formatted ("vertices[2].metrics.records_in") only when something is wrong.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core_int.h"
#include "json.h"
#include "xmem.h"

/* ---------------------------------------------------------------- paths -- */

/* One step of a JSON path: `.key` when key is set, else `[index]`. */
struct path {
    const struct path *up;
    const char *key;
    int index;
};

static size_t path_fmt(const struct path *p, char *buf, size_t len)
{
    if (!p)
        return 0;
    size_t n = path_fmt(p->up, buf, len);
    int w;
    if (p->key)
        w = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "%s%s", p->up ? "." : "",
                     p->key);
    else
        w = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "[%d]", p->index);
    return n + (w > 0 ? (size_t)w : 0);
}

/* Where an error goes: a message buffer and, for requests, a field buffer. */
struct sink {
    char *msg;
    size_t msg_len;
    char *field; /* NULL: the path only prefixes the message */
    size_t field_len;
};

/* Fills the sink with "<path>: <message>" (and the path alone into field). Returns -1. */
__attribute__((format(printf, 3, 4))) static int fail(const struct sink *k, const struct path *p,
                                                      const char *fmt, ...)
{
    char where[256];
    where[0] = '\0';
    path_fmt(p, where, sizeof where);
    if (k->field)
        snprintf(k->field, k->field_len, "%s", where);
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (where[0])
        snprintf(k->msg, k->msg_len, "%s: %s", where, what);
    else
        snprintf(k->msg, k->msg_len, "%s", what);
    return -1;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "real";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

/* ------------------------------------------------------ typed getters -- */

/*
 * Each getter reads obj[key]. Absent or null: returns 0 and leaves *out (optional fields
 * keep the caller's default), unless `required`. Wrong type or out of range: -1 via fail().
 */

static int get_number(const struct sink *k, const json_t *obj, const struct path *up,
                      const char *key, double lo, double hi, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    struct path p = {up, key, 0};
    if (!json_is_number(v))
        return fail(k, &p, "expected a number, got %s", type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x))
        return fail(k, &p, "must be a finite number");
    if (x < lo || x > hi) {
        if (isinf(hi))
            return fail(k, &p, "must be >= %g, got %.17g", lo, x);
        if (isinf(lo)) /* busy time: a negative one is taken and counted as 0 */
            return fail(k, &p, "must be in [0, %g], got %.17g (a negative value counts as 0)", hi,
                        x);
        return fail(k, &p, "must be in [%g, %g], got %.17g", lo, hi, x);
    }
    *out = x;
    return 0;
}

static int get_int(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                   bool required, int lo, int *out)
{
    const json_t *v = json_object_get(obj, key);
    struct path p = {up, key, 0};
    if (!v || json_is_null(v)) {
        if (required)
            return fail(k, &p, "required");
        return 0;
    }
    if (!json_is_integer(v))
        return fail(k, &p, "expected an integer, got %s", type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < lo)
        return fail(k, &p, "must be >= %d, got %" JSON_INTEGER_FORMAT, lo, x);
    if (x > INT_MAX)
        return fail(k, &p, "must be <= %d, got %" JSON_INTEGER_FORMAT, INT_MAX, x);
    *out = (int)x;
    return 0;
}

static int get_string(const struct sink *k, const json_t *obj, const struct path *up,
                      const char *key, bool required, const char **out)
{
    const json_t *v = json_object_get(obj, key);
    struct path p = {up, key, 0};
    if (!v || json_is_null(v)) {
        if (required)
            return fail(k, &p, "required");
        return 0;
    }
    if (!json_is_string(v))
        return fail(k, &p, "expected a string, got %s", type_name(v));
    *out = json_string_value(v);
    return 0;
}

static int get_bool(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                    bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    struct path p = {up, key, 0};
    if (!json_is_boolean(v))
        return fail(k, &p, "expected a boolean, got %s", type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* Absent/null: *out = NULL. Otherwise must be of the given type. */
static int get_typed(const struct sink *k, const json_t *obj, const struct path *up,
                     const char *key, json_type t, const char *tname, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (json_typeof(v) != t) {
        struct path p = {up, key, 0};
        return fail(k, &p, "expected %s, got %s", tname, type_name(v));
    }
    *out = v;
    return 0;
}

/* -------------------------------------------------------------- time -- */

/* RFC 3339 years are 0000-9999: the epoch-ms range accepted for `at` and `running_since`. */
#define MS_MIN (-62167219200000LL) /* 0000-01-01T00:00:00Z */
#define MS_MAX (253402300799999LL) /* 9999-12-31T23:59:59.999Z */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char **s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*s)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *s += n;
    return v;
}

/*
 * RFC 3339 date-time: YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|+hh:mm|-hh:mm). Fractions
 * beyond milliseconds are truncated; a leap second (:60) counts as the next minute's :00.
 */
static int parse_rfc3339(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, frac = 0, off = 0;
    if ((y = digits(&s, 4)) < 0 || *s++ != '-' || (mo = digits(&s, 2)) < 0 || *s++ != '-' ||
        (d = digits(&s, 2)) < 0)
        return -1;
    if (*s != 'T' && *s != 't' && *s != ' ')
        return -1;
    s++;
    if ((h = digits(&s, 2)) < 0 || *s++ != ':' || (mi = digits(&s, 2)) < 0 || *s++ != ':' ||
        (sec = digits(&s, 2)) < 0)
        return -1;
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9')
            return -1;
        int nd = 0;
        for (; *s >= '0' && *s <= '9'; s++, nd++)
            if (nd < 3) /* digits beyond milliseconds are truncated */
                frac = frac * 10 + (*s - '0');
        for (; nd < 3; nd++)
            frac *= 10;
    }
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s++ == '-' ? -1 : 1;
        int oh, om;
        if ((oh = digits(&s, 2)) < 0 || *s++ != ':' || (om = digits(&s, 2)) < 0)
            return -1;
        if (oh > 23 || om > 59)
            return -1;
        off = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (*s)
        return -1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap))
        return -1;
    if (h > 23 || mi > 59 || sec > 60)
        return -1;
    int64_t t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec -
                (int64_t)off * 60;
    *ms = t * 1000 + frac;
    return 0;
}

/* `at` / `running_since`: epoch ms (integer, or an integral real) or an RFC 3339 string. */
static int get_time(const struct sink *k, const json_t *obj, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    struct path p = {NULL, key, 0};
    int64_t ms;
    if (json_is_integer(v)) {
        ms = json_integer_value(v);
    } else if (json_is_real(v)) {
        double x = json_real_value(v);
        if (!isfinite(x) || x != floor(x) || x < (double)MS_MIN || x > (double)MS_MAX)
            return fail(k, &p, "expected epoch milliseconds (an integer), got %.17g", x);
        ms = (int64_t)x;
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (parse_rfc3339(s, &ms) < 0)
            return fail(k, &p,
                        "\"%.64s\" is not an RFC 3339 date-time "
                        "(e.g. 2025-11-29T10:00:00Z or 2025-11-29T11:00:00.250+01:00)",
                        s);
    } else {
        return fail(k, &p, "expected epoch milliseconds or an RFC 3339 string, got %s",
                    type_name(v));
    }
    if (ms < MS_MIN || ms > MS_MAX)
        return fail(k, &p, "%" PRId64 " is outside years 0000-9999", ms);
    *out = ms;
    return 0;
}

/* ------------------------------------------------------------- sample -- */

struct sample_buf {
    struct core_vertex_in *v;
    int cap_v;
    struct core_input *in;
    int cap_in;
};

void json_sample_init(struct json_sample *js)
{
    memset(js, 0, sizeof *js);
    js->priv = core__xcalloc(1, sizeof(struct sample_buf));
}

void json_sample_reset(struct json_sample *js)
{
    memset(&js->s, 0, sizeof js->s);
}

void json_sample_deinit(struct json_sample *js)
{
    struct sample_buf *b = js->priv;
    if (b) {
        free(b->v);
        free(b->in);
        free(b);
    }
    memset(js, 0, sizeof *js);
}

static void init_err(struct json_err *e, struct sink *k)
{
    e->status = 400;
    snprintf(e->code, sizeof e->code, "INVALID_ARGUMENT");
    e->message[0] = '\0';
    e->field[0] = '\0';
    k->msg = e->message;
    k->msg_len = sizeof e->message;
    k->field = e->field;
    k->field_len = sizeof e->field;
}

/* Flink's default max parallelism (KeyGroupRangeAssignment.computeDefaultMaxParallelism):
 * roundUpToPowerOfTwo(p + p/2) within [128, 32768]; never below p itself. */
static int default_max_parallelism(int p)
{
    int64_t want = (int64_t)p + p / 2, pow2 = 1;
    while (pow2 < want)
        pow2 <<= 1;
    if (pow2 < 128)
        pow2 = 128;
    if (pow2 > 32768)
        pow2 = 32768;
    return pow2 < p ? p : (int)pow2;
}

static bool valid_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e || n >= 128)
            return false;
    return n >= 1;
}

/* How far apart (ms/s) busy min, avg and max may be the wrong way round by rounding. */
#define BUSY_SLACK 1.0

static int parse_metrics(const struct sink *k, const json_t *m, const struct path *up,
                         struct core_vertex_in *v)
{
    struct path mp = {up, "metrics", 0};
    /* A negative busy time is taken (the core counts it as 0 and says so, as the reference
     * clamps it); above 1000 ms per second is refused. */
    const json_t *busy = json_object_get(m, "busy_ms_per_s");
    if (busy && json_is_object(busy)) {
        struct path bp = {&mp, "busy_ms_per_s", 0};
        double avg = NAN;
        if (get_number(k, busy, &bp, "avg", -INFINITY, 1000, &avg) < 0)
            return -1;
        if (isnan(avg)) {
            struct path ap = {&bp, "avg", 0};
            return fail(k, &ap, "required when busy_ms_per_s is an object");
        }
        v->busy_min = v->busy_max = v->busy_avg = avg;
        if (get_number(k, busy, &bp, "min", -INFINITY, 1000, &v->busy_min) < 0 ||
            get_number(k, busy, &bp, "max", -INFINITY, 1000, &v->busy_max) < 0)
            return -1;
        /* min <= avg <= max over the subtasks, or the figures contradict each other. A
         * client that rounds each figure on its own (to whole ms/s, or to a few decimals)
         * may put them up to BUSY_SLACK apart the wrong way: that is rounding, and avg is
         * moved back between them. */
        if (v->busy_min > v->busy_max + BUSY_SLACK) {
            struct path p = {&bp, "min", 0};
            return fail(k, &p, "%g is above max %g", v->busy_min, v->busy_max);
        }
        if (v->busy_min > v->busy_max)
            v->busy_min = v->busy_max;
        if (v->busy_avg < v->busy_min - BUSY_SLACK || v->busy_avg > v->busy_max + BUSY_SLACK) {
            struct path p = {&bp, "avg", 0};
            return fail(k, &p, "%g is outside [min %g, max %g]", v->busy_avg, v->busy_min,
                        v->busy_max);
        }
        v->busy_avg = v->busy_avg < v->busy_min   ? v->busy_min
                      : v->busy_avg > v->busy_max ? v->busy_max
                                                  : v->busy_avg;
    } else if (busy && !json_is_null(busy) && !json_is_number(busy)) {
        struct path bp = {&mp, "busy_ms_per_s", 0};
        return fail(k, &bp, "expected a number or {min, avg, max}, got %s", type_name(busy));
    } else {
        double b = NAN;
        if (get_number(k, m, &mp, "busy_ms_per_s", -INFINITY, 1000, &b) < 0)
            return -1;
        v->busy_min = v->busy_avg = v->busy_max = b;
    }
    if (get_number(k, m, &mp, "backpressured_ms_per_s", 0, 1000, &v->backpressured) < 0 ||
        get_number(k, m, &mp, "records_in", 0, INFINITY, &v->records_in) < 0 ||
        get_number(k, m, &mp, "records_out", 0, INFINITY, &v->records_out) < 0 ||
        get_number(k, m, &mp, "accumulated_busy_ms", 0, INFINITY, &v->accumulated_busy_ms) < 0 ||
        get_number(k, m, &mp, "records_in_per_s", 0, INFINITY, &v->records_in_per_s) < 0 ||
        get_number(k, m, &mp, "records_out_per_s", 0, INFINITY, &v->records_out_per_s) < 0 ||
        get_number(k, m, &mp, "pending_records", 0, INFINITY, &v->pending_records) < 0)
        return -1;
    return 0;
}

static int parse_vertex(const struct sink *k, const json_t *jv, const struct path *vp,
                        struct core_vertex_in *v, struct core_input *in)
{
    if (!json_is_object(jv))
        return fail(k, vp, "expected an object, got %s", type_name(jv));
    memset(v, 0, sizeof *v);
    v->busy_min = v->busy_avg = v->busy_max = NAN;
    v->backpressured = v->records_in = v->records_out = v->accumulated_busy_ms = NAN;
    v->records_in_per_s = v->records_out_per_s = v->pending_records = NAN;

    if (get_string(k, jv, vp, "id", true, &v->id) < 0)
        return -1;
    if (!valid_id(v->id)) {
        struct path p = {vp, "id", 0};
        return fail(k, &p, "must be 1 to 128 printable ASCII characters without spaces");
    }
    v->max_parallelism = 0;
    if (get_int(k, jv, vp, "parallelism", true, 1, &v->parallelism) < 0 ||
        get_int(k, jv, vp, "max_parallelism", false, 1, &v->max_parallelism) < 0 ||
        get_int(k, jv, vp, "partitions", false, 0, &v->partitions) < 0 ||
        get_string(k, jv, vp, "slot_sharing_group", false, &v->slot_sharing_group) < 0 ||
        get_bool(k, jv, vp, "finished", &v->finished) < 0)
        return -1;
    if (v->max_parallelism == 0) {
        v->max_parallelism = default_max_parallelism(v->parallelism);
    } else if (v->parallelism > v->max_parallelism) {
        struct path p = {vp, "parallelism", 0};
        return fail(k, &p, "%d exceeds max_parallelism %d", v->parallelism, v->max_parallelism);
    }

    json_t *inputs, *metrics;
    if (get_typed(k, jv, vp, "inputs", JSON_ARRAY, "an array", &inputs) < 0 ||
        get_typed(k, jv, vp, "metrics", JSON_OBJECT, "an object", &metrics) < 0)
        return -1;
    if (inputs) {
        struct path ip = {vp, "inputs", 0};
        size_t j;
        json_t *ji;
        json_array_foreach(inputs, j, ji)
        {
            struct path ep = {&ip, NULL, (int)j};
            if (!json_is_object(ji))
                return fail(k, &ep, "expected an object, got %s", type_name(ji));
            const char *ship = NULL;
            in[j].ship = CORE_SHIP_REBALANCE;
            if (get_string(k, ji, &ep, "from", true, &in[j].from) < 0 ||
                get_string(k, ji, &ep, "ship", false, &ship) < 0)
                return -1;
            if (ship)
                in[j].ship = core_ship_parse(ship);
        }
        v->inputs = json_array_size(inputs) ? in : NULL;
        v->n_inputs = (int)json_array_size(inputs);
    }
    if (metrics && parse_metrics(k, metrics, vp, v) < 0)
        return -1;
    return 0;
}

/* Shortest text that reads back as x ("0.6", not "0.59999999999999998"). */
static void real_text(double x, char *buf, size_t len)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* Sets each config entry into opts at OPT_REQUEST (values as text). -1 with e filled. */
static int apply_config(json_t *cfg, struct opt_job *opts, struct json_err *e, const struct sink *k)
{
    struct path cp = {NULL, "config", 0};
    const char *key;
    json_t *val;
    json_object_foreach(cfg, key, val)
    {
        struct path p = {&cp, key, 0};
        char num[64];
        const char *text;
        if (json_is_string(val)) {
            text = json_string_value(val);
        } else if (json_is_integer(val)) {
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(val));
            text = num;
        } else if (json_is_real(val) && isfinite(json_real_value(val))) {
            real_text(json_real_value(val), num, sizeof num);
            text = num;
        } else if (json_is_boolean(val)) {
            text = json_is_true(val) ? "true" : "false";
        } else {
            return fail(k, &p, "expected a string or a number, got %s", type_name(val));
        }
        if (!opts)
            continue;
        char *err = NULL;
        if (opt_job_set(opts, OPT_REQUEST, key, text, &err) < 0) {
            /* 422: valid JSON, invalid content. The options module's message already names
             * the key, so it is the message as is; the field still gets the path. */
            e->status = 422;
            if (err)
                path_fmt(&p, e->field, sizeof e->field);
            else
                fail(k, &p, "invalid value");
            if (err)
                snprintf(e->message, sizeof e->message, "%s", err);
            free(err);
            return -1;
        }
    }
    return 0;
}

/*
 * Parses a decide request. Fields, defaults and limits (DESIGN 3.1):
 *  - at: epoch ms or RFC 3339, absent -> now_ms; running_since: same forms, absent -> 0
 *    (running since the epoch: the stabilization period is long over; `at` if earlier);
 *  - running_since later than at is refused;
 *  - status: absent -> RUNNING; running = (status == "RUNNING"), in any case;
 *  - job_metrics: optional non-negative numbers (NaN when absent);
 *  - vertices: required, non-empty. max_parallelism defaults to Flink's own default for the
 *    parallelism; partitions to 0 (unknown); an input's ship to REBALANCE;
 *  - busy_ms_per_s at most 1000 (a negative one is left for the core to count as 0, with a
 *    warning), {min, avg, max} with min <= avg <= max; backpressured_ms_per_s in [0, 1000],
 *    other metrics >= 0;
 *  - null counts as absent everywhere; unknown fields are ignored (forward compatibility);
 *  - config: strings, numbers (integers as written, reals in their shortest form) or
 *    booleans; applied last, so opts is only touched by a request that is otherwise valid.
 * Strings in js are borrowed from body.
 */
int json_parse_sample(json_t *body, int64_t now_ms, struct json_sample *js, struct opt_job *opts,
                      struct json_err *e)
{
    struct sink k;
    init_err(e, &k);
    json_sample_reset(js);
    struct core_sample *s = &js->s;
    struct sample_buf *b = js->priv;
    if (!b)
        b = js->priv = core__xcalloc(1, sizeof *b);

    if (!json_is_object(body))
        return fail(&k, NULL, "the request body must be a JSON object, got %s", type_name(body));

    s->at = now_ms;
    s->running_since = INT64_MIN;
    if (get_time(&k, body, "at", &s->at) < 0 ||
        get_time(&k, body, "running_since", &s->running_since) < 0)
        return -1;
    if (s->running_since == INT64_MIN) {
        s->running_since = s->at < 0 ? s->at : 0; /* absent: running long before the sample */
    } else if (s->running_since > s->at) {
        /* Stabilization would never end; governor's time is the sample's. */
        struct path p = {NULL, "running_since", 0};
        return fail(&k, &p,
                    "%" PRId64 " is later than at %" PRId64 ": a job cannot be running since "
                    "after the sample was taken (send both from one clock)",
                    s->running_since, s->at);
    }
    const char *status = "RUNNING";
    if (get_string(&k, body, NULL, "status", false, &status) < 0)
        return -1;
    s->running = strcasecmp(status, "RUNNING") == 0;

    s->heap_used = s->heap_max = s->gc_ms_per_s = s->managed_used = s->metaspace_used = NAN;
    s->task_slots_total = s->task_slots_available = NAN;
    json_t *jm, *cfg, *verts;
    if (get_typed(&k, body, NULL, "job_metrics", JSON_OBJECT, "an object", &jm) < 0 ||
        get_typed(&k, body, NULL, "config", JSON_OBJECT, "an object", &cfg) < 0 ||
        get_typed(&k, body, NULL, "vertices", JSON_ARRAY, "an array", &verts) < 0)
        return -1;
    if (jm) {
        struct path p = {NULL, "job_metrics", 0};
        if (get_number(&k, jm, &p, "heap_used", 0, INFINITY, &s->heap_used) < 0 ||
            get_number(&k, jm, &p, "heap_max", 0, INFINITY, &s->heap_max) < 0 ||
            get_number(&k, jm, &p, "gc_ms_per_s", 0, INFINITY, &s->gc_ms_per_s) < 0 ||
            get_number(&k, jm, &p, "managed_used", 0, INFINITY, &s->managed_used) < 0 ||
            get_number(&k, jm, &p, "metaspace_used", 0, INFINITY, &s->metaspace_used) < 0 ||
            get_number(&k, jm, &p, "task_slots_total", 0, INFINITY, &s->task_slots_total) < 0 ||
            get_number(&k, jm, &p, "task_slots_available", 0, INFINITY, &s->task_slots_available) <
                0)
            return -1;
    }

    struct path vsp = {NULL, "vertices", 0};
    if (!verts)
        return fail(&k, &vsp, "required");
    size_t n = json_array_size(verts);
    if (n == 0)
        return fail(&k, &vsp, "must list at least one vertex");
    if (n > INT_MAX / 2)
        return fail(&k, &vsp, "too many vertices");

    /* Size both buffers once, so input pointers stay valid while filling. */
    size_t n_in = 0, i;
    json_t *jv;
    json_array_foreach(verts, i, jv)
    {
        json_t *ins = json_object_get(jv, "inputs");
        if (ins && json_is_array(ins))
            n_in += json_array_size(ins);
    }
    if (n_in > INT_MAX / 2)
        return fail(&k, &vsp, "too many inputs");
    core__grow(&b->v, &b->cap_v, (int)n, sizeof *b->v);
    core__grow(&b->in, &b->cap_in, (int)n_in, sizeof *b->in);

    size_t at_in = 0;
    json_array_foreach(verts, i, jv)
    {
        struct path vp = {&vsp, NULL, (int)i};
        if (parse_vertex(&k, jv, &vp, &b->v[i], b->in + at_in) < 0)
            return -1;
        at_in += (size_t)b->v[i].n_inputs;
    }
    s->vertices = b->v;
    s->n_vertices = (int)n;

    if (cfg && apply_config(cfg, opts, e, &k) < 0)
        return -1;
    e->status = 0;
    e->code[0] = '\0';
    return 0;
}

/* ------------------------------------------------------------- render -- */

/* new: a string value; invalid UTF-8 (e.g. from a plugin's error text) becomes '?'. */
static json_t *str_new(const char *s)
{
    if (!s)
        return json_null();
    json_t *v = json_string(s);
    if (v)
        return v;
    size_t n = strlen(s);
    char *c = core__xmalloc(n + 1);
    for (size_t i = 0; i <= n; i++)
        c[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    v = json_string(c);
    free(c);
    return v;
}

/* new: a real, or null when not finite. */
static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *json_render_evaluated(const struct core_evaluated *ev)
{
    json_t *o = json_object();
    for (int i = 0; i < CORE_N_FIGURES; i++) {
        double x = core_figure_get(ev, i);
        if (isfinite(x) || !(core_figures[i].flags & CORE_FIG_ASSESSED))
            json_object_set_new(o, core_figures[i].name, real_or_null(x));
    }
    return o;
}

/* Prints the finite x at p as jansson prints a real with JSON_REAL_PRECISION(15) (its
 * jsonp_dtostr): "%.15g", ".0" added when that reads as an integer, and the exponent without
 * '+' or leading zeros ("1e20", "1.5e-5"). Returns the length; p has room for 32. */
static size_t real15(char *p, double x)
{
    size_t n = (size_t)snprintf(p, 32, "%.15g", x);
    if (!strchr(p, '.') && !strchr(p, 'e')) {
        memcpy(p + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(p, 'e');
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        memmove(start, end, n + 1 - (size_t)(end - p));
        n -= (size_t)(end - start);
    }
    return n;
}

char *json_evaluated_text(const struct core_evaluated *ev)
{
    size_t cap = 3;
    for (int i = 0; i < CORE_N_FIGURES; i++)
        cap += strlen(core_figures[i].name) + 4 + 32; /* ,"name": and the number */
    char *t = xmalloc(cap), *p = t;
    *p++ = '{';
    for (int i = 0; i < CORE_N_FIGURES; i++) {
        double x = core_figure_get(ev, i);
        if (!isfinite(x) && (core_figures[i].flags & CORE_FIG_ASSESSED))
            continue;
        if (p > t + 1)
            *p++ = ',';
        p += sprintf(p, "\"%s\":", core_figures[i].name);
        if (isfinite(x))
            p += real15(p, x);
        else
            p += sprintf(p, "null");
    }
    memcpy(p, "}", 2);
    return t;
}

json_t *json_render_constraints(unsigned bits)
{
    json_t *a = json_array();
    for (int bit = 0; bit < CORE_C__COUNT; bit++)
        if (bits & (1u << bit))
            json_array_append_new(a, json_string(core_constraint_name(bit)));
    return a;
}

/* new: one vertex's decision, its fields as the core's table lists them. */
static json_t *render_vertex(const struct core_vdecision *v)
{
    json_t *o = json_object();
    for (int i = 0; i < core_n_vfields; i++) {
        const void *at = core_vfield_at(v, i);
        json_t *x = NULL;
        switch (core_vfields[i].type) {
        case CORE_VF_TEXT:
            x = *(const char *const *)at ? str_new(*(const char *const *)at) : NULL;
            break;
        case CORE_VF_INT:
            x = json_integer(*(const int *)at);
            break;
        case CORE_VF_BOOL:
            x = json_boolean(*(const bool *)at);
            break;
        case CORE_VF_REASON:
            x = json_string(core_reason_name(*(const enum core_reason *)at));
            break;
        case CORE_VF_CONSTRAINTS:
            x = json_render_constraints(*(const unsigned *)at);
            break;
        case CORE_VF_EVALUATED:
            x = json_render_evaluated(at);
            break;
        }
        if (x)
            json_object_set_new(o, core_vfields[i].name, x);
    }
    return o;
}

json_t *json_render_decision(const struct core_decision *d, const char *job,
                             const char *policy_revision, const char *config_hash)
{
    json_t *o = json_object();
    json_object_set_new(o, "job", str_new(job));
    json_object_set_new(o, "at", json_integer(d->at));
    json_object_set_new(o, "action", json_string(core_action_name(d->action)));
    json_object_set_new(o, "execute", json_boolean(d->execute));
    json_object_set_new(o, "reason", json_string(core_reason_name(d->reason)));
    json_object_set_new(o, "message", str_new(d->message ? d->message : ""));

    json_t *par = json_object();
    json_t *vs = json_array();
    for (int i = 0; i < d->n_vertices; i++) {
        const struct core_vdecision *v = &d->vertices[i];
        json_object_set_new(par, v->id, json_integer(v->target));
        json_array_append_new(vs, render_vertex(v));
    }
    json_object_set_new(o, "parallelism", par);
    json_object_set_new(o, "vertices", vs);

    json_t *evs = json_array();
    for (int i = 0; i < d->n_events; i++) {
        const struct core_event *ev = &d->events[i];
        json_t *je = json_object();
        json_object_set_new(je, "type", str_new(ev->type));
        json_object_set_new(je, "reason", str_new(ev->reason));
        json_object_set_new(je, "message", str_new(ev->message ? ev->message : ""));
        json_object_set_new(je, "count", json_integer(ev->count));
        json_object_set_new(je, "suppressed", json_boolean(ev->suppressed));
        json_array_append_new(evs, je);
    }
    json_object_set_new(o, "events", evs);

    if (d->n_config_changes > 0) {
        json_t *cc = json_object();
        for (int i = 0; i < d->n_config_changes; i++)
            json_object_set_new(cc, d->config_changes[i].key, str_new(d->config_changes[i].value));
        json_object_set_new(o, "config_changes", cc);
    }
    if (d->n_config_removals > 0) {
        json_t *cr = json_array();
        for (int i = 0; i < d->n_config_removals; i++)
            json_array_append_new(cr, str_new(d->config_removals[i]));
        json_object_set_new(o, "config_removals", cr);
    }
    json_object_set_new(o, "policy_revision", str_new(policy_revision));
    json_object_set_new(o, "config_hash", str_new(config_hash));
    return o;
}

/* -------------------------------------------------------------- state -- */

#define STATE_VERSION 1

/* The per-sample metric vectors are dumped as arrays in the order named by these lists,
 * which the dump carries too, so a later layout can read an older document by name. */
struct field {
    const char *name;
    size_t off;
};
static const struct field vfields[] = {
    {"load", offsetof(struct core_vmetrics, load)},
    {"load_avg", offsetof(struct core_vmetrics, load_avg)},
    {"load_max", offsetof(struct core_vmetrics, load_max)},
    {"acc_busy", offsetof(struct core_vmetrics, acc_busy)},
    {"rec_in", offsetof(struct core_vmetrics, rec_in)},
    {"rec_out", offsetof(struct core_vmetrics, rec_out)},
    {"rec_in_per_s", offsetof(struct core_vmetrics, rec_in_per_s)},
    {"lag", offsetof(struct core_vmetrics, lag)},
    {"observed_tpr", offsetof(struct core_vmetrics, observed_tpr)},
};
static const struct field gfields[] = {
    {"slots_used", offsetof(struct core_gmetrics, slots_used)},
    {"gc_pressure", offsetof(struct core_gmetrics, gc_pressure)},
    {"heap_used", offsetof(struct core_gmetrics, heap_used)},
    {"heap_ratio", offsetof(struct core_gmetrics, heap_ratio)},
    {"managed_used", offsetof(struct core_gmetrics, managed_used)},
    {"metaspace_used", offsetof(struct core_gmetrics, metaspace_used)},
};
#define N_VFIELDS  ((int)(sizeof vfields / sizeof vfields[0]))
#define N_GFIELDS  ((int)(sizeof gfields / sizeof gfields[0]))
#define MAX_FIELDS 64

/* new: a double that survives the text round trip exactly (given %.17g, jansson's default
 * precision): finite ones as reals, the others as "NaN" / "Infinity" / "-Infinity". */
static json_t *dbl_new(double x)
{
    if (isnan(x))
        return json_string("NaN");
    if (isinf(x))
        return json_string(x > 0 ? "Infinity" : "-Infinity");
    return json_real(x);
}

static json_t *names_new(const struct field *f, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(f[i].name));
    return a;
}

static json_t *doubles_new(const void *base, const struct field *f, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, dbl_new(*(const double *)((const char *)base + f[i].off)));
    return a;
}

/* What the window knows of each vertex's counters, its stabilization start, full-from
 * instant and topology hash; the rejected-sample count and the pending scaling. A document
 * written before these existed loads without them (ld_ext). */
static void dump_ext(json_t *o, json_t *jw, const struct core_state *st)
{
    const struct core_window *w = &st->w;
    if (st->rejected)
        json_object_set_new(o, "rejected", json_integer(st->rejected));
    if (st->pending.at != INT64_MIN) {
        json_t *pv = json_array();
        for (int i = 0; i < st->pending.n; i++)
            json_array_append_new(pv, json_pack("{s:o, s:i, s:i}", "id",
                                                str_new(st->pending.v[i].id), "from",
                                                st->pending.v[i].from, "to", st->pending.v[i].to));
        json_object_set_new(
            o, "pending",
            json_pack("{s:I, s:o}", "at", (json_int_t)st->pending.at, "vertices", pv));
    }
    if (w->n_vertices == 0)
        return; /* an empty window: nothing more to say */
    char hash[17];
    snprintf(hash, sizeof hash, "%016" PRIx64, w->topo_hash);
    json_object_set_new(jw, "started_at", json_integer(w->started_at));
    json_object_set_new(jw, "full_from", json_integer(w->full_from));
    json_object_set_new(jw, "topo_hash", json_string(hash));
    json_t *ctr = json_array();
    for (int i = 0; i < w->n_vertices; i++) {
        json_t *c = json_array();
        for (int k = 0; k < CORE_CTR__COUNT; k++) {
            /* a window built without them (by hand) knows no counters */
            struct core_wcounter wc =
                w->ctr ? w->ctr[i * CORE_CTR__COUNT + k] : (struct core_wcounter){NAN, 0.0};
            json_array_append_new(c, dbl_new(wc.sent));
            json_array_append_new(c, dbl_new(wc.offset));
        }
        json_array_append_new(ctr, c);
    }
    json_object_set_new(jw, "counters", ctr);
}

json_t *json_state_dump(const struct core_state *st)
{
    json_t *o = json_object();
    json_object_set_new(o, "version", json_integer(STATE_VERSION));
    json_object_set_new(o, "last_at", json_integer(st->last_at));

    const struct core_window *w = &st->w;
    json_t *jw = json_object();
    json_object_set_new(jw, "running_since", json_integer(w->running_since));
    json_object_set_new(jw, "seq0", json_integer(w->seq0));
    json_t *ids = json_array(), *par = json_array();
    for (int i = 0; i < w->n_vertices; i++) {
        json_array_append_new(ids, str_new(w->ids[i]));
        json_array_append_new(par, json_integer(w->parallelism[i]));
    }
    json_object_set_new(jw, "ids", ids);
    json_object_set_new(jw, "parallelism", par);
    json_object_set_new(jw, "vmetrics", names_new(vfields, N_VFIELDS));
    json_object_set_new(jw, "gmetrics", names_new(gfields, N_GFIELDS));
    json_t *samples = json_array();
    for (int i = 0; i < w->n; i++) {
        const struct core_wsample *s = &w->s[i];
        json_t *js = json_object();
        json_object_set_new(js, "at", json_integer(s->at));
        json_object_set_new(js, "g", doubles_new(&s->g, gfields, N_GFIELDS));
        json_t *v = json_array();
        for (int j = 0; j < w->n_vertices; j++)
            json_array_append_new(v, doubles_new(&s->v[j], vfields, N_VFIELDS));
        json_object_set_new(js, "v", v);
        json_array_append_new(samples, js);
    }
    json_object_set_new(jw, "samples", samples);
    json_object_set_new(o, "window", jw);

    json_t *hist = json_array();
    for (int i = 0; i < st->n_hist; i++) {
        const struct core_vhistory *h = &st->hist[i];
        json_t *jh = json_object(), *es = json_array();
        json_object_set_new(jh, "id", str_new(h->id));
        for (int j = 0; j < h->n; j++) {
            const struct core_hist_entry *e = &h->e[j];
            json_t *je = json_object();
            json_object_set_new(je, "at", json_integer(e->at));
            json_object_set_new(je, "current_parallelism", json_integer(e->current_parallelism));
            json_object_set_new(je, "new_parallelism", json_integer(e->new_parallelism));
            json_object_set_new(je, "true_processing_rate", dbl_new(e->true_processing_rate));
            json_object_set_new(je, "expected_processing_rate",
                                dbl_new(e->expected_processing_rate));
            json_object_set_new(je, "target_data_rate", dbl_new(e->target_data_rate));
            json_array_append_new(es, je);
        }
        json_object_set_new(jh, "entries", es);
        json_array_append_new(hist, jh);
    }
    json_object_set_new(o, "history", hist);

    json_t *track = json_array();
    for (int i = 0; i < st->n_track; i++) {
        json_t *jt = json_object();
        json_object_set_new(jt, "at", json_integer(st->track[i].at));
        json_object_set_new(jt, "restart_ms", json_integer(st->track[i].restart_ms));
        json_array_append_new(track, jt);
    }
    json_object_set_new(o, "tracking", track);

    json_t *delayed = json_array();
    for (int i = 0; i < st->n_delayed; i++) {
        const struct core_delayed *dl = &st->delayed[i];
        json_t *jd = json_object(), *rs = json_array();
        json_object_set_new(jd, "id", str_new(dl->id));
        json_object_set_new(jd, "first_trigger", json_integer(dl->first_trigger));
        for (int j = 0; j < dl->n; j++) {
            json_t *jr = json_object();
            json_object_set_new(jr, "at", json_integer(dl->r[j].at));
            json_object_set_new(jr, "parallelism", json_integer(dl->r[j].parallelism));
            json_object_set_new(jr, "outside_bounds", json_boolean(dl->r[j].outside_bounds));
            json_array_append_new(rs, jr);
        }
        json_object_set_new(jd, "records", rs);
        json_array_append_new(delayed, jd);
    }
    json_object_set_new(o, "delayed", delayed);

    json_t *events = json_array();
    for (int i = 0; i < st->n_events; i++) {
        const struct core_event_seen *ev = &st->events[i];
        json_t *je = json_object();
        json_object_set_new(je, "key", str_new(ev->key));
        json_object_set_new(je, "first_at", json_integer(ev->first_at));
        json_object_set_new(je, "last_at", json_integer(ev->last_at));
        json_object_set_new(je, "count", json_integer(ev->count));
        json_array_append_new(events, je);
    }
    json_object_set_new(o, "events", events);
    dump_ext(o, jw, st);
    return o;
}

/* ---- load: every getter is strict (present, right type), unknown keys are ignored ---- */

static int dbl_of(const struct sink *k, const json_t *v, const struct path *p, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (strcmp(s, "NaN") == 0) {
            *out = NAN;
            return 0;
        }
        if (strcmp(s, "Infinity") == 0) {
            *out = INFINITY;
            return 0;
        }
        if (strcmp(s, "-Infinity") == 0) {
            *out = -INFINITY;
            return 0;
        }
    }
    return fail(k, p, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\", got %s",
                type_name(v));
}

static int ld_dbl(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                  double *out)
{
    struct path p = {up, key, 0};
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(k, &p, "required");
    return dbl_of(k, v, &p, out);
}

static int ld_i64(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                  int64_t *out)
{
    struct path p = {up, key, 0};
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(k, &p, "required");
    if (!json_is_integer(v))
        return fail(k, &p, "expected an integer, got %s", type_name(v));
    *out = json_integer_value(v);
    return 0;
}

static int ld_int(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                  int lo, int *out)
{
    int64_t x;
    if (ld_i64(k, obj, up, key, &x) < 0)
        return -1;
    if (x < lo || x > INT_MAX) {
        struct path p = {up, key, 0};
        return fail(k, &p, "%" PRId64 " is out of range [%d, %d]", x, lo, INT_MAX);
    }
    *out = (int)x;
    return 0;
}

static int ld_bool(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                   bool *out)
{
    struct path p = {up, key, 0};
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(k, &p, "required");
    if (!json_is_boolean(v))
        return fail(k, &p, "expected a boolean, got %s", type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* A string, copied with core__strdup (new) into *out. */
static int ld_str(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                  char **out)
{
    struct path p = {up, key, 0};
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(k, &p, "required");
    if (!json_is_string(v))
        return fail(k, &p, "expected a string, got %s", type_name(v));
    *out = core__strdup(json_string_value(v));
    return 0;
}

static int ld_typed(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                    json_type t, const char *tname, json_t **out)
{
    struct path p = {up, key, 0};
    json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(k, &p, "required");
    if (json_typeof(v) != t)
        return fail(k, &p, "expected %s, got %s", tname, type_name(v));
    *out = v;
    return 0;
}

static int ld_array_len(const struct sink *k, const json_t *obj, const struct path *up,
                        const char *key, json_t **out)
{
    if (ld_typed(k, obj, up, key, JSON_ARRAY, "an array", out) < 0)
        return -1;
    if (json_array_size(*out) > INT_MAX / 4) {
        struct path p = {up, key, 0};
        return fail(k, &p, "too long");
    }
    return 0;
}

/* Maps a dumped name list to field offsets (-1: a name this build does not know). */
static int ld_columns(const struct sink *k, const json_t *names, const struct path *p,
                      const struct field *f, int n_fields, long *col, int *n_col)
{
    if (json_array_size(names) > MAX_FIELDS)
        return fail(k, p, "more than %d names", MAX_FIELDS);
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        struct path ep = {p, NULL, (int)i};
        if (!json_is_string(v))
            return fail(k, &ep, "expected a string, got %s", type_name(v));
        col[i] = -1;
        for (int j = 0; j < n_fields; j++)
            if (strcmp(f[j].name, json_string_value(v)) == 0)
                col[i] = (long)f[j].off;
    }
    *n_col = (int)json_array_size(names);
    return 0;
}

/* Fills the doubles at base from array a laid out by col; fields not listed stay NaN. */
static int ld_vector(const struct sink *k, const json_t *a, const struct path *p, const long *col,
                     int n_col, void *base, const struct field *f, int n_fields)
{
    for (int j = 0; j < n_fields; j++)
        *(double *)((char *)base + f[j].off) = NAN;
    if (!json_is_array(a) || (int)json_array_size(a) != n_col)
        return fail(k, p, "expected an array of %d numbers", n_col);
    for (int i = 0; i < n_col; i++) {
        struct path ep = {p, NULL, i};
        double x;
        if (dbl_of(k, json_array_get(a, (size_t)i), &ep, &x) < 0)
            return -1;
        if (col[i] >= 0)
            *(double *)((char *)base + col[i]) = x;
    }
    return 0;
}

static int ld_window(const struct sink *k, const json_t *jw, const struct path *wp,
                     struct core_window *w)
{
    json_t *ids, *par, *vnames, *gnames, *samples;
    /* seq0: absent in documents written before samples were numbered. */
    json_t *jseq = json_object_get(jw, "seq0");
    w->seq0 = json_is_integer(jseq) ? json_integer_value(jseq) : 0;
    if (ld_i64(k, jw, wp, "running_since", &w->running_since) < 0 ||
        ld_array_len(k, jw, wp, "ids", &ids) < 0 ||
        ld_array_len(k, jw, wp, "parallelism", &par) < 0 ||
        ld_array_len(k, jw, wp, "vmetrics", &vnames) < 0 ||
        ld_array_len(k, jw, wp, "gmetrics", &gnames) < 0 ||
        ld_array_len(k, jw, wp, "samples", &samples) < 0)
        return -1;
    int nv = (int)json_array_size(ids);
    if ((int)json_array_size(par) != nv) {
        struct path p = {wp, "parallelism", 0};
        return fail(k, &p, "has %zu entries for %d ids", json_array_size(par), nv);
    }
    /* All slots exist (NULL ids) before any is filled, so a failure releases cleanly. */
    w->ids = core__xcalloc((size_t)nv, sizeof *w->ids);
    w->parallelism = core__xcalloc((size_t)nv, sizeof *w->parallelism);
    w->n_vertices = nv;
    struct path ip = {wp, "ids", 0}, pp = {wp, "parallelism", 0};
    for (int i = 0; i < nv; i++) {
        struct path ep = {&ip, NULL, i}, epp = {&pp, NULL, i};
        const json_t *id = json_array_get(ids, (size_t)i), *p = json_array_get(par, (size_t)i);
        if (!json_is_string(id))
            return fail(k, &ep, "expected a string, got %s", type_name(id));
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > INT_MAX)
            return fail(k, &epp, "expected an integer >= 1");
        w->ids[i] = core__strdup(json_string_value(id));
        w->parallelism[i] = (int)json_integer_value(p);
    }

    long vcol[MAX_FIELDS], gcol[MAX_FIELDS];
    int n_vcol, n_gcol;
    struct path vnp = {wp, "vmetrics", 0}, gnp = {wp, "gmetrics", 0};
    if (ld_columns(k, vnames, &vnp, vfields, N_VFIELDS, vcol, &n_vcol) < 0 ||
        ld_columns(k, gnames, &gnp, gfields, N_GFIELDS, gcol, &n_gcol) < 0)
        return -1;

    struct path sp = {wp, "samples", 0};
    size_t i;
    json_t *js;
    json_array_foreach(samples, i, js)
    {
        struct path ep = {&sp, NULL, (int)i};
        if (!json_is_object(js))
            return fail(k, &ep, "expected an object, got %s", type_name(js));
        core__grow(&w->s, &w->cap, w->n + 1, sizeof *w->s);
        struct core_wsample *s = &w->s[w->n++];
        s->v = core__xcalloc((size_t)nv, sizeof *s->v);
        json_t *g, *v;
        if (ld_i64(k, js, &ep, "at", &s->at) < 0 ||
            ld_typed(k, js, &ep, "g", JSON_ARRAY, "an array", &g) < 0 ||
            ld_typed(k, js, &ep, "v", JSON_ARRAY, "an array", &v) < 0)
            return -1;
        struct path gp = {&ep, "g", 0}, vp = {&ep, "v", 0};
        if (ld_vector(k, g, &gp, gcol, n_gcol, &s->g, gfields, N_GFIELDS) < 0)
            return -1;
        if ((int)json_array_size(v) != nv)
            return fail(k, &vp, "has %zu entries for %d vertices", json_array_size(v), nv);
        for (int j = 0; j < nv; j++) {
            struct path evp = {&vp, NULL, j};
            if (ld_vector(k, json_array_get(v, (size_t)j), &evp, vcol, n_vcol, &s->v[j], vfields,
                          N_VFIELDS) < 0)
                return -1;
        }
    }
    return 0;
}

static int ld_history(const struct sink *k, const json_t *a, struct core_state *st)
{
    struct path hp = {NULL, "history", 0};
    size_t i;
    json_t *jh;
    json_array_foreach(a, i, jh)
    {
        struct path ep = {&hp, NULL, (int)i};
        if (!json_is_object(jh))
            return fail(k, &ep, "expected an object, got %s", type_name(jh));
        core__grow(&st->hist, &st->cap_hist, st->n_hist + 1, sizeof *st->hist);
        struct core_vhistory *h = &st->hist[st->n_hist++];
        json_t *es;
        if (ld_str(k, jh, &ep, "id", &h->id) < 0 || ld_array_len(k, jh, &ep, "entries", &es) < 0)
            return -1;
        struct path esp = {&ep, "entries", 0};
        size_t j;
        json_t *je;
        json_array_foreach(es, j, je)
        {
            struct path eep = {&esp, NULL, (int)j};
            if (!json_is_object(je))
                return fail(k, &eep, "expected an object, got %s", type_name(je));
            core__grow(&h->e, &h->cap, h->n + 1, sizeof *h->e);
            struct core_hist_entry *e = &h->e[h->n++];
            if (ld_i64(k, je, &eep, "at", &e->at) < 0 ||
                ld_int(k, je, &eep, "current_parallelism", 0, &e->current_parallelism) < 0 ||
                ld_int(k, je, &eep, "new_parallelism", 0, &e->new_parallelism) < 0 ||
                ld_dbl(k, je, &eep, "true_processing_rate", &e->true_processing_rate) < 0 ||
                ld_dbl(k, je, &eep, "expected_processing_rate", &e->expected_processing_rate) < 0 ||
                ld_dbl(k, je, &eep, "target_data_rate", &e->target_data_rate) < 0)
                return -1;
        }
    }
    return 0;
}

static int ld_tracking(const struct sink *k, const json_t *a, struct core_state *st)
{
    struct path tp = {NULL, "tracking", 0};
    size_t i;
    json_t *jt;
    json_array_foreach(a, i, jt)
    {
        struct path ep = {&tp, NULL, (int)i};
        if (!json_is_object(jt))
            return fail(k, &ep, "expected an object, got %s", type_name(jt));
        core__grow(&st->track, &st->cap_track, st->n_track + 1, sizeof *st->track);
        struct core_tracking *t = &st->track[st->n_track++];
        if (ld_i64(k, jt, &ep, "at", &t->at) < 0 ||
            ld_i64(k, jt, &ep, "restart_ms", &t->restart_ms) < 0)
            return -1;
    }
    return 0;
}

static int ld_delayed(const struct sink *k, const json_t *a, struct core_state *st)
{
    struct path dp = {NULL, "delayed", 0};
    size_t i;
    json_t *jd;
    json_array_foreach(a, i, jd)
    {
        struct path ep = {&dp, NULL, (int)i};
        if (!json_is_object(jd))
            return fail(k, &ep, "expected an object, got %s", type_name(jd));
        core__grow(&st->delayed, &st->cap_delayed, st->n_delayed + 1, sizeof *st->delayed);
        struct core_delayed *dl = &st->delayed[st->n_delayed++];
        json_t *rs;
        if (ld_str(k, jd, &ep, "id", &dl->id) < 0 ||
            ld_i64(k, jd, &ep, "first_trigger", &dl->first_trigger) < 0 ||
            ld_array_len(k, jd, &ep, "records", &rs) < 0)
            return -1;
        struct path rp = {&ep, "records", 0};
        size_t j;
        json_t *jr;
        json_array_foreach(rs, j, jr)
        {
            struct path rep = {&rp, NULL, (int)j};
            if (!json_is_object(jr))
                return fail(k, &rep, "expected an object, got %s", type_name(jr));
            core__grow(&dl->r, &dl->cap, dl->n + 1, sizeof *dl->r);
            struct core_delayed_rec *r = &dl->r[dl->n++];
            if (ld_i64(k, jr, &rep, "at", &r->at) < 0 ||
                ld_int(k, jr, &rep, "parallelism", 0, &r->parallelism) < 0 ||
                ld_bool(k, jr, &rep, "outside_bounds", &r->outside_bounds) < 0)
                return -1;
        }
    }
    return 0;
}

static int ld_events(const struct sink *k, const json_t *a, struct core_state *st)
{
    struct path evp = {NULL, "events", 0};
    size_t i;
    json_t *je;
    json_array_foreach(a, i, je)
    {
        struct path ep = {&evp, NULL, (int)i};
        if (!json_is_object(je))
            return fail(k, &ep, "expected an object, got %s", type_name(je));
        core__grow(&st->events, &st->cap_events, st->n_events + 1, sizeof *st->events);
        struct core_event_seen *ev = &st->events[st->n_events++];
        if (ld_str(k, je, &ep, "key", &ev->key) < 0 ||
            ld_i64(k, je, &ep, "first_at", &ev->first_at) < 0 ||
            ld_i64(k, je, &ep, "last_at", &ev->last_at) < 0 ||
            ld_int(k, je, &ep, "count", 0, &ev->count) < 0)
            return -1;
    }
    return 0;
}

/* The part of dump_ext; each key may be absent (a document written before it). */
static int ld_ext(const struct sink *k, const json_t *in, const json_t *jw, struct core_state *st)
{
    struct core_window *w = &st->w;
    struct path wp = {NULL, "window", 0};
    size_t nc = (size_t)w->n_vertices * CORE_CTR__COUNT;
    w->ctr = core__xcalloc(nc ? nc : 1, sizeof *w->ctr);
    for (size_t i = 0; i < nc; i++)
        w->ctr[i].sent = NAN;
    w->started_at = w->n_vertices ? w->running_since : INT64_MIN;
    if (json_object_get(jw, "started_at") && ld_i64(k, jw, &wp, "started_at", &w->started_at) < 0)
        return -1;
    if (json_object_get(jw, "full_from") && ld_i64(k, jw, &wp, "full_from", &w->full_from) < 0)
        return -1;
    const json_t *jh = json_object_get(jw, "topo_hash");
    if (jh) {
        struct path hp = {&wp, "topo_hash", 0};
        const char *hash = json_string_value(jh);
        char *end = NULL;
        if (hash)
            w->topo_hash = strtoull(hash, &end, 16);
        if (!hash || !*hash || *end || strlen(hash) != 16)
            return fail(k, &hp, "expected 16 hex digits");
    }
    const json_t *ctr = json_object_get(jw, "counters");
    if (ctr) {
        struct path cp = {&wp, "counters", 0};
        if (!json_is_array(ctr) || json_array_size(ctr) != (size_t)w->n_vertices)
            return fail(k, &cp, "expected an array of %d entries", w->n_vertices);
        for (int i = 0; i < w->n_vertices; i++) {
            struct path ep = {&cp, NULL, i};
            const json_t *c = json_array_get(ctr, (size_t)i);
            if (!json_is_array(c) || json_array_size(c) != 2 * CORE_CTR__COUNT)
                return fail(k, &ep, "expected an array of %d numbers", 2 * CORE_CTR__COUNT);
            for (int j = 0; j < CORE_CTR__COUNT; j++) {
                struct path sp = {&ep, NULL, 2 * j}, op = {&ep, NULL, 2 * j + 1};
                struct core_wcounter *wc = &w->ctr[i * CORE_CTR__COUNT + j];
                if (dbl_of(k, json_array_get(c, (size_t)(2 * j)), &sp, &wc->sent) < 0 ||
                    dbl_of(k, json_array_get(c, (size_t)(2 * j + 1)), &op, &wc->offset) < 0)
                    return -1;
            }
        }
    }
    if (json_object_get(in, "rejected") && ld_int(k, in, NULL, "rejected", 0, &st->rejected) < 0)
        return -1;
    const json_t *jp = json_object_get(in, "pending");
    if (!jp)
        return 0;
    struct path pp = {NULL, "pending", 0};
    json_t *vs;
    if (!json_is_object(jp))
        return fail(k, &pp, "expected an object, got %s", type_name(jp));
    if (ld_i64(k, jp, &pp, "at", &st->pending.at) < 0 ||
        ld_array_len(k, jp, &pp, "vertices", &vs) < 0)
        return -1;
    struct path vp = {&pp, "vertices", 0};
    size_t i;
    json_t *jv;
    json_array_foreach(vs, i, jv)
    {
        struct path ep = {&vp, NULL, (int)i};
        if (!json_is_object(jv))
            return fail(k, &ep, "expected an object, got %s", type_name(jv));
        core__grow(&st->pending.v, &st->pending.cap, st->pending.n + 1, sizeof *st->pending.v);
        struct core_pending_vertex *v = &st->pending.v[st->pending.n++];
        memset(v, 0, sizeof *v);
        if (ld_str(k, jv, &ep, "id", &v->id) < 0 || ld_int(k, jv, &ep, "from", 1, &v->from) < 0 ||
            ld_int(k, jv, &ep, "to", 1, &v->to) < 0)
            return -1;
    }
    return 0;
}

/*
 * Loads a json_state_dump document. Everything is allocated with the core's allocators as
 * it is read, with each array's count covering exactly what was filled, so on any error
 * core_state_clear releases the partial state; st is then empty (last_at INT64_MIN).
 */
int json_state_load(json_t *in, struct core_state *st, char *err, size_t err_len)
{
    char dummy[1];
    struct sink k = {err_len ? err : dummy, err_len ? err_len : sizeof dummy, NULL, 0};
    int rc = -1;
    core_state_clear(st);
    st->last_at = INT64_MIN;

    if (!json_is_object(in)) {
        fail(&k, NULL, "state: expected an object, got %s", type_name(in));
        goto out;
    }
    int64_t version;
    json_t *jw, *hist, *track, *delayed, *events;
    if (ld_i64(&k, in, NULL, "version", &version) < 0)
        goto out;
    if (version != STATE_VERSION) {
        struct path p = {NULL, "version", 0};
        fail(&k, &p, "unsupported state version %" PRId64 " (this build reads %d)", version,
             STATE_VERSION);
        goto out;
    }
    struct path wp = {NULL, "window", 0};
    if (ld_i64(&k, in, NULL, "last_at", &st->last_at) < 0 ||
        ld_typed(&k, in, NULL, "window", JSON_OBJECT, "an object", &jw) < 0 ||
        ld_array_len(&k, in, NULL, "history", &hist) < 0 ||
        ld_array_len(&k, in, NULL, "tracking", &track) < 0 ||
        ld_array_len(&k, in, NULL, "delayed", &delayed) < 0 ||
        ld_array_len(&k, in, NULL, "events", &events) < 0)
        goto out;
    if (ld_window(&k, jw, &wp, &st->w) < 0 || ld_history(&k, hist, st) < 0 ||
        ld_tracking(&k, track, st) < 0 || ld_delayed(&k, delayed, st) < 0 ||
        ld_events(&k, events, st) < 0 || ld_ext(&k, in, jw, st) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0) {
        core_state_clear(st);
        st->last_at = INT64_MIN;
    }
    return rc;
}
