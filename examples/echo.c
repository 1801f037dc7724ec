/* A TCP echo server and its clients, all Gs, on 127.0.0.1: one G
 * accepts, a G per connection echoes what it reads, and each client G
 * sends requests, every one with a deadline of its own, and checks the
 * echoes. The Gs read and write as if the calls blocked; the scheduler
 * parks them on the netpoller meanwhile. It runs once per timer mode and
 * prints a line of results each time. Built against the installed package
 * by CI. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <ptimer/sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CLIENTS 20
#define REQUESTS 50
#define MSG 32                                 /* bytes per request */
#define REQUEST_TIMEOUT ((pt_nanos)1000000000) /* 1 s for each request and its echo */
#define IDLE_TIMEOUT ((pt_nanos)10000000000)   /* a server connection quiet this long is dropped */

static struct sockaddr_in server_addr;
static int listen_fd;
static atomic_int echoed, timeouts, errors;

/* The server's side of one connection: echo until the client closes. */
static void echo_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[256];
    ssize_t n;
    while ((n = pt_fd_read(fd, buf, sizeof buf, pt_nanotime() + IDLE_TIMEOUT)) > 0)
        if (pt_fd_write(fd, buf, (size_t)n, pt_nanotime() + REQUEST_TIMEOUT) != n)
            break;
    pt_fd_close(fd);
}

static void acceptor(void *arg)
{
    (void)arg;
    for (int i = 0; i < CLIENTS; i++) {
        int fd = pt_fd_accept(listen_fd, NULL, NULL, pt_nanotime() + IDLE_TIMEOUT);
        if (fd < 0) {
            atomic_fetch_add(&errors, 1);
            break;
        }
        pt_go(NULL, echo_conn, (void *)(intptr_t)fd);
    }
    pt_fd_close(listen_fd);
}

/* Reads exactly n bytes by the deadline. */
static ssize_t read_full(int fd, char *buf, size_t n, pt_nanos deadline)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pt_fd_read(fd, buf + got, n - got, deadline);
        if (r <= 0)
            return r < 0 ? r : -ECONNRESET;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static void client(void *arg)
{
    int id = (int)(intptr_t)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || pt_fd_connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr,
                                pt_nanotime() + REQUEST_TIMEOUT) != 0) {
        atomic_fetch_add(&errors, 1);
        if (fd >= 0)
            pt_fd_close(fd);
        return;
    }
    for (int i = 0; i < REQUESTS; i++) {
        char req[MSG], rep[MSG];
        memset(req, ' ', sizeof req);
        snprintf(req, sizeof req, "client %d request %d", id, i);
        pt_nanos deadline = pt_nanotime() + REQUEST_TIMEOUT;
        ssize_t r = pt_fd_write(fd, req, sizeof req, deadline);
        if (r == MSG)
            r = read_full(fd, rep, sizeof rep, deadline);
        if (r == MSG && memcmp(req, rep, MSG) == 0) {
            atomic_fetch_add(&echoed, 1);
        } else {
            atomic_fetch_add(r == -ETIMEDOUT ? &timeouts : &errors, 1);
            break;
        }
    }
    pt_fd_close(fd);
}

static int run(enum pt_timer_mode mode)
{
    atomic_store(&echoed, 0);
    atomic_store(&timeouts, 0);
    atomic_store(&errors, 0);
    /* an ephemeral port on the loopback interface */
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&server_addr, 0, sizeof server_addr);
    server_addr.sin_family = AF_INET;
    server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof server_addr;
    if (listen_fd < 0 ||
        bind(listen_fd, (struct sockaddr *)&server_addr, sizeof server_addr) != 0 ||
        listen(listen_fd, CLIENTS) != 0 ||
        getsockname(listen_fd, (struct sockaddr *)&server_addr, &len) != 0) {
        perror("echo: listen on 127.0.0.1");
        return -1;
    }
    pt_sched_options opt = {.procs = 2, .timers = mode};
    pt_sched *s;
    if (pt_sched_create(&s, &opt) != 0)
        return -1;
    pt_go(s, acceptor, NULL);
    for (int i = 0; i < CLIENTS; i++)
        pt_go(s, client, (void *)(intptr_t)i);
    pt_sched_wait(s);
    printf("%s: %d clients x %d requests on port %d: %d echoed, %d timed out, %d errors\n",
           mode == PT_TIMERS_PER_P   ? "per-P timers"
           : mode == PT_TIMERS_LHEAP ? "Go 1.23 heaps"
                                     : "TimerThread ",
           CLIENTS, REQUESTS, ntohs(server_addr.sin_port), atomic_load(&echoed),
           atomic_load(&timeouts), atomic_load(&errors));
    pt_sched_destroy(s);
    return atomic_load(&echoed) == CLIENTS * REQUESTS ? 0 : -1;
}

int main(void)
{
    if (run(PT_TIMERS_PER_P) != 0 || run(PT_TIMERS_LHEAP) != 0 || run(PT_TIMERS_TIMERTHREAD) != 0)
        return EXIT_FAILURE;
    return EXIT_SUCCESS;
}
