/* Unit tests for the governor profile's decisions (core/README.md, Differences): each option
 * on (the built-in default) against the same figures under the flink profile. */
#include <stdlib.h>

#include "test.h"

#include "core/core_int.h"
#include "windows.h"
#include "options/options.h"

static struct core_evaluated ev_of(double tdr, double catch_up)
{
    struct core_evaluated e;
    memset(&e, 0, sizeof e);
    e.target_data_rate = tdr;
    e.catch_up_data_rate = catch_up;
    e.busy_max_avg_ratio = e.hot_key_share = e.key_rate_bound = e.salting_fanout = NAN;
    return e;
}

/* governor.catch-up.in-headroom: 1000/s at 0.7 with a restart of 300 s in a catch-up of
 * 1800 s. Reference: 1000 / 0.7 + 1000 x 300 / 1800 = 1428.57 + 166.67 = round(1595.2) = 1595.
 * Governor: max(1428.57, 1000 + 0 + 166.67) = round(1428.57) = 1429. A backlog beyond the
 * headroom is added: catch-up 600/s gives max(1428.57, 1766.67) = 1767. */
static void capacity_in_headroom(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_evaluated e = ev_of(1000, 0);
    ASSERT_DEQ(core__capacity_cfg(&cfg, &e, 0.7, true, 300000), 1429.0);
    e.catch_up_data_rate = 600;
    ASSERT_DEQ(core__capacity_cfg(&cfg, &e, 0.7, true, 300000), 1767.0);
    opt_config_set_profile(&cfg, CORE_PROFILE_FLINK);
    e.catch_up_data_rate = 0;
    ASSERT_DEQ(core__capacity_cfg(&cfg, &e, 0.7, true, 300000), 1595.0);
}

/* governor.utilization.ceiling: the default upper bound 0.7 + 0.3 = 1.0 becomes 0.9, so the
 * scale-up threshold is round(1000 / 0.9) = 1111 instead of 1000; an explicit
 * utilization.max wins; a target above the ceiling keeps the target. */
static void upper_bound_ceiling(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_evaluated e = ev_of(1000, 0);
    core__thresholds(&e, &cfg, false, 0, NAN, true);
    ASSERT_DEQ(e.scale_up_rate_threshold, 1111.0);
    cfg.util_max = 1.0;
    core__thresholds(&e, &cfg, false, 0, NAN, true);
    ASSERT_DEQ(e.scale_up_rate_threshold, 1000.0);
    cfg.util_max = NAN;
    cfg.util_target = 0.95;
    core__thresholds(&e, &cfg, false, 0, NAN, true);
    ASSERT_DEQ(e.scale_up_rate_threshold, 1053.0); /* round(1000 / 0.95) */
    opt_config_set_profile(&cfg, CORE_PROFILE_FLINK);
    cfg.util_target = 0.7;
    core__thresholds(&e, &cfg, false, 0, NAN, true);
    ASSERT_DEQ(e.scale_up_rate_threshold, 1000.0);
}

/* w's samples: one vertex's metrics vm[0], vm[1], step ms apart. */
static void put2(struct core_window *w, const struct core_vmetrics *vm, int64_t step)
{
    struct win x;
    win_init(&x, 1, 2, step, NAN);
    for (int i = 0; i < 2; i++)
        x.r[i]->v[0] = vm[i];
    win_put(&x, w);
    win_free(&x);
}

/* governor.skew.knee: 30% on one key over 200 key groups. At P the busiest subtask carries
 * 0.3 + 0.7 ceil(200 / P) / 200; at 200, 0.3035; the knee wants at most 0.3035 / 0.95 =
 * 0.31947, i.e. ceil(200 / P) <= 5.56: P = 40 (5 groups each). The floor rule gives 47. */
static void skew_knee_by_key_groups(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.scalability_curve = false; /* the knee at skew.saturation, not scalability.share */
    static char id[] = "v";
    static char *ids[] = {id};
    static int par[1];
    struct core_vmetrics vm[2];
    double rate = 6000.0 / 0.3875, lavg = rate / 8 / 6000;
    for (int i = 0; i < 2; i++) {
        vm[i] = (struct core_vmetrics){.load = 1.0,
                                       .load_avg = lavg,
                                       .load_max = 1.0,
                                       .rec_in = rate * 60 * i,
                                       .rec_in_per_s = NAN,
                                       .acc_busy = NAN,
                                       .rec_out = NAN,
                                       .lag = NAN,
                                       .observed_tpr = NAN};
    }
    struct core_window w = {.n_vertices = 1, .ids = ids, .parallelism = par};
    put2(&w, vm, 60000);
    struct core_evaluated e = ev_of(25000, 0);
    e.max_parallelism = 200;
    ASSERT_EQ(core__skew_limit(&cfg, &w, 0, 8, &e), 40);
    /* The most it processes at 40: mu / 0.3175 = 6000 / 0.3175 = 18897.6/s. */
    ASSERT_NEAR(core__skew_capacity(&cfg, &e, 40), 18897.6, 0.5);
    opt_config_set_profile(&cfg, CORE_PROFILE_FLINK);
    ASSERT_EQ(core__skew_limit(&cfg, &w, 0, 8, &e), 47);
    core__window_free_samples(&w);
}

/* governor.scale-down.early: interval 1 h, early-after 10 min. Proposals outside the bounds
 * at 0, 5 and 10 min (8, 6, 7): at 10 min the wait is over, at the highest of the last 10
 * min: 8. A proposal inside the bounds within the last 10 min sends it back to the hour. */
static void scale_down_early_when_clearly_low(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.restart_cost_w = NAN; /* governor.scale-down.restart-cost replaces it when set */
    struct core_state *st = core_state_new();
    bool out;
    const int64_t M = 60000;
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 8, true, 0, &out), 10);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 6, true, 5 * M, &out), 10);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 7, true, 10 * M, &out), 8);
    core__delayed_clear(st, "v");
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 8, false, 0, &out), 10);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 6, true, 5 * M, &out), 10);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 7, true, 10 * M, &out), 10);
    core__delayed_clear(st, "v");
    opt_config_set_profile(&cfg, CORE_PROFILE_FLINK);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 8, true, 0, &out), 10);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 7, true, 10 * M, &out), 10);
    core_state_free(st);
}

/* governor.source.stall: the source's counter did not move between the last two samples
 * while its backlog grew, its busy time is 0 and it is not back-pressured: stalled. Reading,
 * busy or back-pressured, it is not. */
static void source_stalled(void)
{
    static char id[] = "src";
    static char *ids[] = {id};
    static int par[1] = {2};
    struct core_vmetrics vm[2];
    for (int i = 0; i < 2; i++) {
        vm[i] = (struct core_vmetrics){.load = 0,
                                       .load_avg = 0,
                                       .load_max = 0,
                                       .rec_in = 5000,
                                       .rec_in_per_s = NAN,
                                       .acc_busy = NAN,
                                       .rec_out = 5000,
                                       .lag = 1000.0 * (i + 1),
                                       .observed_tpr = NAN};
    }
    struct core_window w = {.n_vertices = 1, .ids = ids, .parallelism = par};
    put2(&w, vm, 30000);
    struct core_vertex_in v = {.id = "src", .parallelism = 2, .backpressured = 0};
    ASSERT(core__source_stalled(&w, 0, &v));
    v.backpressured = 500;
    ASSERT(!core__source_stalled(&w, 0, &v));
    v.backpressured = NAN;
    ASSERT(core__source_stalled(&w, 0, &v));
    vm[1].load_max = 0.2;
    put2(&w, vm, 30000);
    ASSERT(!core__source_stalled(&w, 0, &v));
    vm[1].load_max = 0;
    vm[1].rec_in = 6000;
    put2(&w, vm, 30000);
    ASSERT(!core__source_stalled(&w, 0, &v));
    vm[1].rec_in = 5000;
    vm[1].lag = 500; /* the backlog shrank */
    put2(&w, vm, 30000);
    ASSERT(!core__source_stalled(&w, 0, &v));
    core__window_free_samples(&w);
}

TEST_MAIN(TEST_ENTRY(capacity_in_headroom), TEST_ENTRY(upper_bound_ceiling),
          TEST_ENTRY(skew_knee_by_key_groups), TEST_ENTRY(scale_down_early_when_clearly_low),
          TEST_ENTRY(source_stalled))
