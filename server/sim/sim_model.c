/*
 * sim_model.c - the simulated job (see sim_model.h for the model).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_model.h"
#include "sim/sim_rng.h"
#include "base/xmem.h"

#define GAUGE_S 5  /* busy and back-pressure gauges: mean over the last 5 s */
#define METER_S 60 /* records_in_per_s: Flink's 60 s meter */

/* Random streams of the measurement noise: one per (vertex, gauge). */
#define STREAM_NOISE 0x200000u
enum gauge { G_BUSY, G_BP, G_RATE, G__COUNT };

struct vrun {
    int p;                            /* deployed (or being deployed) */
    double hot;                       /* share of the input on the hottest key, this second */
    double rec_in, rec_out, busy_acc; /* counters since the job last started */
    double meter[METER_S + 1];        /* rec_in at each of the last 61 s, by t % 61 */
    double g_min[GAUGE_S], g_avg[GAUGE_S], g_max[GAUGE_S], g_bp[GAUGE_S]; /* by t % 5 */
    struct sim_vstat last;
    /* sources */
    double a;       /* arrival rate in the last second */
    double backlog; /* pending records */
    double read;    /* records read since t = 0 */
    double *arr;    /* arr[k]: records arrived in [0, k) */
    int64_t n_arr, cap_arr;
    int64_t j; /* lag search: the first k with arr[k] >= read is at or after j */
};

struct sim_model {
    const struct sim_scenario *sc;
    int n;
    int64_t t, running_since, down_until;
    bool down;
    double lag; /* seconds, at t */
    struct vrun *v;
    double *gain; /* gain[s * n + v]: records into v per record read by source s */
    bool *reach;  /* reach[u * n + w]: w is downstream of u */
    /* scratch, one entry per vertex */
    double *desired, *ld, *lam, *theta;
    int *wlim;
    bool *thr;
};

static bool is_source(const struct sim_vertex *x)
{
    return x->n_inputs == 0;
}

/* The largest and smallest share of a vertex's input that one of its p subtasks gets. */
static void shares(const struct sim_vertex *x, int p, double h, double *smin, double *smax)
{
    if (p <= 1) {
        *smin = *smax = 1.0;
        return;
    }
    int k = 0;
    if (is_source(x)) {
        k = x->partitions;
    } else {
        for (int i = 0; i < x->n_inputs; i++)
            if (x->inputs[i].ship == CORE_SHIP_HASH)
                k = x->max_parallelism;
    }
    double hi, lo;
    if (k <= 0) {
        hi = lo = 1.0 / p;
    } else if (p >= k) {
        hi = 1.0 / k;
        lo = p > k ? 0.0 : 1.0 / k;
    } else {
        hi = (double)((k + p - 1) / p) / k;
        lo = (double)(k / p) / k;
    }
    *smax = h + (1.0 - h) * hi;
    *smin = (1.0 - h) * lo;
}

/* One subtask's rate when busy all the time, at parallelism p: sub-linear by the scaling
 * exponent and by Amdahl's serial share. */
static double subtask_rate(const struct sim_vertex *x, int p)
{
    double r = x->capacity * pow((double)p, x->scaling - 1.0);
    if (x->serial > 0)
        r /= 1.0 + x->serial * (double)(p - 1);
    return r;
}

/* The share of second t a vertex's subtasks spend in pauses (0 outside them). */
static double paused(const struct sim_vertex *x, int64_t t)
{
    const struct sim_pauses *g = &x->pauses;
    if (!(g->share > 0) || t < g->at)
        return 0.0;
    return (t - g->at) % g->every < g->duration ? g->share : 0.0;
}

double sim_model_vertex_capacity(const struct sim_scenario *sc, int v, int p, double hot)
{
    const struct sim_vertex *x = &sc->v[v];
    double smin, smax;
    shares(x, p, hot, &smin, &smax);
    double c = subtask_rate(x, p) / smax;
    return c < x->rate_cap ? c : x->rate_cap;
}

/* The hot key's share of input i of x at second t (0 before it appears). */
static double edge_hot(const struct sim_input *in, int64_t t)
{
    return t >= in->hot_key_at ? in->hot_key : 0.0;
}

/* The hot-key share of v's input at second t for the flows ld (records/s into each
 * vertex). */
static double hot_share(const struct sim_scenario *sc, int v, const double *ld, int64_t t)
{
    const struct sim_vertex *x = &sc->v[v];
    double all = 0, hot = 0;
    for (int i = 0; i < x->n_inputs; i++) {
        int f = x->inputs[i].from;
        double flow = ld[f] * sc->v[f].selectivity;
        all += flow;
        hot += flow * edge_hot(&x->inputs[i], t);
    }
    if (all > 0)
        return hot / all;
    /* Nothing flows: the edges' mean, so that capacities stay defined. */
    for (int i = 0; i < x->n_inputs; i++)
        hot += edge_hot(&x->inputs[i], t);
    return x->n_inputs ? hot / x->n_inputs : 0.0;
}

static void gains(const struct sim_scenario *sc, double *gain, bool *reach)
{
    int n = sc->n;
    for (int s = 0; s < n; s++) {
        if (!is_source(&sc->v[s]))
            continue;
        gain[s * n + s] = 1.0;
        for (int v = s + 1; v < n; v++)
            for (int i = 0; i < sc->v[v].n_inputs; i++) {
                int f = sc->v[v].inputs[i].from;
                gain[s * n + v] += gain[s * n + f] * sc->v[f].selectivity;
            }
    }
    for (int w = 0; w < n; w++)
        for (int i = 0; i < sc->v[w].n_inputs; i++) {
            int f = sc->v[w].inputs[i].from;
            reach[f * n + w] = true;
            for (int u = 0; u < n; u++)
                if (reach[u * n + f])
                    reach[u * n + w] = true;
        }
}

static void counters_reset(struct vrun *r)
{
    r->rec_in = r->rec_out = r->busy_acc = 0;
    memset(r->meter, 0, sizeof r->meter);
    memset(r->g_min, 0, sizeof r->g_min);
    memset(r->g_avg, 0, sizeof r->g_avg);
    memset(r->g_max, 0, sizeof r->g_max);
    memset(r->g_bp, 0, sizeof r->g_bp);
}

struct sim_model *sim_model_new(const struct sim_scenario *sc, const int *p)
{
    struct sim_model *m = xcalloc(1, sizeof *m);
    int n = sc->n;
    m->sc = sc;
    m->n = n;
    m->v = xcalloc((size_t)n, sizeof *m->v);
    m->gain = xcalloc((size_t)n * (size_t)n, sizeof *m->gain);
    m->reach = xcalloc((size_t)n * (size_t)n, sizeof *m->reach);
    m->desired = xcalloc((size_t)n, sizeof *m->desired);
    m->ld = xcalloc((size_t)n, sizeof *m->ld);
    m->lam = xcalloc((size_t)n, sizeof *m->lam);
    m->theta = xcalloc((size_t)n, sizeof *m->theta);
    m->wlim = xcalloc((size_t)n, sizeof *m->wlim);
    m->thr = xcalloc((size_t)n, sizeof *m->thr);
    gains(sc, m->gain, m->reach);
    for (int i = 0; i < n; i++) {
        struct vrun *r = &m->v[i];
        r->p = p ? p[i] : sc->v[i].parallelism;
        r->hot = hot_share(sc, i, m->ld, 0);
        if (is_source(&sc->v[i])) {
            r->cap_arr = sc->horizon + 2;
            r->arr = xcalloc((size_t)r->cap_arr, sizeof *r->arr);
            r->n_arr = 1; /* arr[0] = 0 */
        }
    }
    return m;
}

void sim_model_free(struct sim_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        free(m->v[i].arr);
    free(m->v);
    free(m->gain);
    free(m->reach);
    free(m->desired);
    free(m->ld);
    free(m->lam);
    free(m->theta);
    free(m->wlim);
    free(m->thr);
    free(m);
}

int64_t sim_model_now(const struct sim_model *m)
{
    return m->t;
}

bool sim_model_running(const struct sim_model *m)
{
    return !m->down;
}

int sim_model_parallelism(const struct sim_model *m, int v)
{
    return m->v[v].p;
}

/* The job runs again: counters, meters and gauges start over, as a restarted job's do. */
static void resume(struct sim_model *m)
{
    m->down = false;
    m->running_since = m->t;
    for (int i = 0; i < m->n; i++)
        counters_reset(&m->v[i]);
}

static void stop(struct sim_model *m, int64_t downtime)
{
    int64_t until = m->t + (downtime > 0 ? downtime : 0);
    if (!m->down || until > m->down_until)
        m->down_until = until;
    m->down = true;
    if (m->t >= m->down_until)
        resume(m);
}

int sim_model_rescale(struct sim_model *m, const int *p, int64_t downtime)
{
    bool same = true;
    for (int i = 0; i < m->n; i++)
        if (p[i] != m->v[i].p)
            same = false;
    if (same)
        return 0;
    for (int i = 0; i < m->n; i++)
        m->v[i].p = p[i];
    stop(m, downtime);
    return 1;
}

void sim_model_fail(struct sim_model *m, int64_t downtime)
{
    stop(m, downtime);
}

static void arrive(struct vrun *r, double a)
{
    if (r->n_arr == r->cap_arr) {
        r->cap_arr *= 2;
        r->arr = xrealloc(r->arr, (size_t)r->cap_arr * sizeof *r->arr);
    }
    r->arr[r->n_arr] = r->arr[r->n_arr - 1] + a;
    r->n_arr++;
    r->a = a;
    r->backlog += a;
}

/* One second of a running job: the flows, then every vertex's figures. */
static void run_second(struct sim_model *m)
{
    const struct sim_scenario *sc = m->sc;
    int n = m->n;
    /* What each source would read: its backlog (this second's arrivals included), up to its
     * own capacity; nothing during an outage. */
    for (int s = 0; s < n; s++) {
        m->desired[s] = 0;
        if (!is_source(&sc->v[s]) || sim_scenario_outage(sc, s, m->t))
            continue;
        double x =
            sim_model_vertex_capacity(sc, s, m->v[s].p, 0.0) * (1.0 - paused(&sc->v[s], m->t));
        m->desired[s] = m->v[s].backlog < x ? m->v[s].backlog : x;
    }
    for (int v = 0; v < n; v++) {
        m->ld[v] = 0;
        for (int s = 0; s < n; s++)
            m->ld[v] += m->gain[s * n + v] * m->desired[s];
    }
    for (int v = 0; v < n; v++)
        if (!is_source(&sc->v[v]))
            m->v[v].hot = hot_share(sc, v, m->ld, m->t);
    /* Back-pressure: a source reads no faster than its slowest downstream vertex takes. */
    for (int s = 0; s < n; s++) {
        m->theta[s] = 1.0;
        m->wlim[s] = -1;
        if (!is_source(&sc->v[s]))
            continue;
        for (int v = 0; v < n; v++) {
            if (v == s || m->gain[s * n + v] <= 0 || m->ld[v] <= 0)
                continue;
            double c = sim_model_vertex_capacity(sc, v, m->v[v].p, m->v[v].hot) *
                       (1.0 - paused(&sc->v[v], m->t));
            double ratio = c / m->ld[v];
            if (ratio < m->theta[s]) {
                m->theta[s] = ratio;
                m->wlim[s] = v;
            }
        }
    }
    for (int v = 0; v < n; v++) {
        m->lam[v] = 0;
        m->thr[v] = false;
        for (int s = 0; s < n; s++)
            m->lam[v] += m->gain[s * n + v] * m->theta[s] * m->desired[s];
    }
    for (int s = 0; s < n; s++) {
        int w = m->wlim[s];
        if (w < 0)
            continue;
        for (int v = 0; v < n; v++)
            if ((v == s || m->gain[s * n + v] > 0) && m->reach[v * n + w])
                m->thr[v] = true;
    }
    int64_t k = m->t % GAUGE_S;
    for (int v = 0; v < n; v++) {
        const struct sim_vertex *x = &sc->v[v];
        struct vrun *r = &m->v[v];
        double lam = m->lam[v];
        if (is_source(x)) {
            r->backlog -= lam;
            if (r->backlog < 0)
                r->backlog = 0;
            r->read += lam;
        }
        int p = r->p;
        double mu = subtask_rate(x, p), smin, smax;
        shares(x, p, is_source(x) ? 0.0 : r->hot, &smin, &smax);
        double ext = isfinite(x->rate_cap) ? lam / x->rate_cap : 0.0;
        /* Pauses count as busy time on top of the work. */
        double g = paused(x, m->t);
        double bmin = g + fmax(lam * smin / mu, ext), bavg = g + fmax(lam / (p * mu), ext),
               bmax = g + fmax(lam * smax / mu, ext);
        bmin = fmin(bmin, 1.0);
        bavg = fmin(bavg, 1.0);
        bmax = fmin(bmax, 1.0);
        double bp = m->thr[v] ? fmax(0.0, 1.0 - bavg) : 0.0;
        r->rec_in += lam;
        r->rec_out += lam * x->selectivity;
        r->busy_acc += bavg * p * 1000.0;
        r->g_min[k] = bmin;
        r->g_avg[k] = bavg;
        r->g_max[k] = bmax;
        r->g_bp[k] = bp;
        r->last.in_rate = lam;
        r->last.busy_min = bmin;
        r->last.busy_avg = bavg;
        r->last.busy_max = bmax;
        r->last.backpressured = bp;
    }
}

/* The age of the record a source reads next: it arrived at tau, where arr(tau) = read
 * (arrivals are spread evenly within each second). */
static double source_lag(struct vrun *r, int64_t now)
{
    if (r->backlog <= 1e-6)
        return 0.0;
    int64_t j = r->j;
    while (j < r->n_arr - 1 && r->arr[j] < r->read)
        j++;
    r->j = j;
    double tau = (double)j;
    if (j > 0 && r->arr[j] > r->arr[j - 1])
        tau = (double)(j - 1) + (r->read - r->arr[j - 1]) / (r->arr[j] - r->arr[j - 1]);
    double age = (double)now - tau;
    return age > 0 ? age : 0.0;
}

void sim_model_step(struct sim_model *m)
{
    const struct sim_scenario *sc = m->sc;
    for (int s = 0; s < m->n; s++)
        if (is_source(&sc->v[s]))
            arrive(&m->v[s], sim_scenario_arrival(sc, s, m->t));
    if (m->down) {
        for (int v = 0; v < m->n; v++) {
            struct vrun *r = &m->v[v];
            memset(&r->last, 0, sizeof r->last);
        }
    } else {
        run_second(m);
    }
    m->t++;
    for (int v = 0; v < m->n; v++) {
        struct vrun *r = &m->v[v];
        r->meter[m->t % (METER_S + 1)] = r->rec_in;
        r->last.records_in = r->rec_in;
        r->last.records_out = r->rec_out;
        r->last.accumulated_busy_ms = r->busy_acc;
    }
    m->lag = 0;
    for (int s = 0; s < m->n; s++)
        if (is_source(&sc->v[s])) {
            double age = source_lag(&m->v[s], m->t);
            if (age > m->lag)
                m->lag = age;
        }
    if (m->down && m->t >= m->down_until)
        resume(m);
}

void sim_model_vstat(const struct sim_model *m, int v, struct sim_vstat *out)
{
    *out = m->v[v].last;
}

double sim_model_lag_s(const struct sim_model *m)
{
    return m->lag;
}

double sim_model_pending(const struct sim_model *m)
{
    double sum = 0;
    for (int s = 0; s < m->n; s++)
        if (is_source(&m->sc->v[s]))
            sum += m->v[s].backlog;
    return sum;
}

double sim_model_arrival(const struct sim_model *m)
{
    double sum = 0;
    for (int s = 0; s < m->n; s++)
        if (is_source(&m->sc->v[s]))
            sum += m->v[s].a;
    return sum;
}

double sim_model_capacity(const struct sim_model *m)
{
    const struct sim_scenario *sc = m->sc;
    int n = m->n;
    double total = sim_model_arrival(m), f = INFINITY;
    if (!(total > 0))
        return NAN;
    for (int v = 0; v < n; v++) {
        double load = 0;
        for (int s = 0; s < n; s++)
            if (is_source(&sc->v[s]))
                load += m->gain[s * n + v] * m->v[s].a;
        if (load <= 0)
            continue;
        double hot = is_source(&sc->v[v]) ? 0.0 : m->v[v].hot;
        double r = sim_model_vertex_capacity(sc, v, m->v[v].p, hot) / load;
        if (r < f)
            f = r;
    }
    return total * f;
}

/* The gauge factor of measurement noise for (vertex, gauge) at the current instant. */
static double noise(const struct sim_model *m, int v, enum gauge g)
{
    if (m->sc->noise <= 0)
        return 1.0;
    double u = sim_rng_unit(m->sc->seed, STREAM_NOISE + (uint64_t)v * G__COUNT + g, (uint64_t)m->t);
    return 1.0 + m->sc->noise * (2.0 * u - 1.0);
}

static double ms(double frac, double f)
{
    double x = frac * 1000.0 * f;
    return x > 1000.0 ? 1000.0 : x < 0 ? 0 : x;
}

json_t *sim_model_sample(const struct sim_model *m)
{
    const struct sim_scenario *sc = m->sc;
    json_t *o = json_object();
    json_object_set_new(o, "at", json_integer(sc->start_ms + m->t * 1000));
    json_object_set_new(o, "running_since", json_integer(sc->start_ms + m->running_since * 1000));
    json_object_set_new(o, "status", json_string(m->down ? "RESTARTING" : "RUNNING"));
    json_t *vs = json_array();
    int64_t up = m->t - m->running_since;
    int k = up < GAUGE_S ? (int)up : GAUGE_S;
    for (int v = 0; v < m->n; v++) {
        const struct sim_vertex *x = &sc->v[v];
        const struct vrun *r = &m->v[v];
        json_t *jv = json_object();
        json_object_set_new(jv, "id", json_string(x->id));
        json_object_set_new(jv, "parallelism", json_integer(r->p));
        json_object_set_new(jv, "max_parallelism", json_integer(x->max_parallelism));
        if (x->partitions)
            json_object_set_new(jv, "partitions", json_integer(x->partitions));
        json_t *ins = json_array();
        for (int i = 0; i < x->n_inputs; i++)
            json_array_append_new(ins, json_pack("{s:s, s:s}", "from", sc->v[x->inputs[i].from].id,
                                                 "ship", core_ship_name(x->inputs[i].ship)));
        json_object_set_new(jv, "inputs", ins);
        if (!m->down) {
            double bmin = 0, bavg = 0, bmax = 0, bp = 0;
            for (int i = 1; i <= k; i++) {
                int64_t s = (m->t - i) % GAUGE_S;
                bmin += r->g_min[s];
                bavg += r->g_avg[s];
                bmax += r->g_max[s];
                bp += r->g_bp[s];
            }
            if (k > 0) {
                bmin /= k;
                bavg /= k;
                bmax /= k;
                bp /= k;
            }
            double fb = noise(m, v, G_BUSY), fp = noise(m, v, G_BP), fr = noise(m, v, G_RATE);
            double rate =
                (r->meter[m->t % (METER_S + 1)] - r->meter[(m->t + 1) % (METER_S + 1)]) / METER_S;
            json_t *mt = json_object();
            json_object_set_new(mt, "busy_ms_per_s",
                                json_pack("{s:f, s:f, s:f}", "min", ms(bmin, fb), "avg",
                                          ms(bavg, fb), "max", ms(bmax, fb)));
            json_object_set_new(mt, "backpressured_ms_per_s", json_real(ms(bp, fp)));
            json_object_set_new(mt, "records_in", json_integer((json_int_t)llround(r->rec_in)));
            json_object_set_new(mt, "records_out", json_integer((json_int_t)llround(r->rec_out)));
            json_object_set_new(mt, "accumulated_busy_ms",
                                json_integer((json_int_t)llround(r->busy_acc)));
            json_object_set_new(mt, "records_in_per_s", json_real(rate * fr));
            if (is_source(x))
                json_object_set_new(mt, "pending_records",
                                    json_integer((json_int_t)llround(r->backlog)));
            json_object_set_new(jv, "metrics", mt);
        }
        json_array_append_new(vs, jv);
    }
    json_object_set_new(o, "vertices", vs);
    return o;
}

void sim_model_fixed_size(const struct sim_scenario *sc, double util, int *p)
{
    int n = sc->n;
    double *gain = xcalloc((size_t)n * (size_t)n, sizeof *gain);
    bool *reach = xcalloc((size_t)n * (size_t)n, sizeof *reach);
    double *peak = xcalloc((size_t)n, sizeof *peak);
    double *minute = xcalloc((size_t)n, sizeof *minute);
    double *mean = xcalloc((size_t)n, sizeof *mean);
    double *a = xcalloc((size_t)n, sizeof *a);
    gains(sc, gain, reach);
    for (int64_t t = 0; t < sc->horizon; t++) {
        for (int s = 0; s < n; s++)
            a[s] = sc->v[s].n_inputs == 0 ? sim_scenario_arrival(sc, s, t) : 0.0;
        for (int v = 0; v < n; v++) {
            double load = 0;
            for (int s = 0; s < n; s++)
                load += gain[s * n + v] * a[s];
            minute[v] += load;
            mean[v] += load / (double)sc->horizon;
        }
        if ((t + 1) % 60 == 0 || t + 1 == sc->horizon) {
            double len = (double)((t % 60) + 1);
            for (int v = 0; v < n; v++) {
                if (minute[v] / len > peak[v])
                    peak[v] = minute[v] / len;
                minute[v] = 0;
            }
        }
    }
    for (int v = 0; v < n; v++) {
        const struct sim_vertex *x = &sc->v[v];
        if (x->fixed) {
            p[v] = x->fixed;
            continue;
        }
        /* The hot key as it is once it has appeared: the peak's requirement. */
        double hot = x->n_inputs ? hot_share(sc, v, mean, INT64_MAX) : 0.0;
        int best = 0;
        double top = 0;
        for (int q = 1; q <= x->max_parallelism; q++) {
            double c = sim_model_vertex_capacity(sc, v, q, hot);
            if (!best && c * util >= peak[v])
                best = q;
            if (c > top)
                top = c;
        }
        if (!best)
            for (int q = 1; q <= x->max_parallelism && !best; q++)
                if (sim_model_vertex_capacity(sc, v, q, hot) >= 0.95 * top)
                    best = q;
        p[v] = best ? best : 1;
    }
    free(gain);
    free(reach);
    free(peak);
    free(minute);
    free(mean);
    free(a);
}
