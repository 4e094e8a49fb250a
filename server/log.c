/*
 * log.c - logfmt lines on stderr (see log.h). One fputs per line so concurrent writers
 * (the loop and the store's writer thread) never interleave within a line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

enum log_level log_min_level = LOG_INFO;

int log_level_parse(const char *s)
{
    static const char *const n[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, n[i]) == 0)
            return i;
    return -1;
}

/* Appends s to buf as a logfmt quoted value. */
static size_t quote(char *buf, size_t off, size_t cap, const char *s)
{
    if (off < cap)
        buf[off++] = '"';
    for (; *s && off + 3 < cap; s++) {
        if (*s == '"' || *s == '\\') {
            buf[off++] = '\\';
            buf[off++] = *s;
        } else if (*s == '\n') {
            buf[off++] = '\\';
            buf[off++] = 'n';
        } else {
            buf[off++] = *s;
        }
    }
    if (off < cap)
        buf[off++] = '"';
    return off;
}

void log_write(enum log_level lvl, const char *mod, const char *msg, const char *fmt, ...)
{
    static const char *const n[] = {"debug", "info", "warn", "error"};
    char buf[4096];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t off = strftime(buf, sizeof buf, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    off += (size_t)snprintf(buf + off, sizeof buf - off,
                            ".%03ldZ level=%s mod=%s msg=", ts.tv_nsec / 1000000, n[lvl], mod);
    off = quote(buf, off, sizeof buf - 2, msg ? msg : "");
    if (fmt && off < sizeof buf - 2) {
        buf[off++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(buf + off, sizeof buf - off - 1, fmt, ap);
        va_end(ap);
        if (k > 0)
            off += (size_t)k < sizeof buf - off - 1 ? (size_t)k : sizeof buf - off - 2;
    }
    buf[off++] = '\n';
    buf[off] = '\0';
    fputs(buf, stderr);
}
