/* What a server needs from the descriptor calls beyond read and write:
 * segments written in order with the count of what went out (also when
 * the deadline cuts the write short), TCP_NODELAY on what a TCP listener
 * accepts, and pt_sched_cancel_fds stopping every G parked on a
 * descriptor, and every call after it, while pt_fd_close keeps working.
 * The network is 127.0.0.1 only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

/* ---- writev: every segment, in order; the count of a cut write ----------- */

#define SEGS 40
static unsigned char *seg_out, *seg_in;
static size_t seg_total;
static struct iovec segs[SEGS];
static int seg_sv[2];

static void seg_writer(void *arg)
{
    (void)arg;
    size_t written = 1;
    CHECK_EQ(pt_fd_writev(seg_sv[0], segs, SEGS, pt_nanotime() + BOUND, &written),
             (ssize_t)seg_total);
    CHECK_EQ(written, seg_total);
    /* none at all: 0, and nothing written */
    CHECK_EQ(pt_fd_writev(seg_sv[0], NULL, 0, 0, &written), 0);
    CHECK_EQ(written, 0);
    CHECK_EQ(pt_fd_close(seg_sv[0]), 0);
}

static void seg_reader(void *arg)
{
    (void)arg;
    size_t got = 0;
    for (;;) {
        ssize_t r = pt_fd_read(seg_sv[1], seg_in + got, 1000, pt_nanotime() + BOUND);
        CHECK(r >= 0);
        if (r == 0)
            break;
        got += (size_t)r;
        CHECK(got <= seg_total);
    }
    CHECK_EQ(got, seg_total);
    CHECK_EQ(pt_fd_close(seg_sv[1]), 0);
}

void test_fd_writev_sends_every_segment_in_order(void)
{
    /* lengths that cross the window of segments a call takes, empty ones
     * among them, and a total many socket buffers long */
    seg_total = 0;
    for (int i = 0; i < SEGS; i++)
        seg_total += i % 7 == 3 ? 0 : (size_t)(i * 7919 % 30000) + 1;
    seg_out = malloc(seg_total);
    seg_in = malloc(seg_total + 1000);
    CHECK(seg_out && seg_in);
    uint64_t x = 777;
    for (size_t i = 0; i < seg_total; i++)
        seg_out[i] = (unsigned char)pt__xorshift64(&x);
    size_t at = 0;
    for (int i = 0; i < SEGS; i++) {
        size_t len = i % 7 == 3 ? 0 : (size_t)(i * 7919 % 30000) + 1;
        segs[i] = (struct iovec){seg_out + at, len};
        at += len;
    }
    socket_pair(seg_sv);
    CHECK((size_t)small_sndbuf(seg_sv[0]) < seg_total / 8);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, seg_reader, NULL), 0);
    CHECK_EQ(pt_go(s, seg_writer, NULL), 0);
    finish_sched(s);
    CHECK(memcmp(seg_out, seg_in, seg_total) == 0);
    free(seg_out);
    free(seg_in);
}

/* Reads what waits at fd (non-blocking) until it is empty, each byte
 * checked against want from its start: the count read. */
static size_t drain_peer(int fd, const unsigned char *want)
{
    size_t got = 0;
    unsigned char b[4096];
    for (;;) {
        ssize_t r = read(fd, b, sizeof b);
        if (r < 0 && errno == EAGAIN)
            return got;
        CHECK(r > 0);
        for (ssize_t i = 0; i < r; i++)
            CHECK_EQ(b[i], want[got + (size_t)i]);
        got += (size_t)r;
    }
}

static int cut_sv[2];
static size_t cut_written;

static void cut_writer(void *arg)
{
    (void)arg;
    /* nobody reads: the buffer fills, and the deadline ends the write */
    static unsigned char big[1 << 20];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)(i * 31 + 7);
    struct iovec v[3] = {
        {big, 1000}, {big + 1000, sizeof big - 2000}, {big + sizeof big - 1000, 1000}};
    /* A stall between the clock read and the call can leave the writev
     * its deadline already past, and nothing written: that round shows
     * no cut, and the next gets a fresh deadline. */
    for (int round = 0; cut_written == 0; round++) {
        CHECK(round < 10);
        pt_nanos deadline = pt_nanotime() + 20 * MS;
        CHECK_EQ(pt_fd_writev(cut_sv[0], v, 3, deadline, &cut_written), -ETIMEDOUT);
        CHECK(pt_nanotime() >= deadline);
    }
    CHECK(cut_written < sizeof big);
    /* the peer then reads exactly what the count says, and those bytes
     * (the segments are contiguous in big) */
    CHECK_EQ(drain_peer(cut_sv[1], big), cut_written);
    /* pt_fd_write's count is pt_fd_writev's with one segment */
    CHECK_EQ(pt_fd_write(cut_sv[0], big, 10, pt_nanotime() + BOUND), 10);
    CHECK_EQ(pt_fd_close(cut_sv[0]), 0);
}

void test_fd_writev_cut_by_its_deadline_counts_what_went_out(void)
{
    socket_pair(cut_sv);
    small_sndbuf(cut_sv[0]);
    int fl = fcntl(cut_sv[1], F_GETFL);
    CHECK_EQ(fcntl(cut_sv[1], F_SETFL, fl | O_NONBLOCK), 0);
    cut_written = 0;
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, cut_writer, NULL), 0);
    finish_sched(s);
    CHECK_EQ(close(cut_sv[1]), 0);
}

/* ---- 4 GiB and more in one call ------------------------------------------- */

/* A read or write longer than the kernel moves in one call (MAX_RW_COUNT,
 * just under 2 GiB) is a short count, on the ring as through the
 * netpoller: never a length cut to its low 32 bits. The buffer is address
 * space only (MAP_NORESERVE): the kernel touches what it moves. */
#define HUGE_LEN ((size_t)1 << 32)

static int huge_sv[2];
static unsigned char *huge_buf;

/* One writev of 2^32 bytes of huge_buf (and, with nseg 2, 100
 * more), cut by its deadline: some bytes went out, and the peer reads
 * exactly those. */
static void huge_write(int nseg)
{
    struct iovec v[2] = {{huge_buf, HUGE_LEN}, {huge_buf, 100}};
    size_t written = 0;
    for (int round = 0; written == 0; round++) {
        CHECK(round < 10); /* a round whose deadline passed before the call wrote nothing */
        pt_nanos deadline = pt_nanotime() + 20 * MS;
        CHECK_EQ(pt_fd_writev(huge_sv[0], v, nseg, deadline, &written), -ETIMEDOUT);
    }
    CHECK_EQ(drain_peer(huge_sv[1], huge_buf), written);
}

static void huge_g(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4096; i++)
        huge_buf[i] = (unsigned char)(i * 31 + 7);
    /* reads: 2^32 and 2^32 + 5 bytes asked, 10 waiting, 10 read */
    for (size_t extra = 0; extra <= 5; extra += 5) {
        CHECK_EQ(write(huge_sv[1], "0123456789", 10), 10);
        CHECK_EQ(pt_fd_read(huge_sv[0], huge_buf + 8192, HUGE_LEN + extra, pt_nanotime() + BOUND),
                 10);
        CHECK_EQ(memcmp(huge_buf + 8192, "0123456789", 10), 0);
    }
    huge_write(1);
    huge_write(2);
    CHECK_EQ(pt_fd_close(huge_sv[0]), 0);
}

void test_fd_read_and_writev_of_4_gib_move_what_one_call_can(void)
{
    huge_buf = mmap(NULL, HUGE_LEN + 16384, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(huge_buf != MAP_FAILED);
    socket_pair(huge_sv);
    small_sndbuf(huge_sv[0]);
    int fl = fcntl(huge_sv[1], F_GETFL);
    CHECK_EQ(fcntl(huge_sv[1], F_SETFL, fl | O_NONBLOCK), 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, huge_g, NULL), 0);
    finish_sched(s);
    CHECK_EQ(close(huge_sv[1]), 0);
    CHECK_EQ(munmap(huge_buf, HUGE_LEN + 16384), 0);
}

/* ---- accept's socket defaults ------------------------------------------------ */

static int nd_tcp, nd_unix, nd_early;
static struct sockaddr_in nd_addr;
static struct sockaddr_un nd_uaddr;

static int nodelay(int fd)
{
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_EQ(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
    return v;
}

static void nd_dial(void *arg)
{
    int c = socket(arg ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(c >= 0);
    const struct sockaddr *sa = arg ? (struct sockaddr *)&nd_uaddr : (struct sockaddr *)&nd_addr;
    socklen_t len = arg ? sizeof nd_uaddr : sizeof nd_addr;
    CHECK_EQ(pt_fd_connect(c, sa, len, pt_nanotime() + BOUND), 0);
    if (!arg)
        CHECK_EQ(nodelay(c), 0); /* a dialled socket is the caller's: left as made */
    char b;
    CHECK_EQ(pt_fd_read(c, &b, 1, pt_nanotime() + BOUND), 0);
    CHECK_EQ(pt_fd_close(c), 0);
}

static void nd_accept(void *arg)
{
    (void)arg;
    /* one queued before the listener was first asked, so before it had
     * the option to hand down: set on its own */
    int a = pt_fd_accept(nd_tcp, NULL, NULL, pt_nanotime() + BOUND);
    CHECK(a >= 0);
    CHECK(nodelay(a) != 0);
    CHECK_EQ(pt_fd_close(a), 0);
    CHECK_EQ(close(nd_early), 0);
    CHECK_EQ(pt_go(NULL, nd_dial, NULL), 0);
    a = pt_fd_accept(nd_tcp, NULL, NULL, pt_nanotime() + BOUND);
    CHECK(a >= 0);
    CHECK(nodelay(a) != 0); /* Go's default for a TCP connection */
    CHECK_EQ(pt_fd_close(a), 0);
    CHECK(nodelay(nd_tcp) != 0); /* the listener has it, for the kernel to copy */
    /* connections queued before the first accept, and those after the
     * queue was once empty (which have it from the listener) */
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pt_go(NULL, nd_dial, NULL), 0);
    for (int i = 0; i < 3; i++) {
        a = pt_fd_accept(nd_tcp, NULL, NULL, pt_nanotime() + BOUND);
        CHECK(a >= 0);
        CHECK(nodelay(a) != 0);
        CHECK_EQ(pt_fd_close(a), 0);
    }
    /* a Unix socket has no Nagle to turn off: accepted as before */
    CHECK_EQ(pt_go(NULL, nd_dial, (void *)1), 0);
    a = pt_fd_accept(nd_unix, NULL, NULL, pt_nanotime() + BOUND);
    CHECK(a >= 0);
    CHECK_EQ(pt_fd_close(a), 0);
    CHECK_EQ(pt_fd_close(nd_tcp), 0);
    CHECK_EQ(pt_fd_close(nd_unix), 0);
}

void test_fd_accept_gives_tcp_connections_nodelay(void)
{
    nd_tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(nd_tcp >= 0);
    nd_addr =
        (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof nd_addr;
    CHECK_EQ(bind(nd_tcp, (struct sockaddr *)&nd_addr, sizeof nd_addr), 0);
    CHECK_EQ(listen(nd_tcp, 16), 0);
    CHECK_EQ(getsockname(nd_tcp, (struct sockaddr *)&nd_addr, &len), 0);
    nd_unix = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(nd_unix >= 0);
    nd_uaddr = (struct sockaddr_un){.sun_family = AF_UNIX};
    /* an abstract address: nothing left on disk */
    snprintf(nd_uaddr.sun_path + 1, sizeof nd_uaddr.sun_path - 1, "ptimer-nd-%d", (int)getpid());
    CHECK_EQ(bind(nd_unix, (struct sockaddr *)&nd_uaddr, sizeof nd_uaddr), 0);
    CHECK_EQ(listen(nd_unix, 16), 0);
    nd_early = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(nd_early >= 0);
    CHECK_EQ(connect(nd_early, (struct sockaddr *)&nd_addr, sizeof nd_addr), 0);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, nd_accept, NULL), 0);
    finish_sched(s);
}

/* ---- pt_sched_cancel_fds ------------------------------------------------------ */

enum { READERS = 6 };
static int cx_sv[READERS][2], cx_full[2], cx_lfd;
static atomic_int cx_parked, cx_cancelled;

static void cx_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char b[16];
    atomic_fetch_add(&cx_parked, 1);
    /* no deadline: only the cancel ends it */
    CHECK_EQ(pt_fd_read(cx_sv[i][0], b, sizeof b, 0), -ECANCELED);
    /* and every call after it, while close still closes */
    CHECK_EQ(pt_fd_read(cx_sv[i][0], b, sizeof b, 0), -ECANCELED);
    CHECK_EQ(pt_fd_write(cx_sv[i][0], "x", 1, 0), -ECANCELED);
    CHECK_EQ(pt_fd_close(cx_sv[i][0]), 0);
    atomic_fetch_add(&cx_cancelled, 1);
}

static void cx_writer(void *arg)
{
    (void)arg;
    static char big[1 << 20];
    atomic_fetch_add(&cx_parked, 1);
    size_t written = 0;
    CHECK_EQ(pt_fd_writev(cx_full[0], &(struct iovec){big, sizeof big}, 1, 0, &written),
             -ECANCELED);
    CHECK(written > 0 && written < sizeof big);
    CHECK_EQ(pt_fd_close(cx_full[0]), 0);
    atomic_fetch_add(&cx_cancelled, 1);
}

static void cx_acceptor(void *arg)
{
    (void)arg;
    atomic_fetch_add(&cx_parked, 1);
    CHECK_EQ(pt_fd_accept(cx_lfd, NULL, NULL, 0), -ECANCELED);
    CHECK_EQ(pt_fd_close(cx_lfd), 0);
    atomic_fetch_add(&cx_cancelled, 1);
}

/* A G that calls the cancel itself, then finds a descriptor it never
 * used refused too. */
static void cx_self(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_sched_cancel_fds(pt_sched_current()), 0);
    int sv[2];
    socket_pair(sv);
    CHECK_EQ(pt_fd_read(sv[0], NULL, 0, 0), -ECANCELED);
    CHECK_EQ(pt_fd_close(sv[0]), 0);
    CHECK_EQ(pt_fd_close(sv[1]), 0);
}

static void cx_start(pt_sched *s)
{
    atomic_store(&cx_parked, 0);
    atomic_store(&cx_cancelled, 0);
    for (int i = 0; i < READERS; i++) {
        socket_pair(cx_sv[i]);
        CHECK_EQ(pt_go(s, cx_reader, (void *)(intptr_t)i), 0);
    }
    socket_pair(cx_full);
    small_sndbuf(cx_full[0]);
    CHECK_EQ(pt_go(s, cx_writer, NULL), 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cx_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(cx_lfd >= 0);
    CHECK_EQ(bind(cx_lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    CHECK_EQ(listen(cx_lfd, 16), 0);
    CHECK_EQ(pt_go(s, cx_acceptor, NULL), 0);
}

/* The readers and the acceptor meet the cancel whether they are parked
 * or not yet; the writer must have written first (its count of bytes is
 * checked), so the test waits for them at the peer. */
static void cx_wait_for_the_writers_bytes(void)
{
    int n = 0;
    WAIT_FOR(ioctl(cx_full[1], FIONREAD, &n) == 0 && n > 0);
}

static void cx_end(void)
{
    CHECK_EQ(atomic_load(&cx_cancelled), READERS + 2);
    for (int i = 0; i < READERS; i++)
        CHECK_EQ(close(cx_sv[i][1]), 0);
    CHECK_EQ(close(cx_full[1]), 0);
}

void test_cancel_fds_stops_every_parked_g_and_every_later_call(void)
{
    /* from a plain thread, once every G is parked (or about to be) */
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    cx_start(s);
    WAIT_FOR(atomic_load(&cx_parked) == READERS + 2);
    cx_wait_for_the_writers_bytes();
    nap_ms();
    CHECK_EQ(pt_sched_cancel_fds(s), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    cx_end();
    CHECK_EQ(pt_sched_cancel_fds(s), 0); /* again: nothing more to do */
    CHECK_EQ(pt_sched_destroy(s), 0);

    /* from a G of its own, in the other timer mode */
    s = make_sched(2, PT_TIMERS_TIMERTHREAD);
    cx_start(s);
    WAIT_FOR(atomic_load(&cx_parked) == READERS + 2);
    cx_wait_for_the_writers_bytes();
    CHECK_EQ(pt_go(s, cx_self, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    cx_end();
    CHECK_EQ(pt_sched_destroy(s), 0);

    CHECK_EQ(pt_sched_cancel_fds(NULL), -EINVAL);
}

/* The cancel racing Gs on their way into a wait: at every moment a G is
 * either on a side's list, where the cancel finds it, or will see the
 * flag. A lost one never returns. Bounded: a fresh scheduler per
 * round. */
static atomic_int race_left, race_reads;

static void race_reader(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char b[8];
    for (;;) {
        ssize_t r = pt_fd_read(fd, b, sizeof b, 0);
        if (r == -ECANCELED)
            break;
        CHECK(r > 0); /* the writer's byte */
        atomic_fetch_add_explicit(&race_reads, 1, memory_order_relaxed);
    }
    CHECK_EQ(pt_fd_close(fd), 0);
    atomic_fetch_sub(&race_left, 1);
}

/* Leaves its end open once cancelled: a close would wake a reader the
 * cancel lost (its hang-up is readiness), and hide the loss. */
static void race_writer(void *arg)
{
    int fd = (int)(intptr_t)arg;
    while (pt_fd_write(fd, "w", 1, 0) == 1)
        pt_yield(); /* the reader parks again, mostly, before the next */
}

void test_cancel_fds_racing_gs_entering_their_waits_loses_none(void)
{
    enum { PAIRS = 16 };
    for (int round = 0; round < SCALE(300); round++) {
        pt_sched *s = make_sched(2, pt_test_modes[round % PT_TEST_NMODES]);
        atomic_store(&race_left, PAIRS);
        atomic_store(&race_reads, 0);
        int wfd[PAIRS];
        for (int i = 0; i < PAIRS; i++) {
            int sv[2];
            socket_pair(sv);
            wfd[i] = sv[1];
            CHECK_EQ(pt_go(s, race_reader, (void *)(intptr_t)sv[0]), 0);
            CHECK_EQ(pt_go(s, race_writer, (void *)(intptr_t)sv[1]), 0);
        }
        /* a varying moment: early on some Gs have not started, later
         * every reader cycles through its wait */
        int reads = (round * 37) % 400;
        WAIT_FOR(atomic_load_explicit(&race_reads, memory_order_relaxed) >= reads);
        CHECK_EQ(pt_sched_cancel_fds(s), 0);
        WAIT_FOR(atomic_load(&race_left) == 0); /* a lost reader: aborts at the bound */
        CHECK_EQ(pt_sched_wait(s), 0);
        CHECK_EQ(pt_sched_destroy(s), 0); /* unregisters the writers' ends */
        for (int i = 0; i < PAIRS; i++)
            CHECK_EQ(close(wfd[i]), 0);
    }
}
