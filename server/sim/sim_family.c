/*
 * sim_family.c - scenario families: seeded generators of scenario documents (see
 * sim_family.h). Each family draws a job shape (shape()), its load pattern (the family's own
 * draws), then sizes the job: the rates are set so that the family's peak needs a chosen
 * number of subtasks at the busiest vertex, within every vertex's key groups and partitions,
 * and each vertex starts near its size at the start rate (a wrong size on purpose for
 * `converge`).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_family.h"
#include "sim/sim_model.h"
#include "sim/sim_rng.h"
#include "sim/sim_scenario.h"
#include "base/xmem.h"

#define STREAM_FAMILY 0x300000u
#define MAXV          8
#define H             3600
#define MIN_          60
#define UTIL          0.7 /* the size a family aims at: the default utilization target */

enum fam {
    F_BURSTS,
    F_GC,
    F_SPIKE,
    F_STAIRCASE,
    F_CYCLE,
    F_RAMP,
    F_OUTAGE,
    F_HOT_KEY,
    F_CAPPED_SINK,
    F_CONVERGE,
    F__COUNT
};

static const char *const names[F__COUNT] = {
    "bursts", "gc",     "spike",   "staircase",   "cycle",
    "ramp",   "outage", "hot_key", "capped_sink", "converge",
};

static const char *const abouts[F__COUNT] = {
    "bursts of 1 to 5 min, 1.5 to 4x, every 3 to 20 min, for hours",
    "constant arrivals; GC-like pauses (2 to 60 s, 30 to 90% of the time, every 1 to 15 min) "
    "make busy time spike",
    "one or two spikes of 2 to 10x for 5 to 30 min",
    "3 to 6 steps up, down, or up then down, of 1.3 to 2x each, every 30 to 120 min",
    "two daily peaks (morning and evening, 3 to 10x the night), half the time a quiet "
    "weekend day",
    "a ramp of 3 to 10x over 2 to 10 h (sometimes back down), half the time on vertices that "
    "scale sub-linearly (Amdahl's serial share or an exponent below 1)",
    "a source outage of 10 to 90 min, its backlog then caught up",
    "a hot key of 0 to 60% of a HASH edge, emerging at 1 to 4 h",
    "a sink capped by an external system at 0.6 to 2.5x its start input, the load stepping "
    "up 1.5 to 3x",
    "steady load, every vertex started at 0.4, 0.7, 1.6 or 2.5 times its size (the "
    "convergence grid over the families' job shapes)",
};

int sim_family_count(void)
{
    return F__COUNT;
}

const char *sim_family_name(int i)
{
    return i >= 0 && i < F__COUNT ? names[i] : NULL;
}

const char *sim_family_about(int i)
{
    return i >= 0 && i < F__COUNT ? abouts[i] : NULL;
}

int sim_family_find(const char *name)
{
    for (int i = 0; i < F__COUNT; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------------ draws -- */

struct draw {
    uint64_t seed, k;
};

static double unit(struct draw *d)
{
    return sim_rng_unit(d->seed, STREAM_FAMILY, d->k++);
}

static double uniform(struct draw *d, double lo, double hi)
{
    return lo + (hi - lo) * unit(d);
}

static double logu(struct draw *d, double lo, double hi)
{
    return exp(uniform(d, log(lo), log(hi)));
}

static int irange(struct draw *d, int lo, int hi)
{
    int x = lo + (int)floor(unit(d) * (double)(hi - lo + 1));
    return x > hi ? hi : x;
}

static bool chance(struct draw *d, double p)
{
    return unit(d) < p;
}

/* Whole seconds. */
static int64_t secs(double x)
{
    return (int64_t)llround(x);
}

/* ------------------------------------------------------------------ shape -- */

struct vspec {
    char id[16];
    int n_in, in[2];
    bool hash[2];
    double hot;     /* on in[0] */
    int64_t hot_at; /* seconds */
    double cap, sel, scaling, serial, rate_cap;
    int maxp, partitions, p;
    double share; /* sources: share of the family's base rate */
    bool pauses;
    int64_t pause_at, pause_every, pause_len;
    double pause_share;
};

struct shape {
    int n, n_src;
    struct vspec v[MAXV];
    double gain[MAXV]; /* records into v per record of the base rate */
};

static void shape(struct draw *d, struct shape *s)
{
    memset(s, 0, sizeof *s);
    s->n = irange(d, 2, MAXV);
    s->n_src = s->n >= 4 && chance(d, 0.25) ? 2 : 1;
    bool has_out[MAXV] = {false};
    static const int maxps[] = {128, 128, 128, 128, 256, 120, 200, 720};
    static const int parts[] = {8, 12, 16, 24, 32, 48, 64, 96, 128};
    int k_op = 0;
    for (int i = 0; i < s->n; i++) {
        struct vspec *v = &s->v[i];
        v->maxp = maxps[irange(d, 0, 7)];
        v->scaling = chance(d, 0.5) ? 1.0 : uniform(d, 0.85, 1.0);
        v->rate_cap = INFINITY;
        if (i < s->n_src) {
            snprintf(v->id, sizeof v->id, i == 0 ? "src" : "src%d", i + 1);
            v->cap = logu(d, 3000, 20000);
            v->sel = 1.0;
            v->share = i == 0 ? 1.0 : uniform(d, 0.2, 1.0);
            v->partitions = chance(d, 0.7) ? parts[irange(d, 0, 8)] : 0;
            continue;
        }
        if (i == s->n - 1)
            snprintf(v->id, sizeof v->id, "sink");
        else
            snprintf(v->id, sizeof v->id, "op%d", ++k_op);
        v->cap = logu(d, 400, 8000);
        v->sel = chance(d, 0.6) ? 1.0 : logu(d, 0.1, 2.0);
        if (i == s->n_src && s->n_src == 2) {
            v->n_in = 2;
            v->in[0] = 0;
            v->in[1] = 1;
        } else {
            /* A chain from the newest vertex nothing reads yet, a fan-out from any earlier
             * one, now and then a second input (a fan-in). */
            int open[MAXV], n_open = 0;
            for (int u = 0; u < i; u++)
                if (!has_out[u])
                    open[n_open++] = u;
            int first;
            if (n_open > 0 && !chance(d, 0.25))
                first = chance(d, 0.7) ? open[n_open - 1] : open[irange(d, 0, n_open - 1)];
            else
                first = irange(d, 0, i - 1);
            v->n_in = 1;
            v->in[0] = first;
            if (i >= s->n_src + 1 && chance(d, 0.25)) {
                int second = -1;
                for (int q = n_open - 1; q >= 0 && second < 0; q--)
                    if (open[q] != first)
                        second = open[q];
                if (second < 0) {
                    second = irange(d, 0, i - 1);
                    if (second == first)
                        second = -1;
                }
                if (second >= 0) {
                    v->n_in = 2;
                    v->in[1] = second;
                }
            }
        }
        bool keyed = chance(d, 0.45);
        for (int e = 0; e < v->n_in; e++) {
            v->hash[e] = keyed;
            has_out[v->in[e]] = true;
        }
    }
    /* Records into each vertex per record of the base rate (inputs come first). */
    for (int i = 0; i < s->n; i++) {
        const struct vspec *v = &s->v[i];
        if (i < s->n_src) {
            s->gain[i] = v->share;
            continue;
        }
        for (int e = 0; e < v->n_in; e++)
            s->gain[i] += s->gain[v->in[e]] * s->v[v->in[e]].sel;
    }
}

/* The most subtasks a vertex can usefully run: its key groups, a source's partitions. */
static int limit(const struct vspec *v)
{
    return v->partitions > 0 && v->partitions < v->maxp ? v->partitions : v->maxp;
}

/* The base rate at which the busiest vertex needs `subtasks` at the utilization target
 * (counted linearly), each vertex kept within 60% of its limit at `peak` times it. */
static double base_rate(const struct shape *s, double subtasks, double peak)
{
    double worst = 0;
    for (int i = 0; i < s->n; i++) {
        double need = s->gain[i] / (UTIL * s->v[i].cap);
        if (need > worst)
            worst = need;
    }
    double r = subtasks / worst;
    for (int i = 0; i < s->n; i++) {
        double room = 0.6 * limit(&s->v[i]) * UTIL * s->v[i].cap / s->gain[i];
        if (room < r)
            r = room;
    }
    return r / peak;
}

/* ------------------------------------------------------------- load terms -- */

/* The family's draws: what the terms of each source are built from. */
struct load {
    enum fam f;
    int64_t horizon;
    double peak; /* the highest rate of the pattern over its base */
    double noise_sd;
    /* bursts / gc / spike / outage / staircase / cycle / ramp / capped sink */
    int n;
    int64_t at[8], len[8]; /* staircase: up to 7 levels */
    double factor[8];
    int64_t every, ramp;
    /* cycle */
    int64_t peak_at[2], width[2];
    double peak_rate[2];
    bool weekend;
    double weekend_factor;
    /* ramp */
    bool back_down;
};

static json_t *term(const char *type)
{
    return json_pack("{s:s}", "type", type);
}

static void set_dur(json_t *o, const char *key, int64_t s)
{
    json_object_set_new(o, key, json_integer(s));
}

/* The arrival terms of a source whose base rate is `base`. */
static json_t *terms(const struct load *L, double base)
{
    json_t *a = json_array(), *t;
    switch (L->f) {
    case F_BURSTS:
        json_array_append_new(a, json_pack("{s:s, s:f}", "type", "constant", "rate", base));
        t = term("periodic");
        set_dur(t, "at", L->at[0]);
        set_dur(t, "duration", L->len[0]);
        set_dur(t, "every", L->every);
        set_dur(t, "ramp", L->ramp);
        json_object_set_new(t, "factor", json_real(L->factor[0]));
        json_array_append_new(a, t);
        break;
    case F_SPIKE:
        json_array_append_new(a, json_pack("{s:s, s:f}", "type", "constant", "rate", base));
        for (int k = 0; k < L->n; k++) {
            t = term("spike");
            set_dur(t, "at", L->at[k]);
            set_dur(t, "duration", L->len[k]);
            json_object_set_new(t, "factor", json_real(L->factor[k]));
            json_array_append_new(a, t);
        }
        break;
    case F_STAIRCASE:
    case F_CAPPED_SINK:
        json_array_append_new(
            a, json_pack("{s:s, s:f}", "type", "constant", "rate", base * L->factor[0]));
        for (int k = 1; k < L->n; k++) {
            t = term("step");
            set_dur(t, "at", L->at[k]);
            json_object_set_new(t, "rate", json_real(base * L->factor[k]));
            json_array_append_new(a, t);
        }
        break;
    case F_CYCLE: {
        t = term("peaks");
        json_object_set_new(t, "base", json_real(base));
        json_t *ps = json_array();
        for (int k = 0; k < 2; k++) {
            json_t *pk = json_object();
            set_dur(pk, "at", L->peak_at[k]);
            set_dur(pk, "width", L->width[k]);
            json_object_set_new(pk, "rate", json_real(base * L->peak_rate[k]));
            json_array_append_new(ps, pk);
        }
        json_object_set_new(t, "peaks", ps);
        json_array_append_new(a, t);
        if (L->weekend) {
            t = term("periodic");
            set_dur(t, "at", 86400);
            set_dur(t, "duration", 2 * 86400);
            set_dur(t, "every", 7 * 86400);
            set_dur(t, "ramp", 3 * H);
            json_object_set_new(t, "factor", json_real(L->weekend_factor));
            json_array_append_new(a, t);
        }
        break;
    }
    case F_RAMP:
        json_array_append_new(a, json_pack("{s:s, s:f}", "type", "constant", "rate", base));
        t = term("ramp");
        set_dur(t, "at", L->at[0]);
        set_dur(t, "until", L->at[0] + L->len[0]);
        json_object_set_new(t, "rate", json_real(base * L->factor[0]));
        json_array_append_new(a, t);
        if (L->back_down) {
            t = term("ramp");
            set_dur(t, "at", L->at[1]);
            set_dur(t, "until", L->at[1] + L->len[1]);
            json_object_set_new(t, "rate", json_real(base));
            json_array_append_new(a, t);
        }
        break;
    case F_OUTAGE:
        json_array_append_new(a, json_pack("{s:s, s:f}", "type", "constant", "rate", base));
        t = term("outage");
        set_dur(t, "at", L->at[0]);
        set_dur(t, "duration", L->len[0]);
        json_array_append_new(a, t);
        break;
    default: /* gc, hot key, converge: constant */
        json_array_append_new(a, json_pack("{s:s, s:f}", "type", "constant", "rate", base));
        break;
    }
    if (L->noise_sd > 0)
        json_array_append_new(a, json_pack("{s:s, s:f, s:I}", "type", "noise", "sd", L->noise_sd,
                                           "every", (json_int_t)60));
    return a;
}

/* The family's load pattern. */
static void draw_load(struct draw *d, enum fam f, struct load *L)
{
    memset(L, 0, sizeof *L);
    L->f = f;
    L->peak = 1.0;
    L->noise_sd = f != F_CONVERGE && chance(d, 0.5) ? uniform(d, 0.01, 0.05) : 0.0;
    switch (f) {
    case F_BURSTS:
        L->horizon = 8 * H;
        L->len[0] = secs(uniform(d, 1 * MIN_, 5 * MIN_));
        L->every = L->len[0] + secs(uniform(d, 2 * MIN_, 15 * MIN_));
        L->ramp = secs(uniform(d, 0, fmin(30.0, (double)L->len[0] / 4)));
        L->factor[0] = uniform(d, 1.5, 4.0);
        L->at[0] = secs(uniform(d, 30 * MIN_, 90 * MIN_));
        L->peak = L->factor[0];
        break;
    case F_GC:
        L->horizon = 6 * H;
        break;
    case F_SPIKE:
        L->horizon = 8 * H;
        L->n = chance(d, 0.3) ? 2 : 1;
        L->at[0] = secs(uniform(d, 1.5 * H, 4 * H));
        for (int k = 0; k < L->n; k++) {
            if (k > 0)
                L->at[k] = L->at[k - 1] + L->len[k - 1] + secs(uniform(d, 1 * H, 2.5 * H));
            L->len[k] = secs(uniform(d, 5 * MIN_, 30 * MIN_));
            L->factor[k] = uniform(d, 2.0, 10.0);
            if (L->factor[k] > L->peak)
                L->peak = L->factor[k];
        }
        break;
    case F_STAIRCASE: {
        int steps = irange(d, 3, 6), dir = irange(d, 0, 2); /* up, down, up then down */
        int64_t len = secs(uniform(d, 30 * MIN_, 120 * MIN_));
        L->n = steps + 1;
        double level = 1.0;
        L->factor[0] = 1.0;
        for (int k = 1; k <= steps; k++) {
            double x = uniform(d, 1.3, 2.0);
            bool up = dir == 0 || (dir == 2 && k <= (steps + 1) / 2);
            level = up ? level * x : level / x;
            L->factor[k] = level;
            L->at[k] = 1 * H + (k - 1) * len;
        }
        /* The base is the lowest level. */
        double lo = 1.0, hi = 1.0;
        for (int k = 0; k <= steps; k++) {
            lo = fmin(lo, L->factor[k]);
            hi = fmax(hi, L->factor[k]);
        }
        for (int k = 0; k <= steps; k++)
            L->factor[k] /= lo;
        L->peak = hi / lo;
        L->horizon = 1 * H + steps * len + 1 * H;
        break;
    }
    case F_CYCLE: {
        L->horizon = 2 * 86400;
        double top = uniform(d, 3.0, 10.0);
        L->peak_at[0] = secs(uniform(d, 7 * H, 11 * H));
        L->peak_at[1] = secs(uniform(d, 16 * H, 21 * H));
        L->width[0] = secs(uniform(d, 1.5 * H, 3.5 * H));
        L->width[1] = secs(uniform(d, 1.5 * H, 3.5 * H));
        L->peak_rate[0] = top - 1.0;
        L->peak_rate[1] = (top - 1.0) * uniform(d, 0.5, 1.0);
        L->weekend = chance(d, 0.5);
        L->weekend_factor = uniform(d, 0.3, 0.6);
        double hi = 0;
        for (int64_t t = 0; t < 86400; t += 60) {
            double r = 1.0;
            for (int k = 0; k < 2; k++) {
                int64_t dd = ((t - L->peak_at[k]) % 86400 + 86400) % 86400;
                if (dd > 43200)
                    dd -= 86400;
                double z = (double)dd / (double)L->width[k];
                r += L->peak_rate[k] * exp(-0.5 * z * z);
            }
            hi = fmax(hi, r);
        }
        L->peak = hi;
        break;
    }
    case F_RAMP:
        L->at[0] = secs(uniform(d, 1 * H, 2 * H));
        L->len[0] = secs(uniform(d, 2 * H, 10 * H));
        L->factor[0] = uniform(d, 3.0, 10.0);
        L->back_down = chance(d, 0.3);
        L->horizon = L->at[0] + L->len[0] + 2 * H;
        if (L->back_down) {
            L->at[1] = L->at[0] + L->len[0] + secs(uniform(d, 0.5 * H, 2 * H));
            L->len[1] = secs(uniform(d, 1 * H, 4 * H));
            L->horizon = L->at[1] + L->len[1] + 2 * H;
        }
        L->peak = L->factor[0];
        break;
    case F_OUTAGE:
        L->horizon = 8 * H;
        L->at[0] = secs(uniform(d, 1.5 * H, 4 * H));
        L->len[0] = secs(uniform(d, 10 * MIN_, 90 * MIN_));
        L->peak = 1.5; /* room to catch up within the limits */
        break;
    case F_HOT_KEY:
        L->horizon = 8 * H;
        break;
    case F_CAPPED_SINK:
        L->horizon = 8 * H;
        L->n = 2;
        L->factor[0] = 1.0;
        L->factor[1] = uniform(d, 1.5, 3.0);
        L->at[1] = secs(uniform(d, 1 * H, 3 * H));
        L->peak = L->factor[1];
        break;
    case F_CONVERGE:
    case F__COUNT:
        L->horizon = 4 * H;
        break;
    }
}

/* --------------------------------------------------------------- the doc -- */

static json_t *vertices(const struct shape *s, const struct load *L, double base)
{
    json_t *vs = json_array();
    for (int i = 0; i < s->n; i++) {
        const struct vspec *v = &s->v[i];
        json_t *o = json_object();
        json_object_set_new(o, "id", json_string(v->id));
        json_object_set_new(o, "parallelism", json_integer(v->p > 0 ? v->p : 1));
        json_object_set_new(o, "max_parallelism", json_integer(v->maxp));
        json_object_set_new(o, "capacity", json_real(round(v->cap)));
        if (v->scaling < 1.0)
            json_object_set_new(o, "scaling", json_real(round(v->scaling * 1000) / 1000));
        if (v->serial > 0)
            json_object_set_new(o, "serial", json_real(v->serial));
        if (v->sel != 1.0)
            json_object_set_new(o, "selectivity", json_real(round(v->sel * 1000) / 1000));
        if (isfinite(v->rate_cap))
            json_object_set_new(o, "rate_cap", json_real(round(v->rate_cap)));
        if (v->pauses)
            json_object_set_new(o, "pauses",
                                json_pack("{s:I, s:I, s:I, s:f}", "at", (json_int_t)v->pause_at,
                                          "every", (json_int_t)v->pause_every, "duration",
                                          (json_int_t)v->pause_len, "share", v->pause_share));
        if (i < s->n_src) {
            if (v->partitions > 0)
                json_object_set_new(o, "partitions", json_integer(v->partitions));
            json_object_set_new(o, "arrival", terms(L, base * v->share));
        } else {
            json_t *ins = json_array();
            for (int e = 0; e < v->n_in; e++) {
                json_t *in = json_pack("{s:s, s:s}", "from", s->v[v->in[e]].id, "ship",
                                       v->hash[e] ? "HASH" : "REBALANCE");
                if (e == 0 && v->hot > 0) {
                    json_object_set_new(in, "hot_key", json_real(round(v->hot * 1000) / 1000));
                    json_object_set_new(in, "hot_key_at", json_integer(v->hot_at));
                }
                json_array_append_new(ins, in);
            }
            json_object_set_new(o, "inputs", ins);
        }
        json_array_append_new(vs, o);
    }
    return vs;
}

/* Each vertex's size at the start rate (the fixed baseline's rule on a constant load). */
static void sizes_at_start(const struct shape *s, json_t *doc, int *size)
{
    json_t *probe = json_deep_copy(doc);
    json_object_set_new(probe, "horizon", json_integer(120));
    json_t *vs = json_object_get(probe, "vertices");
    struct sim_scenario *full = NULL;
    char *err = NULL;
    if (sim_scenario_parse(doc, "probe", &full, &err) < 0) {
        /* The generator's own document: a failure is a defect. */
        fprintf(stderr, "sim_family: %s\n", err);
        abort();
    }
    for (int i = 0; i < s->n_src; i++) {
        double r = sim_scenario_arrival(full, i, 0);
        json_object_set_new(json_array_get(vs, (size_t)i), "arrival",
                            json_pack("[{s:s, s:f}]", "type", "constant", "rate", r));
    }
    /* A hot key that emerges later does not size the start. */
    for (int i = s->n_src; i < s->n; i++) {
        json_t *in0 = json_array_get(json_object_get(json_array_get(vs, (size_t)i), "inputs"), 0);
        json_object_del(in0, "hot_key");
        json_object_del(in0, "hot_key_at");
    }
    struct sim_scenario *sc = NULL;
    if (sim_scenario_parse(probe, "probe", &sc, &err) < 0) {
        fprintf(stderr, "sim_family: %s\n", err);
        abort();
    }
    sim_model_fixed_size(sc, UTIL, size);
    sim_scenario_free(sc);
    sim_scenario_free(full);
    json_decref(probe);
}

static uint64_t family_seed(int f, uint64_t seed)
{
    return sim_rng_u64(seed, STREAM_FAMILY + 1u + (uint64_t)f, 0);
}

json_t *sim_family_scenario(int fi, uint64_t seed)
{
    enum fam f = (enum fam)fi;
    struct draw d = {.seed = family_seed(fi, seed), .k = 0};
    struct shape s;
    struct load L;
    shape(&d, &s);
    draw_load(&d, f, &L);
    double subtasks = logu(&d, 6, 60);
    int64_t restart = secs(logu(&d, 30, 600));
    static const int intervals[] = {15, 30, 30, 60};
    int interval = intervals[irange(&d, 0, 3)];
    double noise = f != F_CONVERGE && chance(&d, 0.5) ? uniform(&d, 0.02, 0.2) : 0.0;

    /* The family's own vertex features. */
    if (f == F_GC) {
        bool any = false;
        for (int i = s.n_src; i < s.n; i++) {
            struct vspec *v = &s.v[i];
            if (!chance(&d, 0.6) && (any || i < s.n - 1))
                continue;
            any = true;
            v->pauses = true;
            v->pause_every = secs(logu(&d, 60, 900));
            double most = fmin(60.0, (double)v->pause_every / 10.0);
            v->pause_len = secs(uniform(&d, 2, most > 2 ? most : 2));
            v->pause_share = uniform(&d, 0.3, 0.9);
            v->pause_at = secs(uniform(&d, 0, (double)v->pause_every));
        }
    }
    if (f == F_HOT_KEY) {
        int hot = -1;
        for (int i = s.n_src; i < s.n && hot < 0; i++)
            if (s.v[i].hash[0])
                hot = i;
        if (hot < 0) {
            hot = s.n_src;
            for (int e = 0; e < s.v[hot].n_in; e++)
                s.v[hot].hash[e] = true;
        }
        s.v[hot].hot = uniform(&d, 0.0, 0.6);
        s.v[hot].hot_at = secs(uniform(&d, 1 * H, 4 * H));
    }
    double cap_ratio = f == F_CAPPED_SINK ? uniform(&d, 0.6, 2.5) : 0;
    if (f == F_RAMP && chance(&d, 0.5)) {
        bool amdahl = chance(&d, 0.5);
        for (int i = s.n_src; i < s.n; i++) {
            if (amdahl)
                s.v[i].serial = -1; /* set once the rates are known */
            else
                s.v[i].scaling = uniform(&d, 0.7, 0.9);
        }
    }
    double base = base_rate(&s, subtasks, L.peak);
    for (int i = s.n_src; i < s.n; i++)
        if (s.v[i].serial < 0) {
            /* Amdahl's plateau at 3 to 10 times what the peak needs. */
            double need = base * L.peak * s.gain[i] / (UTIL * s.v[i].cap);
            double most = fmin(0.2, 1.0 / (3.0 * fmax(need, 1.0)));
            double least = fmin(most, 1.0 / (10.0 * fmax(need, 1.0)));
            s.v[i].serial = round(logu(&d, least, most) * 1e5) / 1e5;
        }
    if (f == F_CAPPED_SINK) {
        struct vspec *sink = &s.v[s.n - 1];
        sink->rate_cap = cap_ratio * base * s.gain[s.n - 1];
    }

    json_t *doc = json_object();
    char name[64];
    snprintf(name, sizeof name, "%s-%llu", names[f], (unsigned long long)seed);
    json_object_set_new(doc, "name", json_string(name));
    json_object_set_new(doc, "about", json_string(abouts[f]));
    json_object_set_new(doc, "seed", json_integer((json_int_t)(d.seed >> 1)));
    json_object_set_new(doc, "horizon", json_integer(L.horizon));
    json_object_set_new(doc, "interval", json_integer(interval));
    json_object_set_new(doc, "restart", json_integer(restart));
    json_object_set_new(doc, "slo", json_integer(300));
    if (noise > 0)
        json_object_set_new(doc, "noise", json_real(round(noise * 1000) / 1000));
    json_object_set_new(doc, "vertices", vertices(&s, &L, base));

    /* Start near the size the start rate needs, or wrong on purpose (converge). */
    int size[MAXV];
    sizes_at_start(&s, doc, size);
    static const double wrong[] = {0.4, 0.7, 1.6, 2.5};
    for (int i = 0; i < s.n; i++) {
        double x = f == F_CONVERGE ? wrong[irange(&d, 0, 3)] : uniform(&d, 0.8, 1.25);
        int p = (int)lround(size[i] * x);
        if (p < 1)
            p = 1;
        if (f == F_CONVERGE && p == size[i])
            p = x < 1 && size[i] > 1 ? size[i] - 1 : size[i] + 1;
        if (p > s.v[i].maxp)
            p = s.v[i].maxp;
        s.v[i].p = p;
    }
    json_object_set_new(doc, "vertices", vertices(&s, &L, base));
    return doc;
}
