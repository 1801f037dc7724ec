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
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

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
            return;
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
        return;
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
