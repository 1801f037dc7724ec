/* examples/httpd.c as a user runs it: a process of its own, driven over
 * 127.0.0.1 by plain blocking sockets here (each read bounded by
 * SO_RCVTIMEO), and stopped with SIGTERM, after which it must exit 0 (a
 * sanitized build exits non-zero on a leak or a race it saw). HTTPD is
 * the example's path, from CMake. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define BOUND_S 30 /* a bound on waiting, never on speed */

static pid_t server;
static struct sockaddr_in addr;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Starts the server with these options (NULL-terminated), on a port of
 * the kernel's choosing, and waits for its "listening on" line. */
static void start(const char *opt, ...)
{
    const char *argv[16] = {HTTPD, "-p", "0"};
    int argc = 3;
    va_list ap;
    va_start(ap, opt);
    for (const char *o = opt; o && argc < 15; o = va_arg(ap, const char *))
        argv[argc++] = o;
    va_end(ap);
    int out[2];
    CHECK_EQ(pipe(out), 0);
    server = fork();
    CHECK(server >= 0);
    if (server == 0) {
        /* dies with the test: a failed CHECK must not leave it holding
         * ctest's output open */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execv(HTTPD, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    CHECK(f != NULL);
    int port = 0;
    CHECK_EQ(fscanf(f, "listening on 127.0.0.1:%d", &port), 1);
    fclose(f);
    addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

/* SIGTERM, then its exit, which must be 0. */
static void stop(void)
{
    CHECK_EQ(kill(server, SIGTERM), 0);
    int status = 0;
    double until = now_s() + BOUND_S;
    pid_t r;
    while ((r = waitpid(server, &status, WNOHANG)) == 0) {
        if (now_s() > until) {
            kill(server, SIGKILL);
            CHECK(!"the server did not stop");
        }
        usleep(1000);
    }
    CHECK_EQ(r, server);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "httpd: status 0x%x\n", status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    struct timeval tv = {BOUND_S, 0};
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
    CHECK_EQ(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        CHECK(w > 0);
        s += w;
        n -= (size_t)w;
    }
}

static void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

static char last_head[1024]; /* the last answer's head, for its headers */

/* One answer: its status, whether it says it closes, its body (the
 * server's are small); -1 at end of file before any byte. */
static int read_answer(int fd, bool *closes)
{
    char buf[1024];
    size_t got = 0;
    char *end = NULL;
    long body = -1;
    for (;;) {
        if (end && got >= (size_t)(end + 4 - buf) + (size_t)body)
            break;
        /* a byte at a time: never past this answer into the next */
        ssize_t r = recv(fd, buf + got, 1, 0);
        CHECK(r >= 0); /* not the receive timeout */
        if (r == 0) {
            CHECK_EQ(got, 0); /* no answer cut short */
            return -1;
        }
        got += (size_t)r;
        CHECK(got < sizeof buf);
        if (!end && (end = memmem(buf, got, "\r\n\r\n", 4))) {
            char *cl = memmem(buf, (size_t)(end - buf), "Content-Length: ", 16);
            CHECK(cl != NULL);
            body = strtol(cl + 16, NULL, 10);
        }
    }
    int status = 0;
    memcpy(last_head, buf, (size_t)(end - buf));
    last_head[end - buf] = 0;
    CHECK_EQ(sscanf(buf, "HTTP/1.1 %d", &status), 1);
    *closes = memmem(buf, (size_t)(end - buf), "Connection: close", 17) != NULL;
    return status;
}

/* The server closed the connection: end of file (or a reset). */
static void expect_closed(int fd)
{
    char b;
    ssize_t r = recv(fd, &b, 1, 0);
    CHECK(r == 0 || (r < 0 && errno == ECONNRESET));
}

static const char GET[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

void test_keep_alive_answers_every_request_on_one_connection(void)
{
    start(NULL);
    int fd = dial();
    bool closes;
    for (int i = 0; i < 200; i++) {
        send_str(fd, GET);
        CHECK_EQ(read_answer(fd, &closes), 200);
        CHECK(!closes);
    }
    send_str(fd, "GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK_EQ(read_answer(fd, &closes), 200);
    CHECK(closes);
    expect_closed(fd);
    close(fd);
    /* HTTP/1.0: one answer and a close, unless it asks to keep alive */
    fd = dial();
    send_str(fd, "GET / HTTP/1.0\r\n\r\n");
    CHECK_EQ(read_answer(fd, &closes), 200);
    CHECK(closes);
    expect_closed(fd);
    close(fd);
    fd = dial();
    send_str(fd, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    CHECK_EQ(read_answer(fd, &closes), 200);
    CHECK(!closes);
    CHECK(strstr(last_head, "\r\nConnection: keep-alive") != NULL); /* a 1.0 client needs it */
    send_str(fd, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    CHECK_EQ(read_answer(fd, &closes), 200);
    close(fd);
    stop();
}

/* A last answer while the client is still sending (a body the server
 * does not want, after Connection: close): the server must not reset the
 * connection, which would throw away the answer on its way and fail the
 * client's send; it shuts its side and drains until the client closes. */
void test_last_answer_survives_a_client_still_sending(void)
{
    start(NULL);
    enum { BODY = 32 << 20 }; /* more than the socket buffers on both sides hold */
    char *req = malloc(BODY + 128);
    CHECK(req != NULL);
    int n = snprintf(req, 128, "POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
                     BODY);
    memset(req + n, 'b', BODY);
    int fd = dial();
    send_all(fd, req, (size_t)n + BODY); /* a reset fails this */
    bool closes;
    CHECK_EQ(read_answer(fd, &closes), 200);
    CHECK(closes);
    expect_closed(fd);
    close(fd);
    free(req);
    stop();
}

void test_pipelined_requests_with_bodies_are_answered_in_order(void)
{
    start("-P", "2", NULL);
    int fd = dial();
    /* 60 requests in one send, POSTs with bodies (some that look like a
     * request head) among them: one answer each, and no answer for a body */
    char batch[16384];
    size_t n = 0;
    for (int i = 0; i < 60; i++) {
        const char *body = i % 3 == 1 ? "GET /no HTTP/1.1\r\n\r\n" : "abc";
        if (i % 2)
            n += (size_t)snprintf(batch + n, sizeof batch - n,
                                  "POST /%d HTTP/1.1\r\nContent-Length: %zu\r\n\r\n%s", i,
                                  strlen(body), body);
        else
            n += (size_t)snprintf(batch + n, sizeof batch - n, "GET /%d HTTP/1.1\r\n\r\n", i);
    }
    n += (size_t)snprintf(batch + n, sizeof batch - n,
                          "GET /end HTTP/1.1\r\nConnection: close\r\n\r\n");
    send_all(fd, batch, n);
    bool closes;
    for (int i = 0; i < 60; i++) {
        CHECK_EQ(read_answer(fd, &closes), 200);
        CHECK(!closes);
    }
    CHECK_EQ(read_answer(fd, &closes), 200);
    CHECK(closes);
    expect_closed(fd);
    close(fd);
    stop();
}

void test_idle_connection_is_closed_once_its_timeout_passes(void)
{
    start("-i", "200", NULL);
    /* never a byte: closed no sooner than the timeout */
    double t0 = now_s();
    int fd = dial();
    expect_closed(fd);
    CHECK(now_s() - t0 >= 0.2);
    close(fd);
    /* idle after an answer: the timeout runs from after the request (the
     * clock read before it is sent: when the answer is seen depends on
     * how soon this thread runs, which on a loaded machine is ms) */
    fd = dial();
    bool closes;
    t0 = now_s();
    send_str(fd, GET);
    CHECK_EQ(read_answer(fd, &closes), 200);
    expect_closed(fd);
    CHECK(now_s() - t0 >= 0.2);
    close(fd);
    /* requests more often than the timeout keep it open past it */
    fd = dial();
    t0 = now_s();
    for (int i = 0; i < 5; i++) {
        usleep(100000);
        send_str(fd, GET);
        CHECK_EQ(read_answer(fd, &closes), 200);
    }
    CHECK(now_s() - t0 >= 0.5);
    close(fd);
    stop();
}

/* A head that must get `status` and a close. */
static void expect_refused(const char *head, int status)
{
    int fd = dial();
    send_str(fd, head);
    bool closes;
    CHECK_EQ(read_answer(fd, &closes), status);
    CHECK(closes);
    expect_closed(fd);
    close(fd);
}

void test_malformed_requests_get_400_and_a_close(void)
{
    start(NULL);
    expect_refused("GARBAGE\r\n\r\n", 400);
    expect_refused("GET /\r\n\r\n", 400);
    expect_refused("GET / HTTP/2.0\r\n\r\n", 400);
    expect_refused("GET / HTTP/1.1 extra\r\n\r\n", 400);
    expect_refused("G(T / HTTP/1.1\r\n\r\n", 400);
    expect_refused("GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400);
    expect_refused("GET / HTTP/1.1\r\n: empty name\r\n\r\n", 400);
    expect_refused("POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", 400);
    expect_refused("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400);
    /* a good request first, then a bad one on the same connection */
    int fd = dial();
    send_str(fd, GET);
    send_str(fd, "BAD\r\n\r\n");
    bool closes;
    CHECK_EQ(read_answer(fd, &closes), 200);
    CHECK_EQ(read_answer(fd, &closes), 400);
    CHECK(closes);
    expect_closed(fd);
    close(fd);
    stop();
}

void test_oversized_head_gets_431_and_chunked_body_501(void)
{
    start(NULL);
    char big[9000];
    int n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX-Big: ");
    memset(big + n, 'a', sizeof big - (size_t)n);
    int fd = dial();
    send_all(fd, big, sizeof big); /* no blank line: a head past 8 KiB */
    bool closes;
    CHECK_EQ(read_answer(fd, &closes), 431);
    CHECK(closes);
    close(fd);
    expect_refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                   501);
    /* a head just under the limit is served */
    fd = dial();
    n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nX-Big: ");
    memset(big + n, 'a', 8000 - (size_t)n);
    memcpy(big + 8000, "\r\n\r\n", 4);
    send_all(fd, big, 8004);
    CHECK_EQ(read_answer(fd, &closes), 200);
    close(fd);
    stop();
}

void test_clients_vanishing_mid_request_leave_the_server_serving(void)
{
    start("-P", "2", NULL);
    for (int i = 0; i < 60; i++) {
        int fd = dial();
        static const char *const partial[] = {
            "GET / HT", "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\nab", GET};
        send_str(fd, partial[i % 3]);
        if (i % 2) {
            /* a reset rather than a close */
            struct linger l = {1, 0};
            CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
        }
        close(fd);
    }
    /* served as before */
    int fd = dial();
    bool closes;
    for (int i = 0; i < 10; i++) {
        send_str(fd, GET);
        CHECK_EQ(read_answer(fd, &closes), 200);
    }
    close(fd);
    stop();
}

/* Whether a fresh connection is refused (the listener closed). */
static bool refused(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    int r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    int err = errno;
    close(fd);
    return r != 0 && err == ECONNREFUSED;
}

void test_stop_lets_a_request_under_way_finish_then_closes_the_idle(void)
{
    start("-g", "20000", NULL);
    int idle = dial();
    bool closes;
    send_str(idle, GET);
    CHECK_EQ(read_answer(idle, &closes), 200); /* served once, now idle */
    int working = dial();
    /* a whole request and, in the same segment, a head under way: the
     * first answer says the server has read the head (one it has not
     * seen is not under way) */
    send_str(working, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n");
    CHECK_EQ(read_answer(working, &closes), 200);
    CHECK(!closes);
    CHECK_EQ(kill(server, SIGTERM), 0);
    double until = now_s() + BOUND_S;
    while (!refused())
        CHECK(now_s() < until); /* the listener goes first */
    /* the idle one stays until the request under way is done */
    usleep(50000);
    char b;
    CHECK_EQ(recv(idle, &b, 1, MSG_DONTWAIT), -1);
    CHECK_EQ(errno, EAGAIN);
    send_str(working, "\r\n");
    CHECK_EQ(read_answer(working, &closes), 200);
    CHECK(closes); /* told the server is closing */
    expect_closed(working);
    expect_closed(idle); /* then the idle one, long before the grace ends */
    close(working);
    close(idle);
    int status;
    while (waitpid(server, &status, WNOHANG) == 0)
        CHECK(now_s() < until);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

void test_stop_ends_a_request_past_its_grace(void)
{
    start("-g", "300", NULL);
    int stuck = dial();
    /* a whole request and, in the same segment, the start of one never
     * finished: the first answer says the server has read them both */
    send_str(stuck, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n");
    bool closes;
    CHECK_EQ(read_answer(stuck, &closes), 200);
    CHECK(!closes);
    double t0 = now_s();
    stop();
    CHECK(now_s() - t0 >= 0.3);
    expect_closed(stuck); /* closed without an answer */
    close(stuck);
}
