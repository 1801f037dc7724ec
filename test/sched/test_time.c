/* Go's time package on the scheduler (sched/time.c): Go's own tests from
 * time/sleep_test.go and tick_test.go (TestAfterFunc, TestAfterStress,
 * TestAfterQueuing, TestReset, TestTimerStopStress, TestTicker,
 * TestOverflowSleep, the panicking inputs as -EINVAL), then Go 1.23's
 * guarantee: a value fired into an unread channel is gone once Stop or
 * Reset returns, a slow ticker reader finds one value, ticks keep their
 * phase and stop with Stop. In both timer modes, and from a plain thread
 * (the TimerThread fallback). Times are checked as lower bounds (never
 * early) and generous upper ones (a bound on waiting, never on speed). */
#include <errno.h>
#include <sched.h>
#include <stdint.h>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptimer/base/alloc.h"
#include "ptimer/status.h"
#include "ptimer/timerthread.h"
#include "sched/internal.h"
#include "sched/sanitizer.h"
#include "util.h"

#define MODE_NAME(m) mode_name(m)

/* Runs fn(mode) in a G of a fresh 2-P scheduler and waits for every G. */
static void in_g(enum pt_timer_mode mode, void (*fn)(void *))
{
    pt_sched *s = make_sched(2, mode);
    CHECK_EQ(pt_go(s, fn, (void *)(intptr_t)mode), 0);
    finish_sched(s);
}

/* A blocking receive of a fired time (G). */
static pt_nanos recv_time(pt_chan *c)
{
    pt_nanos v = 0;
    CHECK_EQ(pt_chan_recv(c, &v), 1);
    return v;
}

/* Sleeps the G until c holds a value (it fired), bounded. */
static void wait_fired(pt_chan *c)
{
    pt_nanos end = pt_nanotime() + BOUND;
    while (pt_chan_len(c) == 0) {
        CHECK(pt_nanotime() < end);
        pt_sleep(100 * US);
    }
}

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

void test_time_after_func_chain_per_p(void)
{
    after_func_chain(PT_TIMERS_PER_P);
}

void test_time_after_func_chain_lheap(void)
{
    after_func_chain(PT_TIMERS_LHEAP);
}

void test_time_after_func_chain_timerthread(void)
{
    after_func_chain(PT_TIMERS_TIMERTHREAD);
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

void test_time_after_stress_per_p(void)
{
    in_g(PT_TIMERS_PER_P, after_stress);
}

void test_time_after_stress_lheap(void)
{
    in_g(PT_TIMERS_LHEAP, after_stress);
}

void test_time_after_stress_timerthread(void)
{
    in_g(PT_TIMERS_TIMERTHREAD, after_stress);
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

void test_time_reset_return_values_per_p(void)
{
    in_g(PT_TIMERS_PER_P, reset_returns);
}

void test_time_reset_return_values_lheap(void)
{
    in_g(PT_TIMERS_LHEAP, reset_returns);
}

void test_time_reset_return_values_timerthread(void)
{
    in_g(PT_TIMERS_TIMERTHREAD, reset_returns);
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
    struct after_result r = {a->slot, recv_time(pt_time_timer_chan(a->timer))};
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

void test_time_after_queuing_per_p(void)
{
    in_g(PT_TIMERS_PER_P, after_queuing);
}

void test_time_after_queuing_lheap(void)
{
    in_g(PT_TIMERS_LHEAP, after_queuing);
}

void test_time_after_queuing_timerthread(void)
{
    in_g(PT_TIMERS_TIMERTHREAD, after_queuing);
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
    in_g(PT_TIMERS_PER_P, select_timeout);
    in_g(PT_TIMERS_TIMERTHREAD, select_timeout);
}

/* ---- TestTimerStopStress: stopped before they fire, none fires ------------------- */

static atomic_int stray_fired;

static void must_not_run(void *arg)
{
    (void)arg;
    atomic_fetch_add(&stray_fired, 1);
}

static void stop_before_firing(void *arg)
{
    (void)arg;
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
    pt_nanos t0 = pt_nanotime();
    for (int i = 0; i < 100; i++)
        CHECK_EQ(pt_go(s, stop_before_firing, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    while (pt_nanotime() < t0 + 400 * MS) /* past their time */
        nap_ms();
    CHECK_EQ(atomic_load(&stray_fired), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

void test_time_timer_stop_stress_per_p(void)
{
    stop_stress(PT_TIMERS_PER_P);
}

void test_time_timer_stop_stress_lheap(void)
{
    stop_stress(PT_TIMERS_LHEAP);
}

void test_time_timer_stop_stress_timerthread(void)
{
    stop_stress(PT_TIMERS_TIMERTHREAD);
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

void test_time_ticker_per_p(void)
{
    ticker_test(PT_TIMERS_PER_P);
}

void test_time_ticker_lheap(void)
{
    ticker_test(PT_TIMERS_LHEAP);
}

void test_time_ticker_timerthread(void)
{
    ticker_test(PT_TIMERS_TIMERTHREAD);
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

/* ---- AfterFunc: Reset re-arms it ----------------------------------------------- */

static atomic_int f_runs;

static void count_run(void *arg)
{
    (void)arg;
    CHECK(pt_g_current() != NULL);
    atomic_fetch_add(&f_runs, 1);
}

static void wait_runs(int n)
{
    pt_nanos end = pt_nanotime() + BOUND;
    while (atomic_load(&f_runs) < n) {
        CHECK(pt_nanotime() < end);
        pt_sleep(100 * US);
    }
}

static void after_func_reset(void *arg)
{
    (void)arg;
    atomic_store(&f_runs, 0);
    pt_time_timer *t;
    CHECK_EQ(pt_time_after_func(&t, 2 * MS, count_run, NULL), 0);
    wait_runs(1);
    CHECK_EQ(pt_time_timer_reset(t, 0), 0); /* had run: runs again */
    wait_runs(2);
    CHECK_EQ(pt_time_timer_reset(t, 1000 * SEC), 0);
    CHECK_EQ(pt_time_timer_reset(t, 1 * MS), 1); /* was pending: moved, runs once */
    wait_runs(3);
    pt_sleep(10 * MS);
    CHECK_EQ(atomic_load(&f_runs), 3);
    CHECK_EQ(pt_time_timer_stop(t), 0);
    CHECK_EQ(pt_time_timer_free(t), 0);
}

void test_time_after_func_reset_rearms(void)
{
    in_g(PT_TIMERS_PER_P, after_func_reset);
    in_g(PT_TIMERS_TIMERTHREAD, after_func_reset);
}

/* ---- Go 1.23: Stop and Reset discard a fired, unread value --------------------- */

static void discard_fired(void *arg)
{
    (void)arg;
    pt_time_timer *t;
    pt_chan *c;
    /* Stop */
    CHECK_EQ(pt_time_timer_new(&t, 0), 0);
    c = pt_time_timer_chan(t);
    wait_fired(c);
    CHECK_EQ(pt_chan_len(c), 1);
    CHECK_EQ(pt_time_timer_stop(t), 1); /* unread: counts as stopped */
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    CHECK_EQ(pt_time_timer_stop(t), 0);
    /* Reset: the value received next is the new arming's */
    CHECK_EQ(pt_time_timer_reset(t, 0), 0);
    wait_fired(c);
    pt_nanos r = pt_nanotime();
    CHECK_EQ(pt_time_timer_reset(t, 1 * MS), 1);
    CHECK(recv_time(c) >= r + 1 * MS);
    /* Reset far away: nothing to receive now */
    CHECK_EQ(pt_time_timer_reset(t, 0), 0);
    wait_fired(c);
    CHECK_EQ(pt_time_timer_reset(t, 1000 * SEC), 1);
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    CHECK_EQ(pt_time_timer_stop(t), 1);
    CHECK_EQ(pt_time_timer_free(t), 0);

    /* a ticker: Stop, then nothing, now or later */
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, 1 * MS), 0);
    c = pt_time_ticker_chan(tk);
    wait_fired(c);
    CHECK_EQ(pt_time_ticker_stop(tk), 0);
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    pt_sleep(5 * MS);
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    /* Reset with a tick unread: the next one is the new period's */
    CHECK_EQ(pt_time_ticker_reset(tk, 1 * MS), 0);
    wait_fired(c);
    r = pt_nanotime();
    CHECK_EQ(pt_time_ticker_reset(tk, 3 * MS), 0);
    CHECK(recv_time(c) >= r + 3 * MS);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

void test_time_stop_and_reset_discard_a_fired_value_per_p(void)
{
    in_g(PT_TIMERS_PER_P, discard_fired);
}

void test_time_stop_and_reset_discard_a_fired_value_lheap(void)
{
    in_g(PT_TIMERS_LHEAP, discard_fired);
}

void test_time_stop_and_reset_discard_a_fired_value_timerthread(void)
{
    in_g(PT_TIMERS_TIMERTHREAD, discard_fired);
}

/* ---- a slow reader: one value after 10 periods ------------------------------------ */

static void slow_reader(void *arg)
{
    (void)arg;
    const pt_nanos period = 2 * MS;
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, period), 0);
    pt_chan *c = pt_time_ticker_chan(tk);
    pt_sleep(10 * period + period / 2);
    CHECK_EQ(pt_chan_len(c), 1);
    pt_nanos v1, v2;
    CHECK_EQ(pt_chan_try_recv(c, &v1), 1);
    /* no backlog: nothing, or a tick that came since (a period later) */
    int r = pt_chan_try_recv(c, &v2);
    if (r == 1)
        CHECK(v2 >= v1 + period);
    else
        CHECK_EQ(r, -EAGAIN);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

void test_time_slow_ticker_reader_finds_one_value(void)
{
    in_g(PT_TIMERS_PER_P, slow_reader);
    in_g(PT_TIMERS_TIMERTHREAD, slow_reader);
}

/* ---- the phase: tick k is at start + k * period or later, at most one a
 * period, whatever the reader skips ---------------------------------------------- */

static void phase(void *arg)
{
    (void)arg;
    const pt_nanos period = 3 * MS;
    pt_nanos t0 = pt_nanotime();
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, period), 0);
    pt_chan *c = pt_time_ticker_chan(tk);
    pt_nanos last = 0;
    for (int i = 1; i <= 20; i++) {
        pt_nanos v = recv_time(c);
        /* the i-th tick read is tick i or a later one (others dropped) */
        CHECK(v >= t0 + i * period);
        CHECK(v > last);
        last = v;
        if (i % 4 == 0)
            pt_sleep(2 * period + period / 3); /* a slow read: ticks dropped */
    }
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

void test_time_ticker_keeps_its_phase_per_p(void)
{
    in_g(PT_TIMERS_PER_P, phase);
}

void test_time_ticker_keeps_its_phase_lheap(void)
{
    in_g(PT_TIMERS_LHEAP, phase);
}

void test_time_ticker_keeps_its_phase_timerthread(void)
{
    in_g(PT_TIMERS_TIMERTHREAD, phase);
}

/* ---- no stale tick once Stop or Reset returns, with a reader racing -------------- */

#define RACE_PERIOD (200 * US)
static pt_time_ticker *race_tk;
static atomic_llong reset_from; /* the time just before the Reset call */
static atomic_int reset_done, stop_done, reader_done;

static void racing_reader(void *arg)
{
    (void)arg;
    pt_chan *c = pt_time_ticker_chan(race_tk);
    pt_nanos quiet_until = 0;
    for (;;) {
        /* the flags are read before the receive starts: a receive that
         * starts after the call returned must not see an older value */
        int reset = atomic_load(&reset_done), stop = atomic_load(&stop_done);
        pt_nanos v;
        int r = pt_chan_try_recv(c, &v);
        if (r == 1) {
            CHECK(!stop);
            if (reset)
                CHECK(v >= atomic_load(&reset_from));
        } else {
            CHECK_EQ(r, -EAGAIN);
        }
        if (stop && quiet_until == 0)
            quiet_until = pt_nanotime() + 10 * RACE_PERIOD;
        if (quiet_until && pt_nanotime() > quiet_until)
            break;
        if (r != 1)
            pt_sleep(RACE_PERIOD / 4);
    }
    atomic_store(&reader_done, 1);
}

static void race_round(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    atomic_store(&reset_done, 0);
    atomic_store(&stop_done, 0);
    atomic_store(&reader_done, 0);
    CHECK_EQ(pt_time_ticker_new(&race_tk, RACE_PERIOD), 0);
    CHECK_EQ(pt_go(NULL, racing_reader, NULL), 0);
    pt_sleep((pt_nanos)(pt__xorshift64(&x) % (3 * RACE_PERIOD)));
    atomic_store(&reset_from, pt_nanotime());
    CHECK_EQ(pt_time_ticker_reset(race_tk, RACE_PERIOD + RACE_PERIOD / 2), 0);
    atomic_store(&reset_done, 1);
    pt_sleep((pt_nanos)(pt__xorshift64(&x) % (3 * RACE_PERIOD)));
    CHECK_EQ(pt_time_ticker_stop(race_tk), 0);
    atomic_store(&stop_done, 1);
    pt_nanos end = pt_nanotime() + BOUND;
    while (!atomic_load(&reader_done)) {
        CHECK(pt_nanotime() < end);
        pt_sleep(RACE_PERIOD);
    }
    CHECK_EQ(pt_time_ticker_free(race_tk), 0);
}

static void no_stale_tick(enum pt_timer_mode mode)
{
    pt_sched *s = make_sched(2, mode);
    for (int i = 0; i < (int)SCALE(100); i++) {
        CHECK_EQ(pt_go(s, race_round, (void *)(intptr_t)(i + 1)), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
    }
    CHECK_EQ(pt_sched_destroy(s), 0);
}

void test_time_no_stale_tick_after_reset_or_stop_per_p(void)
{
    no_stale_tick(PT_TIMERS_PER_P);
}

void test_time_no_stale_tick_after_reset_or_stop_lheap(void)
{
    no_stale_tick(PT_TIMERS_LHEAP);
}

void test_time_no_stale_tick_after_reset_or_stop_timerthread(void)
{
    no_stale_tick(PT_TIMERS_TIMERTHREAD);
}

/* ---- from a plain thread: the TimerThread, the same behaviour --------------------- */

/* Waits (the thread naps) until c holds a value; returns it. */
static pt_nanos thread_recv(pt_chan *c)
{
    pt_nanos v = 0;
    WAIT_FOR(pt_chan_try_recv(c, &v) == 1);
    return v;
}

static pt_time_timer *_Atomic thread_af;
static atomic_int thread_f_ok;

/* An AfterFunc made outside any G: on the TimerThread's thread, no G. */
static void on_timerthread(void *arg)
{
    (void)arg;
    pt_time_timer *self;
    while (!(self = atomic_load(&thread_af)))
        sched_yield();
    CHECK(pt_g_current() == NULL);
    CHECK(pt_sched_current() == NULL);
    CHECK_EQ(pt_time_timer_free(self), 0); /* from its own f */
    atomic_store(&thread_f_ok, 1);
}

static pt_time_timer *made_in_g;

static void make_one(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_time_timer_new(&made_in_g, 1000 * SEC), 0);
}

void test_time_timers_from_a_plain_thread(void)
{
    CHECK(pt_g_current() == NULL);
    pt_time_timer *t;
    pt_chan *c;
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_time_timer_new(&t, 2 * MS), 0);
    c = pt_time_timer_chan(t);
    CHECK(thread_recv(c) >= t0 + 2 * MS);
    CHECK_EQ(pt_time_timer_stop(t), 0); /* fired and received */
    /* fired unread: Stop discards it, Reset too */
    CHECK_EQ(pt_time_timer_reset(t, 0), 0);
    WAIT_FOR(pt_chan_len(c) == 1);
    CHECK_EQ(pt_time_timer_stop(t), 1);
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    CHECK_EQ(pt_time_timer_reset(t, 0), 0);
    WAIT_FOR(pt_chan_len(c) == 1);
    pt_nanos r = pt_nanotime();
    CHECK_EQ(pt_time_timer_reset(t, 1 * MS), 1);
    CHECK(thread_recv(c) >= r + 1 * MS);
    CHECK_EQ(pt_time_timer_reset(t, 1000 * SEC), 0);
    CHECK_EQ(pt_time_timer_reset(t, 1000 * SEC), 1);
    CHECK_EQ(pt_time_timer_free(t), 0);

    /* a ticker keeps its phase and stops */
    const pt_nanos period = 2 * MS;
    t0 = pt_nanotime();
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, period), 0);
    c = pt_time_ticker_chan(tk);
    pt_nanos last = 0;
    for (int i = 1; i <= 10; i++) {
        pt_nanos v = thread_recv(c);
        CHECK(v >= t0 + i * period);
        CHECK(v > last);
        last = v;
    }
    CHECK_EQ(pt_time_ticker_stop(tk), 0);
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    nap_ms();
    nap_ms();
    nap_ms();
    CHECK_EQ(pt_chan_try_recv(c, NULL), -EAGAIN);
    CHECK_EQ(pt_time_ticker_free(tk), 0);

    /* AfterFunc without a scheduler: f runs on the TimerThread */
    atomic_store(&thread_af, NULL);
    atomic_store(&thread_f_ok, 0);
    pt_time_timer *af;
    CHECK_EQ(pt_time_after_func(&af, 1 * MS, on_timerthread, NULL), 0);
    atomic_store(&thread_af, af);
    WAIT_FOR(atomic_load(&thread_f_ok));

    /* a timer made in a G, stopped and re-armed from here: it moves to
     * the TimerThread and fires the same */
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, make_one, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    c = pt_time_timer_chan(made_in_g);
    r = pt_nanotime();
    CHECK_EQ(pt_time_timer_reset(made_in_g, 1 * MS), 1);
    CHECK(thread_recv(c) >= r + 1 * MS);
    CHECK_EQ(pt_time_timer_stop(made_in_g), 0);
    CHECK_EQ(pt_time_timer_free(made_in_g), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- a scheduler with a live timer of its Gs is not destroyed --------------------- */

static pt_time_timer *left_timer, *left_func;
static pt_time_ticker *left_ticker;

static void leave_timers(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_time_timer_new(&left_timer, 1000 * SEC), 0);
    CHECK_EQ(pt_time_after_func(&left_func, 1000 * SEC, must_not_run, NULL), 0);
    CHECK_EQ(pt_time_ticker_new(&left_ticker, 1000 * SEC), 0);
}

void test_time_destroy_is_busy_while_a_timer_lives(void)
{
    for (int mode = PT_TIMERS_PER_P; mode <= PT_TIMERS_LHEAP; mode++) {
        atomic_store(&stray_fired, 0);
        pt_sched *s = make_sched(2, (enum pt_timer_mode)mode);
        CHECK_EQ(pt_go(s, leave_timers, NULL), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        CHECK_EQ(pt_sched_destroy(s), -EBUSY);
        CHECK_EQ(pt_time_timer_free(left_timer), 0);
        CHECK_EQ(pt_time_ticker_free(left_ticker), 0);
        CHECK_EQ(pt_sched_destroy(s), -EBUSY);
        CHECK_EQ(pt_time_timer_free(left_func), 0);
        CHECK_EQ(pt_sched_destroy(s), 0);
        CHECK_EQ(atomic_load(&stray_fired), 0);
        printf("%s: destroy waited for the timers\n", MODE_NAME(mode));
    }
}

/* ---- out of memory: new fails whole -------------------------------------------- */

/* Fails allocation 0, 1, 2, ... of each kind of new until one succeeds:
 * every failure is -ENOMEM with nothing made (ASan's leak check sees any
 * block left behind; destroy sees a timer left counted). */
static void new_sweep(void *arg)
{
    (void)arg;
    for (int kind = 0; kind < 3; kind++) {
        for (long n = 0;; n++) {
            CHECK(n < 100);
            pt__alloc_fail_after(n);
            pt_time_timer *t = NULL;
            pt_time_ticker *tk = NULL;
            int r = kind == 0   ? pt_time_timer_new(&t, 1000 * SEC)
                    : kind == 1 ? pt_time_after_func(&t, 1000 * SEC, must_not_run, NULL)
                                : pt_time_ticker_new(&tk, 1000 * SEC);
            bool hit = !pt__alloc_fail_armed();
            pt__alloc_fail_after(-1);
            if (r == -ENOMEM) {
                CHECK(hit);
                CHECK(t == NULL && tk == NULL);
                continue;
            }
            CHECK_EQ(r, 0);
            CHECK_EQ(kind == 2 ? pt_time_ticker_free(tk) : pt_time_timer_free(t), 0);
            if (!hit) { /* made without reaching the failure: every allocation covered */
                printf("%s %s: %ld allocations failed in turn\n",
                       pt_g_current() ? "in a G" : "a plain thread",
                       kind == 0   ? "timer"
                       : kind == 1 ? "after_func"
                                   : "ticker",
                       n);
                break;
            }
        }
    }
}

void test_time_new_fails_with_enomem_and_makes_nothing(void)
{
    CHECK(pt_timerthread_global() != NULL); /* made before any failure */
    new_sweep(NULL);                        /* a plain thread: the TimerThread */
    in_g(PT_TIMERS_PER_P, new_sweep);
    in_g(PT_TIMERS_LHEAP, new_sweep);
    in_g(PT_TIMERS_TIMERTHREAD, new_sweep);
}

/* ---- a P's cache of freed timers ------------------------------------------------ */

/* A Timer freed on a P serves that P's next new (a Ticker too), and
 * comes back as new: an unread value it fired is gone, its channel is
 * open and empty, and it fires again. One freed with its channel closed
 * is not reused. */
static void cache_reuse(void *arg)
{
    (void)arg;
    pt_time_timer *t1, *t2, *t3;
    CHECK_EQ(pt_time_timer_new(&t1, 1), 0);
    wait_fired(pt_time_timer_chan(t1)); /* fired, never read */
    CHECK_EQ(pt_time_timer_free(t1), 0);
    CHECK_EQ(pt_time_timer_new(&t2, 1000 * SEC), 0);
    CHECK(t2 == t1);
    CHECK_EQ(pt_chan_len(pt_time_timer_chan(t2)), 0);
    CHECK_EQ(pt_chan_try_recv(pt_time_timer_chan(t2), NULL), -EAGAIN);
    CHECK_EQ(pt_time_timer_reset(t2, 1), 1); /* it was pending */
    CHECK(recv_time(pt_time_timer_chan(t2)) > 0);
    CHECK_EQ(pt_time_timer_free(t2), 0);

    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, 1 * MS), 0);
    CHECK((void *)tk == (void *)t1);
    CHECK(recv_time(pt_time_ticker_chan(tk)) > 0);
    CHECK(recv_time(pt_time_ticker_chan(tk)) > 0);
    CHECK_EQ(pt_time_ticker_free(tk), 0);

    CHECK_EQ(pt_time_timer_new(&t3, 1000 * SEC), 0);
    CHECK(t3 == t1);
    CHECK_EQ(pt_chan_close(pt_time_timer_chan(t3)), 0);
    CHECK_EQ(pt_time_timer_free(t3), 0);
    CHECK_EQ(pt_time_timer_new(&t2, 1000 * SEC), 0);
    CHECK_EQ(pt_chan_try_recv(pt_time_timer_chan(t2), NULL), -EAGAIN); /* open */
    CHECK_EQ(pt_time_timer_free(t2), 0);
    /* more than the cache holds: the rest are freed (ASan's leak check),
     * and destroy frees what it holds */
    pt_time_timer *many[100];
    for (int i = 0; i < 100; i++)
        CHECK_EQ(pt_time_timer_new(&many[i], 1000 * SEC), 0);
    for (int i = 0; i < 100; i++)
        CHECK_EQ(pt_time_timer_free(many[i]), 0);
}

void test_time_a_freed_timer_serves_its_ps_next_new_as_new(void)
{
    for (int mode = PT_TIMERS_PER_P; mode <= PT_TIMERS_LHEAP; mode++) {
        pt_sched *s = make_sched(1, (enum pt_timer_mode)mode);
        CHECK_EQ(pt_go(s, cache_reuse, NULL), 0);
        finish_sched(s);
    }
}

/* A Timer in a P's cache is poisoned for AddressSanitizer: a caller that
 * stops one it freed is reported, not silently served (run in a child). */
__attribute__((unused)) static void stop_after_free(void *arg)
{
    (void)arg;
    pt_time_timer *t;
    CHECK_EQ(pt_time_timer_new(&t, 1000 * SEC), 0);
    CHECK_EQ(pt_time_timer_free(t), 0); /* into the P's cache */
    pt_time_timer_stop(t);              /* the caller's bug */
}

void test_time_a_cached_timer_used_after_free_is_reported_by_asan(void)
{
#ifdef PT__ASAN
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) /* the report is expected */
            _exit(3);
        pt_sched_run(&(pt_sched_options){.procs = 1, .timers = PT_TIMERS_PER_P}, stop_after_free, NULL);
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
#else
    printf("not an AddressSanitizer build: nothing to look at\n");
#endif
}

/* ---- Stop while a tick is being sent ------------------------------------------------ */

/* A ticker's callback runs while its next tick is already pending (the
 * heap re-keys it first), so Stop's quick path -- the pending arming
 * stopped before it began -- is not enough while that callback still
 * runs: Stop must wait for it (the timer may be freed next), and what it
 * would send is not sent. A ticker is on a heap only while a G waits on
 * its channel, so a G waits, in a select with a quit channel; the hook
 * holds the callback before its send until Stop is seen waiting. */
static pt_time_ticker *_Atomic held_ticker;
static pt_chan *held_quit;
static atomic_int hold_in, hold_release, held_stop_done, held_case;

static void hold_fire(pt_time_timer *t)
{
    (void)t;
    if (atomic_exchange(&hold_in, 1))
        return; /* hold the first tick only */
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (!atomic_load(&hold_release))
        CHECK(pt_nanotime() < give_up);
}

static void wait_on_held_ticker(void *arg)
{
    (void)arg;
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, 1 * MS), 0); /* on this G's P's heap once it waits */
    atomic_store(&held_ticker, tk);
    pt_select_case cases[2] = {{.chan = pt_time_ticker_chan(tk), .dir = PT_RECV},
                               {.chan = held_quit, .dir = PT_RECV}};
    atomic_store(&held_case, pt_select(cases, 2, 0, true));
}

static void *stop_held(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_time_ticker_stop(atomic_load(&held_ticker)), 0);
    atomic_store(&held_stop_done, 1);
    return NULL;
}

void test_time_a_ticker_stopped_while_its_tick_is_sent_receives_nothing_after(void)
{
    atomic_store(&held_ticker, NULL);
    atomic_store(&hold_in, 0);
    atomic_store(&hold_release, 0);
    atomic_store(&held_stop_done, 0);
    atomic_store(&held_case, -1);
    CHECK_EQ(pt_chan_make(&held_quit, 0, 0), 0);
    pt__time_fire_hook = hold_fire;
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, wait_on_held_ticker, NULL), 0);
    WAIT_FOR(atomic_load(&hold_in) && atomic_load(&held_ticker));
    pt_time_ticker *tk = atomic_load(&held_ticker);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, stop_held, NULL), 0);
    /* Stop must come to wait for the held callback, not return */
    WAIT_FOR((pt__time_timer_callbacks((pt_time_timer *)tk) & PT__CB_WAITER) ||
             atomic_load(&held_stop_done));
    CHECK_EQ(atomic_load(&held_stop_done), 0);
    atomic_store(&hold_release, 1);
    CHECK_EQ(pthread_join(th, NULL), 0);
    pt__time_fire_hook = NULL;
    /* the held tick sent nothing, and nothing comes after: the waiting G
     * leaves by its quit case */
    CHECK_EQ(pt_chan_try_recv(pt_time_ticker_chan(tk), NULL), -EAGAIN);
    CHECK_EQ(pt_chan_close(held_quit), 0);
    WAIT_FOR(atomic_load(&held_case) != -1);
    CHECK_EQ(atomic_load(&held_case), 1);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
    CHECK_EQ(pt_chan_free(held_quit), 0);
    finish_sched(s);
}

/* ---- bad input ------------------------------------------------------------------------ */

static void noop(void *arg)
{
    (void)arg;
}

void test_every_time_call_rejects_bad_input(void)
{
    pt_time_timer *t = NULL;
    pt_time_ticker *tk = NULL;
    CHECK_EQ(pt_time_timer_new(NULL, 1), -EINVAL);
    CHECK_EQ(pt_time_after_func(NULL, 1, noop, NULL), -EINVAL);
    CHECK_EQ(pt_time_after_func(&t, 1, NULL, NULL), -EINVAL);
    CHECK(t == NULL);
    CHECK(pt_time_timer_chan(NULL) == NULL);
    CHECK_EQ(pt_time_timer_stop(NULL), -EINVAL);
    CHECK_EQ(pt_time_timer_reset(NULL, 1), -EINVAL);
    CHECK_EQ(pt_time_timer_free(NULL), -EINVAL);
    /* Go panics on a ticker period <= 0 (TestNewTickerLtZeroDuration,
     * TestTickerResetLtZeroDuration) */
    CHECK_EQ(pt_time_ticker_new(NULL, 1), -EINVAL);
    CHECK_EQ(pt_time_ticker_new(&tk, 0), -EINVAL);
    CHECK_EQ(pt_time_ticker_new(&tk, -1), -EINVAL);
    CHECK_EQ(pt_time_ticker_new(&tk, INT64_MIN), -EINVAL);
    CHECK(tk == NULL);
    CHECK(pt_time_ticker_chan(NULL) == NULL);
    CHECK_EQ(pt_time_ticker_stop(NULL), -EINVAL);
    CHECK_EQ(pt_time_ticker_reset(NULL, 1), -EINVAL);
    CHECK_EQ(pt_time_ticker_free(NULL), -EINVAL);
    /* a refused reset changes nothing: the ticker keeps ticking */
    CHECK_EQ(pt_time_ticker_new(&tk, 1 * MS), 0);
    CHECK_EQ(pt_time_ticker_reset(tk, 0), -EINVAL);
    CHECK_EQ(pt_time_ticker_reset(tk, -5), -EINVAL);
    pt_chan *c = pt_time_ticker_chan(tk);
    WAIT_FOR(pt_chan_try_recv(c, NULL) == 1);
    WAIT_FOR(pt_chan_try_recv(c, NULL) == 1);
    CHECK_EQ(pt_chan_cap(c), 1);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
    /* an AfterFunc timer has no channel */
    CHECK_EQ(pt_time_after_func(&t, 1000 * SEC, noop, NULL), 0);
    CHECK(pt_time_timer_chan(t) == NULL);
    CHECK_EQ(pt_time_timer_free(t), 0);
}
