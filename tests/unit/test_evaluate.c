/* Unit tests for core/evaluate.c: core/README.md, Evaluation (backlog, TDR and catch-up along the
 * edges, TPR, capacity, thresholds, global metrics) and the evaluator hook merge. The metric window
 * is built by hand, so each figure below is derived from the values set. */
#include "test.h"

#include <stdlib.h>

#include "core/core_int.h"
#include "options/options.h"
#include "windows.h"

#define SEC   1000LL
#define MIN   (60 * SEC)
#define VM(f) offsetof(struct core_vmetrics, f)
#define GM(f) offsetof(struct core_gmetrics, f)
#define MAXV  6

struct ef {
    struct core_sample s;
    struct core_vertex_in v[MAXV];
    struct core_input in[MAXV][3];
    struct core_config cfg;
    struct core_state *st;
    struct core_decision d;
    struct core_topo t;
    struct core_evaluated ev[MAXV];
    bool backlog;
    struct core_global_eval g;
    struct core_plugin_err pe;
    int64_t restart_ms;
    struct win win; /* the window's samples, put into it by run() */
};

static void ef_init(struct ef *f)
{
    memset(f, 0, sizeof *f);
    opt_config_defaults(&f->cfg);
    opt_config_set_profile(&f->cfg, CORE_PROFILE_FLINK); /* the reference algorithm */
    f->s.vertices = f->v;
    f->s.running = true;
    f->st = core_state_new();
    core_decision_init(&f->d);
    f->restart_ms = f->cfg.restart_time_ms; /* 5 min */
}

static void ef_deinit(struct ef *f)
{
    core_state_free(f->st);
    core_decision_deinit(&f->d);
    win_free(&f->win);
}

/* Adds a vertex with up to two inputs (NULL = none). */
static void ef_vertex(struct ef *f, const char *id, int p, const char *in0, const char *in1)
{
    int i = f->s.n_vertices++;
    struct core_vertex_in *v = &f->v[i];
    v->id = id;
    v->parallelism = p;
    v->max_parallelism = 128;
    v->inputs = f->in[i];
    const char *ins[2] = {in0, in1};
    for (int k = 0; k < 2; k++)
        if (ins[k]) {
            f->in[i][v->n_inputs].from = ins[k];
            f->in[i][v->n_inputs].ship = CORE_SHIP_HASH;
            v->n_inputs++;
        }
}

/* Builds the topology and a window of n samples one minute apart, every metric NaN. */
static void ef_window(struct ef *f, int n)
{
    char err[128];
    if (core__topo_build(&f->s, &f->d, &f->t, err, sizeof err) < 0)
        abort();
    struct core_window *w = &f->st->w;
    w->running_since = 0;
    w->n_vertices = f->s.n_vertices;
    w->ids = core__xcalloc((size_t)w->n_vertices, sizeof *w->ids);
    w->parallelism = core__xcalloc((size_t)w->n_vertices, sizeof *w->parallelism);
    for (int i = 0; i < w->n_vertices; i++) {
        w->ids[i] = core__strdup(f->v[i].id);
        w->parallelism[i] = f->v[i].parallelism;
    }
    win_init(&f->win, w->n_vertices, n, MIN, NAN);
    f->s.at = (n - 1) * MIN;
}

static double *field(struct ef *f, const char *id, int k, size_t off)
{
    int wi = core__window_index(&f->st->w, id);
    if (wi < 0)
        abort();
    return (double *)((char *)&f->win.r[k]->v[wi] + off);
}

/* Sets a field to the same value in every sample. */
static void gauge(struct ef *f, const char *id, size_t off, double x)
{
    for (int k = 0; k < f->win.n; k++)
        *field(f, id, k, off) = x;
}

/* A counter rising by per_s a second from start (samples are 60 s apart). */
static void counter(struct ef *f, const char *id, size_t off, double start, double per_s)
{
    for (int k = 0; k < f->win.n; k++)
        *field(f, id, k, off) = start + per_s * 60.0 * k;
}

static void run(struct ef *f, const struct core_hooks *h)
{
    win_put(&f->win, &f->st->w);
    core__evaluate(f->st, &f->s, &f->t, &f->cfg, f->restart_ms, h, f->ev, &f->backlog, &f->g,
                   &f->pe, NULL);
}

/* A source "s" (p 2) into "a" (p 4). */
static void two_vertices(struct ef *f, int n)
{
    ef_init(f);
    ef_vertex(f, "s", 2, NULL, NULL);
    ef_vertex(f, "a", 4, "s", NULL);
    ef_window(f, n);
}

/* ------------------------------------------------------------------- 2.1 -- */

static void backlog_detection(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    gauge(&f, "s", VM(lag), 300000);
    run(&f, NULL);
    /* 300000 / 1000 = 300 s, not > 300 s */
    ASSERT(!f.backlog);
    *field(&f, "s", 1, VM(lag)) = 300500;
    f.cfg.backlog_lag_threshold_ms = 300999; /* whole seconds: 300 */
    run(&f, NULL);
    /* 300.5 s > 300 s */
    ASSERT(f.backlog);
    ef_deinit(&f);

    /* rate 0 with a lag: +inf -> backlog */
    two_vertices(&f, 2);
    gauge(&f, "s", VM(rec_in), 5000);
    gauge(&f, "s", VM(lag), 1);
    run(&f, NULL);
    ASSERT(f.backlog);
    /* rate 0 and lag 0: 0/0 NaN, never greater */
    gauge(&f, "s", VM(lag), 0);
    run(&f, NULL);
    ASSERT(!f.backlog);
    /* NaN rate (one counter value): the source does not count */
    gauge(&f, "s", VM(lag), 1e9);
    *field(&f, "s", 0, VM(rec_in)) = NAN;
    run(&f, NULL);
    ASSERT(!f.backlog);
    ef_deinit(&f);
}

/* ------------------------------------------------------------ 2.2 and 2.6 -- */

static void source_tdr_catch_up_and_thresholds(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    counter(&f, "s", VM(lag), 0, 10); /* lag 0 -> 600: rate 10/s */
    run(&f, NULL);
    struct core_evaluated *s = &f.ev[0];
    /* TDR = 1000 + 10 = 1010 */
    ASSERT_DEQ(s->target_data_rate, 1010.0);
    /* catch-up = 600 / 1800 s = 0.3333.. -> 0.333 */
    ASSERT_DEQ(s->catch_up_data_rate, 0.333);
    ASSERT_DEQ(s->lag, 600.0);
    ASSERT(!f.backlog);
    /* up: round(0.333 + 1010 / 1.0) = 1010
     * down: round(0.333 + 1010 x 300 / 1800 + 1010 / 0.4) = round(2693.67) = 2694 */
    ASSERT_DEQ(s->scale_up_rate_threshold, 1010.0);
    ASSERT_DEQ(s->scale_down_rate_threshold, 2694.0);
    ASSERT_DEQ(s->parallelism, 2.0);
    ASSERT_DEQ(s->max_parallelism, 128.0);
    ASSERT_DEQ(s->num_source_partitions, 0.0);
    ASSERT(isnan(s->expected_processing_rate));
    ASSERT(isnan(s->hot_key_share));
    /* the non-source has no lag */
    ASSERT(isnan(f.ev[1].lag));

    /* utilization.max 0.9 / min 0.5: up = round(0.333 + 1122.22) = 1123,
     * down = round(0.333 + 168.33 + 2020) = round(2188.67) = 2189 */
    f.cfg.util_max = 0.9;
    f.cfg.util_min = 0.5;
    run(&f, NULL);
    ASSERT_DEQ(s->scale_up_rate_threshold, 1123.0);
    ASSERT_DEQ(s->scale_down_rate_threshold, 2189.0);

    /* catch-up duration 0: catch-up 0 and no restart term:
     * up = round(1010) = 1010, down = round(1010 / 0.5) = 2020 */
    f.cfg.catch_up_ms = 0;
    run(&f, NULL);
    ASSERT_DEQ(s->catch_up_data_rate, 0.0);
    ASSERT_DEQ(s->scale_down_rate_threshold, 2020.0);
    ef_deinit(&f);
}

static void tdr_never_negative(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 100);
    counter(&f, "s", VM(lag), 100000, -500); /* draining faster than the input */
    run(&f, NULL);
    /* max(0, 100 - 500) = 0 */
    ASSERT_DEQ(f.ev[0].target_data_rate, 0.0);
    ef_deinit(&f);
}

static void thresholds_with_backlog(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    counter(&f, "s", VM(lag), 300000, 1000); /* 300000 -> 360000 */
    run(&f, NULL);
    struct core_evaluated *s = &f.ev[0];
    /* 360000 / 1000 = 360 s > 300 s: backlog */
    ASSERT(f.backlog);
    /* TDR 1000 + 1000 = 2000, catch-up 360000 / 1800 = 200
     * up (util 1.0) = round(200 + 2000) = 2200, down (util 0) = +inf */
    ASSERT_DEQ(s->target_data_rate, 2000.0);
    ASSERT_DEQ(s->catch_up_data_rate, 200.0);
    ASSERT_DEQ(s->scale_up_rate_threshold, 2200.0);
    ASSERT_DEQ(s->scale_down_rate_threshold, INFINITY);

    /* no backlog (threshold 400 s): up 2200 (util 1.0),
     * down = round(200 + 2000 x 300 / 1800 + 2000 / 0.4) = round(5533.33) = 5533 */
    f.cfg.backlog_lag_threshold_ms = 400 * SEC;
    run(&f, NULL);
    ASSERT(!f.backlog);
    ASSERT_DEQ(s->scale_up_rate_threshold, 2200.0);
    ASSERT_DEQ(s->scale_down_rate_threshold, 5533.0);
    ef_deinit(&f);
}

static void nan_tdr_source(void)
{
    /* One sample: no rate, so no ingestion rate. The reference throws; here the source's
     * rates and thresholds are NaN, downstream inherits NaN, nothing is outside bounds. */
    struct ef f;
    two_vertices(&f, 1);
    gauge(&f, "s", VM(rec_in), 10);
    gauge(&f, "s", VM(lag), 10);
    gauge(&f, "a", VM(rec_in), 10);
    gauge(&f, "a", VM(load), 0.5);
    gauge(&f, "a", VM(rec_in_per_s), 100);
    run(&f, NULL);
    ASSERT(isnan(f.ev[0].target_data_rate));
    ASSERT(isnan(f.ev[0].catch_up_data_rate));
    ASSERT(isnan(f.ev[0].scale_up_rate_threshold));
    ASSERT(isnan(f.ev[0].scale_down_rate_threshold));
    ASSERT(!core__outside_bounds(&f.ev[0]));
    ASSERT(isnan(f.ev[1].target_data_rate));
    /* the downstream TPR is still evaluated: 100 / 0.5 = 200 */
    ASSERT_DEQ(f.ev[1].true_processing_rate, 200.0);
    ef_deinit(&f);
}

/* -------------------------------------------------------------------- 2.3 -- */

/* s -> a, s -> b, a -> j, b -> j; with `extra`, also b -> k (b then has two outputs). */
static void diamond(struct ef *f, bool extra)
{
    ef_init(f);
    ef_vertex(f, "s", 1, NULL, NULL);
    ef_vertex(f, "a", 1, "s", NULL);
    ef_vertex(f, "b", 1, "s", NULL);
    ef_vertex(f, "j", 1, "a", "b");
    if (extra)
        ef_vertex(f, "k", 1, "b", NULL);
    ef_window(f, 2);
    counter(f, "s", VM(rec_in), 0, 1000);
    gauge(f, "s", VM(lag), 18000); /* catch-up 18000 / 1800 = 10, lag rate 0 */
    counter(f, "a", VM(rec_in), 0, 600);
    counter(f, "a", VM(rec_out), 0, 300);
    counter(f, "b", VM(rec_in), 0, 400);
    counter(f, "b", VM(rec_out), 0, 800);
}

static void edge_ratios_single_input_and_other_inputs(void)
{
    struct ef f;
    diamond(&f, false);
    counter(&f, "j", VM(rec_in), 0, 1100);
    run(&f, NULL);
    /* case 1: a has one input: ratio(s,a) = 600 / 1000 = 0.6 -> TDR 600, catch-up 6
     *         ratio(s,b) = 400 / 1000 = 0.4 -> TDR 400, catch-up 4 */
    ASSERT_DEQ(f.ev[1].target_data_rate, 600.0);
    ASSERT_DEQ(f.ev[1].catch_up_data_rate, 6.0);
    ASSERT_DEQ(f.ev[2].target_data_rate, 400.0);
    ASSERT_DEQ(f.ev[2].catch_up_data_rate, 4.0);
    /* case 2 (the other input has one output):
     *   a->j: e = 1100 - out(b) 800 = 300, ratio 300 / 600 = 0.5 -> 300, catch-up 3
     *   b->j: e = 1100 - out(a) 300 = 800, ratio 800 / 400 = 2   -> 800, catch-up 8 */
    ASSERT_DEQ(f.ev[3].target_data_rate, 1100.0);
    ASSERT_DEQ(f.ev[3].catch_up_data_rate, 11.0);
    ef_deinit(&f);
}

static void edge_ratio_falls_back_to_output_rate(void)
{
    struct ef f;
    diamond(&f, true);
    counter(&f, "j", VM(rec_in), 0, 900);
    counter(&f, "k", VM(rec_in), 0, 200);
    run(&f, NULL);
    /* a->j: the other input b has two outputs -> case 3: e = out(a) = 300, ratio 0.5 -> 300
     * b->j: the other input a has one output -> case 2: e = 900 - 300 = 600, ratio 1.5 ->
     * 600; TDR(j) = 900, catch-up 6 x 0.5 + 4 x 1.5 = 9 */
    ASSERT_DEQ(f.ev[3].target_data_rate, 900.0);
    ASSERT_DEQ(f.ev[3].catch_up_data_rate, 9.0);
    /* b->k: single input, e = 200, ratio 0.5 -> 200 */
    ASSERT_DEQ(f.ev[4].target_data_rate, 200.0);
    ef_deinit(&f);
}

static void edge_ratio_zero_cases(void)
{
    struct ef f;
    diamond(&f, false);
    counter(&f, "j", VM(rec_in), 0, 700);
    run(&f, NULL);
    /* a->j: e = 700 - 800 = -100 <= 0 -> ratio 0; b->j: e = 700 - 300 = 400, ratio 1 ->
     * 400: TDR(j) = 400 */
    ASSERT_DEQ(f.ev[3].target_data_rate, 400.0);
    /* a's input stops: inRate 0 -> ratio(a, j) 0 whatever the flow */
    counter(&f, "a", VM(rec_in), 0, 0);
    counter(&f, "j", VM(rec_in), 0, 1100);
    run(&f, NULL);
    /* ratio(s,a) = 0 / 1000 -> e not > 0 -> 0; b->j: 1100 - 300 = 800, ratio 2 -> 800 */
    ASSERT_DEQ(f.ev[1].target_data_rate, 0.0);
    ASSERT_DEQ(f.ev[3].target_data_rate, 800.0);
    ef_deinit(&f);
}

/* -------------------------------------------------------------------- 2.4 -- */

static void tpr_busy_time_max_aggregator(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    gauge(&f, "s", VM(lag), 0);
    gauge(&f, "a", VM(load), 0.5);
    gauge(&f, "a", VM(rec_in_per_s), 1000);
    counter(&f, "a", VM(rec_in), 0, 900);
    run(&f, NULL);
    /* busy 0.5 x 1000 = 500 ms/s; input avg(rec_in_per_s) = 1000: 1000 / 0.5 = 2000 */
    ASSERT_DEQ(f.ev[1].load, 0.5);
    ASSERT_DEQ(f.ev[1].true_processing_rate, 2000.0);
    /* no per-second gauge: rate(rec_in) = 900 -> 1800 */
    gauge(&f, "a", VM(rec_in_per_s), NAN);
    run(&f, NULL);
    ASSERT_DEQ(f.ev[1].true_processing_rate, 1800.0);
    /* busy 0 with a positive rate: +inf */
    gauge(&f, "a", VM(load), 0);
    run(&f, NULL);
    ASSERT_DEQ(f.ev[1].true_processing_rate, INFINITY);
    /* input rate 0: +inf whatever the busy time */
    gauge(&f, "a", VM(load), 0.3);
    counter(&f, "a", VM(rec_in), 50, 0);
    run(&f, NULL);
    ASSERT_DEQ(f.ev[1].true_processing_rate, INFINITY);
    /* no busy time at all: NaN */
    gauge(&f, "a", VM(load), NAN);
    counter(&f, "a", VM(rec_in), 0, 900);
    run(&f, NULL);
    ASSERT(isnan(f.ev[1].true_processing_rate));
    ASSERT(isnan(f.ev[1].load));
    ASSERT(!core__outside_bounds(&f.ev[1]));
    ef_deinit(&f);
}

static void tpr_busy_time_avg_aggregator(void)
{
    struct ef f;
    two_vertices(&f, 2);
    f.cfg.busy_aggregator = CORE_AGG_AVG;
    counter(&f, "s", VM(rec_in), 0, 1000);
    gauge(&f, "s", VM(lag), 0);
    gauge(&f, "a", VM(load), 0.9);           /* ignored by the AVG aggregator */
    gauge(&f, "a", VM(rec_in_per_s), 5000);  /* ignored too: the counter rate is used */
    counter(&f, "a", VM(acc_busy), 0, 2000); /* 2000 ms/s over 4 subtasks = 500 ms/s */
    counter(&f, "a", VM(rec_in), 0, 1000);
    run(&f, NULL);
    /* load 500 / 1000 = 0.5; TPR 1000 / 0.5 = 2000 */
    ASSERT_DEQ(f.ev[1].load, 0.5);
    ASSERT_DEQ(f.ev[1].true_processing_rate, 2000.0);
    ef_deinit(&f);
}

static void tpr_observed_switch_threshold(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    gauge(&f, "s", VM(lag), 0);
    gauge(&f, "s", VM(observed_tpr), 1000);
    /* busy 0.87: busyTpr = 1000 / 0.87 = 1149.43 <= 1000 x 1.15 = 1150 -> busy kept */
    gauge(&f, "s", VM(load), 0.87);
    run(&f, NULL);
    ASSERT_NEAR(f.ev[0].true_processing_rate, 1149.425, 1e-9);
    /* busy 0.869: busyTpr = 1150.75 > 1150 -> observed 1000 */
    gauge(&f, "s", VM(load), 0.869);
    run(&f, NULL);
    ASSERT_DEQ(f.ev[0].true_processing_rate, 1000.0);
    /* only one observation (< min 2): observed NaN -> busyTpr 1150.748 */
    *field(&f, "s", 0, VM(observed_tpr)) = NAN;
    run(&f, NULL);
    ASSERT_NEAR(f.ev[0].true_processing_rate, 1150.748, 1e-9);
    /* busy 0 -> busyTpr inf -> observed even when it is far lower */
    gauge(&f, "s", VM(observed_tpr), 300);
    gauge(&f, "s", VM(load), 0);
    run(&f, NULL);
    ASSERT_DEQ(f.ev[0].true_processing_rate, 300.0);
    /* observed only infinities -> +inf avg, selected over a NaN busyTpr */
    gauge(&f, "s", VM(observed_tpr), INFINITY);
    gauge(&f, "s", VM(load), NAN);
    run(&f, NULL);
    ASSERT_DEQ(f.ev[0].true_processing_rate, INFINITY);
    ef_deinit(&f);
}

/* -------------------------------------------------------------------- 2.5 -- */

static void capacity_rounding(void)
{
    struct core_evaluated ev;
    memset(&ev, 0, sizeof ev);
    ev.target_data_rate = 100;
    ev.catch_up_data_rate = 0;
    /* 100 / 0.7 = 142.857 -> 143 */
    ASSERT_DEQ(core__capacity(&ev, 0.7, false, 0, 1800 * SEC), 143.0);
    /* util clamps to 1 -> 100; to 0 -> +inf */
    ASSERT_DEQ(core__capacity(&ev, 1.7, false, 0, 1800 * SEC), 100.0);
    ASSERT_DEQ(core__capacity(&ev, -0.5, false, 0, 1800 * SEC), INFINITY);
    /* whole seconds: restart 299.999 s -> 299, catch-up 1800.999 s -> 1800:
     * 100 x 299 / 1800 = 16.611 + 142.857 = 159.468 -> 159 */
    ASSERT_DEQ(core__capacity(&ev, 0.7, true, 299999, 1800999), 159.0);
    /* catch-up duration under a second: 0 s -> no restart term */
    ASSERT_DEQ(core__capacity(&ev, 0.7, true, 299999, 999), 143.0);
    /* Java Math.round: 2.5 -> 3 (half up), and 12.5 + 0 -> 13 */
    ev.target_data_rate = 0;
    ev.catch_up_data_rate = 2.5;
    ASSERT_DEQ(core__capacity(&ev, 1.0, false, 0, 1800 * SEC), 3.0);
    ev.target_data_rate = 5;
    ev.catch_up_data_rate = 0;
    /* 5 / 0.4 = 12.5 -> 13 */
    ASSERT_DEQ(core__capacity(&ev, 0.4, false, 0, 1800 * SEC), 13.0);
    ev.target_data_rate = NAN;
    ASSERT(isnan(core__capacity(&ev, 0.7, false, 0, 1800 * SEC)));
    ev.target_data_rate = 5;
    ev.catch_up_data_rate = NAN;
    ASSERT(isnan(core__capacity(&ev, 0.7, false, 0, 1800 * SEC)));
}

static void outside_bounds(void)
{
    struct core_evaluated ev;
    memset(&ev, 0, sizeof ev);
    ev.scale_up_rate_threshold = 100;
    ev.scale_down_rate_threshold = 200;
    ev.true_processing_rate = 99.9;
    ASSERT(core__outside_bounds(&ev));
    ev.true_processing_rate = 100;
    ASSERT(!core__outside_bounds(&ev));
    ev.true_processing_rate = 200;
    ASSERT(!core__outside_bounds(&ev));
    ev.true_processing_rate = 200.1;
    ASSERT(core__outside_bounds(&ev));
    ev.true_processing_rate = NAN;
    ASSERT(!core__outside_bounds(&ev));
    ev.true_processing_rate = INFINITY;
    ev.scale_down_rate_threshold = INFINITY; /* inf is not greater than inf */
    ASSERT(!core__outside_bounds(&ev));
    ev.scale_down_rate_threshold = 200;
    ASSERT(core__outside_bounds(&ev));
}

/* -------------------------------------------------------------------- 2.7 -- */

static void global_evaluated(void)
{
    struct ef f;
    two_vertices(&f, 2);
    f.win.r[0]->g = (struct core_gmetrics){10, 0.1, 1000, 0.2, 50, 7};
    f.win.r[1]->g = (struct core_gmetrics){12, 0.3, 3000, 0.4, NAN, 9};
    run(&f, NULL);
    ASSERT_DEQ(f.g.slots_used, 12.0);            /* latest */
    ASSERT_DEQ(f.g.gc_pressure, 0.3);            /* latest */
    ASSERT_DEQ(f.g.heap_used_avg, 2000.0);       /* (1000 + 3000) / 2 */
    ASSERT_NEAR(f.g.heap_ratio_avg, 0.3, 1e-12); /* (0.2 + 0.4) / 2, rounded */
    ASSERT_DEQ(f.g.managed_used_avg, 50.0);      /* NaN skipped */
    ASSERT_DEQ(f.g.metaspace_used_avg, 8.0);     /* (7 + 9) / 2 */
    ef_deinit(&f);
}

static void figures_rounded(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    gauge(&f, "s", VM(lag), 0);
    gauge(&f, "a", VM(load), 0.7);
    counter(&f, "a", VM(rec_in), 0, 1000);
    run(&f, NULL);
    /* 1000 / 0.7 = 1428.5714.. -> 1428.571 */
    ASSERT_DEQ(f.ev[1].true_processing_rate, 1428.571);
    ef_deinit(&f);
}

/* ----------------------------------------------------------------- hooks 6.1 -- */

struct hook_log {
    int calls;
    double seen_tdr_s; /* the built-in TDR the hook saw on "s" */
    bool seen_backlog;
};

static int test_evaluate_cb(void *ud, const char *name, const struct core_vertex_in *v,
                            struct core_evaluated *ev, bool backlog, int64_t now, char *err,
                            size_t err_len)
{
    struct hook_log *log = ud;
    (void)now;
    log->calls++;
    log->seen_backlog = backlog;
    if (strcmp(name, "boom") == 0) {
        ev->target_data_rate = 1; /* must not stick: the call failed */
        snprintf(err, err_len, "boom.lua:3: kaput");
        return -1;
    }
    if (strcmp(name, "double") == 0 && strcmp(v->id, "s") == 0) {
        log->seen_tdr_s = ev->target_data_rate;
        ev->target_data_rate = ev->target_data_rate * 2 + 0.12345; /* rounded on merge */
        ev->load = NAN;                                            /* NaN keeps built-in */
    }
    if (strcmp(name, "tpr") == 0 && strcmp(v->id, "a") == 0)
        ev->true_processing_rate = 42;
    return 0;
}

static void evaluator_hooks_merge_and_fail(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    gauge(&f, "s", VM(lag), 0);
    gauge(&f, "s", VM(load), 0.5);
    gauge(&f, "a", VM(load), 0.5);
    counter(&f, "a", VM(rec_in), 0, 1000);
    const char *names[] = {"double", "boom", "tpr"};
    f.cfg.evaluators = names;
    f.cfg.n_evaluators = 3;
    struct hook_log log = {0};
    struct core_hooks h = {.ud = &log, .evaluate = test_evaluate_cb};
    run(&f, &h);
    /* 3 hooks x 2 vertices */
    ASSERT_EQ(log.calls, 6);
    ASSERT(!log.seen_backlog);
    /* the hook saw the built-in TDR 1000 and returned 2000.12345 -> 2000.123 */
    ASSERT_DEQ(log.seen_tdr_s, 1000.0);
    ASSERT_DEQ(f.ev[0].target_data_rate, 2000.123);
    ASSERT_DEQ(f.ev[0].load, 0.5);
    /* thresholds are not recomputed after the merge: built-in round(1000) */
    ASSERT_DEQ(f.ev[0].scale_up_rate_threshold, 1000.0);
    /* downstream sees the merged TDR: ratio(s,a) = 1000 / 1000 = 1 -> 2000.123 */
    ASSERT_DEQ(f.ev[1].target_data_rate, 2000.123);
    /* the third hook still ran after the failing one */
    ASSERT_DEQ(f.ev[1].true_processing_rate, 42.0);
    /* the failure is recorded, and its value did not stick */
    ASSERT(f.pe.set);
    ASSERT_STR(f.pe.plugin, "boom");
    ASSERT_STR(f.pe.message, "boom.lua:3: kaput");
    ef_deinit(&f);
}

static void evaluator_hooks_absent(void)
{
    struct ef f;
    two_vertices(&f, 2);
    counter(&f, "s", VM(rec_in), 0, 1000);
    gauge(&f, "s", VM(lag), 0);
    const char *names[] = {"double"};
    f.cfg.evaluators = names;
    f.cfg.n_evaluators = 1;
    struct core_hooks h = {0}; /* no evaluate hook */
    run(&f, &h);
    ASSERT_DEQ(f.ev[0].target_data_rate, 1000.0);
    run(&f, NULL);
    ASSERT_DEQ(f.ev[0].target_data_rate, 1000.0);
    ASSERT(!f.pe.set);
    ef_deinit(&f);
}

TEST_MAIN(TEST_ENTRY(backlog_detection), TEST_ENTRY(source_tdr_catch_up_and_thresholds),
          TEST_ENTRY(tdr_never_negative), TEST_ENTRY(thresholds_with_backlog),
          TEST_ENTRY(nan_tdr_source), TEST_ENTRY(edge_ratios_single_input_and_other_inputs),
          TEST_ENTRY(edge_ratio_falls_back_to_output_rate), TEST_ENTRY(edge_ratio_zero_cases),
          TEST_ENTRY(tpr_busy_time_max_aggregator), TEST_ENTRY(tpr_busy_time_avg_aggregator),
          TEST_ENTRY(tpr_observed_switch_threshold), TEST_ENTRY(capacity_rounding),
          TEST_ENTRY(outside_bounds), TEST_ENTRY(global_evaluated), TEST_ENTRY(figures_rounded),
          TEST_ENTRY(evaluator_hooks_merge_and_fail), TEST_ENTRY(evaluator_hooks_absent))
