/*
 * options_table.c - the one options table (see options.h, options_int.h). Every option governor
 * knows is one row of opt__rows[]: its name, scope, type, default (as the text a user would
 * write), range, deprecated alias, help text, and where the parsed value lands (an offset into
 * struct core_config or struct opt_server, or an apply hook). The parsers, layering, validation,
 * `governor options` and docs/options.md's tables are all driven by that one table (options.c
 * parses, options_job.c layers, options_print.c prints); nothing in this file parses or prints.
 *
 * The default column is the one home of every default: the core has none of its own and is
 * always handed a struct core_config resolved from these rows (every field of it has a row,
 * whose default text lands in it like a value a user wrote), and the server's limits take
 * theirs from opt_server_init. Text and not a typed value, because the text is what
 * `governor options` and docs/options.md show ("15 min", "1.0", "128 mb"), and parsing it is the
 * path every user value takes anyway, so a default cannot mean something its text does not.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "options/options.h"
#include "options/options_int.h"

/* ---------------------------------------------------------------- the table -- */

#define JOB(n)     .name = "job.autoscaler." n, .scope = S_JOB
#define GOV(n)     .name = "governor." n, .scope = S_JOB
#define CLUSTER(n) .name = n, .scope = S_CLUSTER
#define SERVER(n)  .name = n, .scope = S_SERVER
#define CF(f)      .off = offsetof(struct core_config, f)
#define SV(f)      .off = offsetof(struct opt_server, f)
#define MIN(x)     .min = (x), .has_min = 1
#define MINX(x)    .min = (x), .has_min = 2
#define MAX(x)     .max = (x), .has_max = 1
#define MAXX(x)    .max = (x), .has_max = 2
/*
 * The longest duration a job option or audit-retention may be: ten years. Durations are
 * added to and subtracted from sample times (years 0000-9999, about +-2.5e14 ms), so this
 * keeps every such sum far inside int64 (the core saturates all the same); Flink's own
 * parser would take up to 2^63 - 1 ms, which overflows `at + interval`.
 */
#define DUR_MAX (3650 * MS_D)

static const char *const agg_values[] = {"MAX", "AVG", "MIN", NULL};
static const char *const align_values[] = {"BALANCED", "EVENLY_SPREAD", "OFF", NULL};
static const char *const adjust_values[] = {"EVENLY_SPREAD", "MAXIMIZE_UTILISATION", NULL};
static const char *const sync_values[] = {"FULL", "NORMAL", "OFF", NULL};
static const char *const level_values[] = {"debug", "info", "warn", "error", NULL};
static const char *const profile_values[] = {"governor", "flink", NULL};
static const char *const algorithm_values[] = {"THROUGHPUT_BASED", "NONE", NULL};

static void apply_aggregator(struct core_config *c, const struct opt_row *r, const struct val *v,
                             const char *text, enum opt_layer layer, const struct opt_job *j);
static void apply_adjust_mode(struct core_config *c, const struct opt_row *r, const struct val *v,
                              const char *text, enum opt_layer layer, const struct opt_job *j);
static void apply_align_mode(struct core_config *c, const struct opt_row *r, const struct val *v,
                             const char *text, enum opt_layer layer, const struct opt_job *j);
static void apply_profile(struct core_config *c, const struct opt_row *r, const struct val *v,
                          const char *text, enum opt_layer layer, const struct opt_job *j);

/*
 * The rows. Order matters in three places only: the legacy adjust.mode row comes before the
 * parallelism-alignment.mode row (the second one's hook overrides the first when set
 * explicitly: core/README.md, Alignment), governor.profile comes before the safeguards whose
 * default it sets, and a gate row comes before the rows it gates (for readability).
 */
const struct opt_row opt__rows[] = {
    /* ---- the reference's job options (prefix job.autoscaler.; docs/options.md) and governor's own
       ---- */
    {JOB("enabled"), .type = T_BOOL, .def = "true", .land = L_BOOL, CF(enabled),
     .help = "Master switch. governor's default is true (Flink: false); false clears the "
             "job's autoscaler state and every answer is NO_CHANGE / SCALING_DISABLED."},
    {JOB("scaling.enabled"), .type = T_BOOL, .def = "true", .land = L_BOOL, CF(scaling_enabled),
     .help = "false = advisor mode: decisions are computed and reported but not executed."},
    {JOB("metrics.window"), .type = T_DURATION, MAX(DUR_MAX), .def = "15 min", .land = L_I64,
     CF(metrics_window_ms), MIN(1), .help = "Window over which metrics are averaged."},
    {JOB("stabilization.interval"), .type = T_DURATION, MAX(DUR_MAX), .def = "5 min", .land = L_I64,
     CF(stabilization_ms), MIN(0),
     .help = "Period after the job becomes RUNNING whose metrics are ignored."},
    {JOB("excluded.periods"), .type = T_LIST, .def = "", .flags = F_PERIODS, .land = L_STR,
     CF(excluded_periods),
     .help = "Periods in which scaling is not executed: daily `H:M[:S]-H:M[:S]` or Quartz "
             "cron, `&&` to combine one of each, `;` between periods."},
    {JOB("excluded.periods.timezone"), .type = T_TZ, .def = "UTC", .land = L_STR, CF(excluded_tz),
     .help = "IANA time zone in which excluded periods are read (governor)."},
    {JOB("utilization.target"), .type = T_DOUBLE, .def = "0.7", MIN(0), MAX(1),
     .alias = "job.autoscaler.target.utilization", .land = L_DOUBLE, CF(util_target),
     .help = "Target busy-time utilization of each vertex."},
    {JOB("target.utilization.boundary"), .type = T_DOUBLE, .def = "0.3", MIN(0),
     .flags = F_DEPRECATED, .land = L_DOUBLE, CF(util_boundary),
     .help = "Tolerance around the target; the default for utilization.max/min "
             "(target +/- boundary)."},
    {JOB("utilization.max"), .type = T_DOUBLE, .def = "", MIN(0), MAX(1), .flags = F_OPTIONAL,
     .land = L_DOUBLE, CF(util_max),
     .help = "Upper utilization bound; must lie in [utilization.target, 1]."},
    {JOB("utilization.min"), .type = T_DOUBLE, .def = "", MIN(0), MAX(1), .flags = F_OPTIONAL,
     .land = L_DOUBLE, CF(util_min),
     .help = "Lower utilization bound; must lie in [0, utilization.target]."},
    {JOB("scale-down.interval"), .type = T_DURATION, MAX(DUR_MAX), .def = "1 h", MIN(0),
     .alias = "job.autoscaler.scale-up.grace-period", .land = L_I64, CF(scale_down_interval_ms),
     .help = "How long a scale-down is delayed (the highest proposal in it wins); 0 = "
             "scale down at once."},
    {JOB("vertex.min-parallelism"), .type = T_INT, .def = "1", MIN(1), .land = L_INT,
     CF(vertex_min_parallelism), .help = "Lowest parallelism the autoscaler proposes."},
    {JOB("vertex.max-parallelism"), .type = T_INT, .def = "200", MIN(1), .land = L_INT,
     CF(vertex_max_parallelism), .help = "Highest parallelism the autoscaler proposes."},
    {JOB("scale-down.max-factor"), .type = T_DOUBLE, .def = "0.6", MIN(0), MAX(1), .land = L_DOUBLE,
     CF(scale_down_max_factor),
     .help = "Largest relative scale-down in one step (0.6: to no less than 40%)."},
    {JOB("scale-up.max-factor"), .type = T_DOUBLE, .def = "100000", MIN(0), .land = L_DOUBLE,
     CF(scale_up_max_factor), .help = "Largest relative scale-up in one step."},
    {JOB("catch-up.duration"), .type = T_DURATION, MAX(DUR_MAX), .def = "30 min", MIN(0),
     .land = L_I64, CF(catch_up_ms),
     .help = "Time to work off the backlog after a scaling; 0 disables backlog-based scaling."},
    {JOB("restart.time"), .type = T_DURATION, MAX(DUR_MAX), .def = "5 min", MIN(0), .land = L_I64,
     CF(restart_time_ms), .help = "Expected restart time (used until one is observed)."},
    {JOB("restart.time-tracking.enabled"), .type = T_BOOL, .def = "false", .land = L_BOOL,
     CF(restart_tracking_enabled), .help = "Measure restart times instead of assuming them."},
    {JOB("restart.time-tracking.limit"), .type = T_DURATION, MAX(DUR_MAX), .def = "15 min", MIN(0),
     .land = L_I64, CF(restart_tracking_limit_ms),
     .help = "Upper bound on an observed restart time."},
    {JOB("backlog-processing.lag-threshold"), .type = T_DURATION, MAX(DUR_MAX), .def = "5 min",
     MIN(0), .land = L_I64, CF(backlog_lag_threshold_ms),
     .help = "Lag above which the job counts as processing backlog."},
    {JOB("observed-true-processing-rate.lag-threshold"), .type = T_DURATION, MAX(DUR_MAX),
     .def = "30 s", MIN(0), .land = L_I64, CF(otpr_lag_threshold_ms),
     .help = "Lag above which the observed true processing rate of sources is measured."},
    {JOB("observed-true-processing-rate.switch-threshold"), .type = T_DOUBLE, .def = "0.15", MIN(0),
     .land = L_DOUBLE, CF(otpr_switch_threshold),
     .help = "Relative difference at which the observed rate replaces the busy-time one."},
    {JOB("observed-true-processing-rate.min-observations"), .type = T_INT, .def = "2", MIN(1),
     .land = L_INT, CF(otpr_min_observations),
     .help = "Observations needed before the observed rate is used."},
    {JOB("scaling.effectiveness.detection.enabled"), .type = T_BOOL, .def = "false", .land = L_BOOL,
     CF(effectiveness_detection),
     .help = "Block further scale-ups of a vertex whose last scale-up was ineffective."},
    {JOB("scaling.effectiveness.threshold"), .type = T_DOUBLE, .def = "0.1", MIN(0), MAX(1),
     .gate = "job.autoscaler.scaling.effectiveness.detection.enabled", .land = L_DOUBLE,
     CF(effectiveness_threshold),
     .help = "Share of the expected gain a scale-up must achieve to count as effective."},
    {JOB("memory.gc-pressure.threshold"), .type = T_DOUBLE, .def = "1.0", MIN(0), MAX(1),
     .land = L_DOUBLE, CF(gc_pressure_threshold),
     .help = "GC time share above which scaling is blocked (1.0 = off)."},
    {JOB("memory.heap-usage.threshold"), .type = T_DOUBLE, .def = "1.0", MIN(0), MAX(1),
     .land = L_DOUBLE, CF(heap_usage_threshold),
     .help = "Heap usage above which scaling is blocked (1.0 = off)."},
    {JOB("memory.tuning.enabled"), .type = T_BOOL, .def = "false", .land = L_BOOL,
     CF(mem_tuning_enabled),
     .help = "Apply the TaskManager memory recommendation (it is always computed)."},
    {JOB("memory.tuning.overhead"), .type = T_DOUBLE, .def = "0.2", MIN(0), MAX(1),
     .gate = "job.autoscaler.memory.tuning.enabled", .land = L_DOUBLE, CF(mem_tuning_overhead),
     .help = "Head room added to observed heap and metaspace use."},
    {JOB("memory.tuning.maximize-managed-memory"), .type = T_BOOL, .def = "false", .land = L_BOOL,
     CF(mem_maximize_managed), .help = "Give all memory left over to managed memory."},
    {JOB("memory.tuning.scale-down-compensation.enabled"), .type = T_BOOL, .def = "true",
     .land = L_BOOL, CF(mem_scale_down_compensation),
     .help = "Grow heap when a scale-down means fewer TaskManagers."},
    {JOB("history.max.count"), .type = T_INT, .def = "3", MIN(0), .land = L_INT,
     CF(history_max_count), .help = "Scaling history entries kept per vertex."},
    {JOB("history.max.age"), .type = T_DURATION, MAX(DUR_MAX), .def = "24 h", MIN(0), .land = L_I64,
     CF(history_max_age_ms), .help = "Age after which scaling history entries are dropped."},
    {JOB("metrics.busy-time.aggregator"), .type = T_ENUM, .def = "MAX", .values = agg_values,
     .land = L_HOOK, .apply = apply_aggregator,
     .help = "How busy time is aggregated over subtasks."},
    {JOB("vertex.exclude.ids"), .type = T_LIST, .def = "", .land = L_LIST, CF(exclude_ids),
     .off2 = offsetof(struct core_config, n_exclude_ids),
     .help = "Vertex ids that are never scaled."},
    {JOB("scaling.event.interval"), .type = T_DURATION, MAX(DUR_MAX), .def = "30 min", MIN(0),
     .land = L_I64, CF(event_interval_ms),
     .help = "Interval within which repeated events are suppressed."},
    {JOB("flink.rest-client.timeout"), .type = T_DURATION, MAX(DUR_MAX), .def = "10 s", MIN(0),
     .land = L_NONE,
     .help = "How long `governor flink` waits for one REST call (its --timeout default); the "
             "algorithm does not read it."},
    {JOB("quota.memory"), .type = T_MEMORY, .def = "", .flags = F_OPTIONAL, .land = L_DMEM,
     CF(quota_memory), .help = "Total TaskManager memory a scale-up may not exceed."},
    {JOB("quota.cpu"), .type = T_DOUBLE, .def = "", MIN(0), .flags = F_OPTIONAL, .land = L_DOUBLE,
     CF(quota_cpu), .help = "Total TaskManager CPU a scale-up may not exceed."},
    {JOB("scaling.key-group.partitions.adjust.mode"), .type = T_ENUM, .def = "",
     .values = adjust_values, .flags = F_DEPRECATED | F_OPTIONAL, .land = L_HOOK,
     .apply = apply_adjust_mode,
     .help = "Legacy (blocking) alignment; used only when set and "
             "scaling.parallelism-alignment.mode is not."},
    {JOB("scaling.parallelism-alignment.mode"), .type = T_ENUM, .def = "BALANCED",
     .values = align_values, .flags = F_OPEN | F_CASE, .land = L_HOOK, .apply = apply_align_mode,
     .help = "How a new parallelism is aligned to key groups / partitions; another name "
             "selects the alignment plugin of that name."},
    {JOB("observed-scalability.enabled"), .type = T_BOOL, .def = "false", .land = L_BOOL,
     CF(observed_scalability_enabled),
     .help = "Correct the scale factor by the scalability observed in the history."},
    {JOB("observed-scalability.min-observations"), .type = T_INT, .def = "3", MIN(0), .land = L_INT,
     CF(observed_scalability_min_observations),
     .help = "History entries needed before the coefficient is used."},
    {JOB("observed-scalability.coefficient-min"), .type = T_DOUBLE, .def = "0.5", MIN(0.01), MAX(1),
     .gate = "job.autoscaler.observed-scalability.enabled", .land = L_DOUBLE,
     CF(observed_scalability_coefficient_min), .help = "Lowest scalability coefficient assumed."},
    {JOB("metrics.custom-evaluators"), .type = T_LIST, .def = "", .flags = F_NAMES, .land = L_LIST,
     CF(evaluators), .off2 = offsetof(struct core_config, n_evaluators),
     .help = "Evaluator plugins, chained in this order (a name counts once; at most 16); "
             "parameters under `job.autoscaler.metrics.custom-evaluator.<name>.<param>`."},
    {JOB("scaling.custom-executors"), .type = T_LIST, .def = "", .flags = F_NAMES, .land = L_LIST,
     CF(executors), .off2 = offsetof(struct core_config, n_executors),
     .help = "Executor plugins (by priority; a name counts once; at most 16); parameters "
             "under `job.autoscaler.scaling.custom-executor.<name>.<param>`."},
    {JOB("skew.enabled"), .type = T_BOOL, .def = "true", .land = L_BOOL, CF(skew_enabled),
     .help = "Diagnose hot keys: no useless scale-up past the key's bound (governor)."},
    {JOB("skew.min-ratio"), .type = T_DOUBLE, .def = "1.5", MIN(1), .land = L_DOUBLE,
     CF(skew_min_ratio),
     .help = "Max/avg busy time below which a vertex is not skewed (governor)."},
    {JOB("skew.saturation"), .type = T_DOUBLE, .def = "0.05", MINX(0), MAXX(1), .land = L_DOUBLE,
     CF(skew_saturation),
     .help = "Stop where the hot subtask's load is within this share of its floor (governor)."},
    {GOV("profile"), .type = T_ENUM, .def = "governor", .values = profile_values, .land = L_HOOK,
     .apply = apply_profile,
     .help = "flink: the reference algorithm with governor's first differences only; governor: "
             "also the safeguards below (each on unless set), and utilization.target must be "
             "above 0."},
    {GOV("plausibility.enabled"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(plausibility), .apply = opt__apply_safeguard,
     .help = "Leave a sample whose counters disagree with its gauges, the previous sample or the "
             "time elapsed out of the window, with a warning (unset: on under the governor "
             "profile)."},
    {GOV("plausibility.max-ratio"), .type = T_DOUBLE, .def = "100", MINX(1), .land = L_DOUBLE,
     CF(plausibility_ratio),
     .help = "How many times faster than its gauge (plus 1/s) a counter may grow between two "
             "samples before the sample is implausible."},
    {GOV("counters.jitter"), .type = T_DOUBLE, .def = "0.01", MIN(0), MAXX(1), .land = L_DOUBLE,
     CF(counter_jitter),
     .help = "A cumulative counter that steps back by at most this share of its last value is "
             "read as jitter (a sum over subtasks read at slightly different instants), not as "
             "a restart; the window keeps its last value (both profiles)."},
    {GOV("rates.gauge-tolerance"), .type = T_DOUBLE, .def = "1.5", MINX(1), .land = L_DOUBLE,
     CF(gauge_tolerance),
     .help = "A rate gauge (records_in_per_s, a source's input rate) more than this factor "
             "away from its counter's rise over the last minute or more is not trusted: the "
             "counter's rate is used, with a GaugeMismatch warning naming the vertex (both "
             "profiles)."},
    {GOV("window.keep-full"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(window_keep_full), .apply = opt__apply_safeguard,
     .help = "A metric window once full stays full until the job restarts, however irregular "
             "the samples (unset: on under the governor profile)."},
    {GOV("window.refill-after-gap"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(window_refill), .apply = opt__apply_safeguard,
     .help = "After no sample for longer than job.autoscaler.metrics.window, the window starts "
             "over and refills before anything is decided: what it held describes another time "
             "of the job (unset: on under the governor profile)."},
    {GOV("source-rate.guard"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(source_rate_guard), .apply = opt__apply_safeguard,
     .help = "A source's observed processing rate is measured only from samples where it reads "
             "as fast as it can: its 60 s meter warmed up after a restart, not back-pressured by "
             "a downstream vertex; a sample without one stores none (unset: on under the "
             "governor profile)."},
    {GOV("source-rate.warm-up"), .type = T_DURATION, MAX(DUR_MAX), .def = "1 min", MIN(0),
     .land = L_I64, CF(source_rate_warm_up_ms),
     .help = "How long after the job starts a source's input-rate meter reads low (Flink's "
             "meter averages the last minute)."},
    {GOV("source-rate.max-backpressure"), .type = T_DOUBLE, .def = "0.1", MIN(0), MAX(1),
     .land = L_DOUBLE, CF(source_rate_max_bp),
     .help = "Back-pressured share of time above which a source's read rate says more about a "
             "downstream bottleneck than about the source."},
    {GOV("catch-up.in-headroom"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(catch_up_in_headroom), .apply = opt__apply_safeguard,
     .help = "The utilization target's headroom works off the backlog and what piles up during a "
             "restart; capacity is added for them only beyond it (unset: on under the governor "
             "profile)."},
    {GOV("scale-down.with-restart"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(scale_down_with_restart), .apply = opt__apply_safeguard,
     .help = "When another vertex's scaling restarts the job anyway, a scale-down waiting out "
             "its delay is applied with it, at this cycle's proposal (unset: on under the "
             "governor profile)."},
    {GOV("scale-down.early"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(scale_down_early), .apply = opt__apply_safeguard,
     .help = "A vertex below its lower utilization bound that has been proposed a scale-down "
             "for governor.scale-down.early-after is scaled down then, at the highest proposal "
             "of that time, instead of after the whole scale-down.interval (unset: on under "
             "the governor profile)."},
    {GOV("scale-down.early-after"), .type = T_DURATION, MAX(DUR_MAX), .def = "10 min", MIN(0),
     .land = L_I64, CF(scale_down_early_ms),
     .help = "How long a scale-down of a vertex below its lower bound waits with "
             "governor.scale-down.early."},
    {GOV("scale-down.in-one-step"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(scale_down_one_step), .apply = opt__apply_safeguard,
     .help = "A scale-down goes to the size it is computed for in one step: "
             "job.autoscaler.scale-down.max-factor does not cut it into several, each a restart "
             "(unset: on under the governor profile)."},
    {GOV("scale-down.restart-cost"), .type = T_DOUBLE, .def = "", MIN(0), .flags = F_OPTIONAL,
     .land = L_HOOK, CF(restart_cost_w), .apply = opt__apply_profile_double, .gov_def = "4",
     .help = "A scale-down that no scale-up's restart carries is executed once the "
             "subtask-seconds it would have saved since it was first proposed exceed this many "
             "times what its restart costs: the job's subtasks after it, idle for the restart "
             "time measured and the catch-up it leaves (restart / (1 - utilization.target)); "
             "at the latest proposal. Replaces job.autoscaler.scale-down.interval and "
             "governor.scale-down.early when set. The same weight sizes a scale-up on a rising "
             "load (governor.rates.trend); 0 turns it off (unset: 4 under the governor profile, "
             "off under flink)."},
    {GOV("utilization.ceiling"), .type = T_DOUBLE, .def = "", MINX(0), MAX(1), .flags = F_OPTIONAL,
     .land = L_HOOK, CF(util_ceiling), .apply = opt__apply_profile_double, .gov_def = "0.9",
     .help = "While utilization.max is unset, the upper utilization bound is target + boundary "
             "but at most this (and never below the target): a vertex busy all the time falls "
             "behind before a window mean can pass 1.0 (unset: 0.9 under the governor profile, "
             "none under flink)."},
    {GOV("utilization.min-target"), .type = T_DOUBLE, .def = "", MIN(0), MAX(1),
     .flags = F_OPTIONAL, .land = L_HOOK, CF(util_min_target), .apply = opt__apply_profile_double,
     .gov_def = "0.1",
     .help = "job.autoscaler.utilization.target below this is refused, naming this option: a "
             "target of 0.01 sizes every vertex for a hundred times what arrives (unset: 0.1 "
             "under the governor profile, none under flink)."},
    {GOV("skew.knee"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(skew_knee), .apply = opt__apply_safeguard,
     .help = "A hot-key vertex stops at the knee of its capacity curve: the fewest subtasks "
             "within skew.saturation of the most its key groups allow any parallelism, instead "
             "of where the hot subtask nears its floor (unset: on under the governor profile)."},
    {GOV("skew.limit-flow"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(skew_limit_flow), .apply = opt__apply_safeguard,
     .help = "When a hot key holds a vertex below what arrives, the vertices that share its "
             "sources are sized for the flow it can pass, not for a catch-up it makes "
             "impossible (unset: on under the governor profile)."},
    {GOV("scalability.curve"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(scalability_curve), .apply = opt__apply_safeguard,
     .help = "A vertex's processing rate against its parallelism is fitted (Amdahl's law) from "
             "the rates its history recorded and the one measured now, or read off a hot key's "
             "share; a vertex that needs more than it can reach stops at the fewest subtasks "
             "reaching governor.scalability.share of the most any parallelism reaches, and is "
             "scaled back there after a scale-up that did not pay (EXTERNAL_LIMIT, or "
             "KEY_PARALLELISM_LIMIT for a hot key); the vertices sharing its sources are sized "
             "for the flow it passes (unset: on under the governor profile)."},
    {GOV("scalability.share"), .type = T_DOUBLE, .def = "0.9", MINX(0), MAXX(1), .land = L_DOUBLE,
     CF(scalability_share),
     .help = "With governor.scalability.curve, a limited vertex (an external limit, a hot key) "
             "stops at the fewest subtasks reaching this share of the most any parallelism "
             "reaches (instead of 1 - job.autoscaler.skew.saturation)."},
    {GOV("rates.from-counters"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(rates_from_counters), .apply = opt__apply_safeguard,
     .help = "A vertex's true processing rate divides the input its counters count over the "
             "window by its busy time, instead of the mean of a 60 s rate meter that lags the "
             "busy-time gauge after the load changes (unset: on under the governor profile)."},
    {GOV("source.stall"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(source_stall), .apply = opt__apply_safeguard,
     .help = "A source that read nothing since the previous sample while its backlog grew, "
             "neither busy nor back-pressured, is stalled outside the job: its backlog asks "
             "for no catch-up until it reads again (unset: on under the governor profile)."},
    {GOV("rates.level-shift"), .type = T_DOUBLE, .def = "", MIN(0), .flags = F_OPTIONAL,
     .land = L_HOOK, CF(level_shift_z), .apply = opt__apply_profile_double, .gov_def = "3",
     .help = "A source's arrivals over the last restart time replace the window's mean when they "
             "differ from the samples before by more than this many standard errors and did "
             "so all along: a load that moved is sized at its new level, a burst shorter than "
             "a restart is not chased; 0 turns it off (unset: 3 under the governor profile, off "
             "under flink)."},
    {GOV("rates.trend"), .type = T_DOUBLE, .def = "", MIN(0), .flags = F_OPTIONAL, .land = L_HOOK,
     CF(trend_z), .apply = opt__apply_profile_double, .gov_def = "2",
     .help = "When a source's arrivals rise or fall over the window by more than this many "
             "standard errors of their slope, its rate is the window's mean moved to the "
             "window's end along the slope's bound nearer 0, and a scale-up on a rise is sized "
             "for the rate expected by the time it is to hold (at least until the next "
             "decision can be made: restart, stabilization and window later; longer as "
             "governor.scale-down.restart-cost weighs restarts); 0 turns it off (unset: 2 "
             "under the governor profile, off under flink)."},
    {GOV("rates.trend-horizon"), .type = T_DURATION, MAX(DUR_MAX), .def = "1 h", MIN(0),
     .land = L_I64, CF(trend_horizon_ms),
     .help = "The furthest ahead governor.rates.trend sizes a scale-up for."},
    {GOV("bounds.confidence"), .type = T_DOUBLE, .def = "", MIN(0), .flags = F_OPTIONAL,
     .land = L_HOOK, CF(bounds_z), .apply = opt__apply_profile_double, .gov_def = "2",
     .help = "A vertex is outside its utilization bounds only by more than this many relative "
             "standard errors of the window's arrivals or busy time (the larger): the bounds "
             "widen with the variability the window measured, instead of a fixed dead band "
             "(0: none; unset: 2 under the governor profile, off under flink)."},
    {GOV("alignment.busiest-share"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(align_busiest_share), .apply = opt__apply_safeguard,
     .help = "Under BALANCED alignment and the MAX busy-time aggregator, a vertex with key "
             "groups or partitions gets the fewest subtasks whose busiest one carries few enough "
             "of them for the target, instead of rounding up to where the least loaded one "
             "gets fewer (unset: on under the governor profile)."},
    {GOV("not-applied.max"), .type = T_INT, .def = "", MIN(1), MAX(1000), .flags = F_OPTIONAL,
     .land = L_HOOK, CF(not_applied_max), .apply = opt__apply_profile_int, .gov_def = "3",
     .help = "After the client did not apply the same executed scaling this many times in a "
             "row, it is recommended (execute false, reason NOT_APPLIED) instead of executed "
             "again, until the job's parallelism or load changes (unset: 3 under the governor "
             "profile, never under flink)."},
    {GOV("slo.lag"), .type = T_DURATION, MAX(DUR_MAX), .def = "", MIN(0), .flags = F_OPTIONAL,
     .land = L_NONE,
     .help = "The job's lag objective: its backlog in seconds (a source's lag over its input "
             "rate) should stay below this. Not read by the algorithm: GET /metrics reports "
             "governor_job_slo_breach against it, and the page draws it (unset: none)."},

    /* ---- Dataflow's knobs: each sets the options it stands for, in its own layer (a mapped
     * option set in the same layer wins); opt__knob_maps below says what maps onto what ---- */
    {GOV("dataflow.max-num-workers"), .type = T_INT, .def = "", MIN(1), .flags = F_OPTIONAL,
     .land = L_NONE,
     .help = "Dataflow's maxNumWorkers: sets job.autoscaler.vertex.max-parallelism to this times "
             "taskmanager.numberOfTaskSlots, and governor.batch.max-workers to this."},
    {GOV("dataflow.min-num-workers"), .type = T_INT, .def = "", MIN(1), .flags = F_OPTIONAL,
     .land = L_NONE,
     .help = "Dataflow's min_num_workers: sets job.autoscaler.vertex.min-parallelism to this times "
             "taskmanager.numberOfTaskSlots, and governor.batch.min-workers to this."},
    {GOV("dataflow.worker-utilization-hint"), .type = T_DOUBLE, .def = "", MIN(0.1), MAX(0.9),
     .flags = F_OPTIONAL, .land = L_NONE,
     .help = "Dataflow's worker utilization hint: sets job.autoscaler.utilization.target (a "
             "share of busy time, where Dataflow's is a share of CPU)."},
    {GOV("dataflow.max-backlog"), .type = T_DURATION, .def = "", MIN(MS_S), MAX(DUR_MAX),
     .flags = F_OPTIONAL, .land = L_NONE,
     .help = "Dataflow's latency tier, the backlog in seconds to drain at the current "
             "throughput: sets job.autoscaler.catch-up.duration and governor.slo.lag."},
    {GOV("dataflow.autoscaling-algorithm"), .type = T_ENUM, .def = "", .values = algorithm_values,
     .flags = F_OPTIONAL, .land = L_NONE,
     .help = "Dataflow's autoscalingAlgorithm: THROUGHPUT_BASED sets job.autoscaler.enabled to "
             "true, NONE to false."},

    /* ---- batch jobs ("mode": "BATCH"; core/README.md, Batch) ---- */
    {GOV("batch.min-workers"), .type = T_INT, .def = "1", MIN(1), .land = L_INT,
     CF(batch.min_workers), .help = "Fewest workers a batch job's pool is given."},
    {GOV("batch.max-workers"), .type = T_INT, .def = "2000", MIN(1), .land = L_INT,
     CF(batch.max_workers),
     .help = "Most workers a batch job's pool is given (at least batch.min-workers)."},
    {GOV("batch.worker-overhead"), .type = T_DURATION, .def = "60 s", MIN(1), MAX(DUR_MAX),
     .land = L_I64, CF(batch.worker_overhead_ms),
     .help = "tau: what one more worker costs to start, in its own time; the pool is "
             "ceil(sqrt(speed-weight x remaining worker-seconds / tau))."},
    {GOV("batch.speed-weight"), .type = T_DOUBLE, .def = "4", MINX(0), MAX(1e6), .land = L_DOUBLE,
     CF(batch.speed_weight),
     .help = "lambda: what a second of wall time sooner is worth, in worker-seconds."},
    {GOV("batch.dead-band"), .type = T_DOUBLE, .def = "0.15", MIN(0), MAXX(1), .land = L_DOUBLE,
     CF(batch.dead_band), .help = "A pool size within this share of the current one is no change."},
    {GOV("batch.max-scale-up"), .type = T_DOUBLE, .def = "2", MINX(1), MAX(1000), .land = L_DOUBLE,
     CF(batch.max_scale_up),
     .help = "After a run's first decision, a scale-up at most multiplies the pool by this."},
    {GOV("batch.scale-down-confirmations"), .type = T_INT, .def = "2", MIN(1), .land = L_INT,
     CF(batch.scale_down_confirmations),
     .help = "Decisions in a row that must ask for a smaller pool before it shrinks (to the "
             "largest size they asked for)."},
    {GOV("batch.change-interval"), .type = T_DURATION, .def = "30 s", MIN(0), MAX(DUR_MAX),
     .land = L_I64, CF(batch.change_interval_ms),
     .help = "At most one change of a batch pool this often."},
    {GOV("batch.worker-startup"), .type = T_DURATION, .def = "3 min", MIN(0), MAX(DUR_MAX),
     .land = L_I64, CF(batch.worker_startup_ms),
     .help = "How long requested workers may take to start: while fewer run than were "
             "requested less than this ago, the pool is held, and a pool whose running "
             "workers the sample does not say is not measured."},
    {GOV("batch.idle-cpu"), .type = T_DOUBLE, .def = "0.05", MIN(0), MAX(1), .land = L_DOUBLE,
     CF(batch.idle_cpu),
     .help = "Under this mean CPU utilization the workers wait on something else: the pool "
             "is not grown."},
    {GOV("batch.finishing"), .type = T_DOUBLE, .def = "0.1", MIN(0), MAX(1), .land = L_DOUBLE,
     CF(batch.finishing),
     .help = "The last stage is finishing when no stage is pending and each running one has "
             "at most this share of its work left: the pool is not shrunk then."},

    /* ---- Flink cluster keys the algorithm reads ---- */
    {CLUSTER("taskmanager.numberOfTaskSlots"), .type = T_INT, .def = "1", MIN(1), .land = L_INT,
     CF(slots_per_tm), .help = "Task slots per TaskManager."},
    {CLUSTER("taskmanager.cpu.cores"), .type = T_DOUBLE, .def = "", MINX(0), .flags = F_OPTIONAL,
     .land = L_DOUBLE, CF(tm_cpu), .help = "CPU cores per TaskManager."},
    {CLUSTER("taskmanager.memory.process.size"), .type = T_MEMORY, .def = "", .flags = F_OPTIONAL,
     .land = L_I64, CF(tm.process_size), .help = "Total process memory per TaskManager."},
    {CLUSTER("taskmanager.memory.flink.size"), .type = T_MEMORY, .def = "", .flags = F_OPTIONAL,
     .land = L_I64, CF(tm.flink_size), .help = "Total Flink memory per TaskManager."},
    {CLUSTER("taskmanager.memory.task.heap.size"), .type = T_MEMORY, .def = "", .flags = F_OPTIONAL,
     .land = L_I64, CF(tm.task_heap), .help = "Task heap memory."},
    {CLUSTER("taskmanager.memory.managed.size"), .type = T_MEMORY, .def = "", .flags = F_OPTIONAL,
     .land = L_I64, CF(tm.managed_size), .help = "Managed memory."},
    {CLUSTER("taskmanager.memory.managed.fraction"), .type = T_DOUBLE, .def = "0.4", MIN(0), MAX(1),
     .land = L_DOUBLE, CF(tm.managed_fraction),
     .help = "Managed memory as a share of Flink memory."},
    {CLUSTER("taskmanager.memory.framework.heap.size"), .type = T_MEMORY, .def = "128 mb",
     .land = L_I64, CF(tm.framework_heap), .help = "Framework heap memory."},
    {CLUSTER("taskmanager.memory.framework.off-heap.size"), .type = T_MEMORY, .def = "128 mb",
     .land = L_I64, CF(tm.framework_offheap), .help = "Framework off-heap memory."},
    {CLUSTER("taskmanager.memory.task.off-heap.size"), .type = T_MEMORY, .def = "0 bytes",
     .land = L_I64, CF(tm.task_offheap), .help = "Task off-heap memory."},
    {CLUSTER("taskmanager.memory.jvm-metaspace.size"), .type = T_MEMORY, .def = "256 mb",
     .land = L_I64, CF(tm.metaspace), .help = "JVM metaspace."},
    {CLUSTER("taskmanager.memory.network.min"), .type = T_MEMORY, .def = "64 mb", .land = L_I64,
     CF(tm.network_min), .help = "Lower bound of network memory."},
    {CLUSTER("taskmanager.memory.network.max"), .type = T_MEMORY, .def = "1 gb", .land = L_I64,
     CF(tm.network_max), .help = "Upper bound of network memory."},
    {CLUSTER("taskmanager.memory.network.fraction"), .type = T_DOUBLE, .def = "0.1", MIN(0), MAX(1),
     .land = L_DOUBLE, CF(tm.network_fraction),
     .help = "Network memory as a share of Flink memory."},
    {CLUSTER("taskmanager.memory.jvm-overhead.min"), .type = T_MEMORY, .def = "192 mb",
     .land = L_I64, CF(tm.overhead_min), .help = "Lower bound of JVM overhead."},
    {CLUSTER("taskmanager.memory.jvm-overhead.max"), .type = T_MEMORY, .def = "1 gb", .land = L_I64,
     CF(tm.overhead_max), .help = "Upper bound of JVM overhead."},
    {CLUSTER("taskmanager.memory.jvm-overhead.fraction"), .type = T_DOUBLE, .def = "0.1", MIN(0),
     MAX(1), .land = L_DOUBLE, CF(tm.overhead_fraction),
     .help = "JVM overhead as a share of process memory."},
    {CLUSTER("taskmanager.memory.segment-size"), .type = T_MEMORY, .def = "32 kb", MIN(1),
     .land = L_I64, CF(tm.segment_size), .help = "Size of one network buffer."},
    {CLUSTER("taskmanager.network.memory.buffers-per-channel"), .type = T_INT, .def = "2", MIN(0),
     .land = L_INT, CF(tm.buffers_per_channel), .help = "Exclusive network buffers per channel."},
    {CLUSTER("taskmanager.network.memory.floating-buffers-per-gate"), .type = T_INT, .def = "8",
     MIN(0), .land = L_INT, CF(tm.floating_buffers),
     .help = "Floating network buffers per input gate."},

    /* ---- governor serve: --NAME flags and config-file keys ---- */
    {SERVER("listen"), .type = T_STRING, .def = "127.0.0.1:8080", .land = L_STR, SV(listen),
     .help = "HOST:PORT to listen on."},
    {SERVER("db"), .type = T_STRING, .def = "./governor.db", .land = L_STR, SV(db),
     .help = "The store: a SQLite database file, or a PostgreSQL connection URL "
             "(`postgresql://USER@HOST:PORT/DB`, libpq's form; also `postgres://`)."},
    {SERVER("policies"), .type = T_STRING, .def = "./policies", .land = L_STR, SV(policies),
     .help = "Directory of Lua policies."},
    {SERVER("replay-policies"), .type = T_LIST, .def = "", .flags = F_OPTIONAL, .land = L_STR,
     SV(replay_policies),
     .help = "Directories (`;` between them) whose policies, or those of a directory under them, "
             "POST /v1/replay may load, besides `policies`."},
    {SERVER("token-file"), .type = T_STRING, .def = "", .flags = F_OPTIONAL | F_NONEMPTY,
     .land = L_STR, SV(token_file),
     .help = "File of bearer tokens, one a line; none = no authentication."},
    {SERVER("config"), .type = T_STRING, .def = "", .flags = F_OPTIONAL, .land = L_STR, SV(config),
     .help = "Config file of `key = value` lines (these keys and job options)."},
    {SERVER("log-level"), .type = T_ENUM, .def = "info", .values = level_values, .land = L_STR,
     SV(log_level), .help = "Lowest level logged."},
    {SERVER("max-body"), .type = T_MEMORY, .def = "1 mb", MIN(1024), .land = L_I64,
     SV(max_body_bytes), .help = "Largest request body (413 above)."},
    {SERVER("max-header"), .type = T_MEMORY, .def = "16 kb", MIN(1024), .land = L_I64,
     SV(max_header_bytes), .help = "Largest request header block."},
    {SERVER("read-timeout"), .type = T_DURATION, .def = "10 s", MIN(1), MAX(MS_H), .land = L_I64,
     SV(read_timeout_ms), .help = "Time allowed to read a request."},
    {SERVER("synchronous"), .type = T_ENUM, .def = "FULL", .values = sync_values, .land = L_STR,
     SV(synchronous), .help = "SQLite `PRAGMA synchronous` of the writer."},
    {SERVER("max-batch"), .type = T_INT, .def = "256", MIN(1), .land = L_INT, SV(max_batch),
     .help = "Most decisions committed together (group commit)."},
    {SERVER("wal-max"), .type = T_MEMORY, .def = "64 mb", MIN(MIB), MAX(64 * 1024 * MIB),
     .land = L_I64, SV(wal_max_bytes),
     .help = "SQLite's write-ahead log past which the writer truncates it, holding writes back "
             "while readers on older snapshots finish (also `journal_size_limit`)."},
    {SERVER("sql-db"), .type = T_STRING, .def = "", .flags = F_OPTIONAL | F_NONEMPTY, .land = L_STR,
     SV(sql_db),
     .help = "Database POST /v1/sql reads, e.g. a hot standby's postgresql:// URL; none = `db`."},
    {SERVER("sql-timeout"), .type = T_DURATION, .def = "2 s", MIN(1), MAX(MS_H), .land = L_I64,
     SV(sql_timeout_ms), .help = "Time limit of one POST /v1/sql query."},
    {SERVER("sql-max-rows"), .type = T_INT, .def = "10000", MIN(1), .land = L_INT, SV(sql_max_rows),
     .help = "Rows returned by POST /v1/sql before truncating."},
    {SERVER("sql-max-bytes"), .type = T_MEMORY, .def = "8 mb", MIN(64 * KIB), MAX(256 * MIB),
     .land = L_I64, SV(sql_max_bytes),
     .help = "Largest POST /v1/sql body: rows past it are cut (truncated), a first row "
             "above it is a 400."},
    {SERVER("sql-max-value"), .type = T_MEMORY, .def = "4 mb", MIN(KIB), MAX(64 * MIB),
     .land = L_I64, SV(sql_max_value),
     .help = "Largest string or blob a POST /v1/sql query may build or return (as JSON); "
             "above it, a 400."},
    {SERVER("audit-retention"), .type = T_DURATION, .def = "90 d", MIN(0), MAX(DUR_MAX),
     .land = L_I64, SV(audit_retention_ms),
     .help = "Age after which audit history is deleted; 0 = keep."},
    {SERVER("sample-retention"), .type = T_DURATION, .def = "0", MIN(0), MAX(DUR_MAX),
     .land = L_I64, SV(sample_retention_ms),
     .help = "Age after which the samples decisions were made from are deleted (the jobs' "
             "chunks of samples), while the decisions stay for audit-retention: e.g. a year "
             "of decisions and a week of samples. 0 = as long as the decisions. A decision "
             "whose sample is gone reads back without it (input null) and replay skips it."},
    {SERVER("plugin-instructions"), .type = T_INT, .def = "1000000", MIN(1000), .land = L_I64,
     SV(plugin_instructions), .help = "Lua instruction budget of one plugin call."},
    {SERVER("plugin-timeout"), .type = T_DURATION, .def = "100 ms", MIN(1), MAX(MS_M),
     .land = L_I64, SV(plugin_timeout_ms), .help = "Wall-clock deadline of one plugin call."},
    {SERVER("plugin-decision-instructions"), .type = T_INT, .def = "10000000", MIN(1000),
     .land = L_I64, SV(plugin_decision_instructions),
     .help = "Lua instructions of all the plugin calls of one decision (or policy load) "
             "together; the calls left are skipped."},
    {SERVER("plugin-decision-timeout"), .type = T_DURATION, .def = "100 ms", MIN(1), MAX(MS_M),
     .land = L_I64, SV(plugin_decision_timeout_ms),
     .help = "Wall clock of all the plugin calls of one decision together (ten times this "
             "for a policy load)."},
    {SERVER("plugin-memory"), .type = T_MEMORY, .def = "64 mb", MIN(1048576), .land = L_I64,
     SV(plugin_memory_bytes), .help = "Memory cap of one Lua state."},
    {SERVER("max-vertices"), .type = T_INT, .def = "5000", MIN(1), MAX(1000000), .land = L_INT,
     SV(limits.vertices),
     .help = "Most vertices in one sample (stages in a batch sample); more is a 413 naming "
             "`vertices`."},
    {SERVER("max-edges"), .type = T_INT, .def = "50000", MIN(1), MAX(10000000), .land = L_INT,
     SV(limits.edges),
     .help = "Most inputs of a sample's vertices, in all (one vertex may have them all); more is "
             "a 413 naming the `vertices[i].inputs` where the count passes it."},
    {SERVER("max-config-keys"), .type = T_INT, .def = "1000", MIN(1), MAX(1000000), .land = L_INT,
     SV(limits.config_keys),
     .help = "Most keys in one layer of a job's options: a sample's `config`, a `PUT "
             "/v1/jobs/{job}/config`, a replay's candidate (plugin parameters included); more is "
             "a 413 naming `config`."},
    {SERVER("max-rebalance-items"), .type = T_INT, .def = "10000", MIN(1), MAX(1000000),
     .land = L_INT, SV(limits.rebalance_items),
     .help = "Most items in one rebalance request, over all its workers; more is a 413 naming "
             "`items` (or `workers`)."},
    {SERVER("max-page-rows"), .type = T_INT, .def = "5000", MIN(1), MAX(10000000), .land = L_INT,
     SV(limits.page_rows),
     .help = "Most vertex rows (a decision's vertices, summed) in one page of GET "
             "/v1/jobs/{job}/decisions: the page stops at the decision that passes it (always "
             "holding one) and says where the next begins (`next`)."},
    {SERVER("max-jobs-in-memory"), .type = T_INT, .def = "10000", MIN(1), MAX(10000000),
     .land = L_INT, SV(max_jobs_in_memory),
     .help = "Jobs whose state the server holds in memory (about 8 KB each); past it the least "
             "recently used idle jobs are forgotten and read again from the store at their next "
             "sample."},
    {SERVER("metrics-max-jobs"), .type = T_INT, .def = "100", MIN(0), MAX(100000), .land = L_INT,
     SV(metrics_max_jobs),
     .help = "Jobs that get per-job series in GET /metrics (governor_job_*), the first in id "
             "order; 0 drops every per-job series."},
    {SERVER("strict-samples"), .type = T_BOOL, .def = "false", .land = L_BOOL, SV(strict_samples),
     .help = "Refuse (400, naming it) a metrics sample with a field governor does not read, "
             "such as a misspelt one; false: decide it and list each such field in the "
             "answer's warnings."},
};

const int opt__n_rows = (int)(sizeof opt__rows / sizeof opt__rows[0]);

/* Plugin parameter prefixes: `<prefix><name>.<param>` is kept verbatim. */
const char *const opt__plugin_prefixes[] = {
    "job.autoscaler.metrics.custom-evaluator.",
    "job.autoscaler.scaling.custom-executor.",
    "job.autoscaler.scaling.parallelism-alignment.mode.",
};
const int opt__n_plugin_prefixes =
    (int)(sizeof opt__plugin_prefixes / sizeof opt__plugin_prefixes[0]);

const struct knob_map opt__knob_maps[] = {
    {GOV_PREFIX "dataflow.max-num-workers", JOB_PREFIX "vertex.max-parallelism", KNOB_TIMES_SLOTS},
    {GOV_PREFIX "dataflow.max-num-workers", GOV_PREFIX "batch.max-workers", KNOB_SAME},
    {GOV_PREFIX "dataflow.min-num-workers", JOB_PREFIX "vertex.min-parallelism", KNOB_TIMES_SLOTS},
    {GOV_PREFIX "dataflow.min-num-workers", GOV_PREFIX "batch.min-workers", KNOB_SAME},
    {GOV_PREFIX "dataflow.worker-utilization-hint", JOB_PREFIX "utilization.target", KNOB_SAME},
    {GOV_PREFIX "dataflow.max-backlog", JOB_PREFIX "catch-up.duration", KNOB_SAME},
    {GOV_PREFIX "dataflow.max-backlog", GOV_PREFIX "slo.lag", KNOB_SAME},
    {GOV_PREFIX "dataflow.autoscaling-algorithm", JOB_PREFIX "enabled", KNOB_ALGORITHM},
};
const int opt__n_knob_maps = (int)(sizeof opt__knob_maps / sizeof opt__knob_maps[0]);

static void apply_aggregator(struct core_config *c, const struct opt_row *r, const struct val *v,
                             const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)r, (void)text, (void)layer, (void)j;
    static const enum core_aggregator map[] = {CORE_AGG_MAX, CORE_AGG_AVG, CORE_AGG_MIN};
    c->busy_aggregator = map[v->e];
}

/* The legacy mode (core/README.md, Alignment): the deprecated key counts only when set explicitly
 * (above the defaults). */
static void apply_adjust_mode(struct core_config *c, const struct opt_row *r, const struct val *v,
                              const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)r, (void)text, (void)j;
    if (layer == OPT_BUILTIN || v->unset)
        return;
    c->align_mode =
        v->e == 0 ? CORE_ALIGN_LEGACY_EVENLY_SPREAD : CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION;
    c->align_plugin = NULL;
}

/* The mode (core/README.md, Alignment): an explicit new key wins over the legacy one; a
 * non-built-in name is a plugin. At the default layer it leaves what the legacy key chose, if it
 * chose one (its row comes first). */
static void apply_align_mode(struct core_config *c, const struct opt_row *r, const struct val *v,
                             const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)r;
    if (layer == OPT_BUILTIN && opt__adjust_mode_set(j))
        return;
    static const enum core_align_mode map[] = {CORE_ALIGN_BALANCED, CORE_ALIGN_EVENLY_SPREAD,
                                               CORE_ALIGN_OFF};
    if (v->e >= 0) {
        c->align_mode = map[v->e];
        c->align_plugin = NULL;
    } else {
        c->align_mode = CORE_ALIGN_PLUGIN;
        c->align_plugin = text;
    }
}

/* governor.profile: which defaults the safeguard rows below it take. */
static void apply_profile(struct core_config *c, const struct opt_row *r, const struct val *v,
                          const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)r, (void)text, (void)layer, (void)j;
    c->profile = v->e == 1 ? CORE_PROFILE_FLINK : CORE_PROFILE_GOVERNOR;
}

/* A safeguard of the governor profile (a bool at r->off): unset follows governor.profile,
 * whose row comes first. */
void opt__apply_safeguard(struct core_config *c, const struct opt_row *r, const struct val *v,
                          const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)text, (void)layer, (void)j;
    *(bool *)((char *)c + r->off) = v->unset ? c->profile == CORE_PROFILE_GOVERNOR : v->b;
}

/* A number of the governor profile (a double at r->off): unset, the row's gov_def under the
 * governor profile, none (NaN) under flink. */
void opt__apply_profile_double(struct core_config *c, const struct opt_row *r, const struct val *v,
                               const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)text, (void)layer, (void)j;
    double x = v->d;
    if (v->unset) {
        struct val g = {.unset = true};
        x = NAN;
        if (c->profile == CORE_PROFILE_GOVERNOR && r->gov_def &&
            opt__parse_row_value(r, r->gov_def, &g, NULL) == 0 && !g.unset)
            x = g.d;
    }
    memcpy((char *)c + r->off, &x, sizeof x);
}

/* A count of the governor profile (an int at r->off): unset, the row's gov_def under the
 * governor profile, 0 (off) under flink. */
void opt__apply_profile_int(struct core_config *c, const struct opt_row *r, const struct val *v,
                            const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)text, (void)layer, (void)j;
    int x = (int)v->i;
    if (v->unset) {
        struct val g = {.unset = true};
        x = 0;
        if (c->profile == CORE_PROFILE_GOVERNOR && r->gov_def &&
            opt__parse_row_value(r, r->gov_def, &g, NULL) == 0 && !g.unset)
            x = (int)g.i;
    }
    *(int *)((char *)c + r->off) = x;
}
