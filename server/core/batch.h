/*
 * batch.h - the batch rule and the rebalancing advice (core/README.md, Batch and Rebalance):
 * how many workers a batch job's pool should have for the work that remains, and where to
 * split stragglers' remaining work so that every worker finishes together.
 *
 * Pure arithmetic like the rest of the core: no I/O, no clock (time is the sample's `at`), no
 * globals. May call libc and libm only.
 *
 * Ownership, in jansson's terms: samples and configs are borrowed for the call; the state is
 * the caller's and updated in place; results are storage the caller owns, filled by the call
 * (strings in them are borrowed from the sample, or static).
 */
#ifndef GOVERNOR_CORE_BATCH_H
#define GOVERNOR_CORE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

/* The batch rule's options (governor.batch.*), every field set by the options table. */
struct core_batch_config {
    int min_workers, max_workers; /* min-workers, max-workers */
    int64_t worker_overhead_ms;   /* worker-overhead: tau, a worker's start-up cost */
    double speed_weight;          /* speed-weight: lambda, worker-seconds per wall second */
    double dead_band;             /* dead-band: a change within it is no change */
    double max_scale_up;          /* max-scale-up: a later scale-up at most this factor */
    int scale_down_confirmations; /* scale-down-confirmations: decisions in a row */
    int64_t change_interval_ms;   /* change-interval: at most one change this often */
    int64_t worker_startup_ms;    /* worker-startup: how long requested workers may take */
    double idle_cpu;              /* idle-cpu: under this mean CPU the pool is held */
    double finishing;             /* finishing: the last stage's remaining share */
};

/* ------------------------------------------------------------ the batch rule -- */

enum core_batch_stage_state { CORE_BATCH_PENDING, CORE_BATCH_RUNNING, CORE_BATCH_DONE };

/* One stage of a batch sample (vertices[i].batch). Absent numbers are NaN. */
struct core_batch_stage {
    const char *id;
    enum core_batch_stage_state state;
    double total, done;           /* work, in the stage's unit (a fraction: total 1) */
    double busy_s;                /* worker-seconds spent on the stage so far, NaN: unknown */
    double remaining_parallelism; /* parts the remaining work can still be split into */
    double fixed_shards;          /* the stage writes or reads exactly this many shards */
};

/* The batch part of a sample ("mode": "BATCH"). */
struct core_batch_in {
    int workers;      /* workers.current: the pool (running or requested: see below) */
    bool has_running; /* workers.running was sent: the workers up and working */
    int running;
    bool has_requested; /* workers.requested was sent: the pool asked of the cluster */
    int requested;
    int slots_per_worker; /* workers.slots_per_worker, 1 when absent */
    double cpu;           /* workers.cpu_utilization, mean over workers in [0, 1]; NaN */
    bool shuffle_on_workers;
    const struct core_batch_stage *stages;
    int n_stages;
};

/* What a stage has cost so far (core/README.md, Batch: remaining work). */
struct core_batch_stage_acc {
    char *id;        /* owned */
    double ws;       /* worker-seconds charged to it in measured intervals */
    double done_m;   /* the work it did in measured intervals */
    double done_max; /* the most work done it reported: progress never goes back */
    double busy_max; /* the most busy_s it reported; NaN: none */
    int state;       /* enum core_batch_stage_state at the previous sample; -1: not seen */
};

/* What a batch job's state keeps between decisions (core/README.md, Batch: State). */
struct core_batch_state {
    int64_t running_since;  /* the run the rest belongs to; INT64_MIN: none */
    int64_t last_at;        /* the previous sample of the run */
    double worker_s;        /* worker-seconds spent since running_since */
    int target;             /* the last decided pool size; 0: no decision in this run yet */
    int64_t last_change_at; /* INT64_MIN: no change yet */
    int down_count;         /* decisions in a row that asked for a smaller pool */
    int down_target;        /* the largest of the sizes they asked for */
    int requested;          /* the pool asked for last; 0: none seen yet */
    int requested_from;     /* the pool before that request */
    int64_t requested_at;   /* when it was asked for */
    int n_stages, cap_stages;
    struct core_batch_stage_acc *stages; /* per stage id, in the order first seen */
};

/* An empty batch state (storage the caller owns, holding nothing yet). */
void core_batch_state_init(struct core_batch_state *st);
/* Releases what st holds and empties it. */
void core_batch_state_reset(struct core_batch_state *st);

/* The limits and holds that changed the pool's number on the way, one row each. */
#define CORE_BATCH_CONSTRAINTS(X)                                                                  \
    X(CAPPED_AT_SPLITTABLE_PARTS)                                                                  \
    X(CAPPED_AT_FIXED_SHARDS)                                                                      \
    X(CLAMPED_MIN_WORKERS)                                                                         \
    X(CLAMPED_MAX_WORKERS)                                                                         \
    X(CLAMPED_SCALE_UP)                                                                            \
    X(WITHIN_DEAD_BAND)                                                                            \
    X(HELD_IDLE_CPU)                                                                               \
    X(HELD_FOR_CONFIRMATION)                                                                       \
    X(HELD_LAST_STAGE)                                                                             \
    X(HELD_SHUFFLE_ON_WORKERS)                                                                     \
    X(HELD_CHANGE_INTERVAL)                                                                        \
    X(HELD_WORKERS_STARTING)

enum core_batch_constraint_bit {
#define CORE__BC_BIT(name) CORE_BCB_##name,
    CORE_BATCH_CONSTRAINTS(CORE__BC_BIT)
#undef CORE__BC_BIT
        CORE_BC__COUNT
};
enum core_batch_constraint {
#define CORE__BC_FLAG(name) CORE_BC_##name = 1u << CORE_BCB_##name,
    CORE_BATCH_CONSTRAINTS(CORE__BC_FLAG)
#undef CORE__BC_FLAG
};
/* Name of batch constraint bit i, e.g. "CAPPED_AT_FIXED_SHARDS"; "?" else. */
const char *core_batch_constraint_name(int bit);

#define CORE_BATCH_WARNINGS 4

/* One batch decision. */
struct core_batch_decision {
    int64_t at;
    int action; /* enum core_action */
    bool execute;
    int reason; /* enum core_reason */
    char message[320];
    int current, raw, target, min, max;
    int running;          /* the workers counted as working; -1: not known */
    unsigned constraints; /* CORE_BC_* bits */
    /* Warning events of the decision (ProgressWentBack), the first CORE_BATCH_WARNINGS */
    int n_warnings;
    struct {
        char reason[32];
        char message[256];
    } warnings[4];
    /* evaluated figures, NaN when undefined */
    double remaining_worker_seconds; /* W */
    double worker_seconds_spent;     /* measured since the run started */
    double eta_s;                    /* W / target: the wall time left at the target */
    double eta_current_s;            /* W / current */
    double cap_workers;              /* what splittable parts and shards allow; NaN: none */
};

/*
 * The raw batch rule, for W remaining worker-seconds: ceil(sqrt(lambda * W / tau)), tau in
 * seconds (core/README.md, Batch: the rule). 0 for W <= 0; saturates at INT32_MAX.
 */
int core_batch_raw_workers(double w, double lambda, double tau_s);

/*
 * One batch decision for sample `in` taken at `at` by a job running since `running_since`
 * (`running`: its status is RUNNING), with state st (updated in place: the pool asked for,
 * each stage's accounts; core_batch_state_reset releases them) and options cfg; fills d. The
 * input must be valid (the parser's checks: done <= total, counts >= 0, stage ids distinct,
 * running <= requested).
 */
void core_batch_decide(struct core_batch_state *st, const struct core_batch_in *in, int64_t at,
                       int64_t running_since, bool running, const struct core_batch_config *cfg,
                       struct core_batch_decision *d);

/* --------------------------------------------------------------- rebalance -- */

/* Why an item cannot be split (the answer's `cause`). */
enum core_split_cause {
    CORE_SPLIT_OK,
    CORE_SPLIT_HOT_RECORD,          /* one record left: remaining_parallelism 1 */
    CORE_SPLIT_UNSPLITTABLE_SOURCE, /* the reader cannot split it (a gzip file, ...) */
    CORE_SPLIT_FIXED_SHARDS,        /* the output's shards are fixed */
    CORE_SPLIT_FUSED_STAGE,         /* fused with a stage that cannot be split */
};
const char *core_split_cause_name(enum core_split_cause c);

/* One worker's remaining item (the request's items[i]). */
struct core_rebalance_item {
    const char *id;
    double remaining;             /* work left, in the request's unit, >= 0 */
    double rate;                  /* this worker's rate on it, units/s; 0: stuck */
    double fraction_consumed;     /* of the item's whole range, [0, 1] */
    double remaining_parallelism; /* NaN: unbounded */
    enum core_split_cause cause;  /* declared: not OK means it cannot be split */
};

struct core_rebalance_in {
    int idle_slots;      /* slots that can take a piece */
    double startup_s;    /* before a piece starts on an idle slot */
    double min_piece;    /* no piece smaller than this */
    double nominal_rate; /* a piece's rate on a fresh slot */
    const struct core_rebalance_item *items;
    int n_items;
};

/* One split: item keeps fraction_of_remainder of its remainder and hands the rest out in
 * n_pieces equal pieces, one per idle slot. */
struct core_rebalance_split {
    int item; /* index in the request */
    double fraction_of_remainder;
    int n_pieces;
    double piece_size, piece_finish_s;
    double keep_finish_s;
};

/* An item that cannot be split and finishes after the time the others could reach. */
struct core_rebalance_block {
    int item;
    enum core_split_cause cause;
    double finish_s;  /* +inf: stuck (rate 0) */
    bool holds_stage; /* the item the stage's finish (makespan_after_s) is */
    double without_s; /* the stage's finish without this item */
};

struct core_rebalance_out {
    int reason; /* enum core_reason: STRAGGLERS, UNSPLITTABLE_WORK or BALANCED */
    char message[512];
    double makespan_before_s, makespan_after_s, target_finish_s;
    double free_finish_s; /* what the splittable items alone could reach */
    int holder;           /* the item whose finish makespan_after_s is; -1: no item */
    int slots_used;
    int n_splits;
    struct core_rebalance_split *splits; /* caller's storage, n_items long */
    int n_blocks;
    struct core_rebalance_block *blocks; /* caller's storage, n_items long */
};

/* The cause an item is given: its declared one, else HOT_RECORD when one part remains. */
enum core_split_cause core_rebalance_cause(const struct core_rebalance_item *it);

/*
 * The split points that let every item finish together at the earliest time the idle slots
 * allow (core/README.md, Rebalance). out->splits and out->blocks must each hold in->n_items
 * entries. The input must be valid (the parser's checks).
 */
void core_rebalance(const struct core_rebalance_in *in, struct core_rebalance_out *out);

#endif
