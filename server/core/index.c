/*
 * index.c - the sorted index over strings (see index.h): a bottom-up merge sort of positions,
 * binary searches over it.
 */
#include <string.h>

#include "core/index.h"

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
