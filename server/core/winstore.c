/*
 * winstore.c - where the metric window keeps its samples (core/README.md, Window: Memory):
 * compressed, in chunks of the samples' codec (codec.h), the newest sample's numbers in the
 * state that continues the last chunk; decoded all at once for a decision (the view), and
 * read through an iterator, oldest first, whether decoded or not.
 *
 * A window sample is a row of the codec: the global metrics (struct core_gmetrics, in order),
 * then each window vertex's metrics (struct core_vmetrics, in order), in the window's vertex
 * order; the cumulative counters (ACCUMULATED_BUSY_TIME, NUM_RECORDS_IN, NUM_RECORDS_OUT) are
 * the codec's counters.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

_Static_assert(sizeof(struct core_gmetrics) == CORE_WROW_G * sizeof(double),
               "the global metrics are doubles only");
_Static_assert(sizeof(struct core_vmetrics) == CORE_WROW_V * sizeof(double),
               "a vertex's metrics are doubles only");
_Static_assert(sizeof(struct core_wrow) == sizeof(struct core_gmetrics),
               "a row's vertices follow its global metrics");

static const struct core_codec_limits limits = {.max_rows = CORE_WINDOW_CHUNK_ROWS,
                                                .max_span_ms = CORE_WINDOW_CHUNK_MS};

static size_t row_size(int nv)
{
    return sizeof(struct core_wrow) + (size_t)nv * sizeof(struct core_vmetrics);
}

/* The counter mask of a window row of nv vertices into mask[(k + 7) / 8] (zeroed). */
static void counter_mask(int nv, unsigned char *mask)
{
    static const size_t ctr[] = {offsetof(struct core_vmetrics, acc_busy),
                                 offsetof(struct core_vmetrics, rec_in),
                                 offsetof(struct core_vmetrics, rec_out)};
    for (int v = 0; v < nv; v++)
        for (int c = 0; c < 3; c++) {
            int s = CORE_WROW_G + CORE_WROW_V * v + (int)(ctr[c] / sizeof(double));
            mask[s >> 3] |= (unsigned char)(1u << (s & 7));
        }
}

/* ------------------------------------------------------------------- view -- */

static struct core_wrow *view_row(const struct core_wview *vw, int i)
{
    return (struct core_wrow *)(void *)(vw->rows + (size_t)i * vw->stride);
}

/* Room for one more row at the end of the view. */
static void view_reserve(struct core_wview *vw)
{
    if (vw->first + vw->n < vw->cap)
        return;
    if (vw->first > 0) { /* slide the rows to the front */
        memmove(vw->rows, vw->rows + (size_t)vw->first * vw->stride, (size_t)vw->n * vw->stride);
        memmove(vw->at, vw->at + vw->first, (size_t)vw->n * sizeof *vw->at);
        vw->first = 0;
        if (vw->n < vw->cap)
            return;
    }
    vw->cap = vw->cap ? vw->cap * 2 : 32;
    vw->rows = core__xrealloc(vw->rows, (size_t)vw->cap * vw->stride);
    vw->at = core__xrealloc(vw->at, (size_t)vw->cap * sizeof *vw->at);
}

static void view_free(struct core_wview *vw)
{
    if (!vw)
        return;
    free(vw->rows);
    free(vw->at);
    free(vw);
}

void core__window_decode(struct core_window *w)
{
    if (w->view)
        return;
    struct core_wview *vw = core__xcalloc(1, sizeof *vw);
    vw->stride = row_size(w->n_vertices);
    vw->cap = w->n + 1; /* room for the next sample, and for one decoded over */
    vw->rows = core__xmalloc((size_t)vw->cap * vw->stride);
    vw->at = core__xmalloc((size_t)vw->cap * sizeof *vw->at);
    /* every chunk straight into the view's rows, less those that have left the window */
    int skip = w->skip;
    for (int c = 0; c < w->n_chunks; c++) {
        struct core_codec_reader rd;
        char err[128];
        const struct core_chunk *ch = w->chunks[c];
        if (core_codec_read_init(&rd, ch->p, ch->nbits, ch->n, err, sizeof err) < 0)
            abort(); /* the window's own bits */
        for (int r = 0; r < ch->n; r++) {
            if (core_codec_read_row(&rd, &vw->at[vw->n], (double *)(void *)view_row(vw, vw->n)) !=
                1)
                abort();
            if (skip > 0)
                skip--; /* decoded over by the next */
            else
                vw->n++;
        }
        core_codec_read_deinit(&rd);
    }
    assert(vw->n == w->n);
    w->view = vw;
}

void core__window_release(struct core_window *w)
{
    view_free(w->view);
    w->view = NULL;
}

/* --------------------------------------------------------------- iterator -- */

/* Reading the chunks: the chunk being read, its reader, the row it decodes into. */
struct core_witer_dec {
    int chunk;
    bool reading;
    struct core_codec_reader rd;
    struct core_wrow *buf;
};

/* Opens chunk c of the window for reading (the window's own bits: a failure is a bug). */
static void open_chunk(struct core_witer_dec *d, const struct core_window *w, int c)
{
    const struct core_chunk *ch = w->chunks[c];
    char err[128];
    if (d->reading)
        core_codec_read_deinit(&d->rd);
    if (core_codec_read_init(&d->rd, ch->p, ch->nbits, ch->n, err, sizeof err) < 0)
        abort();
    d->reading = true;
    d->chunk = c;
}

bool core_witer_decode_next(struct core_witer *it)
{
    const struct core_window *w = it->w;
    if (it->k >= w->n)
        return false;
    struct core_witer_dec *d = it->dec;
    if (!d) {
        d = it->dec = core__xcalloc(1, sizeof *d);
        d->chunk = -1;
        d->buf = core__xmalloc(row_size(w->n_vertices));
    }
    double *row = (double *)(void *)d->buf;
    for (;;) {
        if (!d->reading || d->rd.row >= d->rd.n) {
            assert(d->chunk + 1 < w->n_chunks); /* the chunks hold the window's n rows */
            open_chunk(d, w, d->chunk + 1);
            if (d->chunk == 0) /* the rows that have left the window */
                for (int s = 0; s < w->skip; s++)
                    if (core_codec_read_row(&d->rd, &it->at, row) != 1)
                        abort();
            continue;
        }
        if (core_codec_read_row(&d->rd, &it->at, row) != 1)
            abort();
        it->r = d->buf;
        it->k++;
        return true;
    }
}

void core_witer_dec_free(struct core_witer *it)
{
    struct core_witer_dec *d = it->dec;
    if (d->reading)
        core_codec_read_deinit(&d->rd);
    free(d->buf);
    free(d);
    it->dec = NULL;
}

/* -------------------------------------------------------------- newest row -- */

double core__window_newest(const struct core_window *w, int series, int64_t *at)
{
    if (w->n == 0)
        return NAN;
    if (at)
        *at = w->enc.at;
    double x;
    memcpy(&x, &w->enc.prev[series], sizeof x);
    return x;
}

int64_t core__window_at(const struct core_window *w, int k)
{
    assert(k >= 0 && k < w->n);
    if (w->view)
        return w->view->at[w->view->first + k];
    if (k == w->n - 1)
        return w->enc.at;
    struct core_witer it;
    core_witer_begin(&it, w);
    while (core_witer_next(&it) && it.k <= k)
        ;
    int64_t at = it.at;
    core_witer_end(&it);
    return at;
}

void core__window_get(const struct core_window *w, int k, int64_t *at, struct core_wrow *out)
{
    assert(k >= 0 && k < w->n);
    size_t size = row_size(w->n_vertices);
    if (w->view) {
        *at = w->view->at[w->view->first + k];
        memcpy(out, view_row(w->view, w->view->first + k), size);
        return;
    }
    struct core_witer it;
    core_witer_begin(&it, w);
    while (core_witer_next(&it))
        if (it.k == k + 1) {
            *at = it.at;
            memcpy(out, it.r, size);
            break;
        }
    core_witer_end(&it);
}

/* ----------------------------------------------------------------- changes -- */

void core_window_append(struct core_window *w, int64_t at, const struct core_wrow *r)
{
    int k = core_wrow_k(w->n_vertices);
    if (!w->enc.prev || w->enc.k != k) {
        core_codec_state_deinit(&w->enc);
        core_codec_state_init(&w->enc, k);
    }
    unsigned char stack[256];
    size_t mlen = ((size_t)k + 7) / 8;
    unsigned char *ctr = mlen <= sizeof stack ? stack : core__xmalloc(mlen);
    memset(ctr, 0, mlen);
    counter_mask(w->n_vertices, ctr);
    struct core_chunk **open = w->n_chunks ? &w->chunks[w->n_chunks - 1] : NULL;
    const double *row = (const double *)(const void *)r;
    if (!open || core_codec_append(open, &w->enc, &limits, at, row, ctr, NULL, 0) == 1) {
        if (open)
            core_codec_shrink(open);
        core__grow(&w->chunks, &w->cap_chunks, w->n_chunks + 1, sizeof *w->chunks);
        w->chunks[w->n_chunks] = NULL;
        if (core_codec_append(&w->chunks[w->n_chunks], &w->enc, &limits, at, row, ctr, NULL, 0))
            abort(); /* a new chunk takes any row */
        w->n_chunks++;
    }
    if (ctr != stack)
        free(ctr);
    w->n++;
    if (w->view) {
        struct core_wview *vw = w->view;
        view_reserve(vw);
        memcpy(view_row(vw, vw->first + vw->n), r, vw->stride);
        vw->at[vw->first + vw->n] = at;
        vw->n++;
    }
}

void core__window_drop(struct core_window *w, int n)
{
    assert(n >= 0 && n <= w->n);
    if (n == 0)
        return;
    w->n -= n;
    w->seq0 += n;
    w->skip += n;
    if (w->view) {
        w->view->first += n;
        w->view->n -= n;
    }
    /* whole chunks that have left the window go; the open one stays while rows remain */
    int gone = 0;
    while (gone < w->n_chunks && w->skip >= w->chunks[gone]->n &&
           (gone < w->n_chunks - 1 || w->n == 0)) {
        w->skip -= w->chunks[gone]->n;
        free(w->chunks[gone]);
        gone++;
    }
    if (gone) {
        memmove(w->chunks, w->chunks + gone, (size_t)(w->n_chunks - gone) * sizeof *w->chunks);
        w->n_chunks -= gone;
    }
    if (w->n_chunks == 0)
        w->skip = 0;
}

void core__window_free_samples(struct core_window *w)
{
    for (int i = 0; i < w->n_chunks; i++)
        free(w->chunks[i]);
    free(w->chunks);
    w->chunks = NULL;
    w->n_chunks = w->cap_chunks = w->skip = 0;
    core_codec_state_deinit(&w->enc);
    core__window_release(w);
    w->n = 0;
}

size_t core__window_bytes(const struct core_window *w)
{
    size_t b = (size_t)w->cap_chunks * sizeof *w->chunks;
    for (int i = 0; i < w->n_chunks; i++)
        b += sizeof *w->chunks[i] + w->chunks[i]->cap;
    if (w->enc.prev)
        b += (size_t)w->enc.k * (sizeof *w->enc.prev + sizeof *w->enc.dk);
    return b;
}
