/*
 * state.c - creation and release of a job's autoscaler state (the layout is in state.h), and
 * its binary form (core.h, State codec; core/README.md, State).
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

struct core_state *core_state_new(void)
{
    struct core_state *s = core__xcalloc(1, sizeof *s);
    s->last_at = INT64_MIN;
    s->w.running_since = s->w.started_at = s->w.full_from = INT64_MIN;
    s->pending.at = INT64_MIN;
    core_batch_state_init(&s->batch);
    return s;
}

/* Releases the window's samples and topology, leaving it empty. */
void core__window_free(struct core_window *w)
{
    int64_t next = w->seq0 + w->n; /* numbers are never reused */
    core__window_free_samples(w);
    for (int i = 0; i < w->n_vertices; i++)
        free(w->ids[i]);
    free(w->ids);
    free(w->parallelism);
    free(w->ctr);
    memset(w, 0, sizeof *w);
    w->running_since = w->started_at = w->full_from = INT64_MIN;
    w->seq0 = next;
}

/* Forgets the scaling the job did not apply. */
void core__unapplied_clear(struct core_state *s)
{
    for (int i = 0; i < s->unapplied.n; i++)
        free(s->unapplied.v[i].id);
    s->unapplied.n = 0;
    s->unapplied.count = 0;
}

/* Forgets the pending scaling (core/README.md, Cycle: applied or not). */
void core__pending_clear(struct core_state *s)
{
    for (int i = 0; i < s->pending.n; i++)
        free(s->pending.v[i].id);
    s->pending.n = 0;
    s->pending.at = INT64_MIN;
}

static void release(struct core_state *s)
{
    core__window_free(&s->w);
    for (int i = 0; i < s->n_hist; i++) {
        free(s->hist[i].id);
        free(s->hist[i].e);
    }
    free(s->hist);
    free(s->track);
    for (int i = 0; i < s->n_delayed; i++) {
        free(s->delayed[i].id);
        free(s->delayed[i].r);
    }
    free(s->delayed);
    for (int i = 0; i < s->n_events; i++)
        free(s->events[i].key);
    free(s->events);
    core__pending_clear(s);
    free(s->pending.v);
    core_batch_state_reset(&s->batch);
    core__unapplied_clear(s);
    free(s->unapplied.v);
}

void core_state_free(struct core_state *s)
{
    if (!s)
        return;
    release(s);
    free(s);
}

void core_state_clear(struct core_state *s)
{
    int64_t last = s->last_at, next = s->w.seq0 + s->w.n;
    release(s);
    memset(s, 0, sizeof *s);
    s->w.seq0 = next;
    s->w.running_since = s->w.started_at = s->w.full_from = INT64_MIN;
    s->pending.at = INT64_MIN;
    core_batch_state_init(&s->batch);
    s->last_at = last;
}

int64_t core_state_last_at(const struct core_state *s)
{
    return s->last_at;
}

/* ------------------------------------------------------------ binary form -- */

#define MAGIC      "GVS3" /* everything */
#define MAGIC_META "GVM3" /* everything but the window's samples (core_state_encode_meta) */
/* Written before the part after the events (restarts, counters, the pending scaling)
 * existed: loaded with that part empty. */
#define MAGIC_V2      "GVS2"
#define MAGIC_META_V2 "GVM2"

/* ------------------------------------------------------------------ writer -- */

struct wbuf {
    unsigned char *p;
    size_t n, cap;
};

static void put(struct wbuf *b, const void *x, size_t n)
{
    if (n == 0)
        return; /* x may be NULL then (an empty array) */
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n)
            cap *= 2;
        b->p = core__xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}

/* x86 and ARM Linux are little-endian; the blob is only read back by the same build. */
static void put_i32(struct wbuf *b, int32_t v)
{
    put(b, &v, sizeof v);
}

static void put_i64(struct wbuf *b, int64_t v)
{
    put(b, &v, sizeof v);
}

static void put_str(struct wbuf *b, const char *s)
{
    int32_t n = (int32_t)strlen(s);
    put_i32(b, n);
    put(b, s, (size_t)n);
}

/* One window sample: at, the global metrics, then one vmetrics per window vertex. */
static void put_sample(struct wbuf *b, const struct core_window *w, int64_t at,
                       const struct core_wrow *r)
{
    put_i64(b, at);
    put(b, &r->g, sizeof r->g);
    put(b, r->v, (size_t)w->n_vertices * sizeof r->v[0]);
}

/* A batch job's pool, an optional tail: "C" and its fields, only when a batch sample was
 * seen (a blob without it, from a streaming job or an older build, has an empty one; one
 * with "B", from before the pool asked for and the stages' accounts, has those empty). */
static void put_batch(struct wbuf *b, const struct core_batch_state *bs)
{
    if (bs->running_since == INT64_MIN)
        return;
    put(b, "C", 1);
    put_i64(b, bs->running_since);
    put_i64(b, bs->last_at);
    put(b, &bs->worker_s, sizeof bs->worker_s);
    put_i32(b, bs->target);
    put_i64(b, bs->last_change_at);
    put_i32(b, bs->down_count);
    put_i32(b, bs->down_target);
    put_i32(b, bs->requested);
    put_i32(b, bs->requested_from);
    put_i64(b, bs->requested_at);
    put_i32(b, bs->n_stages);
    for (int i = 0; i < bs->n_stages; i++) {
        const struct core_batch_stage_acc *a = &bs->stages[i];
        put_str(b, a->id);
        put(b, &a->ws, sizeof a->ws);
        put(b, &a->done_m, sizeof a->done_m);
        put(b, &a->done_max, sizeof a->done_max);
        put(b, &a->busy_max, sizeof a->busy_max);
        put_i32(b, a->state);
    }
}

/* The scaling the job did not apply, an optional tail: "N", the count and the moves, only
 * while some was not applied (a blob without it has none). */
static void put_unapplied(struct wbuf *b, const struct core_unapplied *u)
{
    if (u->count <= 0)
        return;
    put(b, "N", 1);
    put_i32(b, u->count);
    put_i32(b, u->n);
    for (int i = 0; i < u->n; i++) {
        put_str(b, u->v[i].id);
        put_i32(b, u->v[i].from);
        put_i32(b, u->v[i].to);
    }
}

static void encode(const struct core_state *st, bool samples, unsigned char **out, size_t *len)
{
    struct wbuf b = {0};
    put(&b, samples ? MAGIC : MAGIC_META, 4);
    put_i64(&b, st->last_at);
    const struct core_window *w = &st->w;
    put_i64(&b, w->running_since);
    put_i64(&b, w->seq0);
    put_i32(&b, w->n_vertices);
    for (int i = 0; i < w->n_vertices; i++) {
        put_str(&b, w->ids[i]);
        put_i32(&b, w->parallelism[i]);
    }
    put_i32(&b, samples ? w->n : 0);
    if (samples) {
        struct core_witer it;
        for (core_witer_begin(&it, w); core_witer_next(&it);)
            put_sample(&b, w, it.at, it.r);
        core_witer_end(&it);
    }
    put_i32(&b, st->n_hist);
    for (int i = 0; i < st->n_hist; i++) {
        put_str(&b, st->hist[i].id);
        put_i32(&b, st->hist[i].n);
        put(&b, st->hist[i].e, (size_t)st->hist[i].n * sizeof *st->hist[i].e);
    }
    put_i32(&b, st->n_track);
    put(&b, st->track, (size_t)st->n_track * sizeof *st->track);
    put_i32(&b, st->n_delayed);
    for (int i = 0; i < st->n_delayed; i++) {
        put_str(&b, st->delayed[i].id);
        put_i64(&b, st->delayed[i].first_trigger);
        put_i32(&b, st->delayed[i].n);
        put(&b, st->delayed[i].r, (size_t)st->delayed[i].n * sizeof *st->delayed[i].r);
    }
    put_i32(&b, st->n_events);
    for (int i = 0; i < st->n_events; i++) {
        put_str(&b, st->events[i].key);
        put_i64(&b, st->events[i].first_at);
        put_i64(&b, st->events[i].last_at);
        put_i32(&b, st->events[i].count);
    }
    put_i64(&b, w->started_at);
    put_i64(&b, w->full_from);
    put(&b, &w->topo_hash, sizeof w->topo_hash);
    for (int i = 0; i < w->n_vertices * CORE_CTR__COUNT; i++) {
        /* a window built without them (by hand) knows no counters */
        struct core_wcounter c = w->ctr ? w->ctr[i] : (struct core_wcounter){NAN, 0.0};
        put(&b, &c, sizeof c);
    }
    put_i32(&b, st->rejected);
    put_i64(&b, st->pending.at);
    put_i32(&b, st->pending.n);
    for (int i = 0; i < st->pending.n; i++) {
        put_str(&b, st->pending.v[i].id);
        put_i32(&b, st->pending.v[i].from);
        put_i32(&b, st->pending.v[i].to);
    }
    put_batch(&b, &st->batch);
    put_unapplied(&b, &st->unapplied);
    *out = b.p;
    *len = b.n;
}

void core_state_encode(const struct core_state *st, unsigned char **out, size_t *len)
{
    encode(st, true, out, len);
}

void core_state_encode_meta(const struct core_state *st, unsigned char **out, size_t *len)
{
    encode(st, false, out, len);
}

void core_state_encode_sample(const struct core_state *st, int64_t seq, unsigned char **out,
                              size_t *len)
{
    struct wbuf b = {0};
    const struct core_window *w = &st->w;
    assert(seq >= w->seq0 && seq < w->seq0 + w->n);
    if (seq == w->seq0 + w->n - 1) { /* the newest, as a decision stores it: no decoding */
        put_i64(&b, w->enc.at);
        put(&b, w->enc.prev, (size_t)core_wrow_k(w->n_vertices) * sizeof *w->enc.prev);
    } else {
        int64_t at;
        struct core_wrow *r = core__xmalloc(sizeof *r + (size_t)w->n_vertices * sizeof r->v[0]);
        core__window_get(w, (int)(seq - w->seq0), &at, r);
        put_sample(&b, w, at, r);
        free(r);
    }
    *out = b.p;
    *len = b.n;
}

/* ------------------------------------------------------------------ reader -- */

struct rbuf {
    const unsigned char *p;
    size_t n, off;
    bool bad;
};

static void get(struct rbuf *b, void *x, size_t n)
{
    if (n == 0)
        return; /* x may be NULL then (an empty array) */
    if (b->bad || n > b->n - b->off) {
        b->bad = true;
        memset(x, 0, n);
        return;
    }
    memcpy(x, b->p + b->off, n);
    b->off += n;
}

static int32_t get_i32(struct rbuf *b)
{
    int32_t v;
    get(b, &v, sizeof v);
    return v;
}

static int64_t get_i64(struct rbuf *b)
{
    int64_t v;
    get(b, &v, sizeof v);
    return v;
}

/* A count that the rest of the blob can hold at elem bytes each. */
static int get_count(struct rbuf *b, size_t elem)
{
    int32_t n = get_i32(b);
    if (n < 0 || (elem && (size_t)n > (b->n - b->off) / elem))
        b->bad = true;
    return b->bad ? 0 : n;
}

static char *get_str(struct rbuf *b)
{
    int n = get_count(b, 1);
    char *s = core__xmalloc((size_t)n + 1);
    get(b, s, (size_t)n);
    s[n] = '\0';
    return s;
}

/* Reads one sample and appends it to the window, unless the blob is bad (then the window
 * is unchanged). */
static void get_sample(struct rbuf *b, struct core_window *w)
{
    size_t vsz = (size_t)w->n_vertices * sizeof(struct core_vmetrics);
    struct core_wrow *r = core__xmalloc(sizeof *r + vsz);
    int64_t at = get_i64(b);
    get(b, &r->g, sizeof r->g);
    get(b, r->v, vsz);
    if (!b->bad)
        core_window_append(w, at, r);
    free(r);
}

/* The part after the events; a version 2 blob (v2) has none, which leaves the window's
 * counters unknown, its stabilization counting from running_since, and no pending scaling. */
static void load_ext(struct rbuf *b, struct core_state *st, bool v2)
{
    struct core_window *w = &st->w;
    size_t nc = (size_t)w->n_vertices * CORE_CTR__COUNT;
    w->ctr = core__xcalloc(nc ? nc : 1, sizeof *w->ctr);
    for (size_t k = 0; k < nc; k++)
        w->ctr[k].sent = NAN;
    w->started_at = w->n_vertices ? w->running_since : INT64_MIN;
    if (b->bad || v2)
        return;
    w->started_at = get_i64(b);
    w->full_from = get_i64(b);
    get(b, &w->topo_hash, sizeof w->topo_hash);
    get(b, w->ctr, nc * sizeof *w->ctr);
    st->rejected = get_i32(b);
    st->pending.at = get_i64(b);
    int np = get_count(b, 12);
    core__grow(&st->pending.v, &st->pending.cap, np, sizeof *st->pending.v);
    for (int i = 0; i < np; i++) {
        struct core_pending_vertex *v = &st->pending.v[i];
        v->id = get_str(b);
        st->pending.n = i + 1;
        v->from = get_i32(b);
        v->to = get_i32(b);
    }
}

/* The optional tail of put_unapplied, its tag read. */
static void get_unapplied(struct rbuf *b, struct core_state *st)
{
    struct core_unapplied *u = &st->unapplied;
    int count = get_i32(b);
    int nv = get_count(b, 12);
    core__grow(&u->v, &u->cap, nv, sizeof *u->v);
    for (int i = 0; i < nv && !b->bad; i++) {
        struct core_pending_vertex *v = &u->v[i];
        v->id = get_str(b);
        u->n = i + 1;
        v->from = get_i32(b);
        v->to = get_i32(b);
    }
    u->count = count > 0 ? count : 1;
}

/* The optional tails: put_batch's ("B"), then put_unapplied's ("N"), each absent or once. */
static void get_tails(struct rbuf *b, struct core_state *st)
{
    char tag;
    if (b->bad || b->off == b->n)
        return;
    get(b, &tag, 1);
    if (tag == 'N') {
        get_unapplied(b, st);
        if (b->off != b->n)
            b->bad = true;
        return;
    }
    if (tag != 'B' && tag != 'C') {
        b->bad = true;
        return;
    }
    struct core_batch_state *bs = &st->batch;
    bs->running_since = get_i64(b);
    bs->last_at = get_i64(b);
    get(b, &bs->worker_s, sizeof bs->worker_s);
    bs->target = get_i32(b);
    bs->last_change_at = get_i64(b);
    bs->down_count = get_i32(b);
    bs->down_target = get_i32(b);
    if (tag == 'C') {
        bs->requested = get_i32(b);
        bs->requested_from = get_i32(b);
        bs->requested_at = get_i64(b);
        int n = get_count(b, 8 + 4 * sizeof(double));
        core__grow(&bs->stages, &bs->cap_stages, n, sizeof *bs->stages);
        for (int i = 0; i < n; i++) {
            struct core_batch_stage_acc *a = &bs->stages[i];
            a->id = get_str(b);
            bs->n_stages = i + 1;
            get(b, &a->ws, sizeof a->ws);
            get(b, &a->done_m, sizeof a->done_m);
            get(b, &a->done_max, sizeof a->done_max);
            get(b, &a->busy_max, sizeof a->busy_max);
            a->state = get_i32(b);
        }
    }
    if (b->bad || b->off == b->n)
        return;
    get(b, &tag, 1);
    if (tag != 'N') {
        b->bad = true;
        return;
    }
    get_unapplied(b, st);
}

int core_state_decode(const unsigned char *in, size_t len, struct core_state *st, bool *meta,
                      char *err, size_t err_len)
{
    bool is_meta;
    struct rbuf b = {.p = in, .n = len};
    char magic[4];
    core_state_clear(st);
    get(&b, magic, 4);
    bool v2 = memcmp(magic, MAGIC_V2, 4) == 0 || memcmp(magic, MAGIC_META_V2, 4) == 0;
    if (b.bad || (memcmp(magic, MAGIC, 4) != 0 && memcmp(magic, MAGIC_META, 4) != 0 && !v2)) {
        snprintf(err, err_len, "not a governor state blob");
        return -1;
    }
    is_meta = memcmp(magic, MAGIC_META, 4) == 0 || memcmp(magic, MAGIC_META_V2, 4) == 0;
    if (meta)
        *meta = is_meta;
    st->last_at = get_i64(&b);
    struct core_window *w = &st->w;
    w->running_since = get_i64(&b);
    w->seq0 = get_i64(&b);
    int nv = get_count(&b, 8);
    w->ids = core__xcalloc((size_t)nv, sizeof *w->ids);
    w->parallelism = core__xcalloc((size_t)nv, sizeof *w->parallelism);
    w->n_vertices = nv;
    for (int i = 0; i < nv; i++) {
        w->ids[i] = get_str(&b);
        w->parallelism[i] = get_i32(&b);
    }
    size_t vsz = (size_t)nv * sizeof(struct core_vmetrics);
    int ns = get_count(&b, sizeof(int64_t) + sizeof(struct core_gmetrics) + vsz);
    if (is_meta && ns != 0)
        b.bad = true;
    for (int i = 0; i < ns && !b.bad; i++)
        get_sample(&b, w);
    int nh = get_count(&b, 8);
    core__grow(&st->hist, &st->cap_hist, nh, sizeof *st->hist);
    for (int i = 0; i < nh; i++) {
        struct core_vhistory *h = &st->hist[i];
        h->id = get_str(&b);
        st->n_hist = i + 1;
        int ne = get_count(&b, sizeof *h->e);
        core__grow(&h->e, &h->cap, ne, sizeof *h->e);
        get(&b, h->e, (size_t)ne * sizeof *h->e);
        h->n = ne;
    }
    int nt = get_count(&b, sizeof *st->track);
    core__grow(&st->track, &st->cap_track, nt, sizeof *st->track);
    get(&b, st->track, (size_t)nt * sizeof *st->track);
    st->n_track = nt;
    int nd = get_count(&b, 8);
    core__grow(&st->delayed, &st->cap_delayed, nd, sizeof *st->delayed);
    for (int i = 0; i < nd; i++) {
        struct core_delayed *d = &st->delayed[i];
        d->id = get_str(&b);
        st->n_delayed = i + 1;
        d->first_trigger = get_i64(&b);
        int nr = get_count(&b, sizeof *d->r);
        core__grow(&d->r, &d->cap, nr, sizeof *d->r);
        get(&b, d->r, (size_t)nr * sizeof *d->r);
        d->n = nr;
    }
    int nev = get_count(&b, 8);
    core__grow(&st->events, &st->cap_events, nev, sizeof *st->events);
    for (int i = 0; i < nev; i++) {
        struct core_event_seen *e = &st->events[i];
        e->key = get_str(&b);
        st->n_events = i + 1;
        e->first_at = get_i64(&b);
        e->last_at = get_i64(&b);
        e->count = get_i32(&b);
    }
    load_ext(&b, st, v2);
    if (!v2)
        get_tails(&b, st);
    if (b.bad || b.off != b.n) {
        snprintf(err, err_len, "truncated or corrupt state blob (at byte %zu of %zu)", b.off, b.n);
        core_state_clear(st);
        st->last_at = INT64_MIN;
        return -1;
    }
    return 0;
}

int core_state_decode_sample(struct core_state *st, int64_t seq, const unsigned char *in,
                             size_t len, char *err, size_t err_len)
{
    struct core_window *w = &st->w;
    if (seq != w->seq0 + w->n) {
        snprintf(err, err_len, "window sample %lld is out of order (expected %lld)", (long long)seq,
                 (long long)(w->seq0 + w->n));
        return -1;
    }
    struct rbuf b = {.p = in, .n = len};
    if (len != sizeof(int64_t) + sizeof(struct core_gmetrics) +
                   (size_t)w->n_vertices * sizeof(struct core_vmetrics))
        b.bad = true;
    get_sample(&b, w);
    if (b.bad) {
        snprintf(err, err_len, "window sample %lld: %zu bytes, not a sample of %d vertices",
                 (long long)seq, len, w->n_vertices);
        return -1;
    }
    return 0;
}

int64_t core_state_seq0(const struct core_state *st)
{
    return st->w.seq0;
}

int64_t core_state_seq_end(const struct core_state *st)
{
    return st->w.seq0 + st->w.n;
}

size_t core_state_window_bytes(const struct core_state *st)
{
    return core__window_bytes(&st->w);
}
