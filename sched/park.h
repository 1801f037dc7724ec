/* A G's timed parks (park.c): the park's number and wake token, the
 * deadline and the timer or task that carries it. The G writes them
 * before it parks; afterwards a waker (chan.c's, fdio.c's through
 * pt__g_claim) and the deadline race for the token, and the claimer
 * writes timed_out. */
#ifndef PTIMER_SCHED_PARK_H
#define PTIMER_SCHED_PARK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/clock.h"
#include "ptimer/sched.h"
#include "ptimer/timerthread.h"
#include "sched/ptimers.h"

struct pt__g_park {
    /* The park's number, and its wake token (the number while unclaimed,
     * 0 once a waker or the deadline took it). */
    uintptr_t seq;
    _Atomic uintptr_t wake_token;
    bool timed_out;    /* the deadline took it; written by the claimer */
    bool deadline_hit; /* ... and its timer fired: the deadline has passed (not a
                        * timer that could not be armed) */
    pt_nanos deadline; /* 0: none */
    bool (*timed_commit)(void *);
    void *timed_commit_arg;
    union pt__ptimer timer;      /* the deadline in per-P modes (made at the first, reused) */
    bool timer_made;             /* ... made: g.c stops it, synchronously, as the G is freed */
    pt_task_id tt_task;          /* ... in TimerThread mode */
    _Atomic uint32_t tt_pending; /* its deadline tasks not yet finished */
    _Atomic uint32_t arming;     /* 1 while the parking M still arms the deadline */
};

/* Parks the calling G g until a waker claims it
 * (pt__g_claim, then pt_ready) or the deadline passes (0: none). commit is
 * pt_park's: it publishes the G to its wakers (and may refuse). Returns
 * true if the deadline, not a waker, ended the park (or the deadline
 * could not be armed: the caller treats that as a timeout and retries). */
bool pt__park_until(pt_g *g, bool (*commit)(void *), void *arg, pt_nanos deadline);
/* A waker's claim on g's current park: true (exactly once per park) means
 * this caller must ready it; false, the deadline or another waker won. */
bool pt__g_claim(pt_g *g);

#endif
