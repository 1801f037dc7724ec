#define _GNU_SOURCE /* pipe2, accept4 */
/* Readiness on real descriptors -- pipes, eventfds, socketpairs, TCP on
 * 127.0.0.1 -- on each backend: registration reports the current state
 * once, each new readiness is reported once (edge-triggered), ready bits
 * are consumed by waiters, and interest can change. */
#include <sys/socket.h>

#include "util.h"

#define R PT_POLL_READ
#define W PT_POLL_WRITE

/* The same script for every kind of fd. */
static void readiness(const struct fdkind *k, enum np_kind b)
{
    watchdog(120);
    int before = count_fds();
    pt_netpoll *np = np_new(b, NULL);
    int fds[2];
    k->open(fds);
    bool same = fds[0] == fds[1];
    pt_pollfd pr, pw;
    pt_pollfd *r = &pr, *w = same ? &pr : &pw;
    if (same) {
        CHECK_EQ(pt_pollfd_open(np, r, fds[0], R | W, r), 0);
    } else {
        CHECK_EQ(pt_pollfd_open(np, r, fds[0], R, r), 0);
        CHECK_EQ(pt_pollfd_open(np, w, fds[1], W, w), 0);
    }

    /* Registration reports the state once: writable, not readable. */
    CHECK(wait_event(np, w, W, 5 * SEC) & W);
    CHECK_EQ(poll_once(np, r) & R, 0);
    CHECK_EQ(poll_once(np, w), 0); /* reported once, not again */

    /* Data: one read edge, reported once; the waiter takes the ready bit. */
    k->put(fds[1]);
    CHECK(wait_event(np, r, R, 5 * SEC) & R);
    CHECK_EQ(poll_once(np, r) & R, 0);
    CHECK_EQ(pt_pollfd_wait(r, R), 0); /* ready bit set: returns at once */
    CHECK_EQ(atomic_load(&r->rg), 0);  /* and consumed */
    k->drain(fds[0]);

    /* Full: no write readiness; room again: one write edge. */
    k->fill(fds[1]);
    poll_once(np, w); /* whatever the fill itself woke */
    CHECK_EQ(pt_pollfd_prepare(w, W), 0);
    /* (TCP: acks arriving after the fill may open room again, and that
     * edge is then rightly reported.) */
    if (k != &kind_tcp)
        CHECK_EQ(poll_once(np, w) & W, 0);
    unsigned got = 0;
    for (pt_nanos end = pt_nanotime() + 5 * SEC; !(got & W) && pt_nanotime() < end;) {
        k->drain(fds[0]); /* TCP may need a few rounds to ack it all */
        got = wait_event(np, w, W, 50 * MS);
    }
    CHECK(got & W);
    CHECK_EQ(pt_pollfd_wait(w, W), 0);

    CHECK_EQ(pt_pollfd_close(r), 0);
    if (!same)
        CHECK_EQ(pt_pollfd_close(w), 0);
    k->close(fds);
    np_free(np);
    CHECK_EQ(count_fds(), before);
}

PT_TEST_BOTH_BACKENDS_WITH(pipe_reports_read_and_write_edges, readiness, &kind_pipe)
PT_TEST_BOTH_BACKENDS_WITH(eventfd_reports_read_and_write_edges, readiness, &kind_eventfd)
PT_TEST_BOTH_BACKENDS_WITH(socketpair_reports_read_and_write_edges, readiness, &kind_socketpair)
PT_TEST_BOTH_BACKENDS_WITH(tcp_reports_read_and_write_edges, readiness, &kind_tcp)

/* A listener is readable when a connection waits; a peer's shutdown makes
 * the other side readable (EPOLLRDHUP, and read() returns 0). */
static void tcp_accept_and_shutdown(enum np_kind b)
{
    watchdog(60);
    pt_netpoll *np = np_new(b, NULL);
    struct sockaddr_in a;
    int l = listen_loopback(SOCK_NONBLOCK | SOCK_CLOEXEC, 0, &a);
    pt_pollfd pl, ps;
    CHECK_EQ(pt_pollfd_open(np, &pl, l, R, NULL), 0);
    CHECK_EQ(poll_once(np, &pl), 0);

    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(c >= 0);
    CHECK_EQ(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    CHECK(wait_event(np, &pl, R, 5 * SEC) & R);
    int s = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    CHECK(s >= 0);
    CHECK_EQ(pt_pollfd_open(np, &ps, s, R, NULL), 0);
    CHECK_EQ(poll_once(np, &ps) & R, 0);

    CHECK_EQ(shutdown(c, SHUT_WR), 0);
    CHECK(wait_event(np, &ps, R, 5 * SEC) & R);
    char buf[8];
    CHECK_EQ(read(s, buf, sizeof buf), 0);

    CHECK_EQ(pt_pollfd_close(&ps), 0);
    CHECK_EQ(pt_pollfd_close(&pl), 0);
    close(s);
    close(c);
    close(l);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(tcp_listener_and_peer_shutdown_report_read, tcp_accept_and_shutdown)

/* Go's read loop on two threads: a reader blocked in pt_pollfd_wait is
 * woken by the poller thread when data arrives, a writer by room. */
struct io_waiter {
    pt_pollfd *pd;
    int fd;
    unsigned mode;
    int result;
    pthread_t th;
};

/* Go's loop: prepare, try, wait on EAGAIN, try again. A wake with the fd
 * not really ready (an older edge delivered late) just goes round again. */
static void *io_wait_main(void *arg)
{
    struct io_waiter *w = arg;
    char buf[1];
    for (;;) {
        CHECK_EQ(pt_pollfd_prepare(w->pd, w->mode), 0);
        ssize_t r = w->mode == R ? read(w->fd, buf, 1) : write(w->fd, "y", 1);
        if (r == 1) {
            w->result = 0;
            return NULL;
        }
        CHECK(r < 0 && errno == EAGAIN);
        if ((w->result = pt_pollfd_wait(w->pd, w->mode)) != 0)
            return NULL;
    }
}

static void wait_until_blocked(_Atomic uint32_t *side)
{
    pt_nanos end = pt_nanotime() + 10 * SEC;
    while (atomic_load(side) != 2 /* WAIT */) {
        CHECK(pt_nanotime() < end);
        sched_yield();
    }
}

/* Starts an io_waiter on pd's `mode` side of fd, lets it block, runs
 * wake(wake_fd) and checks that the waiter then got through. */
static void wake_io_waiter(pt_pollfd *pd, int fd, unsigned mode, void (*wake)(int), int wake_fd)
{
    struct io_waiter w = {pd, fd, mode, 1, 0};
    CHECK_EQ(pthread_create(&w.th, NULL, io_wait_main, &w), 0);
    wait_until_blocked(mode == R ? &pd->rg : &pd->wg);
    wake(wake_fd);
    CHECK_EQ(pthread_join(w.th, NULL), 0);
    CHECK_EQ(w.result, 0);
}

static void waiter_wakes(enum np_kind b)
{
    watchdog(60);
    struct poller p;
    int fds[2];
    pt_pollfd pr, pw;
    pt_netpoll *np = fixture_open(b, &p, &kind_socketpair, fds, &pr, R);
    CHECK_EQ(pt_pollfd_open(np, &pw, fds[1], W, NULL), 0);

    wake_io_waiter(&pr, fds[0], R, kind_socketpair.put, fds[1]);
    kind_socketpair.drain(fds[0]);

    kind_socketpair.fill(fds[1]);
    wake_io_waiter(&pw, fds[1], W, kind_socketpair.drain, fds[0]);

    fixture_stop(&p, &pr);
    CHECK_EQ(pt_pollfd_close(&pw), 0);
    fixture_free(np, &kind_socketpair, fds);
}

PT_TEST_BOTH_BACKENDS(waiter_in_pollfd_wait_wakes_on_readiness, waiter_wakes)

/* Interest 0 reports no readiness; arming reports the current state once
 * more; disarming stops the reports. */
static void arm_interest(enum np_kind b)
{
    watchdog(60);
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(b, NULL, &kind_socketpair, fds, &pd, 0);
    kind_socketpair.put(fds[1]);
    CHECK_EQ(poll_once(np, &pd), 0);
    CHECK_EQ(pt_pollfd_wait(&pd, R), -EINVAL); /* not in the interest */

    CHECK_EQ(pt_pollfd_arm(&pd, R), 0);
    CHECK_EQ(wait_event(np, &pd, R, 5 * SEC) & (R | W), R);
    CHECK_EQ(pt_pollfd_arm(&pd, R | W), 0);
    CHECK_EQ(wait_event(np, &pd, R | W, 5 * SEC) & (R | W), R | W);
    CHECK_EQ(poll_once(np, &pd), 0);

    CHECK_EQ(pt_pollfd_arm(&pd, 0), 0);
    kind_socketpair.put(fds[1]);
    CHECK_EQ(poll_once(np, &pd), 0);
    CHECK_EQ(pt_pollfd_arm(&pd, R), 0); /* still readable: reported */
    CHECK(wait_event(np, &pd, R, 5 * SEC) & R);

    fixture_close(np, NULL, &kind_socketpair, fds, &pd);
}

PT_TEST_BOTH_BACKENDS(arm_changes_interest_and_reports_current_readiness, arm_interest)

/* The ready bit survives until a waiter or prepare takes it. */
static void ready_bit(enum np_kind b)
{
    watchdog(60);
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(b, NULL, &kind_pipe, fds, &pd, R);
    kind_pipe.put(fds[1]);
    CHECK(wait_event(np, &pd, R, 5 * SEC) & R);
    CHECK_EQ(atomic_load(&pd.rg), 1); /* READY */
    CHECK_EQ(pt_pollfd_prepare(&pd, R), 0);
    CHECK_EQ(atomic_load(&pd.rg), 0); /* NIL: the next wait would block */
    kind_pipe.put(fds[1]);            /* a new edge sets it again */
    CHECK(wait_event(np, &pd, R, 5 * SEC) & R);
    CHECK_EQ(pt_pollfd_wait(&pd, R), 0);
    CHECK_EQ(atomic_load(&pd.rg), 0);
    fixture_close(np, NULL, &kind_pipe, fds, &pd);
}

PT_TEST_BOTH_BACKENDS(ready_bit_is_consumed_by_one_wait_or_by_prepare, ready_bit)

/* Descriptors closed and freed while events for them are in flight: the
 * poller must never touch a closed pd (ASan checks the memory). */
static void close_under_events(enum np_kind b)
{
    const int rounds = 300;
    watchdog(300);
    pt_netpoll *np = np_new(b, NULL);
    struct poller p;
    poller_start(&p, np);
    int before = count_fds();
    for (int round = 0; round < rounds; round++) {
        struct churn c;
        atomic_init(&c.stop, 0);
        pt_pollfd *pds[16];
        for (int i = 0; i < 16; i++) {
            kind_pipe.open(c.fds[i]);
            pds[i] = malloc(sizeof *pds[i]);
            CHECK(pds[i]);
            CHECK_EQ(pt_pollfd_open(np, pds[i], c.fds[i][0], R, NULL), 0);
            CHECK_EQ(pt_pollfd_set_deadline(pds[i], R, pt_nanotime() + (i % 4) * 100000, NULL), 0);
        }
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, churn_writer, &c), 0);
        for (int i = 0; i < 16; i++) {
            kind_pipe.drain(c.fds[i][0]);
            CHECK_EQ(pt_pollfd_close(pds[i]), 0);
            free(pds[i]);
        }
        atomic_store(&c.stop, 1);
        CHECK_EQ(pthread_join(th, NULL), 0);
        for (int i = 0; i < 16; i++)
            kind_pipe.close(c.fds[i]);
    }
    poller_stop(&p);
    CHECK_EQ(count_fds(), before);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(close_and_free_while_events_arrive_is_safe, close_under_events)

/* io_uring ties a poll to the thread that armed it, and cancels it when
 * that thread has exited: descriptors registered (and a netpoll created)
 * by threads that are gone must go on reporting. */
struct opener {
    pt_netpoll *np;
    pt_pollfd *pd;
    int fd;
};

static void *open_and_exit(void *arg)
{
    struct opener *o = arg;
    if (!o->np)
        o->np = np_new(NP_URING, NULL); /* skips the test if refused */
    else
        CHECK_EQ(pt_pollfd_open(o->np, o->pd, o->fd, R, NULL), 0);
    return NULL;
}

static void exited_opener(enum np_kind k)
{
    watchdog(60);
    struct opener o = {NULL, NULL, -1};
    pthread_t th;
    if (k == NP_URING) {
        CHECK_EQ(pthread_create(&th, NULL, open_and_exit, &o), 0);
        CHECK_EQ(pthread_join(th, NULL), 0);
    } else {
        o.np = np_new(k, NULL);
    }
    pt_netpoll *np = o.np;
    int fds[2];
    kind_pipe.open(fds);
    pt_pollfd pd;
    o.pd = &pd;
    o.fd = fds[0];
    CHECK_EQ(pthread_create(&th, NULL, open_and_exit, &o), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    pt_poll_event ev[4];
    for (int i = 0; i < 3; i++) {
        kind_pipe.put(fds[1]);
        CHECK(wait_event(np, &pd, R, 5 * SEC) & R);
        kind_pipe.drain(fds[0]);
        CHECK_EQ(pt_netpoll_break(np), 0); /* the creator's break poll, too */
        CHECK_EQ(pt_netpoll_wait(np, 10 * SEC, ev, 4), 0);
    }
    fixture_close(np, NULL, &kind_pipe, fds, &pd);
}

PT_TEST_BOTH_BACKENDS(descriptors_registered_by_exited_threads_keep_reporting, exited_opener)
