/*
 * timeutil.c - RFC 3339 date-times and the proleptic Gregorian calendar (see timeutil.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "time/timeutil.h"

bool time_is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int time_month_days(int64_t y, int m)
{
    static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && time_is_leap(y) ? 29 : len[m - 1];
}

int64_t time_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                   /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

void time_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Reads exactly n digits at *s into *v and moves past them; false when one is not a digit. */
static bool digits(const char **s, int n, int *v)
{
    int x = 0;
    for (int i = 0; i < n; i++) {
        char c = (*s)[i];
        if (c < '0' || c > '9')
            return false;
        x = x * 10 + (c - '0');
    }
    *s += n;
    *v = x;
    return true;
}

/* Takes the character c at *s and moves past it. */
static bool expect(const char **s, char c)
{
    if (**s != c)
        return false;
    (*s)++;
    return true;
}

static int fail(enum time_error *why, enum time_error e)
{
    if (why)
        *why = e;
    return -1;
}

int time_parse_rfc3339(const char *s, int64_t *ms, enum time_error *why)
{
    int y, mo, d, h, mi, sec, frac = 0, off = 0;
    if (!s || !digits(&s, 4, &y) || !expect(&s, '-') || !digits(&s, 2, &mo) || !expect(&s, '-') ||
        !digits(&s, 2, &d))
        return fail(why, TIME_BAD_DATE_TIME);
    if (*s != 'T' && *s != 't' && *s != ' ')
        return fail(why, TIME_BAD_DATE_TIME);
    s++;
    if (!digits(&s, 2, &h) || !expect(&s, ':') || !digits(&s, 2, &mi) || !expect(&s, ':') ||
        !digits(&s, 2, &sec))
        return fail(why, TIME_BAD_DATE_TIME);
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9')
            return fail(why, TIME_BAD_DATE_TIME);
        int nd = 0;
        for (; *s >= '0' && *s <= '9'; s++, nd++)
            if (nd < 3) /* digits beyond milliseconds are truncated */
                frac = frac * 10 + (*s - '0');
        for (; nd < 3; nd++)
            frac *= 10;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > time_month_days(y, mo) || h > 23 || mi > 59 || sec > 60)
        return fail(why, TIME_BAD_DATE_TIME);
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s++ == '-' ? -1 : 1;
        int oh, om;
        if (!digits(&s, 2, &oh) || !expect(&s, ':') || !digits(&s, 2, &om) || oh > 23 || om > 59)
            return fail(why, TIME_BAD_OFFSET);
        off = sign * (oh * 60 + om);
    } else {
        return fail(why, TIME_NO_ZONE);
    }
    if (*s)
        return fail(why, TIME_TRAILING);
    int64_t t =
        time_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - (int64_t)off * 60;
    *ms = t * 1000 + frac;
    if (why)
        *why = TIME_OK;
    return 0;
}

const char *time_error_text(enum time_error why)
{
    switch (why) {
    case TIME_OK:
        return "is an RFC 3339 date-time";
    case TIME_BAD_DATE_TIME:
        break;
    case TIME_BAD_OFFSET:
        return "has a bad offset (+hh:mm or -hh:mm, hh <= 23)";
    case TIME_NO_ZONE:
        return "needs a zone (Z or +hh:mm)";
    case TIME_TRAILING:
        return "has trailing text after the zone";
    }
    return "is not an RFC 3339 date-time";
}

int time_parse_instant(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return -1;
    const char *p = s + (*s == '-');
    if (*p && strspn(p, "0123456789") == strlen(p)) {
        if (p[0] == '0' && p[1]) /* a leading zero */
            return -1;
        int64_t v = 0;
        for (; *p; p++) {
            int d = *p - '0';
            if (v > (INT64_MAX - d) / 10)
                return -1;
            v = v * 10 + d;
        }
        if (*s == '-' && v == 0)
            return -1;
        *ms = *s == '-' ? -v : v;
        return 0;
    }
    return time_parse_rfc3339(s, ms, NULL);
}
