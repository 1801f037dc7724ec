/* The TimerThread's task slot pool and the per-thread index that keys its
 * caches: see task_pool.h for the layout and why. */
#include "timerthread/task_pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lock.h"

#define BLOCK_TASKS (1u << PT__TASK_BLOCK_SHIFT)
#define GROUP_BLOCKS (1u << PT__TASK_GROUP_SHIFT)

_Static_assert(sizeof(struct pt__tt_task) == 64, "a task is one cache line");
_Static_assert(BLOCK_TASKS % PT__TASK_BATCH == 0, "a carved chain never spans two blocks");

void pt__task_pool_init(pt__task_pool *p)
{
    pt__lock_init(&p->lock);
    p->nchains = 0;
    p->chains = NULL;
    atomic_init(&p->nslots, 0);
    memset(p->groups, 0, sizeof p->groups);
}

void pt__task_pool_destroy(pt__task_pool *p)
{
    for (uint32_t g = 0; g < PT__TASK_MAX_GROUPS && p->groups[g]; g++) {
        for (uint32_t b = 0; b < GROUP_BLOCKS && p->groups[g][b]; b++)
            pt__free_lines(p->groups[g][b]);
        pt__free(p->groups[g]);
        p->groups[g] = NULL;
    }
    p->chains = NULL;
    p->nchains = 0;
    atomic_store_explicit(&p->nslots, 0, memory_order_relaxed);
}

/* Hand out the next PT__TASK_BATCH never-used slots as a chain, adding a
 * block (and its group) when the last one is full. Called with p->lock. */
static struct pt__tt_task *carve(pt__task_pool *p)
{
    /* relaxed: only writers, all under p->lock, store nslots */
    uint32_t s = atomic_load_explicit(&p->nslots, memory_order_relaxed);
    if (s > PT__TASK_MAX_SLOTS - PT__TASK_BATCH)
        return NULL;
    uint32_t g = s >> (PT__TASK_GROUP_SHIFT + PT__TASK_BLOCK_SHIFT);
    uint32_t b = (s >> PT__TASK_BLOCK_SHIFT) & (GROUP_BLOCKS - 1);
    uint32_t off = s & (BLOCK_TASKS - 1);
    if (off == 0) {
        if (!p->groups[g]) {
            struct pt__tt_task **group = pt__malloc(GROUP_BLOCKS * sizeof *group);
            if (!group)
                return NULL;
            memset(group, 0, GROUP_BLOCKS * sizeof *group);
            p->groups[g] = group;
        }
        struct pt__tt_task *block = pt__alloc_lines(BLOCK_TASKS * sizeof *block);
        if (!block)
            return NULL;
        memset(block, 0, BLOCK_TASKS * sizeof *block);
        for (uint32_t i = 0; i < BLOCK_TASKS; i++) {
            block[i].slot = s + i;
            /* Versions start at 2: 0 is skipped so no id is ever 0. */
            atomic_init(&block[i].version, 2);
        }
        p->groups[g][b] = block;
    }
    struct pt__tt_task *t = &p->groups[g][b][off];
    for (uint32_t i = 0; i + 1 < PT__TASK_BATCH; i++)
        t[i].next = &t[i + 1];
    t[PT__TASK_BATCH - 1].next = NULL;
    /* release: publishes the block and group pointers (and the fresh
     * versions) to pt__task_pool_address's acquire load. */
    atomic_store_explicit(&p->nslots, s + PT__TASK_BATCH, memory_order_release);
    return t;
}

/* c->cur is empty: take the spare, else a chain from the pool's stack,
 * else fresh slots. Returns one task and keeps the rest in c. */
struct pt__tt_task *pt__task_cache_refill(pt__task_pool *p, pt__task_cache *c)
{
    struct pt__tt_task *chain = c->spare;
    if (chain) {
        c->spare = NULL;
    } else {
        pt__lock(&p->lock);
        chain = p->chains;
        if (chain) {
            p->chains = chain->chain_next;
            p->nchains--;
        } else {
            chain = carve(p);
        }
        pt__unlock(&p->lock);
        if (!chain)
            return NULL;
    }
    /* Every chain holds exactly PT__TASK_BATCH tasks: spill only moves a
     * full c->cur, and carve makes full ones. */
    c->cur = chain->next;
    c->ncur = PT__TASK_BATCH - 1;
    return chain;
}

/* c->cur is full: it becomes the spare, and an older full spare goes to
 * the pool's stack for other threads. */
void pt__task_cache_spill(pt__task_pool *p, pt__task_cache *c)
{
    struct pt__tt_task *full = c->spare;
    c->spare = c->cur;
    c->cur = NULL;
    c->ncur = 0;
    if (full) {
        pt__lock(&p->lock);
        full->chain_next = p->chains;
        p->chains = full;
        p->nchains++;
        pt__unlock(&p->lock);
    }
}

/* ---- per-thread index ----------------------------------------------
 * Indices are handed out from a stack of given-back ones (else the next
 * new one) guarded by index_lock, and given back by a thread-exit
 * destructor. The lock also
 * orders the exiting thread's last use of its per-thread state before the
 * next owner's first use: that is what lets a new thread inherit the
 * state (and the cached tasks) an exited thread left under its index. */

_Thread_local uint32_t pt__thread_index_plus1 __attribute__((tls_model("initial-exec")));

static pthread_once_t index_once = PTHREAD_ONCE_INIT;
static pthread_key_t index_key;
static bool index_key_ok;
static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *free_indices; /* guarded by index_lock, as are the next three */
static uint32_t nfree, capfree;
static uint32_t next_index;

static void index_release(void *v)
{
    uint32_t i = (uint32_t)(uintptr_t)v - 1;
    pt__thread_index_plus1 = 0; /* a later call in another destructor takes a new one */
    pthread_mutex_lock(&index_lock);
    if (nfree == capfree) {
        uint32_t cap = capfree ? capfree * 2 : 64;
        uint32_t *a = pt__realloc(free_indices, cap * sizeof *a);
        if (!a) { /* the index is lost, which only costs its table entry */
            pthread_mutex_unlock(&index_lock);
            return;
        }
        free_indices = a;
        capfree = cap;
    }
    free_indices[nfree++] = i;
    pthread_mutex_unlock(&index_lock);
}

static void index_init(void)
{
    index_key_ok = pthread_key_create(&index_key, index_release) == 0;
}

uint32_t pt__thread_index_slow(void)
{
    pthread_once(&index_once, index_init);
    pthread_mutex_lock(&index_lock);
    uint32_t i = UINT32_MAX;
    if (nfree)
        i = free_indices[--nfree];
    else if (next_index < UINT32_MAX - 1)
        i = next_index++;
    pthread_mutex_unlock(&index_lock);
    if (i == UINT32_MAX)
        return i;
    /* Without the key the index is never given back: still correct. */
    if (index_key_ok)
        pthread_setspecific(index_key, (void *)(uintptr_t)(i + 1));
    pt__thread_index_plus1 = i + 1;
    return i;
}
