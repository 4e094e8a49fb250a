/*
 * json.c - jansson in and out of the core: the decide request into a
 * struct core_sample, and a struct core_decision into the response object.
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
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decision/json.h"
#include "core/index.h"
#include "base/jarena.h"
#include "time/timeutil.h"
#include "base/xmem.h"

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

/* obj's member p->key into *v: NULL when absent or null, which is a failure when required. */
static int member(const struct sink *k, const json_t *obj, bool required, const struct path *p,
                  const json_t **v)
{
    *v = json_object_get(obj, p->key);
    if (*v && !json_is_null(*v))
        return 0;
    *v = NULL;
    return required ? fail(k, p, "required") : 0;
}

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
    struct path p = {up, key, 0};
    const json_t *v;
    int rc = member(k, obj, required, &p, &v);
    if (rc < 0 || !v)
        return rc;
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
    struct path p = {up, key, 0};
    const json_t *v;
    int rc = member(k, obj, required, &p, &v);
    if (rc < 0 || !v)
        return rc;
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

/*
 * Epoch numbers that read as seconds, not milliseconds: [1e8, 1e11). As seconds they are
 * 1973-03-03 to 5138, every date a client means; as milliseconds they would be 1970-01-02 to
 * 1973-03-03, which no job runs at. Below 1e8 a value stays milliseconds (tests and synthetic
 * traces count from the epoch), and an RFC 3339 string is never checked.
 */
#define SECONDS_LIKE_MIN 100000000LL    /* 1e8 */
#define SECONDS_LIKE_END 100000000000LL /* 1e11 */

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
        if (time_parse_rfc3339(s, &ms, NULL) < 0)
            return fail(k, &p,
                        "\"%.64s\" is not an RFC 3339 date-time "
                        "(e.g. 2025-11-29T10:00:00Z or 2025-11-29T11:00:00.250+01:00)",
                        s);
    } else {
        return fail(k, &p, "expected epoch milliseconds or an RFC 3339 string, got %s",
                    type_name(v));
    }
    if (ms > MS_MAX && ms / 1000 <= MS_MAX && !json_is_string(v))
        return fail(k, &p,
                    "%" PRId64 " is outside years 0000-9999 and reads as microseconds since the "
                    "epoch; epoch milliseconds are expected: %" PRId64,
                    ms, ms / 1000);
    if (ms < MS_MIN || ms > MS_MAX)
        return fail(k, &p, "%" PRId64 " is outside years 0000-9999", ms);
    if (!json_is_string(v) && ms >= SECONDS_LIKE_MIN && ms < SECONDS_LIKE_END) {
        /* The commonest client bug: seconds, which as milliseconds are early 1970 and would
         * keep the job collecting metrics for ever. Said with the value it would be. */
        int64_t y, sod = ms % 86400;
        int mo, d;
        time_civil_from_days(ms / 86400, &y, &mo, &d);
        return fail(k, &p,
                    "%" PRId64 " reads as seconds since the epoch (%04" PRId64
                    "-%02d-%02dT%02d:%02d:%02dZ); epoch milliseconds are expected: %" PRId64 "000",
                    ms, y, mo, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), ms);
    }
    *out = ms;
    return 0;
}

/* ------------------------------------------------------------- sample -- */

struct sample_buf {
    struct core_vertex_in *v;
    int cap_v;
    struct core_input *in;
    int cap_in;
    struct core_batch_stage *st; /* "mode": "BATCH" */
    int cap_st;
};

void json_sample_init(struct json_sample *js)
{
    memset(js, 0, sizeof *js);
    js->priv = xcalloc(1, sizeof(struct sample_buf));
}

/* Makes *arr (elements of elem bytes, *cap of them) hold need: the buffers only grow, and
 * every element is filled by the parser before it is read. */
static void reserve(void *arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return;
    *(void **)arr = xrealloc(*(void **)arr, (size_t)need * elem);
    *cap = need;
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
        free(b->st);
        free(b);
    }
    memset(js, 0, sizeof *js);
}

/* A size past its limit: 413 naming the field (p) and the limit, and the option that sets it
 * (a server option, or NULL: a fixed limit). -1. */
static int over(struct json_err *e, const struct sink *k, const struct path *p, long long n,
                const char *what, long long limit, const char *option)
{
    if (option)
        fail(k, p, "%lld %s is more than the limit of %lld (the server option %s)", n, what, limit,
             option);
    else
        fail(k, p, "%lld %s is more than the limit of %lld", n, what, limit);
    e->status = 413;
    snprintf(e->code, sizeof e->code, "PAYLOAD_TOO_LARGE");
    return -1;
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

int json_default_max_parallelism(int p)
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

bool json_valid_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e || n >= OPT_MAX_ID_LEN)
            return false;
    return n >= 1;
}

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
         * may put them up to JSON_BUSY_SLACK apart the wrong way: that is rounding, and avg is
         * moved back between them. */
        if (v->busy_min > v->busy_max + JSON_BUSY_SLACK) {
            struct path p = {&bp, "min", 0};
            return fail(k, &p, "%g is above max %g", v->busy_min, v->busy_max);
        }
        if (v->busy_min > v->busy_max)
            v->busy_min = v->busy_max;
        if (v->busy_avg < v->busy_min - JSON_BUSY_SLACK ||
            v->busy_avg > v->busy_max + JSON_BUSY_SLACK) {
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
    if (!json_valid_id(v->id)) {
        struct path p = {vp, "id", 0};
        return fail(k, &p, "must be 1 to %d printable ASCII characters without spaces",
                    OPT_MAX_ID_LEN);
    }
    v->max_parallelism = 0;
    if (get_int(k, jv, vp, "parallelism", true, 1, &v->parallelism) < 0 ||
        get_int(k, jv, vp, "max_parallelism", false, 1, &v->max_parallelism) < 0 ||
        get_int(k, jv, vp, "partitions", false, 0, &v->partitions) < 0 ||
        get_string(k, jv, vp, "slot_sharing_group", false, &v->slot_sharing_group) < 0 ||
        get_bool(k, jv, vp, "finished", &v->finished) < 0)
        return -1;
    if (v->max_parallelism == 0) {
        v->max_parallelism = json_default_max_parallelism(v->parallelism);
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
static int apply_config(json_t *cfg, struct opt_job *opts, const struct opt_limits *lim,
                        struct json_err *e, const struct sink *k)
{
    struct path cp = {NULL, "config", 0};
    if (lim && json_object_size(cfg) > (size_t)lim->config_keys)
        return over(e, k, &cp, (long long)json_object_size(cfg), "keys", lim->config_keys,
                    "max-config-keys");
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

static int parse_batch(const struct sink *k, json_t *body, struct core_sample *s,
                       struct sample_buf *b, struct opt_job *opts, const struct opt_limits *lim,
                       struct json_err *e);

/*
 * Parses a decide request. Fields, defaults and limits:
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
        b = js->priv = xcalloc(1, sizeof *b);

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
    const char *mode = NULL;
    if (get_string(&k, body, NULL, "mode", false, &mode) < 0)
        return -1;
    if (mode && strcasecmp(mode, "BATCH") == 0)
        return parse_batch(&k, body, s, b, opts, js->limits, e);
    if (mode && strcasecmp(mode, "STREAMING") != 0) {
        struct path p = {NULL, "mode", 0};
        return fail(&k, &p, "must be \"STREAMING\" (the default) or \"BATCH\", got \"%.64s\"",
                    mode);
    }

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
    const struct opt_limits *lim = js->limits;
    if (lim && n > (size_t)lim->vertices)
        return over(e, &k, &vsp, (long long)n, "vertices", lim->vertices, "max-vertices");
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
        if (lim && n_in > (size_t)lim->edges) {
            struct path vp = {&vsp, NULL, (int)i}, ip = {&vp, "inputs", 0};
            return over(e, &k, &ip, (long long)n_in, "inputs in all (up to this vertex)",
                        lim->edges, "max-edges");
        }
    }
    if (n_in > INT_MAX / 2)
        return fail(&k, &vsp, "too many inputs");
    reserve(&b->v, &b->cap_v, (int)n, sizeof *b->v);
    reserve(&b->in, &b->cap_in, (int)n_in, sizeof *b->in);

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

    if (cfg && apply_config(cfg, opts, js->limits, e, &k) < 0)
        return -1;
    e->status = 0;
    e->code[0] = '\0';
    return 0;
}

int json_apply_config(json_t *body, struct opt_job *opts, struct json_err *e)
{
    struct sink k;
    init_err(e, &k);
    json_t *cfg = json_object_get(body, "config");
    if (json_is_object(cfg) && apply_config(cfg, opts, NULL, e, &k) < 0)
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
    char *c = xmalloc(n + 1);
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

/* Writes the decimal digits of v at p; returns their count. */
static size_t uint_text(char *p, unsigned long long v)
{
    char t[24];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        p[i] = t[n - 1 - i];
    return n;
}

/* Writes v as "%lld" (jansson's JSON_INTEGER_FORMAT) at p; returns the length. */
static size_t int_text(char *p, long long v)
{
    if (v >= 0)
        return uint_text(p, (unsigned long long)v);
    *p = '-';
    return 1 + uint_text(p + 1, 0ULL - (unsigned long long)v);
}

/*
 * Prints the finite x at p as jansson prints a real with JSON_REAL_PRECISION(15) (its
 * jsonp_dtostr): "%.15g", ".0" added when that reads as an integer, and the exponent without
 * '+' or leading zeros ("1e20", "1.5e-5"). Returns the length; p has room for 32.
 *
 * The core rounds its figures to 3 decimals: when x is the double nearest to k / 1000 for an
 * integer k with |k| < 1e15 (15 digits), "%.15g" prints exactly k / 1000 (the double is
 * within 2^-53 of it, well inside half a unit of the 15th digit) without an exponent, so it
 * is written here digit by digit; anything else goes through snprintf.
 */
static size_t real15(char *p, double x)
{
    if (fabs(x) < 1e12 && x != 0) {
        double r = nearbyint(x * 1000.0);
        long long k = (long long)r;
        if ((double)k / 1000.0 == x) {
            size_t n = 0;
            unsigned long long a = k < 0 ? 0ULL - (unsigned long long)k : (unsigned long long)k;
            unsigned f = (unsigned)(a % 1000);
            if (k < 0)
                p[n++] = '-';
            n += uint_text(p + n, a / 1000);
            p[n++] = '.';
            if (f == 0) {
                p[n++] = '0';
            } else {
                p[n++] = (char)('0' + f / 100);
                if (f % 100) {
                    p[n++] = (char)('0' + f / 10 % 10);
                    if (f % 10)
                        p[n++] = (char)('0' + f % 10);
                }
            }
            p[n] = '\0';
            return n;
        }
    }
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

/* Room for the text of one evaluated object: every figure with its name. */
static size_t evaluated_room(void)
{
    size_t cap = 3;
    for (int i = 0; i < CORE_N_FIGURES; i++)
        cap += strlen(core_figures[i].name) + 4 + 32; /* ,"name": and the number */
    return cap;
}

/* Prints ev's object at t (evaluated_room() bytes); returns the length. */
static size_t evaluated_print(char *t, const struct core_evaluated *ev)
{
    char *p = t;
    *p++ = '{';
    for (int i = 0; i < CORE_N_FIGURES; i++) {
        double x = core_figure_get(ev, i);
        if (!isfinite(x) && (core_figures[i].flags & CORE_FIG_ASSESSED))
            continue;
        if (p > t + 1)
            *p++ = ',';
        size_t kn = strlen(core_figures[i].name);
        *p++ = '"';
        memcpy(p, core_figures[i].name, kn);
        p += kn;
        *p++ = '"';
        *p++ = ':';
        if (isfinite(x)) {
            p += real15(p, x);
        } else {
            memcpy(p, "null", 4);
            p += 4;
        }
    }
    *p++ = '}';
    *p = '\0';
    return (size_t)(p - t);
}

char *json_evaluated_text(const struct core_evaluated *ev)
{
    char *t = xmalloc(evaluated_room());
    evaluated_print(t, ev);
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

/* --------------------------------------------------------------- batch -- */

static const char *const stage_states[] = {"PENDING", "RUNNING", "DONE"};

/* One stage's `batch` object into *st. */
static int parse_stage(const struct sink *k, const json_t *jb, const struct path *bp,
                       struct core_batch_stage *st)
{
    const char *state = "RUNNING", *unit = NULL;
    double fraction = NAN;
    st->total = st->done = st->busy_s = st->remaining_parallelism = st->fixed_shards = NAN;
    if (get_string(k, jb, bp, "state", false, &state) < 0 ||
        get_string(k, jb, bp, "unit", false, &unit) < 0 ||
        get_number(k, jb, bp, "total_work", 0, INFINITY, &st->total) < 0 ||
        get_number(k, jb, bp, "work_done", 0, INFINITY, &st->done) < 0 ||
        get_number(k, jb, bp, "fraction_consumed", 0, 1, &fraction) < 0 ||
        get_number(k, jb, bp, "busy_s", 0, INFINITY, &st->busy_s) < 0 ||
        get_number(k, jb, bp, "remaining_parallelism", 0, INFINITY, &st->remaining_parallelism) <
            0 ||
        get_number(k, jb, bp, "fixed_shards", 1, INFINITY, &st->fixed_shards) < 0)
        return -1;
    int i = 0;
    while (i < 3 && strcasecmp(state, stage_states[i]) != 0)
        i++;
    if (i == 3) {
        struct path p = {bp, "state", 0};
        return fail(k, &p, "must be PENDING, RUNNING or DONE, got \"%.64s\"", state);
    }
    st->state = (enum core_batch_stage_state)i;
    /* A fraction consumed stands for the work when no amounts are sent. */
    if (!isnan(fraction) && isnan(st->total) && isnan(st->done)) {
        st->total = 1;
        st->done = fraction;
    } else if (!isnan(fraction) && isnan(st->done)) {
        st->done = fraction * st->total;
    }
    if (!isnan(st->done) && !isnan(st->total) && st->done > st->total) {
        struct path p = {bp, "work_done", 0};
        return fail(k, &p, "%.17g is above total_work %.17g", st->done, st->total);
    }
    if (st->state == CORE_BATCH_RUNNING && isnan(st->total)) {
        struct path p = {bp, "total_work", 0};
        return fail(k, &p, "required for a RUNNING stage (or fraction_consumed)");
    }
    if (isnan(st->done))
        st->done = st->state == CORE_BATCH_DONE && !isnan(st->total) ? st->total : 0;
    if (isnan(st->total))
        st->total = st->done;
    return 0;
}

/*
 * The rest of a decide request in batch mode: `workers` (current >= 0, the pool; running >= 0,
 * the workers up and working, and requested >= 0, the pool asked of the cluster, running <=
 * requested; current is required unless one of those is sent, and is then requested, else
 * running; slots_per_worker >= 1, cpu_utilization in [0, 1], shuffle_on_workers) and
 * `vertices`, each
 * with an id and a `batch` object: state PENDING | RUNNING (default) | DONE, total_work and
 * work_done >= 0 with work_done <= total_work, or fraction_consumed in [0, 1] (the work's share
 * when no amounts are sent), busy_s >= 0, remaining_parallelism >= 0, fixed_shards >= 1. A
 * RUNNING stage needs its total. `config` as in streaming mode.
 */
/* Stage vp (jv) into st: its id (dup: an earlier stage has it), its batch fields. */
static int parse_stage_entry(const struct sink *k, const json_t *jv, const struct path *vp,
                             bool dup, struct core_batch_stage *st)
{
    struct path bp = {vp, "batch", 0}, ip = {vp, "id", 0};
    json_t *jb;
    if (!json_is_object(jv))
        return fail(k, vp, "expected an object, got %s", type_name(jv));
    st->id = NULL;
    if (get_string(k, jv, vp, "id", true, &st->id) < 0)
        return -1;
    if (!json_valid_id(st->id))
        return fail(k, &ip, "must be 1-%d printable ASCII characters without spaces",
                    OPT_MAX_ID_LEN);
    if (dup)
        return fail(k, &ip, "duplicate stage id \"%s\"", st->id);
    if (get_typed(k, jv, vp, "batch", JSON_OBJECT, "an object", &jb) < 0)
        return -1;
    if (!jb)
        return fail(k, &bp, "required in batch mode");
    return parse_stage(k, jb, &bp, st);
}

/* new: for each element of arr, whether its "id" (a string) repeats an earlier element's;
 * n log n (the ids sorted), not the pairs. */
static bool *repeated_ids(const json_t *arr)
{
    size_t n = json_array_size(arr), m = n ? n : 1;
    const char **ids = xcalloc(m, sizeof *ids);
    int *perm = xmalloc(m * sizeof *perm), *tmp = xmalloc(m * sizeof *tmp);
    bool *dup = xcalloc(m, sizeof *dup);
    for (size_t i = 0; i < n; i++)
        ids[i] = json_string_value(json_object_get(json_array_get(arr, i), "id"));
    struct core_index x;
    core_index_build(&x, ids, sizeof *ids, 0, (int)n, perm, tmp);
    for (size_t i = 0; i < n; i++)
        dup[i] = ids[i] && core_index_find(&x, ids[i]) < (int)i;
    free(ids);
    free(perm);
    free(tmp);
    return dup;
}

static int parse_batch(const struct sink *k, json_t *body, struct core_sample *s,
                       struct sample_buf *b, struct opt_job *opts, const struct opt_limits *lim,
                       struct json_err *e)
{
    json_t *jw, *cfg, *verts;
    struct core_batch_in *in = &s->batch;
    s->batch_mode = true;
    if (get_typed(k, body, NULL, "workers", JSON_OBJECT, "an object", &jw) < 0 ||
        get_typed(k, body, NULL, "config", JSON_OBJECT, "an object", &cfg) < 0 ||
        get_typed(k, body, NULL, "vertices", JSON_ARRAY, "an array", &verts) < 0)
        return -1;
    struct path wp = {NULL, "workers", 0};
    if (!jw)
        return fail(k, &wp, "required in batch mode");
    in->slots_per_worker = 1;
    in->cpu = NAN;
    in->workers = in->running = in->requested = -1;
    if (get_int(k, jw, &wp, "current", false, 0, &in->workers) < 0 ||
        get_int(k, jw, &wp, "running", false, 0, &in->running) < 0 ||
        get_int(k, jw, &wp, "requested", false, 0, &in->requested) < 0 ||
        get_int(k, jw, &wp, "slots_per_worker", false, 1, &in->slots_per_worker) < 0 ||
        get_number(k, jw, &wp, "cpu_utilization", 0, 1, &in->cpu) < 0 ||
        get_bool(k, jw, &wp, "shuffle_on_workers", &in->shuffle_on_workers) < 0)
        return -1;
    in->has_running = in->running >= 0;
    in->has_requested = in->requested >= 0;
    if (in->workers < 0) {
        /* The pool is what was asked for, or what runs, when the sample says only those. */
        struct path cp = {&wp, "current", 0};
        if (!in->has_running && !in->has_requested)
            return fail(k, &cp, "required (or running and requested)");
        in->workers = in->has_requested ? in->requested : in->running;
    }
    if (in->has_running && in->has_requested && in->running > in->requested) {
        struct path rp = {&wp, "running", 0};
        return fail(k, &rp, "%d is more than the %d worker%s requested", in->running, in->requested,
                    in->requested == 1 ? "" : "s");
    }
    struct path vsp = {NULL, "vertices", 0};
    if (!verts)
        return fail(k, &vsp, "required");
    size_t n = json_array_size(verts), i;
    if (n == 0)
        return fail(k, &vsp, "must list at least one stage");
    if (lim && n > (size_t)lim->vertices)
        return over(e, k, &vsp, (long long)n, "stages", lim->vertices, "max-vertices");
    if (n > INT_MAX / 2)
        return fail(k, &vsp, "too many stages");
    reserve(&b->st, &b->cap_st, (int)n, sizeof *b->st);
    json_t *jv;
    bool *dup = repeated_ids(verts);
    int rc = 0;
    json_array_foreach(verts, i, jv)
    {
        struct path vp = {&vsp, NULL, (int)i};
        if ((rc = parse_stage_entry(k, jv, &vp, dup[i], &b->st[i])) < 0)
            break;
    }
    free(dup);
    if (rc < 0)
        return -1;
    in->stages = b->st;
    in->n_stages = (int)n;
    if (cfg && apply_config(cfg, opts, lim, e, k) < 0)
        return -1;
    e->status = 0;
    e->code[0] = '\0';
    return 0;
}

/* new: a batch decision's figures (core/README.md, Batch: figures), null when undefined. */
static json_t *batch_evaluated(const struct core_batch_decision *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "remaining_worker_seconds", real_or_null(d->remaining_worker_seconds));
    json_object_set_new(o, "worker_seconds_spent", real_or_null(d->worker_seconds_spent));
    json_object_set_new(o, "eta_s", real_or_null(d->eta_s));
    json_object_set_new(o, "eta_current_s", real_or_null(d->eta_current_s));
    json_object_set_new(o, "cap_workers", real_or_null(d->cap_workers));
    return o;
}

json_t *json_render_batch_constraints(unsigned bits)
{
    json_t *a = json_array();
    for (int i = 0; i < CORE_BC__COUNT; i++)
        if (bits & (1u << i))
            json_array_append_new(a, json_string(core_batch_constraint_name(i)));
    return a;
}

char *json_batch_evaluated_text(const struct core_batch_decision *d)
{
    json_t *o = batch_evaluated(d);
    char *t = jarena_dump(o); /* inside the request's arena too */
    json_decref(o);
    return t;
}

json_t *json_render_batch(const struct core_batch_decision *d, const char *job,
                          const char *policy_revision, const char *config_hash)
{
    json_t *o = json_object();
    json_object_set_new(o, "job", str_new(job));
    json_object_set_new(o, "at", json_integer(d->at));
    json_object_set_new(o, "mode", json_string("BATCH"));
    json_object_set_new(o, "action", json_string(core_action_name(d->action)));
    json_object_set_new(o, "execute", json_boolean(d->execute));
    json_object_set_new(o, "reason", json_string(core_reason_name(d->reason)));
    json_object_set_new(o, "message", str_new(d->message));
    json_object_set_new(o, "parallelism", json_object());
    json_t *w = json_object();
    json_object_set_new(w, "current", json_integer(d->current));
    json_object_set_new(w, "running", d->running >= 0 ? json_integer(d->running) : json_null());
    json_object_set_new(w, "target", json_integer(d->target));
    json_object_set_new(w, "raw", json_integer(d->raw));
    json_object_set_new(w, "min", json_integer(d->min));
    json_object_set_new(w, "max", json_integer(d->max));
    json_object_set_new(w, "constraints", json_render_batch_constraints(d->constraints));
    json_object_set_new(o, "workers", w);
    json_object_set_new(o, "evaluated", batch_evaluated(d));
    json_t *ev = json_array();
    for (int i = 0; i < d->n_warnings && i < CORE_BATCH_WARNINGS; i++)
        json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:i, s:b}", "type", "Warning",
                                            "reason", d->warnings[i].reason, "message",
                                            d->warnings[i].message, "count", 1, "suppressed", 0));
    json_object_set_new(o, "events", ev);
    json_object_set_new(o, "policy_revision", str_new(policy_revision));
    json_object_set_new(o, "config_hash", str_new(config_hash));
    return o;
}

/* ----------------------------------------------------------- rebalance -- */

void json_rebalance_deinit(struct json_rebalance *jr)
{
    free(jr->items);
    memset(jr, 0, sizeof *jr);
}

static const char *const cause_names[] = {"UNSPLITTABLE_SOURCE", "FIXED_SHARDS", "FUSED_STAGE"};

/* One item (items[i], or workers[w].items[i]) into *it. */
static int parse_item(const struct sink *k, const json_t *ji, const struct path *ip,
                      struct core_rebalance_item *it)
{
    bool splittable = true;
    const char *cause = NULL;
    if (!json_is_object(ji))
        return fail(k, ip, "expected an object, got %s", type_name(ji));
    it->id = NULL;
    it->remaining = it->rate = NAN;
    it->fraction_consumed = 0;
    it->remaining_parallelism = NAN;
    it->cause = CORE_SPLIT_OK;
    if (get_string(k, ji, ip, "id", true, &it->id) < 0 ||
        get_number(k, ji, ip, "remaining", 0, INFINITY, &it->remaining) < 0 ||
        get_number(k, ji, ip, "rate", 0, INFINITY, &it->rate) < 0 ||
        get_number(k, ji, ip, "fraction_consumed", 0, 1, &it->fraction_consumed) < 0 ||
        get_number(k, ji, ip, "remaining_parallelism", 0, INFINITY, &it->remaining_parallelism) <
            0 ||
        get_bool(k, ji, ip, "splittable", &splittable) < 0 ||
        get_string(k, ji, ip, "cause", false, &cause) < 0)
        return -1;
    if (isnan(it->remaining)) {
        struct path p = {ip, "remaining", 0};
        return fail(k, &p, "required");
    }
    if (isnan(it->rate)) {
        struct path p = {ip, "rate", 0};
        return fail(k, &p, "required (0: the worker is stuck)");
    }
    if (it->fraction_consumed == 1 && it->remaining > 0) {
        /* Split points are fractions of the item's range: none is left after 1. */
        struct path p = {ip, "fraction_consumed", 0};
        return fail(k, &p,
                    "1 says the whole range is consumed, but remaining is %.17g: send the share "
                    "of the item's range consumed so far (below 1) or leave it out",
                    it->remaining);
    }
    if (cause) {
        int c = 0;
        while (c < 3 && strcasecmp(cause, cause_names[c]) != 0)
            c++;
        if (c == 3) {
            struct path p = {ip, "cause", 0};
            return fail(k, &p,
                        "must be UNSPLITTABLE_SOURCE, FIXED_SHARDS or FUSED_STAGE, got \"%.64s\"",
                        cause);
        }
        it->cause = (enum core_split_cause)(CORE_SPLIT_UNSPLITTABLE_SOURCE + c);
    } else if (!splittable) {
        it->cause = CORE_SPLIT_UNSPLITTABLE_SOURCE;
    }
    return 0;
}

/* The number of items of a `workers` array, each worker's items checked to be a non-empty
 * array; -1 via fail. */
static int count_worker_items(const struct sink *k, const json_t *ws, const struct path *wsp,
                              const struct opt_limits *lim, struct json_err *e)
{
    size_t i, n = 0;
    const json_t *w;
    json_array_foreach(ws, i, w)
    {
        struct path wp = {wsp, NULL, (int)i}, ip = {&wp, "items", 0};
        const json_t *items = json_is_object(w) ? json_object_get(w, "items") : NULL;
        if (!json_is_object(w))
            return fail(k, &wp, "expected an object, got %s", type_name(w));
        if (!items || !json_is_array(items) || json_array_size(items) == 0)
            return fail(k, &ip, "a worker must list at least one item");
        n += json_array_size(items);
        if (lim && n > (size_t)lim->rebalance_items)
            return over(e, k, &ip, (long long)n, "items in all (up to this worker)",
                        lim->rebalance_items, "max-rebalance-items");
        if (n > INT_MAX / 2)
            return fail(k, wsp, "too many items");
    }
    return (int)n;
}

/*
 * The rebalance request: `at` (default now_ms), `stage`, `unit`, idle_slots (int
 * >= 0, default 0), startup_s and min_piece (>= 0, default 0), nominal_rate (> 0, default the
 * items' mean rate), and the items: `items` (one per worker) or `workers` [{id, items}], each
 * worker with at least one. An item: id, remaining >= 0, rate >= 0 (0: stuck), fraction_consumed in
 * [0, 1], remaining_parallelism >= 0, splittable (default true), cause (why not). Strings are
 * borrowed from body. 0, or -1 with *e filled.
 */
int json_parse_rebalance(json_t *body, int64_t now_ms, struct json_rebalance *jr,
                         struct json_err *e)
{
    struct sink k;
    json_t *items, *workers;
    init_err(e, &k);
    if (!json_is_object(body))
        return fail(&k, NULL, "the request body must be a JSON object, got %s", type_name(body));
    jr->at = now_ms;
    jr->stage = jr->unit = NULL;
    memset(&jr->in, 0, sizeof jr->in);
    jr->in.nominal_rate = NAN;
    if (get_time(&k, body, "at", &jr->at) < 0 ||
        get_string(&k, body, NULL, "stage", false, &jr->stage) < 0 ||
        get_string(&k, body, NULL, "unit", false, &jr->unit) < 0 ||
        get_int(&k, body, NULL, "idle_slots", false, 0, &jr->in.idle_slots) < 0 ||
        get_number(&k, body, NULL, "startup_s", 0, INFINITY, &jr->in.startup_s) < 0 ||
        get_number(&k, body, NULL, "min_piece", 0, INFINITY, &jr->in.min_piece) < 0 ||
        get_number(&k, body, NULL, "nominal_rate", 0, INFINITY, &jr->in.nominal_rate) < 0 ||
        get_typed(&k, body, NULL, "items", JSON_ARRAY, "an array", &items) < 0 ||
        get_typed(&k, body, NULL, "workers", JSON_ARRAY, "an array", &workers) < 0)
        return -1;
    struct path isp = {NULL, "items", 0}, wsp = {NULL, "workers", 0};
    if (items && workers)
        return fail(&k, &wsp, "send items or workers, not both");
    if (!items && !workers)
        return fail(&k, &isp, "required (or workers)");
    if (jr->in.nominal_rate == 0) {
        struct path p = {NULL, "nominal_rate", 0};
        return fail(&k, &p, "must be above 0");
    }
    if (jr->in.idle_slots > OPT_MAX_IDLE_SLOTS) {
        struct path p = {NULL, "idle_slots", 0};
        return fail(&k, &p, "%d is more than the limit of %d", jr->in.idle_slots,
                    OPT_MAX_IDLE_SLOTS);
    }
    const struct opt_limits *lim = jr->limits;
    if (items && lim && json_array_size(items) > (size_t)lim->rebalance_items)
        return over(e, &k, &isp, (long long)json_array_size(items), "items", lim->rebalance_items,
                    "max-rebalance-items");
    int n = items ? (int)json_array_size(items) : count_worker_items(&k, workers, &wsp, lim, e);
    if (n < 0)
        return -1;
    if (n == 0)
        return fail(&k, &isp, "must list at least one item");
    if (n > INT_MAX / 2)
        return fail(&k, &isp, "too many items");
    reserve(&jr->items, &jr->cap, n, sizeof *jr->items);
    size_t i, j;
    json_t *ji, *jw;
    int at = 0;
    if (items) {
        json_array_foreach(items, i, ji)
        {
            struct path ip = {&isp, NULL, (int)i};
            if (parse_item(&k, ji, &ip, &jr->items[at++]) < 0)
                return -1;
        }
    } else {
        json_array_foreach(workers, j, jw)
        {
            struct path wp = {&wsp, NULL, (int)j}, wip = {&wp, "items", 0};
            json_array_foreach(json_object_get(jw, "items"), i, ji)
            {
                struct path ip = {&wip, NULL, (int)i};
                if (parse_item(&k, ji, &ip, &jr->items[at++]) < 0)
                    return -1;
            }
        }
    }
    if (isnan(jr->in.nominal_rate)) {
        double sum = 0;
        for (int m = 0; m < n; m++)
            sum += jr->items[m].rate;
        jr->in.nominal_rate = sum / n;
    }
    jr->in.items = jr->items;
    jr->in.n_items = n;
    e->status = 0;
    e->code[0] = '\0';
    return 0;
}

/* "400.0 s", or "never" (+inf: a stuck item). */
static void fmt_seconds(char *buf, size_t n, double s)
{
    if (isinf(s))
        snprintf(buf, n, "never");
    else
        snprintf(buf, n, "%.1f s", s);
}

json_t *json_render_rebalance(const struct json_rebalance *jr, const struct core_rebalance_out *o,
                              const char *job, int reason, const char *message)
{
    json_t *r = json_object();
    json_object_set_new(r, "job", str_new(job));
    json_object_set_new(r, "at", json_integer(jr->at));
    json_object_set_new(r, "stage", str_new(jr->stage));
    json_object_set_new(r, "action", json_string("REBALANCE"));
    json_object_set_new(r, "execute", json_false());
    json_object_set_new(r, "reason", json_string(core_reason_name(reason)));
    json_object_set_new(r, "message", str_new(message));
    json_object_set_new(r, "target_finish_s", real_or_null(o->target_finish_s));
    json_object_set_new(r, "makespan_before_s", real_or_null(o->makespan_before_s));
    json_object_set_new(r, "makespan_after_s", real_or_null(o->makespan_after_s));
    json_object_set_new(r, "free_finish_s", real_or_null(o->free_finish_s));
    json_object_set_new(r, "held_by",
                        o->holder >= 0 ? str_new(jr->items[o->holder].id) : json_null());
    json_object_set_new(r, "slots_used", json_integer(o->slots_used));
    json_t *splits = json_array();
    for (int i = 0; i < o->n_splits; i++) {
        const struct core_rebalance_split *s = &o->splits[i];
        const struct core_rebalance_item *it = &jr->items[s->item];
        /* The pieces are equal: where the first starts and how wide each is (of the item's
         * whole range) say where every one starts, so the answer is as long as the items
         * whatever the idle slots (a list of every start grew with them). */
        json_t *js = json_object();
        double c = it->fraction_consumed, x = s->fraction_of_remainder;
        json_object_set_new(js, "item", str_new(it->id));
        json_object_set_new(js, "fraction_of_remainder", json_real(x));
        json_object_set_new(js, "split_at_fraction", json_real(c + (1 - c) * x));
        json_object_set_new(js, "piece_fraction", json_real((1 - c) * (1 - x) / s->n_pieces));
        json_object_set_new(js, "pieces", json_integer(s->n_pieces));
        json_object_set_new(js, "piece_size", json_real(s->piece_size));
        json_object_set_new(js, "piece_finish_s", json_real(s->piece_finish_s));
        json_object_set_new(js, "keep_finish_s", json_real(s->keep_finish_s));
        json_array_append_new(splits, js);
    }
    json_object_set_new(r, "splits", splits);
    json_t *un = json_array();
    for (int i = 0; i < o->n_blocks; i++) {
        const struct core_rebalance_block *b = &o->blocks[i];
        const struct core_rebalance_item *it = &jr->items[b->item];
        static const char *const why[] = {
            "", "a single record is left: a hot key or an oversized record; salt or split it",
            "the source cannot split it (a compressed or unseekable file): store it splittable",
            "the output has a fixed number of shards: let the sink choose them",
            "it is fused with a stage that cannot be split: break the fusion (a reshuffle)"};
        json_t *jb = json_object();
        char msg[700], fin[32], wo[32];
        fmt_seconds(fin, sizeof fin, b->finish_s);
        fmt_seconds(wo, sizeof wo, b->without_s);
        if (b->holds_stage && isinf(b->finish_s))
            snprintf(msg, sizeof msg,
                     "%s is stuck (rate 0) and holds the stage: the stage cannot finish until it "
                     "moves (%s without it): %s",
                     it->id, wo, why[b->cause]);
        else if (b->holds_stage)
            snprintf(msg, sizeof msg, "%s holds the stage until %s (%s without it): %s", it->id,
                     fin, wo, why[b->cause]);
        else
            snprintf(msg, sizeof msg,
                     "%s finishes at %s, later than the splittable work could (%.1f s), but %s "
                     "holds the stage longer (until %s): %s",
                     it->id, fin, o->free_finish_s,
                     o->holder >= 0 ? jr->items[o->holder].id : "another item", wo, why[b->cause]);
        json_object_set_new(jb, "item", str_new(it->id));
        json_object_set_new(jb, "cause", json_string(core_split_cause_name(b->cause)));
        json_object_set_new(jb, "finish_s", real_or_null(b->finish_s));
        json_object_set_new(jb, "holds_stage", json_boolean(b->holds_stage));
        json_object_set_new(jb, "message", str_new(msg));
        json_array_append_new(un, jb);
    }
    json_object_set_new(r, "unsplittable", un);
    return r;
}

/* ------------------------------------------------------- render as text -- */

void json_text_init(struct json_text *t)
{
    memset(t, 0, sizeof *t);
}

void json_text_deinit(struct json_text *t)
{
    free(t->p);
    free(t->vspan);
    memset(t, 0, sizeof *t);
}

/* Makes room for more bytes (and a NUL) after t->n; returns where they go. */
static char *tx_room(struct json_text *t, size_t more)
{
    if (t->n + more + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->n + more + 1)
            cap *= 2;
        t->p = xrealloc(t->p, cap);
        t->cap = cap;
    }
    return t->p + t->n;
}

static void tx_put(struct json_text *t, const char *s, size_t n)
{
    memcpy(tx_room(t, n), s, n);
    t->n += n;
}

#define TX_LIT(t, lit) tx_put((t), (lit), sizeof(lit) - 1)

static void tx_int(struct json_text *t, long long v)
{
    t->n += int_text(tx_room(t, 24), v);
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 (jansson's utf8_check_*:
 * no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static bool utf8_valid(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_len(p);
        if (!n)
            return false;
        p += n;
    }
    return true;
}

/* A string as str_new and jansson's compact dump write it: NULL is null, text that is not
 * UTF-8 has its non-ASCII bytes as '?', and '"', '\\' and control characters escaped. */
static void tx_str(struct json_text *t, const char *s)
{
    if (!s) {
        TX_LIT(t, "null");
        return;
    }
    bool ascii_only = !utf8_valid(s);
    size_t len = strlen(s);
    char *p = tx_room(t, 2 + 6 * len), *p0 = p;
    *p++ = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        unsigned char ch = *c;
        if (ch >= 0x80 && ascii_only) {
            *p++ = '?';
        } else if (ch == '"' || ch == '\\') {
            *p++ = '\\';
            *p++ = (char)ch;
        } else if (ch < 0x20) {
            static const char hex[] = "0123456789ABCDEF";
            *p++ = '\\';
            switch (ch) {
            case '\b':
                *p++ = 'b';
                break;
            case '\f':
                *p++ = 'f';
                break;
            case '\n':
                *p++ = 'n';
                break;
            case '\r':
                *p++ = 'r';
                break;
            case '\t':
                *p++ = 't';
                break;
            default:
                memcpy(p, "u00", 3);
                p[3] = hex[ch >> 4];
                p[4] = hex[ch & 15];
                p += 5;
            }
        } else {
            *p++ = (char)ch;
        }
    }
    *p++ = '"';
    t->n += (size_t)(p - p0);
}

/* "key": (key is plain ASCII: the core's and the options' names). */
static void tx_key(struct json_text *t, const char *key)
{
    tx_str(t, key);
    TX_LIT(t, ":");
}

static void tx_constraints(struct json_text *t, unsigned bits)
{
    TX_LIT(t, "[");
    bool first = true;
    for (int bit = 0; bit < CORE_C__COUNT; bit++)
        if (bits & (1u << bit)) {
            if (!first)
                TX_LIT(t, ",");
            first = false;
            tx_str(t, core_constraint_name(bit));
        }
    TX_LIT(t, "]");
}

/* One vertex's decision (render_vertex's object); records where its constraints and
 * evaluated texts are in span. */
static void tx_vertex(struct json_text *t, const struct core_vdecision *v,
                      struct json_text_vspan *span)
{
    TX_LIT(t, "{");
    bool first = true;
    for (int i = 0; i < core_n_vfields; i++) {
        const void *at = core_vfield_at(v, i);
        if (core_vfields[i].type == CORE_VF_TEXT && !*(const char *const *)at)
            continue;
        if (!first)
            TX_LIT(t, ",");
        first = false;
        tx_key(t, core_vfields[i].name);
        switch (core_vfields[i].type) {
        case CORE_VF_TEXT:
            tx_str(t, *(const char *const *)at);
            break;
        case CORE_VF_INT:
            tx_int(t, *(const int *)at);
            break;
        case CORE_VF_BOOL:
            if (*(const bool *)at)
                TX_LIT(t, "true");
            else
                TX_LIT(t, "false");
            break;
        case CORE_VF_REASON:
            tx_str(t, core_reason_name(*(const enum core_reason *)at));
            break;
        case CORE_VF_CONSTRAINTS:
            span->constraints = t->n;
            tx_constraints(t, *(const unsigned *)at);
            span->constraints_len = t->n - span->constraints;
            break;
        case CORE_VF_EVALUATED:
            span->evaluated = t->n;
            t->n += evaluated_print(tx_room(t, evaluated_room()), at);
            span->evaluated_len = t->n - span->evaluated;
            break;
        }
    }
    TX_LIT(t, "}");
}

/* The key of element i of an array of n structs of size stride, the key at offset off. */
struct keyed {
    const char *base;
    size_t stride, off;
    int n;
};

static const char *key_at(const struct keyed *k, int i)
{
    return *(const char *const *)(k->base + (size_t)i * k->stride + k->off);
}

/*
 * An object of k's elements as jansson builds it with json_object_set_new: a key that is not
 * UTF-8 is refused (left out), and a key set again keeps its first place and takes the last
 * value. val prints element i's value.
 */
static void tx_object(struct json_text *t, const struct keyed *k, const void *ud,
                      void (*val)(struct json_text *t, const void *ud, int i))
{
    /* The elements sorted by key: each key's run gives its first place and its last value
     * (n log n; comparing every pair made a large answer quadratic). */
    size_t n = (size_t)(k->n > 0 ? k->n : 1);
    int *perm = xmalloc(n * sizeof *perm), *last = xmalloc(n * sizeof *last);
    struct core_index x;
    core_index_build(&x, k->base, k->stride, k->off, k->n, perm, last);
    for (int i = 0; i < k->n; i++)
        last[i] = -1;
    for (int a = 0, b; a < k->n; a = b) {
        const char *key = key_at(k, perm[a]);
        for (b = a + 1; b < k->n && strcmp(key_at(k, perm[b]), key) == 0; b++)
            ;
        last[perm[a]] = perm[b - 1];
    }
    TX_LIT(t, "{");
    bool first = true;
    for (int i = 0; i < k->n; i++) {
        const char *key = key_at(k, i);
        if (last[i] < 0 || !utf8_valid(key))
            continue;
        if (!first)
            TX_LIT(t, ",");
        first = false;
        tx_key(t, key);
        val(t, ud, last[i]);
    }
    TX_LIT(t, "}");
    free(perm);
    free(last);
}

static void target_val(struct json_text *t, const void *ud, int i)
{
    tx_int(t, ((const struct core_decision *)ud)->vertices[i].target);
}

static void change_val(struct json_text *t, const void *ud, int i)
{
    tx_str(t, ((const struct core_decision *)ud)->config_changes[i].value);
}

void json_decision_text(struct json_text *t, const struct core_decision *d, const char *job,
                        const char *policy_revision, const char *config_hash, bool with_warnings,
                        const char *const *warnings, int n_warnings)
{
    t->n = 0;
    if (t->vcap < d->n_vertices) {
        t->vcap = d->n_vertices;
        t->vspan = xrealloc(t->vspan, (size_t)t->vcap * sizeof *t->vspan);
    }
    TX_LIT(t, "{\"job\":");
    tx_str(t, job);
    TX_LIT(t, ",\"at\":");
    tx_int(t, d->at);
    TX_LIT(t, ",\"action\":");
    tx_str(t, core_action_name(d->action));
    if (d->execute)
        TX_LIT(t, ",\"execute\":true,\"reason\":");
    else
        TX_LIT(t, ",\"execute\":false,\"reason\":");
    tx_str(t, core_reason_name(d->reason));
    TX_LIT(t, ",\"message\":");
    tx_str(t, d->message ? d->message : "");

    TX_LIT(t, ",\"parallelism\":");
    struct keyed ids = {(const char *)d->vertices, sizeof *d->vertices,
                        offsetof(struct core_vdecision, id), d->n_vertices};
    tx_object(t, &ids, d, target_val);
    TX_LIT(t, ",\"vertices\":[");
    for (int i = 0; i < d->n_vertices; i++) {
        if (i)
            TX_LIT(t, ",");
        tx_vertex(t, &d->vertices[i], &t->vspan[i]);
    }
    TX_LIT(t, "],\"events\":[");
    for (int i = 0; i < d->n_events; i++) {
        const struct core_event *ev = &d->events[i];
        if (i)
            TX_LIT(t, ",");
        TX_LIT(t, "{\"type\":");
        tx_str(t, ev->type);
        TX_LIT(t, ",\"reason\":");
        tx_str(t, ev->reason);
        TX_LIT(t, ",\"message\":");
        tx_str(t, ev->message ? ev->message : "");
        TX_LIT(t, ",\"count\":");
        tx_int(t, ev->count);
        if (ev->suppressed)
            TX_LIT(t, ",\"suppressed\":true}");
        else
            TX_LIT(t, ",\"suppressed\":false}");
    }
    TX_LIT(t, "]");
    if (d->n_config_changes > 0) {
        struct keyed keys = {(const char *)d->config_changes, sizeof *d->config_changes,
                             offsetof(struct core_kv, key), d->n_config_changes};
        TX_LIT(t, ",\"config_changes\":");
        tx_object(t, &keys, d, change_val);
    }
    if (d->n_config_removals > 0) {
        TX_LIT(t, ",\"config_removals\":[");
        for (int i = 0; i < d->n_config_removals; i++) {
            if (i)
                TX_LIT(t, ",");
            tx_str(t, d->config_removals[i]);
        }
        TX_LIT(t, "]");
    }
    TX_LIT(t, ",\"policy_revision\":");
    tx_str(t, policy_revision);
    TX_LIT(t, ",\"config_hash\":");
    tx_str(t, config_hash);
    if (with_warnings) {
        TX_LIT(t, ",\"warnings\":[");
        bool first = true;
        for (int i = 0; i < n_warnings; i++) {
            if (!warnings[i] || !utf8_valid(warnings[i]))
                continue; /* json_string refuses it: the warning is left out */
            if (!first)
                TX_LIT(t, ",");
            first = false;
            tx_str(t, warnings[i]);
        }
        TX_LIT(t, "]");
    }
    TX_LIT(t, "}");
    t->p[t->n] = '\0';
}
