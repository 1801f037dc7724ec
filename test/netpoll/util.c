#define _GNU_SOURCE /* pipe2, accept4 */
#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>

pt_netpoll *np_new(enum np_kind kind, pt_timers *ts)
{
    pt_netpoll_options o = {PT_NETPOLL_EPOLL, 0, ts};
    if (kind == NP_EPOLL_TIMERFD)
        o.flags = PT_NETPOLL_TIMERFD;
    if (kind == NP_URING)
        o.backend = PT_NETPOLL_URING;
    pt_netpoll *np = NULL;
    CHECK_EQ(pt_netpoll_create(&np, &o), 0);
    if (kind == NP_URING && pt_netpoll_backend(np) != PT_NETPOLL_URING) {
        printf("SKIP: io_uring is not available here (not built, or refused by the kernel "
               "or a sandbox); the netpoll fell back to %s\n",
               pt_netpoll_name(np));
        fflush(stdout);
        pt_netpoll_destroy(np);
        exit(SKIP_CODE);
    }
    const char *want = kind == NP_EPOLL_TIMERFD ? "epoll+timerfd"
                       : kind == NP_URING       ? "io_uring+IORING_OP_TIMEOUT"
                                                : "epoll+epoll_pwait2";
    if (strcmp(pt_netpoll_name(np), want) != 0)
        printf("note: asked for %s, running %s\n", want, pt_netpoll_name(np));
    return np;
}

void np_free(pt_netpoll *np)
{
    CHECK_EQ(pt_netpoll_destroy(np), 0);
}

void watchdog(unsigned seconds)
{
    alarm(seconds);
}

int gettid_(void)
{
    return (int)syscall(SYS_gettid);
}

static void *poller_main(void *arg)
{
    struct poller *p = arg;
    pt_poll_event ev[64];
    atomic_store(&p->tid, gettid_());
    while (!atomic_load(&p->stop)) {
        int n = pt_netpoll_wait(p->np, -1, ev, 64);
        CHECK(n >= 0);
        atomic_fetch_add(&p->events, n);
    }
    return NULL;
}

void poller_start(struct poller *p, pt_netpoll *np)
{
    p->np = np;
    atomic_init(&p->stop, 0);
    atomic_init(&p->events, 0);
    atomic_init(&p->tid, 0);
    CHECK_EQ(pthread_create(&p->th, NULL, poller_main, p), 0);
    while (!atomic_load(&p->tid))
        sched_yield();
}

void poller_stop(struct poller *p)
{
    atomic_store(&p->stop, 1);
    CHECK_EQ(pt_netpoll_break(p->np), 0);
    CHECK_EQ(pthread_join(p->th, NULL), 0);
}

bool thread_sleeps(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    pt_nanos end = pt_nanotime() + 30 * SEC;
    while (pt_nanotime() < end) {
        FILE *f = fopen(path, "r");
        if (!f)
            return false;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')'); /* state follows "(comm) " */
        if (p && p[1] == ' ' && p[2] == 'S')
            return true;
        sched_yield();
    }
    return false;
}

unsigned poll_once(pt_netpoll *np, pt_pollfd *pd)
{
    pt_poll_event ev[64];
    int n = pt_netpoll_wait(np, 0, ev, 64);
    CHECK(n >= 0);
    unsigned bits = 0;
    for (int i = 0; i < n; i++)
        if (ev[i].pd == pd) {
            CHECK(ev[i].fd == pd->reg.fd);
            bits |= ev[i].events;
        }
    return bits;
}

unsigned wait_event(pt_netpoll *np, pt_pollfd *pd, unsigned want, pt_nanos timeout)
{
    pt_poll_event ev[64];
    pt_nanos end = pt_nanotime() + timeout;
    unsigned seen = 0;
    for (pt_nanos now = pt_nanotime(); now < end; now = pt_nanotime()) {
        int n = pt_netpoll_wait(np, end - now, ev, 64);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++)
            if (ev[i].pd == pd)
                seen |= ev[i].events;
        if ((seen & want) == want)
            return seen;
    }
    return 0;
}

int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

int listen_loopback(int flags, int rcvbuf, struct sockaddr_in *a)
{
    int l = socket(AF_INET, SOCK_STREAM | flags, 0);
    CHECK(l >= 0);
    if (rcvbuf)
        CHECK_EQ(setsockopt(l, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *a;
    CHECK_EQ(bind(l, (struct sockaddr *)a, sizeof *a), 0);
    CHECK_EQ(listen(l, 4), 0);
    CHECK_EQ(getsockname(l, (struct sockaddr *)a, &len), 0);
    return l;
}

/* ---- fixtures ------------------------------------------------------------ */

pt_netpoll *fixture_open(enum np_kind k, struct poller *p, const struct fdkind *fk, int fds[2],
                         pt_pollfd *pd, unsigned events)
{
    pt_netpoll *np = np_new(k, NULL);
    if (p)
        poller_start(p, np);
    fk->open(fds);
    if (pd)
        CHECK_EQ(pt_pollfd_open(np, pd, fds[0], events, NULL), 0);
    return np;
}

void fixture_stop(struct poller *p, pt_pollfd *pd)
{
    if (p)
        poller_stop(p);
    if (pd)
        CHECK_EQ(pt_pollfd_close(pd), 0);
}

void fixture_free(pt_netpoll *np, const struct fdkind *fk, int fds[2])
{
    fk->close(fds);
    np_free(np);
}

void fixture_close(pt_netpoll *np, struct poller *p, const struct fdkind *fk, int fds[2],
                   pt_pollfd *pd)
{
    fixture_stop(p, pd);
    fixture_free(np, fk, fds);
}

/* ---- fd kinds ------------------------------------------------------------ */

static void set_nonblock(int fd)
{
    CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

static void put_byte(int wfd)
{
    CHECK_EQ(write(wfd, "x", 1), 1);
}

static void drain_all(int rfd)
{
    char buf[65536];
    while (read(rfd, buf, sizeof buf) > 0)
        ;
    CHECK(errno == EAGAIN);
}

static void fill_all(int wfd)
{
    static char buf[65536];
    while (write(wfd, buf, sizeof buf) > 0)
        ;
    CHECK(errno == EAGAIN);
    while (write(wfd, buf, 1) > 0) /* the last few bytes */
        ;
    CHECK(errno == EAGAIN);
}

static void close_two(int fds[2])
{
    close(fds[0]);
    if (fds[1] != fds[0])
        close(fds[1]);
}

static void pipe_open(int fds[2])
{
    CHECK_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
}

const struct fdkind kind_pipe = {"pipe", pipe_open, put_byte, drain_all, fill_all, close_two};

static void efd_open(int fds[2])
{
    fds[0] = fds[1] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    CHECK(fds[0] >= 0);
}
static void efd_put(int fd)
{
    uint64_t one = 1;
    CHECK_EQ(write(fd, &one, 8), 8);
}
static void efd_drain(int fd)
{
    uint64_t v;
    while (read(fd, &v, 8) == 8)
        ;
    CHECK(errno == EAGAIN);
}
static void efd_fill(int fd)
{
    /* The counter at its maximum: not writable (and readable). */
    uint64_t v = 0xfffffffffffffffeull;
    efd_drain(fd);
    CHECK_EQ(write(fd, &v, 8), 8);
    CHECK(write(fd, &v, 8) < 0 && errno == EAGAIN);
}

const struct fdkind kind_eventfd = {"eventfd", efd_open, efd_put, efd_drain, efd_fill, close_two};

static void sp_open(int fds[2])
{
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
}

const struct fdkind kind_socketpair = {"socketpair", sp_open,  put_byte,
                                       drain_all,    fill_all, close_two};

/* TCP on 127.0.0.1: fds[0] the accepted server side, fds[1] the client.
 * Small buffers keep fill and drain short. */
static void tcp_open(int fds[2])
{
    int small = 4096;
    struct sockaddr_in a;
    int l = listen_loopback(SOCK_CLOEXEC, small, &a);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(c >= 0);
    CHECK_EQ(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    CHECK_EQ(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    CHECK(s >= 0);
    close(l);
    int one = 1;
    CHECK_EQ(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
    set_nonblock(s);
    set_nonblock(c);
    fds[0] = s;
    fds[1] = c;
}

const struct fdkind kind_tcp = {"tcp", tcp_open, put_byte, drain_all, fill_all, close_two};

void *churn_writer(void *arg)
{
    struct churn *c = arg;
    while (!atomic_load(&c->stop))
        for (int i = 0; i < 16; i++) {
            ssize_t r = write(c->fds[i][1], "z", 1);
            (void)r;
        }
    return NULL;
}
