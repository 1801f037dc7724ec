/* A time.* timer's life beside its scheduler's: made and used from a
 * plain thread (the TimerThread fallback), a scheduler not destroyed
 * while a timer lives, new failing whole when memory runs out, a P's cache
 * of freed timers, and the bad inputs of every call. */

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
        printf("%s: destroy waited for the timers\n", mode_name(mode));
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
#ifndef PT__ASAN
    SKIP("not an AddressSanitizer build");
#else
    char err[8192];
    int status = sched_run_in_child(&(pt_sched_options){.procs = 1, .timers = PT_TIMERS_PER_P},
                                    stop_after_free, NULL, err, sizeof err);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
    /* the cache's poison, met in the caller's stop */
    if (!strstr(err, "AddressSanitizer: use-after-poison") || !strstr(err, "pt_time_timer_stop")) {
        fprintf(stderr,
                "expected AddressSanitizer's use-after-poison in pt_time_timer_stop; the "
                "child said:\n%s\n",
                err);
        abort();
    }
#endif
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
