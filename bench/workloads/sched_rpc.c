/* rpc-sched: 64 client Gs, each doing request and response with a server
 * G of its own over a socketpair, through the scheduler's timed I/O
 * (pt_fd_write, pt_fd_read): a deadline on every request, for its write
 * and the read of its response, as an RPC client has. An op is a request
 * answered: ns per request per P (requests/s), and each request's round
 * trip in the lateness columns. Go's peer does the same over net.Conn
 * (net.FileConn on a socketpair), with SetDeadline before each request.
 *
 * Counts: every request sent was served once and answered with its own
 * bytes back (the request number is in them); a deadline that passes is a
 * request lost, and the counts then differ. */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sched_bench.h"

enum { RPC_PAIRS = 64, RPC_MSG = 64 };
/* An RPC timeout that a machine that keeps up never reaches: it is armed
 * and stopped on every request that waits, and never fires. */
#define RPC_DEADLINE ((pt_nanos)1000000000)

struct rpc_pair {
    const struct sched_ctx *c;
    int cfd, sfd;   /* the client's end, the server's */
    uint64_t quota; /* requests to send; 0: until the phase ends */
    uint64_t sent, answered, served;
    int err; /* the client's first failure (-errno), 0 if none */
    pt_wg *done;
    struct hist rtt; /* this client's alone: merged after the run */
};

ssize_t sched_read_full(int fd, char *buf, size_t n, pt_nanos deadline)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pt_fd_read(fd, buf + got, n - got, deadline);
        if (r <= 0)
            return got && !r ? -ECONNRESET : r;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Answers each request with its own bytes until the client closes. */
static void rpc_server(void *arg)
{
    struct rpc_pair *p = arg;
    char buf[RPC_MSG];
    while (sched_read_full(p->sfd, buf, sizeof buf, 0) == RPC_MSG) {
        p->served++;
        if (pt_fd_write(p->sfd, buf, sizeof buf, 0) != RPC_MSG)
            break;
    }
    pt_fd_close(p->sfd);
    pt_wg_done(p->done);
}

static void rpc_client(void *arg)
{
    struct rpc_pair *p = arg;
    char req[RPC_MSG], rep[RPC_MSG];
    memset(req, 'q', sizeof req);
    for (;;) {
        pt_nanos t = pt_nanotime();
        if (p->quota ? p->sent >= p->quota : t >= p->c->end)
            break;
        memcpy(req, &p->sent, sizeof p->sent);
        pt_nanos deadline = t + RPC_DEADLINE;
        p->sent++;
        ssize_t r = pt_fd_write(p->cfd, req, sizeof req, deadline);
        if (r == RPC_MSG)
            r = sched_read_full(p->cfd, rep, sizeof rep, deadline);
        if (r != RPC_MSG || memcmp(req, rep, sizeof req) != 0) {
            p->err = r < 0 ? (int)r : -EPROTO;
            break;
        }
        p->answered++;
        hist_record_local(&p->rtt, pt_nanotime() - t);
    }
    pt_fd_close(p->cfd); /* the server reads end of file */
    pt_wg_done(p->done);
}

/* The counts of a run's pairs, with the scheduler or without: every
 * request sent was served once and answered. A request the server saw
 * other than once makes its count the one that differs from the
 * requests sent. */
struct rpc_tally {
    uint64_t served;
    int err; /* the first client failure */
};

static void tally_pair(struct run_result *r, struct rpc_tally *t, uint64_t sent, uint64_t answered,
                       uint64_t served, int err, struct hist *rtt)
{
    r->waits += sent;
    r->wakes += answered;
    t->served += served;
    t->err = t->err ? t->err : err;
    hist_merge(&r->lateness, rtt);
}

static void tally_done(struct run_result *r, const struct rpc_tally *t, const char *who)
{
    if (t->served != r->waits)
        r->wakes = t->served;
    r->ops = r->wakes;
    if (t->err)
        fprintf(stderr, "ptbench: %s: a request failed: %s\n", who, strerror(-t->err));
}

void sched_rpc(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    struct rpc_pair *ps = calloc(RPC_PAIRS, sizeof *ps);
    if (!ps)
        abort();
    uint64_t want = sched_ops_wanted(c);
    pt_wg done;
    pt_wg_init(&done);
    for (int i = 0; i < RPC_PAIRS; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            perror("ptbench: rpc-sched: socketpair");
            abort();
        }
        ps[i] = (struct rpc_pair){.c = c,
                                  .cfd = sv[0],
                                  .sfd = sv[1],
                                  .quota = want ? (want + RPC_PAIRS - 1) / RPC_PAIRS : 0,
                                  .done = &done};
    }
    uint64_t base = sched_gs_now();
    sched_phase_begin(c);
    /* the servers first: a client's first request finds its server
     * already parked in its read */
    sched_go_n(c, RPC_PAIRS, rpc_server, ps, sizeof *ps, &done);
    uint64_t servers = r->gs_started;
    sched_go_n(c, RPC_PAIRS, rpc_client, ps, sizeof *ps, &done);
    /* a server whose client pt_go refused reads end of file (a client
     * whose server was refused times out) */
    for (uint64_t i = r->gs_started - servers; i < servers; i++)
        pt_fd_close(ps[i].cfd);
    pt_wg_wait(&done);
    sched_phase_end(c);
    sched_count_finished(c, base);
    struct rpc_tally t = {0, 0};
    for (int i = 0; i < RPC_PAIRS; i++)
        tally_pair(r, &t, ps[i].sent, ps[i].answered, ps[i].served, ps[i].err, &ps[i].rtt);
    tally_done(r, &t, "rpc-sched");
    free(ps);
}

/* ---- the floor: the same requests on plain threads ----------------------- */

/* A client thread and a server thread per P, on a blocking socketpair:
 * each request written, read whole by the server, written back, read
 * whole by the client, with no scheduler, no poller and no deadline.
 * Both threads of pair i are held on the i-th core this process may use
 * (round the cores), so a P's row is one core's worth, as the
 * scheduler's is: what one core gives a request answered through the
 * kernel alone. */
struct plain_pair {
    int cfd, sfd, cpu;
    uint64_t quota, sent, answered, served;
    pt_nanos end;
    int err;
    struct hist rtt;
};

/* Best effort: a CPU the process may not use leaves the thread where
 * the kernel puts it. */
static void pin_to(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static ssize_t plain_read_full(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return got && !r ? -ECONNRESET : r < 0 ? -errno : 0;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static void *plain_server(void *arg)
{
    struct plain_pair *p = arg;
    pin_to(p->cpu);
    char buf[RPC_MSG];
    while (plain_read_full(p->sfd, buf, sizeof buf) == RPC_MSG) {
        p->served++;
        if (send(p->sfd, buf, sizeof buf, MSG_NOSIGNAL) != RPC_MSG)
            break;
    }
    close(p->sfd);
    return NULL;
}

static void *plain_client(void *arg)
{
    struct plain_pair *p = arg;
    pin_to(p->cpu);
    char req[RPC_MSG], rep[RPC_MSG];
    memset(req, 'q', sizeof req);
    for (;;) {
        pt_nanos t = pt_nanotime();
        if (p->quota ? p->sent >= p->quota : t >= p->end)
            break;
        memcpy(req, &p->sent, sizeof p->sent);
        p->sent++;
        ssize_t r = send(p->cfd, req, sizeof req, MSG_NOSIGNAL);
        if (r < 0)
            r = -errno;
        if (r == RPC_MSG)
            r = plain_read_full(p->cfd, rep, sizeof rep);
        if (r != RPC_MSG || memcmp(req, rep, sizeof req) != 0) {
            p->err = r < 0 ? (int)r : -EPROTO;
            break;
        }
        p->answered++;
        hist_record_local(&p->rtt, pt_nanotime() - t);
    }
    close(p->cfd); /* the server reads end of file */
    return NULL;
}

void sched_rpc_plain(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    int n = c->procs;
    struct plain_pair *ps = calloc((size_t)n, sizeof *ps);
    pthread_t *ts = calloc(2 * (size_t)n, sizeof *ts);
    if (!ps || !ts)
        abort();
    uint64_t want = sched_ops_wanted(c);
    /* the cores this process may run on, in order: P i's pair on the i-th */
    cpu_set_t allowed;
    int cpus[CPU_SETSIZE], ncpus = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int k = 0; k < CPU_SETSIZE; k++)
            if (CPU_ISSET(k, &allowed))
                cpus[ncpus++] = k;
    for (int i = 0; i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            perror("ptbench: rpc-sched floor: socketpair");
            abort();
        }
        ps[i] = (struct plain_pair){.cfd = sv[0],
                                    .sfd = sv[1],
                                    .cpu = ncpus ? cpus[i % ncpus] : -1,
                                    .quota = want ? (want + (uint64_t)n - 1) / (uint64_t)n : 0};
    }
    c->cpu0 = bench_cpu_seconds();
    c->sys0 = bench_sys_seconds();
    c->rss0 = bench_rss_bytes();
    c->start = pt_nanotime();
    for (int i = 0; i < n; i++)
        ps[i].end = c->start + c->cfg->duration;
    /* A thread that cannot start is the pair's end closed: its other
     * thread reads end of file and leaves, the counts say what was lost,
     * and the row is an error (spawn_error), not a hang. */
    bool *up = calloc(2 * (size_t)n, sizeof *up);
    if (!up)
        abort();
    for (int i = 0; i < n; i++) {
        int rc = pthread_create(&ts[2 * i], NULL, plain_server, &ps[i]);
        up[2 * i] = rc == 0;
        if (rc == 0)
            rc = pthread_create(&ts[2 * i + 1], NULL, plain_client, &ps[i]);
        up[2 * i + 1] = up[2 * i] && rc == 0;
        if (rc != 0) {
            r->spawn_error = -rc;
            close(ps[i].cfd);
            if (!up[2 * i])
                close(ps[i].sfd);
        }
    }
    for (int i = 0; i < 2 * n; i++)
        if (up[i])
            pthread_join(ts[i], NULL);
    free(up);
    r->elapsed = pt_nanotime() - c->start;
    r->cpu_s = bench_cpu_seconds() - c->cpu0;
    r->sys_s = bench_sys_seconds() - c->sys0;
    r->rss_bytes = bench_rss_bytes();
    r->rss_growth = r->rss_bytes - c->rss0;
    struct rpc_tally t = {0, 0};
    for (int i = 0; i < n; i++)
        tally_pair(r, &t, ps[i].sent, ps[i].answered, ps[i].served, ps[i].err, &ps[i].rtt);
    tally_done(r, &t, "rpc-sched floor");
    free(ps);
    free(ts);
}
