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

/* A malloc'd text that json_dump_callback appends to. */
struct dump_buf {
    char *p;
    size_t n, cap;
};

static int dump_put(const char *s, size_t n, void *ud)
{
    struct dump_buf *b = ud;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        b->p = xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

char *jarena_dump(const json_t *o)
{
    const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15);
    struct dump_buf b = {NULL, 0, 0};
    /* One pass into a growing buffer (a size-then-print pair of passes printed a large
     * object twice). */
    if (!o || json_dump_callback(o, dump_put, &b, flags) != 0 || b.n == 0) {
        free(b.p);
        return xstrdup("null");
    }
    b.p[b.n] = '\0';
    return b.p;
}
