/* Channels (Go's runtime/chan.go): make, send, recv, their deadline and
 * non-blocking forms, close, free, len, cap. See chan.h for the waiters
 * and why every parked operation is completed exactly once. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lock.h"
#include "sched/chan.h"

/* ---- wait queues -------------------------------------------------------- */

void pt__waitq_push(struct pt__waitq *q, struct pt__sudog *sg)
{
    sg->next = NULL;
    sg->prev = q->last;
    if (q->last)
        q->last->next = sg;
    else
        q->first = sg;
    q->last = sg;
    sg->queued = true;
}

void pt__waitq_remove(struct pt__waitq *q, struct pt__sudog *sg)
{
    if (!sg->queued)
        return;
    if (sg->prev)
        sg->prev->next = sg->next;
    else
        q->first = sg->next;
    if (sg->next)
        sg->next->prev = sg->prev;
    else
        q->last = sg->prev;
    sg->next = sg->prev = NULL;
    sg->queued = false;
}

struct pt__sudog *pt__waitq_take(struct pt__waitq *q)
{
    struct pt__sudog *sg;
    while ((sg = q->first)) {
        pt__waitq_remove(q, sg);
        /* A waiter with no deadline and no other case has no one to race
         * for its token: the claim needs no CAS (Go's selectDone CAS is
         * for select waiters only). */
        if (sg->solo) {
            atomic_store_explicit(&sg->g->park.wake_token, 0, memory_order_relaxed);
            return sg;
        }
        if (pt__g_claim(sg->g))
            return sg;
        /* its deadline passed or another of its select cases won: it
         * cleans up after itself, and finds itself already off this queue */
    }
    return NULL;
}

void pt__sudog_ready(struct pt__sudog *sg)
{
    sg->g->wake_sg = sg;
    if (pt_ready(sg->g) != 0)
        pt__sched_bad(sg->g, "channel wake-up");
}

/* ---- the buffer and hand-offs (c->lock) --------------------------------- */

static inline unsigned char *slot(pt_chan *c, size_t i)
{
    return c->buf + i * c->elem_size;
}

/* An element's copy: the common sizes as fixed-size copies the compiler
 * inlines (a word is most channels' element), the rest through memcpy. */
static inline void elem_copy(void *dst, const void *src, size_t n)
{
    switch (n) {
    case 8:
        memcpy(dst, src, 8);
        return;
    case 4:
        memcpy(dst, src, 4);
        return;
    case 16:
        memcpy(dst, src, 16);
        return;
    default:
        memcpy(dst, src, n);
    }
}

void pt__chan_buf_put(pt_chan *c, const void *elem)
{
    elem_copy(slot(c, c->sendx), elem, c->elem_size);
    if (++c->sendx == c->cap)
        c->sendx = 0;
    c->qcount++;
}

void pt__chan_buf_get(pt_chan *c, void *elem)
{
    if (elem)
        elem_copy(elem, slot(c, c->recvx), c->elem_size);
    if (++c->recvx == c->cap)
        c->recvx = 0;
    c->qcount--;
}

/* To a waiting receiver, straight into its memory: the buffer, if any, is
 * empty (a receiver waits only on an empty channel). */
void pt__chan_send_to(pt_chan *c, struct pt__sudog *sg, const void *elem)
{
    if (sg->elem && c->elem_size)
        elem_copy(sg->elem, elem, c->elem_size);
    sg->success = true;
}

/* From a waiting sender: unbuffered, straight from its memory; buffered
 * (then the buffer is full), the oldest element, and the sender's goes in
 * at the back, which keeps FIFO order (Go's recv). */
void pt__chan_recv_from(pt_chan *c, struct pt__sudog *sg, void *elem)
{
    if (c->cap == 0) {
        if (elem && c->elem_size)
            elem_copy(elem, sg->elem, c->elem_size);
    } else {
        pt__chan_buf_get(c, elem);
        pt__chan_buf_put(c, sg->elem);
    }
    sg->success = true;
}

/* ---- the calls -------------------------------------------------------------- */

static inline bool chan_valid(const pt_chan *c)
{
    return c && c->magic == PT__CHAN_MAGIC;
}

int pt_chan_make(pt_chan **out, size_t elem_size, size_t cap)
{
    size_t bytes;
    /* elem_size on its own too: an unbuffered channel has no buffer, but
     * every hand-off copies an element */
    if (!out || elem_size > (SIZE_MAX >> 2) || __builtin_mul_overflow(elem_size, cap, &bytes) ||
        __builtin_add_overflow(bytes, sizeof(pt_chan), &bytes) || bytes > (SIZE_MAX >> 2))
        return -EINVAL;
    pt_chan *c = pt__malloc(bytes);
    if (!c)
        return -ENOMEM;
    memset(c, 0, sizeof *c);
    pt__lock_init(&c->lock);
    c->elem_size = elem_size;
    c->cap = cap;
    c->magic = PT__CHAN_MAGIC;
    c->owner = pt_sched_current();
    *out = c;
    return 0;
}

/* park's commit: the sudog is queued; let wakers at it */
static bool unlock_chan(void *arg)
{
    pt__unlock(&((pt_chan *)arg)->lock);
    return true;
}

static int chan_send(pt_chan *c, const void *elem, pt_nanos deadline, bool block)
{
    if (!chan_valid(c) || (!elem && c->elem_size))
        return -EINVAL;
    pt_g *g = pt_g_current();
    if (block && !g)
        return -EPERM;
    pt__lock(&c->lock);
    if (c->closed) {
        pt__unlock(&c->lock);
        return -EPIPE;
    }
    struct pt__sudog *sg = pt__waitq_take(&c->recvq);
    if (sg) {
        pt__chan_send_to(c, sg, elem);
        pt__unlock(&c->lock);
        pt__sudog_ready(sg);
        return 0;
    }
    if (c->qcount < c->cap) {
        pt__chan_buf_put(c, elem);
        pt__unlock(&c->lock);
        return 0;
    }
    if (!block || (deadline != 0 && deadline <= pt__now(g->s))) {
        pt__unlock(&c->lock);
        return block ? -ETIMEDOUT : -EAGAIN;
    }
    struct pt__sudog me = {.g = g, .c = c, .elem = (void *)elem, .solo = deadline == 0};
    pt__waitq_push(&c->sendq, &me);
    g->wake_sg = NULL;
    pt__g_waits(g, PT__WAIT_CHAN_SEND, c, c->owner == g->s);
    if (pt__park_until(g, unlock_chan, c, deadline)) {
        pt__lock(&c->lock);
        pt__waitq_remove(&c->sendq, &me);
        pt__unlock(&c->lock);
        return -ETIMEDOUT;
    }
    return me.success ? 0 : -EPIPE; /* not done: woken by close */
}

/* recv's answer when it would park on a timer's channel not yet told that
 * a G waits (c->lock released): the caller tells it, and tries again. */
#define RECV_BLOCK_TIMER 1000

static int recv_locked(pt_chan *c, void *elem, pt_nanos deadline, bool block, bool told)
{
    pt_g *g = pt_g_current();
    pt__lock(&c->lock);
    if (c->closed && c->qcount == 0) {
        pt__unlock(&c->lock);
        pt__chan_zero(c, elem);
        return 0;
    }
    struct pt__sudog *sg = pt__waitq_take(&c->sendq);
    if (sg) {
        pt__chan_recv_from(c, sg, elem);
        pt__unlock(&c->lock);
        pt__sudog_ready(sg);
        return 1;
    }
    if (c->qcount > 0) {
        pt__chan_buf_get(c, elem);
        pt__unlock(&c->lock);
        return 1;
    }
    if (!block || (deadline != 0 && deadline <= pt__now(g->s))) {
        pt__unlock(&c->lock);
        return block ? -ETIMEDOUT : -EAGAIN;
    }
    if (c->timer && !told) {
        pt__unlock(&c->lock);
        return RECV_BLOCK_TIMER;
    }
    struct pt__sudog me = {.g = g, .c = c, .elem = elem, .solo = deadline == 0};
    pt__waitq_push(&c->recvq, &me);
    g->wake_sg = NULL;
    pt__g_waits(g, PT__WAIT_CHAN_RECV, c, c->owner == g->s);
    if (pt__park_until(g, unlock_chan, c, deadline)) {
        pt__lock(&c->lock);
        pt__waitq_remove(&c->recvq, &me);
        pt__unlock(&c->lock);
        return -ETIMEDOUT;
    }
    if (me.success)
        return 1;
    pt__chan_zero(c, elem); /* woken by close */
    return 0;
}

static int chan_recv(pt_chan *c, void *elem, pt_nanos deadline, bool block)
{
    if (!chan_valid(c))
        return -EINVAL;
    if (block && !pt_g_current())
        return -EPERM;
    if (!c->timer)
        return recv_locked(c, elem, deadline, block, false);
    pt__time_chan_poll(c->timer);
    int r = recv_locked(c, elem, deadline, block, false);
    if (r != RECV_BLOCK_TIMER)
        return r;
    /* Told before the G queues: the value comes through the channel, or
     * was put there by the time the second look takes the lock. */
    pt__time_chan_block(c->timer);
    r = recv_locked(c, elem, deadline, block, true);
    pt__time_chan_unblock(c->timer);
    return r;
}

int pt_chan_send(pt_chan *c, const void *elem)
{
    return chan_send(c, elem, 0, true);
}

int pt_chan_send_until(pt_chan *c, const void *elem, pt_nanos deadline)
{
    return chan_send(c, elem, deadline, true);
}

int pt_chan_try_send(pt_chan *c, const void *elem)
{
    return chan_send(c, elem, 0, false);
}

int pt_chan_recv(pt_chan *c, void *elem)
{
    return chan_recv(c, elem, 0, true);
}

int pt_chan_recv_until(pt_chan *c, void *elem, pt_nanos deadline)
{
    return chan_recv(c, elem, deadline, true);
}

int pt_chan_try_recv(pt_chan *c, void *elem)
{
    return chan_recv(c, elem, 0, false);
}

int pt_chan_close(pt_chan *c)
{
    if (!chan_valid(c))
        return -EINVAL;
    pt__lock(&c->lock);
    if (c->closed) {
        pt__unlock(&c->lock);
        return -EPIPE;
    }
    c->closed = true;
    /* Every waiter is woken, not done: receivers get a zero value, senders
     * -EPIPE. Collected first, readied once the lock is released. */
    struct pt__sudog *woken = NULL, *sg;
    while ((sg = pt__waitq_take(&c->recvq))) {
        pt__chan_zero(c, sg->elem);
        sg->success = false;
        sg->next = woken;
        woken = sg;
    }
    while ((sg = pt__waitq_take(&c->sendq))) {
        sg->success = false;
        sg->next = woken;
        woken = sg;
    }
    pt__unlock(&c->lock);
    while ((sg = woken)) {
        woken = sg->next; /* read before the G runs and its sudog goes */
        pt__sudog_ready(sg);
    }
    return 0;
}

bool pt__chan_reuse(pt_chan *c)
{
    bool ok = !c->closed && !c->recvq.first && !c->sendq.first;
    if (ok)
        c->qcount = c->sendx = c->recvx = 0;
    return ok;
}

bool pt__chan_drain(pt_chan *c)
{
    pt__lock(&c->lock);
    bool had = c->qcount > 0;
    if (had)
        pt__chan_buf_get(c, NULL);
    pt__unlock(&c->lock);
    return had;
}

/* A waiter still waiting: its wake-up not yet claimed by anyone. One whose
 * deadline passed, or whose select another case won, is on its way out. */
static bool waitq_live(const struct pt__waitq *q)
{
    for (const struct pt__sudog *sg = q->first; sg; sg = sg->next)
        if (sg->solo || atomic_load_explicit(&sg->g->park.wake_token, memory_order_acquire) != 0)
            return true;
    return false;
}

bool pt__chan_waited(pt_chan *c)
{
    pt__lock(&c->lock);
    bool waited = waitq_live(&c->recvq) || waitq_live(&c->sendq);
    pt__unlock(&c->lock);
    return waited;
}

int pt_chan_free(pt_chan *c)
{
    if (!chan_valid(c))
        return -EINVAL;
    pt__lock(&c->lock);
    bool busy = c->recvq.first || c->sendq.first;
    if (busy) {
        pt__unlock(&c->lock);
        return -EBUSY;
    }
    c->magic = 0;
    pt__unlock(&c->lock);
    pt__free(c);
    return 0;
}

size_t pt_chan_len(const pt_chan *c)
{
    if (!chan_valid(c))
        return 0;
    pt_chan *m = (pt_chan *)c;
    if (m->timer)
        pt__time_chan_poll(m->timer); /* a value due counts, as Go 1.23's len */
    pt__lock(&m->lock);
    size_t n = m->qcount;
    pt__unlock(&m->lock);
    return n;
}

size_t pt_chan_cap(const pt_chan *c)
{
    return chan_valid(c) ? c->cap : 0;
}
