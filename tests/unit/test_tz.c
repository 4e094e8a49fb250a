/*
 * Unit tests for tz.c: TZif parsing (v1 by hand-made bytes, v2+ from the system's zoneinfo),
 * POSIX TZ footer rules (northern, southern, negative DST, v3 negative times, all-year DST),
 * civil time before the first and after the last transition, and the zone-name checks.
 *
 * Every expected civil time for a real zone was checked on the development machine with
 * `TZ=<zone> date -d @EPOCH '+%F %T %Z %z %a'` (tzdata 2026f) and is quoted in a comment.
 */
#include <stdlib.h>

#include "test.h"

#include "tz.h"

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

static void utc_builtin(void)
{
    const struct tz *z = get("UTC");
    ASSERT(z != NULL);
    ASSERT_STR(tz_name(z), "UTC");
    /* 0 = 1970-01-01 00:00:00, a Thursday. */
    CHECK_LOCAL(z, 0, 1970, 1, 1, 0, 0, 0, THU, 0, false);
    /* -1 = 1969-12-31 23:59:59, a Wednesday. */
    CHECK_LOCAL(z, -1, 1969, 12, 31, 23, 59, 59, WED, 0, false);
    /* 2028 is a leap year: 2028-01-01 = 1830297600 (date -u -d 2028-01-01 +%s), + 59 days =
     * 2028-02-29 (31 Jan + 28 = day 59 0-based), a Tuesday. */
    CHECK_LOCAL(z, 1830297600 + 59 * 86400, 2028, 2, 29, 0, 0, 0, TUE, 0, false);
    struct tz_tm t;
    tz_local(z, 1830297600 + 59 * 86400, &t);
    ASSERT_EQ(t.yday, 59);
    /* Year 2100 is not leap: 2100-03-01 = 4107542400 (date -u -d 2100-03-01), a Monday. */
    CHECK_LOCAL(z, INT64_C(4107542400), 2100, 3, 1, 0, 0, 0, MON, 0, false);
    /* The same pointer comes back from the cache. */
    ASSERT(get("UTC") == z);
}

static void bad_names(void)
{
    static const char *const bad[] = {"",
                                      "../etc/passwd",
                                      "/etc/passwd",
                                      "Europe/../../etc/passwd",
                                      "Europe/Berlin;rm",
                                      "Europe/ Berlin",
                                      "Europe\\Berlin",
                                      "a..b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *err = NULL;
        ASSERT(tz_get(bad[i], &err) == NULL);
        ASSERT_CONTAINS(err, "time zone \"");
        free(err);
    }
    char *err = NULL;
    ASSERT(tz_get("Mars/Olympus_Mons", &err) == NULL);
    ASSERT_STR(err, "time zone \"Mars/Olympus_Mons\": unknown time zone");
    free(err);
    err = NULL;
    ASSERT(tz_get("Europe", &err) == NULL); /* a directory */
    ASSERT_CONTAINS(err, "not a zone file");
    free(err);
    err = NULL;
    /* Leap-second zones count TAI-like seconds; governor's instants are POSIX seconds. */
    ASSERT(tz_get("right/UTC", &err) == NULL);
    ASSERT_CONTAINS(err, "leap-second");
    free(err);
}

static void new_york_2026(void)
{
    const struct tz *z = get("America/New_York");
    ASSERT(z != NULL);
    /* 1772953199 -> 2026-03-08 01:59:59 EST -0500 Sun (last second before spring forward) */
    CHECK_LOCAL(z, 1772953199, 2026, 3, 8, 1, 59, 59, SUN, -18000, false);
    /* 1772953200 -> 2026-03-08 03:00:00 EDT -0400 Sun (02:00-02:59 never happen) */
    CHECK_LOCAL(z, 1772953200, 2026, 3, 8, 3, 0, 0, SUN, -14400, true);
    /* 1778073255 -> 2026-05-06 09:14:15 EDT Wed */
    CHECK_LOCAL(z, 1778073255, 2026, 5, 6, 9, 14, 15, WED, -14400, true);
    /* Fall back: 01:30 happens twice.
     * 1793511000 -> 2026-11-01 01:30:00 EDT -0400; 1793514600 -> 01:30:00 EST -0500 */
    CHECK_LOCAL(z, 1793511000, 2026, 11, 1, 1, 30, 0, SUN, -14400, true);
    CHECK_LOCAL(z, 1793514600, 2026, 11, 1, 1, 30, 0, SUN, -18000, false);
    /* 1793512799 -> 01:59:59 EDT, 1793512800 -> 01:00:00 EST */
    CHECK_LOCAL(z, 1793512799, 2026, 11, 1, 1, 59, 59, SUN, -14400, true);
    CHECK_LOCAL(z, 1793512800, 2026, 11, 1, 1, 0, 0, SUN, -18000, false);
}

static void berlin_2026(void)
{
    const struct tz *z = get("Europe/Berlin");
    ASSERT(z != NULL);
    /* 1774745999 -> 2026-03-29 01:59:59 CET +0100; 1774746000 -> 03:00:00 CEST +0200 */
    CHECK_LOCAL(z, 1774745999, 2026, 3, 29, 1, 59, 59, SUN, 3600, false);
    CHECK_LOCAL(z, 1774746000, 2026, 3, 29, 3, 0, 0, SUN, 7200, true);
    /* 1792888200 -> 2026-10-25 02:30:00 CEST; 1792891800 -> 02:30:00 CET (twice) */
    CHECK_LOCAL(z, 1792888200, 2026, 10, 25, 2, 30, 0, SUN, 7200, true);
    CHECK_LOCAL(z, 1792891800, 2026, 10, 25, 2, 30, 0, SUN, 3600, false);
    /* A local date differing from the UTC date: 1774746000 is 2026-03-28 21:00 EDT (Sat) in
     * New York. */
    CHECK_LOCAL(get("America/New_York"), 1774746000, 2026, 3, 28, 21, 0, 0, SAT, -14400, true);
}

static void before_first_transition(void)
{
    /* -5364662400 (1800-01-01T00:00Z) -> 1799-12-31 19:03:58 LMT -0456 Tue: local mean time
     * -4:56:02 = -17762 s, the zone's type 0. */
    CHECK_LOCAL(get("America/New_York"), INT64_C(-5364662400), 1799, 12, 31, 19, 3, 58, TUE, -17762,
                false);
    /* -315619200 (1960-01-01T00:00Z) -> 1959-12-31 19:00:00 EST Thu */
    CHECK_LOCAL(get("America/New_York"), -315619200, 1959, 12, 31, 19, 0, 0, THU, -18000, false);
    /* -2208988800 (1900-01-01T00:00Z) -> 1900-01-01 01:00:00 CET +0100 Mon */
    CHECK_LOCAL(get("Europe/Berlin"), INT64_C(-2208988800), 1900, 1, 1, 1, 0, 0, MON, 3600, false);
}

/* Past 2037 the files hold no transitions: the footer rule decides. */
static void footer_after_last_transition(void)
{
    const struct tz *ny = get("America/New_York"), *be = get("Europe/Berlin");
    const struct tz *sy = get("Australia/Sydney"), *nu = get("America/Nuuk");
    const struct tz *du = get("Europe/Dublin"), *ko = get("Asia/Kolkata");
    ASSERT(ny && be && sy && nu && du && ko);
    /* NY "EST5EDT,M3.2.0,M11.1.0": 2215061999 -> 2040-03-11 01:59:59 EST,
     * 2215062000 -> 03:00:00 EDT (second Sunday of March 2040 = the 11th). */
    CHECK_LOCAL(ny, INT64_C(2215061999), 2040, 3, 11, 1, 59, 59, SUN, -18000, false);
    CHECK_LOCAL(ny, INT64_C(2215062000), 2040, 3, 11, 3, 0, 0, SUN, -14400, true);
    /* 2224756800 -> 2040-07-01 08:00:00 EDT; 2237976000 -> 2040-12-01 07:00:00 EST Sat */
    CHECK_LOCAL(ny, INT64_C(2224756800), 2040, 7, 1, 8, 0, 0, SUN, -14400, true);
    CHECK_LOCAL(ny, INT64_C(2237976000), 2040, 12, 1, 7, 0, 0, SAT, -18000, false);
    /* Berlin "CET-1CEST,M3.5.0,M10.5.0/3": last Sunday of March 2040 = 25th:
     * 2216249999 -> 01:59:59 CET, 2216250000 -> 03:00:00 CEST; last Sunday of October 2040
     * = 28th: 2234998799 -> 02:59:59 CEST, 2234998800 -> 02:00:00 CET. */
    CHECK_LOCAL(be, INT64_C(2216249999), 2040, 3, 25, 1, 59, 59, SUN, 3600, false);
    CHECK_LOCAL(be, INT64_C(2216250000), 2040, 3, 25, 3, 0, 0, SUN, 7200, true);
    CHECK_LOCAL(be, INT64_C(2234998799), 2040, 10, 28, 2, 59, 59, SUN, 7200, true);
    CHECK_LOCAL(be, INT64_C(2234998800), 2040, 10, 28, 2, 0, 0, SUN, 3600, false);
    /* Sydney "AEST-10AEDT,M10.1.0,M4.1.0/3" (southern: DST spans New Year):
     * 2210241600 -> 2040-01-15 23:00:00 AEDT +1100; 2225966400 -> 2040-07-15 22:00 AEST;
     * first Sunday of April 2040 = 1st: 2216822399 -> 02:59:59 AEDT, 2216822400 -> 02:00 AEST */
    CHECK_LOCAL(sy, INT64_C(2210241600), 2040, 1, 15, 23, 0, 0, SUN, 39600, true);
    CHECK_LOCAL(sy, INT64_C(2225966400), 2040, 7, 15, 22, 0, 0, SUN, 36000, false);
    CHECK_LOCAL(sy, INT64_C(2216822399), 2040, 4, 1, 2, 59, 59, SUN, 39600, true);
    CHECK_LOCAL(sy, INT64_C(2216822400), 2040, 4, 1, 2, 0, 0, SUN, 36000, false);
    /* Nuuk "<-02>2<-01>,M3.5.0/-1,M10.5.0/0" (v3: a negative transition time, i.e. 23:00 on
     * the Saturday): 2216249999 -> 2040-03-24 22:59:59 -02, 2216250000 -> 03-25 00:00:00 -01 */
    CHECK_LOCAL(nu, INT64_C(2216249999), 2040, 3, 24, 22, 59, 59, SAT, -7200, false);
    CHECK_LOCAL(nu, INT64_C(2216250000), 2040, 3, 25, 0, 0, 0, SUN, -3600, true);
    /* Dublin "IST-1GMT0,M10.5.0,M3.5.0/1" (negative DST: winter GMT is the "DST" part):
     * 2216249999 -> 2040-03-25 00:59:59 GMT, 2216250000 -> 02:00:00 IST +0100 */
    CHECK_LOCAL(du, INT64_C(2216249999), 2040, 3, 25, 0, 59, 59, SUN, 0, true);
    CHECK_LOCAL(du, INT64_C(2216250000), 2040, 3, 25, 2, 0, 0, SUN, 3600, false);
    /* Kolkata "IST-5:30": 2225966400 -> 2040-07-15 17:30:00 IST +0530 */
    CHECK_LOCAL(ko, INT64_C(2225966400), 2040, 7, 15, 17, 30, 0, SUN, 19800, false);
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

static void posix_rules(void)
{
    char *err = NULL;
    /* RFC 8536 section 3.3.1's example of all-year DST: "EST5EDT,0/0,J365/25". DST from
     * Jan 1 00:00 EST to Dec 31 25:00 EDT = Jan 1 01:00 EDT, i.e. always EDT (-4 h). */
    struct tz *z = tz_posix_new("EST5EDT,0/0,J365/25", &err);
    ASSERT(z != NULL);
    /* 1767225600 = 2026-01-01T00:00Z -> 2025-12-31 20:00 EDT; +182 days (2026-07-02). */
    CHECK_LOCAL(z, 1767225600, 2025, 12, 31, 20, 0, 0, WED, -14400, true);
    CHECK_LOCAL(z, 1767225600 + 182 * 86400, 2026, 7, 1, 20, 0, 0, WED, -14400, true);
    tz_free(z);
    /* Jn ignores Feb 29: J60 is always March 1. "XST0XDT,J60/0,J61/0" has DST on March 1 only.
     * 2028-03-01T12:00Z = 1830297600 + 60 days + 12 h (2028 leap: Jan 31 + Feb 29). */
    z = tz_posix_new("XST0XDT,J60/0,J61/0", &err);
    ASSERT(z != NULL);
    CHECK_LOCAL(z, 1830297600 + 60 * 86400 + 43200, 2028, 3, 1, 13, 0, 0, WED, 3600, true);
    CHECK_LOCAL(z, 1830297600 + 59 * 86400 + 43200, 2028, 2, 29, 12, 0, 0, TUE, 0, false);
    tz_free(z);
    /* Zero-based n counts Feb 29: day 59 of 2028 is Feb 29. */
    z = tz_posix_new("XST0XDT,59/0,60/0", &err);
    ASSERT(z != NULL);
    CHECK_LOCAL(z, 1830297600 + 59 * 86400 + 43200, 2028, 2, 29, 13, 0, 0, TUE, 3600, true);
    tz_free(z);
    /* Quoted abbreviations, minutes in offsets: "<+0545>-5:45" is Nepal, +5:45 = 20700 s. */
    z = tz_posix_new("<+0545>-5:45", &err);
    ASSERT(z != NULL);
    CHECK_LOCAL(z, 0, 1970, 1, 1, 5, 45, 0, THU, 20700, false);
    tz_free(z);
    static const char *const bad[] = {"",
                                      "E5",
                                      "EST",
                                      "EST5EDT,M13.1.0,M11.1.0",
                                      "EST5EDT,M3.2.0",
                                      "EST5EDT,M3.2.7,M11.1.0",
                                      "<AB>5",
                                      "EST5EDT,J366,J1",
                                      "EST99"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        ASSERT(tz_posix_new(bad[i], &err) == NULL);
        ASSERT_CONTAINS(err, "malformed POSIX TZ string");
        free(err);
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

TEST_MAIN(TEST_ENTRY(utc_builtin), TEST_ENTRY(bad_names), TEST_ENTRY(new_york_2026),
          TEST_ENTRY(berlin_2026), TEST_ENTRY(before_first_transition),
          TEST_ENTRY(footer_after_last_transition), TEST_ENTRY(footer_rule_agrees_with_transitions),
          TEST_ENTRY(posix_rules), TEST_ENTRY(tzif_v1), TEST_ENTRY(tzif_v2_footer_only),
          TEST_ENTRY(tzif_v2_uses_64bit_block), TEST_ENTRY(tzif_malformed))
