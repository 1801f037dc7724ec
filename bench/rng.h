/* Marsaglia's xorshift64: the benchmarks' one random number generator
 * (cheap, and the same sequence in every program that runs a workload). */
#ifndef PTBENCH_RNG_H
#define PTBENCH_RNG_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

#endif
