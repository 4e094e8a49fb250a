/*
 * evaluate.c - core/README.md, Evaluation: backlog detection, target data rate and catch-up
 * rate propagated along the edges, true processing rate (busy time or observed), the capacity
 * helper and the utilization thresholds, plus the global evaluated metrics. Custom evaluator
 * hooks (chained in the listed order) are merged over each vertex's figures.
 *
 * Reads the metric window the sample was just ingested into (window.c); writes only the
 * caller's ev[] array, *backlog, *g and *pe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

#define VM(f) offsetof(struct core_vmetrics, f)
#define GM(f) offsetof(struct core_gmetrics, f)

/* Window index of each sample vertex. */
static int widx(const struct core_state *st, const struct core_sample *sm,
                const struct core_topo *t, int i)
{
    return core__topo_wi(t, &st->w, sm, i);
}

/*
 * governor.source.stall (core/README.md, Evaluation): between the window's last two samples
 * source wi read nothing while its backlog grew, and it is neither busy nor back-pressured:
 * something outside the job stops it (a broker outage, paused partitions), and no parallelism
 * makes it read. v is the source in the sample the window ends with (its back-pressure).
 */
bool core__source_stalled(const struct core_window *w, int wi, const struct core_vertex_in *v)
{
    if (wi < 0 || w->n < 2 || v->finished)
        return false;
    struct core_vmetrics a, b; /* the last two samples' */
    struct core_witer it;
    for (core_witer_begin(&it, w); core_witer_next(&it);)
        if (it.k >= w->n - 1)
            memcpy(it.k == w->n ? &b : &a, &it.r->v[wi], sizeof a);
    core_witer_end(&it);
    bool read_nothing = b.rec_in == a.rec_in;
    bool idle = !(b.load_max >= 0.01) && !(v->backpressured >= 10.0);
    return read_nothing && b.lag > a.lag && idle;
}

/* Backlog (core/README.md, Evaluation): any source whose latest lag takes longer than the
 * threshold to process. */
static bool processing_backlog(const struct core_state *st, const struct core_sample *sm,
                               const struct core_topo *t, const struct core_config *cfg)
{
    double threshold_s = (double)(cfg->backlog_lag_threshold_ms / 1000);
    for (int i = 0; i < t->n; i++) {
        if (!t->is_source[i])
            continue;
        int wi = widx(st, sm, t, i);
        /* governor.source.stall: a backlog nothing can read yet is not being processed. */
        if (cfg->source_stall && core__source_stalled(&st->w, wi, &sm->vertices[i]))
            continue;
        double lag = core__w_latest(&st->w, wi, VM(lag));
        if (isnan(lag))
            lag = 0.0;
        double rate = core__w_rate(&st->w, wi, VM(rec_in));
        if (isnan(rate))
            continue;
        /* rate 0 with lag > 0 is +inf (a backlog); 0/0 is NaN and never greater */
        if (lag / rate > threshold_s)
            return true;
    }
    return false;
}

/* Up to this many inputs, ratio(u, v) subtracts the other inputs' rates one by one, in the
 * order the sample lists them (the reference's arithmetic, to the last bit). A wider fan-in
 * takes them from sums of the rates before and after each input, so that the work stays
 * linear in the inputs (the result may differ in the last bits of a double). */
#define FANIN_EXACT 32

/* What ratio(u, v) needs of v's inputs, gathered once per vertex v. */
struct fanin {
    int v;
    int multi;              /* inputs from a vertex with more than one output */
    int multi_lo, multi_hi; /* the lowest and highest such vertex */
    double in_rate_v;       /* v's input rate */
    double *pre, *suf;      /* wide fan-in: [k] the rates of the inputs before / after k */
    bool lone_done;         /* lone: computed */
    double lone;            /* in_rate_v less the rates of every input not from multi_lo */
};

static void fanin_init(struct fanin *f, const struct core_state *st, const struct core_sample *sm,
                       const struct core_topo *t, int v)
{
    const struct core_window *w = &st->w;
    int lo = t->in_start[v], n_in = t->in_start[v + 1] - lo;
    memset(f, 0, sizeof *f);
    f->v = v;
    f->in_rate_v = core__w_rate(w, widx(st, sm, t, v), VM(rec_in));
    for (int k = lo; k < lo + n_in; k++) {
        int u = t->in_src[k];
        if (t->n_outputs[u] == 1)
            continue;
        if (f->multi++ == 0 || u < f->multi_lo)
            f->multi_lo = u;
        if (f->multi == 1 || u > f->multi_hi)
            f->multi_hi = u;
    }
    if (n_in <= FANIN_EXACT || f->multi > 0)
        return;
    /* Every input comes from a vertex with this one output: each appears once. */
    f->pre = core__xcalloc((size_t)n_in + 1, sizeof *f->pre);
    f->suf = core__xcalloc((size_t)n_in + 1, sizeof *f->suf);
    for (int k = 0; k < n_in; k++)
        f->pre[k + 1] =
            f->pre[k] + core__w_rate(w, widx(st, sm, t, t->in_src[lo + k]), VM(rec_out));
    for (int k = n_in - 1; k >= 0; k--)
        f->suf[k] =
            f->suf[k + 1] + core__w_rate(w, widx(st, sm, t, t->in_src[lo + k]), VM(rec_out));
}

static void fanin_deinit(struct fanin *f)
{
    free(f->pre);
    free(f->suf);
}

/* ratio(u, v) of core/README.md, Evaluation: the share of u's input that flows over the
 * edge u -> v, the k-th input of v (f: v's inputs). */
static double edge_ratio(const struct core_state *st, const struct core_sample *sm,
                         const struct core_topo *t, struct fanin *f, int k)
{
    const struct core_window *w = &st->w;
    int v = f->v, u = t->in_src[k], lo = t->in_start[v];
    double in_rate = core__w_rate(w, widx(st, sm, t, u), VM(rec_in));
    if (!(in_rate > 0))
        return 0.0;
    int n_in = t->in_start[v + 1] - lo;
    double e;
    /* Every other input comes from a vertex with a single output. */
    bool others_single = f->multi == 0 || (f->multi_lo == u && f->multi_hi == u);
    if (n_in == 1) {
        e = f->in_rate_v;
    } else if (!others_single) {
        e = core__w_rate(w, widx(st, sm, t, u), VM(rec_out));
    } else if (n_in <= FANIN_EXACT || f->multi > 0) {
        /* Small, or u is the one input vertex with other outputs (its every edge into v
         * gives the same answer, computed once). */
        if (f->multi > 0 && f->lone_done)
            return f->lone > 0 ? f->lone / in_rate : 0.0;
        e = f->in_rate_v;
        for (int j = lo; j < lo + n_in; j++)
            if (t->in_src[j] != u)
                e -= core__w_rate(w, widx(st, sm, t, t->in_src[j]), VM(rec_out));
        if (f->multi > 0) {
            f->lone = e;
            f->lone_done = true;
        }
    } else {
        e = f->in_rate_v - f->pre[k - lo] - f->suf[k - lo + 1];
    }
    return e > 0 ? e / in_rate : 0.0; /* NaN flow -> 0 */
}

/* The vertex's LOAD (in *load) and TRUE_PROCESSING_RATE (core/README.md, Evaluation). */
static double true_processing_rate(const struct core_window *w, int wi, int p,
                                   const struct core_config *cfg, double *load)
{
    double busy_ms, in_rate;
    if (cfg->busy_aggregator == CORE_AGG_AVG) {
        busy_ms = core__w_rate(w, wi, VM(acc_busy)) / p;
        in_rate = core__w_rate(w, wi, VM(rec_in));
    } else {
        busy_ms = core__w_avg(w, wi, VM(load), 0) * 1000.0;
        in_rate = core__w_avg_rate_fallback(w, wi, VM(rec_in_per_s), VM(rec_in));
        /* governor.rates.from-counters: what the counters count over the window, which the
         * busy-time gauges sampled over the same window describe; the 60 s meter lags them
         * for a minute after every change of the load. */
        double counted = core__w_rate(w, wi, VM(rec_in));
        if (cfg->rates_from_counters && isfinite(counted))
            in_rate = counted;
    }
    *load = busy_ms / 1000.0;
    /* busy 0 with a positive rate divides to +inf; NaN inputs stay NaN */
    double busy_tpr = in_rate == 0.0 ? INFINITY : in_rate / (busy_ms / 1000.0);
    double observed = core__w_avg(w, wi, VM(observed_tpr), cfg->otpr_min_observations);
    if (isnan(observed))
        return busy_tpr;
    if (isnan(busy_tpr) || isinf(busy_tpr))
        return observed;
    if (busy_tpr > observed * (1.0 + cfg->otpr_switch_threshold))
        return observed;
    return busy_tpr;
}

/*
 * capacity() of core/README.md, Evaluation: the processing rate needed to serve the
 * catch-up rate, (optionally) the data that piles up during a restart, and the target data
 * rate at utilization util. NaN when catch-up or TDR is NaN; +inf when util clamps to 0;
 * otherwise Java's Math.round of the sum. restart_ms and catch_up_ms count in whole seconds.
 */
double core__capacity(const struct core_evaluated *ev, double util, bool with_restart,
                      int64_t restart_ms, int64_t catch_up_ms)
{
    double catch_up = ev->catch_up_data_rate;
    double tdr = ev->target_data_rate;
    if (isnan(catch_up) || isnan(tdr))
        return NAN;
    if (util < 0)
        util = 0;
    if (util > 1)
        util = 1;
    if (util == 0)
        return INFINITY;
    int64_t restart_s = restart_ms / 1000, catch_up_s = catch_up_ms / 1000;
    double restart_rate = 0.0;
    if (with_restart && catch_up_s > 0)
        restart_rate = tdr * (double)restart_s / (double)catch_up_s;
    return (double)core__java_round(catch_up + restart_rate + tdr / util);
}

/*
 * The capacity the options ask for: core__capacity, or with governor.catch-up.in-headroom the
 * least capacity that both serves the target data rate at util and works off the backlog and
 * a restart's pile-up within the catch-up duration from the headroom above the target data
 * rate (core/README.md, Evaluation):
 *     max(TDR / util, TDR + CATCH_UP + restart_rate), rounded as core__capacity rounds.
 * The reference adds the catch-up and restart rates on top of TDR / util, so a job that keeps
 * up is sized for less than its utilization target (about 63% busy for 70%).
 */
double core__capacity_cfg(const struct core_config *cfg, const struct core_evaluated *ev,
                          double util, bool with_restart, int64_t restart_ms)
{
    if (!cfg->catch_up_in_headroom)
        return core__capacity(ev, util, with_restart, restart_ms, cfg->catch_up_ms);
    struct core_evaluated steady = *ev;
    steady.catch_up_data_rate = 0.0;
    if (isnan(ev->catch_up_data_rate))
        steady.catch_up_data_rate = NAN;
    double at_target = core__capacity(&steady, util, false, 0, cfg->catch_up_ms);
    double drain = core__capacity(ev, 1.0, with_restart, restart_ms, cfg->catch_up_ms);
    return at_target > drain || isnan(drain) ? at_target : drain;
}

/*
 * Outside the utilization bounds (core/README.md, Evaluation): TPR below the scale-up
 * threshold or above the scale-down threshold. Plain double comparisons: NaN never triggers,
 * inf is not greater than inf.
 */
bool core__outside_bounds(const struct core_evaluated *ev)
{
    double tpr = ev->true_processing_rate;
    return tpr < ev->scale_up_rate_threshold || tpr > ev->scale_down_rate_threshold;
}

void core_util_bounds(const struct core_config *cfg, bool backlog, double *upper, double *lower)
{
    if (backlog) {
        *upper = 1.0;
        *lower = 0.0;
        return;
    }
    *upper = isnan(cfg->util_max) ? cfg->util_target + cfg->util_boundary : cfg->util_max;
    /* governor.utilization.ceiling: a default bound past it waits for saturation. */
    if (isnan(cfg->util_max) && *upper > cfg->util_ceiling)
        *upper = cfg->util_ceiling > cfg->util_target ? cfg->util_ceiling : cfg->util_target;
    *lower = isnan(cfg->util_min) ? cfg->util_target - cfg->util_boundary : cfg->util_min;
}

/* The rate thresholds (core/README.md, Evaluation) from the vertex's (rounded) TDR and
 * catch-up rate; with governor.bounds.confidence widened by z x rse on either side. */
void core__thresholds(struct core_evaluated *ev, const struct core_config *cfg, bool backlog,
                      int64_t restart_ms, double rse, bool settled)
{
    double upper, lower;
    core_util_bounds(cfg, backlog, &upper, &lower);
    double up = core__capacity_cfg(cfg, ev, upper, false, restart_ms);
    double down = core__capacity_cfg(cfg, ev, lower, true, restart_ms);
    double widen = cfg->bounds_z > 0 && rse > 0 ? 1.0 + cfg->bounds_z * rse : 1.0;
    if (widen > 1.0) {
        up /= widen;
        /* Noise never hides an overload: a vertex that cannot keep up with the mean of what
         * arrives (at 100% busy) is outside whatever the variability, unless the arrivals are
         * in a transition (governor.rates.level-shift), whose level is not known yet. */
        double keep_up = core__capacity_cfg(cfg, ev, 1.0, false, restart_ms);
        if (settled && keep_up > up)
            up = keep_up;
    }
    ev->scale_up_rate_threshold = core__round3(up);
    ev->scale_down_rate_threshold = core__round3(widen > 1.0 ? down * widen : down);
}

/* sqrt(var / n_eff) / mean: the relative standard error of a series' mean; NaN when unknown. */
static double rel_se(const struct core_series_stats *x)
{
    if (!(x->mean > 0) || !(x->n_eff > 0) || isnan(x->var))
        return NAN;
    return sqrt(x->var / x->n_eff) / x->mean;
}

/*
 * governor.rates.trend (core/README.md, Evaluation): when source wi's arrivals rise or fall over
 * the window beyond z standard errors of their slope, the target data rate is the window's
 * mean moved along the slope's confidence bound nearer 0 from the window's middle to its end
 * (the mean lags a moving load by half a window), and a rise's lower bound goes to *growth
 * (records/s per second, for sizing a scale-up). Returns the rate (the mean when no trend).
 */
static double trend(const struct core_window *w, int wi, const struct core_config *cfg, double mean,
                    double *growth)
{
    *growth = 0.0;
    if (!(cfg->trend_z > 0))
        return mean;
    double b, se;
    int64_t center, now = core__wv_at(w, w->n - 1);
    if (!core__w_arrivals_trend(w, wi, INT64_MIN, now, &b, &se, &center) || !(se >= 0))
        return mean;
    double lo = b - cfg->trend_z * se, hi = b + cfg->trend_z * se, sure = 0.0;
    if (lo > 0)
        sure = lo;
    else if (hi < 0)
        sure = hi;
    if (sure == 0.0)
        return mean;
    /* A trend moves each half of the window the same way; a step between them leaves the
     * halves flat: it is no trend to extrapolate. */
    int64_t mid = core__wv_at(w, 0) + (now - core__wv_at(w, 0)) / 2;
    int64_t halves[2][2] = {{INT64_MIN, mid}, {mid, now}};
    for (int k = 0; k < 2; k++) {
        double bh, seh;
        int64_t ch;
        if (!core__w_arrivals_trend(w, wi, halves[k][0], halves[k][1], &bh, &seh, &ch) ||
            !(sure > 0 ? bh - cfg->trend_z * seh > 0 : bh + cfg->trend_z * seh < 0))
            return mean;
    }
    if (sure > 0)
        *growth = sure;
    double level = mean + sure * (double)(now - center) / 1000.0;
    return level > 0 ? level : 0.0;
}

/*
 * governor.rates.level-shift (core/README.md, Evaluation): the target data rate of source wi
 * from its arrivals over the last restart time instead of the whole window, when they differ
 * from those before by more than z standard errors and each half of that span does too (the
 * load moved and stayed moved: a burst shorter than a restart is absorbed by the backlog, not
 * chased). *used gets the statistics the rate comes from (the window's, or the recent span's);
 * *moving says that the newest interval lies beyond z standard deviations of the arrivals
 * before the recent span and the shift is not taken (not yet held on both halves): the window
 * is in a transition. Returns the recent rate, or NaN when the window's stands.
 */
static double level_shift(const struct core_window *w, int wi, const struct core_config *cfg,
                          int64_t restart_ms, struct core_series_stats *used, bool *moving)
{
    *moving = false;
    int64_t now = core__wv_at(w, w->n - 1);
    core__w_arrivals(w, wi, INT64_MIN, now, used);
    if (!(cfg->level_shift_z > 0) || used->n < 5)
        return NAN;
    int64_t span = restart_ms < 60000 ? 60000 : restart_ms;
    int64_t half_window = cfg->metrics_window_ms / 2;
    if (span > half_window)
        span = half_window;
    int64_t split = now - span;
    struct core_series_stats old, recent, first, second;
    core__w_arrivals(w, wi, INT64_MIN, split, &old);
    core__w_arrivals(w, wi, split, now, &recent);
    if (old.n < 3 || recent.n < 2 || !(old.var >= 0))
        return NAN;
    double v_new = isnan(recent.var) || recent.var < old.var ? old.var : recent.var;
    double se = sqrt(old.var / old.n_eff + v_new / recent.n_eff);
    double z = cfg->level_shift_z, d = recent.mean - old.mean;
    /* A transition: the newest interval lies beyond z standard deviations of the intervals
     * before the recent span (a step begun whose level the window does not know yet). */
    {
        struct core_series_stats newest;
        core__w_arrivals(w, wi, w->n >= 2 ? core__wv_at(w, w->n - 2) : now, now, &newest);
        double sd = sqrt(old.var);
        if (sd < 0.01 * fabs(old.mean))
            sd = 0.01 * fabs(old.mean);
        if (newest.n >= 1 && fabs(newest.mean - old.mean) > z * sd)
            *moving = true;
    }
    if (!(fabs(d) > z * se))
        return NAN;
    /* Both halves of the recent span, each on its own, on the same side. */
    core__w_arrivals(w, wi, split, split + span / 2, &first);
    core__w_arrivals(w, wi, split + span / 2, now, &second);
    double se1 = sqrt(old.var / old.n_eff + v_new / (first.n_eff > 0 ? first.n_eff : 1));
    double se2 = sqrt(old.var / old.n_eff + v_new / (second.n_eff > 0 ? second.n_eff : 1));
    if (first.n < 1 || second.n < 1 || !((first.mean - old.mean) * (d > 0 ? 1 : -1) > z * se1) ||
        !((second.mean - old.mean) * (d > 0 ? 1 : -1) > z * se2))
        return NAN;
    *moving = false;
    *used = recent;
    return recent.mean < 0 ? 0.0 : recent.mean;
}

static void ev_blank(struct core_evaluated *ev)
{
    ev->load = ev->true_processing_rate = ev->target_data_rate = NAN;
    ev->catch_up_data_rate = ev->lag = NAN;
    ev->scale_up_rate_threshold = ev->scale_down_rate_threshold = NAN;
    ev->expected_processing_rate = NAN;
    ev->parallelism = ev->max_parallelism = ev->num_source_partitions = NAN;
    ev->busy_max_avg_ratio = ev->hot_key_share = ev->key_rate_bound = NAN;
    ev->salting_fanout = NAN;
}

/* Copies every figure of the hook's result that is not NaN and differs from the vertex's
 * over it, rounded like every evaluated figure (core/README.md, Evaluation). */
static void merge(struct core_evaluated *ev, const struct core_evaluated *out)
{
#define MERGE(f)                                                                                   \
    do {                                                                                           \
        if (!isnan(out->f))                                                                        \
            ev->f = core__round3(out->f);                                                          \
    } while (0)
    MERGE(load);
    MERGE(true_processing_rate);
    MERGE(target_data_rate);
    MERGE(catch_up_data_rate);
    MERGE(lag);
    MERGE(scale_up_rate_threshold);
    MERGE(scale_down_rate_threshold);
    MERGE(expected_processing_rate);
    MERGE(parallelism);
    MERGE(max_parallelism);
    MERGE(num_source_partitions);
    MERGE(busy_max_avg_ratio);
    MERGE(hot_key_share);
    MERGE(key_rate_bound);
    MERGE(salting_fanout);
#undef MERGE
}

/*
 * Runs the evaluator hooks of cfg->evaluators over vertex i, in order. Each gets a copy of
 * the vertex's current figures (built-in, merged with earlier hooks), so a plugin can read
 * them and a failing one cannot leave half a result behind; afterwards every figure of the
 * copy that is not NaN replaces the vertex's (setting a figure to NaN keeps the built-in).
 * Thresholds are not recomputed afterwards, as in the reference.
 */
static void run_evaluators(const struct core_sample *sm, int i, const struct core_config *cfg,
                           const struct core_hooks *h, bool backlog, struct core_evaluated *ev,
                           struct core_plugin_err *pe)
{
    if (!h || !h->evaluate)
        return;
    for (int k = 0; k < cfg->n_evaluators; k++) {
        struct core_evaluated copy = *ev;
        char err[512] = "";
        if (h->evaluate(h->ud, cfg->evaluators[k], &sm->vertices[i], &copy, backlog, sm->at, err,
                        sizeof err) != 0) {
            core__plugin_fail(pe, cfg->evaluators[k], err[0] ? err : "evaluator failed");
            continue;
        }
        merge(ev, &copy);
    }
}

/*
 * core/README.md, Evaluation, for every vertex of sm in topological order (see core_int.h).
 * st's window must already hold sm (core__window_ingest). A source whose target data rate is
 * NaN (no ingestion rate yet) makes the reference throw; here only that vertex's TDR,
 * catch-up rate and thresholds become NaN (so it is not scaled: its target capacity is NaN)
 * and the downstream vertices inherit NaN rates; everything else is still evaluated and
 * reported.
 */
void core__evaluate(const struct core_state *st, const struct core_sample *sm,
                    const struct core_topo *t, const struct core_config *cfg, int64_t restart_ms,
                    const struct core_hooks *h, struct core_evaluated *ev, bool *backlog,
                    struct core_global_eval *g, struct core_plugin_err *pe,
                    struct core_variability *var)
{
    const struct core_window *w = &st->w;
    bool bl = processing_backlog(st, sm, t, cfg);
    *backlog = bl;
    int64_t catch_up_s = cfg->catch_up_ms / 1000;
    bool variability = cfg->level_shift_z > 0 || cfg->bounds_z > 0 || cfg->trend_z > 0;
    double *growth = core__xcalloc((size_t)(t->n > 0 ? t->n : 1), sizeof *growth);
    bool *moving = core__xcalloc((size_t)(t->n > 0 ? t->n : 1), sizeof *moving);
    /* The relative standard error of each vertex's target data rate (by sample index). */
    double *rse_tdr = NULL;
    if (variability && t->n > 0) {
        rse_tdr = core__xcalloc((size_t)t->n, sizeof *rse_tdr);
        for (int i = 0; i < t->n; i++)
            rse_tdr[i] = NAN;
    }

    for (int oi = 0; oi < t->n; oi++) {
        int i = t->order[oi];
        const struct core_vertex_in *v = &sm->vertices[i];
        struct core_evaluated *e = &ev[i];
        int wi = widx(st, sm, t, i);
        ev_blank(e);
        e->parallelism = v->parallelism;
        e->max_parallelism = v->max_parallelism;
        e->num_source_partitions = v->partitions;

        double tdr, catch_up;
        if (t->is_source[i]) {
            double lag = core__w_latest(w, wi, VM(lag));
            e->lag = core__round3(lag);
            tdr = core__w_rate(w, wi, VM(rec_in)) + core__w_rate(w, wi, VM(lag));
            if (variability && wi >= 0 && !isnan(tdr)) {
                struct core_series_stats used;
                double shifted = level_shift(w, wi, cfg, restart_ms, &used, &moving[i]);
                if (!isnan(shifted))
                    tdr = shifted;
                else
                    tdr = trend(w, wi, cfg, tdr, &growth[i]);
                rse_tdr[i] = rel_se(&used);
            }
            tdr = tdr < 0 ? 0.0 : tdr; /* NaN stays NaN, as Math.max(0, NaN) */
            if (isnan(lag))
                lag = 0.0;
            catch_up = catch_up_s == 0 ? 0.0 : lag / (double)catch_up_s;
            /* governor.source.stall: no catch-up is planned for a backlog nothing reads. */
            if (cfg->source_stall && core__source_stalled(w, wi, v))
                catch_up = 0.0;
            if (isnan(tdr))
                catch_up = NAN;
        } else {
            tdr = 0.0;
            catch_up = 0.0;
            struct fanin f;
            fanin_init(&f, st, sm, t, i);
            for (int k = t->in_start[i]; k < t->in_start[i + 1]; k++) {
                int u = t->in_src[k];
                double r = edge_ratio(st, sm, t, &f, k);
                tdr += ev[u].target_data_rate * r;
                catch_up += ev[u].catch_up_data_rate * r;
                growth[i] += growth[u] * r;
                moving[i] = moving[i] || moving[u];
                if (rse_tdr && !(rse_tdr[i] >= rse_tdr[u]))
                    rse_tdr[i] = rse_tdr[u];
            }
            fanin_deinit(&f);
        }
        e->target_data_rate = core__round3(tdr);
        e->catch_up_data_rate = core__round3(catch_up);

        double load;
        double tpr = true_processing_rate(w, wi, v->parallelism, cfg, &load);
        e->true_processing_rate = core__round3(tpr);
        e->load = core__round3(load);

        /* governor.bounds.confidence: the larger of the relative standard errors of what
         * arrives and of the busy time the true processing rate divides by. */
        double r_se = NAN;
        if (cfg->bounds_z > 0) {
            r_se = rse_tdr ? rse_tdr[i] : NAN;
            /* While a backlog is worked off, busy time moves with the backlog (idle in an
             * outage, saturated after it), not with noise: only the arrivals count then. */
            if (!bl) {
                struct core_series_stats busy;
                core__w_gauge_stats(w, wi, VM(load), &busy);
                double rl = rel_se(&busy);
                if (!(r_se >= rl))
                    r_se = rl;
            }
        }
        if (var) {
            var[i].rse = r_se;
            var[i].growth = growth[i];
            var[i].moving = moving[i];
        }
        core__thresholds(e, cfg, bl, restart_ms, r_se, !moving[i]);
        run_evaluators(sm, i, cfg, h, bl, e, pe);
    }
    free(rse_tdr);
    free(growth);
    free(moving);

    g->gc_pressure = core__round3(core__w_glatest(w, GM(gc_pressure)));
    g->heap_ratio_avg = core__round3(core__w_gavg(w, GM(heap_ratio)));
    g->heap_used_avg = core__round3(core__w_gavg(w, GM(heap_used)));
    g->managed_used_avg = core__round3(core__w_gavg(w, GM(managed_used)));
    g->metaspace_used_avg = core__round3(core__w_gavg(w, GM(metaspace_used)));
    g->slots_used = core__round3(core__w_glatest(w, GM(slots_used)));
}
