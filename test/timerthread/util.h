/* Helpers shared by the TimerThread tests: time units, a bounded wait
 * (a bound on waiting, never on speed), and small callbacks. */
#ifndef PT_TEST_TIMERTHREAD_UTIL_H
#define PT_TEST_TIMERTHREAD_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "harness.h"
#include "ptimer/timerthread.h"

#define MS ((pt_nanos)1000000)
#define SEC (1000 * MS)
#define HOUR (3600 * SEC)
#define BOUND (20 * SEC) /* generous: a bound on waiting, never on speed */

/* 100 us: let the timer thread have the core. */
static inline void nap(void)
{
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
}

static inline void noop(void *arg)
{
    (void)arg;
}

/* A callback that counts its runs in the atomic_int at arg. */
static inline void bump(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* A new instance with the default options. */
static inline pt_timerthread *make(void)
{
    pt_timerthread *tt = NULL;
    CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
    CHECK(tt != NULL);
    return tt;
}

static inline pt_timerthread_stats stats(pt_timerthread *tt)
{
    pt_timerthread_stats st;
    pt_timerthread_read_stats(tt, &st);
    return st;
}

/* Poll until *v >= n; false after BOUND. */
static inline bool wait_for(atomic_int *v, int n)
{
    pt_nanos end = pt_nanotime() + BOUND;
    while (atomic_load(v) < n) {
        if (pt_nanotime() > end)
            return false;
        nap();
    }
    return true;
}

/* A task that holds the timer thread until released: what runs on that
 * thread, and when, is then decided by the test, not by the scheduler. */
struct gate {
    atomic_int running;
    atomic_int release;
};

static inline void wait_at_gate(void *arg)
{
    struct gate *g = arg;
    atomic_store(&g->running, 1);
    pt_nanos end = pt_nanotime() + BOUND;
    while (!atomic_load(&g->release))
        CHECK(pt_nanotime() < end);
}

/* Hold tt's timer thread in g (zeroed) until g->release is set. */
static inline void hold(pt_timerthread *tt, struct gate *g)
{
    CHECK(pt_timerthread_schedule(tt, wait_at_gate, g, 0) != PT_INVALID_TASK_ID);
    CHECK(wait_for(&g->running, 1));
}

/* Run a due task on tt's timer thread and wait until it has run: the
 * thread has then started (and taken its thread index) and freed every
 * task removed before the kick (it drains the buckets before running). */
static inline void kick(pt_timerthread *tt)
{
    atomic_int kicked = 0;
    CHECK(pt_timerthread_schedule(tt, bump, &kicked, 0) != PT_INVALID_TASK_ID);
    CHECK(wait_for(&kicked, 1));
}

/* Waits until tt's triggered count reaches n: a task counts as triggered
 * only once its version says done, so unschedule then answers -1. */
static inline void wait_triggered(pt_timerthread *tt, uint64_t n)
{
    pt_nanos end = pt_nanotime() + BOUND;
    while (stats(tt).triggered < n) {
        CHECK(pt_nanotime() < end);
        nap();
    }
}

#endif
