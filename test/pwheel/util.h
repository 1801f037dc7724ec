/* Helpers shared by the pwheel tests: a counting callback, a log of
 * firings with the time they ran at, and the teardown every test ends
 * with. Time is driven by hand: pt_wheel_check takes `now`. */
#ifndef PT_TEST_PWHEEL_UTIL_H
#define PT_TEST_PWHEEL_UTIL_H

#include <stdatomic.h>
#include <stdint.h>

#include "harness.h"
#include "ptimer/pwheel.h"

#define US ((pt_nanos)1000)
#define MS ((pt_nanos)1000000)
#define SECOND ((pt_nanos)1000000000)
#define TICK PT_WHEEL_DEFAULT_TICK

#define CHECK_WSTATUS(t, s) CHECK_EQ(pt_wheel_timer_status(t), (s))

#define CHECK_WHEEL(w)                                                                             \
    do {                                                                                           \
        int v_ = pt_wheel_verify(w, true);                                                               \
        if (v_ != 0) {                                                                             \
            fprintf(stderr, "%s:%d: pt_wheel_verify(%s) = %d: %s\n", __FILE__, __LINE__, #w, v_,   \
                    pt_wheel_verify_report());                                                     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A callback that counts its firings in the int at arg. */
static inline void wcount_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    ++*(int *)arg;
}

#endif
