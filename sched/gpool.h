/* Finished Gs kept, with their stacks, for the next pt_go: g.c's. Each P
 * keeps a few and a batch of G ids, touched only by the M holding it;
 * beyond those, the global pool holds batches under s->lock (peeked at
 * without it), and the monitor trims what a whole period did not use. */
#ifndef PTIMER_SCHED_GPOOL_H
#define PTIMER_SCHED_GPOOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "ptimer/clock.h"
#include "ptimer/sched.h"

#define PT__G_POOL_LOCAL 64u /* finished Gs a P keeps before handing half to the global pool */
#define PT__GID_BATCH 16u    /* G ids a P takes at a time (Go's _GoidCacheBatch) */

/* A P's: the M holding it only. */
struct pt__p_gs {
    pt_g *pool; /* linked by next */
    uint32_t npool;
    /* G ids handed out from a batch of s->next_gid: Go's goidcache, so
     * that two Ps spawning do not share that line on every go */
    uint64_t gid_next, gid_end;
};

/* The process's: a stack of batches, each linked by next, its first G
 * holding the next batch (pool_batch) and its length (pool_n). */
struct pt__gpool {
    pt_g *_Atomic batches; /* s->lock; peeked at without */
    _Atomic uint64_t n;    /* Gs in it (s->lock; read without by the monitor) */
    uint64_t low;          /* its least since the last trim (s->lock) */
    pt_nanos trim_at;      /* the next trim (the monitor's) */
};

#endif
