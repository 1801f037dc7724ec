/* conn-churn: a G per connection, as a server written for the scheduler
 * has it. 64 client Gs each connect to a listener on 127.0.0.1, send one
 * 64-byte request, read the 64-byte answer and close, over and over; one
 * acceptor G starts a handler G per connection, which reads the request
 * (a deadline of 1 s, as a server keeps), writes the answer and closes,
 * first: the server is the side that closes, as an HTTP/1.0 one is, so
 * TIME_WAIT stays on its side and the clients' ports come free at once.
 * An op is a connection answered: ns per connection per P
 * (connections/s), and each one's connect-to-answer time in the lateness
 * columns. Go's peer does the same with net.DialTCP and a listener's
 * Accept, tokio's with its TcpListener and TcpStream.
 *
 * What it prices: per connection, an accept, a registration with the
 * netpoller and its end at close, a G started and finished, and the park
 * of a first read. Counts: every connection a client opened was answered
 * once, with its own bytes back; every handler the acceptor started
 * finished. */
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sched_bench.h"

enum { CONN_CLIENTS = 64, CONN_MSG = 64 };
#define CONN_DEADLINE ((pt_nanos)1000000000)

struct conn_server {
    int lfd;
    pt_wg handlers;                /* the handler Gs still running */
    _Atomic uint64_t started;      /* handler Gs started */
    _Atomic uint64_t served;       /* answers written */
    _Atomic uint64_t handler_errs; /* handlers that failed */
    int go_err;                    /* the first pt_go that refused a handler */
};

struct conn_client {
    const struct sched_ctx *c;
    struct conn_server *srv;
    struct sockaddr_in addr;
    uint64_t quota; /* connections to make; 0: until the phase ends */
    uint64_t opened, answered;
    int err; /* the first failure (-errno), 0 if none */
    pt_wg *done;
    struct hist rtt;
};

struct conn_handler_arg {
    struct conn_server *srv;
    int fd;
};

static void conn_handler(void *arg)
{
    struct conn_handler_arg a = *(struct conn_handler_arg *)arg;
    free(arg);
    char buf[CONN_MSG];
    if (sched_read_full(a.fd, buf, sizeof buf, pt_nanotime() + CONN_DEADLINE) == CONN_MSG &&
        pt_fd_write(a.fd, buf, sizeof buf, 0) == CONN_MSG)
        atomic_fetch_add_explicit(&a.srv->served, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&a.srv->handler_errs, 1, memory_order_relaxed);
    pt_fd_close(a.fd);
    pt_wg_done(&a.srv->handlers);
}

/* Until the listener is closed under it (-EBADF). */
static void conn_acceptor(void *arg)
{
    struct conn_server *srv = arg;
    for (;;) {
        int fd = pt_fd_accept(srv->lfd, NULL, NULL, 0);
        if (fd == -EBADF)
            break;
        if (fd < 0)
            continue; /* EMFILE and the like: the client's deadline says so */
        struct conn_handler_arg *a = malloc(sizeof *a);
        if (!a)
            abort();
        *a = (struct conn_handler_arg){srv, fd};
        pt_wg_add(&srv->handlers, 1);
        int err = pt_go(NULL, conn_handler, a);
        if (err < 0) {
            pt_wg_done(&srv->handlers);
            free(a);
            pt_fd_close(fd);
            srv->go_err = srv->go_err ? srv->go_err : err;
            continue;
        }
        atomic_fetch_add_explicit(&srv->started, 1, memory_order_relaxed);
    }
    pt_wg_done(&srv->handlers);
}

static void conn_client(void *arg)
{
    struct conn_client *p = arg;
    char req[CONN_MSG], rep[CONN_MSG];
    memset(req, 'q', sizeof req);
    for (;;) {
        pt_nanos t = pt_nanotime();
        if (p->quota ? p->opened >= p->quota : t >= p->c->end)
            break;
        memcpy(req, &p->opened, sizeof p->opened);
        pt_nanos deadline = t + CONN_DEADLINE;
        p->opened++;
        int fd = pt_fd_dial(SOCK_STREAM, (struct sockaddr *)&p->addr, sizeof p->addr, deadline);
        ssize_t r = fd < 0 ? fd : 0;
        if (r == 0)
            r = pt_fd_write(fd, req, sizeof req, deadline);
        if (r == CONN_MSG)
            r = sched_read_full(fd, rep, sizeof rep, deadline);
        if (fd >= 0)
            pt_fd_close(fd);
        if (r != CONN_MSG || memcmp(req, rep, sizeof req) != 0) {
            p->err = r < 0 ? (int)r : -EPROTO;
            break;
        }
        p->answered++;
        hist_record_local(&p->rtt, pt_nanotime() - t);
    }
    pt_wg_done(p->done);
}

void sched_conn_churn(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    struct conn_server srv = {.lfd = -1};
    pt_wg_init(&srv.handlers);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    srv.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (srv.lfd < 0 || bind(srv.lfd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(srv.lfd, 4096) != 0 || getsockname(srv.lfd, (struct sockaddr *)&addr, &alen) != 0) {
        perror("ptbench: conn-churn: listener");
        abort();
    }
    struct conn_client *ps = calloc(CONN_CLIENTS, sizeof *ps);
    if (!ps)
        abort();
    uint64_t want = sched_ops_wanted(c);
    pt_wg done;
    pt_wg_init(&done);
    for (int i = 0; i < CONN_CLIENTS; i++)
        ps[i] = (struct conn_client){.c = c,
                                     .srv = &srv,
                                     .addr = addr,
                                     .quota = want ? (want + CONN_CLIENTS - 1) / CONN_CLIENTS : 0,
                                     .done = &done};
    uint64_t base = sched_gs_now();
    sched_phase_begin(c);
    pt_wg_add(&srv.handlers, 1); /* the acceptor's */
    sched_go_n(c, 1, conn_acceptor, &srv, 0, NULL);
    if (r->gs_started == 0)
        pt_wg_done(&srv.handlers);
    sched_go_n(c, CONN_CLIENTS, conn_client, ps, sizeof *ps, &done);
    pt_wg_wait(&done);
    pt_fd_close(srv.lfd); /* the acceptor leaves */
    pt_wg_wait(&srv.handlers);
    sched_phase_end(c);
    r->gs_started += atomic_load(&srv.started);
    sched_count_finished(c, base);
    int err = 0;
    for (int i = 0; i < CONN_CLIENTS; i++) {
        r->waits += ps[i].opened;
        r->wakes += ps[i].answered;
        hist_merge(&r->lateness, &ps[i].rtt);
        err = err ? err : ps[i].err;
    }
    uint64_t served = atomic_load(&srv.served);
    if (served != r->wakes) /* an answer written twice, or one lost: the counts differ */
        r->wakes = served;
    r->ops = r->wakes;
    r->spawn_error = r->spawn_error ? r->spawn_error : srv.go_err;
    if (err)
        fprintf(stderr, "ptbench: conn-churn: a connection failed: %s\n", strerror(-err));
    free(ps);
}
