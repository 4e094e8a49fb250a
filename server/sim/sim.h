/*
 * sim.h - `governor simulate SCENARIO.json ... [--policies DIR] [--set KEY=VALUE ...]`
 * (prefix sim_): runs each scenario (sim_scenario), or each seed of a scenario family
 * (sim_family, `--family NAME --seeds A..B`), in a closed loop (sim_run) under the policies
 * it compares - governor as configured, the reference profile (`governor.profile = flink`),
 * the HPA-style rule (sim_run.h) and a fixed deployment sized for the peak with hindsight -
 * prints the figures table (sim_report), and writes a JSON report and an SVG chart (sim_svg)
 * per scenario, or one JSON report per family. Deterministic for a seed: simulated time,
 * counter-based random numbers.
 *
 * May call: sim_scenario, sim_family, sim_model (the fixed sizes), sim_run, sim_report,
 * sim_svg, options, plugin (loading the policies directory), libc (files under --out, --trace
 * and --emit).
 * Ownership: argv is borrowed; everything the command builds is freed before it returns.
 */
#ifndef GOVERNOR_SIM_H
#define GOVERNOR_SIM_H

/* The sub-command: argv[0] is "simulate". Returns the process exit code: 0, 1 when a run
 * failed, 2 for bad arguments or a bad scenario (nothing is run then). */
int sim_main(int argc, char **argv);

#endif
