/*
 * sim_batch.c - a batch scenario in a closed loop (see sim_batch.h): every `interval` the
 * backfill's progress goes to the decision service as a batch sample, and a decision with
 * execute: true resizes the pool (new workers run after `startup`).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmem.h"
#include "options/options.h"
#include "sim/sim_batch.h"
#include "sim/sim_pipeline.h"
#include "sim/sim_rng.h"

struct scenario {
    const char *name;
    uint64_t seed;
    int64_t start_ms, interval, startup, horizon;
    int workers, slots;
    double rate, total, part, noise, hot_size, hot_rate;
    json_t *config;
};

/* What one policy's run leaves. */
struct outcome {
    double finish_s; /* -1: not finished within the horizon */
    double worker_hours;
    int changes, decisions, max_pool;
    json_t *pools; /* [[t, pool], ...] at each change */
    json_t *reasons;
};

bool sim_batch_is(const char *path)
{
    json_t *doc = json_load_file(path, 0, NULL);
    const char *mode = json_string_value(json_object_get(doc, "mode"));
    bool batch = mode && strcmp(mode, "BATCH") == 0;
    json_decref(doc);
    return batch;
}

/* A positive number at key (def when absent); -1 with a message naming it otherwise. */
static int number(json_t *doc, const char *key, double def, bool positive, double *out)
{
    json_t *v = json_object_get(doc, key);
    *out = def;
    if (!v)
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
        (positive && !(json_number_value(v) > 0))) {
        fprintf(stderr, "governor simulate: %s: must be a number %s 0\n", key,
                positive ? "above" : "at least");
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

static int parse(json_t *doc, struct scenario *sc)
{
    double seed, start, interval, startup, horizon, workers, slots;
    json_t *hot = json_object_get(doc, "hot_file");
    memset(sc, 0, sizeof *sc);
    sc->name = json_string_value(json_object_get(doc, "name"));
    if (!sc->name) {
        fprintf(stderr, "governor simulate: name: required (a string)\n");
        return -1;
    }
    if (number(doc, "seed", 1, false, &seed) < 0 ||
        number(doc, "start", 1764547200000.0, false, &start) < 0 ||
        number(doc, "interval", 30, true, &interval) < 0 ||
        number(doc, "startup", 60, false, &startup) < 0 ||
        number(doc, "horizon", 86400, true, &horizon) < 0 ||
        number(doc, "workers", 10, true, &workers) < 0 ||
        number(doc, "slots_per_worker", 1, true, &slots) < 0 ||
        number(doc, "rate", 0, true, &sc->rate) < 0 ||
        number(doc, "total_work", 0, true, &sc->total) < 0 ||
        number(doc, "part_size", sc->total / 1000, true, &sc->part) < 0 ||
        number(doc, "noise", 0, false, &sc->noise) < 0 ||
        (hot && (number(hot, "size", 0, false, &sc->hot_size) < 0 ||
                 number(hot, "rate", sc->rate, true, &sc->hot_rate) < 0)))
        return -1;
    if (sc->rate == 0 || sc->total == 0) {
        fprintf(stderr, "governor simulate: rate and total_work: required\n");
        return -1;
    }
    if (sc->hot_size >= sc->total || sc->noise >= 1) {
        fprintf(stderr, "governor simulate: %s\n",
                sc->noise >= 1 ? "noise: must be below 1"
                               : "hot_file.size: must be below total_work");
        return -1;
    }
    sc->seed = (uint64_t)seed;
    sc->start_ms = (int64_t)start;
    sc->interval = (int64_t)interval;
    sc->startup = (int64_t)startup;
    sc->horizon = (int64_t)horizon;
    sc->workers = (int)workers;
    sc->slots = (int)slots;
    sc->config = json_object_get(doc, "config");
    return 0;
}

/* The batch sample at t: the pool, the stage's progress and what it can still be split into. */
static json_t *sample(const struct scenario *sc, int64_t t, int pool, double busy_share,
                      double done, double busy_s, double split_left, double hot_left)
{
    double parts = ceil(split_left / sc->part) + (hot_left > 0 ? 1 : 0);
    return json_pack("{s:I, s:I, s:s, s:s, s:o, s:[{s:s, s:{s:s, s:f, s:f, s:f, s:f}}]}", "at",
                     (json_int_t)(sc->start_ms + t * 1000), "running_since",
                     (json_int_t)sc->start_ms, "status", "RUNNING", "mode", "BATCH", "workers",
                     json_pack("{s:i, s:i, s:f}", "current", pool, "slots_per_worker", sc->slots,
                               "cpu_utilization", busy_share),
                     "vertices", "id", "read", "batch", "state", "RUNNING", "total_work", sc->total,
                     "work_done", done, "busy_s", busy_s, "remaining_parallelism", parts);
}

/* One run: decide (the batch rule through the pipeline) or keep the starting pool. */
static int run(const struct scenario *sc, const struct opt_job *layers, bool decide, FILE *trace,
               struct outcome *o)
{
    struct sim_pipeline *p = decide ? sim_pipeline_new(sc->name, layers, NULL) : NULL;
    double split_left = sc->total - sc->hot_size, hot_left = sc->hot_size, busy_s = 0;
    int pool = sc->workers, active = sc->workers, rc = 0;
    int64_t ready_at = 0; /* when the workers asked for last are running */
    memset(o, 0, sizeof *o);
    o->finish_s = -1;
    o->max_pool = pool;
    o->pools = json_pack("[[i, i]]", 0, pool);
    o->reasons = json_object();
    for (int64_t t = 0; t < sc->horizon; t += sc->interval) {
        if (t >= ready_at)
            active = pool;
        /* the interval's progress: the hot file on one slot, the rest on the others */
        double slots = (double)active * sc->slots, busy = 0;
        double u = 2 * sim_rng_unit(sc->seed, 1, (uint64_t)(t / sc->interval)) - 1;
        double speed = sc->rate * (1 + sc->noise * u) * (double)sc->interval;
        if (hot_left > 0 && slots >= 1) {
            double h = fmin(hot_left, sc->hot_rate * (double)sc->interval);
            hot_left -= h;
            slots -= 1;
            busy += 1;
        }
        double s = fmin(split_left, slots * speed);
        split_left -= s;
        busy += speed > 0 ? s / speed : 0;
        busy_s += busy * (double)sc->interval; /* what the runner counts: slots busy */
        o->worker_hours += (double)pool * (double)sc->interval / 3600.0;
        int64_t now = t + sc->interval;
        if (split_left <= 0 && hot_left <= 0) {
            o->finish_s = (double)now;
            break;
        }
        if (!p)
            continue;
        double share = (double)active * sc->slots > 0 ? busy / ((double)active * sc->slots) : 0;
        json_t *req = sample(sc, now, pool, fmin(1, share), sc->total - split_left - hot_left,
                             busy_s, split_left, hot_left);
        char *err = NULL;
        json_t *d = sim_decide(p, req, &err);
        if (d && trace) {
            /* The sample with its job and decision, as `governor simulate --trace` writes. */
            json_object_set_new(req, "job", json_string(sc->name));
            json_object_set(req, "decision", d);
            char *line = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(15));
            fprintf(trace, "%s\n", line);
            free(line);
        }
        json_decref(req);
        if (!d) {
            fprintf(stderr, "governor simulate: %s: at %lld s: %s\n", sc->name, (long long)now,
                    err);
            free(err);
            rc = -1;
            break;
        }
        o->decisions++;
        const char *reason = json_string_value(json_object_get(d, "reason"));
        json_t *n = json_object_get(o->reasons, reason);
        json_object_set_new(o->reasons, reason, json_integer(json_integer_value(n) + 1));
        int target =
            (int)json_integer_value(json_object_get(json_object_get(d, "workers"), "target"));
        if (json_is_true(json_object_get(d, "execute")) && target != pool) {
            if (target > pool)
                ready_at = now + sc->startup;
            else
                active = target;
            pool = target;
            o->changes++;
            o->max_pool = pool > o->max_pool ? pool : o->max_pool;
            json_array_append_new(o->pools, json_pack("[I, i]", (json_int_t)now, pool));
        }
        json_decref(d);
    }
    sim_pipeline_free(p);
    return rc;
}

/* The starting layers: the scenario's config at the server layer. NULL + message. */
static struct opt_job *layers_of(const struct scenario *sc)
{
    struct opt_job *j = opt_job_new();
    const char *key;
    json_t *v;
    json_object_foreach(sc->config, key, v)
    {
        char num[64], *err = NULL;
        const char *text = json_string_value(v);
        if (json_is_number(v)) {
            snprintf(num, sizeof num, "%.17g", json_number_value(v));
            text = num;
        }
        if (!text || opt_job_set(j, OPT_SERVER, key, text, &err) < 0) {
            fprintf(stderr, "governor simulate: config: %s\n", err ? err : key);
            free(err);
            opt_job_free(j);
            return NULL;
        }
    }
    return j;
}

int sim_batch_main(const char *path, const char *out, const char *trace_dir, const uint64_t *seed)
{
    FILE *trace = NULL;
    struct scenario sc;
    struct outcome o[2];
    static const char *const names[] = {"governor", "fixed"};
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je), *report = NULL;
    struct opt_job *layers = NULL;
    int code = 2, n = 0;
    if (!doc || parse(doc, &sc) < 0) {
        if (!doc)
            fprintf(stderr, "governor simulate: %s: %s\n", path, je.text);
        goto out;
    }
    if (seed)
        sc.seed = *seed;
    if (!(layers = layers_of(&sc)))
        goto out;
    code = 1;
    if (trace_dir) {
        char *tn = xasprintf("%s/%s.governor.jsonl", trace_dir, sc.name);
        trace = fopen(tn, "w");
        if (!trace)
            fprintf(stderr, "governor simulate: cannot write %s\n", tn);
        free(tn);
        if (!trace)
            goto out;
    }
    for (; n < 2; n++)
        if (run(&sc, layers, n == 0, n == 0 ? trace : NULL, &o[n]) < 0) {
            n++;
            goto out;
        }
    printf("%-16s %-9s %10s %13s %8s %10s %9s\n", "scenario", "policy", "finish_s", "worker_hours",
           "changes", "decisions", "max_pool");
    report = json_pack("{s:s, s:s, s:[]}", "scenario", sc.name, "mode", "BATCH", "policies");
    for (int i = 0; i < 2; i++) {
        printf("%-16s %-9s %10.0f %13.2f %8d %10d %9d\n", sc.name, names[i], o[i].finish_s,
               o[i].worker_hours, o[i].changes, o[i].decisions, o[i].max_pool);
        json_array_append_new(
            json_object_get(report, "policies"),
            json_pack("{s:s, s:f, s:f, s:i, s:i, s:i, s:O, s:O}", "policy", names[i], "finish_s",
                      o[i].finish_s, "worker_hours", round(o[i].worker_hours * 1000) / 1000,
                      "changes", o[i].changes, "decisions", o[i].decisions, "max_pool",
                      o[i].max_pool, "pools", o[i].pools, "reasons", o[i].reasons));
    }
    char *file = xasprintf("%s/%s.json", out ? out : ".", sc.name);
    if (json_dump_file(report, file, JSON_INDENT(1) | JSON_SORT_KEYS) < 0)
        fprintf(stderr, "governor simulate: cannot write %s\n", file);
    else
        code = 0;
    free(file);
out:
    if (trace)
        fclose(trace);
    for (int i = 0; i < n; i++) {
        json_decref(o[i].pools);
        json_decref(o[i].reasons);
    }
    json_decref(report);
    opt_job_free(layers);
    json_decref(doc);
    return code;
}
