/*
 * sim_run.c - one closed-loop run of a scenario under a policy (see sim_run.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_model.h"
#include "sim/sim_pipeline.h"
#include "sim/sim_run.h"
#include "base/xmem.h"

void sim_result_free(struct sim_result *r)
{
    if (!r)
        return;
    free(r->policy);
    free(r->lag);
    free(r->arrival);
    free(r->capacity);
    free(r->par);
    json_decref(r->reasons);
    free(r);
}

/* The decided parallelism of every vertex, in the scenario's order; -1 if one is missing. */
static int decided(const struct sim_scenario *sc, json_t *d, int *p)
{
    json_t *map = json_object_get(d, "parallelism");
    for (int v = 0; v < sc->n; v++) {
        json_t *x = json_object_get(map, sc->v[v].id);
        if (!json_is_integer(x) || json_integer_value(x) < 1)
            return -1;
        p[v] = (int)json_integer_value(x);
        if (p[v] > sc->v[v].max_parallelism)
            p[v] = sc->v[v].max_parallelism;
    }
    return 0;
}

static void count_reason(json_t *reasons, json_t *d)
{
    const char *r = json_string_value(json_object_get(d, "reason"));
    if (!r)
        return;
    json_t *c = json_object_get(reasons, r);
    json_object_set_new(reasons, r, json_integer(c ? json_integer_value(c) + 1 : 1));
}

/* The HPA-style rule's memory: the last minute of each vertex's average busy time, and
 * each vertex's desired sizes of the stabilization window. */
struct hpa {
    int nv, keep, n_util, n_rec, cap_rec;
    double *util;   /* util[k * nv + v]: the k-th kept sample (ring of keep) */
    int64_t *rec_t; /* recommendation times (ring of cap_rec) */
    int *rec;       /* rec[k * nv + v] */
    int64_t since;  /* running since (the samples kept belong to it) */
};

static struct hpa *hpa_new(const struct sim_scenario *sc)
{
    struct hpa *h = xcalloc(1, sizeof *h);
    h->nv = sc->n;
    h->keep = (int)((60 + sc->interval - 1) / sc->interval);
    if (h->keep < 1)
        h->keep = 1;
    h->util = xcalloc((size_t)h->keep * (size_t)sc->n, sizeof *h->util);
    h->since = -1;
    return h;
}

static void hpa_free(struct hpa *h)
{
    if (!h)
        return;
    free(h->util);
    free(h->rec_t);
    free(h->rec);
    free(h);
}

/* The average busy time of vertex v in sample s (a fraction), NaN when it has none. */
static double busy_avg(json_t *s, int v)
{
    json_t *b = json_object_get(
        json_object_get(
            json_object_get(json_array_get(json_object_get(s, "vertices"), (size_t)v), "metrics"),
            "busy_ms_per_s"),
        "avg");
    return json_is_number(b) ? json_number_value(b) / 1000.0 : NAN;
}

/* One HPA sync at second t on the job's sample; fills p and returns true when a vertex
 * changes (core of sim_hpa in sim_run.h). */
static bool hpa_sync(struct hpa *h, const struct sim_hpa *rule, const struct sim_scenario *sc,
                     const struct sim_model *m, json_t *sample, int64_t t, int *p)
{
    int nv = h->nv;
    if (!sim_model_running(m)) {
        h->n_util = 0;
        return false;
    }
    const char *st = json_string_value(json_object_get(sample, "status"));
    int64_t since = json_integer_value(json_object_get(sample, "running_since"));
    if (!st || strcmp(st, "RUNNING") != 0)
        return false;
    if (since != h->since) {
        h->since = since;
        h->n_util = 0;
    }
    /* HPA's CPU initialization period: samples of the first minutes after a (re)start are
     * not used. */
    int64_t up_s = (json_integer_value(json_object_get(sample, "at")) - since) / 1000;
    if (up_s < rule->init_period)
        return false;
    int slot = h->n_util % h->keep;
    for (int v = 0; v < nv; v++)
        h->util[slot * nv + v] = busy_avg(sample, v);
    h->n_util++;
    if (h->n_util < h->keep)
        return false;
    /* This sync's desired sizes, recorded for the stabilization window. */
    if (h->n_rec == h->cap_rec) {
        h->cap_rec = h->cap_rec ? 2 * h->cap_rec : 64;
        h->rec_t = xrealloc(h->rec_t, (size_t)h->cap_rec * sizeof *h->rec_t);
        h->rec = xrealloc(h->rec, (size_t)h->cap_rec * (size_t)nv * sizeof *h->rec);
    }
    int *want = h->rec + (size_t)h->n_rec * (size_t)nv;
    h->rec_t[h->n_rec++] = t;
    bool change = false;
    for (int v = 0; v < nv; v++) {
        int cur = sim_model_parallelism(m, v);
        double u = 0;
        int k = 0;
        for (int j = 0; j < h->keep; j++)
            if (!isnan(h->util[j * nv + v])) {
                u += h->util[j * nv + v];
                k++;
            }
        int d = cur;
        if (k > 0 && rule->target > 0) {
            double ratio = u / k / rule->target;
            if (fabs(ratio - 1.0) > rule->tolerance)
                d = (int)ceil((double)cur * ratio - 1e-9);
        }
        int lim = cur * 2 > cur + 4 ? cur * 2 : cur + 4;
        if (d > lim)
            d = lim;
        if (d < 1)
            d = 1;
        if (d > sc->v[v].max_parallelism)
            d = sc->v[v].max_parallelism;
        want[v] = d;
        int next = d;
        if (d < cur) {
            /* Downscale stabilization: the highest desired size of the window. */
            for (int r = 0; r < h->n_rec; r++)
                if (h->rec_t[r] > t - rule->stabilization && h->rec[(size_t)r * nv + v] > next)
                    next = h->rec[(size_t)r * nv + v];
            if (next > cur)
                next = cur;
        }
        p[v] = next;
        if (next != cur)
            change = true;
    }
    /* Forget recommendations older than the window. */
    int drop = 0;
    while (drop < h->n_rec && h->rec_t[drop] <= t - rule->stabilization)
        drop++;
    if (drop > 0) {
        memmove(h->rec_t, h->rec_t + drop, (size_t)(h->n_rec - drop) * sizeof *h->rec_t);
        memmove(h->rec, h->rec + (size_t)drop * nv,
                (size_t)(h->n_rec - drop) * (size_t)nv * sizeof *h->rec);
        h->n_rec -= drop;
    }
    return change;
}

/* Would the scenario's client apply a decision to p? */
static bool client_applies(const struct sim_scenario *sc, const struct sim_model *m, const int *p)
{
    if (sc->applies == SIM_APPLY_ALL)
        return true;
    for (int v = 0; v < sc->n; v++)
        if (p[v] < sim_model_parallelism(m, v))
            return false;
    return true;
}

int sim_run(const struct sim_scenario *sc, const struct sim_policy *pol, int64_t horizon,
            FILE *trace, struct sim_result **out, char **errp)
{
    int rc = -1;
    *out = NULL;
    int64_t n = horizon > 0 && horizon < sc->horizon ? horizon : sc->horizon;
    struct sim_result *r = xcalloc(1, sizeof *r);
    r->policy = xstrdup(pol->name);
    r->n = n;
    r->nv = sc->n;
    r->lag = xcalloc((size_t)n, sizeof *r->lag);
    r->arrival = xcalloc((size_t)n, sizeof *r->arrival);
    r->capacity = xcalloc((size_t)n, sizeof *r->capacity);
    r->par = xcalloc((size_t)n * (size_t)sc->n, sizeof *r->par);
    r->reasons = json_object();
    int *p = xcalloc((size_t)sc->n, sizeof *p);
    struct sim_model *m = sim_model_new(sc, pol->fixed ? pol->fixed_p : NULL);
    struct sim_pipeline *pl =
        pol->fixed || pol->hpa ? NULL : sim_pipeline_new(sc->name, pol->layers, pol->set);
    struct hpa *hp = pol->hpa ? hpa_new(sc) : NULL;

    for (int64_t t = 0; t < n; t++) {
        for (int k = 0; k < sc->n_failures; k++)
            if (sc->failures[k].at == t)
                sim_model_fail(m, sc->failures[k].downtime);
        if (hp && t % sc->interval == 0) {
            json_t *sample = sim_model_sample(m);
            r->decisions++;
            if (hpa_sync(hp, &pol->hpa_rule, sc, m, sample, t, p)) {
                r->executed++;
                r->rescales += sim_model_rescale(m, p, sc->restart);
            }
            json_decref(sample);
        }
        if (pl && t % sc->interval == 0 && !sim_scenario_gap(sc, t)) {
            json_t *sample = sim_model_sample(m);
            char *err = NULL;
            json_t *d = sim_decide(pl, sample, &err);
            if (!d) {
                *errp = xasprintf("%s at t = %lld s: %s", pol->name, (long long)t, err);
                free(err);
                json_decref(sample);
                goto out;
            }
            r->decisions++;
            count_reason(r->reasons, d);
            if (json_is_true(json_object_get(d, "execute")) && decided(sc, d, p) == 0) {
                r->executed++;
                if (client_applies(sc, m, p))
                    r->rescales += sim_model_rescale(m, p, sc->restart);
            }
            if (trace) {
                json_object_set_new(sample, "job", json_string(sc->name));
                json_object_set(sample, "decision", d);
                char *line = json_dumps(sample, JSON_COMPACT | JSON_REAL_PRECISION(15));
                fprintf(trace, "%s\n", line);
                free(line);
            }
            json_decref(d);
            json_decref(sample);
        }
        for (int v = 0; v < sc->n; v++)
            r->par[(size_t)v * (size_t)n + (size_t)t] = sim_model_parallelism(m, v);
        sim_model_step(m);
        r->lag[t] = sim_model_lag_s(m);
        r->arrival[t] = sim_model_arrival(m);
        r->capacity[t] = sim_model_capacity(m);
    }
    *out = r;
    r = NULL;
    rc = 0;
out:
    hpa_free(hp);
    sim_pipeline_free(pl);
    sim_model_free(m);
    free(p);
    sim_result_free(r);
    return rc;
}
