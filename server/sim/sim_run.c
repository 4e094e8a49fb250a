/*
 * sim_run.c - one closed-loop run of a scenario under a policy (see sim_run.h).
 */
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
    struct sim_pipeline *pl = pol->fixed ? NULL : sim_pipeline_new(sc->name, pol->layers, pol->set);

    for (int64_t t = 0; t < n; t++) {
        for (int k = 0; k < sc->n_failures; k++)
            if (sc->failures[k].at == t)
                sim_model_fail(m, sc->failures[k].downtime);
        if (pl && t % sc->interval == 0) {
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
            if (json_is_true(json_object_get(d, "execute")) && decided(sc, d, p) == 0)
                r->rescales += sim_model_rescale(m, p, sc->restart);
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
    sim_pipeline_free(pl);
    sim_model_free(m);
    free(p);
    sim_result_free(r);
    return rc;
}
