/*
 * jarena.h - a per-request arena for jansson (prefix jarena_). Installed once at start
 * (jarena_install), jansson's allocator bump-allocates from the calling thread's current
 * arena while one is open (jarena_begin .. jarena_end) and uses malloc otherwise; a free of
 * arena memory costs nothing, and jarena_end drops the whole request's JSON at once (keeping
 * the first block for the next request). The decide handler parses, renders and prints a
 * decision inside one: jansson's many small allocations are most of a request's mallocs.
 *
 * Rules for code inside an open arena: every json_t made there is released before
 * jarena_end, and nothing made there is kept: text that must outlive the request is printed
 * with jarena_dump (malloc'd), never json_dumps. Outside an arena, jansson behaves as usual
 * (json_dumps output is freed with free()).
 *
 * Where it fits among governor's allocators: server/base/xmem.h (the allocation rule).
 *
 * May call: jansson, libc.
 */
#ifndef GOVERNOR_JARENA_H
#define GOVERNOR_JARENA_H

#include <jansson.h>
#include <stddef.h>

struct jarena_block;

struct jarena {
    struct jarena_block *head; /* newest first; the last one is kept across requests */
};

/* Sets jansson's allocator. Call before any jansson allocation (first thing in main). */
void jarena_install(void);
/* Opens a (zeroed or previously used) arena on this thread. */
void jarena_begin(struct jarena *a);
/* Suspends this thread's arena (returned) for allocations that must outlive the request
 * (a new job's stored layer, say); jarena_resume gives it back. */
struct jarena *jarena_pause(void);
void jarena_resume(struct jarena *a);
/* Closes it: everything allocated in it is gone. */
void jarena_end(struct jarena *a);
/* Releases an arena's memory for good. */
void jarena_free(struct jarena *a);

/* new (malloc'd, free() it): o printed compactly with 15 significant digits; "null" when o
 * is NULL. Safe inside and outside an arena. */
char *jarena_dump(const json_t *o);

#endif
