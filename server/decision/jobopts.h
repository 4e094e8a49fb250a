/*
 * jobopts.h - a job's option layers and their resolution, shared by every job with the same
 * stored layer (prefix jobopts_): the server's defaults are the same for every job of a
 * registry, so two jobs whose stored layers (PUT /v1/jobs/{job}/config) are the same JSON
 * object have the same layers, the same effective options and the same stored text of them.
 * One copy per distinct layer, reference counted, instead of one a job (6.7 KiB each).
 *
 * The layers are resolved in place (decision_cache), once for all the jobs that share them;
 * a request with options of its own copies them first (decision.c), so nothing a decision
 * does to one job shows in another.
 *
 * May call: options, decision (decision_cache), jansson, xmem. Not thread-safe: the jobs
 * registry's thread (the event loop) only.
 *
 * Ownership: a pool owns its entries; jobopts_get returns a reference (borrowed storage that
 * stays valid until the matching jobopts_unref).
 */
#ifndef GOVERNOR_JOBOPTS_H
#define GOVERNOR_JOBOPTS_H

#include <jansson.h>

#include "decision/decision.h"
#include "options/options.h"

struct jobopts_pool;

/* One distinct set of layers. */
struct jobopts {
    struct opt_job *opts;        /* the server's defaults + the stored job layer */
    struct decision_cache cache; /* opts resolved, and the text of the effective options */
    char *invalid; /* why the stored layer is not applied (opts are the defaults), or NULL */
    /* private */
    int refs;
    char *key; /* the stored layer as canonical JSON text */
    uint64_t hash;
    struct jobopts *next;
    struct jobopts_pool *pool;
};

/* new: an empty pool. */
struct jobopts_pool *jobopts_pool_new(void);
/* Frees the pool and every entry it still holds (NULL is a no-op). */
void jobopts_pool_free(struct jobopts_pool *p);

/*
 * A reference to the entry for the stored layer `layer` (borrowed; {} when the job has none):
 * the existing one, or a new one holding opts when there is none. opts (may be NULL when the
 * caller knows an entry exists, see jobopts_find) is stolen either way: freed when an entry
 * already holds the same layers. opts must be the registry's defaults with layer set over
 * them (jobs_layer_opts).
 */
struct jobopts *jobopts_take(struct jobopts_pool *p, const json_t *layer, struct opt_job *opts);
/* A reference to the entry for layer if there is one, else NULL (nothing made). */
struct jobopts *jobopts_find(struct jobopts_pool *p, const json_t *layer);
/* Drops a reference; the entry is freed with its last. NULL is a no-op. */
void jobopts_unref(struct jobopts *o);

#endif
