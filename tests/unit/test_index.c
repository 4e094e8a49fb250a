/* Unit tests for core/index.c: the sorted index over strings (core_index) and the growing one
 * (core_runs), each against a plain scan over random names with repeats, NULLs and shared
 * prefixes. */
#include <stdlib.h>

#include "test.h"

#include "core/index.h"

#define N 700

struct named {
    int weight;
    const char *name;
};

static char pool[N][16];

/* Names from a small alphabet, so that many repeat and many share a prefix; some NULL. */
static void fill(struct named *v, int n, unsigned seed)
{
    srand(seed);
    for (int i = 0; i < n; i++) {
        int len = 1 + rand() % 4;
        for (int k = 0; k < len; k++)
            pool[i][k] = (char)('a' + rand() % 3);
        pool[i][len] = '\0';
        v[i].weight = i;
        v[i].name = rand() % 50 == 0 ? NULL : pool[i];
    }
}

static int scan_first(const struct named *v, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (v[i].name && key && strcmp(v[i].name, key) == 0)
            return i;
    return -1;
}

static int scan_prefix(const struct named *v, int n, const char *p)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += v[i].name && strncmp(v[i].name, p, strlen(p)) == 0;
    return c;
}

static void index_finds_the_first_and_sorts(void)
{
    static struct named v[N];
    static int perm[N], tmp[N];
    static const char *const probes[] = {"a", "b", "c", "ab", "abc", "cccc", "d", "", "ba"};
    fill(v, N, 7);
    struct core_index x;
    core_index_build(&x, v, sizeof *v, offsetof(struct named, name), N, perm, tmp);
    for (int k = 1; k < N; k++) {
        const char *a = core_index_key(&x, perm[k - 1]), *b = core_index_key(&x, perm[k]);
        int c = a && b ? strcmp(a, b) : (a != NULL) - (b != NULL);
        ASSERT(c < 0 || (c == 0 && perm[k - 1] < perm[k])); /* by key, then position */
    }
    for (int i = 0; i < N; i++)
        ASSERT_EQ(core_index_find(&x, v[i].name), v[i].name ? scan_first(v, N, v[i].name) : -1);
    for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
        int lo, hi;
        ASSERT_EQ(core_index_find(&x, probes[k]), scan_first(v, N, probes[k]));
        core_index_prefix(&x, probes[k], &lo, &hi);
        ASSERT_EQ(hi - lo, scan_prefix(v, N, probes[k]));
        for (int s = lo; s < hi; s++)
            ASSERT(strncmp(core_index_key(&x, perm[s]), probes[k], strlen(probes[k])) == 0);
    }
    ASSERT_EQ(core_index_find(&x, NULL), -1);
    core_index_build(&x, v, sizeof *v, offsetof(struct named, name), 0, perm, tmp);
    ASSERT_EQ(core_index_find(&x, "a"), -1);
}

static void runs_grow_one_name_at_a_time(void)
{
    static struct named all[N];
    fill(all, N, 11);
    /* The distinct non-NULL names, added as a set that grows (its array moving). */
    struct named *set = NULL;
    int n = 0;
    struct core_runs r = {0};
    for (int i = 0; i < N; i++) {
        if (!all[i].name)
            continue;
        int at = core_runs_find(&r, set, sizeof *set, offsetof(struct named, name), all[i].name);
        ASSERT_EQ(at, scan_first(set, n, all[i].name));
        if (at >= 0)
            continue;
        set = realloc(set, (size_t)(n + 1) * sizeof *set);
        set[n] = all[i];
        core_runs_add(&r, set, sizeof *set, offsetof(struct named, name));
        n++;
        ASSERT_EQ(r.n, n);
    }
    for (int i = 0; i < n; i++)
        ASSERT_EQ(core_runs_find(&r, set, sizeof *set, offsetof(struct named, name), set[i].name),
                  i);
    int *hit = NULL;
    int got = core_runs_prefix(&r, set, sizeof *set, offsetof(struct named, name), "ab", &hit);
    ASSERT_EQ(got, scan_prefix(set, n, "ab"));
    free(hit);
    struct core_runs c;
    core_runs_copy(&c, &r);
    ASSERT_EQ(core_runs_find(&c, set, sizeof *set, offsetof(struct named, name), set[n - 1].name),
              n - 1);
    core_runs_free(&c);
    core_runs_free(&r);
    free(set);
}

TEST_MAIN(TEST_ENTRY(index_finds_the_first_and_sorts), TEST_ENTRY(runs_grow_one_name_at_a_time))
