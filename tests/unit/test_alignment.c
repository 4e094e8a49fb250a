/*
 * Unit tests for core/alignment.c: firstAligned, the built-in modes, the legacy blocking
 * modes with ScalingLimited, applicability and the plugin mode (spec 3.2, 3.3). Expected
 * figures are worked out by hand from spec 3.2 in the comments.
 */
#include "test.h"

#include "core/core_int.h"

static const enum core_ship hash_in[] = {CORE_SHIP_HASH};
static const enum core_ship rebalance_in[] = {CORE_SHIP_REBALANCE, CORE_SHIP_FORWARD};

/* A HASH-input vertex "op" with key groups max_p, no partitions, lower 1, upper 200. */
static struct core_align_ctx hash_ctx(int max_p, int p, int proposed)
{
    struct core_align_ctx a = {
        .vertex = "op",
        .current = p,
        .proposed = proposed,
        .lower = 1,
        .upper = 200,
        .max_parallelism = max_p,
        .partitions = 0,
        .input_ships = hash_in,
        .n_inputs = 1,
        .ev = NULL,
    };
    return a;
}

/* A source "src" with partitions and no inputs. */
static struct core_align_ctx source_ctx(int partitions, int max_p, int p, int proposed)
{
    struct core_align_ctx a = {
        .vertex = "src",
        .current = p,
        .proposed = proposed,
        .lower = 1,
        .upper = 200,
        .max_parallelism = max_p,
        .partitions = partitions,
        .input_ships = NULL,
        .n_inputs = 0,
        .ev = NULL,
    };
    return a;
}

struct run {
    struct core_config cfg;
    struct core_decision d;
    struct core_plugin_err pe;
    unsigned c;
};

static void run_init(struct run *r, enum core_align_mode mode)
{
    core_config_defaults(&r->cfg);
    r->cfg.align_mode = mode;
    core_decision_init(&r->d);
    memset(&r->pe, 0, sizeof r->pe);
    r->c = 0;
}

static int run_align(struct run *r, const struct core_align_ctx *a, const struct core_hooks *h)
{
    return core__align(&r->cfg, a, h, &r->d, &r->c, &r->pe);
}

/* ------------------------------------------------------------ firstAligned -- */

static void first_aligned_divisor_or_reducer(void)
{
    /* N=128, P'=24 over [24, 128]: 128/24 = 5; 25 -> 5; 26 -> 4 < 5 reduces. */
    ASSERT_EQ(core__first_aligned(128, 24, 24, 128, true), 26);
    /* Divisors of 128 from 24 up: 32. */
    ASSERT_EQ(core__first_aligned(128, 24, 24, 128, false), 32);
    /* N=720 from 260: divisors 240, 360 -> first >= 260 is 360. */
    ASSERT_EQ(core__first_aligned(720, 260, 260, 720, false), 360);
    /* N=35 over [25, 30]: divisors 1,5,7,35 none; 35/q = 1 for all, never < 35/25 = 1. */
    ASSERT_EQ(core__first_aligned(35, 25, 25, 30, true), 0);
    ASSERT_EQ(core__first_aligned(35, 25, 25, 30, false), 0);
    /* Empty region (from > to): 0. */
    ASSERT_EQ(core__first_aligned(128, 24, 24, 20, true), 0);
    /* A single-point region that divides: N=15 over [15, 15] -> 15. */
    ASSERT_EQ(core__first_aligned(15, 15, 15, 15, false), 15);
}

/* ------------------------------------------------------------- built-ins -- */

static void balanced_worked_example(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_BALANCED);
    struct core_align_ctx a = hash_ctx(128, 16, 24);
    /* Spec 3.2: 128/24 = 5, 128/26 = 4 < 5 -> 26. */
    ASSERT_EQ(run_align(&r, &a, NULL), 26);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_TO_KEY_GROUPS);
    ASSERT_EQ(r.d.n_events, 0);
    core_decision_deinit(&r.d);
}

static void evenly_spread_worked_examples(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_EVENLY_SPREAD);
    struct core_align_ctx a = hash_ctx(128, 16, 24);
    /* First divisor of 128 from 24: 32. */
    ASSERT_EQ(run_align(&r, &a, NULL), 32);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_TO_KEY_GROUPS);

    /* N=720, p=200, P'=260, upper 1000: alignCap = min(720, 720, 1000) = 720; first divisor
     * >= 260 is 360. */
    r.c = 0;
    a = hash_ctx(720, 200, 260);
    a.upper = 1000;
    ASSERT_EQ(run_align(&r, &a, NULL), 360);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_TO_KEY_GROUPS);
    ASSERT_EQ(r.d.n_events, 0);
    core_decision_deinit(&r.d);
}

static void off_keeps_target(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_OFF);
    struct core_align_ctx a = hash_ctx(128, 16, 24);
    ASSERT_EQ(run_align(&r, &a, NULL), 24);
    ASSERT_EQ(r.c, 0);
    core_decision_deinit(&r.d);
}

static void upper_limits_the_region(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_EVENLY_SPREAD);
    /* N=720, P'=260, but upper 300: region [260, 300] holds no divisor of 720 (240, 360) ->
     * EVENLY keeps 260. */
    struct core_align_ctx a = hash_ctx(720, 200, 260);
    a.upper = 300;
    ASSERT_EQ(run_align(&r, &a, NULL), 260);
    ASSERT_EQ(r.c, 0);
    core_decision_deinit(&r.d);
}

static void partitions_no_aligned_value_builtins_keep_target(void)
{
    /* Spec 3.2: N=35 partitions, p=22, P'=25, upper 30 (alignCap 30), lower 20: no divisor or
     * reducer in [25, 30] -> built-ins return 25, no event. */
    enum core_align_mode modes[] = {CORE_ALIGN_BALANCED, CORE_ALIGN_EVENLY_SPREAD};
    for (int m = 0; m < 2; m++) {
        struct run r;
        run_init(&r, modes[m]);
        struct core_align_ctx a = source_ctx(35, 128, 22, 25);
        a.upper = 30;
        a.lower = 20;
        ASSERT_EQ(run_align(&r, &a, NULL), 25);
        ASSERT_EQ(r.c, 0);
        ASSERT_EQ(r.d.n_events, 0);
        core_decision_deinit(&r.d);
    }
}

static void partitions_twelve_max_parallelism_eight(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_EVENLY_SPREAD);
    /* N=12 partitions, maxParallelism 8, p=5, P'=7: alignCap = min(12, 8, 200) = 8; 12 % 7,
     * 12 % 8 != 0 -> 7. */
    struct core_align_ctx a = source_ctx(12, 8, 5, 7);
    ASSERT_EQ(run_align(&r, &a, NULL), 7);
    ASSERT_EQ(r.c, 0);
    /* BALANCED: 12/7 = 1, 12/8 = 1, never < 1 -> 7 as well. */
    r.cfg.align_mode = CORE_ALIGN_BALANCED;
    ASSERT_EQ(run_align(&r, &a, NULL), 7);
    core_decision_deinit(&r.d);
}

static void partitions_aligned_sets_partitions_constraint(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_EVENLY_SPREAD);
    /* N=12 partitions, p=2, P'=5: divisors of 12 from 5: 6. */
    struct core_align_ctx a = source_ctx(12, 128, 2, 5);
    ASSERT_EQ(run_align(&r, &a, NULL), 6);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_TO_PARTITIONS);
    core_decision_deinit(&r.d);
}

static void scale_down_region_ends_at_current(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_BALANCED);
    /* N=128, p=32, P'=30: region [30, min(32, 128)] = [30, 32]. BALANCED: 128/30 = 4,
     * 128/31 = 4, 32 divides -> 32 = p (the scale-down cancels itself, spec 9.3). */
    struct core_align_ctx a = hash_ctx(128, 32, 30);
    ASSERT_EQ(run_align(&r, &a, NULL), 32);
    r.cfg.align_mode = CORE_ALIGN_EVENLY_SPREAD;
    ASSERT_EQ(run_align(&r, &a, NULL), 32);
    /* Never crosses into a scale-up: p=20, P'=17, N=128: [17, 20] holds no divisor of 128
     * (16, 32) -> EVENLY keeps 17, although 32 divides. */
    a = hash_ctx(128, 20, 17);
    ASSERT_EQ(run_align(&r, &a, NULL), 17);
    /* BALANCED on the same: 128/17 = 7; 18 -> 7; 19 -> 6 < 7 -> 19. */
    r.cfg.align_mode = CORE_ALIGN_BALANCED;
    ASSERT_EQ(run_align(&r, &a, NULL), 19);
    core_decision_deinit(&r.d);
}

static void not_applicable_without_hash_or_partitions(void)
{
    enum core_align_mode modes[] = {CORE_ALIGN_BALANCED, CORE_ALIGN_EVENLY_SPREAD,
                                    CORE_ALIGN_LEGACY_EVENLY_SPREAD,
                                    CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION};
    for (int m = 0; m < 4; m++) {
        struct run r;
        run_init(&r, modes[m]);
        /* REBALANCE and FORWARD inputs, no partitions: the 128/24 case stays 24, no event. */
        struct core_align_ctx a = hash_ctx(128, 16, 24);
        a.input_ships = rebalance_in;
        a.n_inputs = 2;
        ASSERT_EQ(run_align(&r, &a, NULL), 24);
        ASSERT_EQ(r.c, 0);
        ASSERT_EQ(r.d.n_events, 0);
        /* A source without known partitions: no inputs at all -> not applicable either. */
        a = source_ctx(0, 128, 16, 24);
        ASSERT_EQ(run_align(&r, &a, NULL), 24);
        ASSERT_EQ(r.d.n_events, 0);
        core_decision_deinit(&r.d);
    }
}

/* ---------------------------------------------------------------- legacy -- */

static void legacy_aligned_value_without_event(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_LEGACY_EVENLY_SPREAD);
    /* firstAligned(false) for 128/24 -> 32, returned directly, no event. */
    struct core_align_ctx a = hash_ctx(128, 16, 24);
    ASSERT_EQ(run_align(&r, &a, NULL), 32);
    ASSERT_EQ(r.d.n_events, 0);
    /* MAXIMIZE_UTILISATION accepts reducers: 26. */
    r.cfg.align_mode = CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION;
    ASSERT_EQ(run_align(&r, &a, NULL), 26);
    ASSERT_EQ(r.d.n_events, 0);
    core_decision_deinit(&r.d);
}

static void legacy_blocks_direction_inversion(void)
{
    enum core_align_mode modes[] = {CORE_ALIGN_LEGACY_EVENLY_SPREAD,
                                    CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION};
    for (int m = 0; m < 2; m++) {
        struct run r;
        run_init(&r, modes[m]);
        /* Spec 3.2: N=35, p=22, P'=25, alignCap 30, lower 20. Nothing in [25, 30]; fallback:
         * q from 25 down, 35/q > 35/25 = 1 first at q=17 (35/17 = 2); 35 % 17 != 0 -> 18;
         * max(18, 20) = 20 <= p on a scale-up -> blocked: returns p = 22, ScalingLimited. */
        struct core_align_ctx a = source_ctx(35, 128, 22, 25);
        a.upper = 30;
        a.lower = 20;
        ASSERT_EQ(run_align(&r, &a, NULL), 22);
        ASSERT_EQ(r.c, CORE_C_ALIGNED_TO_PARTITIONS);
        ASSERT_EQ(r.d.n_events, 1);
        struct core_event *e = &r.d.events[0];
        ASSERT_STR(e->type, "Warning");
        ASSERT_STR(e->reason, "ScalingLimited");
        ASSERT_STR(e->key, "ScalingLimitedsrc");
        /* Fields: vertex, expected 25, actual 22, N 35, min(maxParallelism 128, upper 30) =
         * 30, lower 20. */
        ASSERT_CONTAINS(e->message, "src");
        ASSERT_CONTAINS(e->message, "expected parallelism 25");
        ASSERT_CONTAINS(e->message, "actual parallelism 22");
        ASSERT_CONTAINS(e->message, "partitions 35");
        ASSERT_CONTAINS(e->message, "upper bound 30");
        ASSERT_CONTAINS(e->message, "lower limit 20");
        core_decision_deinit(&r.d);
    }
}

static void legacy_relaxes_downward(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_LEGACY_EVENLY_SPREAD);
    /* N=12 partitions, maxParallelism 8, p=5, P'=7: nothing in [7, 8]; fallback: 12/7 = 1,
     * q=6 gives 12/6 = 2 > 1, 12 % 6 == 0 -> 6; max(6, lower 1) = 6 > p on a scale-up ->
     * 6, with ScalingLimited since 6 != 7. */
    struct core_align_ctx a = source_ctx(12, 8, 5, 7);
    ASSERT_EQ(run_align(&r, &a, NULL), 6);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_TO_PARTITIONS);
    ASSERT_EQ(r.d.n_events, 1);
    ASSERT_CONTAINS(r.d.events[0].message, "expected parallelism 7");
    ASSERT_CONTAINS(r.d.events[0].message, "actual parallelism 6");
    /* min(maxParallelism 8, upper 200) = 8. */
    ASSERT_CONTAINS(r.d.events[0].message, "upper bound 8");
    core_decision_deinit(&r.d);
}

static void legacy_scale_down_fallback(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION);
    /* N=35 partitions, p=30, P'=26: region [26, min(30, 30)] has no divisor, 35/q = 1 never
     * < 1. Fallback: 35/q > 1 first at q=17 -> 35 % 17 != 0 -> 18; max(18, 1) = 18 < 30 on
     * a scale-down -> 18, event (18 != 26). */
    struct core_align_ctx a = source_ctx(35, 128, 30, 26);
    a.upper = 30;
    ASSERT_EQ(run_align(&r, &a, NULL), 18);
    ASSERT_EQ(r.d.n_events, 1);
    core_decision_deinit(&r.d);
}

/* ---------------------------------------------------------------- plugin -- */

struct hook_log {
    int calls;
    const char *name;
    int current, proposed, lower, upper, max_p, partitions, n_inputs;
    enum core_ship first_ship;
};

/* Snaps down to the nearest divisor of N (the spec's example plugin). */
static int snap_down(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                     char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    struct hook_log *log = ud;
    log->calls++;
    log->name = name;
    log->current = a->current;
    log->proposed = a->proposed;
    log->lower = a->lower;
    log->upper = a->upper;
    log->max_p = a->max_parallelism;
    log->partitions = a->partitions;
    log->n_inputs = a->n_inputs;
    log->first_ship = a->n_inputs > 0 ? a->input_ships[0] : CORE_SHIP_UNKNOWN;
    int n = a->partitions > 0 ? a->partitions : a->max_parallelism;
    int q = a->proposed;
    while (q > 1 && n % q != 0)
        q--;
    *out = q;
    return 0;
}

static int failing(void *ud, const char *name, const struct core_align_ctx *a, int *out, char *err,
                   size_t err_len)
{
    (void)ud;
    (void)name;
    (void)a;
    *out = 999;
    snprintf(err, err_len, "snap.lua:3: attempt to index a nil value");
    return -1;
}

static int returns_huge(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                        char *err, size_t err_len)
{
    (void)ud;
    (void)name;
    (void)a;
    (void)err;
    (void)err_len;
    *out = 100000;
    return 0;
}

static int returns_zero(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                        char *err, size_t err_len)
{
    (void)ud;
    (void)name;
    (void)a;
    (void)err;
    (void)err_len;
    *out = 0;
    return 0;
}

static void plugin_changes_value(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_PLUGIN);
    r.cfg.align_plugin = "snap";
    struct hook_log log = {0};
    struct core_hooks h = {.ud = &log, .align = snap_down};
    /* 128 key groups, P'=24: the nearest divisor at or below 24 is 16. */
    struct core_align_ctx a = hash_ctx(128, 10, 24);
    ASSERT_EQ(run_align(&r, &a, &h), 16);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_BY_PLUGIN);
    ASSERT(!r.pe.set);
    ASSERT_EQ(log.calls, 1);
    ASSERT_STR(log.name, "snap");
    ASSERT_EQ(log.current, 10);
    ASSERT_EQ(log.proposed, 24);
    ASSERT_EQ(log.lower, 1);
    ASSERT_EQ(log.upper, 200);
    ASSERT_EQ(log.max_p, 128);
    ASSERT_EQ(log.partitions, 0);
    ASSERT_EQ(log.n_inputs, 1);
    ASSERT_EQ(log.first_ship, CORE_SHIP_HASH);
    ASSERT_EQ(r.d.n_events, 0);
    core_decision_deinit(&r.d);
}

static void plugin_called_even_when_builtins_would_not_apply(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_PLUGIN);
    r.cfg.align_plugin = "snap";
    struct hook_log log = {0};
    struct core_hooks h = {.ud = &log, .align = snap_down};
    /* REBALANCE input, no partitions: the plugin still decides; 24 -> 16 for N=128. */
    struct core_align_ctx a = hash_ctx(128, 10, 24);
    a.input_ships = rebalance_in;
    a.n_inputs = 2;
    ASSERT_EQ(run_align(&r, &a, &h), 16);
    ASSERT_EQ(log.calls, 1);
    ASSERT_EQ(log.first_ship, CORE_SHIP_REBALANCE);
    core_decision_deinit(&r.d);
}

static void plugin_same_value_no_constraint(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_PLUGIN);
    r.cfg.align_plugin = "snap";
    struct hook_log log = {0};
    struct core_hooks h = {.ud = &log, .align = snap_down};
    /* 32 divides 128: the plugin returns P' itself -> no ALIGNED_BY_PLUGIN. */
    struct core_align_ctx a = hash_ctx(128, 10, 32);
    ASSERT_EQ(run_align(&r, &a, &h), 32);
    ASSERT_EQ(r.c, 0);
    core_decision_deinit(&r.d);
}

static void plugin_failure_keeps_target(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_PLUGIN);
    r.cfg.align_plugin = "snap";
    struct core_hooks h = {.align = failing};
    struct core_align_ctx a = hash_ctx(128, 16, 24);
    /* The native result stands: the unaligned P' 24 (not BALANCED's 26, not the 999). */
    ASSERT_EQ(run_align(&r, &a, &h), 24);
    ASSERT_EQ(r.c, 0);
    ASSERT(r.pe.set);
    ASSERT_STR(r.pe.plugin, "snap");
    ASSERT_STR(r.pe.message, "snap.lua:3: attempt to index a nil value");
    core_decision_deinit(&r.d);
}

static void plugin_result_clamped_to_limits(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_PLUGIN);
    r.cfg.align_plugin = "big";
    struct core_hooks h = {.align = returns_huge};
    /* 100000 -> min(maxParallelism 128, upper 200) = 128. */
    struct core_align_ctx a = hash_ctx(128, 16, 24);
    ASSERT_EQ(run_align(&r, &a, &h), 128);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_BY_PLUGIN | CORE_C_CLAMPED_MAX_PARALLELISM);
    /* A source: also capped at its 15 partitions (DESIGN 4). */
    r.c = 0;
    a = source_ctx(15, 128, 10, 12);
    ASSERT_EQ(run_align(&r, &a, &h), 15);
    ASSERT(r.c & CORE_C_CAPPED_AT_PARTITIONS);
    ASSERT(r.c & CORE_C_ALIGNED_BY_PLUGIN);
    /* 0 -> raised to lower 3. */
    h.align = returns_zero;
    r.c = 0;
    a = hash_ctx(128, 16, 24);
    a.lower = 3;
    ASSERT_EQ(run_align(&r, &a, &h), 3);
    ASSERT_EQ(r.c, CORE_C_ALIGNED_BY_PLUGIN | CORE_C_CLAMPED_MIN_PARALLELISM);
    core_decision_deinit(&r.d);
}

static void plugin_mode_without_hook_is_balanced(void)
{
    struct run r;
    run_init(&r, CORE_ALIGN_PLUGIN);
    r.cfg.align_plugin = "snap";
    struct core_align_ctx a = hash_ctx(128, 16, 24);
    /* No align hook: BALANCED, as for an undiscovered plugin class -> 26. */
    ASSERT_EQ(run_align(&r, &a, NULL), 26);
    struct core_hooks h = {0};
    ASSERT_EQ(run_align(&r, &a, &h), 26);
    ASSERT(!r.pe.set);
    core_decision_deinit(&r.d);
}

TEST_MAIN(TEST_ENTRY(first_aligned_divisor_or_reducer), TEST_ENTRY(balanced_worked_example),
          TEST_ENTRY(evenly_spread_worked_examples), TEST_ENTRY(off_keeps_target),
          TEST_ENTRY(upper_limits_the_region),
          TEST_ENTRY(partitions_no_aligned_value_builtins_keep_target),
          TEST_ENTRY(partitions_twelve_max_parallelism_eight),
          TEST_ENTRY(partitions_aligned_sets_partitions_constraint),
          TEST_ENTRY(scale_down_region_ends_at_current),
          TEST_ENTRY(not_applicable_without_hash_or_partitions),
          TEST_ENTRY(legacy_aligned_value_without_event),
          TEST_ENTRY(legacy_blocks_direction_inversion), TEST_ENTRY(legacy_relaxes_downward),
          TEST_ENTRY(legacy_scale_down_fallback), TEST_ENTRY(plugin_changes_value),
          TEST_ENTRY(plugin_called_even_when_builtins_would_not_apply),
          TEST_ENTRY(plugin_same_value_no_constraint), TEST_ENTRY(plugin_failure_keeps_target),
          TEST_ENTRY(plugin_result_clamped_to_limits),
          TEST_ENTRY(plugin_mode_without_hook_is_balanced))
