/* Timed waits and breaks: never early, breaks from any thread, coalescing
 * (Go's netpollWakeSig), no lost wake, one waiter at a time, and the wake
 * of a heap whose owner sleeps in the netpoll (wakeNetPoller). Timing is
 * checked only as "never early" and with generous upper bounds. */
#include "util.h"

static void never_early(enum np_kind b)
{
    watchdog(120);
    pt_netpoll *np = np_new(b, NULL);
    pt_poll_event ev[4];
    const pt_nanos waits[] = {200000, 200000, 200000, 1000, 1 * MS, 5 * MS};
    for (int round = 0; round < 10; round++)
        for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++) {
            pt_nanos t0 = pt_nanotime();
            CHECK_EQ(pt_netpoll_wait(np, waits[i], ev, 4), 0);
            pt_nanos took = pt_nanotime() - t0;
            if (took < waits[i] || took > 2 * SEC)
                fprintf(stderr, "%s: a %lld ns wait took %lld ns\n", pt_netpoll_name(np),
                        (long long)waits[i], (long long)took);
            CHECK(took >= waits[i]);
            CHECK(took < 2 * SEC);
        }
    np_free(np);
}

void test_timed_wait_of_200us_never_returns_early_on_epoll_pwait2(void)
{
    never_early(NP_EPOLL);
}
void test_timed_wait_of_200us_never_returns_early_on_epoll_timerfd(void)
{
    never_early(NP_EPOLL_TIMERFD);
}
void test_timed_wait_of_200us_never_returns_early_on_uring(void)
{
    never_early(NP_URING);
}

static void zero_polls(enum np_kind b)
{
    pt_netpoll *np = np_new(b, NULL);
    pt_poll_event ev[4];
    pt_nanos t0 = pt_nanotime();
    for (int i = 0; i < 1000; i++)
        CHECK_EQ(pt_netpoll_wait(np, 0, ev, 4), 0);
    CHECK(pt_nanotime() - t0 < 10 * SEC); /* no sleeping: generous bound */
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.waits, 1000);
    CHECK_EQ(st.sleeps, 0);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(zero_timeout_polls_without_blocking, zero_polls)

/* ---- breaks ---------------------------------------------------------------- */

struct breaker {
    pt_netpoll *np;
    int tid; /* the thread to wait for before breaking */
    pthread_t th;
};

static void *break_when_asleep(void *arg)
{
    struct breaker *b = arg;
    CHECK(thread_sleeps(b->tid));
    CHECK_EQ(pt_netpoll_break(b->np), 0);
    return NULL;
}

static void break_ends_wait(enum np_kind k)
{
    watchdog(60);
    pt_netpoll *np = np_new(k, NULL);
    pt_poll_event ev[4];
    for (int i = 0; i < 3; i++) {
        struct breaker b = {np, gettid_(), 0};
        CHECK_EQ(pthread_create(&b.th, NULL, break_when_asleep, &b), 0);
        CHECK_EQ(pt_netpoll_wait(np, -1, ev, 4), 0);
        CHECK_EQ(pthread_join(b.th, NULL), 0);
    }
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.breaks, 3);
    CHECK_EQ(st.signals, 3);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(break_from_another_thread_ends_an_indefinite_wait, break_ends_wait)

static void break_before(enum np_kind k)
{
    watchdog(60);
    pt_netpoll *np = np_new(k, NULL);
    pt_poll_event ev[4];
    /* A break before the wait: the next blocking wait returns at once. */
    CHECK_EQ(pt_netpoll_break(np), 0);
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_netpoll_wait(np, -1, ev, 4), 0);
    CHECK(pt_nanotime() - t0 < 10 * SEC);
    /* Consumed: the next timed wait runs to its timeout. */
    t0 = pt_nanotime();
    CHECK_EQ(pt_netpoll_wait(np, 2 * MS, ev, 4), 0);
    CHECK(pt_nanotime() - t0 >= 2 * MS);

    /* A non-blocking wait does not eat it (Go's rule): still pending for
     * the blocking one, even on io_uring where the CQE itself is gone. */
    CHECK_EQ(pt_netpoll_break(np), 0);
    CHECK_EQ(pt_netpoll_wait(np, 0, ev, 4), 0);
    CHECK_EQ(pt_netpoll_wait(np, 0, ev, 4), 0);
    CHECK_EQ(pt_netpoll_wait(np, -1, ev, 4), 0);
    t0 = pt_nanotime();
    CHECK_EQ(pt_netpoll_wait(np, 2 * MS, ev, 4), 0);
    CHECK(pt_nanotime() - t0 >= 2 * MS);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(break_before_the_wait_makes_the_next_wait_return_at_once, break_before)

struct storm {
    pt_netpoll *np;
    _Atomic int *go;
    int n;
    pthread_t th;
};

static void *break_storm(void *arg)
{
    struct storm *s = arg;
    while (!atomic_load(s->go))
        sched_yield();
    for (int i = 0; i < s->n; i++)
        CHECK_EQ(pt_netpoll_break(s->np), 0);
    return NULL;
}

static void coalesce(enum np_kind k)
{
    watchdog(60);
    pt_netpoll *np = np_new(k, NULL);
    pt_poll_event ev[4];
    _Atomic int go = 0;
    struct storm s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (struct storm){np, &go, 2000, 0};
        CHECK_EQ(pthread_create(&s[i].th, NULL, break_storm, &s[i]), 0);
    }
    atomic_store(&go, 1);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_join(s[i].th, NULL), 0);
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.breaks, 8000);
    CHECK_EQ(st.signals, 1); /* one kernel wake for all of them */

    CHECK_EQ(pt_netpoll_wait(np, -1, ev, 4), 0); /* the one wake */
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_netpoll_wait(np, 2 * MS, ev, 4), 0); /* and no second */
    CHECK(pt_nanotime() - t0 >= 2 * MS);
    CHECK_EQ(pt_netpoll_break(np), 0);
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.signals, 2);
    CHECK_EQ(pt_netpoll_wait(np, -1, ev, 4), 0);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(concurrent_breaks_coalesce_into_one_wake, coalesce)

/* The no-lost-wake rule under a bounded stress loop: round i's breaks come
 * once the waiter has returned i - 1 times, so every round must produce
 * one more return; a lost wake shows as a wait that runs to its (long)
 * timeout. Two breakers make the breaks race each other too. */
struct ping {
    pt_netpoll *np;
    _Atomic long *returns;
    long rounds;
    pthread_t th;
};

static void *pinger(void *arg)
{
    struct ping *p = arg;
    for (long i = 1; i <= p->rounds; i++) {
        while (atomic_load(p->returns) < i - 1)
            sched_yield();
        CHECK_EQ(pt_netpoll_break(p->np), 0);
    }
    return NULL;
}

static void no_lost_wake(enum np_kind k)
{
    watchdog(500);
    pt_netpoll *np = np_new(k, NULL);
    pt_poll_event ev[4];
    _Atomic long returns = 0;
    const long rounds = 20000;
    struct ping p[2];
    for (int i = 0; i < 2; i++) {
        p[i] = (struct ping){np, &returns, rounds, 0};
        CHECK_EQ(pthread_create(&p[i].th, NULL, pinger, &p[i]), 0);
    }
    while (atomic_load(&returns) < rounds) {
        pt_nanos t0 = pt_nanotime();
        CHECK_EQ(pt_netpoll_wait(np, 20 * SEC, ev, 4), 0);
        if (pt_nanotime() - t0 >= 20 * SEC) {
            fprintf(stderr, "lost wake after %ld returns\n", atomic_load(&returns));
            CHECK(false);
        }
        atomic_fetch_add(&returns, 1);
    }
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(p[i].th, NULL), 0);
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    printf("%ld rounds, %llu breaks, %llu kernel signals, %llu sleeps\n", rounds,
           (unsigned long long)st.breaks, (unsigned long long)st.signals,
           (unsigned long long)st.sleeps);
    CHECK(st.signals <= st.breaks);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(breaks_under_stress_lose_no_wake, no_lost_wake)

/* ---- one waiter ------------------------------------------------------------ */

static void one_waiter(enum np_kind k)
{
    watchdog(60);
    pt_netpoll *np = np_new(k, NULL);
    struct poller p;
    poller_start(&p, np);
    CHECK(thread_sleeps(atomic_load(&p.tid)));
    pt_poll_event ev[4];
    CHECK_EQ(pt_netpoll_wait(np, 0, ev, 4), 0);
    CHECK_EQ(pt_netpoll_wait(np, 1 * MS, ev, 4), -EBUSY);
    CHECK_EQ(pt_netpoll_wait(np, -1, ev, 4), -EBUSY);
    CHECK_EQ(pt_netpoll_destroy(np), -EBUSY);
    poller_stop(&p);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(one_thread_waits_at_a_time, one_waiter)

/* ---- timers and the poller ---------------------------------------------------- */

/* An owned heap: the poller sleeps with no limit; a deadline set from
 * another thread must break that sleep (a WAKE_TIMER signal) so that it
 * fires on time and times out its waiter. */
static void deadline_breaks_poller(enum np_kind k)
{
    watchdog(60);
    struct poller p;
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(k, &p, &kind_socketpair, fds, &pd, PT_POLL_READ);
    CHECK(thread_sleeps(atomic_load(&p.tid)));
    pt_netpoll_stats st0, st;
    pt_netpoll_read_stats(np, &st0);

    pt_nanos when = pt_nanotime() + 20 * MS;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, PT_POLL_READ, when, NULL), 0);
    CHECK_EQ(pt_pollfd_wait(&pd, PT_POLL_READ), -ETIMEDOUT);
    CHECK(pt_nanotime() >= when);
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.signals, st0.signals + 1); /* the timer wake */
    CHECK_EQ(st.breaks, st0.breaks);       /* no user break */
    CHECK_EQ(st.deadlines_fired, 1);

    fixture_close(np, &p, &kind_socketpair, fds, &pd);
}

PT_TEST_BOTH_BACKENDS(new_earlier_deadline_breaks_a_sleeping_poller, deadline_breaks_poller)

/* A P's heap wired to the netpoll (pt_netpoll_wake as its wake): a timer
 * later than the poller's wake-up time leaves it asleep, an earlier one
 * breaks it (Go's wakeNetPoller). */
struct sleeper {
    pt_netpoll *np;
    pt_nanos timeout, took;
    _Atomic int tid;
    pthread_t th;
};

static void *sleeper_main(void *arg)
{
    struct sleeper *s = arg;
    pt_poll_event ev[4];
    atomic_store(&s->tid, gettid_());
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_netpoll_wait(s->np, s->timeout, ev, 4), 0);
    s->took = pt_nanotime() - t0;
    return NULL;
}

static void noop(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
}

static void wake_net_poller(enum np_kind k)
{
    watchdog(120);
    pt_timers ts;
    pt_netpoll *np = np_new(k, &ts);
    pt_timers_init(&ts, pt_netpoll_wake, np);
    CHECK(pt_netpoll_timers(np) == &ts);
    struct sleeper s = {np, 30 * SEC, 0, 0, 0};
    CHECK_EQ(pthread_create(&s.th, NULL, sleeper_main, &s), 0);
    while (!atomic_load(&s.tid))
        sched_yield();
    CHECK(thread_sleeps(atomic_load(&s.tid)));
    pt_netpoll_stats st;

    pt_timer late, early;
    pt_timer_init(&late, noop, NULL);
    pt_timer_init(&early, noop, NULL);
    CHECK_EQ(pt_timer_start(&ts, &late, pt_nanotime() + 3600 * SEC, 0), 0);
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.signals, 0); /* after the poller's 30 s: no wake */
    CHECK_EQ(pt_timer_start(&ts, &early, pt_nanotime() + 1 * MS, 0), 0);
    CHECK_EQ(pthread_join(s.th, NULL), 0);
    CHECK(s.took < 30 * SEC);
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.signals, 1);

    CHECK_EQ(pt_timer_stop_sync(&late), 1);
    CHECK_EQ(pt_timer_stop_sync(&early), 1);
    np_free(np);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

PT_TEST_BOTH_BACKENDS(wake_breaks_the_poller_only_for_an_earlier_time, wake_net_poller)
