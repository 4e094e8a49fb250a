/*
 * sim_rng.c - counter-based random numbers for the simulator (see sim_rng.h).
 */
#include <math.h>

#include "sim/sim_rng.h"

/* splitmix64's finalizer (Steele, Lea, Flood 2014): a bijection with good avalanche. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t sim_rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
    const uint64_t golden = 0x9e3779b97f4a7c15ULL;
    uint64_t z = mix(seed + golden);
    z = mix(z ^ (stream + 2 * golden));
    return mix(z ^ (index + 3 * golden));
}

double sim_rng_unit(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (double)(sim_rng_u64(seed, stream, index) >> 11) * 0x1.0p-53;
}

double sim_rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t a = sim_rng_u64(seed, stream, index);
    uint64_t b = mix(a ^ 0xd1b54a32d192ed03ULL);
    double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53; /* (0, 1]: log is finite */
    double u2 = (double)(b >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
