/* An HTTP/1.1 keep-alive server, written on the scheduler as a user
 * would: one G accepts, a G per connection reads requests with a 10 s
 * deadline each and answers every one with a small 200. It serves until
 * killed. Built against the installed package by CI; the stall check
 * (scripts/stall-check.sh) loads fresh copies of it with wrk.
 *
 *   httpd [-p PORT] [-P PROCS] [-m per-p|timerthread] [-c CLIENTS]
 *
 * It prints "listening on 127.0.0.1:PORT" once it accepts. With -c (and
 * with no arguments, as ctest runs it) it is its own client too: that
 * many client Gs each send ten requests on one connection, the last
 * asking to close, and the process exits 0 once every answer came. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <ptimer/sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define SEC ((pt_nanos)1000000000)
#define READ_TIMEOUT (10 * SEC)  /* for each request, the first byte on */
#define WRITE_TIMEOUT (10 * SEC)

static const char reply[] = "HTTP/1.1 200 OK\r\n"
                            "Content-Type: text/plain\r\n"
                            "Content-Length: 3\r\n"
                            "\r\n"
                            "ok\n";

/* Writes all of buf by the deadline. */
static int write_all(int fd, const char *buf, size_t n, pt_nanos deadline)
{
    while (n > 0) {
        ssize_t w = pt_fd_write(fd, buf, n, deadline);
        if (w <= 0)
            return w < 0 ? (int)w : -EIO;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Whether the request's head [p, end) asks to close the connection. */
static int wants_close(const char *p, const char *end)
{
    static const char hdr[] = "\r\nConnection: close";
    size_t n = sizeof hdr - 1;
    for (; p + n <= end; p++)
        if (strncasecmp(p, hdr, n) == 0)
            return 1;
    return 0;
}

/* One connection: requests until the client closes, a request's
 * deadline passes, or it asks to close. Pipelined requests are answered
 * in order. */
static void conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    size_t have = 0;
    for (;;) {
        char *end = memmem(buf, have, "\r\n\r\n", 4);
        if (!end) {
            if (have == sizeof buf)
                break; /* a head larger than we take */
            ssize_t r = pt_fd_read(fd, buf + have, sizeof buf - have,
                                   pt_nanotime() + READ_TIMEOUT);
            if (r <= 0)
                break; /* closed, timed out, or an error */
            have += (size_t)r;
            continue;
        }
        end += 4;
        int close_after = wants_close(buf, end);
        if (write_all(fd, reply, sizeof reply - 1, pt_nanotime() + WRITE_TIMEOUT) < 0 ||
            close_after)
            break;
        have -= (size_t)(end - buf);
        memmove(buf, end, have);
    }
    pt_fd_close(fd);
}

static struct sockaddr_in addr;
static int clients, answered;

/* A client of the self-check: ten requests on one connection. */
static void client(void *arg)
{
    (void)arg;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pt_nanos deadline = pt_nanotime() + 10 * SEC;
    if (fd < 0 || pt_fd_connect(fd, (struct sockaddr *)&addr, sizeof addr, deadline) != 0)
        exit(1);
    for (int i = 0; i < 10; i++) {
        char req[128], buf[sizeof reply];
        int n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n",
                         i == 9 ? "Connection: close\r\n" : "");
        if (write_all(fd, req, (size_t)n, deadline) != 0)
            exit(1);
        size_t got = 0;
        while (got < sizeof reply - 1) {
            ssize_t r = pt_fd_read(fd, buf + got, sizeof reply - 1 - got, deadline);
            if (r <= 0)
                exit(1);
            got += (size_t)r;
        }
        if (memcmp(buf, reply, sizeof reply - 1) != 0)
            exit(1);
    }
    char b;
    if (pt_fd_read(fd, &b, 1, deadline) != 0) /* the server closed after the last */
        exit(1);
    pt_fd_close(fd);
    if (__atomic_add_fetch(&answered, 1, __ATOMIC_SEQ_CST) == clients) {
        printf("%d clients, 10 requests each: every answer came\n", clients);
        exit(0);
    }
}

static void acceptor(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (int i = 0; i < clients; i++)
        pt_go(NULL, client, NULL);
    for (;;) {
        int fd = pt_fd_accept(lfd, NULL, NULL, 0);
        if (fd < 0) {
            if (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS || fd == -ENOMEM)
                pt_sleep(10 * 1000000); /* out of descriptors: let some close */
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (pt_go(NULL, conn, (void *)(intptr_t)fd) != 0)
            pt_fd_close(fd);
    }
}

int main(int argc, char **argv)
{
    int port = 0, procs = 0, opt;
    if (argc == 1)
        clients = 8;
    enum pt_timer_mode mode = PT_TIMERS_PER_P;
    while ((opt = getopt(argc, argv, "p:P:m:c:")) != -1) {
        switch (opt) {
        case 'c': clients = atoi(optarg); break;
        case 'p': port = atoi(optarg); break;
        case 'P': procs = atoi(optarg); break;
        case 'm':
            if (strcmp(optarg, "timerthread") == 0)
                mode = PT_TIMERS_TIMERTHREAD;
            else if (strcmp(optarg, "per-p") != 0)
                goto usage;
            break;
        default:
            goto usage;
        }
    }
    /* as many descriptors as the hard limit allows, as Go does */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 4096) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &len) != 0) {
        perror("httpd: listen");
        return 1;
    }
    addr = a;
    printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);
    pt_sched_options o = {.procs = procs, .timers = mode};
    int rc = pt_sched_run(&o, acceptor, (void *)(intptr_t)lfd);
    fprintf(stderr, "httpd: pt_sched_run: %d\n", rc);
    return 1;
usage:
    fprintf(stderr, "usage: %s [-p PORT] [-P PROCS] [-m per-p|timerthread] [-c CLIENTS]\n",
            argv[0]);
    return 2;
}
