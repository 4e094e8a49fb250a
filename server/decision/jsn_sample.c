/*
 * jsn_sample.c - the decide request into a struct core_sample (its batch mode: jsn_batch.c).
 *
 * The request parser is on the path of every request, so it allocates nothing per field:
 * the sample's vertex and input arrays live in buffers that jsn_sample keeps between
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

#include "decision/jsn.h"
#include "decision/jsn_int.h"
#include "base/xmem.h"

/* ------------------------------------------------------------- sample -- */

void jsn_sample_init(struct jsn_sample *js)
{
    memset(js, 0, sizeof *js);
    js->priv = xcalloc(1, sizeof(struct sample_buf));
}

void jsn_sample_reset(struct jsn_sample *js)
{
    memset(&js->s, 0, sizeof js->s);
}

void jsn_sample_deinit(struct jsn_sample *js)
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

/* Flink's default max parallelism (KeyGroupRangeAssignment.computeDefaultMaxParallelism):
 * roundUpToPowerOfTwo(p + p/2) within [128, 32768]; never below p itself. */
int jsn_default_max_parallelism(int p)
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
        if (jsn__get_number(k, busy, &bp, "avg", -INFINITY, 1000, &avg) < 0)
            return -1;
        if (isnan(avg)) {
            struct path ap = {&bp, "avg", 0};
            return jsn__fail(k, &ap, "required when busy_ms_per_s is an object");
        }
        v->busy_min = v->busy_max = v->busy_avg = avg;
        if (jsn__get_number(k, busy, &bp, "min", -INFINITY, 1000, &v->busy_min) < 0 ||
            jsn__get_number(k, busy, &bp, "max", -INFINITY, 1000, &v->busy_max) < 0)
            return -1;
        /* min <= avg <= max over the subtasks, or the figures contradict each other. A
         * client that rounds each figure on its own (to whole ms/s, or to a few decimals)
         * may put them up to JSN_BUSY_SLACK apart the wrong way: that is rounding, and avg is
         * moved back between them. */
        if (v->busy_min > v->busy_max + JSN_BUSY_SLACK) {
            struct path p = {&bp, "min", 0};
            return jsn__fail(k, &p, "%g is above max %g", v->busy_min, v->busy_max);
        }
        if (v->busy_min > v->busy_max)
            v->busy_min = v->busy_max;
        if (v->busy_avg < v->busy_min - JSN_BUSY_SLACK ||
            v->busy_avg > v->busy_max + JSN_BUSY_SLACK) {
            struct path p = {&bp, "avg", 0};
            return jsn__fail(k, &p, "%g is outside [min %g, max %g]", v->busy_avg, v->busy_min,
                             v->busy_max);
        }
        v->busy_avg = v->busy_avg < v->busy_min   ? v->busy_min
                      : v->busy_avg > v->busy_max ? v->busy_max
                                                  : v->busy_avg;
    } else if (busy && !json_is_null(busy) && !json_is_number(busy)) {
        struct path bp = {&mp, "busy_ms_per_s", 0};
        return jsn__fail(k, &bp, "expected a number or {min, avg, max}, got %s",
                         jsn__type_name(busy));
    } else {
        double b = NAN;
        if (jsn__get_number(k, m, &mp, "busy_ms_per_s", -INFINITY, 1000, &b) < 0)
            return -1;
        v->busy_min = v->busy_avg = v->busy_max = b;
    }
    if (jsn__get_number(k, m, &mp, "backpressured_ms_per_s", 0, 1000, &v->backpressured) < 0 ||
        jsn__get_number(k, m, &mp, "records_in", 0, INFINITY, &v->records_in) < 0 ||
        jsn__get_number(k, m, &mp, "records_out", 0, INFINITY, &v->records_out) < 0 ||
        jsn__get_number(k, m, &mp, "accumulated_busy_ms", 0, INFINITY, &v->accumulated_busy_ms) <
            0 ||
        jsn__get_number(k, m, &mp, "records_in_per_s", 0, INFINITY, &v->records_in_per_s) < 0 ||
        jsn__get_number(k, m, &mp, "records_out_per_s", 0, INFINITY, &v->records_out_per_s) < 0 ||
        jsn__get_number(k, m, &mp, "pending_records", 0, INFINITY, &v->pending_records) < 0)
        return -1;
    return 0;
}

static int parse_vertex(const struct sink *k, const json_t *jv, const struct path *vp,
                        struct core_vertex_in *v, struct core_input *in)
{
    if (!json_is_object(jv))
        return jsn__fail(k, vp, "expected an object, got %s", jsn__type_name(jv));
    memset(v, 0, sizeof *v);
    v->busy_min = v->busy_avg = v->busy_max = NAN;
    v->backpressured = v->records_in = v->records_out = v->accumulated_busy_ms = NAN;
    v->records_in_per_s = v->records_out_per_s = v->pending_records = NAN;

    if (jsn__get_string(k, jv, vp, "id", true, &v->id) < 0)
        return -1;
    if (!jsn_valid_id(v->id)) {
        struct path p = {vp, "id", 0};
        return jsn__fail(k, &p, "must be 1 to %d printable ASCII characters without spaces",
                         OPT_MAX_ID_LEN);
    }
    v->max_parallelism = 0;
    if (jsn__get_int(k, jv, vp, "parallelism", true, 1, &v->parallelism) < 0 ||
        jsn__get_int(k, jv, vp, "max_parallelism", false, 1, &v->max_parallelism) < 0 ||
        jsn__get_int(k, jv, vp, "partitions", false, 0, &v->partitions) < 0 ||
        jsn__get_string(k, jv, vp, "slot_sharing_group", false, &v->slot_sharing_group) < 0 ||
        jsn__get_bool(k, jv, vp, "finished", &v->finished) < 0)
        return -1;
    if (v->max_parallelism == 0) {
        v->max_parallelism = jsn_default_max_parallelism(v->parallelism);
    } else if (v->parallelism > v->max_parallelism) {
        struct path p = {vp, "parallelism", 0};
        return jsn__fail(k, &p, "%d exceeds max_parallelism %d", v->parallelism,
                         v->max_parallelism);
    }

    json_t *inputs, *metrics;
    if (jsn__get_typed(k, jv, vp, "inputs", JSON_ARRAY, "an array", &inputs) < 0 ||
        jsn__get_typed(k, jv, vp, "metrics", JSON_OBJECT, "an object", &metrics) < 0)
        return -1;
    if (inputs) {
        struct path ip = {vp, "inputs", 0};
        size_t j;
        json_t *ji;
        json_array_foreach(inputs, j, ji)
        {
            struct path ep = {&ip, NULL, (int)j};
            if (!json_is_object(ji))
                return jsn__fail(k, &ep, "expected an object, got %s", jsn__type_name(ji));
            const char *ship = NULL;
            in[j].ship = CORE_SHIP_REBALANCE;
            if (jsn__get_string(k, ji, &ep, "from", true, &in[j].from) < 0 ||
                jsn__get_string(k, ji, &ep, "ship", false, &ship) < 0)
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
int jsn__apply_config(json_t *cfg, struct opt_job *opts, const struct opt_limits *lim,
                      struct jsn_err *e, const struct sink *k)
{
    struct path cp = {NULL, "config", 0};
    if (lim && json_object_size(cfg) > (size_t)lim->config_keys)
        return jsn__over(e, k, &cp, (long long)json_object_size(cfg), "keys", lim->config_keys,
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
            return jsn__fail(k, &p, "expected a string or a number, got %s", jsn__type_name(val));
        }
        if (!opts)
            continue;
        char *err = NULL;
        if (opt_job_set(opts, OPT_REQUEST, key, text, &err) < 0) {
            /* 422: valid JSON, invalid content. The options module's message already names
             * the key, so it is the message as is; the field still gets the path. */
            e->status = 422;
            if (err)
                jsn__path_fmt(&p, e->field, sizeof e->field);
            else
                jsn__fail(k, &p, "invalid value");
            if (err)
                snprintf(e->message, sizeof e->message, "%s", err);
            free(err);
            return -1;
        }
    }
    return 0;
}

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
int jsn_parse_sample(json_t *body, int64_t now_ms, struct jsn_sample *js, struct opt_job *opts,
                     struct jsn_err *e)
{
    struct sink k;
    jsn__init_err(e, &k);
    jsn_sample_reset(js);
    struct core_sample *s = &js->s;
    struct sample_buf *b = js->priv;
    if (!b)
        b = js->priv = xcalloc(1, sizeof *b);

    if (!json_is_object(body))
        return jsn__fail(&k, NULL, "the request body must be a JSON object, got %s",
                         jsn__type_name(body));

    s->at = now_ms;
    s->running_since = INT64_MIN;
    if (jsn__get_time(&k, body, "at", &s->at) < 0 ||
        jsn__get_time(&k, body, "running_since", &s->running_since) < 0)
        return -1;
    if (s->running_since == INT64_MIN) {
        s->running_since = s->at < 0 ? s->at : 0; /* absent: running long before the sample */
    } else if (s->running_since > s->at) {
        /* Stabilization would never end; governor's time is the sample's. */
        struct path p = {NULL, "running_since", 0};
        return jsn__fail(&k, &p,
                         "%" PRId64 " is later than at %" PRId64 ": a job cannot be running since "
                         "after the sample was taken (send both from one clock)",
                         s->running_since, s->at);
    }
    const char *status = "RUNNING";
    if (jsn__get_string(&k, body, NULL, "status", false, &status) < 0)
        return -1;
    s->running = strcasecmp(status, "RUNNING") == 0;
    const char *mode = NULL;
    if (jsn__get_string(&k, body, NULL, "mode", false, &mode) < 0)
        return -1;
    if (mode && strcasecmp(mode, "BATCH") == 0)
        return jsn__parse_batch(&k, body, s, b, opts, js->limits, e);
    if (mode && strcasecmp(mode, "STREAMING") != 0) {
        struct path p = {NULL, "mode", 0};
        return jsn__fail(&k, &p, "must be \"STREAMING\" (the default) or \"BATCH\", got \"%.64s\"",
                         mode);
    }

    s->heap_used = s->heap_max = s->gc_ms_per_s = s->managed_used = s->metaspace_used = NAN;
    s->task_slots_total = s->task_slots_available = NAN;
    json_t *jm, *cfg, *verts;
    if (jsn__get_typed(&k, body, NULL, "job_metrics", JSON_OBJECT, "an object", &jm) < 0 ||
        jsn__get_typed(&k, body, NULL, "config", JSON_OBJECT, "an object", &cfg) < 0 ||
        jsn__get_typed(&k, body, NULL, "vertices", JSON_ARRAY, "an array", &verts) < 0)
        return -1;
    if (jm) {
        struct path p = {NULL, "job_metrics", 0};
        if (jsn__get_number(&k, jm, &p, "heap_used", 0, INFINITY, &s->heap_used) < 0 ||
            jsn__get_number(&k, jm, &p, "heap_max", 0, INFINITY, &s->heap_max) < 0 ||
            jsn__get_number(&k, jm, &p, "gc_ms_per_s", 0, INFINITY, &s->gc_ms_per_s) < 0 ||
            jsn__get_number(&k, jm, &p, "managed_used", 0, INFINITY, &s->managed_used) < 0 ||
            jsn__get_number(&k, jm, &p, "metaspace_used", 0, INFINITY, &s->metaspace_used) < 0 ||
            jsn__get_number(&k, jm, &p, "task_slots_total", 0, INFINITY, &s->task_slots_total) <
                0 ||
            jsn__get_number(&k, jm, &p, "task_slots_available", 0, INFINITY,
                            &s->task_slots_available) < 0)
            return -1;
    }

    struct path vsp = {NULL, "vertices", 0};
    if (!verts)
        return jsn__fail(&k, &vsp, "required");
    size_t n = json_array_size(verts);
    if (n == 0)
        return jsn__fail(&k, &vsp, "must list at least one vertex");
    const struct opt_limits *lim = js->limits;
    if (lim && n > (size_t)lim->vertices)
        return jsn__over(e, &k, &vsp, (long long)n, "vertices", lim->vertices, "max-vertices");
    if (n > INT_MAX / 2)
        return jsn__fail(&k, &vsp, "too many vertices");

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
            return jsn__over(e, &k, &ip, (long long)n_in, "inputs in all (up to this vertex)",
                             lim->edges, "max-edges");
        }
    }
    if (n_in > INT_MAX / 2)
        return jsn__fail(&k, &vsp, "too many inputs");
    jsn__reserve(&b->v, &b->cap_v, (int)n, sizeof *b->v);
    jsn__reserve(&b->in, &b->cap_in, (int)n_in, sizeof *b->in);

    size_t at_in = 0;
    json_array_foreach(verts, i, jv)
    {
        struct path vp = {&vsp, NULL, (int)i};
        if (parse_vertex(&k, jv, &vp, &b->v[i], b->in ? b->in + at_in : NULL) < 0)
            return -1;
        at_in += (size_t)b->v[i].n_inputs;
    }
    s->vertices = b->v;
    s->n_vertices = (int)n;

    if (cfg && jsn__apply_config(cfg, opts, js->limits, e, &k) < 0)
        return -1;
    e->status = 0;
    e->code[0] = '\0';
    return 0;
}

int jsn_apply_config(json_t *body, struct opt_job *opts, struct jsn_err *e)
{
    struct sink k;
    jsn__init_err(e, &k);
    json_t *cfg = json_object_get(body, "config");
    if (json_is_object(cfg) && jsn__apply_config(cfg, opts, NULL, e, &k) < 0)
        return -1;
    e->status = 0;
    e->code[0] = '\0';
    return 0;
}
