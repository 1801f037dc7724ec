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
 * completion, registered with the netpoller as the ring's pollee (internal.h), so a P
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
 * No completion is ever stranded in the kernel. Past a full CQ the
 * kernel keeps completions on an overflow list, and gives them back only
 * to a thread that enters it asking for events; a completion that goes
 * there signals no eventfd (Linux signals it when the CQ's tail moves),
 * so nothing here would look, and a drain racing such a completion could
 * miss it. So the ring never lets the CQ fill: every request is admitted
 * only with room for its completion and for that of the one cancel it may
 * get (`held` counts the room taken, given back as completions are reaped
 * and when a request ends without a cancel), and a request with no room
 * is refused: its G makes the system call and waits on the netpoller,
 * as in poll mode. Every completion then lands in the CQ and signals the
 * eventfd. The CQ is sized for the descriptors the process may open (two
 * requests each), so a P refuses only past that. Every reap still checks
 * the kernel's overflow flag and asks for what it holds, on whichever
 * thread reaps, in case a kernel ever posts a completion this file did
 * not count for.
 *
 * Nothing waits on an idle P for a submission, and nothing waits holding
 * a lock. A submission the kernel refuses (it is short of memory) stays
 * queued: a request's P retries it before its M may sleep (proc.c), and a
 * cancel is retried by the thread that asked for it, after letting go of
 * the descriptor's lock.
 *
 * Locks: sq_lock guards the submission queue (the P's Gs queue, anyone
 * cancels); cq_lock the completion queue (the P's round, the netpoller's
 * event). A descriptor's lock is taken before sq_lock (fdio.c queues
 * and cancels under it), never inside either ring lock. */
#include <errno.h>
#include <stddef.h>
#include <liburing.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/lock.h"
#include "sched/fd.h"
#include "sched/fdring.h"

#define RING_SQ 256
/* The CQ: two requests for each descriptor the process may open, each
 * with room for itself and a cancel, between these bounds (the kernel's
 * largest is 65,536 entries of 16 bytes). PT_RING_CQ sets it (tests). */
#define RING_CQ_MIN 4096
#define RING_CQ_MAX 65536
/* Queued requests a P submits at once, without waiting for its round. */
#define RING_BATCH 32
#define REAP_BATCH 64

enum { UOP_INFLIGHT, UOP_DONE, UOP_WAITING };

struct pt__ring {
    struct pt__pollee pollee; /* first: its eventfd's netpoll events point to it */
    struct pt__p_queue queue; /* what the P's M calls at its rounds (p->queue) */
    struct io_uring ring;
    _Atomic uint32_t sq_lock;
    _Atomic uint32_t queued;           /* requests not yet submitted (written under sq_lock) */
    _Atomic uint64_t requests, enters; /* stats: queued, and submissions (sq_lock) */
    /* CQ room taken: 2 per request from its queueing (itself and its
     * cancel), less 1 per completion reaped and 1 when a request ends
     * with no cancel. Taken under sq_lock, given back anywhere: never
     * above cq_room, so the CQ never fills (see the top). */
    _Alignas(64) _Atomic uint32_t held;
    _Atomic uint64_t overflows; /* times a reap found the kernel's overflow list in use */
    _Alignas(64) _Atomic uint32_t cq_lock;
    uint32_t cq_room; /* the CQ's entries (the kernel's, after its rounding) */
    uint32_t rw_max;  /* the most one read or write moves: the kernel's MAX_RW_COUNT */
    int efd;
    pt_pollreg reg; /* its eventfd's registration */
    pt_sched *s;
};
_Static_assert(offsetof(struct pt__ring, pollee) == 0, "a netpoll event's pollee is its ring");

_Noreturn static void ring_bad(struct pt__ring *r, const char *what, int err)
{
    fprintf(stderr, "ptimer sched: ring %p (fd %d): %s: %s (held %u of %u)\n", (void *)r,
            r->ring.ring_fd, what, strerror(-err),
            atomic_load_explicit(&r->held, memory_order_relaxed), r->cq_room);
    abort();
}

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

static uint32_t pow2_at_least(uint64_t n)
{
    uint32_t v = 1;
    while (v < n && v < (1u << 31))
        v <<= 1;
    return v;
}

/* The CQ entries to ask for: PT_RING_CQ, or four for every descriptor the
 * process may open (a read and a write, each with its cancel). */
static uint32_t cq_entries(void)
{
    const char *e = getenv("PT_RING_CQ");
    if (e && *e) {
        char *end;
        unsigned long v = strtoul(e, &end, 10);
        if (*end == '\0' && v >= 2)
            return pow2_at_least(v < RING_CQ_MAX ? v : RING_CQ_MAX);
    }
    struct rlimit rl;
    uint64_t want = RING_CQ_MAX; /* no limit to read */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        want = (uint64_t)rl.rlim_cur * 4;
    want = want < RING_CQ_MIN ? RING_CQ_MIN : want > RING_CQ_MAX ? RING_CQ_MAX : want;
    return pow2_at_least(want);
}

/* io_uring_setup with a CQ of cq entries, halved while the kernel is
 * short of memory (before 5.12 a ring counts against RLIMIT_MEMLOCK). */
static int ring_init(struct io_uring *ring, uint32_t cq, bool coop)
{
    for (;;) {
        uint32_t sq = cq < RING_SQ ? cq : RING_SQ;
        struct io_uring_params prm = {.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP,
                                      .cq_entries = cq};
        if (coop)
            prm.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
        int err = io_uring_queue_init_params(sq, ring, &prm);
        if (err == -EINVAL && coop) {
            coop = false; /* before 5.19 */
            continue;
        }
        if (err != -ENOMEM || cq <= RING_CQ_MIN)
            return err;
        cq /= 2;
    }
}

static void ring_ready(struct pt__pollee *pe, pt_sched *s, unsigned events);
static bool queue_flush(struct pt__p_queue *q);
static bool queue_owes(struct pt__p_queue *q);

/* p's ring, its eventfd registered with s's netpoller: 0 or -errno (the
 * kernel's io_uring_setup error). */
static int ring_open(pt_sched *s, struct pt__p *p)
{
    struct pt__ring *r = pt__alloc_lines(sizeof *r);
    if (!r)
        return -ENOMEM;
    memset(r, 0, sizeof *r);
    r->pollee.ready = ring_ready;
    r->queue = (struct pt__p_queue){.flush = queue_flush, .owes = queue_owes};
    /* Cooperative task running (5.19): a completion's last step runs when
     * the submitting M next enters the kernel (its round's submit, any
     * system call, a tick) instead of an interrupt to its CPU, which
     * costs most on a VM; an M asleep is still woken for it. The flag
     * says when work is waiting, so a round with nothing to submit still
     * enters for it. Older kernels refuse the flags: then without, as
     * PT_RING_COOP=0 asks (the tests run that path here). */
    const char *coop = getenv("PT_RING_COOP");
    int err = ring_init(&r->ring, cq_entries(), !coop || strcmp(coop, "0") != 0);
    if (err < 0) {
        pt__free_lines(r);
        return err;
    }
    r->cq_room = r->ring.cq.ring_entries;
    long page = sysconf(_SC_PAGESIZE);
    r->rw_max = (uint32_t)(INT_MAX & ~(page > 0 ? page - 1 : 4095));
    r->efd = -1;
    if (!ops_supported(&r->ring))
        err = -ENOTSUP;
    else if ((r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        err = -errno;
    else if ((err = io_uring_register_eventfd(&r->ring, r->efd)) == 0)
        err = pt_pollreg_open(s->np, &r->reg, r->efd, PT_POLL_READ, &r->pollee);
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
    p->queue = &r->queue;
    return 0;
}

/* At a P's end: nothing may be in flight (every G has ended). */
static void ring_close(struct pt__p *p)
{
    struct pt__ring *r = p->ring;
    if (!r)
        return;
    pt_pollreg_close(&r->reg);
    atomic_fetch_sub_explicit(&r->s->nfds, 1, memory_order_relaxed);
    io_uring_queue_exit(&r->ring);
    close(r->efd);
    pt__free_lines(r);
    p->ring = NULL;
    p->queue = NULL;
}

struct pt__ring *pt__ring_here(void)
{
    struct pt__m *m = pt__cur_m();
    return m ? m->p->ring : NULL;
}

/* ---- CQ room ---------------------------------------------------------------- */

/* Gives back n entries of CQ room. Release: the CQ head moved past the
 * reaped entries before (io_uring_cq_advance), so a queue that sees the
 * room (acquire) submits after the kernel can see it too. */
static void give_back(struct pt__ring *r, uint32_t n)
{
    uint32_t was = atomic_fetch_sub_explicit(&r->held, n, memory_order_release);
    if (was < n)
        ring_bad(r, "CQ room given back that was never taken", -EOVERFLOW);
}

/* ---- test hooks ------------------------------------------------------------ */

#ifdef PT_TEST_HOOKS
/* Tests: admit every request, room or not, so that the kernel's overflow
 * list fills and reap's draining of it is what wakes the Gs; and refuse
 * every submission while pt__ring_refuse is set, as a kernel short of
 * memory would, counting them. */
_Atomic bool pt__ring_admit_all;
_Atomic bool pt__ring_refuse;
_Atomic int pt__ring_refused;
static bool admit_all(void)
{
    return atomic_load_explicit(&pt__ring_admit_all, memory_order_relaxed);
}
static bool refuse_submit(void)
{
    if (!atomic_load_explicit(&pt__ring_refuse, memory_order_relaxed))
        return false;
    atomic_fetch_add_explicit(&pt__ring_refused, 1, memory_order_relaxed);
    return true;
}
#else
static bool admit_all(void)
{
    return false;
}
static bool refuse_submit(void)
{
    return false;
}
#endif

/* ---- submitting ------------------------------------------------------------ */

/* sq_lock held: submits what is queued. 0, or the kernel's -errno for a
 * submission it refused (what it did not take stays queued, for a retry:
 * ring_owes). */
static int submit_locked(struct pt__ring *r)
{
    int err = refuse_submit() ? -EAGAIN : io_uring_submit(&r->ring);
    atomic_store_explicit(&r->enters, atomic_load_explicit(&r->enters, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    unsigned left = io_uring_sq_ready(&r->ring);
    atomic_store_explicit(&r->queued, left, memory_order_relaxed);
    return err < 0 ? err : left ? -EAGAIN : 0;
}

/* sq_lock held: an SQE, submitting the queue if it is full. */
static struct io_uring_sqe *get_sqe(struct pt__ring *r)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) {
        (void)submit_locked(r);
        sqe = io_uring_get_sqe(&r->ring);
    }
    return sqe;
}

int pt__ring_queue(struct pt__ring *r, struct pt__uop *u)
{
    pt__lock(&r->sq_lock);
    /* acquire: pairs with give_back's release */
    if (atomic_load_explicit(&r->held, memory_order_acquire) + 2 > r->cq_room && !admit_all()) {
        pt__unlock(&r->sq_lock);
        return -EBUSY; /* no CQ room: the G takes the netpoller's path */
    }
    struct io_uring_sqe *sqe = get_sqe(r);
    if (!sqe) {
        pt__unlock(&r->sq_lock);
        return -EBUSY;
    }
    atomic_fetch_add_explicit(&r->held, 2, memory_order_relaxed);
    u->ring = r;
    atomic_store_explicit(&u->cancel_started, false, memory_order_relaxed);
    /* release, and complete's acquire: the request's fields reach its
     * completion through the kernel, which ThreadSanitizer cannot see */
    atomic_store_explicit(&u->state, UOP_INFLIGHT, memory_order_release);
    /* the kernel moves at most rw_max bytes a call; liburing's length is
     * 32 bits, so a longer one would be cut to its low bits: a short count
     * instead, as read(2) and write(2) give (fdio.c's loops go on) */
    unsigned len = u->len > r->rw_max ? r->rw_max : (unsigned)u->len;
    /* MSG_NOSIGNAL: a peer gone is -EPIPE, not a SIGPIPE (fdio.c's writes) */
    switch (u->kind) {
    case PT__UOP_RECV:
        io_uring_prep_recv(sqe, u->fd, u->buf, len, 0);
        break;
    case PT__UOP_SEND:
        io_uring_prep_send(sqe, u->fd, u->buf, len, MSG_NOSIGNAL);
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
        (void)submit_locked(r); /* refused: the P's round retries */
    pt__unlock(&r->sq_lock);
    return 0;
}

/* One try at c: its SQE placed if not yet, and the queue submitted. */
static int cancel_try(struct pt__ring_cancel *c)
{
    struct pt__ring *r = c->r;
    pt__lock(&r->sq_lock);
    if (!c->placed) {
        struct io_uring_sqe *sqe = get_sqe(r);
        if (!sqe) {
            pt__unlock(&r->sq_lock);
            return -EAGAIN;
        }
        io_uring_prep_cancel64(sqe, c->key, 0);
        io_uring_sqe_set_data(sqe, NULL); /* its own completion is not looked at */
        c->placed = true;
    }
    /* now: the ring's P may be idle, with nobody to submit for it */
    int err = submit_locked(r);
    pt__unlock(&r->sq_lock);
    return err < 0 ? -EAGAIN : 0;
}

int pt__ring_cancel_start(struct pt__uop *u, struct pt__ring_cancel *c)
{
    /* one cancel per request: its CQ room was taken with it */
    if (atomic_exchange_explicit(&u->cancel_started, true, memory_order_relaxed))
        return 0;
    *c = (struct pt__ring_cancel){.r = u->ring, .key = (uint64_t)(uintptr_t)u};
    return cancel_try(c);
}

/* The key may outlive u once the lock is let go: u's request completes,
 * its G forgets it, and the G's next request may sit at the same
 * address. Cancelling that one is harmless: it ends with -ECANCELED on
 * an open descriptor, which fdio.c takes as "try again". */
void pt__ring_cancel_finish(struct pt__ring_cancel *c)
{
    while (cancel_try(c) < 0)
        pt__backoff(); /* the kernel is short of memory */
}

static bool ring_owes(struct pt__ring *r)
{
    return atomic_load_explicit(&r->queued, memory_order_relaxed) != 0;
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

/* Readies the Gs of every completion in the CQ, and of those the kernel
 * kept past it, on whichever thread reaps. */
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
        if (seen)
            give_back(r, seen);
        for (int i = 0; i < n; i++)
            if (pt_ready(gs[i]) != 0)
                pt__sched_bad(gs[i], "ring completion");
        any |= n > 0;
        if (n == REAP_BATCH)
            continue;
        if (!io_uring_cq_has_overflow(&r->ring))
            return any;
        /* completions past the CQ: entering for events moves them in */
        atomic_fetch_add_explicit(&r->overflows, 1, memory_order_relaxed);
        int err = io_uring_get_events(&r->ring);
        if (err == -EBADR) /* the kernel dropped one: its G can never wake */
            ring_bad(r, "the kernel dropped completions", err);
    }
}

/* Whether the kernel holds completion work for this ring's submitters
 * (IORING_SQ_TASKRUN; written by the kernel only). */
static bool work_waiting(struct pt__ring *r)
{
    return (__atomic_load_n(r->ring.sq.kflags, __ATOMIC_RELAXED) & IORING_SQ_TASKRUN) != 0;
}

static bool ring_flush(struct pt__ring *r)
{
    if (atomic_load_explicit(&r->queued, memory_order_relaxed) != 0) {
        pt__lock(&r->sq_lock);
        (void)submit_locked(r); /* entering runs the waiting work too; refused: retried */
        pt__unlock(&r->sq_lock);
    } else if (work_waiting(r)) {
        (void)io_uring_get_events(&r->ring);
    }
    return reap(r);
}

/* The ring's eventfd is readable: its completions, reaped. */
static void ring_ready(struct pt__pollee *pe, pt_sched *s, unsigned events)
{
    (void)s, (void)events;
    struct pt__ring *r = (struct pt__ring *)pe;
    /* reset before reaping: a completion after the reap signals again */
    uint64_t v;
    (void)!read(r->efd, &v, sizeof v);
    reap(r);
}

static bool queue_flush(struct pt__p_queue *q)
{
    return ring_flush((struct pt__ring *)((char *)q - offsetof(struct pt__ring, queue)));
}

static bool queue_owes(struct pt__p_queue *q)
{
    return ring_owes((struct pt__ring *)((char *)q - offsetof(struct pt__ring, queue)));
}

/* park's commit for the wait after a cancel. */
static bool wait_commit(void *arg)
{
    struct pt__uop *u = arg;
    uint32_t w = UOP_INFLIGHT;
    return atomic_compare_exchange_strong_explicit(&u->state, &w, UOP_WAITING, memory_order_acq_rel,
                                                   memory_order_acquire);
}

void pt__ring_settle(struct pt__uop *u)
{
    if (atomic_load_explicit(&u->state, memory_order_acquire) == UOP_DONE)
        return;
    struct pt__ring_cancel c;
    if (pt__ring_cancel_start(u, &c) < 0)
        pt__ring_cancel_finish(&c); /* no lock held here */
    pt__g_waits(u->g, PT__WAIT_RING, u->f, false);
    pt__park(u->g, wait_commit, u);
    if (atomic_load_explicit(&u->state, memory_order_acquire) != UOP_DONE)
        pt__sched_bad(u->g, "ring request settle");
}

void pt__ring_forget(struct pt__uop *u)
{
    /* no cancel started (none can start now: u is off f's list, and its
     * G is done with it): that room was never used */
    if (!atomic_exchange_explicit(&u->cancel_started, true, memory_order_relaxed))
        give_back(u->ring, 1);
}

/* Adds p's counts to pt_sched_stats' ring_requests and ring_enters */
static void ring_read_stats(const struct pt__p *p, pt_sched_stats *out)
{
    if (p->ring) {
        out->ring_requests += atomic_load_explicit(&p->ring->requests, memory_order_relaxed);
        out->ring_enters += atomic_load_explicit(&p->ring->enters, memory_order_relaxed);
    }
}

uint64_t pt__ring_overflows(const struct pt__p *p)
{
    return p->ring ? atomic_load_explicit(&p->ring->overflows, memory_order_relaxed) : 0;
}

/* A ring for each P of a scheduler that asked for them (PT_FD_IO_URING) */
static int ring_p_open(pt_sched *s, struct pt__p *p)
{
    return s->opt.fd_io == PT_FD_IO_URING ? ring_open(s, p) : 0;
}

const struct pt__service pt__ring_service = {
    .p_open = ring_p_open, .p_close = ring_close, .p_stats = ring_read_stats};
