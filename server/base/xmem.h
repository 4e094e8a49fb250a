/*
 * xmem.h - how governor allocates memory, and the allocators of the server's modules
 * (header-only: xmalloc, xcalloc, xrealloc, xstrdup, xasprintf, xvasprintf, xmem_oom).
 *
 * The rule. Running out of memory is not an error a request can recover from: a failed
 * allocation ends the process with "governor: out of memory" (xmem_oom; tmux's xmalloc
 * habit), so no caller checks for NULL and no error path exists for it. Which allocator a
 * piece of code uses depends only on where it is and how long the memory lives:
 *
 *  - In the core (server/core/): the core's own core__xmalloc, core__xcalloc,
 *    core__xrealloc, core__strdup (core_int.h), because the core includes no server header
 *    (it links libm only). Same policy and the same malloc, so memory a core structure keeps
 *    (a job state's arrays and strings) is released with free() by the core
 *    (core_state_free), whichever side allocated it.
 *  - What one decision produces (messages, the vertices, events, config changes): the
 *    decision arena (core__alloc and friends, in the core), all of it released at once by
 *    core_decision_reset or core_decision_deinit. Outside the core a decision's strings are
 *    borrowed: never freed, never kept past the decision (copy them).
 *  - jansson inside a decide request: the request's jarena (jarena.h), jansson's allocator
 *    on that thread while open. A json_t made there is released before jarena_end; text
 *    that must outlive the request is printed with jarena_dump; anything else that must
 *    outlive it is made between jarena_pause and jarena_resume. Outside an open arena
 *    jansson uses malloc, and what it returns is freed as usual. A NULL from jansson that
 *    only a lack of memory can cause (json_dumps of a tree built here) ends in xmem_oom.
 *  - Lua: each plugin state's capped lua_Alloc (server/plugin/vm.c). Its failure is a Lua
 *    error of that one call, not an abort: a policy must not take the server down.
 *  - SQLite: its own allocator; what it hands out (sqlite3_mprintf, error texts) is
 *    released with sqlite3_free.
 *  - Everything else in server/: the functions below; released with free(). No bare
 *    malloc, calloc, realloc, strdup or asprintf followed by a NULL check. jarena.c is the
 *    one exception: jansson's allocator must return NULL for jansson to report the failure.
 */
#ifndef GOVERNOR_XMEM_H
#define GOVERNOR_XMEM_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ends the process after an allocation failed. */
static inline _Noreturn void xmem_oom(void)
{
    fputs("governor: out of memory\n", stderr);
    abort();
}

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        xmem_oom();
    return p;
}

static inline void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        xmem_oom();
    return p;
}

static inline void *xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p)
        xmem_oom();
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

/* new: vprintf into a fresh string (ap is consumed, as by vprintf). */
static inline char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static inline char *xvasprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        xmem_oom();
    return s;
}

/* new: printf into a fresh string. */
static inline char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

#endif
