/* A P's io_uring for its Gs' socket reads and writes (PT_FD_IO_URING;
 * fdring.c): a read or write is a request on the ring of the P the G
 * runs on, the G parks until its completion, and the P submits what its
 * Gs queued in one io_uring_enter when it runs out of Gs to run (the
 * core calls the ring's p->queue for that, internal.h). Included by
 * fdio.c (the calls) and sched.c (a P's life). */
#ifndef PTIMER_SCHED_FDRING_H
#define PTIMER_SCHED_FDRING_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "sched/internal.h"

struct pt__fd;
struct pt__ring;

enum pt__uop_kind { PT__UOP_RECV, PT__UOP_SEND, PT__UOP_SENDMSG };

/* A G's request: on its stack from queue to settle. The G, its kind and
 * buffers are written before it is queued; ring, res and state after. */
struct pt__uop {
    pt_g *g;
    struct pt__fd *f;
    int fd;
    enum pt__uop_kind kind;
    void *buf; /* RECV, SEND */
    size_t len;
    struct msghdr msg;     /* SENDMSG */
    struct pt__ring *ring; /* where it was queued */
    /* In f's list while the kernel may hold it, so a close or a cancel
     * of every call can end it (f's lock). */
    struct pt__uop *prev, *next;
    bool listed;
    int32_t res;            /* the completion's; read once state is DONE */
    _Atomic uint32_t state; /* PT__UOP_*: see fdring.c */
    /* A cancel was started: a request gets one at most, so the slots it
     * holds in the ring's CQ are known (fdring.c) */
    _Atomic bool cancel_started;
};

/* A cancel still to reach the kernel: what a caller that may not wait
 * (it holds a descriptor's lock) keeps, to finish it after letting go. */
struct pt__ring_cancel {
    struct pt__ring *r;
    uint64_t key;
    bool placed; /* its SQE is in the ring: a retry only submits */
};

#ifdef PT_HAVE_URING

/* The calling M's P's ring, NULL outside one or in poll mode. */
struct pt__ring *pt__ring_here(void);
/* Queues u on r (r's owner, inside u's G's park commit, f's lock held):
 * submitted at the P's next round, or now when the batch is full.
 * 0; -EBUSY when the kernel takes no submission (u not queued). */
int pt__ring_queue(struct pt__ring *r, struct pt__uop *u);
/* Asks the kernel to end u (a close, a cancel, its deadline): u then
 * completes, with -ECANCELED if it had not yet. Any thread; never waits.
 * 0: submitted, or u had its cancel already; -EAGAIN: the ring had no
 * room or the kernel refused the submission, and c holds what
 * pt__ring_cancel_finish must still do. */
int pt__ring_cancel_start(struct pt__uop *u, struct pt__ring_cancel *c);
/* Retries c until the kernel has it, backing off between tries. With no
 * lock held. */
void pt__ring_cancel_finish(struct pt__ring_cancel *c);
/* After the G's park ended: waits until u's completion came (cancelling
 * it first if the deadline ended the park). */
void pt__ring_settle(struct pt__uop *u);
/* u, settled, is off f's list for good (f's lock): the CQ room kept for
 * a cancel it never had is given back. */
void pt__ring_forget(struct pt__uop *u);
/* Tests: how many reaps of p's ring found completions the kernel had
 * kept past the CQ (none, while its room is counted right). */
uint64_t pt__ring_overflows(const struct pt__p *p);

#else /* built without liburing: no P has a ring */

static inline struct pt__ring *pt__ring_here(void)
{
    return NULL;
}
static inline int pt__ring_queue(struct pt__ring *r, struct pt__uop *u)
{
    (void)r;
    (void)u;
    return -ENOTSUP;
}
static inline int pt__ring_cancel_start(struct pt__uop *u, struct pt__ring_cancel *c)
{
    (void)u;
    (void)c;
    return 0;
}
static inline void pt__ring_cancel_finish(struct pt__ring_cancel *c)
{
    (void)c;
}
static inline void pt__ring_settle(struct pt__uop *u)
{
    (void)u;
}
static inline void pt__ring_forget(struct pt__uop *u)
{
    (void)u;
}
static inline uint64_t pt__ring_overflows(const struct pt__p *p)
{
    (void)p;
    return 0;
}

#endif
#endif
