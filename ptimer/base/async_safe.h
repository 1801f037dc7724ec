/* What a signal handler that would switch the interrupted thread's stack
 * away (the scheduler's preemption) must ask first: whether that thread
 * is inside one of the base layer's write sections, which others wait
 * out by spinning. A thread switched out there holds the section until
 * something resumes it, and every reader spins meanwhile -- the Ms that
 * would resume it included.
 *
 * The one such section a preemptible region may reach is the TSC line's
 * re-anchor (pt_nanotime, every 10 ms; tsc.c): its sequence count is odd
 * from the writer's CAS to its release store. The writer's own CAS is
 * visible to a handler on its thread, so "odd" is exact for that thread;
 * on any other it only defers a preemption by one monitor round. */
#ifndef PTIMER_ASYNC_SAFE_H
#define PTIMER_ASYNC_SAFE_H

#include <stdbool.h>

#include "ptimer/base/tsc.h"

static inline bool pt__base_in_write_section(void)
{
    return atomic_load_explicit(&pt__tsc.seq, memory_order_relaxed) & 1;
}

#endif
