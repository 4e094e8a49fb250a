/*
 * sample_text.c - a decide request's body read straight into the sample (see sample_text.h).
 * Every "return 1" hands the body to the tree: this reader only ever takes less than
 * jsn_parse_sample does, never something else.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/xmem.h"
#include "decision/sample_text.h"

/* The bounds of `at` and `running_since` jsn_parse_sample holds them to (json.c, get_time):
 * years 0000-9999, and not a value that reads as seconds or microseconds. */
#define MS_MIN           (-62167219200000LL)
#define MS_MAX           (253402300799999LL)
#define SECONDS_LIKE_MIN 100000000LL
#define SECONDS_LIKE_END 100000000000LL

struct lex {
    const char *p, *end;
    int unknown; /* members skipped that governor does not know (sample_fields.h) */
};

static void ws(struct lex *x)
{
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r'))
        x->p++;
}

/* The next character is c (after white space): taken. */
static bool take(struct lex *x, char c)
{
    ws(x);
    if (x->p < x->end && *x->p == c) {
        x->p++;
        return true;
    }
    return false;
}

/* A string of plain ASCII (0x20 to 0x7e, no quote or backslash): its bytes, borrowed. */
static bool str(struct lex *x, const char **s, size_t *n)
{
    if (!take(x, '"'))
        return false;
    const char *b = x->p;
    while (x->p < x->end && *x->p != '"') {
        unsigned char c = (unsigned char)*x->p;
        if (c < 0x20 || c > 0x7e || c == '\\')
            return false;
        x->p++;
    }
    if (x->p >= x->end)
        return false;
    *s = b;
    *n = (size_t)(x->p - b);
    x->p++;
    return true;
}

/* Whether the string s (n bytes) is the key k. */
static bool is(const char *s, size_t n, const char *k)
{
    return strlen(k) == n && memcmp(s, k, n) == 0;
}

/*
 * A JSON number, as jansson reads it: an integer token (no fraction, no exponent) as a 64-bit
 * integer (*is_int, *iv; at most 18 digits here), any other through strtod. *v its double.
 * false for anything else, or a value jansson refuses (too big).
 */
static bool num(struct lex *x, double *v, bool *is_int, long long *iv)
{
    ws(x);
    const char *b = x->p, *p = x->p;
    bool neg = p < x->end && *p == '-';
    if (neg)
        p++;
    if (p >= x->end || *p < '0' || *p > '9')
        return false;
    const char *digits = p;
    if (*p == '0')
        p++;
    else
        while (p < x->end && *p >= '0' && *p <= '9')
            p++;
    size_t nd = (size_t)(p - digits);
    bool frac = false;
    if (p < x->end && *p == '.') {
        frac = true;
        p++;
        if (p >= x->end || *p < '0' || *p > '9')
            return false;
        while (p < x->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < x->end && (*p == 'e' || *p == 'E')) {
        frac = true;
        p++;
        if (p < x->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= x->end || *p < '0' || *p > '9')
            return false;
        while (p < x->end && *p >= '0' && *p <= '9')
            p++;
    }
    x->p = p;
    if (!frac) {
        if (nd > 18)
            return false;
        long long k = 0;
        for (const char *d = digits; d < digits + nd; d++)
            k = k * 10 + (*d - '0');
        *is_int = true;
        *iv = neg ? -k : k;
        *v = (double)*iv;
        return true;
    }
    char buf[64];
    size_t n = (size_t)(p - b);
    if (n >= sizeof buf)
        return false;
    memcpy(buf, b, n);
    buf[n] = '\0';
    *is_int = false;
    *v = strtod(buf, NULL);
    return isfinite(*v);
}

/* An integer jsn_parse_sample's get_int takes: >= lo, <= INT_MAX. */
static bool int_at_least(struct lex *x, int lo, int *out)
{
    double v;
    bool is_int;
    long long k;
    if (!num(x, &v, &is_int, &k) || !is_int || k < lo || k > INT_MAX)
        return false;
    *out = (int)k;
    return true;
}

/* A number get_number takes: finite, within [lo, hi]. */
static bool number_in(struct lex *x, double lo, double hi, double *out)
{
    double v;
    bool is_int;
    long long k;
    if (!num(x, &v, &is_int, &k) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* `at` / `running_since` as epoch milliseconds, as get_time takes an integer. */
static bool time_ms(struct lex *x, int64_t *out)
{
    double v;
    bool is_int;
    long long ms;
    if (!num(x, &v, &is_int, &ms) || !is_int || ms < MS_MIN || ms > MS_MAX ||
        (ms >= SECONDS_LIKE_MIN && ms < SECONDS_LIKE_END))
        return false;
    *out = ms;
    return true;
}

/* Members of an object: each key once (seen, a bit per key of the caller's list). */
static bool first_time(unsigned *seen, int key)
{
    if (*seen & (1u << key))
        return false;
    *seen |= 1u << key;
    return true;
}

/*
 * A member jsn_parse_sample does not read (a client's own field, "job"), skipped when its
 * value is a number, true, false or a plain string: the key must not repeat one skipped
 * before in the object (jansson refuses duplicates), those kept in u (at most U_KEYS). A key
 * other than known (the one member of the object governor knows and does not read: "job" in
 * the body, "name" in a vertex; NULL: none) is counted in x->unknown.
 */
#define U_KEYS 8
struct unknown {
    const char *k[U_KEYS];
    size_t n[U_KEYS];
    int count;
};

static bool skip(struct lex *x, struct unknown *u, const char *k, size_t n, const char *known)
{
    if (!known || !is(k, n, known))
        x->unknown++;
    for (int i = 0; i < u->count; i++)
        if (u->n[i] == n && memcmp(u->k[i], k, n) == 0)
            return false;
    if (u->count == U_KEYS)
        return false;
    u->k[u->count] = k;
    u->n[u->count++] = n;
    ws(x);
    if (x->p < x->end && *x->p == '"') {
        const char *s;
        size_t sn;
        return str(x, &s, &sn);
    }
    static const char *const words[] = {"true", "false"};
    for (int i = 0; i < 2; i++) {
        size_t wn = strlen(words[i]);
        if ((size_t)(x->end - x->p) >= wn && memcmp(x->p, words[i], wn) == 0) {
            x->p += wn;
            return true;
        }
    }
    double v;
    bool is_int;
    long long iv;
    return num(x, &v, &is_int, &iv);
}

/* A string copied into st's strings: its offset. */
static size_t keep(struct sample_text *st, size_t *used, const char *s, size_t n)
{
    if (*used + n + 1 > st->cap_str) {
        size_t cap = st->cap_str ? st->cap_str : 256;
        while (cap < *used + n + 1)
            cap *= 2;
        st->str = xrealloc(st->str, cap);
        st->cap_str = cap;
    }
    size_t off = *used;
    memcpy(st->str + off, s, n);
    st->str[off + n] = '\0';
    *used += n + 1;
    return off;
}

static void grow(void *arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return;
    int c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    *(void **)arr = xrealloc(*(void **)arr, (size_t)c * elem);
    *cap = c;
}

/* busy_ms_per_s as an object {min, avg, max}: parse_metrics' rules. */
static bool busy_object(struct lex *x, struct core_vertex_in *v)
{
    double mn = NAN, avg = NAN, mx = NAN;
    unsigned seen = 0;
    struct unknown u = {0};
    if (take(x, '}'))
        return false; /* avg is required */
    do {
        const char *k;
        size_t n;
        double *to;
        int key;
        if (!str(x, &k, &n) || !take(x, ':'))
            return false;
        if (is(k, n, "min"))
            to = &mn, key = 0;
        else if (is(k, n, "avg"))
            to = &avg, key = 1;
        else if (is(k, n, "max"))
            to = &mx, key = 2;
        else if (skip(x, &u, k, n, NULL))
            continue;
        else
            return false;
        if (!first_time(&seen, key) || !number_in(x, -INFINITY, 1000, to))
            return false;
    } while (take(x, ','));
    if (!take(x, '}') || isnan(avg))
        return false;
    v->busy_min = isnan(mn) ? avg : mn;
    v->busy_max = isnan(mx) ? avg : mx;
    v->busy_avg = avg;
    if (v->busy_min > v->busy_max + JSN_BUSY_SLACK)
        return false;
    if (v->busy_min > v->busy_max)
        v->busy_min = v->busy_max;
    if (v->busy_avg < v->busy_min - JSN_BUSY_SLACK || v->busy_avg > v->busy_max + JSN_BUSY_SLACK)
        return false;
    v->busy_avg = v->busy_avg < v->busy_min   ? v->busy_min
                  : v->busy_avg > v->busy_max ? v->busy_max
                                              : v->busy_avg;
    return true;
}

/*
 * An object of seven numbers, names[k] into *to[k], each at most once and >= 0 (the first at
 * most max0), members governor does not read skipped; with busy, also a vertex's
 * busy_ms_per_s (a number, or an object of min, avg and max) into busy.
 */
static bool numbers(struct lex *x, const char *const *names, double *const *to, double max0,
                    struct core_vertex_in *busy)
{
    unsigned seen = 0;
    struct unknown u = {0};
    if (!take(x, '{'))
        return false;
    if (take(x, '}'))
        return true;
    do {
        const char *k;
        size_t n;
        if (!str(x, &k, &n) || !take(x, ':'))
            return false;
        if (busy && is(k, n, "busy_ms_per_s")) {
            if (!first_time(&seen, 7))
                return false;
            if (take(x, '{')) {
                if (!busy_object(x, busy))
                    return false;
            } else {
                double b;
                if (!number_in(x, -INFINITY, 1000, &b))
                    return false;
                busy->busy_min = busy->busy_avg = busy->busy_max = b;
            }
            continue;
        }
        int i = 0;
        while (i < 7 && !is(k, n, names[i]))
            i++;
        if (i == 7 ? !skip(x, &u, k, n, NULL)
                   : !first_time(&seen, i) || !number_in(x, 0, i == 0 ? max0 : INFINITY, to[i]))
            return false;
    } while (take(x, ','));
    return take(x, '}');
}

static bool metrics(struct lex *x, struct core_vertex_in *v)
{
    static const char *const names[] = {
        "backpressured_ms_per_s", "records_in",        "records_out",    "accumulated_busy_ms",
        "records_in_per_s",       "records_out_per_s", "pending_records"};
    double *const to[] = {&v->backpressured,       &v->records_in,       &v->records_out,
                          &v->accumulated_busy_ms, &v->records_in_per_s, &v->records_out_per_s,
                          &v->pending_records};
    return numbers(x, names, to, 1000, v);
}

/* One vertex into st->v[i]: its strings and inputs as offsets and indexes (fixed later). */
static bool vertex(struct lex *x, struct sample_text *st, int i, int *n_in, size_t *used)
{
    struct core_vertex_in *v = &st->v[i];
    unsigned seen = 0;
    bool has_group = false;
    struct unknown u = {0};
    memset(v, 0, sizeof *v);
    v->busy_min = v->busy_avg = v->busy_max = NAN;
    v->backpressured = v->records_in = v->records_out = v->accumulated_busy_ms = NAN;
    v->records_in_per_s = v->records_out_per_s = v->pending_records = NAN;
    st->in_of[i] = *n_in;
    if (!take(x, '{') || take(x, '}'))
        return false; /* id and parallelism are required */
    do {
        const char *k, *s;
        size_t n, sn;
        if (!str(x, &k, &n) || !take(x, ':'))
            return false;
        if (is(k, n, "id")) {
            if (!first_time(&seen, 0) || !str(x, &s, &sn))
                return false;
            st->id_of[i] = keep(st, used, s, sn);
        } else if (is(k, n, "parallelism")) {
            if (!first_time(&seen, 1) || !int_at_least(x, 1, &v->parallelism))
                return false;
        } else if (is(k, n, "max_parallelism")) {
            if (!first_time(&seen, 2) || !int_at_least(x, 1, &v->max_parallelism))
                return false;
        } else if (is(k, n, "partitions")) {
            if (!first_time(&seen, 3) || !int_at_least(x, 0, &v->partitions))
                return false;
        } else if (is(k, n, "slot_sharing_group")) {
            if (!first_time(&seen, 4) || !str(x, &s, &sn))
                return false;
            st->group_of[i] = keep(st, used, s, sn);
            has_group = true;
        } else if (is(k, n, "finished")) {
            if (!first_time(&seen, 5))
                return false;
            ws(x);
            if (x->end - x->p >= 4 && memcmp(x->p, "true", 4) == 0)
                v->finished = true, x->p += 4;
            else if (x->end - x->p >= 5 && memcmp(x->p, "false", 5) == 0)
                v->finished = false, x->p += 5;
            else
                return false;
        } else if (is(k, n, "inputs")) {
            if (!first_time(&seen, 6) || !take(x, '['))
                return false;
            if (!take(x, ']')) {
                do {
                    unsigned iseen = 0;
                    bool has_from = false;
                    struct unknown iu = {0};
                    grow(&st->in, &st->cap_in, *n_in + 1, sizeof *st->in);
                    grow(&st->from_of, &st->cap_from, *n_in + 1, sizeof *st->from_of);
                    struct core_input *in = &st->in[*n_in];
                    in->ship = CORE_SHIP_REBALANCE;
                    if (!take(x, '{') || take(x, '}'))
                        return false;
                    do {
                        if (!str(x, &k, &n) || !take(x, ':'))
                            return false;
                        if (!is(k, n, "from") && !is(k, n, "ship")) {
                            if (!skip(x, &iu, k, n, NULL))
                                return false;
                            continue;
                        }
                        if (!str(x, &s, &sn))
                            return false;
                        if (is(k, n, "from") && first_time(&iseen, 0)) {
                            st->from_of[*n_in] = keep(st, used, s, sn);
                            has_from = true;
                        } else if (is(k, n, "ship") && first_time(&iseen, 1)) {
                            char name[32];
                            if (sn >= sizeof name)
                                return false;
                            memcpy(name, s, sn);
                            name[sn] = '\0';
                            in->ship = core_ship_parse(name);
                        } else {
                            return false;
                        }
                    } while (take(x, ','));
                    if (!take(x, '}') || !has_from)
                        return false;
                    (*n_in)++;
                } while (take(x, ','));
                if (!take(x, ']'))
                    return false;
            }
        } else if (is(k, n, "metrics")) {
            if (!first_time(&seen, 7) || !metrics(x, v))
                return false;
        } else if (!skip(x, &u, k, n, "name")) {
            return false;
        }
    } while (take(x, ','));
    if (!take(x, '}') || !(seen & 1u) || !(seen & 2u))
        return false;
    if (!has_group)
        st->group_of[i] = (size_t)-1;
    v->n_inputs = *n_in - st->in_of[i];
    if (v->max_parallelism == 0)
        v->max_parallelism = jsn_default_max_parallelism(v->parallelism);
    else if (v->parallelism > v->max_parallelism)
        return false;
    return true;
}

static bool job_metrics(struct lex *x, struct core_sample *s)
{
    static const char *const names[] = {"heap_used",           "heap_max",       "gc_ms_per_s",
                                        "managed_used",        "metaspace_used", "task_slots_total",
                                        "task_slots_available"};
    double *const to[] = {&s->heap_used,           &s->heap_max,       &s->gc_ms_per_s,
                          &s->managed_used,        &s->metaspace_used, &s->task_slots_total,
                          &s->task_slots_available};
    return numbers(x, names, to, INFINITY, NULL);
}

void sample_text_deinit(struct sample_text *st)
{
    free(st->v);
    free(st->in);
    free(st->str);
    free(st->in_of);
    free(st->id_of);
    free(st->group_of);
    free(st->from_of);
    memset(st, 0, sizeof *st);
}

int sample_text_read(const char *text, size_t len, int64_t now_ms, struct jsn_sample *js,
                     struct sample_text *st)
{
    struct lex x = {text, text + len, 0};
    struct core_sample *s = &js->s;
    const struct opt_limits *lim = js->limits;
    int n_v = 0, n_in = 0;
    size_t used = 0;
    unsigned seen = 0;
    struct unknown u = {0};
    if (!text)
        return 1;
    memset(s, 0, sizeof *s);
    s->at = now_ms;
    s->running_since = INT64_MIN;
    s->running = true;
    s->heap_used = s->heap_max = s->gc_ms_per_s = s->managed_used = s->metaspace_used = NAN;
    s->task_slots_total = s->task_slots_available = NAN;
    if (!take(&x, '{') || take(&x, '}'))
        return 1; /* vertices are required */
    do {
        const char *k, *v;
        size_t n, vn;
        if (!str(&x, &k, &n) || !take(&x, ':'))
            return 1;
        if (is(k, n, "at")) {
            if (!first_time(&seen, 0) || !time_ms(&x, &s->at))
                return 1;
        } else if (is(k, n, "running_since")) {
            if (!first_time(&seen, 1) || !time_ms(&x, &s->running_since))
                return 1;
        } else if (is(k, n, "status")) {
            char status[16];
            if (!first_time(&seen, 2) || !str(&x, &v, &vn))
                return 1;
            /* "RUNNING" in any case: a longer string is not it */
            memcpy(status, v, vn < sizeof status ? vn : sizeof status - 1);
            status[vn < sizeof status ? vn : sizeof status - 1] = '\0';
            s->running = vn < sizeof status && strcasecmp(status, "RUNNING") == 0;
        } else if (is(k, n, "mode")) {
            if (!first_time(&seen, 3) || !str(&x, &v, &vn) || vn != 9 ||
                strncasecmp(v, "STREAMING", 9) != 0)
                return 1;
        } else if (is(k, n, "job_metrics")) {
            if (!first_time(&seen, 4) || !job_metrics(&x, s))
                return 1;
        } else if (is(k, n, "vertices")) {
            if (!first_time(&seen, 5) || !take(&x, '[') || take(&x, ']'))
                return 1; /* at least one vertex */
            do {
                if ((lim && n_v >= lim->vertices) || n_v >= INT_MAX / 2)
                    return 1;
                grow(&st->v, &st->cap_v, n_v + 1, sizeof *st->v);
                if (n_v + 1 > st->cap_in_of) {
                    int c = st->cap_v;
                    st->in_of = xrealloc(st->in_of, (size_t)c * sizeof *st->in_of);
                    st->id_of = xrealloc(st->id_of, (size_t)c * sizeof *st->id_of);
                    st->group_of = xrealloc(st->group_of, (size_t)c * sizeof *st->group_of);
                    st->cap_in_of = c;
                }
                if (!vertex(&x, st, n_v, &n_in, &used) || (lim && n_in > lim->edges))
                    return 1;
                n_v++;
            } while (take(&x, ','));
            if (!take(&x, ']'))
                return 1;
        } else if (is(k, n, "config") || !skip(&x, &u, k, n, "job")) {
            return 1; /* options of its own, or a member not skipped: the tree's */
        }
    } while (take(&x, ','));
    if (!take(&x, '}'))
        return 1;
    ws(&x);
    /* a member governor does not know: the tree's, which lists it in the answer's warnings */
    if (x.p != x.end || !(seen & (1u << 5)) || x.unknown)
        return 1;
    if (s->running_since == INT64_MIN)
        s->running_since = s->at < 0 ? s->at : 0;
    else if (s->running_since > s->at)
        return 1;
    /* The strings and inputs where they now are. */
    for (int i = 0; i < n_v; i++) {
        struct core_vertex_in *v = &st->v[i];
        v->id = st->str + st->id_of[i];
        if (!jsn_valid_id(v->id))
            return 1;
        v->slot_sharing_group = st->group_of[i] == (size_t)-1 ? NULL : st->str + st->group_of[i];
        v->inputs = v->n_inputs ? st->in + st->in_of[i] : NULL;
    }
    for (int i = 0; i < n_in; i++)
        st->in[i].from = st->str + st->from_of[i];
    s->vertices = st->v;
    s->n_vertices = n_v;
    return 0;
}
