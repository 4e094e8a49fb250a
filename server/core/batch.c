/*
 * batch.c - the batch rule and the rebalancing advice (core/README.md, Batch and Rebalance).
 * Pure arithmetic: no I/O, no clock, no globals.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/core_int.h"

const char *core_batch_constraint_name(int bit)
{
    static const char *const n[] = {
#define CORE__BC_NAME(name) #name,
        CORE_BATCH_CONSTRAINTS(CORE__BC_NAME)
#undef CORE__BC_NAME
    };
    return bit >= 0 && bit < CORE_BC__COUNT ? n[bit] : "?";
}

void core_batch_state_init(struct core_batch_state *st)
{
    memset(st, 0, sizeof *st);
    st->running_since = INT64_MIN;
    st->last_at = INT64_MIN;
    st->last_change_at = INT64_MIN;
    st->requested_at = INT64_MIN;
}

void core_batch_state_reset(struct core_batch_state *st)
{
    for (int i = 0; i < st->n_stages; i++)
        free(st->stages[i].id);
    free(st->stages);
    core_batch_state_init(st);
}

/* ------------------------------------------------------------ the batch rule -- */

int core_batch_raw_workers(double w, double lambda, double tau_s)
{
    if (!(w > 0) || !(lambda > 0) || !(tau_s > 0))
        return 0;
    double q = lambda * w / tau_s;
    double c = ceil(sqrt(q));
    /* sqrt of a square that rounding pushed a hair above it still gives its root. */
    if (c > 1 && (c - 1) * (c - 1) >= q * (1 - 1e-12))
        c -= 1;
    return c >= (double)INT_MAX ? INT_MAX : (int)c;
}

/*
 * The position in st->stages of the accounts of stage id, created empty when new: found
 * through keys, the sorted index of st->stages' ids (log^2 n compares, whatever the number
 * of stages; core/index.h), to which a new one is added.
 */
static int stage_acc(struct core_batch_state *st, struct core_runs *keys, const char *id)
{
    const size_t stride = sizeof *st->stages, off = offsetof(struct core_batch_stage_acc, id);
    int i = core_runs_find(keys, st->stages, stride, off, id);
    if (i >= 0)
        return i;
    core__grow(&st->stages, &st->cap_stages, st->n_stages + 1, sizeof *st->stages);
    struct core_batch_stage_acc *a = &st->stages[st->n_stages];
    memset(a, 0, sizeof *a);
    a->id = core__strdup(id);
    a->busy_max = NAN;
    a->state = -1;
    core_runs_add(keys, st->stages, stride, off);
    return st->n_stages++;
}

/* A warning event of the decision (the first CORE_BATCH_WARNINGS are kept). */
__attribute__((format(printf, 3, 4))) static void warn(struct core_batch_decision *d,
                                                       const char *reason, const char *fmt, ...)
{
    if (d->n_warnings < CORE_BATCH_WARNINGS) {
        va_list ap;
        snprintf(d->warnings[d->n_warnings].reason, sizeof d->warnings[0].reason, "%s", reason);
        va_start(ap, fmt);
        vsnprintf(d->warnings[d->n_warnings].message, sizeof d->warnings[0].message, fmt, ap);
        va_end(ap);
    }
    d->n_warnings++;
}

/*
 * Charges the interval since the previous sample to the stages (core/README.md, Batch:
 * remaining work): each stage's progress is its most work done so far (a sample that reports
 * less gets a ProgressWentBack warning and adds nothing); when `measured`, the worker-seconds
 * of the running workers, less the busy time the stages that report it spent, are shared
 * evenly between the other stages that ran (RUNNING now, or progressed), each of which also
 * counts its progress as measured. An interval in which a stage started (RUNNING now, not at
 * the previous sample; not the run's first interval, which every stage starts with) is not
 * measured: how long the new stage ran in it is not known; nor one in which a stage's
 * progress went back: what was done in it is not known. `done` receives each sample stage's
 * work done as taken.
 */
static void charge(struct core_batch_state *st, const struct core_batch_in *in, double ws,
                   bool measured, bool first, struct core_batch_decision *d, double *done,
                   struct core_batch_stage_acc **acc)
{
    int sharing = 0;
    double busy = 0;
    /* Positions first, pointers once every new stage is added (adding may move the array). */
    struct core_runs keys = {0};
    int *at = core__xcalloc((size_t)in->n_stages + 1, sizeof *at);
    for (int i = 0; i < st->n_stages; i++)
        core_runs_add(&keys, st->stages, sizeof *st->stages,
                      offsetof(struct core_batch_stage_acc, id));
    for (int i = 0; i < in->n_stages; i++)
        at[i] = stage_acc(st, &keys, in->stages[i].id);
    core_runs_free(&keys);
    for (int i = 0; i < in->n_stages; i++)
        acc[i] = &st->stages[at[i]];
    free(at);
    for (int i = 0; i < in->n_stages; i++) {
        const struct core_batch_stage *s = &in->stages[i];
        struct core_batch_stage_acc *a = acc[i];
        if (!first && s->state == CORE_BATCH_RUNNING && a->state != CORE_BATCH_RUNNING)
            measured = false;
        if (s->done < a->done_max)
            measured = false;
    }
    for (int i = 0; i < in->n_stages; i++) {
        const struct core_batch_stage *s = &in->stages[i];
        struct core_batch_stage_acc *a = acc[i];
        done[i] = s->done;
        if (s->done < a->done_max) {
            warn(d, "ProgressWentBack",
                 "%s: work_done went back from %.17g to %.17g; taken as %.17g (progress that "
                 "goes back is no new work)",
                 s->id, a->done_max, s->done, a->done_max);
            done[i] = a->done_max;
        }
        if (!isnan(s->busy_s)) {
            double was = isnan(a->busy_max) ? 0 : a->busy_max;
            if (s->busy_s > was)
                busy += s->busy_s - was;
        } else if (s->state == CORE_BATCH_RUNNING || done[i] > a->done_max) {
            sharing++;
        }
    }
    double share = sharing ? (ws - busy > 0 ? ws - busy : 0) / sharing : 0;
    for (int i = 0; i < in->n_stages; i++) {
        const struct core_batch_stage *s = &in->stages[i];
        struct core_batch_stage_acc *a = acc[i];
        double inc = done[i] - a->done_max;
        if (isnan(s->busy_s) && measured && (s->state == CORE_BATCH_RUNNING || inc > 0)) {
            a->ws += share;
            a->done_m += inc;
        }
        a->done_max = done[i];
        a->state = (int)s->state;
        if (!isnan(s->busy_s) && (isnan(a->busy_max) || s->busy_s > a->busy_max))
            a->busy_max = s->busy_s;
    }
}

/* What the stages of a sample say (core/README.md, Batch: remaining work). */
struct work {
    double w;         /* remaining worker-seconds of the measured running stages */
    int n_running;    /* stages running */
    int n_unmeasured; /* running stages with work left and no cost measured yet */
    bool pending;     /* a stage has not started */
    bool finishing;   /* no stage pending and every running one nearly done */
    bool none_left;   /* no stage pending and no running one has work left */
    double cap_slots; /* parts the running stages can still use; INFINITY: no bound */
    unsigned cap_bits;
};

static void work_measure(const struct core_batch_in *in, const double *done,
                         struct core_batch_stage_acc *const *acc,
                         const struct core_batch_config *cfg, struct work *k)
{
    memset(k, 0, sizeof *k);
    k->cap_slots = 0;
    k->finishing = k->none_left = true;
    bool bounded = true;
    for (int i = 0; i < in->n_stages; i++) {
        const struct core_batch_stage *s = &in->stages[i];
        const struct core_batch_stage_acc *a = acc[i];
        if (s->state == CORE_BATCH_PENDING)
            k->pending = true;
        if (s->state != CORE_BATCH_RUNNING)
            continue;
        k->n_running++;
        double left = s->total - done[i];
        if (left > 0)
            k->none_left = false;
        if (s->total > 0 && left / s->total > cfg->finishing)
            k->finishing = false;
        /* Its own cost: what it reports it spent, else what it was charged, per unit done. */
        double spent = isnan(s->busy_s) ? a->ws : s->busy_s;
        double units = isnan(s->busy_s) ? a->done_m : done[i];
        if (left > 0 && units > 0 && spent > 0)
            k->w += left * (spent / units);
        else if (left > 0)
            k->n_unmeasured++;
        double parts = isnan(s->remaining_parallelism) ? INFINITY : s->remaining_parallelism;
        double shards = isnan(s->fixed_shards) ? INFINITY : s->fixed_shards;
        if (isinf(parts) && isinf(shards)) {
            bounded = false;
        } else {
            k->cap_slots += parts < shards ? parts : shards;
            k->cap_bits |= parts <= shards ? CORE_BC_CAPPED_AT_SPLITTABLE_PARTS
                                           : CORE_BC_CAPPED_AT_FIXED_SHARDS;
        }
    }
    if (k->pending || k->n_running == 0)
        k->finishing = false;
    if (k->pending)
        k->none_left = false;
    if (!bounded || k->n_running == 0) {
        k->cap_slots = INFINITY;
        k->cap_bits = 0;
    }
}

/* Holds the pool at its size: a decision that changes nothing, for the reason in bit. */
static void hold(struct core_batch_decision *d, unsigned bit)
{
    d->target = d->current;
    d->constraints |= bit;
}

/*
 * The pool the sample describes (core/README.md, Batch: the pool): *requested, the size asked
 * of the cluster (the decision's current), and *running, the workers working (-1: not known).
 * A sample with `current` alone after a scale-up this run decided less than worker-startup
 * ago, below that size, reports the workers running: the pool asked for is the decided one.
 */
static void pool_of(const struct core_batch_state *st, const struct core_batch_in *in, int64_t at,
                    const struct core_batch_config *cfg, int *requested, int *running)
{
    int cur = in->workers;
    *requested = in->has_requested ? in->requested : cur;
    *running = in->has_running ? in->running : -1;
    if (in->has_requested)
        return;
    bool asked = st->target > 0 && st->requested == st->target && st->target > st->requested_from &&
                 st->requested_at != INT64_MIN && at - st->requested_at < cfg->worker_startup_ms;
    if (asked && cur < st->target) {
        *requested = st->target;
        if (!in->has_running)
            *running = cur;
    } else if (!in->has_running && !(asked && cur == st->target)) {
        *running = cur; /* a settled pool: what is asked for runs */
    }
}

void core_batch_decide(struct core_batch_state *st, const struct core_batch_in *in, int64_t at,
                       int64_t running_since, bool running, const struct core_batch_config *cfg,
                       struct core_batch_decision *d)
{
    struct work k;
    memset(d, 0, sizeof *d);
    d->at = at;
    d->current = d->raw = d->target = d->running = in->workers;
    d->min = cfg->min_workers;
    d->max = cfg->max_workers;
    d->action = CORE_NO_CHANGE;
    d->remaining_worker_seconds = d->worker_seconds_spent = d->eta_s = d->eta_current_s = NAN;
    d->cap_workers = NAN;

    /* A new run (or the first sample): what was measured belongs to the old one. */
    if (st->running_since != running_since) {
        core_batch_state_reset(st);
        st->running_since = running_since;
        st->last_at = running_since;
    }
    if (!running) {
        d->reason = CORE_R_JOB_NOT_RUNNING;
        snprintf(d->message, sizeof d->message, "the job is not running");
        if (at > st->last_at)
            st->last_at = at;
        return;
    }
    int q, r;
    bool first = st->requested == 0; /* the run's first sample */
    pool_of(st, in, at, cfg, &q, &r);
    if (first) { /* the run's first pool was there from its start */
        st->requested = st->requested_from = q;
        st->requested_at = running_since;
    } else if (q != st->requested) {
        /* Another pool asked for than the one known: from the last settled one, now. */
        if (at - st->requested_at >= cfg->worker_startup_ms)
            st->requested_from = st->requested;
        st->requested = q;
        st->requested_at = at;
    }
    d->current = d->raw = d->target = q;
    d->running = r;
    /* Running workers not known while the pool asked for starts: nothing is measured. */
    bool measured = r >= 0 || !(q > st->requested_from && st->requested_at != INT64_MIN &&
                                at - st->requested_at < cfg->worker_startup_ms);

    /* The pool ran at its size since the previous point (the run's start first). */
    double ws = 0;
    if (at > st->last_at)
        ws = (double)(r >= 0 ? r : q) * (double)(at - st->last_at) / 1000.0;
    st->worker_s += ws;
    st->last_at = at;
    d->worker_seconds_spent = st->worker_s;

    double done_buf[16];
    struct core_batch_stage_acc *acc_buf[16];
    double *done =
        in->n_stages <= 16 ? done_buf : core__xcalloc((size_t)in->n_stages, sizeof *done);
    struct core_batch_stage_acc **acc =
        in->n_stages <= 16 ? acc_buf : core__xcalloc((size_t)in->n_stages, sizeof *acc);
    charge(st, in, ws, measured, first, d, done, acc);
    work_measure(in, done, acc, cfg, &k);
    if (done != done_buf)
        free(done);
    if (acc != acc_buf)
        free(acc);

    if (k.none_left && !k.pending) {
        /* Done: nothing to size a pool for; the job ends on its own. */
        d->reason = CORE_R_WITHIN_TARGET;
        snprintf(d->message, sizeof d->message,
                 "no work left: every stage has done all of its work; the pool of %d is kept "
                 "while the job finishes",
                 q);
        return;
    }
    if (k.n_running == 0 || (k.w <= 0 && k.n_unmeasured > 0)) {
        d->reason = CORE_R_COLLECTING_METRICS;
        snprintf(d->message, sizeof d->message, "%s",
                 k.n_running == 0 ? "no stage is running" : "no work done yet: no cost measured");
        return;
    }
    double tau_s = (double)cfg->worker_overhead_ms / 1000.0;
    int target = d->raw = core_batch_raw_workers(k.w, cfg->speed_weight, tau_s);
    d->remaining_worker_seconds = k.w;
    if (isfinite(k.cap_slots)) {
        int slots = in->slots_per_worker > 0 ? in->slots_per_worker : 1;
        double cap = ceil(k.cap_slots / slots);
        d->cap_workers = cap;
        if (target > cap) {
            target = (int)cap;
            d->constraints |= k.cap_bits;
        }
    }
    if (target < cfg->min_workers) {
        target = cfg->min_workers;
        d->constraints |= CORE_BC_CLAMPED_MIN_WORKERS;
    }
    if (target > cfg->max_workers) {
        target = cfg->max_workers;
        d->constraints |= CORE_BC_CLAMPED_MAX_WORKERS;
    }
    /* After the first decision of a run, a scale-up at most multiplies the pool. */
    if (st->target > 0 && target > d->current) {
        double most = floor((double)d->current * cfg->max_scale_up);
        if (most < d->current + 1)
            most = d->current + 1;
        if (target > most) {
            target = (int)most;
            d->constraints |= CORE_BC_CLAMPED_SCALE_UP;
        }
    }
    d->target = target;
    if (d->constraints & (CORE_BC_CLAMPED_MIN_WORKERS | CORE_BC_CLAMPED_MAX_WORKERS))
        d->reason = CORE_R_LIMIT_REACHED;
    else if (d->constraints & (CORE_BC_CAPPED_AT_SPLITTABLE_PARTS | CORE_BC_CAPPED_AT_FIXED_SHARDS))
        d->reason = CORE_R_UNSPLITTABLE_WORK;
    else if (target > d->current)
        d->reason = CORE_R_HIGH_BACKLOG;
    else if (target < d->current)
        d->reason = CORE_R_LOW_BACKLOG;
    else
        d->reason = CORE_R_WITHIN_TARGET;

    /* The dead band: a change this small is noise (min and max are not). */
    bool forced = d->constraints & (CORE_BC_CLAMPED_MIN_WORKERS | CORE_BC_CLAMPED_MAX_WORKERS);
    if (!forced && target != d->current &&
        fabs((double)target - d->current) <= cfg->dead_band * d->current) {
        hold(d, CORE_BC_WITHIN_DEAD_BAND);
        d->reason = CORE_R_WITHIN_TARGET;
    }
    /* Workers asked for and not running yet: nothing is decided before they could start. */
    bool starting = r >= 0 && r < q && st->requested_at != INT64_MIN &&
                    at - st->requested_at < cfg->worker_startup_ms;
    if (starting && d->target != d->current) {
        hold(d, CORE_BC_HELD_WORKERS_STARTING);
        st->down_count = 0;
    }
    if (!isnan(in->cpu) && in->cpu < cfg->idle_cpu && d->target > d->current)
        hold(d, CORE_BC_HELD_IDLE_CPU);
    if (d->target < d->current) {
        if (in->shuffle_on_workers) {
            hold(d, CORE_BC_HELD_SHUFFLE_ON_WORKERS);
            st->down_count = 0;
        } else if (k.finishing && !(d->constraints & (CORE_BC_CAPPED_AT_SPLITTABLE_PARTS |
                                                      CORE_BC_CAPPED_AT_FIXED_SHARDS))) {
            /* (workers beyond the parts that remain are idle for sure: those may go) */
            hold(d, CORE_BC_HELD_LAST_STAGE);
            st->down_count = 0;
        } else {
            /* Confirmed by decisions in a row; the least of the cuts they asked for. */
            st->down_target =
                st->down_count == 0 || d->target > st->down_target ? d->target : st->down_target;
            st->down_count++;
            if (st->down_count < cfg->scale_down_confirmations) {
                hold(d, CORE_BC_HELD_FOR_CONFIRMATION);
                d->reason = CORE_R_SCALE_DOWN_DELAYED;
            } else {
                d->target = st->down_target;
            }
        }
    } else if (!(d->constraints & CORE_BC_HELD_WORKERS_STARTING)) {
        st->down_count = 0;
    }
    if (d->target != d->current && st->last_change_at != INT64_MIN &&
        at - st->last_change_at < cfg->change_interval_ms)
        hold(d, CORE_BC_HELD_CHANGE_INTERVAL);

    st->target = d->target > 0 ? d->target : 1;
    if (d->target != d->current) {
        d->action = d->target > d->current ? CORE_SCALE_UP : CORE_SCALE_DOWN;
        d->execute = true;
        st->last_change_at = at;
        st->down_count = 0;
        /* The pool asked for from now on (what the client applies). */
        st->requested_from = q;
        st->requested = d->target;
        st->requested_at = at;
    }
    if (d->target > 0)
        d->eta_s = k.w / d->target;
    if (d->current > 0)
        d->eta_current_s = k.w / d->current;
    char held[160] = "";
    if (d->constraints & CORE_BC_HELD_WORKERS_STARTING) {
        char ago[32];
        core_format_duration(ago, sizeof ago, at - st->requested_at);
        snprintf(held, sizeof held, " (held: %d running of the %d worker%s asked for %s ago)", r, q,
                 core__plural(q), ago);
    } else if (d->target == d->current && d->raw != d->current) {
        snprintf(held, sizeof held, " (held)");
    }
    snprintf(d->message, sizeof d->message,
             "%.0f worker-seconds remain: ceil(sqrt(%g x %.0f / %g)) = %d worker%s%s; %d -> %d%s",
             k.w, cfg->speed_weight, k.w, tau_s, d->raw, core__plural(d->raw),
             k.n_unmeasured ? " (a running stage has no cost measured yet)" : "", d->current,
             d->target, held);
}

/* --------------------------------------------------------------- rebalance -- */

const char *core_split_cause_name(enum core_split_cause c)
{
    static const char *const n[] = {"SPLITTABLE", "HOT_RECORD", "UNSPLITTABLE_SOURCE",
                                    "FIXED_SHARDS", "FUSED_STAGE"};
    return (unsigned)c <= CORE_SPLIT_FUSED_STAGE ? n[c] : "?";
}

enum core_split_cause core_rebalance_cause(const struct core_rebalance_item *it)
{
    if (it->cause != CORE_SPLIT_OK)
        return it->cause;
    if (!isnan(it->remaining_parallelism) && it->remaining_parallelism <= 1)
        return CORE_SPLIT_HOT_RECORD;
    return CORE_SPLIT_OK;
}

/* When item it finishes on its own: remaining / rate; +inf when it is stuck (rate 0) with
 * work left, 0 when nothing is left. */
static double finish_of(const struct core_rebalance_item *it)
{
    if (!(it->remaining > 0))
        return 0;
    return it->rate > 0 ? it->remaining / it->rate : INFINITY;
}

/*
 * The pieces item `it` must hand out so that what it keeps finishes by t: 0 when it does
 * already, -1 when it cannot (unsplittable, no piece fits, too many parts). *moved: the work
 * handed out. A stuck item (rate 0) keeps nothing and hands out all of its remainder.
 */
static int pieces_at(const struct core_rebalance_in *in, const struct core_rebalance_item *it,
                     double t, double *moved)
{
    *moved = 0;
    if (finish_of(it) <= t)
        return 0;
    if (core_rebalance_cause(it) != CORE_SPLIT_OK)
        return -1;
    double room = (t - in->startup_s) * in->nominal_rate; /* one piece's most */
    if (!(room > 0))
        return -1;
    bool stuck = !(it->rate > 0);
    double mv = stuck ? it->remaining : it->remaining - t * it->rate;
    if (mv < in->min_piece)
        mv = in->min_piece;
    if (mv > it->remaining || (!stuck && mv >= it->remaining))
        return -1;
    double n = ceil(mv / room * (1 - 1e-12));
    if (n < 1)
        n = 1;
    if (in->min_piece > 0 && mv / n < in->min_piece)
        return -1;
    /* The pieces and what the item keeps (nothing, when stuck) are parts of its remainder. */
    if (!isnan(it->remaining_parallelism) && n + (stuck ? 0 : 1) > it->remaining_parallelism)
        return -1;
    if (n > in->idle_slots)
        return -1;
    *moved = mv;
    return (int)n;
}

/* Whether every item can finish by t with the idle slots; skip_blocked: leave the items that
 * cannot be split out (what the others alone could reach). */
static bool feasible(const struct core_rebalance_in *in, double t, bool skip_blocked)
{
    int64_t used = 0; /* each n <= idle_slots, and the sum stops once above it */
    if (isinf(t))
        return true;
    for (int i = 0; i < in->n_items; i++) {
        const struct core_rebalance_item *it = &in->items[i];
        double mv;
        if (skip_blocked && core_rebalance_cause(it) != CORE_SPLIT_OK)
            continue;
        int n = pieces_at(in, it, t, &mv);
        if (n < 0)
            return false;
        used += n;
        if (used > in->idle_slots)
            return false;
    }
    return true;
}

/* The earliest t in [lo, hi] that is feasible (hi is, +inf always). An infinite hi (a stuck
 * item) is first brought down to a finite feasible bound, doubling from lo, when there is
 * one. */
static double earliest(const struct core_rebalance_in *in, double lo, double hi, bool skip_blocked)
{
    if (feasible(in, lo, skip_blocked))
        return lo;
    if (isinf(hi)) {
        double b = lo > 1 ? lo * 2 : in->startup_s + 1;
        for (int k = 0; k < 1100 && !feasible(in, b, skip_blocked); k++)
            b *= 2;
        if (!feasible(in, b, skip_blocked))
            return INFINITY;
        hi = b;
    }
    for (int k = 0; k < 200 && hi - lo > 1e-9 * (hi > 1 ? hi : 1); k++) {
        double mid = lo + (hi - lo) / 2;
        if (feasible(in, mid, skip_blocked))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* "400.0 s", or "never" for an item that does not move. */
static const char *fmt_s(char *buf, size_t n, double s)
{
    if (isinf(s))
        snprintf(buf, n, "never");
    else
        snprintf(buf, n, "%.1f s", s);
    return buf;
}

void core_rebalance(const struct core_rebalance_in *in, struct core_rebalance_out *out)
{
    double before = 0, blocked = 0, free_hi = 0;
    int slowest = -1;
    out->n_splits = out->n_blocks = out->slots_used = 0;
    out->holder = -1;
    for (int i = 0; i < in->n_items; i++) {
        const struct core_rebalance_item *it = &in->items[i];
        double f = finish_of(it);
        if (f > before || slowest < 0) {
            before = f;
            slowest = i;
        }
        if (core_rebalance_cause(it) != CORE_SPLIT_OK) {
            if (f > blocked)
                blocked = f;
        } else if (f > free_hi) {
            free_hi = f;
        }
    }
    out->makespan_before_s = before;
    out->free_finish_s = earliest(in, 0, free_hi, true);
    double t = out->target_finish_s = earliest(in, blocked, before, false);
    /* Each item's finish after the advice: the latest is who holds the stage. */
    double after = 0;
    for (int i = 0; i < in->n_items; i++) {
        const struct core_rebalance_item *it = &in->items[i];
        double mv, f = finish_of(it);
        int n = pieces_at(in, it, t, &mv);
        if (n > 0) {
            struct core_rebalance_split *s = &out->splits[out->n_splits++];
            s->item = i;
            s->fraction_of_remainder = (it->remaining - mv) / it->remaining;
            s->n_pieces = n;
            s->piece_size = mv / n;
            s->piece_finish_s = in->startup_s + s->piece_size / in->nominal_rate;
            s->keep_finish_s = it->remaining - mv > 0 ? (it->remaining - mv) / it->rate : 0;
            out->slots_used += n;
            f = s->keep_finish_s > s->piece_finish_s ? s->keep_finish_s : s->piece_finish_s;
        }
        /* On a tie the item that cannot be split holds the stage: it is what bounds it. */
        bool tie = out->holder >= 0 && f == after && core_rebalance_cause(it) != CORE_SPLIT_OK &&
                   core_rebalance_cause(&in->items[out->holder]) == CORE_SPLIT_OK;
        if (f > after || out->holder < 0 || tie) {
            after = f;
            out->holder = i;
        }
        if (core_rebalance_cause(it) != CORE_SPLIT_OK &&
            finish_of(it) > out->free_finish_s * (1 + 1e-9)) {
            struct core_rebalance_block *b = &out->blocks[out->n_blocks++];
            b->item = i;
            b->cause = core_rebalance_cause(it);
            b->finish_s = finish_of(it);
        }
    }
    out->makespan_after_s = after;
    /* Without the item that holds the stage, it could end when the splittable work, split
     * anew, and the other items that cannot be split do; without another, it ends as now. */
    for (int k = 0; k < out->n_blocks; k++) {
        struct core_rebalance_block *b = &out->blocks[k];
        b->holds_stage = b->item == out->holder;
        b->without_s = after;
        if (!b->holds_stage)
            continue;
        b->without_s = out->free_finish_s;
        for (int j = 0; j < out->n_blocks; j++)
            if (j != k && out->blocks[j].finish_s > b->without_s)
                b->without_s = out->blocks[j].finish_s;
    }
    out->reason = out->n_splits   ? CORE_R_STRAGGLERS
                  : out->n_blocks ? CORE_R_UNSPLITTABLE_WORK
                                  : CORE_R_BALANCED;
    char a[32], bf[32], h[32];
    const struct core_rebalance_item *hold = out->holder >= 0 ? &in->items[out->holder] : NULL;
    const char *stuck_note = "";
    if (slowest >= 0 && isinf(before))
        stuck_note = " (a worker is stuck: its rate is 0)";
    if (out->n_splits) {
        snprintf(out->message, sizeof out->message,
                 "split %d straggler%s onto %d idle slot%s: the stage finishes at %s instead of "
                 "%s%s, when %s does",
                 out->n_splits, out->n_splits == 1 ? "" : "s", out->slots_used,
                 out->slots_used == 1 ? "" : "s", fmt_s(a, sizeof a, after),
                 fmt_s(bf, sizeof bf, before), stuck_note, hold ? hold->id : "?");
    } else if (hold && core_rebalance_cause(hold) != CORE_SPLIT_OK && isinf(after)) {
        snprintf(out->message, sizeof out->message,
                 "no split brings the finish forward: %s, which cannot be split (%s), is stuck "
                 "(rate 0): the stage cannot finish until it moves",
                 hold->id, core_split_cause_name(core_rebalance_cause(hold)));
    } else if (hold && core_rebalance_cause(hold) != CORE_SPLIT_OK) {
        snprintf(out->message, sizeof out->message,
                 "no split brings the finish forward: %s, which cannot be split (%s), holds the "
                 "stage until %s",
                 hold->id, core_split_cause_name(core_rebalance_cause(hold)),
                 fmt_s(h, sizeof h, after));
    } else if (hold && isinf(after)) {
        snprintf(out->message, sizeof out->message,
                 "no split brings the finish forward: %s is stuck (rate 0) and %s: the stage "
                 "cannot finish until it moves",
                 hold->id,
                 in->idle_slots == 0 ? "there is no idle slot to take its work"
                                     : "its work cannot be split over the idle slots");
    } else if (hold && after > 0) {
        snprintf(out->message, sizeof out->message,
                 "no split brings the finish forward: %s holds the stage until %s%s", hold->id,
                 fmt_s(h, sizeof h, after), in->idle_slots == 0 ? " (no idle slot)" : "");
    } else {
        snprintf(out->message, sizeof out->message, "no work is left");
    }
}

void core_decide_batch(struct core_state *st, const struct core_sample *sm,
                       const struct core_config *cfg, struct core_batch_decision *d)
{
    core_batch_decide(&st->batch, &sm->batch, sm->at, sm->running_since, sm->running, &cfg->batch,
                      d);
    if (sm->at > st->last_at)
        st->last_at = sm->at;
}
