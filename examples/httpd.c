/* An HTTP/1.1 server, written on the scheduler as a user would: one G
 * accepts, a G per connection reads requests and answers each with a
 * small 200, one G waits for SIGINT/SIGTERM and stops the server.
 *
 *   httpd [-p PORT] [-P PROCS] [-m per-p|lheap|timerthread] [-i IDLE_MS]
 *         [-g GRACE_MS] [-c CLIENTS]
 *
 * - Keep-alive and pipelining: requests on a connection are answered in
 *   order, as many as the client sends, until it asks to close (or speaks
 *   HTTP/1.0 without keep-alive).
 * - Deadlines: a connection waits at most IDLE_MS (default 10 s) for each
 *   request's head, from the moment the previous answer went out (Go's
 *   SetReadDeadline before each request); an answer must go out within
 *   10 s. A connection past either is closed.
 * - Bad requests: a malformed head gets 400, a head over 8 KiB 431, a
 *   chunked body 501, and the connection is closed after the answer. A
 *   body with Content-Length is read and dropped.
 * - Stopping: SIGINT or SIGTERM closes the listener, lets the requests
 *   under way finish for up to GRACE_MS (default 5 s), then cancels every
 *   descriptor wait (pt_sched_cancel_fds): the connection Gs close their
 *   sockets and end, pt_sched_run returns and the process exits 0 with
 *   "stopped" on stderr.
 *
 * It prints "listening on 127.0.0.1:PORT" once it accepts. With -c (and
 * with no arguments, as ctest runs it) it is its own client too: that
 * many client Gs each send ten requests on one connection, the last
 * asking to close, then it stops itself with SIGTERM. Built against the
 * installed package by CI; test/http/ drives it over real sockets, and
 * stress/stall-check.sh loads it with wrk. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <ptimer/sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MS ((pt_nanos)1000000)
#define WRITE_TIMEOUT (10000 * MS)
#define HEAD_MAX 8192

static pt_nanos idle_timeout = 10000 * MS, grace = 5000 * MS;
static int listen_fd;
static _Atomic int stopping; /* set once: answers say close, connections end after one */
/* Connections with a request under way; STOPPED once the stop has let
 * the last one finish: a request read after that is not started. */
static _Atomic int busy;
#define STOPPED (INT_MIN / 2)
/* How long a last answer's connection waits for the client to close
 * (Go's closeWriteAndWait) */
#define LINGER (500 * MS)

/* ---- answers ---------------------------------------------------------------- */

static const char ok_body[] = "ok\n";

/* Writes a whole answer by the deadline: head and body in one call.
 * `connection`: the Connection header's value, or NULL for none. */
static int answer(int fd, int status, const char *reason, const char *connection,
                  const char *body, size_t body_len)
{
    char head[192], conn_hdr[32] = "";
    if (connection)
        snprintf(conn_hdr, sizeof conn_hdr, "Connection: %s\r\n", connection);
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n",
                     status, reason, body_len, conn_hdr);
    struct iovec v[2] = {{head, (size_t)n}, {(void *)body, body_len}};
    ssize_t w = pt_fd_writev(fd, v, 2, pt_nanotime() + WRITE_TIMEOUT, NULL);
    return w < 0 ? (int)w : 0;
}

/* ---- parsing a request head -------------------------------------------------- */

struct request {
    bool close;             /* the client asked to close, or spoke 1.0 without keep-alive */
    bool http10;            /* HTTP/1.0: keep-alive only when asked, and said in the answer */
    bool chunked;           /* Transfer-Encoding: we do not take request bodies that way */
    long long content_len;  /* the body's length, to be skipped */
};

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Whether [p, e) starts with the header value v, ignoring case. */
static bool value_is(const char *p, const char *e, const char *v)
{
    size_t n = strlen(v);
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return (size_t)(e - p) >= n && strncasecmp(p, v, n) == 0;
}

/* Parses the head [buf, end) (end past its blank line). 0, or -1 when it
 * is malformed. */
static int parse_head(const char *buf, const char *end, struct request *rq)
{
    *rq = (struct request){0};
    const char *p = buf, *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    /* request line: METHOD SP TARGET SP HTTP/1.x */
    const char *q = p;
    while (q < eol && is_tchar(*q))
        q++;
    if (q == p || q == eol || *q != ' ')
        return -1;
    const char *t = ++q;
    while (q < eol && *q != ' ' && (unsigned char)*q > ' ')
        q++;
    if (q == t || q == eol || *q != ' ' || eol - (q + 1) != 8 || strncmp(q + 1, "HTTP/1.", 7) != 0)
        return -1;
    char minor = q[8];
    if (minor != '0' && minor != '1')
        return -1;
    rq->http10 = minor == '0';
    rq->close = rq->http10; /* 1.0: close unless it asks to keep alive */
    /* headers: NAME ":" VALUE, up to the blank line */
    for (p = eol + 2; p < end - 2; p = eol + 2) {
        eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        const char *colon = p;
        while (colon < eol && is_tchar(*colon))
            colon++;
        if (colon == p || colon == eol || *colon != ':')
            return -1;
        size_t name = (size_t)(colon - p);
        const char *v = colon + 1;
        if (name == 10 && strncasecmp(p, "Connection", 10) == 0) {
            if (value_is(v, eol, "close"))
                rq->close = true;
            else if (value_is(v, eol, "keep-alive"))
                rq->close = false;
        } else if (name == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            if (v == eol)
                return -1;
            long long len = 0;
            for (; v < eol && *v >= '0' && *v <= '9'; v++) {
                if (len > (1LL << 40))
                    return -1;
                len = len * 10 + (*v - '0');
            }
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            if (v != eol || (rq->content_len && rq->content_len != len))
                return -1;
            rq->content_len = len;
        } else if (name == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
            rq->chunked = true;
        }
    }
    return 0;
}

/* ---- a connection ------------------------------------------------------------- */

/* Closes after a last answer. A close with request bytes still unread
 * makes the kernel reset the connection, which can discard the answer
 * still on its way; so the write side is shut first (the client reads its
 * end of file after the answer), and what the client still sends is read
 * and dropped until it closes, for LINGER at most. */
static void close_after_answer(int fd)
{
    /* only the kernel writes it and nobody reads it: one for every G,
     * large, so a big body drains in few reads */
    static char sink[64 * 1024];
    shutdown(fd, SHUT_WR);
    pt_nanos until = pt_nanotime() + LINGER;
    while (pt_fd_read(fd, sink, sizeof sink, until) > 0)
        ;
    pt_fd_close(fd);
}

/* Requests until the client closes or asks to, a deadline passes, a
 * request is bad, or the server stops. */
static void conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[HEAD_MAX];
    size_t have = 0;
    long long skip = 0; /* body bytes of the last request still to drop */
    bool working = false, answered_last = false;
    pt_nanos deadline = pt_nanotime() + idle_timeout;
    for (;;) {
        if (skip > 0 && have > 0) {
            size_t drop = (size_t)(skip < (long long)have ? skip : (long long)have);
            memmove(buf, buf + drop, have - drop);
            have -= drop;
            skip -= (long long)drop;
        }
        char *end = skip == 0 ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
        if (!end) {
            if (have == sizeof buf) {
                answered_last =
                    answer(fd, 431, "Request Header Fields Too Large", "close", "", 0) == 0;
                break;
            }
            if (working && have == 0 && skip == 0) {
                /* between requests: idle, and closed as the idle ones are
                 * (the stop's cancel, once no request is under way), even
                 * when the stop began before this G got here */
                working = false;
                atomic_fetch_sub(&busy, 1);
            }
            ssize_t r = pt_fd_read(fd, buf + have, sizeof buf - have, deadline);
            if (r <= 0)
                break; /* closed, timed out, cancelled, or an error */
            if (!working) {
                if (atomic_fetch_add(&busy, 1) < 0) {
                    atomic_fetch_sub(&busy, 1);
                    break; /* read after the stop let the last request finish */
                }
                working = true;
            }
            have += (size_t)r;
            continue;
        }
        end += 4;
        struct request rq;
        if (parse_head(buf, end, &rq) != 0) {
            answered_last = answer(fd, 400, "Bad Request", "close", "", 0) == 0;
            break;
        }
        if (rq.chunked) {
            answered_last = answer(fd, 501, "Not Implemented", "close", "", 0) == 0;
            break;
        }
        bool close_after = rq.close || atomic_load(&stopping);
        const char *connection = close_after ? "close" : rq.http10 ? "keep-alive" : NULL;
        if (answer(fd, 200, "OK", connection, ok_body, sizeof ok_body - 1) < 0)
            break;
        if (close_after) {
            answered_last = true;
            break;
        }
        have -= (size_t)(end - buf);
        memmove(buf, end, have);
        skip = rq.content_len;
        deadline = pt_nanotime() + idle_timeout; /* the next request's */
    }
    if (working)
        atomic_fetch_sub(&busy, 1);
    if (answered_last)
        close_after_answer(fd);
    else
        pt_fd_close(fd);
}

static void acceptor(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = pt_fd_accept(listen_fd, NULL, NULL, 0);
        if (atomic_load(&stopping) || fd == -ECANCELED) {
            if (fd >= 0)
                pt_fd_close(fd); /* accepted as the stop began */
            return; /* the stop closed the listener (the number may be reused) */
        }
        if (fd < 0) {
            if (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS || fd == -ENOMEM)
                pt_sleep(10 * MS); /* out of descriptors: let some close */
            continue;
        }
        if (pt_go(NULL, conn, (void *)(intptr_t)fd) != 0)
            pt_fd_close(fd);
    }
}

/* ---- stopping ------------------------------------------------------------------- */

static void stopper(void *arg)
{
    int sfd = (int)(intptr_t)arg;
    struct signalfd_siginfo si;
    ssize_t r = pt_fd_read(sfd, &si, sizeof si, 0);
    pt_fd_close(sfd);
    if (r != (ssize_t)sizeof si)
        return;
    atomic_store(&stopping, 1);
    pt_fd_close(listen_fd); /* the acceptor wakes with -EBADF */
    /* the requests under way, up to the grace; taking busy from 0 to
     * STOPPED in one step means no request starts after the last ended */
    pt_nanos until = pt_nanotime() + grace;
    for (;;) {
        int idle = 0;
        if (atomic_compare_exchange_strong(&busy, &idle, STOPPED) || pt_nanotime() >= until)
            break;
        pt_sleep(MS);
    }
    /* the idle connections, and any request past its grace */
    pt_sched_cancel_fds(pt_sched_current());
}

/* ---- the self-check's clients ----------------------------------------------------- */

static struct sockaddr_in addr;
static int clients;
static _Atomic int answered;

static void fail(const char *what)
{
    fprintf(stderr, "httpd self-check: %s\n", what);
    exit(1);
}

/* Ten requests on one connection, the last asking to close. */
static void client(void *arg)
{
    (void)arg;
    static const char want[] = "HTTP/1.1 200 OK\r\n";
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pt_nanos deadline = pt_nanotime() + 10000 * MS;
    if (fd < 0 || pt_fd_connect(fd, (struct sockaddr *)&addr, sizeof addr, deadline) != 0)
        fail("connect");
    for (int i = 0; i < 10; i++) {
        char req[128], buf[512];
        int n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n",
                         i == 9 ? "Connection: close\r\n" : "");
        if (pt_fd_write(fd, req, (size_t)n, deadline) != n)
            fail("write");
        /* the answer: a head, then the 3-byte body */
        size_t got = 0;
        char *head_end = NULL;
        while (!head_end || got < (size_t)(head_end + 4 - buf) + 3) {
            ssize_t r = pt_fd_read(fd, buf + got, sizeof buf - got, deadline);
            if (r <= 0)
                fail("read");
            got += (size_t)r;
            head_end = memmem(buf, got, "\r\n\r\n", 4);
        }
        if (strncmp(buf, want, sizeof want - 1) != 0 || memcmp(head_end + 4, ok_body, 3) != 0)
            fail("answer");
    }
    char b;
    if (pt_fd_read(fd, &b, 1, deadline) != 0) /* the server closed after the last */
        fail("close");
    pt_fd_close(fd);
    if (atomic_fetch_add(&answered, 1) + 1 == clients) {
        printf("%d clients, 10 requests each: every answer came\n", clients);
        fflush(stdout);
        kill(getpid(), SIGTERM); /* and the stop, as an operator's */
    }
}

/* ---- main ------------------------------------------------------------------------- */

static void start(void *arg)
{
    pt_go(NULL, stopper, arg);
    for (int i = 0; i < clients; i++)
        pt_go(NULL, client, NULL);
    acceptor(NULL);
}

int main(int argc, char **argv)
{
    int port = 0, procs = 0, opt;
    if (argc == 1)
        clients = 8;
    enum pt_timer_mode mode = PT_TIMERS_PER_P;
    enum pt_fd_io io = PT_FD_IO_POLL;
    while ((opt = getopt(argc, argv, "p:P:m:i:g:c:o:")) != -1) {
        switch (opt) {
        case 'c': clients = atoi(optarg); break;
        case 'p': port = atoi(optarg); break;
        case 'P': procs = atoi(optarg); break;
        case 'i': idle_timeout = atoll(optarg) * MS; break;
        case 'g': grace = atoll(optarg) * MS; break;
        case 'm':
            if (strcmp(optarg, "timerthread") == 0)
                mode = PT_TIMERS_TIMERTHREAD;
            else if (strcmp(optarg, "lheap") == 0)
                mode = PT_TIMERS_LHEAP;
            else if (strcmp(optarg, "per-p") != 0)
                goto usage;
            break;
        case 'o':
            if (strcmp(optarg, "uring") == 0)
                io = PT_FD_IO_URING;
            else if (strcmp(optarg, "poll") != 0)
                goto usage;
            break;
        default:
            goto usage;
        }
    }
    if (idle_timeout <= 0 || grace < 0)
        goto usage;
    /* as many descriptors as the hard limit allows, as Go does */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* the stop signals, read by a G: blocked here, before the scheduler's
     * threads exist, so that every one of them inherits the mask */
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
    int sfd = signalfd(-1, &stop_set, SFD_CLOEXEC);
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (sfd < 0 || listen_fd < 0 ||
        setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 4096) != 0 ||
        getsockname(listen_fd, (struct sockaddr *)&a, &len) != 0) {
        perror("httpd: listen");
        return 1;
    }
    addr = a;
    printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    pt_sched_options o = {.procs = procs, .timers = mode, .fd_io = io};
    int rc = pt_sched_run(&o, start, (void *)(intptr_t)sfd);
    if (rc != 0) {
        fprintf(stderr, "httpd: pt_sched_run: %d\n", rc);
        return 1;
    }
    fprintf(stderr, "httpd: stopped\n");
    return 0;
usage:
    fprintf(
        stderr,
        "usage: %s [-p PORT] [-P PROCS] [-m per-p|lheap|timerthread] [-o poll|uring] [-i IDLE_MS] "
        "[-g GRACE_MS] [-c CLIENTS]\n",
        argv[0]);
    return 2;
}
