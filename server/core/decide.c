/*
 * decide.c - one scaling cycle (core/README.md, Cycle): validate the topology, collect the
 * sample into the window, evaluate, compute each vertex's target, gate it, tune memory and
 * check quotas, run the executors, and record what was executed. Every outcome carries a
 * reason code (core/README.md, Cycle: Reasons), for the job and for each vertex.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"
#include "core/cycle.h"

static struct core_vdecision *vdec(struct cycle *c, int i)
{
    return &c->d->vertices[c->vd[i]];
}

/* Fills d->vertices in topological order with "no change" entries. */
static void init_vertices(struct cycle *c)
{
    struct core_decision *d = c->d;
    int n = c->sm->n_vertices;
    d->n_vertices = n;
    d->vertices = core__alloc(d, (size_t)n * sizeof *d->vertices);
    c->vd = core__alloc(d, (size_t)n * sizeof *c->vd);
    c->new_p = core__alloc(d, (size_t)n * sizeof *c->new_p);
    c->in_summary = core__alloc(d, (size_t)n * sizeof *c->in_summary);
    c->unscaled = core__alloc(d, (size_t)n * sizeof *c->unscaled);
    c->down_to = core__alloc(d, (size_t)n * sizeof *c->down_to);
    c->sized_note = core__alloc(d, (size_t)n * sizeof *c->sized_note);
    c->hist_of = core__alloc(d, (size_t)n * sizeof *c->hist_of);
    c->delayed_of = core__alloc(d, (size_t)n * sizeof *c->delayed_of);
    c->ev = core__alloc(d, (size_t)n * sizeof *c->ev);
    c->var = core__alloc(d, (size_t)n * sizeof *c->var);
    for (int k = 0; k < n; k++) {
        int i = c->t.order[k];
        const struct core_vertex_in *v = &c->sm->vertices[i];
        struct core_vdecision *o = &d->vertices[k];
        c->vd[i] = k;
        o->id = v->id;
        o->current = o->raw_target = o->target = v->parallelism;
        o->reason = CORE_R_WITHIN_TARGET;
        core_evaluated_clear(&o->ev);
        o->ev.parallelism = v->parallelism;
        o->ev.max_parallelism = v->max_parallelism;
        o->ev.num_source_partitions = v->partitions;
        c->new_p[i] = v->parallelism;
    }
}

/* Sets every vertex's reason (and the job's) to r, for outcomes decided for the whole job. */
static void all_reasons(struct cycle *c, enum core_reason r)
{
    for (int k = 0; k < c->d->n_vertices; k++)
        c->d->vertices[k].reason = r;
    c->d->reason = r;
}

/* The "p -> P'" entries of a ScalingReport (format: core/README.md, Cycle step 14). */
static char *report_entries(struct cycle *c)
{
    struct core_decision *d = c->d;
    size_t cap = 64 + (size_t)d->n_vertices * 200;
    char *buf = core__alloc(d, cap);
    size_t off = 0;
    for (int k = 0; k < d->n_vertices; k++) {
        const struct core_vdecision *v = &d->vertices[k];
        if (v->target == v->current)
            continue;
        int w = snprintf(buf + off, cap - off,
                         "{ Vertex ID %s | Parallelism %d -> %d | Processing capacity %.2f -> "
                         "%.2f | Target data rate %.2f}",
                         v->id, v->current, v->target, v->ev.true_processing_rate,
                         v->ev.expected_processing_rate, v->ev.target_data_rate);
        if (w < 0 || (size_t)w >= cap - off)
            break;
        off += (size_t)w;
    }
    return buf;
}

/* FNV-1a over the "id:p->P'" map: the dedupe key of a recommendation-only report, so the
 * same recommendation is not repeated within the event interval (core/README.md, Events). */
static char *map_key(struct cycle *c)
{
    uint64_t hsh = 1469598103934665603ULL;
    for (int k = 0; k < c->d->n_vertices; k++) {
        const struct core_vdecision *v = &c->d->vertices[k];
        char b[200];
        int n = snprintf(b, sizeof b, "%s:%d->%d;", v->id, v->current, v->target);
        for (int j = 0; j < n && j < (int)sizeof b; j++) {
            hsh ^= (unsigned char)b[j];
            hsh *= 1099511628211ULL;
        }
    }
    return core__asprintf(c->d, "ScalingReport:%016llx", (unsigned long long)hsh);
}

/* Reverts every vertex to its current parallelism (a discarded or blocked summary). */
static void revert_targets(struct cycle *c)
{
    for (int k = 0; k < c->d->n_vertices; k++) {
        struct core_vdecision *v = &c->d->vertices[k];
        v->target = v->current;
    }
    for (int i = 0; i < c->sm->n_vertices; i++) {
        c->new_p[i] = c->sm->vertices[i].parallelism;
        c->in_summary[i] = false;
    }
}

/* c->hist_of and c->delayed_of from the state as it is now: n log n. Again after the history
 * is trimmed (positions move). */
static void map_state(struct cycle *c)
{
    const struct core_state *st = c->st;
    for (int i = 0; i < c->sm->n_vertices; i++)
        c->hist_of[i] = c->delayed_of[i] = -1;
    for (int h = 0; h < st->n_hist; h++) {
        int i = core__topo_find(&c->t, st->hist[h].id);
        if (i >= 0 && c->hist_of[i] < 0)
            c->hist_of[i] = h;
    }
    for (int k = 0; k < st->n_delayed; k++) {
        int i = core__topo_find(&c->t, st->delayed[k].id);
        if (i >= 0 && c->delayed_of[i] < 0)
            c->delayed_of[i] = k;
    }
}

/* Clears sample vertex i's delayed scale-down, keeping c->delayed_of right for the entry that
 * moves into its slot. */
static void delayed_clear(struct cycle *c, int i)
{
    int pos = c->delayed_of[i];
    if (pos < 0)
        return;
    c->delayed_of[i] = -1;
    if (core__delayed_clear_at(c->st, pos) >= 0) {
        int j = core__topo_find(&c->t, c->st->delayed[pos].id);
        if (j >= 0)
            c->delayed_of[j] = pos;
    }
}

/* Is vertex i excluded from scaling this cycle (core/README.md, Cycle step 8)? */
static bool excluded(struct cycle *c, int i, const char **why)
{
    const struct core_vertex_in *v = &c->sm->vertices[i];
    if (core_index_find(&c->excl, v->id) >= 0) {
        *why = "listed in job.autoscaler.vertex.exclude.ids";
        return true;
    }
    if (v->finished) {
        *why = "finished";
        return true;
    }
    int wi = core__topo_wi(&c->t, &c->st->w, c->sm, i);
    double load = core__w_latest(&c->st->w, wi, offsetof(struct core_vmetrics, load));
    if (isnan(load)) {
        *why = "reports no busy time";
        return true;
    }
    return false;
}

/* Scale-up reason: draining a backlog, or capacity below the target. */
static enum core_reason up_reason(struct cycle *c, const struct core_evaluated *e)
{
    if (c->backlog)
        return CORE_R_HIGH_BACKLOG;
    if (e->catch_up_data_rate > 0.0) {
        /* Would the vertex keep up without the backlog? Then the backlog is the reason. */
        double util = c->cfg->util_target > 0 ? c->cfg->util_target : 1.0;
        double no_lag = e->target_data_rate / util;
        if (e->true_processing_rate >= no_lag)
            return CORE_R_HIGH_BACKLOG;
    }
    return CORE_R_HIGH_UTILIZATION;
}

/*
 * governor.skew.limit-flow (core/README.md, Skew): the share of what arrives that the job can
 * pass, per sample vertex (1 = all), when a hot key holds a vertex below what it must process
 * (what arrives plus the catch-up rate) even at the parallelism the skew cap lets it reach.
 * Its sources then read no faster than it takes, so every vertex fed by one of them carries
 * that share at most: flow[v] = the least such share; the key-limited vertices keep 1 (their
 * own sizing is the skew cap's). *limiter[v] names the vertex that sets it: of the keys with
 * the least share, the first in topological order.
 *
 * Linear in vertices and edges: the least (share, key) each source feeds is carried up from
 * the keys against the edges (reverse topological order), then down from the sources along
 * them (topological order), instead of a sources-by-vertices table.
 */
struct limit {
    double share; /* 1: none */
    int rank;     /* the key's topological position (ties: the first) */
};

static bool limit_less(struct limit a, struct limit b)
{
    return a.share < b.share || (a.share == b.share && a.rank < b.rank);
}

static double *limited_flow(struct cycle *c, const char **limiter)
{
    int n = c->sm->n_vertices;
    const struct core_topo *t = &c->t;
    const struct core_config *cfg = c->cfg;
    size_t nn = (size_t)(n ? n : 1);
    double *flow = core__alloc(c->d, nn * sizeof *flow);
    bool *limited = core__alloc(c->d, nn * sizeof *limited);
    struct limit *down = core__alloc(c->d, nn * sizeof *down);
    struct limit *up = core__alloc(c->d, nn * sizeof *up);
    const char **what_of = core__alloc(c->d, nn * sizeof *what_of); /* the limit's phrase */
    const struct limit none = {1.0, n};
    for (int v = 0; v < n; v++)
        down[v] = up[v] = none;
    for (int k = 0; k < n; k++) {
        const char *why = NULL;
        int key = t->order[k], p = c->sm->vertices[key].parallelism;
        if (excluded(c, key, &why))
            continue;
        struct core_evaluated e = vdec(c, key)->ev;
        double can = NAN;
        int wi = core__topo_wi(t, &c->st->w, c->sm, key);
        int stop = t->hash_input[key] && p >= 2 && cfg->skew_enabled
                       ? core__skew_limit(cfg, &c->st->w, wi, p, &e)
                       : 0;
        const char *what = "the hot key of %s";
        if (stop > 0)
            can = core__skew_capacity(cfg, &e, stop > p || cfg->scalability_curve ? stop : p);
        struct core_curve cv;
        const struct core_vhistory *kh =
            c->hist_of[key] >= 0 ? &c->st->hist[c->hist_of[key]] : NULL;
        if (stop <= 0 && core__curve_limited(cfg, kh, p, e.true_processing_rate, &cv)) {
            can = core__curve_rate(&cv, cv.stop);
            what = "the external limit of %s";
        }
        /* A vertex at the most subtasks its limits allow passes what it processes there. */
        const struct core_vertex_in *kv = &c->sm->vertices[key];
        int most = kv->max_parallelism < cfg->vertex_max_parallelism ? kv->max_parallelism
                                                                     : cfg->vertex_max_parallelism;
        if (t->is_source[key] && kv->partitions > 0 && kv->partitions < most)
            most = kv->partitions;
        if (isnan(can) && cfg->scalability_curve && p >= most) {
            can = e.true_processing_rate;
            what = "%s at the most subtasks its limits allow";
        }
        if (isnan(can))
            continue;
        double need = e.target_data_rate + e.catch_up_data_rate;
        if (!(can < need) || !(can > 0))
            continue;
        limited[key] = true;
        down[key] = (struct limit){can / need, k};
        what_of[key] = what;
    }
    /* down[u]: the least limit at or downstream of u. */
    for (int k = n - 1; k >= 0; k--) {
        int v = t->order[k];
        for (int e = t->in_start[v]; e < t->in_start[v + 1]; e++)
            if (limit_less(down[v], down[t->in_src[e]]))
                down[t->in_src[e]] = down[v];
    }
    /* up[v]: the least limit downstream of a source that feeds v. */
    for (int k = 0; k < n; k++) {
        int v = t->order[k];
        if (t->is_source[v])
            up[v] = down[v];
        for (int e = t->in_start[v]; e < t->in_start[v + 1]; e++)
            if (limit_less(up[t->in_src[e]], up[v]))
                up[v] = up[t->in_src[e]];
    }
    for (int v = 0; v < n; v++) {
        flow[v] = 1.0;
        if (up[v].share < 1.0) {
            flow[v] = up[v].share;
            int key = t->order[up[v].rank];
            limiter[v] = core__asprintf(c->d, what_of[key], c->sm->vertices[key].id);
        }
        if (limited[v])
            flow[v] = 1.0;
    }
    return flow;
}

/*
 * governor.source.stall (core/README.md, Cycle step 8): the stalled source feeding sample
 * vertex v, per vertex (NULL: none; of several, the first in the sample). While a source
 * reads nothing and its backlog grows, the vertices it feeds are idle because nothing is
 * read, not because the load is gone, and the backlog waits for the source, not for
 * capacity: they are held. Carried along the edges in topological order: linear.
 */
static const char **stalled_sources(struct cycle *c)
{
    int n = c->sm->n_vertices;
    const struct core_topo *t = &c->t;
    size_t nn = (size_t)(n ? n : 1);
    const char **stall = core__alloc(c->d, nn * sizeof *stall);
    int *first = core__alloc(c->d, nn * sizeof *first); /* sample index, n: none */
    for (int k = 0; k < n; k++) {
        int v = t->order[k];
        first[v] = n;
        if (t->is_source[v] &&
            core__source_stalled(&c->st->w, core__topo_wi(t, &c->st->w, c->sm, v),
                                 &c->sm->vertices[v]))
            first[v] = v;
        for (int e = t->in_start[v]; e < t->in_start[v + 1]; e++)
            if (first[t->in_src[e]] < first[v])
                first[v] = first[t->in_src[e]];
        if (first[v] < n)
            stall[v] = c->sm->vertices[first[v]].id;
    }
    return stall;
}

/* Targets (core/README.md, Scaling) and gates (Gating) of every non-excluded vertex; fills
 * targets and reasons. */
static void compute_targets(struct cycle *c)
{
    struct core_state *st = c->st;
    const struct core_config *cfg = c->cfg;
    int64_t restart_ms = core__restart_time(st, cfg);
    double *flow = NULL;
    const char **limiter = core__alloc(c->d, (size_t)c->sm->n_vertices * sizeof *limiter);
    if ((cfg->skew_enabled || cfg->scalability_curve) && cfg->skew_limit_flow)
        flow = limited_flow(c, limiter);
    const char **stall = cfg->source_stall ? stalled_sources(c) : NULL;
    for (int k = 0; k < c->sm->n_vertices; k++) {
        int i = c->t.order[k];
        const struct core_vertex_in *v = &c->sm->vertices[i];
        struct core_vdecision *o = vdec(c, i);
        struct core_evaluated *e = &o->ev;
        int p = v->parallelism;
        const char *why = NULL;
        o->outside_bounds = core__outside_bounds(e);
        if (excluded(c, i, &why)) {
            c->unscaled[i] = true;
            o->excluded = true;
            o->constraints |= CORE_C_EXCLUDED_VERTEX;
            o->message = core__asprintf(c->d, "%s: excluded from scaling (%s)", v->id, why);
            continue;
        }
        if (stall && stall[i]) {
            c->unscaled[i] = true;
            o->message = core__asprintf(c->d,
                                        "%s: held while %s reads nothing and its backlog grows "
                                        "(no parallelism makes it read)",
                                        v->id, stall[i]);
            continue;
        }
        struct core_scale_result r;
        struct core_vhistory *hist = c->hist_of[i] >= 0 ? &st->hist[c->hist_of[i]] : NULL;
        const struct core_evaluated *sized = e;
        struct core_evaluated capped;
        if (flow && flow[i] < 1.0) {
            /* Sized, and held to its bounds, for the flow the hot key lets through. */
            capped = *e;
            capped.target_data_rate = core__round3(e->target_data_rate * flow[i]);
            capped.catch_up_data_rate = core__round3(e->catch_up_data_rate * flow[i]);
            core__thresholds(&capped, cfg, c->backlog, restart_ms, c->var[i].rse,
                             !c->var[i].moving);
            o->outside_bounds = core__outside_bounds(&capped);
            sized = &capped;
            c->sized_note[i] = core__asprintf(c->d,
                                              "sized for the %.0f%% of what arrives that %s lets "
                                              "through",
                                              flow[i] * 100.0, limiter[i]);
        }
        core__scale_target(cfg, c->sm, &c->t, i, sized, hist, restart_ms, c->h, c->d, &c->pe, &r);
        /* governor.rates.trend: a scale-up on a rising load is sized for the rate expected
         * when the next decision can be made: after the restart, the stabilization and a full
         * window. */
        double ahead = NAN;
        if (r.computed && r.target > p && c->var[i].growth > 0) {
            struct core_evaluated later = *sized;
            double h_s = core__hold_time(cfg, (double)core__restart_tracked(st, cfg) / 1000.0,
                                         sized->target_data_rate, c->var[i].growth);
            later.target_data_rate = core__round3(sized->target_data_rate + c->var[i].growth * h_s);
            struct core_scale_result r2;
            core__scale_target(cfg, c->sm, &c->t, i, &later, hist, restart_ms, c->h, c->d, &c->pe,
                               &r2);
            if (r2.computed && r2.target > r.target) {
                r = r2;
                ahead = later.target_data_rate;
            }
        }
        o->raw_target = r.computed ? r.raw : p;
        o->constraints |= r.constraints;
        if (!r.computed) {
            c->unscaled[i] = true;
            o->message =
                core__asprintf(c->d, "%s: no true processing rate or target rate yet", v->id);
            continue;
        }
        int target = r.target;
        bool outside = o->outside_bounds;
        if (target > p && c->t.hash_input[i] && cfg->skew_enabled) {
            int wi = core__topo_wi(&c->t, &st->w, c->sm, i);
            int psat = core__skew_limit(cfg, &st->w, wi, p, e);
            double need = core__capacity_cfg(cfg, e, cfg->util_target, true, restart_ms);
            bool unservable = isfinite(e->key_rate_bound) && need > e->key_rate_bound;
            if (psat > 0 && (target > psat || unservable)) {
                char bound[32];
                core__fmt_rate(bound, sizeof bound, e->key_rate_bound);
                if (target > psat) {
                    /* governor.scalability.curve: past the knee, back to it. */
                    target = psat > p || cfg->scalability_curve ? psat : p;
                    o->constraints |= CORE_C_CAPPED_BY_KEY_SKEW;
                }
                /* governor.scalability.curve: a step to the knee that buys less than the
                 * saturation share is not worth a restart (the knee's estimate moves with
                 * the busy times it is read from). */
                if (cfg->scalability_curve && target > p &&
                    !(core__skew_capacity(cfg, e, target) >
                      core__skew_capacity(cfg, e, p) * (2.0 - core__knee_share(cfg))))
                    target = p;
                o->reason = CORE_R_KEY_PARALLELISM_LIMIT;
                o->message = core__asprintf(
                    c->d,
                    "%s: one key carries about %.0f%% of the input; no parallelism processes "
                    "more than %s (needs %.0f/s); past %d subtask%s more buy under %.0f%%; "
                    "salting the hot key over %.0f subtask%s would lift the limit",
                    v->id, e->hot_key_share * 100.0, bound, need, psat, core__plural(psat),
                    (1.0 - core__knee_share(cfg)) * 100.0, e->salting_fanout,
                    core__plural((long)e->salting_fanout));
            }
        }
        /* governor.scalability.curve (core/README.md, Curve): a vertex that needs more than
         * its measured curve reaches stops at the curve's knee, and is scaled back to it
         * after a scale-up that did not pay. */
        if (target > p && cfg->scalability_curve && o->reason != CORE_R_KEY_PARALLELISM_LIMIT) {
            struct core_curve cv;
            if (core__curve_limited(cfg, hist, p, e->true_processing_rate, &cv) &&
                cv.stop < target) {
                char most[40], now_r[40];
                core__fmt_rate(most, sizeof most, cv.x_max);
                core__fmt_rate(now_r, sizeof now_r, e->true_processing_rate);
                target = cv.stop;
                o->constraints |= CORE_C_CAPPED_AT_KNEE;
                o->reason = CORE_R_EXTERNAL_LIMIT;
                o->message = core__asprintf(
                    c->d,
                    "%s: EXTERNAL limit: what it processes does not grow with its subtasks as "
                    "it should (%d subtasks process %s; measured at %d parallelisms it reaches "
                    "at most about %s at any): more subtasks wait on something outside the job "
                    "(a sink's database, an API); %d reach %.0f%% of that",
                    v->id, p, now_r, cv.n, most, cv.stop, core__knee_share(cfg) * 100.0);
            }
        }
        if (target < p &&
            (o->reason == CORE_R_KEY_PARALLELISM_LIMIT || o->reason == CORE_R_EXTERNAL_LIMIT)) {
            /* Back to the knee after a scale-up that did not pay (or a hot key that emerged
             * above it): the subtasks past it buy nothing, so nothing waits. */
            delayed_clear(c, i);
            e->expected_processing_rate = core__round3(e->true_processing_rate);
            o->target = target;
            o->outside_bounds = outside;
            c->new_p[i] = target;
            c->in_summary[i] = true;
            continue;
        }
        if (target == p) {
            /* No change clears a pending scale-down (core/README.md, Gating). */
            delayed_clear(c, i);
            if (o->reason == CORE_R_KEY_PARALLELISM_LIMIT || o->reason == CORE_R_EXTERNAL_LIMIT)
                continue;
            if (r.raw != p && outside) {
                o->reason = CORE_R_LIMIT_REACHED;
                o->message = core__explain_limit(c->d, cfg, v, r.raw, o->constraints);
            } else {
                o->message = core__explain_steady(c->d, v->id, p, e);
            }
            continue;
        }
        e->expected_processing_rate = r.expected_rate;
        if (target > p) {
            delayed_clear(c, i);
            if (core__ineffective_blocked(cfg, hist, v->id, p, e->true_processing_rate, c->d)) {
                o->reason = CORE_R_INEFFECTIVE_SCALING;
                o->message = core__asprintf(
                    c->d, "%s: the last scale-up did not raise throughput as expected", v->id);
                continue;
            }
            if (o->reason != CORE_R_KEY_PARALLELISM_LIMIT && o->reason != CORE_R_EXTERNAL_LIMIT)
                o->reason = up_reason(c, e);
        } else if (r.raw >= p && (o->constraints & CORE_C_CAPPED_AT_PARTITIONS)) {
            /* A source running more subtasks than it has partitions, whose load asks for no
             * fewer: the cap drops only subtasks that read nothing. No capacity is lost, so
             * there is nothing to wait out, and the load is not low (core/README.md, Cycle
             * step 8). */
            delayed_clear(c, i);
            o->reason = CORE_R_LIMIT_REACHED;
            char tpr[40];
            core__fmt_rate(tpr, sizeof tpr, e->true_processing_rate);
            o->message = core__asprintf(
                c->d,
                "%s: %d -> %d: it needs %d subtask%s but reads %d partition%s, so only %d of "
                "its %d subtasks %s anything; at %d, about %s, as now",
                v->id, p, target, r.raw, core__plural(r.raw), v->partitions,
                core__plural(v->partitions), v->partitions, p,
                v->partitions == 1 ? "reads" : "read", target, tpr);
        } else {
            bool out2 = outside;
            /* governor.scale-down.early: the delay keeps the highest size that what arrives
             * asked for (a dip in arrivals must not shrink the job); a backlog being worked
             * off asks for more only for as long as it lasts, which this cycle's proposal
             * covers. So the list records the size without the catch-up, and at least this
             * cycle's proposal is applied. */
            int record = target;
            if (cfg->scale_down_early && e->catch_up_data_rate > 0) {
                struct core_evaluated steady = *sized;
                steady.catch_up_data_rate = 0.0;
                struct core_scale_result r2;
                core__scale_target(cfg, c->sm, &c->t, i, &steady, hist, restart_ms, c->h, c->d,
                                   &c->pe, &r2);
                if (r2.computed && r2.target < record)
                    record = r2.target;
            }
            c->down_to[i] = target;
            int applied = core__delayed_scale_down_at(st, cfg, &c->delayed_of[i], v->id, p, record,
                                                      outside, c->now, &out2);
            if (applied != p && applied < target)
                applied = target;
            if (applied == p) {
                o->reason = CORE_R_SCALE_DOWN_DELAYED;
                char until[32], iv[32];
                core__fmt_utc(until, sizeof until,
                              core__delayed_until_at(st, cfg, c->delayed_of[i]));
                core_format_duration(iv, sizeof iv, cfg->scale_down_interval_ms);
                o->message = core__asprintf(
                    c->d,
                    "%s: a scale-down to %d waits out job.autoscaler.scale-down.interval (%s) "
                    "until %s; the highest proposal by then is applied",
                    v->id, target, iv, until);
                continue;
            }
            target = applied;
            outside = out2;
            o->reason = CORE_R_LOW_UTILIZATION;
        }
        o->target = target;
        o->outside_bounds = outside;
        c->new_p[i] = target;
        c->in_summary[i] = true;
        if (!o->message)
            o->message = core__explain_move(c->d, cfg, v, o->reason, target, r.raw, o->constraints,
                                            sized, restart_ms);
        if (c->sized_note[i])
            o->message = core__asprintf(c->d, "%s; %s", o->message, c->sized_note[i]);
        if (!isnan(ahead) && target > p) {
            char rate[40];
            core__fmt_rate(rate, sizeof rate, ahead);
            o->message = core__asprintf(c->d,
                                        "%s; sized for the %s the rise measured over the "
                                        "window reaches when the next decision can be made",
                                        o->message, rate);
        }
    }
}

/*
 * governor.scale-down.with-restart: when a vertex outside its bounds is scaled (up, or down
 * after its delay), the job restarts anyway, so the scale-downs still waiting out their
 * delay ride along, each at this cycle's proposal. The delay is there to save restarts,
 * which is moot now; a proposal is already a mean over the metric window, and one made while
 * a backlog was being worked off (the highest the delay would take) sizes for a catch-up
 * that is over. A ride-along never counts as outside its bounds: alone it would not have
 * been executed.
 */
static void ride_along(struct cycle *c)
{
    bool restart = false;
    for (int i = 0; i < c->sm->n_vertices; i++)
        if (c->in_summary[i] && vdec(c, i)->outside_bounds)
            restart = true;
    if (!restart)
        return;
    for (int i = 0; i < c->sm->n_vertices; i++) {
        struct core_vdecision *o = vdec(c, i);
        if (o->reason != CORE_R_SCALE_DOWN_DELAYED)
            continue;
        int to = c->down_to[i];
        if (to < 1 || to >= o->current)
            continue;
        o->target = to;
        o->reason = CORE_R_LOW_UTILIZATION;
        o->outside_bounds = false;
        o->ev.expected_processing_rate =
            core__round3(o->ev.true_processing_rate / o->current * (double)to);
        o->message = core__asprintf(c->d,
                                    "%s: %d -> %d with the restart another vertex's scaling "
                                    "makes (its scale-down was waiting out its delay)",
                                    o->id, o->current, to);
        c->new_p[i] = to;
        c->in_summary[i] = true;
    }
}

/*
 * A scale-down waiting out its delay for a vertex inside its utilization bounds is no
 * SCALE_DOWN_DELAYED: nothing is due for it, and at the end of the delay it is made only along
 * with the scaling of a vertex outside its bounds (Cycle step 9). Its reason is WITHIN_TARGET,
 * and the message says what is recorded and when it could be made. Runs after ride_along,
 * which takes such scale-downs along with a restart.
 */
static void delayed_inside(struct cycle *c)
{
    char iv[32], until[32];
    core_format_duration(iv, sizeof iv, c->cfg->scale_down_interval_ms);
    for (int i = 0; i < c->sm->n_vertices; i++) {
        struct core_vdecision *o = vdec(c, i);
        if (o->reason != CORE_R_SCALE_DOWN_DELAYED || o->outside_bounds)
            continue;
        core__fmt_utc(until, sizeof until, core__delayed_until_at(c->st, c->cfg, c->delayed_of[i]));
        o->reason = CORE_R_WITHIN_TARGET;
        o->message =
            core__asprintf(c->d,
                           "%s; a scale-down to %d%s%s%s is recorded and waits out "
                           "job.autoscaler.scale-down.interval (%s) until %s: a "
                           "vertex inside its bounds is scaled only along with one "
                           "outside them",
                           core__explain_steady(c->d, o->id, o->current, &o->ev), c->down_to[i],
                           c->sized_note[i] ? " (" : "", c->sized_note[i] ? c->sized_note[i] : "",
                           c->sized_note[i] ? ")" : "", iv, until);
    }
}

/*
 * governor.scale-down.restart-cost (core/README.md, Gating): a summary of scale-downs alone
 * restarts the job for them only. It is kept when what they save, the subtasks they remove
 * times the time the lower load has lasted (since the latest of their first proposals: a load
 * is expected to hold about as long as it has), exceeds W times what the restart costs: every
 * subtask of the job after it, idle for the restart time R and the catch-up it leaves, which
 * the headroom 1 - utilization.target works off: R / (1 - target) in all. Otherwise the
 * scale-downs wait (SCALE_DOWN_DELAYED) and their proposals go on accumulating.
 */
/* A scale-down the restart cost weighs: a delayed one applied, or a vertex back to its knee. */
static bool down_for_cost(const struct core_vdecision *o)
{
    return o->target < o->current &&
           (o->reason == CORE_R_LOW_UTILIZATION || o->reason == CORE_R_KEY_PARALLELISM_LIMIT ||
            o->reason == CORE_R_EXTERNAL_LIMIT);
}

static void restart_cost(struct cycle *c)
{
    const struct core_config *cfg = c->cfg;
    int n = c->sm->n_vertices;
    double saved = 0, after = 0;
    int64_t since = INT64_MIN;
    bool any = false;
    for (int i = 0; i < n; i++) {
        const struct core_vdecision *o = vdec(c, i);
        if (!c->in_summary[i]) {
            after += c->sm->vertices[i].parallelism;
            continue;
        }
        after += o->target;
        if (o->target > o->current)
            return; /* a scale-up restarts the job anyway */
        if (!down_for_cost(o))
            continue;
        any = true;
        saved += o->current - o->target;
        /* Since when the lower size has been asked for: a scale-down's first proposal; for a
         * vertex back to its knee, since it runs at its parallelism. */
        int64_t first = c->delayed_of[i] >= 0 ? c->st->delayed[c->delayed_of[i]].first_trigger : -1;
        if (o->reason != CORE_R_LOW_UTILIZATION) {
            const struct core_vhistory *h = c->hist_of[i] >= 0 ? &c->st->hist[c->hist_of[i]] : NULL;
            first = h && h->n ? h->e[h->n - 1].at : c->st->w.started_at;
        }
        if (first > since)
            since = first;
    }
    if (!any || since == INT64_MIN)
        return;
    double u = cfg->util_target > 0 && cfg->util_target < 1 ? cfg->util_target : 0.7;
    double r_s = (double)core__restart_tracked(c->st, cfg) / 1000.0;
    double cost = cfg->restart_cost_w * after * r_s / (1.0 - u);
    double age = (double)(c->now - since) / 1000.0;
    if (saved * age >= cost)
        return;
    char tr[32];
    core_format_duration(tr, sizeof tr, (int64_t)llround(r_s) * 1000);
    for (int i = 0; i < n; i++) {
        struct core_vdecision *o = vdec(c, i);
        if (!c->in_summary[i] || !down_for_cost(o))
            continue;
        o->message = core__asprintf(
            c->d,
            "%s: a scale-down to %d waits: %.0f subtask%s fewer for the %.0f s the lower load "
            "has lasted saved %.0f subtask-seconds, less than governor.scale-down.restart-cost "
            "(%g) x %.0f subtasks x %s / (1 - %.2f) = %.0f that the restart costs",
            o->id, o->target, saved, core__plural((long)saved), age, saved * age,
            cfg->restart_cost_w, after, tr, u, cost);
        /* A vertex outside its bounds waits (SCALE_DOWN_DELAYED); one inside them, riding
         * along, has nothing due (WITHIN_TARGET). */
        if (o->reason == CORE_R_LOW_UTILIZATION)
            o->reason = o->outside_bounds ? CORE_R_SCALE_DOWN_DELAYED : CORE_R_WITHIN_TARGET;
        o->target = o->current;
        c->new_p[i] = o->current;
        c->in_summary[i] = false;
    }
}

/* The job's reason when nothing is executed: the most telling vertex reason. */
static enum core_reason idle_reason(struct cycle *c)
{
    static const enum core_reason order[] = {
        CORE_R_NOT_APPLIED,         CORE_R_KEY_PARALLELISM_LIMIT, CORE_R_EXTERNAL_LIMIT,
        CORE_R_INEFFECTIVE_SCALING, CORE_R_SCALE_DOWN_DELAYED,    CORE_R_LIMIT_REACHED};
    for (size_t j = 0; j < sizeof order / sizeof order[0]; j++)
        for (int k = 0; k < c->d->n_vertices; k++)
            if (c->d->vertices[k].reason == order[j])
                return order[j];
    return CORE_R_WITHIN_TARGET;
}

/* The job's reason for an executed (or recommended) scaling. */
static enum core_reason scale_reason(struct cycle *c)
{
    static const enum core_reason order[] = {CORE_R_HIGH_BACKLOG,          CORE_R_HIGH_UTILIZATION,
                                             CORE_R_KEY_PARALLELISM_LIMIT, CORE_R_EXTERNAL_LIMIT,
                                             CORE_R_LOW_UTILIZATION,       CORE_R_LIMIT_REACHED};
    for (size_t j = 0; j < sizeof order / sizeof order[0]; j++)
        for (int k = 0; k < c->d->n_vertices; k++) {
            const struct core_vdecision *v = &c->d->vertices[k];
            if (v->target != v->current && v->reason == order[j])
                return order[j];
        }
    return CORE_R_HIGH_UTILIZATION;
}

static enum core_action action_of(const struct core_decision *d)
{
    bool up = false, down = false;
    for (int k = 0; k < d->n_vertices; k++) {
        if (d->vertices[k].target > d->vertices[k].current)
            up = true;
        else if (d->vertices[k].target < d->vertices[k].current)
            down = true;
    }
    return up && down ? CORE_SCALE : up ? CORE_SCALE_UP : down ? CORE_SCALE_DOWN : CORE_NO_CHANGE;
}

/* Which vertices' messages make the job's message. */
enum pick { PICK_CHANGED, PICK_NOTEWORTHY };

static bool picked(const struct core_vdecision *v, enum pick pick)
{
    if (!v->message || v->excluded)
        return false;
    return pick == PICK_CHANGED ? v->target != v->current : v->reason != CORE_R_WITHIN_TARGET;
}

/* Joins the messages of the changed vertices, or of those that did not stay for being
 * within target (a limit, a delay, a hot key...). */
static const char *join_messages(struct cycle *c, enum pick pick)
{
    struct core_decision *d = c->d;
    size_t len = 1;
    for (int k = 0; k < d->n_vertices; k++)
        if (picked(&d->vertices[k], pick))
            len += strlen(d->vertices[k].message) + 2;
    char *buf = core__alloc(d, len);
    size_t off = 0;
    for (int k = 0; k < d->n_vertices; k++) {
        const struct core_vdecision *v = &d->vertices[k];
        if (!picked(v, pick))
            continue;
        if (off) {
            memcpy(buf + off, "; ", 2);
            off += 2;
        }
        size_t n = strlen(v->message);
        memcpy(buf + off, v->message, n);
        off += n;
    }
    buf[off] = '\0';
    return buf;
}

/* WITHIN_TARGET for the job: every vertex inside its bounds, unless some vertex was not
 * assessed at all (excluded, no busy time, no rates yet), which the message then names. */
static const char *within_message(struct cycle *c)
{
    struct core_decision *d = c->d;
    size_t len = 64;
    int n = 0;
    for (int i = 0; i < c->sm->n_vertices; i++)
        if (c->unscaled[i] && vdec(c, i)->message) {
            len += strlen(vdec(c, i)->message) + 2;
            n++;
        }
    if (n == 0)
        return "every vertex is inside its utilization bounds";
    char *buf = core__alloc(d, len);
    size_t off = (size_t)snprintf(buf, len, "every vertex that is scaled is inside its bounds; ");
    for (int k = 0, first = 1; k < c->sm->n_vertices; k++) {
        int i = c->t.order[k];
        if (!c->unscaled[i] || !vdec(c, i)->message)
            continue;
        off +=
            (size_t)snprintf(buf + off, len - off, "%s%s", first ? "" : "; ", vdec(c, i)->message);
        first = 0;
    }
    return buf;
}

/*
 * governor.not-applied.max (core/README.md, Cycle: applied or not): the client did not apply
 * this very scaling (the same vertices, from the same parallelism to the same one) the last
 * N times it was executed: it is recommended, not executed again, with reason NOT_APPLIED,
 * until the job's parallelism or its load changes (another scaling is then decided and
 * executed). Returns true when the decision is a recommendation.
 */
static bool not_applied_again(struct cycle *c)
{
    const struct core_unapplied *u = &c->st->unapplied;
    struct core_decision *d = c->d;
    int max = c->cfg->not_applied_max;
    if (max <= 0 || u->count < max)
        return false;
    int moved = 0;
    for (int k = 0; k < d->n_vertices; k++) {
        const struct core_vdecision *v = &d->vertices[k];
        if (v->target == v->current)
            continue;
        moved++;
        bool found = false;
        for (int j = 0; j < u->n && !found; j++)
            found = strcmp(u->v[j].id, v->id) == 0 && u->v[j].from == v->current &&
                    u->v[j].to == v->target;
        if (!found)
            return false;
    }
    if (moved != u->n)
        return false;
    d->reason = CORE_R_NOT_APPLIED;
    core__event(d, "Warning", "ScalingNotApplied", map_key(c),
                "Scaling recommended, not executed: the client did not apply it the last %d "
                "times (governor.not-applied.max %d): %s",
                u->count, max, report_entries(c));
    d->message = core__asprintf(d,
                                "recommended, not executed: the client did not apply this "
                                "scaling the last %d times (governor.not-applied.max); it is "
                                "executed again once the job's parallelism or load changes: %s",
                                u->count, join_messages(c, PICK_CHANGED));
    return true;
}

/* A negative busy time counts as 0, as in the reference; the decision says so. */
static void negative_busy(struct cycle *c)
{
    for (int i = 0; i < c->sm->n_vertices; i++) {
        const struct core_vertex_in *v = &c->sm->vertices[i];
        const double b[3] = {v->busy_min, v->busy_avg, v->busy_max};
        double worst = NAN;
        for (int j = 0; j < 3; j++)
            if (!isnan(b[j]) && (isnan(worst) || b[j] < worst))
                worst = b[j];
        if (v->finished || !(worst < 0))
            continue;
        core__event(c->d, "Warning", "NegativeBusyTime",
                    core__asprintf(c->d, "NegativeBusyTime:%s", v->id),
                    "%s: busy_ms_per_s %g is negative and counts as 0", v->id, worst);
    }
}

/* A warning for each gauge the window did not trust (core/README.md, Window: Gauges and
 * counters). */
static void gauge_warnings(struct cycle *c, const struct core_window_status *ws)
{
    for (int k = 0; k < ws->n_gauge_off && k < CORE_GAUGE_REPORTED; k++) {
        int wi = ws->gauge_off[k].wi;
        const char *id = c->st->w.ids[wi];
        int i = core__topo_find(&c->t, id);
        const struct core_vertex_in *v = i >= 0 ? &c->sm->vertices[i] : NULL;
        const char *gauge = v && c->t.is_source[i] && isnan(v->records_in_per_s)
                                ? "records_out_per_s"
                                : "records_in_per_s";
        char g[40], r[40];
        core__fmt_rate(g, sizeof g, ws->gauge_off[k].gauge);
        core__fmt_rate(r, sizeof r, ws->gauge_off[k].counter);
        core__event(c->d, "Warning", "GaugeMismatch", core__asprintf(c->d, "GaugeMismatch:%s", id),
                    "%s: %s says %s but its records_in counter rose %s over the last minute or "
                    "more (more than governor.rates.gauge-tolerance %g apart; a gauge per "
                    "subtask where the sum over subtasks is expected?): the counter's rate is "
                    "used%s",
                    id, gauge, g, r, c->cfg->gauge_tolerance,
                    k + 1 == CORE_GAUGE_REPORTED && ws->n_gauge_off > CORE_GAUGE_REPORTED
                        ? core__asprintf(c->d, " (and for %d more vertices)",
                                         ws->n_gauge_off - CORE_GAUGE_REPORTED)
                        : "");
    }
}

/* The part of the cycle after collection; returns with d's outcome filled. */
static void decide_collected(struct cycle *c, const struct core_window_status *ws)
{
    struct core_decision *d = c->d;
    const struct core_config *cfg = c->cfg;
    struct core_global_eval g;
    int64_t restart_ms = core__restart_time(c->st, cfg);

    core__evaluate(c->st, c->sm, &c->t, cfg, restart_ms, c->h, c->ev, &c->backlog, &g, &c->pe,
                   c->var);
    for (int i = 0; i < c->sm->n_vertices; i++) {
        struct core_vdecision *o = vdec(c, i);
        o->ev = c->ev[i];
    }
    if (!ws->fully_collected) {
        all_reasons(c, CORE_R_COLLECTING_METRICS);
        const struct core_window *w = &c->st->w;
        if (ws->stabilizing && w->started_at != w->running_since) {
            /* A restart the client did not declare: it is what the window stabilizes after. */
            char when[32];
            core__fmt_utc(when, sizeof when, w->started_at);
            d->message = core__asprintf(d,
                                        "stabilizing after the restart inferred at %s: %d "
                                        "samples in the metric window",
                                        when, ws->n_samples);
        } else {
            d->message = core__asprintf(d, "%s: %d samples in the metric window",
                                        ws->stabilizing ? "stabilizing after the job started"
                                                        : "metric window not full yet",
                                        ws->n_samples);
        }
        return;
    }
    if (core__memory_pressure(cfg, &g, d)) {
        all_reasons(c, CORE_R_MEMORY_PRESSURE);
        d->message = d->events[d->n_events - 1].message;
        return;
    }
    compute_targets(c);
    if (cfg->scale_down_with_restart)
        ride_along(c);
    delayed_inside(c);
    if (cfg->restart_cost_w > 0)
        restart_cost(c);

    /* Without a kept vertex outside its bounds the summary is dropped (core/README.md, Cycle
     * step 9). */
    bool any = false, any_outside = false;
    for (int i = 0; i < c->sm->n_vertices; i++)
        if (c->in_summary[i]) {
            any = true;
            any_outside |= vdec(c, i)->outside_bounds;
        }
    if (!any || !any_outside) {
        for (int i = 0; i < c->sm->n_vertices; i++)
            if (c->in_summary[i]) {
                struct core_vdecision *o = vdec(c, i);
                o->reason = CORE_R_WITHIN_TARGET;
                o->message = core__asprintf(
                    d, "%s: a change to %d is pending but no vertex is outside its bounds", o->id,
                    o->target);
            }
        revert_targets(c);
        d->reason = idle_reason(c);
        d->message = d->reason == CORE_R_WITHIN_TARGET ? within_message(c)
                                                       : join_messages(c, PICK_NOTEWORTHY);
        return;
    }

    d->action = action_of(d);
    d->reason = scale_reason(c);

    /* Advisor mode and excluded periods keep the recommendation only (core/README.md, Cycle
     * step 11). */
    const char *blocked_by = NULL;
    if (!cfg->scaling_enabled) {
        blocked_by = "job.autoscaler.scaling.enabled:false";
        d->reason = CORE_R_SCALING_DISABLED;
    } else if (cfg->excluded_periods && cfg->excluded_periods[0] && c->h && c->h->excluded) {
        bool ex = false;
        char why[256] = "", err[512] = "";
        if (c->h->excluded(c->h->ud, cfg, c->now, &ex, why, sizeof why, err, sizeof err) < 0) {
            core__plugin_fail(&c->pe, "excluded_periods", err);
        } else if (ex) {
            blocked_by = core__asprintf(d, "job.autoscaler.excluded.periods:%s",
                                        why[0] ? why : cfg->excluded_periods);
            d->reason = CORE_R_EXCLUDED_PERIOD;
        }
    }
    if (blocked_by) {
        core__event(d, "Normal", "ScalingReport", map_key(c),
                    "Scaling execution disabled by config %s, recommended parallelism "
                    "change: %s",
                    blocked_by, report_entries(c));
        d->message = core__asprintf(d, "recommendation only (%s): %s", blocked_by,
                                    join_messages(c, PICK_CHANGED));
        return;
    }

    core__memory_tune(cfg, c->sm, &c->t, c->new_p, &g, d);
    if (core__quota_reached(cfg, c->sm, c->in_summary, c->new_p, d)) {
        d->reason = CORE_R_QUOTA_REACHED;
        d->message = core__asprintf(d, "the CPU or memory quota would be exceeded by: %s",
                                    join_messages(c, PICK_CHANGED));
        d->n_config_changes = 0;
        d->n_config_removals = 0;
        return;
    }
    if (core__run_executors(c)) {
        d->reason = CORE_R_VETOED;
        d->action = action_of(d);
        return;
    }
    d->action = action_of(d);
    if (d->action == CORE_NO_CHANGE) {
        d->reason = idle_reason(c);
        d->message = "executors left every vertex at its current parallelism";
        return;
    }
    if (not_applied_again(c))
        return;
    d->reason = scale_reason(c); /* the moves the executors left */
    core__event(d, "Normal", "ScalingReport", NULL,
                "Scaling execution enabled, begin scaling vertices:%s", report_entries(c));
    core__record_execution(c);
    d->execute = true;
    d->message = join_messages(c, PICK_CHANGED);
}

int core_decide(struct core_state *st, const struct core_sample *sm, const struct core_config *cfg,
                const struct core_hooks *hooks, struct core_decision *d, char *err, size_t err_len)
{
    core_decision_reset(d);
    struct cycle c = {.sm = sm, .cfg = cfg, .h = hooks, .st = st, .d = d, .now = sm->at};
    if (core__topo_build(sm, d, &c.t, err, err_len) < 0) {
        core_decision_reset(d);
        return -1;
    }
    d->at = sm->at;
    d->action = CORE_NO_CHANGE;
    init_vertices(&c);
    size_t nx = (size_t)(cfg->n_exclude_ids > 0 ? cfg->n_exclude_ids : 1);
    core_index_build(&c.excl, cfg->exclude_ids, sizeof *cfg->exclude_ids, 0,
                     cfg->n_exclude_ids > 0 ? cfg->n_exclude_ids : 0,
                     core__alloc(d, nx * sizeof(int)), core__alloc(d, nx * sizeof(int)));

    if (!cfg->enabled) {
        /* The job's autoscaler state is wiped (core/README.md, Cycle step 3). */
        core_state_clear(st);
        st->last_at = sm->at;
        all_reasons(&c, CORE_R_SCALING_DISABLED);
        d->message = "job.autoscaler.enabled is false: the autoscaler state was cleared";
        return 0;
    }
    if (!sm->running) {
        st->last_at = sm->at;
        all_reasons(&c, CORE_R_JOB_NOT_RUNNING);
        d->message = "the job is not running";
        return 0;
    }

    /* The window, compressed between decisions, is read decoded during one (winstore.c). */
    core__window_decode(&st->w);
    core__topo_window(&c.t, &st->w, d);
    struct core_window_check chk;
    core__window_check(st, sm, &c.t, cfg, &chk);
    map_state(&c);
    core__resolve_pending(&c);
    if (chk.restart != CORE_RESTART_NONE)
        core__forget_old_parallelism(&c);
    negative_busy(&c);
    core__tracking_update(st, sm, &c.t, cfg, c.now);
    core__history_trim(st, &c.t, cfg, c.now);
    struct core_window_status ws;
    core__window_add(st, sm, &c.t, cfg, &chk, &ws);
    if (chk.restart != CORE_RESTART_NONE)
        core__topo_window(&c.t, &st->w, d); /* the window now lists the sample's vertices */
    map_state(&c);
    st->last_at = sm->at;
    /* A restart the client did not declare is worth a word (core/README.md, Window). */
    bool inferred = chk.restart > CORE_RESTART_DECLARED;
    gauge_warnings(&c, &ws);
    if (inferred)
        core__event(d, "Warning", "RestartInferred",
                    core__asprintf(d, "RestartInferred:%s", core__restart_name(chk.restart)),
                    "The metric window restarted: %s", chk.why);
    if (ws.rejected) {
        all_reasons(&c, CORE_R_IMPLAUSIBLE_SAMPLE);
        core__event(d, "Warning", "ImplausibleSample", "ImplausibleSample",
                    "Sample left out of the metric window: %s", chk.why);
        d->message = core__asprintf(d,
                                    "the sample was left out of the metric window and nothing "
                                    "is decided on it: %s",
                                    chk.why);
    } else if (ws.n_samples < 2) {
        all_reasons(&c, CORE_R_COLLECTING_METRICS);
        d->message =
            core__asprintf(d, "collecting metrics: %d sample%s in the window%s%s", ws.n_samples,
                           ws.n_samples == 1 ? "" : "s", inferred ? "; the window restarted: " : "",
                           inferred ? chk.why : "");
    } else {
        decide_collected(&c, &ws);
    }
    if (!d->message)
        d->message = "";
    if (c.not_applied)
        d->message =
            core__asprintf(d, "%s%s%s", c.not_applied, d->message[0] ? "; " : "", d->message);
    if (c.pe.set) {
        d->reason = CORE_R_PLUGIN_ERROR;
        d->message =
            core__asprintf(d, "plugin %s failed: %s; the native decision stands%s%s", c.pe.plugin,
                           c.pe.message, d->message[0] ? ": " : "", d->message);
    }
    core__events_dedupe(st, d, c.now, cfg->event_interval_ms);
    core__window_release(&st->w);
    return 0;
}
