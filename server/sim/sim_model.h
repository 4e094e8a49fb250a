/*
 * sim_model.h - the simulated job (prefix sim_model_): a fluid model of a streaming job
 * advanced one simulated second at a time, reporting its metrics as a real Flink job does.
 *
 * Per second: each source's arrivals join its backlog (pending records); the source wants to
 * read its backlog, up to its own capacity; a vertex downstream that cannot take the flow
 * throttles the sources that feed it (back-pressure), so a source's read rate is the rate
 * its slowest downstream vertex sustains, and the vertices between it and that bottleneck
 * spend the rest of their time back-pressured. A vertex of p subtasks processes at most
 * capacity x p^scaling / (1 + serial (p - 1)) records/s spread evenly, but the subtask with
 * the largest share of its input saturates first: on a HASH input the hottest key's share
 * (from the second it appears) sits on one subtask and the rest is spread by key groups
 * (max_parallelism of them), on a source by partitions; an external rate cap limits a vertex
 * whatever its parallelism; during a pause its subtasks lose `share` of their time, which
 * counts as busy. While the job
 * restarts (a rescale, or a scripted failure) nothing is processed and the lag grows.
 *
 * What the job reports (sim_model_sample, the decide request): busy time
 * min/avg/max over subtasks and back-pressured time (means over the last 5 s, Flink's
 * gauge update interval), cumulative counters records_in/records_out/accumulated_busy_ms
 * that restart at 0 with every restart of the job, records_in_per_s as Flink's 60 s meter
 * (the counter's increase over the last 60 s / 60, counting from 0 before the restart), and
 * pending_records for sources. With measurement noise n every gauge is multiplied by a
 * factor drawn uniformly from [1 - n, 1 + n] (one per vertex, gauge and sample); counters
 * and pending records are exact.
 *
 * The job's lag is the age of the oldest record waiting at any source (records are read in
 * arrival order), in seconds.
 *
 * May call: sim_scenario, sim_rng, jansson, libc. No I/O, no clock.
 * Ownership: a model borrows its scenario (which must outlive it) and owns the rest.
 */
#ifndef GOVERNOR_SIM_MODEL_H
#define GOVERNOR_SIM_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/sim_scenario.h"

struct sim_model;

/* new: the job at t = 0, just started (running since 0), at parallelism p (NULL: each
 * vertex's `parallelism` of the scenario). */
struct sim_model *sim_model_new(const struct sim_scenario *sc, const int *p);
void sim_model_free(struct sim_model *m);

/* Simulates the second [t, t + 1); afterwards the model is at t + 1. */
void sim_model_step(struct sim_model *m);
/* Seconds since t = 0. */
int64_t sim_model_now(const struct sim_model *m);
bool sim_model_running(const struct sim_model *m);

/* new: the decide request the job sends at the current instant (no "job" field). While the
 * job restarts: status RESTARTING, the parallelism it is being deployed at, no metrics. */
json_t *sim_model_sample(const struct sim_model *m);

/*
 * Applies a decision: the job stops now and runs again at p (one entry per vertex) after
 * `downtime` seconds (0: at once), running_since then. Returns 1, or 0 (nothing done) when
 * p is what runs. A failure is the same at the current parallelism (sim_model_fail).
 */
int sim_model_rescale(struct sim_model *m, const int *p, int64_t downtime);
void sim_model_fail(struct sim_model *m, int64_t downtime);

/* What the report charts, at the current instant. */
double sim_model_lag_s(const struct sim_model *m);   /* max over sources */
double sim_model_pending(const struct sim_model *m); /* records, summed over sources */
double sim_model_arrival(const struct sim_model *m); /* records/s in the last second */
/* The total source rate the deployed parallelism sustains for the current mix of arrivals
 * (while restarting: the parallelism being deployed; NaN when nothing arrives). */
double sim_model_capacity(const struct sim_model *m);
/* The parallelism deployed (during a restart: the one being deployed). */
int sim_model_parallelism(const struct sim_model *m, int v);

/* One vertex in the last simulated second, for tests. Rates in records/s, busy and
 * back-pressure as fractions of the second, counters as reported. */
struct sim_vstat {
    double in_rate;                      /* records/s into the vertex (a source: read) */
    double busy_min, busy_avg, busy_max; /* over subtasks */
    double backpressured;                /* average over subtasks */
    double records_in, records_out, accumulated_busy_ms;
};
void sim_model_vstat(const struct sim_model *m, int v, struct sim_vstat *out);

/*
 * The most vertex v can process at parallelism p (records/s into it) when a share `hot` of
 * its input sits on one key: capacity x p^(scaling - 1) / (largest subtask share), capped at
 * its rate_cap. The subtask shares are those described above.
 */
double sim_model_vertex_capacity(const struct sim_scenario *sc, int v, int p, double hot);

/*
 * The fixed baseline, sized for the peak with hindsight: for each vertex without a `fixed`
 * size in the scenario, the smallest p whose capacity at utilization `util` serves the
 * highest one-minute mean of its input over the horizon; when no p up to its max
 * parallelism does (a hot key), the knee: the smallest p within 95% of the most any p
 * reaches. Fills p[0..n-1].
 */
void sim_model_fixed_size(const struct sim_scenario *sc, double util, int *p);

#endif
