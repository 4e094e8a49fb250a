/*
 * log.c - logfmt lines on stderr (see log.h). One fputs per line so concurrent writers
 * (the loop and the store's writer thread) never interleave within a line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

enum log_level log_min_level = LOG_INFO;

int log_level_parse(const char *s)
{
    static const char *const n[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, n[i]) == 0)
            return i;
    return -1;
}

/*
 * Appends s to buf as a logfmt quoted value: '"' and '\\' escaped, \n \r \t by name, every
 * other byte outside printable ASCII as \xHH, so that a value can neither end its line nor
 * pose as another field. Cut with "..." when cap is reached. Returns the new offset.
 */
static size_t quote(char *buf, size_t off, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (off + 2 > cap)
        return off;
    buf[off++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char e[4];
        size_t n = 0;
        if (c == '"' || c == '\\') {
            e[n++] = '\\';
            e[n++] = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            e[n++] = '\\';
            e[n++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20 || c >= 0x7f) {
            e[n++] = '\\';
            e[n++] = 'x';
            e[n++] = hex[c >> 4];
            e[n++] = hex[c & 15];
        } else {
            e[n++] = (char)c;
        }
        if (off + n + 4 > cap) { /* room for ..." */
            memcpy(buf + off, "...", 3);
            off += 3;
            break;
        }
        memcpy(buf + off, e, n);
        off += n;
    }
    buf[off++] = '"';
    return off;
}

const char *log_quote(char *buf, size_t cap, const char *s)
{
    if (cap == 0)
        return buf;
    size_t off = cap > 1 ? quote(buf, 0, cap - 1, s ? s : "") : 0;
    buf[off] = '\0';
    return buf;
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
        size_t end = off;
        if (k > 0)
            end += (size_t)k < sizeof buf - off - 1 ? (size_t)k : sizeof buf - off - 2;
        /* A value a caller did not quote (log_quote) must still not break the line: no
         * control byte goes out raw. */
        for (; off < end; off++)
            if ((unsigned char)buf[off] < 0x20 || buf[off] == 0x7f)
                buf[off] = '?';
    }
    buf[off++] = '\n';
    buf[off] = '\0';
    fputs(buf, stderr);
}
