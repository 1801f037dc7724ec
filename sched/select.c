/* select (Go's runtime/select.go): the channels' locks taken in address
 * order (no two selects can deadlock on each other), the cases looked at
 * in a random order (a uniform choice among the ready ones), and, when
 * none is ready, one waiter queued on every channel. All of them share
 * the G's one wake token (Go's selectDone): the first party to claim it
 * completes its case, and the others find the token gone and skip their
 * waiter. Once awake, the G takes every waiter of its own off the queues. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lock.h"
#include "sched/chan.h"

/* Cases a select takes on the stack; more are allocated. */
#define SELECT_STACK_CASES 16

struct select_work {
    pt_chan **lockorder; /* distinct channels, by address */
    int nlocks;
    uint16_t *pollorder; /* case indices, shuffled */
    struct pt__sudog *sgs;
    bool timers;         /* a case receives from a timer's channel */
    bool told;           /* those timers were told that this G waits */
    int due_case;        /* SELECT_TIMER_DUE: the case whose timer has a value due */
};

/* select_locked's answer when it would park on timers' channels not yet
 * told that a G waits (every lock released): the caller tells them, and
 * tries again. */
#define SELECT_BLOCK_TIMERS 1000
/* ... when a timer's channel it came to has a value due that no poll has
 * delivered (every lock released): the caller polls it, and tries again. */
#define SELECT_TIMER_DUE 1001

/* Each timer a receive case waits on, told (block) or untold (unblock). */
static void tell_timers(const pt_select_case *cases, int n, bool block)
{
    for (int i = 0; i < n; i++)
        if (cases[i].chan && cases[i].dir == PT_RECV && cases[i].chan->timer) {
            if (block)
                pt__time_chan_block(cases[i].chan->timer);
            else
                pt__time_chan_unblock(cases[i].chan->timer);
        }
}

static void lock_all(const struct select_work *w)
{
    for (int i = 0; i < w->nlocks; i++)
        pt__lock(&w->lockorder[i]->lock);
}

static void unlock_all(const struct select_work *w)
{
    for (int i = w->nlocks - 1; i >= 0; i--)
        pt__unlock(&w->lockorder[i]->lock);
}

static bool unlock_all_commit(void *arg)
{
    unlock_all(arg);
    return true;
}

static int cmp_chan(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (pt_chan *const *)a, y = (uintptr_t) * (pt_chan *const *)b;
    return x < y ? -1 : x > y;
}

/* The lock order: by address. Most selects have two to four cases, where
 * an insertion sort costs a few compares and glibc's qsort (a merge sort
 * through a callback, with a copy) most of the select. */
static void sort_chans(pt_chan **v, int n)
{
    if (n > SELECT_STACK_CASES) {
        qsort(v, (size_t)n, sizeof *v, cmp_chan);
        return;
    }
    for (int i = 1; i < n; i++) {
        pt_chan *c = v[i];
        int j = i;
        for (; j > 0 && (uintptr_t)v[j - 1] > (uintptr_t)c; j--)
            v[j] = v[j - 1];
        v[j] = c;
    }
}

/* One ready case, tried under every lock: done at once if it can be.
 * Returns 1 if done (with a G to ready in *wake), 0 if not ready, or
 * -EPIPE for a send on a closed channel. */
static int try_case(pt_select_case *k, struct pt__sudog **wake)
{
    pt_chan *c = k->chan;
    struct pt__sudog *sg;
    if (k->dir == PT_RECV) {
        if ((sg = pt__waitq_take(&c->sendq))) {
            pt__chan_recv_from(c, sg, k->elem);
            *wake = sg;
        } else if (c->qcount > 0) {
            pt__chan_buf_get(c, k->elem);
        } else if (c->closed) {
            pt__chan_zero(c, k->elem);
            k->ok = false;
            return 1;
        } else {
            return 0;
        }
        k->ok = true;
        return 1;
    }
    if (c->closed)
        return -EPIPE;
    if ((sg = pt__waitq_take(&c->recvq))) {
        pt__chan_send_to(c, sg, k->elem);
        *wake = sg;
        return 1;
    }
    if (c->qcount < c->cap) {
        pt__chan_buf_put(c, k->elem);
        return 1;
    }
    return 0;
}

static int select_locked(pt_select_case *cases, int n, struct select_work *w, pt_nanos deadline,
                         bool block)
{
    /* pass 1: the first ready case in the random order */
    for (int i = 0; i < n; i++) {
        int ci = w->pollorder[i];
        pt_select_case *k = &cases[ci];
        if (!k->chan)
            continue;
        struct pt__sudog *wake = NULL;
        int r = try_case(k, &wake);
        if (r == 0) {
            /* A timer's channel holds its value only once a receive has
             * polled the timer, which cannot happen under the channel's
             * lock (the timer sends under its own, taken first). Looked
             * at here, in the random order, the clock is read only when
             * no ready case came before the timer's: the usual timeout
             * around a receive that something else answers reads it
             * half as often. */
            if (k->dir == PT_RECV && k->chan->timer && pt__time_chan_due(k->chan->timer)) {
                unlock_all(w);
                w->due_case = ci;
                return SELECT_TIMER_DUE;
            }
            continue;
        }
        unlock_all(w);
        if (wake)
            pt__sudog_ready(wake);
        return r < 0 ? r : ci;
    }
    if (!block || (deadline != 0 && deadline <= pt__now(pt_sched_current()))) {
        unlock_all(w);
        return block ? -ETIMEDOUT : -EAGAIN;
    }
    if (w->timers && !w->told) {
        unlock_all(w);
        return SELECT_BLOCK_TIMERS;
    }
    /* pass 2: a waiter on every channel, in lock order (Go enqueues in
     * lock order too: it makes no difference to fairness, the queues are
     * per channel) */
    pt_g *g = pt_g_current();
    g->wake_sg = NULL;
    bool durable = true;
    for (int ci = 0; ci < n; ci++) {
        pt_select_case *k = &cases[ci];
        struct pt__sudog *sg = &w->sgs[ci];
        memset(sg, 0, sizeof *sg);
        if (!k->chan)
            continue;
        sg->g = g;
        sg->c = k->chan;
        sg->elem = k->elem;
        sg->case_index = ci;
        pt__waitq_push(k->dir == PT_RECV ? &k->chan->recvq : &k->chan->sendq, sg);
        durable = durable && k->chan->owner == g->s;
    }
    pt__g_waits(g, PT__WAIT_SELECT, cases, durable);
    bool timed_out = pt__park_until(g, unlock_all_commit, w, deadline);
    /* awake: take every waiter of ours off its queue */
    lock_all(w);
    for (int ci = 0; ci < n; ci++)
        if (cases[ci].chan)
            pt__waitq_remove(cases[ci].dir == PT_RECV ? &cases[ci].chan->recvq
                                                      : &cases[ci].chan->sendq,
                             &w->sgs[ci]);
    unlock_all(w);
    if (timed_out)
        return -ETIMEDOUT;
    struct pt__sudog *won = g->wake_sg;
    if (!won)
        pt__sched_bad(g, "select: woken by no case");
    pt_select_case *k = &cases[won->case_index];
    if (k->dir == PT_RECV) {
        k->ok = won->success; /* false: closed, its elem zeroed by close */
        return won->case_index;
    }
    return won->success ? won->case_index : -EPIPE;
}

int pt_select(pt_select_case *cases, int n, pt_nanos deadline, bool block)
{
    if (n < 0 || n > UINT16_MAX || (n > 0 && !cases))
        return -EINVAL;
    for (int i = 0; i < n; i++) {
        pt_chan *c = cases[i].chan;
        if (c && (c->magic != PT__CHAN_MAGIC || (cases[i].dir != PT_SEND && cases[i].dir != PT_RECV) ||
                  (cases[i].dir == PT_SEND && !cases[i].elem && c->elem_size)))
            return -EINVAL;
    }
    if (block && !pt_g_current())
        return -EPERM;

    pt_chan *lock_stack[SELECT_STACK_CASES];
    uint16_t poll_stack[SELECT_STACK_CASES];
    struct pt__sudog sg_stack[SELECT_STACK_CASES];
    struct select_work w = {lock_stack, 0, poll_stack, sg_stack, false, false, -1};
    void *heap = NULL;
    if (n > SELECT_STACK_CASES) {
        size_t bytes = (size_t)n * (sizeof(pt_chan *) + sizeof(uint16_t) + sizeof(struct pt__sudog));
        heap = pt__malloc(bytes);
        if (!heap)
            return -ENOMEM;
        w.sgs = heap;
        w.lockorder = (pt_chan **)(w.sgs + n);
        w.pollorder = (uint16_t *)(w.lockorder + n);
    }
    /* Fisher-Yates: every order equally likely, so among the ready cases
     * the one met first is uniform */
    if (n > 0)
        w.pollorder[0] = 0;
    for (int i = 1; i < n; i++) {
        int j = (int)(pt__fastrand() % (uint32_t)(i + 1));
        w.pollorder[i] = w.pollorder[j];
        w.pollorder[j] = (uint16_t)i;
    }
    for (int i = 0; i < n; i++)
        if (cases[i].chan) {
            w.lockorder[w.nlocks++] = cases[i].chan;
            w.timers |= cases[i].dir == PT_RECV && cases[i].chan->timer;
        }
    sort_chans(w.lockorder, w.nlocks);
    int distinct = 0;
    for (int i = 0; i < w.nlocks; i++)
        if (distinct == 0 || w.lockorder[distinct - 1] != w.lockorder[i])
            w.lockorder[distinct++] = w.lockorder[i];
    w.nlocks = distinct;

    int r;
    if (w.nlocks == 0) {
        /* nothing can ever be ready: Go blocks forever; here the deadline
         * or the non-blocking form decides */
        if (!block)
            r = -EAGAIN;
        else if (deadline == 0)
            r = -EINVAL;
        else
            r = pt_sleep_until(deadline) == 0 ? -ETIMEDOUT : -EINVAL;
    } else {
        for (;;) {
            lock_all(&w);
            r = select_locked(cases, n, &w, deadline, block);
            if (r == SELECT_TIMER_DUE) {
                pt__time_chan_poll(cases[w.due_case].chan->timer);
            } else if (r == SELECT_BLOCK_TIMERS) {
                /* told before the G queues: a value comes through a
                 * channel, or is due by the time the next look locks them */
                tell_timers(cases, n, true);
                w.told = true;
            } else {
                break;
            }
        }
        if (w.told)
            tell_timers(cases, n, false);
    }
    pt__free(heap);
    return r;
}
