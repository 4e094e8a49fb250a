/*
 * xmem.h - allocation that aborts on failure (tmux's xmalloc habit), for the server's
 * modules: out-of-memory is not an error a request can recover from. Header-only:
 * xmalloc, xcalloc, xrealloc, xstrdup, xasprintf.
 */
#ifndef GOVERNOR_XMEM_H
#define GOVERNOR_XMEM_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("governor: out of memory\n", stderr);
        abort();
    }
    return p;
}

static inline void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fputs("governor: out of memory\n", stderr);
        abort();
    }
    return p;
}

static inline void *xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p) {
        fputs("governor: out of memory\n", stderr);
        abort();
    }
    return p;
}

/* new: a copy of s; NULL stays NULL. */
static inline char *xstrdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

/* new: printf into a fresh string. */
static inline char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fputs("governor: out of memory\n", stderr);
        abort();
    }
    return s;
}

#endif
