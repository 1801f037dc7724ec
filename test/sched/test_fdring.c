/* PT_FD_IO_URING, the Ps' rings for socket reads and writes: the option
 * and its environment override are checked; a read whose deadline
 * cancels its request while data arrives loses no byte; and a round of
 * requests from many Gs goes in with a few io_uring_enter calls, not one
 * each. The other descriptor tests run in this mode too (ctest's
 * sched_uring.* names: PT_FD_IO=uring). Built without liburing, the
 * mode is refused with -ENOTSUP, and that is what these tests check. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sched/internal.h"
#include "util.h"

#ifdef PT_TEST_URING
/* sched/fdring.h's, which this file, built without PT_HAVE_URING, would
 * read as the stub that always says 0 */
uint64_t pt__ring_overflows(const struct pt__p *p);
extern _Atomic bool pt__ring_admit_all;
extern _Atomic bool pt__ring_refuse;
extern _Atomic int pt__ring_refused;
#else
static _Atomic bool pt__ring_admit_all;
static _Atomic bool pt__ring_refuse;
static _Atomic int pt__ring_refused;
static uint64_t pt__ring_overflows(const struct pt__p *p)
{
    (void)p;
    return 0;
}
#endif

#define NO_RING "built without liburing: the ring mode was refused (-ENOTSUP), as it must be"

/* A scheduler whose Ps own rings; NULL (after checking it was refused)
 * where the build has none. */
static pt_sched *make_ring_sched(int procs)
{
    pt_sched_options o = {.procs = procs, .fd_io = PT_FD_IO_URING};
    pt_sched *s = NULL;
    int r = pt_sched_create(&s, &o);
#ifdef PT_TEST_URING
    CHECK_EQ(r, 0);
    CHECK(s != NULL);
#else
    CHECK_EQ(r, -ENOTSUP);
    CHECK(s == NULL);
#endif
    return s;
}

void test_ring_mode_and_its_override_are_checked(void)
{
    pt_sched *s = NULL;
    pt_sched_options bad = {.procs = 1, .fd_io = (enum pt_fd_io)7};
    CHECK_EQ(pt_sched_create(&s, &bad), -EINVAL);
    CHECK(s == NULL);
    CHECK_EQ(setenv("PT_FD_IO", "epoll", 1), 0);
    CHECK_EQ(pt_sched_create(&s, &(pt_sched_options){.procs = 1}), -EINVAL);
    CHECK(s == NULL);
    /* the override wins over the option, both ways */
    CHECK_EQ(setenv("PT_FD_IO", "poll", 1), 0);
    CHECK_EQ(pt_sched_create(&s, &(pt_sched_options){.procs = 1, .fd_io = PT_FD_IO_URING}), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
    s = NULL;
    CHECK_EQ(setenv("PT_FD_IO", "uring", 1), 0);
#ifdef PT_TEST_URING
    CHECK_EQ(pt_sched_create(&s, &(pt_sched_options){.procs = 1}), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
#else
    CHECK_EQ(pt_sched_create(&s, &(pt_sched_options){.procs = 1}), -ENOTSUP);
#endif
    CHECK_EQ(unsetenv("PT_FD_IO"), 0);
    if ((s = make_ring_sched(2)))
        CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- a deadline's cancel racing the data: no byte lost ------------------- */

#define RACE_BYTES SCALE(3000)

struct race {
    int sv[2];
    long timeouts;
};

static void race_writer(void *arg)
{
    struct race *r = arg;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < RACE_BYTES; i++) {
        unsigned char b = (unsigned char)i;
        CHECK_EQ(pt_fd_write(r->sv[0], &b, 1, pt_nanotime() + BOUND), 1);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* around the reader's deadline: some reads time out, some get
         * their byte while the cancel is on its way */
        pt_sleep((pt_nanos)(x % 150) * US);
    }
    CHECK_EQ(pt_fd_close(r->sv[0]), 0);
}

static void race_reader(void *arg)
{
    struct race *r = arg;
    int next = 0;
    for (;;) {
        unsigned char buf[8];
        pt_nanos start = pt_nanotime();
        ssize_t n = pt_fd_read(r->sv[1], buf, sizeof buf, start + 50 * US);
        if (n == -ETIMEDOUT) {
            CHECK(pt_nanotime() >= start + 50 * US); /* never early */
            r->timeouts++;
            continue;
        }
        CHECK(n >= 0);
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n; i++, next++)
            CHECK_EQ(buf[i], (unsigned char)next); /* in order, none missing */
    }
    CHECK_EQ(next, RACE_BYTES);
    CHECK_EQ(pt_fd_close(r->sv[1]), 0);
}

void test_ring_read_cancelled_by_its_deadline_loses_no_byte(void)
{
    for (int procs = 1; procs <= 2; procs++) {
        pt_sched *s = make_ring_sched(procs);
        if (!s)
            SKIP(NO_RING);
        struct race r = {0};
        socket_pair(r.sv);
        CHECK_EQ(pt_go(s, race_reader, &r), 0);
        CHECK_EQ(pt_go(s, race_writer, &r), 0);
        finish_sched(s);
        CHECK(r.timeouts > 0); /* the cancel path ran */
    }
}

/* ---- one round, many requests, few submissions -------------------------- */

#define ROUND_GS 64

struct round {
    pt_chan *go;
    int sv[ROUND_GS][2];
    struct round_arg {
        struct round *rd;
        int i;
    } args[ROUND_GS];
};

static void round_g(void *arg)
{
    struct round_arg *a = arg;
    int i = a->i, fd = a->rd->sv[i][0];
    pt_nanos v;
    CHECK_EQ(pt_chan_recv(a->rd->go, &v), 0); /* closed by the starter */
    unsigned char b = (unsigned char)i;
    CHECK_EQ(pt_fd_write(fd, &b, 1, pt_nanotime() + BOUND), 1);
    CHECK_EQ(pt_fd_read(fd, &b, 1, pt_nanotime() + BOUND), 1);
    CHECK_EQ(b, (unsigned char)(i + 1));
    CHECK_EQ(pt_fd_close(fd), 0);
}

/* Started after the others on the one P, it runs once each of them has
 * run to its park on the channel: the close readies all of them onto
 * this P's queue, where they run one after another, each queueing a
 * write, then each a read. */
static void round_starter(void *arg)
{
    CHECK_EQ(pt_chan_close(((struct round *)arg)->go), 0);
}

void test_ring_round_of_many_gs_submits_in_a_few_calls(void)
{
    pt_sched *s = make_ring_sched(1);
    if (!s)
        SKIP(NO_RING);
    static struct round rd;
    memset(&rd, 0, sizeof rd);
    CHECK_EQ(pt_chan_make(&rd.go, sizeof(pt_nanos), 0), 0);
    for (int i = 0; i < ROUND_GS; i++) {
        socket_pair(rd.sv[i]);
        rd.args[i] = (struct round_arg){&rd, i};
        CHECK_EQ(pt_go(s, round_g, &rd.args[i]), 0);
    }
    CHECK_EQ(pt_go(s, round_starter, &rd), 0);
    for (int i = 0; i < ROUND_GS; i++) {
        unsigned char b;
        CHECK_EQ(read(rd.sv[i][1], &b, 1), 1);
        CHECK_EQ(b, (unsigned char)i);
        b++;
        CHECK_EQ(write(rd.sv[i][1], &b, 1), 1);
    }
    CHECK_EQ(pt_sched_wait(s), 0);
    pt_sched_stats st;
    pt_sched_read_stats(s, &st);
    /* a write and a read per G, nothing else */
    CHECK_EQ(st.ring_requests, 2 * ROUND_GS);
    /* the writes of the round go in together (at most 32 a call), and so
     * do the reads: far fewer calls than requests */
    CHECK(st.ring_enters * 4 <= st.ring_requests);
    CHECK_EQ(pt_sched_destroy(s), 0);
    for (int i = 0; i < ROUND_GS; i++)
        close(rd.sv[i][1]);
    CHECK_EQ(pt_chan_free(rd.go), 0);
}

/* ---- a burst of completions past the completion queue ------------------- */

/* Readers parked on their own socket pairs, every P held by a G that
 * computes, and a byte written to every peer meanwhile: more completions
 * at once than a CQ of the old fixed size (4,096) held (on one P; half
 * as many each on two), and, with the CQ made small (PT_RING_CQ), more
 * than it holds. Each reader must wake (with no deadline, nothing else
 * ends its read), and the kernel must never have needed its overflow
 * list; with the ring made to admit past its room (a test hook), the
 * list fills, and draining it wakes them. */
#define BURST_MAX 9000
#ifdef PT__SANITIZED /* ThreadSanitizer takes minutes over the full counts */
#define BURST_SMALL 200, "16"
#else
#define BURST_SMALL 600, "64"
#endif

struct burst {
    int sv[BURST_MAX][2];
    _Atomic int busy;    /* computing Gs running */
    _Atomic int written; /* the test thread wrote to every peer */
    _Atomic int woken;
};

static struct burst burst;

static void burst_reader(void *arg)
{
    int *sv = arg;
    unsigned char b = 0;
    CHECK_EQ(pt_fd_read(sv[0], &b, 1, 0), 1);
    CHECK_EQ(b, 0xa5);
    CHECK_EQ(pt_fd_close(sv[0]), 0);
    atomic_fetch_add(&burst.woken, 1);
}

/* Computes without a system call until the bytes are out, then a few ms
 * more, so the completions come while its P runs no round. */
static void burst_busy(void *arg)
{
    (void)arg;
    atomic_fetch_add(&burst.busy, 1);
    while (!atomic_load(&burst.written))
        ;
    pt_nanos until = pt_nanotime() + 20 * MS;
    while (pt_nanotime() < until)
        ;
}

/* overflow: whether the kernel's overflow list must have been used (the
 * ring admitting past its room) or never */
static void burst_round(int procs, const char *coop, int n, const char *cq, bool overflow)
{
    if (cq)
        CHECK_EQ(setenv("PT_RING_CQ", cq, 1), 0);
    CHECK_EQ(setenv("PT_RING_COOP", coop, 1), 0);
    atomic_store(&pt__ring_admit_all, overflow);
    pt_sched *s = make_ring_sched(procs);
    CHECK_EQ(unsetenv("PT_RING_CQ"), 0);
    CHECK_EQ(unsetenv("PT_RING_COOP"), 0);
    if (!s)
        SKIP(NO_RING);
    memset(&burst, 0, sizeof burst);
    for (int i = 0; i < n; i++) {
        socket_pair(burst.sv[i]);
        CHECK_EQ(pt_go(s, burst_reader, burst.sv[i]), 0);
    }
    for (int i = 0; i < procs; i++)
        CHECK_EQ(pt_go(s, burst_busy, NULL), 0);
    pt_nanos bound = pt_nanotime() + BOUND;
    while (atomic_load(&burst.busy) < procs)
        CHECK(pt_nanotime() < bound);
    unsigned char b = 0xa5;
    for (int i = 0; i < n; i++)
        CHECK_EQ(write(burst.sv[i][1], &b, 1), 1);
    atomic_store(&burst.written, 1);
    /* bounded: a reader left parked fails here, not in a hang */
    WAIT_FOR(atomic_load(&burst.woken) == n);
    uint64_t overflows = 0;
    for (int i = 0; i < procs; i++)
        overflows += pt__ring_overflows(s->ps[i]);
    CHECK(overflow ? overflows > 0 : overflows == 0);
    atomic_store(&pt__ring_admit_all, false);
    finish_sched(s);
    for (int i = 0; i < n; i++)
        close(burst.sv[i][1]);
}

void test_ring_burst_past_the_cq_on_a_busy_p_wakes_every_g(void)
{
    /* room for the old CQ's worth of pairs, if the hard limit allows */
    struct rlimit rl;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    int big = SCALE(BURST_MAX);
    rlim_t want = 2 * (rlim_t)big + 256;
    if (rl.rlim_cur < want && rl.rlim_max >= want) {
        rl.rlim_cur = want;
        CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    for (int procs = 1; procs <= 2; procs++)
        for (int coop = 1; coop >= 0; coop--) {
            const char *c = coop ? "1" : "0";          /* cooperative, or an interrupt each */
            burst_round(procs, c, BURST_SMALL, false); /* past the CQ: to the netpoller */
            burst_round(procs, c, BURST_SMALL, true);  /* admitted all the same: drained */
            if (rl.rlim_cur >= want)
                burst_round(procs, c, big, NULL, false); /* sized for the descriptors */
        }
}

/* ---- submissions the kernel refuses -------------------------------------- */

/* With every submission refused for a while (a test hook: a kernel short
 * of memory), a read's cancel -- by its deadline, or by a close -- is
 * retried by whoever asked for it until the kernel takes it, though the
 * ring's P sits idle. A round in which nothing was refused (the test
 * thread lost its CPU past the deadline) is run again. */
struct refusal {
    int sv[2];
    _Atomic int done;
    ssize_t got;
    bool by_close;
};

static void refusal_reader(void *arg)
{
    struct refusal *rf = arg;
    pt_nanos deadline = rf->by_close ? 0 : pt_nanotime() + 20 * MS;
    unsigned char b;
    rf->got = pt_fd_read(rf->sv[0], &b, 1, deadline);
    atomic_store(&rf->done, 1);
}

static void refusal_closer(void *arg)
{
    struct refusal *rf = arg;
    CHECK_EQ(pt_fd_close(rf->sv[0]), 0);
}

static bool refusal_round(bool by_close)
{
    pt_sched *s = make_ring_sched(1);
    if (!s)
        return true;
    static struct refusal rf;
    memset(&rf, 0, sizeof rf);
    rf.by_close = by_close;
    socket_pair(rf.sv);
    CHECK_EQ(pt_go(s, refusal_reader, &rf), 0);
    /* the read is in the kernel: queued, and the P's idle round submitted it */
    pt_sched_stats st;
    WAIT_FOR((pt_sched_read_stats(s, &st), st.ring_requests == 1 && st.ring_enters >= 1));
    atomic_store(&pt__ring_refused, 0);
    atomic_store(&pt__ring_refuse, true);
    if (by_close)
        CHECK_EQ(pt_go(s, refusal_closer, &rf), 0);
    /* refused three times at least, each try made again */
    WAIT_FOR(atomic_load(&rf.done) || atomic_load(&pt__ring_refused) >= 3);
    atomic_store(&pt__ring_refuse, false);
    WAIT_FOR(atomic_load(&rf.done));
    finish_sched(s);
    CHECK_EQ(rf.got, by_close ? -EBADF : -ETIMEDOUT);
    if (!by_close)
        CHECK_EQ(close(rf.sv[0]), 0);
    CHECK_EQ(close(rf.sv[1]), 0);
    return atomic_load(&pt__ring_refused) > 0;
}

void test_ring_cancel_refused_by_the_kernel_is_retried_by_who_asked(void)
{
    for (int by_close = 0; by_close <= 1; by_close++) {
        int round = 0;
        while (!refusal_round(by_close))
            CHECK(++round < 10);
    }
}
