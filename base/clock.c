/* pt_nanotime: the one clock. Which source backs it is chosen once, at
 * first use:
 *
 *   PT_CLOCK=tsc        the TSC line (tsc.h), checked only for the
 *                       architecture: the caller vouches for the counter
 *   PT_CLOCK=monotonic  clock_gettime(CLOCK_MONOTONIC) through the vDSO
 *   unset, or auto      the TSC line where the CPU says its counter is
 *                       invariant and the kernel times CLOCK_MONOTONIC
 *                       with it (tsc.c says why both), else monotonic
 *
 * Why bother: reading the clock is the largest single cost of arming a
 * timer, more than the whole locked heap operation, and the counter can
 * be read for less where the vDSO is slow
 * (bench/journal/2026-11-25-tsc-clock-and-timerthread-reclaim.md,
 * "What a clock read costs").
 * Both sources give CLOCK_MONOTONIC nanoseconds, so a pt_nanos from
 * either can be handed to the kernel as an absolute CLOCK_MONOTONIC
 * deadline (futex, timerfd, io_uring): the TSC line stays within a few
 * microseconds of it (test/clock/), and a wait that returns a little
 * before the line says the deadline came is re-waited by its caller, as
 * a spurious wake-up is.
 */
#include "ptimer/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock_select.h"
#include "base/tsc.h"

enum { STATE_UNSET = 0, STATE_MONOTONIC, STATE_TSC };

/* Written once by choose() (under pthread_once, or by the tests' hook
 * with no reader running); the release store pairs with pt_nanotime's
 * acquire load, which then sees the TSC line choose() calibrated. */
static _Atomic int clock_state;
static int clock_fallback; /* pt_clock_fallback(); written before clock_state */
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

static pt_nanos monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (pt_nanos)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void pt__clock_select(const char *spec)
{
    enum { WANT_AUTO, WANT_MONOTONIC, WANT_TSC } want = WANT_AUTO;
    int why = 0;
    if (spec == NULL || spec[0] == '\0' || strcmp(spec, "auto") == 0)
        want = WANT_AUTO;
    else if (strcmp(spec, "monotonic") == 0)
        want = WANT_MONOTONIC;
    else if (strcmp(spec, "tsc") == 0)
        want = WANT_TSC;
    else
        why = -EINVAL; /* names no source: choose as if unset, and say so */

    int state = STATE_MONOTONIC;
    if (want != WANT_MONOTONIC) {
        int r = pt__tsc_probe(want == WANT_TSC);
        if (r == 0)
            r = pt__tsc_calibrate();
        if (r == 0)
            state = STATE_TSC;
        else if (why == 0)
            why = r;
    }
    clock_fallback = why;
    atomic_store_explicit(&clock_state, state, memory_order_release);
}

static void clock_init(void)
{
    pt__clock_select(getenv("PT_CLOCK"));
}

static int clock_current(void)
{
    /* acquire: pairs with pt__clock_select's release store */
    int s = atomic_load_explicit(&clock_state, memory_order_acquire);
    if (__builtin_expect(s == STATE_UNSET, 0)) {
        pthread_once(&clock_once, clock_init);
        s = atomic_load_explicit(&clock_state, memory_order_acquire);
    }
    return s;
}

pt_nanos pt_nanotime(void)
{
    int s = atomic_load_explicit(&clock_state, memory_order_acquire);
#ifdef PT__HAVE_TSC
    if (__builtin_expect(s == STATE_TSC, 1))
        return pt__tsc_now();
#endif
    if (s == STATE_MONOTONIC)
        return monotonic_now();
    clock_current();
    return pt_nanotime();
}

pt_nanos pt_nanotime_relaxed(void)
{
#ifdef PT__HAVE_TSC
    if (__builtin_expect(atomic_load_explicit(&clock_state, memory_order_acquire) == STATE_TSC, 1))
        return pt__tsc_read(false);
#endif
    return pt_nanotime();
}

enum pt_clock_source pt_clock_source(void)
{
    return clock_current() == STATE_TSC ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC;
}

int pt_clock_fallback(void)
{
    clock_current();
    return clock_fallback;
}
