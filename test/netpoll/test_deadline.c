/* Read and write deadlines on ptimer timers: firing times out the side and
 * wakes its waiter, resetting before the fire postpones, a stale timer
 * (fired for a deadline since reset) changes nothing (Go's rseq/wseq via
 * the timer's seq), and close wakes waiters and stops the timers. */
#include "base/lock.h"
#include "util.h"

#define R PT_POLL_READ
#define W PT_POLL_WRITE

struct side_waiter {
    pt_pollfd *pd;
    unsigned mode;
    int result;
    pt_nanos done;
    _Atomic int finished;
    pthread_t th;
};

/* The sides waited on here never become ready: a 0 is an older edge
 * delivered late (the registration's, say), and an I/O loop would find
 * EAGAIN and wait again, as this does. */
static void *side_wait_main(void *arg)
{
    struct side_waiter *w = arg;
    while ((w->result = pt_pollfd_wait(w->pd, w->mode)) == 0)
        ;
    w->done = pt_nanotime();
    atomic_store(&w->finished, 1);
    return NULL;
}

static void start_waiter(struct side_waiter *w, pt_pollfd *pd, unsigned mode)
{
    *w = (struct side_waiter){pd, mode, 1, 0, 0, 0};
    CHECK_EQ(pthread_create(&w->th, NULL, side_wait_main, w), 0);
    /* Blocked, or (on a loaded machine) already timed out and gone. */
    _Atomic uint32_t *g = mode == R ? &pd->rg : &pd->wg;
    pt_nanos end = pt_nanotime() + 10 * SEC;
    while (atomic_load(g) != 2 /* WAIT */ && !atomic_load(&w->finished)) {
        CHECK(pt_nanotime() < end);
        sched_yield();
    }
}

static int join_waiter(struct side_waiter *w)
{
    CHECK_EQ(pthread_join(w->th, NULL), 0);
    return w->result;
}

static void fires(enum np_kind k)
{
    watchdog(60);
    struct poller p;
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(k, &p, &kind_socketpair, fds, &pd, R | W);

    /* Read deadline: the waiter times out, no earlier than the deadline. */
    pt_nanos when = pt_nanotime() + 20 * MS;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, when, NULL), 0);
    struct side_waiter w;
    start_waiter(&w, &pd, R);
    CHECK_EQ(join_waiter(&w), -ETIMEDOUT);
    CHECK(w.done >= when);
    /* It stays timed out; the write side does not. */
    CHECK_EQ(pt_pollfd_wait(&pd, R), -ETIMEDOUT);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), -ETIMEDOUT);
    CHECK_EQ(pt_pollfd_prepare(&pd, W), 0);

    /* Write deadline, with the send buffer full so the waiter blocks. */
    kind_socketpair.fill(fds[0]);
    CHECK_EQ(pt_pollfd_prepare(&pd, W), 0);
    when = pt_nanotime() + 10 * MS;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, W, when, NULL), 0);
    start_waiter(&w, &pd, W);
    CHECK_EQ(join_waiter(&w), -ETIMEDOUT);
    CHECK(w.done >= when);

    /* Clearing both deadlines clears the timed-out state. */
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R | W, 0, NULL), 0);
    CHECK_EQ(pt_pollfd_prepare(&pd, R | W), 0);
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.deadlines_fired, 2);
    CHECK_EQ(st.deadlines_stale, 0);

    fixture_stop(&p, &pd);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    fixture_free(np, &kind_socketpair, fds);
}

PT_TEST_BOTH_BACKENDS(deadline_fires_and_times_out_the_waiter, fires)

void test_deadline_in_the_past_times_out_at_once_and_arms_no_timer(void)
{
    watchdog(60);
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(NP_EPOLL, NULL, &kind_pipe, fds, &pd, R);
    /* A waiter already blocked is woken (no poller needed). */
    struct side_waiter w;
    start_waiter(&w, &pd, R);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, 1, NULL), 0);
    CHECK_EQ(join_waiter(&w), -ETIMEDOUT);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), -ETIMEDOUT);
    /* A deadline later again: no longer timed out. */
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, pt_nanotime() + 3600 * SEC, NULL), 0);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), 0);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 1);
    fixture_stop(NULL, &pd);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    fixture_free(np, &kind_pipe, fds);
}

static void postpone(enum np_kind k)
{
    watchdog(60);
    struct poller p;
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(k, &p, &kind_pipe, fds, &pd, R);
    pt_nanos first = pt_nanotime() + 200 * MS;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, first, NULL), 0);
    pt_nanos second = pt_nanotime() + 400 * MS;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, second, NULL), 0);
    /* Only a reset that came after the first deadline (a stalled thread)
     * may see it fire; the wait must still end at the second. */
    bool late = pt_nanotime() >= first;
    CHECK_EQ(pt_pollfd_wait(&pd, R), -ETIMEDOUT);
    CHECK(pt_nanotime() >= second); /* the wait ended at the second deadline */
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK(st.deadlines_fired == 1 || (late && st.deadlines_fired == 2));
    fixture_close(np, &p, &kind_pipe, fds, &pd);
}

PT_TEST_BOTH_BACKENDS(reset_before_firing_postpones_the_deadline, postpone)

/* White-box: run the read timer's callback as the heap would, with the
 * sequence number it was armed with, after the deadline was reset. */
void test_reset_after_firing_is_ignored_by_the_stale_timer(void)
{
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(NP_EPOLL, NULL, &kind_pipe, fds, &pd, R);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, pt_nanotime() + 3600 * SEC, NULL), 0);
    uintptr_t stale = pd.rt.seq;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, pt_nanotime() + 7200 * SEC, NULL), 0);
    CHECK(pd.rt.seq != stale);

    pd.rt.f(pd.rt.arg, stale); /* the old timer, popped before the reset */
    CHECK_EQ(pt_pollfd_prepare(&pd, R), 0);
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.deadlines_stale, 1);
    CHECK_EQ(st.deadlines_fired, 0);

    pd.rt.f(pd.rt.arg, pd.rt.seq); /* the current one does fire */
    CHECK_EQ(pt_pollfd_prepare(&pd, R), -ETIMEDOUT);
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.deadlines_fired, 1);

    /* Write side, the same rule with wseq. */
    CHECK_EQ(pt_pollfd_set_deadline(&pd, W, pt_nanotime() + 3600 * SEC, NULL), 0);
    stale = pd.wt.seq;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, W, 0, NULL), 0);
    pd.wt.f(pd.wt.arg, stale);
    CHECK_EQ(pt_pollfd_prepare(&pd, W), 0);

    fixture_close(np, NULL, &kind_pipe, fds, &pd);
}

/* The real race, through a P's heap: one thread runs the heap just as the
 * deadline falls due, another resets the deadline to much later. Whatever
 * the order, the side must end up not timed out: either the fire came
 * first and the reset cleared it, or the reset came first and the fire
 * was stale. Counts how often each order happened. */
struct racer {
    pt_timers *ts;
    _Atomic int round;
    _Atomic int done;
    int rounds;
    pthread_t th;
};

static void *check_racer(void *arg)
{
    struct racer *r = arg;
    for (int i = 1; i <= r->rounds; i++) {
        while (atomic_load(&r->round) < i)
            ;
        pt_timers_check(r->ts, 0, true, NULL);
        atomic_store(&r->done, i);
    }
    return NULL;
}

void test_stale_timer_racing_a_reset_never_times_out_the_new_deadline(void)
{
    watchdog(300);
    pt_timers ts;
    pt_netpoll *np = np_new(NP_EPOLL, &ts);
    pt_timers_init(&ts, NULL, NULL);
    int fds[2];
    kind_pipe.open(fds);
    pt_pollfd pd;
    CHECK_EQ(pt_pollfd_open(np, &pd, fds[0], R, NULL), 0);
    struct racer r = {&ts, 0, 0, 3000, 0};
    CHECK_EQ(pthread_create(&r.th, NULL, check_racer, &r), 0);
    for (int i = 1; i <= r.rounds; i++) {
        pt_nanos due = pt_nanotime() + 20000;
        CHECK_EQ(pt_pollfd_set_deadline(&pd, R, due, NULL), 0);
        while (pt_nanotime() < due)
            ;
        atomic_store(&r.round, i); /* go: the racer runs the heap */
        CHECK_EQ(pt_pollfd_set_deadline(&pd, R, pt_nanotime() + 3600 * SEC, NULL), 0);
        while (atomic_load(&r.done) < i)
            ;
        CHECK_EQ(pt_pollfd_prepare(&pd, R), 0);
    }
    CHECK_EQ(pthread_join(r.th, NULL), 0);
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    printf("%d rounds: %llu fired before the reset, %llu stale after it\n", r.rounds,
           (unsigned long long)st.deadlines_fired, (unsigned long long)st.deadlines_stale);
    fixture_close(np, NULL, &kind_pipe, fds, &pd);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

/* Deadlines on a heap the caller names (a P's), fired by its owner's
 * check: no sleeping, the clock is the `now` passed to check. */
void test_deadline_on_a_named_heap_fires_from_its_owners_check(void)
{
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    pt_timers p;
    pt_timers_init(&p, NULL, NULL);
    int fds[2];
    kind_pipe.open(fds);
    pt_pollfd pd;
    CHECK_EQ(pt_pollfd_open(np, &pd, fds[0], R, NULL), 0);
    pt_nanos when = pt_nanotime() + 3600 * SEC;
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, when, &p), 0);
    CHECK_EQ(pt_timers_len(&p), 1);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    CHECK_EQ(pt_timers_check(&p, when - 1, true, NULL), 0);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), 0);
    CHECK_EQ(pt_timers_check(&p, when, true, NULL), 1);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), -ETIMEDOUT);
    fixture_stop(NULL, &pd);
    CHECK_EQ(pt_timers_destroy(&p), 0);
    fixture_free(np, &kind_pipe, fds);
}

static void close_wakes(enum np_kind k)
{
    watchdog(60);
    struct poller p;
    int fds[2];
    pt_netpoll *np = fixture_open(k, &p, &kind_socketpair, fds, NULL, 0);
    kind_socketpair.fill(fds[0]);
    pt_pollfd *pd = malloc(sizeof *pd);
    CHECK(pd);
    CHECK_EQ(pt_pollfd_open(np, pd, fds[0], R | W, NULL), 0);
    CHECK_EQ(pt_pollfd_prepare(pd, R | W), 0);
    CHECK_EQ(pt_pollfd_set_deadline(pd, R | W, pt_nanotime() + 3600 * SEC, NULL), 0);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 2);
    struct side_waiter wr, ww;
    start_waiter(&wr, pd, R);
    start_waiter(&ww, pd, W);

    CHECK_EQ(pt_pollfd_close(pd), 0);
    /* On return: the waiters are out, the timers stopped and unlinked. */
    CHECK_EQ(join_waiter(&wr), -EBADF);
    CHECK_EQ(join_waiter(&ww), -EBADF);
    enum pt_timer_status s = pt_timer_status(&pd->rt);
    CHECK(s == PT_TIMER_REMOVED || s == PT_TIMER_NOSTATUS);
    s = pt_timer_status(&pd->wt);
    CHECK(s == PT_TIMER_REMOVED || s == PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    CHECK_EQ(pt_pollfd_wait(pd, R), -EBADF);
    free(pd); /* safe: nothing refers to it any more (ASan would say) */

    kind_socketpair.drain(fds[1]); /* events for the freed pd: ignored */
    kind_socketpair.put(fds[1]);
    fixture_close(np, &p, &kind_socketpair, fds, NULL);
}

PT_TEST_BOTH_BACKENDS(close_wakes_waiters_with_ebadf_and_stops_timers, close_wakes)

/* A closer racing deadlines that fire on the poller thread (owned heap):
 * stop_sync must wait out a running callback before close returns. */
void test_close_racing_firing_deadlines_leaves_nothing_behind(void)
{
    watchdog(300);
    struct poller p;
    int fds[2];
    pt_netpoll *np = fixture_open(NP_EPOLL, &p, &kind_pipe, fds, NULL, 0);
    for (int i = 0; i < 5000; i++) {
        pt_pollfd *pd = malloc(sizeof *pd);
        CHECK(pd);
        CHECK_EQ(pt_pollfd_open(np, pd, fds[0], R, NULL), 0);
        CHECK_EQ(pt_pollfd_set_deadline(pd, R, pt_nanotime() + (i % 50) * 1000, NULL), 0);
        if (i % 3 == 0)
            while (pt_pollfd_prepare(pd, R) == 0 && pt_nanotime() % 2)
                ;
        CHECK_EQ(pt_pollfd_close(pd), 0);
        free(pd);
    }
    fixture_stop(&p, NULL);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    fixture_free(np, &kind_pipe, fds);
}
