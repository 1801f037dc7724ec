/* Helpers for the netpoll tests: a netpoll per backend (io_uring tests skip
 * with exit code 77 when the kernel or a sandbox refuses io_uring), a
 * poller thread, real fd pairs of each kind, and bounded waits. */
#ifndef PT_TEST_NETPOLL_UTIL_H
#define PT_TEST_NETPOLL_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "ptimer/netpoll.h"

#define MS 1000000LL
#define SEC 1000000000LL
#define SKIP_CODE PT_TEST_SKIP_CODE

/* Which netpoll a test runs on. */
enum np_kind { NP_EPOLL, NP_EPOLL_TIMERFD, NP_URING };

pt_netpoll *np_new(enum np_kind kind, pt_timers *ts);
void np_free(pt_netpoll *np);

/* Kills the test (SIGALRM) if it is still running after `seconds`: a lost
 * wake-up fails fast instead of hanging until ctest's timeout. */
void watchdog(unsigned seconds);

/* Runs pt_netpoll_wait(np, -1) in a loop on its own thread, counting the
 * events, until poller_stop. */
struct poller {
    pt_netpoll *np;
    pthread_t th;
    _Atomic int stop;
    _Atomic long events;
    _Atomic int tid;
};
void poller_start(struct poller *p, pt_netpoll *np);
void poller_stop(struct poller *p);

/* Spins (yielding) until thread `tid` sleeps in the kernel ('S' in
 * /proc/self/task/tid/stat), at most 30 s; false if it never did. */
bool thread_sleeps(int tid);
int gettid_(void);

/* Waits (bounded by timeout) until an event for pd containing all `want`
 * bits is reported; returns its bits, or 0 on timeout. */
unsigned wait_event(pt_netpoll *np, pt_pollfd *pd, unsigned want, pt_nanos timeout);
/* The bits reported for pd by one non-blocking wait (0 if none). */
unsigned poll_once(pt_netpoll *np, pt_pollfd *pd);

/* Open descriptors in this process. */
int count_fds(void);

/* A TCP socket (SOCK_STREAM | flags) listening on 127.0.0.1 at a port of
 * the kernel's choice, which *a is set to; its SO_RCVBUF is set to rcvbuf
 * first unless that is 0. */
int listen_loopback(int flags, int rcvbuf, struct sockaddr_in *a);

/* An fd kind: fds[0] is the side read from, fds[1] the side written to
 * (the same fd for an eventfd). */
struct fdkind {
    const char *name;
    void (*open)(int fds[2]);
    void (*put)(int wfd);   /* makes fds[0] readable */
    void (*drain)(int rfd); /* reads everything */
    void (*fill)(int wfd);  /* writes until fds[1] is not writable */
    void (*close)(int fds[2]);
};
extern const struct fdkind kind_pipe, kind_eventfd, kind_socketpair, kind_tcp;

/* The set-up most tests share, in this order: a netpoll of kind k, a
 * poller thread on it (if p), a pair of fds of kind fk, and (if pd) pd
 * registered on fds[0] for `events`. Returns the netpoll. */
pt_netpoll *fixture_open(enum np_kind k, struct poller *p, const struct fdkind *fk, int fds[2],
                         pt_pollfd *pd, unsigned events);
/* Its tear-down in two steps, so that a test can check between them:
 * fixture_stop stops the poller (if p) and closes pd (if pd);
 * fixture_free closes the fds and frees the netpoll. */
void fixture_stop(struct poller *p, pt_pollfd *pd);
void fixture_free(pt_netpoll *np, const struct fdkind *fk, int fds[2]);
/* Both steps. */
void fixture_close(pt_netpoll *np, struct poller *p, const struct fdkind *fk, int fds[2],
                   pt_pollfd *pd);

/* Defines test_<name>_on_epoll and test_<name>_on_uring, which run
 * fn(NP_EPOLL) and fn(NP_URING); the _WITH form runs fn(arg, NP_...). */
#define PT_TEST_BOTH_BACKENDS(name, fn)                                                        \
    void test_##name##_on_epoll(void) { fn(NP_EPOLL); }                                        \
    void test_##name##_on_uring(void) { fn(NP_URING); }
#define PT_TEST_BOTH_BACKENDS_WITH(name, fn, arg)                                              \
    void test_##name##_on_epoll(void) { fn(arg, NP_EPOLL); }                                   \
    void test_##name##_on_uring(void) { fn(arg, NP_URING); }

/* Sixteen pipes and a thread writing to all of them until stop: events
 * arriving while the test closes what they are for. */
struct churn {
    int fds[16][2];
    _Atomic int stop;
};
void *churn_writer(void *arg);

#endif
