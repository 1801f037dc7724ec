/* The one futex wrapper: every part that sleeps on a word uses these.
 * Private futexes: the words never live in shared memory. */
#ifndef PTIMER_FUTEX_H
#define PTIMER_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ptimer/clock.h"

/* Sleep while *w == val, until woken or until the CLOCK_MONOTONIC time
 * `deadline` (deadline <= 0 or PT_MAXWHEN: no limit). Spurious returns are
 * allowed: callers re-check their condition. */
static inline void pt__futex_wait(_Atomic uint32_t *w, uint32_t val, pt_nanos deadline)
{
    struct timespec ts, *tp = NULL;
    if (deadline > 0 && deadline != PT_MAXWHEN) {
        ts.tv_sec = deadline / 1000000000;
        ts.tv_nsec = deadline % 1000000000;
        tp = &ts;
    }
    /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, so a
     * retry after a spurious wake never stretches the total wait. */
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_BITSET_PRIVATE, val, tp, NULL,
            FUTEX_BITSET_MATCH_ANY);
}

/* Wake up to n sleepers on w (INT_MAX: all); returns how many woke (0 on
 * error). Safe on memory that was freed after the last atomic access: the
 * kernel only hashes the address. */
static inline int pt__futex_wake(_Atomic uint32_t *w, int n)
{
    long r = syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
    return r > 0 ? (int)r : 0;
}

#endif
