/* Helpers shared by the lheap tests: time driven by hand (pt_lheap_check
 * takes `now`), a counting callback, and the invariant check. */
#ifndef PT_TEST_LHEAP_UTIL_H
#define PT_TEST_LHEAP_UTIL_H

#include <stdatomic.h>
#include <stdint.h>

#include "harness.h"
#include "ptimer/lheap.h"

#define MS ((pt_nanos)1000000)
#define SECOND ((pt_nanos)1000000000)

#define CHECK_LSTATUS(t, s) CHECK_EQ(pt_lheap_timer_status(t), (s))

/* The heap's invariants; quiet: no other thread is in a call on it. */
#define CHECK_LHEAP(h, quiet)                                                                      \
    do {                                                                                           \
        int v_ = pt_lheap_verify(h, quiet);                                                        \
        if (v_ != 0) {                                                                             \
            fprintf(stderr, "%s:%d: pt_lheap_verify(%s) = %d: %s\n", __FILE__, __LINE__, #h, v_,   \
                    pt_lheap_verify_report());                                                     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Counts its firings in the int at arg. */
static inline void lcount_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    ++*(int *)arg;
}

#endif
