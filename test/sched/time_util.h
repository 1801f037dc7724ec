/* What the time-package tests share: a G to run each in, the waits for
 * a fired value, an f that must not run. */
#ifndef PT_TEST_SCHED_TIME_UTIL_H
#define PT_TEST_SCHED_TIME_UTIL_H

#include "util.h"

/* Runs fn(mode) in a G of a fresh 2-P scheduler and waits for every G. */
static inline void in_g(enum pt_timer_mode mode, void (*fn)(void *))
{
    pt_sched *s = make_sched(2, mode);
    CHECK_EQ(pt_go(s, fn, (void *)(intptr_t)mode), 0);
    finish_sched(s);
}

/* A blocking receive of a fired time (G). */
static inline pt_nanos recv_time(pt_chan *c)
{
    pt_nanos v = 0;
    CHECK_EQ(pt_chan_recv(c, &v), 1);
    return v;
}

/* Sleeps the G until c holds a value (it fired), bounded. */
static inline void wait_fired(pt_chan *c)
{
    pt_nanos end = pt_nanotime() + BOUND;
    while (pt_chan_len(c) == 0) {
        CHECK(pt_nanotime() < end);
        pt_sleep(100 * US);
    }
}

/* An AfterFunc's f that must never run: it counts the times it did. */
static atomic_int stray_fired __attribute__((unused));

static inline void must_not_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&stray_fired, 1);
}

#endif
