/*
 * reference.c - `governor reference`: the answer's codes and fields as markdown (see
 * reference.h). The rows are the core's own tables (enum core_reason with core_reason_name,
 * CORE_CONSTRAINTS with core_constraint_name, core_vfields, core_figures); this file adds only
 * the words for each, keyed by the core's value or name, so a code or field added to the core
 * without its words here makes the command fail instead of printing an incomplete reference.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/reference.h"
#include "core/core.h"

struct words {
    const char *means;
    const char *todo;
};

/* Indexed by enum core_reason. */
static const struct words reasons[CORE_R__COUNT] = {
    [CORE_R_COLLECTING_METRICS] =
        {"Not enough figures yet: the job is within "
         "`job.autoscaler.stabilization.interval` of its start or "
         "restart, or the metric window (`job.autoscaler.metrics.window`) "
         "is not full. Nothing is decided.",
         "Keep sending samples: the first decision comes after the "
         "stabilization interval plus the window (20 min on the "
         "defaults)."},
    [CORE_R_WITHIN_TARGET] = {"Every vertex is inside its utilization bounds: nothing changes. A "
                              "vertex whose computed target differs says the change is "
                              "*pending*: it is applied only once some vertex of the job is "
                              "outside its bounds (one restart rescales every vertex).",
                              "Nothing."},
    [CORE_R_HIGH_BACKLOG] = {"Scale up: the vertex cannot process what arrives plus the backlog "
                             "within `job.autoscaler.catch-up.duration` (the job is processing "
                             "backlog, or it would keep up without the catch-up share).",
                             "Apply `parallelism` when `execute` is true."},
    [CORE_R_HIGH_UTILIZATION] = {"Scale up: the vertex is busier than its upper utilization bound.",
                                 "Apply `parallelism` when `execute` is true."},
    [CORE_R_LOW_UTILIZATION] = {"Scale down: the vertex is less busy than its lower utilization "
                                "bound, and the delay `job.autoscaler.scale-down.interval` is "
                                "over.",
                                "Apply `parallelism` when `execute` is true."},
    [CORE_R_SCALE_DOWN_DELAYED] = {"A scale-down of a vertex outside its utilization bounds is "
                                   "proposed but waits out "
                                   "`job.autoscaler.scale-down.interval` (the highest proposal "
                                   "within it wins; a vertex inside its bounds records its "
                                   "proposal under WITHIN_TARGET).",
                                   "Nothing; shorten the interval to scale down sooner."},
    [CORE_R_LIMIT_REACHED] = {"The vertex wants more (or fewer) subtasks than its limits allow: "
                              "`job.autoscaler.vertex.min-parallelism` / `max-parallelism`, its "
                              "`max_parallelism` (key groups) or, for a source, its partitions; "
                              "also a source that runs more subtasks than it has partitions and "
                              "drops the idle ones.",
                              "Raise the limit named in `constraints` if the vertex needs the "
                              "capacity (more partitions, a higher max parallelism)."},
    [CORE_R_KEY_PARALLELISM_LIMIT] = {"A hot key: one key carries so much of a HASH input that "
                                      "more subtasks cannot help past a bound (`evaluated` gives "
                                      "`hot_key_share`, `key_rate_bound`, `salting_fanout`).",
                                      "Spread the hot key in the job (salt it over "
                                      "`salting_fanout` subtasks), or accept the bound."},
    [CORE_R_INEFFECTIVE_SCALING] = {"The vertex's last scale-up delivered less than "
                                    "`job.autoscaler.scaling.effectiveness.threshold` of the gain "
                                    "expected, so it is not scaled up again (only with "
                                    "`scaling.effectiveness.detection.enabled`).",
                                    "Look for a bottleneck outside the vertex (an external "
                                    "system, a hot key)."},
    [CORE_R_MEMORY_PRESSURE] = {"GC time or heap usage (`job_metrics`) is above "
                                "`job.autoscaler.memory.gc-pressure.threshold` or "
                                "`heap-usage.threshold`: scaling is blocked.",
                                "Give the TaskManagers more memory."},
    [CORE_R_QUOTA_REACHED] = {"The scaling would exceed `job.autoscaler.quota.cpu` or "
                              "`quota.memory`: a recommendation only (`execute` false).",
                              "Do not apply it; raise the quota if the job needs the capacity."},
    [CORE_R_EXCLUDED_PERIOD] = {"Inside `job.autoscaler.excluded.periods`: a recommendation only "
                                "(`execute` false).",
                                "Do not apply it; the scaling is decided again after the period "
                                "if it is still needed."},
    [CORE_R_SCALING_DISABLED] = {"`job.autoscaler.enabled` is false (nothing is computed), or "
                                 "`job.autoscaler.scaling.enabled` is false (advisor mode: a "
                                 "recommendation only, `execute` false).",
                                 "Do not apply it; set the option to true to let governor "
                                 "scale."},
    [CORE_R_VETOED] = {"An executor plugin vetoed the scaling (a `ScalingVetoed` event names it). "
                       "The decision is stored and counted like any other, with `execute` "
                       "false.",
                       "Do not apply `parallelism`; see the plugin's parameters (a change "
                       "freeze, a night window)."},
    [CORE_R_PLUGIN_ERROR] = {"A plugin failed (an error, or a limit of the sandbox): the decision "
                             "governor makes without it stands, and the message names the plugin "
                             "and the error with file:line.",
                             "Apply the decision as usual (`execute`); fix the plugin "
                             "(`plugin_calls` of the record, `governor test`)."},
    [CORE_R_JOB_NOT_RUNNING] = {"The sample's `status` is not RUNNING: nothing is decided, the "
                                "job's state is kept.",
                                "Nothing; decisions resume with the running samples."},
    [CORE_R_IMPLAUSIBLE_SAMPLE] = {"The sample's counters disagree with its gauges, the previous "
                                   "sample or the time elapsed: it is left out of the window "
                                   "(an `ImplausibleSample` warning) and nothing is decided; the "
                                   "third in a row starts a new window.",
                                   "Check the client's counters (units, resets) against its "
                                   "rates."},
    [CORE_R_EXTERNAL_LIMIT] = {"More subtasks do not raise what the vertex processes: its "
                               "processing rate, measured at the parallelisms it ran at, "
                               "flattens (Amdahl's law fitted), as when a sink waits on a "
                               "database. It is held at, or scaled back to, the fewest subtasks "
                               "reaching `governor.scalability.share` of the most any "
                               "parallelism reaches, and the vertices sharing its sources are "
                               "sized for what it passes (`governor.scalability.curve`).",
                               "Raise the limit outside the job (the database's or the API's "
                               "capacity), or accept it."},
    [CORE_R_NOT_APPLIED] = {"The client did not apply the same executed scaling "
                            "`governor.not-applied.max` times in a row: it is recommended "
                            "(`execute` false) instead of executed again, until the job's "
                            "parallelism or its load changes.",
                            "Apply `parallelism`, or find why the client does not (a quota, a "
                            "failed deployment, an operator that reverts it)."},
    [CORE_R_LOW_BACKLOG] = {"Batch: the remaining work needs fewer workers than the pool has "
                            "(`workers = ceil(sqrt(speed-weight x W / worker-overhead))`, W "
                            "the remaining worker-seconds); after "
                            "`governor.batch.scale-down-confirmations` decisions in a row the "
                            "pool shrinks.",
                            "Apply `workers` when `execute` is true."},
    [CORE_R_UNSPLITTABLE_WORK] = {"Batch: the pool is capped by what the remaining work splits "
                                  "into (its splittable parts, fixed shards); rebalance: an item "
                                  "that holds the stage cannot be split (`blocked` says why).",
                                  "Split the input finer (more files or partitions, fewer fixed "
                                  "shards), or accept the cap."},
    [CORE_R_STRAGGLERS] = {"Rebalance: splitting the stragglers' remaining work at the points "
                           "given brings the stage's finish forward.",
                           "Split at the `splits` given; the answer shows the finish before "
                           "and after."},
    [CORE_R_BALANCED] = {"Rebalance: the workers finish together already, or no split would "
                         "bring the finish forward.",
                         "Nothing."},
};

/* Indexed by the constraint's bit (CORE_CB_*). */
static const struct words constraints[CORE_C__COUNT] = {
    [CORE_CB_CLAMPED_MAX_FACTOR] = {"The step was limited by `job.autoscaler.scale-up.max-factor` "
                                    "or `scale-down.max-factor`.",
                                    "Nothing: the next decisions take further steps."},
    [CORE_CB_CLAMPED_MIN_PARALLELISM] = {"Raised to `job.autoscaler.vertex.min-parallelism`.",
                                         "Lower the option if the vertex may run smaller."},
    [CORE_CB_CLAMPED_MAX_PARALLELISM] = {"Lowered to `job.autoscaler.vertex.max-parallelism` or "
                                         "the vertex's `max_parallelism`.",
                                         "Raise the option (or the job's max parallelism) if the "
                                         "vertex needs more."},
    [CORE_CB_ALIGNED_TO_KEY_GROUPS] = {"Moved to a parallelism that spreads the vertex's key "
                                       "groups (`max_parallelism`) evenly: between two such "
                                       "numbers the busiest subtask gets no fewer keys.",
                                       "Nothing."},
    [CORE_CB_ALIGNED_TO_PARTITIONS] = {"Moved to a parallelism that spreads the source's "
                                       "`partitions` evenly: a subtask reads whole partitions.",
                                       "Nothing."},
    [CORE_CB_CAPPED_AT_PARTITIONS] = {"A source was capped at its partitions: more subtasks "
                                      "would read nothing.",
                                      "Add partitions to the source if it needs more capacity."},
    [CORE_CB_ALIGNED_BY_PLUGIN] = {"An alignment plugin "
                                   "(`job.autoscaler.scaling.parallelism-alignment.mode`) chose "
                                   "the number.",
                                   "Nothing."},
    [CORE_CB_EXCLUDED_VERTEX] = {"The vertex is not scaled: listed in "
                                 "`job.autoscaler.vertex.exclude.ids`, finished, or without busy "
                                 "time.",
                                 "Send `busy_ms_per_s` for it, or remove it from the list."},
    [CORE_CB_CHANGED_BY_EXECUTOR] = {"An executor plugin changed the target.", "Nothing."},
    [CORE_CB_CAPPED_BY_KEY_SKEW] = {"Capped where a hot key makes more subtasks useless (see "
                                    "KEY_PARALLELISM_LIMIT).",
                                    "Spread the hot key in the job."},
    [CORE_CB_CAPPED_AT_KNEE] = {"Capped at the knee of the vertex's measured scalability curve "
                                "(see EXTERNAL_LIMIT).",
                                "Raise the limit outside the job."},
};

struct described {
    const char *name, *unit, *what;
};

/* The fields of a vertex's decision, by core_vfields name. */
static const struct described vfields[] = {
    {"id", "text", "The vertex, as in the request."},
    {"current", "integer", "Its parallelism in the sample."},
    {"target", "integer",
     "The parallelism to run it at. Apply it only when the answer's `execute` is true."},
    {"raw_target", "integer", "The parallelism the figures ask for, before any constraint."},
    {"reason", "reason code", "Why (see the reason codes)."},
    {"constraints", "array of constraint codes",
     "Every limit that moved the number between `raw_target` and `target`."},
    {"excluded", "boolean", "Not scaled (see EXCLUDED_VERTEX)."},
    {"outside_bounds", "boolean",
     "Its true processing rate is outside the utilization bounds. One such vertex is enough "
     "to rescale the job, and then every vertex moves to its target."},
    {"message", "text, optional", "Why, in the figures used; absent when there is nothing to say."},
    {"evaluated", "object", "The figures the decision was made from (below)."},
};

/* The evaluated figures, by core_figures name. */
static const struct described figures[] = {
    {"load", "ratio", "How busy the vertex was: busy time per second / 1000, over the window."},
    {"true_processing_rate", "records/s",
     "What the current subtasks process when busy all the time."},
    {"target_data_rate", "records/s", "What arrives at the vertex, averaged over the window."},
    {"catch_up_data_rate", "records/s",
     "What must be processed on top to work off the backlog within "
     "`job.autoscaler.catch-up.duration`."},
    {"lag", "records", "A source's backlog (`pending_records`)."},
    {"scale_up_rate_threshold", "records/s",
     "A true processing rate below it puts the vertex above its upper utilization bound."},
    {"scale_down_rate_threshold", "records/s",
     "A true processing rate above it puts the vertex below its lower utilization bound."},
    {"expected_processing_rate", "records/s",
     "What the vertex would process at the parallelism computed for it (a pending change "
     "included); `null` when that is its current parallelism."},
    {"parallelism", "subtasks", "The current parallelism."},
    {"max_parallelism", "subtasks", "Its key groups."},
    {"num_source_partitions", "partitions", "A source's partitions (0: unknown or not a source)."},
    {"busy_max_avg_ratio", "ratio",
     "Busiest subtask's busy time over the average one's (a HASH vertex scaling up)."},
    {"hot_key_share", "ratio", "The share of the input on one key."},
    {"key_rate_bound", "records/s", "The most the vertex can ever process with that hot key."},
    {"salting_fanout", "subtasks",
     "Over how many subtasks the hot key must be spread to fit at the utilization target."},
};

static const struct described *find(const struct described *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    return NULL;
}

/* 1e15 as "1e15", 0.5 as "0.5". */
static void num(char *buf, size_t n, double x)
{
    if (x >= 1e9)
        snprintf(buf, n, "1e%d", (int)floor(log10(x) + 0.5));
    else
        snprintf(buf, n, "%.15g", x);
}

/* "[lo, hi]", "whole, >= 1", "or infinite": the range an evaluator plugin may return, which is
 * also the range of the figure. */
static void range(char *buf, size_t n, const struct core_figure *f)
{
    char lo[32], hi[32];
    num(lo, sizeof lo, f->lo);
    num(hi, sizeof hi, f->hi);
    const char *when = (f->flags & CORE_FIG_ASSESSED) ? "; only when diagnosed" : "";
    if (f->hi == CORE_INT_MAX)
        snprintf(buf, n, "whole, at least %s%s", lo, when);
    else
        snprintf(buf, n, "[%s, %s]%s%s", lo, hi, (f->flags & CORE_FIG_INF) ? " or infinite" : "",
                 when);
}

static const char *reason_name(int i)
{
    return core_reason_name((enum core_reason)i);
}

/* One table of codes: code i (0 <= i < n) is name(i), described by words[i]. The number of
 * codes without words. */
static int print_codes(FILE *out, const char *title, const char *kind, int n,
                       const char *(*name)(int), const struct words *words)
{
    int missing = 0;
    fprintf(out, "%s\n\n| code | what it means | what to do |\n|---|---|---|\n", title);
    for (int i = 0; i < n; i++) {
        if (!words[i].means) {
            fprintf(stderr, "governor reference: %s %s has no description\n", kind, name(i));
            missing++;
            continue;
        }
        fprintf(out, "| `%s` | %s | %s |\n", name(i), words[i].means, words[i].todo);
    }
    return missing;
}

int cli_print_reference(FILE *out)
{
    int missing =
        print_codes(out, "#### Reason codes", "reason", CORE_R__COUNT, reason_name, reasons);
    missing += print_codes(out, "\n#### Constraint codes (`vertices[].constraints`)", "constraint",
                           CORE_C__COUNT, core_constraint_name, constraints);
    fputs("\n#### A vertex of the answer (`vertices[]`)\n\n"
          "| field | type | what |\n|---|---|---|\n",
          out);
    for (int i = 0; i < core_n_vfields; i++) {
        const struct described *d =
            find(vfields, sizeof vfields / sizeof vfields[0], core_vfields[i].name);
        if (!d) {
            fprintf(stderr, "governor reference: field %s has no description\n",
                    core_vfields[i].name);
            missing++;
            continue;
        }
        fprintf(out, "| `%s` | %s | %s |\n", d->name, d->unit, d->what);
    }
    fputs("\n#### Evaluated figures (`vertices[].evaluated`)\n\n"
          "Every figure is a number, `null` when it could not be computed (no busy time, no rates "
          "yet) or is infinite (no limit); a figure of a diagnosis appears only for a vertex it "
          "was made for.\n\n"
          "| figure | unit | range | what |\n|---|---|---|---|\n",
          out);
    for (int i = 0; i < CORE_N_FIGURES; i++) {
        const struct core_figure *f = &core_figures[i];
        const struct described *d = find(figures, sizeof figures / sizeof figures[0], f->name);
        if (!d) {
            fprintf(stderr, "governor reference: figure %s has no description\n", f->name);
            missing++;
            continue;
        }
        char r[128];
        range(r, sizeof r, f);
        fprintf(out, "| `%s` | %s | %s | %s |\n", d->name, d->unit, r, d->what);
    }
    return missing ? 1 : 0;
}
