/*
 * core.h - the native scaling core: the one interface between the algorithm described in
 * server/core/README.md (the Flink Kubernetes operator's autoscaler, with governor's
 * differences) and everything around it (the server, replay, the Lua plugin host).
 *
 * The core is a pure function of (job state, one sample, effective config, hook results):
 * it does no I/O, reads no clock and keeps no globals. Time comes from the sample's `at`.
 * It may call only libc (malloc, math, string) and the hooks it is handed.
 *
 * Ownership, in jansson's terms:
 *  - struct core_sample and struct core_config are borrowed by core_decide; the caller owns
 *    them and their strings.
 *  - struct core_state is owned by the caller, created with core_state_new and updated in
 *    place by core_decide (it allocates what it stores; core_state_free releases all).
 *  - struct core_decision is storage the caller owns (core_decision_init/deinit). Everything
 *    core_decide hangs off it (strings, arrays) lives in the decision's arena and is freed
 *    by core_decision_deinit or reused by core_decision_reset; ids are borrowed from the
 *    sample, so the sample must outlive the decision.
 *
 * "Unset" doubles are NaN; "unset" int64 durations are -1.
 */
#ifndef GOVERNOR_CORE_H
#define GOVERNOR_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/batch.h"

/* ------------------------------------------------------------------ enums -- */

enum core_ship {
    CORE_SHIP_HASH,
    CORE_SHIP_REBALANCE,
    CORE_SHIP_RESCALE,
    CORE_SHIP_FORWARD,
    CORE_SHIP_CUSTOM,
    CORE_SHIP_BROADCAST,
    CORE_SHIP_GLOBAL,
    CORE_SHIP_SHUFFLE,
    CORE_SHIP_UNKNOWN,
};

/* Case-insensitive; anything unknown is CORE_SHIP_UNKNOWN (core/README.md, Topology). */
enum core_ship core_ship_parse(const char *s);
const char *core_ship_name(enum core_ship s);

enum core_aggregator { CORE_AGG_MAX, CORE_AGG_AVG, CORE_AGG_MIN };

enum core_align_mode {
    CORE_ALIGN_BALANCED,
    CORE_ALIGN_EVENLY_SPREAD,
    CORE_ALIGN_OFF,
    CORE_ALIGN_PLUGIN, /* config.align_plugin names it */
    /* the deprecated adjust.mode values, which may block (core/README.md, Alignment) */
    CORE_ALIGN_LEGACY_EVENLY_SPREAD,
    CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION,
};

enum core_action { CORE_NO_CHANGE, CORE_SCALE_UP, CORE_SCALE_DOWN, CORE_SCALE };
const char *core_action_name(enum core_action a);

/* Reason codes, for the job and for each vertex (core/README.md, Cycle: Reasons). */
enum core_reason {
    CORE_R_COLLECTING_METRICS,
    CORE_R_WITHIN_TARGET,
    CORE_R_HIGH_BACKLOG,
    CORE_R_HIGH_UTILIZATION,
    CORE_R_LOW_UTILIZATION,
    CORE_R_SCALE_DOWN_DELAYED,
    CORE_R_LIMIT_REACHED,
    CORE_R_KEY_PARALLELISM_LIMIT,
    CORE_R_INEFFECTIVE_SCALING,
    CORE_R_MEMORY_PRESSURE,
    CORE_R_QUOTA_REACHED,
    CORE_R_EXCLUDED_PERIOD,
    CORE_R_SCALING_DISABLED,
    CORE_R_VETOED,
    CORE_R_PLUGIN_ERROR,
    CORE_R_JOB_NOT_RUNNING,
    CORE_R_IMPLAUSIBLE_SAMPLE, /* governor's own: the sample was left out (core/README.md, Window)
                                */
    CORE_R_EXTERNAL_LIMIT,     /* governor's own: more subtasks do not raise what the vertex
                                  processes (core/README.md, Curve) */
    CORE_R_NOT_APPLIED,        /* governor's own: a scaling the client did not apply, recommended
                                  again instead of executed (core/README.md, Cycle) */
    /* batch jobs and rebalancing (core/README.md, Batch and Rebalance) */
    CORE_R_LOW_BACKLOG,       /* a smaller pool finishes the remaining work in good time */
    CORE_R_UNSPLITTABLE_WORK, /* the pool is capped by what the remaining work splits into */
    CORE_R_STRAGGLERS,        /* rebalance: splitting stragglers brings the finish forward */
    CORE_R_BALANCED,          /* rebalance: no split would bring the finish forward */
    CORE_R__COUNT
};
const char *core_reason_name(enum core_reason r);

/* Vertex constraints, every limit that changed a vertex's number (core/README.md, Cycle:
 * Constraints), one row each: a bit each (CORE_C_<NAME>), shown by name (core_constraint_name
 * of the bit's index). Adding a constraint is one row here. */
#define CORE_CONSTRAINTS(X)                                                                        \
    X(CLAMPED_MAX_FACTOR)                                                                          \
    X(CLAMPED_MIN_PARALLELISM)                                                                     \
    X(CLAMPED_MAX_PARALLELISM)                                                                     \
    X(ALIGNED_TO_KEY_GROUPS)                                                                       \
    X(ALIGNED_TO_PARTITIONS)                                                                       \
    X(CAPPED_AT_PARTITIONS)                                                                        \
    X(ALIGNED_BY_PLUGIN)                                                                           \
    X(EXCLUDED_VERTEX)                                                                             \
    X(CHANGED_BY_EXECUTOR)                                                                         \
    X(CAPPED_BY_KEY_SKEW) /* governor's own: core/README.md, Skew */                               \
    X(CAPPED_AT_KNEE)     /* governor's own: core/README.md, Curve */

/* The bit indexes, and their count. */
enum core_constraint_bit {
#define CORE__C_BIT(name) CORE_CB_##name,
    CORE_CONSTRAINTS(CORE__C_BIT)
#undef CORE__C_BIT
        CORE_C__COUNT
};
enum core_constraint {
#define CORE__C_FLAG(name) CORE_C_##name = 1u << CORE_CB_##name,
    CORE_CONSTRAINTS(CORE__C_FLAG)
#undef CORE__C_FLAG
};
/* Name of constraint bit i (0 <= i < CORE_C__COUNT), e.g. "CLAMPED_MAX_FACTOR"; "?" else. */
const char *core_constraint_name(int bit);

/* ----------------------------------------------------------------- config -- */

/* governor.profile (core/README.md, Differences): `flink` is the reference algorithm with
 * governor's first differences only; `governor` (the default) also turns on the safeguards
 * below that the reference does not have. The profile only chooses their defaults: each has
 * its own option, and the core reads those. */
enum core_profile { CORE_PROFILE_GOVERNOR, CORE_PROFILE_FLINK };

/* Flink's TaskManager memory model keys (core/README.md, TaskManager), in bytes / fractions.
 * -1 or NaN = unset. */
struct core_tm_memory {
    int64_t process_size, flink_size, task_heap, managed_size, framework_heap, framework_offheap,
        task_offheap, metaspace, network_min, network_max, overhead_min, overhead_max, segment_size;
    double managed_fraction, network_fraction, overhead_fraction;
    int buffers_per_channel, floating_buffers;
};

/*
 * The effective options of one job (core/README.md, Options), already parsed and
 * validated by the options module, every field set: the core has no defaults of its own
 * (the server's options table holds them all; opt_config_defaults gives them unchanged).
 * Strings and lists are borrowed from whoever built it.
 */
struct core_config {
    bool enabled;         /* job.autoscaler.enabled (governor default: true) */
    bool scaling_enabled; /* false: advisor mode */
    int64_t metrics_window_ms, stabilization_ms;
    const char *excluded_periods;                          /* raw ';' list, "" = none */
    const char *excluded_tz;                               /* IANA name, default "UTC" */
    double util_target, util_boundary, util_max, util_min; /* max/min NaN = unset */
    int64_t scale_down_interval_ms;
    int vertex_min_parallelism, vertex_max_parallelism;
    double scale_down_max_factor, scale_up_max_factor;
    int64_t catch_up_ms, restart_time_ms;
    bool restart_tracking_enabled;
    int64_t restart_tracking_limit_ms;
    int64_t backlog_lag_threshold_ms;
    int64_t otpr_lag_threshold_ms;
    double otpr_switch_threshold;
    int otpr_min_observations;
    bool effectiveness_detection;
    double effectiveness_threshold;
    double gc_pressure_threshold, heap_usage_threshold;
    bool mem_tuning_enabled;
    double mem_tuning_overhead;
    bool mem_maximize_managed, mem_scale_down_compensation;
    int history_max_count;
    int64_t history_max_age_ms;
    enum core_aggregator busy_aggregator;
    const char *const *exclude_ids; /* vertex.exclude.ids */
    int n_exclude_ids;
    int64_t event_interval_ms;
    double quota_cpu;    /* NaN = unset */
    double quota_memory; /* bytes, NaN = unset */
    enum core_align_mode align_mode;
    const char *align_plugin; /* plugin name when align_mode == CORE_ALIGN_PLUGIN */
    bool observed_scalability_enabled;
    int observed_scalability_min_observations;
    double observed_scalability_coefficient_min;
    const char *const *evaluators; /* metrics.custom-evaluators, in order */
    int n_evaluators;
    const char *const *executors; /* scaling.custom-executors, in listed order */
    int n_executors;
    /* governor's key-skew diagnosis (core/README.md, Skew) */
    bool skew_enabled;
    double skew_min_ratio;  /* max/avg busy time below this: no skew */
    double skew_saturation; /* stop where the hot subtask is within this of its floor */
    /* governor.profile and the safeguards whose default it sets (core/README.md, Window) */
    enum core_profile profile;
    bool plausibility;         /* governor.plausibility.enabled: implausible samples left out */
    double plausibility_ratio; /* governor.plausibility.max-ratio: counter rate vs its gauge */
    bool window_keep_full;     /* governor.window.keep-full: a full window stays full */
    bool window_refill;        /* governor.window.refill-after-gap */
    /* Noisy input, under both profiles (core/README.md, Window) */
    double counter_jitter;  /* governor.counters.jitter: a step back this share is no reset */
    double gauge_tolerance; /* governor.rates.gauge-tolerance: gauge vs counter factor */
    /* The governor profile's decisions (core/README.md, Differences); each bool follows the
     * profile unless set. */
    bool source_rate_guard;         /* governor.source-rate.guard */
    int64_t source_rate_warm_up_ms; /* governor.source-rate.warm-up */
    double source_rate_max_bp;      /* governor.source-rate.max-backpressure (fraction) */
    bool catch_up_in_headroom;      /* governor.catch-up.in-headroom */
    bool scale_down_with_restart;   /* governor.scale-down.with-restart */
    bool scale_down_early;          /* governor.scale-down.early */
    bool scale_down_one_step;       /* governor.scale-down.in-one-step */
    int64_t scale_down_early_ms;    /* governor.scale-down.early-after */
    bool align_busiest_share;       /* governor.alignment.busiest-share */
    double util_ceiling;            /* governor.utilization.ceiling, NaN = none */
    double util_min_target;         /* governor.utilization.min-target, NaN = none */
    bool skew_knee;                 /* governor.skew.knee */
    bool skew_limit_flow;           /* governor.skew.limit-flow */
    bool rates_from_counters;       /* governor.rates.from-counters */
    bool source_stall;              /* governor.source.stall */
    bool scalability_curve;         /* governor.scalability.curve */
    int not_applied_max;            /* governor.not-applied.max, 0 = off */
    double scalability_share;       /* governor.scalability.share */
    double level_shift_z;           /* governor.rates.level-shift, NaN = off */
    double bounds_z;                /* governor.bounds.confidence, NaN = off */
    double trend_z;                 /* governor.rates.trend, NaN = off */
    int64_t trend_horizon_ms;       /* governor.rates.trend-horizon */
    double restart_cost_w;          /* governor.scale-down.restart-cost, NaN = off */
    /* Flink cluster keys the algorithm reads */
    int slots_per_tm; /* taskmanager.numberOfTaskSlots, default 1 */
    double tm_cpu;    /* taskmanager.cpu.cores, NaN = unknown */
    struct core_tm_memory tm;
    /* batch jobs (core/README.md, Batch): governor.batch.* */
    struct core_batch_config batch;
};

/* A duration as Flink writes it, in the largest unit that divides it: "90 d", "1 h",
 * "15 min", "30 s", "500 ms" (the options table prints defaults this way too). */
void core_format_duration(char *buf, size_t n, int64_t ms);

/* ----------------------------------------------------------------- sample -- */

struct core_input {
    const char *from; /* id of the upstream vertex */
    enum core_ship ship;
};

/* One vertex of a sample (the decide request's vertices[]). Absent metrics are NaN. */
struct core_vertex_in {
    const char *id;
    int parallelism, max_parallelism;
    int partitions;                 /* 0 = unknown */
    const char *slot_sharing_group; /* NULL = unknown */
    bool finished;
    const struct core_input *inputs; /* none: a source */
    int n_inputs;
    double busy_min, busy_avg, busy_max; /* busy_ms_per_s; a single number sets all three */
    double backpressured;                /* ms/s, average over subtasks */
    double records_in, records_out;      /* cumulative counters */
    double accumulated_busy_ms;          /* cumulative, summed over subtasks */
    double records_in_per_s;             /* gauge: non-sources' input; sources' own input */
    double records_out_per_s;            /* gauge */
    double pending_records;              /* source backlog */
};

struct core_sample {
    int64_t at;            /* epoch ms */
    int64_t running_since; /* epoch ms */
    bool running;          /* status == RUNNING */
    /* job_metrics; NaN when absent */
    double heap_used, heap_max, gc_ms_per_s, managed_used, metaspace_used;
    double task_slots_total, task_slots_available;
    const struct core_vertex_in *vertices;
    int n_vertices;
    /* "mode": "BATCH": a worker pool to size (core/README.md, Batch); vertices are then empty */
    bool batch_mode;
    struct core_batch_in batch;
};

/* --------------------------------------------------------------- decision -- */

/*
 * The evaluated figures of one vertex (core/README.md, Evaluation), one row each: the name (the
 * struct member, the response's key, the plugins' field), what an evaluator plugin may return
 * for it (a number in [lo, hi]), and flags: CORE_FIG_INF, +infinity is allowed too (the core's
 * own "no limit"); CORE_FIG_INT, whole numbers only; CORE_FIG_ASSESSED, a diagnosis not always
 * made, shown only when it was (the others are shown as null when undefined). Every figure is a
 * double, NaN when undefined. Adding a figure is one row here: the struct, the response, the
 * stored rows, the plugins' view and the core's blanking all follow the table (core_figures).
 */
#define CORE_RATE_MAX 1e15 /* records/s: far above any real job, far below overflow */
#define CORE_INT_MAX  2147483647.0
#define CORE_FIGURES(X)                                                                            \
    X(load, 0, 1, 0)                                        /* LOAD.average */                     \
    X(true_processing_rate, 0, CORE_RATE_MAX, CORE_FIG_INF) /* TRUE_PROCESSING_RATE.average */     \
    X(target_data_rate, 0, CORE_RATE_MAX, 0)                /* TARGET_DATA_RATE.average */         \
    X(catch_up_data_rate, 0, CORE_RATE_MAX, 0)              /* CATCH_UP_DATA_RATE.current */       \
    X(lag, 0, CORE_RATE_MAX, 0)                             /* LAG.current (sources) */            \
    X(scale_up_rate_threshold, 0, CORE_RATE_MAX, 0)                                                \
    X(scale_down_rate_threshold, 0, CORE_RATE_MAX, CORE_FIG_INF)                                   \
    /* set when the target differs from current */                                                 \
    X(expected_processing_rate, 0, CORE_RATE_MAX, 0)                                               \
    X(parallelism, 1, CORE_INT_MAX, CORE_FIG_INT)                                                  \
    X(max_parallelism, 1, CORE_INT_MAX, CORE_FIG_INT)                                              \
    X(num_source_partitions, 0, CORE_INT_MAX, CORE_FIG_INT)                                        \
    /* governor's skew diagnosis (core/README.md, Skew): r = max/avg busy time, h = the hot     */ \
    /* key's share, the most records/s the vertex can ever process, subtasks per hot key        */ \
    X(busy_max_avg_ratio, 0, 1e9, CORE_FIG_ASSESSED)                                               \
    X(hot_key_share, 0, 1, CORE_FIG_ASSESSED)                                                      \
    X(key_rate_bound, 0, CORE_RATE_MAX, CORE_FIG_INF | CORE_FIG_ASSESSED)                          \
    X(salting_fanout, 1, CORE_INT_MAX, CORE_FIG_INT | CORE_FIG_ASSESSED)

enum { CORE_FIG_INF = 1u << 0, CORE_FIG_INT = 1u << 1, CORE_FIG_ASSESSED = 1u << 2 };

struct core_evaluated {
#define CORE__FIG_MEMBER(name, lo, hi, flags) double name;
    CORE_FIGURES(CORE__FIG_MEMBER)
#undef CORE__FIG_MEMBER
};

/* One row of CORE_FIGURES, as data. */
struct core_figure {
    const char *name;
    size_t off; /* offsetof(struct core_evaluated, name) */
    double lo, hi;
    unsigned flags; /* CORE_FIG_* */
};
#define CORE_N_FIGURES ((int)(sizeof(struct core_evaluated) / sizeof(double)))
extern const struct core_figure core_figures[];

/* Figure i (0 <= i < CORE_N_FIGURES) of ev. */
static inline double core_figure_get(const struct core_evaluated *ev, int i)
{
    return *(const double *)(const void *)((const char *)ev + core_figures[i].off);
}
static inline double *core_figure_at(struct core_evaluated *ev, int i)
{
    return (double *)(void *)((char *)ev + core_figures[i].off);
}
/* Sets every figure of ev to NaN (undefined). */
void core_evaluated_clear(struct core_evaluated *ev);
/* The utilization bounds a vertex is held to (core/README.md, Evaluation): [0, 1] while the
 * job processes a backlog (backlog true), else utilization.min/max or target -/+ boundary,
 * the upper one held to governor.utilization.ceiling. For the evaluation and for what reads
 * the history (the timeline, the advice). */
void core_util_bounds(const struct core_config *cfg, bool backlog, double *upper, double *lower);

struct core_vdecision {
    const char *id; /* borrowed from the sample */
    int current;
    int raw_target; /* ceil(factor x p) before any clamp; = current when not computed */
    int target;     /* final, what the client should apply */
    enum core_reason reason;
    unsigned constraints; /* enum core_constraint bits */
    bool outside_bounds;  /* TPR outside the utilization bounds (core/README.md, Evaluation) */
    bool excluded;        /* vertex.exclude.ids, finished, or no busy time */
    struct core_evaluated ev;
    const char *message; /* arena; NULL when nothing to say */
};

/*
 * The fields of struct core_vdecision as every codec shows them, one row each, in the order
 * of the response: the name, how the value is shown, and where it is. A text that is NULL is
 * left out. Adding a field of a vertex's decision is one row here (core_vfields).
 */
enum core_vfield_type {
    CORE_VF_TEXT,        /* const char * */
    CORE_VF_INT,         /* int */
    CORE_VF_BOOL,        /* bool */
    CORE_VF_REASON,      /* enum core_reason, by name (core_reason_name) */
    CORE_VF_CONSTRAINTS, /* unsigned bits, as the list of their names (core_constraint_name) */
    CORE_VF_EVALUATED,   /* struct core_evaluated, as an object of its figures (core_figures) */
};
struct core_vfield {
    const char *name;
    enum core_vfield_type type;
    size_t off; /* offsetof(struct core_vdecision, ...) */
};
extern const struct core_vfield core_vfields[];
extern const int core_n_vfields;

/* Where field i (0 <= i < core_n_vfields) of v is; read it as its type says. */
static inline const void *core_vfield_at(const struct core_vdecision *v, int i)
{
    return (const char *)v + core_vfields[i].off;
}

struct core_event {
    const char *type;    /* "Normal" | "Warning" */
    const char *reason;  /* e.g. "ScalingReport" (core/README.md, Events) */
    const char *message; /* arena */
    const char *key;     /* dedupe key (arena), NULL = never deduplicated */
    int count;           /* times seen within the interval, including this one */
    bool suppressed;     /* deduplicated: the client need not show it again */
};

struct core_kv {
    const char *key, *value; /* arena */
};

struct core_arena_block; /* opaque */

struct core_decision {
    int64_t at;
    enum core_action action;
    bool execute;
    enum core_reason reason;
    const char *message; /* arena */
    int n_vertices;
    struct core_vdecision *vertices; /* topological order */
    int n_events;
    struct core_event *events;
    int n_config_changes; /* memory tuning overrides */
    struct core_kv *config_changes;
    int n_config_removals;
    const char **config_removals;
    /* internal: the arena */
    struct core_arena_block *arena;
    int cap_events, cap_changes;
};

/*
 * The members of a decision's response (streaming mode; a batch decision and a rebalance advice
 * are answers of their own, stored whole), one row each, in the order of the response: the
 * name, how the value is shown, where it is, and where the store keeps it. Every codec of the
 * answer iterates it: the jansson renderer and the text printer (decision/jsn_render.c,
 * jsn_text.c), the store's rebuild of a response from its rows (store/read.c), and the rest a
 * write unit keeps as JSON because no row holds it (decision/unit.c). A member added to the
 * answer is one row here; kept as CORE_DS_REST it is stored and read back with no column of
 * its own. The events' members are core_efields, a vertex's core_vfields.
 */
enum core_dfield_type {
    CORE_DF_ARG,      /* a text the caller gives (arg: enum core_darg); NULL shows null */
    CORE_DF_TEXT,     /* const char *; NULL shows "" */
    CORE_DF_INT64,    /* int64_t */
    CORE_DF_BOOL,     /* bool */
    CORE_DF_ACTION,   /* enum core_action, by name (core_action_name) */
    CORE_DF_REASON,   /* enum core_reason, by name (core_reason_name) */
    CORE_DF_TARGETS,  /* {vertex id: target} of the vertices, in their order */
    CORE_DF_VERTICES, /* [each vertex as core_vfields say] */
    CORE_DF_EVENTS,   /* [each event as core_efields say] */
    CORE_DF_KVS,      /* struct core_kv at off, int count at off_n: {key: value}; none: left out */
    CORE_DF_TEXTS,    /* const char * at off, int count at off_n: [text]; none: left out */
};
/* The texts a caller gives the codecs besides the decision (CORE_DF_ARG). */
enum core_darg { CORE_DARG_JOB, CORE_DARG_REVISION, CORE_DARG_HASH, CORE_DARG__N };
/* Where the store keeps a member: a column of the decision's row (store/read.c names which),
 * the decision's vertex and event rows, or the rest of the response, kept as JSON. */
enum core_dstore { CORE_DS_COLUMN, CORE_DS_ROWS, CORE_DS_REST };
struct core_dfield {
    const char *name;
    enum core_dfield_type type;
    enum core_dstore store;
    size_t off, off_n; /* offsetof(struct core_decision, ...): the value, its count */
    int arg;           /* CORE_DF_ARG: enum core_darg */
};
extern const struct core_dfield core_dfields[];
extern const int core_n_dfields;

/* Where member i (0 <= i < core_n_dfields) of d is; read it as its type says. */
static inline const void *core_dfield_at(const struct core_decision *d, int i)
{
    return (const char *)d + core_dfields[i].off;
}
/* The count of member i (CORE_DF_KVS, CORE_DF_TEXTS). */
static inline int core_dfield_n(const struct core_decision *d, int i)
{
    return *(const int *)(const void *)((const char *)d + core_dfields[i].off_n);
}

/* The members of an event, in the order of the response (struct core_event). */
enum core_efield_type {
    CORE_EF_TEXT,  /* const char *; NULL shows null */
    CORE_EF_TEXT0, /* const char *; NULL shows "" */
    CORE_EF_INT,   /* int */
    CORE_EF_BOOL,  /* bool */
};
struct core_efield {
    const char *name;
    enum core_efield_type type;
    size_t off; /* offsetof(struct core_event, ...) */
};
extern const struct core_efield core_efields[];
extern const int core_n_efields;

static inline const void *core_efield_at(const struct core_event *e, int i)
{
    return (const char *)e + core_efields[i].off;
}

void core_decision_init(struct core_decision *d);
/* Forgets the content but keeps the first arena block for the next decision. */
void core_decision_reset(struct core_decision *d);
void core_decision_deinit(struct core_decision *d);

/* ------------------------------------------------------------------ hooks -- */

/*
 * The four hook points (the plugin kinds: exclusion, evaluator, executor, alignment). Every hook is
 * optional (NULL = not provided). A hook returns 0 on success, -1 on failure with a message in err
 * (e.g. "freeze.lua:12: boom"); on failure the native result stands and the decision says
 * PLUGIN_ERROR naming `name`.
 */
struct core_align_ctx {
    const char *vertex;
    int current, proposed; /* p and the clamped P' */
    int lower, upper;      /* parallelism limits (core/README.md, Scaling step 6) */
    int max_parallelism;   /* key groups */
    int partitions;        /* 0 = unknown */
    const enum core_ship *input_ships;
    int n_inputs;
    const struct core_evaluated *ev;
};

struct core_hooks {
    void *ud;
    /* Excluded period? *excluded = true and why filled when inside one. */
    int (*excluded)(void *ud, const struct core_config *cfg, int64_t now, bool *excluded, char *why,
                    size_t why_len, char *err, size_t err_len);
    /* One evaluator over one vertex; may overwrite figures in ev (NaN = keep built-in). */
    int (*evaluate)(void *ud, const char *name, const struct core_vertex_in *v,
                    struct core_evaluated *ev, bool processing_backlog, int64_t now, char *err,
                    size_t err_len);
    /* One executor over the decision; may change vertices[].target, or veto (*veto = true,
     * reason in err). */
    int (*execute)(void *ud, const char *name, struct core_decision *d, int64_t now, bool *veto,
                   char *err, size_t err_len);
    /* A plugin alignment mode; *out = the aligned parallelism. */
    int (*align)(void *ud, const char *name, const struct core_align_ctx *a, int *out, char *err,
                 size_t err_len);
};

/* ------------------------------------------------------------------ state -- */

struct core_state; /* opaque: metric window, history, tracking, delayed scale-downs, events */

/* new: an empty job state. Aborts on out-of-memory. */
struct core_state *core_state_new(void);
void core_state_free(struct core_state *s);
/* Forgets everything but the `at` of the last sample and the numbering of the window's
 * samples (job.autoscaler.enabled=false: the job's samples still go forward in time). A job
 * deleted (DELETE /v1/jobs/{job}) starts over with core_state_new instead. */
void core_state_clear(struct core_state *s);
/* The `at` of the last sample the state accepted, or INT64_MIN. */
int64_t core_state_last_at(const struct core_state *s);

/*
 * The binary form of a state (core/README.md, State): the one form a state is stored and
 * copied in. Pure, bytes in and out. Format: "GVS3", then the fields of state.h in order,
 * little-endian, int32 counts and lengths, IEEE-754 doubles copied bit for bit (so the round
 * trip is exact, NaN payloads included). Storage keeps a job's window samples apart, one row
 * each ("GVM3": the state without them, then one core_state_encode_sample per sample), so
 * that a decision writes its one new sample instead of the whole window. After the events
 * come the window's stabilization start, full-from instant, topology hash and counters, the
 * rejected-sample count and the pending scaling; a version 2 blob ("GVS2", "GVM2", written
 * before they existed) decodes without them. Blobs are read back by the same build (the byte
 * order of the machine). Encoders abort on out-of-memory; *out is new (free() it).
 */
/* The whole state, window samples included ("GVS3"). */
void core_state_encode(const struct core_state *st, unsigned char **out, size_t *len);
/* The state without its window samples ("GVM3"). */
void core_state_encode_meta(const struct core_state *st, unsigned char **out, size_t *len);
/* Window sample number seq, core_state_seq0(st) <= seq < core_state_seq_end(st). */
void core_state_encode_sample(const struct core_state *st, int64_t seq, unsigned char **out,
                              size_t *len);
/* Decodes either form into st (cleared first; in is borrowed). *meta (when meta is not NULL)
 * tells that the blob was a "GVM" one, whose samples are to be added with
 * core_state_decode_sample. -1 with a message in err on a truncated or bad blob; st is then
 * empty. */
int core_state_decode(const unsigned char *in, size_t len, struct core_state *st, bool *meta,
                      char *err, size_t err_len);
/* Appends window sample number seq, which must be the next one (core_state_seq_end(st)). -1
 * with a message in err otherwise, or when in is not a sample of the window's vertices; st is
 * then unchanged. */
int core_state_decode_sample(struct core_state *st, int64_t seq, const unsigned char *in,
                             size_t len, char *err, size_t err_len);
/* The number of the window's first sample, and one past its last (samples are numbered over
 * the job's life, never reusing a number: core/README.md, State). */
int64_t core_state_seq0(const struct core_state *st);
int64_t core_state_seq_end(const struct core_state *st);
/* The bytes the window's samples take in memory (compressed: core/README.md, Window: Memory),
 * for the benchmarks. */
size_t core_state_window_bytes(const struct core_state *st);

/* ----------------------------------------------------------------- decide -- */

/*
 * One scaling cycle (core/README.md, Cycle). Validates the sample's topology first (unknown input,
 * duplicate id, cycle, bad parallelism): on such an error returns -1 with a message in
 * err naming the field (e.g. "vertices[2].inputs[0].from: unknown vertex \"x\""), and
 * neither the state nor the decision is touched. Otherwise updates st in place, fills d
 * (reset first) and returns 0.
 */
int core_decide(struct core_state *st, const struct core_sample *sm, const struct core_config *cfg,
                const struct core_hooks *hooks, struct core_decision *d, char *err, size_t err_len);

/* A batch sample (sm->batch_mode; core/README.md, Batch): the pool's size into d, the job
 * state's batch part and last sample time updated. The sample must be valid (the parser's
 * checks); no hooks are called. */
void core_decide_batch(struct core_state *st, const struct core_sample *sm,
                       const struct core_config *cfg, struct core_batch_decision *d);

#endif
