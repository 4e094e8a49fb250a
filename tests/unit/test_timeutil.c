/*
 * Unit tests for timeutil.c: RFC 3339 parsing (the forms, fractions, offsets, leap years,
 * out-of-range fields, year limits, negative epochs) and the calendar. The cases are data,
 * in tests/unit/data/timeutil.test, run by time_case below; what stays in C walks the
 * calendar over many days.
 */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "testfile.h"

#include "time/timeutil.h"

/* An integer field, or -1 (after printing why) when the field is not one. */
static int int_field(const struct testfile_case *c, int i, long long *v, struct testfile_out *out)
{
    const char *f = testfile_field(c, i);
    char *end = NULL;
    if (f)
        *v = strtoll(f, &end, 10);
    if (!f || !*f || *end) {
        testfile_printf(out, "field %d is not an integer", i);
        return -1;
    }
    return 0;
}

/* The handler of timeutil.test (its header lists the verbs). */
static int time_case(void *ud, const struct testfile_case *c, struct testfile_out *out)
{
    (void)ud;
    const char *verb = c->field[0];
    long long a = 0, b = 0, d = 0;
    if (strcmp(verb, "rfc3339") == 0 && c->n_fields == 2) {
        static const char *const why_name[] = {"ok", "date-time", "offset", "zone", "trailing"};
        int64_t ms = 0;
        enum time_error why = TIME_OK;
        if (time_parse_rfc3339(c->field[1], &ms, &why) == 0)
            testfile_printf(out, "%lld", (long long)ms);
        else
            testfile_printf(out, "error: %s", why_name[why]);
        return 0;
    }
    if (strcmp(verb, "civil") == 0 && c->n_fields == 4) {
        if (int_field(c, 1, &a, out) < 0 || int_field(c, 2, &b, out) < 0 ||
            int_field(c, 3, &d, out) < 0)
            return -1;
        testfile_printf(out, "%lld", (long long)time_days_from_civil(a, (int)b, (int)d));
        return 0;
    }
    if (strcmp(verb, "date") == 0 && c->n_fields == 2) {
        if (int_field(c, 1, &a, out) < 0)
            return -1;
        int64_t y;
        int m, dd;
        time_civil_from_days(a, &y, &m, &dd);
        testfile_printf(out, "%lld-%02d-%02d", (long long)y, m, dd);
        return 0;
    }
    if (strcmp(verb, "leap") == 0 && c->n_fields == 2) {
        if (int_field(c, 1, &a, out) < 0)
            return -1;
        testfile_printf(out, "%s", time_is_leap(a) ? "yes" : "no");
        return 0;
    }
    if (strcmp(verb, "month") == 0 && c->n_fields == 3) {
        if (int_field(c, 1, &a, out) < 0 || int_field(c, 2, &b, out) < 0)
            return -1;
        testfile_printf(out, "%d", time_month_days(a, (int)b));
        return 0;
    }
    testfile_printf(out, "unknown case \"%s\" with %d fields", verb, c->n_fields);
    return -1;
}

static void cases(void)
{
    ASSERT_EQ(testfile_run(TESTFILE_DATA("timeutil.test"), time_case, NULL), 0);
}

/* Day by day over ten thousand years either side of 1970: the date of a day and the day of
 * that date agree, and the dates follow each other (each day is the one after the last). */
static void calendar_walk(void)
{
    int64_t py = 0;
    int pm = 0, pd = 0;
    for (int64_t z = -4400000; z <= 4400000; z++) {
        int64_t y;
        int m, d;
        time_civil_from_days(z, &y, &m, &d);
        if (time_days_from_civil(y, m, d) != z || m < 1 || m > 12 || d < 1 ||
            d > time_month_days(y, m)) {
            ASSERT_EQ(time_days_from_civil(y, m, d), z);
            ASSERT(m >= 1 && m <= 12 && d >= 1 && d <= time_month_days(y, m));
        }
        if (z > -4400000) {
            bool next = (y == py && m == pm && d == pd + 1) ||
                        (y == py && m == pm + 1 && d == 1 && pd == time_month_days(py, pm)) ||
                        (y == py + 1 && m == 1 && d == 1 && pm == 12 && pd == 31);
            if (!next) {
                fprintf(stderr, "  day %lld: %lld-%d-%d after %lld-%d-%d\n", (long long)z,
                        (long long)y, m, d, (long long)py, pm, pd);
                ASSERT(next);
            }
        }
        py = y, pm = m, pd = d;
    }
}

/* A NULL text and a NULL why are handled; a failed parse leaves *ms alone. */
static void null_and_untouched(void)
{
    int64_t ms = 42;
    ASSERT_EQ(time_parse_rfc3339(NULL, &ms, NULL), -1);
    ASSERT_EQ(time_parse_rfc3339("2025-02-29T00:00:00Z", &ms, NULL), -1);
    ASSERT_EQ(ms, 42);
    ASSERT_EQ(time_parse_rfc3339("1970-01-01T00:00:01Z", &ms, NULL), 0);
    ASSERT_EQ(ms, 1000);
    ASSERT_STR(time_error_text(TIME_NO_ZONE), "needs a zone (Z or +hh:mm)");
    ASSERT_STR(time_error_text(TIME_BAD_DATE_TIME), "is not an RFC 3339 date-time");
}

TEST_MAIN(TEST_ENTRY(cases), TEST_ENTRY(calendar_walk), TEST_ENTRY(null_and_untouched))
