/* ptimer/slack.h: a time in a timer's window that other timers' windows
 * are likely to share.
 *
 * A timer that may fire anywhere in [when, when + slack] is armed at the
 * time in that window with the most trailing zero bits: the window's
 * coarsest round time. Timers whose windows overlap then land on the same
 * key more often than not, and a heap or wheel that runs every timer at
 * its key runs them on one wake-up, with no change to its structure: the
 * key is never before `when` and never after `when + slack`. Linux's
 * timer wheel did the same (apply_slack, before its 4.8 rework); a
 * ticker armed at such a key keeps its offset from the phase it was asked
 * for, so every tick stays in its own window.
 *
 * What it cannot do: run a timer whose window opened at a wake-up that
 * came for another (a heap keyed by the window's end could; the
 * TimerThread does, pt_timerthread_schedule_slack). It coalesces by
 * agreeing in advance, which needs no second structure. */
#ifndef PTIMER_SLACK_H
#define PTIMER_SLACK_H

#include "ptimer/clock.h"

/* The time in [when, when + slack] with the most trailing zero bits;
 * `when` itself for slack <= 0, when <= 0 ("at once") or PT_MAXWHEN
 * ("never" stays never). A window past the clock's range ends at its
 * last instant, PT_MAXWHEN - 1, as the TimerThread's does. */
static inline pt_nanos pt_slack_align(pt_nanos when, pt_nanos slack)
{
    if (slack <= 0 || when <= 0 || when >= PT_MAXWHEN)
        return when;
    pt_nanos end = when > PT_MAXWHEN - 1 - slack ? PT_MAXWHEN - 1 : when + slack;
    /* Above the highest bit where when - 1 and the window's end differ,
     * both agree; clearing every bit below it in the end gives a time
     * past when - 1 and no later than the end, with the most zeros. */
    uint64_t lo = (uint64_t)when - 1, hi = (uint64_t)end;
    int top = 63 - __builtin_clzll(lo ^ hi);
    return (pt_nanos)(hi & ~((UINT64_C(1) << top) - 1));
}

#endif
