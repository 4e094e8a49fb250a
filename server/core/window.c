/*
 * window.c - the metric window (core/README.md, Window): restart detection, the per-sample
 * scaling
 * metrics computed from one sample, stabilization and the "window full" rule, and the
 * aggregates the evaluation reads (avg, rate, avgWithRateFallback, latest).
 *
 * The window is owned by the job state (state.h); samples are appended oldest first and
 * store per-vertex metrics in the window's own vertex order (w->ids), which is the order
 * of the sample that started the window. Later samples are mapped by id. They are kept
 * compressed (winstore.c) and read through an iterator (struct core_witer), oldest first;
 * the newest sample's numbers are at hand without decoding anything.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

static double vfield(const struct core_vmetrics *m, size_t off)
{
    double x;
    memcpy(&x, (const char *)m + off, sizeof x);
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

/* What the window knows of counter c of vertex wi; nothing for a window built without. */
static struct core_wcounter wctr(const struct core_window *w, int wi, int c)
{
    return w->ctr ? w->ctr[wi * CORE_CTR__COUNT + c] : (struct core_wcounter){NAN, 0.0};
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

/* Adds number `series` of every sample, oldest first, to a: the most frequent read of a
 * decision, so it reads the decoded rows in place when there are (a decision's), and goes
 * through the iterator otherwise. */
static void avg_series(const struct core_window *w, int series, struct avg_acc *a)
{
    const struct core_wview *vw = w->view;
    if (vw) {
        const unsigned char *p =
            vw->rows + (size_t)vw->first * vw->stride + (size_t)series * sizeof(double);
        for (int k = 0; k < vw->n; k++, p += vw->stride) {
            double x;
            memcpy(&x, p, sizeof x);
            avg_add(a, x);
        }
        return;
    }
    struct core_witer it;
    for (core_witer_begin(&it, w); core_witer_next(&it);) {
        double x;
        memcpy(&x, (const char *)it.r + (size_t)series * sizeof(double), sizeof x);
        avg_add(a, x);
    }
    core_witer_end(&it);
}

/* avg of vertex vi's field at off over the window; min_obs <= 0: no minimum. */
double core__w_avg(const struct core_window *w, int vi, size_t off, int min_obs)
{
    if (vi < 0 || vi >= w->n_vertices)
        return NAN;
    struct avg_acc a = {0};
    avg_series(w, core__wseries_v(vi, off), &a);
    return avg_result(&a, min_obs);
}

/*
 * rate of a cumulative counter (core/README.md, Window): per-second slope between the first and the
 * last samples where it is not NaN, 1000 x (last - first) / max(1, dt ms). NaN with fewer than two
 * such samples. Gaps silently shorten the window, as in the reference.
 */
double core__w_rate(const struct core_window *w, int vi, size_t off)
{
    if (vi < 0 || vi >= w->n_vertices || w->n < 2)
        return NAN;
    /* the first sample that has it, from the oldest on; the last, usually the newest */
    int first_k = -1;
    double first = NAN, last;
    int64_t first_at = 0, last_at = 0;
    struct core_witer it;
    for (core_witer_begin(&it, w); core_witer_next(&it);) {
        first = vfield(&it.r->v[vi], off);
        if (!isnan(first)) {
            first_k = it.k - 1;
            first_at = it.at;
            break;
        }
    }
    core_witer_end(&it);
    if (first_k < 0)
        return NAN;
    last = core__window_newest(w, core__wseries_v(vi, off), &last_at);
    int last_k = w->n - 1;
    if (isnan(last)) { /* then the last sample that has it */
        for (core_witer_begin(&it, w); core_witer_next(&it);) {
            double x = vfield(&it.r->v[vi], off);
            if (!isnan(x)) {
                last = x;
                last_at = it.at;
                last_k = it.k - 1;
            }
        }
        core_witer_end(&it);
    }
    if (last_k <= first_k)
        return NAN;
    double dv = last - first;
    int64_t dt = last_at - first_at;
    if (dt < 1)
        dt = 1;
    return 1000.0 * dv / (double)dt;
}

/* avgWithRateFallback: avg(gauge) unless NaN or infinite, then rate(counter). */
/*
 * Series statistics (core/README.md, Window: variability): the mean of values x_k with
 * weights d_k (sum of x_k d_k over sum of d_k), the unweighted sample variance of the x_k,
 * and their effective count n (1 - rho) / (1 + rho), rho the lag-1 autocorrelation clamped to
 * [0, 0.9]: consecutive samples of a load that moves over minutes are not independent, and
 * the mean of n of them is known only as well as that of fewer.
 */
struct series {
    double sum_xd, sum_d, sum_x, sum_xx, sum_lag, prev;
    int n;
};

static void series_add(struct series *a, double x, double d)
{
    if (a->n > 0)
        a->sum_lag += x * a->prev;
    a->sum_xd += x * d;
    a->sum_d += d;
    a->sum_x += x;
    a->sum_xx += x * x;
    a->prev = x;
    a->n++;
}

/* first, last: the first and last x (for the lag-1 sums). */
static void series_stats(const struct series *a, double first, double last,
                         struct core_series_stats *out)
{
    out->n = a->n;
    out->mean = a->sum_d > 0 ? a->sum_xd / a->sum_d : NAN;
    out->var = NAN;
    out->n_eff = a->n;
    if (a->n < 2)
        return;
    double m = a->sum_x / a->n;
    double ss = a->sum_xx - a->n * m * m;
    out->var = ss > 0 ? ss / (a->n - 1) : 0.0;
    if (a->n < 3 || !(ss > 0))
        return;
    /* sum over k of (x_k - m)(x_{k+1} - m), from the running sums */
    double c1 = a->sum_lag - m * (2.0 * a->sum_x - first - last) + (a->n - 1) * m * m;
    double rho = c1 / ss;
    rho = rho < 0 ? 0 : rho > 0.9 ? 0.9 : rho;
    out->n_eff = a->n * (1.0 - rho) / (1.0 + rho);
    if (out->n_eff < 1)
        out->n_eff = 1;
}

/* A series' figures before anything is added (none); false when vertex vi is not in w. */
static bool stats_begin(const struct core_window *w, int vi, struct core_series_stats *out)
{
    out->n = 0;
    out->mean = out->var = NAN;
    out->n_eff = 0;
    return vi >= 0 && vi < w->n_vertices;
}

/* Where arrivals_next is in a window: the next row to read and the last one with an input
 * count (-1: none yet). */
struct arrivals_it {
    int k, prev;
};

/* The next interval of source vi's arrivals in (from, to]: the records it read between two
 * rows with an input count plus its lag's growth, a second, into *x, over *d seconds, the
 * interval's midpoint (ms) into *mid; false past the window's last row. */
static bool arrivals_next(const struct core_window *w, int vi, int64_t from, int64_t to,
                          struct arrivals_it *it, double *x, double *d, double *mid)
{
    const size_t in_off = offsetof(struct core_vmetrics, rec_in),
                 lag_off = offsetof(struct core_vmetrics, lag);
    while (it->k < w->n) {
        int k = it->k++, prev = it->prev;
        const struct core_vmetrics *m = &core__wv_row(w, k)->v[vi];
        double in = vfield(m, in_off), lag = vfield(m, lag_off);
        if (isnan(in))
            continue;
        it->prev = k;
        int64_t at = core__wv_at(w, k);
        if (prev < 0 || at <= from || at > to || at <= core__wv_at(w, prev))
            continue;
        const struct core_vmetrics *p = &core__wv_row(w, prev)->v[vi];
        double plag = vfield(p, lag_off);
        *d = (double)(at - core__wv_at(w, prev)) / 1000.0;
        *x = (in - vfield(p, in_off) + (isnan(lag) ? 0.0 : lag) - (isnan(plag) ? 0.0 : plag)) / *d;
        *mid = (double)(at + core__wv_at(w, prev)) / 2.0;
        return true;
    }
    return false;
}

void core__w_arrivals(const struct core_window *w, int vi, int64_t from, int64_t to,
                      struct core_series_stats *out)
{
    struct series a = {0};
    double first = NAN, last = NAN;
    if (!stats_begin(w, vi, out))
        return;
    struct arrivals_it it = {0, -1};
    double x, d, mid;
    while (arrivals_next(w, vi, from, to, &it, &x, &d, &mid)) {
        if (isnan(first))
            first = x;
        last = x;
        series_add(&a, x, d);
    }
    series_stats(&a, first, last, out);
}

/* The per-interval arrival rates of source vi over (from, to] (as core__w_arrivals), each at
 * its interval's midpoint (ms): up to max of them into x[] and t[]; returns the count. */
static int arrivals_series(const struct core_window *w, int vi, int64_t from, int64_t to, double *x,
                           double *t, int max)
{
    struct arrivals_it it = {0, -1};
    double d;
    int n = 0;
    while (n < max && arrivals_next(w, vi, from, to, &it, &x[n], &d, &t[n]))
        n++;
    return n;
}

bool core__w_arrivals_trend(const struct core_window *w, int vi, int64_t from, int64_t to,
                            double *slope, double *se, int64_t *center)
{
    *slope = *se = NAN;
    *center = to;
    if (vi < 0 || vi >= w->n_vertices || w->n < 4)
        return false;
    double *x = core__xmalloc((size_t)w->n * sizeof *x),
           *t = core__xmalloc((size_t)w->n * sizeof *t);
    int n = arrivals_series(w, vi, from, to, x, t, w->n);
    bool ok = false;
    if (n >= 4) {
        double t0 = t[0], mt = 0, mx = 0;
        for (int k = 0; k < n; k++) {
            t[k] = (t[k] - t0) / 1000.0; /* seconds from the first midpoint */
            mt += t[k];
            mx += x[k];
        }
        mt /= n;
        mx /= n;
        double stt = 0, stx = 0;
        for (int k = 0; k < n; k++) {
            stt += (t[k] - mt) * (t[k] - mt);
            stx += (t[k] - mt) * (x[k] - mx);
        }
        if (stt > 0) {
            double b = stx / stt, a = mx - b * mt;
            /* Residuals: their variance, and their lag-1 autocorrelation for the effective
             * count (a load that wanders for minutes is not n independent points). */
            double rss = 0, c1 = 0, prev = 0;
            for (int k = 0; k < n; k++) {
                double e = x[k] - a - b * t[k];
                rss += e * e;
                if (k > 0)
                    c1 += e * prev;
                prev = e;
            }
            double rho = rss > 0 ? c1 / rss : 0.0;
            rho = rho < 0 ? 0 : rho > 0.9 ? 0.9 : rho;
            double inflate = (1.0 + rho) / (1.0 - rho);
            *slope = b;
            *se = sqrt(rss / (n - 2) / stt * inflate);
            *center = (int64_t)t0 + (int64_t)llround(mt * 1000.0);
            ok = true;
        }
    }
    free(x);
    free(t);
    return ok;
}

void core__w_gauge_stats(const struct core_window *w, int vi, size_t off,
                         struct core_series_stats *out)
{
    struct series a = {0};
    double first = NAN, last = NAN;
    if (!stats_begin(w, vi, out))
        return;
    for (int k = 0; k < w->n; k++) {
        double x = vfield(&core__wv_row(w, k)->v[vi], off);
        if (!isfinite(x))
            continue;
        if (isnan(first))
            first = x;
        last = x;
        series_add(&a, x, 1.0);
    }
    series_stats(&a, first, last, out);
}

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
    return core__window_newest(w, core__wseries_v(vi, off), NULL);
}

/* Window mean (avg rules, no minimum) of a global metric. */
double core__w_gavg(const struct core_window *w, size_t off)
{
    struct avg_acc a = {0};
    avg_series(w, core__wseries_g(off), &a);
    return avg_result(&a, 0);
}

/* The newest sample's global metric, NaN for an empty window. */
double core__w_glatest(const struct core_window *w, size_t off)
{
    if (w->n == 0)
        return NAN;
    return core__window_newest(w, core__wseries_g(off), NULL);
}

/* ------------------------------------------------------------- collection -- */

/* splitmix64's finalizer: spreads one edge's FNV hash before the edges are summed. */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h ^ 0x1f; /* a separator, so "ab"+"c" and "a"+"bc" differ */
}

/* A hash of the sample's edges (from, to, ship strategy) that does not depend on the order
 * in which vertices or inputs are listed; never 0 (0 means "not known"). */
static uint64_t topo_hash(const struct core_sample *sm, const struct core_topo *t)
{
    uint64_t sum = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < sm->n_vertices; i++)
        for (int k = t->in_start[i]; k < t->in_start[i + 1]; k++) {
            uint64_t h = 0xcbf29ce484222325ULL;
            h = fnv(h, sm->vertices[t->in_src[k]].id);
            h = fnv(h, sm->vertices[i].id);
            h = fnv(h, core_ship_name(t->in_ship[k]));
            sum += mix(h);
        }
    return sum ? sum : 1;
}

/* Forgets the window and starts a new one described by sm, stabilizing from started_at. */
static void restart(struct core_window *w, const struct core_sample *sm, const struct core_topo *t,
                    int64_t started_at)
{
    bool decoded = w->view != NULL; /* a decision reads it decoded: so it stays */
    core__window_free(w);
    w->running_since = sm->running_since;
    w->started_at = started_at;
    w->topo_hash = topo_hash(sm, t);
    w->n_vertices = sm->n_vertices;
    size_t n = (size_t)(sm->n_vertices ? sm->n_vertices : 1);
    w->ids = core__xcalloc(n, sizeof *w->ids);
    w->parallelism = core__xcalloc(n, sizeof *w->parallelism);
    w->ctr = core__xcalloc(n * CORE_CTR__COUNT, sizeof *w->ctr);
    for (int i = 0; i < sm->n_vertices; i++) {
        w->ids[i] = core__strdup(sm->vertices[i].id);
        w->parallelism[i] = sm->vertices[i].parallelism;
    }
    for (size_t k = 0; k < n * CORE_CTR__COUNT; k++) {
        w->ctr[k].sent = NAN;
        w->ctr[k].offset = 0.0;
    }
    if (decoded)
        core__window_decode(w);
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

/* ---------------------------------------------------------------- counters -- */

static const size_t counter_off[CORE_CTR__COUNT] = {
    offsetof(struct core_vmetrics, rec_in),
    offsetof(struct core_vmetrics, rec_out),
    offsetof(struct core_vmetrics, acc_busy),
};
static const char *const counter_name[CORE_CTR__COUNT] = {"records_in", "records_out",
                                                          "accumulated_busy_ms"};

/* The source's own input rate: records_in_per_s, else records_out_per_s. */
static double source_in_rate(const struct core_vertex_in *v)
{
    return isnan(v->records_in_per_s) ? v->records_out_per_s : v->records_in_per_s;
}

/*
 * What the client sent of counter c of vertex v (NaN when absent) and the gauge it moves at
 * (per second, NaN when unknown): records_in with the input rate (a source's own input rate;
 * a source whose read counter is 0 or absent uses its write counter), records_out with
 * records_out_per_s, the busy counter with the average busy time x p. Not for a finished
 * vertex, whose counters are all 0.
 */
static void counter_in(const struct core_vertex_in *v, bool source, enum core_counter c, double *x,
                       double *g)
{
    switch (c) {
    case CORE_CTR_IN:
        *x = v->records_in;
        if (source && (*x == 0.0 || isnan(*x)) && !isnan(v->records_out))
            *x = v->records_out;
        *x = clamp0(*x);
        *g = source ? source_in_rate(v) : v->records_in_per_s;
        break;
    case CORE_CTR_OUT:
        *x = v->records_out;
        *g = v->records_out_per_s;
        break;
    case CORE_CTR_BUSY:
    default:
        *x = v->accumulated_busy_ms;
        *g = isnan(v->busy_avg) ? NAN : clamp0(v->busy_avg) * v->parallelism;
        break;
    }
}

/* The newest value of vertex wi's field off in the window, and its sample's `at`. */
static bool last_defined(const struct core_window *w, int wi, size_t off, double *x, int64_t *at)
{
    if (w->n == 0)
        return false;
    double y = core__window_newest(w, core__wseries_v(wi, off), at);
    if (!isnan(y)) { /* the usual case: the newest sample has it */
        *x = y;
        return true;
    }
    bool found = false;
    struct core_witer it;
    for (core_witer_begin(&it, w); core_witer_next(&it);) {
        y = vfield(&it.r->v[wi], off);
        if (!isnan(y)) {
            *x = y;
            *at = it.at;
            found = true;
        }
    }
    core_witer_end(&it);
    return found;
}

/*
 * The value the window stores for counter c of window vertex wi (core/README.md, Window:
 * Counters), given the client's x (NaN = absent) and gauge g at `at`, and the counter's
 * offset from then on in *offset. A sent counter is stored minus the offset. An absent one
 * is rebuilt: the last value the window has plus g x the time since (0 when the window has
 * none yet; NaN without a gauge). When the client starts sending a counter the window has
 * rebuilt so far, the series goes on from the rebuilt value (this interval at the gauge's
 * rate) and the offset takes up the difference: the client's total is not an increment.
 */
static double counter_value(const struct core_window *w, int wi, enum core_counter c, double x,
                            double g, int64_t at, double *offset)
{
    struct core_wcounter k = wctr(w, wi, c);
    double base;
    int64_t base_at;
    bool have = last_defined(w, wi, counter_off[c], &base, &base_at);
    *offset = k.offset;
    if (!isnan(x)) {
        if (isnan(k.sent) && have) {
            double step = isnan(g) ? 0.0 : g * (double)(at - base_at) / 1000.0;
            *offset = x - (base + step);
        }
        return x - *offset;
    }
    if (isnan(g))
        return NAN;
    if (!have)
        return 0.0;
    return base + g * (double)(at - base_at) / 1000.0;
}

/*
 * The rate of counter c of window vertex wi (as stored, y now) over the span back to the newest
 * stored sample at least CORE_GAUGE_SPAN_MS older; NaN when the window reaches back less far.
 */
static double counter_span_rate(const struct core_window *w, int wi, enum core_counter c, double y,
                                int64_t at)
{
    /* Sample times never go back: the last sample passed before the first one too new is the
     * newest old enough. */
    struct core_witer it;
    double b = NAN;
    int64_t b_at = INT64_MIN;
    for (core_witer_begin(&it, w); core_witer_next(&it);) {
        if (at - it.at < CORE_GAUGE_SPAN_MS)
            break;
        b = vfield(&it.r->v[wi], counter_off[c]);
        b_at = it.at;
    }
    core_witer_end(&it);
    if (b_at == INT64_MIN)
        return NAN;
    return isnan(b) ? NAN : (y - b) * 1000.0 / (double)(at - b_at);
}

/* Whether gauge g and counter rate r disagree beyond the factor tol (+1/s each, so that
 * near-idle rates do not count). */
static bool gauge_off(double g, double r, double tol)
{
    if (isnan(g) || isnan(r) || g < 0 || r < 0)
        return false;
    double hi = (g > r ? g : r) + 1.0, lo = (g > r ? r : g) + 1.0;
    return hi > tol * lo;
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
 * The per-sample metrics of one vertex (core/README.md, Window), computed against the window
 * as it stands (the OBSERVED_TPR fallback and rebuilt counters read the samples already
 * stored). offsets[] receives each counter's offset from this sample on.
 */
static void vertex_metrics(const struct core_window *w, int wi, const struct core_vertex_in *v,
                           bool source, const struct core_config *cfg, int64_t at, int64_t up_ms,
                           struct core_vmetrics *m, double *offsets, struct core_window_status *out)
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

    /* The counters: the client's, or rebuilt from their gauges (core/README.md, Window:
     * Counters). ACCUMULATED_BUSY_TIME is read only by the AVG aggregator. */
    bool in_held = false; /* records_in stepped back: jitter, held at its last value */
    for (int c = 0; c < CORE_CTR__COUNT; c++) {
        double x, g, y;
        offsets[c] = wctr(w, wi, c).offset;
        if (v->finished) {
            y = 0.0;
        } else {
            counter_in(v, source, (enum core_counter)c, &x, &g);
            y = counter_value(w, wi, (enum core_counter)c, x, g, at, &offsets[c]);
            /* A step back the window took (core__window_check restarts it for any other) is
             * jitter: no progress, not a new base (governor.counters.jitter). */
            double base;
            int64_t base_at;
            if (!isnan(x) && last_defined(w, wi, counter_off[c], &base, &base_at) && y < base) {
                y = base;
                in_held |= c == CORE_CTR_IN;
            }
        }
        memcpy((char *)m + counter_off[c], &y, sizeof y);
    }
    m->rec_in = clamp0(m->rec_in);

    /* The source's own input rate: records_in_per_s, else records_out_per_s. */
    double src_in_per_s = isnan(in_per_s) ? out_per_s : in_per_s;
    /* Gauges and counters (core/README.md, Window): an input-rate gauge far from what the
     * counter rose by over the last minute or more (per-subtask meters sent for summed ones)
     * is not trusted; the counter's rate stands in for it. Not when the counter is the
     * suspect: held after a step back, or risen more than plausibility.max-ratio times
     * faster than the gauge (a jump, which plausibility is about). */
    double sent, g;
    counter_in(v, source, CORE_CTR_IN, &sent, &g);
    if (!v->finished && !in_held && !isnan(sent) && !isnan(m->rec_in)) {
        double r = counter_span_rate(w, wi, CORE_CTR_IN, m->rec_in, at);
        if (gauge_off(g, r, cfg->gauge_tolerance) && r <= cfg->plausibility_ratio * (g + 1.0)) {
            if (out->n_gauge_off < CORE_GAUGE_REPORTED) {
                out->gauge_off[out->n_gauge_off].wi = wi;
                out->gauge_off[out->n_gauge_off].gauge = g;
                out->gauge_off[out->n_gauge_off].counter = r;
            }
            out->n_gauge_off++;
            if (source)
                src_in_per_s = r;
            else
                in_per_s = r;
        }
    }
    m->rec_in_per_s = source ? NAN : in_per_s;
    m->lag = NAN;
    m->observed_tpr = NAN;
    if (!source)
        return;

    m->lag = isnan(pending) ? 0.0 : pending;
    if (isnan(src_in_per_s))
        return; /* not set */
    /* governor.source-rate.guard: a meter that has not yet run for its whole span since the
     * job started reads low (Flink's averages the last minute, counting from 0), while the
     * busy and back-pressure gauges are already current: no observation. */
    if (cfg->source_rate_guard && up_ms < cfg->source_rate_warm_up_ms)
        return;
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
        /* governor.source-rate.guard: a source held back by a downstream bottleneck reads at
         * the bottleneck's pace; in / (1 - bp) then extrapolates from a 60 s meter and a
         * back-pressure gauge of the last seconds, which need not describe the same time. */
        bool held = cfg->source_rate_guard && !(bp <= 1000.0 * cfg->source_rate_max_bp);
        if (!isnan(bp) && bp < 1000.0 && !held)
            observed = src_in_per_s / (1.0 - bp / 1000.0);
    }
    /* The reference stores the mean of the earlier values when this sample has none, so a
     * low first value lives on in every later mean; the guard stores only observations. */
    if (isnan(observed) && !cfg->source_rate_guard)
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

/* ----------------------------------------------------- restart, plausibility -- */

const char *core__restart_name(enum core_restart r)
{
    static const char *const n[] = {"none",     "first",    "declared", "vertices", "edges",
                                    "rescaled", "counters", "jumped",   "gap"};
    return (unsigned)r <= CORE_RESTART_GAP ? n[r] : "?";
}

__attribute__((format(printf, 2, 3))) static void why(struct core_window_check *chk,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(chk->why, sizeof chk->why, fmt, ap);
    va_end(ap);
}

/* Sample vertex i's and window vertex wi's parallelism differ? Also false for a new id. */
static bool topology_of(const struct core_window *w, const struct core_sample *sm,
                        const struct core_topo *t, struct core_window_check *chk)
{
    if (w->running_since == INT64_MIN && w->n_vertices == 0) {
        chk->restart = CORE_RESTART_FIRST;
        return true;
    }
    if (w->running_since != sm->running_since) {
        chk->restart = CORE_RESTART_DECLARED;
        why(chk, "running_since changed");
        return true;
    }
    bool same_ids = w->n_vertices == sm->n_vertices;
    int rescaled = -1, rescaled_wi = -1;
    for (int i = 0; i < sm->n_vertices && same_ids; i++) {
        int wi = core__topo_wi(t, w, sm, i);
        same_ids = wi >= 0;
        if (same_ids && rescaled < 0 && w->parallelism[wi] != sm->vertices[i].parallelism) {
            rescaled = i;
            rescaled_wi = wi;
        }
    }
    if (!same_ids) {
        chk->restart = CORE_RESTART_VERTICES;
        why(chk, "the set of vertices changed under the same running_since");
        return true;
    }
    if (w->topo_hash != 0 && w->topo_hash != topo_hash(sm, t)) {
        chk->restart = CORE_RESTART_EDGES;
        why(chk, "an edge or a ship strategy changed under the same running_since");
        return true;
    }
    if (rescaled >= 0) {
        chk->restart = CORE_RESTART_RESCALED;
        why(chk, "%s runs at %d instead of %d under the same running_since",
            sm->vertices[rescaled].id, sm->vertices[rescaled].parallelism,
            w->parallelism[rescaled_wi]);
        return true;
    }
    return false;
}

/*
 * The counters of sample vertex i against the window (core/README.md, Window: Restart and
 * Plausibility). Sets chk->restart to COUNTERS for a counter that went back to a value a
 * reset explains; with plausibility on, sets chk->implausible for one that went back further,
 * or grew faster than its gauge allows, or (the busy counter) faster than time allows.
 */
static void counters_of(const struct core_window *w, const struct core_sample *sm,
                        const struct core_topo *t, int i, const struct core_config *cfg,
                        struct core_window_check *chk)
{
    const struct core_vertex_in *v = &sm->vertices[i];
    int wi = core__topo_wi(t, w, sm, i);
    if (v->finished || wi < 0)
        return;
    double k = cfg->plausibility_ratio;
    for (int c = 0; c < CORE_CTR__COUNT; c++) {
        double x, g, base;
        int64_t base_at;
        counter_in(v, t->is_source[i], (enum core_counter)c, &x, &g);
        if (isnan(x) || !last_defined(w, wi, counter_off[c], &base, &base_at))
            continue;
        struct core_wcounter kc = wctr(w, wi, c);
        /* Below a second the counters' own sampling jitter dominates. */
        double dt_s = (double)(sm->at - base_at > 1000 ? sm->at - base_at : 1000) / 1000.0;
        if (!isnan(kc.sent) && x < kc.sent) {
            /* A sum over subtasks read at slightly different instants steps back a little:
             * jitter, which the window takes as no progress (vertex_metrics). */
            if (kc.sent - x <= cfg->counter_jitter * kc.sent)
                continue;
            /* Flink's counters start from 0 when a task restarts: a reset during the interval
             * explains a value up to what the gauge counts in it. */
            bool reset = isnan(g) || !cfg->plausibility || x <= k * (g + 1.0) * dt_s;
            if (reset) {
                if (chk->restart == CORE_RESTART_NONE) {
                    chk->restart = CORE_RESTART_COUNTERS;
                    why(chk, "%s's %s went back from %.0f to %.0f under the same running_since",
                        v->id, counter_name[c], kc.sent, x);
                }
            } else if (!chk->implausible) {
                chk->implausible = true;
                why(chk, "%s's %s went back from %.0f to %.0f, which no reset explains", v->id,
                    counter_name[c], kc.sent, x);
            }
            continue;
        }
        if (!cfg->plausibility || chk->implausible)
            continue;
        double off;
        double rate =
            (counter_value(w, wi, (enum core_counter)c, x, g, sm->at, &off) - base) / dt_s;
        if (!isnan(g) && rate > k * (g + 1.0)) {
            chk->implausible = true;
            why(chk, "%s's %s grew %.0f/s over the last %.0f s while its gauge says %.0f/s", v->id,
                counter_name[c], rate, dt_s, g);
        } else if (c == CORE_CTR_BUSY && rate > 2.0 * 1000.0 * v->parallelism) {
            chk->implausible = true;
            why(chk,
                "%s's accumulated_busy_ms grew %.0f ms/s over the last %.0f s, more than its %d "
                "subtasks can be busy",
                v->id, rate, dt_s, v->parallelism);
        }
    }
}

/*
 * Does sm restart the window, or is it left out as implausible (core/README.md, Window)?
 * Reads the window and st->rejected only.
 */
void core__window_check(const struct core_state *st, const struct core_sample *sm,
                        const struct core_topo *t, const struct core_config *cfg,
                        struct core_window_check *chk)
{
    const struct core_window *w = &st->w;
    memset(chk, 0, sizeof *chk);
    if (topology_of(w, sm, t, chk))
        return;
    for (int i = 0; i < sm->n_vertices; i++)
        counters_of(w, sm, t, i, cfg, chk);
    if (chk->restart != CORE_RESTART_NONE) {
        chk->implausible = false;
        return;
    }
    /* governor.window.refill-after-gap: after no sample for longer than the window, what the
     * window holds describes another time of the job: it refills before anything is decided
     * (without a stabilization: the job did not restart). */
    int64_t newest = INT64_MIN;
    if (w->n > 0)
        core__window_newest(w, 0, &newest);
    if (cfg->window_refill && w->n > 0 && sm->at - newest > cfg->metrics_window_ms) {
        char gap[32], win[32];
        core_format_duration(gap, sizeof gap, (sm->at - newest) / 1000 * 1000);
        core_format_duration(win, sizeof win, cfg->metrics_window_ms);
        chk->implausible = false;
        chk->restart = CORE_RESTART_GAP;
        why(chk, "no sample for %s, longer than the metric window (%s): the window refills", gap,
            win);
        return;
    }
    /* Counters that keep disagreeing have moved to a new base: start over from it. */
    if (chk->implausible && st->rejected + 1 >= CORE_MAX_REJECTED) {
        chk->implausible = false;
        chk->restart = CORE_RESTART_JUMPED;
        char was[sizeof chk->why];
        memcpy(was, chk->why, sizeof was);
        why(chk, "%d samples in a row were implausible (the last: %s)", CORE_MAX_REJECTED, was);
    }
}

/*
 * Adds sm to st's window as chk decided (see core_int.h). The topology t must be sm's
 * (validated). Restarts the window when chk says so; leaves an implausible sample out;
 * otherwise appends it (also while stabilizing) and trims samples older than now - window
 * once the window is full. Never fails (allocation failure aborts).
 */
void core__window_add(struct core_state *st, const struct core_sample *sm,
                      const struct core_topo *t, const struct core_config *cfg,
                      const struct core_window_check *chk, struct core_window_status *out)
{
    struct core_window *w = &st->w;
    int64_t now = sm->at;
    memset(out, 0, sizeof *out);
    out->restart = chk->restart;

    if (chk->restart != CORE_RESTART_NONE) {
        out->restarted = w->running_since != INT64_MIN || w->n_vertices > 0 || w->n > 0;
        /* A restart the client declared counts from its running_since; one it did not, from
         * the first sample that shows it. */
        bool declared = chk->restart == CORE_RESTART_FIRST || chk->restart == CORE_RESTART_DECLARED;
        /* After a gap the job has run all along: nothing to stabilize, the window refills. */
        int64_t from = chk->restart == CORE_RESTART_GAP ? core__time_sub(now, cfg->stabilization_ms)
                       : declared                       ? sm->running_since
                                                        : now;
        restart(w, sm, t, from);
        st->rejected = 0;
    } else if (chk->implausible) {
        st->rejected++;
        out->rejected = true;
        out->n_samples = w->n;
        out->stabilizing = now < core__time_add(w->started_at, cfg->stabilization_ms);
        st->last_at = now;
        return;
    } else {
        st->rejected = 0;
    }

    /* Stabilization and the window-full instant (core/README.md, Window), looking at the
     * window before this sample is added. */
    int64_t stable_time = core__time_add(w->started_at, cfg->stabilization_ms);
    out->stabilizing = now < stable_time;
    int64_t full_time = core__time_add(now, cfg->metrics_window_ms);
    int64_t first_stable = INT64_MIN;
    struct core_witer it;
    for (core_witer_begin(&it, w); core_witer_next(&it);)
        if (it.at >= stable_time) {
            first_stable = it.at;
            break;
        }
    core_witer_end(&it);
    /* governor.window.keep-full: the window is full from its first stable sample on, even
     * once that sample has been trimmed (the reference looks at the oldest one left). */
    if (w->full_from == INT64_MIN)
        w->full_from = first_stable;
    if (cfg->window_keep_full && w->full_from != INT64_MIN)
        first_stable = w->full_from;
    if (first_stable != INT64_MIN)
        full_time = core__time_add(first_stable, cfg->metrics_window_ms);

    size_t nv = (size_t)(w->n_vertices ? w->n_vertices : 1);
    struct core_wrow *ns = core__xcalloc(1, sizeof *ns + nv * sizeof ns->v[0]);
    global_metrics(sm, &ns->g);
    double *offsets = core__xcalloc(nv * CORE_CTR__COUNT, sizeof *offsets);
    int *at_i = core__xcalloc(nv, sizeof *at_i);
    for (int wi = 0; wi < w->n_vertices; wi++) {
        /* A restarted window lists the sample's vertices in its order. */
        int i = at_i[wi] = chk->restart != CORE_RESTART_NONE ? wi : core__topo_si(t, w, sm, wi);
        const struct core_vertex_in *v = &sm->vertices[i];
        vertex_metrics(w, wi, v, t->is_source[i], cfg, now, now - sm->running_since, &ns->v[wi],
                       offsets + wi * CORE_CTR__COUNT, out);
        round_vmetrics(&ns->v[wi]);
    }
    /* What the window knows of the counters from now on. */
    if (!w->ctr && w->n_vertices) { /* a window built without them (by hand) */
        w->ctr = core__xcalloc((size_t)w->n_vertices * CORE_CTR__COUNT, sizeof *w->ctr);
        for (int k = 0; k < w->n_vertices * CORE_CTR__COUNT; k++)
            w->ctr[k].sent = NAN;
    }
    for (int wi = 0; wi < w->n_vertices; wi++) {
        int i = at_i[wi];
        const struct core_vertex_in *v = &sm->vertices[i];
        if (v->finished)
            continue;
        for (int c = 0; c < CORE_CTR__COUNT; c++) {
            double x, g;
            counter_in(v, t->is_source[i], (enum core_counter)c, &x, &g);
            struct core_wcounter *kc = &w->ctr[wi * CORE_CTR__COUNT + c];
            kc->offset = offsets[wi * CORE_CTR__COUNT + c];
            if (!isnan(x))
                kc->sent = x;
        }
    }
    free(offsets);
    free(at_i);
    core_window_append(w, now, ns);
    free(ns);
    /* A client posting far more often than the window needs (or re-sending one `at`, which
     * never fills the window) must not grow the state without bound: keep the newest. */
    if (w->n > CORE_WINDOW_MAX_SAMPLES)
        core__window_drop(w, w->n - CORE_WINDOW_MAX_SAMPLES);

    if (now >= full_time) {
        out->fully_collected = true;
        int64_t cutoff = core__time_sub(now, cfg->metrics_window_ms);
        int drop = 0;
        for (core_witer_begin(&it, w); core_witer_next(&it) && it.at < cutoff;)
            drop++;
        core_witer_end(&it);
        core__window_drop(w, drop);
    }
    out->n_samples = w->n;
    st->last_at = now;
}

/* core__window_check then core__window_add. */
void core__window_ingest(struct core_state *st, const struct core_sample *sm,
                         const struct core_topo *t, const struct core_config *cfg,
                         struct core_window_status *out)
{
    struct core_window_check chk;
    core__window_check(st, sm, t, cfg, &chk);
    core__window_add(st, sm, t, cfg, &chk, out);
}
