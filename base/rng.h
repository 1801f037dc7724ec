/* Marsaglia's xorshift64: the one cheap pseudo-random sequence of the
 * project (the scheduler's steal order and select's choice, the tests'
 * and the benchmarks' reproducible streams). The state must start
 * nonzero. Self-contained, so that programs outside the build's include
 * paths (the libuv peer) can include it by relative path. */
#ifndef PTIMER_BASE_RNG_H
#define PTIMER_BASE_RNG_H

#include <stdint.h>

static inline uint64_t pt__xorshift64(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

#endif
