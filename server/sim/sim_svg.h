/*
 * sim_svg.h - the chart of a scenario (prefix sim_svg_): one self-contained SVG (no
 * scripts, fonts or other external assets) with, over the job's time in hours, the arrival
 * rate and each policy's capacity (records/s), each vertex's parallelism per policy, and
 * each policy's lag against the SLO.
 *
 * May call: sim_scenario, sim_run (its results), libc (writes to a FILE the caller gives).
 * Ownership: everything is borrowed; nothing is kept after the call.
 */
#ifndef GOVERNOR_SIM_SVG_H
#define GOVERNOR_SIM_SVG_H

#include <stdio.h>

#include "sim/sim_run.h"
#include "sim/sim_scenario.h"

/* Writes the chart of the runs of sc (all of the same length) to out. */
void sim_svg_write(FILE *out, const struct sim_scenario *sc, struct sim_result *const *runs, int n);

#endif
