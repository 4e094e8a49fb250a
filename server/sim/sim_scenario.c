/*
 * sim_scenario.c - the scenario file: parsing, checking, and the arrival profiles (see
 * sim_scenario.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options/options.h"
#include "sim/sim_rng.h"
#include "sim/sim_scenario.h"
#include "base/xmem.h"

/* Random streams of the arrival noise: one per (vertex, term). */
#define STREAM_ARRIVAL 0x100000u

#define TERM_TYPES "constant, step, ramp, daily, spike, noise, outage, periodic, peaks"

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 128 && strspn(s, NAME_CHARS) == n;
}

static int fail(char **errp, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char **errp, const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    *errp = xasprintf("%s: %s", path, msg);
    return -1;
}

/* o's member key into *x, its path (path.key) into p: 1 when it is there, 0 when it is absent
 * or null (and not required), -1 with *errp when it is required. */
static int member(json_t *o, const char *path, const char *key, bool required, char *p, size_t n,
                  json_t **x, char **errp)
{
    snprintf(p, n, "%s%s%s", path, path[0] ? "." : "", key);
    *x = json_object_get(o, key);
    if (*x && !json_is_null(*x))
        return 1;
    return required ? fail(errp, p, "required") : 0;
}

/* A number field; absent keeps *out unless required. */
static int get_num(json_t *o, const char *path, const char *key, bool required, double lo,
                   double hi, bool lo_open, double *out, char **errp)
{
    char p[256];
    json_t *x;
    int rc = member(o, path, key, required, p, sizeof p, &x, errp);
    if (rc <= 0)
        return rc;
    if (!json_is_number(x))
        return fail(errp, p, "must be a number");
    double d = json_number_value(x);
    if (!isfinite(d) || d < lo || d > hi || (lo_open && d == lo))
        return fail(errp, p, "must be in %s%g, %g], got %g", lo_open ? "(" : "[", lo, hi, d);
    *out = d;
    return 0;
}

static int get_int(json_t *o, const char *path, const char *key, bool required, int lo, int hi,
                   int *out, char **errp)
{
    char p[256];
    json_t *x;
    int rc = member(o, path, key, required, p, sizeof p, &x, errp);
    if (rc <= 0)
        return rc;
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
        return fail(errp, p, "must be an integer in [%d, %d]", lo, hi);
    *out = (int)json_integer_value(x);
    return 0;
}

/* A duration in whole seconds: a number of seconds or an options-style string. */
static int get_dur(json_t *o, const char *path, const char *key, bool required, int64_t lo,
                   int64_t *out, char **errp)
{
    char p[256];
    json_t *x;
    int rc = member(o, path, key, required, p, sizeof p, &x, errp);
    if (rc <= 0)
        return rc;
    int64_t ms;
    if (json_is_number(x)) {
        double d = json_number_value(x);
        if (!isfinite(d) || d < 0 || d > 1e9)
            return fail(errp, p, "must be a duration (seconds, or a string such as \"5 min\")");
        ms = (int64_t)llround(d * 1000.0);
    } else if (json_is_string(x)) {
        char *e = NULL;
        if (opt_parse_duration(json_string_value(x), &ms, &e) < 0) {
            fail(errp, p, "%s", e);
            free(e);
            return -1;
        }
    } else {
        return fail(errp, p, "must be a duration (seconds, or a string such as \"5 min\")");
    }
    if (ms % 1000 != 0)
        return fail(errp, p, "must be a whole number of seconds");
    if (ms / 1000 < lo)
        return fail(errp, p, "must be at least %lld s", (long long)lo);
    *out = ms / 1000;
    return 0;
}

static int parse_term(json_t *t, const char *path, struct sim_term *out, char **errp)
{
    if (!json_is_object(t))
        return fail(errp, path, "must be an object");
    const char *type = json_string_value(json_object_get(t, "type"));
    char p[256];
    snprintf(p, sizeof p, "%s.type", path);
    memset(out, 0, sizeof *out);
    out->backlog = true;
    if (!type)
        return fail(errp, p, "required: one of " TERM_TYPES);
    const double big = 1e12;
    if (strcmp(type, "constant") == 0) {
        out->kind = SIM_T_CONSTANT;
        return get_num(t, path, "rate", true, 0, big, false, &out->rate, errp);
    }
    if (strcmp(type, "step") == 0) {
        out->kind = SIM_T_STEP;
        if (get_dur(t, path, "at", true, 0, &out->at, errp) < 0)
            return -1;
        return get_num(t, path, "rate", true, 0, big, false, &out->rate, errp);
    }
    if (strcmp(type, "ramp") == 0) {
        out->kind = SIM_T_RAMP;
        if (get_dur(t, path, "at", true, 0, &out->at, errp) < 0 ||
            get_dur(t, path, "until", true, 0, &out->until, errp) < 0 ||
            get_num(t, path, "rate", true, 0, big, false, &out->rate, errp) < 0)
            return -1;
        if (out->until <= out->at) {
            snprintf(p, sizeof p, "%s.until", path);
            return fail(errp, p, "must be after \"at\"");
        }
        return 0;
    }
    if (strcmp(type, "daily") == 0) {
        out->kind = SIM_T_DAILY;
        out->period = 86400;
        if (get_num(t, path, "min", true, 0, big, false, &out->min, errp) < 0 ||
            get_num(t, path, "max", true, 0, big, false, &out->max, errp) < 0 ||
            get_dur(t, path, "peak", false, 0, &out->peak, errp) < 0 ||
            get_dur(t, path, "period", false, 60, &out->period, errp) < 0)
            return -1;
        if (out->max < out->min) {
            snprintf(p, sizeof p, "%s.max", path);
            return fail(errp, p, "must be at least \"min\"");
        }
        return 0;
    }
    if (strcmp(type, "spike") == 0) {
        out->kind = SIM_T_SPIKE;
        int64_t d = 0;
        if (get_dur(t, path, "at", true, 0, &out->at, errp) < 0 ||
            get_dur(t, path, "duration", true, 1, &d, errp) < 0 ||
            get_num(t, path, "factor", true, 0, 1e6, false, &out->factor, errp) < 0)
            return -1;
        out->until = out->at + d;
        return 0;
    }
    if (strcmp(type, "noise") == 0) {
        out->kind = SIM_T_NOISE;
        out->every = 60;
        if (get_num(t, path, "sd", true, 0, 10, false, &out->sd, errp) < 0 ||
            get_dur(t, path, "every", false, 1, &out->every, errp) < 0)
            return -1;
        return 0;
    }
    if (strcmp(type, "outage") == 0) {
        out->kind = SIM_T_OUTAGE;
        int64_t d = 0;
        if (get_dur(t, path, "at", true, 0, &out->at, errp) < 0 ||
            get_dur(t, path, "duration", true, 1, &d, errp) < 0)
            return -1;
        out->until = out->at + d;
        json_t *b = json_object_get(t, "backlog");
        if (b && !json_is_null(b)) {
            if (!json_is_boolean(b)) {
                snprintf(p, sizeof p, "%s.backlog", path);
                return fail(errp, p, "must be true or false");
            }
            out->backlog = json_is_true(b);
        }
        return 0;
    }
    if (strcmp(type, "periodic") == 0) {
        out->kind = SIM_T_PERIODIC;
        int64_t d = 0;
        if (get_dur(t, path, "at", false, 0, &out->at, errp) < 0 ||
            get_dur(t, path, "duration", true, 1, &d, errp) < 0 ||
            get_dur(t, path, "every", false, 0, &out->every, errp) < 0 ||
            get_dur(t, path, "ramp", false, 0, &out->ramp, errp) < 0 ||
            get_num(t, path, "factor", true, 0, 1e6, false, &out->factor, errp) < 0)
            return -1;
        out->until = out->at + d;
        if (out->every > 0 && out->every < d) {
            snprintf(p, sizeof p, "%s.every", path);
            return fail(errp, p, "must be at least \"duration\" (or 0: once)");
        }
        if (2 * out->ramp > d) {
            snprintf(p, sizeof p, "%s.ramp", path);
            return fail(errp, p, "must be at most half of \"duration\"");
        }
        return 0;
    }
    if (strcmp(type, "peaks") == 0) {
        out->kind = SIM_T_PEAKS;
        out->period = 86400;
        if (get_num(t, path, "base", true, 0, big, false, &out->base, errp) < 0 ||
            get_dur(t, path, "period", false, 60, &out->period, errp) < 0)
            return -1;
        json_t *ps = json_object_get(t, "peaks");
        snprintf(p, sizeof p, "%s.peaks", path);
        if (!json_is_array(ps) || json_array_size(ps) < 1 || json_array_size(ps) > SIM_MAX_PEAKS)
            return fail(errp, p, "required: an array of 1 to %d peaks", SIM_MAX_PEAKS);
        out->n_peaks = (int)json_array_size(ps);
        for (int k = 0; k < out->n_peaks; k++) {
            char pp[200];
            snprintf(pp, sizeof pp, "%s.peaks[%d]", path, k);
            json_t *pk = json_array_get(ps, (size_t)k);
            if (!json_is_object(pk))
                return fail(errp, pp, "must be an object");
            struct sim_peak *q = &out->peaks[k];
            if (get_dur(pk, pp, "at", true, 0, &q->at, errp) < 0 ||
                get_dur(pk, pp, "width", true, 1, &q->width, errp) < 0 ||
                get_num(pk, pp, "rate", true, 0, big, false, &q->rate, errp) < 0)
                return -1;
        }
        return 0;
    }
    return fail(errp, p, "\"%s\" is not one of " TERM_TYPES, type);
}

static int parse_vertex(struct sim_scenario *sc, int i, json_t *jv, char **errp)
{
    char path[64], p[128];
    snprintf(path, sizeof path, "vertices[%d]", i);
    struct sim_vertex *v = &sc->v[i];
    v->scaling = 1.0;
    v->selectivity = 1.0;
    v->rate_cap = INFINITY;
    v->max_parallelism = 128;
    if (!json_is_object(jv))
        return fail(errp, path, "must be an object");
    const char *id = json_string_value(json_object_get(jv, "id"));
    snprintf(p, sizeof p, "%s.id", path);
    if (!id || !id[0] || strlen(id) > 128)
        return fail(errp, p, "required: a string of 1 to 128 characters");
    for (int k = 0; k < i; k++)
        if (strcmp(sc->v[k].id, id) == 0)
            return fail(errp, p, "\"%s\" is used by vertices[%d] too", id, k);
    v->id = xstrdup(id);
    double rc = INFINITY;
    if (get_int(jv, path, "parallelism", true, 1, 100000, &v->parallelism, errp) < 0 ||
        get_int(jv, path, "max_parallelism", false, 1, 100000, &v->max_parallelism, errp) < 0 ||
        get_num(jv, path, "capacity", true, 0, 1e12, true, &v->capacity, errp) < 0 ||
        get_num(jv, path, "scaling", false, 0, 1, true, &v->scaling, errp) < 0 ||
        get_num(jv, path, "selectivity", false, 0, 1e6, false, &v->selectivity, errp) < 0 ||
        get_num(jv, path, "rate_cap", false, 0, 1e12, true, &rc, errp) < 0 ||
        get_num(jv, path, "serial", false, 0, 1, false, &v->serial, errp) < 0 ||
        get_int(jv, path, "fixed", false, 1, 100000, &v->fixed, errp) < 0)
        return -1;
    if (v->serial >= 1) {
        snprintf(p, sizeof p, "%s.serial", path);
        return fail(errp, p, "must be below 1");
    }
    json_t *gc = json_object_get(jv, "pauses");
    if (gc && !json_is_null(gc)) {
        snprintf(p, sizeof p, "%s.pauses", path);
        if (!json_is_object(gc))
            return fail(errp, p, "must be an object");
        struct sim_pauses *q = &v->pauses;
        if (get_dur(gc, p, "at", false, 0, &q->at, errp) < 0 ||
            get_dur(gc, p, "every", true, 1, &q->every, errp) < 0 ||
            get_dur(gc, p, "duration", true, 1, &q->duration, errp) < 0 ||
            get_num(gc, p, "share", true, 0, 1, false, &q->share, errp) < 0)
            return -1;
        if (q->share >= 1 || q->duration > q->every) {
            char pp[160];
            snprintf(pp, sizeof pp, "%s.%s", p, q->share >= 1 ? "share" : "duration");
            return fail(errp, pp, q->share >= 1 ? "must be below 1" : "must be at most \"every\"");
        }
    }
    v->rate_cap = rc;
    if (v->parallelism > v->max_parallelism) {
        snprintf(p, sizeof p, "%s.parallelism", path);
        return fail(errp, p, "%d is above max_parallelism %d", v->parallelism, v->max_parallelism);
    }
    if (v->fixed > v->max_parallelism) {
        snprintf(p, sizeof p, "%s.fixed", path);
        return fail(errp, p, "%d is above max_parallelism %d", v->fixed, v->max_parallelism);
    }
    json_t *ins = json_object_get(jv, "inputs");
    snprintf(p, sizeof p, "%s.inputs", path);
    if (ins && !json_is_null(ins) && !json_is_array(ins))
        return fail(errp, p, "must be an array");
    v->n_inputs = ins ? (int)json_array_size(ins) : 0;
    v->inputs = xcalloc((size_t)(v->n_inputs ? v->n_inputs : 1), sizeof *v->inputs);
    for (int k = 0; k < v->n_inputs; k++) {
        json_t *in = json_array_get(ins, (size_t)k);
        char ip[160], fp[192];
        snprintf(ip, sizeof ip, "%s.inputs[%d]", path, k);
        if (!json_is_object(in))
            return fail(errp, ip, "must be an object");
        const char *from = json_string_value(json_object_get(in, "from"));
        snprintf(fp, sizeof fp, "%s.from", ip);
        if (!from)
            return fail(errp, fp, "required");
        int f = -1;
        for (int q = 0; q < i; q++)
            if (strcmp(sc->v[q].id, from) == 0)
                f = q;
        if (f < 0)
            return fail(errp, fp,
                        "\"%s\" is not an earlier vertex (list the vertices in topological "
                        "order)",
                        from);
        v->inputs[k].from = f;
        const char *ship = json_string_value(json_object_get(in, "ship"));
        v->inputs[k].ship = ship ? core_ship_parse(ship) : CORE_SHIP_REBALANCE;
        if (get_num(in, ip, "hot_key", false, 0, 1, false, &v->inputs[k].hot_key, errp) < 0 ||
            get_dur(in, ip, "hot_key_at", false, 0, &v->inputs[k].hot_key_at, errp) < 0)
            return -1;
        if (v->inputs[k].hot_key >= 1) {
            snprintf(fp, sizeof fp, "%s.hot_key", ip);
            return fail(errp, fp, "must be below 1");
        }
        if (v->inputs[k].hot_key > 0 && v->inputs[k].ship != CORE_SHIP_HASH) {
            snprintf(fp, sizeof fp, "%s.hot_key", ip);
            return fail(errp, fp, "only a HASH input has keys");
        }
    }
    if (get_int(jv, path, "partitions", false, 1, 1000000, &v->partitions, errp) < 0)
        return -1;
    json_t *arr = json_object_get(jv, "arrival");
    snprintf(p, sizeof p, "%s.arrival", path);
    if (v->n_inputs > 0) {
        if (arr && !json_is_null(arr))
            return fail(errp, p, "only a source (a vertex without inputs) has an arrival profile");
        if (v->partitions) {
            snprintf(p, sizeof p, "%s.partitions", path);
            return fail(errp, p, "only a source has partitions");
        }
        return 0;
    }
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return fail(errp, p, "required for a source: a non-empty array of terms");
    v->n_terms = (int)json_array_size(arr);
    v->terms = xcalloc((size_t)v->n_terms, sizeof *v->terms);
    for (int k = 0; k < v->n_terms; k++) {
        char tp[160];
        snprintf(tp, sizeof tp, "%s.arrival[%d]", path, k);
        if (parse_term(json_array_get(arr, (size_t)k), tp, &v->terms[k], errp) < 0)
            return -1;
    }
    return 0;
}

/* "client": {"gaps": [{"at", "duration"}], "applies": "all" | "scale-ups"}. */
static int parse_client(struct sim_scenario *sc, json_t *c, char **errp)
{
    if (!c || json_is_null(c))
        return 0;
    if (!json_is_object(c))
        return fail(errp, "client", "must be an object");
    const char *key;
    json_t *val;
    json_object_foreach(c, key, val)
    {
        if (strcmp(key, "gaps") != 0 && strcmp(key, "applies") != 0) {
            char p[300];
            snprintf(p, sizeof p, "client.%s", key);
            return fail(errp, p, "unknown field (gaps, applies)");
        }
    }
    json_t *ap = json_object_get(c, "applies");
    if (ap && !json_is_null(ap)) {
        const char *a = json_string_value(ap);
        if (a && strcmp(a, "all") == 0)
            sc->applies = SIM_APPLY_ALL;
        else if (a && strcmp(a, "scale-ups") == 0)
            sc->applies = SIM_APPLY_SCALE_UPS;
        else
            return fail(errp, "client.applies", "must be \"all\" or \"scale-ups\"");
    }
    json_t *gs = json_object_get(c, "gaps");
    if (!gs || json_is_null(gs))
        return 0;
    if (!json_is_array(gs))
        return fail(errp, "client.gaps", "must be an array");
    sc->n_gaps = (int)json_array_size(gs);
    sc->gaps = xcalloc((size_t)(sc->n_gaps ? sc->n_gaps : 1), sizeof *sc->gaps);
    for (int i = 0; i < sc->n_gaps; i++) {
        char p[64];
        snprintf(p, sizeof p, "client.gaps[%d]", i);
        json_t *g = json_array_get(gs, (size_t)i);
        if (!json_is_object(g))
            return fail(errp, p, "must be an object");
        if (get_dur(g, p, "at", true, 0, &sc->gaps[i].at, errp) < 0 ||
            get_dur(g, p, "duration", true, 1, &sc->gaps[i].duration, errp) < 0)
            return -1;
    }
    return 0;
}

bool sim_scenario_gap(const struct sim_scenario *sc, int64_t t)
{
    for (int i = 0; i < sc->n_gaps; i++)
        if (t >= sc->gaps[i].at && t < sc->gaps[i].at + sc->gaps[i].duration)
            return true;
    return false;
}

int sim_scenario_parse(json_t *doc, const char *name_hint, struct sim_scenario **out, char **errp)
{
    *out = NULL;
    struct sim_scenario *sc = xcalloc(1, sizeof *sc);
    sc->seed = 1;
    sc->start_ms = 1764374400000LL; /* 2025-11-29T00:00:00Z */
    sc->interval = 30;
    sc->restart = 60;
    sc->slo = 300;
    sc->recovery_lag = 30;
    if (!json_is_object(doc)) {
        fail(errp, "scenario", "must be a JSON object");
        goto fail;
    }
    json_t *jn = json_object_get(doc, "name");
    const char *name = json_string_value(jn);
    if (jn && !json_is_null(jn) && (!name || !name_ok(name))) {
        fail(errp, "name",
             "must be 1 to 128 of A-Z a-z 0-9 . _ : - (it names the job and the "
             "output files)");
        goto fail;
    }
    sc->name = xstrdup(name ? name : name_hint && name_hint[0] ? name_hint : "scenario");
    /* A name taken from the file's name keeps to the same characters. */
    for (char *c = sc->name; *c; c++)
        if (!strchr(NAME_CHARS, *c))
            *c = '_';
    const char *about = json_string_value(json_object_get(doc, "about"));
    sc->about = xstrdup(about);
    json_t *seed = json_object_get(doc, "seed");
    if (seed && !json_is_null(seed)) {
        if (!json_is_integer(seed) || json_integer_value(seed) < 0) {
            fail(errp, "seed", "must be a non-negative integer");
            goto fail;
        }
        sc->seed = (uint64_t)json_integer_value(seed);
    }
    json_t *start = json_object_get(doc, "start");
    if (start && !json_is_null(start)) {
        if (!json_is_integer(start) || json_integer_value(start) < 0) {
            fail(errp, "start", "must be epoch milliseconds");
            goto fail;
        }
        sc->start_ms = json_integer_value(start);
    }
    double noise = 0;
    if (get_dur(doc, "", "horizon", true, 1, &sc->horizon, errp) < 0 ||
        get_dur(doc, "", "interval", false, 1, &sc->interval, errp) < 0 ||
        get_dur(doc, "", "restart", false, 0, &sc->restart, errp) < 0 ||
        get_dur(doc, "", "slo", false, 1, &sc->slo, errp) < 0 ||
        get_dur(doc, "", "recovery_lag", false, 0, &sc->recovery_lag, errp) < 0 ||
        get_num(doc, "", "noise", false, 0, 0.9, false, &noise, errp) < 0)
        goto fail;
    sc->noise = noise;
    if (sc->horizon > 400 * 86400) {
        fail(errp, "horizon", "must be at most 400 d");
        goto fail;
    }
    json_t *cfg = json_object_get(doc, "config");
    if (cfg && !json_is_null(cfg) && !json_is_object(cfg)) {
        fail(errp, "config", "must be an object of job options");
        goto fail;
    }
    sc->config = cfg && json_is_object(cfg) ? json_incref(cfg) : json_object();
    const char *key;
    json_t *val;
    json_object_foreach(sc->config, key, val)
    {
        if (!json_is_string(val) && !json_is_number(val) && !json_is_boolean(val)) {
            char p[300];
            snprintf(p, sizeof p, "config.%s", key);
            fail(errp, p, "must be a string, a number or a boolean");
            goto fail;
        }
    }
    json_t *vs = json_object_get(doc, "vertices");
    if (!json_is_array(vs) || json_array_size(vs) == 0) {
        fail(errp, "vertices", "required: a non-empty array");
        goto fail;
    }
    if (json_array_size(vs) > 256) {
        fail(errp, "vertices", "at most 256 vertices");
        goto fail;
    }
    sc->n = (int)json_array_size(vs);
    sc->v = xcalloc((size_t)sc->n, sizeof *sc->v);
    for (int i = 0; i < sc->n; i++)
        if (parse_vertex(sc, i, json_array_get(vs, (size_t)i), errp) < 0)
            goto fail;
    json_t *fs = json_object_get(doc, "failures");
    if (fs && !json_is_null(fs)) {
        if (!json_is_array(fs)) {
            fail(errp, "failures", "must be an array");
            goto fail;
        }
        sc->n_failures = (int)json_array_size(fs);
        sc->failures = xcalloc((size_t)(sc->n_failures ? sc->n_failures : 1), sizeof *sc->failures);
        for (int i = 0; i < sc->n_failures; i++) {
            char p[64];
            snprintf(p, sizeof p, "failures[%d]", i);
            json_t *f = json_array_get(fs, (size_t)i);
            if (!json_is_object(f)) {
                fail(errp, p, "must be an object");
                goto fail;
            }
            sc->failures[i].downtime = sc->restart;
            if (get_dur(f, p, "at", true, 0, &sc->failures[i].at, errp) < 0 ||
                get_dur(f, p, "downtime", false, 0, &sc->failures[i].downtime, errp) < 0)
                goto fail;
        }
    }
    if (parse_client(sc, json_object_get(doc, "client"), errp) < 0)
        goto fail;
    *out = sc;
    return 0;
fail:
    sim_scenario_free(sc);
    return -1;
}

int sim_scenario_load(const char *path, struct sim_scenario **out, char **errp)
{
    json_error_t je;
    *out = NULL;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        if (je.line > 0)
            *errp = xasprintf("%s:%d: %s", path, je.line, je.text);
        else
            *errp = xasprintf("%s", je.text);
        return -1;
    }
    /* The name defaults to the file's base name without .json. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char hint[256];
    snprintf(hint, sizeof hint, "%s", base);
    size_t n = strlen(hint);
    if (n > 5 && strcmp(hint + n - 5, ".json") == 0)
        hint[n - 5] = '\0';
    char *e = NULL;
    int rc = sim_scenario_parse(doc, hint, out, &e);
    if (rc < 0) {
        *errp = xasprintf("%s: %s", path, e);
        free(e);
    }
    json_decref(doc);
    return rc;
}

void sim_scenario_free(struct sim_scenario *sc)
{
    if (!sc)
        return;
    for (int i = 0; i < sc->n; i++) {
        free(sc->v[i].id);
        free(sc->v[i].inputs);
        free(sc->v[i].terms);
    }
    free(sc->v);
    free(sc->failures);
    free(sc->gaps);
    json_decref(sc->config);
    free(sc->name);
    free(sc->about);
    free(sc);
}

/* A periodic term's factor at second t: 1 outside its windows, `factor` inside, moving
 * linearly over `ramp` seconds at either edge. */
static double periodic_factor(const struct sim_term *m, int64_t t)
{
    if (t < m->at)
        return 1.0;
    int64_t d = m->until - m->at, k = t - m->at;
    if (m->every > 0)
        k %= m->every;
    else if (k >= d)
        return 1.0;
    if (k >= d)
        return 1.0;
    double w = 1.0;
    if (m->ramp > 0) {
        double in = (double)(k + 1) / (double)m->ramp, out = (double)(d - k) / (double)m->ramp;
        w = fmin(1.0, fmin(in, out));
    }
    return 1.0 + (m->factor - 1.0) * w;
}

double sim_scenario_arrival(const struct sim_scenario *sc, int v, int64_t t)
{
    const struct sim_vertex *x = &sc->v[v];
    double r = 0;
    for (int k = 0; k < x->n_terms; k++) {
        const struct sim_term *m = &x->terms[k];
        switch (m->kind) {
        case SIM_T_CONSTANT:
            r = m->rate;
            break;
        case SIM_T_STEP:
            if (t >= m->at)
                r = m->rate;
            break;
        case SIM_T_RAMP:
            if (t >= m->until)
                r = m->rate;
            else if (t > m->at)
                r += (m->rate - r) * (double)(t - m->at) / (double)(m->until - m->at);
            break;
        case SIM_T_DAILY: {
            double ph = 2.0 * M_PI * (double)(t - m->peak) / (double)m->period;
            r = m->min + (m->max - m->min) * (1.0 + cos(ph)) / 2.0;
            break;
        }
        case SIM_T_SPIKE:
            if (t >= m->at && t < m->until)
                r *= m->factor;
            break;
        case SIM_T_NOISE: {
            uint64_t stream = STREAM_ARRIVAL + (uint64_t)v * 256u + (uint64_t)k;
            double z = sim_rng_normal(sc->seed, stream, (uint64_t)(t / m->every));
            double f = 1.0 + m->sd * z;
            r *= f > 0 ? f : 0;
            break;
        }
        case SIM_T_OUTAGE:
            if (!m->backlog && t >= m->at && t < m->until)
                r = 0;
            break;
        case SIM_T_PERIODIC:
            r *= periodic_factor(m, t);
            break;
        case SIM_T_PEAKS: {
            r = m->base;
            for (int q = 0; q < m->n_peaks; q++) {
                int64_t d = ((t - m->peaks[q].at) % m->period + m->period) % m->period;
                if (d > m->period / 2)
                    d -= m->period;
                double z = (double)d / (double)m->peaks[q].width;
                r += m->peaks[q].rate * exp(-0.5 * z * z);
            }
            break;
        }
        }
    }
    return r;
}

bool sim_scenario_outage(const struct sim_scenario *sc, int v, int64_t t)
{
    const struct sim_vertex *x = &sc->v[v];
    for (int k = 0; k < x->n_terms; k++)
        if (x->terms[k].kind == SIM_T_OUTAGE && t >= x->terms[k].at && t < x->terms[k].until)
            return true;
    return false;
}

int sim_scenario_marks(const struct sim_scenario *sc, int64_t *at, const char **label, int max)
{
    int n = 0;
    for (int i = 0; i < sc->n; i++)
        for (int k = 0; k < sc->v[i].n_terms; k++) {
            const struct sim_term *m = &sc->v[i].terms[k];
            int64_t t = -1;
            const char *l = NULL;
            if (m->kind == SIM_T_STEP) {
                t = m->at;
                l = "step";
            } else if (m->kind == SIM_T_SPIKE) {
                t = m->at;
                l = "spike";
            } else if (m->kind == SIM_T_OUTAGE) {
                t = m->until;
                l = "outage end";
            }
            if (l && t < sc->horizon && n < max) {
                at[n] = t;
                label[n++] = l;
            }
        }
    for (int i = 0; i < sc->n_failures && n < max; i++)
        if (sc->failures[i].at < sc->horizon) {
            at[n] = sc->failures[i].at;
            label[n++] = "failure";
        }
    /* Insertion sort by time, then drop repeated instants. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && at[j] < at[j - 1]; j--) {
            int64_t ta = at[j];
            at[j] = at[j - 1];
            at[j - 1] = ta;
            const char *tl = label[j];
            label[j] = label[j - 1];
            label[j - 1] = tl;
        }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || at[i] != at[m - 1]) {
            at[m] = at[i];
            label[m++] = label[i];
        }
    return m;
}
