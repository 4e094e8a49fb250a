/*
 * timeutil.h - the server's one time module (prefix time_): RFC 3339 date-times and the
 * proleptic Gregorian calendar. Every place that reads a date-time from a user (a sample's
 * `at`, the API's `from`/`to`, `governor replay --from`, a plugin's governor.time) parses it
 * here, so they all accept and refuse the same texts; the zone code (tz.c) counts days with
 * the same calendar. Durations are parsed in one place already (opt_parse_duration, with the
 * options table's units) and formatted by the core (core_format_duration).
 *
 * May call: libc. No I/O, no clock, no allocation.
 */
#ifndef GOVERNOR_TIMEUTIL_H
#define GOVERNOR_TIMEUTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Why a text is not an RFC 3339 date-time (for a message that says what to fix). */
enum time_error {
    TIME_OK,
    TIME_BAD_DATE_TIME, /* not YYYY-MM-DD(T|t| )HH:MM:SS[.frac], or a field out of range */
    TIME_BAD_OFFSET,    /* a +/- offset that is not hh:mm with hh <= 23, mm <= 59 */
    TIME_NO_ZONE,       /* neither Z nor an offset after the time */
    TIME_TRAILING,      /* text after the zone */
};

/*
 * Parses an RFC 3339 date-time, YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|+hh:mm|-hh:mm), into
 * epoch milliseconds. Every field has exactly its digits; the day must exist in its month
 * (2025-02-29 does not); a fraction needs at least one digit and is truncated to
 * milliseconds; a leap second (:60) counts as the next minute's :00. Years are 0000-9999
 * (an offset may move the instant a day beyond them: a caller with a range checks it). 0, or
 * -1 with *why (if why is not NULL) saying what is wrong; *ms is untouched then.
 */
int time_parse_rfc3339(const char *s, int64_t *ms, enum time_error *why);

/*
 * A time as users give it (the API's `from`/`to`, `governor replay --from`): epoch
 * milliseconds, digits only (no sign but a '-' before 1970, no space, no leading zero), or an
 * RFC 3339 date-time as time_parse_rfc3339 reads it. 0, or -1 if neither (*ms untouched).
 */
int time_parse_instant(const char *s, int64_t *ms);

/*
 * The instants RFC 3339 date-times of the years 0000-9999 name in UTC, in epoch milliseconds:
 * the range of a time a user gives (the API's `from`, `to`, `since`, `until`), so that the
 * arithmetic on it (a range, a window before it, buckets after it) cannot overflow.
 */
#define TIME_MIN_MS (-62167219200000LL) /* 0000-01-01T00:00:00Z */
#define TIME_MAX_MS 253402300799999LL   /* 9999-12-31T23:59:59.999Z */

/* A phrase for why, e.g. "needs a zone (Z or +hh:mm)", to follow the text in a message. */
const char *time_error_text(enum time_error why);

/* Leap year of the proleptic Gregorian calendar (y may be negative: 0 is leap, -1 is not). */
bool time_is_leap(int64_t y);

/* Days of month m (1-12) of year y. */
int time_month_days(int64_t y, int m);

/* Days since 1970-01-01 of the date y-m-d (m 1-12, d 1-31; a day past the month's end
 * counts on into the next month), H. Hinnant's days_from_civil. */
int64_t time_days_from_civil(int64_t y, int m, int d);

/* The date of z days since 1970-01-01 (the inverse of time_days_from_civil). */
void time_civil_from_days(int64_t z, int64_t *y, int *m, int *d);

#endif
