/* Run queues, runq.c's: a P's ring with runnext and its overflow, and the
 * global queue. runq.c's comment says how the ring and the overflow keep
 * order; only runq.c touches these fields, others call its functions
 * (the global queue's length is read without the lock by whoever wants a
 * hint: proc.c, sysmon.c, preempt.c). */
#ifndef PTIMER_SCHED_RUNQ_H
#define PTIMER_SCHED_RUNQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/sched.h"

/* A P's local queue: Go's ring, four times Go's 256 (8 KiB a P). Past
 * it, a G waits on the P's overflow list: a lock per ready and a pointer
 * chase through cold Gs per refill, which many sleepers on one P paid at
 * Go's size. */
#define PT__RUNQ_SIZE 1024u

struct pt__p;

struct pt__runq {
    /* Go's runq: a ring the owner pushes at tail (release) and anyone
     * takes from at head (CAS); next is runnext, the G to run next, ahead
     * of the ring (a G just readied or spawned by this P: it inherits the
     * time slice, which keeps ping-pong pairs on one P). */
    _Atomic uint32_t head;
    _Atomic uint32_t tail;
    pt_g *_Atomic next;
    pt_g *_Atomic ring[PT__RUNQ_SIZE];
    /* Past a full ring: the P's overflow, a FIFO list behind it. The
     * owner appends and refills the ring from its head; a thief that
     * finds the ring empty takes from it too, so the lock is the owner's
     * alone unless the P is stuck. ovf_len is read without the lock. */
    _Atomic uint32_t ovf_lock;
    _Atomic uint32_t ovf_len;
    pt_g *ovf_head, *ovf_tail;
};

/* The global queue: under s->lock; len is read without it. */
struct pt__globq {
    pt_g *head, *tail;
    _Atomic uint32_t len;
};

void pt__runq_put(struct pt__p *p, pt_g *g, bool next);
pt_g *pt__runq_get(struct pt__p *p);
bool pt__runq_empty(struct pt__p *p);
/* Half of victim's queue onto p's; returns one of them to run (NULL: none)
 * and how many were taken in *stolen. */
pt_g *pt__runq_steal(struct pt__p *p, struct pt__p *victim, bool take_next, uint32_t *stolen);
void pt__runq_put_slow_all(struct pt__p *p); /* everything to the global queue (retire) */
void pt__globq_put(pt_sched *s, pt_g *g);    /* s->lock taken inside */
void pt__globq_put_batch(pt_sched *s, pt_g *head, pt_g *tail, uint32_t n);
pt_g *pt__globq_get(pt_sched *s, struct pt__p *p, uint32_t max); /* one to run, the rest to p */

#endif
