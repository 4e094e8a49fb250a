/*
 * sim_family.h - scenario families (prefix sim_family_): a generator per kind of load whose
 * parameters are drawn from a seed, so that a policy is measured on many jobs of a kind
 * rather than on one scenario it could have been tuned to. Every family draws, besides its
 * load pattern, a job shape of 2 to 8 vertices (one or two sources, chains with fan-out and
 * fan-in, HASH and REBALANCE edges, selectivities, per-subtask capacities, key groups,
 * source partitions, linear or sub-linear scaling), a restart time from 30 s to 10 min, a
 * sampling interval of 15, 30 or 60 s, measurement noise on the gauges and noise on the
 * arrivals. The families, and what each draws, are listed by sim_family_about and in the
 * README ("Scenario families").
 *
 * A family's scenario for a seed is an ordinary scenario document (the format of
 * sim_scenario.h), named "<family>-<seed>": `governor simulate --emit DIR` writes it, and it
 * runs alone as any scenario does, giving the same figures.
 *
 * May call: sim_scenario (parsing), sim_model (the sizes at the start rate), sim_rng,
 * jansson, libc. No I/O.
 * Ownership: returned documents are new.
 */
#ifndef GOVERNOR_SIM_FAMILY_H
#define GOVERNOR_SIM_FAMILY_H

#include <jansson.h>
#include <stdint.h>

/* The number of families, and family i's name and one-line description (static). */
int sim_family_count(void);
const char *sim_family_name(int i);
const char *sim_family_about(int i);
/* The index of the family called name, -1 if none. */
int sim_family_find(const char *name);

/* new: family f's scenario document for seed. Never fails for 0 <= f < count. */
json_t *sim_family_scenario(int f, uint64_t seed);

#endif
