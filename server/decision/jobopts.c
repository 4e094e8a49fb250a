/*
 * jobopts.c - option layers shared between jobs (see jobopts.h): a chained hash table keyed
 * by the stored layer's canonical JSON text.
 */
#include <stdlib.h>
#include <string.h>

#include "base/xmem.h"
#include "decision/jobopts.h"

struct jobopts_pool {
    struct jobopts **buckets;
    size_t n_buckets;
    int n;
};

struct jobopts_pool *jobopts_pool_new(void)
{
    struct jobopts_pool *p = xcalloc(1, sizeof *p);
    p->n_buckets = 64;
    p->buckets = xcalloc(p->n_buckets, sizeof *p->buckets);
    return p;
}

static void entry_free(struct jobopts *o)
{
    decision_cache_deinit(&o->cache);
    opt_job_free(o->opts);
    free(o->invalid);
    free(o->key);
    free(o);
}

void jobopts_pool_free(struct jobopts_pool *p)
{
    if (!p)
        return;
    for (size_t b = 0; b < p->n_buckets; b++)
        for (struct jobopts *o = p->buckets[b], *next; o; o = next) {
            next = o->next;
            entry_free(o);
        }
    free(p->buckets);
    free(p);
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* new: the layer's canonical text (keys sorted, no spaces); "{}" for none. */
static char *key_of(const json_t *layer)
{
    char *k = layer ? json_dumps(layer, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    return k ? k : xstrdup("{}");
}

static struct jobopts *lookup(struct jobopts_pool *p, const char *key, uint64_t h)
{
    for (struct jobopts *o = p->buckets[h % p->n_buckets]; o; o = o->next)
        if (o->hash == h && strcmp(o->key, key) == 0)
            return o;
    return NULL;
}

/* Doubles the buckets once there are more entries than buckets: lookups stay O(1). */
static void grow(struct jobopts_pool *p)
{
    size_t n = p->n_buckets * 2;
    struct jobopts **b = xcalloc(n, sizeof *b);
    for (size_t i = 0; i < p->n_buckets; i++)
        for (struct jobopts *o = p->buckets[i], *next; o; o = next) {
            next = o->next;
            o->next = b[o->hash % n];
            b[o->hash % n] = o;
        }
    free(p->buckets);
    p->buckets = b;
    p->n_buckets = n;
}

struct jobopts *jobopts_find(struct jobopts_pool *p, const json_t *layer)
{
    char *key = key_of(layer);
    struct jobopts *o = lookup(p, key, fnv(key));
    free(key);
    if (o)
        o->refs++;
    return o;
}

struct jobopts *jobopts_take(struct jobopts_pool *p, const json_t *layer, struct opt_job *opts)
{
    char *key = key_of(layer);
    uint64_t h = fnv(key);
    struct jobopts *o = lookup(p, key, h);
    if (o) {
        free(key);
        opt_job_free(opts);
        o->refs++;
        return o;
    }
    if (!opts)
        abort(); /* the caller said an entry existed */
    if ((size_t)p->n >= p->n_buckets)
        grow(p);
    o = xcalloc(1, sizeof *o);
    o->opts = opts;
    decision_cache_set(&o->cache, opts);
    o->refs = 1;
    o->key = key;
    o->hash = h;
    o->pool = p;
    o->next = p->buckets[h % p->n_buckets];
    p->buckets[h % p->n_buckets] = o;
    p->n++;
    return o;
}

void jobopts_unref(struct jobopts *o)
{
    if (!o || --o->refs > 0)
        return;
    struct jobopts_pool *p = o->pool;
    for (struct jobopts **at = &p->buckets[o->hash % p->n_buckets]; *at; at = &(*at)->next)
        if (*at == o) {
            *at = o->next;
            break;
        }
    p->n--;
    entry_free(o);
}
