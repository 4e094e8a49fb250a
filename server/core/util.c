/*
 * util.c - small shared pieces of the core: the three-decimal rounding and Java's casts
 * (core/README.md, Numbers), aborting allocators, the decision arena, events and their
 * de-duplication (core/README.md, Events), and the names of the enums.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

void core__shortest_decimal(double x, uint64_t *mant, int *exp10, bool *neg)
{
    char buf[48];
    int p;
    *neg = signbit(x) != 0;
    x = fabs(x);
    for (p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    if (p > 17)
        p = 17; /* 17 significant digits always read back; buf holds them */
    uint64_t m = 0;
    const char *s = buf;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            m = m * 10 + (uint64_t)(*s - '0');
    *mant = m;
    *exp10 = (*s == 'e' ? atoi(s + 1) : 0) - (p - 1);
}

int core__java_d2i(double x)
{
    if (isnan(x))
        return 0;
    if (x >= (double)INT_MAX)
        return INT_MAX;
    if (x <= (double)INT_MIN)
        return INT_MIN;
    return (int)x;
}

int core__decimal_split(double x, int places, uint64_t *head, uint64_t *tail, uint64_t *q,
                        bool *neg)
{
    uint64_t m;
    int k;
    core__shortest_decimal(x, &m, &k, neg);
    if (k >= -places)
        return 0;           /* already within `places` decimals */
    int drop = -k - places; /* digits below the last kept decimal */
    if (drop > 19)
        return -1;
    *q = 1;
    for (int i = 0; i < drop; i++)
        *q *= 10;
    *head = m / *q;
    *tail = m % *q;
    return 1;
}

double core__round3_decimal(double x)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    /* Java's BigDecimal.valueOf(x).setScale(3, HALF_UP): round the shortest decimal string
     * that reads back as x, not its binary value, so 2.0005 -> 2.001. */
    uint64_t th, tail, q;
    bool neg;
    if (core__decimal_split(x, 3, &th, &tail, &q, &neg) <= 0)
        return x; /* within 3 decimals, or rounds to 0: keep the original */
    th += tail >= q / 2 ? 1 : 0;
    if (th == 0)
        return x; /* rounds to 0: keep the original */
    double r = (double)th / 1000.0;
    return neg ? -r : r;
}

double core__round3(double x)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    /* Fast path: away from a tie (x * 1000 ending in .5) the binary value and its shortest
     * decimal string round the same way, so plain rounding of x * 1000 is exact. */
    double y = x * 1000.0;
    if (fabs(y) < 1e15) {
        double f = fabs(y) - floor(fabs(y));
        if (fabs(f - 0.5) > 1e-6 + fabs(y) * 1e-12) {
            double r = round(y) / 1000.0;
            return r == 0.0 ? x : r;
        }
    }
    return core__round3_decimal(x);
}

int64_t core__java_round(double x)
{
    if (isnan(x))
        return 0;
    double r = floor(x + 0.5);
    if (r >= 9.2233720368547758e18)
        return INT64_MAX;
    if (r <= -9.2233720368547758e18)
        return INT64_MIN;
    return (int64_t)r;
}

int64_t core__time_add(int64_t t, int64_t d)
{
    int64_t r;
    if (__builtin_add_overflow(t, d, &r))
        return d > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

int64_t core__time_sub(int64_t t, int64_t d)
{
    int64_t r;
    if (__builtin_sub_overflow(t, d, &r))
        return d > 0 ? INT64_MIN : INT64_MAX;
    return r;
}

const char *core__plural(long n)
{
    return n == 1 ? "" : "s";
}

void *core__xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

void *core__xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
    return p;
}

void *core__xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        abort();
    return q;
}

char *core__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = core__xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void core__grow(void *arr, int *cap, int need, size_t elem)
{
    void **a = arr;
    if (need <= *cap)
        return;
    int c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    *a = core__xrealloc(*a, (size_t)c * elem);
    memset((char *)*a + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *cap = c;
}

/* ---------------------------------------------------------------- arena -- */

struct core_arena_block {
    struct core_arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK 16384

void *core__alloc(struct core_decision *d, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct core_arena_block *b = d->arena;
    if (!b || b->size - b->used < n) {
        size_t sz = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        struct core_arena_block *nb = core__xmalloc(sizeof *nb + sz);
        nb->size = sz;
        nb->used = 0;
        /* Keep the first (reusable) block at the tail of the list. */
        nb->next = b;
        d->arena = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *core__astrdup(struct core_decision *d, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = core__alloc(d, n);
    memcpy(p, s, n);
    return p;
}

/* fmt printed into d's arena. One pass when the text fits in the free room of the arena's
 * current block (most messages do: the block is 16 KB), where it then stays; else measured,
 * then printed into room of its own. */
static char *avprintf(struct core_decision *d, const char *fmt, va_list ap)
{
    va_list aq;
    struct core_arena_block *b = d->arena;
    if (b && b->size > b->used) {
        size_t room = b->size - b->used; /* a multiple of 16, as size and used are */
        char *p = (char *)b->data + b->used;
        va_copy(aq, ap);
        int n = vsnprintf(p, room, fmt, aq);
        va_end(aq);
        if (n >= 0 && (size_t)n < room) {
            b->used += ((size_t)n + 1 + 15) & ~(size_t)15;
            return p;
        }
    }
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        n = 0;
    char *p = core__alloc(d, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *core__asprintf(struct core_decision *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = avprintf(d, fmt, ap);
    va_end(ap);
    return p;
}

void core_decision_init(struct core_decision *d)
{
    memset(d, 0, sizeof *d);
}

void core_decision_reset(struct core_decision *d)
{
    struct core_arena_block *b = d->arena;
    /* Free all but the last (oldest) block, which is kept for reuse. */
    while (b && b->next) {
        struct core_arena_block *n = b->next;
        free(b);
        b = n;
    }
    if (b)
        b->used = 0;
    memset(d, 0, sizeof *d);
    d->arena = b;
}

void core_decision_deinit(struct core_decision *d)
{
    struct core_arena_block *b = d->arena;
    while (b) {
        struct core_arena_block *n = b->next;
        free(b);
        b = n;
    }
    memset(d, 0, sizeof *d);
}

/* --------------------------------------------------------------- events -- */

void core__event(struct core_decision *d, const char *type, const char *reason, const char *key,
                 const char *fmt, ...)
{
    if (d->n_events == d->cap_events) {
        int cap = d->cap_events ? d->cap_events * 2 : 8;
        struct core_event *ev = core__alloc(d, (size_t)cap * sizeof *ev);
        if (d->n_events)
            memcpy(ev, d->events, (size_t)d->n_events * sizeof *ev);
        d->events = ev;
        d->cap_events = cap;
    }
    struct core_event *e = &d->events[d->n_events++];
    va_list ap;
    va_start(ap, fmt);
    e->message = avprintf(d, fmt, ap);
    va_end(ap);
    e->type = type;
    e->reason = reason;
    e->key = key ? core__astrdup(d, key) : NULL;
    e->count = 1;
    e->suppressed = false;
}

void core__events_dedupe(struct core_state *st, struct core_decision *d, int64_t now,
                         int64_t interval_ms)
{
    /* Each event's key ("reason\x1fkey"), the state's rows sorted by key, and this cycle's
     * keys sorted: an event finds its row by a binary search, or the row an earlier event of
     * the cycle with the same key found or made (the lowest such event), so the work is
     * n log n in the events and rows, not their product. */
    int ne = d->n_events, n0 = st->n_events;
    size_t nk = (size_t)(ne ? ne : 1), nr = (size_t)(n0 ? n0 : 1);
    const char **keys = core__alloc(d, nk * sizeof *keys);
    int *row = core__alloc(d, nk * sizeof *row);
    for (int i = 0; i < ne; i++) {
        const struct core_event *e = &d->events[i];
        if (!e->key)
            continue;
        size_t kl = strlen(e->reason) + 1 + strlen(e->key) + 1;
        char *key = core__alloc(d, kl);
        snprintf(key, kl, "%s\x1f%s", e->reason, e->key);
        keys[i] = key;
    }
    /* The rows' keys are copied out: st->events moves as rows are added. */
    const char **row_keys = core__alloc(d, nr * sizeof *row_keys);
    for (int r = 0; r < n0; r++)
        row_keys[r] = st->events[r].key;
    struct core_index mine, rows;
    core_index_build(&mine, keys, sizeof *keys, 0, ne, core__alloc(d, nk * sizeof(int)),
                     core__alloc(d, nk * sizeof(int)));
    core_index_build(&rows, row_keys, sizeof *row_keys, 0, n0, core__alloc(d, nr * sizeof(int)),
                     core__alloc(d, nr * sizeof(int)));
    for (int i = 0; i < ne; i++) {
        struct core_event *e = &d->events[i];
        if (!e->key)
            continue;
        int first = core_index_find(&mine, keys[i]);
        int r = first < i ? row[first] : core_index_find(&rows, keys[i]);
        struct core_event_seen *seen = r >= 0 ? &st->events[r] : NULL;
        if (seen && interval_ms > 0 && core__time_sub(now, seen->first_at) < interval_ms) {
            seen->count++;
            seen->last_at = now;
            e->count = seen->count;
            e->suppressed = true;
            row[i] = r;
            continue;
        }
        if (!seen) {
            core__grow(&st->events, &st->cap_events, st->n_events + 1, sizeof *st->events);
            r = st->n_events++;
            seen = &st->events[r];
            seen->key = core__strdup(keys[i]);
        }
        row[i] = r;
        seen->first_at = now;
        seen->last_at = now;
        seen->count = 1;
    }
    /* Forget rows that can no longer suppress anything, so the table stays small. */
    int k = 0;
    for (int j = 0; j < st->n_events; j++) {
        if (interval_ms <= 0 || core__time_sub(now, st->events[j].first_at) >= interval_ms) {
            free(st->events[j].key);
            continue;
        }
        st->events[k++] = st->events[j];
    }
    st->n_events = k;
}

void core__plugin_fail(struct core_plugin_err *pe, const char *plugin, const char *msg)
{
    if (!pe || pe->set)
        return;
    pe->set = true;
    snprintf(pe->plugin, sizeof pe->plugin, "%s", plugin ? plugin : "?");
    snprintf(pe->message, sizeof pe->message, "%s", msg ? msg : "");
}

/* ---------------------------------------------------------------- names -- */

static const char *const ship_names[] = {"HASH",      "REBALANCE", "RESCALE", "FORWARD", "CUSTOM",
                                         "BROADCAST", "GLOBAL",    "SHUFFLE", "UNKNOWN"};

enum core_ship core_ship_parse(const char *s)
{
    for (int i = 0; i < CORE_SHIP_UNKNOWN; i++)
        if (strcasecmp(s, ship_names[i]) == 0)
            return (enum core_ship)i;
    return CORE_SHIP_UNKNOWN;
}

const char *core_ship_name(enum core_ship s)
{
    return (unsigned)s <= CORE_SHIP_UNKNOWN ? ship_names[s] : "UNKNOWN";
}

const char *core_action_name(enum core_action a)
{
    static const char *const n[] = {"NO_CHANGE", "SCALE_UP", "SCALE_DOWN", "SCALE"};
    return (unsigned)a <= CORE_SCALE ? n[a] : "NO_CHANGE";
}

const char *core_reason_name(enum core_reason r)
{
    static const char *const n[] = {"COLLECTING_METRICS",
                                    "WITHIN_TARGET",
                                    "HIGH_BACKLOG",
                                    "HIGH_UTILIZATION",
                                    "LOW_UTILIZATION",
                                    "SCALE_DOWN_DELAYED",
                                    "LIMIT_REACHED",
                                    "KEY_PARALLELISM_LIMIT",
                                    "INEFFECTIVE_SCALING",
                                    "MEMORY_PRESSURE",
                                    "QUOTA_REACHED",
                                    "EXCLUDED_PERIOD",
                                    "SCALING_DISABLED",
                                    "VETOED",
                                    "PLUGIN_ERROR",
                                    "JOB_NOT_RUNNING",
                                    "IMPLAUSIBLE_SAMPLE",
                                    "EXTERNAL_LIMIT",
                                    "NOT_APPLIED",
                                    "LOW_BACKLOG",
                                    "UNSPLITTABLE_WORK",
                                    "STRAGGLERS",
                                    "BALANCED"};
    return (unsigned)r < CORE_R__COUNT ? n[r] : "?";
}
