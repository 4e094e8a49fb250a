/*
 * index.h - a sorted index over strings (prefix core_index_): the one way governor finds a
 * name among many (a sample's vertex ids, a list option's items, an options layer's keys, the
 * members of an answer) without comparing every pair. Building it sorts positions by their key
 * (a merge sort: n log n compares, stable, so equal keys keep their order), and a look-up is a
 * binary search: log n compares. Sorting is used rather than hashing so that no input, however
 * chosen, makes it slower (a hash table's worst case is quadratic), and so that a prefix's keys
 * are one contiguous run (core_index_prefix).
 *
 * The keys are not copied: key i is the `const char *` at byte `off` of element i of an array
 * of `stride`-byte elements at `base` (an array of structs holding a name, or an array of
 * `const char *` with stride sizeof(char *) and off 0). The caller owns the array and the
 * permutation's storage, and keeps both unchanged while the index is used. A NULL key sorts
 * first and is never found.
 *
 * Pure C (libc's strcmp, strncmp and, for core_runs, the core's aborting allocators): part of
 * the core, usable by every layer.
 */
#ifndef GOVERNOR_CORE_INDEX_H
#define GOVERNOR_CORE_INDEX_H

#include <stddef.h>

struct core_index {
    const char *base;
    size_t stride, off;
    int n;
    int *perm; /* [n] positions, sorted by (key, position) */
};

/* Key i of x (borrowed), NULL when it is NULL. */
const char *core_index_key(const struct core_index *x, int i);

/*
 * Builds x over the n keys described above. perm and tmp are the caller's storage of n ints
 * each (tmp is scratch, free to reuse once this returns; perm is the index's and must live as
 * long as x). n log n compares.
 */
void core_index_build(struct core_index *x, const void *base, size_t stride, size_t off, int n,
                      int *perm, int *tmp);

/* The lowest position whose key equals key, -1 when none (or key is NULL). log n compares. */
int core_index_find(const struct core_index *x, const char *key);

/* Where the keys starting with prefix are: perm[*lo .. *hi) (empty when *lo == *hi), in key
 * order. 2 log n compares. */
void core_index_prefix(const struct core_index *x, const char *prefix, int *lo, int *hi);

/*
 * Sorts the n positions in perm (any permutation of positions of x's array) by (key,
 * position), with tmp as scratch of n ints: the merge sort core_index_build runs, for callers
 * that keep a sorted run of their own (a growing set merges runs with it).
 */
void core_index_sort(const struct core_index *x, int *perm, int n, int *tmp);

/* Merges the sorted runs a[0 .. na) and b[0 .. nb) (by key, then position) into out, which
 * has room for na + nb ints and overlaps neither. */
void core_index_merge(const struct core_index *x, const int *a, int na, const int *b, int nb,
                      int *out);

/*
 * A growing index: positions 0, 1, 2, ... of a caller's array, added one at a time as the
 * array grows (a key seen for the first time), kept as sorted runs whose sizes are the bits of
 * n, largest first (a binary counter: a new position is a run of one, and two runs of equal
 * size merge). Adding is amortized log n moves, finding log^2 n compares, a prefix a binary
 * search per run: no step compares every key with every other, however many are added. The
 * array may move between calls (base is passed each time); its keys must not change. Zeroed
 * storage is empty; core_runs_free releases it.
 */
struct core_runs {
    int *pos; /* [cap] */
    int n, cap;
};

/* Adds position r->n (its key already in the array at base). Aborts when out of memory. */
void core_runs_add(struct core_runs *r, const void *base, size_t stride, size_t off);
/* The position of key, -1 when none. */
int core_runs_find(const struct core_runs *r, const void *base, size_t stride, size_t off,
                   const char *key);
/* The positions whose key starts with prefix, into out (new, malloc'd; NULL when none), in no
 * particular order; how many. Aborts when out of memory. */
int core_runs_prefix(const struct core_runs *r, const void *base, size_t stride, size_t off,
                     const char *prefix, int **out);
/* A copy of src into dst (new storage). */
void core_runs_copy(struct core_runs *dst, const struct core_runs *src);
void core_runs_free(struct core_runs *r);

#endif
