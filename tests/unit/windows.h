/*
 * windows.h - metric windows for the tests that build one by hand: the samples as plain rows
 * the test sets and changes (struct win), put into a window by win_put (compressed, as the
 * core keeps them); and a window's sample k decoded (wrow), to check what the core stored.
 * Header-only, like test.h (include it after core/core_int.h).
 */
#ifndef GOVERNOR_TEST_WINDOWS_H
#define GOVERNOR_TEST_WINDOWS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WIN_MAX 256

struct win {
    int n, nv;
    int64_t at[WIN_MAX];
    struct core_wrow *r[WIN_MAX];
};

/* n samples of nv vertices, at[k] = k x step, every number x. */
static inline void win_init(struct win *x, int nv, int n, int64_t step, double value)
{
    memset(x, 0, sizeof *x);
    x->n = n;
    x->nv = nv;
    for (int k = 0; k < n; k++) {
        x->at[k] = k * step;
        x->r[k] = calloc(1, sizeof *x->r[k] + (size_t)(nv ? nv : 1) * sizeof x->r[k]->v[0]);
        double *d = &x->r[k]->g.slots_used;
        for (int i = 0; i < core_wrow_k(nv); i++)
            d[i] = value;
    }
}

static inline void win_free(struct win *x)
{
    for (int k = 0; k < x->n; k++)
        free(x->r[k]);
    x->n = 0;
}

/* The window's samples become x's (seq0 unchanged). */
static inline void win_put(const struct win *x, struct core_window *w)
{
    core__window_free_samples(w);
    w->n_vertices = x->nv;
    for (int k = 0; k < x->n; k++)
        core_window_append(w, x->at[k], x->r[k]);
}

/* The window's sample k (0: the oldest), decoded into a buffer of this helper's own (valid
 * until the next call); *at its time when at is not NULL. */
static inline const struct core_wrow *wrow_at(const struct core_window *w, int k, int64_t *at)
{
    static struct core_wrow *buf;
    static size_t cap;
    size_t need = sizeof *buf + (size_t)(w->n_vertices ? w->n_vertices : 1) * sizeof buf->v[0];
    if (need > cap) {
        buf = realloc(buf, need);
        cap = need;
    }
    int64_t t;
    core__window_get(w, k, &t, buf);
    if (at)
        *at = t;
    return buf;
}

static inline const struct core_wrow *wrow(const struct core_window *w, int k)
{
    return wrow_at(w, k, NULL);
}

#endif
