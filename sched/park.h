/* A G's timed parks, sleep.c's: the park's number and wake token, the
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
    union pt__ptimer timer;      /* the deadline in per-P modes (initialised once, reused) */
    pt_task_id tt_task;          /* ... in TimerThread mode */
    _Atomic uint32_t tt_pending; /* its deadline tasks not yet finished */
    _Atomic uint32_t arming;     /* 1 while the parking M still arms the deadline */
};

#endif
