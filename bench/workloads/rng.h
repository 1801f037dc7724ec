/* The benchmarks' random numbers: the project's one pt__xorshift64 (the same
 * sequence in every program that runs a workload). By relative path, so
 * that the libuv peer, built without the project's include paths, finds
 * it too. */
#ifndef PTBENCH_RNG_H
#define PTBENCH_RNG_H

#include "../../base/rng.h"

#endif
