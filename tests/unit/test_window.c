/* Unit tests for core/window.c (core/README.md, Window): per-sample metrics, stabilization and the
 * window-full rule, aggregates, and restart detection. */
#include "test.h"

#include <stdlib.h>

#include "core/core_int.h"
#include "windows.h"
#include "options/options.h"

#define SEC   1000LL
#define MIN   (60 * SEC)
#define VM(f) offsetof(struct core_vmetrics, f)
#define GM(f) offsetof(struct core_gmetrics, f)

/* A two-vertex job: "src" (source) -> "agg" (HASH), every metric absent (NaN). */
struct fx {
    struct core_sample s;
    struct core_vertex_in v[2];
    struct core_input in[1];
    struct core_config cfg;
    struct core_state *st;
};

static void vertex_blank(struct core_vertex_in *v, const char *id, int p)
{
    memset(v, 0, sizeof *v);
    v->id = id;
    v->parallelism = p;
    v->max_parallelism = 128;
    v->busy_min = v->busy_avg = v->busy_max = NAN;
    v->backpressured = NAN;
    v->records_in = v->records_out = NAN;
    v->accumulated_busy_ms = NAN;
    v->records_in_per_s = v->records_out_per_s = NAN;
    v->pending_records = NAN;
}

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof *f);
    opt_config_defaults(&f->cfg);
    /* The reference's observed-rate rule (the governor profile's guard: observed_tpr_guarded). */
    f->cfg.source_rate_guard = false;
    vertex_blank(&f->v[0], "src", 2);
    vertex_blank(&f->v[1], "agg", 4);
    f->in[0].from = "src";
    f->in[0].ship = CORE_SHIP_HASH;
    f->v[1].inputs = f->in;
    f->v[1].n_inputs = 1;
    f->s.vertices = f->v;
    f->s.n_vertices = 2;
    f->s.running = true;
    f->s.running_since = 0;
    f->s.heap_used = f->s.heap_max = f->s.gc_ms_per_s = NAN;
    f->s.managed_used = f->s.metaspace_used = NAN;
    f->s.task_slots_total = f->s.task_slots_available = NAN;
    f->st = core_state_new();
}

static void fx_deinit(struct fx *f)
{
    core_state_free(f->st);
}

/* Ingests f->s taken at `at`; returns the status. */
static struct core_window_status ingest(struct fx *f, int64_t at)
{
    struct core_decision d;
    struct core_topo t;
    struct core_window_status ws;
    char err[128];
    core_decision_init(&d);
    f->s.at = at;
    if (core__topo_build(&f->s, &d, &t, err, sizeof err) < 0)
        abort();
    core__window_ingest(f->st, &f->s, &t, &f->cfg, &ws);
    core_decision_deinit(&d);
    return ws;
}

/* A window of one vertex built directly, for the aggregate primitives. */
static void mini_window(struct core_window *w, int n, const int64_t *at, const double *x)
{
    struct win y;
    memset(w, 0, sizeof *w);
    win_init(&y, 1, n, 0, 0.0);
    for (int k = 0; k < n; k++) {
        y.at[k] = at[k];
        y.r[k]->v->rec_in = x[k];
        y.r[k]->v->load = x[k];
        y.r[k]->v->rec_in_per_s = NAN;
        y.r[k]->g.heap_used = x[k];
    }
    win_put(&y, w);
    win_free(&y);
}

/* Sets vertex 0's field at off of sample k to x. */
static void mini_set(struct core_window *w, int k, size_t off, double x)
{
    struct win y;
    win_init(&y, 1, w->n, 0, 0.0);
    for (int i = 0; i < w->n; i++)
        core__window_get(w, i, &y.at[i], y.r[i]);
    memcpy((char *)&y.r[k]->v[0] + off, &x, sizeof x);
    win_put(&y, w);
    win_free(&y);
}

static void mini_free(struct core_window *w)
{
    core__window_free_samples(w);
}

/* ----------------------------------------------------------- 1.5 aggregates -- */

static void avg_rules(void)
{
    struct core_window w;
    int64_t at[4] = {0, 1000, 2000, 3000};
    double x[4] = {1.0, NAN, 3.0, INFINITY};
    mini_window(&w, 4, at, x);
    /* finite values 1 and 3 -> 2; NaN and inf skipped */
    ASSERT_DEQ(core__w_avg(&w, 0, VM(load), 0), 2.0);
    ASSERT_DEQ(core__w_avg(&w, 0, VM(load), 2), 2.0);
    /* 2 finite values < 3 required -> NaN */
    ASSERT(isnan(core__w_avg(&w, 0, VM(load), 3)));
    ASSERT(isnan(core__w_avg(&w, 1, VM(load), 0))); /* unknown vertex */
    ASSERT_DEQ(core__w_gavg(&w, GM(heap_used)), 2.0);
    ASSERT(isinf(core__w_glatest(&w, GM(heap_used))));
    mini_free(&w);

    double y[3] = {NAN, INFINITY, NAN};
    mini_window(&w, 3, at, y);
    /* only infinities -> +inf, even with a minimum of observations */
    ASSERT_DEQ(core__w_avg(&w, 0, VM(load), 2), INFINITY);
    ASSERT(isnan(core__w_latest(&w, 0, VM(load))));
    mini_free(&w);

    double z[2] = {NAN, NAN};
    mini_window(&w, 2, at, z);
    ASSERT(isnan(core__w_avg(&w, 0, VM(load), 0)));
    mini_free(&w);
}

static void rate_first_and_last_non_nan(void)
{
    struct core_window w;
    /* NaN at both ends: first non-NaN is 100 at t=1000, last is 400 at t=4000:
     * 1000 x (400 - 100) / 3000 = 100/s. */
    int64_t at[6] = {0, 1000, 2000, 3000, 4000, 5000};
    double x[6] = {NAN, 100, NAN, 250, 400, NAN};
    mini_window(&w, 6, at, x);
    ASSERT_DEQ(core__w_rate(&w, 0, VM(rec_in)), 100.0);
    mini_free(&w);

    /* one non-NaN value -> NaN */
    double y[3] = {NAN, 5, NAN};
    mini_window(&w, 3, at, y);
    ASSERT(isnan(core__w_rate(&w, 0, VM(rec_in))));
    mini_free(&w);

    /* same timestamp: dt 0 -> max(1, 0) = 1 ms: 1000 x (7 - 3) / 1 = 4000 */
    int64_t same[2] = {5000, 5000};
    double z[2] = {3, 7};
    mini_window(&w, 2, same, z);
    ASSERT_DEQ(core__w_rate(&w, 0, VM(rec_in)), 4000.0);
    mini_free(&w);

    /* a falling counter gives a negative rate (no clamping in rate itself):
     * 1000 x (4 - 10) / 1000 = -6 */
    double d[2] = {10, 4};
    mini_window(&w, 2, at, d);
    ASSERT_DEQ(core__w_rate(&w, 0, VM(rec_in)), -6.0);
    mini_free(&w);
}

static void avg_with_rate_fallback(void)
{
    struct core_window w;
    int64_t at[2] = {0, 2000};
    double x[2] = {0, 500};
    mini_window(&w, 2, at, x);
    /* gauge rec_in_per_s is all NaN -> rate(rec_in) = 1000 x 500 / 2000 = 250 */
    ASSERT_DEQ(core__w_avg_rate_fallback(&w, 0, VM(rec_in_per_s), VM(rec_in)), 250.0);
    mini_set(&w, 0, VM(rec_in_per_s), 40);
    mini_set(&w, 1, VM(rec_in_per_s), 60);
    /* gauge present: avg(40, 60) = 50 */
    ASSERT_DEQ(core__w_avg_rate_fallback(&w, 0, VM(rec_in_per_s), VM(rec_in)), 50.0);
    mini_set(&w, 0, VM(rec_in_per_s), INFINITY);
    mini_set(&w, 1, VM(rec_in_per_s), NAN);
    /* gauge infinite -> rate again */
    ASSERT_DEQ(core__w_avg_rate_fallback(&w, 0, VM(rec_in_per_s), VM(rec_in)), 250.0);
    mini_free(&w);
}

/* ------------------------------------------------------ 1.3 per-sample values -- */

static void load_by_aggregator_and_rounding(void)
{
    struct fx f;
    fx_init(&f);
    f.v[1].busy_min = 100;
    f.v[1].busy_avg = 123.4567;
    f.v[1].busy_max = 812.3456;
    f.v[0].busy_min = f.v[0].busy_avg = f.v[0].busy_max = 0.4;
    ingest(&f, 1000);
    struct core_window *w = &f.st->w;
    int agg = core__window_index(w, "agg"), src = core__window_index(w, "src");
    /* MAX (default): 812.3456 / 1000 = 0.8123456 -> 0.812 */
    ASSERT_DEQ(core__w_latest(w, agg, VM(load)), 0.812);
    /* load_avg 0.1234567 -> 0.123; load_max 0.812 */
    ASSERT_DEQ(core__w_latest(w, agg, VM(load_avg)), 0.123);
    ASSERT_DEQ(core__w_latest(w, agg, VM(load_max)), 0.812);
    /* 0.4 / 1000 = 0.0004 would round to 0.000: kept as is */
    ASSERT_DEQ(core__w_latest(w, src, VM(load)), 0.0004);
    fx_deinit(&f);

    fx_init(&f);
    f.cfg.busy_aggregator = CORE_AGG_MIN;
    f.v[1].busy_min = -5; /* negative -> 0 */
    f.v[1].busy_avg = 300;
    f.v[1].busy_max = 900;
    ingest(&f, 1000);
    agg = core__window_index(&f.st->w, "agg");
    ASSERT_DEQ(core__w_latest(&f.st->w, agg, VM(load)), 0.0);
    /* source sent no busy time: LOAD NaN (excluded by the caller) */
    ASSERT(isnan(core__w_latest(&f.st->w, core__window_index(&f.st->w, "src"), VM(load))));
    fx_deinit(&f);

    fx_init(&f);
    f.cfg.busy_aggregator = CORE_AGG_AVG;
    f.v[1].busy_min = 100;
    f.v[1].busy_avg = 300.0005; /* 0.3000005 -> 0.300 */
    f.v[1].busy_max = 900;
    ingest(&f, 1000);
    ASSERT_DEQ(core__w_latest(&f.st->w, core__window_index(&f.st->w, "agg"), VM(load)), 0.3);
    fx_deinit(&f);
}

static void source_counters_and_lag(void)
{
    struct fx f;
    fx_init(&f);
    f.v[0].records_in = 0; /* a source whose read counter is 0 uses its write counter */
    f.v[0].records_out = 1234.56789;
    f.v[1].records_in = 1200;
    f.v[1].records_out = 40;
    f.v[1].records_in_per_s = 55.5555;
    f.v[1].pending_records = 99; /* not a source: ignored */
    ingest(&f, 1000);
    struct core_window *w = &f.st->w;
    int src = core__window_index(w, "src"), agg = core__window_index(w, "agg");
    ASSERT_DEQ(core__w_latest(w, src, VM(rec_in)), 1234.568);
    /* pending_records absent on a source -> LAG 0 */
    ASSERT_DEQ(core__w_latest(w, src, VM(lag)), 0.0);
    ASSERT(isnan(core__w_latest(w, agg, VM(lag))));
    ASSERT_DEQ(core__w_latest(w, agg, VM(rec_in)), 1200.0);
    ASSERT_DEQ(core__w_latest(w, agg, VM(rec_out)), 40.0);
    ASSERT_DEQ(core__w_latest(w, agg, VM(rec_in_per_s)), 55.556);
    /* NUM_RECORDS_IN_PER_SECOND is for non-sources only */
    ASSERT(isnan(core__w_latest(w, src, VM(rec_in_per_s))));
    /* the source's OBSERVED_TPR has no input rate -> not set */
    ASSERT(isnan(core__w_latest(w, src, VM(observed_tpr))));
    fx_deinit(&f);
}

static void rates_only_client(void)
{
    /* No counters, only rates: counters are rebuilt by integrating the rate from the
     * previous sample (first sample 0): 0, 100 x 60 = 6000, 6000 + 200 x 60 = 18000. The
     * busy counter: busy_avg 500 ms/s x 4 subtasks x 60 s = 120000 ms per minute. */
    struct fx f;
    fx_init(&f);
    f.v[0].records_in_per_s = 100;
    f.v[1].records_in_per_s = 100;
    f.v[1].records_out_per_s = 10;
    f.v[1].busy_min = f.v[1].busy_avg = f.v[1].busy_max = 500;
    ingest(&f, 0);
    ingest(&f, MIN);
    f.v[0].records_in_per_s = 200;
    f.v[1].records_in_per_s = 200;
    ingest(&f, 2 * MIN);
    struct core_window *w = &f.st->w;
    int src = core__window_index(w, "src"), agg = core__window_index(w, "agg");
    ASSERT_EQ(w->n, 3);
    ASSERT_DEQ(wrow(w, 0)->v[src].rec_in, 0.0);
    ASSERT_DEQ(wrow(w, 1)->v[src].rec_in, 6000.0);
    ASSERT_DEQ(wrow(w, 2)->v[src].rec_in, 18000.0);
    /* rate = 1000 x 18000 / 120000 = 150/s, the mean of the two minutes' rates */
    ASSERT_DEQ(core__w_rate(w, src, VM(rec_in)), 150.0);
    ASSERT_DEQ(core__w_rate(w, agg, VM(rec_out)), 10.0);
    ASSERT_DEQ(wrow(w, 2)->v[agg].acc_busy, 240000.0);
    /* rate(acc_busy) / p = 1000 x 240000 / 120000 / 4 = 500 ms/s: the busy average */
    ASSERT_DEQ(core__w_rate(w, agg, VM(acc_busy)) / 4, 500.0);
    fx_deinit(&f);
}

static void finished_vertex_zeros(void)
{
    struct fx f;
    fx_init(&f);
    f.v[0].finished = true;
    f.v[0].busy_min = f.v[0].busy_avg = f.v[0].busy_max = 700;
    f.v[0].records_in = 500;
    f.v[0].records_in_per_s = 30;
    f.v[0].pending_records = 10;
    f.v[0].accumulated_busy_ms = 1e6;
    ingest(&f, 1000);
    struct core_window *w = &f.st->w;
    int src = core__window_index(w, "src");
    ASSERT_DEQ(core__w_latest(w, src, VM(load)), 0.0);
    ASSERT_DEQ(core__w_latest(w, src, VM(rec_in)), 0.0);
    ASSERT_DEQ(core__w_latest(w, src, VM(acc_busy)), 0.0);
    ASSERT_DEQ(core__w_latest(w, src, VM(lag)), 0.0);
    /* source input rate 0 -> OBSERVED_TPR +inf */
    ASSERT_DEQ(core__w_latest(w, src, VM(observed_tpr)), INFINITY);
    fx_deinit(&f);
}

static void observed_tpr_catching_up_and_fallback(void)
{
    /* lag threshold 30 s: catching up iff lag >= 30 x inPerSec = 30000 at 1000/s. */
    struct fx f;
    fx_init(&f);
    struct core_window *w = &f.st->w;
    f.v[0].records_in_per_s = 1000;
    f.v[0].pending_records = 30000; /* exactly at the threshold: catching up */
    f.v[0].backpressured = 200;
    ingest(&f, 0);
    int src = core__window_index(w, "src");
    /* 1000 / (1 - 200/1000) = 1250 */
    ASSERT_DEQ(wrow(w, 0)->v[src].observed_tpr, 1250.0);

    f.v[0].pending_records = 29999; /* not catching up, window holds 1 value < 2 -> NaN */
    ingest(&f, MIN);
    ASSERT(isnan(wrow(w, 1)->v[src].observed_tpr));

    f.v[0].pending_records = 50000;
    f.v[0].backpressured = 500; /* 1000 / 0.5 = 2000 */
    ingest(&f, 2 * MIN);
    ASSERT_DEQ(wrow(w, 2)->v[src].observed_tpr, 2000.0);

    f.v[0].backpressured = 1000; /* catching up but not computable -> fallback */
    ingest(&f, 3 * MIN);
    /* mean of finite stored values 1250, 2000 = 1625 (NaN skipped), 2 >= min 2 */
    ASSERT_DEQ(wrow(w, 3)->v[src].observed_tpr, 1625.0);

    f.v[0].pending_records = 0; /* not catching up -> fallback over 1250, 2000, 1625 */
    ingest(&f, 4 * MIN);
    ASSERT_DEQ(wrow(w, 4)->v[src].observed_tpr, 1625.0);

    f.v[0].backpressured = NAN; /* absent backpressure while catching up -> fallback */
    f.v[0].pending_records = 1e9;
    f.v[0].records_in_per_s = 3.0;
    ingest(&f, 5 * MIN);
    /* (1250 + 2000 + 1625 + 1625) / 4 = 1625 */
    ASSERT_DEQ(wrow(w, 5)->v[src].observed_tpr, 1625.0);
    fx_deinit(&f);
}

/* governor.source-rate.guard: no observation in the meter's first minute after the job
 * started, none while back-pressured more than 10% of the time, and no stored fallback mean. */
static void observed_tpr_guarded(void)
{
    struct fx f;
    fx_init(&f);
    f.cfg.source_rate_guard = true;
    struct core_window *w = &f.st->w;
    f.v[0].records_in_per_s = 500; /* the meter, half-way through its first minute */
    f.v[0].pending_records = 100000;
    f.v[0].backpressured = 0;
    ingest(&f, 30 * 1000);
    int src = core__window_index(w, "src");
    ASSERT(isnan(wrow(w, 0)->v[src].observed_tpr));
    f.v[0].records_in_per_s = 1000; /* warmed up, catching up, not back-pressured */
    ingest(&f, MIN);
    ASSERT_DEQ(wrow(w, 1)->v[src].observed_tpr, 1000.0);
    f.v[0].backpressured = 100; /* 10%: still trusted: 1000 / 0.9 */
    ingest(&f, 2 * MIN);
    ASSERT_NEAR(wrow(w, 2)->v[src].observed_tpr, 1111.111, 1e-3);
    f.v[0].backpressured = 101; /* held back by a downstream bottleneck: none, no fallback */
    ingest(&f, 3 * MIN);
    ASSERT(isnan(wrow(w, 3)->v[src].observed_tpr));
    f.v[0].pending_records = 0; /* not catching up: none (the reference stores a mean) */
    f.v[0].backpressured = 0;
    ingest(&f, 4 * MIN);
    ASSERT(isnan(wrow(w, 4)->v[src].observed_tpr));
    fx_deinit(&f);
}

static void observed_tpr_infinity(void)
{
    struct fx f;
    fx_init(&f);
    struct core_window *w = &f.st->w;
    f.v[0].records_in_per_s = 0; /* no input -> +inf */
    ingest(&f, 0);
    int src = core__window_index(w, "src");
    ASSERT_DEQ(wrow(w, 0)->v[src].observed_tpr, INFINITY);
    /* records_in_per_s absent: records_out_per_s is the fallback input rate */
    f.v[0].records_in_per_s = NAN;
    f.v[0].records_out_per_s = 400;
    f.v[0].pending_records = 0; /* not catching up: only infinities seen -> +inf */
    ingest(&f, MIN);
    ASSERT_DEQ(wrow(w, 1)->v[src].observed_tpr, INFINITY);
    fx_deinit(&f);
}

static void global_metrics(void)
{
    struct fx f;
    fx_init(&f);
    f.s.task_slots_total = 16;
    f.s.task_slots_available = 4;
    f.s.gc_ms_per_s = 12;
    f.s.heap_used = 1.2e9;
    f.s.heap_max = 4e9;
    f.s.managed_used = 0;
    f.s.metaspace_used = 1e8;
    ingest(&f, 1000);
    struct core_window *w = &f.st->w;
    ASSERT_DEQ(core__w_glatest(w, GM(slots_used)), 12.0);   /* 16 - 4 */
    ASSERT_DEQ(core__w_glatest(w, GM(gc_pressure)), 0.012); /* 12 / 1000 */
    ASSERT_DEQ(core__w_glatest(w, GM(heap_ratio)), 0.3);    /* 1.2e9 / 4e9 */
    ASSERT_DEQ(core__w_glatest(w, GM(heap_used)), 1.2e9);
    ASSERT_DEQ(core__w_glatest(w, GM(managed_used)), 0.0);
    ASSERT_DEQ(core__w_glatest(w, GM(metaspace_used)), 1e8);
    f.s.task_slots_available = NAN; /* one side missing -> NaN */
    f.s.heap_max = NAN;
    ingest(&f, 2000);
    ASSERT(isnan(core__w_glatest(w, GM(slots_used))));
    ASSERT(isnan(core__w_glatest(w, GM(heap_ratio))));
    ASSERT_DEQ(core__w_gavg(w, GM(heap_ratio)), 0.3);
    fx_deinit(&f);
}

/* ------------------------------------------------------------ 1.4 and 1.1 -- */

static void window_full_timing(void)
{
    /* running_since 0, stabilization 5 min, window 15 min, one sample a minute from t=0.
     * The sample at 5 min is the first with at >= stableTime, so windowFullTime = 5 + 15 =
     * 20 min: the first fully collected cycle is at running + stabilization + window. */
    struct fx f;
    fx_init(&f);
    struct core_window_status ws;
    for (int m = 0; m < 20; m++) {
        ws = ingest(&f, m * MIN);
        ASSERT(!ws.fully_collected);
        ASSERT_EQ(ws.stabilizing, m < 5);
        ASSERT_EQ(ws.n_samples, m + 1);
    }
    ASSERT_EQ(core_state_last_at(f.st), 19 * MIN);
    ws = ingest(&f, 20 * MIN);
    ASSERT(ws.fully_collected);
    ASSERT(!ws.restarted);
    /* samples with at < 20 - 15 = 5 min dropped: 5..20 min = 16 samples, the 5-min one
     * (a stabilization-era sample is kept only if not older than now - window) */
    ASSERT_EQ(ws.n_samples, 16);
    ASSERT_EQ(core__window_at(&f.st->w, 0), 5 * MIN);
    ws = ingest(&f, 20 * MIN + 30 * SEC);
    ASSERT(ws.fully_collected);
    /* cutoff 5.5 min: the 5-min sample goes */
    ASSERT_EQ(ws.n_samples, 16);
    ASSERT_EQ(core__window_at(&f.st->w, 0), 6 * MIN);
    fx_deinit(&f);
}

static void window_full_with_late_first_sample(void)
{
    /* Samples at 0 and then from 7 min on: the first one >= stableTime (5 min) is 7 min,
     * so windowFullTime = 22 min. */
    struct fx f;
    fx_init(&f);
    struct core_window_status ws = ingest(&f, 0);
    ws = ingest(&f, 7 * MIN);
    /* before adding the 7-min sample nothing was >= 5 min: now + window = 22 min */
    ASSERT(!ws.fully_collected);
    ws = ingest(&f, 21 * MIN);
    ASSERT(!ws.fully_collected);
    ASSERT_EQ(ws.n_samples, 3);
    ws = ingest(&f, 22 * MIN);
    ASSERT(ws.fully_collected);
    /* cutoff 7 min: the 0-min sample goes, 7, 21, 22 stay */
    ASSERT_EQ(ws.n_samples, 3);
    fx_deinit(&f);
}

static void restart_on_running_since(void)
{
    struct fx f;
    fx_init(&f);
    struct core_window_status ws = ingest(&f, 0);
    ASSERT(!ws.restarted); /* a fresh window is not a restart */
    ws = ingest(&f, MIN);
    ASSERT(!ws.restarted);
    ASSERT_EQ(ws.n_samples, 2);
    f.s.running_since = 90 * SEC;
    ws = ingest(&f, 2 * MIN);
    ASSERT(ws.restarted);
    ASSERT_EQ(ws.n_samples, 1);
    ASSERT_EQ(f.st->w.running_since, 90 * SEC);
    /* stabilization counts from the new running_since: 1.5 + 5 = 6.5 min */
    ASSERT(ws.stabilizing);
    fx_deinit(&f);
}

static void window_is_bounded_for_a_chatty_client(void)
{
    /* The same `at` re-sent never fills the window (now < first + window): without a bound
     * the state would grow with every request. */
    struct fx f;
    fx_init(&f);
    struct core_window_status ws;
    for (int i = 0; i < CORE_WINDOW_MAX_SAMPLES + 100; i++)
        ws = ingest(&f, 10 * MIN);
    ASSERT(!ws.fully_collected);
    ASSERT_EQ(ws.n_samples, CORE_WINDOW_MAX_SAMPLES);
    fx_deinit(&f);
}

static void restart_on_parallelism_or_vertices(void)
{
    struct fx f;
    fx_init(&f);
    ingest(&f, 0);
    struct core_window_status ws = ingest(&f, MIN);
    ASSERT_EQ(ws.n_samples, 2);
    f.v[1].parallelism = 8; /* the client rescaled agg */
    ws = ingest(&f, 2 * MIN);
    ASSERT(ws.restarted);
    ASSERT_EQ(ws.n_samples, 1);
    ASSERT_EQ(f.st->w.parallelism[core__window_index(&f.st->w, "agg")], 8);
    ws = ingest(&f, 3 * MIN);
    ASSERT(!ws.restarted);
    ASSERT_EQ(ws.n_samples, 2);

    /* same ids in another order: not a restart, metrics mapped by id */
    struct core_vertex_in tmp = f.v[0];
    f.v[0] = f.v[1];
    f.v[1] = tmp;
    f.v[0].busy_min = f.v[0].busy_avg = f.v[0].busy_max = 250; /* agg */
    ws = ingest(&f, 4 * MIN);
    ASSERT(!ws.restarted);
    ASSERT_DEQ(core__w_latest(&f.st->w, core__window_index(&f.st->w, "agg"), VM(load)), 0.25);

    /* a vertex renamed: restart */
    f.v[1].id = "source2";
    f.in[0].from = "source2";
    ws = ingest(&f, 5 * MIN);
    ASSERT(ws.restarted);
    ASSERT(core__window_index(&f.st->w, "src") < 0);
    ASSERT(core__window_index(&f.st->w, "source2") >= 0);
    fx_deinit(&f);
}

/* Rates first (core/README.md, Window), then the client's counters (a day's worth): the series goes
 * on from the rebuilt values, this interval at the gauge's rate, and the rate stays. */
static void counters_after_rates_go_on(void)
{
    struct fx f;
    fx_init(&f);
    f.v[1].records_in_per_s = 1000;
    for (int k = 0; k < 3; k++)
        ingest(&f, k * MIN); /* rebuilt: 0, 60000, 120000 */
    f.v[1].records_in = 86400000 + 3 * 60000.0;
    ingest(&f, 3 * MIN);
    f.v[1].records_in = 86400000 + 4 * 60000.0;
    ingest(&f, 4 * MIN);
    struct core_window *w = &f.st->w;
    int agg = core__window_index(w, "agg");
    ASSERT_DEQ(wrow(w, 3)->v[agg].rec_in, 180000.0);
    ASSERT_DEQ(wrow(w, 4)->v[agg].rec_in, 240000.0);
    ASSERT_DEQ(core__w_rate(w, agg, VM(rec_in)), 1000.0);
    ASSERT_DEQ(w->ctr[agg * CORE_CTR__COUNT + CORE_CTR_IN].offset, 86400000.0);
    ASSERT_DEQ(w->ctr[agg * CORE_CTR__COUNT + CORE_CTR_IN].sent, 86640000.0);
    fx_deinit(&f);
}

/* A counter (core/README.md, Window) that goes back to what a reset explains restarts the window,
 * which then stabilizes from that sample (the client declared no restart). */
static void counters_going_back_restart(void)
{
    struct fx f;
    fx_init(&f);
    f.cfg.stabilization_ms = MIN;
    f.v[1].records_in_per_s = 1000;
    for (int k = 0; k <= 5; k++) {
        f.v[1].records_in = 1000.0 * 60 * k;
        ingest(&f, k * MIN);
    }
    f.v[1].records_in = 30000; /* reset half a minute ago */
    struct core_window_status ws = ingest(&f, 6 * MIN);
    ASSERT(ws.restarted);
    ASSERT_EQ(ws.restart, CORE_RESTART_COUNTERS);
    ASSERT_EQ(ws.n_samples, 1);
    ASSERT_EQ(f.st->w.started_at, 6 * MIN);
    ws = ingest(&f, 6 * MIN + 30 * SEC);
    ASSERT(ws.stabilizing); /* until 7 min */
    fx_deinit(&f);
}

/* Counters (core/README.md, Window) growing faster than their gauge, or back further than a reset
 * explains, leave the sample out; the third in a row restarts the window; with
 * plausibility off the sample is taken (or, going back, restarts the window). */
static void implausible_counters(void)
{
    struct fx f;
    fx_init(&f);
    f.v[1].records_in_per_s = 1000;
    for (int k = 0; k <= 2; k++) {
        f.v[1].records_in = 1000.0 * 60 * k;
        ingest(&f, k * MIN);
    }
    f.v[1].records_in = 1e12;
    struct core_window_status ws = ingest(&f, 3 * MIN);
    ASSERT(ws.rejected);
    ASSERT_EQ(ws.n_samples, 3);
    ASSERT_EQ(f.st->rejected, 1);
    ASSERT_EQ(core_state_last_at(f.st), 3 * MIN);
    f.v[1].records_in = 1000.0 * 60 * 4; /* back on track: taken */
    ws = ingest(&f, 4 * MIN);
    ASSERT(!ws.rejected && !ws.restarted);
    ASSERT_EQ(f.st->rejected, 0);
    /* Back from 240000 to 150000 a minute later: a reset explains a value up to 100 x
     * (1000 + 1) x 60 s = 6006000, so the job restarted; with a ratio of 1.5 (90090) no
     * reset does, and the sample is implausible. */
    struct core_window_check chk;
    struct core_decision d;
    struct core_topo t;
    char err[64];
    core_decision_init(&d);
    f.s.at = 5 * MIN;
    f.v[1].records_in = 150000;
    ASSERT_EQ(core__topo_build(&f.s, &d, &t, err, sizeof err), 0);
    core__window_check(f.st, &f.s, &t, &f.cfg, &chk);
    ASSERT_EQ(chk.restart, CORE_RESTART_COUNTERS);
    f.cfg.plausibility_ratio = 1.5;
    core__window_check(f.st, &f.s, &t, &f.cfg, &chk);
    ASSERT_EQ(chk.restart, CORE_RESTART_NONE);
    ASSERT(chk.implausible);
    ASSERT_CONTAINS(chk.why, "agg's records_in went back from 240000 to 150000");
    f.cfg.plausibility = false; /* the flink profile: every step back is a restart */
    core__window_check(f.st, &f.s, &t, &f.cfg, &chk);
    ASSERT_EQ(chk.restart, CORE_RESTART_COUNTERS);
    core_decision_deinit(&d);
    /* three jumps in a row: the counters have a new base */
    f.cfg.plausibility = true;
    f.cfg.plausibility_ratio = 100;
    for (int k = 0; k < 3; k++) {
        f.v[1].records_in = 1e12 + 1000.0 * 60 * k;
        ws = ingest(&f, (5 + k) * MIN);
        ASSERT_EQ(ws.rejected, k < 2);
    }
    ASSERT_EQ(ws.restart, CORE_RESTART_JUMPED);
    ASSERT_EQ(ws.n_samples, 1);
    ASSERT_EQ(f.st->rejected, 0);
    fx_deinit(&f);
}

/* The busy counter cannot grow faster than p subtasks can be busy. */
static void busy_counter_against_time(void)
{
    struct fx f;
    fx_init(&f);
    f.v[1].accumulated_busy_ms = 0;
    ingest(&f, 0);
    f.v[1].accumulated_busy_ms = 4 * 1000.0 * 60; /* agg: 4 subtasks all busy for a minute */
    ASSERT(!ingest(&f, MIN).rejected);
    f.v[1].accumulated_busy_ms += 9 * 1000.0 * 60; /* 9 subtasks' worth */
    struct core_window_status ws = ingest(&f, 2 * MIN);
    ASSERT(ws.rejected);
    fx_deinit(&f);
}

/* Another edge (core/README.md, Window) or ship strategy under the same ids restarts the window;
 * so does a rescale, and both stabilize from their first sample. */
static void restart_on_edges_and_rescale_stabilizes(void)
{
    struct fx f;
    fx_init(&f);
    f.cfg.stabilization_ms = MIN;
    ingest(&f, 0);
    ingest(&f, 5 * MIN);
    f.in[0].ship = CORE_SHIP_REBALANCE;
    struct core_window_status ws = ingest(&f, 6 * MIN);
    ASSERT_EQ(ws.restart, CORE_RESTART_EDGES);
    ASSERT_EQ(f.st->w.started_at, 6 * MIN);
    ws = ingest(&f, 6 * MIN + 30 * SEC);
    ASSERT(!ws.restarted && ws.stabilizing);
    f.v[1].parallelism = 8;
    ws = ingest(&f, 8 * MIN);
    ASSERT_EQ(ws.restart, CORE_RESTART_RESCALED);
    ws = ingest(&f, 8 * MIN + 30 * SEC);
    ASSERT(ws.stabilizing); /* the reference: not stabilizing, running_since is long past */
    /* a declared restart stabilizes from running_since, as before */
    f.s.running_since = 9 * MIN;
    ws = ingest(&f, 10 * MIN);
    ASSERT_EQ(ws.restart, CORE_RESTART_DECLARED);
    ASSERT_EQ(f.st->w.started_at, 9 * MIN);
    ASSERT(!ws.stabilizing);
    fx_deinit(&f);
}

/* With governor.window.keep-full (core/README.md, Window) a window stays full however late the
 * sample after its cut-off; the reference (off) flips back to not full. */
static void window_stays_full(void)
{
    static const int at_s[] = {0, 30, 60, 90, 120, 150, 180, 200, 240, 260, 300, 330, 350};
    for (int keep = 0; keep < 2; keep++) {
        struct fx f;
        fx_init(&f);
        f.cfg.stabilization_ms = MIN;
        f.cfg.metrics_window_ms = 2 * MIN;
        f.cfg.window_keep_full = keep;
        struct core_window_status ws;
        for (size_t k = 0; k < sizeof at_s / sizeof at_s[0]; k++) {
            ws = ingest(&f, at_s[k] * SEC);
            if (at_s[k] >= 180 && at_s[k] < 350)
                ASSERT(ws.fully_collected);
        }
        /* at 330 s the cut-off 210 s dropped 200 s; 240 + 120 > 350 */
        ASSERT_EQ(ws.fully_collected, keep);
        fx_deinit(&f);
    }
}

/* ------------------------------------------------------ Memory: the samples kept -- */

static uint64_t rbits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* Samples appended and dropped as a window does (a few at a time, across chunk boundaries,
 * awkward numbers among them) read back the same, bit for bit, in every way the window is
 * read: through the iterator undecoded and decoded, one by one, the newest alone; and the
 * chunks hold at most one chunk's rows beyond the window's. */
static void samples_kept_compressed_read_back(void)
{
    const int nv = 3, total = 400, k = core_wrow_k(nv);
    const double odd[] = {NAN, -0.0, INFINITY, 5e-324, 0.1 + 0.2, 1e300, 1234.567, 0.0};
    struct core_window w;
    memset(&w, 0, sizeof w);
    w.n_vertices = nv;
    int64_t *at = calloc(total, sizeof *at);
    double *want = calloc((size_t)total * (size_t)k, sizeof *want);
    struct core_wrow *r = calloc(1, sizeof *r + (size_t)nv * sizeof r->v[0]);
    uint64_t rng = 12345;
    int first = 0; /* want's index of the window's oldest sample */
    for (int i = 0; i < total; i++) {
        at[i] = 1764410400000 + 10000LL * i + (i % 3);
        double *x = (double *)(void *)r;
        for (int s = 0; s < k; s++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            x[s] = s % 9 == 3   ? 100.0 * i
                   : s % 7 == 0 ? odd[(rng >> 33) % 8]
                                : (double)((rng >> 40) % 100000) / 1000.0;
        }
        memcpy(want + (size_t)i * (size_t)k, x, (size_t)k * sizeof *x);
        core_window_append(&w, at[i], r);
        if (i % 7 == 6) { /* a decision's view comes and goes */
            core__window_decode(&w);
            if (i % 2)
                core__window_release(&w);
        }
        int keep = 90 + i % 5;
        if (w.n > keep) {
            first += w.n - keep;
            core__window_drop(&w, w.n - keep);
        }
        int held = 0;
        for (int c = 0; c < w.n_chunks; c++)
            held += w.chunks[c]->n;
        ASSERT(held - w.n == w.skip);
        ASSERT(w.skip < CORE_WINDOW_CHUNK_ROWS);
    }
    ASSERT_EQ(w.seq0, first);
    for (int decoded = 0; decoded < 2; decoded++) {
        if (decoded)
            core__window_decode(&w);
        struct core_witer it;
        int n = 0;
        for (core_witer_begin(&it, &w); core_witer_next(&it); n++) {
            ASSERT_EQ(it.at, at[first + n]);
            const double *x = (const double *)(const void *)it.r;
            for (int s = 0; s < k; s++)
                ASSERT_EQ(rbits(x[s]), rbits(want[(size_t)(first + n) * (size_t)k + (size_t)s]));
        }
        core_witer_end(&it);
        ASSERT_EQ(n, w.n);
        int64_t t;
        core__window_get(&w, 5, &t, r);
        ASSERT_EQ(t, at[first + 5]);
        ASSERT(memcmp(r, want + (size_t)(first + 5) * (size_t)k, (size_t)k * sizeof(double)) == 0);
        ASSERT_EQ(core__window_at(&w, w.n - 1), at[total - 1]);
        for (int s = 0; s < k; s++) {
            double x = core__window_newest(&w, s, &t);
            ASSERT_EQ(rbits(x), rbits(want[(size_t)(total - 1) * (size_t)k + (size_t)s]));
            ASSERT_EQ(t, at[total - 1]);
        }
    }
    /* less than the doubles, though most numbers here are random */
    fprintf(stderr, "  %zu bytes for %d samples of %d numbers\n", core__window_bytes(&w), w.n, k);
    ASSERT(core__window_bytes(&w) < (size_t)w.n * (size_t)(k + 1) * 8);
    core__window_free_samples(&w);
    free(r);
    free(at);
    free(want);
}

TEST_MAIN(TEST_ENTRY(counters_after_rates_go_on), TEST_ENTRY(counters_going_back_restart),
          TEST_ENTRY(implausible_counters), TEST_ENTRY(busy_counter_against_time),
          TEST_ENTRY(restart_on_edges_and_rescale_stabilizes), TEST_ENTRY(window_stays_full),
          TEST_ENTRY(window_is_bounded_for_a_chatty_client), TEST_ENTRY(avg_rules),
          TEST_ENTRY(rate_first_and_last_non_nan), TEST_ENTRY(avg_with_rate_fallback),
          TEST_ENTRY(load_by_aggregator_and_rounding), TEST_ENTRY(source_counters_and_lag),
          TEST_ENTRY(rates_only_client), TEST_ENTRY(finished_vertex_zeros),
          TEST_ENTRY(observed_tpr_catching_up_and_fallback), TEST_ENTRY(observed_tpr_guarded),
          TEST_ENTRY(observed_tpr_infinity), TEST_ENTRY(global_metrics),
          TEST_ENTRY(window_full_timing), TEST_ENTRY(window_full_with_late_first_sample),
          TEST_ENTRY(restart_on_running_since), TEST_ENTRY(restart_on_parallelism_or_vertices),
          TEST_ENTRY(samples_kept_compressed_read_back))
