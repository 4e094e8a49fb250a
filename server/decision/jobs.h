/*
 * jobs.h - the in-memory job registry (prefix jobs_): job id -> the job's autoscaler state,
 * its stored config layer (PUT /v1/jobs/{job}/config) layered over the server defaults,
 * and the `at` of its last sample. Loaded from the jobs table at start so that state
 * survives restarts, and reloaded for one job when a commit of its rows failed. Owned by
 * the loop thread; no locks.
 *
 * The registry holds at most jobs_set_max jobs (max-jobs-in-memory): past it, jobs_trim
 * forgets the least recently used jobs that are idle (no write unit in flight, none failed and
 * not yet recovered: their state is then exactly what the store holds). A job forgotten so is
 * loaded again from the store at its next request (api_job_find: its row and window, as a
 * replica takes over a job), and decides as if it had stayed. So memory is bounded by the cap,
 * not by the number of job names ever seen; the store lists every job (db_jobs_list).
 *
 * A decision changes an entry's state only through the decision service (decision_run, called
 * by unit_decide, unit.h); the state is written by the writer in the same transaction as the
 * decision. Several processes may share one store: each entry keeps the version of the job's row
 * its state was computed from, and a write whose version moved stores nothing (db.h,
 * DB_FAULT_FENCED); the job is then loaded again from the store.
 *
 * May call: core (state), options, decision (the job's cache), db, writer
 * (the jobs with units in flight), jansson, jarena, log.
 */
#ifndef GOVERNOR_JOBS_H
#define GOVERNOR_JOBS_H

#include <jansson.h>
#include <stdint.h>

#include "core/codec.h"
#include "core/core.h"
#include "store/db.h"
#include "store/writer.h"
#include "decision/decision.h"
#include "decision/jobopts.h"
#include "options/options.h"

/* The job's last committed decision as GET /metrics shows it (set false: none since the
 * server started or since the job was reloaded). */
struct jobs_gauges {
    bool set;
    int current, target;  /* parallelism summed over the vertices */
    double backlog_s;     /* the largest source lag / input rate, NaN: none */
    double slo_lag_s;     /* governor.slo.lag of that decision, NaN: unset */
    char config_hash[17]; /* the effective options slo_lag_s was read from */
};

struct jobs_entry {
    char *id;
    struct core_state *state;
    struct opt_job *opts; /* server defaults + the stored job layer (shared->opts) */
    json_t *config;       /* the stored job layer: {"key": "value"} */
    int64_t created_at;
    int64_t last_at; /* INT64_MIN: no sample yet */
    /* opts resolved once per change of them, and the stored text of the effective options
     * of the last decision (shared->cache): shared by every job with the same stored layer
     * (jobopts.h). */
    struct jobopts *shared;
    struct decision_cache *cache;
    /* The number of the first window sample not yet handed to the store: a decision writes
     * the samples from here on (the store keeps the window one row per sample). */
    int64_t stored_seq;
    /* The fence (db_write.expect_version): the jobs.version the store holds once every unit
     * of the job submitted so far has committed (0: the job has no row). jobs_fence hands it
     * to a unit and counts the unit's write; a commit confirms it (the unit's new_version). */
    int64_t version;
    /* ... and the job's incarnation (db_write.expect_generation): drawn at random when the
     * entry is made for a job the store does not hold, the stored row's when loaded. */
    int64_t generation;
    struct jobs_gauges gauges;
    /* The chunk of samples its decisions are filling, kept as history with the job's state
     * (jobs.samples; closed ones in sample_chunks, schema 012), and what continues it; NULL:
     * none (the next decision opens one). */
    struct core_chunk *samples;
    struct core_codec_state samples_st;
    /* the registry's: the use order, most recent first (jobs_get, jobs_add, jobs_load) */
    struct jobs_entry *lru_prev, *lru_next;
};

struct jobs;

/* new: an empty registry. defaults (the server layer) is borrowed for the registry's life. */
struct jobs *jobs_new(const struct opt_job *defaults);
void jobs_free(struct jobs *js);

/* Borrowed entry, or NULL. A hit is a use: the entry becomes the most recently used. */
struct jobs_entry *jobs_get(struct jobs *js, const char *id);
/* Borrowed new entry with an empty state, no stored layer and a new generation (a job the
 * store does not hold; the id must not exist in memory); the most recently used. */
struct jobs_entry *jobs_add(struct jobs *js, const char *id, int64_t created_at);
/* Forgets the entry (no-op when absent). */
void jobs_remove(struct jobs *js, const char *id);
int jobs_count(const struct jobs *js);
/* The most jobs held (max-jobs-in-memory, >= 1; INT_MAX until set): jobs_trim keeps to it,
 * and the load of every job reads only the max most recently sampled ones. */
void jobs_set_max(struct jobs *js, int max);
/*
 * Forgets least recently used jobs while more than the max are held, skipping those with a
 * write unit in flight or a failed one not yet recovered (wr: the writer, NULL: none) and
 * never the most recently used one (the request at hand may hold it). A forgotten job is read
 * again from the store at its next request. Returns how many were forgotten.
 */
int jobs_trim(struct jobs *js, struct writer *wr);
/* Jobs forgotten by jobs_trim since the registry was made. */
int64_t jobs_evicted(const struct jobs *js);
/* The i-th entry in id order (0 <= i < jobs_count). */
struct jobs_entry *jobs_at(struct jobs *js, int i);

/*
 * The text of one config value: a string as is, a number or a boolean formatted into buf.
 * NULL for any other type (an object, an array, null).
 */
const char *jobs_value_text(json_t *v, char *buf, size_t len);

/*
 * new in *out: defaults + layer (an object of option -> value) at OPT_JOB. On a bad key or
 * value: -1 with *errp (new, naming the key) and the key copied into bad_key.
 */
int jobs_layer_opts(const struct jobs *js, json_t *layer, struct opt_job **out, char **errp,
                    char *bad_key, size_t bad_key_len);
/* Replaces the entry's stored layer (steals layer, takes opts). */
void jobs_set_layer_take(struct jobs_entry *e, json_t *layer, struct opt_job *opts);

/*
 * Loads every job (id NULL: the max most recently sampled, the most recent first in the use
 * order) or one job (then the most recently used) from the jobs table into the registry,
 * replacing what is in memory: its config layer, state, last sample, version, and its window
 * from job_window (one read by the primary key, one range read of the window's rows); with an
 * id that has no row, the entry is removed. What it makes outlives any request: it is made
 * outside the thread's jansson arena (jarena.h). -1 + *errp.
 */
int jobs_load(struct jobs *js, struct db *db, const char *id, char **errp);

/* A chunk of samples is closed once it holds this many bytes or samples, or once a sample is
 * this far after its first: some 150 samples of a steady job, fewer of a noisy one (a decision
 * writes its job's chunk whole, with its state; and a closed chunk stays within one page of
 * SQLite's sample_chunks, whose rows keep up to about 1,000 bytes in the page). */
#define JOBS_SAMPLES_BYTES   880
#define JOBS_SAMPLES_ROWS    720
#define JOBS_SAMPLES_SPAN_MS (3600 * 1000LL)

/*
 * Appends sm (a streaming sample, the one w decided) to e's chunk of samples, and hands w the
 * chunk to store (db_write.samples), opening a new chunk when sm does not fit the last (its
 * limits, another layout, a series that was absent) and handing w the closed one too.
 */
void jobs_samples_add(struct jobs_entry *e, const struct core_sample *sm, struct db_write *w);

/*
 * Fences w (a decision, config or delete unit of e's job) on the version and generation e's
 * state was computed from, and counts w's write in e->version (the next unit of the job
 * expects it).
 */
void jobs_fence(struct jobs_entry *e, struct db_write *w);

#endif
