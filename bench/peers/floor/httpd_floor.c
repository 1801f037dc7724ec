/* The http table's floor: a single-threaded, hand-written epoll loop
 * answering what examples/httpd.c answers to wrk's GET (the same head and
 * body, byte for byte), with no scheduler, no timers and no idle timeout.
 * What a server on one core can do when nothing stands between it and
 * the kernel; the scheduler's 1-P rows are read against it.
 *
 * Usage: ptbench-httpd-floor. It listens on an ephemeral port of
 * 127.0.0.1, says "listening on 127.0.0.1:PORT" on stdout, and serves
 * until killed. Pipelined requests are answered in one write, in order;
 * a request that asks to close is answered with Connection: close, and
 * the connection closed after it. Request bodies are not supported: this
 * is a floor for GETs, not a server. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

enum { BUF = 8192, MAXEV = 256 };

static const char ok[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n";
static const char ok_close[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                               "3\r\nConnection: close\r\n\r\nok\n";

struct conn {
    size_t in_len, out_len, out_off;
    bool closing;  /* answered a request that asked to close */
    bool want_out; /* waiting for room to write (EPOLLOUT) */
    char in[BUF], out[BUF];
};

static struct conn **conns; /* by descriptor */
static int epfd;

static void die(const char *what)
{
    fprintf(stderr, "ptbench-httpd-floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void drop(int fd)
{
    free(conns[fd]);
    conns[fd] = NULL;
    close(fd); /* leaves the epoll set with its last descriptor */
}

/* Whether the head [p, end) asks to close: a Connection header whose
 * value is close (wrk's GETs never do; the first request ptbench asks
 * does). */
static bool asks_close(const char *p, const char *end)
{
    for (const char *line = p; line < end;) {
        const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
        if (!eol)
            eol = end;
        if (eol - line >= 11 && strncasecmp(line, "connection:", 11) == 0) {
            const char *v = line + 11;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            if (eol - v >= 5 && strncasecmp(v, "close", 5) == 0)
                return true;
        }
        line = eol + 2;
    }
    return false;
}

/* Waits for room to write (EPOLLOUT alone: a client that sends and does
 * not read must not wake the loop for input it cannot take), or for input
 * again. */
static int set_want_out(int fd, struct conn *c, bool on)
{
    struct epoll_event ev = {.events = on ? EPOLLOUT : EPOLLIN, .data.fd = fd};
    c->want_out = on;
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
}

/* Moves what is unsent out: 0, or -1 when the connection is done. */
static int flush(int fd, struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = write(fd, c->out + c->out_off, c->out_len - c->out_off);
        if (w < 0 && errno == EAGAIN)
            return c->want_out ? 0 : set_want_out(fd, c, true);
        if (w <= 0)
            return -1;
        c->out_off += (size_t)w;
    }
    c->out_len = c->out_off = 0;
    if (c->want_out && set_want_out(fd, c, false) != 0)
        return -1;
    return c->closing ? -1 : 0;
}

/* Queues the answers to the whole request heads read so far, in order,
 * as many as the output buffer holds; how many. */
static int queue_answers(struct conn *c)
{
    char *p = c->in, *end = c->in + c->in_len, *head_end;
    int queued = 0;
    while (!c->closing && (head_end = memmem(p, (size_t)(end - p), "\r\n\r\n", 4))) {
        bool last = asks_close(p, head_end);
        const char *a = last ? ok_close : ok;
        size_t n = last ? sizeof ok_close - 1 : sizeof ok - 1;
        if (c->out_len + n > BUF)
            break; /* the rest once this batch is out */
        memcpy(c->out + c->out_len, a, n);
        c->out_len += n;
        c->closing = last;
        p = head_end + 4;
        queued++;
    }
    c->in_len = (size_t)(end - p);
    memmove(c->in, p, c->in_len);
    return queued;
}

/* Answers every whole request head read so far, a buffer's worth per
 * write, until none is left or the client stops reading: 0, or -1 when
 * the connection is done. */
static int answer(int fd, struct conn *c)
{
    while (queue_answers(c) > 0) {
        int rc = flush(fd, c);
        if (rc != 0 || c->out_len) /* done, or waiting for room */
            return rc;
    }
    return 0;
}

/* Answers what is pending, then reads and answers until the socket has
 * nothing more or the client stops reading. */
static int serve(int fd, struct conn *c)
{
    for (;;) {
        if (answer(fd, c) != 0)
            return -1;
        if (c->out_len) /* the client is not reading: wait for EPOLLOUT */
            return 0;
        if (c->in_len == BUF) /* a head longer than the buffer */
            return -1;
        ssize_t r = read(fd, c->in + c->in_len, BUF - c->in_len);
        if (r < 0 && errno == EAGAIN)
            return 0;
        if (r <= 0)
            return -1;
        c->in_len += (size_t)r;
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit");
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    /* a slot per descriptor, at most a million (the hard limit can be 2^30) */
    size_t nfds = (size_t)1 << 20;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < nfds)
        nfds = (size_t)rl.rlim_cur;
    if (!(conns = calloc(nfds, sizeof *conns)))
        die("calloc");

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 4096) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev) != 0)
        die("epoll_ctl");
    printf("listening on 127.0.0.1:%d\n", ntohs(a.sin_port));
    fflush(stdout);

    struct epoll_event evs[MAXEV];
    for (;;) {
        int n = epoll_wait(epfd, evs, MAXEV, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                    if ((size_t)c >= nfds || !(conns[c] = calloc(1, sizeof **conns)) ||
                        epoll_ctl(epfd, EPOLL_CTL_ADD, c, &cev) != 0) {
                        if ((size_t)c < nfds)
                            free(conns[c]), conns[c] = NULL;
                        close(c);
                        continue;
                    }
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                }
                continue;
            }
            struct conn *c = conns[fd];
            if (!c)
                continue;
            int rc = 0;
            if (evs[i].events & EPOLLOUT)
                rc = flush(fd, c);
            if (rc == 0 && !c->out_len) /* input, or room again for what is pending */
                rc = serve(fd, c);
            if (rc != 0)
                drop(fd);
        }
    }
}
