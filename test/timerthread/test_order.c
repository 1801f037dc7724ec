/* When tasks run and when the thread wakes: time order, never early, an
 * earlier task wakes the sleeping thread, descending schedules wake it each
 * time and ascending ones never (bRPC's rule, counted through the stats),
 * and the stats count each outcome. Bounds are on waiting, never on speed. */
#include <stdlib.h>

#include "util.h"

#define NORDER 300

struct fired {
    pt_nanos when;
    pt_nanos at;
};
static struct fired order[NORDER];
static atomic_int nfired;

static void record(void *arg)
{
    int i = atomic_load(&nfired);
    order[i].when = *(pt_nanos *)arg;
    order[i].at = pt_nanotime();
    atomic_store(&nfired, i + 1); /* only the timer thread writes */
}

void test_tasks_run_in_time_order_never_early(void)
{
    pt_timerthread *tt = make();
    static pt_nanos whens[NORDER];
    /* Held, the thread runs nothing until all are scheduled, however long
     * that takes: the order below is then the library's, not the race's. */
    struct gate g = {0, 0};
    hold(tt, &g);
    pt_nanos base = pt_nanotime() + 30 * MS;
    unsigned seed = 12345;
    for (int i = 0; i < NORDER; i++) /* shuffled, with ties */
        whens[i] = base + (pt_nanos)(rand_r(&seed) % 200) * MS / 2;
    for (int i = 0; i < NORDER; i++)
        CHECK(pt_timerthread_schedule(tt, record, &whens[i], whens[i]) != PT_INVALID_TASK_ID);
    atomic_store(&g.release, 1);
    pt_nanos end = pt_nanotime() + BOUND;
    while (atomic_load(&nfired) < NORDER) {
        CHECK(pt_nanotime() < end);
        nap();
    }
    for (int i = 0; i < NORDER; i++) {
        CHECK(order[i].at >= order[i].when); /* the monotonic clock says: not early */
        if (i > 0)
            CHECK(order[i].when >= order[i - 1].when);
    }
    pt_timerthread_destroy(tt);
}

static void stamp(void *arg)
{
    atomic_store((_Atomic pt_nanos *)arg, pt_nanotime());
}

void test_earlier_task_wakes_sleeping_thread(void)
{
    pt_timerthread *tt = make();
    _Atomic pt_nanos far_at = 0, near_at = 0;
    pt_timerthread_schedule(tt, stamp, &far_at, pt_nanotime() + HOUR);
    /* Let it settle into its hour-long sleep. */
    pt_nanos end = pt_nanotime() + BOUND;
    while (stats(tt).busy_ns == 0) {
        CHECK(pt_nanotime() < end);
        nap();
    }
    pt_nanos when = pt_nanotime() + 20 * MS;
    pt_timerthread_schedule(tt, stamp, &near_at, when);
    while (atomic_load(&near_at) == 0) {
        CHECK(pt_nanotime() < end); /* without a wake it would sleep for an hour */
        nap();
    }
    CHECK(atomic_load(&near_at) >= when);
    CHECK_EQ(atomic_load(&far_at), 0);
    CHECK(stats(tt).wakeups >= 1);
    pt_timerthread_destroy(tt);
}

/* Wait until the thread has woken since `st0` and gone back to its wait:
 * busy_ns is stored after it samples nsignals for the next sleep, so from
 * then on only a new signal makes it return. */
static pt_timerthread_stats wait_woke_and_resettled(pt_timerthread *tt, pt_timerthread_stats st0)
{
    pt_nanos end = pt_nanotime() + BOUND;
    for (;;) {
        pt_timerthread_stats st = stats(tt);
        if (st.wakeups > st0.wakeups && st.busy_ns != st0.busy_ns)
            return st;
        CHECK(pt_nanotime() < end); /* no wake: the schedule did not signal */
        nap();
    }
}

void test_descending_schedules_each_wake_ascending_do_not(void)
{
    pt_timerthread *tt = make();
    /* The thread's first sleep: busy_ns becomes nonzero just before it. */
    pt_nanos end = pt_nanotime() + BOUND;
    pt_timerthread_stats st = stats(tt);
    while (st.busy_ns == 0) {
        CHECK(pt_nanotime() < end);
        nap();
        st = stats(tt);
    }
    pt_nanos base = pt_nanotime() + HOUR;
    enum { N = 40 };
    for (int i = 0; i < N; i++) { /* each earlier than everything pending */
        CHECK(pt_timerthread_schedule(tt, noop, NULL, base - i * MS) != PT_INVALID_TASK_ID);
        pt_timerthread_stats next = wait_woke_and_resettled(tt, st);
        CHECK_EQ(next.wakeups, st.wakeups + 1); /* one schedule, one wake */
        st = next;
    }
    /* Ascending, all later than the earliest pending: no signal at all. */
    for (int i = 0; i < 10 * N; i++)
        CHECK(pt_timerthread_schedule(tt, noop, NULL, base + i * MS) != PT_INVALID_TASK_ID);
    /* A wrong wake would show within a few milliseconds; watching longer
     * can only miss a bug, never fail a correct implementation. */
    pt_nanos watch = pt_nanotime() + 100 * MS;
    while (pt_nanotime() < watch) {
        CHECK_EQ(stats(tt).wakeups, st.wakeups);
        nap();
    }
    /* The thread still answers: one earlier task, one more wake. */
    pt_timerthread_schedule(tt, noop, NULL, base - N * MS);
    pt_timerthread_stats last = wait_woke_and_resettled(tt, st);
    CHECK_EQ(last.wakeups, st.wakeups + 1);
    CHECK_EQ(last.scheduled, 11 * N + 1);
    CHECK_EQ(last.pending, 11 * N + 1);
    CHECK_EQ(last.triggered, 0);
    pt_timerthread_destroy(tt);
}

void test_stats_count_each_outcome(void)
{
    pt_timerthread *tt = make();
    _Atomic pt_nanos at = 0;
    pt_task_id removed = pt_timerthread_schedule(tt, noop, NULL, pt_nanotime() + HOUR);
    pt_timerthread_schedule(tt, noop, NULL, pt_nanotime() + HOUR); /* stays pending */
    pt_timerthread_schedule(tt, stamp, &at, pt_nanotime());
    CHECK_EQ(pt_timerthread_unschedule(tt, removed), 0);
    CHECK_EQ(pt_timerthread_unschedule(tt, removed), -1); /* counted once */
    pt_nanos end = pt_nanotime() + BOUND;
    pt_timerthread_stats st = stats(tt);
    while (st.triggered < 1 || st.busy_ns == 0) { /* ran, and went back to sleep */
        CHECK(pt_nanotime() < end);
        nap();
        st = stats(tt);
    }
    CHECK_EQ(st.scheduled, 3);
    CHECK_EQ(st.unscheduled, 1);
    CHECK_EQ(st.triggered, 1);
    CHECK_EQ(st.pending, 1);
    CHECK(atomic_load(&at) != 0);
    pt_timerthread_destroy(tt);
}
