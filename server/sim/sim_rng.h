/*
 * sim_rng.h - the simulator's random numbers (prefix sim_rng_): a counter-based generator,
 * splitmix64 over (seed, stream, index), so that a draw depends only on what it is for and
 * when, never on how many draws came before. Two runs of one scenario under different
 * policies therefore see the same arrivals and the same measurement noise at the same
 * instants, and a run is the same on every machine for a seed. No rand(), no clock.
 *
 * May call: libc (math). Owns nothing.
 */
#ifndef GOVERNOR_SIM_RNG_H
#define GOVERNOR_SIM_RNG_H

#include <stdint.h>

/* 64 random bits for draw `index` of `stream` under `seed`. */
uint64_t sim_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1), 53 bits. */
double sim_rng_unit(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal (Box-Muller on two uniforms of the same draw). */
double sim_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

#endif
