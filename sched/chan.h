/* A channel's insides, shared by chan.c (send, recv, close) and select.c.
 *
 * Go's hchan: a lock, a ring buffer of cap elements, and two queues of
 * waiting Gs (recvq, sendq), each waiter a sudog on its G's own stack.
 * Every waiter parks with a timed park (park.c), so it has a wake token:
 * whoever takes a waiter off a queue to complete its operation claims the
 * token first (pt__g_claim). A waiter whose token is already gone -- its
 * deadline passed, or it is a select that another case won -- is skipped
 * (and dropped from the queue). Exactly one party ever completes a parked
 * operation, and that party readies the G, after releasing the lock.
 */
#ifndef PTIMER_SCHED_CHAN_H
#define PTIMER_SCHED_CHAN_H

#include "sched/internal.h"

struct pt__sudog {
    pt_g *g;
    pt_chan *c;
    void *elem;     /* send: the value to take; recv: where to put it (may be NULL) */
    bool success;   /* the operation was done (false: woken by close) */
    bool queued;    /* still on c's queue (c->lock) */
    bool solo;      /* no deadline and no select: only a holder of c->lock can end it */
    int case_index; /* select: which case this is */
    struct pt__sudog *next, *prev;
};

struct pt__waitq {
    struct pt__sudog *first, *last;
};

struct pt_chan {
    _Atomic uint32_t lock; /* pt__lock: everything below */
    uint32_t magic;
    bool closed;
    size_t elem_size;
    size_t cap;
    size_t qcount; /* elements in the buffer */
    size_t sendx, recvx;
    struct pt__waitq recvq, sendq;
    /* A Timer's or Ticker's channel: its timer, which delivers lazily
     * (sched/time.c): every receive polls it first, and a G about to park
     * on the channel says so (block), so that the timer enters an engine
     * only while someone waits. Set once, by the time package. */
    struct pt_time_timer *timer;
    /* The scheduler whose G made it (NULL: another thread): a wait on it
     * is durable for that scheduler's virtual time only (vtime.h). */
    pt_sched *owner;
    _Alignas(16) unsigned char buf[]; /* cap * elem_size */
};

#define PT__CHAN_MAGIC 0x6368616eu /* "chan" */

void pt__waitq_push(struct pt__waitq *q, struct pt__sudog *sg);
void pt__waitq_remove(struct pt__waitq *q, struct pt__sudog *sg);
/* The first waiter whose wake-up this caller claims, off the queue; the
 * ones it skips (already claimed) are dropped from the queue as well. */
struct pt__sudog *pt__waitq_take(struct pt__waitq *q);

/* A send to c that finds sg (a waiting receiver) or room; a receive that
 * finds sg (a waiting sender) or a buffered element. c->lock held; they
 * fill sg and mark it done, the caller readies sg->g after unlocking. */
void pt__chan_send_to(pt_chan *c, struct pt__sudog *sg, const void *elem);
void pt__chan_recv_from(pt_chan *c, struct pt__sudog *sg, void *elem);
void pt__chan_buf_put(pt_chan *c, const void *elem);
/* Empties c for reuse as a new channel of its size; false (c untouched)
 * if it is closed or a G is queued on it. Without c's lock: the caller
 * knows nobody else can touch c now (a timer's channel, its timer freed
 * with no G blocked on it, every unblock ordered before by the acquire
 * that saw so), and a lock would only repeat that order. */
bool pt__chan_reuse(pt_chan *c);
/* Takes a buffered value out and drops it; false if there was none. */
bool pt__chan_drain(pt_chan *c);
/* A G is queued on c, still waiting to send or receive (not one that is
 * leaving: woken by its deadline or by another case of its select). */
bool pt__chan_waited(pt_chan *c);
void pt__chan_buf_get(pt_chan *c, void *elem);

/* Readies the G of a sudog taken with pt__waitq_take, telling it which
 * of its waits was completed. */
void pt__sudog_ready(struct pt__sudog *sg);

static inline void pt__chan_zero(const pt_chan *c, void *elem)
{
    if (elem && c->elem_size)
        __builtin_memset(elem, 0, c->elem_size);
}

#endif
