/*
 * statejson.c - the old JSON form of a job's state, read for migration 008 (see statejson.h).
 *
 * Every array of the state is allocated at its final size and zeroed before it is filled, with
 * its count set, so that a failure half-way leaves a state core_state_clear releases whole.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state.h"
#include "store/statejson.h"
#include "base/xmem.h"

/* The metric vectors of a sample are arrays whose columns the document names ("vmetrics",
 * "gmetrics"): read by name, a column this build does not know is skipped and one it lacks
 * is NaN. */
struct column {
    const char *name;
    size_t off;
};
#define VCOL(f)                                                                                    \
    {                                                                                              \
#f, offsetof(struct core_vmetrics, f)                                                      \
    }
#define GCOL(f)                                                                                    \
    {                                                                                              \
#f, offsetof(struct core_gmetrics, f)                                                      \
    }
static const struct column vcols[] = {
    VCOL(load),    VCOL(load_avg),     VCOL(load_max), VCOL(acc_busy),     VCOL(rec_in),
    VCOL(rec_out), VCOL(rec_in_per_s), VCOL(lag),      VCOL(observed_tpr),
};
static const struct column gcols[] = {
    GCOL(slots_used), GCOL(gc_pressure),  GCOL(heap_used),
    GCOL(heap_ratio), GCOL(managed_used), GCOL(metaspace_used),
};
#define N_VCOLS  ((int)(sizeof vcols / sizeof vcols[0]))
#define N_GCOLS  ((int)(sizeof gcols / sizeof gcols[0]))
#define MAX_COLS 64

struct rd {
    char *err;
    size_t err_len;
};

static int fail(struct rd *r, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct rd *r, const char *where, const char *fmt, ...)
{
    char m[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    snprintf(r->err, r->err_len, "%s%s%s", where, *where ? ": " : "", m);
    return -1;
}

/* Unpacks obj with a jansson format (types checked strictly); a failure names where. */
static int unpack(struct rd *r, const char *where, json_t *obj, const char *fmt, ...)
{
    json_error_t je;
    va_list ap;
    va_start(ap, fmt);
    int rc = json_vunpack_ex(obj, &je, 0, fmt, ap);
    va_end(ap);
    return rc < 0 ? fail(r, where, "%s", je.text) : 0;
}

/* The size of array a, which must be one (of fewer than 2^28 elements). -1 otherwise. */
static int array_size(struct rd *r, const char *where, const json_t *a)
{
    if (!json_is_array(a))
        return fail(r, where, "expected an array");
    if (json_array_size(a) > (1u << 28))
        return fail(r, where, "too long");
    return (int)json_array_size(a);
}

/* A double: a number, or "NaN", "Infinity", "-Infinity" (what the form wrote for those). */
static int number(struct rd *r, const char *where, const json_t *v, double *out)
{
    const char *s = json_string_value(v);
    if (json_is_number(v))
        *out = json_number_value(v);
    else if (s && strcmp(s, "NaN") == 0)
        *out = NAN;
    else if (s && strcmp(s, "Infinity") == 0)
        *out = INFINITY;
    else if (s && strcmp(s, "-Infinity") == 0)
        *out = -INFINITY;
    else
        return fail(r, where, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"");
    return 0;
}

/* Maps the column names of names (an array) to offsets into a vector, -1 for unknown ones. */
static int columns(struct rd *r, const char *where, const json_t *names, const struct column *c,
                   int n_c, long *col)
{
    int n = array_size(r, where, names);
    if (n > MAX_COLS)
        return fail(r, where, "more than %d columns", MAX_COLS);
    for (int i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(names, (size_t)i));
        if (!name)
            return fail(r, where, "column %d is not a name", i);
        col[i] = -1;
        for (int k = 0; k < n_c; k++)
            if (strcmp(c[k].name, name) == 0)
                col[i] = (long)c[k].off;
    }
    return n;
}

/* Fills the vector at base (a struct of doubles described by c) from the array a of n_col
 * values laid out by col. */
static int vector(struct rd *r, const char *where, const json_t *a, const long *col, int n_col,
                  void *base, const struct column *c, int n_c)
{
    for (int k = 0; k < n_c; k++)
        *(double *)((char *)base + c[k].off) = NAN;
    if (array_size(r, where, a) != n_col)
        return fail(r, where, "expected an array of %d numbers", n_col);
    for (int i = 0; i < n_col; i++) {
        double x;
        if (number(r, where, json_array_get(a, (size_t)i), &x) < 0)
            return -1;
        if (col[i] >= 0)
            *(double *)((char *)base + col[i]) = x;
    }
    return 0;
}

static char *copy(const char *s)
{
    return xstrdup(s ? s : "");
}

static int read_window(struct rd *r, json_t *jw, struct core_window *w)
{
    json_t *ids, *par, *vnames, *gnames, *samples;
    json_int_t seq0 = 0, since;
    char where[96];
    if (unpack(r, "window", jw, "{s?I, s:I, s:o, s:o, s:o, s:o, s:o}", "seq0", &seq0,
               "running_since", &since, "ids", &ids, "parallelism", &par, "vmetrics", &vnames,
               "gmetrics", &gnames, "samples", &samples) < 0)
        return -1;
    w->seq0 = seq0;
    w->running_since = since;
    int nv = array_size(r, "window.ids", ids);
    if (nv < 0)
        return -1;
    if (array_size(r, "window.parallelism", par) != nv)
        return fail(r, "window.parallelism", "expected %d entries, one per id", nv);
    w->ids = xcalloc((size_t)nv, sizeof *w->ids);
    w->parallelism = xcalloc((size_t)nv, sizeof *w->parallelism);
    w->n_vertices = nv;
    for (int i = 0; i < nv; i++) {
        const json_t *p = json_array_get(par, (size_t)i);
        snprintf(where, sizeof where, "window.ids[%d]", i);
        if (!json_is_string(json_array_get(ids, (size_t)i)))
            return fail(r, where, "expected a string");
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > INT32_MAX)
            return fail(r, "window.parallelism", "entry %d is not an integer >= 1", i);
        w->ids[i] = copy(json_string_value(json_array_get(ids, (size_t)i)));
        w->parallelism[i] = (int)json_integer_value(p);
    }
    long vcol[MAX_COLS], gcol[MAX_COLS];
    int n_vcol = columns(r, "window.vmetrics", vnames, vcols, N_VCOLS, vcol);
    int n_gcol = columns(r, "window.gmetrics", gnames, gcols, N_GCOLS, gcol);
    int ns = array_size(r, "window.samples", samples);
    if (n_vcol < 0 || n_gcol < 0 || ns < 0)
        return -1;
    struct core_wrow *row = xcalloc(1, sizeof *row + (size_t)nv * sizeof row->v[0]);
    int rc = -1;
    for (int i = 0; i < ns; i++) {
        json_t *g, *v;
        json_int_t at;
        snprintf(where, sizeof where, "window.samples[%d]", i);
        if (unpack(r, where, json_array_get(samples, (size_t)i), "{s:I, s:o, s:o}", "at", &at, "g",
                   &g, "v", &v) < 0 ||
            vector(r, where, g, gcol, n_gcol, &row->g, gcols, N_GCOLS) < 0)
            goto out;
        if (array_size(r, where, v) != nv) {
            fail(r, where, "expected %d metric vectors, one per vertex", nv);
            goto out;
        }
        for (int k = 0; k < nv; k++) {
            snprintf(where, sizeof where, "window.samples[%d].v[%d]", i, k);
            if (vector(r, where, json_array_get(v, (size_t)k), vcol, n_vcol, &row->v[k], vcols,
                       N_VCOLS) < 0)
                goto out;
        }
        core_window_append(w, at, row);
    }
    rc = 0;
out:
    free(row);
    return rc;
}

static int read_history(struct rd *r, json_t *a, struct core_state *st)
{
    char where[64];
    int n = array_size(r, "history", a);
    if (n < 0)
        return -1;
    st->hist = xcalloc((size_t)n, sizeof *st->hist);
    st->n_hist = st->cap_hist = n;
    for (int i = 0; i < n; i++) {
        struct core_vhistory *h = &st->hist[i];
        const char *id;
        json_t *es;
        snprintf(where, sizeof where, "history[%d]", i);
        if (unpack(r, where, json_array_get(a, (size_t)i), "{s:s, s:o}", "id", &id, "entries",
                   &es) < 0)
            return -1;
        h->id = copy(id);
        int ne = array_size(r, where, es);
        if (ne < 0)
            return -1;
        h->e = xcalloc((size_t)ne, sizeof *h->e);
        h->n = h->cap = ne;
        for (int k = 0; k < ne; k++) {
            struct core_hist_entry *e = &h->e[k];
            json_t *tpr, *epr, *tdr;
            json_int_t at;
            snprintf(where, sizeof where, "history[%d].entries[%d]", i, k);
            if (unpack(r, where, json_array_get(es, (size_t)k), "{s:I, s:i, s:i, s:o, s:o, s:o}",
                       "at", &at, "current_parallelism", &e->current_parallelism, "new_parallelism",
                       &e->new_parallelism, "true_processing_rate", &tpr,
                       "expected_processing_rate", &epr, "target_data_rate", &tdr) < 0 ||
                number(r, where, tpr, &e->true_processing_rate) < 0 ||
                number(r, where, epr, &e->expected_processing_rate) < 0 ||
                number(r, where, tdr, &e->target_data_rate) < 0)
                return -1;
            e->at = at;
        }
    }
    return 0;
}

static int read_tracking(struct rd *r, json_t *a, struct core_state *st)
{
    char where[64];
    int n = array_size(r, "tracking", a);
    if (n < 0)
        return -1;
    st->track = xcalloc((size_t)n, sizeof *st->track);
    st->n_track = st->cap_track = n;
    for (int i = 0; i < n; i++) {
        json_int_t at, ms;
        snprintf(where, sizeof where, "tracking[%d]", i);
        if (unpack(r, where, json_array_get(a, (size_t)i), "{s:I, s:I}", "at", &at, "restart_ms",
                   &ms) < 0)
            return -1;
        st->track[i] = (struct core_tracking){at, ms};
    }
    return 0;
}

static int read_delayed(struct rd *r, json_t *a, struct core_state *st)
{
    char where[64];
    int n = array_size(r, "delayed", a);
    if (n < 0)
        return -1;
    st->delayed = xcalloc((size_t)n, sizeof *st->delayed);
    st->n_delayed = st->cap_delayed = n;
    for (int i = 0; i < n; i++) {
        struct core_delayed *d = &st->delayed[i];
        const char *id;
        json_int_t first;
        json_t *rs;
        snprintf(where, sizeof where, "delayed[%d]", i);
        if (unpack(r, where, json_array_get(a, (size_t)i), "{s:s, s:I, s:o}", "id", &id,
                   "first_trigger", &first, "records", &rs) < 0)
            return -1;
        d->id = copy(id);
        d->first_trigger = first;
        int nr = array_size(r, where, rs);
        if (nr < 0)
            return -1;
        d->r = xcalloc((size_t)nr, sizeof *d->r);
        d->n = d->cap = nr;
        for (int k = 0; k < nr; k++) {
            json_int_t at;
            int outside;
            snprintf(where, sizeof where, "delayed[%d].records[%d]", i, k);
            if (unpack(r, where, json_array_get(rs, (size_t)k), "{s:I, s:i, s:b}", "at", &at,
                       "parallelism", &d->r[k].parallelism, "outside_bounds", &outside) < 0)
                return -1;
            d->r[k].at = at;
            d->r[k].outside_bounds = outside;
        }
    }
    return 0;
}

static int read_events(struct rd *r, json_t *a, struct core_state *st)
{
    char where[64];
    int n = array_size(r, "events", a);
    if (n < 0)
        return -1;
    st->events = xcalloc((size_t)n, sizeof *st->events);
    st->n_events = st->cap_events = n;
    for (int i = 0; i < n; i++) {
        struct core_event_seen *e = &st->events[i];
        const char *key;
        json_int_t first, last;
        snprintf(where, sizeof where, "events[%d]", i);
        if (unpack(r, where, json_array_get(a, (size_t)i), "{s:s, s:I, s:I, s:i}", "key", &key,
                   "first_at", &first, "last_at", &last, "count", &e->count) < 0)
            return -1;
        e->key = copy(key);
        e->first_at = first;
        e->last_at = last;
    }
    return 0;
}

/* The parts written since migration 002, each of which may be absent (see statejson.h). */
static int read_since_002(struct rd *r, json_t *in, json_t *jw, struct core_state *st)
{
    struct core_window *w = &st->w;
    json_int_t started = w->n_vertices ? w->running_since : INT64_MIN, full = INT64_MIN;
    const char *hash = NULL;
    json_t *ctr = NULL, *pending = NULL;
    char where[64];
    if (unpack(r, "window", jw, "{s?I, s?I, s?s, s?o}", "started_at", &started, "full_from", &full,
               "topo_hash", &hash, "counters", &ctr) < 0 ||
        unpack(r, "", in, "{s?i, s?o}", "rejected", &st->rejected, "pending", &pending) < 0)
        return -1;
    w->started_at = started;
    w->full_from = full;
    if (hash) {
        char *end = NULL;
        w->topo_hash = strtoull(hash, &end, 16);
        if (strlen(hash) != 16 || *end)
            return fail(r, "window.topo_hash", "expected 16 hex digits");
    }
    size_t nc = (size_t)w->n_vertices * CORE_CTR__COUNT;
    w->ctr = xcalloc(nc, sizeof *w->ctr);
    for (size_t k = 0; k < nc; k++)
        w->ctr[k].sent = NAN;
    if (ctr && array_size(r, "window.counters", ctr) != w->n_vertices)
        return fail(r, "window.counters", "expected %d entries, one per vertex", w->n_vertices);
    for (int i = 0; ctr && i < w->n_vertices; i++) {
        const json_t *c = json_array_get(ctr, (size_t)i);
        snprintf(where, sizeof where, "window.counters[%d]", i);
        if (array_size(r, where, c) != 2 * CORE_CTR__COUNT)
            return fail(r, where, "expected %d numbers", 2 * CORE_CTR__COUNT);
        for (int k = 0; k < CORE_CTR__COUNT; k++) {
            struct core_wcounter *wc = &w->ctr[i * CORE_CTR__COUNT + k];
            if (number(r, where, json_array_get(c, (size_t)(2 * k)), &wc->sent) < 0 ||
                number(r, where, json_array_get(c, (size_t)(2 * k + 1)), &wc->offset) < 0)
                return -1;
        }
    }
    if (!pending)
        return 0;
    json_int_t at;
    json_t *vs;
    if (unpack(r, "pending", pending, "{s:I, s:o}", "at", &at, "vertices", &vs) < 0)
        return -1;
    st->pending.at = at;
    int n = array_size(r, "pending.vertices", vs);
    if (n < 0)
        return -1;
    st->pending.v = xcalloc((size_t)n, sizeof *st->pending.v);
    st->pending.n = st->pending.cap = n;
    for (int i = 0; i < n; i++) {
        struct core_pending_vertex *v = &st->pending.v[i];
        const char *id;
        snprintf(where, sizeof where, "pending.vertices[%d]", i);
        if (unpack(r, where, json_array_get(vs, (size_t)i), "{s:s, s:i, s:i}", "id", &id, "from",
                   &v->from, "to", &v->to) < 0)
            return -1;
        v->id = copy(id);
    }
    return 0;
}

int statejson_read(const char *text, struct core_state *st, char *err, size_t err_len)
{
    struct rd r = {err, err_len};
    json_error_t je;
    json_t *in = json_loads(text, 0, &je), *jw, *hist, *track, *delayed, *events;
    json_int_t version, last_at;
    int rc = -1;
    core_state_clear(st);
    st->last_at = INT64_MIN;
    if (!in) {
        fail(&r, "", "not JSON: %s", je.text);
        goto out;
    }
    if (unpack(&r, "", in, "{s:I}", "version", &version) < 0)
        goto out;
    if (version != 1) {
        fail(&r, "version", "unsupported state version %" PRId64 " (this build reads 1)",
             (int64_t)version);
        goto out;
    }
    if (unpack(&r, "", in, "{s:I, s:o, s:o, s:o, s:o, s:o}", "last_at", &last_at, "window", &jw,
               "history", &hist, "tracking", &track, "delayed", &delayed, "events", &events) < 0)
        goto out;
    st->last_at = last_at;
    if (read_window(&r, jw, &st->w) < 0 || read_history(&r, hist, st) < 0 ||
        read_tracking(&r, track, st) < 0 || read_delayed(&r, delayed, st) < 0 ||
        read_events(&r, events, st) < 0 || read_since_002(&r, in, jw, st) < 0)
        goto out;
    rc = 0;
out:
    json_decref(in);
    if (rc < 0) {
        core_state_clear(st);
        st->last_at = INT64_MIN;
    }
    return rc;
}
