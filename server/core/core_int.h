/*
 * core_int.h - names shared inside the core only (prefix core__). One section per file;
 * each file has a section of server/core/README.md (named in brackets), which describes the
 * algorithm and is what comments cite as "core/README.md, <Section>":
 *
 *   util.c         rounding, allocation, the decision arena, events, enum names
 *                  [Numbers, Events]
 *   topo.c         topology validation and topological order [Topology]
 *   state.c        the job state's creation, release and binary form [State]
 *   codec.c        the compact form of a job's samples (its interface is codec.h) [Codec]
 *   window.c       per-sample metrics, the metric window and its aggregates [Window]
 *   winstore.c     where the window keeps its samples: compressed, decoded for a decision,
 *                  read through an iterator [Window: Memory]
 *   evaluate.c     backlog, target/catch-up rate, true processing rate, thresholds
 *                  [Evaluation]
 *   scaling.c      scale factor, clamps, limits, observed scalability [Scaling]
 *   alignment.c    key-group / partition alignment and plugin modes [Alignment]
 *   history.c      scaling history, retention, restart-time tracking [History]
 *   gating.c       memory pressure, delayed scale-down, ineffective scaling [Gating]
 *   taskmanager.c  the TaskManager memory model and slot estimation [TaskManager]
 *   resources.c    CPU/memory quota [Resources]
 *   memory.c       memory tuning [Memory tuning]
 *   skew.c         governor's key-parallelism diagnosis [Skew]
 *   curve.c        governor's measured scalability curve and its knee [Curve]
 *   explain.c      the human text of each vertex's outcome [Explanations]
 *   decide.c       the cycle [Cycle]
 *   batch.c        batch jobs' pool size and rebalancing advice, apart from the cycle
 *                  (its interface is batch.h) [Batch, Rebalance]
 *
 * The files call downwards only: decide.c calls the others; scaling.c calls alignment.c and
 * evaluate.c; memory.c and resources.c call taskmanager.c; everything calls util.c.
 * Nothing here does I/O or reads a clock.
 */
#ifndef GOVERNOR_CORE_INT_H
#define GOVERNOR_CORE_INT_H

#include <math.h>
#include <stdarg.h>

#include "core/core.h"
#include "core/index.h"
#include "core/state.h"

/* ------------------------------------------------------------------ util.c */

/* core/README.md, Numbers: round half-up to 3 decimals, except a value that would round to 0 keeps
 * its original value; NaN and inf pass through. */
double core__round3(double x);
/* The same by rounding the shortest decimal string (the slow, obviously right way); round3
 * uses it only near ties. */
/* x's shortest decimal string (core__shortest_decimal) cut after `places` decimals: *head the
 * digits kept, *tail those below them, *q = 10^(their count), *neg the sign. 0: x has no
 * digit below `places` (nothing set but *neg); -1: more than 19 digits below (nothing set but
 * *neg); 1: split. */
int core__decimal_split(double x, int places, uint64_t *head, uint64_t *tail, uint64_t *q,
                        bool *neg);
double core__round3_decimal(double x);
/* The shortest decimal that reads back as |x| (finite), as mant x 10^exp10, and x's sign:
 * the digits of Java's Double.toString, which BigDecimal.valueOf(double) rounds. */
void core__shortest_decimal(double x, uint64_t *mant, int *exp10, bool *neg);
/* Java's (int) cast of a double: NaN -> 0, saturating at the int range. */
int core__java_d2i(double x);
/* Java Math.round: floor(x + 0.5); NaN -> 0; clamps to int64. */
int64_t core__java_round(double x);
/* t + d and t - d for a time and a duration (ms), saturating at the int64 range: a sum of a
 * sample time and an option never overflows, whatever the options table allows. */
int64_t core__time_add(int64_t t, int64_t d);
int64_t core__time_sub(int64_t t, int64_t d);

/* The core's own allocators (it includes no server header; the rule for all of governor is in
 * server/base/xmem.h): plain malloc, aborting on failure, so what a state keeps is free()d by
 * whoever releases it. */
void *core__xmalloc(size_t n);              /* aborts on failure */
void *core__xcalloc(size_t n, size_t size); /* aborts on failure */
void *core__xrealloc(void *p, size_t n);    /* aborts on failure */
char *core__strdup(const char *s);          /* new; aborts on failure */
/* Ensures *arr (elements of elem bytes) has room for need elements; *cap grows x2. */
void core__grow(void *arr, int *cap, int need, size_t elem);

/* Decision arena: memory freed with the decision. Zeroed. Aborts on failure. */
void *core__alloc(struct core_decision *d, size_t n);
char *core__astrdup(struct core_decision *d, const char *s);
char *core__asprintf(struct core_decision *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "" for 1, else "s": "%d partition%s", n, core__plural(n). */
const char *core__plural(long n);

/* Appends an event to d (message formatted into the arena). key NULL = never deduplicated.
 * De-duplication against the state happens once at the end of the cycle (core__events_dedupe). */
void core__event(struct core_decision *d, const char *type, const char *reason, const char *key,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Applies core/README.md, Events, to every event of d with a key: marks suppressed ones and
 * updates the state's table. interval_ms <= 0 disables suppression. */
void core__events_dedupe(struct core_state *st, struct core_decision *d, int64_t now,
                         int64_t interval_ms);

/* Records the first plugin failure of a cycle. */
struct core_plugin_err {
    bool set;
    char plugin[64];
    char message[512];
};
void core__plugin_fail(struct core_plugin_err *pe, const char *plugin, const char *msg);

/* ------------------------------------------------------------------ topo.c */

/* The sample's topology, indexed by the sample's vertex index. */
struct core_topo {
    int n;
    int *order;    /* [n] sample indices in topological order (Kahn, stable by input order) */
    int *in_start; /* [n+1] CSR: inputs of i are in_src[in_start[i] .. in_start[i+1]) */
    int *in_src;   /* [edges] upstream sample index */
    enum core_ship *in_ship; /* [edges] */
    int *n_outputs;          /* [n] number of output edges */
    bool *is_source;         /* [n] no inputs */
    bool *hash_input;        /* [n] any input ship strategy HASH */
    struct core_index ids;   /* the sample's vertex ids, sorted (core__topo_find) */
    /* The job's window against the sample (core__topo_window): s2w[i] is sample vertex i's
     * window index (-1: not in the window), w2s[wi] window vertex wi's sample index (-1).
     * NULL until mapped: then the window's ids are searched (tests that build a window by
     * hand). */
    int *s2w, *w2s;
    int n_w; /* the window's vertex count when mapped */
};

/* Validates the sample (ids, parallelism >= 1, <= max_parallelism, duplicate ids, unknown
 * inputs, cycles) and builds t in d's arena. -1 with err naming the field on a bad one. */
int core__topo_build(const struct core_sample *sm, struct core_decision *d, struct core_topo *t,
                     char *err, size_t err_len);
/* Index of vertex id in the sample t was built from, -1 if absent (log n). */
int core__topo_find(const struct core_topo *t, const char *id);
/* Maps the sample's vertices to the window w's and back (t->s2w, t->w2s), in d's arena:
 * n log n. Called again whenever the window restarts (its vertices become the sample's). */
void core__topo_window(struct core_topo *t, const struct core_window *w, struct core_decision *d);
/* Sample vertex i's window index (-1: none), and window vertex wi's sample index (-1: none),
 * by the map when there is one (else a search). */
int core__topo_wi(const struct core_topo *t, const struct core_window *w,
                  const struct core_sample *sm, int i);
int core__topo_si(const struct core_topo *t, const struct core_window *w,
                  const struct core_sample *sm, int wi);

/* ---------------------------------------------------------------- window.c */

/* The most samples a metric window keeps (the oldest go first). At one sample every 10 s a
 * 15 min window holds 90; this bounds the state of a client that posts far more often. */
#define CORE_WINDOW_MAX_SAMPLES 2048

/* Samples left out as implausible in a row after which the counters are taken to have moved
 * to a new base and the window starts over from them (core/README.md, Window). */
#define CORE_MAX_REJECTED 3

/* Why the window starts over (core/README.md, Window: Restart). */
enum core_restart {
    CORE_RESTART_NONE,
    CORE_RESTART_FIRST,    /* an empty window */
    CORE_RESTART_DECLARED, /* running_since changed */
    CORE_RESTART_VERTICES, /* the set of vertex ids changed under the same running_since */
    CORE_RESTART_EDGES,    /* an edge or a ship strategy changed under the same running_since */
    CORE_RESTART_RESCALED, /* a parallelism changed under the same running_since */
    CORE_RESTART_COUNTERS, /* a counter went back: the job restarted without saying so */
    CORE_RESTART_JUMPED,   /* CORE_MAX_REJECTED implausible samples in a row */
    CORE_RESTART_GAP,      /* governor.window.refill-after-gap: no sample for longer than the
                              window (the job did not restart; the window refills) */
};
/* "declared", "rescaled", ... (static). */
const char *core__restart_name(enum core_restart r);

/* What core__window_check found: a restart, or a sample to leave out. */
struct core_window_check {
    enum core_restart restart;
    bool implausible; /* leave the sample out (never together with a restart) */
    char why[320];    /* what restarted the window or makes the sample implausible */
};

struct core_window_status {
    int n_samples;
    bool stabilizing;
    bool fully_collected; /* core/README.md, Window: stabilization and a full window */
    bool restarted;       /* the window was restarted by this sample */
    enum core_restart restart;
    bool rejected; /* the sample was left out as implausible */
    /* Gauges not trusted against their counters (core/README.md, Window: Gauges and
     * counters): how many, and the first CORE_GAUGE_REPORTED (window index, gauge, the
     * counter's rate that replaced it). */
    int n_gauge_off;
    struct {
        int wi;
        double gauge, counter;
    } gauge_off[4];
};
#define CORE_GAUGE_REPORTED 4
/* A gauge is checked against its counter's rise over at least this span: Flink's meters
 * average the last minute, so over a shorter one they differ while the rate changes. */
#define CORE_GAUGE_SPAN_MS 60000

/*
 * Restart detection and plausibility (core/README.md, Window: Restart, Plausibility), without
 * changing anything: the window restarts when running_since changed, the vertex set, an edge
 * or a parallelism differs from the window's, or a counter went back to a value a reset
 * explains; with cfg->plausibility, a sample whose counters went back further, or grew faster
 * than their gauges or time allow, is to be left out (after CORE_MAX_REJECTED in a row, the
 * window restarts instead).
 */
void core__window_check(const struct core_state *st, const struct core_sample *sm,
                        const struct core_topo *t, const struct core_config *cfg,
                        struct core_window_check *chk);
/*
 * Collection (core/README.md, Window) as chk decided: restarts the window (stabilizing from
 * running_since, or from the sample's `at` for a restart the client did not declare), leaves
 * an implausible sample out (counting it in st->rejected), or computes the sample's
 * per-sample metrics (with the OBSERVED_TPR fallback over the window and the counters
 * rebuilt or rebased), rounds them (core__round3), appends them and trims the window when full.
 */
void core__window_add(struct core_state *st, const struct core_sample *sm,
                      const struct core_topo *t, const struct core_config *cfg,
                      const struct core_window_check *chk, struct core_window_status *out);
/* core__window_check, then core__window_add. */
void core__window_ingest(struct core_state *st, const struct core_sample *sm,
                         const struct core_topo *t, const struct core_config *cfg,
                         struct core_window_status *out);

/* ---------------------------------------------------------------- winstore.c */

/* When the window closes a chunk of its samples (core/README.md, Window: Memory). */
#define CORE_WINDOW_CHUNK_ROWS 32
#define CORE_WINDOW_CHUNK_MS   (10 * 60 * 1000)

/* The series of a row that is vertex vi's field at byte offset off of struct core_vmetrics,
 * and the global metric at off of struct core_gmetrics. */
static inline int core__wseries_v(int vi, size_t off)
{
    return CORE_WROW_G + CORE_WROW_V * vi + (int)(off / sizeof(double));
}
static inline int core__wseries_g(size_t off)
{
    return (int)(off / sizeof(double));
}

/* Decodes every sample into w->view, for the reads of a decision (no-op when decoded);
 * appends and drops keep it in step until core__window_release frees it. */
void core__window_decode(struct core_window *w);
void core__window_release(struct core_window *w);
/* The newest sample's number `series` (NaN for an empty window), and its `at` in *at (may be
 * NULL): no decoding. */
double core__window_newest(const struct core_window *w, int series, int64_t *at);
/* The `at` of sample k (0: the oldest), and the whole sample into *at and out (room for
 * core_wrow_k(n_vertices) numbers). Decodes up to it when the window is not decoded. */
int64_t core__window_at(const struct core_window *w, int k);
void core__window_get(const struct core_window *w, int k, int64_t *at, struct core_wrow *out);
/* Sample k (0: the oldest) of a window a decision has decoded (core__window_decode): its
 * `at`, and its row, in place. */
static inline int64_t core__wv_at(const struct core_window *w, int k)
{
    return w->view->at[w->view->first + k];
}
static inline const struct core_wrow *core__wv_row(const struct core_window *w, int k)
{
    const struct core_wview *vw = w->view;
    return (const struct core_wrow *)(const void *)(vw->rows +
                                                    (size_t)(vw->first + k) * vw->stride);
}
/* Drops the n oldest samples (seq0 moves on by n); chunks all of whose rows are gone are
 * freed. */
void core__window_drop(struct core_window *w, int n);
/* Frees the samples (chunks, codec state, view): n = 0. */
void core__window_free_samples(struct core_window *w);
/* The bytes the samples take in memory (chunks, their pointers, the codec state). */
size_t core__window_bytes(const struct core_window *w);

/* Releases the window's samples and topology, leaving it empty (state.c). */
void core__window_free(struct core_window *w);
/* Forgets the scaling the job did not apply (state.c). */
void core__unapplied_clear(struct core_state *s);
/* Forgets the pending executed scaling (state.c). */
void core__pending_clear(struct core_state *s);

/* Window index of a vertex id, -1 if absent. */
int core__window_index(const struct core_window *w, const char *id);

/* The aggregates of core/README.md, Window, over the vertex vi's field at byte offset off
 * (offsetof(struct core_vmetrics, x)). min_obs <= 0: no minimum. */
double core__w_avg(const struct core_window *w, int vi, size_t off, int min_obs);
double core__w_rate(const struct core_window *w, int vi, size_t off);
double core__w_avg_rate_fallback(const struct core_window *w, int vi, size_t gauge_off,
                                 size_t counter_off);
/* The latest sample's value of the field, NaN if absent. */
double core__w_latest(const struct core_window *w, int vi, size_t off);
/* A series of the window's values (core/README.md, Window: variability): the mean (weighted
 * by the intervals, for rates), the sample variance of the values, their count and their
 * effective count after the lag-1 autocorrelation. NaN mean and var with no value (var NaN
 * with one). */
struct core_series_stats {
    double mean, var, n_eff;
    int n;
};
/* The arrivals of source vi (records read plus the backlog's growth, per second) over each
 * interval between consecutive samples that ends in (from, to]: their mean is the target
 * data rate over that span. */
void core__w_arrivals(const struct core_window *w, int vi, int64_t from, int64_t to,
                      struct core_series_stats *out);
/* The least-squares line through source vi's per-interval arrival rates over (from, to],
 * against time: its slope (records/s per second), the slope's standard error (its residuals'
 * lag-1 autocorrelation counted), and the mean time of the points (ms), where the line passes
 * through their mean. false (NaN slope) with fewer than four intervals. */
bool core__w_arrivals_trend(const struct core_window *w, int vi, int64_t from, int64_t to,
                            double *slope, double *se, int64_t *center);
/* A gauge's finite values over the window (weights 1). */
void core__w_gauge_stats(const struct core_window *w, int vi, size_t off,
                         struct core_series_stats *out);
/* Global metrics (offsetof(struct core_gmetrics, x)): window mean and latest. */
double core__w_gavg(const struct core_window *w, size_t off);
double core__w_glatest(const struct core_window *w, size_t off);

/* -------------------------------------------------------------- evaluate.c */

struct core_global_eval {
    double gc_pressure;    /* latest */
    double heap_ratio_avg; /* HEAP_MAX_USAGE_RATIO.average */
    double heap_used_avg, managed_used_avg, metaspace_used_avg;
    double slots_used; /* latest NUM_TASK_SLOTS_USED */
};

/*
 * core/README.md, Evaluation, for every vertex in topological order, into ev[] (indexed like the
 * sample). After a vertex's built-in figures (and thresholds) are computed, each evaluator hook in
 * cfg->evaluators runs in order and its non-NaN figures replace the built-in ones;
 * downstream vertices see the merged values; a failing hook is recorded in pe. Every figure
 * is rounded with core__round3. *backlog says whether the job processes a backlog.
 */
/* What governor's own mechanisms read of a vertex's window besides its figures
 * (core/README.md, Evaluation: variability). */
struct core_variability {
    double rse;    /* governor.bounds.confidence: relative standard error; NaN: none */
    double growth; /* governor.rates.trend: records/s per second the TDR grows by (>= 0) */
    bool moving;   /* governor.rates.level-shift: the arrivals are in a transition */
};
void core__evaluate(const struct core_state *st, const struct core_sample *sm,
                    const struct core_topo *t, const struct core_config *cfg, int64_t restart_ms,
                    const struct core_hooks *h, struct core_evaluated *ev, bool *backlog,
                    struct core_global_eval *g, struct core_plugin_err *pe,
                    struct core_variability *var);

/* governor.source.stall (core/README.md, Evaluation): source wi of the window (v: the same
 * vertex in the sample the window ends with) read nothing since the previous sample while
 * its backlog grew, and is neither busy nor back-pressured. */
bool core__source_stalled(const struct core_window *w, int wi, const struct core_vertex_in *v);

/* capacity() of core/README.md, Evaluation; NaN when catch-up or TDR is NaN. */
double core__capacity(const struct core_evaluated *ev, double util, bool with_restart,
                      int64_t restart_ms, int64_t catch_up_ms);

/* The capacity under the job's options: core__capacity, or with
 * governor.catch-up.in-headroom max(TDR / util, TDR + CATCH_UP + restart rate). */
double core__capacity_cfg(const struct core_config *cfg, const struct core_evaluated *ev,
                          double util, bool with_restart, int64_t restart_ms);

/* Sets ev's scale-up and scale-down rate thresholds from its (rounded) TDR and catch-up rate
 * (core/README.md, Evaluation); backlog: the job processes a backlog. rse: the relative
 * standard error governor.bounds.confidence widens them by (NaN: none), never below what
 * keeping up takes unless the arrivals are in a transition (settled false). */
void core__thresholds(struct core_evaluated *ev, const struct core_config *cfg, bool backlog,
                      int64_t restart_ms, double rse, bool settled);

/* Outside the utilization bounds (core/README.md, Evaluation)? */
bool core__outside_bounds(const struct core_evaluated *ev);

/* --------------------------------------------------------------- scaling.c */

struct core_scale_result {
    bool computed;        /* false: NaN TPR or NaN target: no change, delayed entry untouched */
    int raw;              /* ceil(factor x p) before clamps */
    int target;           /* after limits and alignment; == current for no change */
    unsigned constraints; /* bits set on the way */
    double expected_rate; /* Scaling step 10, NaN when no change */
    double factor;        /* after alpha and clamp */
};

/*
 * core/README.md, Scaling, steps 1-10 (no gating) for vertex i: scale factor, observed scalability
 * alpha over hist (may be NULL), max-factor clamp, min/max parallelism, governor's cap of a source
 * at its partition count, then alignment (core__align). Events (legacy ScalingLimited) go to d; a
 * failing alignment plugin is recorded in pe.
 */
void core__scale_target(const struct core_config *cfg, const struct core_sample *sm,
                        const struct core_topo *t, int i, const struct core_evaluated *ev,
                        const struct core_vhistory *hist, int64_t restart_ms,
                        const struct core_hooks *h, struct core_decision *d,
                        struct core_plugin_err *pe, struct core_scale_result *out);

/*
 * governor.rates.trend (core/README.md, Scaling): how long a scale-up on a load growing by
 * `growth` records/s a second (from `tdr`) is sized to hold, seconds. At least until the next
 * decision can be made (restart_s, the stabilization and a full window); with
 * governor.scale-down.restart-cost W, the holding time that minimizes what restarts and the
 * capacity bought ahead cost together, as an order quantity does: a restart costs
 * W x p x R / (1 - u) subtask-seconds, capacity bought for H ahead p x g x H^2 / 2 (g the
 * relative growth per second), so H = sqrt(2 W R / ((1 - u) g)), whatever p; at most
 * governor.rates.trend-horizon.
 */
double core__hold_time(const struct core_config *cfg, double restart_s, double tdr, double growth);

/* Observed scalability (core/README.md, Scaling): alpha in [coefficient-min, 1], rounded up to 2
 * decimals; 1 when not enough data. */
double core__scalability_alpha(const struct core_config *cfg, const struct core_vhistory *hist);

/* ------------------------------------------------------------- alignment.c */

/*
 * core/README.md, Alignment, for a vertex whose clamped P' (a->proposed) differs from p: resolves
 * the mode from cfg, checks applicability (partitions > 0 or a HASH input, for built-ins and
 * legacy; plugins decide themselves), and returns the aligned parallelism. Sets
 * ALIGNED_TO_PARTITIONS / ALIGNED_TO_KEY_GROUPS / ALIGNED_BY_PLUGIN in *constraints when the
 * value changed. Legacy modes emit ScalingLimited into d. A plugin failure returns
 * a->proposed and is recorded in pe.
 */
int core__align(const struct core_config *cfg, const struct core_align_ctx *a,
                const struct core_hooks *h, struct core_decision *d, unsigned *constraints,
                struct core_plugin_err *pe);

/* first_aligned of core/README.md, Alignment, over [from, to]: first q with N % q == 0, or
 * (accept_reducing) N / q < N / proposed. 0 if none. */
int core__first_aligned(int n_keys, int proposed, int from, int to, bool accept_reducing);

/* --------------------------------------------------------------- history.c */

/* The vertex's history (NULL if none). */
struct core_vhistory *core__history_find(struct core_state *st, const char *id);
/* Retention (core/README.md, History) on every vertex, and deletes vertices not in the
 * sample. */
void core__history_trim(struct core_state *st, const struct core_topo *t,
                        const struct core_config *cfg, int64_t now);
/* Appends an entry for an executed scaling. */
void core__history_add(struct core_state *st, const char *id, const struct core_hist_entry *e);
/* The same at the vertex's position in st->hist, which the cycle keeps per sample vertex (no
 * search): -1 = none yet, set to where the new history went. */
void core__history_add_at(struct core_state *st, int *pos, const char *id,
                          const struct core_hist_entry *e);
/* Drops vertex id's entry taken at `at` (an executed scaling the job did not apply). A vertex
 * left without entries keeps an empty history until the next trim. */
void core__history_forget(struct core_state *st, const char *id, int64_t at);
/* The same for the history at position pos of st->hist (-1: nothing). */
void core__history_forget_at(struct core_state *st, int pos, int64_t at);
/* Restart time (core/README.md, History): measures the pending tracking record's restart duration
 * if the topology now runs at the recorded parallelisms; trims the records. */
void core__tracking_update(struct core_state *st, const struct core_sample *sm,
                           const struct core_topo *t, const struct core_config *cfg, int64_t now);
void core__tracking_add(struct core_state *st, int64_t now);
/* Drops the tracking record taken at `at` (a scaling the job did not apply). */
void core__tracking_forget(struct core_state *st, int64_t at);
/* The job's restart time as measured (the largest tracked duration, whole seconds, at most
 * restart.time-tracking.limit), whether or not restart.time-tracking.enabled lets the reference's
 * formulas use it; restart.time before any is measured. governor's own mechanisms read this one
 * (core/README.md, History). */
int64_t core__restart_tracked(const struct core_state *st, const struct core_config *cfg);
/* The restart time to use, ms (whole seconds; core/README.md, History). */
int64_t core__restart_time(const struct core_state *st, const struct core_config *cfg);

/* ---------------------------------------------------------------- gating.c */

/* Memory pressure (core/README.md, Gating)? Emits the MemoryPressure event when it triggers. */
bool core__memory_pressure(const struct core_config *cfg, const struct core_global_eval *g,
                           struct core_decision *d);
/* Ineffective scale-ups (core/README.md, Gating): is a scale-up of vertex id to `target`
 * ineffective? Emits IneffectiveScaling. Returns true when the scale-up must be blocked (detection
 * enabled and ineffective). */
bool core__ineffective_blocked(const struct core_config *cfg, const struct core_vhistory *hist,
                               const char *id, int current, double tpr, struct core_decision *d);
/* Delayed scale-down (core/README.md, Gating): records a scale-down recommendation; returns the
 * parallelism to apply now (current = still delayed) and its outside-bound flag in *outside. */
int core__delayed_scale_down(struct core_state *st, const struct core_config *cfg, const char *id,
                             int current, int target, bool outside, int64_t now, bool *outside_out);
void core__delayed_clear(struct core_state *st, const char *id);
/* Since when the vertex has been proposed a scale-down (its entry's first proposal), -1 when
 * none. */
int64_t core__delayed_since(const struct core_state *st, const char *id);
/* When the vertex's pending scale-down may happen at the earliest, or -1 when none. */
int64_t core__delayed_until(const struct core_state *st, const struct core_config *cfg,
                            const char *id);
/* The same by the vertex's position in st->delayed, which the cycle keeps per sample vertex
 * (no search): -1 = none. core__delayed_scale_down_at sets *pos when it adds the vertex;
 * core__delayed_clear_at moves the last entry into pos and returns where it was (-1: nothing
 * moved). core__delayed_find is the search (a scan). */
int core__delayed_find(const struct core_state *st, const char *id);
int core__delayed_scale_down_at(struct core_state *st, const struct core_config *cfg, int *pos,
                                const char *id, int current, int target, bool outside, int64_t now,
                                bool *outside_out);
int64_t core__delayed_until_at(const struct core_state *st, const struct core_config *cfg, int pos);
int core__delayed_clear_at(struct core_state *st, int pos);
void core__delayed_clear_all(struct core_state *st);

/* ------------------------------------------------------------ taskmanager.c */

/* Every pool of a TaskManager's memory, bytes, as Flink derives them (core/README.md,
 * TaskManager). */
struct core_tm_pools {
    int64_t process, flink, framework_heap, task_heap, framework_offheap, task_offheap, managed,
        network, metaspace, overhead;
};

/*
 * Flink's TaskExecutor memory model (TaskExecutorProcessUtils): derives every pool of *out
 * from m, from task.heap + managed.size, else flink.size, else process.size, with Flink's
 * float fractions and truncating multiplication. -1 with a message in err when m is invalid
 * (none of those set, negative sizes, a bad range, pools that do not fit).
 */
int core__tm_derive(const struct core_tm_memory *m, struct core_tm_pools *out, char *err,
                    size_t err_len);

/* Task slots after scaling (core/README.md, TaskManager), given the new parallelism per
 * sample vertex. */
int core__slots_after(const struct core_sample *sm, const int *new_p, double slots_used);

/* -------------------------------------------------------------- resources.c */

/* The quota (core/README.md, Resources): true when the quota would be exceeded (event
 * ResourceQuotaReached emitted). in_summary[i] says whether vertex i is in the scaling summary. */
bool core__quota_reached(const struct core_config *cfg, const struct core_sample *sm,
                         const bool *in_summary, const int *new_p, struct core_decision *d);

/* ----------------------------------------------------------------- memory.c */

/*
 * core/README.md, Memory tuning. Emits the "Configuration recommendation" event whenever it
 * recommends something; when cfg->mem_tuning_enabled, also fills d->config_changes /
 * d->config_removals. Skipped (no event) if the TM memory model is invalid or its process
 * size unknown.
 */
void core__memory_tune(const struct core_config *cfg, const struct core_sample *sm,
                       const struct core_topo *t, const int *new_p,
                       const struct core_global_eval *g, struct core_decision *d);

/* ---------------------------------------------------------------- explain.c */

/* "1100/s", "12.5/s", "an unknown rate", "an unbounded rate". */
void core__fmt_rate(char *buf, size_t n, double x);
/* "2025-11-29T10:03:00Z" (second resolution). */
void core__fmt_utc(char *buf, size_t n, int64_t ms);
/* Why vertex v moves to target (reason HIGH_*, LOW_UTILIZATION), with the limits that
 * changed its number (raw: before them) and the restart headroom it was sized with (restart_ms:
 * the restart time the formulas use), in the arena. */
const char *core__explain_move(struct core_decision *d, const struct core_config *cfg,
                               const struct core_vertex_in *v, enum core_reason reason, int target,
                               int raw, unsigned constraints, const struct core_evaluated *e,
                               int64_t restart_ms);
/* Why vertex id stays: inside its bounds. */
const char *core__explain_steady(struct core_decision *d, const char *id, int p,
                                 const struct core_evaluated *e);
/* Why a vertex that needs raw subtasks stays at its current parallelism (LIMIT_REACHED). */
const char *core__explain_limit(struct core_decision *d, const struct core_config *cfg,
                                const struct core_vertex_in *v, int raw, unsigned constraints);

/* ------------------------------------------------------------------ curve.c */

/* A vertex's measured scalability curve (core/README.md, Curve): p / X(p) = a + b p. */
struct core_curve {
    bool fitted;
    double a, b;  /* the line; b > 0 when fitted */
    double x_max; /* the most any parallelism reaches: 1 / b (at least the best measured) */
    int stop;     /* the fewest subtasks reaching `share` of it, not below least_p */
    int least_p;  /* the fewest subtasks measured */
    int n;        /* points */
};
/* Fits the curve through the history's (starting parallelism, processing rate) points and
 * (p, tpr) now; false (nothing fitted) with fewer than two parallelisms, or a line that does
 * not bend (linear scaling or better). hist may be NULL. */
bool core__curve_fit(const struct core_vhistory *hist, int p, double tpr, double share,
                     struct core_curve *out);
/* governor.scalability.curve: the curve of a vertex whose last scaling, a scale-up to p, did
 * not pay (it raised the processing rate by less than scaling.effectiveness.threshold of what
 * was expected), fitted as core__curve_fit with share 1 - skew.saturation. false otherwise. */
bool core__curve_limited(const struct core_config *cfg, const struct core_vhistory *hist, int p,
                         double tpr, struct core_curve *out);
/* The share of the most any parallelism reaches that a limited vertex stops at:
 * governor.scalability.share with the curve on, else 1 - job.autoscaler.skew.saturation. */
double core__knee_share(const struct core_config *cfg);
/* X(p) of a fitted curve, records/s; NaN when not fitted. */
double core__curve_rate(const struct core_curve *c, int p);

/* ------------------------------------------------------------------- skew.c */

/*
 * Governor's key-parallelism diagnosis (core/README.md, Skew) for a HASH-input vertex about to
 * scale up from `current` to `target`. Fills the skew figures of ev; returns the parallelism past
 * which more subtasks cannot help (>= 1), or 0 when no skew limit applies.
 */
int core__skew_limit(const struct core_config *cfg, const struct core_window *w, int wi,
                     int current, struct core_evaluated *ev);
/* The most a key-limited vertex (ev's skew figures filled) processes at q subtasks, records/s:
 * one subtask's rate over the busiest subtask's share (by key groups with governor.skew.knee).
 * NaN when ev has no skew figures. */
double core__skew_capacity(const struct core_config *cfg, const struct core_evaluated *ev, int q);

#endif
