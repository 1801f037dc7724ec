/* Lazy channel timers (sched/time.c), as Go 1.23's: a Timer's or Ticker's
 * channel timer is in no engine while no G waits on its channel, and a
 * value that came due is delivered when the channel is next used. Proved
 * by what the engines count (the heap's runs, the TimerThread's
 * schedules), by the due time a ticker keeps (exact arithmetic, not a
 * measurement), and by freeing a timer while the G its select woke has
 * not yet left. In both timer modes. */
#include <errno.h>
#include <stdint.h>

#include "ptimer/timerthread.h"
#include "sched/chan.h"
#include "sched/internal.h"
#include "util.h"

/* What the timer engines of the current G's scheduler have done: the
 * heaps' runs, or the TimerThread's schedules. */
static uint64_t engine_work(enum pt_timer_mode mode)
{
    if (mode == PT_TIMERS_TIMERTHREAD) {
        pt_timerthread_stats st;
        pt_timerthread_read_stats(pt_timerthread_global(), &st);
        return st.scheduled;
    }
    pt_sched_stats st;
    pt_sched_read_stats(pt_sched_current(), &st);
    return st.timers_run_owner + st.timers_run_stolen + st.timers_run_sysmon;
}

/* Lets the scheduler run (it runs due heap timers at every switch) until
 * `until` has passed, without arming a timer of its own. */
static void yield_until(pt_nanos until)
{
    pt_nanos end = pt_nanotime() + BOUND;
    while (pt_nanotime() <= until) {
        CHECK(pt_nanotime() < end);
        pt_yield();
    }
}

/* ---- a timer nobody waits on: no engine, delivered on the next receive -------- */

static void unwatched(void *arg)
{
    enum pt_timer_mode mode = (enum pt_timer_mode)(intptr_t)arg;
    uint64_t before = engine_work(mode);
    pt_nanos t0 = pt_nanotime();
    pt_time_timer *t;
    CHECK_EQ(pt_time_timer_new(&t, 1 * MS), 0);
    pt_chan *c = pt_time_timer_chan(t);
    yield_until(t0 + 3 * MS);
    /* due two milliseconds ago, and no engine has run or held it */
    CHECK_EQ(engine_work(mode), before);
    /* the next look delivers it, once */
    CHECK_EQ(pt_chan_len(c), 1);
    pt_nanos v = 0;
    CHECK_EQ(pt_chan_try_recv(c, &v), 1);
    CHECK(v >= t0 + 1 * MS);
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    CHECK_EQ(pt_time_timer_stop(t), 0); /* delivered */
    /* Go's call-with-timeout idiom: the ready case wins, the timer is
     * stopped and freed, no engine hears of it */
    pt_chan *ready;
    CHECK_EQ(pt_chan_make(&ready, sizeof(int), 1), 0);
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ(pt_time_timer_reset(t, 1000 * SEC), 0); /* never due: only `ready` can win */
        int one = 1;
        CHECK_EQ(pt_chan_send(ready, &one), 0);
        pt_select_case cases[2] = {{.chan = ready, .dir = PT_RECV, .elem = &one},
                                   {.chan = c, .dir = PT_RECV}};
        CHECK_EQ(pt_select(cases, 2, 0, true), 0);
        CHECK_EQ(pt_time_timer_stop(t), 1);
    }
    /* A value due beside a ready case: the select takes either, each
     * about half the time (the random order), and a value it left is
     * delivered by the next receive; still no engine */
    int took[2] = {0, 0};
    for (int i = 0; i < 200; i++) {
        pt_nanos armed = pt_nanotime();
        CHECK_EQ(pt_time_timer_reset(t, 1), 0);
        yield_until(armed + 1);
        int one = 1;
        CHECK_EQ(pt_chan_send(ready, &one), 0);
        pt_nanos at = 0;
        pt_select_case cases[2] = {{.chan = ready, .dir = PT_RECV, .elem = &one},
                                   {.chan = c, .dir = PT_RECV, .elem = &at}};
        int got = pt_select(cases, 2, 0, true);
        CHECK(got == 0 || got == 1);
        took[got]++;
        if (got == 0) {
            CHECK_EQ(pt_chan_try_recv(c, &at), 1);
        } else {
            CHECK_EQ(pt_chan_try_recv(ready, &one), 1);
        }
        CHECK(at > armed);
        CHECK_EQ(pt_time_timer_stop(t), 0); /* delivered */
    }
    CHECK(took[0] > 0 && took[1] > 0);
    CHECK_EQ(engine_work(mode), before);
    CHECK_EQ(pt_time_timer_free(t), 0);
    CHECK_EQ(pt_chan_free(ready), 0);
}

void test_time_a_timer_nobody_waits_on_uses_no_engine(int mode)
{
    pt_sched *s = make_sched(1, (enum pt_timer_mode)mode);
    CHECK_EQ(pt_go(s, unwatched, (void *)(intptr_t)(enum pt_timer_mode)mode), 0);
    finish_sched(s);
}

/* ---- a ticker nobody reads keeps its phase ---------------------------------------- */

/* The due time is on the phase of a start in [a, b]: some start + k *
 * period, k >= 1, after `after` and the first such after a time no later
 * than `by` (the last firing: at `after` when it was seen, else at most
 * the clock read after the due time was). */
static void check_on_phase(pt_nanos due, pt_nanos a, pt_nanos b, pt_nanos period, pt_nanos after,
                           pt_nanos by)
{
    CHECK(due > after);
    CHECK(due <= by + period + (b - a));
    CHECK((due - a) % period <= b - a);
}

static void unread_ticker(void *arg)
{
    (void)arg;
    const pt_nanos period = 2 * MS;
    pt_nanos a = pt_nanotime();
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, period), 0);
    pt_nanos b = pt_nanotime();
    pt_time_timer *t = (pt_time_timer *)tk;
    pt_chan *c = pt_time_ticker_chan(tk);
    /* the first tick comes a period after the start; this thread may have
     * lost its CPU past it before b (a loaded machine), so only `a` is
     * surely before it */
    pt_nanos due = pt__time_timer_due(t);
    check_on_phase(due, a, b, period, a, pt_nanotime());
    pt_nanos last = 0;
    for (int round = 0; round < 5; round++) {
        /* unread for a few periods and a part of one */
        yield_until(pt_nanotime() + 3 * period + period / 3);
        pt_nanos polled_from = pt_nanotime();
        pt_nanos v = 0;
        CHECK_EQ(pt_chan_try_recv(c, &v), 1);
        /* its value is the earliest tick left unread: its own time, on
         * the phase, come due while nobody looked */
        check_on_phase(v, a, b, period, last, polled_from);
        CHECK(v + 2 * period < polled_from);
        /* one tick: the missed ones were skipped. Only the tick after the
         * poll may follow, had this thread lost its CPU past it since. */
        pt_nanos more;
        if (pt_chan_try_recv(c, &more) == 1) {
            CHECK(more > polled_from && more <= pt_nanotime());
            check_on_phase(more, a, b, period, v, pt_nanotime());
            v = more;
        }
        /* the next due is the first tick after the last poll's own time */
        pt_nanos next = pt__time_timer_due(t);
        check_on_phase(next, a, b, period, polled_from, pt_nanotime());
        /* and a G that waits gets that tick, its value the due time */
        CHECK_EQ(pt_chan_recv(c, &v), 1);
        CHECK_EQ(v, next);
        /* the engine holding the ticker while this G waited may fire
         * again before the G runs (a loaded machine, periods gone by),
         * its values buffered or, the buffer full, dropped: the next due
         * follows the last firing, seen or not */
        for (pt_nanos later; pt_chan_try_recv(c, &later) == 1;) {
            check_on_phase(later, a, b, period, v, pt_nanotime());
            v = later;
        }
        last = v;
        check_on_phase(pt__time_timer_due(t), a, b, period, v, pt_nanotime());
    }
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

void test_time_a_ticker_nobody_reads_keeps_its_phase(void)
{
    for (int i = 0; i < PT_TEST_NMODES; i++) {
        pt_sched *s = make_sched(2, pt_test_modes[i]);
        CHECK_EQ(pt_go(s, unread_ticker, NULL), 0);
        finish_sched(s);
    }
}

/* ---- free while the G a select woke has not yet left ------------------------------ */

/* A G waits on a timer's channel and a wake channel; another wakes it
 * through the wake channel and frees the timer at once, before the woken
 * G has run: the G still has the timer to leave (unblock), so free waits
 * for it, neither refusing (-EBUSY: the woken G's waiter is still on the
 * timer's channel) nor freeing the timer under it (AddressSanitizer). */
struct woken {
    pt_time_timer *t;
    pt_chan *wake;
    atomic_int took; /* the case the waiter's select took, -1 until then */
};

static void waiter(void *arg)
{
    struct woken *w = arg;
    int v;
    pt_select_case cases[2] = {{.chan = pt_time_timer_chan(w->t), .dir = PT_RECV},
                               {.chan = w->wake, .dir = PT_RECV, .elem = &v}};
    atomic_store(&w->took, pt_select(cases, 2, 0, true));
}

static void free_under_waiter(void *arg)
{
    (void)arg;
    for (int i = 0; i < (int)SCALE(2000); i++) {
        struct woken w = {.took = -1};
        CHECK_EQ(pt_time_timer_new(&w.t, 1000 * SEC), 0);
        CHECK_EQ(pt_chan_make(&w.wake, sizeof(int), 0), 0);
        CHECK_EQ(pt_go(NULL, waiter, &w), 0);
        /* the waiter parked in its select (the timer told) */
        pt_nanos end = pt_nanotime() + BOUND;
        while (!pt__chan_waited(w.wake)) {
            CHECK(pt_nanotime() < end);
            pt_yield();
        }
        int one = 1;
        CHECK_EQ(pt_chan_send(w.wake, &one), 0); /* returns once the waiter took it */
        CHECK_EQ(pt_time_timer_free(w.t), 0);
        WAIT_FOR(atomic_load(&w.took) != -1);
        CHECK_EQ(atomic_load(&w.took), 1);
        CHECK_EQ(pt_chan_free(w.wake), 0);
    }
}

void test_time_free_waits_for_the_g_a_select_woke(void)
{
    for (int i = 0; i < PT_TEST_NMODES; i++) {
        pt_sched *s = make_sched(2, pt_test_modes[i]);
        CHECK_EQ(pt_go(s, free_under_waiter, NULL), 0);
        finish_sched(s);
    }
}
