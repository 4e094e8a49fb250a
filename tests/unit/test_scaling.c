/*
 * Unit tests for core/scaling.c: the scale factor, its clamps, the parallelism limits,
 * governor's partition cap of sources, alignment end to end, the expected rate (core/README.md,
 * Scaling) and the observed scalability coefficient. Expected figures are worked out by hand from
 * the spec in the comments.
 */
#include "test.h"

#include "core/core_int.h"
#include "options/options.h"

/*
 * Two vertices: "src" (index 0, a source) and "op" (index 1, one input from src with the
 * given ship strategy). The config has utilization.target 1 and the cycle restart time 0, so
 * with catch-up rate 0 the capacity (core/README.md, Evaluation) is Math.round(TDR): set_rates()
 * picks the target capacity directly.
 */
struct fx {
    struct core_config cfg;
    struct core_vertex_in v[2];
    struct core_input in[1];
    struct core_sample sm;
    int order[2], in_start[3], in_src[1], n_out[2];
    enum core_ship ship[1];
    bool is_source[2], hash_input[2];
    struct core_topo t;
    struct core_evaluated ev[2];
    struct core_vhistory hist;
    struct core_hist_entry entries[8];
    int64_t restart_ms;
    struct core_hooks hooks;
    struct core_decision d;
    struct core_plugin_err pe;
    struct core_scale_result r;
};

static void fx_init(struct fx *f, enum core_ship ship)
{
    memset(f, 0, sizeof *f);
    opt_config_defaults(&f->cfg);
    opt_config_set_profile(&f->cfg, CORE_PROFILE_FLINK); /* the reference algorithm */
    f->cfg.util_target = 1.0;
    f->restart_ms = 0;
    f->v[0] = (struct core_vertex_in){.id = "src", .parallelism = 4, .max_parallelism = 128};
    f->in[0] = (struct core_input){.from = "src", .ship = ship};
    f->v[1] = (struct core_vertex_in){
        .id = "op", .parallelism = 4, .max_parallelism = 128, .inputs = f->in, .n_inputs = 1};
    f->sm.vertices = f->v;
    f->sm.n_vertices = 2;
    f->order[0] = 0;
    f->order[1] = 1;
    f->in_start[0] = 0;
    f->in_start[1] = 0;
    f->in_start[2] = 1;
    f->in_src[0] = 0;
    f->ship[0] = ship;
    f->n_out[0] = 1;
    f->is_source[0] = true;
    f->hash_input[1] = ship == CORE_SHIP_HASH;
    f->t = (struct core_topo){.n = 2,
                              .order = f->order,
                              .in_start = f->in_start,
                              .in_src = f->in_src,
                              .in_ship = f->ship,
                              .n_outputs = f->n_out,
                              .is_source = f->is_source,
                              .hash_input = f->hash_input};
    for (int i = 0; i < 2; i++) {
        struct core_evaluated *e = &f->ev[i];
        e->load = e->lag = NAN;
        e->scale_up_rate_threshold = e->scale_down_rate_threshold = NAN;
        e->expected_processing_rate = NAN;
        e->true_processing_rate = e->target_data_rate = NAN;
        e->catch_up_data_rate = 0.0;
    }
    f->hist.id = "op";
    f->hist.e = f->entries;
    core_decision_init(&f->d);
}

/* Vertex i's true processing rate and its target capacity (see struct fx). */
static void set_rates(struct fx *f, int i, double tpr, double target)
{
    f->ev[i].true_processing_rate = tpr;
    f->ev[i].target_data_rate = target;
}

static void hist_add(struct core_vhistory *h, int p, double rate)
{
    h->e[h->n].current_parallelism = p;
    h->e[h->n].true_processing_rate = rate;
    h->n++;
}

static void run(struct fx *f, int i)
{
    core__scale_target(&f->cfg, &f->sm, &f->t, i, &f->ev[i], &f->hist, f->restart_ms, &f->hooks,
                       &f->d, &f->pe, &f->r);
}

/* ------------------------------------------------------------- scale factor -- */

static void scale_up_plain(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* factor = 300 / 100 = 3; ceil(3 x 4) = 12; no HASH input: no alignment. */
    set_rates(&f, 1, 100, 300);
    run(&f, 1);
    ASSERT(f.r.computed);
    ASSERT_DEQ(f.r.factor, 3.0);
    ASSERT_EQ(f.r.raw, 12);
    ASSERT_EQ(f.r.target, 12);
    ASSERT_EQ(f.r.constraints, 0);
    /* Step 10: 100 / 4 x 12 = 300. */
    ASSERT_DEQ(f.r.expected_rate, 300.0);
    ASSERT_EQ(f.d.n_events, 0);
    core_decision_deinit(&f.d);
}

static void target_capacity_uses_target_utilization_and_restart(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* The capacity with utilization.target 0.7, restart 300 s, catch-up 1800 s (default):
     * catch-up 43 + restart 600 x 300 / 1800 = 100 + 600 / 0.7 = 857.142857... ->
     * round(1000.142857) = 1000; factor 1000 / 250 = 4; 4 x 4 = 16. */
    f.cfg.util_target = 0.7;
    f.restart_ms = 300000;
    f.ev[1].catch_up_data_rate = 43;
    set_rates(&f, 1, 250, 600);
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 4.0);
    ASSERT_EQ(f.r.target, 16);
    /* 250 / 4 x 16 = 1000. */
    ASSERT_DEQ(f.r.expected_rate, 1000.0);
    core_decision_deinit(&f.d);
}

static void clamp_scale_down_factor(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.v[1].parallelism = 10;
    /* factor 100 / 1000 = 0.1 < 1 - 0.6 = 0.4 -> 0.4; 0.4 x 10 = 4.0 exactly, ceil 4. */
    set_rates(&f, 1, 1000, 100);
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 1.0 - 0.6);
    ASSERT_EQ(f.r.raw, 4);
    ASSERT_EQ(f.r.target, 4);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_FACTOR);
    /* 1000 / 10 x 4 = 400. */
    ASSERT_DEQ(f.r.expected_rate, 400.0);
    core_decision_deinit(&f.d);
}

/* governor.scale-down.in-one-step: the same scale-down goes to ceil(0.1 x 10) = 1 in one
 * restart, not to 4 (then 2, then 1) under scale-down.max-factor 0.6. */
static void scale_down_in_one_step(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.cfg.scale_down_one_step = true;
    f.v[1].parallelism = 10;
    set_rates(&f, 1, 1000, 100);
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 0.1);
    ASSERT_EQ(f.r.raw, 1);
    ASSERT_EQ(f.r.target, 1);
    ASSERT_EQ(f.r.constraints, 0);
    core_decision_deinit(&f.d);
}

static void clamp_scale_up_factor(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.cfg.scale_up_max_factor = 1.0;
    /* factor 1000 / 100 = 10 > 1 + 1 = 2 -> 2; 2 x 4 = 8. */
    set_rates(&f, 1, 100, 1000);
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 2.0);
    ASSERT_EQ(f.r.raw, 8);
    ASSERT_EQ(f.r.target, 8);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_FACTOR);
    core_decision_deinit(&f.d);
}

static void default_scale_up_factor_then_key_groups(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* factor 1e6 / 1 > 1 + 100000 -> 100001; raw = 100001 x 4 = 400004; ub = min(128 key
     * groups, upper max(4, 200) = 200) = 128. */
    set_rates(&f, 1, 1, 1e6);
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 100001.0);
    ASSERT_EQ(f.r.raw, 400004);
    ASSERT_EQ(f.r.target, 128);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_FACTOR | CORE_C_CLAMPED_MAX_PARALLELISM);
    core_decision_deinit(&f.d);
}

/* ------------------------------------------------------------------ limits -- */

static void min_parallelism_raises(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.cfg.vertex_min_parallelism = 5;
    f.v[1].parallelism = 10;
    /* factor 0.1 -> 0.4; raw 4; lower = min(10, 5) = 5 -> 5. */
    set_rates(&f, 1, 1000, 100);
    run(&f, 1);
    ASSERT_EQ(f.r.raw, 4);
    ASSERT_EQ(f.r.target, 5);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_FACTOR | CORE_C_CLAMPED_MIN_PARALLELISM);
    core_decision_deinit(&f.d);
}

static void max_parallelism_lowers(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.cfg.vertex_max_parallelism = 20;
    f.v[1].parallelism = 10;
    /* factor 3; raw 30; ub = min(128, max(10, 20)) = 20. */
    set_rates(&f, 1, 100, 300);
    run(&f, 1);
    ASSERT_EQ(f.r.raw, 30);
    ASSERT_EQ(f.r.target, 20);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_PARALLELISM);

    /* The key groups bound too: max_parallelism 16 -> ub = min(16, 20) = 16. */
    f.v[1].max_parallelism = 16;
    run(&f, 1);
    ASSERT_EQ(f.r.target, 16);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_PARALLELISM);
    core_decision_deinit(&f.d);
}

static void current_outside_configured_range_is_kept(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* Above the max: vertex.max-parallelism 20, p = 30; factor 1.5 -> raw 45; upper =
     * max(30, 20) = 30 -> P' = 30 = p: no change, but the vertex is not forced down to 20. */
    f.cfg.vertex_max_parallelism = 20;
    f.v[1].parallelism = 30;
    set_rates(&f, 1, 100, 150);
    run(&f, 1);
    ASSERT(f.r.computed);
    ASSERT_EQ(f.r.raw, 45);
    ASSERT_EQ(f.r.target, 30);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_PARALLELISM);
    ASSERT(isnan(f.r.expected_rate));

    /* Below the min: vertex.min-parallelism 10, p = 4; factor 0.5 -> raw 2; lower =
     * min(4, 10) = 4 -> P' = 4 = p: no change, not forced up to 10. */
    core_decision_deinit(&f.d);
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.cfg.vertex_min_parallelism = 10;
    set_rates(&f, 1, 100, 50);
    run(&f, 1);
    ASSERT(f.r.computed);
    ASSERT_EQ(f.r.raw, 2);
    ASSERT_EQ(f.r.target, 4);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MIN_PARALLELISM);
    ASSERT(isnan(f.r.expected_rate));
    core_decision_deinit(&f.d);
}

/* -------------------------------------------------------------- edge cases -- */

static void infinite_rate_goes_to_lower(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.v[1].parallelism = 10;
    /* A scaling edge case (core/README.md, Scaling): tpr = +inf -> factor 100 / inf = 0. With
     * scale-down.max-factor 1, minF = 0 and 0 is not < 0: ceil(0 x 10) = 0 -> raised to lower =
     * min(10, 1) = 1. */
    f.cfg.scale_down_max_factor = 1.0;
    set_rates(&f, 1, INFINITY, 100);
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 0.0);
    ASSERT_EQ(f.r.raw, 0);
    ASSERT_EQ(f.r.target, 1);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MIN_PARALLELISM);
    /* inf / 10 x 1 = inf. */
    ASSERT_DEQ(f.r.expected_rate, INFINITY);

    /* With the default 0.6: factor 0 -> minF 0.4 -> ceil(4.0) = 4. */
    f.cfg.scale_down_max_factor = 0.6;
    run(&f, 1);
    ASSERT_EQ(f.r.target, 4);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MAX_FACTOR);
    core_decision_deinit(&f.d);
}

static void nan_rate_or_target_not_computed(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_HASH);
    set_rates(&f, 1, NAN, 300);
    run(&f, 1);
    ASSERT(!f.r.computed);
    ASSERT_EQ(f.r.target, 4);
    ASSERT_EQ(f.r.raw, 4);
    ASSERT_EQ(f.r.constraints, 0);
    ASSERT(isnan(f.r.expected_rate));

    /* NaN target data rate -> capacity NaN -> no change. */
    set_rates(&f, 1, 100, NAN);
    run(&f, 1);
    ASSERT(!f.r.computed);
    ASSERT_EQ(f.r.target, 4);
    ASSERT(isnan(f.r.expected_rate));
    core_decision_deinit(&f.d);
}

static void zero_rate(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* tpr 0, target 100: factor +inf -> clamped to 100001 -> 400004 -> 128 key groups. */
    set_rates(&f, 1, 0, 100);
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 100001.0);
    ASSERT_EQ(f.r.target, 128);

    /* tpr 0, target 0: 0 / 0 = NaN skips the clamps, (int) NaN = 0 -> lower 1. */
    set_rates(&f, 1, 0, 0);
    run(&f, 1);
    ASSERT(f.r.computed);
    ASSERT(isnan(f.r.factor));
    ASSERT_EQ(f.r.raw, 0);
    ASSERT_EQ(f.r.target, 1);
    ASSERT_EQ(f.r.constraints, CORE_C_CLAMPED_MIN_PARALLELISM);
    /* 0 / 4 x 1 = 0. */
    ASSERT_DEQ(f.r.expected_rate, 0.0);
    core_decision_deinit(&f.d);
}

static void expected_rate_rounded_to_three_decimals(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    f.v[1].parallelism = 3;
    f.cfg.vertex_max_parallelism = 4;
    /* factor 10 -> 30 -> upper max(3, 4) = 4; expected 100 / 3 x 4 = 133.333... -> 133.333
     * (an evaluated figure, rounded as core/README.md's Evaluation says). */
    set_rates(&f, 1, 100, 1000);
    run(&f, 1);
    ASSERT_EQ(f.r.target, 4);
    ASSERT_DEQ(f.r.expected_rate, 133.333);
    core_decision_deinit(&f.d);
}

/* ------------------------------------------------------ partitions (core/README.md, Scaling) -- */

static void source_capped_at_partitions(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* The FLINK-40389 case: 15 partitions, p = 100, factor 180 / 100 = 1.8 -> ceil(180.0) =
     * 180 (1.8 x 100 rounds to 180.0 in doubles); ub = min(720, max(100, 200)) = 200 keeps
     * 180; the partition cap makes it 15. BALANCED then: N = 15, scale-down region
     * [15, min(100, min(15, 720, 200))] = [15, 15], 15 divides 15 -> 15, unchanged. */
    f.v[0].parallelism = 100;
    f.v[0].max_parallelism = 720;
    f.v[0].partitions = 15;
    set_rates(&f, 0, 100, 180);
    run(&f, 0);
    ASSERT_EQ(f.r.raw, 180);
    ASSERT_EQ(f.r.target, 15);
    ASSERT_EQ(f.r.constraints, CORE_C_CAPPED_AT_PARTITIONS);
    /* Only 15 of the 100 subtasks read a partition, before and after: 100 / 15 x 15 = 100
     * (core/README.md, Scaling: 100 / 100 x 15 = 15 promised a capacity loss that does not occur).
     */
    ASSERT_DEQ(f.r.expected_rate, 100.0);

    /* The legacy modes no longer block here (spec's known defect: they returned 100). */
    f.cfg.align_mode = CORE_ALIGN_LEGACY_EVENLY_SPREAD;
    run(&f, 0);
    ASSERT_EQ(f.r.target, 15);
    ASSERT_EQ(f.d.n_events, 0);
    core_decision_deinit(&f.d);
}

static void source_below_partitions_aligned(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* p = 2, 16 partitions, factor 3 -> 6 (below 16: no cap). BALANCED over [6, min(16, 128,
     * 200)]: 16 % 6, 16 % 7 != 0 and 16/7 = 2 = 16/6; 16 % 8 == 0 -> 8. */
    f.v[0].parallelism = 2;
    f.v[0].partitions = 16;
    set_rates(&f, 0, 100, 300);
    run(&f, 0);
    ASSERT_EQ(f.r.raw, 6);
    ASSERT_EQ(f.r.target, 8);
    ASSERT_EQ(f.r.constraints, CORE_C_ALIGNED_TO_PARTITIONS);
    /* 100 / 2 x 8 = 400. */
    ASSERT_DEQ(f.r.expected_rate, 400.0);
    core_decision_deinit(&f.d);
}

static void partitions_of_a_non_source_ignored(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* The topology collects partitions for sources only: "op" with partitions 5 and a REBALANCE
     * input is neither capped nor aligned: factor 3 -> 12. */
    f.v[1].partitions = 5;
    set_rates(&f, 1, 100, 300);
    run(&f, 1);
    ASSERT_EQ(f.r.target, 12);
    ASSERT_EQ(f.r.constraints, 0);
    core_decision_deinit(&f.d);
}

/* --------------------------------------------------------------- alignment -- */

static void hash_vertex_balanced_worked_example(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_HASH);
    /* Alignment (core/README.md): N = 128, p = 16, factor 1.5 -> P' = 24 -> BALANCED 26. */
    f.v[1].parallelism = 16;
    set_rates(&f, 1, 100, 150);
    run(&f, 1);
    ASSERT_EQ(f.r.raw, 24);
    ASSERT_EQ(f.r.target, 26);
    ASSERT_EQ(f.r.constraints, CORE_C_ALIGNED_TO_KEY_GROUPS);
    /* 100 / 16 x 26 = 162.5. */
    ASSERT_DEQ(f.r.expected_rate, 162.5);

    f.cfg.align_mode = CORE_ALIGN_EVENLY_SPREAD;
    run(&f, 1);
    ASSERT_EQ(f.r.target, 32);
    f.cfg.align_mode = CORE_ALIGN_OFF;
    run(&f, 1);
    ASSERT_EQ(f.r.target, 24);
    ASSERT_EQ(f.r.constraints, 0);
    core_decision_deinit(&f.d);
}

/* governor.alignment.busiest-share, a HASH vertex of 128 key groups. At 16 (8 groups each:
 * 16 subtasks' worth) a factor of 2.75 needs 44 subtasks' worth: the busiest may carry
 * floor(128 / 44) = 2 groups, ceil(128 / 2) = 64 subtasks (BALANCED agrees). A factor of 2.6
 * needs 41.6: 3 groups each, ceil(128 / 3) = 43. At 14 (10 or 9 groups: 12.8 subtasks'
 * worth) a factor of 2 needs 25.6: 5 groups each, 26 subtasks, where the linear raw target is
 * 28 and BALANCED rounds it up to 32 (128 / 28 = 128 / 31 = 4; 32 divides 128). */
static void busiest_share_sizing(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_HASH);
    f.cfg.align_busiest_share = true;
    f.v[1].parallelism = 16;
    set_rates(&f, 1, 1000, 2750);
    run(&f, 1);
    ASSERT_EQ(f.r.raw, 44);
    ASSERT_EQ(f.r.target, 64);
    set_rates(&f, 1, 1000, 2600);
    run(&f, 1);
    ASSERT_EQ(f.r.raw, 42);
    ASSERT_EQ(f.r.target, 43);
    ASSERT_EQ(f.r.constraints, CORE_C_ALIGNED_TO_KEY_GROUPS);
    /* 14 subtasks carry 10 or 9 groups: 12.8 subtasks' worth; x 2 = 25.6: floor(128 / 25.6) =
     * 5 per subtask: 26 subtasks, where linear rounding asks for 28 (BALANCED: 32). */
    f.v[1].parallelism = 14;
    set_rates(&f, 1, 1000, 2000);
    run(&f, 1);
    ASSERT_EQ(f.r.raw, 28);
    ASSERT_EQ(f.r.target, 26);
    f.cfg.align_busiest_share = false;
    run(&f, 1);
    ASSERT_EQ(f.r.target, 32);
    core_decision_deinit(&f.d);
}

static void scale_down_aligned_back_to_current(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_HASH);
    /* p = 32, factor 300 / 320 = 0.9375 (exact) -> 30; BALANCED region [30, 32]: 128/30 =
     * 4 = 128/31, 32 divides -> 32 = p: no change (step 9), no expected rate. */
    f.v[1].parallelism = 32;
    set_rates(&f, 1, 320, 300);
    run(&f, 1);
    ASSERT(f.r.computed);
    ASSERT_EQ(f.r.raw, 30);
    ASSERT_EQ(f.r.target, 32);
    ASSERT(isnan(f.r.expected_rate));
    ASSERT_EQ(f.r.constraints, CORE_C_ALIGNED_TO_KEY_GROUPS);
    core_decision_deinit(&f.d);
}

static void legacy_block_emits_event(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    /* Alignment's N = 35 case on a source: p = 22, factor 90 / 80 = 1.125 -> ceil(24.75) = 25;
     * lower min(22, 20) = 20, upper max(22, 30) = 30; 25 < 35 partitions: no cap. Legacy:
     * nothing in [25, 30], relaxed to 18, max(18, 20) = 20 <= 22 -> blocked at 22. */
    f.cfg.align_mode = CORE_ALIGN_LEGACY_EVENLY_SPREAD;
    f.cfg.vertex_min_parallelism = 20;
    f.cfg.vertex_max_parallelism = 30;
    f.v[0].parallelism = 22;
    f.v[0].partitions = 35;
    set_rates(&f, 0, 80, 90);
    run(&f, 0);
    ASSERT_EQ(f.r.raw, 25);
    ASSERT_EQ(f.r.target, 22);
    ASSERT(isnan(f.r.expected_rate));
    ASSERT_EQ(f.r.constraints, CORE_C_ALIGNED_TO_PARTITIONS);
    ASSERT_EQ(f.d.n_events, 1);
    ASSERT_STR(f.d.events[0].reason, "ScalingLimited");
    ASSERT_STR(f.d.events[0].key, "ScalingLimitedsrc");
    core_decision_deinit(&f.d);
}

static int failing_align(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                         char *err, size_t err_len)
{
    (void)ud;
    (void)name;
    (void)a;
    (void)out;
    snprintf(err, err_len, "align.lua:7: boom");
    return -1;
}

static int halve_align(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                       char *err, size_t err_len)
{
    (void)name;
    (void)err;
    (void)err_len;
    *(const struct core_evaluated **)ud = a->ev;
    *out = a->proposed / 2;
    return 0;
}

static void plugin_through_scale_target(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_HASH);
    f.cfg.align_mode = CORE_ALIGN_PLUGIN;
    f.cfg.align_plugin = "half";
    const struct core_evaluated *seen = NULL;
    f.hooks.ud = &seen;
    f.hooks.align = halve_align;
    /* factor 3 -> 12; the plugin halves it -> 6; expected 100 / 4 x 6 = 150. */
    set_rates(&f, 1, 100, 300);
    run(&f, 1);
    ASSERT_EQ(f.r.target, 6);
    ASSERT_EQ(f.r.constraints, CORE_C_ALIGNED_BY_PLUGIN);
    ASSERT_DEQ(f.r.expected_rate, 150.0);
    ASSERT(seen == &f.ev[1]);

    /* A failing plugin: P' 12 stands, the failure is recorded. */
    f.hooks.align = failing_align;
    run(&f, 1);
    ASSERT_EQ(f.r.target, 12);
    ASSERT_EQ(f.r.constraints, 0);
    ASSERT(f.pe.set);
    ASSERT_STR(f.pe.plugin, "half");
    ASSERT_STR(f.pe.message, "align.lua:7: boom");
    core_decision_deinit(&f.d);
}

/* ----------------------------------------------------- observed scalability -- */

static void observed_scalability_softens_factor(void)
{
    struct fx f;
    fx_init(&f, CORE_SHIP_REBALANCE);
    set_rates(&f, 1, 100, 150);
    /* History (oldest first) P/R: 2/200, 4/200, 8/200. beta = 200 / 2 = 100; sum PR =
     * 200 x 14 = 2800; sum P^2 = 4 + 16 + 64 = 84; alpha = 2800 / 8400 = 0.333 -> clamped to
     * 0.5. factor 1.5 / 0.5 = 3 -> 12. */
    hist_add(&f.hist, 2, 200);
    hist_add(&f.hist, 4, 200);
    hist_add(&f.hist, 8, 200);
    run(&f, 1);
    ASSERT_EQ(f.r.target, 6); /* disabled by default: 1.5 x 4 = 6 */
    f.cfg.observed_scalability_enabled = true;
    run(&f, 1);
    ASSERT_DEQ(f.r.factor, 3.0);
    ASSERT_EQ(f.r.target, 12);
    core_decision_deinit(&f.d);
}

static void alpha_needs_enough_observations(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_hist_entry e[4];
    struct core_vhistory h = {.id = "op", .e = e};
    ASSERT_DEQ(core__scalability_alpha(&cfg, NULL), 1.0);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 1.0);
    /* Two observations < 3 (default): 1, even though they show poor scaling. */
    hist_add(&h, 2, 200);
    hist_add(&h, 8, 200);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 1.0);
    /* min-observations 2: beta 100; sum PR = 400 + 1600 = 2000; sum P^2 = 68; alpha =
     * 2000 / 6800 = 0.294 -> 0.5. */
    cfg.observed_scalability_min_observations = 2;
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.5);
}

static void alpha_baseline_at_parallelism_one(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_hist_entry e[4];
    struct core_vhistory h = {.id = "op", .e = e};
    /* Oldest first: 1/80, 1/100, 2/180. Newest to oldest: 2 (min so far), then P = 1 with
     * R = 100 returns at once: beta = 100 (the older 80 is never looked at). sum PR = 80 +
     * 100 + 360 = 540; sum P^2 = 6; alpha = 540 / 600 = 0.9. With beta 80 it would be
     * 540 / 480 > 1 -> 1. */
    hist_add(&h, 1, 80);
    hist_add(&h, 1, 100);
    hist_add(&h, 2, 180);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.9);
}

static void alpha_baseline_newest_on_ties(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_hist_entry e[4];
    struct core_vhistory h = {.id = "op", .e = e};
    /* Oldest first: 2/100, 2/120, 4/200. Smallest P = 2, newest on ties: R = 120, beta = 60.
     * sum PR = 200 + 240 + 800 = 1240; sum P^2 = 24; alpha = 1240 / 1440 = 0.86111 -> up
     * to 0.87. (The older tie would give beta 50: 1240 / 1200 > 1 -> 1.) */
    hist_add(&h, 2, 100);
    hist_add(&h, 2, 120);
    hist_add(&h, 4, 200);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.87);
}

static void alpha_nan_rates(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_hist_entry e[4];
    struct core_vhistory h = {.id = "op", .e = e};
    /* A NaN rate anywhere: 1. */
    hist_add(&h, 2, 100);
    hist_add(&h, 4, NAN);
    hist_add(&h, 8, 300);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 1.0);
    /* NaN baseline (the smallest P has a NaN rate): 1. */
    h.n = 0;
    hist_add(&h, 4, 200);
    hist_add(&h, 8, 400);
    hist_add(&h, 2, NAN);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 1.0);
    /* All rates 0: beta 0, 0 / 0 -> NaN fit -> 1 (governor's choice; Java would throw). */
    h.n = 0;
    hist_add(&h, 2, 0);
    hist_add(&h, 4, 0);
    hist_add(&h, 8, 0);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 1.0);
}

static void alpha_clamped(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_hist_entry e[4];
    struct core_vhistory h = {.id = "op", .e = e};
    /* Super-linear: 2/100, 4/400, 8/800: beta 50; sum PR = 200 + 1600 + 6400 = 8200; sum P^2
     * = 84; alpha = 8200 / 4200 = 1.95 -> 1. */
    hist_add(&h, 2, 100);
    hist_add(&h, 4, 400);
    hist_add(&h, 8, 800);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 1.0);
    /* Flat: 2/200, 4/200, 8/200 -> 0.333 -> coefficient-min 0.5; with 0.55 -> 0.55 exactly
     * (0.55 x 100 is 55.00000000000001 in doubles; the decimal ceiling must not make 0.56). */
    h.n = 0;
    hist_add(&h, 2, 200);
    hist_add(&h, 4, 200);
    hist_add(&h, 8, 200);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.5);
    cfg.observed_scalability_coefficient_min = 0.55;
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.55);
}

static void alpha_ceiling_on_shortest_decimal(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_hist_entry e[4];
    struct core_vhistory h = {.id = "op", .e = e};
    /* Oldest first: 1/100, 2/160, 2/163.5: beta 100 (P = 1); sum PR = 100 + 320 + 327 = 747;
     * sum P^2 = 9; alpha = 747 / 900 = the double nearest 0.83 (0.82999999999999996...),
     * whose shortest decimal is "0.83": stays 0.83, not 0.84. */
    hist_add(&h, 1, 100);
    hist_add(&h, 2, 160);
    hist_add(&h, 2, 163.5);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.83);
    /* 1/100, 2/98, 2/99.5: sum PR = 100 + 196 + 199 = 495; 495 / 900 = the double nearest
     * 0.55 -> 0.55. */
    h.n = 0;
    hist_add(&h, 1, 100);
    hist_add(&h, 2, 98);
    hist_add(&h, 2, 99.5);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.55);
    /* 1/100, 2/160, 2/163.50009: sum PR = 747.00018 -> alpha 0.8300002 -> up to 0.84. */
    h.n = 0;
    hist_add(&h, 1, 100);
    hist_add(&h, 2, 160);
    hist_add(&h, 2, 163.50009);
    ASSERT_DEQ(core__scalability_alpha(&cfg, &h), 0.84);
}

TEST_MAIN(TEST_ENTRY(scale_up_plain),
          TEST_ENTRY(target_capacity_uses_target_utilization_and_restart),
          TEST_ENTRY(clamp_scale_down_factor), TEST_ENTRY(scale_down_in_one_step),
          TEST_ENTRY(clamp_scale_up_factor), TEST_ENTRY(default_scale_up_factor_then_key_groups),
          TEST_ENTRY(min_parallelism_raises), TEST_ENTRY(max_parallelism_lowers),
          TEST_ENTRY(current_outside_configured_range_is_kept),
          TEST_ENTRY(infinite_rate_goes_to_lower), TEST_ENTRY(nan_rate_or_target_not_computed),
          TEST_ENTRY(zero_rate), TEST_ENTRY(expected_rate_rounded_to_three_decimals),
          TEST_ENTRY(source_capped_at_partitions), TEST_ENTRY(source_below_partitions_aligned),
          TEST_ENTRY(partitions_of_a_non_source_ignored),
          TEST_ENTRY(hash_vertex_balanced_worked_example), TEST_ENTRY(busiest_share_sizing),
          TEST_ENTRY(scale_down_aligned_back_to_current), TEST_ENTRY(legacy_block_emits_event),
          TEST_ENTRY(plugin_through_scale_target), TEST_ENTRY(observed_scalability_softens_factor),
          TEST_ENTRY(alpha_needs_enough_observations),
          TEST_ENTRY(alpha_baseline_at_parallelism_one), TEST_ENTRY(alpha_baseline_newest_on_ties),
          TEST_ENTRY(alpha_nan_rates), TEST_ENTRY(alpha_clamped),
          TEST_ENTRY(alpha_ceiling_on_shortest_decimal))
