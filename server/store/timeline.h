/*
 * timeline.h - a job's history over time (prefix timeline_): what GET /v1/jobs/{job}/timeline
 * answers and what the tuning advice is computed from.
 *
 * timeline_history_read reads the decisions of one job in a time range through the public
 * audit views (audit_decisions, audit_vertex_decisions, audit_decision_options,
 * audit_scalings: their names and columns are stable, whatever the tables under them hold)
 * into struct timeline_history: one entry per decision and per vertex row, with the options
 * each decision ran on resolved once per distinct config (utilization target and bounds,
 * parallelism limits, the backlog threshold, governor.slo.lag).
 *
 * timeline_render buckets that history into the columnar series of the timeline:
 * per bucket and vertex the last current and target parallelism and limits, the mean
 * utilization with its target and bounds, the largest backlog in seconds; per bucket whether
 * the bounds were off (the job was processing a backlog); the job reasons run-length encoded;
 * the executed decisions as events. The bucket arithmetic (timeline_buckets,
 * timeline_bucket_of, timeline_auto_step) is pure and exported for its unit tests.
 *
 * Backlog seconds: a source's lag divided by its input rate, the target data rate the
 * decision evaluated (what arrives: the read rate plus the lag's growth). Bounds off: a vertex
 * whose scale-down threshold is infinite while its target data rate is known and its
 * configured lower bound is above 0, which the evaluation does only while the job processes
 * a backlog (core/README.md, Evaluation).
 *
 * The store (SQLite or PostgreSQL) is opened read-only on the caller's thread (the server calls
 * this off its loop), and read in pages of TIMELINE_PAGE decisions (in (at, id) order), each page
 * with its vertex rows and scalings in one short read transaction: a long history never holds
 * one snapshot for the whole read, which would keep the write-ahead log from being checkpointed
 * while readers follow one another (db.h, db_wal_limit).
 *
 * May call: options (resolving the stored options), core (the bounds' formula, its sorted
 * index), the store's reads (query.h), jansson, libc.
 */
#ifndef GOVERNOR_TIMELINE_H
#define GOVERNOR_TIMELINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/index.h"
#include "options/options.h"

/* At most this many buckets in one timeline (a 400 beyond). */
#define TIMELINE_MAX_BUCKETS OPT_MAX_BUCKETS
/* At most this many values per series in one timeline: buckets x the vertices shown (a 413
 * naming `vertices` beyond): 2,000 buckets of 500 vertices, or 360 of 2,777. */
#define TIMELINE_MAX_VALUES OPT_MAX_VALUES
/* At most this many executed decisions listed as events ("events_truncated" beyond). */
#define TIMELINE_MAX_EVENTS 5000
/* Decisions read in one read transaction (timeline_history_read reads in pages). */
#define TIMELINE_PAGE 256
/* The default range: the last six hours. */
#define TIMELINE_DEFAULT_RANGE_MS (6 * 3600 * 1000LL)

/* The options one or more decisions ran on, as the history needs them. */
struct timeline_config {
    char hash[24];      /* audit_decisions.config_hash */
    double util_target; /* job.autoscaler.utilization.target */
    double util_max;    /* the upper and lower utilization bounds outside a backlog */
    double util_min;
    int min_parallelism, max_parallelism; /* vertex.min-parallelism / vertex.max-parallelism */
    double lag_threshold_s;               /* backlog-processing.lag-threshold */
    double slo_lag_s;                     /* governor.slo.lag, NaN: unset */
    double scale_down_interval_s;         /* scale-down.interval */
    double catch_up_s;                    /* catch-up.duration */
};

/* One vertex of one decision. Figures are NaN when undefined. */
struct timeline_vrow {
    int vertex; /* index into timeline_history.vertices */
    int current, target;
    int min_parallelism, max_parallelism; /* the limits in force (key groups, partitions) */
    double load, lag, tdr;
    double backlog_s; /* lag / tdr (sources), NaN when undefined or infinite */
    bool bounds_off;
};

/* One decision. */
struct timeline_decision {
    int64_t id, at;
    int reason;    /* index into timeline_history.codes */
    bool executed; /* execute = 1 and action is not NO_CHANGE */
    char action[16];
    int config;  /* index into timeline_history.configs */
    int v0, n_v; /* its vertex rows: vrows[v0 .. v0 + n_v) */
    bool bounds_off;
    int current, target; /* summed over its vertices */
    double load_max;     /* the highest vertex utilization, NaN: none */
    double backlog_s;    /* the largest source backlog, NaN: none */
};

/* What timeline_history_read gives; released with timeline_history_free. */
struct timeline_history {
    char *job;
    struct timeline_decision *d;
    int n_d;
    struct timeline_vrow *vrows;
    int n_vrows;
    char **vertices; /* vertex ids, in the order they first appear */
    int n_vertices;
    char **codes; /* job reason codes, in the order they first appear */
    int n_codes;
    struct timeline_config *configs;
    int n_configs;
    json_t *events; /* executed decisions in [from, to): audit_scalings rows (new) */
    bool events_truncated;
    int cap_d, cap_vrows; /* allocated entries of d and vrows */
    /* The read's indexes, kept across its pages: vertices sorted (a history's vertex ids may be
     * many), and the configs' hashes (configs[i] has hashes[i]) sorted. */
    struct core_runs by_vertex, by_hash;
    char **hashes;
    int n_hashes;
};

/* A source's backlog in seconds: lag / input rate (0 when the lag is 0); NaN when either is
 * undefined or the rate is 0 under a lag (no finite figure). */
double timeline_backlog_s(double lag, double rate);

/* The values per series a timeline of n_buckets would hold: buckets x the vertices shown
 * (those of only, or every vertex of the history). */
int64_t timeline_values(const struct timeline_history *h, int64_t n_buckets,
                        const char *const *only, int n_only);

/*
 * Reads job's decisions with from <= at < to and an id above after_id (0: all; the last
 * deletion's db_job_deletions id: the job as it is since it was made again) from the database
 * file db (read-only). 0 with h filled (zeroed first; free it with timeline_history_free), -1
 * with *errp (new) when the database cannot be opened or read.
 */
int timeline_history_read(const char *db, const char *job, int64_t from, int64_t to,
                          int64_t after_id, struct timeline_history *h, char **errp);
void timeline_history_free(struct timeline_history *h);

/*
 * The number of buckets of step_ms in [from, to): ceil((to - from) / step_ms). 0 with *n, or
 * -1 when from >= to or step_ms <= 0.
 */
int timeline_buckets(int64_t from, int64_t to, int64_t step_ms, int64_t *n);
/* The bucket of at among n buckets of step_ms from `from`, or -1 when at lies outside. */
int64_t timeline_bucket_of(int64_t from, int64_t step_ms, int64_t n, int64_t at);
/* The step of a timeline of span_ms without one: a round step (1 s, 5 s, ..., 1 h, ...,
 * 1 d, whole days) giving at most 360 buckets. */
int64_t timeline_auto_step(int64_t span_ms);

/*
 * new: the timeline JSON of h over n buckets of step_ms from `from`:
 * {"job", "from", "to", "step_ms", "t", "bounds_off", "vertices": [{"id", "current", "target",
 * "min", "max", "util", "util_target", "util_min", "util_max", "backlog_s"}], "reasons":
 * {"codes", "runs": [[start_ms, end_ms, code_index, first_decision_id, n]]}, "events",
 * "events_truncated", "decisions", "lag_threshold_s", "slo_lag_s"}. only (may be NULL: every
 * vertex) lists the vertex ids to include.
 */
json_t *timeline_render(const struct timeline_history *h, int64_t from, int64_t to, int64_t step_ms,
                        const char *const *only, int n_only);

#endif
