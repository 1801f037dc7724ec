/* A P's io_uring for its Gs' socket reads and writes (PT_FD_IO_URING).
 *
 * Go and every peer here make a system call per read and per write, and
 * one more whenever a read finds nothing (EAGAIN, then the netpoller). On
 * a ring, a G's read or write is a request the G queues as it parks; its
 * P submits everything its Gs queued in one io_uring_enter when it has no
 * G left to run (every 61st round too, and at once when a batch is full),
 * and the completions ready the Gs (Alibaba's Photon runs its coroutines
 * this way). A socket's receive the kernel cannot complete at submission
 * waits in the kernel, armed on the socket's wait queue, and completes
 * when data comes.
 *
 * Completions are reaped by the P's own M at each round, and by whichever
 * M sleeps in the netpoller: the ring signals an eventfd on every
 * completion, registered with the netpoller under a tagged udata, so a P
 * with nothing to run sleeps like any other and wakes for its requests.
 *
 * A request and its G (struct pt__uop on the G's stack):
 *  - INFLIGHT from the queue on. The G is in a timed park, whose wake
 *    token the completion and the deadline race for (pt__g_claim). The
 *    completion that wins stores res, then DONE, then readies the G.
 *  - The deadline won: the G asks the kernel to cancel the request and
 *    waits for its completion, which must come before the G's stack (the
 *    request, the buffers) can be reused: it parks with WAITING, and the
 *    completion, finding WAITING where it swaps in DONE, readies it; one
 *    that came first leaves DONE, and the G does not park.
 * A completion claims the token only while the request is INFLIGHT: the
 * G leaves the call only after DONE, so the token it claims is this
 * park's, never a later one.
 *
 * Locks: sq_lock guards the submission queue (the P's Gs queue, anyone
 * cancels); cq_lock the completion queue (the P's round, the netpoller's
 * event). A descriptor's lock is taken before sq_lock (fdio.c queues
 * and cancels under it), never inside either ring lock. */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/lock.h"
#include "sched/fd.h"
#include "sched/fdring.h"

#define RING_SQ 256
/* Requests in flight are not bounded by the ring: every idle keep-alive
 * connection holds a receive. Completions beyond the CQ wait in the
 * kernel's overflow list until reaped (IORING_FEAT_NODROP). */
#define RING_CQ 4096
/* Queued requests a P submits at once, without waiting for its round. */
#define RING_BATCH 32
#define REAP_BATCH 64

enum { UOP_INFLIGHT, UOP_DONE, UOP_WAITING };

struct pt__ring {
    struct io_uring ring;
    _Atomic uint32_t sq_lock;
    _Atomic uint32_t queued; /* requests not yet submitted (written under sq_lock) */
    _Atomic uint64_t requests, enters; /* stats: queued, and submissions (sq_lock) */
    _Alignas(64) _Atomic uint32_t cq_lock;
    int efd;
    pt_pollfd pd;
    pt_sched *s;
};

/* The requests this file makes: Linux 5.6 has them all, and the probe
 * (also 5.6) says so; a kernel without the probe has not. */
static bool ops_supported(struct io_uring *ring)
{
    struct io_uring_probe *pr = io_uring_get_probe_ring(ring);
    if (!pr)
        return false;
    bool ok = io_uring_opcode_supported(pr, IORING_OP_RECV) &&
              io_uring_opcode_supported(pr, IORING_OP_SEND) &&
              io_uring_opcode_supported(pr, IORING_OP_SENDMSG) &&
              io_uring_opcode_supported(pr, IORING_OP_ASYNC_CANCEL);
    io_uring_free_probe(pr);
    return ok;
}

int pt__ring_open(pt_sched *s, struct pt__p *p)
{
    struct pt__ring *r = pt__alloc_lines(sizeof *r);
    if (!r)
        return -ENOMEM;
    memset(r, 0, sizeof *r);
    /* Cooperative task running (5.19): a completion's last step runs when
     * the submitting M next enters the kernel (its round's submit, any
     * system call, a tick) instead of an interrupt to its CPU, which
     * costs most on a VM; an M asleep is still woken for it. The flag
     * says when work is waiting, so a round with nothing to submit still
     * enters for it. Older kernels refuse the flags: then without, as
     * PT_RING_COOP=0 asks (the tests run that path here). */
    const char *coop = getenv("PT_RING_COOP");
    struct io_uring_params prm = {.flags = IORING_SETUP_CQSIZE, .cq_entries = RING_CQ};
    if (!coop || strcmp(coop, "0") != 0)
        prm.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
    int err = io_uring_queue_init_params(RING_SQ, &r->ring, &prm);
    if (err == -EINVAL && (prm.flags & IORING_SETUP_COOP_TASKRUN)) {
        prm = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE, .cq_entries = RING_CQ};
        err = io_uring_queue_init_params(RING_SQ, &r->ring, &prm);
    }
    if (err < 0) {
        pt__free_lines(r);
        return err;
    }
    r->efd = -1;
    if (!ops_supported(&r->ring))
        err = -ENOTSUP;
    else if ((r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        err = -errno;
    else if ((err = io_uring_register_eventfd(&r->ring, r->efd)) == 0)
        err = pt_pollfd_open(s->np, &r->pd, r->efd, PT_POLL_READ, (void *)((uintptr_t)r | 1));
    if (err < 0) {
        if (r->efd >= 0)
            close(r->efd);
        io_uring_queue_exit(&r->ring);
        pt__free_lines(r);
        return err;
    }
    r->s = s;
    /* counted as a descriptor: an M looking for work polls the netpoller */
    atomic_fetch_add_explicit(&s->nfds, 1, memory_order_relaxed);
    p->ring = r;
    return 0;
}

void pt__ring_close(struct pt__p *p)
{
    struct pt__ring *r = p->ring;
    if (!r)
        return;
    pt_pollfd_close(&r->pd);
    atomic_fetch_sub_explicit(&r->s->nfds, 1, memory_order_relaxed);
    io_uring_queue_exit(&r->ring);
    close(r->efd);
    pt__free_lines(r);
    p->ring = NULL;
}

struct pt__ring *pt__ring_here(void)
{
    struct pt__m *m = pt__cur_m();
    return m ? m->p->ring : NULL;
}

/* ---- submitting ------------------------------------------------------------ */

/* sq_lock held. What the kernel did not take (it refused one, or was
 * interrupted) stays queued for the next try. */
static void submit_locked(struct pt__ring *r)
{
    (void)io_uring_submit(&r->ring);
    atomic_store_explicit(&r->enters, atomic_load_explicit(&r->enters, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&r->queued, io_uring_sq_ready(&r->ring), memory_order_relaxed);
}

/* sq_lock held: an SQE, submitting the queue if it is full. */
static struct io_uring_sqe *get_sqe(struct pt__ring *r)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) {
        submit_locked(r);
        sqe = io_uring_get_sqe(&r->ring);
    }
    return sqe;
}

int pt__ring_queue(struct pt__ring *r, struct pt__uop *u)
{
    pt__lock(&r->sq_lock);
    struct io_uring_sqe *sqe = get_sqe(r);
    if (!sqe) {
        pt__unlock(&r->sq_lock);
        return -EBUSY;
    }
    u->ring = r;
    /* release, and complete's acquire: the request's fields reach its
     * completion through the kernel, which ThreadSanitizer cannot see */
    atomic_store_explicit(&u->state, UOP_INFLIGHT, memory_order_release);
    /* MSG_NOSIGNAL: a peer gone is -EPIPE, not a SIGPIPE (fdio.c's writes) */
    switch (u->kind) {
    case PT__UOP_RECV:
        io_uring_prep_recv(sqe, u->fd, u->buf, u->len, 0);
        break;
    case PT__UOP_SEND:
        io_uring_prep_send(sqe, u->fd, u->buf, u->len, MSG_NOSIGNAL);
        break;
    case PT__UOP_SENDMSG:
        io_uring_prep_sendmsg(sqe, u->fd, &u->msg, MSG_NOSIGNAL);
        break;
    }
    io_uring_sqe_set_data(sqe, u);
    atomic_store_explicit(&r->requests,
                          atomic_load_explicit(&r->requests, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&r->queued, memory_order_relaxed) + 1;
    atomic_store_explicit(&r->queued, n, memory_order_relaxed);
    if (n >= RING_BATCH)
        submit_locked(r);
    pt__unlock(&r->sq_lock);
    return 0;
}

void pt__ring_cancel(struct pt__uop *u)
{
    struct pt__ring *r = u->ring;
    unsigned n = 0;
    pt__lock(&r->sq_lock);
    struct io_uring_sqe *sqe;
    /* a cancel must not be lost: the G and a closer wait on it */
    while (!(sqe = get_sqe(r))) {
        pt__unlock(&r->sq_lock);
        pt__wait_other(&n);
        pt__lock(&r->sq_lock);
    }
    io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)u, 0);
    io_uring_sqe_set_data(sqe, NULL); /* its own completion is not looked at */
    /* now: the ring's P may be idle, with nobody to submit for it */
    submit_locked(r);
    pt__unlock(&r->sq_lock);
}

/* ---- completing ------------------------------------------------------------ */

/* u's completion, res. Returns the G to ready, or NULL (its G is not
 * parked on it, and sees DONE itself). */
static pt_g *complete(struct pt__uop *u, int32_t res)
{
    (void)atomic_load_explicit(&u->state, memory_order_acquire);
    pt_g *g = u->g; /* before DONE: then u may be gone */
    u->res = res;
    if (pt__g_claim(g)) {
        /* release: the G reads res after DONE */
        atomic_store_explicit(&u->state, UOP_DONE, memory_order_release);
        return g;
    }
    /* the deadline won: the G cancels, and parks on WAITING or sees DONE */
    if (atomic_exchange_explicit(&u->state, UOP_DONE, memory_order_acq_rel) == UOP_WAITING)
        return g;
    return NULL;
}

static bool reap(struct pt__ring *r)
{
    bool any = false;
    for (;;) {
        pt_g *gs[REAP_BATCH];
        int n = 0;
        unsigned seen = 0, head;
        struct io_uring_cqe *cqe;
        pt__lock(&r->cq_lock);
        io_uring_for_each_cqe(&r->ring, head, cqe)
        {
            seen++;
            struct pt__uop *u = io_uring_cqe_get_data(cqe);
            pt_g *g = u ? complete(u, cqe->res) : NULL;
            if (g && (gs[n++] = g, n == REAP_BATCH))
                break;
        }
        io_uring_cq_advance(&r->ring, seen);
        pt__unlock(&r->cq_lock);
        for (int i = 0; i < n; i++)
            if (pt_ready(gs[i]) != 0)
                pt__sched_bad(gs[i], "ring completion");
        any |= n > 0;
        if (n < REAP_BATCH)
            return any;
    }
}

/* Whether the kernel holds completion work for this ring's submitters
 * (IORING_SQ_TASKRUN; written by the kernel only). */
static bool work_waiting(struct pt__ring *r)
{
    return (__atomic_load_n(r->ring.sq.kflags, __ATOMIC_RELAXED) & IORING_SQ_TASKRUN) != 0;
}

bool pt__ring_flush(struct pt__ring *r)
{
    if (atomic_load_explicit(&r->queued, memory_order_relaxed) != 0) {
        pt__lock(&r->sq_lock);
        submit_locked(r); /* entering runs the waiting work too */
        pt__unlock(&r->sq_lock);
    } else if (work_waiting(r)) {
        (void)io_uring_get_events(&r->ring);
    }
    return reap(r);
}

void pt__ring_event(void *udata)
{
    struct pt__ring *r = (void *)((uintptr_t)udata & ~(uintptr_t)1);
    /* reset before reaping: a completion after the reap signals again */
    uint64_t v;
    (void)!read(r->efd, &v, sizeof v);
    reap(r);
}

/* park's commit for the wait after a cancel. */
static bool wait_commit(void *arg)
{
    struct pt__uop *u = arg;
    uint32_t w = UOP_INFLIGHT;
    return atomic_compare_exchange_strong_explicit(&u->state, &w, UOP_WAITING,
                                                   memory_order_acq_rel, memory_order_acquire);
}

void pt__ring_settle(struct pt__uop *u)
{
    if (atomic_load_explicit(&u->state, memory_order_acquire) == UOP_DONE)
        return;
    pt__ring_cancel(u);
    pt__park(u->g, wait_commit, u);
    if (atomic_load_explicit(&u->state, memory_order_acquire) != UOP_DONE)
        pt__sched_bad(u->g, "ring request settle");
}

void pt__ring_read_stats(const struct pt__p *p, uint64_t *requests, uint64_t *enters)
{
    if (p->ring) {
        *requests += atomic_load_explicit(&p->ring->requests, memory_order_relaxed);
        *enters += atomic_load_explicit(&p->ring->enters, memory_order_relaxed);
    }
}
