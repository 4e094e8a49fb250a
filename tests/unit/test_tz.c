/*
 * Unit tests for tz.c: TZif parsing (v1 by hand-made bytes, v2+ from the system's zoneinfo),
 * POSIX TZ footer rules (northern, southern, negative DST, v3 negative times, all-year DST),
 * civil time before the first and after the last transition, and the zone-name checks.
 *
 * The civil times and the name and rule checks are data, in tests/unit/data/tz.test, run by
 * tz_case below; what stays in C builds zone files byte by byte or compares two sources over
 * twelve years.
 */
#include <stdlib.h>

#include "test.h"
#include "testfile.h"

#include "time/tz.h"

#define CHECK_LOCAL(z, epoch, Y, Mo, D, h, mi, s, wd, off, dst)                                    \
    do {                                                                                           \
        struct tz_tm t_;                                                                           \
        tz_local((z), (epoch), &t_);                                                               \
        ASSERT_EQ(t_.year, (Y));                                                                   \
        ASSERT_EQ(t_.mon, (Mo));                                                                   \
        ASSERT_EQ(t_.mday, (D));                                                                   \
        ASSERT_EQ(t_.hour, (h));                                                                   \
        ASSERT_EQ(t_.min, (mi));                                                                   \
        ASSERT_EQ(t_.sec, (s));                                                                    \
        ASSERT_EQ(t_.wday, (wd));                                                                  \
        ASSERT_EQ(t_.utoff, (off));                                                                \
        ASSERT_EQ(t_.isdst, (dst));                                                                \
    } while (0)

enum { SUN, MON, TUE, WED, THU, FRI, SAT };

static const struct tz *get(const char *name)
{
    char *err = NULL;
    const struct tz *z = tz_get(name, &err);
    if (!z)
        fprintf(stderr, "  tz_get(%s): %s\n", name, err);
    free(err);
    return z;
}

/* Prints the civil time of epoch_s in z the way tz.test writes it. */
static void print_local(struct testfile_out *out, const struct tz *z, int64_t epoch_s)
{
    static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    struct tz_tm t;
    tz_local(z, epoch_s, &t);
    testfile_printf(out, "%04lld-%02d-%02d %02d:%02d:%02d %s %+d %s", (long long)t.year, t.mon,
                    t.mday, t.hour, t.min, t.sec, t.wday >= 0 && t.wday < 7 ? wd[t.wday] : "?",
                    (int)t.utoff, t.isdst ? "dst" : "std");
}

/* The handler of tz.test (its header lists the verbs). */
static int tz_case(void *ud, const struct testfile_case *c, struct testfile_out *out)
{
    (void)ud;
    const char *verb = c->field[0], *name = testfile_field(c, 1);
    long long epoch = 0;
    char *end = NULL;
    if (c->n_fields == 3) {
        epoch = strtoll(c->field[2], &end, 10);
        if (!c->field[2][0] || *end) {
            testfile_printf(out, "bad epoch");
            return -1;
        }
    }
    char *err = NULL;
    if ((strcmp(verb, "local") == 0 || strcmp(verb, "yday") == 0 || strcmp(verb, "get") == 0) &&
        name && c->n_fields == (strcmp(verb, "get") == 0 ? 2 : 3)) {
        const struct tz *z = tz_get(name, &err);
        if (!z)
            testfile_printf(out, "error: %s", err);
        else if (strcmp(verb, "get") == 0)
            testfile_printf(out, "ok");
        else if (strcmp(verb, "local") == 0)
            print_local(out, z, epoch);
        else {
            struct tz_tm t;
            tz_local(z, epoch, &t);
            testfile_printf(out, "%d", t.yday);
        }
        free(err);
        return 0;
    }
    if (strcmp(verb, "posix") == 0 && name && (c->n_fields == 2 || c->n_fields == 3)) {
        struct tz *z = tz_posix_new(name, &err);
        if (!z)
            testfile_printf(out, "error: %s", err);
        else if (c->n_fields == 2)
            testfile_printf(out, "ok");
        else
            print_local(out, z, epoch);
        tz_free(z);
        free(err);
        return 0;
    }
    testfile_printf(out, "unknown verb or bad fields");
    return -1;
}

static void cases(void)
{
    ASSERT_EQ(testfile_run(TESTFILE_DATA("tz.test"), tz_case, NULL), 0);
}

static void utc_is_built_in_and_cached(void)
{
    const struct tz *z = get("UTC");
    ASSERT(z != NULL);
    ASSERT_STR(tz_name(z), "UTC");
    /* The same pointer comes back from the cache. */
    ASSERT(get("UTC") == z);
}

/*
 * The footer rule on its own must agree with the zone file's explicit transitions, which
 * Debian's "fat" files list up to 2037: two independent sources for every hour of 2026-2037.
 */
static void footer_rule_agrees_with_transitions(void)
{
    static const char *const pairs[][2] = {
        {"America/New_York", "EST5EDT,M3.2.0,M11.1.0"},
        {"Europe/Berlin", "CET-1CEST,M3.5.0,M10.5.0/3"},
        {"Australia/Sydney", "AEST-10AEDT,M10.1.0,M4.1.0/3"},
    };
    for (int p = 0; p < 3; p++) {
        const struct tz *file = get(pairs[p][0]);
        char *err = NULL;
        struct tz *rule = tz_posix_new(pairs[p][1], &err);
        ASSERT(file && rule);
        int bad = 0;
        /* 1767225600 = 2026-01-01T00:00Z; 2145916800 = 2038-01-01T00:00Z (date -u). */
        for (int64_t t = 1767225600; t < INT64_C(2145916800) && bad == 0; t += 1800) {
            struct tz_tm a, b;
            tz_local(file, t, &a);
            tz_local(rule, t, &b);
            if (a.utoff != b.utoff || a.isdst != b.isdst || a.hour != b.hour) {
                fprintf(stderr, "  %s at %lld: file %d, rule %d\n", pairs[p][0], (long long)t,
                        a.utoff, b.utoff);
                bad++;
            }
        }
        tz_free(rule);
        ASSERT_EQ(bad, 0);
    }
}

/* ------------------------------------------------------------ hand-made TZif files -- */

struct buf {
    unsigned char b[512];
    size_t n;
};

static void put32(struct buf *b, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        b->b[b->n++] = (unsigned char)(v >> (8 * i));
}

static void put64(struct buf *b, int64_t v)
{
    put32(b, (uint32_t)((uint64_t)v >> 32));
    put32(b, (uint32_t)v);
}

static void put_bytes(struct buf *b, const void *p, size_t n)
{
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

/* Header: magic, version, 15 zero bytes, the six counts. */
static void put_header(struct buf *b, char version, uint32_t timecnt, uint32_t typecnt,
                       uint32_t charcnt, uint32_t leapcnt)
{
    put_bytes(b, "TZif", 4);
    b->b[b->n++] = (unsigned char)version;
    memset(b->b + b->n, 0, 15);
    b->n += 15;
    put32(b, 0); /* isutcnt */
    put32(b, 0); /* isstdcnt */
    put32(b, leapcnt);
    put32(b, timecnt);
    put32(b, typecnt);
    put32(b, charcnt);
}

/* Two types "AAA" (+0, std) and "BBB" (+3600, dst) and one transition at 1000 to type 1. */
static void put_v1_body(struct buf *b)
{
    put32(b, 1000);                                     /* transition time */
    b->b[b->n++] = 1;                                   /* its type */
    put32(b, 0), b->b[b->n++] = 0, b->b[b->n++] = 0;    /* type 0: +0, std, "AAA" */
    put32(b, 3600), b->b[b->n++] = 1, b->b[b->n++] = 4; /* type 1: +1 h, dst, "BBB" */
    put_bytes(b, "AAA\0BBB\0", 8);
}

static void tzif_v1(void)
{
    struct buf b = {.n = 0};
    put_header(&b, 0, 1, 2, 8, 0);
    put_v1_body(&b);
    char *err = NULL;
    struct tz *z = tz_parse("test/v1", b.b, b.n, &err);
    ASSERT(z != NULL);
    /* Before the transition: type 0 (+0); from 1000 on: type 1 (+1 h) forever (no footer). */
    CHECK_LOCAL(z, 999, 1970, 1, 1, 0, 16, 39, THU, 0, false);
    CHECK_LOCAL(z, 1000, 1970, 1, 1, 1, 16, 40, THU, 3600, true);
    CHECK_LOCAL(z, 1767225600, 2026, 1, 1, 1, 0, 0, THU, 3600, true);
    tz_free(z);
}

static void tzif_v2_footer_only(void)
{
    /* A "slim" file: no transitions at all, only the footer; both blocks minimal. */
    struct buf b = {.n = 0};
    for (int blk = 0; blk < 2; blk++) {
        put_header(&b, '2', 0, 1, 4, 0);
        put32(&b, 3600), b.b[b.n++] = 0, b.b[b.n++] = 0;
        put_bytes(&b, "CET\0", 4);
    }
    put_bytes(&b, "\nCET-1CEST,M3.5.0,M10.5.0/3\n", 28);
    char *err = NULL;
    struct tz *z = tz_parse("test/slim", b.b, b.n, &err);
    ASSERT(z != NULL);
    /* Same instants as Europe/Berlin 2026 above: 1774745999 -> 01:59:59 CET,
     * 1774746000 -> 03:00:00 CEST. */
    CHECK_LOCAL(z, 1774745999, 2026, 3, 29, 1, 59, 59, SUN, 3600, false);
    CHECK_LOCAL(z, 1774746000, 2026, 3, 29, 3, 0, 0, SUN, 7200, true);
    tz_free(z);
}

static void tzif_v2_uses_64bit_block(void)
{
    /* v1 block says +1 h after 1000; the v2 block (which wins) has a transition at
     * 2^32 + 5 (beyond 32 bits) to +2 h and an empty footer (keep the last type). */
    struct buf b = {.n = 0};
    put_header(&b, '3', 1, 2, 8, 0);
    put_v1_body(&b);
    put_header(&b, '3', 1, 2, 8, 0);
    put64(&b, INT64_C(4294967301));
    b.b[b.n++] = 1;
    put32(&b, 0), b.b[b.n++] = 0, b.b[b.n++] = 0;
    put32(&b, 7200), b.b[b.n++] = 1, b.b[b.n++] = 4;
    put_bytes(&b, "AAA\0BBB\0", 8);
    put_bytes(&b, "\n\n", 2);
    char *err = NULL;
    struct tz *z = tz_parse("test/v3", b.b, b.n, &err);
    ASSERT(z != NULL);
    struct tz_tm t;
    tz_local(z, 1000, &t);
    ASSERT_EQ(t.utoff, 0); /* the v1 transition at 1000 is not in the v2 data */
    tz_local(z, INT64_C(4294967300), &t);
    ASSERT_EQ(t.utoff, 0);
    tz_local(z, INT64_C(4294967301), &t);
    ASSERT_EQ(t.utoff, 7200);
    tz_free(z);
}

static void tzif_malformed(void)
{
    char *err = NULL;
    struct buf b = {.n = 0};
    put_header(&b, 0, 1, 2, 8, 0);
    put_v1_body(&b);
    /* Truncated by one byte. */
    ASSERT(tz_parse("t", b.b, b.n - 1, &err) == NULL);
    ASSERT_STR(err, "time zone \"t\": truncated data");
    free(err);
    /* Bad magic. */
    b.b[0] = 'X';
    err = NULL;
    ASSERT(tz_parse("t", b.b, b.n, &err) == NULL);
    ASSERT_STR(err, "time zone \"t\": not a TZif file");
    free(err);
    /* Type index out of range. */
    b.b[0] = 'T';
    b.b[44 + 4] = 2;
    err = NULL;
    ASSERT(tz_parse("t", b.b, b.n, &err) == NULL);
    ASSERT_CONTAINS(err, "type index out of range");
    free(err);
    /* v2 without the footer's closing newline. */
    struct buf c = {.n = 0};
    for (int blk = 0; blk < 2; blk++) {
        put_header(&c, '2', 0, 1, 4, 0);
        put32(&c, 0), c.b[c.n++] = 0, c.b[c.n++] = 0;
        put_bytes(&c, "UTC\0", 4);
    }
    put_bytes(&c, "\nUTC0", 5);
    err = NULL;
    ASSERT(tz_parse("t", c.b, c.n, &err) == NULL);
    ASSERT_STR(err, "time zone \"t\": missing footer");
    free(err);
}

TEST_MAIN(TEST_ENTRY(cases), TEST_ENTRY(utc_is_built_in_and_cached),
          TEST_ENTRY(footer_rule_agrees_with_transitions), TEST_ENTRY(tzif_v1),
          TEST_ENTRY(tzif_v2_footer_only), TEST_ENTRY(tzif_v2_uses_64bit_block),
          TEST_ENTRY(tzif_malformed))
