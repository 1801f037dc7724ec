/* Go's time package on the scheduler (sched/time.c), by Go's own tests
 * from time/sleep_test.go and tick_test.go: TestAfterFunc, TestAfterStress,
 * TestReset, TestAfterQueuing, TestTimerStopStress, TestTicker,
 * TestOverflowSleep, and the select timeout pattern, in every timer mode.
 * Times are checked as lower bounds (never early) and generous upper ones
 * (a bound on waiting, never on speed). */

#include <errno.h>
#include <sched.h>
#include <stdint.h>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "pheap/status.h"
#include "ptimer/timerthread.h"
#include "sched/internal.h"
#include "sched/sanitizer.h"
#include "time_util.h"

/* ---- TestAfterFunc: a chain of AfterFuncs, each starting the next ------- */

#define CHAIN 10
static pt_time_timer *_Atomic chain_timer[CHAIN + 1];
static atomic_int chain_done;
static pt_sched *chain_s;

static void chain_f(void *arg)
{
    int k = (int)(intptr_t)arg;
    CHECK(pt_g_current() != NULL); /* in a G of its own */
    CHECK(pt_sched_current() == chain_s);
    /* free the timer whose f this is, while f runs (published just after
     * the call that made it returned, so maybe not yet) */
    pt_time_timer *self;
    while (!(self = atomic_load(&chain_timer[k])))
        pt_yield();
    CHECK(pt_time_timer_chan(self) == NULL);
    CHECK_EQ(pt_time_timer_stop(self), 0); /* already fired */
    CHECK_EQ(pt_time_timer_free(self), 0);
    if (k == CHAIN) {
        atomic_store(&chain_done, 1);
        return;
    }
    pt_time_timer *next;
    CHECK_EQ(pt_time_after_func(&next, 0, chain_f, (void *)(intptr_t)(k + 1)), 0);
    atomic_store(&chain_timer[k + 1], next);
    pt_sleep(5 * MS); /* Go's Sleep: the next f runs beside this one */
}

static void chain_start(void *arg)
{
    (void)arg;
    pt_time_timer *t;
    CHECK_EQ(pt_time_after_func(&t, 0, chain_f, (void *)0), 0);
    atomic_store(&chain_timer[0], t);
}

static void after_func_chain(enum pt_timer_mode mode)
{
    for (int i = 0; i <= CHAIN; i++)
        atomic_store(&chain_timer[i], NULL);
    atomic_store(&chain_done, 0);
    chain_s = make_sched(2, mode);
    CHECK_EQ(pt_go(chain_s, chain_start, NULL), 0);
    WAIT_FOR(atomic_load(&chain_done)); /* no G runs between a fire and its G */
    finish_sched(chain_s);
}

void test_time_after_func_chain(int mode)
{
    after_func_chain((enum pt_timer_mode)mode);
}

/* ---- TestAfterStress: 1 ns timers and tickers beside a G that churns ----- */

static atomic_int churn_stop;

static void churner(void *arg)
{
    (void)arg;
    while (!atomic_load(&churn_stop))
        pt_sleep(1); /* Go's runtime.GC(); Sleep(Nanosecond) */
}

static void after_stress(void *arg)
{
    (void)arg;
    atomic_store(&churn_stop, 0);
    CHECK_EQ(pt_go(NULL, churner, NULL), 0);
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, 1), 0);
    pt_nanos last = 0;
    for (int i = 0; i < 100; i++) {
        pt_nanos v = recv_time(pt_time_ticker_chan(tk));
        CHECK(v > last);
        last = v;
    }
    CHECK_EQ(pt_time_ticker_free(tk), 0);
    for (int i = 0; i < 100; i++) { /* <-After(1) */
        pt_time_timer *t;
        pt_nanos t0 = pt_nanotime();
        CHECK_EQ(pt_time_timer_new(&t, 1), 0);
        CHECK(recv_time(pt_time_timer_chan(t)) >= t0 + 1);
        CHECK_EQ(pt_time_timer_free(t), 0);
    }
    atomic_store(&churn_stop, 1);
}

void test_time_after_stress(int mode)
{
    in_g((enum pt_timer_mode)mode, after_stress);
}

/* ---- TestReset: Reset's answers, and never early ----------------------------- */

/* One try with unit d: 0 when it held; 1 when the G ran too late to tell
 * (then Go retries with a larger d). What can never happen aborts. */
static int try_reset(pt_nanos d)
{
    pt_time_timer *t;
    CHECK_EQ(pt_time_timer_new(&t, 2 * d), 0);
    pt_chan *c = pt_time_timer_chan(t);
    pt_sleep(d);
    /* active, or fired into the unread channel (Go 1.23: still active) */
    pt_nanos r = pt_nanotime();
    CHECK_EQ(pt_time_timer_reset(t, 3 * d), 1);
    pt_sleep(2 * d);
    pt_nanos v;
    int got = pt_chan_try_recv(c, &v);
    int late = 0;
    if (got == 1) {
        CHECK(v >= r + 3 * d); /* never early, never the value from before */
        late = 1;              /* this G slept past r + 3d */
    } else {
        CHECK_EQ(got, -EAGAIN);
        pt_sleep(2 * d);
        if ((got = pt_chan_try_recv(c, &v)) == 1)
            CHECK(v >= r + 3 * d);
        else
            late = 1; /* not run yet: a late timer, not a wrong one */
    }
    if (!late)
        CHECK_EQ(pt_time_timer_reset(t, 50 * MS), 0); /* fired and received */
    CHECK_EQ(pt_time_timer_free(t), 0);
    return late;
}

static void reset_returns(void *arg)
{
    (void)arg;
    static const pt_nanos ds[] = {1 * MS, 2 * MS, 5 * MS, 10 * MS, 25 * MS, 100 * MS};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        if (try_reset(ds[i]) == 0)
            return;
    CHECK(!"every duration ran too late to judge Reset");
}

void test_time_reset_return_values(int mode)
{
    in_g((enum pt_timer_mode)mode, reset_returns);
}

/* ---- TestAfterQueuing: timers fire in the order of their times ------------- */

static const int slots[] = {5, 3, 6, 6, 6, 1, 1, 2, 7, 9, 4, 8, 0};
#define NSLOTS ((int)(sizeof slots / sizeof slots[0]))

struct after_result {
    int slot;
    pt_nanos t;
};

struct awaiter {
    int slot;
    pt_time_timer *timer;
    pt_chan *result;
};

static void await_slot(void *arg)
{
    struct awaiter *a = arg;
    (void)recv_time(pt_time_timer_chan(a->timer));
    /* the time it arrived: the value is its deadline (Go 1.23's) */
    struct after_result r = {a->slot, pt_nanotime()};
    CHECK_EQ(pt_chan_send(a->result, &r), 0);
}

/* 0 when the order and times held; 1 when they did not (Go retries). */
static int try_after_queuing(pt_nanos delta)
{
    pt_chan *result;
    CHECK_EQ(pt_chan_make(&result, sizeof(struct after_result), NSLOTS), 0);
    struct awaiter a[NSLOTS];
    pt_nanos t0 = pt_nanotime();
    for (int i = 0; i < NSLOTS; i++) {
        a[i] = (struct awaiter){slots[i], NULL, result};
        CHECK_EQ(pt_time_timer_new(&a[i].timer, slots[i] * delta), 0);
        CHECK_EQ(pt_go(NULL, await_slot, &a[i]), 0);
    }
    int failed = 0, last = -1;
    for (int i = 0; i < NSLOTS; i++) {
        struct after_result r;
        CHECK_EQ(pt_chan_recv(result, &r), 1);
        CHECK(r.t >= t0 + r.slot * delta); /* never early: not retried */
        if (r.slot < last || r.t > t0 + r.slot * delta + 10 * delta)
            failed = 1;
        last = r.slot;
    }
    for (int i = 0; i < NSLOTS; i++)
        CHECK_EQ(pt_time_timer_free(a[i].timer), 0);
    CHECK_EQ(pt_chan_free(result), 0);
    return failed;
}

static void after_queuing(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        if (try_after_queuing((5 + i * 20) * MS) == 0)
            return;
    CHECK(!"timers fired out of order at every delta");
}

void test_time_after_queuing(int mode)
{
    in_g((enum pt_timer_mode)mode, after_queuing);
}

/* ---- select on a timer's channel: the timeout pattern --------------------- */

static void select_timeout(void *arg)
{
    (void)arg;
    pt_chan *never;
    CHECK_EQ(pt_chan_make(&never, sizeof(int), 0), 0);
    pt_time_timer *t;
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_time_timer_new(&t, 2 * MS), 0);
    pt_nanos v = 0;
    int x;
    pt_select_case cases[2] = {{never, PT_RECV, &x, false},
                               {pt_time_timer_chan(t), PT_RECV, &v, false}};
    CHECK_EQ(pt_select(cases, 2, 0, true), 1); /* the timer's case */
    CHECK(cases[1].ok);
    CHECK(v >= t0 + 2 * MS);
    /* the select's own deadline first: the timer is still pending, and
     * Stop says so */
    CHECK_EQ(pt_time_timer_reset(t, 1000 * SEC), 0);
    CHECK_EQ(pt_select(cases, 2, pt_nanotime() + 1 * MS, true), -ETIMEDOUT);
    CHECK_EQ(pt_time_timer_stop(t), 1);
    /* and without blocking: nothing ready */
    CHECK_EQ(pt_select(cases, 2, 0, false), -EAGAIN);
    CHECK_EQ(pt_time_timer_free(t), 0);
    CHECK_EQ(pt_chan_free(never), 0);
}

void test_time_select_on_a_timer_channel(void)
{
    for (int m = 0; m < PT_TEST_NMODES; m++)
        in_g(pt_test_modes[m], select_timeout);
}

/* ---- TestTimerStopStress: stopped before they fire, none fires ------------------- */

/* every G has started before any arms its timer: what is tested is the
 * stop, not how fast a G first runs (under TSan its first switch builds
 * a TSan fiber, and a hundred of them can take longer than the 300 ms) */
static pt_wg stop_started;

static void stop_before_firing(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_wg_done(&stop_started), 0);
    CHECK_EQ(pt_wg_wait(&stop_started), 0);
    pt_time_timer *t;
    CHECK_EQ(pt_time_after_func(&t, 300 * MS, must_not_run, NULL), 0);
    pt_sleep(5 * MS);
    CHECK_EQ(pt_time_timer_stop(t), 1);
    CHECK_EQ(pt_time_timer_stop(t), 0);
    CHECK_EQ(pt_time_timer_free(t), 0);
}

static void stop_stress(enum pt_timer_mode mode)
{
    atomic_store(&stray_fired, 0);
    pt_sched *s = make_sched(2, mode);
    CHECK_EQ(pt_wg_init(&stop_started), 0);
    CHECK_EQ(pt_wg_add(&stop_started, 100), 0);
    for (int i = 0; i < 100; i++)
        CHECK_EQ(pt_go(s, stop_before_firing, NULL), 0);
    CHECK_EQ(pt_wg_wait(&stop_started), 0); /* the timers are armed after */
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_sched_wait(s), 0);
    while (pt_nanotime() < t0 + 400 * MS) /* past their time */
        nap_ms();
    CHECK_EQ(atomic_load(&stray_fired), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

void test_time_timer_stop_stress(int mode)
{
    stop_stress((enum pt_timer_mode)mode);
}

/* ---- TestTicker: ticks arrive; Reset changes the period; Stop stops ---------- */

static void ticker_go(void *arg)
{
    (void)arg;
    const pt_nanos delta = 10 * MS;
    const int count = 10;
    pt_nanos t0 = pt_nanotime();
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, delta), 0);
    pt_chan *c = pt_time_ticker_chan(tk);
    for (int i = 0; i < count / 2; i++)
        recv_time(c);
    CHECK_EQ(pt_time_ticker_reset(tk, 2 * delta), 0);
    for (int i = count / 2; i < count; i++)
        recv_time(c);
    CHECK_EQ(pt_time_ticker_stop(tk), 0);
    pt_nanos dt = pt_nanotime() - t0;
    /* 5 ticks of delta, then 5 of 2 * delta from the reset on: at least
     * 15 deltas (Go's target); at most that and a generous allowance */
    CHECK(dt >= 3 * delta * count / 2);
    CHECK(dt < 3 * delta * count / 2 + 10 * SEC);
    pt_sleep(2 * delta);
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN); /* "Ticker did not shut down" */
    CHECK_EQ(pt_time_ticker_stop(tk), 0);         /* again: harmless */
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

static void ticker_test(enum pt_timer_mode mode)
{
    pt_sched *s = make_sched(2, mode);
    CHECK_EQ(pt_go(s, ticker_go, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    pt_sched_stats st = stats_of(s);
    uint64_t on_heaps = st.timers_run_owner + st.timers_run_stolen + st.timers_run_sysmon;
    if (per_p_heaps(mode))
        CHECK(on_heaps >= 10); /* the ticks ran on the Ps' heaps */
    else
        CHECK_EQ(on_heaps, 0); /* ... on the TimerThread */
    CHECK_EQ(pt_sched_destroy(s), 0);
}

void test_time_ticker(int mode)
{
    ticker_test((enum pt_timer_mode)mode);
}

/* ---- TestOverflowSleep: a duration past the clock's range is never, a
 * very negative one is now -------------------------------------------------- */

static void overflow(void *arg)
{
    (void)arg;
    pt_time_timer *never, *now;
    CHECK_EQ(pt_time_timer_new(&never, INT64_MAX), 0);
    CHECK_EQ(pt_time_timer_new(&now, INT64_MIN), 0);
    recv_time(pt_time_timer_chan(now)); /* at once */
    pt_sleep(25 * MS);
    CHECK_EQ(pt_chan_try_recv(pt_time_timer_chan(never), NULL), -EAGAIN);
    CHECK_EQ(pt_time_timer_reset(now, INT64_MAX), 0); /* fired and received */
    CHECK_EQ(pt_time_timer_stop(now), 1);
    CHECK_EQ(pt_time_timer_stop(never), 1);
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, INT64_MAX), 0);
    pt_sleep(5 * MS);
    CHECK_EQ(pt_chan_try_recv(pt_time_ticker_chan(tk), NULL), -EAGAIN);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
    CHECK_EQ(pt_time_timer_free(never), 0);
    CHECK_EQ(pt_time_timer_free(now), 0);
}

void test_time_overflow_durations(void)
{
    in_g(PT_TIMERS_PER_P, overflow);
    in_g(PT_TIMERS_TIMERTHREAD, overflow);
}
