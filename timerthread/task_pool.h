/* The TimerThread's task slot pool: memory for tasks, addressed by a 32-bit
 * slot index that stays valid, and readable, until the pool is destroyed.
 *
 * Why slots and not pointers: a task id must be checkable long after the
 * task is gone. unschedule() may be handed any id -- one that ran an hour
 * ago, one whose slot now holds another task, one that was never issued --
 * and must answer by reading one version word, never touching freed or
 * out-of-range memory. So task memory is never returned to the allocator
 * while the pool lives: it is reused, and each reuse advances the slot's
 * version (the id's upper half), which is what makes an old id stale.
 *
 * Layout (bRPC's ResourcePool, made per-instance): blocks of 256 tasks,
 * 1024 block pointers to a group, up to 1024 groups (2^28 slots, 16 GiB
 * of tasks). Blocks and groups are only ever added. `nslots` counts slots
 * handed out so far; it is published with release after the slots' block
 * and group pointers are written, so a reader that loads it with acquire
 * and finds slot < nslots may follow those pointers without a lock.
 *
 * Free tasks: a global stack of chains under `lock`, and per-thread
 * magazines (pt__task_cache, after Bonwick's magazine allocator) that hold a
 * current chain and one full spare, so a thread goes to the global stack
 * at most once per PT__TASK_BATCH gets or puts and never thrashes at the
 * boundary. The caches live in the owner of the pool (one per thread and
 * pool), so no cache ever points into another pool.
 */
#ifndef PTIMER_TASK_POOL_H
#define PTIMER_TASK_POOL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/clock.h"

#define PT__TASK_BLOCK_SHIFT 8  /* 256 tasks, 16 KiB, per block */
#define PT__TASK_GROUP_SHIFT 10 /* 1024 blocks per group */
#define PT__TASK_MAX_GROUPS 1024u
#define PT__TASK_MAX_SLOTS (PT__TASK_MAX_GROUPS << (PT__TASK_GROUP_SHIFT + PT__TASK_BLOCK_SHIFT))
#define PT__TASK_BATCH 64u /* tasks per chain moved between a cache and the pool */

/* One task, one cache line. While free it belongs to one cache or to the
 * pool's stack; while scheduled, to its bucket and then to the timer
 * thread; only `version` is ever touched by anyone else (unschedule). */
struct pt__tt_task {
    alignas(64) struct pt__tt_task *next; /* bucket list, or free chain */
    struct pt__tt_task *chain_next;       /* free: next chain on the pool's stack */
    pt_nanos when;                       /* run at this monotonic time, or after */
    pt_nanos latest;                     /* ... by this one: when + slack */
    void (*fn)(void *);
    void *arg;
    uint32_t slot;       /* this task's own index; fixed when its block is made */
    uint32_t id_version; /* the version its id was issued with */
    /* id_version: pending; +1: running; +2: done or removed, which is
     * also the version the slot's next task is issued with. Only ever
     * grows (mod 2^32, skipping 0); pending versions are even. */
    _Atomic uint32_t version;
    /* In the timer thread's heaps of tasks with slack (the timer thread's
     * alone: set as it pulls the task, cleared before it frees it). */
    bool in_slack;
};

typedef struct pt__task_cache {
    struct pt__tt_task *cur;   /* free tasks linked by next */
    struct pt__tt_task *spare; /* a chain of exactly PT__TASK_BATCH, or NULL */
    uint32_t ncur;
} pt__task_cache;

typedef struct pt__task_pool {
    /* Read by every lookup; written only when the pool grows. */
    alignas(64) _Atomic uint32_t nslots; /* slots handed out; release-published (see top) */
    struct pt__tt_task **groups[PT__TASK_MAX_GROUPS]; /* written under lock, before nslots */
    /* Written by every refill and spill: a line of its own, so lookups
     * do not miss on it. */
    alignas(64) _Atomic uint32_t lock; /* pt__lock: guards the stack, growth, groups' contents */
    uint32_t nchains;                  /* chains on the stack (lock) */
    struct pt__tt_task *chains;         /* stack of free chains via chain_next (lock) */
} pt__task_pool;

void pt__task_pool_init(pt__task_pool *p);

/* Frees every block: all tasks, free or not, and so every cache's
 * contents. The caller guarantees nobody uses the pool any more. */
void pt__task_pool_destroy(pt__task_pool *p);

/* The task in `slot`, or NULL if no such slot was ever handed out. Safe
 * from any thread, on any slot value, while the pool lives. */
static inline struct pt__tt_task *pt__task_pool_address(pt__task_pool *p, uint32_t slot)
{
    /* acquire: pairs with the release that published nslots after the
     * block and group pointers were written (task_pool.c, carve). */
    if (slot >= atomic_load_explicit(&p->nslots, memory_order_acquire))
        return NULL;
    struct pt__tt_task **group = p->groups[slot >> (PT__TASK_GROUP_SHIFT + PT__TASK_BLOCK_SHIFT)];
    struct pt__tt_task *block =
        group[(slot >> PT__TASK_BLOCK_SHIFT) & ((1u << PT__TASK_GROUP_SHIFT) - 1)];
    return &block[slot & ((1u << PT__TASK_BLOCK_SHIFT) - 1)];
}

/* Slots handed out so far: the pool's size (slots * 64 bytes of tasks). */
static inline uint32_t pt__task_pool_slots(pt__task_pool *p)
{
    return atomic_load_explicit(&p->nslots, memory_order_acquire);
}

struct pt__tt_task *pt__task_cache_refill(pt__task_pool *p, pt__task_cache *c);
void pt__task_cache_spill(pt__task_pool *p, pt__task_cache *c);

/* A free task from the calling thread's cache `c` (which only this thread
 * uses), or NULL when out of memory. */
static inline struct pt__tt_task *pt__task_cache_get(pt__task_pool *p, pt__task_cache *c)
{
    struct pt__tt_task *t = c->cur;
    if (__builtin_expect(t != NULL, 1)) {
        c->cur = t->next;
        c->ncur--;
        return t;
    }
    return pt__task_cache_refill(p, c);
}

/* Give a task back through the calling thread's cache `c`. */
static inline void pt__task_cache_put(pt__task_pool *p, pt__task_cache *c, struct pt__tt_task *t)
{
    if (__builtin_expect(c->ncur >= PT__TASK_BATCH, 0))
        pt__task_cache_spill(p, c);
    t->next = c->cur;
    c->cur = t;
    c->ncur++;
}

/* A small dense index for the calling thread, reused after the thread
 * exits (so per-thread tables stay as small as the number of live
 * threads, and a new thread inherits an exited one's cache instead of
 * stranding it). UINT32_MAX if none could be had. */
uint32_t pt__thread_index_slow(void);
extern _Thread_local uint32_t pt__thread_index_plus1 __attribute__((tls_model("initial-exec")));
static inline uint32_t pt__thread_index(void)
{
    uint32_t i = pt__thread_index_plus1;
    return __builtin_expect(i != 0, 1) ? i - 1 : pt__thread_index_slow();
}

/* Test hooks, defined in timerthread.c: the slots tt's pool has handed
 * out; the tasks it holds (taken from the pool, not given back); and the
 * reclaim's tuning (see the top of timerthread.c; `every` a power of two). */
struct pt_timerthread;
uint32_t pt__timerthread_pool_slots(struct pt_timerthread *tt);
uint64_t pt__timerthread_held(struct pt_timerthread *tt);
void pt__timerthread_tune_reclaim(struct pt_timerthread *tt, uint32_t every, uint32_t sweep_min);

#endif
