/*
 * sim_batch.h - `governor simulate` of a batch scenario (prefix sim_batch_): a backfill whose
 * worker pool is sized by the decision service in batch mode ("mode": "BATCH", core/README.md,
 * Batch), with a noisy progress signal and, optionally, one file that cannot be split, against
 * a fixed pool of the starting size. Prints one row per policy and writes <name>.json.
 * Deterministic for a seed (sim_rng).
 *
 * Scenario document ("mode": "BATCH"): name, about, seed, start (epoch ms), interval (s between
 * samples, 30), startup (s before a new worker runs, 60), horizon (s, 1 d), workers (the
 * starting pool, 10), slots_per_worker (1), rate (units/s per slot), total_work (units),
 * part_size (units in a splittable part: the stage's remaining_parallelism), noise (the
 * progress of an interval varies by +- this fraction), hot_file {size, rate} (one file read by
 * one slot only), config (job options).
 *
 * May call: sim_pipeline, sim_rng, options, jansson, libc (the report file under out).
 */
#ifndef GOVERNOR_SIM_BATCH_H
#define GOVERNOR_SIM_BATCH_H

#include <stdbool.h>
#include <stdint.h>

/* Whether the file at path is a batch scenario (a JSON object with "mode": "BATCH"). */
bool sim_batch_is(const char *path);

/* Runs the batch scenario at path (seed: overrides the scenario's when not NULL), prints the
 * table to stdout and writes out/<name>.json (out NULL: the current directory), and with
 * trace_dir (NULL: none) trace_dir/<name>.governor.jsonl, each sample with "job" and its
 * "decision". Returns the exit code: 0, 1 when a run failed, 2 for a bad scenario (the
 * message on stderr names the field). */
int sim_batch_main(const char *path, const char *out, const char *trace_dir, const uint64_t *seed);

#endif
