/*
 * Unit tests for server/options/options.c: the value parsers, the table's defaults (the only ones:
 * every field of struct core_config is landed by a row), aliases and the kubernetes.operator.
 * fallback, layering, validation (core/README.md, Options)
 * validation, plugin parameters, ignored keys, the hash, server options and the config
 * file, and docs/options.md's generated options block.
 */
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

#include "options/options.h"
#include "testfile.h"

#define KEY(k) "job.autoscaler." k

/* ---------------------------------------------------------------- helpers -- */

/* Sets key = value at layer; returns the error message (new) or NULL. */
static char *set_err(struct opt_job *j, enum opt_layer l, const char *k, const char *v)
{
    char *e = NULL;
    if (opt_job_set(j, l, k, v, &e) == 0) {
        free(e);
        return NULL;
    }
    return e ? e : strdup("(no message)");
}

static bool set_ok(struct opt_job *j, enum opt_layer l, const char *k, const char *v)
{
    char *e = set_err(j, l, k, v);
    if (e)
        fprintf(stderr, "    set %s=%s: %s\n", k, v, e);
    free(e);
    return e == NULL;
}

/* Resolves; returns the error message (new) or NULL. */
static char *resolve_err(struct opt_job *j, struct core_config *c)
{
    char *e = NULL;
    if (opt_job_resolve(j, c, &e) == 0) {
        free(e);
        return NULL;
    }
    return e ? e : strdup("(no message)");
}

/* One key's effective value and layer, via opt_job_each. */
struct find {
    const char *key;
    char value[256];
    enum opt_layer layer;
    int found;
};

static void find_cb(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    struct find *f = ud;
    if (strcmp(key, f->key) == 0) {
        snprintf(f->value, sizeof f->value, "%s", value);
        f->layer = layer;
        f->found++;
    }
}

static struct find find_key(const struct opt_job *j, const char *key)
{
    struct find f = {.key = key};
    opt_job_each(j, find_cb, &f);
    return f;
}

static bool deq(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

static bool seq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool list_eq(const char *const *a, int na, const char *const *b, int nb)
{
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

/* Name of the first field where a and b differ, or NULL when they agree everywhere. */
static const char *config_diff(const struct core_config *a, const struct core_config *b)
{
#define B(f)                                                                                       \
    if (a->f != b->f)                                                                              \
        return #f;
#define D(f)                                                                                       \
    if (!deq(a->f, b->f))                                                                          \
        return #f;
#define S(f)                                                                                       \
    if (!seq(a->f, b->f))                                                                          \
        return #f;
#define L(f, n)                                                                                    \
    if (!list_eq(a->f, a->n, b->f, b->n))                                                          \
        return #f;
    B(enabled) B(scaling_enabled) B(metrics_window_ms) B(stabilization_ms);
    S(excluded_periods) S(excluded_tz);
    D(util_target) D(util_boundary) D(util_max) D(util_min);
    B(scale_down_interval_ms) B(vertex_min_parallelism) B(vertex_max_parallelism);
    D(scale_down_max_factor) D(scale_up_max_factor);
    B(catch_up_ms) B(restart_time_ms) B(restart_tracking_enabled) B(restart_tracking_limit_ms);
    B(backlog_lag_threshold_ms) B(otpr_lag_threshold_ms);
    D(otpr_switch_threshold) B(otpr_min_observations);
    B(effectiveness_detection) D(effectiveness_threshold);
    D(gc_pressure_threshold) D(heap_usage_threshold);
    B(mem_tuning_enabled) D(mem_tuning_overhead) B(mem_maximize_managed);
    B(mem_scale_down_compensation) B(history_max_count) B(history_max_age_ms);
    B(busy_aggregator) L(exclude_ids, n_exclude_ids) B(event_interval_ms);
    D(quota_cpu) D(quota_memory) B(align_mode) S(align_plugin);
    B(observed_scalability_enabled) B(observed_scalability_min_observations);
    D(observed_scalability_coefficient_min);
    L(evaluators, n_evaluators) L(executors, n_executors);
    B(skew_enabled) D(skew_min_ratio) D(skew_saturation);
    B(profile) B(plausibility) D(plausibility_ratio) B(window_keep_full);
    D(counter_jitter) D(gauge_tolerance);
    B(source_rate_guard) B(source_rate_warm_up_ms) D(source_rate_max_bp);
    B(catch_up_in_headroom) B(scale_down_with_restart) B(scale_down_early);
    B(scale_down_early_ms) B(align_busiest_share) D(util_ceiling);
    B(skew_knee) B(skew_limit_flow) B(rates_from_counters) B(source_stall);
    B(window_refill) D(level_shift_z) D(bounds_z) D(trend_z) B(trend_horizon_ms);
    D(restart_cost_w) B(scale_down_one_step) D(util_min_target);
    B(scalability_curve) D(scalability_share) B(not_applied_max);
    B(slots_per_tm) D(tm_cpu);
    B(tm.process_size) B(tm.flink_size) B(tm.task_heap) B(tm.managed_size);
    B(tm.framework_heap) B(tm.framework_offheap) B(tm.task_offheap) B(tm.metaspace);
    B(tm.network_min) B(tm.network_max) B(tm.overhead_min) B(tm.overhead_max);
    B(tm.segment_size) D(tm.managed_fraction) D(tm.network_fraction) D(tm.overhead_fraction);
    B(tm.buffers_per_channel) B(tm.floating_buffers);
    B(batch.min_workers) B(batch.max_workers) B(batch.worker_overhead_ms) D(batch.speed_weight);
    D(batch.dead_band) D(batch.max_scale_up) B(batch.scale_down_confirmations);
    B(batch.change_interval_ms) D(batch.idle_cpu) D(batch.finishing);
    B(batch.worker_startup_ms);
#undef B
#undef D
#undef S
#undef L
    return NULL;
}

/* ---------------------------------------------------------------- parsers -- */

/* One case of tests/unit/data/options.test. */
static int options_case(void *ud, const struct testfile_case *c, struct testfile_out *out)
{
    (void)ud;
    const char *verb = c->field[0];
    char *e = NULL;
    int64_t v = 77;
    int rc = 0;
    if (c->n_fields == 2 && strcmp(verb, "duration") == 0) {
        rc = opt_parse_duration(c->field[1], &v, &e);
    } else if (c->n_fields == 2 && strcmp(verb, "memory") == 0) {
        rc = opt_parse_memory(c->field[1], &v, &e);
    } else if (c->n_fields == 2 && strcmp(verb, "bool") == 0) {
        bool b = true;
        rc = opt_parse_bool(c->field[1], &b, &e);
        if (rc == 0)
            testfile_printf(out, "%s", b ? "true" : "false");
        else
            testfile_printf(out, "error: %s%s", e, b ? "" : " (and the value changed)");
        free(e);
        return 0;
    } else if (c->n_fields == 3 && strcmp(verb, "set") == 0) {
        struct opt_job *j = opt_job_new();
        rc = opt_job_set(j, OPT_REQUEST, c->field[1], c->field[2], &e);
        opt_job_free(j);
        if (rc == 0)
            testfile_printf(out, "ok");
        else
            testfile_printf(out, "error: %s", e ? e : "(no message)");
        free(e);
        return 0;
    } else {
        testfile_printf(out, "unknown verb or bad fields");
        return -1;
    }
    if (rc == 0)
        testfile_printf(out, "%lld", (long long)v);
    else
        testfile_printf(out, "error: %s%s", e ? e : "(no message)",
                        v == 77 ? "" : " (and the value changed)");
    free(e);
    return 0;
}

static void parse_cases(void)
{
    ASSERT_EQ(testfile_run(TESTFILE_DATA("options.test"), options_case, NULL), 0);
}

static void numbers_are_parsed_strictly(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    /* ints: decimal text, or an integral JSON number printed as a real */
    ASSERT(set_ok(j, OPT_JOB, KEY("vertex.max-parallelism"), "150"));
    ASSERT(set_ok(j, OPT_JOB, KEY("history.max.count"), "4.0"));
    ASSERT(set_ok(j, OPT_JOB, KEY("observed-scalability.min-observations"), "1e1"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.vertex_max_parallelism, 150);
    ASSERT_EQ(c.history_max_count, 4);
    ASSERT_EQ(c.observed_scalability_min_observations, 10);
    /* doubles: finite decimal only */
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.target"), " 0.65 "));
    ASSERT(set_ok(j, OPT_JOB, KEY("scale-up.max-factor"), "1e3"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.65);
    ASSERT_DEQ(c.scale_up_max_factor, 1000.0);
    opt_job_free(j);
}

/* ------------------------------------------------------------- messages -- */

struct keys {
    char *k[256];
    int n;
};

static void keys_cb(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    (void)value, (void)layer;
    struct keys *ks = ud;
    if (ks->n < 256)
        ks->k[ks->n++] = strdup(key);
}

static void keys_free(struct keys *ks)
{
    for (int i = 0; i < ks->n; i++)
        free(ks->k[i]);
}

/* Every row that rejects a junk value says which key, and keeps the value it had. */
static void every_error_names_the_key(void)
{
    struct opt_job *j = opt_job_new();
    struct keys ks = {0};
    opt_job_each(j, keys_cb, &ks);
    int rejected = 0;
    for (int i = 0; i < ks.n; i++) {
        struct find before = find_key(j, ks.k[i]);
        char *e = set_err(j, OPT_REQUEST, ks.k[i], "?? junk ??");
        if (e) {
            char prefix[300];
            snprintf(prefix, sizeof prefix, "%s: \"?? junk ??\" ", ks.k[i]);
            ASSERT(strncmp(e, prefix, strlen(prefix)) == 0);
            struct find after = find_key(j, ks.k[i]);
            ASSERT_STR(after.value, before.value);
            ASSERT_EQ(after.layer, OPT_BUILTIN);
            rejected++;
        }
        free(e);
    }
    /* Only the free-text row vertex.exclude.ids takes "?? junk ??". 49 job.autoscaler., 47
     * governor. (11 of them governor.batch., 5 governor.dataflow., and governor.slo.lag) and
     * 20 CLUSTER rows in all. */
    ASSERT_EQ(ks.n, 116);
    ASSERT_EQ(rejected, ks.n - 1);
    keys_free(&ks);
    opt_job_free(j);
}

/* Every duration is bounded (README, Options) (ten years for job options), so that no duration
 * overflows `at + interval`. Every row that takes "5 min" as a duration is checked: the
 * largest duration the parser reads is refused naming the key and the range, ten years
 * pass. The server's durations are bounded too (their timeouts tighter). */
static void every_duration_is_bounded(void)
{
    struct opt_job *j = opt_job_new();
    struct keys ks = {0};
    opt_job_each(j, keys_cb, &ks);
    int durations = 0;
    for (int i = 0; i < ks.n; i++) {
        char *junk = set_err(j, OPT_REQUEST, ks.k[i], "?? junk ??");
        char *e = set_err(j, OPT_REQUEST, ks.k[i], "5 min");
        char *mb = junk && !e ? set_err(j, OPT_REQUEST, ks.k[i], "5 mb") : NULL;
        bool duration = mb != NULL;
        free(junk);
        free(e);
        free(mb);
        if (!duration)
            continue;
        durations++;
        e = set_err(j, OPT_REQUEST, ks.k[i], "106751991167 d");
        char want[300];
        snprintf(want, sizeof want, "%s: \"106751991167 d\" is out of range [", ks.k[i]);
        ASSERT(e != NULL);
        ASSERT(strncmp(e, want, strlen(want)) == 0);
        ASSERT_CONTAINS(e, ", 3650 d]");
        free(e);
        e = set_err(j, OPT_REQUEST, ks.k[i], "3650 d");
        ASSERT(e == NULL);
        free(e);
    }
    /* metrics.window, stabilization.interval, scale-down.interval, catch-up.duration,
     * restart.time, restart.time-tracking.limit, the two lag thresholds, history.max.age,
     * scaling.event.interval, flink.rest-client.timeout, governor.source-rate.warm-up,
     * governor.scale-down.early-after, governor.rates.trend-horizon,
     * governor.batch.worker-overhead, governor.batch.change-interval,
     * governor.batch.worker-startup, governor.slo.lag, governor.dataflow.max-backlog */
    ASSERT_EQ(durations, 19);
    keys_free(&ks);
    opt_job_free(j);

    struct opt_server srv;
    opt_server_init(&srv);
    const struct {
        const char *key, *max;
    } sv[] = {{"read-timeout", "1 h"},
              {"sql-timeout", "1 h"},
              {"plugin-timeout", "1 min"},
              {"audit-retention", "3650 d"}};
    for (size_t i = 0; i < sizeof sv / sizeof sv[0]; i++) {
        char *err = NULL;
        ASSERT_EQ(opt_server_set(&srv, sv[i].key, "106751991167 d", &err), -1);
        ASSERT_CONTAINS(err, sv[i].key);
        ASSERT_CONTAINS(err, "out of range");
        free(err);
        err = NULL;
        ASSERT_EQ(opt_server_set(&srv, sv[i].key, sv[i].max, &err), 0);
        free(err);
    }
    opt_server_deinit(&srv);
}

/* ---------------------------------------------------------- validation 6.4 -- */

static void single_value_ranges(void)
{
    struct opt_job *j = opt_job_new();
    struct {
        const char *key, *bad, *good, *range;
    } t[] = {
        {KEY("scale-down.max-factor"), "-0.1", "0", "[0, 1]"},
        {KEY("scale-down.max-factor"), "1.01", "1", "[0, 1]"},
        {KEY("scale-up.max-factor"), "-0.5", "0", "[0, inf)"},
        {KEY("utilization.target"), "-0.01", "0", "[0, 1]"},
        {KEY("utilization.target"), "1.5", "1", "[0, 1]"},
        {KEY("target.utilization.boundary"), "-0.1", "0", "[0, inf)"},
        {KEY("utilization.max"), "1.2", "1", "[0, 1]"},
        {KEY("utilization.min"), "-0.2", "0", "[0, 1]"},
        {KEY("memory.gc-pressure.threshold"), "1.1", "1", "[0, 1]"},
        {KEY("memory.gc-pressure.threshold"), "-1", "0", "[0, 1]"},
        {KEY("memory.heap-usage.threshold"), "1.1", "1", "[0, 1]"},
        {KEY("memory.heap-usage.threshold"), "-0.1", "0", "[0, 1]"},
        {KEY("vertex.min-parallelism"), "0", "1", "[1, inf)"},
        {KEY("vertex.max-parallelism"), "0", "1", "[1, inf)"},
        {KEY("skew.min-ratio"), "0.9", "1", "[1, inf)"},
        {KEY("skew.saturation"), "0", "0.01", "(0, 1)"},
        {KEY("skew.saturation"), "1", "0.99", "(0, 1)"},
        {KEY("metrics.window"), "0", "1", "[1 ms, 3650 d]"},
        {"taskmanager.numberOfTaskSlots", "0", "1", "[1, inf)"},
        {"taskmanager.cpu.cores", "0", "0.5", "(0, inf)"},
        {"taskmanager.memory.managed.fraction", "1.5", "1", "[0, 1]"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char *e = set_err(j, OPT_JOB, t[i].key, t[i].bad);
        char want[300];
        snprintf(want, sizeof want, "%s: \"%s\" is out of range %s", t[i].key, t[i].bad,
                 t[i].range);
        ASSERT_STR(e, want);
        free(e);
        ASSERT(set_ok(j, OPT_JOB, t[i].key, t[i].good)); /* the bound itself is allowed */
    }
    opt_job_free(j);
}

static void utilization_bounds_depend_on_target(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    /* max must lie in [target, 1]: 0.5 < 0.7 */
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.max"), "0.5"));
    char *e = resolve_err(j, &c);
    ASSERT_STR(e, "job.autoscaler.utilization.max: \"0.5\" is out of range [0.7, 1]");
    free(e);
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.max"), "0.7")); /* = target: allowed */
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_max, 0.7);
    /* lowering the target at another layer makes 0.5 valid: [0.4, 1] */
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.max"), "0.5"));
    ASSERT(set_ok(j, OPT_REQUEST, KEY("utilization.target"), "0.4"));
    ASSERT(resolve_err(j, &c) == NULL);
    opt_job_clear_layer(j, OPT_REQUEST);
    opt_job_clear_layer(j, OPT_JOB);
    /* min must lie in [0, target]: 0.8 > 0.7 */
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.min"), "0.8"));
    e = resolve_err(j, &c);
    ASSERT_STR(e, "job.autoscaler.utilization.min: \"0.8\" is out of range [0, 0.7]");
    free(e);
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.min"), "0.7"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_min, 0.7);
    /* "" sets it back to unset (NaN) */
    ASSERT(set_ok(j, OPT_REQUEST, KEY("utilization.min"), ""));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT(isnan(c.util_min));
    opt_job_free(j);
}

static void feature_gated_ranges(void)
{
    struct {
        const char *key, *bad, *gate, *range;
    } t[] = {
        {KEY("observed-scalability.coefficient-min"), "0.001", KEY("observed-scalability.enabled"),
         "[0.01, 1]"},
        {KEY("observed-scalability.coefficient-min"), "1.5", KEY("observed-scalability.enabled"),
         "[0.01, 1]"},
        {KEY("scaling.effectiveness.threshold"), "2",
         KEY("scaling.effectiveness.detection.enabled"), "[0, 1]"},
        {KEY("memory.tuning.overhead"), "1.5", KEY("memory.tuning.enabled"), "[0, 1]"},
        {KEY("memory.tuning.overhead"), "-0.5", KEY("memory.tuning.enabled"), "[0, 1]"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct opt_job *j = opt_job_new();
        struct core_config c;
        /* feature off: the value is accepted and not checked */
        ASSERT(set_ok(j, OPT_JOB, t[i].key, t[i].bad));
        ASSERT(resolve_err(j, &c) == NULL);
        /* feature on: out of range */
        ASSERT(set_ok(j, OPT_REQUEST, t[i].gate, "true"));
        char *e = resolve_err(j, &c);
        char want[300];
        snprintf(want, sizeof want, "%s: \"%s\" is out of range %s", t[i].key, t[i].bad,
                 t[i].range);
        ASSERT_STR(e, want);
        free(e);
        opt_job_free(j);
    }
    /* still a number, feature on or off */
    struct opt_job *j = opt_job_new();
    char *e = set_err(j, OPT_JOB, KEY("memory.tuning.overhead"), "much");
    ASSERT_STR(e, "job.autoscaler.memory.tuning.overhead: \"much\" is not a number");
    free(e);
    opt_job_free(j);
}

static void min_parallelism_not_above_max(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(set_ok(j, OPT_SERVER, KEY("vertex.min-parallelism"), "300"));
    char *e = resolve_err(j, &c);
    ASSERT_STR(e, "job.autoscaler.vertex.min-parallelism: \"300\" is out of range [1, 200]");
    free(e);
    ASSERT(set_ok(j, OPT_JOB, KEY("vertex.max-parallelism"), "300")); /* min = max: fine */
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.vertex_min_parallelism, 300);
    ASSERT_EQ(c.vertex_max_parallelism, 300);
    opt_job_free(j);
}

static void first_error_wins_in_spec_order(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    /* the validation order (core/README.md, Options): utilization.max, utilization.min, then the
     * feature-gated ranges */
    ASSERT(set_ok(j, OPT_JOB, KEY("memory.tuning.enabled"), "true"));
    ASSERT(set_ok(j, OPT_JOB, KEY("memory.tuning.overhead"), "5"));
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.min"), "0.9"));
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.max"), "0.6"));
    char *e = resolve_err(j, &c);
    ASSERT_CONTAINS(e, "job.autoscaler.utilization.max:");
    free(e);
    opt_job_clear_layer(j, OPT_JOB);
    ASSERT(set_ok(j, OPT_JOB, KEY("memory.tuning.enabled"), "true"));
    ASSERT(set_ok(j, OPT_JOB, KEY("memory.tuning.overhead"), "5"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.effectiveness.detection.enabled"), "true"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.effectiveness.threshold"), "5"));
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.min"), "0.9"));
    e = resolve_err(j, &c);
    ASSERT_CONTAINS(e, "job.autoscaler.utilization.min:");
    free(e);
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.min"), "0.1"));
    e = resolve_err(j, &c);
    ASSERT_CONTAINS(e, "job.autoscaler.scaling.effectiveness.threshold:");
    free(e);
    opt_job_free(j);
}

static void no_cross_checks_when_disabled(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.max"), "0.1"));
    ASSERT(set_ok(j, OPT_JOB, KEY("vertex.min-parallelism"), "500"));
    char *e = resolve_err(j, &c);
    ASSERT(e != NULL);
    free(e);
    ASSERT(set_ok(j, OPT_REQUEST, KEY("enabled"), "false"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT(!c.enabled);
    opt_job_free(j);
}

static void excluded_periods_are_checked(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    char *e = set_err(j, OPT_REQUEST, KEY("excluded.periods"), "9:00-17:00;bad");
    ASSERT_CONTAINS(e, "job.autoscaler.excluded.periods: \"9:00-17:00;bad\" is not a valid "
                       "excluded period: ");
    free(e);
    e = set_err(j, OPT_REQUEST, KEY("excluded.periods"), "* * 25 * * ?");
    ASSERT_CONTAINS(e, "hour");
    free(e);
    ASSERT(set_ok(j, OPT_REQUEST, KEY("excluded.periods"), "9:00-17:00; * * * ? * 1,7"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_STR(c.excluded_periods, "9:00-17:00; * * * ? * 1,7");
    opt_job_free(j);
}

static void unknown_time_zone_is_refused(void)
{
    struct opt_job *j = opt_job_new();
    char *e = set_err(j, OPT_JOB, KEY("excluded.periods.timezone"), "Mars/Olympus_Mons");
    ASSERT_CONTAINS(e, "job.autoscaler.excluded.periods.timezone: \"Mars/Olympus_Mons\" is not "
                       "a known time zone");
    free(e);
    opt_job_free(j);
}

static void timezone_names(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    const char *good[] = {"UTC",       "Europe/Berlin", "America/Argentina/Buenos_Aires",
                          "Etc/GMT+5", "Etc/GMT-14",    "America/Port-au-Prince"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ASSERT(set_ok(j, OPT_JOB, KEY("excluded.periods.timezone"), good[i]));
        ASSERT(resolve_err(j, &c) == NULL);
        ASSERT_STR(c.excluded_tz, good[i]);
    }
    const char *bad[] = {
        "",       "../etc/passwd", "/etc/localtime", "Europe/../x", "Europe Berlin",
        "UTC;rm", "Europe\\Berlin"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *e = set_err(j, OPT_JOB, KEY("excluded.periods.timezone"), bad[i]);
        ASSERT_CONTAINS(e, "job.autoscaler.excluded.periods.timezone: \"");
        ASSERT_CONTAINS(e, "is not a time zone name");
        free(e);
    }
    opt_job_free(j);
}

/* ------------------------------------------------- aliases, legacy prefix -- */

static void deprecated_aliases_map_to_the_canonical_key(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(set_ok(j, OPT_JOB, KEY("target.utilization"), "0.6"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scale-up.grace-period"), "10 min"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.6);
    ASSERT_EQ(c.scale_down_interval_ms, 600000); /* 10 x 60000 */
    struct find f = find_key(j, KEY("utilization.target"));
    ASSERT_EQ(f.found, 1);
    ASSERT_STR(f.value, "0.6");
    ASSERT_EQ(f.layer, OPT_JOB);
    ASSERT_EQ(find_key(j, KEY("target.utilization")).found, 0); /* reported canonically */
    /* canonical wins within a layer, whatever the order */
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.target"), "0.5"));
    ASSERT(set_ok(j, OPT_JOB, KEY("target.utilization"), "0.9"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.5);
    /* but a higher layer wins over the canonical key of a lower one */
    ASSERT(set_ok(j, OPT_REQUEST, KEY("target.utilization"), "0.8"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.8);
    opt_job_free(j);
}

static void kubernetes_operator_prefix_is_a_fallback(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.utilization.target", "0.55"));
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.vertex.max-parallelism", "64"));
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.scale-up.grace-period", "2 h"));
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.skew.enabled", "false"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.55);
    ASSERT_EQ(c.vertex_max_parallelism, 64);
    ASSERT_EQ(c.scale_down_interval_ms, 7200000); /* 2 x 3600000 */
    ASSERT(!c.skew_enabled);
    ASSERT_STR(find_key(j, KEY("vertex.max-parallelism")).value, "64");
    /* canonical key wins at the same layer, set before or after the fallback */
    ASSERT(set_ok(j, OPT_JOB, KEY("vertex.max-parallelism"), "32"));
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.vertex.max-parallelism", "16"));
    /* a deprecated alias beats the legacy-prefixed canonical key */
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.utilization.target", "0.3"));
    ASSERT(set_ok(j, OPT_JOB, KEY("target.utilization"), "0.45"));
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.utilization.target", "0.35"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.vertex_max_parallelism, 32);
    ASSERT_DEQ(c.util_target, 0.45);
    /* unknown under the legacy prefix is unknown too; cluster keys take no prefix */
    char *e = set_err(j, OPT_JOB, "kubernetes.operator.job.autoscaler.bogus", "1");
    ASSERT_STR(e, "kubernetes.operator.job.autoscaler.bogus: unknown option");
    free(e);
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.taskmanager.numberOfTaskSlots", "4"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.slots_per_tm, 1);
    ASSERT_EQ(opt_job_n_warnings(j), 1);
    opt_job_free(j);
}

/* ---------------------------------------------------------------- layers -- */

static void layers_take_precedence_in_order(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT_STR(opt_layer_name(OPT_BUILTIN), "default");
    ASSERT_STR(opt_layer_name(OPT_SERVER), "server");
    ASSERT_STR(opt_layer_name(OPT_JOB), "job");
    ASSERT_STR(opt_layer_name(OPT_REQUEST), "request");
    struct find f = find_key(j, KEY("utilization.target"));
    ASSERT_STR(f.value, "0.7");
    ASSERT_EQ(f.layer, OPT_BUILTIN);
    /* set out of order: the layer decides, not the order of calls */
    ASSERT(set_ok(j, OPT_REQUEST, KEY("utilization.target"), "0.8"));
    ASSERT(set_ok(j, OPT_SERVER, KEY("utilization.target"), "0.5"));
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.target"), "0.6"));
    ASSERT(set_ok(j, OPT_SERVER, KEY("metrics.window"), "10 min"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.8);
    ASSERT_EQ(c.metrics_window_ms, 600000);
    f = find_key(j, KEY("utilization.target"));
    ASSERT_STR(f.value, "0.8");
    ASSERT_EQ(f.layer, OPT_REQUEST);
    f = find_key(j, KEY("metrics.window"));
    ASSERT_STR(f.value, "10 min");
    ASSERT_EQ(f.layer, OPT_SERVER);
    opt_job_clear_layer(j, OPT_REQUEST);
    f = find_key(j, KEY("utilization.target"));
    ASSERT_STR(f.value, "0.6");
    ASSERT_EQ(f.layer, OPT_JOB);
    opt_job_clear_layer(j, OPT_JOB);
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.5);
    opt_job_clear_layer(j, OPT_SERVER);
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.7);
    ASSERT_EQ(find_key(j, KEY("metrics.window")).layer, OPT_BUILTIN);
    /* the default layer is the table's, not settable */
    char *e = set_err(j, OPT_BUILTIN, KEY("utilization.target"), "0.1");
    ASSERT_CONTAINS(e, "job.autoscaler.utilization.target: cannot be set at the default layer");
    free(e);
    opt_job_free(j);
}

static void failed_set_changes_nothing(void)
{
    struct opt_job *j = opt_job_new();
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.target"), "0.6"));
    char *e = set_err(j, OPT_JOB, KEY("utilization.target"), "1.6");
    ASSERT(e != NULL);
    free(e);
    ASSERT_STR(find_key(j, KEY("utilization.target")).value, "0.6");
    e = set_err(j, OPT_JOB, "", "1");
    ASSERT(e != NULL);
    free(e);
    opt_job_free(j);
}

static void clone_is_deep(void)
{
    struct opt_job *j = opt_job_new();
    ASSERT(set_ok(j, OPT_JOB, KEY("utilization.target"), "0.6"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.custom-executor.freeze.window"), "1 h"));
    ASSERT(set_ok(j, OPT_JOB, "pipeline.name", "x"));
    struct opt_job *k = opt_job_clone(j);
    ASSERT(set_ok(k, OPT_REQUEST, KEY("utilization.target"), "0.9"));
    opt_job_clear_layer(j, OPT_JOB);
    ASSERT_STR(find_key(k, KEY("utilization.target")).value, "0.9");
    ASSERT_STR(find_key(k, KEY("scaling.custom-executor.freeze.window")).value, "1 h");
    ASSERT_EQ(opt_job_n_warnings(k), 1);
    ASSERT_STR(find_key(j, KEY("utilization.target")).value, "0.7");
    ASSERT_EQ(opt_job_n_warnings(j), 0);
    opt_job_free(j);
    opt_job_free(k);
}

/* --------------------------------------------------- plugin parameters -- */

struct params {
    char buf[1024];
};

static void params_cb(void *ud, const char *param, const char *value)
{
    struct params *p = ud;
    snprintf(p->buf + strlen(p->buf), sizeof p->buf - strlen(p->buf), "%s=%s;", param, value);
}

static void plugin_params_are_kept_and_stripped(void)
{
    struct opt_job *j = opt_job_new();
    ASSERT(set_ok(j, OPT_SERVER, KEY("scaling.custom-executor.freeze.window"), "10 min"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.custom-executor.freeze.window"), "20 min"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.custom-executor.freeze.class"), "x.Freeze"));
    ASSERT(set_ok(j, OPT_JOB, "kubernetes.operator.job.autoscaler.scaling.custom-executor.freeze.c",
                  "legacy"));
    /* canonical beats legacy for the same parameter */
    ASSERT(set_ok(j, OPT_JOB,
                  "kubernetes.operator.job.autoscaler.scaling.custom-executor.freeze."
                  "class",
                  "y.Other"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.custom-executor.freezer.x"), "no"));
    ASSERT(set_ok(j, OPT_JOB, KEY("metrics.custom-evaluator.lag.weight"), "2"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.parallelism-alignment.mode.snap.a.b"), "deep"));
    struct params p = {""};
    opt_job_params(j, KEY("scaling.custom-executor.freeze."), params_cb, &p);
    ASSERT_STR(p.buf, "window=20 min;class=x.Freeze;c=legacy;");
    memset(&p, 0, sizeof p);
    opt_job_params(j, KEY("metrics.custom-evaluator.lag."), params_cb, &p);
    ASSERT_STR(p.buf, "weight=2;");
    memset(&p, 0, sizeof p);
    opt_job_params(j, KEY("scaling.parallelism-alignment.mode.snap."), params_cb, &p);
    ASSERT_STR(p.buf, "a.b=deep;");
    /* reported by opt_job_each after the rows, with their layer */
    struct find f = find_key(j, KEY("scaling.custom-executor.freeze.window"));
    ASSERT_EQ(f.found, 1);
    ASSERT_STR(f.value, "20 min");
    ASSERT_EQ(f.layer, OPT_JOB);
    /* no warnings: these are read by plugins */
    ASSERT_EQ(opt_job_n_warnings(j), 0);
    /* a plugin key needs <name>.<param> */
    const char *bad[] = {KEY("scaling.custom-executor.freeze"), KEY("scaling.custom-executor."),
                         KEY("scaling.custom-executor.fr eeze.x"),
                         KEY("metrics.custom-evaluator.lag.")};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *e = set_err(j, OPT_JOB, bad[i], "1");
        char want[200];
        snprintf(want, sizeof want, "%s: unknown option", bad[i]);
        ASSERT_STR(e, want);
        free(e);
    }
    opt_job_free(j);
}

/* --------------------------------------------------------- ignored keys -- */

static void unknown_autoscaler_key_is_rejected(void)
{
    struct opt_job *j = opt_job_new();
    const char *bad[] = {KEY("foo"), KEY("utilization.targets"), KEY(""), "job.autoscaler",
                         KEY("Enabled")};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *e = set_err(j, OPT_REQUEST, bad[i], "1");
        if (strcmp(bad[i], "job.autoscaler") == 0) {
            /* not under the prefix (no dot): an ignored key */
            ASSERT(e == NULL);
            continue;
        }
        char want[200];
        snprintf(want, sizeof want, "%s: unknown option", bad[i]);
        ASSERT_STR(e, want);
        free(e);
    }
    opt_job_free(j);
}

static void other_keys_are_ignored_with_a_warning(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c, d;
    ASSERT(set_ok(j, OPT_REQUEST, "pipeline.name", "orders"));
    ASSERT(set_ok(j, OPT_JOB, "taskmanager.memory.foo", "1"));
    ASSERT(set_ok(j, OPT_REQUEST, "listen", "0.0.0.0:1"));    /* a server key is not a job key */
    ASSERT(set_ok(j, OPT_REQUEST, "pipeline.name", "again")); /* listed once */
    const char *w[4] = {NULL, NULL, NULL, NULL};
    ASSERT_EQ(opt_job_n_warnings(j), 3);
    ASSERT_EQ(opt_job_warnings(j, w, 4), 3);
    ASSERT_STR(w[0], "pipeline.name");
    ASSERT_STR(w[1], "taskmanager.memory.foo");
    ASSERT_STR(w[2], "listen");
    ASSERT(w[3] == NULL);
    ASSERT(resolve_err(j, &c) == NULL);
    opt_config_defaults(&d);
    ASSERT(config_diff(&c, &d) == NULL);
    /* not among the effective options */
    ASSERT_EQ(find_key(j, "pipeline.name").found, 0);
    opt_job_clear_layer(j, OPT_REQUEST);
    ASSERT_EQ(opt_job_n_warnings(j), 1);
    ASSERT_EQ(opt_job_warnings(j, w, 1), 1);
    ASSERT_STR(w[0], "taskmanager.memory.foo");
    opt_job_free(j);
}

/* ------------------------------------------------------ defaults, landing -- */

struct each_set {
    struct opt_job *j;
    int n, failed;
};

static void set_default_cb(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    (void)layer;
    struct each_set *s = ud;
    s->n++;
    char *e = NULL;
    if (opt_job_set(s->j, OPT_REQUEST, key, value, &e) < 0) {
        fprintf(stderr, "    default of %s (\"%s\") does not parse: %s\n", key, value, e);
        s->failed++;
    }
    free(e);
}

/* The table is the one home of the defaults: resolving a job with nothing set writes every
 * field of struct core_config (a struct filled with other bytes beforehand comes out the
 * same), and each row's default text, written by a user at the request layer, lands on the
 * same value as the built-in layer. */
static void defaults_come_from_the_table(void)
{
    struct core_config want, got;
    memset(&want, 0x00, sizeof want);
    memset(&got, 0xa5, sizeof got);
    struct opt_job *j = opt_job_new();
    ASSERT(resolve_err(j, &want) == NULL);
    ASSERT(resolve_err(j, &got) == NULL);
    const char *diff = config_diff(&got, &want);
    if (diff)
        fprintf(stderr, "    %s is not written by any row\n", diff);
    ASSERT(diff == NULL);
    opt_config_defaults(&got);
    ASSERT(config_diff(&got, &want) == NULL);

    struct opt_job *src = opt_job_new();
    struct keys ks = {0};
    opt_job_each(src, keys_cb, &ks);
    for (int i = 0; i < ks.n; i++) {
        struct opt_job *one = opt_job_new();
        struct each_set s = {.j = one};
        struct find f = find_key(src, ks.k[i]);
        set_default_cb(&s, ks.k[i], f.value, OPT_BUILTIN);
        ASSERT_EQ(s.failed, 0);
        ASSERT_EQ(find_key(one, ks.k[i]).layer, OPT_REQUEST);
        ASSERT(resolve_err(one, &got) == NULL);
        diff = config_diff(&got, &want);
        if (diff)
            fprintf(stderr, "    %s = \"%s\": %s differs\n", ks.k[i], f.value, diff);
        ASSERT(diff == NULL);
        opt_job_free(one);
    }
    keys_free(&ks);
    opt_job_free(src);
    opt_job_free(j);
}

/* Every row lands somewhere in core_config: a value other than its default changes the
 * resolved config (except flink.rest-client.timeout, which governor accepts but needs not). */
static void every_row_lands_in_core_config(void)
{
    static const char *const candidates[] = {
        "false",
        "true",
        "7",
        "0.42",
        "0.9",
        "3 min",
        "3 mb",
        "AVG",
        "OFF",
        "MAXIMIZE_UTILISATION",
        "a;b",
        "Europe/Paris",
        "* * 10 * * ?",
        "flink",
        "NONE",
    };
    struct core_config def;
    opt_config_defaults(&def);
    struct opt_job *src = opt_job_new();
    struct keys ks = {0};
    opt_job_each(src, keys_cb, &ks);
    for (int i = 0; i < ks.n; i++) {
        struct find f = find_key(src, ks.k[i]);
        bool landed = false;
        for (size_t k = 0; k < sizeof candidates / sizeof candidates[0] && !landed; k++) {
            if (strcmp(candidates[k], f.value) == 0)
                continue;
            struct opt_job *one = opt_job_new();
            struct core_config got;
            char *e = set_err(one, OPT_REQUEST, ks.k[i], candidates[k]);
            char *r = e ? NULL : resolve_err(one, &got);
            landed = !e && !r && config_diff(&got, &def) != NULL;
            free(e);
            free(r);
            opt_job_free(one);
        }
        /* Accepted, read by others than the algorithm (GET /metrics, the timeline). */
        if (strcmp(ks.k[i], KEY("flink.rest-client.timeout")) == 0 ||
            strcmp(ks.k[i], "governor.slo.lag") == 0) {
            ASSERT(!landed);
            continue;
        }
        if (!landed)
            fprintf(stderr, "    %s does not reach core_config\n", ks.k[i]);
        ASSERT(landed);
    }
    keys_free(&ks);
    opt_job_free(src);
}

static void values_land_where_expected(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(set_ok(j, OPT_JOB, KEY("metrics.busy-time.aggregator"), "avg")); /* any case */
    ASSERT(set_ok(j, OPT_JOB, KEY("quota.memory"), "4 gb"));
    ASSERT(set_ok(j, OPT_JOB, KEY("quota.cpu"), "8.5"));
    ASSERT(set_ok(j, OPT_JOB, "taskmanager.memory.process.size", "4g"));
    ASSERT(set_ok(j, OPT_JOB, "taskmanager.memory.managed.fraction", "0.5"));
    ASSERT(set_ok(j, OPT_JOB, "taskmanager.memory.segment-size", "64 kb"));
    ASSERT(set_ok(j, OPT_JOB, "taskmanager.cpu.cores", "2"));
    ASSERT(set_ok(j, OPT_JOB, "taskmanager.numberOfTaskSlots", "4"));
    ASSERT(set_ok(j, OPT_JOB, "taskmanager.network.memory.floating-buffers-per-gate", "16"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.busy_aggregator, CORE_AGG_AVG);
    ASSERT_DEQ(c.quota_memory, 4294967296.0); /* 4 x 1024^3 */
    ASSERT_DEQ(c.quota_cpu, 8.5);
    ASSERT_EQ(c.tm.process_size, 4294967296LL);
    ASSERT_DEQ(c.tm.managed_fraction, 0.5);
    ASSERT_EQ(c.tm.segment_size, 65536);
    ASSERT_DEQ(c.tm_cpu, 2.0);
    ASSERT_EQ(c.slots_per_tm, 4);
    ASSERT_EQ(c.tm.floating_buffers, 16);
    /* unset again from a higher layer */
    ASSERT(set_ok(j, OPT_REQUEST, KEY("quota.memory"), ""));
    ASSERT(set_ok(j, OPT_REQUEST, "taskmanager.memory.process.size", " "));
    ASSERT(set_ok(j, OPT_REQUEST, KEY("metrics.busy-time.aggregator"), "MIN"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT(isnan(c.quota_memory));
    ASSERT_EQ(c.tm.process_size, -1);
    ASSERT_EQ(c.busy_aggregator, CORE_AGG_MIN);
    /* a row with a default cannot be emptied */
    char *e = set_err(j, OPT_REQUEST, KEY("metrics.window"), "");
    ASSERT_CONTAINS(e, "job.autoscaler.metrics.window: \"\" is not a duration");
    free(e);
    opt_job_free(j);
}

static void lists_split_on_semicolons(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.n_exclude_ids, 0);
    ASSERT_EQ(c.n_evaluators, 0);
    ASSERT_EQ(c.n_executors, 0);
    ASSERT(set_ok(j, OPT_JOB, KEY("vertex.exclude.ids"), " a1 ; b2;;c3 "));
    ASSERT(set_ok(j, OPT_JOB, KEY("metrics.custom-evaluators"), "lag;burst"));
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.custom-executors"), "freeze; cap;freeze"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.n_exclude_ids, 3);
    ASSERT_STR(c.exclude_ids[0], "a1");
    ASSERT_STR(c.exclude_ids[1], "b2");
    ASSERT_STR(c.exclude_ids[2], "c3");
    ASSERT_EQ(c.n_evaluators, 2);
    ASSERT_STR(c.evaluators[0], "lag");
    ASSERT_STR(c.evaluators[1], "burst");
    /* duplicate executor names are ignored */
    ASSERT_EQ(c.n_executors, 2);
    ASSERT_STR(c.executors[0], "freeze");
    ASSERT_STR(c.executors[1], "cap");
    char *e = set_err(j, OPT_JOB, KEY("scaling.custom-executors"), "ok;not ok");
    ASSERT_STR(e, "job.autoscaler.scaling.custom-executors: \"not ok\" is not a plugin name "
                  "(letters, digits, '_', '-'; names separated by ';')");
    free(e);
    opt_job_free(j);
}

/* The alignment mode's resolution (core/README.md, Alignment). */
static void alignment_mode_resolution(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_BALANCED); /* step 3 */
    ASSERT(c.align_plugin == NULL);
    /* step 2: only the deprecated key set -> the legacy blocking mode */
    ASSERT(set_ok(j, OPT_SERVER, KEY("scaling.key-group.partitions.adjust.mode"), "EVENLY_SPREAD"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_LEGACY_EVENLY_SPREAD);
    ASSERT(set_ok(j, OPT_JOB, KEY("scaling.key-group.partitions.adjust.mode"),
                  "maximize_utilisation"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION);
    /* step 1: the new key set explicitly wins, even at a lower layer, even = default text */
    ASSERT(set_ok(j, OPT_SERVER, KEY("scaling.parallelism-alignment.mode"), "BALANCED"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_BALANCED);
    ASSERT(set_ok(j, OPT_REQUEST, KEY("scaling.parallelism-alignment.mode"), "EVENLY_SPREAD"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_EVENLY_SPREAD);
    ASSERT(set_ok(j, OPT_REQUEST, KEY("scaling.parallelism-alignment.mode"), "OFF"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_OFF);
    /* any other name is a plugin; built-in names match with exact case only */
    ASSERT(set_ok(j, OPT_REQUEST, KEY("scaling.parallelism-alignment.mode"), "snap_down"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_PLUGIN);
    ASSERT_STR(c.align_plugin, "snap_down");
    ASSERT(set_ok(j, OPT_REQUEST, KEY("scaling.parallelism-alignment.mode"), "balanced"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.align_mode, CORE_ALIGN_PLUGIN);
    ASSERT_STR(c.align_plugin, "balanced");
    char *e = set_err(j, OPT_REQUEST, KEY("scaling.parallelism-alignment.mode"), "a.b");
    ASSERT_STR(e, "job.autoscaler.scaling.parallelism-alignment.mode: \"a.b\" is neither one of "
                  "BALANCED, EVENLY_SPREAD, OFF nor a plugin name (letters, digits, '_', '-')");
    free(e);
    e = set_err(j, OPT_REQUEST, KEY("scaling.key-group.partitions.adjust.mode"), "BALANCED");
    ASSERT_STR(e, "job.autoscaler.scaling.key-group.partitions.adjust.mode: \"BALANCED\" is not "
                  "one of EVENLY_SPREAD, MAXIMIZE_UTILISATION");
    free(e);
    opt_job_free(j);
}

/* ------------------------------------------------------------------ hash -- */

static void hash_is_stable_and_sensitive(void)
{
    struct opt_job *a = opt_job_new(), *b = opt_job_new();
    char ha[17], hb[17];
    opt_job_hash(a, ha);
    ASSERT_EQ(strlen(ha), 16);
    ASSERT_EQ(strspn(ha, "0123456789abcdef"), 16);
    /* same effective options set in another order and at other layers: same hash */
    ASSERT(set_ok(a, OPT_JOB, KEY("utilization.target"), "0.6"));
    ASSERT(set_ok(a, OPT_JOB, KEY("scaling.custom-executor.x.p"), "1"));
    ASSERT(set_ok(b, OPT_REQUEST, KEY("scaling.custom-executor.x.p"), "1"));
    ASSERT(set_ok(b, OPT_SERVER, KEY("utilization.target"), "0.6"));
    opt_job_hash(a, ha);
    opt_job_hash(b, hb);
    ASSERT_STR(ha, hb);
    /* ignored keys do not count */
    ASSERT(set_ok(b, OPT_REQUEST, "pipeline.name", "x"));
    opt_job_hash(b, hb);
    ASSERT_STR(ha, hb);
    /* a changed value or plugin parameter does */
    ASSERT(set_ok(b, OPT_REQUEST, KEY("scaling.custom-executor.x.p"), "2"));
    opt_job_hash(b, hb);
    ASSERT(strcmp(ha, hb) != 0);
    struct opt_job *c = opt_job_clone(a);
    char hc[17];
    opt_job_hash(c, hc);
    ASSERT_STR(ha, hc);
    opt_job_free(a);
    opt_job_free(b);
    opt_job_free(c);
}

/* --------------------------------------------------------- server options -- */

static void server_defaults(void)
{
    struct opt_server s;
    opt_server_init(&s);
    ASSERT_STR(s.listen, "127.0.0.1:8080");
    ASSERT_STR(s.db, "./governor.db");
    ASSERT_STR(s.policies, "./policies");
    ASSERT(s.token_file == NULL);
    ASSERT(s.config == NULL);
    ASSERT_STR(s.log_level, "info");
    ASSERT_EQ(s.max_body_bytes, 1048576); /* 1 MiB */
    ASSERT_EQ(s.max_header_bytes, 16384); /* 16 KiB */
    ASSERT_EQ(s.read_timeout_ms, 10000);  /* 10 s */
    ASSERT_STR(s.synchronous, "FULL");
    ASSERT_EQ(s.max_batch, 256);
    ASSERT_EQ(s.sql_timeout_ms, 2000);
    ASSERT_EQ(s.sql_max_rows, 10000);
    ASSERT_EQ(s.sql_max_bytes, 8 * 1024 * 1024);
    ASSERT_EQ(s.sql_max_value, 4 * 1024 * 1024);
    ASSERT_EQ(s.audit_retention_ms, 7776000000LL); /* 90 x 86400000 */
    ASSERT_EQ(s.plugin_instructions, 1000000);
    ASSERT_EQ(s.plugin_timeout_ms, 100);
    ASSERT_EQ(s.plugin_memory_bytes, 67108864); /* 64 x 1024^2 */
    opt_server_deinit(&s);
}

static void server_set(void)
{
    struct opt_server s;
    opt_server_init(&s);
    char *e = NULL;
    ASSERT_EQ(opt_server_set(&s, "listen", "127.0.0.1:9999", &e), 0);
    ASSERT_STR(s.listen, "127.0.0.1:9999");
    ASSERT_EQ(opt_server_set(&s, "synchronous", "normal", &e), 0);
    ASSERT_STR(s.synchronous, "NORMAL");
    ASSERT_EQ(opt_server_set(&s, "token-file", "/etc/governor/tokens", &e), 0);
    ASSERT_STR(s.token_file, "/etc/governor/tokens");
    ASSERT_EQ(opt_server_set(&s, "max-body", "4 mb", &e), 0);
    ASSERT_EQ(s.max_body_bytes, 4194304);
    ASSERT_EQ(opt_server_set(&s, "audit-retention", "0", &e), 0);
    ASSERT_EQ(s.audit_retention_ms, 0);
    ASSERT_EQ(opt_server_set(&s, "log-level", "DEBUG", &e), 0);
    ASSERT_STR(s.log_level, "debug");
    ASSERT_EQ(opt_server_set(&s, "synchronous", "EXTRA", &e), -1);
    ASSERT_STR(e, "synchronous: \"EXTRA\" is not one of FULL, NORMAL, OFF");
    free(e);
    e = NULL;
    ASSERT_EQ(opt_server_set(&s, "max-batch", "0", &e), -1);
    ASSERT_STR(e, "max-batch: \"0\" is out of range [1, inf)");
    free(e);
    e = NULL;
    ASSERT_EQ(opt_server_set(&s, "plugin-timeout", "soon", &e), -1);
    ASSERT_CONTAINS(e, "plugin-timeout: \"soon\" is not a duration");
    free(e);
    e = NULL;
    ASSERT_EQ(opt_server_set(&s, "job.autoscaler.enabled", "true", &e), -1);
    ASSERT_STR(e, "job.autoscaler.enabled: unknown server option");
    free(e);
    opt_server_deinit(&s);
}

static char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/governor-opt-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void server_config_file(void)
{
    struct opt_server s;
    opt_server_init(&s);
    struct opt_job *j = opt_job_new();
    char *path = write_tmp("# governor.conf\n"
                           "\n"
                           "listen = 127.0.0.1:7000\n"
                           "  max-batch=64\n"
                           "db = \"/var/lib/governor/db\"\n"
                           "job.autoscaler.utilization.target = 0.6\n"
                           "job.autoscaler.excluded.periods = * * 9-17 ? * 2#1\n"
                           "taskmanager.numberOfTaskSlots = 2\n"
                           "job.autoscaler.scaling.custom-executor.freeze.window = 1 h\n");
    char *e = NULL;
    ASSERT_EQ(opt_server_load_file(&s, j, path, &e), 0);
    ASSERT_STR(s.listen, "127.0.0.1:7000");
    ASSERT_EQ(s.max_batch, 64);
    ASSERT_STR(s.db, "/var/lib/governor/db");
    struct find f = find_key(j, KEY("utilization.target"));
    ASSERT_STR(f.value, "0.6");
    ASSERT_EQ(f.layer, OPT_SERVER);
    ASSERT_STR(find_key(j, KEY("excluded.periods")).value, "* * 9-17 ? * 2#1");
    ASSERT_EQ(find_key(j, "taskmanager.numberOfTaskSlots").layer, OPT_SERVER);
    ASSERT_EQ(find_key(j, KEY("scaling.custom-executor.freeze.window")).layer, OPT_SERVER);
    unlink(path);
    free(path);

    struct {
        const char *text, *want;
    } bad[] = {
        {"listen = x\n\nmax-batch = none\n", ":3: max-batch: \"none\" is not an integer"},
        {"# c\nbogus = 1\n", ":2: bogus: unknown option"},
        {"pipeline.name = x\n", ":1: pipeline.name: unknown option"},
        {"job.autoscaler.utilization.target = 2\n",
         ":1: job.autoscaler.utilization.target: \"2\" is out of range [0, 1]"},
        {"job.autoscaler.nope = 2\n", ":1: job.autoscaler.nope: unknown option"},
        {"listen\n", ":1: expected `key = value`"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        path = write_tmp(bad[i].text);
        e = NULL;
        ASSERT_EQ(opt_server_load_file(&s, j, path, &e), -1);
        char want[300];
        snprintf(want, sizeof want, "%s%s", path, bad[i].want);
        ASSERT_STR(e, want);
        free(e);
        unlink(path);
        free(path);
    }
    e = NULL;
    ASSERT_EQ(opt_server_load_file(&s, j, "/nonexistent/governor.conf", &e), -1);
    ASSERT_CONTAINS(e, "/nonexistent/governor.conf: ");
    free(e);
    opt_job_free(j);
    opt_server_deinit(&s);
}

/* ---------------------------------------------------------------- output -- */

static char *capture(void (*print)(FILE *))
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    print(f);
    fclose(f);
    return buf;
}

static void table_lists_every_option(void)
{
    char *t = capture(opt_print_table);
    struct opt_job *j = opt_job_new();
    struct keys ks = {0};
    opt_job_each(j, keys_cb, &ks);
    for (int i = 0; i < ks.n; i++)
        ASSERT_CONTAINS(t, ks.k[i]);
    ASSERT_CONTAINS(t, "plugin-memory");
    ASSERT_CONTAINS(t, "`job.autoscaler.target.utilization`");
    /* Wrapped at 100 columns, each description indented under its option. */
    for (const char *l = t; *l;) {
        size_t n = strcspn(l, "\n");
        ASSERT(n <= 100);
        l += n + (l[n] == '\n');
    }
    ASSERT_CONTAINS(t, "  job.autoscaler.metrics.window  duration, default 15 min, allowed [1 ms, "
                       "3650 d]\n      Window over which metrics are averaged.\n");
    char *m = capture(opt_print_markdown);
    ASSERT_CONTAINS(m, "| `job.autoscaler.utilization.target` | double | `0.7` | [0, 1] |");
    ASSERT_CONTAINS(m, "| `listen` | string | `127.0.0.1:8080` |");
    keys_free(&ks);
    opt_job_free(j);
    free(t);
    free(m);
}

/* The block of page (a file of docs/) between begin and end equals what print prints;
 * UPDATE_GOLDEN=1 rewrites it. */
static void page_block_is_current(const char *page, const char *begin, const char *end,
                                  void (*print)(FILE *))
{
    char *readme = testfile_read(page);
    ASSERT(readme != NULL);
    char *md = capture(print);
    char *b = strstr(readme, begin);
    char *e = b ? strstr(b, end) : NULL;
    ASSERT(b && e);
    b += strlen(begin);
    bool same = (size_t)(e - b) == strlen(md) && memcmp(b, md, strlen(md)) == 0;
    const char *upd = getenv("UPDATE_GOLDEN");
    if (!same && upd && strcmp(upd, "1") == 0) {
        FILE *f = fopen(page, "wb");
        ASSERT(f != NULL);
        fwrite(readme, 1, (size_t)(b - readme), f);
        fputs(md, f);
        fputs(e, f);
        fclose(f);
        fprintf(stderr, "    %s: %s block rewritten\n", page, begin);
        same = true;
    }
    if (!same)
        fprintf(stderr,
                "    %s's %s block is stale: run UPDATE_GOLDEN=1 "
                "build/test_options from the repository root\n",
                page, begin);
    ASSERT(same);
    free(readme);
    free(md);
}

/* docs/options.md's generated option tables equal opt_print_markdown(). */
static void readme_table_is_current(void)
{
    page_block_is_current("docs/options.md", "<!-- options:begin -->\n", "<!-- options:end -->",
                          opt_print_markdown);
}

/* docs/api.md's limits table equals opt_print_limits_markdown(): every row that names an option
 * shows that option's default, so the table cannot drift from the options table. */
static void readme_limits_are_current(void)
{
    char *m = capture(opt_print_limits_markdown);
    ASSERT_CONTAINS(m, "| `5000` | `max-vertices` | 413 |");
    ASSERT_CONTAINS(m, "| 1000000 | fixed | 400 |");
    free(m);
    page_block_is_current("docs/api.md", "<!-- limits:begin -->\n", "<!-- limits:end -->",
                          opt_print_limits_markdown);
}

/* The limits the server starts with are the table's defaults, and each can be set. */
static void limits_are_options(void)
{
    struct opt_limits l;
    opt_limits_defaults(&l);
    ASSERT_EQ(l.vertices, 5000);
    ASSERT_EQ(l.edges, 50000);
    ASSERT_EQ(l.config_keys, 1000);
    ASSERT_EQ(l.rebalance_items, 10000);
    ASSERT_EQ(l.page_rows, 5000);
    struct opt_server s;
    opt_server_init(&s);
    char *err = NULL;
    ASSERT_EQ(opt_server_set(&s, "max-vertices", "50000", &err), 0);
    ASSERT_EQ(s.limits.vertices, 50000);
    ASSERT_EQ(opt_server_set(&s, "max-config-keys", "0", &err), -1);
    ASSERT_CONTAINS(err, "max-config-keys");
    free(err);
    opt_server_deinit(&s);
}

/* Setting only governor.profile gives what opt_config_set_profile sets on the defaults:
 * the rows that follow the profile apply an unset value as resolution does. */
static void profile_rows_match_core(void)
{
    static const char *const names[] = {"governor", "flink"};
    static const enum core_profile ps[] = {CORE_PROFILE_GOVERNOR, CORE_PROFILE_FLINK};
    for (int k = 0; k < 2; k++) {
        struct opt_job *j = opt_job_new();
        struct core_config got, want;
        ASSERT(set_ok(j, OPT_SERVER, "governor.profile", names[k]));
        ASSERT(resolve_err(j, &got) == NULL);
        opt_config_defaults(&want);
        opt_config_set_profile(&want, ps[k]);
        const char *diff = config_diff(&got, &want);
        if (diff)
            fprintf(stderr, "  profile %s: %s differs\n", names[k], diff);
        ASSERT(diff == NULL);
        opt_job_free(j);
    }
}

/* governor.profile sets the defaults of its safeguards; each can still be set on its own. The
 * governor profile refuses utilization.target = 0, the flink one takes it (core/README.md,
 * Options). */
static void profile_and_safeguards(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.profile, CORE_PROFILE_GOVERNOR);
    ASSERT(c.plausibility && c.window_keep_full);
    ASSERT_DEQ(c.plausibility_ratio, 100.0);
    ASSERT(set_ok(j, OPT_SERVER, "governor.profile", "flink"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_EQ(c.profile, CORE_PROFILE_FLINK);
    ASSERT(!c.plausibility && !c.window_keep_full);
    ASSERT(set_ok(j, OPT_JOB, "governor.plausibility.enabled", "true"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT(c.plausibility && !c.window_keep_full);
    ASSERT(set_ok(j, OPT_REQUEST, "governor.profile", "GOVERNOR")); /* any case */
    ASSERT(set_ok(j, OPT_REQUEST, "governor.window.keep-full", "false"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT(c.plausibility && !c.window_keep_full);

    ASSERT(set_ok(j, OPT_REQUEST, KEY("utilization.target"), "0"));
    char *e = resolve_err(j, &c);
    ASSERT_CONTAINS(e, "job.autoscaler.utilization.target: \"0\" is out of range (0, 1] (0 is "
                       "accepted only with governor.profile = flink)");
    free(e);
    ASSERT(set_ok(j, OPT_REQUEST, "governor.profile", "flink"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.0);

    /* governor.utilization.min-target (issue 23): 0.01 is refused naming the floor; lowered,
     * it passes; the flink profile has no floor. */
    ASSERT(set_ok(j, OPT_REQUEST, "governor.profile", "governor"));
    ASSERT(set_ok(j, OPT_REQUEST, KEY("utilization.target"), "0.01"));
    e = resolve_err(j, &c);
    ASSERT_CONTAINS(e, "job.autoscaler.utilization.target: \"0.01\" is below "
                       "governor.utilization.min-target (0.1)");
    free(e);
    ASSERT(set_ok(j, OPT_REQUEST, "governor.utilization.min-target", "0.01"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT_DEQ(c.util_target, 0.01);
    ASSERT(set_ok(j, OPT_REQUEST, "governor.utilization.min-target", ""));
    ASSERT(set_ok(j, OPT_REQUEST, "governor.profile", "flink"));
    ASSERT(resolve_err(j, &c) == NULL);
    ASSERT(isnan(c.util_min_target));
    ASSERT(set_ok(j, OPT_REQUEST, KEY("utilization.target"), "0"));

    /* Issue 23's mechanisms follow the profile: on (with their numbers) under governor, off
     * under flink, each settable on its own (0 turns a number off). */
    struct opt_job *k = opt_job_new();
    ASSERT(resolve_err(k, &c) == NULL);
    ASSERT_DEQ(c.level_shift_z, 3);
    ASSERT_DEQ(c.bounds_z, 2);
    ASSERT_DEQ(c.trend_z, 2);
    ASSERT_DEQ(c.restart_cost_w, 4);
    ASSERT_EQ(c.not_applied_max, 3);
    ASSERT(c.scalability_curve && c.scale_down_one_step && c.window_refill);
    ASSERT(set_ok(k, OPT_SERVER, "governor.profile", "flink"));
    ASSERT(resolve_err(k, &c) == NULL);
    ASSERT(isnan(c.level_shift_z) && isnan(c.bounds_z) && isnan(c.trend_z) &&
           isnan(c.restart_cost_w));
    ASSERT_EQ(c.not_applied_max, 0);
    ASSERT(!c.scalability_curve && !c.scale_down_one_step && !c.window_refill);
    ASSERT(set_ok(k, OPT_JOB, "governor.not-applied.max", "5"));
    ASSERT(set_ok(k, OPT_JOB, "governor.rates.level-shift", "2.5"));
    ASSERT(resolve_err(k, &c) == NULL);
    ASSERT_EQ(c.not_applied_max, 5);
    ASSERT_DEQ(c.level_shift_z, 2.5);
    e = set_err(k, OPT_JOB, "governor.not-applied.max", "0");
    ASSERT_CONTAINS(e, "governor.not-applied.max: \"0\" is out of range [1, 1000]");
    free(e);
    opt_job_free(k);

    e = set_err(j, OPT_REQUEST, "governor.profile", "strict");
    ASSERT_CONTAINS(e, "governor.profile: \"strict\" is not one of governor, flink");
    free(e);
    e = set_err(j, OPT_REQUEST, "governor.plausibility.max-ratio", "1");
    ASSERT_CONTAINS(e, "governor.plausibility.max-ratio: \"1\" is out of range (1, inf)");
    free(e);
    /* a governor.* key that is not a row is an error, like a job.autoscaler.* one */
    e = set_err(j, OPT_REQUEST, "governor.profle", "flink");
    ASSERT_CONTAINS(e, "governor.profle: unknown option");
    free(e);
    ASSERT_EQ(opt_job_n_warnings(j), 0);
    opt_job_free(j);
}

TEST_MAIN(TEST_ENTRY(profile_and_safeguards), TEST_ENTRY(profile_rows_match_core),
          TEST_ENTRY(parse_cases), TEST_ENTRY(numbers_are_parsed_strictly),
          TEST_ENTRY(every_error_names_the_key), TEST_ENTRY(every_duration_is_bounded),
          TEST_ENTRY(single_value_ranges), TEST_ENTRY(utilization_bounds_depend_on_target),
          TEST_ENTRY(feature_gated_ranges), TEST_ENTRY(min_parallelism_not_above_max),
          TEST_ENTRY(first_error_wins_in_spec_order), TEST_ENTRY(no_cross_checks_when_disabled),
          TEST_ENTRY(excluded_periods_are_checked), TEST_ENTRY(unknown_time_zone_is_refused),
          TEST_ENTRY(timezone_names), TEST_ENTRY(deprecated_aliases_map_to_the_canonical_key),
          TEST_ENTRY(kubernetes_operator_prefix_is_a_fallback),
          TEST_ENTRY(layers_take_precedence_in_order), TEST_ENTRY(failed_set_changes_nothing),
          TEST_ENTRY(clone_is_deep), TEST_ENTRY(plugin_params_are_kept_and_stripped),
          TEST_ENTRY(unknown_autoscaler_key_is_rejected),
          TEST_ENTRY(other_keys_are_ignored_with_a_warning),
          TEST_ENTRY(defaults_come_from_the_table), TEST_ENTRY(every_row_lands_in_core_config),
          TEST_ENTRY(values_land_where_expected), TEST_ENTRY(lists_split_on_semicolons),
          TEST_ENTRY(alignment_mode_resolution), TEST_ENTRY(hash_is_stable_and_sensitive),
          TEST_ENTRY(server_defaults), TEST_ENTRY(server_set), TEST_ENTRY(server_config_file),
          TEST_ENTRY(table_lists_every_option), TEST_ENTRY(readme_table_is_current),
          TEST_ENTRY(readme_limits_are_current), TEST_ENTRY(limits_are_options))
