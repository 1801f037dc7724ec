/* The reference for fuzz_pwheel.c: what pwheel.h promises, with no wheel,
 * no levels and no lock. A timer is idle or armed on a wheel at a time; a
 * check runs, once each, exactly the timers armed on that wheel with
 * when <= now when it looks (in any order: a wheel keeps no order within
 * a tick), one-shots become idle before their callback, tickers move to
 * their first tick after now; what a callback does to its own timer is
 * applied as it runs. */
#ifndef PT_FUZZ_REF_WHEEL_H
#define PT_FUZZ_REF_WHEEL_H

#include <stdbool.h>
#include <stdint.h>

#include "ptimer/clock.h"

struct ref_wtimer {
    bool armed;
    bool running;  /* a one-shot whose callback runs now */
    int wheel;     /* armed: the wheel; running: the wheel running it */
    pt_nanos when; /* normalised: 0 -> 1, negative -> PT_MAXWHEN */
    pt_nanos period;
    uintptr_t seq;
};

static inline pt_nanos ref_wnorm(pt_nanos when)
{
    return when < 0 ? PT_MAXWHEN : when == 0 ? 1 : when;
}

/* start, reset, modify: the wheel a timer goes onto (pending: its own;
 * running: the one running it; else the one passed). */
static inline int ref_wheel_for(const struct ref_wtimer *r, int passed)
{
    return r->armed || r->running ? r->wheel : passed;
}

static inline pt_nanos ref_wticker_next(pt_nanos when, pt_nanos period, pt_nanos now)
{
    pt_nanos k = 1 + (now - when) / period, add, next;
    if (__builtin_mul_overflow(k, period, &add) || __builtin_add_overflow(when, add, &next) ||
        next == PT_MAXWHEN)
        return PT_MAXWHEN;
    return next;
}

#endif
