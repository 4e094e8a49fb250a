/* Unit tests for core/gating.c (core/README.md, Gating) and core/history.c (History). */
#include "test.h"

#include "core/core_int.h"
#include "options/options.h"

static void delayed_scale_down_takes_max_in_window(void)
{
    /* core/README.md's Gating example: interval 60 s, p = 100: t=0 -> 80 (delayed), t=10 -> 90,
     * t=40 -> 72, t=59 -> 64, t=60 -> 70: window [0, 60] max = 90, flag of the t=10 entry. */
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.restart_cost_w = NAN; /* the interval, not governor.scale-down.restart-cost */
    cfg.scale_down_interval_ms = 60000;
    struct core_state *st = core_state_new();
    bool out;
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 100, 80, true, 0, &out), 100);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 100, 90, false, 10000, &out), 100);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 100, 72, true, 40000, &out), 100);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 100, 64, true, 59000, &out), 100);
    ASSERT_EQ(core__delayed_until(st, &cfg, "v"), 60000);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 100, 70, true, 60000, &out), 90);
    ASSERT(!out);
    core_state_free(st);
}

static void delayed_scale_down_evicts_old_maximum(void)
{
    /* After the 90 at t=10 leaves the window [t-60, t], the next maximum (72 at t=40)
     * applies: at t=71 the window is [11, 71]. The list after t=60 is 90@10, 70@60. A new
     * 65 at t=71 keeps 70@60 (greater) and appends. Max in [11, 71] is 70. */
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.restart_cost_w = NAN; /* the interval, not governor.scale-down.restart-cost */
    cfg.scale_down_interval_ms = 60000;
    struct core_state *st = core_state_new();
    bool out;
    core__delayed_scale_down(st, &cfg, "v", 100, 80, true, 0, &out);
    core__delayed_scale_down(st, &cfg, "v", 100, 90, false, 10000, &out);
    core__delayed_scale_down(st, &cfg, "v", 100, 70, true, 60000, &out);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 100, 65, true, 71000, &out), 70);
    ASSERT(out);
    core_state_free(st);
}

static void delayed_scale_down_disabled_and_cleared(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.restart_cost_w = NAN;       /* the interval, not governor.scale-down.restart-cost */
    cfg.scale_down_interval_ms = 0; /* <= 0: no delay */
    struct core_state *st = core_state_new();
    bool out;
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 4, true, 0, &out), 4);
    cfg.scale_down_interval_ms = 60000;
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 4, true, 0, &out), 10);
    core__delayed_clear(st, "v");
    ASSERT_EQ(core__delayed_until(st, &cfg, "v"), -1);
    /* A cleared entry starts its delay again. */
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 4, true, 70000, &out), 10);
    ASSERT_EQ(core__delayed_until(st, &cfg, "v"), 130000);
    core__delayed_clear_all(st);
    ASSERT_EQ(core__delayed_until(st, &cfg, "v"), -1);
    core_state_free(st);
}

static void delayed_proposal_never_above_current(void)
{
    /* A delayed scale-down that is no longer one (core/README.md, Gating): a proposal of 7 made at
     * p = 10; the vertex now runs at 4 and proposes
     * 2. The 7 is no scale-down of 4: dropped, and the wait starts again at the new
     * proposal instead of applying 7 (a scale-up) once the old wait is over. */
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.restart_cost_w = NAN; /* the interval, not governor.scale-down.restart-cost */
    cfg.scale_down_interval_ms = 60000;
    struct core_state *st = core_state_new();
    bool out;
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 7, true, 0, &out), 10);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 4, 2, true, 70000, &out), 4);
    ASSERT_EQ(core__delayed_until(st, &cfg, "v"), 130000);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 4, 2, true, 130000, &out), 2);
    core_state_free(st);
}

static struct core_vhistory one_scale_up(struct core_hist_entry *e)
{
    /* 2 -> 4 at TPR 1000, expecting 2000. */
    e->at = 0;
    e->current_parallelism = 2;
    e->new_parallelism = 4;
    e->true_processing_rate = 1000;
    e->expected_processing_rate = 2000;
    struct core_vhistory h = {.id = "v", .n = 1, .cap = 1, .e = e};
    return h;
}

static void ineffective_scale_up_blocked_only_when_enabled(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_hist_entry e;
    struct core_vhistory h = one_scale_up(&e);
    struct core_decision d;
    core_decision_init(&d);
    /* actual 1050 - 1000 = 50 of expected 1000: 0.05 < 0.1: ineffective, event, not blocked
     * (detection off by default). */
    ASSERT(!core__ineffective_blocked(&cfg, &h, "v", 4, 1050, &d));
    ASSERT_EQ(d.n_events, 1);
    ASSERT_STR(d.events[0].reason, "IneffectiveScaling");
    ASSERT_STR(d.events[0].key, "ineffectivev1000.0"); /* Java formats 1000.0 */
    ASSERT_CONTAINS(d.events[0].message, "disabled");
    cfg.effectiveness_detection = true;
    ASSERT(core__ineffective_blocked(&cfg, &h, "v", 4, 1050, &d));
    /* 1100: 100 / 1000 = 0.1 >= 0.1: effective. */
    ASSERT(!core__ineffective_blocked(&cfg, &h, "v", 4, 1100, &d));
    ASSERT_EQ(d.n_events, 2);
    /* A user-made change (p 5 != 4) bypasses the check. */
    ASSERT(!core__ineffective_blocked(&cfg, &h, "v", 5, 1000, &d));
    /* No history: nothing to compare. */
    ASSERT(!core__ineffective_blocked(&cfg, NULL, "v", 4, 1000, &d));
    core_decision_deinit(&d);
}

static void ineffective_after_scale_down_is_not_checked(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.effectiveness_detection = true;
    struct core_hist_entry e;
    struct core_vhistory h = one_scale_up(&e);
    e.current_parallelism = 8; /* the last decision was 8 -> 4: a scale-down */
    struct core_decision d;
    core_decision_init(&d);
    ASSERT(!core__ineffective_blocked(&cfg, &h, "v", 4, 100, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

static void memory_pressure_thresholds(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_decision d;
    core_decision_init(&d);
    struct core_global_eval g = {.gc_pressure = NAN, .heap_ratio_avg = NAN};
    ASSERT(!core__memory_pressure(&cfg, &g, &d)); /* NaN never triggers */
    g.gc_pressure = 0.99;
    ASSERT(!core__memory_pressure(&cfg, &g, &d)); /* default threshold 1.0: off */
    cfg.gc_pressure_threshold = 0.5;
    ASSERT(core__memory_pressure(&cfg, &g, &d));
    ASSERT_STR(d.events[0].key, "gcPressure");
    g.gc_pressure = 0.1;
    g.heap_ratio_avg = 0.95;
    cfg.heap_usage_threshold = 0.9;
    ASSERT(core__memory_pressure(&cfg, &g, &d));
    ASSERT_STR(d.events[1].key, "heapUsage");
    core_decision_deinit(&d);
}

static void history_retention_by_age_and_count(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg); /* max count 3, max age 24 h */
    struct core_state *st = core_state_new();
    int64_t day = 24 * 3600 * 1000LL;
    for (int i = 0; i < 5; i++) {
        struct core_hist_entry e = {
            .at = day + i * 1000, .current_parallelism = i + 1, .new_parallelism = i + 2};
        core__history_add(st, "v", &e);
    }
    struct core_hist_entry old = {.at = 0};
    core__history_add(st, "gone", &old);
    struct core_vertex_in vs[1] = {{.id = "v", .parallelism = 1, .max_parallelism = 1}};
    struct core_sample sm = {.vertices = vs, .n_vertices = 1};
    /* now = 2 days + 1 s: cut-off = day + 1000: the entry exactly at it stays, then the
     * oldest beyond 3 go: entries at day+2000 .. day+4000 remain. "gone" is not in the
     * topology any more. */
    struct core_decision d;
    struct core_topo t;
    char err[128];
    core_decision_init(&d);
    ASSERT_EQ(core__topo_build(&sm, &d, &t, err, sizeof err), 0);
    core__history_trim(st, &t, &cfg, 2 * day + 1000);
    core_decision_deinit(&d);
    struct core_vhistory *h = core__history_find(st, "v");
    ASSERT(h != NULL);
    ASSERT_EQ(h->n, 3);
    ASSERT_EQ(h->e[0].at, day + 2000);
    ASSERT(core__history_find(st, "gone") == NULL);
    core_state_free(st);
}

static void restart_time_tracking(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_state *st = core_state_new();
    struct core_hist_entry e = {.at = 1000, .current_parallelism = 2, .new_parallelism = 4};
    core__history_add(st, "v", &e);
    core__tracking_add(st, 1000);
    struct core_vertex_in vs[1] = {{.id = "v", .parallelism = 2, .max_parallelism = 8}};
    struct core_sample sm = {.running_since = 0, .vertices = vs, .n_vertices = 1};
    struct core_decision d;
    struct core_topo t;
    char err[128];
    core_decision_init(&d);
    ASSERT_EQ(core__topo_build(&sm, &d, &t, err, sizeof err), 0);
    /* Not yet restarted at the new parallelism: not measured. */
    core__tracking_update(st, &sm, &t, &cfg, 5000);
    ASSERT_EQ(st->track[0].restart_ms, -1);
    vs[0].parallelism = 4;
    sm.running_since = 1000 + 95500; /* running again 95.5 s after the decision */
    core__tracking_update(st, &sm, &t, &cfg, 200000);
    ASSERT_EQ(st->track[0].restart_ms, 95500);
    core_decision_deinit(&d);
    /* Tracking off: the configured 5 min. On: whole seconds of the max measured. */
    ASSERT_EQ(core__restart_time(st, &cfg), 300000);
    cfg.restart_tracking_enabled = true;
    ASSERT_EQ(core__restart_time(st, &cfg), 95000);
    cfg.restart_tracking_limit_ms = 60000; /* capped by the limit */
    ASSERT_EQ(core__restart_time(st, &cfg), 60000);
    core_state_free(st);
}

/* A time plus a duration saturates (core/README.md, Numbers) instead of overflowing (undefined
 * behaviour, and a "delayed until" in year -292274999), whatever duration reaches the core. */
static void time_arithmetic_saturates(void)
{
    ASSERT(core__time_add(INT64_MAX - 5, 10) == INT64_MAX);
    ASSERT(core__time_add(INT64_MIN + 5, -10) == INT64_MIN);
    ASSERT(core__time_sub(INT64_MIN + 5, 10) == INT64_MIN);
    ASSERT(core__time_sub(INT64_MAX - 5, -10) == INT64_MAX);
    ASSERT_EQ(core__time_add(1000, 2000), 3000);
    ASSERT_EQ(core__time_sub(1000, 2000), -1000);

    struct core_config cfg;
    opt_config_defaults(&cfg);
    cfg.restart_cost_w = NAN; /* the interval, not governor.scale-down.restart-cost */
    cfg.scale_down_interval_ms = INT64_MAX;
    struct core_state *st = core_state_new();
    bool out;
    int64_t at = 1764410400000; /* 2025-11-29T10:00:00Z */
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 4, true, at, &out), 10);
    ASSERT(core__delayed_until(st, &cfg, "v") == INT64_MAX);
    ASSERT_EQ(core__delayed_scale_down(st, &cfg, "v", 10, 4, true, at + 1000, &out), 10);
    core_state_free(st);

    cfg.history_max_age_ms = INT64_MAX;
    st = core_state_new();
    struct core_sample sm = {.at = -62167219200000}; /* 0000-01-01 */
    struct core_topo t = {0};
    core__history_trim(st, &t, &cfg, sm.at);
    core_state_free(st);
}

TEST_MAIN(TEST_ENTRY(delayed_proposal_never_above_current),
          TEST_ENTRY(delayed_scale_down_takes_max_in_window), TEST_ENTRY(time_arithmetic_saturates),
          TEST_ENTRY(delayed_scale_down_evicts_old_maximum),
          TEST_ENTRY(delayed_scale_down_disabled_and_cleared),
          TEST_ENTRY(ineffective_scale_up_blocked_only_when_enabled),
          TEST_ENTRY(ineffective_after_scale_down_is_not_checked),
          TEST_ENTRY(memory_pressure_thresholds), TEST_ENTRY(history_retention_by_age_and_count),
          TEST_ENTRY(restart_time_tracking))
