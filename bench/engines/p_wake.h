/* A P's sleep between its timer checks, for the engines whose family
 * leaves waiting to its user (pwheel, lheap): the worker sleeps on a word
 * until its next time or until the family's wake callback bumps the word
 * (an arm from another thread made an earlier time). */
#ifndef PTBENCH_P_WAKE_H
#define PTBENCH_P_WAKE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/futex.h"
#include "ptimer/clock.h"

struct p_wake {
    _Atomic uint32_t word; /* bumped by a wake */
    atomic_bool sleeping;  /* the worker is (about to be) in futex_wait */
};

/* From the family's wake callback, on another thread than the worker's.
 * The seq_cst pair with p_wake_idle (sleeping store / word load there,
 * word bump / sleeping load here): one side always sees the other. */
static inline void p_wake_up(struct p_wake *pw)
{
    atomic_fetch_add_explicit(&pw->word, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&pw->sleeping, memory_order_seq_cst))
        pt__futex_wake(&pw->word, 1);
}

/* Runs check(th, now, &next) until `until` has passed, sleeping between
 * checks until the next time or a wake; each sleep is counted. */
static inline void p_wake_idle(struct p_wake *pw, void *th,
                               void (*check)(void *th, pt_nanos now, pt_nanos *next),
                               pt_nanos until, atomic_ulong *sleeps)
{
    for (;;) {
        uint32_t w = atomic_load_explicit(&pw->word, memory_order_acquire);
        /* Read before the check, which runs what is due by then: once
         * now >= until, everything due by `until` has run. */
        pt_nanos checked = pt_nanotime(), next = 0;
        check(th, checked, &next);
        if (checked >= until)
            return;
        pt_nanos now = pt_nanotime();
        pt_nanos deadline = next && next < until ? next : until;
        if (deadline > now) {
            atomic_store_explicit(&pw->sleeping, true, memory_order_seq_cst);
            if (atomic_load_explicit(&pw->word, memory_order_seq_cst) == w)
                pt__futex_wait(&pw->word, w, deadline);
            atomic_store_explicit(&pw->sleeping, false, memory_order_relaxed);
            atomic_fetch_add_explicit(sleeps, 1, memory_order_relaxed);
        }
    }
}

#endif
