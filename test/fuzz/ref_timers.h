/* The reference the per-P timer fuzzer compares ptimer against: what
 * ptimer.h promises, written as plainly as possible -- an array of timers,
 * each knowing whether it is armed and on which heap, with no heap, no
 * status machine and no laziness. Where ptimer.h leaves a choice to the
 * implementation (whether a stopped timer is still filed in its heap,
 * which of two timers due at the same time runs first, how far below the
 * true next time pt_timers_next may be), the reference names the choice
 * and the fuzzer accepts either answer.
 *
 * Times are normalised as ptimer.h says: when == 0 is 1, when < 0 is never
 * (PT_MAXWHEN), and never is never due, even at now == INT64_MAX. */
#ifndef PT_FUZZ_REF_TIMERS_H
#define PT_FUZZ_REF_TIMERS_H

#include <stdbool.h>
#include <stdint.h>

#include "ptimer/clock.h"

enum ref_state {
    REF_IDLE,    /* never started, or a one-shot that ran: NoStatus, in no heap */
    REF_ARMED,   /* pending on `heap` */
    REF_STOPPED, /* stopped; maybe still filed in `heap` (Deleted), maybe not (Removed) */
    REF_REMOVED, /* stopped and known to be in no heap (Removed) */
};

struct ref_timer {
    enum ref_state state;
    int heap;
    pt_nanos when, period;
    uintptr_t seq;
};

static inline pt_nanos ref_norm(pt_nanos when)
{
    return when < 0 ? PT_MAXWHEN : when == 0 ? 1 : when;
}

static inline bool ref_due(const struct ref_timer *r, pt_nanos now)
{
    return r->state == REF_ARMED && r->when != PT_MAXWHEN && r->when <= now;
}

/* A ticker that ran at `now` for the tick at `when`: the first when + k *
 * period (k >= 1) after now; never if that does not fit in 63 bits. */
static inline pt_nanos ref_next_tick(pt_nanos when, pt_nanos period, pt_nanos now)
{
    __int128 k = (__int128)(now - when) / period + 1;
    __int128 next = (__int128)when + k * period;
    return next > INT64_MAX ? PT_MAXWHEN : (pt_nanos)next;
}

/* Does arming this timer need a push (and so possibly an allocation)? Not
 * when it is still filed in a heap, armed or stopped-but-Deleted; the
 * caller resolves REF_STOPPED against the library's status first. */
static inline bool ref_in_heap(const struct ref_timer *r)
{
    return r->state == REF_ARMED || r->state == REF_STOPPED;
}

/* stop: 1 if it was pending */
static inline int ref_stop(struct ref_timer *r)
{
    if (r->state != REF_ARMED)
        return 0;
    r->state = REF_STOPPED;
    return 1;
}

/* start/reset/modify once the library has accepted it: an armed or
 * stopped-but-filed timer stays on its heap; any other goes onto `h`.
 * Returns whether it was pending. */
static inline int ref_arm(struct ref_timer *r, int h, pt_nanos when)
{
    int pending = r->state == REF_ARMED;
    if (!ref_in_heap(r))
        r->heap = h;
    r->state = REF_ARMED;
    r->when = ref_norm(when);
    return pending;
}

#endif
