/* ptimer/slack.h: the end of a timer's window, and a round time in it.
 *
 * A timer that may fire anywhere in [when, when + slack] (Linux's timer
 * slack, hrtimer's soft and hard expiry) must run by its window's end.
 * A heap or wheel whose timers all share one slack (pt_timers_set_slack,
 * pt_lheap_set_slack, pt_wheel_set_slack, as Linux's per thread) keeps
 * them keyed at their `when`, and asks to be checked by its earliest
 * `when` plus the slack (pt_slack_latest): the earliest end among its
 * windows, as no later `when` has an earlier one. A check runs every
 * timer whose `when` has come, so one wake-up serves every window open
 * by then, with nothing added to the structure. The TimerThread takes a
 * window per task (pt_timerthread_schedule_slack) and keeps their ends in
 * a second heap.
 *
 * pt_slack_align is for a window of one timer's own on a structure with
 * no slack: the coarsest round time in its window, so that timers whose
 * windows overlap share a key more often than not (Linux's timer wheel
 * did this, apply_slack, before its 4.8 rework). It coalesces by
 * agreeing in advance, and cannot serve a window that opened at a wake-up
 * that came for another key. */
#ifndef PTIMER_SLACK_H
#define PTIMER_SLACK_H

#include "ptimer/clock.h"

/* The end of [when, when + slack]: the time by which a timer armed at
 * `when` must have run. `when` itself for slack <= 0, when <= 0 (0 is
 * "none" to the structures' next times) or PT_MAXWHEN ("never"); a window
 * past the clock's range ends at its last instant, PT_MAXWHEN - 1. */
static inline pt_nanos pt_slack_latest(pt_nanos when, pt_nanos slack)
{
    if (slack <= 0 || when <= 0 || when >= PT_MAXWHEN)
        return when;
    return when > PT_MAXWHEN - 1 - slack ? PT_MAXWHEN - 1 : when + slack;
}

/* The time in [when, when + slack] with the most trailing zero bits;
 * `when` itself for slack <= 0, when <= 0 ("at once") or PT_MAXWHEN
 * ("never" stays never). A window past the clock's range ends at its
 * last instant, PT_MAXWHEN - 1, as the TimerThread's does. */
static inline pt_nanos pt_slack_align(pt_nanos when, pt_nanos slack)
{
    if (slack <= 0 || when <= 0 || when >= PT_MAXWHEN)
        return when;
    pt_nanos end = pt_slack_latest(when, slack);
    /* Above the highest bit where when - 1 and the window's end differ,
     * both agree; clearing every bit below it in the end gives a time
     * past when - 1 and no later than the end, with the most zeros. */
    uint64_t lo = (uint64_t)when - 1, hi = (uint64_t)end;
    int top = 63 - __builtin_clzll(lo ^ hi);
    return (pt_nanos)(hi & ~((UINT64_C(1) << top) - 1));
}

#endif
