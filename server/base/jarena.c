/*
 * jarena.c - the per-request arena for jansson (see jarena.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jarena.h"
#include "base/xmem.h"

#define BLOCK     (64 * 1024)
#define BLOCK_MAX (16 * 1024 * 1024)

struct jarena_block {
    struct jarena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

static _Thread_local struct jarena *current;

static bool in_arena(const struct jarena *a, const void *p)
{
    for (const struct jarena_block *b = a->head; b; b = b->next)
        if ((const unsigned char *)p >= b->data && (const unsigned char *)p < b->data + b->size)
            return true;
    return false;
}

static void *alloc_fn(size_t n)
{
    struct jarena *a = current;
    if (!a)
        return malloc(n);
    n = (n + 15) & ~(size_t)15;
    struct jarena_block *b = a->head;
    if (!b || b->size - b->used < n) {
        /* Each block twice the last (up to BLOCK_MAX): a request's JSON, however large, sits
         * in few blocks, and free_fn's scan of them stays short (a fixed size made a large
         * request's frees quadratic). */
        size_t sz = !b ? BLOCK : b->size >= BLOCK_MAX / 2 ? BLOCK_MAX : b->size * 2;
        if (sz < n)
            sz = n;
        struct jarena_block *nb = malloc(sizeof *nb + sz);
        if (!nb)
            return NULL;
        nb->size = sz;
        nb->used = 0;
        nb->next = b;
        a->head = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

static void free_fn(void *p)
{
    if (!p)
        return;
    /* Arena memory goes with the arena; anything else was malloc'd. */
    if (current && in_arena(current, p))
        return;
    free(p);
}

void jarena_install(void)
{
    json_set_alloc_funcs(alloc_fn, free_fn);
}

void jarena_begin(struct jarena *a)
{
    current = a;
}

struct jarena *jarena_pause(void)
{
    struct jarena *a = current;
    current = NULL;
    return a;
}

void jarena_resume(struct jarena *a)
{
    current = a;
}

void jarena_end(struct jarena *a)
{
    current = NULL;
    struct jarena_block *b = a->head;
    while (b && b->next) {
        struct jarena_block *n = b->next;
        free(b);
        b = n;
    }
    if (b)
        b->used = 0;
    a->head = b;
}

void jarena_free(struct jarena *a)
{
    struct jarena_block *b = a->head;
    while (b) {
        struct jarena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}

char *jarena_dump(const json_t *o)
{
    const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15);
    if (!o)
        return xstrdup("null");
    char stack[4096];
    size_t n = json_dumpb(o, stack, sizeof stack, flags);
    if (n == 0)
        return xstrdup("null");
    char *s = xmalloc(n + 1);
    if (n <= sizeof stack)
        memcpy(s, stack, n);
    else
        json_dumpb(o, s, n, flags);
    s[n] = '\0';
    return s;
}
