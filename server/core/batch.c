/*
 * batch.c - the batch rule and the rebalancing advice (core/README.md, Batch and Rebalance).
 * Pure arithmetic: no I/O, no clock, no globals.
 */
#include <limits.h>
#include <math.h>
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

/* What the stages of a sample say (core/README.md, Batch: remaining work). */
struct work {
    double w;         /* remaining worker-seconds of the measured running stages */
    int n_running;    /* stages running */
    int n_unmeasured; /* running stages with work left and no cost measured yet */
    bool pending;     /* a stage has not started */
    bool finishing;   /* no stage pending and every running one nearly done */
    double cap_slots; /* parts the running stages can still use; INFINITY: no bound */
    unsigned cap_bits;
};

static void work_measure(const struct core_batch_in *in, double worker_s,
                         const struct core_batch_config *cfg, struct work *k)
{
    int unknown_busy = 0;
    double shared = worker_s;
    memset(k, 0, sizeof *k);
    k->cap_slots = 0;
    k->finishing = true;
    for (int i = 0; i < in->n_stages; i++) {
        const struct core_batch_stage *s = &in->stages[i];
        if (s->state == CORE_BATCH_RUNNING && isnan(s->busy_s))
            unknown_busy++;
        else if (!isnan(s->busy_s))
            shared -= s->busy_s;
    }
    if (shared < 0)
        shared = 0;
    bool bounded = true;
    for (int i = 0; i < in->n_stages; i++) {
        const struct core_batch_stage *s = &in->stages[i];
        if (s->state == CORE_BATCH_PENDING)
            k->pending = true;
        if (s->state != CORE_BATCH_RUNNING)
            continue;
        k->n_running++;
        double left = s->total - s->done;
        if (s->total > 0 && left / s->total > cfg->finishing)
            k->finishing = false;
        double spent = isnan(s->busy_s) ? shared / unknown_busy : s->busy_s;
        if (left > 0 && s->done > 0 && spent > 0)
            k->w += left * (spent / s->done);
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

void core_batch_decide(struct core_batch_state *st, const struct core_batch_in *in, int64_t at,
                       int64_t running_since, bool running, const struct core_batch_config *cfg,
                       struct core_batch_decision *d)
{
    struct work k;
    memset(d, 0, sizeof *d);
    d->at = at;
    d->current = d->raw = d->target = in->workers;
    d->min = cfg->min_workers;
    d->max = cfg->max_workers;
    d->action = CORE_NO_CHANGE;
    d->remaining_worker_seconds = d->worker_seconds_spent = d->eta_s = d->eta_current_s = NAN;
    d->cap_workers = NAN;

    /* A new run (or the first sample): what was measured belongs to the old one. */
    if (st->running_since != running_since) {
        core_batch_state_init(st);
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
    /* The pool ran at its current size since the previous point (the run's start first). */
    if (at > st->last_at)
        st->worker_s += (double)in->workers * (double)(at - st->last_at) / 1000.0;
    st->last_at = at;
    d->worker_seconds_spent = st->worker_s;

    work_measure(in, st->worker_s, cfg, &k);
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
    } else {
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
    }
    if (d->target > 0)
        d->eta_s = k.w / d->target;
    if (d->current > 0)
        d->eta_current_s = k.w / d->current;
    snprintf(d->message, sizeof d->message,
             "%.0f worker-seconds remain: ceil(sqrt(%g x %.0f / %g)) = %d workers%s; %d -> %d%s",
             k.w, cfg->speed_weight, k.w, tau_s, d->raw,
             k.n_unmeasured ? " (a running stage has no cost measured yet)" : "", d->current,
             d->target, d->target == d->current && d->raw != d->current ? " (held)" : "");
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

/*
 * The pieces item `it` must hand out so that what it keeps finishes by t: 0 when it does
 * already, -1 when it cannot (unsplittable, no piece fits, too many parts). *moved: the work
 * handed out.
 */
static int pieces_at(const struct core_rebalance_in *in, const struct core_rebalance_item *it,
                     double t, double *moved)
{
    *moved = 0;
    if (it->remaining / it->rate <= t)
        return 0;
    if (core_rebalance_cause(it) != CORE_SPLIT_OK)
        return -1;
    double room = (t - in->startup_s) * in->nominal_rate; /* one piece's most */
    if (!(room > 0))
        return -1;
    double mv = it->remaining - t * it->rate;
    if (mv < in->min_piece)
        mv = in->min_piece;
    if (mv >= it->remaining)
        return -1;
    double n = ceil(mv / room * (1 - 1e-12));
    if (n < 1)
        n = 1;
    if (in->min_piece > 0 && mv / n < in->min_piece)
        return -1;
    if (!isnan(it->remaining_parallelism) && n + 1 > it->remaining_parallelism)
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

/* The earliest t in [lo, hi] that is feasible (hi is). */
static double earliest(const struct core_rebalance_in *in, double lo, double hi, bool skip_blocked)
{
    if (feasible(in, lo, skip_blocked))
        return lo;
    for (int k = 0; k < 200 && hi - lo > 1e-9 * (hi > 1 ? hi : 1); k++) {
        double mid = lo + (hi - lo) / 2;
        if (feasible(in, mid, skip_blocked))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

void core_rebalance(const struct core_rebalance_in *in, struct core_rebalance_out *out)
{
    double before = 0, blocked = 0, free_hi = 0;
    out->n_splits = out->n_blocks = out->slots_used = 0;
    for (int i = 0; i < in->n_items; i++) {
        const struct core_rebalance_item *it = &in->items[i];
        double f = it->remaining / it->rate;
        if (f > before)
            before = f;
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
    double after = 0;
    for (int i = 0; i < in->n_items; i++) {
        const struct core_rebalance_item *it = &in->items[i];
        double mv, f = it->remaining / it->rate;
        int n = pieces_at(in, it, t, &mv);
        if (n > 0) {
            struct core_rebalance_split *s = &out->splits[out->n_splits++];
            s->item = i;
            s->fraction_of_remainder = (it->remaining - mv) / it->remaining;
            s->n_pieces = n;
            s->piece_size = mv / n;
            s->piece_finish_s = in->startup_s + s->piece_size / in->nominal_rate;
            s->keep_finish_s = (it->remaining - mv) / it->rate;
            out->slots_used += n;
            f = s->keep_finish_s > s->piece_finish_s ? s->keep_finish_s : s->piece_finish_s;
        }
        if (f > after)
            after = f;
        if (core_rebalance_cause(it) != CORE_SPLIT_OK &&
            it->remaining / it->rate > out->free_finish_s * (1 + 1e-9)) {
            struct core_rebalance_block *b = &out->blocks[out->n_blocks++];
            b->item = i;
            b->cause = core_rebalance_cause(it);
            b->finish_s = it->remaining / it->rate;
        }
    }
    out->makespan_after_s = after;
    out->reason = out->n_splits   ? CORE_R_STRAGGLERS
                  : out->n_blocks ? CORE_R_UNSPLITTABLE_WORK
                                  : CORE_R_BALANCED;
    if (out->n_splits)
        snprintf(out->message, sizeof out->message,
                 "split %d straggler%s onto %d idle slot%s: the stage finishes at %.1f s instead "
                 "of %.1f s",
                 out->n_splits, out->n_splits == 1 ? "" : "s", out->slots_used,
                 out->slots_used == 1 ? "" : "s", after, before);
    else
        snprintf(out->message, sizeof out->message, "no split brings the finish (%.1f s) forward%s",
                 before, out->n_blocks ? ": an item that cannot be split holds the stage" : "");
}

void core_decide_batch(struct core_state *st, const struct core_sample *sm,
                       const struct core_config *cfg, struct core_batch_decision *d)
{
    core_batch_decide(&st->batch, &sm->batch, sm->at, sm->running_since, sm->running, &cfg->batch,
                      d);
    if (sm->at > st->last_at)
        st->last_at = sm->at;
}
