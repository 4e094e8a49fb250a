/*
 * options.c - the one options table (see options.h). Every option governor knows is one row
 * of opt_rows[]: its name, scope, type, default (as the text a user would write), range,
 * deprecated alias, help text, and where the parsed value lands (an offset into struct
 * core_config or struct opt_server, or an apply hook). The parsers, layering, validation,
 * `governor options` and the README table are all driven by that one table.
 *
 * The default column is the one home of every default: the core has none of its own and is
 * always handed a struct core_config resolved from these rows (every field of it has a row,
 * whose default text lands in it like a value a user wrote), and the server's limits take
 * theirs from opt_server_init. Text and not a typed value, because the text is what
 * `governor options` and the README show ("15 min", "1.0", "128 mb"), and parsing it is the
 * path every user value takes anyway, so a default cannot mean something its text does not.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/index.h"
#include "time/cron.h"
#include "options/options.h"
#include "time/tz.h"
#include "base/xmem.h"

/* ------------------------------------------------------------------ errors -- */

/* Sets *errp (when errp is given) to a new formatted message and returns -1. */
static int fail(char **errp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **errp, const char *fmt, ...)
{
    if (!errp)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    *errp = xvasprintf(fmt, ap);
    va_end(ap);
    return -1;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* new: s without leading and trailing white space. */
static char *trim_dup(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return xstrndup(s, n);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ------------------------------------------------------------ value parsers -- */

struct unit {
    const char *name;
    int64_t mult;
};

#define MS_S 1000LL
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)
#define KIB  1024LL
#define MIB  (1024 * KIB)
#define GIB  (1024 * MIB)
#define TIB  (1024 * GIB)

static const struct unit duration_units[] = {
    {"ms", 1},      {"milli", 1},   {"millis", 1},   {"millisecond", 1}, {"milliseconds", 1},
    {"s", MS_S},    {"sec", MS_S},  {"secs", MS_S},  {"second", MS_S},   {"seconds", MS_S},
    {"m", MS_M},    {"min", MS_M},  {"mins", MS_M},  {"minute", MS_M},   {"minutes", MS_M},
    {"h", MS_H},    {"hour", MS_H}, {"hours", MS_H}, {"d", MS_D},        {"day", MS_D},
    {"days", MS_D}, {NULL, 0},
};

static const struct unit memory_units[] = {
    {"b", 1},           {"bytes", 1}, {"k", KIB},         {"kb", KIB},        {"kibibytes", KIB},
    {"m", MIB},         {"mb", MIB},  {"mebibytes", MIB}, {"g", GIB},         {"gb", GIB},
    {"gibibytes", GIB}, {"t", TIB},   {"tb", TIB},        {"tebibytes", TIB}, {NULL, 0},
};

/*
 * Flink's "<digits> [unit]" form, shared by durations and memory sizes: surrounding white
 * space is allowed, so is space between number and unit; units are case-insensitive; no
 * unit means the first unit of the table (ms / bytes). 0 or -1 (no message: the caller
 * knows what the value should have looked like).
 */
static int parse_scaled(const char *s, const struct unit *units, int64_t *out)
{
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    uint64_t n = 0;
    while (isdigit((unsigned char)*p)) {
        int d = *p++ - '0';
        if (n > ((uint64_t)INT64_MAX - (uint64_t)d) / 10)
            return -1;
        n = n * 10 + (uint64_t)d;
    }
    while (isspace((unsigned char)*p))
        p++;
    const char *u = p;
    while (isalpha((unsigned char)*p))
        p++;
    size_t ulen = (size_t)(p - u);
    while (isspace((unsigned char)*p))
        p++;
    if (*p)
        return -1;
    int64_t mult = 1;
    if (ulen > 0) {
        const struct unit *k = units;
        for (; k->name; k++)
            if (strlen(k->name) == ulen && strncasecmp(k->name, u, ulen) == 0)
                break;
        if (!k->name)
            return -1;
        mult = k->mult;
    }
    if (n > (uint64_t)(INT64_MAX / mult))
        return -1;
    *out = (int64_t)n * mult;
    return 0;
}

/* Parses a Flink duration (see options.h) into milliseconds. */
int opt_parse_duration(const char *s, int64_t *ms, char **errp)
{
    if (!s || parse_scaled(s, duration_units, ms) < 0)
        return fail(errp, "\"%s\" is not a duration (e.g. \"5 min\", \"30 s\", \"500 ms\")",
                    s ? s : "");
    return 0;
}

/* Parses a Flink memory size (see options.h) into bytes (k = 1024). */
int opt_parse_memory(const char *s, int64_t *bytes, char **errp)
{
    if (!s || parse_scaled(s, memory_units, bytes) < 0)
        return fail(errp, "\"%s\" is not a memory size (e.g. \"4 gb\", \"512 mb\", \"64 kb\")",
                    s ? s : "");
    return 0;
}

/* Parses "true" / "false" (any case, surrounding white space allowed). */
int opt_parse_bool(const char *s, bool *out, char **errp)
{
    char *t = trim_dup(s ? s : "");
    int rc = 0;
    if (strcasecmp(t, "true") == 0)
        *out = true;
    else if (strcasecmp(t, "false") == 0)
        *out = false;
    else
        rc = fail(errp, "\"%s\" is not a boolean (true or false)", s ? s : "");
    free(t);
    return rc;
}

/* A finite decimal number, the whole (trimmed) text. No hex, no inf/nan. */
static int parse_double(const char *t, double *out)
{
    if (!*t || strpbrk(t, "xXpP"))
        return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(t, &end);
    if (end == t || *end || errno == ERANGE || !isfinite(d))
        return -1;
    *out = d;
    return 0;
}

/* An integer, the whole (trimmed) text; an integral decimal such as "2.0" or "1e3" (how a
 * JSON number may be printed) is accepted too. */
static int parse_int64(const char *t, int64_t *out)
{
    if (!*t)
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (end != t && !*end && errno == 0) {
        *out = v;
        return 0;
    }
    double d;
    if (parse_double(t, &d) < 0 || d != floor(d) || d < -9.2e18 || d > 9.2e18)
        return -1;
    *out = (int64_t)d;
    return 0;
}

/* ---------------------------------------------------------------- the table -- */

enum scope { S_JOB, S_CLUSTER, S_SERVER };
enum type { T_BOOL, T_INT, T_DOUBLE, T_DURATION, T_MEMORY, T_ENUM, T_LIST, T_STRING, T_TZ };
/* Where a parsed value lands: a field of struct core_config (JOB, CLUSTER rows) or of struct
 * opt_server (SERVER rows), by offset; or an apply hook. */
enum land {
    L_NONE,   /* accepted, not read by the core */
    L_BOOL,   /* bool */
    L_INT,    /* int */
    L_I64,    /* int64_t: ms, bytes or a count; unset = -1 */
    L_DOUBLE, /* double; unset = NaN */
    L_DMEM,   /* double holding bytes (quota.memory); unset = NaN */
    L_STR,    /* core_config: borrowed const char *; opt_server: owned char *, "" = NULL */
    L_LIST,   /* const char *const * at off, int count at off2 */
    L_HOOK,   /* the row's apply hook */
};

/* Row flags. */
#define F_OPTIONAL   (1u << 0) /* no default: "" means unset */
#define F_DEPRECATED (1u << 1)
#define F_OPEN       (1u << 2) /* enum: any other name selects a plugin of that name */
#define F_NAMES      (1u << 3) /* list of plugin names */
#define MAX_PLUGINS  16        /* different names in an F_NAMES list */
#define F_PERIODS    (1u << 4) /* excluded-period syntax, checked with cron_validate */
#define F_CASE       (1u << 5) /* enum values match with exact case */
#define F_NONEMPTY   (1u << 6) /* optional, but a value given must not be empty */

/* A parsed value. */
struct val {
    bool unset;
    bool b;
    int64_t i;
    double d;
    int e; /* enum: index into values, -1 = a plugin name (F_OPEN) */
};

struct opt_row;
/* A row's apply hook: lands v (text, from layer) in c; j is the job being resolved. */
typedef void (*apply_fn)(struct core_config *c, const struct opt_row *r, const struct val *v,
                         const char *text, enum opt_layer layer, const struct opt_job *j);

struct opt_row {
    const char *name; /* canonical */
    enum scope scope;
    enum type type;
    const char *def; /* default as display text; "" = none */
    double min, max;
    unsigned char has_min, has_max; /* 0 none, 1 inclusive, 2 exclusive */
    unsigned flags;
    const char *const *values; /* T_ENUM: allowed values, NULL-terminated */
    const char *alias;         /* deprecated alias (full key), NULL = none */
    const char *gate;          /* range checked only when this bool row is true (spec 6.4) */
    const char *help;
    enum land land;
    size_t off, off2;
    apply_fn apply;
    const char *gov_def; /* a number that follows governor.profile: its value under the
                            governor profile when unset (none under flink) */
};

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
static void apply_safeguard(struct core_config *c, const struct opt_row *r, const struct val *v,
                            const char *text, enum opt_layer layer, const struct opt_job *j);
static void apply_profile_double(struct core_config *c, const struct opt_row *r,
                                 const struct val *v, const char *text, enum opt_layer layer,
                                 const struct opt_job *j);
static bool adjust_mode_set(const struct opt_job *j);
static int parse_row_value(const struct opt_row *r, const char *t, struct val *v, char **errp);

/*
 * The rows. Order matters in three places only: the legacy adjust.mode row comes before the
 * parallelism-alignment.mode row (the second one's hook overrides the first when set
 * explicitly, spec 3.2), governor.profile comes before the safeguards whose default it sets,
 * and a gate row comes before the rows it gates (for readability).
 */
static const struct opt_row opt_rows[] = {
    /* ---- spec 6.5 (prefix job.autoscaler.) and governor's own job options ---- */
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
     CF(plausibility), .apply = apply_safeguard,
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
     CF(window_keep_full), .apply = apply_safeguard,
     .help = "A metric window once full stays full until the job restarts, however irregular "
             "the samples (unset: on under the governor profile)."},
    {GOV("source-rate.guard"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(source_rate_guard), .apply = apply_safeguard,
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
     CF(catch_up_in_headroom), .apply = apply_safeguard,
     .help = "The utilization target's headroom works off the backlog and what piles up during a "
             "restart; capacity is added for them only beyond it (unset: on under the governor "
             "profile)."},
    {GOV("scale-down.with-restart"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(scale_down_with_restart), .apply = apply_safeguard,
     .help = "When another vertex's scaling restarts the job anyway, a scale-down waiting out "
             "its delay is applied with it, at this cycle's proposal (unset: on under the "
             "governor profile)."},
    {GOV("scale-down.early"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(scale_down_early), .apply = apply_safeguard,
     .help = "A vertex below its lower utilization bound that has been proposed a scale-down "
             "for governor.scale-down.early-after is scaled down then, at the highest proposal "
             "of that time, instead of after the whole scale-down.interval (unset: on under "
             "the governor profile)."},
    {GOV("scale-down.early-after"), .type = T_DURATION, MAX(DUR_MAX), .def = "10 min", MIN(0),
     .land = L_I64, CF(scale_down_early_ms),
     .help = "How long a scale-down of a vertex below its lower bound waits with "
             "governor.scale-down.early."},
    {GOV("utilization.ceiling"), .type = T_DOUBLE, .def = "", MINX(0), MAX(1), .flags = F_OPTIONAL,
     .land = L_HOOK, CF(util_ceiling), .apply = apply_profile_double, .gov_def = "0.9",
     .help = "While utilization.max is unset, the upper utilization bound is target + boundary "
             "but at most this (and never below the target): a vertex busy all the time falls "
             "behind before a window mean can pass 1.0 (unset: 0.9 under the governor profile, "
             "none under flink)."},
    {GOV("skew.knee"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(skew_knee), .apply = apply_safeguard,
     .help = "A hot-key vertex stops at the knee of its capacity curve: the fewest subtasks "
             "within skew.saturation of the most its key groups allow any parallelism, instead "
             "of where the hot subtask nears its floor (unset: on under the governor profile)."},
    {GOV("skew.limit-flow"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(skew_limit_flow), .apply = apply_safeguard,
     .help = "When a hot key holds a vertex below what arrives, the vertices that share its "
             "sources are sized for the flow it can pass, not for a catch-up it makes "
             "impossible (unset: on under the governor profile)."},
    {GOV("rates.from-counters"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(rates_from_counters), .apply = apply_safeguard,
     .help = "A vertex's true processing rate divides the input its counters count over the "
             "window by its busy time, instead of the mean of a 60 s rate meter that lags the "
             "busy-time gauge after the load changes (unset: on under the governor profile)."},
    {GOV("source.stall"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(source_stall), .apply = apply_safeguard,
     .help = "A source that read nothing since the previous sample while its backlog grew, "
             "neither busy nor back-pressured, is stalled outside the job: its backlog asks "
             "for no catch-up until it reads again (unset: on under the governor profile)."},
    {GOV("alignment.busiest-share"), .type = T_BOOL, .def = "", .flags = F_OPTIONAL, .land = L_HOOK,
     CF(align_busiest_share), .apply = apply_safeguard,
     .help = "Under BALANCED alignment and the MAX busy-time aggregator, a vertex with key "
             "groups or partitions gets the fewest subtasks whose busiest one carries few enough "
             "of them for the target, instead of rounding up to where the least loaded one "
             "gets fewer (unset: on under the governor profile)."},
    {GOV("slo.lag"), .type = T_DURATION, MAX(DUR_MAX), .def = "", MIN(0), .flags = F_OPTIONAL,
     .land = L_NONE,
     .help = "The job's lag objective: its backlog in seconds (a source's lag over its input "
             "rate) should stay below this. Not read by the algorithm: GET /metrics reports "
             "governor_job_slo_breach against it, and the page draws it (unset: none)."},

    /* ---- Dataflow's knobs: each sets the options it stands for, in its own layer (a mapped
     * option set in the same layer wins); knob_maps below says what maps onto what ---- */
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
};

#define N_ROWS ((int)(sizeof opt_rows / sizeof opt_rows[0]))

/* Plugin parameter prefixes: `<prefix><name>.<param>` is kept verbatim. */
static const char *const plugin_prefixes[] = {
    "job.autoscaler.metrics.custom-evaluator.",
    "job.autoscaler.scaling.custom-executor.",
    "job.autoscaler.scaling.parallelism-alignment.mode.",
};

#define JOB_PREFIX    "job.autoscaler."
#define LEGACY_PREFIX "kubernetes.operator."
#define GOV_PREFIX    "governor."

/*
 * Dataflow's knobs (DESIGN 7.3): what each knob row sets. A knob's value in a layer is the
 * value of each option it maps onto in that same layer, unless that option is itself set
 * there (a canonical spelling wins over another, as for aliases); the highest layer still
 * wins per option. The mapped values are computed when a knob or the slots row changes
 * (knobs_refresh), so that reading an option stays a lookup.
 */
enum knob_fn {
    KNOB_SAME,        /* the knob's text */
    KNOB_TIMES_SLOTS, /* workers x taskmanager.numberOfTaskSlots (effective) */
    KNOB_ALGORITHM,   /* THROUGHPUT_BASED -> true, NONE -> false */
};

static const struct knob_map {
    const char *knob, *target;
    enum knob_fn fn;
} knob_maps[] = {
    {GOV_PREFIX "dataflow.max-num-workers", JOB_PREFIX "vertex.max-parallelism", KNOB_TIMES_SLOTS},
    {GOV_PREFIX "dataflow.max-num-workers", GOV_PREFIX "batch.max-workers", KNOB_SAME},
    {GOV_PREFIX "dataflow.min-num-workers", JOB_PREFIX "vertex.min-parallelism", KNOB_TIMES_SLOTS},
    {GOV_PREFIX "dataflow.min-num-workers", GOV_PREFIX "batch.min-workers", KNOB_SAME},
    {GOV_PREFIX "dataflow.worker-utilization-hint", JOB_PREFIX "utilization.target", KNOB_SAME},
    {GOV_PREFIX "dataflow.max-backlog", JOB_PREFIX "catch-up.duration", KNOB_SAME},
    {GOV_PREFIX "dataflow.max-backlog", GOV_PREFIX "slo.lag", KNOB_SAME},
    {GOV_PREFIX "dataflow.autoscaling-algorithm", JOB_PREFIX "enabled", KNOB_ALGORITHM},
};
#define N_KNOB_MAPS ((int)(sizeof knob_maps / sizeof knob_maps[0]))
#define SLOTS_KEY   "taskmanager.numberOfTaskSlots"

static void apply_aggregator(struct core_config *c, const struct opt_row *r, const struct val *v,
                             const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)r, (void)text, (void)layer, (void)j;
    static const enum core_aggregator map[] = {CORE_AGG_MAX, CORE_AGG_AVG, CORE_AGG_MIN};
    c->busy_aggregator = map[v->e];
}

/* Spec 3.2 step 2: the deprecated key counts only when set explicitly (above the defaults). */
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

/* Spec 3.2 step 1: an explicit new key wins over the legacy one; a non-built-in name is a
 * plugin. At the default layer it leaves what the legacy key chose, if it chose one (its row
 * comes first). */
static void apply_align_mode(struct core_config *c, const struct opt_row *r, const struct val *v,
                             const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)r;
    if (layer == OPT_BUILTIN && adjust_mode_set(j))
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
static void apply_safeguard(struct core_config *c, const struct opt_row *r, const struct val *v,
                            const char *text, enum opt_layer layer, const struct opt_job *j)
{
    (void)text, (void)layer, (void)j;
    *(bool *)((char *)c + r->off) = v->unset ? c->profile == CORE_PROFILE_GOVERNOR : v->b;
}

/* A number of the governor profile (a double at r->off): unset, the row's gov_def under the
 * governor profile, none (NaN) under flink. */
static void apply_profile_double(struct core_config *c, const struct opt_row *r,
                                 const struct val *v, const char *text, enum opt_layer layer,
                                 const struct opt_job *j)
{
    (void)text, (void)layer, (void)j;
    double x = v->d;
    if (v->unset) {
        struct val g = {.unset = true};
        x = NAN;
        if (c->profile == CORE_PROFILE_GOVERNOR && r->gov_def &&
            parse_row_value(r, r->gov_def, &g, NULL) == 0 && !g.unset)
            x = g.d;
    }
    memcpy((char *)c + r->off, &x, sizeof x);
}

/* ----------------------------------------------------- display of a value -- */

static void fmt_memory(char *buf, size_t n, int64_t b)
{
    static const struct unit u[] = {{"tb", TIB}, {"gb", GIB}, {"mb", MIB}, {"kb", KIB}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (b != 0 && b % u[i].mult == 0) {
            snprintf(buf, n, "%" PRId64 " %s", b / u[i].mult, u[i].name);
            return;
        }
    snprintf(buf, n, "%" PRId64 " bytes", b);
}

static void fmt_number(char *buf, size_t n, const struct opt_row *r, double x)
{
    if (r->type == T_DURATION)
        core_format_duration(buf, n, (int64_t)x);
    else if (r->type == T_MEMORY)
        fmt_memory(buf, n, (int64_t)x);
    else
        snprintf(buf, n, "%g", x);
}

/* An interval such as "[0, 1]", "(0, 1)", "[1, inf)"; explicit bounds override the row's. */
static void fmt_interval(char *buf, size_t n, const struct opt_row *r, double lo, int has_lo,
                         double hi, int has_hi)
{
    char a[48] = "-inf", b[48] = "inf";
    if (has_lo)
        fmt_number(a, sizeof a, r, lo);
    if (has_hi)
        fmt_number(b, sizeof b, r, hi);
    snprintf(buf, n, "%s%s, %s%s", has_lo == 1 ? "[" : "(", a, b, has_hi == 1 ? "]" : ")");
}

static void fmt_range(char *buf, size_t n, const struct opt_row *r)
{
    fmt_interval(buf, n, r, r->min, r->has_min, r->max, r->has_max);
}

/* ------------------------------------------------------ parsing one value -- */

static bool is_plugin_name(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

static bool is_tz_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64 || s[0] == '/' || strstr(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_+/-", s[i]))
            return false;
    return true;
}

static bool in_range(const struct opt_row *r, double x)
{
    if ((r->has_min == 1 && x < r->min) || (r->has_min == 2 && x <= r->min))
        return false;
    if ((r->has_max == 1 && x > r->max) || (r->has_max == 2 && x >= r->max))
        return false;
    return true;
}

/*
 * Parses text (trimmed) for row r into v and checks it against the row's own rules: type,
 * range (not for gated rows, whose range counts only when their feature is on, spec 6.4),
 * enum values, names. The message (new, in *errp) names the value and what is allowed but
 * not the key: the caller prefixes the key the user wrote.
 */
static int parse_row_value(const struct opt_row *r, const char *t, struct val *v, char **errp)
{
    memset(v, 0, sizeof *v);
    if ((r->flags & F_OPTIONAL) && !*t) {
        v->unset = true;
        return 0;
    }
    double x = 0;
    switch (r->type) {
    case T_BOOL:
        return opt_parse_bool(t, &v->b, errp);
    case T_INT:
        if (parse_int64(t, &v->i) < 0)
            return fail(errp, "\"%s\" is not an integer", t);
        if (r->land == L_INT && (v->i < INT_MIN || v->i > INT_MAX))
            return fail(errp, "\"%s\" is out of range [%d, %d]", t, INT_MIN, INT_MAX);
        x = (double)v->i;
        break;
    case T_DOUBLE:
        if (parse_double(t, &v->d) < 0)
            return fail(errp, "\"%s\" is not a number", t);
        x = v->d;
        break;
    case T_DURATION:
        if (opt_parse_duration(t, &v->i, errp) < 0)
            return -1;
        x = (double)v->i;
        break;
    case T_MEMORY:
        if (opt_parse_memory(t, &v->i, errp) < 0)
            return -1;
        x = (double)v->i;
        break;
    case T_ENUM: {
        for (int i = 0; r->values[i]; i++) {
            bool eq = (r->flags & F_CASE) ? strcmp(t, r->values[i]) == 0
                                          : strcasecmp(t, r->values[i]) == 0;
            if (eq) {
                v->e = i;
                return 0;
            }
        }
        char list[256] = "";
        for (int i = 0; r->values[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     r->values[i]);
        if (r->flags & F_OPEN) {
            if (is_plugin_name(t, strlen(t))) {
                v->e = -1;
                return 0;
            }
            return fail(errp,
                        "\"%s\" is neither one of %s nor a plugin name (letters, digits, '_', "
                        "'-')",
                        t, list);
        }
        return fail(errp, "\"%s\" is not one of %s", t, list);
    }
    case T_LIST:
        if (r->flags & F_NAMES) {
            /* Repeated names count once (list_split drops them); more than MAX_PLUGINS
             * different ones are refused: every name costs a plugin call per vertex. */
            const char *seen[MAX_PLUGINS];
            size_t seen_len[MAX_PLUGINS];
            int n_seen = 0;
            for (const char *p = t; *p;) {
                size_t n = strcspn(p, ";");
                const char *a = p, *b = p + n;
                while (a < b && isspace((unsigned char)*a))
                    a++;
                while (b > a && isspace((unsigned char)b[-1]))
                    b--;
                if (b > a && !is_plugin_name(a, (size_t)(b - a)))
                    return fail(errp,
                                "\"%.*s\" is not a plugin name (letters, digits, '_', '-'; "
                                "names separated by ';')",
                                (int)(b - a), a);
                bool dup = b == a;
                for (int i = 0; !dup && i < n_seen; i++)
                    dup = seen_len[i] == (size_t)(b - a) && memcmp(seen[i], a, seen_len[i]) == 0;
                if (!dup) {
                    if (n_seen == MAX_PLUGINS)
                        return fail(errp, "more than %d different plugin names", MAX_PLUGINS);
                    seen[n_seen] = a;
                    seen_len[n_seen++] = (size_t)(b - a);
                }
                p += n;
                if (*p)
                    p++;
            }
        }
        if ((r->flags & F_PERIODS) && *t) {
            char *e = NULL;
            if (cron_validate(t, &e) < 0) {
                int rc =
                    fail(errp, "\"%s\" is not a valid excluded period: %s", t, e ? e : "invalid");
                free(e);
                return rc;
            }
        }
        return 0;
    case T_STRING:
        return 0;
    case T_TZ:
        if (!is_tz_name(t))
            return fail(errp,
                        "\"%s\" is not a time zone name (IANA, e.g. \"UTC\", "
                        "\"Europe/Berlin\")",
                        t);
        {
            /* The zone must exist in the system's zoneinfo (read once, then cached). */
            char *e = NULL;
            if (!tz_get(t, &e)) {
                int rc = fail(errp, "\"%s\" is not a known time zone: %s", t, e ? e : "");
                free(e);
                return rc;
            }
        }
        return 0;
    }
    if (!r->gate && !in_range(r, x)) {
        char range[128];
        fmt_range(range, sizeof range, r);
        return fail(errp, "\"%s\" is out of range %s", t, range);
    }
    return 0;
}

/* -------------------------------------------------------------- job options -- */

/* One key's values, one per layer (BUILTIN unused: the table's default). rank orders the
 * spellings that map to one key: canonical 0, deprecated alias 1, kubernetes.operator.
 * canonical 2, kubernetes.operator. alias 3; a lower rank wins within a layer. */
struct slot {
    char *v[4];
    unsigned char rank[4];
};

/* A key that is not a row: a plugin parameter, or a key recorded as ignored. */
struct extra {
    char *key; /* canonical spelling */
    bool ignored;
    struct slot s;
};

/* A resolved list (borrowed by core_config until the next resolve). */
struct list_cache {
    char *buf;
    const char **items;
};

/* The value a knob gives the option it maps onto, per layer (knob_maps[m]). */
struct mapped {
    int row;    /* the target's row */
    char *v[4]; /* per layer, NULL: the knob is not set there */
};

/*
 * The keys that are not rows are kept in the order first set (extra[]), and found through a
 * growing sorted index of them (core_runs): adding a key is amortized log n moves, finding one
 * log^2 n compares, and a prefix's keys (a plugin's parameters) a binary search per run: no
 * step compares every key with every other, however many a layer brings.
 */
struct opt_job {
    struct slot rows[N_ROWS];
    struct extra *extra;
    int n_extra, cap_extra;
    struct core_runs keys; /* extra[], by key */
    struct list_cache lists[N_ROWS];
    /* knob_maps' values (knobs_refresh); n_mapped 0: no knob is set at any layer */
    struct mapped mapped[N_KNOB_MAPS];
    int n_mapped;
};

#define EXTRA_KEY sizeof(struct extra), offsetof(struct extra, key)

static void slot_clear(struct slot *s, int layer)
{
    free(s->v[layer]);
    s->v[layer] = NULL;
    s->rank[layer] = 0;
}

/* The effective value of a slot: highest layer set; NULL when only the default applies. */
static const char *slot_value(const struct slot *s, enum opt_layer *layer)
{
    for (int l = OPT_REQUEST; l > OPT_BUILTIN; l--)
        if (s->v[l]) {
            if (layer)
                *layer = (enum opt_layer)l;
            return s->v[l];
        }
    if (layer)
        *layer = OPT_BUILTIN;
    return NULL;
}

static void knobs_refresh(struct opt_job *j);

/* Forgets every knob's mapped values. */
static void mapped_clear(struct opt_job *j)
{
    for (int m = 0; m < N_KNOB_MAPS; m++)
        for (int l = 0; l < 4; l++) {
            free(j->mapped[m].v[l]);
            j->mapped[m].v[l] = NULL;
        }
    j->n_mapped = 0;
}

static void lists_free(struct opt_job *j)
{
    for (int i = 0; i < N_ROWS; i++) {
        free(j->lists[i].buf);
        free(j->lists[i].items);
        j->lists[i].buf = NULL;
        j->lists[i].items = NULL;
    }
}

/* Returns "default", "server", "job" or "request" (static). */
const char *opt_layer_name(enum opt_layer l)
{
    static const char *const n[] = {"default", "server", "job", "request"};
    return (unsigned)l < 4 ? n[l] : "?";
}

/* new: an empty set of job options (every value is the table's default). Aborts on OOM. */
struct opt_job *opt_job_new(void)
{
    struct opt_job *j = xmalloc(sizeof *j);
    memset(j, 0, sizeof *j);
    return j;
}

/* Frees j and everything it owns (including what a resolved core_config borrows). */
void opt_job_free(struct opt_job *j)
{
    if (!j)
        return;
    for (int i = 0; i < N_ROWS; i++)
        for (int l = 0; l < 4; l++)
            free(j->rows[i].v[l]);
    for (int i = 0; i < j->n_extra; i++) {
        free(j->extra[i].key);
        for (int l = 0; l < 4; l++)
            free(j->extra[i].s.v[l]);
    }
    free(j->extra);
    core_runs_free(&j->keys);
    lists_free(j);
    mapped_clear(j);
    free(j);
}

static void slot_copy(struct slot *dst, const struct slot *src)
{
    for (int l = 0; l < 4; l++) {
        dst->v[l] = src->v[l] ? xstrdup(src->v[l]) : NULL;
        dst->rank[l] = src->rank[l];
    }
}

/* new: a deep copy of j's layers (not of its resolve results). */
struct opt_job *opt_job_clone(const struct opt_job *j)
{
    struct opt_job *c = opt_job_new();
    for (int i = 0; i < N_ROWS; i++)
        slot_copy(&c->rows[i], &j->rows[i]);
    if (j->n_extra) {
        c->extra = xmalloc((size_t)j->n_extra * sizeof *c->extra);
        core_runs_copy(&c->keys, &j->keys);
        c->cap_extra = c->n_extra = j->n_extra;
        for (int i = 0; i < j->n_extra; i++) {
            c->extra[i].key = xstrdup(j->extra[i].key);
            c->extra[i].ignored = j->extra[i].ignored;
            slot_copy(&c->extra[i].s, &j->extra[i].s);
        }
    }
    for (int m = 0; m < N_KNOB_MAPS; m++) {
        c->mapped[m].row = j->mapped[m].row;
        for (int l = 0; l < 4; l++)
            c->mapped[m].v[l] = j->mapped[m].v[l] ? xstrdup(j->mapped[m].v[l]) : NULL;
    }
    c->n_mapped = j->n_mapped;
    return c;
}

/* Removes every value set at layer (rows, plugin keys and ignored keys alike). */
void opt_job_clear_layer(struct opt_job *j, enum opt_layer layer)
{
    if ((unsigned)layer >= 4)
        return;
    for (int i = 0; i < N_ROWS; i++)
        slot_clear(&j->rows[i], layer);
    for (int i = 0; i < j->n_extra; i++)
        slot_clear(&j->extra[i].s, layer);
    knobs_refresh(j);
}

/* What a key the user wrote refers to. */
struct key_ref {
    int row;         /* index into opt_rows, -1 = not a row */
    const char *key; /* canonical spelling of a non-row key (points into the given key) */
    int rank;
    bool ignored;
};

/* Maps a key of a job's config to a row, a plugin parameter, or an ignored key; -1 for an
 * unknown job.autoscaler.* key. */
static int lookup_job_key(const char *key, struct key_ref *ref)
{
    const char *k = key;
    int rank = 0;
    memset(ref, 0, sizeof *ref);
    ref->row = -1;
    if (starts_with(k, LEGACY_PREFIX JOB_PREFIX)) {
        k += strlen(LEGACY_PREFIX);
        rank = 2;
    }
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt_rows[i];
        if (r->scope == S_SERVER || (rank && r->scope != S_JOB))
            continue;
        if (strcmp(r->name, k) == 0 || (r->alias && strcmp(r->alias, k) == 0)) {
            ref->row = i;
            ref->rank = rank + (strcmp(r->name, k) != 0);
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof plugin_prefixes / sizeof plugin_prefixes[0]; i++) {
        if (!starts_with(k, plugin_prefixes[i]))
            continue;
        const char *name = k + strlen(plugin_prefixes[i]);
        const char *dot = strchr(name, '.');
        if (dot && is_plugin_name(name, (size_t)(dot - name)) && dot[1]) {
            ref->key = k;
            ref->rank = rank;
            return 0;
        }
    }
    if (starts_with(k, JOB_PREFIX) || starts_with(k, GOV_PREFIX))
        return -1;
    ref->key = key;
    ref->ignored = true;
    return 0;
}

static struct extra *find_extra(const struct opt_job *j, const char *key)
{
    int i = core_runs_find(&j->keys, j->extra, EXTRA_KEY, key);
    return i >= 0 ? &j->extra[i] : NULL;
}

/* Stores value (new copy) in slot s at layer unless a better-ranked spelling is there. */
static void slot_set(struct slot *s, enum opt_layer layer, int rank, char *value_take)
{
    if (s->v[layer] && s->rank[layer] < rank) {
        free(value_take);
        return;
    }
    free(s->v[layer]);
    s->v[layer] = value_take;
    s->rank[layer] = (unsigned char)rank;
}

/* Sets key = value at layer; see options.h. */
int opt_job_set(struct opt_job *j, enum opt_layer layer, const char *key, const char *value,
                char **errp)
{
    char *t = NULL, *e = NULL;
    int rc = -1;
    if (layer <= OPT_BUILTIN || layer > OPT_REQUEST) {
        fail(errp, "%s: cannot be set at the %s layer", key ? key : "", opt_layer_name(layer));
        goto out;
    }
    if (!key || !*key) {
        fail(errp, "an option key is empty");
        goto out;
    }
    if (!value) {
        fail(errp, "%s: no value", key);
        goto out;
    }
    struct key_ref ref;
    if (lookup_job_key(key, &ref) < 0) {
        fail(errp, "%s: unknown option", key);
        goto out;
    }
    t = trim_dup(value);
    if (ref.row >= 0) {
        struct val v;
        if (parse_row_value(&opt_rows[ref.row], t, &v, &e) < 0) {
            fail(errp, "%s: %s", key, e);
            goto out;
        }
        slot_set(&j->rows[ref.row], layer, ref.rank, t);
        t = NULL;
        rc = 0;
        if (starts_with(opt_rows[ref.row].name, GOV_PREFIX "dataflow.") ||
            strcmp(opt_rows[ref.row].name, SLOTS_KEY) == 0)
            knobs_refresh(j);
        goto out;
    }
    struct extra *x = find_extra(j, ref.key);
    if (!x) {
        if (j->n_extra == j->cap_extra) {
            j->cap_extra = j->cap_extra ? 2 * j->cap_extra : 8;
            j->extra = xrealloc(j->extra, (size_t)j->cap_extra * sizeof *j->extra);
        }
        x = &j->extra[j->n_extra];
        memset(x, 0, sizeof *x);
        x->key = xstrdup(ref.key);
        x->ignored = ref.ignored;
        core_runs_add(&j->keys, j->extra, EXTRA_KEY);
        j->n_extra++;
    }
    slot_set(&x->s, layer, ref.rank, t);
    t = NULL;
    rc = 0;
out:
    free(e);
    free(t);
    return rc;
}

/* Splits a ';' list (items trimmed, empty ones dropped) into c; returns the count. With
 * dedupe, a repeated item is dropped (spec 6.2: duplicate executor names are ignored; the
 * same for evaluators, which governor chains: running one twice is never wanted, and
 * a name repeated thousands of times would be thousands of calls per vertex). */
static int list_split(struct list_cache *c, const char *text, bool dedupe)
{
    c->buf = xstrdup(text);
    c->items = xmalloc((strlen(text) / 2 + 1) * sizeof *c->items);
    int n = 0;
    for (char *p = c->buf; p;) {
        char *semi = strchr(p, ';');
        if (semi)
            *semi = '\0';
        while (isspace((unsigned char)*p))
            p++;
        char *end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (*p)
            c->items[n++] = p;
        p = semi ? semi + 1 : NULL;
    }
    if (!dedupe || n < 2)
        return n;
    /* Keep each item's first place only: the items sorted, an item is kept when it is the
     * first of its run (n log n, whatever the list's length). */
    int *perm = xmalloc((size_t)n * sizeof *perm), *tmp = xmalloc((size_t)n * sizeof *tmp);
    struct core_index x;
    core_index_build(&x, c->items, sizeof *c->items, 0, n, perm, tmp);
    bool *keep = (bool *)tmp;
    memset(keep, 0, (size_t)n * sizeof *keep);
    for (int i = 0; i < n; i++)
        keep[core_index_find(&x, c->items[i])] = true;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (keep[i])
            c->items[m++] = c->items[i];
    free(perm);
    free(tmp);
    return m;
}

/* Writes v (parsed from text, for row r) into the struct at base. */
static void land_value(void *base, const struct opt_row *r, const struct val *v, const char *text,
                       enum opt_layer layer, struct opt_job *j, int row)
{
    char *p = (char *)base + r->off;
    switch (r->land) {
    case L_NONE:
        break;
    case L_BOOL:
        *(bool *)p = v->b;
        break;
    case L_INT:
        *(int *)p = (int)v->i;
        break;
    case L_I64:
        *(int64_t *)p = v->unset ? -1 : v->i;
        break;
    case L_DOUBLE:
        *(double *)p = v->unset ? NAN : v->d;
        break;
    case L_DMEM:
        *(double *)p = v->unset ? NAN : (double)v->i;
        break;
    case L_STR:
        if (r->scope == S_SERVER) {
            const char *s = r->type == T_ENUM ? r->values[v->e] : text;
            free(*(char **)p);
            *(char **)p = (v->unset || !*s) ? NULL : xstrdup(s);
        } else {
            *(const char **)p = text;
        }
        break;
    case L_LIST: {
        struct list_cache *c = &j->lists[row];
        int n = list_split(c, text, (r->flags & F_NAMES) != 0);
        *(const char *const **)p = n ? c->items : NULL;
        *(int *)((char *)base + r->off2) = n;
        break;
    }
    case L_HOOK:
        r->apply(base, r, v, text, layer, j);
        break;
    }
}

static const struct opt_row *row_by_name(const char *name, int *index)
{
    for (int i = 0; i < N_ROWS; i++)
        if (strcmp(opt_rows[i].name, name) == 0) {
            if (index)
                *index = i;
            return &opt_rows[i];
        }
    return NULL;
}

/* The effective text of row i of j, the layer it came from and the knob that set it (NULL:
 * the option itself, or its default). Per layer, from the highest: the option's own value,
 * else a knob's value mapped onto it. */
static const char *row_value(const struct opt_job *j, int i, enum opt_layer *layer,
                             const char **via)
{
    if (via)
        *via = NULL;
    if (!j->n_mapped) {
        const char *v = slot_value(&j->rows[i], layer);
        return v ? v : opt_rows[i].def;
    }
    for (int l = OPT_REQUEST; l > OPT_BUILTIN; l--) {
        if (j->rows[i].v[l]) {
            if (layer)
                *layer = (enum opt_layer)l;
            return j->rows[i].v[l];
        }
        for (int m = 0; m < N_KNOB_MAPS; m++)
            if (j->mapped[m].row == i && j->mapped[m].v[l]) {
                if (layer)
                    *layer = (enum opt_layer)l;
                if (via)
                    *via = knob_maps[m].knob;
                return j->mapped[m].v[l];
            }
    }
    if (layer)
        *layer = OPT_BUILTIN;
    return opt_rows[i].def;
}

/* The effective text of a row of j and the layer it came from. */
static const char *row_text(const struct opt_job *j, int i, enum opt_layer *layer)
{
    return row_value(j, i, layer, NULL);
}

/*
 * Computes what each knob of j maps onto, per layer (struct mapped): called whenever a knob
 * or the slots row may have changed. A knob's text was checked when it was set; a product
 * that does not fit its option is printed all the same, and refused when the options are
 * resolved, naming the knob.
 */
static void knobs_refresh(struct opt_job *j)
{
    mapped_clear(j);
    int slots_row = 0, n = 0;
    row_by_name(SLOTS_KEY, &slots_row);
    int64_t slots = 1;
    if (parse_int64(row_text(j, slots_row, NULL), &slots) < 0 || slots < 1)
        slots = 1;
    for (int m = 0; m < N_KNOB_MAPS; m++) {
        int knob = 0, target = 0;
        row_by_name(knob_maps[m].knob, &knob);
        row_by_name(knob_maps[m].target, &target);
        j->mapped[m].row = target;
        for (int l = OPT_SERVER; l <= OPT_REQUEST; l++) {
            const char *t = j->rows[knob].v[l];
            int64_t w;
            if (!t || !*t)
                continue;
            switch (knob_maps[m].fn) {
            case KNOB_SAME:
                j->mapped[m].v[l] = xstrdup(t);
                break;
            case KNOB_TIMES_SLOTS:
                if (parse_int64(t, &w) < 0)
                    continue;
                if (w > INT64_MAX / slots)
                    j->mapped[m].v[l] = xasprintf("%.0f", (double)w * (double)slots);
                else
                    j->mapped[m].v[l] = xasprintf("%" PRId64, w * slots);
                break;
            case KNOB_ALGORITHM:
                j->mapped[m].v[l] = xstrdup(strcasecmp(t, "NONE") == 0 ? "false" : "true");
                break;
            }
            n++;
        }
    }
    j->n_mapped = n;
}

/* Whether the legacy adjust.mode key chose an alignment mode: set above the defaults, to a
 * value (spec 3.2 step 2; apply_adjust_mode lands it). */
static bool adjust_mode_set(const struct opt_job *j)
{
    int i = 0;
    const struct opt_row *r =
        row_by_name(JOB_PREFIX "scaling.key-group.partitions.adjust.mode", &i);
    enum opt_layer layer;
    const char *text = row_text(j, i, &layer);
    struct val v;
    return layer != OPT_BUILTIN && parse_row_value(r, text, &v, NULL) == 0 && !v.unset;
}

/* The index of the utilization.target row. */
static int util_target_row(void)
{
    int i = 0;
    row_by_name(JOB_PREFIX "utilization.target", &i);
    return i;
}

/* "key: "text" is out of range [lo, hi]" for a cross-field check. */
static int range_error(char **errp, const struct opt_job *j, const char *name, double lo,
                       int has_lo, double hi, int has_hi)
{
    int i = 0;
    const struct opt_row *r = row_by_name(name, &i);
    char range[128];
    const char *via;
    const char *text = row_value(j, i, NULL, &via);
    fmt_interval(range, sizeof range, r, lo, has_lo, hi, has_hi);
    if (via)
        return fail(errp, "%s: sets %s to \"%s\", out of range %s", via, name, text, range);
    return fail(errp, "%s: \"%s\" is out of range %s", name, text, range);
}

/* Resolves the effective options into cfg and runs spec 6.4; see options.h. */
int opt_job_resolve(struct opt_job *j, struct core_config *cfg, char **errp)
{
    lists_free(j);
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt_rows[i];
        if (r->scope == S_SERVER)
            continue;
        enum opt_layer layer;
        const char *via;
        const char *text = row_value(j, i, &layer, &via);
        struct val v;
        char *e = NULL;
        if (parse_row_value(r, text, &v, &e) < 0) {
            if (via)
                fail(errp, "%s: sets %s, and %s", via, r->name, e);
            else
                fail(errp, "%s: %s", r->name, e);
            free(e);
            return -1;
        }
        land_value(cfg, r, &v, text, layer, j, i);
    }
    if (!cfg->enabled) /* spec 6.4: options are validated only when the autoscaler is on */
        return 0;

    /* The governor profile refuses a target of 0 (every vertex would go to its maximum); the
     * reference, and so the flink profile, accepts [0, 1]. */
    if (cfg->profile == CORE_PROFILE_GOVERNOR && !(cfg->util_target > 0))
        return fail(errp,
                    "%sutilization.target: \"%s\" is out of range (0, 1] (0 is accepted only "
                    "with governor.profile = flink)",
                    JOB_PREFIX, row_text(j, util_target_row(), NULL));
    /* Spec 6.4, in its order (first error wins). The single-value ranges of the ungated
     * rows were checked when each value was set; what is left are the bounds that depend on
     * another option and the ranges that count only when their feature is on. */
    if (!isnan(cfg->util_max) && !(cfg->util_max >= cfg->util_target && cfg->util_max <= 1))
        return range_error(errp, j, JOB_PREFIX "utilization.max", cfg->util_target, 1, 1.0, 1);
    if (!isnan(cfg->util_min) && !(cfg->util_min >= 0 && cfg->util_min <= cfg->util_target))
        return range_error(errp, j, JOB_PREFIX "utilization.min", 0.0, 1, cfg->util_target, 1);
    if (cfg->batch.min_workers > cfg->batch.max_workers)
        return range_error(errp, j, GOV_PREFIX "batch.max-workers", cfg->batch.min_workers, 1,
                           INFINITY, 0);
    static const char *const gated[] = {
        JOB_PREFIX "observed-scalability.coefficient-min",
        JOB_PREFIX "scaling.effectiveness.threshold",
        JOB_PREFIX "memory.tuning.overhead",
    };
    for (size_t k = 0; k < sizeof gated / sizeof gated[0]; k++) {
        const struct opt_row *r = row_by_name(gated[k], NULL);
        int g = 0;
        row_by_name(r->gate, &g);
        bool on = false;
        opt_parse_bool(row_text(j, g, NULL), &on, NULL);
        double x = *(const double *)((const char *)cfg + r->off);
        if (on && !in_range(r, x))
            return range_error(errp, j, r->name, r->min, r->has_min, r->max, r->has_max);
    }
    if (cfg->vertex_min_parallelism > cfg->vertex_max_parallelism)
        return range_error(errp, j, JOB_PREFIX "vertex.min-parallelism", 1.0, 1,
                           (double)cfg->vertex_max_parallelism, 1);
    if (*cfg->excluded_periods) {
        char *e = NULL;
        if (cron_validate(cfg->excluded_periods, &e) < 0) {
            fail(errp, "%sexcluded.periods: \"%s\" is not a valid excluded period: %s", JOB_PREFIX,
                 cfg->excluded_periods, e ? e : "invalid");
            free(e);
            return -1;
        }
    }
    return 0;
}

/* The built-in defaults: a job without options, resolved. Its strings are the table's. */
void opt_config_defaults(struct core_config *cfg)
{
    struct opt_job *j = opt_job_new();
    if (opt_job_resolve(j, cfg, NULL) < 0)
        abort(); /* a bad default in the table: caught by the tests */
    opt_job_free(j);
}

void opt_config_set_profile(struct core_config *cfg, enum core_profile p)
{
    struct val unset = {.unset = true};
    cfg->profile = p;
    for (int i = 0; i < N_ROWS; i++)
        if (opt_rows[i].apply == apply_safeguard || opt_rows[i].apply == apply_profile_double)
            opt_rows[i].apply(cfg, &opt_rows[i], &unset, NULL, OPT_BUILTIN, NULL);
}

/* Indices of the set plugin keys of j, sorted by key (new array, *n entries): n log n. */
static int *plugin_keys_sorted(const struct opt_job *j, int *n)
{
    size_t cap = (size_t)j->n_extra + 1;
    int *idx = xmalloc(cap * sizeof *idx), *tmp = xmalloc(cap * sizeof *tmp);
    struct core_index x;
    core_index_build(&x, j->extra, sizeof *j->extra, offsetof(struct extra, key), j->n_extra, idx,
                     tmp);
    int m = 0;
    for (int k = 0; k < j->n_extra; k++) {
        const struct extra *e = &j->extra[idx[k]];
        if (!e->ignored && slot_value(&e->s, NULL))
            idx[m++] = idx[k];
    }
    free(tmp);
    *n = m;
    return idx;
}

/* Reports every JOB and CLUSTER row (table order), then the set plugin keys (sorted), each
 * with the knob that set it (NULL: none). */
void opt_job_each_via(const struct opt_job *j,
                      void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer,
                                 const char *via),
                      void *ud)
{
    for (int i = 0; i < N_ROWS; i++) {
        if (opt_rows[i].scope == S_SERVER)
            continue;
        enum opt_layer layer;
        const char *via;
        const char *text = row_value(j, i, &layer, &via);
        fn(ud, opt_rows[i].name, text, layer, via);
    }
    int n = 0;
    int *idx = plugin_keys_sorted(j, &n);
    for (int k = 0; k < n; k++) {
        enum opt_layer layer;
        const char *text = slot_value(&j->extra[idx[k]].s, &layer);
        fn(ud, j->extra[idx[k]].key, text, layer, NULL);
    }
    free(idx);
}

struct each_adapter {
    void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer);
    void *ud;
};

static void each_adapt(void *ud, const char *key, const char *value, enum opt_layer layer,
                       const char *via)
{
    struct each_adapter *a = ud;
    (void)via;
    a->fn(a->ud, key, value, layer);
}

/* opt_job_each_via without the knob. */
void opt_job_each(const struct opt_job *j,
                  void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer),
                  void *ud)
{
    struct each_adapter a = {fn, ud};
    opt_job_each_via(j, each_adapt, &a);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Reports the set plugin keys under prefix, with the prefix stripped, in the order first set:
 * a binary search of each run of the key index finds them, then only they are looked at. */
void opt_job_params(const struct opt_job *j, const char *prefix,
                    void (*fn)(void *ud, const char *param, const char *value), void *ud)
{
    size_t n = strlen(prefix);
    int *hit = NULL, n_hit = core_runs_prefix(&j->keys, j->extra, EXTRA_KEY, prefix, &hit);
    if (n_hit > 1)
        qsort(hit, (size_t)n_hit, sizeof *hit, cmp_int);
    for (int k = 0; k < n_hit; k++) {
        const struct extra *e = &j->extra[hit[k]];
        const char *v = slot_value(&e->s, NULL);
        if (!e->ignored && v && e->key[n])
            fn(ud, e->key + n, v);
    }
    free(hit);
}

/* Number of ignored keys set at any layer. */
int opt_job_n_warnings(const struct opt_job *j)
{
    int n = 0;
    for (int i = 0; i < j->n_extra; i++)
        if (j->extra[i].ignored && slot_value(&j->extra[i].s, NULL))
            n++;
    return n;
}

/* The ignored keys (borrowed) in the order first set, at most cap of them into out; how many
 * there are. */
int opt_job_warnings(const struct opt_job *j, const char **out, int cap)
{
    int n = 0;
    for (int k = 0; k < j->n_extra; k++)
        if (j->extra[k].ignored && slot_value(&j->extra[k].s, NULL)) {
            if (n < cap)
                out[n] = j->extra[k].key;
            n++;
        }
    return n;
}

struct kv {
    const char *key, *value;
};

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* FNV-1a 64 over "key=value\n" for every effective key (rows and plugin keys), sorted by
 * key; ignored keys do not count. Values are hashed as written ("5 min" != "5min"). */
void opt_job_hash(const struct opt_job *j, char out[17])
{
    struct kv *kv = xmalloc(((size_t)N_ROWS + (size_t)j->n_extra) * sizeof *kv);
    int n = 0;
    for (int i = 0; i < N_ROWS; i++)
        if (opt_rows[i].scope != S_SERVER)
            kv[n++] = (struct kv){opt_rows[i].name, row_text(j, i, NULL)};
    for (int i = 0; i < j->n_extra; i++) {
        const char *v = slot_value(&j->extra[i].s, NULL);
        if (!j->extra[i].ignored && v)
            kv[n++] = (struct kv){j->extra[i].key, v};
    }
    qsort(kv, (size_t)n, sizeof *kv, cmp_kv);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < n; i++) {
        h = fnv1a(h, kv[i].key);
        h = fnv1a(h, "=");
        h = fnv1a(h, kv[i].value);
        h = fnv1a(h, "\n");
    }
    free(kv);
    snprintf(out, 17, "%016" PRIx64, h);
}

/* ----------------------------------------------------------- server options -- */

/* Fills s with the SERVER rows' defaults. */
void opt_server_init(struct opt_server *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt_rows[i];
        if (r->scope != S_SERVER)
            continue;
        struct val v;
        if (parse_row_value(r, r->def, &v, NULL) < 0)
            abort(); /* a bad default in the table: caught by the tests */
        land_value(s, r, &v, r->def, OPT_BUILTIN, NULL, i);
    }
}

/* Frees the strings of s. */
void opt_server_deinit(struct opt_server *s)
{
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt_rows[i];
        if (r->scope == S_SERVER && r->land == L_STR) {
            char **p = (char **)((char *)s + r->off);
            free(*p);
            *p = NULL;
        }
    }
}

/* Sets one server option by its table name; -1 + *errp (new) naming the key. */
int opt_server_set(struct opt_server *s, const char *key, const char *value, char **errp)
{
    int i = 0;
    const struct opt_row *r = key ? row_by_name(key, &i) : NULL;
    if (!r || r->scope != S_SERVER)
        return fail(errp, "%s: unknown server option", key ? key : "");
    char *t = trim_dup(value ? value : "");
    char *e = NULL;
    struct val v;
    if ((r->flags & F_NONEMPTY) && !*t) {
        free(t);
        return fail(errp, "%s: an empty value is not allowed (leave the option out instead)", key);
    }
    int rc = parse_row_value(r, t, &v, &e);
    if (rc < 0)
        fail(errp, "%s: %s", key, e);
    else
        land_value(s, r, &v, t, OPT_BUILTIN, NULL, i);
    free(e);
    free(t);
    return rc;
}

/* Reads a `key = value` config file; see options.h. */
int opt_server_load_file(struct opt_server *s, struct opt_job *jobdefaults, const char *path,
                         char **errp)
{
    FILE *f = NULL;
    char *line = NULL, *e = NULL;
    size_t cap = 0;
    int rc = -1, lineno = 0;

    f = fopen(path, "r");
    if (!f) {
        fail(errp, "%s: %s", path, strerror(errno));
        goto out;
    }
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            continue;
        char *eq = strchr(p, '=');
        if (!eq) {
            fail(errp, "%s:%d: expected `key = value`", path, lineno);
            goto out;
        }
        *eq = '\0';
        char *key = p, *value = eq + 1;
        size_t kn = strlen(key);
        while (kn > 0 && isspace((unsigned char)key[kn - 1]))
            key[--kn] = '\0';
        while (isspace((unsigned char)*value))
            value++;
        size_t vn = strlen(value);
        while (vn > 0 && isspace((unsigned char)value[vn - 1]))
            value[--vn] = '\0';
        if (vn >= 2 && value[0] == '"' && value[vn - 1] == '"') {
            value[vn - 1] = '\0';
            value++;
        }
        const struct opt_row *r = row_by_name(key, NULL);
        struct key_ref ref;
        if (r && r->scope == S_SERVER) {
            if (opt_server_set(s, key, value, &e) < 0)
                goto bad;
        } else if (lookup_job_key(key, &ref) == 0 && !ref.ignored) {
            if (jobdefaults && opt_job_set(jobdefaults, OPT_SERVER, key, value, &e) < 0)
                goto bad;
        } else {
            fail(errp, "%s:%d: %s: unknown option", path, lineno, key);
            goto out;
        }
        continue;
    bad:
        fail(errp, "%s:%d: %s", path, lineno, e);
        goto out;
    }
    rc = 0;
out:
    free(e);
    free(line);
    if (f)
        fclose(f);
    return rc;
}

/* ------------------------------------------------------------------- output -- */

static const char *type_name(const struct opt_row *r)
{
    static const char *const n[] = {"bool", "int",  "double", "duration", "memory",
                                    "enum", "list", "string", "time zone"};
    return n[r->type];
}

/* What values are allowed, as display text ("" when anything of the type goes). */
static void allowed_text(char *buf, size_t n, const struct opt_row *r)
{
    buf[0] = '\0';
    if (r->type == T_ENUM) {
        for (int i = 0; r->values[i]; i++)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "", r->values[i]);
        if (r->flags & F_OPEN)
            snprintf(buf + strlen(buf), n - strlen(buf), ", or a plugin name");
    } else if (r->type == T_LIST) {
        snprintf(buf, n, "`;`-separated");
    } else if (r->has_min || r->has_max) {
        fmt_range(buf, n, r);
        if (r->gate)
            snprintf(buf + strlen(buf), n - strlen(buf), " when enabled");
    }
}

/* Help text plus the alias / deprecation notes. */
static void help_text(char *buf, size_t n, const struct opt_row *r)
{
    snprintf(buf, n, "%s%s", (r->flags & F_DEPRECATED) ? "(Deprecated.) " : "", r->help);
    if (r->alias)
        snprintf(buf + strlen(buf), n - strlen(buf), " Deprecated alias: `%s`.", r->alias);
}

static const char *const scope_titles[] = {
    "Job options (also accepted with the `kubernetes.operator.` prefix)",
    "Flink cluster keys read by the algorithm",
    "Server options (`governor serve --NAME VALUE`, or `NAME = VALUE` in the config file)",
};

/* Prints every row as aligned text columns, grouped by scope. */
void opt_print_table(FILE *out)
{
    int w = 0;
    for (int i = 0; i < N_ROWS; i++)
        if ((int)strlen(opt_rows[i].name) > w)
            w = (int)strlen(opt_rows[i].name);
    for (int sc = S_JOB; sc <= S_SERVER; sc++) {
        fprintf(out, "%s%s:\n", sc == S_JOB ? "" : "\n", scope_titles[sc]);
        fprintf(out, "  %-*s  %-9s  %-14s  %-28s  %s\n", w, "NAME", "TYPE", "DEFAULT", "ALLOWED",
                "DESCRIPTION");
        for (int i = 0; i < N_ROWS; i++) {
            const struct opt_row *r = &opt_rows[i];
            if ((int)r->scope != sc)
                continue;
            char allowed[256], help[1024];
            allowed_text(allowed, sizeof allowed, r);
            help_text(help, sizeof help, r);
            fprintf(out, "  %-*s  %-9s  %-14s  %-28s  %s\n", w, r->name, type_name(r),
                    *r->def ? r->def : "(none)", allowed, help);
        }
    }
}

bool opt_server_known(const char *name)
{
    int i = 0;
    const struct opt_row *r = row_by_name(name, &i);
    return r && r->scope == S_SERVER;
}

/* `governor serve --help`: each server option as a flag, with its default and meaning. */
void opt_print_server_flags(FILE *out)
{
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt_rows[i];
        if (r->scope != S_SERVER)
            continue;
        char allowed[256], help[1024];
        allowed_text(allowed, sizeof allowed, r);
        help_text(help, sizeof help, r);
        fprintf(out, "  --%s %s (default %s%s%s)\n      %s\n", r->name, type_name(r),
                *r->def ? r->def : "none", *allowed ? "; " : "", allowed, help);
    }
}

/* Prints s with '|' escaped for a markdown table cell. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/*
 * The README's limits table: one row per bounded size of a request. A row names a server
 * option (its default is the limit, and its help says the rest) or holds a fixed limit of
 * options.h or of the layer that enforces it. The only copy is here; the README's table is
 * printed from it (opt_print_limits_markdown) and a unit test keeps the two equal.
 */
struct limit_row {
    const char *request; /* where the size is */
    const char *what;    /* what is bounded */
    const char *field;   /* the field a refusal names ("" none) */
    const char *option;  /* a SERVER row, or NULL: fixed */
    const char *fixed;   /* the limit, when fixed */
    const char *past;    /* the answer past it */
    const char *why;     /* why the limit is where it is */
};

#define STR_(x) #x
#define STR(x)  STR_(x)

static const struct limit_row limit_rows[] = {
    {"any", "the body", "", "max-body", NULL, "413",
     "holds a sample at the limits below: 5,000 vertices with every metric are about 900 KB"},
    {"any", "the request line and headers", "", "max-header", NULL, "414, 431",
     "a bearer token and a few headers"},
    {"`POST .../metrics`", "vertices (stages of a batch sample)", "`vertices`", "max-vertices",
     NULL, "413",
     "Flink jobs have a few hundred vertices (operators are chained into them); a decision of "
     "5,000 holds the loop about 35 ms"},
    {"`POST .../metrics`", "inputs, in all", "`vertices[i].inputs`", "max-edges", NULL, "413",
     "ten inputs per vertex at the vertex limit; 50,000 into one vertex take about 20 ms"},
    {"`POST .../metrics`", "a vertex's or stage's id", "`vertices[i].id`", NULL,
     STR(OPT_MAX_ID_LEN) " characters", "400", "Flink's vertex ids are 32 hex digits"},
    {"`POST .../metrics`, `PUT .../config`, `POST /v1/replay`", "keys of one options layer",
     "`config`", "max-config-keys", NULL, "413",
     "governor has about 150 options, a plugin a few parameters; 1,000 keys take about 3 ms"},
    {"`POST .../rebalance`", "items, over all workers", "`items`, `workers[i].items`",
     "max-rebalance-items", NULL, "413",
     "a few items per worker of a few thousand workers; 10,000 items take about 45 ms"},
    {"`POST .../rebalance`", "`idle_slots` (a value)", "`idle_slots`", NULL,
     STR(OPT_MAX_IDLE_SLOTS), "400",
     "more slots than a cluster has; the answer's size follows the items, not the slots"},
    {"`GET .../decisions`", "decisions of a page", "`limit`", NULL, STR(OPT_MAX_PAGE), "400",
     "what a dashboard shows at most"},
    {"`GET .../decisions`", "vertex rows of a page (its decisions' vertices, summed)", "",
     "max-page-rows", NULL, "a shorter page, with `next`",
     "1,000 decisions of a 5-vertex job, 100 of a 50-vertex one; about 55 ms of the loop"},
    {"`GET .../timeline`", "buckets", "`step`", NULL, STR(OPT_MAX_BUCKETS), "400",
     "a point per pixel of a wide chart"},
    {"`GET .../timeline`", "values per series (buckets x vertices shown)", "`vertices`", NULL,
     STR(OPT_MAX_VALUES), "413", "2,000 buckets of 500 vertices; a larger job picks vertices"},
    {"every job route", "jobs whose state is held in memory", "", "max-jobs-in-memory", NULL,
     "the least recently used idle job is forgotten, read again from the store at its next "
     "sample",
     "about 8 KB a job: 10,000 jobs are about 80 MB, whatever the number of job names ever seen"},
    {"reads of the history", "the SQLite WAL file", "", "wal-max", NULL,
     "the writer truncates the WAL once readers let it",
     "readers never grow the disk: a timeline, advice or SQL read ends its snapshot often"},
};

void opt_limits_defaults(struct opt_limits *l)
{
    struct opt_server s;
    opt_server_init(&s);
    *l = s.limits;
    opt_server_deinit(&s);
}

/* Prints s with '|' escaped for a markdown table cell. */
static void md_cell(FILE *out, const char *s);

void opt_print_limits_markdown(FILE *out)
{
    fprintf(out, "| request | what | field | limit | option | past it | why this limit |\n");
    fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof limit_rows / sizeof limit_rows[0]; k++) {
        const struct limit_row *l = &limit_rows[k];
        const struct opt_row *r = l->option ? row_by_name(l->option, NULL) : NULL;
        fprintf(out, "| %s | %s | %s | ", l->request, l->what, *l->field ? l->field : "");
        if (r) {
            fputc('`', out);
            md_cell(out, r->def);
            fprintf(out, "` | `%s` | ", r->name);
        } else {
            md_cell(out, l->fixed);
            fputs(" | fixed | ", out);
        }
        md_cell(out, l->past);
        fputs(" | ", out);
        md_cell(out, l->why);
        fputs(" |\n", out);
    }
}

/* Prints the README's options tables (markdown), one per scope. */
void opt_print_markdown(FILE *out)
{
    for (int sc = S_JOB; sc <= S_SERVER; sc++) {
        fprintf(out, "%s### %s\n\n", sc == S_JOB ? "" : "\n", scope_titles[sc]);
        fprintf(out, "| Key | Type | Default | Allowed | Description |\n");
        fprintf(out, "|---|---|---|---|---|\n");
        for (int i = 0; i < N_ROWS; i++) {
            const struct opt_row *r = &opt_rows[i];
            if ((int)r->scope != sc)
                continue;
            char allowed[256], help[1024];
            allowed_text(allowed, sizeof allowed, r);
            help_text(help, sizeof help, r);
            fprintf(out, "| `%s` | %s | ", r->name, type_name(r));
            if (*r->def) {
                fputc('`', out);
                md_cell(out, r->def);
                fputc('`', out);
            } else {
                fputs("(none)", out);
            }
            fputs(" | ", out);
            md_cell(out, allowed);
            fputs(" | ", out);
            md_cell(out, help);
            fputs(" |\n", out);
        }
    }
}
