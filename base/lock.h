/* pt__lock: a 4-byte futex mutex (Drepper's "mutex3": 0 free, 1 held,
 * 2 held with sleepers). Uncontended lock and unlock are one atomic each,
 * cheaper than pthread_mutex and small enough to embed in every heap.
 * A short spin before sleeping covers the common case of a holder doing a
 * few heap operations on the other core. */
#ifndef PTIMER_LOCK_H
#define PTIMER_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/futex.h"

static inline void pt__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One round of waiting for another thread that holds something for a
 * few instructions (a timer's transient status, the clock's re-anchor):
 * a yield, and from the 64th round on a 50 us sleep instead. A yield
 * hands the CPU only to threads of the caller's class and priority, so a
 * real-time caller -- the scheduler's monitor raised with
 * pt_sched_set_monitor_priority, or a user's own thread -- that preempted
 * the holder on its CPU would yield to nobody, and spin until real-time
 * throttling let the holder back: 950 ms (test/clock). The sleep must be
 * long enough to be one: a 1 us nanosleep of a real-time thread (no timer
 * slack) expired before it could block, and spun as well. n counts the
 * rounds: 0 before the first. */
static inline void pt__wait_other(unsigned *n)
{
    if ((*n)++ < 64) {
        sched_yield();
    } else {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

static inline void pt__lock_init(_Atomic uint32_t *l) { atomic_init(l, 0); }

static inline void pt__lock_slow(_Atomic uint32_t *l)
{
    for (int spin = 0; spin < 100; spin++) {
        uint32_t c = 0;
        /* acquire: pairs with the release in pt__unlock */
        if (atomic_load_explicit(l, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(l, &c, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        pt__cpu_relax();
    }
    /* Mark contended; whoever unlocks from 2 wakes one sleeper. */
    while (atomic_exchange_explicit(l, 2, memory_order_acquire) != 0)
        pt__futex_wait(l, 2, 0);
}

static inline void pt__lock(_Atomic uint32_t *l)
{
    uint32_t c = 0;
    if (!atomic_compare_exchange_strong_explicit(l, &c, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        pt__lock_slow(l);
}

/* Takes the lock only if it is free; never waits. Looks before the CAS,
 * so a held lock's line is not pulled away from its holder. */
static inline bool pt__trylock(_Atomic uint32_t *l)
{
    uint32_t c = 0;
    /* acquire: pairs with the release in pt__unlock */
    return atomic_load_explicit(l, memory_order_relaxed) == 0 &&
           atomic_compare_exchange_strong_explicit(l, &c, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void pt__unlock(_Atomic uint32_t *l)
{
    /* release: publishes the critical section to the next pt__lock */
    if (atomic_exchange_explicit(l, 0, memory_order_release) == 2)
        pt__futex_wake(l, 1);
}

#endif
