/*
 * log.h - logfmt lines on stderr, one per event: `ts=... level=info mod=http msg="..." k=v`.
 * log_msg checks the level before formatting anything. Values in the tail are the caller's
 * to quote (log_quote); the tail never carries a raw control byte. Callers must never pass secrets
 * (tokens, SENSITIVE options); the module does not know what is secret.
 */
#ifndef GOVERNOR_LOG_H
#define GOVERNOR_LOG_H

#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* The lowest level that is printed (default LOG_INFO). */
extern enum log_level log_min_level;

/* Parses "debug|info|warn|error"; -1 if unknown. */
int log_level_parse(const char *s);

/*
 * Prints one line: ts, level, mod, then msg as a quoted logfmt value, then the optional
 * pre-formatted `k=v ...` tail given by fmt (may be NULL).
 */
void log_write(enum log_level lvl, const char *mod, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Writes s into buf (cap bytes) as a quoted logfmt value, escaped so that it cannot end the
 * line or pose as another field ('"', '\\', \n, \r, \t, and \xHH for other bytes outside
 * printable ASCII), cut with "..." to fit. Returns buf, for "k=%s" in log_msg's tail: every
 * value a client controls goes through it. s may be NULL ("").
 */
const char *log_quote(char *buf, size_t cap, const char *s);

#define log_msg(lvl, mod, msg, ...)                                                                \
    do {                                                                                           \
        if ((lvl) >= log_min_level)                                                                \
            log_write((lvl), (mod), (msg), __VA_ARGS__);                                           \
    } while (0)

#endif
