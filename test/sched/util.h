/* Helpers shared by the scheduler tests: time units, a bounded wait (a
 * bound on waiting, never on speed), and a scheduler per test. */
#ifndef PT_TEST_SCHED_UTIL_H
#define PT_TEST_SCHED_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "modes.h"
#include "ptimer/sched.h"
#include "sched/sanitizer.h" /* PT__TSAN */

#define US ((pt_nanos)1000)
#define MS ((pt_nanos)1000000)
#define SEC (1000 * MS)
#define BOUND (30 * SEC) /* generous: a bound on waiting, never on speed */

#ifdef PT__SANITIZED
#define SCALE(n) ((n) / 10) /* sanitized builds run many times slower */
#else
#define SCALE(n) (n)
#endif

/* Gs alive at once in a herd. Under TSan each holds a fiber, a TSan
 * thread state that the runtime zeroes in fresh memory when it makes one
 * (its cost: bench/journal/2026-12-02-tsan-fibers.md), so a
 * TSan run keeps its herds small: the races are what it watches, and a
 * hundred Gs meet the same ones ten thousand would. */
#ifdef PT__TSAN
#define GS_AT_ONCE(n) ((n) / 100)
#else
#define GS_AT_ONCE(n) SCALE(n)
#endif

static inline pt_sched *make_sched(int procs, enum pt_timer_mode mode)
{
    pt_sched_options o = {.procs = procs, .timers = mode};
    pt_sched *s = NULL;
    CHECK_EQ(pt_sched_create(&s, &o), 0);
    CHECK(s != NULL);
    return s;
}

/* A TCP socket listening on 127.0.0.1 at a port the kernel picks, its
 * address in *addr; flags as socket(2)'s (SOCK_NONBLOCK). */
static inline int listen_loopback(int flags, struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
    CHECK(fd >= 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(fd, (struct sockaddr *)addr, sizeof *addr), 0);
    CHECK_EQ(listen(fd, 256), 0);
    socklen_t len = sizeof *addr;
    CHECK_EQ(getsockname(fd, (struct sockaddr *)addr, &len), 0);
    return fd;
}

/* A timer mode's name (modes.h lists the modes). */
static inline const char *mode_name(enum pt_timer_mode m)
{
    return m == PT_TIMERS_PER_P ? "per-P" : m == PT_TIMERS_LHEAP ? "lheap" : "timerthread";
}

/* Whether sleeps and timeouts of mode m run on the Ps' heaps. */
static inline bool per_p_heaps(enum pt_timer_mode m)
{
    return m != PT_TIMERS_TIMERTHREAD;
}

static inline void finish_sched(pt_sched *s)
{
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* A connected pair of Unix stream sockets, blocking until a G uses them. */
static inline void socket_pair(int sv[2])
{
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

/* Shrinks fd's send buffer to about 16 KiB, so that a write of a few
 * hundred KiB parks many times; the size the kernel granted. */
static inline int small_sndbuf(int fd)
{
    int buf = 16 * 1024, got;
    socklen_t len = sizeof got;
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf), 0);
    CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len), 0);
    return got;
}

/* 1 ms of the calling thread's sleep, outside any G. */
static inline void nap_ms(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

/* Waits (napping) until cond holds; aborts past BOUND. */
#define WAIT_FOR(cond)                                                                         \
    do {                                                                                       \
        pt_nanos deadline_ = pt_nanotime() + BOUND;                                            \
        while (!(cond)) {                                                                      \
            CHECK(pt_nanotime() < deadline_);                                                  \
            nap_ms();                                                                          \
        }                                                                                      \
    } while (0)

/* pt_sched_run(o, fn, arg) in a forked child, its stderr kept in err
 * (len bytes, NUL-terminated); returns its wait status. A child that
 * goes astray and hangs is stopped by an alarm after a minute. */
static inline int sched_run_in_child(const pt_sched_options *o, void (*fn)(void *), void *arg,
                                     char *err, size_t len)
{
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        alarm(60);
        pt_sched_run(o, fn, arg);
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(fds[0], err + n, len - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = 0;
    close(fds[0]);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

/* Runs fn as the one G of a 1-P scheduler in a fork()ed child, which
 * must abort with `message` in what it printed: the scheduler stopping
 * the process on misuse or corruption, for the reason the test names (a
 * CHECK of the test's own that fails first prints another line, and the
 * test fails). A sanitizer reports the abort and exits non-zero instead of
 * dying by the signal. Not under TSan, which forbids fork() with threads. */
static inline void expect_abort_in_child(void (*fn)(void *), const char *message)
{
    char err[4096];
    int status = sched_run_in_child(&(pt_sched_options){.procs = 1, .timers = PT_TIMERS_PER_P}, fn,
                                    NULL, err, sizeof err);
    if (!strstr(err, message)) {
        fprintf(stderr, "expected the child to abort saying \"%s\"; it said:\n%s\n", message, err);
        abort();
    }
#ifdef PT__SANITIZED
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
#else
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGABRT);
#endif
}

/* Writes n bytes of a block alloca'd by the caller, from its top down
 * every 512 bytes, as a deepening stack would: past the stack's end it
 * faults on the guard page instead of stepping over it. alloca, because
 * it is on the real stack in every build (ASan moves local arrays off it
 * when it looks for use after return). */
static inline void touch_down(volatile char *p, size_t n)
{
    p[n - 1] = 1;
    for (size_t i = n; i >= 512; i -= 512)
        p[i - 512] = 1;
    p[0] = 1;
}

/* A G computing in a preemptible region (in_region once inside) until
 * another G sets `stop`; gave_up: BOUND passed first (whatever should
 * have stopped it never ran). The other G counts in `slept`. */
struct region_case {
    atomic_int stop, in_region;
    int begin_rc;
    bool gave_up;
    long slept;
};

__attribute__((unused)) static void region_hog(void *arg)
{
    struct region_case *h = arg;
    h->begin_rc = pt_preemptible_begin();
    if (h->begin_rc != 0)
        return;
    atomic_store(&h->in_region, 1);
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (!atomic_load_explicit(&h->stop, memory_order_relaxed) && pt_nanotime() < give_up)
        ;
    h->gave_up = !atomic_load(&h->stop);
    CHECK_EQ(pt_preemptible_end(), 0);
}

static inline pt_sched_stats stats_of(pt_sched *s)
{
    pt_sched_stats st;
    pt_sched_read_stats(s, &st);
    return st;
}

/* The counters, on stdout (ctest -V shows them): what a run did. */
static inline void print_stats(const char *what, pt_sched *s)
{
    pt_sched_stats st = stats_of(s);
    printf("%s: gs_created %llu, steals %llu, timers run by owner %llu / stolen %llu / "
           "sysmon %llu, netpoll waits %llu breaks %llu, parks %llu, spinning_max %llu, "
           "sysmon wakeps %llu\n",
           what, (unsigned long long)st.gs_created, (unsigned long long)st.steals,
           (unsigned long long)st.timers_run_owner, (unsigned long long)st.timers_run_stolen,
           (unsigned long long)st.timers_run_sysmon, (unsigned long long)st.netpoll_waits,
           (unsigned long long)st.netpoll_breaks, (unsigned long long)st.parks,
           (unsigned long long)st.spinning_max, (unsigned long long)st.sysmon_wakeps);
}

#endif
