/* The per-P timers of a scheduler, in either per-P family: Go 1.14-1.22's
 * status machine (ptimer.h) for PT_TIMERS_PER_P, Go 1.23's lock per timer
 * (lheap.h) for PT_TIMERS_LHEAP. A scheduler picks one at creation, and
 * every P's heap and every timer it arms there (a G's deadline, a time.*
 * timer) is of that family, so each call takes the family as a flag its
 * caller reads from the scheduler (pt__lheap). The two families have the
 * same operations and the same rule for a lazily stopped timer: it stays
 * in its heap, may be re-armed, and is taken out by stop_sync before its
 * memory goes. One difference the callers need not see: only the owner
 * of a status-machine heap tidies it, while any thread tidies an lheap. */
#ifndef PTIMER_SCHED_PTIMERS_H
#define PTIMER_SCHED_PTIMERS_H

#include <stdbool.h>

#include "ptimer/lheap.h"
#include "ptimer/ptimer.h"

union pt__ptimers {
    pt_timers ph;
    pt_lheap lh;
};

union pt__ptimer {
    pt_timer ph;
    pt_lheap_timer lh;
};

static inline int pt__ptimers_init(bool lh, union pt__ptimers *ts, pt_wake_func wake, void *ctx)
{
    return lh ? pt_lheap_init(&ts->lh, wake, ctx) : pt_timers_init(&ts->ph, wake, ctx);
}

static inline int pt__ptimers_set_slack(bool lh, union pt__ptimers *ts, pt_nanos slack)
{
    return lh ? pt_lheap_set_slack(&ts->lh, slack) : pt_timers_set_slack(&ts->ph, slack);
}

static inline int pt__ptimers_destroy(bool lh, union pt__ptimers *ts)
{
    return lh ? pt_lheap_destroy(&ts->lh) : pt_timers_destroy(&ts->ph);
}

static inline size_t pt__ptimers_len(bool lh, const union pt__ptimers *ts)
{
    return lh ? pt_lheap_len(&ts->lh) : pt_timers_len(&ts->ph);
}

static inline pt_nanos pt__ptimers_next(bool lh, const union pt__ptimers *ts)
{
    return lh ? pt_lheap_next(&ts->lh) : pt_timers_next(&ts->ph);
}

static inline int pt__ptimers_check(bool lh, union pt__ptimers *ts, pt_nanos now, bool owner)
{
    return lh ? pt_lheap_check(&ts->lh, now, NULL) : pt_timers_check(&ts->ph, now, owner, NULL);
}

static inline int pt__ptimers_move(bool lh, union pt__ptimers *dst, union pt__ptimers *src)
{
    return lh ? pt_lheap_move(&dst->lh, &src->lh) : pt_timers_move(&dst->ph, &src->ph);
}

static inline void pt__ptimer_init(bool lh, union pt__ptimer *t, pt_func f, void *arg)
{
    if (lh)
        pt_lheap_timer_init(&t->lh, f, arg);
    else
        pt_timer_init(&t->ph, f, arg);
}

static inline int pt__ptimer_modify(bool lh, union pt__ptimers *ts, union pt__ptimer *t,
                                    pt_nanos when, pt_nanos period, pt_func f, void *arg,
                                    uintptr_t seq)
{
    return lh ? pt_lheap_timer_modify(&ts->lh, &t->lh, when, period, f, arg, seq)
              : pt_timer_modify(&ts->ph, &t->ph, when, period, f, arg, seq);
}

static inline int pt__ptimer_stop(bool lh, union pt__ptimer *t)
{
    return lh ? pt_lheap_timer_stop(&t->lh) : pt_timer_stop(&t->ph);
}

static inline int pt__ptimer_stop_sync(bool lh, union pt__ptimer *t)
{
    return lh ? pt_lheap_timer_stop_sync(&t->lh) : pt_timer_stop_sync(&t->ph);
}

static inline bool pt__ptimer_running(bool lh, union pt__ptimer *t)
{
    return lh ? pt_lheap_timer_running(&t->lh) : pt_timer_running(&t->ph);
}

#endif
