/* The io_uring backend, through liburing: readiness polling with the same
 * observable behaviour as epoll.c.
 *
 *  - Descriptors: IORING_OP_POLL_ADD, multishot (Linux 5.13). A multishot
 *    poll posts a CQE when armed if the fd is ready, then one per wake-up
 *    of the fd: the edge-triggered behaviour of EPOLLET. Re-arming (a new
 *    interest) cancels the old poll and adds one under a new tag, so CQEs
 *    of the old one are stale. A poll that ends (no IORING_CQE_F_MORE) is
 *    re-added by the dispatcher: the kernel cancels polls whose arming
 *    thread has exited, and ends them when the CQ overflows.
 *  - The break: the same eventfd as epoll, watched by a multishot poll. A
 *    CQE that a non-blocking wait consumed without reading the eventfd is
 *    not lost: wake_sig stays set, and the next blocking wait sees it.
 *  - Timed waits: IORING_OP_TIMEOUT with IORING_TIMEOUT_ABS on
 *    CLOCK_MONOTONIC, the pt_nanos deadline as is (never early, no
 *    conversion). One timeout is outstanding at a time; a wait that ends
 *    before it fires leaves it armed, and the next wait reuses it if the
 *    deadline is the same or removes it (IORING_OP_TIMEOUT_REMOVE) in the
 *    same submission as its own.
 *
 * Submissions come from any thread (register, re-arm, close) under
 * sq_lock; the completion queue belongs to the one waiter. Blocking in
 * io_uring_enter happens without sq_lock held, so others can submit.
 */
#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "netpoll/internal.h"

#define RING_ENTRIES 256

struct np_uring {
    struct io_uring ring;
    _Atomic uint32_t sq_lock; /* pt__lock: guards the SQ and `ts` */
    struct __kernel_timespec ts;
    /* waiter-only (handed between waiters by np->waiting) */
    uint64_t timeout_seq;
    bool timeout_armed;
    pt_nanos timeout_until;
};

static struct np_uring *U(pt_netpoll *np)
{
    return np->uring;
}

/* An SQE, submitting what is queued if the SQ is full. sq_lock held. */
static struct io_uring_sqe *get_sqe(struct np_uring *u)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    if (!sqe) {
        io_uring_submit(&u->ring);
        sqe = io_uring_get_sqe(&u->ring);
    }
    return sqe;
}

static unsigned poll_mask(unsigned events)
{
    unsigned m = 0;
    if (events & PT_POLL_READ)
        m |= EPOLLIN | EPOLLRDHUP;
    if (events & PT_POLL_WRITE)
        m |= EPOLLOUT;
    return m;
}

static void prep_poll(struct io_uring_sqe *sqe, int fd, uint64_t tag, unsigned events)
{
    io_uring_prep_poll_multishot(sqe, fd, poll_mask(events));
    io_uring_sqe_set_data64(sqe, tag);
}

static int submit(struct np_uring *u)
{
    int r = io_uring_submit(&u->ring);
    return r < 0 ? r : 0;
}

static void ur_fini(pt_netpoll *np)
{
    struct np_uring *u = U(np);
    if (!u)
        return;
    io_uring_queue_exit(&u->ring);
    pt__free(u);
    np->uring = NULL;
}

static int ur_init(pt_netpoll *np)
{
    struct np_uring *u = pt__malloc(sizeof *u);
    if (!u)
        return -ENOMEM;
    memset(u, 0, sizeof *u);
    pt__lock_init(&u->sq_lock);
    /* Refused here by old kernels (ENOSYS), kernel.io_uring_disabled or
     * seccomp (EPERM, ENOSYS), memlock limits (ENOMEM). */
    int err = io_uring_queue_init(RING_ENTRIES, &u->ring, 0);
    if (err < 0) {
        pt__free(u);
        return err;
    }
    np->uring = u;
    struct io_uring_probe *p = io_uring_get_probe_ring(&u->ring);
    if (!p || !io_uring_opcode_supported(p, IORING_OP_POLL_ADD) ||
        !io_uring_opcode_supported(p, IORING_OP_POLL_REMOVE) ||
        !io_uring_opcode_supported(p, IORING_OP_TIMEOUT) ||
        !io_uring_opcode_supported(p, IORING_OP_TIMEOUT_REMOVE)) {
        if (p)
            io_uring_free_probe(p);
        ur_fini(np);
        return -EOPNOTSUPP;
    }
    io_uring_free_probe(p);
    /* Arm the break poll; a kernel without multishot poll fails it at
     * once (EINVAL), which rules io_uring out. */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    prep_poll(sqe, np->breakfd, np_tag(TAG_BREAK, 0), PT_POLL_READ);
    if ((err = submit(u)) == 0 && (err = io_uring_get_events(&u->ring)) >= 0) {
        struct io_uring_cqe *cqe;
        err = 0;
        if (io_uring_peek_cqe(&u->ring, &cqe) == 0) {
            err = cqe->res < 0 ? cqe->res : 0;
            io_uring_cqe_seen(&u->ring, cqe);
        }
    }
    if (err < 0) {
        ur_fini(np);
        return err;
    }
    np->name = "io_uring+IORING_OP_TIMEOUT";
    return 0;
}

/* Queues a poll for fd and submits it; -EBUSY if the SQ has no room.
 * Called with sq_lock held. */
static int submit_poll(struct np_uring *u, int fd, uint64_t tag, unsigned events)
{
    struct io_uring_sqe *sqe = get_sqe(u);
    if (!sqe)
        return -EBUSY;
    prep_poll(sqe, fd, tag, events);
    return submit(u);
}

static int ur_add(pt_netpoll *np, int fd, uint64_t tag, unsigned events)
{
    struct np_uring *u = U(np);
    /* epoll refuses files that cannot be polled; so do we, the same way. */
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return -EPERM;
    pt__lock(&u->sq_lock);
    int err = submit_poll(u, fd, tag, events);
    pt__unlock(&u->sq_lock);
    return err;
}

static void prep_remove(struct np_uring *u, uint64_t tag)
{
    struct io_uring_sqe *sqe = get_sqe(u);
    if (sqe) {
        io_uring_prep_poll_remove(sqe, tag);
        io_uring_sqe_set_data64(sqe, np_tag(TAG_IGNORE, 0));
    }
}

static int ur_mod(pt_netpoll *np, int fd, uint64_t old_tag, uint64_t tag, unsigned events)
{
    struct np_uring *u = U(np);
    pt__lock(&u->sq_lock);
    prep_remove(u, old_tag);
    int err = submit_poll(u, fd, tag, events);
    pt__unlock(&u->sq_lock);
    return err;
}

static void ur_del(pt_netpoll *np, int fd, uint64_t tag)
{
    (void)fd;
    struct np_uring *u = U(np);
    pt__lock(&u->sq_lock);
    prep_remove(u, tag);
    submit(u);
    pt__unlock(&u->sq_lock);
}

/* Takes up to max CQEs worth reporting (descriptors, the break) off the
 * CQ, swallowing our own timeouts and removals. */
static int harvest(pt_netpoll *np, struct np_raw *raw, int max)
{
    struct np_uring *u = U(np);
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    int n = 0;
    bool rearm_break = false;
    io_uring_for_each_cqe(&u->ring, head, cqe)
    {
        if (n == max)
            break;
        seen++;
        uint64_t tag = cqe->user_data;
        bool more = cqe->flags & IORING_CQE_F_MORE;
        switch (TAG_KIND(tag)) {
        case TAG_TIMER:
            if (tag == np_tag(TAG_TIMER, u->timeout_seq))
                u->timeout_armed = false; /* fired (or removed) */
            continue;
        case TAG_IGNORE:
            continue;
        case TAG_BREAK:
            rearm_break |= !more;
            break;
        default:
            break;
        }
        raw[n].tag = tag;
        raw[n].res = cqe->res;
        raw[n].flags = more ? 0 : NP_RAW_ENDED;
        n++;
    }
    io_uring_cq_advance(&u->ring, seen);
    if (rearm_break) {
        pt__lock(&u->sq_lock);
        struct io_uring_sqe *sqe = get_sqe(u);
        if (sqe) {
            prep_poll(sqe, np->breakfd, np_tag(TAG_BREAK, 0), PT_POLL_READ);
            submit(u);
        }
        pt__unlock(&u->sq_lock);
    }
    return n;
}

/* Makes the outstanding timeout the one for `until` (0 or PT_MAXWHEN:
 * none), and submits whatever is queued. */
static int set_timeout(struct np_uring *u, pt_nanos until)
{
    bool want = until != 0 && until != PT_MAXWHEN;
    if (u->timeout_armed && want && u->timeout_until == until)
        return 0;
    pt__lock(&u->sq_lock);
    if (u->timeout_armed) {
        struct io_uring_sqe *sqe = get_sqe(u);
        if (sqe) {
            io_uring_prep_timeout_remove(sqe, np_tag(TAG_TIMER, u->timeout_seq), 0);
            io_uring_sqe_set_data64(sqe, np_tag(TAG_IGNORE, 0));
        }
        u->timeout_armed = false;
    }
    int err = 0;
    if (want) {
        struct io_uring_sqe *sqe = get_sqe(u);
        if (!sqe) {
            err = -EBUSY;
        } else {
            u->timeout_seq = (u->timeout_seq + 1) & ((1ull << 62) - 1);
            u->ts.tv_sec = until / 1000000000;
            u->ts.tv_nsec = until % 1000000000;
            io_uring_prep_timeout(sqe, &u->ts, 0, IORING_TIMEOUT_ABS);
            io_uring_sqe_set_data64(sqe, np_tag(TAG_TIMER, u->timeout_seq));
            u->timeout_armed = true;
            u->timeout_until = until;
        }
    }
    if (io_uring_sq_ready(&u->ring)) {
        int r = submit(u);
        if (r < 0 && err == 0)
            err = r;
    }
    pt__unlock(&u->sq_lock);
    return err;
}

static int ur_wait(pt_netpoll *np, pt_nanos until, struct np_raw *raw, int max)
{
    struct np_uring *u = U(np);
    int n = harvest(np, raw, max);
    if (n > 0)
        return n;
    if (until == 0) {
        /* Nothing posted yet: let the kernel run pending completion work,
         * as epoll_wait(0) would, then look again. */
        io_uring_get_events(&u->ring);
        return harvest(np, raw, max);
    }
    int err = set_timeout(u, until);
    if (err < 0)
        return err;
    struct io_uring_cqe *cqe;
    err = io_uring_wait_cqe(&u->ring, &cqe);
    if (err < 0 && err != -EINTR && err != -ETIME)
        return err;
    return harvest(np, raw, max);
}

const struct np_ops pt__np_uring_ops = {
    .name = "io_uring",
    .init = ur_init,
    .fini = ur_fini,
    .add = ur_add,
    .mod = ur_mod,
    .del = ur_del,
    .wait = ur_wait,
};
