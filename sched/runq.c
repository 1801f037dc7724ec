/* Run queues: each P's bounded lock-free ring with runnext (Go's runqput,
 * runqget, runqgrab, runqsteal) and an overflow list behind the ring, and
 * the global queue beside them.
 *
 * The ring: only the owning M writes slots and tail (tail published with
 * release, so a slot is written before anyone can read it); anyone takes
 * from head with a CAS, after reading the slots it takes. A stealer copies
 * half of the victim's entries straight into its own ring past its tail,
 * where nobody else reads, and publishes them with one tail store. Slots
 * are atomics (relaxed) because a thief may read a slot the owner is about
 * to overwrite; the head CAS then fails and the read is discarded.
 *
 * The overflow: where Go moves half a full ring to the global queue, a P
 * here keeps its extra Gs behind its ring, in order. The global queue is
 * served every 61st round and when the ring is empty, so Gs spilled there
 * waited many rounds behind younger ones the P kept readying onto its
 * ring (a thousand sleepers on one P had a tail of many milliseconds);
 * and the fix that sent every ready behind the global queue instead made
 * each ready take the scheduler's one lock, which cost two Ps much of
 * their sleeps' throughput (bench/journal/2026-11-28-figures-behind-comments.md). Order
 * is kept by one rule: while the overflow holds Gs, the owner appends
 * there, never to the ring, and refills the ring from the overflow's head
 * -- every G in the ring is older than every G in the overflow.
 */
#include <time.h>

#include "base/lock.h"
#include "sched/internal.h"

#define MASK (PT__RUNQ_SIZE - 1)

static inline pt_g *slot_load(struct pt__p *p, uint32_t i)
{
    return atomic_load_explicit(&p->rq.ring[i & MASK], memory_order_relaxed);
}

static inline void slot_store(struct pt__p *p, uint32_t i, pt_g *g)
{
    atomic_store_explicit(&p->rq.ring[i & MASK], g, memory_order_relaxed);
}

/* Appends the chain first..last (linked by next) to the list *head..*tail,
 * under the list's lock: the global queue and a P's overflow. */
static inline void chain_append(pt_g **head, pt_g **tail, pt_g *first, pt_g *last)
{
    last->next = NULL;
    if (*tail)
        (*tail)->next = first;
    else
        *head = first;
    *tail = last;
}

/* ---- the global queue (s->lock) ---- */

void pt__globq_put_batch(pt_sched *s, pt_g *head, pt_g *tail, uint32_t n)
{
    pt__lock(&s->lock);
    chain_append(&s->globq.head, &s->globq.tail, head, tail);
    /* release: a lock-free reader that sees the length sees the Gs once it
     * takes the lock (the length is only a hint for those readers) */
    atomic_store_explicit(&s->globq.len,
                          atomic_load_explicit(&s->globq.len, memory_order_relaxed) + n,
                          memory_order_release);
    pt__unlock(&s->lock);
}

void pt__globq_put(pt_sched *s, pt_g *g)
{
    pt__globq_put_batch(s, g, g, 1);
}

/* Go's globrunqget: a fair share of the global queue (len/procs + 1, at
 * most max and half a ring): one to run now, the rest onto p's ring. */
pt_g *pt__globq_get(pt_sched *s, struct pt__p *p, uint32_t max)
{
    if (atomic_load_explicit(&s->globq.len, memory_order_acquire) == 0)
        return NULL;
    pt__lock(&s->lock);
    uint32_t len = atomic_load_explicit(&s->globq.len, memory_order_relaxed);
    uint32_t procs = (uint32_t)atomic_load_explicit(&s->nprocs, memory_order_relaxed);
    uint32_t n = len / procs + 1;
    if (n > len)
        n = len;
    if (max && n > max)
        n = max;
    if (n > PT__RUNQ_SIZE / 2)
        n = PT__RUNQ_SIZE / 2;
    pt_g *first = NULL, *rest = NULL, **link = &rest;
    for (uint32_t i = 0; i < n; i++) {
        pt_g *g = s->globq.head;
        s->globq.head = g->next;
        if (!first) {
            first = g;
        } else {
            *link = g;
            link = &g->next;
        }
    }
    *link = NULL;
    if (!s->globq.head)
        s->globq.tail = NULL;
    atomic_store_explicit(&s->globq.len, len - n, memory_order_relaxed);
    pt__unlock(&s->lock);
    for (pt_g *g = rest, *nx; g; g = nx) {
        nx = g->next;
        pt__runq_put(p, g, false);
    }
    return first;
}

/* ---- a P's overflow (p->rq.ovf_lock) ---- */

static void ovf_push(struct pt__p *p, pt_g *g)
{
    pt__lock(&p->rq.ovf_lock);
    chain_append(&p->rq.ovf_head, &p->rq.ovf_tail, g, g);
    pt__count(&p->n_overflowed, 1);
    atomic_store_explicit(&p->rq.ovf_len,
                          atomic_load_explicit(&p->rq.ovf_len, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    pt__unlock(&p->rq.ovf_lock);
}

/* Moves up to max Gs from the head of victim's overflow into p's ring
 * from slot `at` on, past p's tail, where nobody reads until they are
 * published: here, before the overflow's new length, when p is victim (a
 * refill: see pt__runq_empty), else by the caller. Returns how many. */
static uint32_t ovf_take(struct pt__p *victim, struct pt__p *p, uint32_t at, uint32_t max)
{
    if (atomic_load_explicit(&victim->rq.ovf_len, memory_order_relaxed) == 0)
        return 0;
    pt__lock(&victim->rq.ovf_lock);
    uint32_t len = atomic_load_explicit(&victim->rq.ovf_len, memory_order_relaxed);
    uint32_t n = len < max ? len : max;
    pt_g *g = victim->rq.ovf_head;
    for (uint32_t i = 0; i < n; i++, g = g->next)
        slot_store(p, at + i, g);
    victim->rq.ovf_head = g;
    if (!g)
        victim->rq.ovf_tail = NULL;
    if (p == victim && n)
        atomic_store_explicit(&p->rq.tail, at + n, memory_order_release);
    /* release: a reader that sees the length fall sees a refill's tail */
    atomic_store_explicit(&victim->rq.ovf_len, len - n, memory_order_release);
    pt__unlock(&victim->rq.ovf_lock);
    return n;
}

/* ---- a P's ring ---- */

/* The G after the one taken is run next: start loading its struct and
 * the frames it stopped in, just below it (a G lives above its stack,
 * g.c), while this one runs -- a few hundred ns ahead of the switch,
 * which otherwise waits for each line in turn. A park's frames are 256
 * bytes deep from a sleep; a deeper park gets its top lines loaded. The
 * slot may be stale (a thief took it): a prefetch of any address is
 * harmless. */
#define PREFETCH_FRAMES 320

static inline void prefetch_g(const pt_g *g)
{
    const char *top = (const char *)g + sizeof *g;
    for (const char *a = (const char *)g - PREFETCH_FRAMES; a < top; a += 64)
        __builtin_prefetch(a, 1, 3);
}

void pt__runq_put(struct pt__p *p, pt_g *g, bool next)
{
    if (next) {
        /* the old runnext, if any, goes to the tail */
        g = atomic_exchange_explicit(&p->rq.next, g, memory_order_acq_rel);
        if (!g)
            return;
    }
    /* only this M adds to the overflow: a 0 here stays 0 */
    if (atomic_load_explicit(&p->rq.ovf_len, memory_order_relaxed) == 0) {
        /* acquire: pairs with thieves' release CAS, so their reads of the
         * slots they took come before our reuse of them */
        uint32_t h = atomic_load_explicit(&p->rq.head, memory_order_acquire);
        uint32_t t = atomic_load_explicit(&p->rq.tail, memory_order_relaxed);
        if (t - h < PT__RUNQ_SIZE) {
            slot_store(p, t, g);
            atomic_store_explicit(&p->rq.tail, t + 1, memory_order_release);
            return;
        }
    }
    ovf_push(p, g);
}

/* Tops up the ring from the overflow once it is half empty: one lock per
 * half a ring of Gs. Returns the ring's tail (only this M moves it). */
static uint32_t refill(struct pt__p *p, uint32_t h, uint32_t t)
{
    if (t - h > PT__RUNQ_SIZE / 2 ||
        atomic_load_explicit(&p->rq.ovf_len, memory_order_relaxed) == 0)
        return t;
    return t + ovf_take(p, p, t, PT__RUNQ_SIZE - (t - h)); /* publishes the tail */
}

pt_g *pt__runq_get(struct pt__p *p)
{
    pt_g *next = atomic_load_explicit(&p->rq.next, memory_order_relaxed);
    if (next && atomic_compare_exchange_strong_explicit(&p->rq.next, &next, NULL,
                                                        memory_order_acquire, memory_order_relaxed))
        return next;
    for (;;) {
        uint32_t h = atomic_load_explicit(&p->rq.head, memory_order_acquire);
        uint32_t t = refill(p, h, atomic_load_explicit(&p->rq.tail, memory_order_relaxed));
        if (t == h)
            return NULL;
        pt_g *g = slot_load(p, h);
        if (atomic_compare_exchange_weak_explicit(&p->rq.head, &h, h + 1, memory_order_release,
                                                  memory_order_relaxed)) {
            if (t - h > 1)
                prefetch_g(slot_load(p, h + 1));
            return g;
        }
    }
}

bool pt__runq_empty(struct pt__p *p)
{
    /* the same consistent-snapshot loop as Go's runqempty: a runnext taken
     * between the loads would otherwise make a busy P look empty. The
     * overflow's length is read before the second look at the tail: a
     * refill moving Gs from the overflow to the ring publishes the tail
     * first, so a length seen fallen brings the new tail with it, and the
     * loop looks again. */
    for (;;) {
        uint32_t h = atomic_load_explicit(&p->rq.head, memory_order_acquire);
        uint32_t t = atomic_load_explicit(&p->rq.tail, memory_order_acquire);
        pt_g *next = atomic_load_explicit(&p->rq.next, memory_order_acquire);
        uint32_t ovf = atomic_load_explicit(&p->rq.ovf_len, memory_order_acquire);
        if (atomic_load_explicit(&p->rq.tail, memory_order_acquire) == t)
            return h == t && next == NULL && ovf == 0;
    }
}

/* Go's runqgrab: copy half of victim's ring into p's, past p's tail
 * (starting at slot `at`); with nothing there, half its overflow (its
 * owner is stuck in one G, or refills next round); with nothing there
 * either, take its runnext if take_next. Returns how many were copied. */
#define RUNNEXT_GRACE_NS 3000

static uint32_t grab(struct pt__p *p, struct pt__p *victim, uint32_t at, bool take_next)
{
    for (;;) {
        uint32_t h = atomic_load_explicit(&victim->rq.head, memory_order_acquire);
        uint32_t t = atomic_load_explicit(&victim->rq.tail, memory_order_acquire);
        uint32_t n = t - h;
        n -= n / 2;
        if (n == 0) {
            uint32_t half =
                (atomic_load_explicit(&victim->rq.ovf_len, memory_order_relaxed) + 1) / 2;
            if (half && (n = ovf_take(victim, p, at, half < PT__RUNQ_SIZE / 2 ? half
                                                                            : PT__RUNQ_SIZE / 2)))
                return n;
            if (!take_next)
                return 0;
            pt_g *next = atomic_load_explicit(&victim->rq.next, memory_order_acquire);
            if (!next)
                return 0;
            /* Go's runqgrab: the victim's M, running a G, is likely about
             * to run its runnext itself -- a G readied by a channel
             * operation, whose partner parks next. Taking it now would
             * split the pair across Ps and cost every round trip a
             * cross-thread wake-up, so the thief steps aside first, as Go
             * does with usleep(3): a sleep, not a spin. A thief spinning on
             * the victim's runnext took the line from its owner twice a
             * round trip, and, back from a failed steal within
             * microseconds, went idle and was woken again by the next
             * ready: pingpong on 2 Ps took about three times as long
             * (bench/journal/2026-11-25-scheduler-after-handoffs.md).
             * The kernel's timer slack stretches the
             * sleep; the thief stays counted as
             * spinning meanwhile, so readies do not wake another M, and on
             * its last pass it may sleep once per busy P. */
            if (atomic_load_explicit(&victim->m->curg, memory_order_relaxed)) {
                struct timespec ts = {0, RUNNEXT_GRACE_NS};
                nanosleep(&ts, NULL);
                next = atomic_load_explicit(&victim->rq.next, memory_order_acquire);
                if (!next)
                    return 0;
            }
            if (!atomic_compare_exchange_strong_explicit(
                    &victim->rq.next, &next, NULL, memory_order_acq_rel, memory_order_relaxed))
                continue;
            slot_store(p, at, next);
            return 1;
        }
        if (n > PT__RUNQ_SIZE / 2)
            continue; /* read head and tail at different times: look again */
        for (uint32_t i = 0; i < n; i++)
            slot_store(p, at + i, slot_load(victim, h + i));
        if (atomic_compare_exchange_strong_explicit(&victim->rq.head, &h, h + n,
                                                    memory_order_release, memory_order_relaxed))
            return n;
    }
}

pt_g *pt__runq_steal(struct pt__p *p, struct pt__p *victim, bool take_next, uint32_t *stolen)
{
    uint32_t t = atomic_load_explicit(&p->rq.tail, memory_order_relaxed);
    uint32_t n = grab(p, victim, t, take_next);
    *stolen = n;
    if (n == 0)
        return NULL;
    n--;
    pt_g *g = slot_load(p, t + n);
    if (n)
        atomic_store_explicit(&p->rq.tail, t + n, memory_order_release);
    return g;
}

/* A retiring P's queue, runnext first, then ring and overflow, to the
 * global queue. */
void pt__runq_put_slow_all(struct pt__p *p)
{
    pt_g *head = NULL, *tail = NULL, *g;
    uint32_t n = 0;
    while ((g = pt__runq_get(p))) {
        chain_append(&head, &tail, g, g);
        n++;
    }
    if (n)
        pt__globq_put_batch(p->s, head, tail, n);
}
