/*
 * jsn_batch.c - the batch mode of a decide request (its stages in, its pool decision out) and
 * the rebalance request and answer.
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
#include "core/index.h"
#include "base/jarena.h"
#include "base/text.h"
#include "base/xmem.h"

/* --------------------------------------------------------------- batch -- */

static const char *const stage_states[] = {"PENDING", "RUNNING", "DONE"};

/* One stage's `batch` object into *st. */
static int parse_stage(const struct sink *k, const json_t *jb, const struct path *bp,
                       struct core_batch_stage *st)
{
    const char *state = "RUNNING", *unit = NULL;
    double fraction = NAN;
    st->total = st->done = st->busy_s = st->remaining_parallelism = st->fixed_shards = NAN;
    if (jsn__get_string(k, jb, bp, "state", false, &state) < 0 ||
        jsn__get_string(k, jb, bp, "unit", false, &unit) < 0 ||
        jsn__get_number(k, jb, bp, "total_work", 0, INFINITY, &st->total) < 0 ||
        jsn__get_number(k, jb, bp, "work_done", 0, INFINITY, &st->done) < 0 ||
        jsn__get_number(k, jb, bp, "fraction_consumed", 0, 1, &fraction) < 0 ||
        jsn__get_number(k, jb, bp, "busy_s", 0, INFINITY, &st->busy_s) < 0 ||
        jsn__get_number(k, jb, bp, "remaining_parallelism", 0, INFINITY,
                        &st->remaining_parallelism) < 0 ||
        jsn__get_number(k, jb, bp, "fixed_shards", 1, INFINITY, &st->fixed_shards) < 0)
        return -1;
    int i = 0;
    while (i < 3 && strcasecmp(state, stage_states[i]) != 0)
        i++;
    if (i == 3) {
        struct path p = {bp, "state", 0};
        return jsn__fail(k, &p, "must be PENDING, RUNNING or DONE, got \"%.64s\"", state);
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
        return jsn__fail(k, &p, "%.17g is above total_work %.17g", st->done, st->total);
    }
    if (st->state == CORE_BATCH_RUNNING && isnan(st->total)) {
        struct path p = {bp, "total_work", 0};
        return jsn__fail(k, &p, "required for a RUNNING stage (or fraction_consumed)");
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
        return jsn__fail(k, vp, "expected an object, got %s", jsn__type_name(jv));
    st->id = NULL;
    if (jsn__get_string(k, jv, vp, "id", true, &st->id) < 0)
        return -1;
    if (!jsn_valid_id(st->id))
        return jsn__fail(k, &ip, "must be 1-%d printable ASCII characters without spaces",
                         OPT_MAX_ID_LEN);
    if (dup)
        return jsn__fail(k, &ip, "duplicate stage id \"%s\"", st->id);
    if (jsn__get_typed(k, jv, vp, "batch", JSON_OBJECT, "an object", &jb) < 0)
        return -1;
    if (!jb)
        return jsn__fail(k, &bp, "required in batch mode");
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

int jsn__parse_batch(const struct sink *k, json_t *body, struct core_sample *s,
                     struct sample_buf *b, struct opt_job *opts, const struct opt_limits *lim,
                     struct jsn_err *e)
{
    json_t *jw, *cfg, *verts;
    struct core_batch_in *in = &s->batch;
    s->batch_mode = true;
    if (jsn__get_typed(k, body, NULL, "workers", JSON_OBJECT, "an object", &jw) < 0 ||
        jsn__get_typed(k, body, NULL, "config", JSON_OBJECT, "an object", &cfg) < 0 ||
        jsn__get_typed(k, body, NULL, "vertices", JSON_ARRAY, "an array", &verts) < 0)
        return -1;
    struct path wp = {NULL, "workers", 0};
    if (!jw)
        return jsn__fail(k, &wp, "required in batch mode");
    in->slots_per_worker = 1;
    in->cpu = NAN;
    in->workers = in->running = in->requested = -1;
    if (jsn__get_int(k, jw, &wp, "current", false, 0, &in->workers) < 0 ||
        jsn__get_int(k, jw, &wp, "running", false, 0, &in->running) < 0 ||
        jsn__get_int(k, jw, &wp, "requested", false, 0, &in->requested) < 0 ||
        jsn__get_int(k, jw, &wp, "slots_per_worker", false, 1, &in->slots_per_worker) < 0 ||
        jsn__get_number(k, jw, &wp, "cpu_utilization", 0, 1, &in->cpu) < 0 ||
        jsn__get_bool(k, jw, &wp, "shuffle_on_workers", &in->shuffle_on_workers) < 0)
        return -1;
    in->has_running = in->running >= 0;
    in->has_requested = in->requested >= 0;
    if (in->workers < 0) {
        /* The pool is what was asked for, or what runs, when the sample says only those. */
        struct path cp = {&wp, "current", 0};
        if (!in->has_running && !in->has_requested)
            return jsn__fail(k, &cp, "required (or running and requested)");
        in->workers = in->has_requested ? in->requested : in->running;
    }
    if (in->has_running && in->has_requested && in->running > in->requested) {
        struct path rp = {&wp, "running", 0};
        return jsn__fail(k, &rp, "%d is more than the %d worker%s requested", in->running,
                         in->requested, in->requested == 1 ? "" : "s");
    }
    struct path vsp = {NULL, "vertices", 0};
    if (!verts)
        return jsn__fail(k, &vsp, "required");
    size_t n = json_array_size(verts), i;
    if (n == 0)
        return jsn__fail(k, &vsp, "must list at least one stage");
    if (lim && n > (size_t)lim->vertices)
        return jsn__over(e, k, &vsp, (long long)n, "stages", lim->vertices, "max-vertices");
    if (n > INT_MAX / 2)
        return jsn__fail(k, &vsp, "too many stages");
    jsn__reserve(&b->st, &b->cap_st, (int)n, sizeof *b->st);
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
    if (cfg && jsn__apply_config(cfg, opts, lim, e, k) < 0)
        return -1;
    e->status = 0;
    e->code[0] = '\0';
    return 0;
}

/* new: a figure in seconds (or worker-seconds) as the answer shows it, to 0.1 s (the batch
 * rule's own arithmetic gives eta_s 1535.57692307692 s); null when undefined. */
static json_t *seconds_or_null(double x)
{
    return isfinite(x) ? json_real(round(x * 10.0) / 10.0) : json_null();
}

/* new: a batch decision's figures (core/README.md, Batch: figures), null when undefined. */
static json_t *batch_evaluated(const struct core_batch_decision *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "remaining_worker_seconds",
                        seconds_or_null(d->remaining_worker_seconds));
    json_object_set_new(o, "worker_seconds_spent", seconds_or_null(d->worker_seconds_spent));
    json_object_set_new(o, "eta_s", seconds_or_null(d->eta_s));
    json_object_set_new(o, "eta_current_s", seconds_or_null(d->eta_current_s));
    json_object_set_new(o, "cap_workers", jsn__real_or_null(d->cap_workers));
    return o;
}

json_t *jsn_render_batch_constraints(unsigned bits)
{
    json_t *a = json_array();
    for (int i = 0; i < CORE_BC__COUNT; i++)
        if (bits & (1u << i))
            json_array_append_new(a, json_string(core_batch_constraint_name(i)));
    return a;
}

char *jsn_batch_evaluated_text(const struct core_batch_decision *d)
{
    json_t *o = batch_evaluated(d);
    char *t = jarena_dump(o); /* inside the request's arena too */
    json_decref(o);
    return t;
}

json_t *jsn_render_batch(const struct core_batch_decision *d, const char *job,
                         const char *policy_revision, const char *config_hash)
{
    json_t *o = json_object();
    json_object_set_new(o, "job", text_json_string(job));
    json_object_set_new(o, "at", json_integer(d->at));
    json_object_set_new(o, "mode", json_string("BATCH"));
    json_object_set_new(o, "action", json_string(core_action_name(d->action)));
    json_object_set_new(o, "execute", json_boolean(d->execute));
    json_object_set_new(o, "reason", json_string(core_reason_name(d->reason)));
    json_object_set_new(o, "message", text_json_string(d->message));
    json_object_set_new(o, "parallelism", json_object());
    json_t *w = json_object();
    json_object_set_new(w, "current", json_integer(d->current));
    json_object_set_new(w, "running", d->running >= 0 ? json_integer(d->running) : json_null());
    json_object_set_new(w, "target", json_integer(d->target));
    json_object_set_new(w, "raw", json_integer(d->raw));
    json_object_set_new(w, "min", json_integer(d->min));
    json_object_set_new(w, "max", json_integer(d->max));
    json_object_set_new(w, "constraints", jsn_render_batch_constraints(d->constraints));
    json_object_set_new(o, "workers", w);
    json_object_set_new(o, "evaluated", batch_evaluated(d));
    json_t *ev = json_array();
    for (int i = 0; i < d->n_warnings && i < CORE_BATCH_WARNINGS; i++)
        json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:i, s:b}", "type", "Warning",
                                            "reason", d->warnings[i].reason, "message",
                                            d->warnings[i].message, "count", 1, "suppressed", 0));
    json_object_set_new(o, "events", ev);
    json_object_set_new(o, "policy_revision", text_json_string(policy_revision));
    json_object_set_new(o, "config_hash", text_json_string(config_hash));
    return o;
}

/* ----------------------------------------------------------- rebalance -- */

void jsn_rebalance_deinit(struct jsn_rebalance *jr)
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
        return jsn__fail(k, ip, "expected an object, got %s", jsn__type_name(ji));
    it->id = NULL;
    it->remaining = it->rate = NAN;
    it->fraction_consumed = 0;
    it->remaining_parallelism = NAN;
    it->cause = CORE_SPLIT_OK;
    if (jsn__get_string(k, ji, ip, "id", true, &it->id) < 0 ||
        jsn__get_number(k, ji, ip, "remaining", 0, INFINITY, &it->remaining) < 0 ||
        jsn__get_number(k, ji, ip, "rate", 0, INFINITY, &it->rate) < 0 ||
        jsn__get_number(k, ji, ip, "fraction_consumed", 0, 1, &it->fraction_consumed) < 0 ||
        jsn__get_number(k, ji, ip, "remaining_parallelism", 0, INFINITY,
                        &it->remaining_parallelism) < 0 ||
        jsn__get_bool(k, ji, ip, "splittable", &splittable) < 0 ||
        jsn__get_string(k, ji, ip, "cause", false, &cause) < 0)
        return -1;
    if (isnan(it->remaining)) {
        struct path p = {ip, "remaining", 0};
        return jsn__fail(k, &p, "required");
    }
    if (isnan(it->rate)) {
        struct path p = {ip, "rate", 0};
        return jsn__fail(k, &p, "required (0: the worker is stuck)");
    }
    if (it->fraction_consumed == 1 && it->remaining > 0) {
        /* Split points are fractions of the item's range: none is left after 1. */
        struct path p = {ip, "fraction_consumed", 0};
        return jsn__fail(
            k, &p,
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
            return jsn__fail(
                k, &p, "must be UNSPLITTABLE_SOURCE, FIXED_SHARDS or FUSED_STAGE, got \"%.64s\"",
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
                              const struct opt_limits *lim, struct jsn_err *e)
{
    size_t i, n = 0;
    const json_t *w;
    json_array_foreach(ws, i, w)
    {
        struct path wp = {wsp, NULL, (int)i}, ip = {&wp, "items", 0};
        const json_t *items = json_is_object(w) ? json_object_get(w, "items") : NULL;
        if (!json_is_object(w))
            return jsn__fail(k, &wp, "expected an object, got %s", jsn__type_name(w));
        if (!items || !json_is_array(items) || json_array_size(items) == 0)
            return jsn__fail(k, &ip, "a worker must list at least one item");
        n += json_array_size(items);
        if (lim && n > (size_t)lim->rebalance_items)
            return jsn__over(e, k, &ip, (long long)n, "items in all (up to this worker)",
                             lim->rebalance_items, "max-rebalance-items");
        if (n > INT_MAX / 2)
            return jsn__fail(k, wsp, "too many items");
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
int jsn_parse_rebalance(json_t *body, int64_t now_ms, struct jsn_rebalance *jr, struct jsn_err *e)
{
    struct sink k;
    json_t *items, *workers;
    jsn__init_err(e, &k);
    if (!json_is_object(body))
        return jsn__fail(&k, NULL, "the request body must be a JSON object, got %s",
                         jsn__type_name(body));
    jr->at = now_ms;
    jr->stage = jr->unit = NULL;
    memset(&jr->in, 0, sizeof jr->in);
    jr->in.nominal_rate = NAN;
    if (jsn__get_time(&k, body, "at", &jr->at) < 0 ||
        jsn__get_string(&k, body, NULL, "stage", false, &jr->stage) < 0 ||
        jsn__get_string(&k, body, NULL, "unit", false, &jr->unit) < 0 ||
        jsn__get_int(&k, body, NULL, "idle_slots", false, 0, &jr->in.idle_slots) < 0 ||
        jsn__get_number(&k, body, NULL, "startup_s", 0, INFINITY, &jr->in.startup_s) < 0 ||
        jsn__get_number(&k, body, NULL, "min_piece", 0, INFINITY, &jr->in.min_piece) < 0 ||
        jsn__get_number(&k, body, NULL, "nominal_rate", 0, INFINITY, &jr->in.nominal_rate) < 0 ||
        jsn__get_typed(&k, body, NULL, "items", JSON_ARRAY, "an array", &items) < 0 ||
        jsn__get_typed(&k, body, NULL, "workers", JSON_ARRAY, "an array", &workers) < 0)
        return -1;
    struct path isp = {NULL, "items", 0}, wsp = {NULL, "workers", 0};
    if (items && workers)
        return jsn__fail(&k, &wsp, "send items or workers, not both");
    if (!items && !workers)
        return jsn__fail(&k, &isp, "required (or workers)");
    if (jr->in.nominal_rate == 0) {
        struct path p = {NULL, "nominal_rate", 0};
        return jsn__fail(&k, &p, "must be above 0");
    }
    if (jr->in.idle_slots > OPT_MAX_IDLE_SLOTS) {
        struct path p = {NULL, "idle_slots", 0};
        return jsn__fail(&k, &p, "%d is more than the limit of %d", jr->in.idle_slots,
                         OPT_MAX_IDLE_SLOTS);
    }
    const struct opt_limits *lim = jr->limits;
    if (items && lim && json_array_size(items) > (size_t)lim->rebalance_items)
        return jsn__over(e, &k, &isp, (long long)json_array_size(items), "items",
                         lim->rebalance_items, "max-rebalance-items");
    int n = items ? (int)json_array_size(items) : count_worker_items(&k, workers, &wsp, lim, e);
    if (n < 0)
        return -1;
    if (n == 0)
        return jsn__fail(&k, &isp, "must list at least one item");
    if (n > INT_MAX / 2)
        return jsn__fail(&k, &isp, "too many items");
    jsn__reserve(&jr->items, &jr->cap, n, sizeof *jr->items);
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

json_t *jsn_render_rebalance(const struct jsn_rebalance *jr, const struct core_rebalance_out *o,
                             const char *job, int reason, const char *message)
{
    json_t *r = json_object();
    json_object_set_new(r, "job", text_json_string(job));
    json_object_set_new(r, "at", json_integer(jr->at));
    json_object_set_new(r, "stage", text_json_string(jr->stage));
    json_object_set_new(r, "action", json_string("REBALANCE"));
    json_object_set_new(r, "execute", json_false());
    json_object_set_new(r, "reason", json_string(core_reason_name(reason)));
    json_object_set_new(r, "message", text_json_string(message));
    json_object_set_new(r, "target_finish_s", seconds_or_null(o->target_finish_s));
    json_object_set_new(r, "makespan_before_s", seconds_or_null(o->makespan_before_s));
    json_object_set_new(r, "makespan_after_s", seconds_or_null(o->makespan_after_s));
    json_object_set_new(r, "free_finish_s", seconds_or_null(o->free_finish_s));
    json_object_set_new(r, "held_by",
                        o->holder >= 0 ? text_json_string(jr->items[o->holder].id) : json_null());
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
        json_object_set_new(js, "item", text_json_string(it->id));
        json_object_set_new(js, "fraction_of_remainder", json_real(x));
        json_object_set_new(js, "split_at_fraction", json_real(c + (1 - c) * x));
        json_object_set_new(js, "piece_fraction", json_real((1 - c) * (1 - x) / s->n_pieces));
        json_object_set_new(js, "pieces", json_integer(s->n_pieces));
        json_object_set_new(js, "piece_size", json_real(s->piece_size));
        json_object_set_new(js, "piece_finish_s", seconds_or_null(s->piece_finish_s));
        json_object_set_new(js, "keep_finish_s", seconds_or_null(s->keep_finish_s));
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
        json_object_set_new(jb, "item", text_json_string(it->id));
        json_object_set_new(jb, "cause", json_string(core_split_cause_name(b->cause)));
        json_object_set_new(jb, "finish_s", seconds_or_null(b->finish_s));
        json_object_set_new(jb, "holds_stage", json_boolean(b->holds_stage));
        json_object_set_new(jb, "message", text_json_string(msg));
        json_array_append_new(un, jb);
    }
    json_object_set_new(r, "unsplittable", un);
    return r;
}
