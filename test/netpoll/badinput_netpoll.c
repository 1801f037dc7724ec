/* The bad-input table's rows for netpoll.h, in the suite that links the
 * netpoll (test/verify/badinput.h has the table's shape), and the check
 * that every function netpoll.h declares has a row. The classes are the
 * heaps' (test/verify/test_badinput.c): NULL, never opened (zeroed,
 * garbage), closed, out-of-range numbers and flags, wrong state (busy,
 * expired, another thread waiting); after each bad call the good netpoll
 * and its descriptor are as they were.
 *
 * A pt_netpoll is opaque and made only by pt_netpoll_create: a NULL one is
 * the bad pointer there is to try; one used after pt_netpoll_destroy is
 * freed memory, undefined and not tried. A pt_pollfd is caller memory:
 * never opened (zeroed, garbage) and closed ones are detected, and tried;
 * one used after it was freed is undefined. The rows run on epoll; the
 * backend-specific paths of the same calls on io_uring are test_errors.c's
 * _on_uring tests. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "netpoll/internal.h" /* PD_READY, PD_WAIT, PT__POLLFD_*: the side words */
#include "util.h"
#include "verify/badinput.h"

#define R PT_POLL_READ
#define W PT_POLL_WRITE

/* ---- the bad descriptors every pt_pollfd argument is tried with ---------- */

struct bad_pds {
    pt_pollfd zero, garbage, closed;
};

static void make_bad_pds(struct bad_pds *b, pt_netpoll *np)
{
    memset(&b->zero, 0, sizeof b->zero);
    memset(&b->garbage, 0xa5, sizeof b->garbage);
    int fds[2];
    kind_pipe.open(fds);
    CHECK_EQ(pt_pollfd_open(np, &b->closed, fds[0], R, NULL), 0);
    CHECK_EQ(pt_pollfd_close(&b->closed), 0);
    kind_pipe.close(fds);
}

#define N_BAD_PDS 4
static pt_pollfd *bad_pd(struct bad_pds *b, int i)
{
    pt_pollfd *p[N_BAD_PDS] = {NULL, &b->zero, &b->garbage, &b->closed};
    return p[i];
}

/* What a call on bad_pd(i) answers: -EINVAL but for the closed one. */
static int bad_pd_err(int i)
{
    return i == 3 ? -EBADF : -EINVAL;
}

/* ---- a good netpoll: a pipe registered for reading, with a pending read
 * deadline on the owned heap, to show a bad call changed nothing ---------- */

struct npgood {
    pt_netpoll *np;
    int fds[2];
    pt_pollfd pd;
    pt_nanos rd;
};

static void make_npgood(struct npgood *g)
{
    g->np = fixture_open(NP_EPOLL, NULL, &kind_pipe, g->fds, &g->pd, R);
    g->rd = pt_nanotime() + 3600 * SEC;
    CHECK_EQ(pt_pollfd_set_deadline(&g->pd, R, g->rd, NULL), 0);
}

/* pd open, its interest and deadline as set (its timer still in the heap),
 * no side waiting or timed out, the netpoll not waited on; and readiness
 * still reported (a byte put, seen, and taken again with its ready bit). */
static void check_npgood_unchanged(struct npgood *g)
{
    CHECK_EQ(atomic_load(&g->pd.reg.magic), PT__POLLFD_OPEN);
    CHECK_EQ(atomic_load(&g->pd.reg.events), R);
    CHECK_EQ(g->pd.rd, g->rd);
    CHECK_EQ(g->pd.wd, 0);
    CHECK_EQ(atomic_load(&g->pd.info), 0);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(g->np)), 1);
    CHECK(atomic_load(&g->pd.rg) != PD_WAIT);
    kind_pipe.put(g->fds[1]);
    CHECK(wait_event(g->np, &g->pd, R, 30 * SEC) & R);
    kind_pipe.drain(g->fds[0]);
    CHECK_EQ(pt_pollfd_prepare(&g->pd, R), 0);
    CHECK_EQ(atomic_load(&g->pd.rg), PD_NIL);
}

static void free_npgood(struct npgood *g)
{
    fixture_close(g->np, NULL, &kind_pipe, g->fds, &g->pd);
}

static void noop_cb(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
}

/* ---- the netpoll ----------------------------------------------------------- */

static void row_pt_netpoll_create(void)
{
    pt_netpoll *np = (pt_netpoll *)&np; /* must not be written on error */
    CHECK_EQ(pt_netpoll_create(NULL, NULL), -EINVAL);
    static const pt_netpoll_options bad[] = {
        {(enum pt_netpoll_backend)3, 0, NULL},       {(enum pt_netpoll_backend) - 1, 0, NULL},
        {(enum pt_netpoll_backend)INT_MAX, 0, NULL}, {PT_NETPOLL_EPOLL, 0x2u, NULL},
        {PT_NETPOLL_DEFAULT, 0x80000000u, NULL},     {PT_NETPOLL_URING, ~0u, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(pt_netpoll_create(&np, &bad[i]), -EINVAL);
        CHECK_EQ(pt_netpoll_create(NULL, &bad[i]), -EINVAL);
    }
    CHECK(np == (pt_netpoll *)&np);
    /* not errors: NULL options; io_uring asked for, which runs or falls
     * back to epoll saying why (-ENOSYS where it was not built in) */
    CHECK_EQ(pt_netpoll_create(&np, NULL), 0);
    np_free(np);
    CHECK_EQ(pt_netpoll_create(&np, &(pt_netpoll_options){PT_NETPOLL_URING, 0, NULL}), 0);
    if (pt_netpoll_backend(np) == PT_NETPOLL_URING) {
        CHECK_EQ(pt_netpoll_fallback(np), 0);
    } else {
        CHECK_EQ(pt_netpoll_backend(np), PT_NETPOLL_EPOLL);
        CHECK(pt_netpoll_fallback(np) < 0);
#ifndef PT_HAVE_URING
        CHECK_EQ(pt_netpoll_fallback(np), -ENOSYS);
#endif
    }
    np_free(np);
    /* A heap in the options is the caller's and is not checked here: a
     * bad one refuses each deadline armed on it (set_deadline's row). An
     * unknown $PT_NETPOLL is not refused either: epoll, and the fallback
     * says -EINVAL (test_errors.c, pt_netpoll_variable_...). */
}

/* A thread blocked in pt_netpoll_wait(np, -1) until poller_stop. */
static void start_waiter(struct poller *p, pt_netpoll *np)
{
    poller_start(p, np);
    CHECK(thread_sleeps(atomic_load(&p->tid)));
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK(st.waits >= 1); /* it is in the wait, not before it */
}

static void row_pt_netpoll_destroy(void)
{
    CHECK_EQ(pt_netpoll_destroy(NULL), -EINVAL);
    struct npgood g;
    make_npgood(&g);
    /* wrong state: a descriptor open */
    CHECK_EQ(pt_netpoll_destroy(g.np), -EBUSY);
    check_npgood_unchanged(&g);
    /* a thread waiting */
    struct poller p;
    start_waiter(&p, g.np);
    CHECK_EQ(pt_netpoll_destroy(g.np), -EBUSY);
    poller_stop(&p);
    check_npgood_unchanged(&g);
    /* a timer of the caller's in the owned heap (pd closed: it was the
     * last descriptor) */
    CHECK_EQ(pt_pollfd_close(&g.pd), 0);
    pt_timer t;
    pt_timer_init(&t, noop_cb, NULL);
    CHECK_EQ(pt_timer_start(pt_netpoll_timers(g.np), &t, pt_nanotime() + 3600 * SEC, 0), 0);
    CHECK_EQ(pt_netpoll_destroy(g.np), -EBUSY);
    CHECK_EQ(pt_timer_status(&t), PT_TIMER_WAITING);
    pt_poll_event ev[4];
    CHECK_EQ(pt_netpoll_wait(g.np, 0, ev, 4), 0); /* still a netpoll */
    CHECK_EQ(pt_timer_stop_sync(&t), 1);
    fixture_free(g.np, &kind_pipe, g.fds);
    /* (after destroy the netpoll is freed: not tried) */
}

static void row_pt_netpoll_backend(void)
{
    CHECK_EQ(pt_netpoll_backend(NULL), PT_NETPOLL_DEFAULT);
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    CHECK_EQ(pt_netpoll_backend(np), PT_NETPOLL_EPOLL);
    np_free(np);
}

static void row_pt_netpoll_fallback(void)
{
    CHECK_EQ(pt_netpoll_fallback(NULL), -EINVAL);
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    CHECK_EQ(pt_netpoll_fallback(np), 0); /* epoll asked by name: no fallback */
    np_free(np);
}

static void row_pt_netpoll_name(void)
{
    CHECK(strcmp(pt_netpoll_name(NULL), "none") == 0);
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    CHECK(strncmp(pt_netpoll_name(np), "epoll+", 6) == 0);
    np_free(np);
}

static void row_pt_netpoll_timers(void)
{
    CHECK(pt_netpoll_timers(NULL) == NULL);
    pt_timers ts;
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    pt_netpoll *np = np_new(NP_EPOLL, &ts);
    CHECK(pt_netpoll_timers(np) == &ts);
    np_free(np);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

static void row_pt_netpoll_read_stats(void)
{
    pt_netpoll_stats st;
    memset(&st, 0x5a, sizeof st);
    pt_netpoll_read_stats(NULL, &st); /* a bad np: zeros */
    CHECK_EQ(st.waits, 0);
    CHECK_EQ(st.deadlines_stale, 0);
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    pt_netpoll_read_stats(np, NULL); /* nowhere to write: nothing */
    pt_netpoll_read_stats(NULL, NULL);
    np_free(np);
}

static void row_pt_netpoll_wait(void)
{
    pt_poll_event ev[4];
    memset(ev, 0x5a, sizeof ev);
    CHECK_EQ(pt_netpoll_wait(NULL, 0, ev, 4), -EINVAL);
    CHECK_EQ(pt_netpoll_wait(NULL, -1, ev, 4), -EINVAL);
    struct npgood g;
    make_npgood(&g);
    /* a break pending, which no refused call may consume */
    CHECK_EQ(pt_netpoll_break(g.np), 0);
    for (int i = 0; i < 2; i++) {
        pt_nanos timeout = i ? -1 : 0;
        CHECK_EQ(pt_netpoll_wait(g.np, timeout, NULL, 4), -EINVAL);
        CHECK_EQ(pt_netpoll_wait(g.np, timeout, ev, 0), -EINVAL);
        CHECK_EQ(pt_netpoll_wait(g.np, timeout, ev, -1), -EINVAL);
        CHECK_EQ(pt_netpoll_wait(g.np, timeout, ev, INT_MIN), -EINVAL);
    }
    CHECK_EQ(ev[0].fd, 0x5a5a5a5a); /* nothing written */
    pt_netpoll_stats st;
    pt_netpoll_read_stats(g.np, &st);
    CHECK_EQ(st.waits, 0);
    /* the break is still there: a blocking wait returns at once, with no
     * event (a lost break would hold it for the whole bound) */
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_netpoll_wait(g.np, 30 * SEC, ev, 4), 0);
    CHECK(pt_nanotime() - t0 < 30 * SEC);
    /* wrong state: another thread waits (a poll, timeout 0, is not
     * refused: it returns no event at once) */
    struct poller p;
    start_waiter(&p, g.np);
    CHECK_EQ(pt_netpoll_wait(g.np, 1 * MS, ev, 4), -EBUSY);
    CHECK_EQ(pt_netpoll_wait(g.np, -1, ev, 4), -EBUSY);
    CHECK_EQ(pt_netpoll_wait(g.np, 0, ev, 4), 0);
    poller_stop(&p);
    check_npgood_unchanged(&g);
    free_npgood(&g);
}

static void row_pt_netpoll_break(void)
{
    CHECK_EQ(pt_netpoll_break(NULL), -EINVAL);
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.breaks, 0);
    CHECK_EQ(st.signals, 0);
    np_free(np);
}

static void row_pt_netpoll_wake(void)
{
    /* a pt_wake_func: void, so nothing to answer; a NULL ctx is nothing
     * (ctx is void *: any other pointer that is no netpoll is undefined) */
    pt_netpoll_wake(NULL, 0);
    pt_netpoll_wake(NULL, INT64_MAX);
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    pt_netpoll_wake(np, INT64_MIN); /* any time: an earlier one breaks */
    pt_netpoll_stats st;
    pt_netpoll_read_stats(np, &st);
    CHECK_EQ(st.breaks, 0); /* a wake is not a user's break */
    np_free(np);
}

/* ---- descriptors ----------------------------------------------------------- */

static void row_pt_pollfd_open(void)
{
    struct npgood g;
    make_npgood(&g);
    pt_pollfd pd;
    memset(&pd, 0, sizeof pd);
    int fds[2];
    kind_pipe.open(fds);
    CHECK_EQ(pt_pollfd_open(NULL, &pd, fds[0], R, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_open(g.np, NULL, fds[0], R, NULL), -EINVAL);
    static const unsigned bad_events[] = {PT_POLL_ERR, PT_POLL_HUP, R | 0x10u, ~0u};
    for (size_t i = 0; i < sizeof bad_events / sizeof bad_events[0]; i++)
        CHECK_EQ(pt_pollfd_open(g.np, &pd, fds[0], bad_events[i], NULL), -EINVAL);
    /* fds that are not open */
    int gone[2];
    kind_pipe.open(gone);
    kind_pipe.close(gone);
    CHECK_EQ(pt_pollfd_open(g.np, &pd, -1, R, NULL), -EBADF);
    CHECK_EQ(pt_pollfd_open(g.np, &pd, INT_MIN, R, NULL), -EBADF);
    CHECK_EQ(pt_pollfd_open(g.np, &pd, gone[0], R, NULL), -EBADF);
    CHECK_EQ(pt_pollfd_open(g.np, &pd, 1 << 20, R, NULL), -EBADF);
    /* an fd registered already (by the good pd) */
    CHECK_EQ(pt_pollfd_open(g.np, &pd, g.fds[0], R | W, NULL), -EEXIST);
    /* an fd the kernel cannot poll */
    char path[] = "/tmp/pt_badinput_XXXXXX";
    int file = mkstemp(path);
    CHECK(file >= 0);
    CHECK_EQ(unlink(path), 0);
    CHECK_EQ(pt_pollfd_open(g.np, &pd, file, R, NULL), -EPERM);
    CHECK_EQ(close(file), 0);
    /* pd never became open, and nothing is left registered for it */
    CHECK_EQ(pt_pollfd_close(&pd), -EINVAL);
    /* wrong state: a pd that is open, on its own fd or another */
    CHECK_EQ(pt_pollfd_open(g.np, &g.pd, g.fds[0], R, NULL), -EBUSY);
    CHECK_EQ(pt_pollfd_open(g.np, &g.pd, fds[0], W, NULL), -EBUSY);
    check_npgood_unchanged(&g);
    /* a closed pd a refused open leaves closed */
    CHECK_EQ(pt_pollfd_open(g.np, &pd, fds[0], R, NULL), 0);
    CHECK_EQ(pt_pollfd_close(&pd), 0);
    CHECK_EQ(pt_pollfd_open(g.np, &pd, g.fds[0], R, NULL), -EEXIST);
    CHECK_EQ(pt_pollfd_close(&pd), -EBADF);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), -EBADF);
    /* not errors: interest 0, and a closed pd opened again */
    CHECK_EQ(pt_pollfd_open(g.np, &pd, fds[0], 0, NULL), 0);
    CHECK_EQ(pt_pollfd_close(&pd), 0);
    kind_pipe.close(fds);
    check_npgood_unchanged(&g);
    /* only the good pd was ever left open: closing it frees the netpoll */
    free_npgood(&g);
}

static void row_pt_pollfd_arm(void)
{
    struct npgood g;
    make_npgood(&g);
    struct bad_pds b;
    make_bad_pds(&b, g.np);
    for (int i = 0; i < N_BAD_PDS; i++) {
        CHECK_EQ(pt_pollfd_arm(bad_pd(&b, i), R), bad_pd_err(i));
        CHECK_EQ(pt_pollfd_arm(bad_pd(&b, i), 0x10u), bad_pd_err(i));
    }
    CHECK_EQ(atomic_load(&b.zero.reg.magic), 0); /* not opened by a call on it */
    CHECK_EQ(pt_pollfd_arm(&g.pd, PT_POLL_ERR), -EINVAL);
    CHECK_EQ(pt_pollfd_arm(&g.pd, R | 0x10u), -EINVAL);
    CHECK_EQ(pt_pollfd_arm(&g.pd, ~0u), -EINVAL);
    check_npgood_unchanged(&g);
    /* not an error: interest 0, then back */
    CHECK_EQ(pt_pollfd_arm(&g.pd, 0), 0);
    CHECK_EQ(pt_pollfd_arm(&g.pd, R), 0);
    poll_once(g.np, &g.pd); /* a re-arm reports what is ready now: nothing */
    check_npgood_unchanged(&g);
    free_npgood(&g);
}

static void row_pt_pollfd_prepare(void)
{
    struct npgood g;
    make_npgood(&g);
    struct bad_pds b;
    make_bad_pds(&b, g.np);
    for (int i = 0; i < N_BAD_PDS; i++)
        CHECK_EQ(pt_pollfd_prepare(bad_pd(&b, i), R), bad_pd_err(i));
    /* a ready bit, which no refused call may consume */
    kind_pipe.put(g.fds[1]);
    CHECK(wait_event(g.np, &g.pd, R, 30 * SEC) & R);
    CHECK_EQ(atomic_load(&g.pd.rg), PD_READY);
    static const unsigned bad_modes[] = {0, PT_POLL_ERR, PT_POLL_HUP, R | 0x8u, ~0u};
    for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++)
        CHECK_EQ(pt_pollfd_prepare(&g.pd, bad_modes[i]), -EINVAL);
    CHECK_EQ(atomic_load(&g.pd.rg), PD_READY);
    /* wrong state: the side's deadline passed (the ready bit is kept) */
    CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R, 1, NULL), 0);
    CHECK_EQ(pt_pollfd_prepare(&g.pd, R), -ETIMEDOUT);
    CHECK_EQ(pt_pollfd_prepare(&g.pd, R | W), -ETIMEDOUT);
    CHECK_EQ(atomic_load(&g.pd.rg), PD_READY);
    CHECK_EQ(pt_pollfd_prepare(&g.pd, W), 0); /* the other side has none */
    CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R, g.rd, NULL), 0);
    CHECK_EQ(pt_pollfd_prepare(&g.pd, R), 0); /* consumes it */
    CHECK_EQ(atomic_load(&g.pd.rg), PD_NIL);
    kind_pipe.drain(g.fds[0]);
    check_npgood_unchanged(&g);
    free_npgood(&g);
}

struct side_waiter {
    pt_pollfd *pd;
    pthread_t th;
    int r;
};

static void *side_waiter_main(void *arg)
{
    struct side_waiter *w = arg;
    w->r = pt_pollfd_wait(w->pd, R);
    return NULL;
}

static void row_pt_pollfd_wait(void)
{
    struct npgood g;
    make_npgood(&g);
    struct bad_pds b;
    make_bad_pds(&b, g.np);
    for (int i = 0; i < N_BAD_PDS; i++)
        CHECK_EQ(pt_pollfd_wait(bad_pd(&b, i), R), bad_pd_err(i));
    static const unsigned bad_modes[] = {0, R | W, PT_POLL_ERR, R | 0x10u, ~0u};
    for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++)
        CHECK_EQ(pt_pollfd_wait(&g.pd, bad_modes[i]), -EINVAL);
    CHECK_EQ(pt_pollfd_wait(&g.pd, W), -EINVAL); /* not in the interest */
    /* wrong state: the deadline passed */
    CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R, 1, NULL), 0);
    CHECK_EQ(pt_pollfd_wait(&g.pd, R), -ETIMEDOUT);
    CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R, g.rd, NULL), 0);
    check_npgood_unchanged(&g); /* (its ready bit consumed again) */
    /* wrong state: another thread waits on the side */
    struct side_waiter w = {&g.pd, 0, 1};
    CHECK_EQ(pthread_create(&w.th, NULL, side_waiter_main, &w), 0);
    for (pt_nanos end = pt_nanotime() + 30 * SEC; atomic_load(&g.pd.rg) != PD_WAIT;) {
        CHECK(pt_nanotime() < end);
        sched_yield();
    }
    CHECK_EQ(pt_pollfd_wait(&g.pd, R), -EBUSY);
    CHECK_EQ(atomic_load(&g.pd.rg), PD_WAIT); /* the waiter is still there */
    /* and it gets the readiness */
    kind_pipe.put(g.fds[1]);
    CHECK(wait_event(g.np, &g.pd, R, 30 * SEC) & R);
    CHECK_EQ(pthread_join(w.th, NULL), 0);
    CHECK_EQ(w.r, 0);
    kind_pipe.drain(g.fds[0]);
    check_npgood_unchanged(&g);
    free_npgood(&g);
}

static void row_pt_pollfd_set_deadline(void)
{
    struct npgood g;
    make_npgood(&g);
    pt_timers *own = pt_netpoll_timers(g.np);
    struct bad_pds b;
    make_bad_pds(&b, g.np);
    pt_nanos later = pt_nanotime() + 7200 * SEC;
    for (int i = 0; i < N_BAD_PDS; i++)
        CHECK_EQ(pt_pollfd_set_deadline(bad_pd(&b, i), R, later, NULL), bad_pd_err(i));
    uintptr_t rseq = g.pd.rseq, wseq = g.pd.wseq;
    CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R, -1, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R | W, INT64_MIN, NULL), -EINVAL);
    static const unsigned bad_modes[] = {0, PT_POLL_ERR, R | 0x10u, ~0u};
    for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++)
        CHECK_EQ(pt_pollfd_set_deadline(&g.pd, bad_modes[i], later, NULL), -EINVAL);
    /* heaps pt_timer_modify refuses: never initialised (zeroed, garbage),
     * destroyed */
    pt_timers zero, garbage, destroyed;
    memset(&zero, 0, sizeof zero);
    memset(&garbage, 0xa5, sizeof garbage);
    CHECK_EQ(pt_timers_init(&destroyed, NULL, NULL), 0);
    CHECK_EQ(pt_timers_destroy(&destroyed), 0);
    pt_timers *bad_heaps[] = {&zero, &garbage, &destroyed};
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R, later, bad_heaps[i]), -EINVAL);
        CHECK_EQ(pt_pollfd_set_deadline(&g.pd, W, later, bad_heaps[i]), -EINVAL);
        CHECK_EQ(pt_pollfd_set_deadline(&g.pd, R | W, later, bad_heaps[i]), -EINVAL);
    }
    CHECK_EQ(g.pd.rseq, rseq);
    CHECK_EQ(g.pd.wseq, wseq);
    CHECK_EQ(pt_timers_len(own), 1);
    check_npgood_unchanged(&g);
    /* a netpoll whose default heap is a bad one: its deadlines are refused */
    pt_netpoll *np2 = np_new(NP_EPOLL, &zero);
    int fds[2];
    kind_pipe.open(fds);
    pt_pollfd pd;
    CHECK_EQ(pt_pollfd_open(np2, &pd, fds[0], R, NULL), 0);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, later, NULL), -EINVAL);
    CHECK_EQ(pd.rd, 0);
    CHECK_EQ(pd.rseq, 0);
    pt_timers ts;
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, later, &ts), 0); /* a good one named */
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, 0, NULL), 0);    /* 0 clears: no heap needed */
    CHECK_EQ(pt_pollfd_close(&pd), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    kind_pipe.close(fds);
    np_free(np2);
    check_npgood_unchanged(&g);
    free_npgood(&g);
}

static void row_pt_pollfd_close(void)
{
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    struct bad_pds b;
    make_bad_pds(&b, np);
    for (int i = 0; i < N_BAD_PDS; i++)
        CHECK_EQ(pt_pollfd_close(bad_pd(&b, i)), bad_pd_err(i));
    CHECK_EQ(atomic_load(&b.closed.reg.magic), PT__POLLFD_CLOSED);
    np_free(np); /* nothing registered was left */
}

/* ---- bare registrations ----------------------------------------------------- */

struct bad_regs {
    pt_pollreg zero, garbage, closed;
};

static void make_bad_regs(struct bad_regs *b, pt_netpoll *np)
{
    memset(&b->zero, 0, sizeof b->zero);
    memset(&b->garbage, 0xa5, sizeof b->garbage);
    int fds[2];
    kind_pipe.open(fds);
    CHECK_EQ(pt_pollreg_open(np, &b->closed, fds[0], R, NULL), 0);
    CHECK_EQ(pt_pollreg_close(&b->closed), 0);
    kind_pipe.close(fds);
}

static pt_pollreg *bad_reg(struct bad_regs *b, int i)
{
    pt_pollreg *p[N_BAD_PDS] = {NULL, &b->zero, &b->garbage, &b->closed};
    return p[i];
}

static void row_pt_pollreg_open(void)
{
    struct npgood g;
    make_npgood(&g);
    pt_pollreg r;
    memset(&r, 0, sizeof r);
    int fds[2];
    kind_pipe.open(fds);
    CHECK_EQ(pt_pollreg_open(NULL, &r, fds[0], R, NULL), -EINVAL);
    CHECK_EQ(pt_pollreg_open(g.np, NULL, fds[0], R, NULL), -EINVAL);
    static const unsigned bad_events[] = {PT_POLL_ERR, PT_POLL_HUP, R | 0x10u, ~0u};
    for (size_t i = 0; i < sizeof bad_events / sizeof bad_events[0]; i++)
        CHECK_EQ(pt_pollreg_open(g.np, &r, fds[0], bad_events[i], NULL), -EINVAL);
    int gone[2];
    kind_pipe.open(gone);
    kind_pipe.close(gone);
    CHECK_EQ(pt_pollreg_open(g.np, &r, -1, R, NULL), -EBADF);
    CHECK_EQ(pt_pollreg_open(g.np, &r, INT_MIN, R, NULL), -EBADF);
    CHECK_EQ(pt_pollreg_open(g.np, &r, gone[0], R, NULL), -EBADF);
    /* an fd registered already, by the good pd (a pt_pollfd's fd counts) */
    CHECK_EQ(pt_pollreg_open(g.np, &r, g.fds[0], R | W, NULL), -EEXIST);
    char path[] = "/tmp/pt_badinput_XXXXXX";
    int file = mkstemp(path);
    CHECK(file >= 0);
    CHECK_EQ(unlink(path), 0);
    CHECK_EQ(pt_pollreg_open(g.np, &r, file, R, NULL), -EPERM);
    CHECK_EQ(close(file), 0);
    CHECK_EQ(pt_pollreg_close(&r), -EINVAL); /* never became open */
    /* wrong state: an open registration, and the good pd's own */
    CHECK_EQ(pt_pollreg_open(g.np, &r, fds[0], R, NULL), 0);
    CHECK_EQ(pt_pollreg_open(g.np, &r, fds[0], R, NULL), -EBUSY);
    CHECK_EQ(pt_pollreg_open(g.np, &g.pd.reg, fds[0], W, NULL), -EBUSY);
    CHECK_EQ(pt_pollreg_close(&r), 0);
    /* a closed registration a refused open leaves closed */
    CHECK_EQ(pt_pollreg_open(g.np, &r, g.fds[0], R, NULL), -EEXIST);
    CHECK_EQ(pt_pollreg_close(&r), -EBADF);
    check_npgood_unchanged(&g);
    /* not errors: interest 0, and a closed one opened again */
    CHECK_EQ(pt_pollreg_open(g.np, &r, fds[0], 0, NULL), 0);
    CHECK_EQ(pt_pollreg_close(&r), 0);
    kind_pipe.close(fds);
    check_npgood_unchanged(&g);
    free_npgood(&g);
}

static void row_pt_pollreg_arm(void)
{
    struct npgood g;
    make_npgood(&g);
    struct bad_regs b;
    make_bad_regs(&b, g.np);
    for (int i = 0; i < N_BAD_PDS; i++) {
        CHECK_EQ(pt_pollreg_arm(bad_reg(&b, i), R), bad_pd_err(i));
        CHECK_EQ(pt_pollreg_arm(bad_reg(&b, i), 0x10u), bad_pd_err(i));
    }
    CHECK_EQ(atomic_load(&b.zero.magic), 0); /* not opened by a call on it */
    CHECK_EQ(pt_pollreg_arm(&g.pd.reg, PT_POLL_ERR), -EINVAL);
    CHECK_EQ(pt_pollreg_arm(&g.pd.reg, R | 0x10u), -EINVAL);
    int fds[2];
    kind_pipe.open(fds);
    pt_pollreg r;
    memset(&r, 0, sizeof r);
    CHECK_EQ(pt_pollreg_open(g.np, &r, fds[0], R, NULL), 0);
    CHECK_EQ(pt_pollreg_arm(&r, ~0u), -EINVAL);
    CHECK_EQ(atomic_load(&r.events), R);
    CHECK_EQ(pt_pollreg_close(&r), 0);
    CHECK_EQ(pt_pollreg_arm(&r, R), -EBADF);
    kind_pipe.close(fds);
    check_npgood_unchanged(&g);
    free_npgood(&g);
}

static void row_pt_pollreg_close(void)
{
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    struct bad_regs b;
    make_bad_regs(&b, np);
    for (int i = 0; i < N_BAD_PDS; i++)
        CHECK_EQ(pt_pollreg_close(bad_reg(&b, i)), bad_pd_err(i));
    CHECK_EQ(atomic_load(&b.closed.magic), PT__POLLFD_CLOSED);
    np_free(np); /* nothing registered was left */
}

static void row_pt_pollreg_forget(void)
{
    pt_netpoll *np = np_new(NP_EPOLL, NULL);
    struct bad_regs b;
    make_bad_regs(&b, np);
    for (int i = 0; i < N_BAD_PDS; i++)
        CHECK_EQ(pt_pollreg_forget(bad_reg(&b, i)), bad_pd_err(i));
    CHECK_EQ(atomic_load(&b.closed.magic), PT__POLLFD_CLOSED);
    np_free(np); /* nothing registered was left */
}

static const struct badinput_row netpoll_rows[] = {
    {"pt_netpoll_create", row_pt_netpoll_create},
    {"pt_netpoll_destroy", row_pt_netpoll_destroy},
    {"pt_netpoll_backend", row_pt_netpoll_backend},
    {"pt_netpoll_fallback", row_pt_netpoll_fallback},
    {"pt_netpoll_name", row_pt_netpoll_name},
    {"pt_netpoll_timers", row_pt_netpoll_timers},
    {"pt_netpoll_wait", row_pt_netpoll_wait},
    {"pt_netpoll_break", row_pt_netpoll_break},
    {"pt_netpoll_wake", row_pt_netpoll_wake},
    {"pt_netpoll_read_stats", row_pt_netpoll_read_stats},
    {"pt_pollreg_open", row_pt_pollreg_open},
    {"pt_pollreg_arm", row_pt_pollreg_arm},
    {"pt_pollreg_close", row_pt_pollreg_close},
    {"pt_pollreg_forget", row_pt_pollreg_forget},
    {"pt_pollfd_open", row_pt_pollfd_open},
    {"pt_pollfd_arm", row_pt_pollfd_arm},
    {"pt_pollfd_prepare", row_pt_pollfd_prepare},
    {"pt_pollfd_wait", row_pt_pollfd_wait},
    {"pt_pollfd_set_deadline", row_pt_pollfd_set_deadline},
    {"pt_pollfd_close", row_pt_pollfd_close},
};

static const struct badinput_table netpoll_table[] = {BADINPUT_TABLE(netpoll_rows)};

void test_every_netpoll_call_rejects_each_bad_argument_class(void)
{
    watchdog(120); /* a lost wake-up fails here, not at ctest's timeout */
    pt_badinput_run(netpoll_table, 1);
}

void test_bad_input_table_has_a_row_for_every_netpoll_h_function(void)
{
    int n = pt_badinput_check_header(PT_SOURCE_DIR "/include/ptimer/netpoll.h", netpoll_table, 1);
    CHECK(n >= 19); /* the parse found the API, not nothing */
}
