/* Go's time package on the scheduler (Timer, AfterFunc, Ticker): time.c's
 * state on each P, touched only by the M holding it but for the count,
 * which pt_sched_destroy sums. */
#ifndef PTIMER_SCHED_TIME_H
#define PTIMER_SCHED_TIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/clock.h"
#include "ptimer/sched.h"

struct pt__p;

struct pt__p_time {
    /* Freed timers with their channels, kept for the next new on this P:
     * Go's collector recycles them off the path. */
    struct pt_time_timer *cache;
    uint32_t ncache;
    /* timers made here less those freed here: may be negative; with
     * s->time_timers they sum to the timers alive */
    _Atomic int64_t timers;
};

/* A timer channel's side of its timer, for chan.c and select.c, never called with a
 * channel's lock held (the timer sends under its own lock): poll delivers
 * a value that has come due; block and unblock bracket a G's park on the
 * channel, the timer being in an engine while any G is between them. */
void pt__time_chan_poll(struct pt_time_timer *t);
/* Whether a value is due that no poll has delivered yet: a look that
 * takes no lock, for a caller that holds a channel's. */
bool pt__time_chan_due(struct pt_time_timer *t);
void pt__time_chan_block(struct pt_time_timer *t);
void pt__time_chan_unblock(struct pt_time_timer *t);
#ifdef PT_TEST_HOOKS
/* Called by a heap timer's callback before it sends or starts a G (NULL:
 * none). Only the scheduler built for its tests has it (see PT_TEST_HOOKS
 * in test/CMakeLists.txt). */
extern void (*_Atomic pt__time_fire_hook)(struct pt_time_timer *t);
#endif
/* Tests: the heap timer's callbacks word (pheap/status.h). */
uint32_t pt__time_timer_callbacks(struct pt_time_timer *t);
/* A channel timer's next due time; 0: none pending (tests). */
pt_nanos pt__time_timer_due(struct pt_time_timer *t);

#endif
