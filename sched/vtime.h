/* Virtual time (vtime.c): the scheduler's clock when its option asks for
 * one, the count of Gs durably blocked that says when the clock may
 * jump, and what each parked G waits on (for the deadlock report).
 *
 * The count: a G is counted blocked from its park's commit (on its M, the
 * G off its stack) until the pt_ready that ends it; gcount less that
 * count is the Gs running, runnable or in a wait the scheduler cannot see
 * end (pt__g_waits's durable false). Every ready of a counted park
 * uncounts it, and the counting M publishes nothing before it counts, so
 * a ready that races ahead makes the count low for a moment, never high:
 * the clock can be late to jump, never early. */
#ifndef PTIMER_SCHED_VTIME_H
#define PTIMER_SCHED_VTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/clock.h"
#include "ptimer/sched.h"

/* What a parked G waits on: the report's words (vtime.c's names[]). */
enum pt__wait {
    PT__WAIT_NONE = 0,
    PT__WAIT_PARK,      /* pt_park */
    PT__WAIT_SLEEP,
    PT__WAIT_CHAN_SEND,
    PT__WAIT_CHAN_RECV,
    PT__WAIT_SELECT,
    PT__WAIT_WG,
    PT__WAIT_FD,        /* readiness, a connect, a close's calls in flight */
    PT__WAIT_RING,      /* an io_uring request */
    PT__WAIT_SETTLE,
};

/* A scheduler's virtual time; `now` is read by any thread, the rest
 * under `lock` but for the atomics. */
struct pt__vt {
    _Atomic pt_nanos now;
    /* Held around a jump and around every run of due timers, so a jump
     * never passes a timer whose callback has not yet readied its G. */
    _Atomic uint32_t lock;
    _Atomic int64_t blocked;     /* Gs durably parked (above) */
    struct pt_g *_Atomic settler; /* the G in pt_sched_settle, published by its commit */
    bool settling;               /* a G is in pt_sched_settle (lock) */
    _Atomic uint32_t deadlocked; /* set once, with report written before (release) */
    char *report;
};

struct pt__m;
struct pt__p;

/* A virtual scheduler's clock and driven TimerThread (create, destroy).
 * 0 or -ENOMEM. */
int pt__vt_init(pt_sched *s);
void pt__vt_fini(pt_sched *s);

/* A durable park was committed (the M, before the G can be readied). */
void pt__vt_block(pt_sched *s);
/* pt_ready ended a park that was counted. */
void pt__vt_unblock(pt_sched *s);

/* An idle M's look at a virtual scheduler with nothing to run: readies
 * a settling G, jumps the clock to the earliest timer, or finds the
 * deadlock. True when the M should look for work again. */
bool pt__vt_idle(struct pt__m *m);

#endif
