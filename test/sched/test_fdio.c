/* Timed I/O on fds from Gs: deadlines that are never early, data that
 * comes in time, deadlines racing data, a close that wakes blocked
 * readers, a write bigger than the socket buffer, accept and connect with
 * deadlines, a hundred clients talking to server Gs in both timer modes,
 * readiness noticed while every P is busy, and the input each call must
 * refuse. The network is 127.0.0.1 only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util.h"

/* ---- helpers ----------------------------------------------------------------- */

static int tcp_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    return fd;
}

/* Reads exactly n bytes (0 at a clean end of file before any). */
static ssize_t read_full(int fd, void *buf, size_t n, pt_nanos deadline)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pt_fd_read(fd, (char *)buf + got, n - got, deadline);
        if (r < 0)
            return r;
        if (r == 0)
            return (ssize_t)got;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* ---- a silent socket: deadlines, never early ------------------------------- */

static atomic_int early, timed_out;
static int silent_fd;

/* Several of these wait on the same fd at once. */
static void silent_reader(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    char b[8];
    for (int i = 0; i < 5; i++) {
        pt_nanos deadline = pt_nanotime() + 100 * US + (pt_nanos)(pt__xorshift64(&x) % (3 * MS));
        CHECK_EQ(pt_fd_read(silent_fd, b, sizeof b, deadline), -ETIMEDOUT);
        if (pt_nanotime() < deadline)
            atomic_fetch_add(&early, 1);
        atomic_fetch_add(&timed_out, 1);
    }
}

static void silent_writer(void *arg)
{
    (void)arg;
    /* nobody reads the peer: fill its buffer, then time out writing */
    static char block[64 * 1024];
    pt_nanos deadline = pt_nanotime() + 5 * MS;
    for (;;) {
        ssize_t r = pt_fd_write(silent_fd, block, sizeof block, deadline);
        if (r == -ETIMEDOUT)
            break;
        CHECK_EQ(r, (ssize_t)sizeof block);
    }
    if (pt_nanotime() < deadline)
        atomic_fetch_add(&early, 1);
}

static void read_times_out(enum pt_timer_mode mode)
{
    atomic_store(&early, 0);
    atomic_store(&timed_out, 0);
    int sv[2];
    socket_pair(sv);
    silent_fd = sv[0];
    pt_sched *s = make_sched(2, mode);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(pt_go(s, silent_reader, (void *)(intptr_t)(i + 1)), 0);
    CHECK_EQ(pt_go(s, silent_writer, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&timed_out), 20 * 5);
    CHECK_EQ(atomic_load(&early), 0);
    CHECK_EQ(pt_fd_close(sv[0]), 0); /* from a thread */
    CHECK_EQ(close(sv[1]), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

void test_fd_read_times_out_never_early(int mode)
{
    read_times_out((enum pt_timer_mode)mode);
}

/* ---- data that comes before the deadline ------------------------------------ */

static int data_sv[2];
static atomic_int data_read;

static void data_reader(void *arg)
{
    (void)arg;
    char b[64];
    ssize_t r = pt_fd_read(data_sv[0], b, sizeof b, pt_nanotime() + BOUND);
    CHECK_EQ(r, 5);
    CHECK(memcmp(b, "hello", 5) == 0);
    /* the peer closed: end of file, before the deadline */
    CHECK_EQ(pt_fd_read(data_sv[0], b, sizeof b, pt_nanotime() + BOUND), 0);
    atomic_store(&data_read, 1);
    CHECK_EQ(pt_fd_close(data_sv[0]), 0);
}

static void data_writer(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_sleep(5 * MS), 0); /* the reader parks first, most likely */
    CHECK_EQ(pt_fd_write(data_sv[1], "hello", 5, pt_nanotime() + BOUND), 5);
    CHECK_EQ(pt_sleep(2 * MS), 0);
    CHECK_EQ(pt_fd_close(data_sv[1]), 0);
}

void test_fd_read_returns_data_that_arrives_before_the_deadline(void)
{
    for (int mode = PT_TIMERS_PER_P; mode <= PT_TIMERS_LHEAP; mode++) {
        atomic_store(&data_read, 0);
        socket_pair(data_sv);
        pt_sched *s = make_sched(2, (enum pt_timer_mode)mode);
        CHECK_EQ(pt_go(s, data_reader, NULL), 0);
        CHECK_EQ(pt_go(s, data_writer, NULL), 0);
        finish_sched(s);
        CHECK_EQ(atomic_load(&data_read), 1);
    }
}

/* ---- deadlines racing data ---------------------------------------------------- */

#define RACE_PAIRS 8
static int race_sv[RACE_PAIRS][2];
static atomic_int race_timeouts, race_early;
static atomic_long race_bytes;

/* Deadlines of 0-200 us against bytes written every 0-200 us: the
 * deadline and the event often come together, and one of them must ready
 * the reader, once (a second pt_ready would abort). */
static void race_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + 3;
    long got = 0, want = SCALE(2000);
    char b[64];
    while (got < want) {
        pt_nanos deadline = pt_nanotime() + 1 + (pt_nanos)(pt__xorshift64(&x) % (200 * US));
        ssize_t r = pt_fd_read(race_sv[i][0], b, sizeof b, deadline);
        if (r == -ETIMEDOUT) {
            if (pt_nanotime() < deadline)
                atomic_fetch_add(&race_early, 1);
            atomic_fetch_add(&race_timeouts, 1);
            continue;
        }
        CHECK(r > 0);
        got += r;
    }
    CHECK_EQ(got, want);
    atomic_fetch_add(&race_bytes, got);
    CHECK_EQ(pt_fd_close(race_sv[i][0]), 0);
}

static void race_writer(void *arg)
{
    int i = (int)(intptr_t)arg;
    uint64_t x = (uint64_t)i * 0x2545f4914f6cdd1dull + 5;
    for (long k = 0; k < SCALE(2000); k++) {
        CHECK_EQ(pt_sleep((pt_nanos)(pt__xorshift64(&x) % (200 * US))), 0);
        CHECK_EQ(pt_fd_write(race_sv[i][1], "r", 1, 0), 1);
    }
    CHECK_EQ(pt_fd_close(race_sv[i][1]), 0);
}

void test_fd_deadlines_racing_data_ready_each_reader_once(void)
{
    for (int mode = PT_TIMERS_PER_P; mode <= PT_TIMERS_LHEAP; mode++) {
        atomic_store(&race_timeouts, 0);
        atomic_store(&race_early, 0);
        atomic_store(&race_bytes, 0);
        pt_sched *s = make_sched(2, (enum pt_timer_mode)mode);
        for (int i = 0; i < RACE_PAIRS; i++) {
            socket_pair(race_sv[i]);
            CHECK_EQ(pt_go(s, race_reader, (void *)(intptr_t)i), 0);
            CHECK_EQ(pt_go(s, race_writer, (void *)(intptr_t)i), 0);
        }
        CHECK_EQ(pt_sched_wait(s), 0);
        CHECK_EQ(atomic_load(&race_bytes), RACE_PAIRS * SCALE(2000));
        CHECK_EQ(atomic_load(&race_early), 0);
        printf("%s: %d reads timed out\n", mode_name((enum pt_timer_mode)mode),
               atomic_load(&race_timeouts));
        CHECK_EQ(pt_sched_destroy(s), 0);
    }
}

/* ---- close wakes blocked readers ------------------------------------------- */

static int close_fd;
static atomic_int readers_in, readers_badf;

static void blocked_reader(void *arg)
{
    char b[8];
    pt_nanos deadline = arg ? pt_nanotime() + BOUND : 0; /* a timed park, and an untimed one */
    atomic_fetch_add(&readers_in, 1);
    ssize_t r = pt_fd_read(close_fd, b, sizeof b, deadline);
    CHECK_EQ(r, -EBADF);
    atomic_fetch_add(&readers_badf, 1);
}

static void closer(void *arg)
{
    (void)arg;
    while (atomic_load(&readers_in) < 2)
        pt_yield();
    CHECK_EQ(pt_sleep(5 * MS), 0); /* they park meanwhile, most likely */
    CHECK_EQ(pt_fd_close(close_fd), 0);
    CHECK_EQ(pt_fd_close(close_fd), -EBADF);
}

void test_fd_close_wakes_blocked_readers_with_ebadf(void)
{
    /* from another G */
    int sv[2];
    socket_pair(sv);
    close_fd = sv[0];
    atomic_store(&readers_in, 0);
    atomic_store(&readers_badf, 0);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, blocked_reader, NULL), 0);
    CHECK_EQ(pt_go(s, blocked_reader, (void *)1), 0);
    CHECK_EQ(pt_go(s, closer, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&readers_badf), 2);
    CHECK_EQ(close(sv[1]), 0);

    /* from a plain thread, which waits for the readers to leave */
    socket_pair(sv);
    close_fd = sv[0];
    atomic_store(&readers_in, 0);
    atomic_store(&readers_badf, 0);
    CHECK_EQ(pt_go(s, blocked_reader, NULL), 0);
    CHECK_EQ(pt_go(s, blocked_reader, (void *)1), 0);
    WAIT_FOR(atomic_load(&readers_in) == 2);
    nap_ms();
    nap_ms();
    CHECK_EQ(pt_fd_close(close_fd), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&readers_badf), 2);
    CHECK_EQ(close(sv[1]), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- a write bigger than the socket buffer ---------------------------------- */

#define BIG (4u << 20)
static unsigned char *big_out, *big_in;
static int big_sv[2];

static void big_writer(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_fd_write(big_sv[0], big_out, BIG, pt_nanotime() + BOUND), (ssize_t)BIG);
    CHECK_EQ(pt_fd_close(big_sv[0]), 0);
}

static void big_reader(void *arg)
{
    (void)arg;
    size_t got = 0;
    for (;;) {
        /* small reads: the writer fills the buffer and parks many times */
        ssize_t r = pt_fd_read(big_sv[1], big_in + got, 3000, pt_nanotime() + BOUND);
        CHECK(r >= 0);
        if (r == 0)
            break;
        got += (size_t)r;
        CHECK(got <= BIG);
    }
    CHECK_EQ(got, BIG);
    CHECK_EQ(pt_fd_close(big_sv[1]), 0);
}

void test_fd_write_bigger_than_the_socket_buffer_arrives_whole_in_order(void)
{
    big_out = malloc(BIG);
    big_in = malloc(BIG + 3000);
    CHECK(big_out && big_in);
    uint64_t x = 12345;
    for (size_t i = 0; i < BIG; i++)
        big_out[i] = (unsigned char)pt__xorshift64(&x);
    socket_pair(big_sv);
    CHECK((unsigned)small_sndbuf(big_sv[0]) < BIG / 8);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, big_reader, NULL), 0);
    CHECK_EQ(pt_go(s, big_writer, NULL), 0);
    finish_sched(s);
    CHECK(memcmp(big_out, big_in, BIG) == 0);
    free(big_out);
    free(big_in);
}

/* ---- accept and connect ------------------------------------------------------- */

static struct sockaddr_in lo_addr;
static int lo_fd;
static atomic_int dialled;

static void dialler(void *arg)
{
    (void)arg;
    int c = tcp_socket();
    CHECK_EQ(pt_fd_connect(c, (struct sockaddr *)&lo_addr, sizeof lo_addr, pt_nanotime() + BOUND),
             0);
    CHECK_EQ(pt_fd_write(c, "x", 1, pt_nanotime() + BOUND), 1);
    char b;
    CHECK_EQ(pt_fd_read(c, &b, 1, pt_nanotime() + BOUND), 1);
    CHECK_EQ(b, 'y');
    CHECK_EQ(pt_fd_close(c), 0);
    atomic_store(&dialled, 1);
}

/* A loopback address nobody listens on, held by a bound socket (the
 * returned fd, to close) so that no one can take its port meanwhile. */
static int refused_port(struct sockaddr_in *none)
{
    int holder = tcp_socket();
    memset(none, 0, sizeof *none);
    none->sin_family = AF_INET;
    none->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(holder, (struct sockaddr *)none, sizeof *none), 0);
    socklen_t len = sizeof *none;
    CHECK_EQ(getsockname(holder, (struct sockaddr *)none, &len), 0);
    return holder;
}

static void acceptor(void *arg)
{
    (void)arg;
    /* nobody dials yet: times out, never early */
    pt_nanos deadline = pt_nanotime() + 20 * MS;
    CHECK_EQ(pt_fd_accept(lo_fd, NULL, NULL, deadline), -ETIMEDOUT);
    CHECK(pt_nanotime() >= deadline);

    CHECK_EQ(pt_go(NULL, dialler, NULL), 0);
    struct sockaddr_in peer;
    socklen_t plen = sizeof peer;
    int a = pt_fd_accept(lo_fd, (struct sockaddr *)&peer, &plen, pt_nanotime() + BOUND);
    CHECK(a >= 0);
    CHECK_EQ(plen, sizeof peer);
    CHECK_EQ(ntohl(peer.sin_addr.s_addr), INADDR_LOOPBACK);
    char b;
    CHECK_EQ(pt_fd_read(a, &b, 1, pt_nanotime() + BOUND), 1);
    CHECK_EQ(b, 'x');
    CHECK_EQ(pt_fd_write(a, "y", 1, pt_nanotime() + BOUND), 1);
    CHECK_EQ(pt_fd_read(a, &b, 1, pt_nanotime() + BOUND), 0); /* the dialler closed */
    CHECK_EQ(pt_fd_close(a), 0);
    CHECK_EQ(pt_fd_close(lo_fd), 0);

    /* a port nobody listens on: refused */
    struct sockaddr_in none;
    int holder = refused_port(&none);
    int c = tcp_socket();
    CHECK_EQ(pt_fd_connect(c, (struct sockaddr *)&none, sizeof none, pt_nanotime() + BOUND),
             -ECONNREFUSED);
    CHECK_EQ(pt_fd_close(c), 0);
    CHECK_EQ(close(holder), 0);
}

void test_fd_accept_times_out_and_connect_reaches_a_listener(void)
{
    atomic_store(&dialled, 0);
    lo_fd = listen_loopback(0, &lo_addr);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, acceptor, NULL), 0);
    finish_sched(s);
    CHECK_EQ(atomic_load(&dialled), 1);
}

/* pt_fd_dial: a connected socket it made non-blocking and close-on-exec;
 * a refused dial returns the socket's number to the kernel (the next
 * number handed out is the one before it). */
static void dial_and_refuse(void *arg)
{
    (void)arg;
    int a = -1, c = pt_fd_dial(SOCK_STREAM, (struct sockaddr *)&lo_addr, sizeof lo_addr,
                               pt_nanotime() + BOUND);
    CHECK(c >= 0);
    CHECK(fcntl(c, F_GETFL) & O_NONBLOCK);
    CHECK(fcntl(c, F_GETFD) & FD_CLOEXEC);
    CHECK((a = pt_fd_accept(lo_fd, NULL, NULL, pt_nanotime() + BOUND)) >= 0);
    CHECK_EQ(pt_fd_write(c, "d", 1, pt_nanotime() + BOUND), 1);
    char b;
    CHECK_EQ(pt_fd_read(a, &b, 1, pt_nanotime() + BOUND), 1);
    CHECK_EQ(b, 'd');
    CHECK_EQ(pt_fd_close(a), 0);
    CHECK_EQ(pt_fd_close(c), 0);

    struct sockaddr_in none;
    int holder = refused_port(&none);
    int next = dup(holder);
    CHECK(next >= 0);
    CHECK_EQ(close(next), 0);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, (struct sockaddr *)&none, sizeof none, pt_nanotime() + BOUND),
             -ECONNREFUSED);
    int after = dup(holder);
    CHECK_EQ(after, next); /* the refused dial's socket is closed */
    CHECK_EQ(close(after), 0);
    CHECK_EQ(close(holder), 0);
    CHECK_EQ(pt_fd_close(lo_fd), 0);
}

void test_fd_dial_makes_a_connected_nonblocking_socket_and_closes_a_refused_one(void)
{
    lo_fd = listen_loopback(0, &lo_addr);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, dial_and_refuse, NULL), 0);
    finish_sched(s);
}

/* ---- a hundred clients ------------------------------------------------------- */

#define CLIENTS 100
#define REQUESTS 20
#define ACCEPTORS 4 /* Gs accepting on one listener at once */

struct req {
    uint32_t client, seq;
};
struct rep {
    uint32_t client, seq, sum;
};

static struct sockaddr_in srv_addr;
static int srv_fd;
static atomic_int to_accept, replies_ok, handlers_done;

static void handler(void *arg)
{
    int fd = (int)(intptr_t)arg;
    struct req q;
    ssize_t r;
    while ((r = read_full(fd, &q, sizeof q, pt_nanotime() + BOUND)) == (ssize_t)sizeof q) {
        struct rep p = {q.client, q.seq, q.client * 1000 + q.seq};
        CHECK_EQ(pt_fd_write(fd, &p, sizeof p, pt_nanotime() + BOUND), (ssize_t)sizeof p);
    }
    CHECK_EQ(r, 0); /* the client closed between requests */
    CHECK_EQ(pt_fd_close(fd), 0);
    atomic_fetch_add(&handlers_done, 1);
}

static void server(void *arg)
{
    (void)arg;
    while (atomic_fetch_sub(&to_accept, 1) > 0) {
        int a = pt_fd_accept(srv_fd, NULL, NULL, pt_nanotime() + BOUND);
        CHECK(a >= 0);
        CHECK_EQ(pt_go(NULL, handler, (void *)(intptr_t)a), 0);
    }
}

static void client(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    int c = tcp_socket();
    CHECK_EQ(pt_fd_connect(c, (struct sockaddr *)&srv_addr, sizeof srv_addr, pt_nanotime() + BOUND),
             0);
    for (uint32_t i = 0; i < REQUESTS; i++) {
        /* each request has a deadline of its own */
        pt_nanos deadline = pt_nanotime() + BOUND;
        struct req q = {id, i};
        CHECK_EQ(pt_fd_write(c, &q, sizeof q, deadline), (ssize_t)sizeof q);
        struct rep p;
        CHECK_EQ(read_full(c, &p, sizeof p, deadline), (ssize_t)sizeof p);
        if (p.client == id && p.seq == i && p.sum == id * 1000 + i)
            atomic_fetch_add(&replies_ok, 1);
    }
    CHECK_EQ(pt_fd_close(c), 0);
}

static void hundred_clients(enum pt_timer_mode mode)
{
    atomic_store(&to_accept, CLIENTS);
    atomic_store(&replies_ok, 0);
    atomic_store(&handlers_done, 0);
    srv_fd = listen_loopback(0, &srv_addr);
    pt_sched *s = make_sched(2, mode);
    for (int i = 0; i < ACCEPTORS; i++)
        CHECK_EQ(pt_go(s, server, NULL), 0);
    for (int i = 0; i < CLIENTS; i++)
        CHECK_EQ(pt_go(s, client, (void *)(intptr_t)i), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&replies_ok), CLIENTS * REQUESTS);
    CHECK_EQ(atomic_load(&handlers_done), CLIENTS);
    print_stats(mode_name(mode), s);
    CHECK_EQ(pt_fd_close(srv_fd), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

void test_hundred_clients_request_response(int mode)
{
    hundred_clients((enum pt_timer_mode)mode);
}

/* ---- every P busy ---------------------------------------------------------------- */

static int busy_sv[2];
static atomic_int busy_reader_in, busy_reader_done, spinner_gave_up;

static void busy_reader(void *arg)
{
    (void)arg;
    char b;
    atomic_store(&busy_reader_in, 1);
    CHECK_EQ(pt_fd_read(busy_sv[0], &b, 1, 0), 1);
    atomic_store(&busy_reader_done, 1);
}

/* Always runnable: the M finds it in the global queue every time it
 * schedules, so it never gets as far as polling the network itself. */
static void yielding_spinner(void *arg)
{
    (void)arg;
    pt_nanos end = pt_nanotime() + BOUND;
    while (!atomic_load(&busy_reader_done) && pt_nanotime() < end)
        pt_yield();
    if (!atomic_load(&busy_reader_done))
        atomic_store(&spinner_gave_up, 1);
}

/* One P, kept busy by a G that yields but is always runnable: the data
 * reaches the parked reader only through the monitor's poll (Go's sysmon
 * polls the network when nobody has for 10 ms). */
void test_fd_reader_wakes_while_every_p_runs_yielding_gs(void)
{
    atomic_store(&busy_reader_in, 0);
    atomic_store(&busy_reader_done, 0);
    atomic_store(&spinner_gave_up, 0);
    socket_pair(busy_sv);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, busy_reader, NULL), 0);
    WAIT_FOR(atomic_load(&busy_reader_in));
    CHECK_EQ(pt_go(s, yielding_spinner, NULL), 0);
    nap_ms();
    nap_ms();
    CHECK_EQ(write(busy_sv[1], "z", 1), 1);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&spinner_gave_up), 0);
    CHECK_EQ(atomic_load(&busy_reader_done), 1);
    CHECK_EQ(pt_fd_close(busy_sv[0]), 0);
    CHECK_EQ(close(busy_sv[1]), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- bad input ----------------------------------------------------------------------- */

static int bad_sv[2], bad_lfd, other_fd;
static atomic_int bad_checked;

static void bad_calls(void *arg)
{
    (void)arg;
    char b[4];
    struct sockaddr_in sa;
    socklen_t slen = sizeof sa;
    /* fds that are not open */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(close(p[0]), 0);
    CHECK_EQ(close(p[1]), 0);
    CHECK_EQ(pt_fd_read(-1, b, 1, 0), -EBADF);
    CHECK_EQ(pt_fd_read(p[0], b, 1, 0), -EBADF);
    CHECK_EQ(pt_fd_write(p[1], b, 1, 0), -EBADF);
    CHECK_EQ(pt_fd_accept(-3, NULL, NULL, 0), -EBADF);
    CHECK_EQ(pt_fd_close(p[0]), -EBADF);
    /* bad arguments */
    CHECK_EQ(pt_fd_read(bad_sv[0], NULL, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_write(bad_sv[0], NULL, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_read(bad_sv[0], b, 1, -1), -EINVAL);
    CHECK_EQ(pt_fd_write(bad_sv[0], b, 1, -1), -EINVAL);
    CHECK_EQ(pt_fd_read(1 << 20, b, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_accept(bad_lfd, (struct sockaddr *)&sa, NULL, 0), -EINVAL);
    CHECK_EQ(pt_fd_connect(bad_sv[0], NULL, 0, 0), -EINVAL);
    size_t wn = 99;
    struct iovec v[2] = {{b, 1}, {NULL, 1}};
    CHECK_EQ(pt_fd_writev(bad_sv[0], v, -1, 0, &wn), -EINVAL);
    CHECK_EQ(wn, 0);
    CHECK_EQ(pt_fd_writev(bad_sv[0], v, IOV_MAX + 1, 0, NULL), -EINVAL);
    CHECK_EQ(pt_fd_writev(bad_sv[0], NULL, 1, 0, NULL), -EINVAL);
    CHECK_EQ(pt_fd_writev(bad_sv[0], v, 2, 0, NULL), -EINVAL); /* NULL with a length */
    v[1] = (struct iovec){b, (size_t)SSIZE_MAX};
    CHECK_EQ(pt_fd_writev(bad_sv[0], v, 2, 0, NULL), -EINVAL); /* past SSIZE_MAX */
    CHECK_EQ(pt_fd_writev(bad_sv[0], v, 1, -1, NULL), -EINVAL);
    /* an fd another scheduler registered */
    CHECK_EQ(pt_fd_read(other_fd, b, 1, 0), -EINVAL);
    /* zero bytes: at once */
    CHECK_EQ(pt_fd_read(bad_sv[0], NULL, 0, 0), 0);
    CHECK_EQ(pt_fd_write(bad_sv[0], NULL, 0, 0), 0);
    /* a deadline already past: -ETIMEDOUT before the fd is looked at,
     * even with data waiting (Go's pollReset) */
    CHECK_EQ(write(bad_sv[1], "q", 1), 1);
    CHECK_EQ(pt_fd_read(bad_sv[0], b, 1, 1), -ETIMEDOUT);
    CHECK_EQ(pt_fd_read(bad_sv[0], b, 1, pt_nanotime()), -ETIMEDOUT);
    CHECK_EQ(pt_fd_write(bad_sv[0], "w", 1, 1), -ETIMEDOUT);
    CHECK_EQ(pt_fd_accept(bad_lfd, (struct sockaddr *)&sa, &slen, 1), -ETIMEDOUT);
    int c = tcp_socket();
    CHECK_EQ(getsockname(bad_lfd, (struct sockaddr *)&sa, &slen), 0);
    CHECK_EQ(pt_fd_connect(c, (struct sockaddr *)&sa, sizeof sa, 1), -ETIMEDOUT);
    CHECK_EQ(pt_fd_close(c), 0);
    CHECK_EQ(pt_fd_read(bad_sv[0], b, 1, 0), 1); /* still there */
    CHECK_EQ(b[0], 'q');
    /* a peer gone: -EPIPE, no SIGPIPE */
    int sv[2];
    socket_pair(sv);
    CHECK_EQ(close(sv[1]), 0);
    CHECK_EQ(pt_fd_write(sv[0], "x", 1, 0), -EPIPE);
    CHECK_EQ(pt_fd_close(sv[0]), 0);
    /* a regular file: plain system calls */
    char path[] = "/tmp/ptimer-fdio-XXXXXX";
    int file = mkstemp(path);
    CHECK(file >= 0);
    CHECK_EQ(unlink(path), 0);
    CHECK_EQ(pt_fd_write(file, "abc", 3, pt_nanotime() + BOUND), 3);
    CHECK_EQ(lseek(file, 0, SEEK_SET), 0);
    CHECK_EQ(pt_fd_read(file, b, sizeof b, pt_nanotime() + BOUND), 3);
    CHECK_EQ(pt_fd_read(file, b, sizeof b, 0), 0);
    CHECK_EQ(pt_fd_close(file), 0);
    /* closed: refused, and a second close too */
    CHECK_EQ(pt_fd_close(bad_sv[0]), 0);
    CHECK_EQ(pt_fd_read(bad_sv[0], b, 1, 0), -EBADF);
    CHECK_EQ(pt_fd_close(bad_sv[0]), -EBADF);
    atomic_store(&bad_checked, 1);
}

static void register_other(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_fd_write(other_fd, "o", 1, 0), 1);
}

static void use_other(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_fd_write(other_fd, "p", 1, 0), 1);
    CHECK_EQ(pt_fd_close(other_fd), 0);
}

void test_every_fd_call_rejects_bad_input(void)
{
    char b[4];
    struct sockaddr_in sa;
    socklen_t slen = sizeof sa;
    /* outside a G */
    CHECK_EQ(pt_fd_read(0, b, 1, 0), -EPERM);
    CHECK_EQ(pt_fd_write(1, b, 1, 0), -EPERM);
    CHECK_EQ(pt_fd_writev(1, &(struct iovec){b, 1}, 1, 0, NULL), -EPERM);
    CHECK_EQ(pt_fd_accept(0, (struct sockaddr *)&sa, &slen, 0), -EPERM);
    CHECK_EQ(pt_fd_connect(0, (struct sockaddr *)&sa, slen, 0), -EPERM);
    CHECK_EQ(pt_fd_close(-1), -EBADF);

    int other_sv[2];
    socket_pair(other_sv);
    other_fd = other_sv[0];
    pt_sched *other = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(other, register_other, NULL), 0);
    CHECK_EQ(pt_sched_wait(other), 0);

    socket_pair(bad_sv);
    bad_lfd = listen_loopback(0, &sa);
    atomic_store(&bad_checked, 0);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, bad_calls, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&bad_checked), 1);

    /* destroying the other scheduler unregisters its fd, still open */
    CHECK_EQ(pt_sched_destroy(other), 0);
    CHECK_EQ(pt_go(s, use_other, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(read(other_sv[1], b, 2), 2);
    CHECK(memcmp(b, "op", 2) == 0);

    CHECK_EQ(pt_fd_close(bad_lfd), 0);
    CHECK_EQ(close(bad_sv[1]), 0);
    CHECK_EQ(close(other_sv[1]), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}
