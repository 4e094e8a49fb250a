/*
 * tz.h - IANA time zones without touching process globals: reads TZif files (RFC 8536,
 * versions 1 to 4) from the system's zoneinfo directory with our own parser, including the
 * POSIX TZ footer of version 2+ files that covers instants past the last transition, and
 * turns an instant into civil time in a zone. The server answers many jobs, each with its
 * own zone, so setenv("TZ")/tzset/localtime (one process-wide zone) are never used.
 *
 * Zones are loaded once by name and cached for the life of the process (a mutex guards the
 * cache, so any thread may call tz_get). Everything apart from reading the file is pure.
 * Leap-second ("right/...") zones are rejected: governor's instants are POSIX seconds.
 *
 * May call: timeutil (the calendar), libc.
 */
#ifndef GOVERNOR_TZ_H
#define GOVERNOR_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tz; /* opaque: transitions, local time types, the footer rule */

/* Civil time of an instant in a zone. */
struct tz_tm {
    int64_t year;  /* proleptic Gregorian, e.g. 2026 */
    int mon;       /* 1-12 */
    int mday;      /* 1-31 */
    int hour;      /* 0-23 */
    int min;       /* 0-59 */
    int sec;       /* 0-59 */
    int wday;      /* 0 = Sunday ... 6 = Saturday */
    int yday;      /* 0-365 */
    int32_t utoff; /* seconds east of UTC in effect at the instant (New York EDT: -14400) */
    bool isdst;
};

/*
 * Borrowed: the zone called name, loaded from /usr/share/zoneinfo/<name> on first use and
 * cached until the process ends. "UTC" always works, even without zoneinfo. Names must be
 * non-empty, at most 255 characters of [A-Za-z0-9_+/-], without ".." and not starting with
 * '/'. Returns NULL with *errp (new, caller frees) naming the zone on a bad name, a missing
 * or unreadable file, or a file that is not valid TZif.
 */
const struct tz *tz_get(const char *name, char **errp);

/*
 * New: a zone parsed from the TZif bytes buf[0..len) (the file's content); name is copied
 * and used in messages. Pure: tz_get uses it after reading the file, and tests feed it
 * hand-made files. Returns NULL with *errp (new) on malformed data. Free with tz_free.
 */
struct tz *tz_parse(const char *name, const unsigned char *buf, size_t len, char **errp);

/*
 * New: a zone made only of a POSIX TZ rule string such as "CET-1CEST,M3.5.0,M10.5.0/3"
 * (the footer syntax of RFC 8536 section 3.3, including its version 3 extensions). NULL with
 * *errp (new) on a malformed string. Free with tz_free.
 */
struct tz *tz_posix_new(const char *rule, char **errp);

/* Frees a zone from tz_parse or tz_posix_new (never one from tz_get). NULL is a no-op. */
void tz_free(struct tz *z);

/* Borrowed: the zone's name. */
const char *tz_name(const struct tz *z);

/*
 * Civil time of the instant epoch_s (seconds since 1970-01-01T00:00:00Z) in zone z. Before
 * the first transition the zone's first local time type applies; after the last, the footer
 * rule (or the last type when the file has none). Instants are clamped to about +-3e9 years.
 */
void tz_local(const struct tz *z, int64_t epoch_s, struct tz_tm *out);

#endif
