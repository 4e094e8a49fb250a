/*
 * index.c - the sorted index over strings (see index.h): a bottom-up merge sort of positions,
 * binary searches over it.
 */
#include <stdlib.h>
#include <string.h>

#include "core/index.h"
#include "core/core_int.h"

const char *core_index_key(const struct core_index *x, int i)
{
    return *(const char *const *)(const void *)(x->base + (size_t)i * x->stride + x->off);
}

/* Orders positions a and b by key (NULL first), then by position. */
static int cmp(const struct core_index *x, int a, int b)
{
    const char *ka = core_index_key(x, a), *kb = core_index_key(x, b);
    int c = ka && kb ? strcmp(ka, kb) : (ka != NULL) - (kb != NULL);
    return c ? c : (a > b) - (a < b);
}

void core_index_merge(const struct core_index *x, const int *a, int na, const int *b, int nb,
                      int *out)
{
    int i = 0, j = 0, k = 0;
    while (i < na && j < nb)
        out[k++] = cmp(x, a[i], b[j]) <= 0 ? a[i++] : b[j++];
    while (i < na)
        out[k++] = a[i++];
    while (j < nb)
        out[k++] = b[j++];
}

void core_index_sort(const struct core_index *x, int *perm, int n, int *tmp)
{
    int *src = perm, *dst = tmp;
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            core_index_merge(x, src + lo, mid - lo, src + mid, hi - mid, dst + lo);
        }
        int *t = src;
        src = dst;
        dst = t;
    }
    if (src != perm)
        memcpy(perm, src, (size_t)n * sizeof *perm);
}

void core_index_build(struct core_index *x, const void *base, size_t stride, size_t off, int n,
                      int *perm, int *tmp)
{
    x->base = base;
    x->stride = stride;
    x->off = off;
    x->n = n;
    x->perm = perm;
    for (int i = 0; i < n; i++)
        perm[i] = i;
    core_index_sort(x, perm, n, tmp);
}

/* The first slot of perm whose key is not below key (in [lo, hi)); key is not NULL. With
 * prefix_len > 0 only the first prefix_len bytes of each key count. */
static int lower_bound(const struct core_index *x, const char *key, size_t prefix_len)
{
    int lo = 0, hi = x->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const char *k = core_index_key(x, x->perm[mid]);
        int c = !k ? -1 : prefix_len ? strncmp(k, key, prefix_len) : strcmp(k, key);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int core_index_find(const struct core_index *x, const char *key)
{
    if (!key)
        return -1;
    int s = lower_bound(x, key, 0);
    if (s < x->n) {
        const char *k = core_index_key(x, x->perm[s]);
        if (k && strcmp(k, key) == 0)
            return x->perm[s];
    }
    return -1;
}

void core_index_prefix(const struct core_index *x, const char *prefix, int *lo, int *hi)
{
    size_t n = strlen(prefix);
    if (n == 0) {
        int s = 0;
        while (s < x->n && !core_index_key(x, x->perm[s]))
            s++;
        *lo = s;
        *hi = x->n;
        return;
    }
    *lo = lower_bound(x, prefix, n);
    /* The first key past the prefix: above every key that starts with it. */
    int a = *lo, b = x->n;
    while (a < b) {
        int mid = a + (b - a) / 2;
        const char *k = core_index_key(x, x->perm[mid]);
        if (strncmp(k, prefix, n) <= 0)
            a = mid + 1;
        else
            b = mid;
    }
    *hi = a;
}

/* The run of r that starts at `start` and holds n positions, as an index. */
static struct core_index run_at(const struct core_runs *r, const void *base, size_t stride,
                                size_t off, int start, int n)
{
    struct core_index x = {base, stride, off, n, r->pos + start};
    return x;
}

void core_runs_add(struct core_runs *r, const void *base, size_t stride, size_t off)
{
    int n = r->n, end = n + 1;
    if (n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->pos = core__xrealloc(r->pos, (size_t)r->cap * sizeof *r->pos);
    }
    r->pos[n] = n;
    struct core_index x = run_at(r, base, stride, off, 0, 0);
    for (int sz = 1; n & sz; sz *= 2) {
        int start = end - 2 * sz;
        int *tmp = core__xmalloc((size_t)(2 * sz) * sizeof *tmp);
        core_index_merge(&x, r->pos + start, sz, r->pos + start + sz, sz, tmp);
        memcpy(r->pos + start, tmp, (size_t)(2 * sz) * sizeof *tmp);
        free(tmp);
    }
    r->n++;
}

int core_runs_find(const struct core_runs *r, const void *base, size_t stride, size_t off,
                   const char *key)
{
    int start = 0;
    for (int bit = 30; bit >= 0; bit--) {
        int size = r->n & (1 << bit);
        if (!size)
            continue;
        struct core_index x = run_at(r, base, stride, off, start, size);
        int i = core_index_find(&x, key);
        if (i >= 0)
            return i;
        start += size;
    }
    return -1;
}

int core_runs_prefix(const struct core_runs *r, const void *base, size_t stride, size_t off,
                     const char *prefix, int **out)
{
    int n_hit = 0, start = 0;
    *out = NULL;
    for (int bit = 30; bit >= 0; bit--) {
        int size = r->n & (1 << bit);
        if (!size)
            continue;
        struct core_index x = run_at(r, base, stride, off, start, size);
        int lo, hi;
        core_index_prefix(&x, prefix, &lo, &hi);
        if (hi > lo) {
            *out = core__xrealloc(*out, (size_t)(n_hit + hi - lo) * sizeof **out);
            memcpy(*out + n_hit, x.perm + lo, (size_t)(hi - lo) * sizeof **out);
            n_hit += hi - lo;
        }
        start += size;
    }
    return n_hit;
}

void core_runs_copy(struct core_runs *dst, const struct core_runs *src)
{
    dst->n = dst->cap = src->n;
    dst->pos = src->n ? core__xmalloc((size_t)src->n * sizeof *dst->pos) : NULL;
    if (src->n)
        memcpy(dst->pos, src->pos, (size_t)src->n * sizeof *dst->pos);
}

void core_runs_free(struct core_runs *r)
{
    free(r->pos);
    r->pos = NULL;
    r->n = r->cap = 0;
}
