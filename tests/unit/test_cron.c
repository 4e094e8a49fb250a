/*
 * Unit tests for cron.c: excluded periods. The cases (Quartz fields and specials L, L-n, W, LW,
 * nL, n#k, names, year; the '?' rules; daily ranges at millisecond precision; '&&' / ';'
 * lists; error messages with positions; evaluation in IANA zones across DST) are data, in
 * tests/unit/data/cron.test, run by cron_case below. What stays in C tests the entry points
 * themselves: the single-form matchers, the error contract, and the core hook.
 */
#include <stdlib.h>

#include "test.h"
#include "testfile.h"

#include "core/core.h"
#include "time/cron.h"
#include "time/tz.h"

/* Epoch ms of a UTC civil time (days-from-civil, Howard Hinnant). */
static int64_t utc(int y, int mo, int d, int h, int mi, int s, int ms)
{
    y -= mo <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1;
    int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return ((days * 86400 + h * 3600 + mi * 60 + s) * 1000) + ms;
}

/* An instant of cron.test: "2026-05-06T12:00:00Z", "2026-05-06T12:00:00.999Z" or epoch ms.
 * 0 on success, -1 when s is neither. */
static int instant(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, milli = 0, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6) {
        const char *rest = s + n;
        int m = 0;
        if (rest[0] == '.' && sscanf(rest, ".%3d%n", &milli, &m) == 1 && m == 4)
            rest += m;
        if (strcmp(rest, "Z") != 0)
            return -1;
        *ms = utc(y, mo, d, h, mi, sec, milli);
        return 0;
    }
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end)
        return -1;
    *ms = v;
    return 0;
}

/* The handler of cron.test (its header lists the verbs). */
static int cron_case(void *ud, const struct testfile_case *c, struct testfile_out *out)
{
    (void)ud;
    const char *verb = c->field[0], *periods = testfile_field(c, 1);
    char *err = NULL;
    int64_t at, to;
    if (strcmp(verb, "error") == 0 && c->n_fields == 2) {
        if (cron_validate(periods, &err) == 0)
            testfile_printf(out, "valid");
        else
            testfile_printf(out, "%s", err);
        free(err);
        return 0;
    }
    if (strcmp(verb, "match") == 0 && (c->n_fields == 3 || c->n_fields == 4) &&
        instant(c->field[2], &at) == 0) {
        bool match = false;
        if (cron_periods_match(periods, at, c->n_fields == 4 ? c->field[3] : "UTC", &match, &err) !=
            0)
            testfile_printf(out, "error: %s", err);
        else
            testfile_printf(out, "%s", match ? "yes" : "no");
        free(err);
        return 0;
    }
    if (strcmp(verb, "why") == 0 && c->n_fields == 3 && instant(c->field[2], &at) == 0) {
        struct cron_expr *e = cron_parse(periods, CRON_PERIODS, &err);
        if (!e) {
            testfile_printf(out, "error: %s", err);
            free(err);
            return 0;
        }
        const char *why = "x";
        bool match = cron_expr_matches(e, tz_get("UTC", NULL), at, &why);
        /* A match names its element; no match leaves why NULL. */
        if (match != (why != NULL))
            testfile_printf(out, "match %d but why %s", match, why ? why : "(null)");
        else
            testfile_printf(out, "%s", why ? why : "(none)");
        cron_free(e);
        return 0;
    }
    if (strcmp(verb, "seconds") == 0 && c->n_fields == 5 && instant(c->field[3], &at) == 0 &&
        instant(c->field[4], &to) == 0) {
        struct cron_expr *e = cron_parse(periods, CRON_PERIODS, &err);
        const struct tz *z = tz_get(c->field[2], NULL);
        if (!e || !z) {
            testfile_printf(out, "error: %s", err ? err : "unknown zone");
            free(err);
            cron_free(e);
            return 0;
        }
        int n = 0;
        for (int64_t s = at / 1000; s < to / 1000; s++)
            n += cron_expr_matches(e, z, s * 1000, NULL);
        cron_free(e);
        testfile_printf(out, "%d", n);
        return 0;
    }
    testfile_printf(out, "unknown verb or bad fields");
    return -1;
}

static void helpers_read_instants(void)
{
    /* date -u -d 2026-03-08T07:00:00Z +%s = 1772953200; 2026-05-06T13:14:15Z = 1778073255 */
    ASSERT_EQ(utc(2026, 3, 8, 7, 0, 0, 0), INT64_C(1772953200000));
    ASSERT_EQ(utc(2026, 5, 6, 13, 14, 15, 0), INT64_C(1778073255000));
    ASSERT_EQ(utc(1970, 1, 1, 0, 0, 0, 0), 0);
    int64_t ms = -1;
    ASSERT_EQ(instant("2026-05-06T13:14:15.250Z", &ms), 0);
    ASSERT_EQ(ms, INT64_C(1778073255250));
    ASSERT_EQ(instant("1772953199000", &ms), 0);
    ASSERT_EQ(ms, INT64_C(1772953199000));
    ASSERT_EQ(instant("2026-05-06T13:14:15", &ms), -1); /* no zone: refused */
    ASSERT_EQ(instant("2026-05-06T13:14:15.5Z", &ms), -1);
}

static void cases(void)
{
    ASSERT_EQ(testfile_run(TESTFILE_DATA("cron.test"), cron_case, NULL), 0);
}

static void single_form_entry_points(void)
{
    /* cron_daily_matches takes only the daily form; cron_matches only cron. */
    bool match = true;
    char *err = NULL;
    ASSERT_EQ(cron_daily_matches("* * 9 * * ?", 0, "UTC", &match, &err), -1);
    ASSERT_STR(err, "daily \"* * 9 * * ?\": expected two times joined by one '-'");
    free(err);
    err = NULL;
    ASSERT_EQ(cron_matches("09:00-10:00", 0, "UTC", &match, &err), -1);
    ASSERT_CONTAINS(err, "cron \"09:00-10:00\": expected 6 or 7 fields");
    free(err);
    /* A NULL or empty zone is UTC. */
    ASSERT_EQ(cron_daily_matches("09:00-10:00", utc(2026, 5, 6, 9, 30, 0, 0), NULL, &match, NULL),
              0);
    ASSERT(match);
    ASSERT_EQ(cron_matches("* 30 9 * * ?", utc(2026, 5, 6, 9, 30, 0, 0), "", &match, NULL), 0);
    ASSERT(match);
}

static void unknown_zone(void)
{
    bool match = true;
    char *err = NULL;
    ASSERT_EQ(cron_periods_match("* * * ? * *", 0, "Mars/Base", &match, &err), -1);
    ASSERT_STR(err, "time zone \"Mars/Base\": unknown time zone");
    ASSERT(!match);
    free(err);
}

static void excluded_hook(void)
{
    /* It fits the core's hook slot (a type mismatch would not compile with -Werror). */
    struct core_hooks hooks = {.ud = NULL, .excluded = cron_excluded_hook};
    ASSERT(hooks.excluded != NULL);
    struct core_config c;
    memset(&c, 0, sizeof c);
    char why[64], err[128];
    bool ex = true;
    /* No periods: never excluded, whatever the zone. */
    c.excluded_periods = "";
    c.excluded_tz = "Not/AZone";
    ASSERT_EQ(cron_excluded_hook(NULL, &c, 0, &ex, why, sizeof why, err, sizeof err), 0);
    ASSERT(!ex);
    /* 1778073255000 = 2026-05-06 15:14:15 CEST, a Wednesday. */
    c.excluded_periods = "* * * ? * SAT,SUN; * * * ? * MON-FRI && 14:00-16:00";
    c.excluded_tz = "Europe/Berlin";
    ASSERT_EQ(
        cron_excluded_hook(NULL, &c, INT64_C(1778073255000), &ex, why, sizeof why, err, sizeof err),
        0);
    ASSERT(ex);
    ASSERT_STR(why, "* * * ? * MON-FRI && 14:00-16:00");
    /* Same instant in UTC (13:14): not excluded, why emptied. */
    c.excluded_tz = NULL;
    ASSERT_EQ(
        cron_excluded_hook(NULL, &c, INT64_C(1778073255000), &ex, why, sizeof why, err, sizeof err),
        0);
    ASSERT(!ex);
    ASSERT_STR(why, "");
    /* A bad list is an error with the message in err, and not excluded. */
    c.excluded_periods = "* * 25 * * ?";
    ASSERT_EQ(cron_excluded_hook(NULL, &c, 0, &ex, why, sizeof why, err, sizeof err), -1);
    ASSERT(!ex);
    ASSERT_STR(err, "cron \"* * 25 * * ?\": hour field: 25 out of range 0-23 (at char 5)");
    c.excluded_periods = "0:00-1:00";
    c.excluded_tz = "../etc/passwd";
    ASSERT_EQ(cron_excluded_hook(NULL, &c, 0, &ex, why, sizeof why, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "time zone \"../etc/passwd\"");
    /* A short why buffer truncates rather than overflows. */
    c.excluded_tz = "UTC";
    char tiny[4];
    ASSERT_EQ(cron_excluded_hook(NULL, &c, 0, &ex, tiny, sizeof tiny, err, sizeof err), 0);
    ASSERT(ex);
    ASSERT_STR(tiny, "0:0");
}

TEST_MAIN(TEST_ENTRY(helpers_read_instants), TEST_ENTRY(cases),
          TEST_ENTRY(single_form_entry_points), TEST_ENTRY(unknown_zone), TEST_ENTRY(excluded_hook))
