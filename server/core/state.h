/*
 * state.h - the layout of a job's autoscaler state (struct core_state; core/README.md,
 * State). Meant to be opaque to the server: besides the core, only the state codecs
 * (server/statebin.c, server/json.c) and the plugin host's read access to the window
 * (server/plugin_api.c) look inside. Everything here is owned by the state: arrays grow with
 * core__grow and strings are core__strdup copies, all released by core_state_free.
 *
 * What it holds (each described in the core/README.md section named):
 *  - the metric window (Window): samples of collected per-vertex and global metrics,
 *    time-ordered, all taken with the same topology and parallelisms (a change restarts it);
 *  - the scaling history per vertex (History; read by Scaling and Gating);
 *  - the scaling-tracking records (History: restart time);
 *  - delayed scale-down entries per vertex (Gating);
 *  - the event de-duplication table (Events).
 */
#ifndef GOVERNOR_CORE_STATE_H
#define GOVERNOR_CORE_STATE_H

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

struct core_wsample {
    int64_t at;
    struct core_gmetrics g;
    struct core_vmetrics *v; /* [window.n_vertices], same order as window.ids */
};

/* The metric window. ids/parallelism describe the topology every sample was taken with. */
struct core_window {
    int64_t running_since; /* jobRunningTs of the samples, INT64_MIN when empty */
    /* The number of s[0]. A job's samples are numbered 0, 1, 2, ... in the order they were
     * taken, across window restarts and clears, never reusing a number: storage appends the
     * new ones and drops those below seq0 instead of rewriting the whole window. */
    int64_t seq0;
    int n_vertices;
    char **ids;
    int *parallelism;
    int n, cap;
    struct core_wsample *s; /* oldest first */
};

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

struct core_state {
    int64_t last_at; /* INT64_MIN = no sample yet */
    struct core_window w;
    int n_hist, cap_hist;
    struct core_vhistory *hist;
    int n_track, cap_track;
    struct core_tracking *track; /* oldest first */
    int n_delayed, cap_delayed;
    struct core_delayed *delayed;
    int n_events, cap_events;
    struct core_event_seen *events;
};

#endif
