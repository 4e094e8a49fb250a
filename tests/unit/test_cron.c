/*
 * Unit tests for cron.c: spec 4.5's excluded periods. Quartz fields and specials (L, L-n, W,
 * LW, nL, n#k, names, year), the '?' rules, the daily range form at millisecond precision,
 * '&&' / ';' lists, error messages with positions, and evaluation in IANA zones across DST.
 *
 * Calendar facts used (checked with `date -u -d DATE +%a`): 2026-01-01 Thu, 2026-01-31 Sat,
 * 2026-02-01 Sun (2026 is not a leap year), 2026-03-01 Sun, 2026-03-31 Tue, 2026-04-30 Thu,
 * 2026-05-01 Fri, 2026-05-31 Sun, 2026-06-01 Mon, 2026-08-01 Sat, 2028-02-29 Tue.
 * Zone conversions were checked with `TZ=<zone> date -d @EPOCH` (tzdata 2026f).
 */
#include <stdlib.h>

#include "test.h"

#include "core/core.h"
#include "cron.h"
#include "tz.h"

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

/* 1 / 0 for match / no match in UTC; -1 (printing the message) on an error. */
static int m_tz(const char *periods, int64_t ms, const char *tz)
{
    bool match = false;
    char *err = NULL;
    if (cron_periods_match(periods, ms, tz, &match, &err) != 0) {
        fprintf(stderr, "  \"%s\": %s\n", periods, err);
        free(err);
        return -1;
    }
    return match;
}

static int m(const char *periods, int64_t ms)
{
    return m_tz(periods, ms, "UTC");
}

/* The error message of a bad list, or NULL (leaks nothing: tests compare then free). */
static char *err_of(const char *periods)
{
    char *err = NULL;
    if (cron_validate(periods, &err) == 0)
        return NULL;
    return err;
}

#define ASSERT_ERR(periods, expected)                                                              \
    do {                                                                                           \
        char *e__ = err_of(periods);                                                               \
        int ok__ = e__ && strcmp(e__, (expected)) == 0;                                            \
        if (!ok__)                                                                                 \
            fprintf(stderr, "  got: %s\n", e__ ? e__ : "(valid)");                                 \
        free(e__);                                                                                 \
        ASSERT(ok__);                                                                              \
    } while (0)

#define ASSERT_ERR_HAS(periods, needle)                                                            \
    do {                                                                                           \
        char *e__ = err_of(periods);                                                               \
        int ok__ = e__ && strstr(e__, (needle)) != NULL;                                           \
        if (!ok__)                                                                                 \
            fprintf(stderr, "  got: %s\n", e__ ? e__ : "(valid)");                                 \
        free(e__);                                                                                 \
        ASSERT(ok__);                                                                              \
    } while (0)

static void helper_matches_date(void)
{
    /* date -u -d 2026-03-08T07:00:00Z +%s = 1772953200; 2026-05-06T13:14:15Z = 1778073255 */
    ASSERT_EQ(utc(2026, 3, 8, 7, 0, 0, 0), INT64_C(1772953200000));
    ASSERT_EQ(utc(2026, 5, 6, 13, 14, 15, 0), INT64_C(1778073255000));
    ASSERT_EQ(utc(1970, 1, 1, 0, 0, 0, 0), 0);
}

static void seconds_minutes_hours(void)
{
    /* Exactly 12:00:00 every day. */
    ASSERT_EQ(m("0 0 12 * * ?", utc(2026, 5, 6, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("0 0 12 * * ?", utc(2026, 5, 6, 12, 0, 0, 999)), 1); /* second resolution */
    ASSERT_EQ(m("0 0 12 * * ?", utc(2026, 5, 6, 12, 0, 1, 0)), 0);
    ASSERT_EQ(m("0 0 12 * * ?", utc(2026, 5, 6, 13, 0, 0, 0)), 0);
    /* Every 15 s: seconds 0, 15, 30, 45. */
    ASSERT_EQ(m("*/15 * * * * ?", utc(2026, 5, 6, 1, 2, 45, 0)), 1);
    ASSERT_EQ(m("*/15 * * * * ?", utc(2026, 5, 6, 1, 2, 46, 0)), 0);
    /* "3/10": 3, 13, 23, 33, 43, 53. */
    ASSERT_EQ(m("3/10 * * * * ?", utc(2026, 5, 6, 1, 2, 3, 0)), 1);
    ASSERT_EQ(m("3/10 * * * * ?", utc(2026, 5, 6, 1, 2, 53, 0)), 1);
    ASSERT_EQ(m("3/10 * * * * ?", utc(2026, 5, 6, 1, 2, 0, 0)), 0);
    ASSERT_EQ(m("3/10 * * * * ?", utc(2026, 5, 6, 1, 2, 4, 0)), 0);
    /* Quartz's bare "/20" = "* /20": 0, 20, 40. */
    ASSERT_EQ(m("/20 * * * * ?", utc(2026, 5, 6, 1, 2, 40, 0)), 1);
    ASSERT_EQ(m("/20 * * * * ?", utc(2026, 5, 6, 1, 2, 50, 0)), 0);
    /* Minutes "10-40/5": 10, 15, ..., 40 (inclusive end), at second 0. */
    ASSERT_EQ(m("0 10-40/5 * * * ?", utc(2026, 5, 6, 1, 10, 0, 0)), 1);
    ASSERT_EQ(m("0 10-40/5 * * * ?", utc(2026, 5, 6, 1, 40, 0, 0)), 1);
    ASSERT_EQ(m("0 10-40/5 * * * ?", utc(2026, 5, 6, 1, 45, 0, 0)), 0);
    ASSERT_EQ(m("0 10-40/5 * * * ?", utc(2026, 5, 6, 1, 12, 0, 0)), 0);
    ASSERT_EQ(m("0 10-40/5 * * * ?", utc(2026, 5, 6, 1, 5, 0, 0)), 0);
    /* Lists. */
    ASSERT_EQ(m("* 1,2,59 * * * ?", utc(2026, 5, 6, 1, 59, 7, 0)), 1);
    ASSERT_EQ(m("* 1,2,59 * * * ?", utc(2026, 5, 6, 1, 3, 7, 0)), 0);
    /* A range past the end wraps (Quartz): hours 22-2 = 22, 23, 0, 1, 2. */
    ASSERT_EQ(m("* * 22-2 * * ?", utc(2026, 5, 6, 23, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * 22-2 * * ?", utc(2026, 5, 6, 0, 30, 0, 0)), 1);
    ASSERT_EQ(m("* * 22-2 * * ?", utc(2026, 5, 6, 2, 59, 59, 0)), 1);
    ASSERT_EQ(m("* * 22-2 * * ?", utc(2026, 5, 6, 3, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * 22-2 * * ?", utc(2026, 5, 6, 21, 59, 59, 0)), 0);
    /* A step over a wrapped range: 22-2/2 = 22, 0, 2. */
    ASSERT_EQ(m("* * 22-2/2 * * ?", utc(2026, 5, 6, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * 22-2/2 * * ?", utc(2026, 5, 6, 23, 0, 0, 0)), 0);
    /* Tabs and repeated blanks separate fields too; outer blanks are trimmed. */
    ASSERT_EQ(m("  0\t0  12 * * ?  ", utc(2026, 5, 6, 12, 0, 0, 0)), 1);
}

static void spec_examples(void)
{
    /* "* * 9-11,14-16 * * ?" covers 09:00:00-11:59:59 and 14:00:00-16:59:59 daily. */
    const char *biz = "* * 9-11,14-16 * * ?";
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 8, 59, 59, 999)), 0);
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 9, 0, 0, 0)), 1);
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 11, 59, 59, 999)), 1);
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 13, 59, 59, 0)), 0);
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 14, 0, 0, 0)), 1);
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 16, 59, 59, 0)), 1);
    ASSERT_EQ(m(biz, utc(2026, 5, 6, 17, 0, 0, 0)), 0);
    /* "* * * ? * 2-6" = Monday-Friday (1 = SUN). May 2026: 1 Fri, so 4 Mon, 6 Wed, 8 Fri,
     * 9 Sat, 10 Sun, 11 Mon. */
    const char *wk = "* * * ? * 2-6";
    ASSERT_EQ(m(wk, utc(2026, 5, 6, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m(wk, utc(2026, 5, 8, 23, 59, 59, 0)), 1);
    ASSERT_EQ(m(wk, utc(2026, 5, 9, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m(wk, utc(2026, 5, 10, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m(wk, utc(2026, 5, 11, 0, 0, 0, 0)), 1);
    /* Spec: a cron with one '-' whose sides are not times is a cron, not a daily range. */
    ASSERT_EQ(m("* * 9-11 * * ?", utc(2026, 5, 6, 10, 0, 0, 0)), 1);
}

static void names(void)
{
    /* MON-FRI = 2-6, case-insensitive. May 6 2026 is a Wednesday, May 9 a Saturday. */
    ASSERT_EQ(m("* * * ? * MON-FRI", utc(2026, 5, 6, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * mon-fri", utc(2026, 5, 9, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * ? * Mon,Wed", utc(2026, 5, 6, 12, 0, 0, 0)), 1);
    /* FRI-MON wraps: 6, 7, 1, 2 = Fri, Sat, Sun, Mon. May 7 2026 is a Thursday. */
    ASSERT_EQ(m("* * * ? * FRI-MON", utc(2026, 5, 10, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * FRI-MON", utc(2026, 5, 7, 12, 0, 0, 0)), 0);
    /* Months. */
    ASSERT_EQ(m("* * * * JAN,dec ?", utc(2026, 12, 24, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * * JAN,dec ?", utc(2026, 11, 24, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * * feb-MAR ?", utc(2026, 3, 31, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * * feb-MAR ?", utc(2026, 4, 1, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * * 11-2 ?", utc(2026, 1, 15, 0, 0, 0, 0)), 1); /* Nov-Feb wraps */
    ASSERT_EQ(m("* * * * 11-2 ?", utc(2026, 3, 15, 0, 0, 0, 0)), 0);
    /* Day-of-month list. */
    ASSERT_EQ(m("* * * 1,15 * ?", utc(2026, 5, 15, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * 1,15 * ?", utc(2026, 5, 16, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * */10 * ?", utc(2026, 5, 21, 0, 0, 0, 0)), 1); /* 1, 11, 21, 31 */
    ASSERT_EQ(m("* * * */10 * ?", utc(2026, 5, 20, 0, 0, 0, 0)), 0);
}

static void last_day_of_month(void)
{
    /* L: Feb 2026 has 28 days, Feb 2028 29, April 30. */
    ASSERT_EQ(m("* * * L * ?", utc(2026, 2, 28, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * L * ?", utc(2026, 2, 27, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * L * ?", utc(2028, 2, 29, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * L * ?", utc(2028, 2, 28, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * L * ?", utc(2026, 4, 30, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * l * ?", utc(2026, 5, 31, 12, 0, 0, 0)), 1);
    /* L-3: Feb 2026 -> 28 - 3 = 25th; January -> 31 - 3 = 28th. */
    ASSERT_EQ(m("* * * L-3 * ?", utc(2026, 2, 25, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * L-3 * ?", utc(2026, 2, 24, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * L-3 * ?", utc(2026, 1, 28, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * L-3 * ?", utc(2026, 1, 25, 0, 0, 0, 0)), 0);
    /* L-30 in February (28 - 30 < 1): no day matches. */
    ASSERT_EQ(m("* * * L-30 * ?", utc(2026, 2, 1, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * L-30 * ?", utc(2026, 1, 1, 0, 0, 0, 0)), 1); /* 31 - 30 = 1st */
}

static void nearest_weekday(void)
{
    /* 1W, August 2026: the 1st is a Saturday -> not back into July but Monday the 3rd. */
    ASSERT_EQ(m("* * * 1W * ?", utc(2026, 8, 1, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * 1W * ?", utc(2026, 8, 2, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * 1W * ?", utc(2026, 8, 3, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * 1W * ?", utc(2026, 8, 4, 12, 0, 0, 0)), 0);
    /* 1W, February 2026: the 1st is a Sunday -> Monday the 2nd. */
    ASSERT_EQ(m("* * * 1W * ?", utc(2026, 2, 2, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * 1W * ?", utc(2026, 2, 1, 12, 0, 0, 0)), 0);
    /* 31W, May 2026: the 31st is a Sunday -> not into June but Friday the 29th. */
    ASSERT_EQ(m("* * * 31W * ?", utc(2026, 5, 29, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * 31W * ?", utc(2026, 5, 30, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * 31W * ?", utc(2026, 5, 31, 12, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * 31W * ?", utc(2026, 6, 1, 12, 0, 0, 0)), 0);
    /* 31W in a 30-day month: no 31st, no match (April 30 2026 is a Thursday). */
    ASSERT_EQ(m("* * * 31W * ?", utc(2026, 4, 30, 12, 0, 0, 0)), 0);
    /* 15W: Aug 15 2026 is a Saturday -> Friday 14th; Feb 15 2026 a Sunday -> Monday 16th;
     * May 15 2026 a Friday -> itself. */
    ASSERT_EQ(m("* * * 15W * ?", utc(2026, 8, 14, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * 15W * ?", utc(2026, 8, 15, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * 15W * ?", utc(2026, 2, 16, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * 15W * ?", utc(2026, 2, 15, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * 15w * ?", utc(2026, 5, 15, 0, 0, 0, 0)), 1);
    /* LW: the last weekday. Jan 31 2026 is a Saturday -> Friday 30th; May 31 a Sunday ->
     * Friday 29th; June 30 a Tuesday -> itself. */
    ASSERT_EQ(m("* * * LW * ?", utc(2026, 1, 30, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * LW * ?", utc(2026, 1, 31, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * LW * ?", utc(2026, 5, 29, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * LW * ?", utc(2026, 5, 31, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * LW * ?", utc(2026, 6, 30, 0, 0, 0, 0)), 1);
    /* L-2W: March 2026, 31 - 2 = 29th, a Sunday -> Monday 30th. */
    ASSERT_EQ(m("* * * L-2W * ?", utc(2026, 3, 30, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * L-2W * ?", utc(2026, 3, 29, 0, 0, 0, 0)), 0);
}

static void day_of_week_specials(void)
{
    /* 6L = last Friday. May 2026: Fridays 1, 8, 15, 22, 29. Feb 2026: 6, 13, 20, 27. */
    ASSERT_EQ(m("* * * ? * 6L", utc(2026, 5, 29, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * 6L", utc(2026, 5, 22, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * ? * 6L", utc(2026, 5, 30, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * ? * FRIL", utc(2026, 2, 27, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * FRIL", utc(2026, 2, 20, 0, 0, 0, 0)), 0);
    /* A bare L in day-of-week is 7 = Saturday (Quartz). May 9 2026 is a Saturday. */
    ASSERT_EQ(m("* * * ? * L", utc(2026, 5, 9, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * L", utc(2026, 5, 8, 0, 0, 0, 0)), 0);
    /* 6#3 = third Friday: May 15 2026. */
    ASSERT_EQ(m("* * * ? * 6#3", utc(2026, 5, 15, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * 6#3", utc(2026, 5, 8, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * ? * 6#3", utc(2026, 5, 22, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * ? * fri#3", utc(2026, 5, 15, 0, 0, 0, 0)), 1);
    /* 2#1 = first Monday: Aug 1 2026 is a Saturday, so Monday the 3rd. */
    ASSERT_EQ(m("* * * ? * 2#1", utc(2026, 8, 3, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * 2#1", utc(2026, 8, 10, 0, 0, 0, 0)), 0);
    /* 6#5: May 2026 has a fifth Friday (29th); June 2026 (Fridays 5, 12, 19, 26) has none. */
    ASSERT_EQ(m("* * * ? * 6#5", utc(2026, 5, 29, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * 6#5", utc(2026, 6, 26, 0, 0, 0, 0)), 0);
    /* Day-of-week 1 = Sunday, 7 = Saturday. May 10 2026 is a Sunday. */
    ASSERT_EQ(m("* * * ? * 1", utc(2026, 5, 10, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * 7", utc(2026, 5, 10, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * ? * SUN", utc(2026, 5, 10, 0, 0, 0, 0)), 1);
}

static void year_field(void)
{
    /* 7th field: exactly 2027-01-01 00:00:00. */
    ASSERT_EQ(m("0 0 0 1 1 ? 2027", utc(2027, 1, 1, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("0 0 0 1 1 ? 2027", utc(2026, 1, 1, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * * * ? 2026-2027", utc(2027, 12, 31, 23, 59, 59, 0)), 1);
    ASSERT_EQ(m("* * * * * ? 2026-2027", utc(2028, 1, 1, 0, 0, 0, 0)), 0);
    /* 2030/5 = 2030, 2035, ..., 2095. */
    ASSERT_EQ(m("* * * * * ? 2030/5", utc(2035, 6, 1, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * * * ? 2030/5", utc(2031, 6, 1, 0, 0, 0, 0)), 0);
    ASSERT_EQ(m("* * * * * ? 2026,2099", utc(2099, 6, 1, 0, 0, 0, 0)), 1);
    /* "*" (or no year field) is every year, even past 2099. */
    ASSERT_EQ(m("* * * * * ? *", utc(2150, 6, 1, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * * * ?", utc(2150, 6, 1, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * * * ? 2099", utc(2150, 6, 1, 0, 0, 0, 0)), 0);
}

static void question_mark_rules(void)
{
    ASSERT_ERR("* * * * * *", "cron \"* * * * * *\": day-of-week field: one of day-of-month and "
                              "day-of-week must be '?' (both given is not supported) (at char 11)");
    ASSERT_ERR("* * * ? * ?",
               "cron \"* * * ? * ?\": day-of-week field: day-of-month and day-of-week cannot "
               "both be '?' (at char 11)");
    ASSERT_ERR("? * * * * ?", "cron \"? * * * * ?\": second field: '?' is only allowed in "
                              "day-of-month or day-of-week (at char 1)");
    ASSERT_ERR("* * * ?,1 * ?",
               "cron \"* * * ?,1 * ?\": day-of-month field: '?' must be the whole field (at char "
               "7)");
    /* '?' with the other day field given works both ways round. */
    ASSERT_EQ(m("* * * 6 * ?", utc(2026, 5, 6, 0, 0, 0, 0)), 1);
    ASSERT_EQ(m("* * * ? * 4", utc(2026, 5, 6, 0, 0, 0, 0)), 1); /* Wednesday = 4 */
}

static void errors_name_expression_and_position(void)
{
    /* The brief's example: the hour field starts at char 5. */
    ASSERT_ERR("* * 25 * * ?",
               "cron \"* * 25 * * ?\": hour field: 25 out of range 0-23 (at char 5)");
    ASSERT_ERR("60 * * * * ?",
               "cron \"60 * * * * ?\": second field: 60 out of range 0-59 (at char 1)");
    ASSERT_ERR("* 5-61 * * * ?",
               "cron \"* 5-61 * * * ?\": minute field: 61 out of range 0-59 (at char 5)");
    ASSERT_ERR("* * * 0 * ?",
               "cron \"* * * 0 * ?\": day-of-month field: 0 out of range 1-31 (at char 7)");
    ASSERT_ERR("* * * ? 13 *",
               "cron \"* * * ? 13 *\": month field: 13 out of range 1-12 (at char 9)");
    ASSERT_ERR("* * * ? * 8",
               "cron \"* * * ? * 8\": day-of-week field: 8 out of range 1-7 (at char 11)");
    ASSERT_ERR("* * * * * ? 1969",
               "cron \"* * * * * ? 1969\": year field: 1969 out of range 1970-2099 (at char 13)");
    ASSERT_ERR("* * * * * ? 2100",
               "cron \"* * * * * ? 2100\": year field: 2100 out of range 1970-2099 (at char 13)");
    ASSERT_ERR("* * * * * ? 2030-2026", "cron \"* * * * * ? 2030-2026\": year field: range "
                                        "2030-2026 runs backwards (at char 13)");
    ASSERT_ERR("* * *", "cron \"* * *\": expected 6 or 7 fields (sec min hour day-of-month month "
                        "day-of-week [year]), got 3");
    ASSERT_ERR("0 0 12 * * ? 2026 x",
               "cron \"0 0 12 * * ? 2026 x\": more than 7 fields (at char 19)");
    ASSERT_ERR("*/0 * * * * ?",
               "cron \"*/0 * * * * ?\": second field: increment 0 out of range 1-59 (at char 3)");
    ASSERT_ERR("* * */24 * * ?",
               "cron \"* * */24 * * ?\": hour field: increment 24 out of range 1-23 (at char 7)");
    ASSERT_ERR("*/ * * * * ?",
               "cron \"*/ * * * * ?\": second field: '/' must be followed by a number (at char 3)");
    ASSERT_ERR("* * * ? * FRX",
               "cron \"* * * ? * FRX\": day-of-week field: unknown day name \"FRX\" (at char 11)");
    ASSERT_ERR("* * * ? JANUARY *", "cron \"* * * ? JANUARY *\": month field: unexpected "
                                    "character 'U' (at char 12)");
    ASSERT_ERR("* * * ? * MON-", "cron \"* * * ? * MON-\": day-of-week field: missing value (at "
                                 "char 15)");
    ASSERT_ERR("* * MON * * ?",
               "cron \"* * MON * * ?\": hour field: unexpected character 'M' (at char 5)");
    ASSERT_ERR("* * * 1,L * ?",
               "cron \"* * * 1,L * ?\": day-of-month field: 'L' cannot be combined with other "
               "days (at char 9)");
    ASSERT_ERR("* * * L-31 * ?", "cron \"* * * L-31 * ?\": day-of-month field: offset 31 from "
                                 "the last day out of range 0-30 (at char 9)");
    ASSERT_ERR("* * * L-x * ?", "cron \"* * * L-x * ?\": day-of-month field: 'L-' must be "
                                "followed by a number (at char 9)");
    ASSERT_ERR("* * * 32W * ?",
               "cron \"* * * 32W * ?\": day-of-month field: 32 out of range 1-31 (at char 7)");
    ASSERT_ERR("* * * 1W,15 * ?", "cron \"* * * 1W,15 * ?\": day-of-month field: 'W' cannot be "
                                  "combined with other days (at char 8)");
    ASSERT_ERR("* * * ? * 6#6", "cron \"* * * ? * 6#6\": day-of-week field: '#' must be followed "
                                "by a number 1-5 (at char 13)");
    ASSERT_ERR("* * * ? * 6#3,2", "cron \"* * * ? * 6#3,2\": day-of-week field: '#' cannot be "
                                  "combined with other days (at char 12)");
    ASSERT_ERR("* * * ? * 6L,2", "cron \"* * * ? * 6L,2\": day-of-week field: 'L' cannot be "
                                 "combined with other days (at char 12)");
    ASSERT_ERR("* * * ? * 2-6L", "cron \"* * * ? * 2-6L\": day-of-week field: unexpected "
                                 "character 'L' (at char 14)");
    ASSERT_ERR("* * * 5L * ?", "cron \"* * * 5L * ?\": day-of-month field: unexpected character "
                               "'L' (at char 8)");
    ASSERT_ERR("* 1,,2 * * * ?",
               "cron \"* 1,,2 * * * ?\": minute field: empty list item (at char 5)");
    /* In a list, the error names the sub-expression, not the whole list. */
    ASSERT_ERR("09:00-10:00; * * 25 * * ?",
               "cron \"* * 25 * * ?\": hour field: 25 out of range 0-23 (at char 5)");
}

static void daily_ranges(void)
{
    /* 09:00-17:00: inclusive both ends at millisecond precision. */
    const char *d = "09:00-17:00";
    ASSERT_EQ(m(d, utc(2026, 5, 6, 8, 59, 59, 999)), 0);
    ASSERT_EQ(m(d, utc(2026, 5, 6, 9, 0, 0, 0)), 1);
    ASSERT_EQ(m(d, utc(2026, 5, 6, 12, 0, 0, 0)), 1);
    ASSERT_EQ(m(d, utc(2026, 5, 6, 17, 0, 0, 0)), 1);
    ASSERT_EQ(m(d, utc(2026, 5, 6, 17, 0, 0, 1)), 0);
    /* Seconds and milliseconds: 09:00:00.500 to 09:00:01.250. */
    const char *e = "9:0:0:500-9:0:1:250";
    ASSERT_EQ(m(e, utc(2026, 5, 6, 9, 0, 0, 499)), 0);
    ASSERT_EQ(m(e, utc(2026, 5, 6, 9, 0, 0, 500)), 1);
    ASSERT_EQ(m(e, utc(2026, 5, 6, 9, 0, 1, 250)), 1);
    ASSERT_EQ(m(e, utc(2026, 5, 6, 9, 0, 1, 251)), 0);
    /* Whole day but the last millisecond-range edge: 0:00 to 23:59:59:999. */
    ASSERT_EQ(m("0:00-23:59:59:999", utc(2026, 5, 6, 23, 59, 59, 999)), 1);
    ASSERT_EQ(m("0:00-23:59:59:999", utc(2026, 5, 7, 0, 0, 0, 0)), 1);
    /* Blanks around the times are allowed. */
    ASSERT_EQ(m(" 09:00 - 17:00 ", utc(2026, 5, 6, 9, 0, 0, 0)), 1);
    /* Bad ranges. */
    ASSERT_ERR("09:00-25:00",
               "daily \"09:00-25:00\": end time: hour 25 out of range 0-23 (at char 7)");
    ASSERT_ERR("09:60-10:00",
               "daily \"09:60-10:00\": start time: minute 60 out of range 0-59 (at char 4)");
    ASSERT_ERR("09:00:00:1000-10:00", "daily \"09:00:00:1000-10:00\": start time: millisecond "
                                      "1000 out of range 0-999 (at char 10)");
    ASSERT_ERR("17:00-09:00", "daily \"17:00-09:00\": start is not before end (ranges cannot "
                              "cross midnight)");
    ASSERT_ERR("09:00-09:00", "daily \"09:00-09:00\": start is not before end (ranges cannot "
                              "cross midnight)");
    ASSERT_ERR("09:00-10:00-11:00", "daily \"09:00-10:00-11:00\": expected two times joined by "
                                    "one '-'");
    ASSERT_ERR("9-10:00", "daily \"9-10:00\": start time must be H:M[:S[:ms]] (at char 1)");
    ASSERT_ERR("9:00:00:0:0-10:00",
               "daily \"9:00:00:0:0-10:00\": start time has more than 4 parts (at char 11)");
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
    ASSERT_EQ(cron_daily_matches("09:00-10:00", utc(2026, 5, 6, 9, 30, 0, 0), NULL, &match, NULL),
              0);
    ASSERT(match);
    ASSERT_EQ(cron_matches("* 30 9 * * ?", utc(2026, 5, 6, 9, 30, 0, 0), "", &match, NULL), 0);
    ASSERT(match);
}

static void and_combinations(void)
{
    /* Weekdays 09:00-17:00: Wed May 6 2026 10:00 yes; Sat May 9 10:00 no; Wed 18:00 no. */
    const char *a = "* * * ? * MON-FRI && 09:00-17:00";
    ASSERT_EQ(m(a, utc(2026, 5, 6, 10, 0, 0, 0)), 1);
    ASSERT_EQ(m(a, utc(2026, 5, 9, 10, 0, 0, 0)), 0);
    ASSERT_EQ(m(a, utc(2026, 5, 6, 18, 0, 0, 0)), 0);
    /* Either order. */
    const char *b = "09:00-17:00&&* * * ? * 2-6";
    ASSERT_EQ(m(b, utc(2026, 5, 6, 17, 0, 0, 0)), 1);
    ASSERT_EQ(m(b, utc(2026, 5, 10, 12, 0, 0, 0)), 0);
    ASSERT_ERR("09:00-10:00 && 11:00-12:00",
               "period \"09:00-10:00 && 11:00-12:00\": \"&&\" must join one daily range and one "
               "cron expression, not two daily ranges");
    ASSERT_ERR("* * * ? * 2 && * * 9 ? * *",
               "period \"* * * ? * 2 && * * 9 ? * *\": \"&&\" must join one daily range and one "
               "cron expression, not two cron expressions");
    ASSERT_ERR("* * * ? * 2 && 09:00-10:00 && * * 9 * * ?",
               "period \"* * * ? * 2 && 09:00-10:00 && * * 9 * * ?\": at most 2 sub-expressions "
               "may be joined with \"&&\"");
    ASSERT_ERR("&& 09:00-10:00", "period \"&& 09:00-10:00\": empty sub-expression");
    ASSERT_ERR("09:00-10:00 &&", "period \"09:00-10:00 &&\": empty sub-expression");
    /* A bad side is reported as itself. */
    ASSERT_ERR("* * * ? * 9 && 09:00-10:00",
               "cron \"* * * ? * 9\": day-of-week field: 9 out of range 1-7 (at char 11)");
}

static void or_lists(void)
{
    /* Weekends, or every night 00:00-06:00. */
    const char *l = "* * * ? * SAT,SUN; 0:00-6:00";
    ASSERT_EQ(m(l, utc(2026, 5, 9, 12, 0, 0, 0)), 1); /* Saturday noon */
    ASSERT_EQ(m(l, utc(2026, 5, 6, 3, 0, 0, 0)), 1);  /* Wednesday 03:00 */
    ASSERT_EQ(m(l, utc(2026, 5, 6, 12, 0, 0, 0)), 0); /* Wednesday noon */
    /* The matching element is reported, trimmed. */
    char *err = NULL;
    struct cron_expr *e = cron_parse(l, CRON_PERIODS, &err);
    ASSERT(e != NULL);
    const struct tz *utcz = tz_get("UTC", NULL);
    const char *why = "x";
    ASSERT(cron_expr_matches(e, utcz, utc(2026, 5, 6, 3, 0, 0, 0), &why));
    ASSERT_STR(why, "0:00-6:00");
    ASSERT(cron_expr_matches(e, utcz, utc(2026, 5, 9, 3, 0, 0, 0), &why));
    ASSERT_STR(why, "* * * ? * SAT,SUN"); /* the first matching element wins */
    ASSERT(!cron_expr_matches(e, utcz, utc(2026, 5, 6, 12, 0, 0, 0), &why));
    ASSERT(why == NULL);
    cron_free(e);
    /* Empty elements hold nothing; an empty list is valid and never matches. */
    ASSERT_EQ(m("", utc(2026, 5, 6, 3, 0, 0, 0)), 0);
    ASSERT_EQ(m(" ; ;", utc(2026, 5, 6, 3, 0, 0, 0)), 0);
    ASSERT_EQ(m(";0:00-6:00;", utc(2026, 5, 6, 3, 0, 0, 0)), 1);
    ASSERT_EQ(cron_validate("", NULL), 0);
    /* One bad element spoils the list. */
    ASSERT_ERR_HAS("0:00-6:00; nonsense", "cron \"nonsense\": expected 6 or 7 fields");
}

/* Counts the matching seconds of [from_s, to_s) for the periods in the zone. */
static int count_seconds(const char *periods, const char *zone, int64_t from_s, int64_t to_s)
{
    struct cron_expr *e = cron_parse(periods, CRON_PERIODS, NULL);
    const struct tz *z = tz_get(zone, NULL);
    if (!e || !z)
        return -1;
    int n = 0;
    for (int64_t s = from_s; s < to_s; s++)
        n += cron_expr_matches(e, z, s * 1000, NULL);
    cron_free(e);
    return n;
}

static void new_york_dst(void)
{
    const char *ny = "America/New_York";
    /* Spring forward, 2026-03-08: the local day runs from 00:00 EST (05:00Z) to the next
     * 00:00 EDT (2026-03-09 04:00Z) and has 23 hours; 02:00-02:59 never happen. */
    int64_t day_from = utc(2026, 3, 8, 5, 0, 0, 0) / 1000,
            day_to = utc(2026, 3, 9, 4, 0, 0, 0) / 1000;
    ASSERT_EQ(count_seconds("* * * * * ?", ny, day_from, day_to), 23 * 3600);
    ASSERT_EQ(count_seconds("* * 2 * * ?", ny, day_from, day_to), 0);
    ASSERT_EQ(count_seconds("* * 1 * * ?", ny, day_from, day_to), 3600);
    ASSERT_EQ(count_seconds("* * 3 * * ?", ny, day_from, day_to), 3600);
    /* 1772953199 = 01:59:59 EST and 1772953200 = 03:00:00 EDT (date). */
    ASSERT_EQ(m_tz("59 59 1 8 3 ?", INT64_C(1772953199000), ny), 1);
    ASSERT_EQ(m_tz("0 0 3 8 3 ?", INT64_C(1772953200000), ny), 1);
    ASSERT_EQ(m_tz("0 0 3 8 3 ?", INT64_C(1772953200000), "UTC"), 0); /* 07:00 UTC */

    /* Fall back, 2026-11-01: 01:30 happens at 05:30Z (EDT) and 06:30Z (EST); both instants
     * match an hour-1 cron; the local day (04:00Z to 2026-11-02 05:00Z) has 25 hours. */
    ASSERT_EQ(m_tz("0 30 1 * * ?", INT64_C(1793511000000), ny), 1);
    ASSERT_EQ(m_tz("0 30 1 * * ?", INT64_C(1793514600000), ny), 1);
    day_from = utc(2026, 11, 1, 4, 0, 0, 0) / 1000;
    day_to = utc(2026, 11, 2, 5, 0, 0, 0) / 1000;
    ASSERT_EQ(count_seconds("* * * * * ?", ny, day_from, day_to), 25 * 3600);
    ASSERT_EQ(count_seconds("* * 1 * * ?", ny, day_from, day_to), 2 * 3600);
    ASSERT_EQ(count_seconds("0 30 1 * * ?", ny, day_from, day_to), 2);

    /* A daily range spanning spring forward: 01:00-04:00 local covers 01:00:00 EST (06:00Z)
     * to 04:00:00 EDT (08:00Z) inclusive = 2 h of real time + the end second = 7201 s. */
    day_from = utc(2026, 3, 8, 5, 0, 0, 0) / 1000;
    day_to = utc(2026, 3, 9, 4, 0, 0, 0) / 1000;
    ASSERT_EQ(count_seconds("01:00-04:00", ny, day_from, day_to), 7201);
    ASSERT_EQ(m_tz("01:00-04:00", utc(2026, 3, 8, 5, 59, 59, 999), ny), 0); /* 00:59:59.999 */
    ASSERT_EQ(m_tz("01:00-04:00", utc(2026, 3, 8, 6, 59, 59, 999), ny), 1); /* 01:59:59.999 */
    ASSERT_EQ(m_tz("01:00-04:00", utc(2026, 3, 8, 7, 0, 0, 0), ny), 1);     /* 03:00 EDT */
    ASSERT_EQ(m_tz("01:00-04:00", utc(2026, 3, 8, 8, 0, 0, 0), ny), 1);     /* 04:00:00.000 */
    ASSERT_EQ(m_tz("01:00-04:00", utc(2026, 3, 8, 8, 0, 0, 1), ny), 0);     /* 04:00:00.001 */
    /* A range inside the gap (02:00-02:59:59) never matches that day. */
    ASSERT_EQ(count_seconds("02:00-02:59:59", ny, day_from, day_to), 0);
    /* Spanning fall back: 00:30-02:30 local = 04:30Z (00:30 EDT) to 07:30Z (02:30 EST),
     * 3 h of real time + the end second = 10801 s. */
    ASSERT_EQ(count_seconds("00:30-02:30", ny, utc(2026, 11, 1, 4, 0, 0, 0) / 1000,
                            utc(2026, 11, 2, 5, 0, 0, 0) / 1000),
              10801);
}

static void berlin_dst(void)
{
    const char *be = "Europe/Berlin";
    /* 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00Z, so 02:30 never happens that day
     * (local day 2026-03-28 23:00Z to 2026-03-29 22:00Z). */
    int64_t from = utc(2026, 3, 28, 23, 0, 0, 0) / 1000, to = utc(2026, 3, 29, 22, 0, 0, 0) / 1000;
    ASSERT_EQ(count_seconds("0 30 2 * * ?", be, from, to), 0);
    ASSERT_EQ(count_seconds("0 30 3 * * ?", be, from, to), 1);
    /* 1774745999 = 01:59:59 CET, 1774746000 = 03:00:00 CEST (date): a daily 02:00-03:00
     * range only catches the very first second of 03:00. */
    ASSERT_EQ(m_tz("02:00-03:00", INT64_C(1774745999000), be), 0);
    ASSERT_EQ(m_tz("02:00-03:00", INT64_C(1774746000000), be), 1);
    ASSERT_EQ(m_tz("02:00-03:00", INT64_C(1774746000001), be), 0);
    /* 2026-10-25: 02:30 happens at 00:30Z (CEST) and 01:30Z (CET). */
    ASSERT_EQ(m_tz("0 30 2 25 OCT ?", INT64_C(1792888200000), be), 1);
    ASSERT_EQ(m_tz("0 30 2 25 OCT ?", INT64_C(1792891800000), be), 1);
    from = utc(2026, 10, 24, 22, 0, 0, 0) / 1000; /* 00:00 CEST */
    to = utc(2026, 10, 25, 23, 0, 0, 0) / 1000;   /* next 00:00 CET */
    ASSERT_EQ(count_seconds("0 30 2 * * ?", be, from, to), 2);
    /* Business hours with the spec's cron: 2026-05-06 13:14:15Z is 15:14:15 CEST (Wed) in
     * Berlin (in range 14-16) but 09:14:15 EDT in New York (in 9-11) and 13:14 UTC (not). */
    ASSERT_EQ(m_tz("* * 14-16 * * ?", INT64_C(1778073255000), be), 1);
    ASSERT_EQ(m_tz("* * 9-11 * * ?", INT64_C(1778073255000), "America/New_York"), 1);
    ASSERT_EQ(m_tz("* * 9-11,14-16 * * ?", INT64_C(1778073255000), "UTC"), 0);
    /* The local date decides the day: 2026-03-29T01:00Z is Saturday 21:00 in New York. */
    ASSERT_EQ(m_tz("* * * ? * SAT", INT64_C(1774746000000), "America/New_York"), 1);
    ASSERT_EQ(m_tz("* * * ? * SAT", INT64_C(1774746000000), be), 0);
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

TEST_MAIN(TEST_ENTRY(helper_matches_date), TEST_ENTRY(seconds_minutes_hours),
          TEST_ENTRY(spec_examples), TEST_ENTRY(names), TEST_ENTRY(last_day_of_month),
          TEST_ENTRY(nearest_weekday), TEST_ENTRY(day_of_week_specials), TEST_ENTRY(year_field),
          TEST_ENTRY(question_mark_rules), TEST_ENTRY(errors_name_expression_and_position),
          TEST_ENTRY(daily_ranges), TEST_ENTRY(and_combinations), TEST_ENTRY(or_lists),
          TEST_ENTRY(new_york_dst), TEST_ENTRY(berlin_dst), TEST_ENTRY(unknown_zone),
          TEST_ENTRY(excluded_hook))
