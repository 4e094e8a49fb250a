/*
 * window.c - the metric window (core/README.md, Window): restart detection, the per-sample
 * scaling
 * metrics computed from one sample, stabilization and the "window full" rule, and the
 * aggregates the evaluation reads (avg, rate, avgWithRateFallback, latest).
 *
 * The window is owned by the job state (state.h); samples are appended oldest first and
 * store per-vertex metrics in the window's own vertex order (w->ids), which is the order
 * of the sample that started the window. Later samples are mapped by id.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

static double vfield(const struct core_vmetrics *m, size_t off)
{
    double x;
    memcpy(&x, (const char *)m + off, sizeof x);
    return x;
}

static double gfield(const struct core_gmetrics *g, size_t off)
{
    double x;
    memcpy(&x, (const char *)g + off, sizeof x);
    return x;
}

/* Window index of vertex id (a linear scan: topologies are small), -1 if absent. */
int core__window_index(const struct core_window *w, const char *id)
{
    for (int i = 0; i < w->n_vertices; i++)
        if (strcmp(w->ids[i], id) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------ aggregates -- */

/*
 * avg over a sequence (core/README.md, Window): the mean of the finite values; with none, +inf if
 * an infinite value was seen, else NaN; with fewer finite values than min_obs, NaN. The "only
 * infinities" case wins over min_obs, as the reference checks it first.
 */
struct avg_acc {
    double sum;
    int n;
    bool any_inf;
};

static void avg_add(struct avg_acc *a, double x)
{
    if (isnan(x))
        return;
    if (isinf(x)) {
        a->any_inf = true;
        return;
    }
    a->sum += x;
    a->n++;
}

static double avg_result(const struct avg_acc *a, int min_obs)
{
    if (a->n == 0)
        return a->any_inf ? INFINITY : NAN;
    if (min_obs > 0 && a->n < min_obs)
        return NAN;
    return a->sum / a->n;
}

/* avg of vertex vi's field at off over the window; min_obs <= 0: no minimum. */
double core__w_avg(const struct core_window *w, int vi, size_t off, int min_obs)
{
    if (vi < 0 || vi >= w->n_vertices)
        return NAN;
    struct avg_acc a = {0};
    for (int k = 0; k < w->n; k++)
        avg_add(&a, vfield(&w->s[k].v[vi], off));
    return avg_result(&a, min_obs);
}

/*
 * rate of a cumulative counter (core/README.md, Window): per-second slope between the first and the
 * last samples where it is not NaN, 1000 x (last - first) / max(1, dt ms). NaN with fewer than two
 * such samples. Gaps silently shorten the window, as in the reference.
 */
double core__w_rate(const struct core_window *w, int vi, size_t off)
{
    if (vi < 0 || vi >= w->n_vertices)
        return NAN;
    int first = -1, last = -1;
    for (int k = 0; k < w->n; k++)
        if (!isnan(vfield(&w->s[k].v[vi], off))) {
            first = k;
            break;
        }
    for (int k = w->n - 1; k >= 0; k--)
        if (!isnan(vfield(&w->s[k].v[vi], off))) {
            last = k;
            break;
        }
    if (first < 0 || last <= first)
        return NAN;
    double dv = vfield(&w->s[last].v[vi], off) - vfield(&w->s[first].v[vi], off);
    int64_t dt = w->s[last].at - w->s[first].at;
    if (dt < 1)
        dt = 1;
    return 1000.0 * dv / (double)dt;
}

/* avgWithRateFallback: avg(gauge) unless NaN or infinite, then rate(counter). */
double core__w_avg_rate_fallback(const struct core_window *w, int vi, size_t gauge_off,
                                 size_t counter_off)
{
    double a = core__w_avg(w, vi, gauge_off, 0);
    if (isfinite(a))
        return a;
    return core__w_rate(w, vi, counter_off);
}

/* The newest sample's value of vertex vi's field; NaN for an empty window or unknown vi. */
double core__w_latest(const struct core_window *w, int vi, size_t off)
{
    if (vi < 0 || vi >= w->n_vertices || w->n == 0)
        return NAN;
    return vfield(&w->s[w->n - 1].v[vi], off);
}

/* Window mean (avg rules, no minimum) of a global metric. */
double core__w_gavg(const struct core_window *w, size_t off)
{
    struct avg_acc a = {0};
    for (int k = 0; k < w->n; k++)
        avg_add(&a, gfield(&w->s[k].g, off));
    return avg_result(&a, 0);
}

/* The newest sample's global metric, NaN for an empty window. */
double core__w_glatest(const struct core_window *w, size_t off)
{
    if (w->n == 0)
        return NAN;
    return gfield(&w->s[w->n - 1].g, off);
}

/* ------------------------------------------------------------- collection -- */

/* Same topology and parallelisms as the window was collected with? */
static bool same_topology(const struct core_window *w, const struct core_sample *sm)
{
    if (w->n_vertices != sm->n_vertices)
        return false;
    for (int i = 0; i < sm->n_vertices; i++) {
        int wi = core__window_index(w, sm->vertices[i].id);
        if (wi < 0 || w->parallelism[wi] != sm->vertices[i].parallelism)
            return false;
    }
    return true;
}

/* Forgets the window and starts a new one described by sm. */
static void restart(struct core_window *w, const struct core_sample *sm)
{
    core__window_free(w);
    w->running_since = sm->running_since;
    w->n_vertices = sm->n_vertices;
    size_t n = (size_t)(sm->n_vertices ? sm->n_vertices : 1);
    w->ids = core__xcalloc(n, sizeof *w->ids);
    w->parallelism = core__xcalloc(n, sizeof *w->parallelism);
    for (int i = 0; i < sm->n_vertices; i++) {
        w->ids[i] = core__strdup(sm->vertices[i].id);
        w->parallelism[i] = sm->vertices[i].parallelism;
    }
}

/*
 * A cumulative counter the client did not send, rebuilt from its per-second rate: the
 * previous sample's counter plus rate x elapsed seconds (0 for the first sample of the
 * window, or when the previous counter is unknown). rate() over such a series gives back
 * the mean of the rates, which is what a client that only has rates means (core/README.md,
 * Window: Counters from rates).
 */
static double integrate(const struct core_vmetrics *prev, int64_t prev_at, size_t off, double rate,
                        int64_t at)
{
    if (isnan(rate))
        return NAN;
    if (!prev)
        return 0.0;
    double base = vfield(prev, off);
    if (isnan(base))
        return 0.0;
    return base + rate * (double)(at - prev_at) / 1000.0;
}

static double clamp0(double x)
{
    return x < 0 ? 0.0 : x; /* NaN stays NaN */
}

static double pick_busy(const struct core_config *cfg, const struct core_vertex_in *v)
{
    switch (cfg->busy_aggregator) {
    case CORE_AGG_AVG:
        return v->busy_avg;
    case CORE_AGG_MIN:
        return v->busy_min;
    case CORE_AGG_MAX:
    default:
        return v->busy_max;
    }
}

/*
 * The OBSERVED_TPR fallback (core/README.md, Window): the mean of the values already in the window
 * (before this sample), finite ones only, at least min_obs of them; +inf when only infinities were
 * seen.
 */
static double observed_fallback(const struct core_window *w, int wi, int min_obs)
{
    return core__w_avg(w, wi, offsetof(struct core_vmetrics, observed_tpr), min_obs);
}

/*
 * The per-sample metrics of one vertex (core/README.md, Window). prev is the window's previous
 * sample of this vertex (NULL when the window is empty), used to rebuild absent counters from
 * rates.
 */
static void vertex_metrics(const struct core_window *w, int wi, const struct core_vertex_in *v,
                           bool source, const struct core_config *cfg, int64_t at,
                           const struct core_vmetrics *prev, int64_t prev_at,
                           struct core_vmetrics *m)
{
    /* A finished vertex reports zeros for busy time, pending records and the source
     * input figures, and all-zero IO counters. */
    double busy = v->finished ? 0.0 : pick_busy(cfg, v);
    double busy_avg = v->finished ? 0.0 : v->busy_avg;
    double busy_max = v->finished ? 0.0 : v->busy_max;
    double pending = v->finished ? 0.0 : v->pending_records;
    double in_per_s = v->finished ? (source ? 0.0 : NAN) : v->records_in_per_s;
    double out_per_s = v->finished ? 0.0 : v->records_out_per_s;

    m->load = isnan(busy) ? NAN : clamp0(busy) / 1000.0;
    m->load_avg = isnan(busy_avg) ? NAN : clamp0(busy_avg) / 1000.0;
    m->load_max = isnan(busy_max) ? NAN : clamp0(busy_max) / 1000.0;

    /* ACCUMULATED_BUSY_TIME: the client's counter, or (when absent) the average busy
     * ms/s x p subtasks integrated over time. It is read only by the AVG aggregator. */
    if (v->finished)
        m->acc_busy = 0.0;
    else if (!isnan(v->accumulated_busy_ms))
        m->acc_busy = v->accumulated_busy_ms;
    else
        m->acc_busy = integrate(prev, prev_at, offsetof(struct core_vmetrics, acc_busy),
                                isnan(busy_avg) ? NAN : clamp0(busy_avg) * v->parallelism, at);

    /* The source's own input rate: records_in_per_s, else records_out_per_s. */
    double src_in_per_s = isnan(in_per_s) ? out_per_s : in_per_s;

    /* NUM_RECORDS_IN: a source whose read counter is 0 (or absent) falls back to its
     * output counter; absent counters are rebuilt from the rate. */
    double rin = v->finished ? 0.0 : v->records_in;
    if (source && !v->finished && (rin == 0.0 || isnan(rin)) && !isnan(v->records_out))
        rin = v->records_out;
    if (isnan(rin))
        rin = integrate(prev, prev_at, offsetof(struct core_vmetrics, rec_in),
                        source ? src_in_per_s : in_per_s, at);
    m->rec_in = clamp0(rin);

    double rout = v->finished ? 0.0 : v->records_out;
    if (isnan(rout))
        rout = integrate(prev, prev_at, offsetof(struct core_vmetrics, rec_out), out_per_s, at);
    m->rec_out = rout;

    m->rec_in_per_s = source ? NAN : in_per_s;
    m->lag = NAN;
    m->observed_tpr = NAN;
    if (!source)
        return;

    m->lag = isnan(pending) ? 0.0 : pending;
    if (isnan(src_in_per_s))
        return; /* not set */
    if (src_in_per_s == 0.0) {
        m->observed_tpr = INFINITY; /* no input: lets the vertex scale down */
        return;
    }
    double lag_threshold_s = (double)(cfg->otpr_lag_threshold_ms / 1000);
    double observed = NAN;
    if (m->lag >= lag_threshold_s * src_in_per_s) {
        /* Catching up: the source reads as fast as it can, apart from backpressure. An
         * absent backpressure figure makes it not computable, like bp >= 1000. */
        double bp = v->finished ? 0.0 : v->backpressured;
        if (!isnan(bp) && bp < 1000.0)
            observed = src_in_per_s / (1.0 - bp / 1000.0);
    }
    if (isnan(observed))
        observed = observed_fallback(w, wi, cfg->otpr_min_observations);
    m->observed_tpr = observed;
}

static void round_vmetrics(struct core_vmetrics *m)
{
    m->load = core__round3(m->load);
    m->load_avg = core__round3(m->load_avg);
    m->load_max = core__round3(m->load_max);
    m->acc_busy = core__round3(m->acc_busy);
    m->rec_in = core__round3(m->rec_in);
    m->rec_out = core__round3(m->rec_out);
    m->rec_in_per_s = core__round3(m->rec_in_per_s);
    m->lag = core__round3(m->lag);
    m->observed_tpr = core__round3(m->observed_tpr);
}

static void global_metrics(const struct core_sample *sm, struct core_gmetrics *g)
{
    g->slots_used = sm->task_slots_total - sm->task_slots_available; /* NaN if either is */
    g->gc_pressure = sm->gc_ms_per_s / 1000.0;
    g->heap_used = sm->heap_used;
    g->heap_ratio = sm->heap_max > 0 ? sm->heap_used / sm->heap_max : NAN;
    g->managed_used = sm->managed_used;
    g->metaspace_used = sm->metaspace_used;
    g->slots_used = core__round3(g->slots_used);
    g->gc_pressure = core__round3(g->gc_pressure);
    g->heap_used = core__round3(g->heap_used);
    g->heap_ratio = core__round3(g->heap_ratio);
    g->managed_used = core__round3(g->managed_used);
    g->metaspace_used = core__round3(g->metaspace_used);
}

/*
 * Ingests sm into st's window (see core_int.h). The topology t must be sm's (validated).
 * Restarts the window when running_since, the vertex set or a parallelism changed; appends
 * the sample (also while stabilizing); trims samples older than now - window once
 * the window is full. Sets st->last_at. Never fails (allocation failure aborts).
 */
void core__window_ingest(struct core_state *st, const struct core_sample *sm,
                         const struct core_topo *t, const struct core_config *cfg,
                         struct core_window_status *out)
{
    struct core_window *w = &st->w;
    int64_t now = sm->at;
    memset(out, 0, sizeof *out);

    if (w->running_since != sm->running_since || !same_topology(w, sm)) {
        out->restarted = w->running_since != INT64_MIN || w->n_vertices > 0 || w->n > 0;
        restart(w, sm);
    }

    /* Stabilization and the window-full instant (core/README.md, Window), looking at the
     * window before this sample is added. */
    int64_t stable_time = core__time_add(sm->running_since, cfg->stabilization_ms);
    out->stabilizing = now < stable_time;
    int64_t full_time = core__time_add(now, cfg->metrics_window_ms);
    for (int k = 0; k < w->n; k++)
        if (w->s[k].at >= stable_time) {
            full_time = core__time_add(w->s[k].at, cfg->metrics_window_ms);
            break;
        }

    /* Per-sample metrics, computed against the window as it stands (the OBSERVED_TPR
     * fallback and rebuilt counters read the samples already stored). */
    struct core_wsample ns;
    ns.at = now;
    global_metrics(sm, &ns.g);
    ns.v = core__xcalloc((size_t)(w->n_vertices ? w->n_vertices : 1), sizeof *ns.v);
    const struct core_wsample *prev = w->n ? &w->s[w->n - 1] : NULL;
    for (int wi = 0; wi < w->n_vertices; wi++) {
        int i = core__topo_find(sm, w->ids[wi]);
        const struct core_vertex_in *v = &sm->vertices[i];
        vertex_metrics(w, wi, v, t->is_source[i], cfg, now, prev ? &prev->v[wi] : NULL,
                       prev ? prev->at : 0, &ns.v[wi]);
        round_vmetrics(&ns.v[wi]);
    }
    core__grow(&w->s, &w->cap, w->n + 1, sizeof *w->s);
    w->s[w->n++] = ns;
    /* A client posting far more often than the window needs (or re-sending one `at`, which
     * never fills the window) must not grow the state without bound: keep the newest. */
    if (w->n > CORE_WINDOW_MAX_SAMPLES) {
        int drop = w->n - CORE_WINDOW_MAX_SAMPLES;
        for (int k = 0; k < drop; k++)
            free(w->s[k].v);
        memmove(w->s, w->s + drop, (size_t)(w->n - drop) * sizeof *w->s);
        w->n -= drop;
        w->seq0 += drop;
    }

    if (now >= full_time) {
        out->fully_collected = true;
        int64_t cutoff = core__time_sub(now, cfg->metrics_window_ms);
        int drop = 0;
        while (drop < w->n && w->s[drop].at < cutoff)
            free(w->s[drop++].v);
        if (drop) {
            memmove(w->s, w->s + drop, (size_t)(w->n - drop) * sizeof *w->s);
            w->n -= drop;
            w->seq0 += drop;
        }
    }
    out->n_samples = w->n;
    st->last_at = now;
}
