/* Unit tests for core/util.c: rounding (core/README.md, Numbers), Java rounding, the arena, event
 * dedupe. */
#include "test.h"

#include "core/core_int.h"

static void round3_half_up(void)
{
    ASSERT_DEQ(core__round3(1.2345), 1.235);
    ASSERT_DEQ(core__round3(2.0005), 2.001);
    ASSERT_DEQ(core__round3(-1.2345), -1.235);
    ASSERT_DEQ(core__round3(1714.28571), 1714.286);
    ASSERT_DEQ(core__round3(3.0), 3.0);
}

static void round3_keeps_values_that_would_vanish(void)
{
    ASSERT_DEQ(core__round3(0.0004), 0.0004);
    ASSERT_DEQ(core__round3(0.0005), 0.001);
    ASSERT(isnan(core__round3(NAN)));
    ASSERT(isinf(core__round3(INFINITY)));
}

static void round3_fast_path_agrees_with_decimal_rounding(void)
{
    /* 200k values of every magnitude: the fast path must give the decimal answer. */
    unsigned long long seed = 42;
    for (int i = 0; i < 200000; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double m = (double)(seed >> 11) / 9007199254740992.0; /* [0, 1) */
        double x = (m - 0.3) * pow(10.0, (int)(seed % 13) - 4);
        if (i % 7 == 0)
            x = floor(x * 1000.0) / 1000.0 + 0.0005; /* near a tie */
        if (core__round3(x) != core__round3_decimal(x))
            TEST__FAIL("x = %.17g: %.17g != %.17g", x, core__round3(x), core__round3_decimal(x));
    }
}

static void java_round(void)
{
    ASSERT_EQ(core__java_round(2.5), 3);
    ASSERT_EQ(core__java_round(-2.5), -2);
    ASSERT_EQ(core__java_round(1202.4999), 1202);
    ASSERT_EQ(core__java_round(NAN), 0);
}

static void arena_reset_reuses(void)
{
    struct core_decision d;
    core_decision_init(&d);
    char *a = core__asprintf(&d, "x=%d", 42);
    ASSERT_STR(a, "x=42");
    for (int i = 0; i < 2000; i++)
        core__alloc(&d, 100);
    core_decision_reset(&d);
    ASSERT(d.arena != NULL);
    char *b = core__astrdup(&d, "again");
    ASSERT_STR(b, "again");
    core_decision_deinit(&d);
    ASSERT(d.arena == NULL);
}

static void events_dedupe_within_interval(void)
{
    struct core_state *st = core_state_new();
    struct core_decision d;
    core_decision_init(&d);
    core__event(&d, "Normal", "MemoryPressure", "gcPressure", "gc %d", 1);
    core__events_dedupe(st, &d, 1000, 60000);
    ASSERT(!d.events[0].suppressed);
    core_decision_reset(&d);
    core__event(&d, "Normal", "MemoryPressure", "gcPressure", "gc %d", 2);
    core__events_dedupe(st, &d, 30000, 60000);
    ASSERT(d.events[0].suppressed);
    ASSERT_EQ(d.events[0].count, 2);
    core_decision_reset(&d);
    core__event(&d, "Normal", "MemoryPressure", "gcPressure", "gc %d", 3);
    core__events_dedupe(st, &d, 61000, 60000);
    ASSERT(!d.events[0].suppressed);
    ASSERT_EQ(d.events[0].count, 1);
    core_decision_deinit(&d);
    core_state_free(st);
}

TEST_MAIN(TEST_ENTRY(round3_half_up), TEST_ENTRY(round3_keeps_values_that_would_vanish),
          TEST_ENTRY(round3_fast_path_agrees_with_decimal_rounding), TEST_ENTRY(java_round),
          TEST_ENTRY(arena_reset_reuses), TEST_ENTRY(events_dedupe_within_interval))
