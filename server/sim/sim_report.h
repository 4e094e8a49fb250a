/*
 * sim_report.h - the figures of a run and how they are written (prefix sim_report_): the
 * maximum and 95th-percentile lag, the minutes over the lag SLO, the subtask-hours, the
 * rescales, and the time to recover after each step of the load; as a JSON document per
 * scenario and as a text (or markdown) table row per scenario and policy.
 *
 * Definitions (the run's lag series holds the lag at t = 1, 2, ..., n seconds):
 *  - max lag: the largest value; p95 lag: the nearest-rank 95th percentile, the value of
 *    rank ceil(0.95 n) in ascending order;
 *  - minutes over the SLO: (seconds with lag > slo) / 60;
 *  - subtask-hours: the sum over vertices and seconds of the deployed parallelism / 3600
 *    (a rescale counts the new parallelism from the moment it is decided);
 *  - recovery after a mark (a step, a spike's start, an outage's end, a failure; see
 *    sim_scenario_marks): the seconds from the mark to the first instant from which the lag
 *    stays at or below recovery_lag for SIM_RECOVERY_HOLD seconds (or until the next mark or
 *    the end, if that comes first); 0 when it never rose above; not recovered (null) when no
 *    such instant comes before the next mark or the end. A later, unrelated rise (a
 *    scale-down's restart an hour on) does not undo a recovery.
 *
 * May call: sim_scenario, sim_run (its results), jansson, libc (writes to FILEs the caller
 * gives).
 * Ownership: the scenario and the runs are borrowed; sim_report_json returns a new object.
 */
#ifndef GOVERNOR_SIM_REPORT_H
#define GOVERNOR_SIM_REPORT_H

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "sim/sim_run.h"
#include "sim/sim_scenario.h"

#define SIM_MAX_MARKS     32
#define SIM_RECOVERY_HOLD 600 /* seconds the lag must stay low to count as recovered */

struct sim_mark {
    int64_t at;
    const char *label; /* static: "step", "spike", "outage end", "failure" */
    double recovered;  /* seconds after `at`; NaN: not recovered */
};

struct sim_figures {
    double max_lag, p95_lag, minutes_over_slo, subtask_hours;
    int rescales;
    struct sim_mark marks[SIM_MAX_MARKS];
    int n_marks;
    double recovery; /* the longest recovery; NaN if one did not recover; 0 without marks */
};

/* Computes the figures of run r of scenario sc. */
void sim_report_figures(const struct sim_scenario *sc, const struct sim_result *r,
                        struct sim_figures *f);

/* new: the scenario's JSON report: its parameters and, per run, the figures, the decisions
 * counted by reason, and the first, last and largest parallelism of each vertex with every
 * change of it ("steps": [second, new parallelism] pairs). */
json_t *sim_report_json(const struct sim_scenario *sc, struct sim_result *const *runs, int n);

/* The table: a header, then one row per run. markdown: a GitHub table instead of aligned
 * text. */
void sim_report_table_header(FILE *out, bool markdown);
void sim_report_table_rows(FILE *out, bool markdown, const struct sim_scenario *sc,
                           struct sim_result *const *runs, int n);

#endif
