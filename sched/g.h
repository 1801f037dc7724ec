/* What g.c (Gs: go, yield, park, ready, run) offers the scheduler's
 * other files; its pools of finished Gs are gpool.h. */
#ifndef PTIMER_SCHED_G_H
#define PTIMER_SCHED_G_H

#include <stdbool.h>
#include <stddef.h>

#include "ptimer/clock.h"
#include "ptimer/sched.h"

/* A G's status. Transitions: Runnable -> Running (an M takes it),
 * Running -> Runnable (yield), Running -> Waiting (park: set on the M,
 * after the G is off its stack), Waiting -> Runnable (ready: a CAS, so a
 * G is readied once), Running -> Dead (its function returned). */
enum {
    PT__G_IDLE,     /* in a pool */
    PT__G_RUNNABLE, /* in a run queue */
    PT__G_RUNNING,  /* on an M */
    PT__G_WAITING,  /* parked */
    PT__G_DEAD,     /* finished, not yet pooled */
};

/* What a G asks of its M when it switches out: done on g0, or by the G
 * it handed its M to (g.c). NEXT: back to the head of its P's queue (a
 * G that handed the M straight back to the one whose park was refused). */
enum { PT__G_DO_YIELD = 1, PT__G_DO_PARK, PT__G_DO_EXIT, PT__G_DO_PREEMPT, PT__G_DO_NEXT };

struct pt__m;

/* pt_park for g, the calling G (found once by the caller: a G's lookup
 * is a call that cannot be inlined, see PT__TLS_READER). */
void pt__park(pt_g *g, bool (*commit)(void *), void *arg);
/* Runs g on the calling M until the M is back on g0 -- g, or a G that a
 * chain of handoffs from g reached, yielded, parked or exited with no G
 * to hand the M to -- and does what that G asked. */
void pt__execute(struct pt__m *m, pt_g *g);
/* Bytes at the top of each stack slot that hold its G (g.c). */
size_t pt__g_room(void);
/* The G whose stack starts at lo (of `size` bytes), found among the
 * places g_new puts one; NULL if none is there. */
pt_g *pt__g_on_stack(void *lo, size_t size);

/* ---- the pools of finished Gs (their state: gpool.h) ---- */
/* Destroy after a deadlock: frees every parked G and its stack, never
 * resumed. 0; -ENOMEM (nothing freed). */
int pt__g_free_parked(pt_sched *s);
/* Destroy: frees every pooled G and its stack. */
void pt__g_free_all(pt_sched *s);
/* The monitor's: frees the global pool's Gs that a whole period did not
 * use, and their stacks; returns the time it wants to look again, 0 if
 * the pool holds no more than it keeps. */
pt_nanos pt__g_trim(pt_sched *s, pt_nanos now);

#endif
