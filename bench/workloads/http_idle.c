/* The http-idle workload: a server holding many idle keep-alive
 * connections while wrk loads 100 more, and closing each idle one once
 * its idle timeout has passed -- on the scheduler, a per-P heap (or the
 * TimerThread) with that many pending timers that come due together.
 *
 * Each repetition starts a fresh server (http_server.c) with an idle
 * timeout of --idle-ms, opens N connections to it from here (at most a
 * thousand connecting at once, from source addresses 127.0.0.1 to .64 in
 * turn, each with ephemeral ports of its own toward the server's one
 * port), sends one request on each and reads its answer, which starts
 * the connection's idle time; then wrk loads 100
 * more connections for --http-secs while this process watches every idle
 * one for the server's close, through epoll. A close's lateness is when
 * it was seen less (its answer's arrival + the idle timeout). The
 * arrival is the kernel's receive timestamp of the answer's last bytes
 * (SO_TIMESTAMPNS), not when this loop got round to reading them, which
 * under a thousand connects at once is milliseconds later: the server's
 * timer started when it sent the answer, just before that, so a close is
 * never counted late for the delivery, and this loop's own delay only
 * ever adds to a lateness. That delay is kept small by running this loop
 * as SCHED_FIFO where it may (it sleeps in epoll between events, and
 * neither wrk nor the server inherits it): on two cores it otherwise
 * waits behind both for milliseconds, the figure then its and not the
 * server's (a note says when it could not). The arrival itself can trail
 * the server's write: loopback delivery is a softirq, which under this
 * load the kernel may defer to ksoftirqd, behind the busy threads, for a
 * few milliseconds. So a close seen more than EARLY_SLACK before its time
 * is early, and an error, as is a connection never closed, or one never
 * made.
 *
 * Figures: the lateness quantiles of every close, pooled over the
 * repetitions; resident bytes per idle connection (the server's growth
 * from start to every answer in, over N); the load's requests per second;
 * the server's CPU time over the whole repetition. */
#define _GNU_SOURCE
#include "http_idle.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "http_server.h"

#define MS ((pt_nanos)1000000)
#define SEC (1000 * MS)
#define IN_FLIGHT 1000 /* connections being made at once */
#define OPEN_BATCH 64  /* connects between two looks at the answers */
#define LOAD_CONNS 100
#define WRK_TAG UINT32_MAX /* the epoll tag of wrk's pipe */
#define EARLY_SLACK (5 * MS)

struct idle_conn {
    int fd;
    unsigned got;     /* bytes of the answer so far */
    pt_nanos answered; /* its last byte arrived (0: not yet) */
    bool sent, closed;
    char buf[496]; /* an answer is a head and 3 bytes */
};

/* Whether buf holds a whole answer: a head, and its Content-Length. */
static bool answer_done(const struct idle_conn *c)
{
    const char *end = memmem(c->buf, c->got, "\r\n\r\n", 4);
    if (!end)
        return false;
    const char *cl = memmem(c->buf, (size_t)(end - c->buf), "Content-Length:", 15);
    long body = cl ? strtol(cl + 15, NULL, 10) : 0;
    return c->got >= (unsigned)(end + 4 - c->buf) + (unsigned)body;
}

struct idle_run {
    struct idle_conn *c;
    int n, ep, port;
    pt_nanos real_to_mono; /* CLOCK_MONOTONIC - CLOCK_REALTIME, for the timestamps */
    int made, in_flight, answered, closed, failed, early;
    pt_nanos idle;
    struct hist *late;
};

static int open_one(struct idle_run *r, int i)
{
    struct idle_conn *c = &r->c[i];
    *c = (struct idle_conn){.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)r->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    /* 127.0.0.x: the port is picked at connect, for the whole 4-tuple */
    struct sockaddr_in src = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK + (uint32_t)(i % 64))};
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.u32 = (uint32_t)i};
    int one = 1;
    if (c->fd < 0 || setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0 ||
        setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one) != 0 ||
        bind(c->fd, (struct sockaddr *)&src, sizeof src) != 0 ||
        (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) ||
        epoll_ctl(r->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = -1;
        c->closed = true;
        r->failed++;
        return -1;
    }
    r->in_flight++;
    return 0;
}

static void drop(struct idle_run *r, struct idle_conn *c, bool failed)
{
    if (c->fd >= 0) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->closed = true;
    if (!c->answered)
        r->in_flight--;
    if (failed)
        r->failed++;
}

/* One epoll event on connection i, at `now`. */
static void on_event(struct idle_run *r, int i, uint32_t events, pt_nanos now)
{
    static const char req[] = "GET / HTTP/1.1\r\nHost: ptbench\r\n\r\n";
    struct idle_conn *c = &r->c[i];
    if (c->closed)
        return;
    if (!c->sent && (events & EPOLLOUT)) {
        if (send(c->fd, req, sizeof req - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof req - 1)) {
            drop(r, c, true); /* refused, reset: never made */
            return;
        }
        c->sent = true;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = (uint32_t)i};
        epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
    if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
        return;
    if (!c->answered && c->got == sizeof c->buf) {
        drop(r, c, true); /* an answer larger than any of these servers give */
        return;
    }
    for (;;) {
        char sink[256];
        char *into = c->answered ? sink : c->buf + c->got;
        size_t room = c->answered ? sizeof sink : sizeof c->buf - c->got;
        struct iovec iov = {into, room};
        char ctl[CMSG_SPACE(sizeof(struct timespec))];
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                           .msg_controllen = sizeof ctl};
        ssize_t got = recvmsg(c->fd, &m, 0);
        if (got > 0 && !c->answered) {
            c->got += (unsigned)got;
            if (answer_done(c)) {
                /* when these bytes reached the socket, else now */
                pt_nanos at = now;
                for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
                    if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_TIMESTAMPNS) {
                        struct timespec ts;
                        memcpy(&ts, CMSG_DATA(h), sizeof ts);
                        at = (pt_nanos)ts.tv_sec * SEC + ts.tv_nsec + r->real_to_mono;
                    }
                c->answered = at < now ? at : now;
                r->in_flight--;
                r->answered++;
            }
            continue;
        }
        if (got > 0)
            continue; /* bytes after the answer: not ours to judge */
        if (got < 0 && errno == EAGAIN)
            return;
        /* end of file or a reset: the server closed it */
        if (!c->answered) {
            drop(r, c, true);
            return;
        }
        pt_nanos due = c->answered + r->idle;
        if (now < due - EARLY_SLACK)
            r->early++;
        hist_record_local(r->late, now > due ? now - due : 0);
        r->closed++;
        drop(r, c, false);
        return;
    }
}

/* Waits up to `until` for events, handling them; -1 once wrk's pipe said
 * it is done (when asked to watch it), else 0. */
static int poll_once(struct idle_run *r, pt_nanos until)
{
    struct epoll_event ev[256];
    pt_nanos left = until - pt_nanotime();
    int ms = left <= 0 ? 0 : (int)((left + MS - 1) / MS);
    int n = epoll_wait(r->ep, ev, 256, ms > 100 ? 100 : ms);
    pt_nanos now = pt_nanotime();
    int wrk_done = 0;
    for (int k = 0; k < n; k++) {
        if (ev[k].data.u32 == WRK_TAG)
            wrk_done = -1;
        else
            on_event(r, (int)ev[k].data.u32, ev[k].events, now);
    }
    return wrk_done;
}

/* One repetition on a started server: into *out. 0, or -1 (why said). */
static int idle_rep(const struct options *o, const struct http_env *env, struct http_running *srv,
                    int n, struct hist *late, struct rep *out, bool *realtime, char *why,
                    size_t nwhy)
{
    struct idle_run r = {.n = n, .port = srv->port, .idle = o->idle_ms * MS, .late = late};
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    r.real_to_mono = pt_nanotime() - ((pt_nanos)rt.tv_sec * SEC + rt.tv_nsec);
    r.c = calloc((size_t)n, sizeof *r.c);
    r.ep = epoll_create1(EPOLL_CLOEXEC);
    if (!r.c || r.ep < 0) {
        snprintf(why, nwhy, "out of memory or descriptors for %d connections", n);
        free(r.c);
        if (r.ep >= 0)
            close(r.ep);
        return -1;
    }
    double cpu0, sys0, rss0, cpu1, sys1, rss1;
    http_group_usage(srv->pid, &cpu0, &sys0, &rss0);
    /* the observer ahead of the observed (see the top); reset on fork */
    struct sched_param fifo = {.sched_priority = 10}, normal = {0};
    *realtime = sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &fifo) == 0;
    pt_nanos start = pt_nanotime();
    /* every connection made and answered (30 s at most) */
    while (r.answered + r.failed < n && pt_nanotime() < start + 30 * SEC) {
        for (int k = 0; k < OPEN_BATCH && r.made < n && r.in_flight < IN_FLIGHT; k++)
            open_one(&r, r.made++);
        poll_once(&r, r.made < n && r.in_flight < IN_FLIGHT ? pt_nanotime()
                                                            : pt_nanotime() + 100 * MS);
    }
    http_group_usage(srv->pid, &cpu1, &sys1, &rss1);
    /* the load, while the idle ones wait for their close */
    struct http_wrk w;
    struct rep load = {0};
    int rc = http_wrk_start(srv->port, LOAD_CONNS, o->http_secs, env->lua, srv->pid, &w, why, nwhy);
    if (rc == 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = WRK_TAG};
        epoll_ctl(r.ep, EPOLL_CTL_ADD, w.fd, &ev);
        pt_nanos give_up = pt_nanotime() + (o->http_secs + 10) * SEC;
        while (poll_once(&r, give_up) == 0 && pt_nanotime() < give_up)
            ;
        epoll_ctl(r.ep, EPOLL_CTL_DEL, w.fd, NULL);
        rc = http_wrk_finish(&w, &load, why, nwhy);
    }
    /* every close: up to 5 s past the last one due */
    pt_nanos last_due = 0;
    for (int i = 0; i < n; i++)
        if (r.c[i].answered > last_due)
            last_due = r.c[i].answered;
    pt_nanos until = last_due + r.idle + 5 * SEC;
    while (r.closed + r.failed < n && pt_nanotime() < until)
        poll_once(&r, until);
    if (*realtime)
        sched_setscheduler(0, SCHED_OTHER, &normal);
    double cpu2, sys2, rss2;
    http_group_usage(srv->pid, &cpu2, &sys2, &rss2);
    int never = n - r.closed - r.failed;
    for (int i = 0; i < r.made; i++) /* the rest were never opened */
        if (!r.c[i].closed)
            drop(&r, &r.c[i], false);
    *out = (struct rep){
        .ops = (uint64_t)r.closed,
        .elapsed_ns = (double)(pt_nanotime() - start),
        .errors = (double)(r.failed + r.early + never),
        .bytes_per_timer = r.answered ? (rss1 - rss0) / r.answered : 0,
        .rss_bytes = rss1,
        .cpu_s = cpu2 - cpu0,
        .sys_s = sys2 - sys0,
        .load_rps = rc == 0 && load.elapsed_ns > 0 ? (double)load.ops / (load.elapsed_ns / 1e9) : 0,
        .client_cpu_s = load.client_cpu_s,
        .scheduled = (uint64_t)n,
        .fired = (uint64_t)r.closed,
    };
    free(r.c);
    close(r.ep);
    return rc;
}

struct idle_ctx {
    struct report *r;
    const struct options *o;
    const struct http_env *env;
    int n;
    bool said_normal; /* the note that the observer could not be SCHED_FIFO */
};

static int idle_cell_rep(void *ctx, struct http_running *srv, struct rep *out, struct hist *pool,
                         char *why, size_t nwhy)
{
    struct idle_ctx *c = ctx;
    bool rt = false;
    int rc = idle_rep(c->o, c->env, srv, c->n, pool, out, &rt, why, nwhy);
    if (!rt && !c->said_normal) {
        report_note(c->r, "http-idle: the closes' observer could not run as SCHED_FIFO here: "
                          "its own delays are in the lateness");
        c->said_normal = true;
    }
    return rc;
}

int http_idle_run(struct report *r, const struct options *o, const struct workload *wl)
{
    struct http_env env;
    const struct http_server *run[HTTP_MAX_SERVERS];
    int nrun = http_setup(r, o, wl->name, &env, run);
    if (nrun <= 0)
        return nrun;
    struct idle_ctx c = {r, o, &env, 0, false};
    for (int ni = 0; ni < o->nidle_conns; ni++) {
        c.n = o->idle_conns[ni];
        char variant[24];
        if (c.n % 1000 == 0)
            snprintf(variant, sizeof variant, "idle=%dk", c.n / 1000);
        else
            snprintf(variant, sizeof variant, "idle=%d", c.n);
        for (int ti = 0; ti < o->nthreads; ti++)
            http_cell_run(r, o, wl, &env, run, nrun,
                          &(struct http_cell){variant, o->threads[ti], c.n + 2 * LOAD_CONNS,
                                              o->idle_ms, idle_cell_rep, &c});
    }
    return 0;
}
