/*
 * cron.h - job.autoscaler.excluded.periods: Quartz 2.4 cron expressions, the
 * daily-range form H:M[:S[:ms]]-H:M[:S[:ms]], and the ';' (OR) / '&&' (AND) list around
 * them, evaluated on the civil time of an instant in an IANA zone (tz.h; never the process
 * zone, a governor difference from the reference). Used by the native exclusion hook
 * (cron_excluded_hook, wired into struct core_hooks) and by the Lua host's governor.cron /
 * governor.daily helpers.
 *
 * Parsing and matching are pure; only naming a zone (tz_get) may read a zoneinfo file.
 * Semantics, where Quartz leaves room, are those of the civil clock: a cron matches an
 * instant iff the instant's local second satisfies every field, so a wall-clock time that
 * does not exist (spring-forward gap) matches nothing and one that happens twice (fall-back
 * overlap) matches both times; a daily range compares the local time of day.
 */
#ifndef GOVERNOR_CRON_H
#define GOVERNOR_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tz;
struct core_config;

/* What cron_parse accepts. */
enum cron_syntax {
    CRON_PERIODS, /* a whole excluded-periods list: elements ';', sub-expressions '&&' */
    CRON_QUARTZ,  /* exactly one Quartz cron expression */
    CRON_DAILY,   /* exactly one daily range */
};

struct cron_expr; /* opaque: a compiled list of elements of at most 2 sub-expressions */

/*
 * New: text compiled according to syntax, for callers that evaluate the same expression
 * often (the server caches it per job). Free with cron_free. On a bad expression returns
 * NULL with *errp (new, caller frees) naming the expression, the field and the 1-based
 * character position inside that expression, e.g.
 *   cron "* * 25 * * ?": hour field: 25 out of range 0-23 (at char 5)
 * An empty or blank CRON_PERIODS list is valid and matches nothing.
 */
struct cron_expr *cron_parse(const char *text, enum cron_syntax syntax, char **errp);

/* Frees e; NULL is a no-op. */
void cron_free(struct cron_expr *e);

/*
 * Whether the instant epoch_ms falls in e, read in zone z. *why (when why is not NULL) is
 * set to the first matching list element, trimmed, borrowed from e; NULL when none matches.
 */
bool cron_expr_matches(const struct cron_expr *e, const struct tz *z, int64_t epoch_ms,
                       const char **why);

/* 0 when periods is a valid excluded-periods list; else -1 with *errp (new). */
int cron_validate(const char *periods, char **errp);

/*
 * *match = whether epoch_ms is inside the excluded-periods list periods, in the IANA zone
 * tz (NULL or "" = UTC). -1 with *errp (new) on a bad list or an unknown zone.
 */
int cron_periods_match(const char *periods, int64_t epoch_ms, const char *tz, bool *match,
                       char **errp);

/* Like cron_periods_match for one Quartz cron expression only (governor.cron.matches). */
int cron_matches(const char *expr, int64_t epoch_ms, const char *tz, bool *match, char **errp);

/* Like cron_periods_match for one daily range only (governor.daily.matches). */
int cron_daily_matches(const char *expr, int64_t epoch_ms, const char *tz, bool *match,
                       char **errp);

/*
 * The native exclusion hook (struct core_hooks.excluded): *excluded = whether now (epoch
 * ms) is inside cfg->excluded_periods in zone cfg->excluded_tz (NULL or "" = UTC), with the
 * matching element copied into why. ud is unused (pass NULL). Returns -1 with the message in
 * err on a bad list or zone (validation should have caught it earlier); *excluded is then
 * false.
 */
int cron_excluded_hook(void *ud, const struct core_config *cfg, int64_t now, bool *excluded,
                       char *why, size_t why_len, char *err, size_t err_len);

#endif
