/* Unit tests for core/skew.c: governor's key-parallelism diagnosis (core/README.md, Skew). */
#include <stdlib.h>

#include "test.h"

#include "core/core_int.h"
#include "options/options.h"
#include "windows.h"

/* A one-vertex window of two samples 60 s apart: records_in grows `rate`/s, busy avg/max
 * loads as given (fractions of a second). */
static void window_of(struct core_window *w, double rate, double load_avg, double load_max)
{
    static char id[] = "v";
    static char *ids[] = {id};
    static int par[1];
    struct win x;
    win_init(&x, 1, 2, 60000, NAN);
    for (int i = 0; i < 2; i++)
        x.r[i]->v[0] = (struct core_vmetrics){.load = load_max,
                                              .load_avg = load_avg,
                                              .load_max = load_max,
                                              .rec_in = rate * 60 * i,
                                              .rec_in_per_s = NAN,
                                              .acc_busy = NAN,
                                              .rec_out = NAN,
                                              .lag = NAN,
                                              .observed_tpr = NAN};
    memset(w, 0, sizeof *w);
    w->n_vertices = 1;
    w->ids = ids;
    w->parallelism = par;
    win_put(&x, w);
    win_free(&x);
}

static struct core_evaluated ev_with(double tdr, double catch_up)
{
    struct core_evaluated e;
    memset(&e, 0, sizeof e);
    e.target_data_rate = tdr;
    e.catch_up_data_rate = catch_up;
    e.busy_max_avg_ratio = e.hot_key_share = e.key_rate_bound = e.salting_fanout = NAN;
    return e;
}

static void seed_case_thirty_percent_on_one_key(void)
{
    /* The skew diagnosis's seed case: p = 8, one subtask handles 6000/s, 30% of the input on one
     * key. Hot subtask share = 0.3 + 0.7 / 8 = 0.3875 of the input; it is busy all the time, so the
     * vertex processes 6000 / 0.3875 = 15483.87/s; the average subtask carries 1/8 of that, busy
     * 15483.87 / 8 / 6000 = 0.32258 of the time. r = 1 / 0.32258 = 3.1 = 1 + 7h
     * -> h = 0.3. mu = 15483.87 / 0.32258 / 8 = 6000. bound = 6000 / 0.3 = 20000 < 25000.
     * P_sat = ceil(0.7 / (0.3 x 0.05)) = ceil(46.67) = 47. fanout = ceil(0.3 x 25000 /
     * (6000 x 0.7)) = ceil(1.786) = 2. */
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.scalability_curve = false; /* skew.saturation, not governor.scalability.share */
    struct core_window w;
    double rate = 6000.0 / 0.3875, lavg = rate / 8 / 6000;
    window_of(&w, rate, lavg, 1.0);
    struct core_evaluated ev = ev_with(25000, 0);
    int psat = core__skew_limit(&cfg, &w, 0, 8, &ev);
    ASSERT_EQ(psat, 47);
    ASSERT_NEAR(ev.hot_key_share, 0.3, 1e-9);
    ASSERT_NEAR(ev.key_rate_bound, 20000, 1e-3);
    ASSERT_NEAR(ev.busy_max_avg_ratio, 3.1, 1e-9);
    ASSERT_NEAR(ev.salting_fanout, 2, 0);
    core__window_free_samples(&w);
}

static void even_load_is_not_skew(void)
{
    /* r = 0.6 / 0.5 = 1.2 < min-ratio 1.5: no diagnosis, but r is reported. */
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_window w;
    window_of(&w, 1000, 0.5, 0.6);
    struct core_evaluated ev = ev_with(1000, 0);
    ASSERT_EQ(core__skew_limit(&cfg, &w, 0, 4, &ev), 0);
    ASSERT_NEAR(ev.busy_max_avg_ratio, 1.2, 1e-9);
    ASSERT(isnan(ev.hot_key_share));
    core__window_free_samples(&w);
}

static void single_subtask_and_disabled(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_window w;
    window_of(&w, 1000, 0.2, 1.0);
    struct core_evaluated ev = ev_with(1000, 0);
    ASSERT_EQ(core__skew_limit(&cfg, &w, 0, 1, &ev), 0); /* p = 1: h undefined */
    cfg.skew_enabled = false;
    ASSERT_EQ(core__skew_limit(&cfg, &w, 0, 8, &ev), 0);
    core__window_free_samples(&w);
}

static void saturation_option_moves_the_stop(void)
{
    /* h = 0.3 with s = 0.1: ceil(0.7 / 0.03) = ceil(23.33) = 24. */
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.skew_saturation = 0.1;
    struct core_window w;
    double rate = 6000.0 / 0.3875, lavg = rate / 8 / 6000;
    window_of(&w, rate, lavg, 1.0);
    struct core_evaluated ev = ev_with(25000, 0);
    ASSERT_EQ(core__skew_limit(&cfg, &w, 0, 8, &ev), 24);
    core__window_free_samples(&w);
}

TEST_MAIN(TEST_ENTRY(seed_case_thirty_percent_on_one_key), TEST_ENTRY(even_load_is_not_skew),
          TEST_ENTRY(single_subtask_and_disabled), TEST_ENTRY(saturation_option_moves_the_stop))
