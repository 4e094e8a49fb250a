/*
 * sim_scenario.h - a simulated job as the scenario file describes it (prefix sim_scenario_):
 * the graph (vertices, their capacity per subtask, scaling efficiency and Amdahl's serial
 * share, selectivity, key skew on HASH inputs from some instant on, an external rate cap,
 * GC-like pauses), the sources' arrival-rate profiles (constant, step, ramp, daily cycle,
 * spike, noise, outage with or without backlog, periodic bursts, days with peaks), scripted
 * failures, the client (gaps in its samples, scale-downs it does not apply), the sampling
 * interval, the restart downtime, the lag SLO, the measurement noise and the job options every
 * simulated policy starts from. The format is documented in docs/simulate.md ("Scenario
 * format").
 *
 * Time in a scenario is simulated seconds from t = 0 (the job's start, at `start` epoch
 * ms). A duration is a JSON number of seconds or a string as the options take it
 * ("90 s", "5 min", "1 h"); it must be a whole number of seconds.
 *
 * May call: options (opt_parse_duration), core (core_ship_parse), sim_rng, jansson, libc.
 * Reads the scenario file (sim_scenario_load); nothing else does I/O.
 * Ownership: a struct sim_scenario owns every string and array it points to, and the
 * `config` object (one reference).
 */
#ifndef GOVERNOR_SIM_SCENARIO_H
#define GOVERNOR_SIM_SCENARIO_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

enum sim_term_kind {
    SIM_T_CONSTANT, /* rate = R */
    SIM_T_STEP,     /* rate = R from `at` on */
    SIM_T_RAMP,     /* from the rate so far at `at` linearly to R at `until` */
    SIM_T_DAILY,    /* rate = min + (max - min) (1 + cos(2 pi (t - peak) / period)) / 2 */
    SIM_T_SPIKE,    /* rate x factor during [at, at + duration) */
    SIM_T_NOISE,    /* rate x max(0, 1 + sd N(0, 1)), one draw per `every` */
    SIM_T_OUTAGE,   /* the source reads nothing during [at, at + duration) */
    SIM_T_PERIODIC, /* rate x factor during [at + k every, at + k every + duration), ramped */
    SIM_T_PEAKS,    /* rate = base + sum of daily bumps (two-peak days) */
};

/* One bump of a `peaks` term: + rate x exp(-d^2 / (2 width^2)), d the distance (s) from `at`
 * within the period, taken around the period's end. */
struct sim_peak {
    int64_t at, width;
    double rate;
};
#define SIM_MAX_PEAKS 4

/* One term of a source's arrival profile; the terms apply in order to a rate starting at 0. */
struct sim_term {
    enum sim_term_kind kind;
    double rate;          /* constant, step, ramp (the rate reached) */
    double min, max;      /* daily */
    double factor;        /* spike */
    double sd;            /* noise */
    int64_t at, until;    /* step, ramp, spike, outage (until = at + duration) */
    int64_t peak, period; /* daily */
    int64_t every;        /* noise; periodic: the period (0 = once) */
    int64_t ramp;         /* periodic: seconds to move linearly to and from the factor */
    bool backlog;         /* outage: records keep arriving and wait (default true) */
    double base;          /* peaks */
    struct sim_peak peaks[SIM_MAX_PEAKS];
    int n_peaks;
};

struct sim_input {
    int from; /* index of an earlier vertex */
    enum core_ship ship;
    double hot_key;     /* HASH: share of the edge's records on its hottest key, [0, 1) */
    int64_t hot_key_at; /* the hot key appears at this second (default 0: from the start) */
};

/* GC-like pauses of a vertex: every `every` seconds from `at`, for `duration` seconds, its
 * subtasks spend `share` of their time in pauses that count as busy time, so they process
 * (1 - share) of their rate; the arrivals do not change. */
struct sim_pauses {
    int64_t at, every, duration;
    double share; /* 0: none */
};

struct sim_vertex {
    char *id;
    int parallelism, max_parallelism;
    int partitions;     /* sources: splits to spread over subtasks; 0 = even spread */
    double capacity;    /* records/s one subtask processes busy all the time, at p = 1 */
    double scaling;     /* efficiency exponent: p subtasks process capacity x p^scaling */
    double serial;      /* Amdahl's serial share: and / (1 + serial (p - 1)) on top */
    double selectivity; /* records out per record in */
    double rate_cap;    /* external limit on the whole vertex, records/s; +inf = none */
    int fixed;          /* the fixed baseline's size; 0 = sized for the peak with hindsight */
    struct sim_pauses pauses;
    struct sim_input *inputs;
    int n_inputs; /* 0: a source */
    struct sim_term *terms;
    int n_terms;
};

/* A scripted failure: the whole job restarts at `at` and is down for `downtime`. */
struct sim_failure {
    int64_t at, downtime;
};

/* A gap in what the client sends: no sample during [at, at + duration) (the job runs on). */
struct sim_gap {
    int64_t at, duration;
};

/* What the client applies of an executed decision. */
enum sim_applies {
    SIM_APPLY_ALL,       /* every executed decision (default) */
    SIM_APPLY_SCALE_UPS, /* a decision that lowers any vertex is not applied */
};

struct sim_scenario {
    char *name;  /* "name", else the file's base name without .json ([A-Za-z0-9._:-]) */
    char *about; /* may be NULL */
    uint64_t seed;
    int64_t start_ms;     /* epoch ms of t = 0; default 2025-11-29T00:00:00Z */
    int64_t horizon;      /* seconds simulated */
    int64_t interval;     /* seconds between two samples (decide calls); default 30 */
    int64_t restart;      /* downtime of a rescale, seconds; default 60 */
    int64_t slo;          /* lag SLO, seconds; default 300 */
    int64_t recovery_lag; /* lag under which a step counts as recovered; default 30 */
    double noise;         /* measurement noise on the gauges, +- fraction; default 0 */
    json_t *config;       /* job options every simulated policy starts from (an object) */
    struct sim_vertex *v; /* in the file's order, which is topological */
    int n;
    struct sim_failure *failures;
    int n_failures;
    /* "client": how the client that sends the samples behaves */
    struct sim_gap *gaps;
    int n_gaps;
    enum sim_applies applies;
};

/*
 * Parses a scenario document (borrowed). name_hint names it when the document has no
 * "name" (may be NULL). On success *out is new (sim_scenario_free). On a bad document
 * returns -1 with *errp (new) naming the field, e.g.
 * `vertices[1].inputs[0].from: "agg" is not an earlier vertex`.
 */
int sim_scenario_parse(json_t *doc, const char *name_hint, struct sim_scenario **out, char **errp);
/* Reads and parses a scenario file; errors name the file. */
int sim_scenario_load(const char *path, struct sim_scenario **out, char **errp);
void sim_scenario_free(struct sim_scenario *sc);

/* The arrival rate of source v (records/s) during the second [t, t + 1), outages aside. */
double sim_scenario_arrival(const struct sim_scenario *sc, int v, int64_t t);
/* True while the client sends no sample at second t (client.gaps). */
bool sim_scenario_gap(const struct sim_scenario *sc, int64_t t);
/* True while an outage keeps source v from reading at second t. */
bool sim_scenario_outage(const struct sim_scenario *sc, int v, int64_t t);

/*
 * The instants after which recovery is measured: every step, spike start, outage end (of
 * any source) and scripted failure, sorted and without duplicates, up to the horizon.
 * Fills at[] (up to max) and label[] (static strings: "step", "spike", "outage end",
 * "failure"); returns the count.
 */
int sim_scenario_marks(const struct sim_scenario *sc, int64_t *at, const char **label, int max);

#endif
