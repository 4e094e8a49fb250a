/*
 * sim_run.h - one closed-loop run (prefix sim_run_, sim_result_): a scenario's job
 * (sim_model) driven under one policy for the horizon. Every `interval` seconds the job's
 * sample goes through the decision pipeline (sim_pipeline); a decision with execute: true
 * restarts the job at the decided parallelism, which runs after the scenario's restart
 * downtime. The fixed baseline sends nothing and runs at its hindsight size throughout.
 * Scripted failures restart the job at its current parallelism. The run records, for every
 * simulated second, what the report needs (lag, arrival, capacity, parallelism per vertex).
 *
 * May call: sim_model, sim_pipeline, sim_scenario, jansson, libc (writes the trace to a
 * FILE the caller gives).
 * Ownership: a result is owned by the caller (sim_result_free).
 */
#ifndef GOVERNOR_SIM_RUN_H
#define GOVERNOR_SIM_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "options/options.h"
#include "sim/sim_scenario.h"

struct plugin_set;

/* The HPA-style rule (Kubernetes' horizontal pod autoscaler, per vertex): every interval,
 * desired = ceil(p x u / target) where u is the vertex's average busy time over its subtasks
 * in the last minute of samples (noise included), nothing while |u / target - 1| <=
 * tolerance; a scale-up at most to max(2 p, p + 4) (HPA's default scale-up policy), a
 * scale-down only to the highest desired of the last `stabilization` seconds (HPA's
 * downscale stabilization window); within [1, max_parallelism]. Any change restarts the job
 * (a Flink rescale). Nothing is decided while the job restarts; samples of the first
 * `init_period` seconds after it runs again are not used (HPA's CPU initialization period),
 * so the first decision after a restart comes a minute of samples later. */
struct sim_hpa {
    double target;         /* utilization target (the job's utilization.target) */
    double tolerance;      /* 0.1 */
    int64_t stabilization; /* seconds, 300 */
    int64_t init_period;   /* seconds, 300 */
};

/* How a run decides. */
struct sim_policy {
    const char *name;
    bool fixed;         /* no decisions: the parallelism in fixed_p throughout */
    const int *fixed_p; /* fixed: one size per vertex (borrowed) */
    bool hpa;           /* the HPA-style rule with hpa_rule, no pipeline */
    struct sim_hpa hpa_rule;
    const struct opt_job *layers; /* the pipeline's options, server layer (borrowed) */
    struct plugin_set *set;       /* the pipeline's plugins (borrowed; may be NULL) */
};

/* What a run leaves, second by second: index k describes the second [k, k + 1). */
struct sim_result {
    char *policy;
    int64_t n;       /* seconds simulated */
    int nv;          /* vertices */
    double *lag;     /* lag at the end of second k (at t = k + 1), seconds */
    double *arrival; /* records/s arriving at the sources */
    double *capacity;
    int *par;        /* par[v * n + k]: vertex v's deployed parallelism */
    int rescales;    /* decisions applied (each one a restart) */
    int executed;    /* decisions with execute: true (the client may not apply one) */
    int decisions;   /* samples decided on */
    json_t *reasons; /* {"WITHIN_TARGET": 412, ...}: the job's reason, counted */
};

/*
 * Runs sc under pol for min(horizon, sc->horizon) seconds (horizon <= 0: the scenario's).
 * A pipeline policy sends no sample during the scenario's client gaps, and its client
 * applies what the scenario's client.applies says. trace (may be NULL) gets one JSON line
 * per sample: the request with "job" and the
 * decision under "decision" (so the file replays through `governor replay`). On success
 * *out is new. A sample the pipeline refuses (a bad option in the scenario's config, or a
 * defect) ends the run: -1 with *errp (new) naming the time and the field.
 */
int sim_run(const struct sim_scenario *sc, const struct sim_policy *pol, int64_t horizon,
            FILE *trace, struct sim_result **out, char **errp);
void sim_result_free(struct sim_result *r);

#endif
