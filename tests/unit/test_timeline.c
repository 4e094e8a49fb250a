/*
 * Unit tests for timeline.c: the bucket arithmetic (counts, edges, the last partial bucket,
 * overflow at the ends of int64, the automatic step) and the rendering of a history built in
 * memory (the last value of a bucket, the mean utilization, the largest backlog, the bounds
 * switched off, empty buckets as null, the reasons' runs and the vertex filter).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "store/timeline.h"
#include "base/xmem.h"

static void bucket_counts(void)
{
    int64_t n = -1;
    ASSERT_EQ(timeline_buckets(0, 60000, 60000, &n), 0);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(timeline_buckets(0, 60001, 60000, &n), 0);
    ASSERT_EQ(n, 2); /* a partial last bucket counts */
    ASSERT_EQ(timeline_buckets(0, 6 * 3600000LL, 60000, &n), 0);
    ASSERT_EQ(n, 360);
    ASSERT_EQ(timeline_buckets(-90000, 90000, 60000, &n), 0);
    ASSERT_EQ(n, 3);
    ASSERT_EQ(timeline_buckets(5, 5, 1000, &n), -1); /* empty range */
    ASSERT_EQ(timeline_buckets(6, 5, 1000, &n), -1); /* reversed */
    ASSERT_EQ(timeline_buckets(0, 5, 0, &n), -1);    /* no step */
    ASSERT_EQ(timeline_buckets(0, 5, -10, &n), -1);  /* negative step */
    /* The whole int64 range does not overflow. */
    ASSERT_EQ(timeline_buckets(INT64_MIN, INT64_MAX, INT64_MAX, &n), 0);
    ASSERT_EQ(n, 3);
}

static void bucket_of(void)
{
    int64_t n = 3;
    ASSERT_EQ(timeline_bucket_of(1000, 100, n, 999), -1);
    ASSERT_EQ(timeline_bucket_of(1000, 100, n, 1000), 0);
    ASSERT_EQ(timeline_bucket_of(1000, 100, n, 1099), 0);
    ASSERT_EQ(timeline_bucket_of(1000, 100, n, 1100), 1);
    ASSERT_EQ(timeline_bucket_of(1000, 100, n, 1299), 2);
    ASSERT_EQ(timeline_bucket_of(1000, 100, n, 1300), -1);
    ASSERT_EQ(timeline_bucket_of(-1000, 100, n, -901), 0);
    ASSERT_EQ(timeline_bucket_of(INT64_MIN, INT64_MAX, n, INT64_MAX), 2);
}

static void auto_step(void)
{
    ASSERT_EQ(timeline_auto_step(3600000), 10000);                   /* 1 h: 360 buckets of 10 s */
    ASSERT_EQ(timeline_auto_step(6 * 3600000LL), 60000);             /* 6 h: 1 min */
    ASSERT_EQ(timeline_auto_step(24 * 3600000LL), 300000);           /* 24 h: 5 min */
    ASSERT_EQ(timeline_auto_step(7 * 86400000LL), 1800000);          /* 7 d: 30 min */
    ASSERT_EQ(timeline_auto_step(1000), 1000);                       /* never below a second */
    ASSERT_EQ(timeline_auto_step(720 * 86400000LL), 2 * 86400000LL); /* whole days */
    /* Every span gets at most 360 buckets. */
    for (int64_t span = 1; span < 400 * 86400000LL; span = span * 3 + 7) {
        int64_t n;
        ASSERT_EQ(timeline_buckets(0, span, timeline_auto_step(span), &n), 0);
        ASSERT(n <= 360);
    }
}

/* A history of one job, two vertices, six decisions, made by hand. */
static void add_decision(struct timeline_history *h, int64_t id, int64_t at, int reason,
                         bool executed)
{
    h->d = xrealloc(h->d, (size_t)(h->n_d + 1) * sizeof *h->d);
    struct timeline_decision *d = &h->d[h->n_d++];
    memset(d, 0, sizeof *d);
    d->id = id;
    d->at = at;
    d->reason = reason;
    d->executed = executed;
    d->v0 = h->n_vrows;
    d->load_max = d->backlog_s = NAN;
}

static void add_vrow(struct timeline_history *h, int vertex, int cur, int tgt, double load,
                     double backlog_s, bool off)
{
    struct timeline_decision *d = &h->d[h->n_d - 1];
    h->vrows = xrealloc(h->vrows, (size_t)(h->n_vrows + 1) * sizeof *h->vrows);
    struct timeline_vrow *v = &h->vrows[h->n_vrows++];
    memset(v, 0, sizeof *v);
    v->vertex = vertex;
    v->current = cur;
    v->target = tgt;
    v->min_parallelism = 1;
    v->max_parallelism = vertex == 0 ? 8 : 128;
    v->load = load;
    v->lag = v->tdr = NAN;
    v->backlog_s = backlog_s;
    v->bounds_off = off;
    d->n_v++;
    d->bounds_off |= off;
}

static void build(struct timeline_history *h)
{
    memset(h, 0, sizeof *h);
    h->job = xstrdup("orders");
    h->n_vertices = 2;
    h->vertices = xcalloc(2, sizeof *h->vertices);
    h->vertices[0] = xstrdup("src");
    h->vertices[1] = xstrdup("agg");
    h->n_codes = 2;
    h->codes = xcalloc(2, sizeof *h->codes);
    h->codes[0] = xstrdup("WITHIN_TARGET");
    h->codes[1] = xstrdup("HIGH_BACKLOG");
    h->n_configs = 1;
    h->configs = xcalloc(1, sizeof *h->configs);
    h->configs[0].util_target = 0.7;
    h->configs[0].util_max = 0.9;
    h->configs[0].util_min = 0.4;
    h->configs[0].lag_threshold_s = 300;
    h->configs[0].slo_lag_s = 120;
    /* bucket 0 [0, 60 s): two decisions; bucket 1 empty; bucket 2 [120 s, 180 s): three */
    add_decision(h, 11, 0, 0, false);
    add_vrow(h, 0, 2, 2, 0.5, 10, false);
    add_vrow(h, 1, 4, 4, 0.3, NAN, false);
    add_decision(h, 12, 30000, 0, false);
    add_vrow(h, 0, 2, 2, 0.7, 30, false);
    add_vrow(h, 1, 4, 4, NAN, NAN, false);
    add_decision(h, 13, 120000, 1, false);
    add_vrow(h, 0, 2, 2, 0.9, 400, true);
    add_vrow(h, 1, 4, 4, 0.6, NAN, true);
    add_decision(h, 14, 150000, 1, true);
    add_vrow(h, 0, 2, 6, 0.95, 500, true);
    add_vrow(h, 1, 4, 4, 0.7, NAN, true);
    add_decision(h, 15, 179999, 0, false);
    add_vrow(h, 0, 6, 6, 0.6, 450, false);
    add_vrow(h, 1, 4, 4, 0.5, NAN, false);
    /* outside [from, to): ignored by the buckets */
    add_decision(h, 16, 180000, 0, false);
    add_vrow(h, 0, 9, 9, 0.1, 1, false);
    add_vrow(h, 1, 9, 9, 0.1, NAN, false);
}

static json_t *series(json_t *tl, int v, const char *name)
{
    return json_object_get(json_array_get(json_object_get(tl, "vertices"), (size_t)v), name);
}

#define AT(a, i) json_array_get(a, i)

static void render_buckets(void)
{
    struct timeline_history h;
    build(&h);
    json_t *tl = timeline_render(&h, 0, 180000, 60000, NULL, 0);
    ASSERT_EQ(json_array_size(json_object_get(tl, "t")), 3);
    ASSERT_EQ(json_integer_value(AT(json_object_get(tl, "t"), 2)), 120000);
    ASSERT_EQ(json_integer_value(json_object_get(tl, "step_ms")), 60000);
    /* last current and target of a bucket; an empty bucket is null */
    json_t *cur = series(tl, 0, "current"), *tgt = series(tl, 0, "target");
    ASSERT_EQ(json_integer_value(AT(cur, 0)), 2);
    ASSERT(json_is_null(AT(cur, 1)));
    ASSERT_EQ(json_integer_value(AT(cur, 2)), 6);
    ASSERT_EQ(json_integer_value(AT(tgt, 2)), 6);
    ASSERT_EQ(json_integer_value(AT(series(tl, 0, "max"), 0)), 8);
    ASSERT_EQ(json_integer_value(AT(series(tl, 1, "max"), 0)), 128);
    /* mean utilization over the defined values */
    ASSERT_NEAR(json_real_value(AT(series(tl, 0, "util"), 0)), 0.6, 1e-9);
    ASSERT_NEAR(json_real_value(AT(series(tl, 0, "util"), 2)), (0.9 + 0.95 + 0.6) / 3, 1e-4);
    ASSERT_NEAR(json_real_value(AT(series(tl, 1, "util"), 0)), 0.3, 1e-9); /* NaN left out */
    ASSERT(json_is_null(AT(series(tl, 0, "util"), 1)));
    /* largest backlog; a vertex without any is null */
    ASSERT_NEAR(json_real_value(AT(series(tl, 0, "backlog_s"), 0)), 30, 1e-9);
    ASSERT_NEAR(json_real_value(AT(series(tl, 0, "backlog_s"), 2)), 500, 1e-9);
    ASSERT(json_is_null(AT(series(tl, 1, "backlog_s"), 2)));
    /* bounds: configured, and [0, 1] by the last decision while off; off if any was */
    ASSERT_NEAR(json_real_value(AT(series(tl, 0, "util_max"), 0)), 0.9, 1e-9);
    ASSERT_NEAR(json_real_value(AT(series(tl, 0, "util_min"), 0)), 0.4, 1e-9);
    ASSERT_NEAR(json_real_value(AT(series(tl, 0, "util_target"), 2)), 0.7, 1e-9);
    json_t *off = json_object_get(tl, "bounds_off");
    ASSERT(json_is_false(AT(off, 0)));
    ASSERT(json_is_null(AT(off, 1)));
    ASSERT(json_is_true(AT(off, 2)));
    ASSERT_NEAR(json_real_value(json_object_get(tl, "slo_lag_s")), 120, 1e-9);
    json_decref(tl);
    timeline_history_free(&h);
}

static void render_runs_and_filter(void)
{
    struct timeline_history h;
    build(&h);
    json_t *tl = timeline_render(&h, 0, 180000, 60000, (const char *const[]){"agg"}, 1);
    ASSERT_EQ(json_array_size(json_object_get(tl, "vertices")), 1);
    ASSERT_STR(json_string_value(
                   json_object_get(json_array_get(json_object_get(tl, "vertices"), 0), "id")),
               "agg");
    /* runs: WITHIN_TARGET 11-12, HIGH_BACKLOG 13-14, WITHIN_TARGET 15-16 */
    json_t *runs = json_object_get(json_object_get(tl, "reasons"), "runs");
    ASSERT_EQ(json_array_size(runs), 3);
    json_t *r1 = AT(runs, 1);
    ASSERT_EQ(json_integer_value(AT(r1, 0)), 120000);
    ASSERT_EQ(json_integer_value(AT(r1, 1)), 150000);
    ASSERT_EQ(json_integer_value(AT(r1, 2)), 1);
    ASSERT_EQ(json_integer_value(AT(r1, 3)), 13);
    ASSERT_EQ(json_integer_value(AT(r1, 4)), 2);
    ASSERT_EQ(json_integer_value(AT(AT(runs, 2), 4)), 2);
    ASSERT_STR(json_string_value(AT(json_object_get(json_object_get(tl, "reasons"), "codes"), 1)),
               "HIGH_BACKLOG");
    json_decref(tl);
    timeline_history_free(&h);
}

static void render_empty(void)
{
    struct timeline_history h;
    memset(&h, 0, sizeof h);
    h.job = xstrdup("none");
    json_t *tl = timeline_render(&h, 0, 1000, 100, NULL, 0);
    ASSERT_EQ(json_array_size(json_object_get(tl, "t")), 10);
    ASSERT_EQ(json_array_size(json_object_get(tl, "vertices")), 0);
    ASSERT_EQ(json_array_size(json_object_get(json_object_get(tl, "reasons"), "runs")), 0);
    ASSERT(json_is_null(json_object_get(tl, "slo_lag_s")));
    json_decref(tl);
    timeline_history_free(&h);
}

TEST_MAIN(TEST_ENTRY(bucket_counts), TEST_ENTRY(bucket_of), TEST_ENTRY(auto_step),
          TEST_ENTRY(render_buckets), TEST_ENTRY(render_runs_and_filter), TEST_ENTRY(render_empty))
