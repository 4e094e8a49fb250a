/*
 * state.h - the layout of a job's autoscaler state (struct core_state; core/README.md,
 * State). Meant to be opaque to the server, which stores a state in its binary form (core.h,
 * State codec, in state.c): besides the core, only the plugin host's read access to the
 * window (server/plugin/libgov.c) and the one-time reader of the old JSON form for migration 008
 * (server/store/statejson.c) look inside. Everything here is owned by the state: arrays grow with
 * core__grow and strings are core__strdup copies (statejson.c allocates with the server's
 * xmalloc, the same malloc), all released by core_state_free.
 *
 * What it holds (each described in the core/README.md section named):
 *  - the metric window (Window): samples of collected per-vertex and global metrics,
 *    time-ordered, all taken with the same topology and parallelisms (a change restarts it),
 *    and what the window knows of each vertex's counters;
 *  - the scaling history per vertex (History; read by Scaling and Gating);
 *  - the scaling-tracking records (History: restart time);
 *  - delayed scale-down entries per vertex (Gating);
 *  - the event de-duplication table (Events);
 *  - the last executed scaling until the job is seen to apply it or not (Cycle), and how many
 *    samples in a row were left out as implausible (Window);
 *  - the last scaling the job did not apply, and how many times in a row (Cycle).
 */
#ifndef GOVERNOR_CORE_STATE_H
#define GOVERNOR_CORE_STATE_H

#include "core/codec.h"
#include "core/core.h"

/* Per-sample collected metrics of one vertex (core/README.md, Window), NaN = absent. */
struct core_vmetrics {
    double load;         /* LOAD: aggregated busy ms/s / 1000 */
    double load_avg;     /* avg busy / 1000 (for the skew ratio) */
    double load_max;     /* max busy / 1000 (for the skew ratio) */
    double acc_busy;     /* ACCUMULATED_BUSY_TIME */
    double rec_in;       /* NUM_RECORDS_IN */
    double rec_out;      /* NUM_RECORDS_OUT */
    double rec_in_per_s; /* NUM_RECORDS_IN_PER_SECOND (non-sources) */
    double lag;          /* LAG (sources) */
    double observed_tpr; /* OBSERVED_TPR (sources) */
};

/* Per-sample global metrics (core/README.md, Window), NaN = absent. */
struct core_gmetrics {
    double slots_used, gc_pressure, heap_used, heap_ratio, managed_used, metaspace_used;
};

/* One sample of the window, decoded: its global metrics, then one vmetrics per window
 * vertex, in the order of window.ids (a row of the samples' codec, core/codec.h: the
 * numbers of g, then of v[0], v[1], ...). */
struct core_wrow {
    struct core_gmetrics g;
    struct core_vmetrics v[];
};
#define CORE_WROW_G 6 /* numbers in struct core_gmetrics */
#define CORE_WROW_V 9 /* numbers in struct core_vmetrics */
/* The numbers of a row of nv vertices. */
static inline int core_wrow_k(int nv)
{
    return CORE_WROW_G + CORE_WROW_V * nv;
}

/* Every sample of a window decoded, while a decision reads it (core__window_decode): rows
 * [first, first + n) of rows (stride bytes each) and at. */
struct core_wview {
    int first, n, cap;
    size_t stride;
    int64_t *at;
    unsigned char *rows;
};

/* The cumulative counters a client may send or leave out (core/README.md, Window: Counters). */
enum core_counter { CORE_CTR_IN, CORE_CTR_OUT, CORE_CTR_BUSY, CORE_CTR__COUNT };

/* What the window knows of one counter of one vertex. Stored values are the client's minus
 * `offset`: a series rebuilt from rates that the client then starts sending goes on from
 * where the rebuilt one stood, instead of jumping to the client's total. */
struct core_wcounter {
    double sent;   /* the client's last value in this window, NaN = none sent yet */
    double offset; /* client's value - stored value */
};

/* The metric window. ids/parallelism describe the topology every sample was taken with. */
struct core_window {
    int64_t running_since; /* jobRunningTs of the samples, INT64_MIN when empty */
    /* Stabilization counts from here: running_since, or for a restart the client did not
     * declare (a rescale, a new topology or counters reset under the same running_since)
     * the `at` of the window's first sample. INT64_MIN when empty. */
    int64_t started_at;
    /* The `at` of the first sample stored at or after the stabilization, which a kept-full
     * window (governor.window.keep-full) is full from; INT64_MIN = none yet. */
    int64_t full_from;
    uint64_t topo_hash;        /* the edges and their ship strategies; 0 = not known */
    struct core_wcounter *ctr; /* [n_vertices * CORE_CTR__COUNT] */
    /* The number of s[0]. A job's samples are numbered 0, 1, 2, ... in the order they were
     * taken, across window restarts and clears, never reusing a number: storage appends the
     * new ones and drops those below seq0 instead of rewriting the whole window. */
    int64_t seq0;
    int n_vertices;
    char **ids;
    int *parallelism;
    /* The samples (core/README.md, Window: Memory), n of them, oldest first: compressed in
     * chunks of the samples' codec, oldest first, of which the first `skip` rows of chunks[0]
     * have left the window; the last chunk is the open one, which enc continues (enc.prev
     * holds the newest sample's numbers). view: all of them decoded, during a decision only
     * (NULL otherwise). Read them with core_witer; write with core_window_append. */
    int n;
    int n_chunks, cap_chunks, skip;
    struct core_chunk **chunks;
    struct core_codec_state enc;
    struct core_wview *view;
};

/*
 * Reads a window's samples, oldest first, decoded or not:
 *
 *     struct core_witer it;
 *     for (core_witer_begin(&it, w); core_witer_next(&it);)
 *         use(it.at, it.r->g, it.r->v[vi]);
 *     core_witer_end(&it);
 *
 * it.r points into the view, or into the iterator's own row (valid until the next call).
 * The window must not change meanwhile.
 */
struct core_witer_dec; /* reading the chunks (winstore.c) */
struct core_witer {
    int64_t at;
    const struct core_wrow *r;
    int k; /* samples read */
    /* private */
    const struct core_window *w;
    const unsigned char *rows; /* the view's first row, NULL: not decoded */
    const int64_t *ats;
    size_t stride;
    struct core_witer_dec *dec;
};
static inline void core_witer_begin(struct core_witer *it, const struct core_window *w)
{
    const struct core_wview *vw = w->view;
    it->k = 0;
    it->w = w;
    it->dec = NULL;
    it->rows = vw ? vw->rows + (size_t)vw->first * vw->stride : NULL;
    it->ats = vw ? vw->at + vw->first : NULL;
    it->stride = vw ? vw->stride : 0;
}
bool core_witer_decode_next(struct core_witer *it); /* the part of core_witer_next below */
static inline bool core_witer_next(struct core_witer *it)
{
    if (!it->rows)
        return core_witer_decode_next(it);
    if (it->k >= it->w->n)
        return false;
    it->at = it->ats[it->k];
    it->r = (const struct core_wrow *)(const void *)(it->rows + (size_t)it->k * it->stride);
    it->k++;
    return true;
}
void core_witer_dec_free(struct core_witer *it);
static inline void core_witer_end(struct core_witer *it)
{
    if (it->dec)
        core_witer_dec_free(it);
}

/* Appends a sample taken at `at` (r: core_wrow_k(w->n_vertices) numbers) to the window, for
 * the window itself and for readers of other forms of a state (state.c, statejson.c). */
void core_window_append(struct core_window *w, int64_t at, const struct core_wrow *r);

/* One past executed scaling of a vertex (core/README.md, History). */
struct core_hist_entry {
    int64_t at;
    int current_parallelism, new_parallelism;
    double true_processing_rate;     /* TRUE_PROCESSING_RATE.average at the time */
    double expected_processing_rate; /* EXPECTED_PROCESSING_RATE.current */
    double target_data_rate;         /* for the record */
};

struct core_vhistory {
    char *id;
    int n, cap;
    struct core_hist_entry *e; /* oldest first */
};

struct core_tracking {
    int64_t at;
    int64_t restart_ms; /* -1 = not measured yet */
};

struct core_delayed_rec {
    int64_t at;
    int parallelism;
    bool outside_bounds;
};

struct core_delayed {
    char *id;
    int64_t first_trigger;
    int n, cap;
    struct core_delayed_rec *r; /* strictly decreasing parallelism, increasing time */
};

struct core_event_seen {
    char *key;        /* reason + "\x1f" + messageKey */
    int64_t first_at; /* when the row was created (core/README.md, Events) */
    int64_t last_at;
    int count;
};

/* One vertex of an executed scaling that the job has not been seen to apply yet. */
struct core_pending_vertex {
    char *id;
    int from, to;
};

/* The last executed scaling (core/README.md, Cycle: applied or not), until the next running
 * sample shows whether the job applied it. */
struct core_pending {
    int64_t at; /* the decision's `at`; INT64_MIN = none */
    int n, cap;
    struct core_pending_vertex *v;
};

/* governor.not-applied.max (core/README.md, Cycle: applied or not): the last executed scaling
 * the job did not apply, and how many times in a row the same one was not applied. */
struct core_unapplied {
    int count; /* 0 = none */
    int n, cap;
    struct core_pending_vertex *v;
};

struct core_state {
    int64_t last_at; /* INT64_MIN = no sample yet */
    int rejected;    /* samples left out as implausible in a row (core/README.md, Window) */
    struct core_pending pending;
    struct core_window w;
    int n_hist, cap_hist;
    struct core_vhistory *hist;
    int n_track, cap_track;
    struct core_tracking *track; /* oldest first */
    int n_delayed, cap_delayed;
    struct core_delayed *delayed;
    int n_events, cap_events;
    struct core_event_seen *events;
    struct core_batch_state batch; /* a batch job's pool (core/README.md, Batch) */
    struct core_unapplied unapplied;
};

#endif
