/*
 * timeline.c - a job's history over time (see timeline.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/index.h"
#include "options/options.h"
#include "store/query.h"
#include "store/timeline.h"
#include "base/xmem.h"

/* ------------------------------------------------------- bucket arithmetic -- */

int timeline_buckets(int64_t from, int64_t to, int64_t step_ms, int64_t *n)
{
    if (from >= to || step_ms <= 0)
        return -1;
    uint64_t span = (uint64_t)to - (uint64_t)from;
    *n = (int64_t)(span / (uint64_t)step_ms + (span % (uint64_t)step_ms != 0));
    return 0;
}

int64_t timeline_bucket_of(int64_t from, int64_t step_ms, int64_t n, int64_t at)
{
    if (at < from || step_ms <= 0)
        return -1;
    uint64_t i = ((uint64_t)at - (uint64_t)from) / (uint64_t)step_ms;
    return i < (uint64_t)n ? (int64_t)i : -1;
}

int64_t timeline_auto_step(int64_t span_ms)
{
    static const int64_t steps[] = {1000,    5000,     10000,    15000,    30000,   60000,
                                    120000,  300000,   600000,   900000,   1800000, 3600000,
                                    7200000, 10800000, 21600000, 43200000, 86400000};
    int64_t want = span_ms / 360 + (span_ms % 360 != 0);
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] >= want)
            return steps[i];
    return (want + 86400000 - 1) / 86400000 * 86400000;
}

double timeline_backlog_s(double lag, double rate)
{
    if (isnan(lag) || isnan(rate) || isinf(lag) || isinf(rate))
        return NAN;
    if (lag == 0)
        return 0;
    return rate > 0 ? lag / rate : NAN;
}

/* ------------------------------------------------------------------ read -- */

/* The index of s in *list (of *n names), added when new. With idx, a sorted index of the list
 * (core_runs) finds it: a history's vertex ids and config hashes, which may be many; without,
 * a scan (the reason codes, a few). */
static int intern(char ***list, int *n, struct core_runs *idx, const char *s)
{
    int i = -1;
    if (idx)
        i = core_runs_find(idx, *list, sizeof **list, 0, s);
    else
        for (int k = 0; k < *n && i < 0; k++)
            if (strcmp((*list)[k], s) == 0)
                i = k;
    if (i >= 0)
        return i;
    *list = xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
    (*list)[*n] = xstrdup(s);
    if (idx)
        core_runs_add(idx, *list, sizeof **list, 0);
    return (*n)++;
}

/* The options of decision id, resolved into c. A stored option the table no longer takes
 * is skipped (the rest still resolve); options that do not resolve give the defaults. */
static int read_config(struct db *db, int64_t id, struct timeline_config *c, char **errp)
{
    static const struct db_sql sql = {
        "SELECT key, value FROM audit_decision_options WHERE decision_id = ?1", NULL,
        "read audit_decision_options", DB_SQL_ONCE};
    struct db_cur cu;
    struct opt_job *j = opt_job_new();
    struct core_config cfg;
    char *err = NULL;
    c->slo_lag_s = NAN;
    int rc = db_query(db, &sql, DB_ARGS(DB_INT(id)), &cu, errp);
    while (rc == 0 && db_next(&cu)) {
        const char *k = db_text(&cu, 0);
        const char *v = db_text(&cu, 1);
        if (!k || !v || !*v)
            continue;
        if (opt_job_set(j, OPT_JOB, k, v, &err) < 0) {
            free(err);
            err = NULL;
        }
        int64_t ms;
        if (strcmp(k, "governor.slo.lag") == 0 && opt_parse_duration(v, &ms, &err) == 0)
            c->slo_lag_s = (double)ms / 1000.0;
        free(err);
        err = NULL;
    }
    if ((rc = db_finish(&cu, rc, errp)) < 0) {
        opt_job_free(j);
        return -1;
    }
    if (opt_job_resolve(j, &cfg, &err) < 0) {
        free(err);
        opt_config_defaults(&cfg);
    }
    c->util_target = cfg.util_target;
    core_util_bounds(&cfg, false, &c->util_max, &c->util_min);
    c->min_parallelism = cfg.vertex_min_parallelism;
    c->max_parallelism = cfg.vertex_max_parallelism;
    c->lag_threshold_s = (double)cfg.backlog_lag_threshold_ms / 1000.0;
    c->scale_down_interval_s = (double)cfg.scale_down_interval_ms / 1000.0;
    c->catch_up_s = (double)cfg.catch_up_ms / 1000.0;
    opt_job_free(j);
    return 0;
}

/*
 * The reads of the timeline, all through the public audit views, one page at a time
 * (read_page): the decisions after the cursor (its at ?2 and id ?5; ?3 the end of the range,
 * ?4 the id after which the history is read, ?6 the page's size) in (at, id) order; then the
 * vertex rows and the scalings of the page's decisions: those from its first (at ?2, id ?5) to
 * its last (?3, ?6) in the same order, with an id above ?4.
 */
static const struct db_sql SQL_DECISIONS = {
    "SELECT id, at, reason, execute, action, config_hash FROM audit_decisions "
    "WHERE job = ?1 AND at >= ?2 AND at < ?3 AND id > ?4 AND (at > ?2 OR id > ?5) "
    "ORDER BY at, id LIMIT ?6",
    NULL, "read audit_decisions", DB_SQL_ONCE};
#define PAGE_OF_D                                                                                  \
    "job = ?1 AND at >= ?2 AND at <= ?3 AND decision_id > ?4 AND (at > ?2 OR decision_id >= ?5) "  \
    "AND (at < ?3 OR decision_id <= ?6)"
/* The JSON members of evaluated_json, in each dialect. */
#define VERTICES(max_parallelism, num_source_partitions)                                           \
    "SELECT decision_id, vertex, current, target, load, lag, target_data_rate, "                   \
    "scale_down_rate_threshold, " max_parallelism ", " num_source_partitions                       \
    " FROM audit_vertex_decisions WHERE " PAGE_OF_D " ORDER BY at, decision_id, ord"
static const struct db_sql SQL_VERTICES = {
    VERTICES("json_extract(evaluated_json, '$.max_parallelism')",
             "json_extract(evaluated_json, '$.num_source_partitions')"),
    VERTICES("evaluated_json::json ->> 'max_parallelism'",
             "evaluated_json::json ->> 'num_source_partitions'"),
    "read audit_vertex_decisions", DB_SQL_ONCE};
static const struct db_sql SQL_EVENTS = {
    "SELECT decision_id, at, action, reason, changes, subtasks_before, subtasks_after, applied "
    "FROM audit_scalings WHERE " PAGE_OF_D " ORDER BY at, decision_id LIMIT ?7",
    NULL, "read audit_scalings", DB_SQL_ONCE};

/* One page of decisions after the cursor (at, id), appended to hi. */
static int read_decisions(struct db *db, const char *job, int64_t at, int64_t id, int64_t to,
                          int64_t after_id, struct timeline_history *hi, char **errp)
{
    struct db_cur cu;
    int rc = db_query(db, &SQL_DECISIONS,
                      DB_ARGS(DB_TEXT(job), DB_INT(at), DB_INT(to), DB_INT(after_id), DB_INT(id),
                              DB_INT(TIMELINE_PAGE)),
                      &cu, errp);
    while (rc == 0 && db_next(&cu)) {
        if (hi->n_d == hi->cap_d) {
            hi->cap_d = hi->cap_d ? hi->cap_d * 2 : 256;
            hi->d = xrealloc(hi->d, (size_t)hi->cap_d * sizeof *hi->d);
        }
        struct timeline_decision *d = &hi->d[hi->n_d];
        memset(d, 0, sizeof *d);
        d->id = db_int(&cu, 0);
        d->at = db_int(&cu, 1);
        const char *reason = db_text(&cu, 2);
        d->reason = intern(&hi->codes, &hi->n_codes, NULL, reason ? reason : "");
        const char *action = db_text(&cu, 4);
        snprintf(d->action, sizeof d->action, "%s", action ? action : "");
        d->executed = db_int(&cu, 3) == 1 && strcmp(d->action, "NO_CHANGE") != 0;
        d->load_max = d->backlog_s = NAN;
        const char *hash = db_text(&cu, 5);
        if (!hash)
            hash = "";
        int c = hi->n_configs - 1;
        if (c < 0 || strcmp(hi->configs[c].hash, hash) != 0)
            c = intern(&hi->hashes, &hi->n_hashes, &hi->by_hash, hash); /* configs[i]: hashes[i] */
        if (c == hi->n_configs) {
            hi->configs = xrealloc(hi->configs, (size_t)(c + 1) * sizeof *hi->configs);
            memset(&hi->configs[c], 0, sizeof hi->configs[c]);
            snprintf(hi->configs[c].hash, sizeof hi->configs[c].hash, "%s", hash);
            hi->n_configs++;
            if ((rc = read_config(db, d->id, &hi->configs[c], errp)) < 0)
                break;
        }
        d->config = c;
        hi->n_d++;
    }
    return db_finish(&cu, rc, errp);
}

/* The arguments of a page's reads of vertex rows and scalings (PAGE_OF_D): the job, the page's
 * first and last decisions (f, l), after_id. */
#define PAGE_ARGS(job, f, l, after_id)                                                             \
    DB_TEXT(job), DB_INT((f)->at), DB_INT((l)->at), DB_INT(after_id), DB_INT((f)->id),             \
        DB_INT((l)->id)

/* The vertex rows of the page of decisions hi->d[k..n_d). */
static int read_vertices(struct db *db, const char *job, int64_t after_id, int k,
                         struct timeline_history *hi, char **errp)
{
    struct db_cur cu;
    const struct timeline_decision *f = &hi->d[k], *l = &hi->d[hi->n_d - 1];
    int rc = db_query(db, &SQL_VERTICES, DB_ARGS(PAGE_ARGS(job, f, l, after_id)), &cu, errp);
    while (rc == 0 && db_next(&cu)) {
        int64_t id = db_int(&cu, 0);
        /* Both reads run in one transaction in the same order: walk the decisions along. */
        while (k < hi->n_d && hi->d[k].id != id)
            k++;
        if (k == hi->n_d) {
            db_end(&cu); /* rows left behind: not an error */
            return 0;
        }
        struct timeline_decision *d = &hi->d[k];
        const struct timeline_config *c = &hi->configs[d->config];
        if (hi->n_vrows == hi->cap_vrows) {
            hi->cap_vrows = hi->cap_vrows ? hi->cap_vrows * 2 : 1024;
            hi->vrows = xrealloc(hi->vrows, (size_t)hi->cap_vrows * sizeof *hi->vrows);
        }
        if (d->n_v == 0)
            d->v0 = hi->n_vrows;
        struct timeline_vrow *v = &hi->vrows[hi->n_vrows++];
        d->n_v++;
        const char *name = db_text(&cu, 1);
        v->vertex = intern(&hi->vertices, &hi->n_vertices, &hi->by_vertex, name ? name : "");
        v->current = (int)db_int(&cu, 2);
        v->target = (int)db_int(&cu, 3);
        v->load = db_real(&cu, 4);
        v->lag = db_real(&cu, 5);
        v->tdr = db_real(&cu, 6);
        double sdt = db_real(&cu, 7), keys = db_real(&cu, 8), parts = db_real(&cu, 9);
        v->min_parallelism = c->min_parallelism;
        v->max_parallelism = c->max_parallelism;
        if (!isnan(keys) && keys >= 1 && keys < v->max_parallelism)
            v->max_parallelism = (int)keys;
        if (!isnan(parts) && parts >= 1 && parts < v->max_parallelism)
            v->max_parallelism = (int)parts;
        v->backlog_s = timeline_backlog_s(v->lag, v->tdr);
        /* Only the backlog's bounds [0, 1] give a lower capacity of +inf (stored as null)
         * when the target data rate is known and the configured lower bound is above 0. */
        v->bounds_off = isnan(sdt) && !isnan(v->tdr) && c->util_min > 0;
        d->bounds_off |= v->bounds_off;
        d->current += v->current;
        d->target += v->target;
        if (!isnan(v->load) && (isnan(d->load_max) || v->load > d->load_max))
            d->load_max = v->load;
        if (!isnan(v->backlog_s) && (isnan(d->backlog_s) || v->backlog_s > d->backlog_s))
            d->backlog_s = v->backlog_s;
    }
    return db_finish(&cu, rc, errp);
}

/* new: column i as the JSON value of its type. */
static json_t *col_json(const struct db_cur *c, int i)
{
    switch (db_kind(c, i)) {
    case DB_KINT:
        return json_integer((json_int_t)db_int(c, i));
    case DB_KREAL:
        return json_real(db_real(c, i));
    case DB_KTEXT:
        return json_string(db_text(c, i));
    default:
        return json_null();
    }
}

/* The scalings of the page of decisions hi->d[k..n_d), up to the limit of TIMELINE_MAX_EVENTS
 * over every page. */
static int read_events(struct db *db, const char *job, int64_t after_id, int k,
                       struct timeline_history *hi, char **errp)
{
    static const char *const names[] = {"decision_id",    "at",      "action",
                                        "reason",         "changes", "subtasks_before",
                                        "subtasks_after", "applied"};
    struct db_cur cu;
    const struct timeline_decision *f = &hi->d[k], *l = &hi->d[hi->n_d - 1];
    int64_t room = TIMELINE_MAX_EVENTS + 1 - (int64_t)json_array_size(hi->events);
    int rc =
        db_query(db, &SQL_EVENTS, DB_ARGS(PAGE_ARGS(job, f, l, after_id), DB_INT(room)), &cu, errp);
    while (rc == 0 && db_next(&cu)) {
        if (json_array_size(hi->events) == TIMELINE_MAX_EVENTS) {
            hi->events_truncated = true;
            continue;
        }
        json_t *e = json_object();
        for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
            json_object_set_new(e, names[i], col_json(&cu, i));
        json_array_append_new(hi->events, e);
    }
    return db_finish(&cu, rc, errp);
}

/*
 * One page: TIMELINE_PAGE decisions after the cursor (at, id), then their vertex rows and
 * scalings, in one short read transaction. *n: the decisions read.
 */
static int read_page(struct db *db, const char *job, int64_t at, int64_t id, int64_t to,
                     int64_t after_id, struct timeline_history *h, int *n, char **errp)
{
    int k = h->n_d, rc = -1;
    *n = 0;
    if (db_read_begin(db, errp) < 0)
        return -1;
    if (read_decisions(db, job, at, id, to, after_id, h, errp) == 0) {
        *n = h->n_d - k;
        if (*n == 0 || (read_vertices(db, job, after_id, k, h, errp) == 0 &&
                        read_events(db, job, after_id, k, h, errp) == 0))
            rc = 0;
    }
    db_read_end(db);
    return rc;
}

int timeline_history_read(const char *db, const char *job, int64_t from, int64_t to,
                          int64_t after_id, struct timeline_history *h, char **errp)
{
    struct db *s;
    int n = 0;
    memset(h, 0, sizeof *h);
    h->job = xstrdup(job);
    h->events = json_array();
    if (!(s = db_open_read(db, errp)))
        return -1;
    /* In pages, each its own snapshot, so that a long history never holds one for the whole
     * read (a snapshot held keeps the write-ahead log from being checkpointed, db.h). Pages
     * follow (at, id): a decision stored meanwhile comes in a later page when it is after the
     * cursor; a page's decisions, vertex rows and scalings are read in one snapshot. */
    for (int64_t at = from, id = after_id;;) {
        if (read_page(s, job, at, id, to, after_id, h, &n, errp) < 0) {
            db_close(s);
            return -1;
        }
        if (n < TIMELINE_PAGE)
            break;
        at = h->d[h->n_d - 1].at;
        id = h->d[h->n_d - 1].id;
    }
    db_close(s);
    return 0;
}

void timeline_history_free(struct timeline_history *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n_vertices; i++)
        free(h->vertices[i]);
    for (int i = 0; i < h->n_codes; i++)
        free(h->codes[i]);
    for (int i = 0; i < h->n_hashes; i++)
        free(h->hashes[i]);
    free(h->hashes);
    core_runs_free(&h->by_vertex);
    core_runs_free(&h->by_hash);
    free(h->vertices);
    free(h->codes);
    free(h->d);
    free(h->vrows);
    free(h->configs);
    free(h->job);
    json_decref(h->events);
    memset(h, 0, sizeof *h);
}

/* ---------------------------------------------------------------- render -- */

/* One vertex's series while they are summed up. */
struct vseries {
    int *current, *target, *minp, *maxp; /* -1: empty */
    double *util_sum;
    int *util_n;
    double *ut, *umin, *umax, *backlog; /* NaN: empty */
};

static json_t *num(double x, double scale)
{
    if (isnan(x) || isinf(x))
        return json_null();
    return json_real(round(x * scale) / scale);
}

static json_t *ints(const int *a, int64_t n)
{
    json_t *o = json_array();
    for (int64_t i = 0; i < n; i++)
        json_array_append_new(o, a[i] < 0 ? json_null() : json_integer(a[i]));
    return o;
}

static json_t *reals(const double *a, int64_t n, double scale)
{
    json_t *o = json_array();
    for (int64_t i = 0; i < n; i++)
        json_array_append_new(o, num(a[i], scale));
    return o;
}

static bool wanted(const char *id, const char *const *only, int n_only)
{
    if (!only)
        return true;
    for (int i = 0; i < n_only; i++)
        if (strcmp(only[i], id) == 0)
            return true;
    return false;
}

int64_t timeline_values(const struct timeline_history *h, int64_t n_buckets,
                        const char *const *only, int n_only)
{
    int64_t shown = 0;
    for (int v = 0; v < h->n_vertices; v++)
        shown += wanted(h->vertices[v], only, n_only);
    return shown * n_buckets;
}

static json_t *reason_runs(const struct timeline_history *h)
{
    json_t *codes = json_array(), *runs = json_array();
    for (int i = 0; i < h->n_codes; i++)
        json_array_append_new(codes, json_string(h->codes[i]));
    for (int i = 0; i < h->n_d;) {
        int j = i;
        while (j + 1 < h->n_d && h->d[j + 1].reason == h->d[i].reason)
            j++;
        json_array_append_new(runs, json_pack("[I, I, i, I, i]", (json_int_t)h->d[i].at,
                                              (json_int_t)h->d[j].at, h->d[i].reason,
                                              (json_int_t)h->d[i].id, j - i + 1));
        i = j + 1;
    }
    return json_pack("{s:o, s:o}", "codes", codes, "runs", runs);
}

json_t *timeline_render(const struct timeline_history *h, int64_t from, int64_t to, int64_t step_ms,
                        const char *const *only, int n_only)
{
    int64_t n = 0;
    if (timeline_buckets(from, to, step_ms, &n) < 0)
        n = 0;
    struct vseries *vs = xcalloc((size_t)(h->n_vertices ? h->n_vertices : 1), sizeof *vs);
    signed char *off = xmalloc((size_t)(n ? n : 1));
    memset(off, -1, (size_t)(n ? n : 1));
    /* Series only for the vertices shown: the rest would cost buckets x vertices for nothing. */
    for (int v = 0; v < h->n_vertices; v++) {
        struct vseries *s = &vs[v];
        size_t nb = (size_t)(n ? n : 1);
        if (!wanted(h->vertices[v], only, n_only))
            continue;
        s->current = xmalloc(nb * sizeof(int));
        s->target = xmalloc(nb * sizeof(int));
        s->minp = xmalloc(nb * sizeof(int));
        s->maxp = xmalloc(nb * sizeof(int));
        s->util_n = xcalloc(nb, sizeof(int));
        s->util_sum = xcalloc(nb, sizeof(double));
        s->ut = xmalloc(nb * sizeof(double));
        s->umin = xmalloc(nb * sizeof(double));
        s->umax = xmalloc(nb * sizeof(double));
        s->backlog = xmalloc(nb * sizeof(double));
        for (size_t b = 0; b < nb; b++) {
            s->current[b] = s->target[b] = s->minp[b] = s->maxp[b] = -1;
            s->ut[b] = s->umin[b] = s->umax[b] = s->backlog[b] = NAN;
        }
    }
    /* Decisions come in time order: the last one of a bucket is the last written there. */
    for (int i = 0; i < h->n_d; i++) {
        const struct timeline_decision *d = &h->d[i];
        int64_t b = timeline_bucket_of(from, step_ms, n, d->at);
        if (b < 0)
            continue;
        const struct timeline_config *c = &h->configs[d->config];
        off[b] = (signed char)(off[b] == 1 || d->bounds_off);
        for (int k = 0; k < d->n_v; k++) {
            const struct timeline_vrow *v = &h->vrows[d->v0 + k];
            struct vseries *s = &vs[v->vertex];
            if (!s->current)
                continue; /* not shown */
            s->current[b] = v->current;
            s->target[b] = v->target;
            s->minp[b] = v->min_parallelism;
            s->maxp[b] = v->max_parallelism;
            s->ut[b] = c->util_target;
            s->umin[b] = v->bounds_off ? 0.0 : c->util_min;
            s->umax[b] = v->bounds_off ? 1.0 : c->util_max;
            if (!isnan(v->load)) {
                s->util_sum[b] += v->load;
                s->util_n[b]++;
            }
            if (!isnan(v->backlog_s) && (isnan(s->backlog[b]) || v->backlog_s > s->backlog[b]))
                s->backlog[b] = v->backlog_s;
        }
    }
    json_t *t = json_array(), *bo = json_array(), *verts = json_array();
    for (int64_t b = 0; b < n; b++) {
        json_array_append_new(t, json_integer((json_int_t)(from + b * step_ms)));
        json_array_append_new(bo, off[b] < 0 ? json_null() : json_boolean(off[b]));
    }
    for (int v = 0; v < h->n_vertices; v++) {
        struct vseries *s = &vs[v];
        if (s->current) {
            double *util = xmalloc((size_t)(n ? n : 1) * sizeof(double));
            for (int64_t b = 0; b < n; b++)
                util[b] = s->util_n[b] ? s->util_sum[b] / s->util_n[b] : NAN;
            json_array_append_new(
                verts,
                json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
                          h->vertices[v], "current", ints(s->current, n), "target",
                          ints(s->target, n), "min", ints(s->minp, n), "max", ints(s->maxp, n),
                          "util", reals(util, n, 1e4), "util_target", reals(s->ut, n, 1e4),
                          "util_min", reals(s->umin, n, 1e4), "util_max", reals(s->umax, n, 1e4),
                          "backlog_s", reals(s->backlog, n, 1e3)));
            free(util);
        }
        free(s->current);
        free(s->target);
        free(s->minp);
        free(s->maxp);
        free(s->util_n);
        free(s->util_sum);
        free(s->ut);
        free(s->umin);
        free(s->umax);
        free(s->backlog);
    }
    free(vs);
    free(off);
    const struct timeline_config *last = h->n_d ? &h->configs[h->d[h->n_d - 1].config] : NULL;
    return json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:b, s:i, s:o, s:o}", "job",
                     h->job, "from", (json_int_t)from, "to", (json_int_t)to, "step_ms",
                     (json_int_t)step_ms, "t", t, "bounds_off", bo, "vertices", verts, "reasons",
                     reason_runs(h), "events", h->events ? json_incref(h->events) : json_array(),
                     "events_truncated", h->events_truncated, "decisions", h->n_d,
                     "lag_threshold_s", last ? num(last->lag_threshold_s, 1e3) : json_null(),
                     "slo_lag_s", last ? num(last->slo_lag_s, 1e3) : json_null());
}
