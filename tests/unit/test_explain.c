/* Unit tests for core/explain.c: the figures in a decision's text. */
#include <string.h>

#include "test.h"

#include "core/core_int.h"
#include "options/options.h"

static void utc_dates(void)
{
    char b[32];
    core__fmt_utc(b, sizeof b, 1764410400000LL); /* the cases' T0 */
    ASSERT_STR(b, "2025-11-29T10:00:00Z");
    core__fmt_utc(b, sizeof b, 0);
    ASSERT_STR(b, "1970-01-01T00:00:00Z");
    core__fmt_utc(b, sizeof b, 951782400000LL); /* a leap day: 30 years + 59 days after 1970 */
    ASSERT_STR(b, "2000-02-29T00:00:00Z");
    core__fmt_utc(b, sizeof b, -1000);
    ASSERT_STR(b, "1969-12-31T23:59:59Z");
    core__fmt_utc(b, sizeof b, 4102444799999LL);
    ASSERT_STR(b, "2099-12-31T23:59:59Z");
}

static void durations_and_rates(void)
{
    char b[32];
    core_format_duration(b, sizeof b, 3600000);
    ASSERT_STR(b, "1 h");
    core_format_duration(b, sizeof b, 30 * 60000);
    ASSERT_STR(b, "30 min");
    core_format_duration(b, sizeof b, 90000);
    ASSERT_STR(b, "90 s");
    core_format_duration(b, sizeof b, 500);
    ASSERT_STR(b, "500 ms");
    core__fmt_rate(b, sizeof b, 1052.632);
    ASSERT_STR(b, "1053/s");
    core__fmt_rate(b, sizeof b, 12.34);
    ASSERT_STR(b, "12.3/s");
    core__fmt_rate(b, sizeof b, INFINITY);
    ASSERT_STR(b, "an unbounded rate");
}

static void move_names_the_figures_and_limits(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_decision d;
    core_decision_init(&d);
    struct core_vertex_in v = {
        .id = "src", .parallelism = 2, .max_parallelism = 128, .partitions = 3};
    struct core_evaluated e = {.load = 0.5,
                               .true_processing_rate = 2000,
                               .target_data_rate = 1500,
                               .catch_up_data_rate = 0,
                               .expected_processing_rate = 3000,
                               .lag = NAN};
    /* 1500 / 2000 = 75% needed against the 70% target; capped at 3 partitions. */
    const char *m = core__explain_move(&d, &cfg, &v, CORE_R_HIGH_UTILIZATION, 3, 4,
                                       CORE_C_CAPPED_AT_PARTITIONS, &e, 0);
    ASSERT_STR(m, "src: 2 -> 3: 2 subtasks can process 2000/s (busy 50%); 1500/s arrive, "
                  "needing them 75% of the time (target utilization 70%); at 3, about 3000/s; "
                  "capped at its 3 partitions");
    m = core__explain_limit(&d, &cfg, &v, 5, CORE_C_CAPPED_AT_PARTITIONS);
    ASSERT_STR(m, "src: needs 5 subtasks but stays at 2: it reads 3 partitions");
    e.scale_up_rate_threshold = 1500;
    e.scale_down_rate_threshold = INFINITY;
    m = core__explain_steady(&d, "src", 2, &e);
    ASSERT_CONTAINS(m, "no scale-down while the backlog lasts");
    core_decision_deinit(&d);
}

/* One subtask reads as one (core/README.md, Explanations: "needing it them", "1 subtask process").
 */
static void one_subtask_grammar(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_decision d;
    core_decision_init(&d);
    struct core_vertex_in v = {.id = "sink", .parallelism = 1, .max_parallelism = 128};
    struct core_evaluated e = {.load = 0.9,
                               .true_processing_rate = 1000,
                               .target_data_rate = 750,
                               .catch_up_data_rate = 0,
                               .expected_processing_rate = 2000,
                               .scale_up_rate_threshold = 833,
                               .scale_down_rate_threshold = 2000,
                               .lag = NAN};
    const char *m = core__explain_move(&d, &cfg, &v, CORE_R_HIGH_UTILIZATION, 2, 2, 0, &e, 0);
    ASSERT_STR(m, "sink: 1 -> 2: 1 subtask can process 1000/s (busy 90%); 750/s arrive, needing "
                  "it 75% of the time (target utilization 70%); at 2, about 2000/s");
    e.target_data_rate = 1200;
    m = core__explain_move(&d, &cfg, &v, CORE_R_HIGH_UTILIZATION, 2, 2, 0, &e, 0);
    ASSERT_CONTAINS(m, "1200/s arrive, more than it can process");
    m = core__explain_steady(&d, "sink", 1, &e);
    ASSERT_CONTAINS(m, "sink: 1 subtask processes at most 1000/s");
    e.lag = 5000;
    e.catch_up_data_rate = 2.8;
    m = core__explain_move(&d, &cfg, &v, CORE_R_HIGH_BACKLOG, 2, 2, 0, &e, 0);
    ASSERT_CONTAINS(m, "; 1 subtask processes at most 1000/s");
    v.partitions = 1;
    m = core__explain_limit(&d, &cfg, &v, 3, CORE_C_CAPPED_AT_PARTITIONS);
    ASSERT_STR(m, "sink: needs 3 subtasks but stays at 1: it reads 1 partition");
    core_decision_deinit(&d);
}

/* A vertex busy less than its target scaled up for the restart headroom says so (core/README.md,
 * Explanations: HIGH_UTILIZATION for agg 5 -> 7 at 68% busy, the headroom not mentioned). Under the
 * flink profile the capacity asked for is round(0 + 1000 x 300 / 1800 + 1000 / 0.7) = 1595/s, of
 * which 167/s for the restart; without it 1429/s, which 5 subtasks at 1471/s already give. */
static void restart_headroom_is_named(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    opt_config_set_profile(&cfg, CORE_PROFILE_FLINK);
    struct core_decision d;
    core_decision_init(&d);
    struct core_vertex_in v = {.id = "agg", .parallelism = 5, .max_parallelism = 70};
    struct core_evaluated e = {.load = 0.68,
                               .true_processing_rate = 1470.588,
                               .target_data_rate = 1000,
                               .catch_up_data_rate = 0,
                               .expected_processing_rate = 2058.823,
                               .lag = NAN};
    const char *m = core__explain_move(&d, &cfg, &v, CORE_R_HIGH_UTILIZATION, 7, 6, 0, &e, 300000);
    ASSERT_STR(m, "agg: 5 -> 7: 5 subtasks can process 1471/s (busy 68%); 1000/s arrive, needing "
                  "them 68% of the time (target utilization 70%); sized for 1595/s, of which "
                  "167/s to work off what piles up during a 5 min restart within 30 min; at 7, "
                  "about 2059/s");
    /* No restart time: nothing to say. */
    m = core__explain_move(&d, &cfg, &v, CORE_R_HIGH_UTILIZATION, 7, 6, 0, &e, 0);
    ASSERT(strstr(m, "restart") == NULL);
    core_decision_deinit(&d);
}

TEST_MAIN(TEST_ENTRY(utc_dates), TEST_ENTRY(durations_and_rates),
          TEST_ENTRY(move_names_the_figures_and_limits), TEST_ENTRY(one_subtask_grammar),
          TEST_ENTRY(restart_headroom_is_named))
