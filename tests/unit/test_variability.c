/*
 * Unit tests for what governor's own mechanisms read of the metric window besides its means
 * (core/README.md, Window: variability; Evaluation: governor.rates.level-shift,
 * governor.rates.trend, governor.bounds.confidence; Scaling: the holding time): the series
 * statistics of a source's arrivals, the level of a load that moved, the slope of one that
 * moves, and the bounds widened by what the window measured. Windows are built by hand, one
 * sample a minute, so every figure is derived from the values set.
 */
#include <stdlib.h>

#include "test.h"

#include "core/core_int.h"
#include "options/options.h"
#include "windows.h"

#define MIN   60000LL
#define VM(f) offsetof(struct core_vmetrics, f)

struct vf {
    struct core_sample s;
    struct core_vertex_in v[2];
    struct core_input in;
    struct core_config cfg;
    struct core_state *st;
    struct core_decision d;
    struct core_topo t;
    struct core_evaluated ev[2];
    struct core_variability var[2];
    bool backlog;
    struct core_global_eval g;
    struct core_plugin_err pe;
};

/* A source "s" (p 2) into "a" (p 4, HASH) under the governor profile, a window of n samples a
 * minute apart, the source's arrivals rate[k] over the minute before sample k (read at once:
 * no backlog), lag[k] pending at sample k. */
static void vf_init(struct vf *f, int n, const double *rate, const double *lag)
{
    memset(f, 0, sizeof *f);
    opt_config_defaults(&f->cfg);
    f->st = core_state_new();
    core_decision_init(&f->d);
    f->s.vertices = f->v;
    f->s.running = true;
    f->s.n_vertices = 2;
    f->v[0] = (struct core_vertex_in){.id = "s", .parallelism = 2, .max_parallelism = 128};
    f->in = (struct core_input){.from = "s", .ship = CORE_SHIP_HASH};
    f->v[1] = (struct core_vertex_in){
        .id = "a", .parallelism = 4, .max_parallelism = 128, .inputs = &f->in, .n_inputs = 1};
    char err[128];
    if (core__topo_build(&f->s, &f->d, &f->t, err, sizeof err) < 0)
        abort();
    struct core_window *w = &f->st->w;
    w->running_since = 0;
    w->n_vertices = 2;
    w->ids = core__xcalloc(2, sizeof *w->ids);
    w->parallelism = core__xcalloc(2, sizeof *w->parallelism);
    for (int i = 0; i < 2; i++) {
        w->ids[i] = core__strdup(f->v[i].id);
        w->parallelism[i] = f->v[i].parallelism;
    }
    struct win x;
    win_init(&x, 2, n, MIN, NAN);
    double in = 0;
    for (int k = 0; k < n; k++) {
        struct core_wrow *r = x.r[k];
        r->g = (struct core_gmetrics){NAN, NAN, NAN, NAN, NAN, NAN};
        double l = lag ? lag[k] : 0.0;
        if (k > 0)
            in += rate[k] * 60.0 - (l - (lag ? lag[k - 1] : 0.0));
        r->v[0] = (struct core_vmetrics){.load = 0.5,
                                         .load_avg = 0.5,
                                         .load_max = 0.5,
                                         .acc_busy = NAN,
                                         .rec_in = in,
                                         .rec_out = in,
                                         .rec_in_per_s = NAN,
                                         .lag = l,
                                         .observed_tpr = NAN};
        r->v[1] = (struct core_vmetrics){.load = 0.5,
                                         .load_avg = 0.5,
                                         .load_max = 0.5,
                                         .acc_busy = NAN,
                                         .rec_in = in,
                                         .rec_out = in,
                                         .rec_in_per_s = NAN,
                                         .lag = NAN,
                                         .observed_tpr = NAN};
    }
    win_put(&x, w);
    win_free(&x);
    /* read decoded, as a decision reads it */
    core__window_decode(w);
    f->s.at = (n - 1) * MIN;
}

static void vf_run(struct vf *f, int64_t restart_ms)
{
    core__evaluate(f->st, &f->s, &f->t, &f->cfg, restart_ms, NULL, f->ev, &f->backlog, &f->g,
                   &f->pe, f->var);
}

static void vf_deinit(struct vf *f)
{
    core_state_free(f->st);
    core_decision_deinit(&f->d);
}

/* Arrivals 900, 1100, 900, 1100, ... over 8 intervals: mean 1000 (equal weights), sample
 * variance 8 x 100^2 / 7 = 11428.6; the lag-1 autocorrelation is negative, clamped to 0: the
 * effective count is the count, 8. A smooth rise 1000, 1100, ..., 1700 moves together from
 * one interval to the next: rho = sum((x_k - m)(x_k+1 - m)) / sum((x_k - m)^2) = 0.625
 * (the 8 deviations are -350 .. 350 by 100: products 367500 + ... = 262500 over 420000),
 * n_eff = 8 x 0.375 / 1.625 = 1.846. */
static void series_statistics(void)
{
    double alt[9], rise[9];
    for (int k = 0; k < 9; k++) {
        alt[k] = k % 2 ? 900 : 1100;
        rise[k] = 1000 + 100 * (k - 1);
    }
    struct vf f;
    vf_init(&f, 9, alt, NULL);
    struct core_series_stats x;
    core__w_arrivals(&f.st->w, 0, INT64_MIN, 8 * MIN, &x);
    ASSERT_EQ(x.n, 8);
    ASSERT_NEAR(x.mean, 1000, 1e-9);
    ASSERT_NEAR(x.var, 80000.0 / 7.0, 1e-6);
    ASSERT_NEAR(x.n_eff, 8, 1e-12);
    /* (from, to]: the last four intervals only */
    core__w_arrivals(&f.st->w, 0, 4 * MIN, 8 * MIN, &x);
    ASSERT_EQ(x.n, 4);
    vf_deinit(&f);
    vf_init(&f, 9, rise, NULL);
    core__w_arrivals(&f.st->w, 0, INT64_MIN, 8 * MIN, &x);
    ASSERT_NEAR(x.mean, 1350, 1e-9);
    ASSERT_NEAR(x.n_eff, 8 * 0.375 / 1.625, 1e-9);
    vf_deinit(&f);
}

/*
 * governor.rates.level-shift, z = 3: 12 intervals at 1000 +- 10 (alternating: sd 10.4), then
 * the arrivals step to 3000. With a restart time of 2 min the recent span is the last two
 * intervals; after one interval at 3000 the step has not held on both halves: the window's
 * mean stands and the window is in a transition (the newest interval is far beyond 3 sd of
 * the ones before). After two, the recent mean 3000 is 2000 above the 1000 before, far beyond
 * 3 standard errors, on each half too: the target data rate is 3000/s, and downstream inherits
 * it along the edge. With a restart time of 4 min the same two intervals are half a span: the
 * mean stands (a burst shorter than a restart is not chased).
 */
static void level_shift_taken_once_it_held(void)
{
    double rate[15];
    for (int k = 0; k < 15; k++)
        rate[k] = k >= 13 ? 3000 : k % 2 ? 990 : 1010;
    struct vf f;
    vf_init(&f, 14, rate, NULL);
    vf_run(&f, 2 * MIN);
    double mean13 = (12 * 1000.0 + 3000.0) / 13.0;
    ASSERT_NEAR(f.ev[0].target_data_rate, mean13, 0.01);
    ASSERT(f.var[0].moving && f.var[1].moving);
    vf_deinit(&f);
    vf_init(&f, 15, rate, NULL);
    vf_run(&f, 2 * MIN);
    ASSERT_NEAR(f.ev[0].target_data_rate, 3000, 0.01);
    ASSERT(!f.var[0].moving);
    ASSERT_NEAR(f.ev[1].target_data_rate, 3000, 0.01);
    double mean = (12 * 1000.0 + 2 * 3000.0) / 14.0;
    vf_run(&f, 4 * MIN);
    ASSERT_NEAR(f.ev[0].target_data_rate, mean, 0.01);
    /* Off (0), or under the flink profile: the window's mean. */
    f.cfg.level_shift_z = 0;
    vf_run(&f, 2 * MIN);
    ASSERT_NEAR(f.ev[0].target_data_rate, mean, 0.01);
    opt_config_set_profile(&f.cfg, CORE_PROFILE_FLINK);
    vf_run(&f, 2 * MIN);
    ASSERT_NEAR(f.ev[0].target_data_rate, mean, 0.01);
    ASSERT(!f.var[0].moving);
    vf_deinit(&f);
}

/*
 * governor.rates.trend, z = 2: arrivals rising 60/s a minute (1 a second per second), 1000 +
 * 60 k over intervals k = 1..14, with +-5 alternating: the line's slope is 1/s per second
 * (to the noise), its standard error small, and both halves of the window rise too. The rate
 * is the mean, 1450, moved from the window's middle (the intervals' midpoints 0.5 .. 13.5 min,
 * 7 min before the end) to its end along the slope's lower bound: 1450 + 420 x (just under 1)
 * = just under 1870; the growth is just under 1/s per second. A step
 * (1000 for 7 intervals, then 1400) draws a slope on the whole window but none on either half:
 * no trend.
 */
static void trend_measured_and_step_refused(void)
{
    double rate[15], step[15];
    for (int k = 0; k < 15; k++) {
        rate[k] = 1000 + 60.0 * k + (k % 2 ? 5 : -5);
        step[k] = k <= 7 ? 1000 + (k % 2 ? 5 : -5) : 1400 + (k % 2 ? 5 : -5);
    }
    struct vf f;
    vf_init(&f, 15, rate, NULL);
    f.cfg.level_shift_z = 0; /* the trend alone */
    vf_run(&f, 2 * MIN);
    ASSERT(f.var[0].growth > 0.9 && f.var[0].growth <= 1.0);
    ASSERT(f.ev[0].target_data_rate > 1850 && f.ev[0].target_data_rate <= 1870);
    ASSERT_NEAR(f.var[1].growth, f.var[0].growth, 1e-9);
    double b, se;
    int64_t center;
    ASSERT(core__w_arrivals_trend(&f.st->w, 0, INT64_MIN, 14 * MIN, &b, &se, &center));
    ASSERT_NEAR(b, 1.0, 0.01);
    ASSERT_EQ(center, 7 * MIN);
    vf_deinit(&f);
    vf_init(&f, 15, step, NULL);
    f.cfg.level_shift_z = 0;
    vf_run(&f, 2 * MIN);
    ASSERT_NEAR(f.var[0].growth, 0, 0);
    double mean = (7 * 1000.0 + 7 * 1400.0) / 14.0;
    ASSERT_NEAR(f.ev[0].target_data_rate, mean, 0.01);
    vf_deinit(&f);
}

/*
 * governor.bounds.confidence, z = 2, relative standard error 0.1: the scale-up threshold is
 * divided by 1.2 and the scale-down one multiplied by 1.2, but the scale-up one never falls
 * below what keeping up takes (TDR + catch-up at 100% busy) unless the arrivals are in a
 * transition. TDR 1000, no catch-up, target 0.7, ceiling 0.9 (upper bound 0.9), lower 0.4,
 * restart 0 (in headroom): up = round(1000 / 0.9) = 1111 -> / 1.2 = 925.833 -> at least 1000;
 * down = 1000 / 0.4 = 2500 -> x 1.2 = 3000.
 */
static void bounds_widened_not_past_keeping_up(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_evaluated e;
    core_evaluated_clear(&e);
    e.target_data_rate = 1000;
    e.catch_up_data_rate = 0;
    core__thresholds(&e, &cfg, false, 0, NAN, true);
    ASSERT_NEAR(e.scale_up_rate_threshold, 1111, 0);
    ASSERT_NEAR(e.scale_down_rate_threshold, 2500, 0);
    core__thresholds(&e, &cfg, false, 0, 0.1, true);
    ASSERT_NEAR(e.scale_up_rate_threshold, 1000, 1e-9);
    ASSERT_NEAR(e.scale_down_rate_threshold, 3000, 1e-9);
    core__thresholds(&e, &cfg, false, 0, 0.1, false);
    ASSERT_NEAR(e.scale_up_rate_threshold, 925.833, 1e-9);
    cfg.bounds_z = 0; /* off */
    core__thresholds(&e, &cfg, false, 0, 0.1, true);
    ASSERT_NEAR(e.scale_up_rate_threshold, 1111, 0);
}

/*
 * The holding time a scale-up on a rising load is sized for (governor.rates.trend with
 * governor.scale-down.restart-cost W = 4, target 0.7): at least restart + stabilization
 * (5 min) + window (15 min) = 100 + 1200 = 1300 s; the order quantity sqrt(2 W R / ((1 - u)
 * g)) with R = 100 s, g = 1e-3 a second (1 records/s per second on 1000/s) is sqrt(800 /
 * 0.0003) = 1633.0 s; with g = 1e-4, 5164 s, capped at the trend horizon (1 h).
 */
static void holding_time(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    ASSERT_NEAR(core__hold_time(&cfg, 100, 1000, 1.0), sqrt(800.0 / 0.0003), 1e-6);
    ASSERT_NEAR(core__hold_time(&cfg, 100, 1000, 0.1), 3600, 0);
    ASSERT_NEAR(core__hold_time(&cfg, 100, 1000, 100), 1300, 0);
    cfg.restart_cost_w = 0;
    ASSERT_NEAR(core__hold_time(&cfg, 100, 1000, 1.0), 1300, 0);
}

TEST_MAIN(TEST_ENTRY(series_statistics), TEST_ENTRY(level_shift_taken_once_it_held),
          TEST_ENTRY(trend_measured_and_step_refused),
          TEST_ENTRY(bounds_widened_not_past_keeping_up), TEST_ENTRY(holding_time))
