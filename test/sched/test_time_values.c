/* The values a time.* timer delivers, Go 1.23's guarantees: a Reset
 * AfterFunc runs again; a value fired into an unread channel is gone once
 * Stop or Reset returns, with a reader racing and with the tick caught
 * in its send; a slow ticker reader finds one value; ticks keep their
 * phase. In every timer mode. */

#include <errno.h>
#include <stdint.h>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "pheap/status.h"
#include "ptimer/timerthread.h"
#include "sched/chan.h"
#include "sched/internal.h"
#include "sched/sanitizer.h"
#include "time_util.h"

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

void test_time_stop_and_reset_discard_a_fired_value(int mode)
{
    in_g((enum pt_timer_mode)mode, discard_fired);
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

/* ---- the phase: each value is its tick's time, start + k * period exactly;
 * the first tick is tick 1; ticks are skipped only while the reader is away,
 * and the value after a receive is due within a period of it -------------------- */

static void phase(void *arg)
{
    (void)arg;
    const pt_nanos period = 3 * MS;
    pt_nanos t0 = pt_nanotime();
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, period), 0);
    pt_nanos t1 = pt_nanotime();
    pt_chan *c = pt_time_ticker_chan(tk);
    pt_nanos first = 0, last = 0, read_at = 0;
    int skipped = 0;
    for (int i = 1; i <= 20; i++) {
        pt_nanos v = recv_time(c);
        pt_nanos now = pt_nanotime();
        CHECK(v <= now); /* never delivered before its time */
        if (i == 1) {
            /* tick 1 of the phase the call began: start is the call's time */
            CHECK(v >= t0 + period && v <= t1 + period);
            first = v;
        } else {
            CHECK_EQ((v - first) % period, 0); /* on the phase, exactly */
            CHECK(v > last);
            CHECK(v <= read_at + period); /* nothing skipped while we looked */
            skipped += (int)((v - last) / period) - 1;
        }
        last = v;
        if (i % 4 == 0)
            pt_sleep(2 * period + period / 3); /* a slow read: ticks dropped */
        read_at = pt_nanotime();
    }
    CHECK(skipped >= 4); /* each slow read lost a tick at least */
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

/* ---- a timer's value is its deadline, however late it is read --------------------- */

static void value_is_the_deadline(void *arg)
{
    (void)arg;
    const pt_nanos d = 2 * MS;
    for (int i = 0; i < 2; i++) {
        pt_nanos t0 = pt_nanotime();
        pt_time_timer *t;
        CHECK_EQ(pt_time_timer_new(&t, d), 0);
        pt_nanos t1 = pt_nanotime();
        pt_chan *c = pt_time_timer_chan(t);
        if (i == 1)
            pt_sleep(5 * d);       /* read late: the value is still the deadline */
        pt_nanos v = recv_time(c); /* blocked before it fired (0), or not (1) */
        CHECK(v >= t0 + d && v <= t1 + d);
        if (i == 1)
            CHECK(pt_nanotime() >= v + 4 * d);
        CHECK_EQ(pt_time_timer_free(t), 0);
    }
}

void test_time_timer_value_is_its_deadline(int mode)
{
    in_g((enum pt_timer_mode)mode, value_is_the_deadline);
}

void test_time_ticker_keeps_its_phase(int mode)
{
    in_g((enum pt_timer_mode)mode, phase);
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

void test_time_no_stale_tick_after_reset_or_stop(int mode)
{
    no_stale_tick((enum pt_timer_mode)mode);
}

/* ---- Stop while a tick is being sent ------------------------------------------------ */

/* A ticker's callback runs while its next tick is already pending (the
 * heap re-keys it first), so Stop's quick path -- the pending arming
 * stopped before it began -- is not enough while that callback still
 * runs: Stop must wait for it (the timer may be freed next), and what it
 * would send is not sent. A ticker is on a heap only while a G waits on
 * its channel, so a G waits, in a select with a quit channel; the hook
 * holds the callbacks before their send until Stop is seen waiting.
 *
 * The hook holds a callback only once the G has parked: until then the
 * G's own look at the due time may take the tick itself (a G slow to
 * park, a callback late), and a round where it did has nothing to show;
 * it is run again. */
static pt_time_ticker *_Atomic held_ticker;
static pt_chan *held_quit;
static atomic_int hold_in, hold_release, held_stop_done, held_case;

static void hold_fire(pt_time_timer *t)
{
    pt_time_ticker *tk = atomic_load(&held_ticker);
    if ((pt_time_timer *)tk != t || atomic_load(&hold_release))
        return;
    /* parked (its looks are over), or out of the select */
    WAIT_FOR(pt__chan_waited(pt_time_ticker_chan(tk)) || atomic_load(&held_case) != -1);
    if (atomic_load(&held_case) != -1)
        return;
    atomic_fetch_add(&hold_in, 1);
    WAIT_FOR(atomic_load(&hold_release));
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

/* One round; false if the G took a tick itself before it parked. */
static bool stop_a_held_tick(void)
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
    WAIT_FOR(atomic_load(&hold_in) || atomic_load(&held_case) != -1);
    pt_time_ticker *tk = atomic_load(&held_ticker);
    bool held = atomic_load(&hold_in) != 0;
    if (held) {
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, stop_held, NULL), 0);
        /* Stop must come to wait for the held callback, not return */
        WAIT_FOR((pt__time_timer_callbacks((pt_time_timer *)tk) & PT__CB_WAITER) ||
                 atomic_load(&held_stop_done));
        CHECK_EQ(atomic_load(&held_stop_done), 0);
        atomic_store(&hold_release, 1);
        CHECK_EQ(pthread_join(th, NULL), 0);
        /* the held ticks sent nothing, and nothing comes after: the
         * waiting G leaves by its quit case */
        CHECK_EQ(pt_chan_try_recv(pt_time_ticker_chan(tk), NULL), -EAGAIN);
        CHECK_EQ(pt_chan_close(held_quit), 0);
        WAIT_FOR(atomic_load(&held_case) != -1);
        CHECK_EQ(atomic_load(&held_case), 1);
    } else {
        atomic_store(&hold_release, 1);
        CHECK_EQ(atomic_load(&held_case), 0);
    }
    pt__time_fire_hook = NULL;
    atomic_store(&held_ticker, NULL);
    CHECK_EQ(pt_time_ticker_free(tk), 0); /* waits out any callback still in the hook */
    CHECK_EQ(pt_chan_free(held_quit), 0);
    finish_sched(s);
    return held;
}

void test_time_a_ticker_stopped_while_its_tick_is_sent_receives_nothing_after(void)
{
    for (int tries = 1; !stop_a_held_tick(); tries++)
        CHECK(tries < 100); /* the G beat its ticker's callback every time */
}
