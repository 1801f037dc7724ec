/* The TimerThread: bRPC's bucket design in C (see timerthread.h for the
 * picture and for how it differs from bRPC).
 *
 * Costs, and why the design is shaped so. A schedule takes one bucket lock
 * (its thread's own, so uncontended unless threads share a bucket) and
 * touches no line another thread writes on the common path: the task comes
 * from a per-thread cache, the counters live in the caller's line. It takes
 * the global lock only when its task is the earliest of its bucket, and
 * wakes the thread only when it is also the earliest of all: ascending
 * deadlines (RPC timeouts) lower a bucket's nearest time once per drain,
 * and never the global one. An unschedule is one CAS on the task's version
 * and frees nothing itself: no lock and no heap surgery on the cancel path
 * (bRPC's trade). The timer thread frees a removed task when it meets it.
 *
 * Reclaiming removed tasks. Left at that, a removed task would be met only
 * when the thread next wakes, and with far deadlines (a 300 s RPC timeout)
 * nothing wakes it: every removed task stays in its bucket, or in the heap
 * if it was pulled while pending, until its time, and memory grows as rate
 * x timeout (1.9 GB at 100k calls/s in bRPC, apache/brpc#3383; ptbench's
 * rpc with --timeout-ms 300000 held 2.2 GiB after 4 s here). So every
 * reclaim_every-th unschedule of a thread (4096; a count it keeps anyway)
 * asks the thread to reclaim: it lowers the global nearest time to 0, as
 * destroy does, which makes the thread pull every bucket (freeing the
 * removed tasks there) before it runs a task or sleeps, and wakes it. With
 * the pull, the thread sweeps its heap if that pays: removed tasks still
 * held (unschedules counted less removed tasks freed) at least a quarter
 * of a heap of sweep_min entries or more; one O(n) pass then frees them
 * and re-heapifies, so each freed task costs O(1) (Go's quarter rule for
 * deleted timers). A thread whose request finds its previous one still
 * unserved (the timer thread has not pulled since: it is off the CPU, or
 * running a long callback) does not wait for it: it drains its own bucket
 * itself (tt_help_reclaim), freeing its removed tasks into its own cache
 * and putting the pending ones back as a schedule would, announced. So a
 * bucket holds at most about reclaim_every removed tasks per thread, and
 * the heap about a quarter removed ones (plus what was pulled while the
 * timer thread fell behind, until its next sweep). bRPC's fix
 * (apache/brpc#3384) sweeps its heap when it has doubled since the last
 * sweep, and drains buckets only if a periodic wake-up is configured (off
 * by default); here the cancels themselves say when there is something to
 * reclaim, so an idle instance never wakes for it.
 *
 * A task's version word is its whole state machine (v is the id's version,
 * always even and never 0):
 *
 *   schedule     free (v)      -> pending v      caller; the id is (v << 32) | slot
 *   run          pending v     -> running v+1    timer thread, CAS
 *   run          running v+1   -> done v+2       timer thread, store after fn(arg)
 *   unschedule   pending v     -> removed v+2    any thread, CAS (answers 0)
 *   free         done/removed  -> free (v+2)     timer thread, when it meets the task
 *
 * unschedule answers 1 when it finds v+1, and -1 for anything else: v+2 or
 * later means the task finished, was removed, or its slot was reused (the
 * next task in a slot is issued with v+2, so an old id never matches).
 *
 * Locking: a bucket's lock guards its list and nearest time; the global
 * lock guards the global nearest time and the increments of nsignals; the
 * heap belongs to the timer thread alone. No thread holds two locks.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "ptimer/timerthread.h"

#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lock.h"
#include "base/heap4.h"
#include "timerthread/task_pool.h"

#define TT_DEFAULT_BUCKETS 13u
#define TT_RECLAIM_EVERY 4096u /* unschedules per thread between reclaim requests */
#define TT_SWEEP_MIN 1024u     /* heaps smaller than this are not swept */
#define TT_MAX_BUCKETS 1024u
#define TT_LOCALS_PER_CHUNK 64u
#define TT_LOCAL_CHUNKS 1024u /* per-thread state for 65536 thread indices */

struct tt_bucket {
    alignas(64) _Atomic uint32_t lock; /* pt__lock: guards head and nearest */
    /* Tasks not yet pulled, newest first. Written under lock; the timer
     * thread peeks at it without the lock (tt_consume says why that is safe). */
    _Atomic(struct pt__tt_task *) head;
    pt_nanos nearest; /* earliest `latest` pushed since the last drain; PT_MAXWHEN if none */
};

/* One thread's state in one instance, on its own line. */
struct tt_local {
    alignas(64) pt__task_cache cache; /* free tasks: used only by this thread */
    uint32_t bucket;                 /* fmix64(thread index) % nbuckets, fixed */
    /* Written only by this thread (load + release store, no RMW), read by
     * read_stats with acquire. */
    _Atomic uint64_t scheduled;
    _Atomic uint64_t unscheduled;
    _Atomic uint64_t reclaimed; /* removed tasks this thread freed helping (tt_help_reclaim) */
};

struct pt_timerthread {
    /* Fixed after create. */
    struct tt_bucket *buckets;
    uint32_t nbuckets;
    bool global;       /* the process-wide instance: never destroyed */
    uint32_t reclaim_mask; /* a request every reclaim_mask + 1 unschedules per thread */
    uint32_t sweep_min;    /* smallest heap worth a sweep */
    bool self_destroy; /* destroy came from a callback: timer thread only */
    bool driven;       /* no thread: pt_timerthread_run runs the tasks */
    pt_nanos slack;    /* what pt_timerthread_schedule gives a task */
    /* A driven instance's: serialises its drivers, who own the heap in turn. */
    _Atomic uint32_t drive_lock;
    pthread_t thread;
    /* Set once by destroy. Relaxed: schedule's check is advisory (a schedule
     * racing with destroy is the caller's bug); the timer thread's check is
     * ordered by the global lock, which destroy takes after setting it. */
    _Atomic bool stop;
    /* Chunks of per-thread state by thread index, published by a release
     * CAS (tt_local_chunk) and never freed before the instance. */
    _Atomic(struct tt_local *) locals[TT_LOCAL_CHUNKS];
    _Atomic uint32_t shared_lock; /* pt__lock: guards `shared` */
    struct tt_local shared;       /* for a thread with no index or no chunk */
    pt__task_pool pool;

    /* The global lock and what it guards, on their own line. */
    alignas(64) _Atomic uint32_t lock;
    pt_nanos nearest;          /* earliest `latest` announced since the thread last reset it */
    /* nearest, as last written, for pt_timerthread_next's look without
     * the lock (every write of nearest goes through set_nearest) */
    _Atomic pt_nanos nearest_seen;
    _Atomic uint32_t nsignals; /* the futex word the thread sleeps on; bumped under lock */
    bool reclaim;              /* a reclaim was asked for since the thread last reset nearest */

    /* The timer thread's own, on their own line. */
    alignas(64) pt__heap4 heap; /* {when, task}: the tasks with no slack */
    /* The tasks with slack, only the timer thread's: by `when`, to run
     * them, and by `latest`, to know how long it may sleep. The second
     * is lazy: an entry whose task has left (in_slack false, or its
     * latest another) is dropped when it reaches the top (tt_wake_at),
     * and the heap rebuilt when such entries outnumber the live ones. */
    pt__heap4 slack_when, slack_latest;
    /* Single writer, the timer thread; read by read_stats. triggered is
     * stored with release (see read_stats), the other two relaxed. */
    _Atomic uint64_t triggered;
    _Atomic uint64_t wakeups;
    _Atomic uint64_t busy_ns;
    /* Tasks the thread has given back to the pool, and of those the ones
     * that had been unscheduled; single writer, the timer thread (freed is
     * read by the tests' hook, removed_freed only by the thread). */
    _Atomic uint64_t freed;
    uint64_t removed_freed;
    /* 0 until the timer thread has made its per-thread state; create
     * sleeps on it, so what an instance allocates as it starts is done
     * when create returns (and no first schedule races it for the
     * per-thread chunk the two threads may share). */
    _Atomic uint32_t started;
};

/* ---- helpers -------------------------------------------------------- */

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* A counter with one writer: a plain add, published with release so a
 * reader that sees it also sees what led to it. Returns the new count. */
static inline uint64_t count(_Atomic uint64_t *c)
{
    uint64_t n = atomic_load_explicit(c, memory_order_relaxed) + 1;
    atomic_store_explicit(c, n, memory_order_release);
    return n;
}

_Noreturn static void tt_bad_task(const pt_timerthread *tt, const struct pt__tt_task *t,
                                  uint32_t version, const char *op)
{
    fprintf(stderr,
            "ptimer: timerthread %p: corrupt task %p (slot %u): version %u, issued as %u "
            "(expected %u or %u), in %s\n",
            (const void *)tt, (const void *)t, t->slot, version, t->id_version, t->id_version,
            t->id_version + 2, op);
    abort();
}

_Noreturn static void tt_oom(const pt_timerthread *tt, const char *op)
{
    fprintf(stderr, "ptimer: timerthread %p: out of memory growing its heap past %u tasks, in %s\n",
            (const void *)tt, tt->heap.len, op);
    abort();
}

/* ---- per-thread state ------------------------------------------------ */

static struct tt_local *tt_local_chunk(pt_timerthread *tt, uint32_t c)
{
    struct tt_local *chunk = pt__alloc_lines(TT_LOCALS_PER_CHUNK * sizeof *chunk);
    if (!chunk)
        return NULL;
    memset(chunk, 0, TT_LOCALS_PER_CHUNK * sizeof *chunk);
    for (uint32_t k = 0; k < TT_LOCALS_PER_CHUNK; k++) {
        chunk[k].bucket = (uint32_t)(fmix64(c * TT_LOCALS_PER_CHUNK + k) % tt->nbuckets);
        atomic_init(&chunk[k].scheduled, 0);
        atomic_init(&chunk[k].unscheduled, 0);
        atomic_init(&chunk[k].reclaimed, 0);
    }
    struct tt_local *seen = NULL;
    /* release: publishes the chunk's contents; acquire on failure: pairs
     * with the winner's release, as the load in tt_local does. */
    if (!atomic_compare_exchange_strong_explicit(&tt->locals[c], &seen, chunk, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        pt__free_lines(chunk);
        return seen;
    }
    return chunk;
}

/* The calling thread's state in tt, or NULL (then the caller uses
 * tt->shared under tt->shared_lock). */
static inline struct tt_local *tt_local(pt_timerthread *tt)
{
    uint32_t i = pt__thread_index();
    uint32_t c = i / TT_LOCALS_PER_CHUNK;
    if (__builtin_expect(c >= TT_LOCAL_CHUNKS, 0))
        return NULL;
    /* acquire: pairs with the release CAS in tt_local_chunk */
    struct tt_local *chunk = atomic_load_explicit(&tt->locals[c], memory_order_acquire);
    if (__builtin_expect(chunk == NULL, 0))
        chunk = tt_local_chunk(tt, c);
    return chunk ? &chunk[i % TT_LOCALS_PER_CHUNK] : NULL;
}

/* Return a task to the pool through the calling thread's cache. */
static void tt_free_task(pt_timerthread *tt, struct tt_local *l, struct pt__tt_task *t)
{
    if (__builtin_expect(l != NULL, 1)) {
        pt__task_cache_put(&tt->pool, &l->cache, t);
        return;
    }
    pt__lock(&tt->shared_lock);
    pt__task_cache_put(&tt->pool, &tt->shared.cache, t);
    pt__unlock(&tt->shared_lock);
}

/* ---- schedule and unschedule ------------------------------------------ */

/* The task is the earliest of its bucket: if it is also earlier than what
 * the timer thread is waiting for, say so and wake it. */
static inline void set_nearest(pt_timerthread *tt, pt_nanos when)
{
    tt->nearest = when;
    atomic_store_explicit(&tt->nearest_seen, when, memory_order_relaxed);
}

/* With tt->lock held: the thread's sleep is to be cut short at `when`
 * (0: at once). Relaxed: the increment is ordered by the lock; the futex
 * compares the word itself. The caller wakes the futex after unlocking. */
static inline void tt_set_nearest_locked(pt_timerthread *tt, pt_nanos when)
{
    set_nearest(tt, when);
    atomic_store_explicit(&tt->nsignals,
                          atomic_load_explicit(&tt->nsignals, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static __attribute__((noinline)) void tt_announce(pt_timerthread *tt, pt_nanos when)
{
    bool wake = false;
    pt__lock(&tt->lock);
    if (when < tt->nearest) {
        tt_set_nearest_locked(tt, when);
        wake = !tt->driven; /* a driven instance has no thread to wake */
    }
    /* nothing of tt is read after this: its thread may free it (a
     * destroy from its own callback) once the lock is down */
    pt__unlock(&tt->lock);
    if (wake)
        pt__futex_wake(&tt->nsignals, 1);
}

/* Ask the thread to reclaim removed tasks (see the top): nearest 0 makes
 * it pull every bucket before it runs a task or sleeps, as destroy's does;
 * `reclaim` under the same lock tells it to consider a sweep after that
 * pull. A request while one is pending (nearest already 0) costs no wake,
 * and returns false: the thread has not pulled since the last one. */
static __attribute__((noinline)) bool tt_request_reclaim(pt_timerthread *tt)
{
    bool wake = false;
    pt__lock(&tt->lock);
    tt->reclaim = true;
    bool driven = tt->driven;
    if (tt->nearest != 0) {
        tt_set_nearest_locked(tt, 0);
        wake = true;
    }
    pt__unlock(&tt->lock);
    if (wake && !driven)
        pt__futex_wake(&tt->nsignals, 1);
    return wake;
}

static void tt_help_reclaim(pt_timerthread *tt, struct tt_local *l);

/* when + slack; a window past the clock's range ends at its last
 * instant (as pt_slack_align's), so that it is still announced and
 * waited for; never stays never. */
static pt_nanos latest_of(pt_nanos when, pt_nanos slack)
{
    if (when >= PT_MAXWHEN)
        return PT_MAXWHEN;
    return when > PT_MAXWHEN - 1 - slack ? PT_MAXWHEN - 1 : when + slack;
}

static pt_task_id tt_schedule(pt_timerthread *tt, void (*fn)(void *), void *arg, pt_nanos when,
                              pt_nanos slack)
{
    if (!tt || !fn || atomic_load_explicit(&tt->stop, memory_order_relaxed))
        return PT_INVALID_TASK_ID;
    if (when < 0)
        when = PT_MAXWHEN;
    pt_nanos latest = latest_of(when, slack);

    /* Allocate outside any bucket lock, from this thread's cache. */
    struct pt__tt_task *t;
    struct tt_local *l = tt_local(tt);
    if (__builtin_expect(l != NULL, 1)) {
        t = pt__task_cache_get(&tt->pool, &l->cache);
        if (!t)
            return PT_INVALID_TASK_ID;
        count(&l->scheduled);
    } else {
        l = &tt->shared;
        pt__lock(&tt->shared_lock);
        t = pt__task_cache_get(&tt->pool, &l->cache);
        if (t)
            count(&l->scheduled);
        pt__unlock(&tt->shared_lock);
        if (!t)
            return PT_INVALID_TASK_ID;
    }
    t->fn = fn;
    t->arg = arg;
    t->when = when;
    t->latest = latest;
    /* relaxed: the slot is ours. An unschedule of a stale id may look at
     * the word, but its CAS fails: its version is below v. (A forged id
     * naming v exactly is the caveat in timerthread.h.) */
    uint32_t v = atomic_load_explicit(&t->version, memory_order_relaxed);
    if (__builtin_expect(v == 0, 0)) { /* wrapped after 2^31 uses: skip 0 */
        atomic_store_explicit(&t->version, 2, memory_order_relaxed);
        v = 2;
    }
    t->id_version = v; /* schedule: free (v) -> pending v */
    pt_task_id id = ((pt_task_id)v << 32) | t->slot;

    struct tt_bucket *b = &tt->buckets[l->bucket];
    bool earlier = false;
    pt__lock(&b->lock);
    t->next = atomic_load_explicit(&b->head, memory_order_relaxed);
    atomic_store_explicit(&b->head, t, memory_order_relaxed);
    if (latest < b->nearest) {
        b->nearest = latest;
        earlier = true;
    }
    pt__unlock(&b->lock); /* release: publishes the task's fields to tt_consume */
    if (earlier)
        tt_announce(tt, latest);
    return id;
}

pt_task_id pt_timerthread_schedule(pt_timerthread *tt, void (*fn)(void *), void *arg, pt_nanos when)
{
    return tt_schedule(tt, fn, arg, when, tt ? tt->slack : 0);
}

pt_task_id pt_timerthread_schedule_slack(pt_timerthread *tt, void (*fn)(void *), void *arg,
                                         pt_nanos when, pt_nanos slack)
{
    if (slack < 0)
        return PT_INVALID_TASK_ID;
    return tt_schedule(tt, fn, arg, when, slack);
}

int pt_timerthread_unschedule(pt_timerthread *tt, pt_task_id id)
{
    if (!tt)
        return -1;
    uint32_t v = (uint32_t)(id >> 32);
    /* Issued versions are even and never 0. Anything else was never an id,
     * and an odd one could otherwise be taken for "running". */
    if (v == 0 || (v & 1))
        return -1;
    struct pt__tt_task *t = pt__task_pool_address(&tt->pool, (uint32_t)id);
    if (!t)
        return -1;
    uint32_t seen = v;
    /* unschedule: pending v -> removed v+2. acquire (both outcomes): pairs
     * with the release store after fn(arg) in tt_run_task, so a caller told
     * -1 because the task ran sees everything the callback did. */
    if (!atomic_compare_exchange_strong_explicit(&t->version, &seen, v + 2, memory_order_acquire,
                                                 memory_order_acquire))
        return seen == v + 1 ? 1 : -1;
    struct tt_local *l = tt_local(tt);
    uint64_t n;
    if (__builtin_expect(l != NULL, 1)) {
        n = count(&l->unscheduled);
    } else {
        pt__lock(&tt->shared_lock);
        n = count(&tt->shared.unscheduled);
        pt__unlock(&tt->shared_lock);
    }
    /* A request the thread has not served since our last one: it is
     * 4096 of our removals behind, so we drain our own bucket meanwhile. */
    if (__builtin_expect((n & tt->reclaim_mask) == 0, 0) && !tt_request_reclaim(tt) && l)
        tt_help_reclaim(tt, l);
    return 0;
}

/* ---- the timer thread ------------------------------------------------- */

/* Take a bucket's whole list. The peek without the lock keeps an empty
 * bucket from costing a lock and a line transfer; it cannot lose a task
 * that is due: a push into an empty bucket (nearest PT_MAXWHEN) always goes
 * on to the global lock (tt_announce). If it did so before this drain's
 * reset of the global nearest time, that lock orders its push before this
 * peek; if after, it lowered the global nearest time, and the thread pulls
 * again before running or sleeping past it. A push into a non-empty bucket
 * is taken along with the bucket's earlier tasks. (Only a never-task into
 * an empty bucket skips the lock, and it may wait for the next drain.) */
static struct pt__tt_task *tt_consume(struct tt_bucket *b)
{
    if (!atomic_load_explicit(&b->head, memory_order_relaxed))
        return NULL;
    pt__lock(&b->lock);
    struct pt__tt_task *head = atomic_load_explicit(&b->head, memory_order_relaxed);
    atomic_store_explicit(&b->head, NULL, memory_order_relaxed);
    b->nearest = PT_MAXWHEN;
    pt__unlock(&b->lock);
    return head;
}

/* Give t back to the pool, counted (the timer thread only). */
static void tt_freed(pt_timerthread *tt, struct tt_local *l, struct pt__tt_task *t)
{
    tt_free_task(tt, l, t);
    atomic_store_explicit(&tt->freed, atomic_load_explicit(&tt->freed, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Help the timer thread reclaim (see the top): it has not served this
 * thread's last request, so this thread takes its own bucket's list (as
 * the timer thread's pull does, under the bucket's lock), frees the
 * removed tasks into its own cache (free: removed -> free, by the
 * remover), and puts the pending ones back with a schedule's push: onto
 * the bucket, lowering its nearest time, and announced if they are now
 * its earliest. While they are out of the bucket the timer thread may
 * sleep past them; the announce after the push-back wakes it, as a
 * schedule's does. A bucket holds pending (v) and removed (v+2) tasks only:
 * only the timer thread runs tasks, from its heap. */
static __attribute__((noinline)) void tt_help_reclaim(pt_timerthread *tt, struct tt_local *l)
{
    struct tt_bucket *b = &tt->buckets[l->bucket];
    struct pt__tt_task *keep = NULL, *last = NULL;
    pt_nanos earliest = PT_MAXWHEN;
    uint64_t freed = 0;
    for (struct pt__tt_task *t = tt_consume(b); t;) {
        struct pt__tt_task *next = t->next; /* before t is freed or relinked */
        /* relaxed: as in tt_try_delete; the fields came with the bucket's lock */
        uint32_t v = atomic_load_explicit(&t->version, memory_order_relaxed);
        if (v == t->id_version + 2) {
            pt__task_cache_put(&tt->pool, &l->cache, t);
            freed++;
        } else {
            if (v != t->id_version)
                tt_bad_task(tt, t, v, "help reclaim");
            t->next = keep;
            keep = t;
            if (!last)
                last = t;
            if (t->latest < earliest)
                earliest = t->latest;
        }
        t = next;
    }
    if (freed) /* one writer, this thread: read by tt_sweep and the tests' hook */
        atomic_store_explicit(&l->reclaimed,
                              atomic_load_explicit(&l->reclaimed, memory_order_relaxed) + freed,
                              memory_order_release);
    if (!keep)
        return;
    bool earlier = false;
    pt__lock(&b->lock);
    last->next = atomic_load_explicit(&b->head, memory_order_relaxed);
    atomic_store_explicit(&b->head, keep, memory_order_relaxed);
    if (earliest < b->nearest) {
        b->nearest = earliest;
        earlier = true;
    }
    pt__unlock(&b->lock);
    if (earlier)
        tt_announce(tt, earliest);
}

/* free: removed -> free, if t was unscheduled. True if t was freed. */
static bool tt_try_delete(pt_timerthread *tt, struct tt_local *l, struct pt__tt_task *t)
{
    /* relaxed: the unscheduler wrote nothing else; whoever reuses the slot
     * is ordered after this thread by the pool's lock or cache. */
    uint32_t v = atomic_load_explicit(&t->version, memory_order_relaxed);
    if (v == t->id_version)
        return false;
    if (v != t->id_version + 2)
        tt_bad_task(tt, t, v, "free of an unscheduled task");
    tt->removed_freed++;
    tt_freed(tt, l, t);
    return true;
}

/* run: pending -> running -> done, then free; or free if it was removed
 * first. True if fn ran. */
static bool tt_run_task(pt_timerthread *tt, struct tt_local *l, struct pt__tt_task *t)
{
    uint32_t v = t->id_version, seen = v;
    /* relaxed: the task's fields came to this thread through its bucket's
     * lock; the unscheduler this races with wrote nothing else. */
    if (atomic_compare_exchange_strong_explicit(&t->version, &seen, v + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        t->fn(t->arg);
        /* release: pairs with the acquire CAS in unschedule */
        atomic_store_explicit(&t->version, v + 2, memory_order_release);
        tt_freed(tt, l, t);
        return true;
    }
    if (seen != v + 2)
        tt_bad_task(tt, t, seen, "run");
    tt->removed_freed++;
    tt_freed(tt, l, t);
    return false;
}

/* Unschedules counted so far, every thread's (the sum read_stats makes),
 * and the removed tasks threads freed helping (tt_help_reclaim). */
static void tt_sums(pt_timerthread *tt, uint64_t *unscheduled, uint64_t *reclaimed)
{
    uint64_t u = atomic_load_explicit(&tt->shared.unscheduled, memory_order_acquire);
    uint64_t r = 0;
    for (uint32_t c = 0; c < TT_LOCAL_CHUNKS; c++) {
        struct tt_local *chunk = atomic_load_explicit(&tt->locals[c], memory_order_acquire);
        for (uint32_t k = 0; chunk && k < TT_LOCALS_PER_CHUNK; k++) {
            u += atomic_load_explicit(&chunk[k].unscheduled, memory_order_acquire);
            r += atomic_load_explicit(&chunk[k].reclaimed, memory_order_acquire);
        }
    }
    *unscheduled = u;
    *reclaimed = r;
}

/* After a reclaim's pull: free the heap's removed tasks in one pass if at
 * least a quarter of a heap of sweep_min or more is removed ones. Those
 * are the unschedules counted less the removed tasks freed so far (a few
 * more, removed while still in a bucket pushed after the pull, make the
 * estimate high, never low), so the pass is skipped when it would free
 * little. The survivors are compacted in place and re-heapified, O(n). */
/* The by-latest heap of the tasks with slack, made again from the
 * by-when one: only live entries. */
static void tt_slack_rebuild(pt_timerthread *tt)
{
    pt__heap4 *w = &tt->slack_when, *lt = &tt->slack_latest;
    lt->len = 0;
    if (pt__heap4_reserve(lt, w->len) != 0) /* holds them already: every live one has an entry */
        tt_oom(tt, "rebuild");
    for (uint32_t i = 0; i < w->len; i++) {
        struct pt__tt_task *t = w->v[i].item;
        lt->v[lt->len++] = (pt__heap4_entry){.when = t->latest, .item = t};
    }
    pt__heap4_heapify(lt);
}

/* Compacts heap h in place, freeing its removed tasks; true if any went. */
static bool tt_sweep_heap(pt_timerthread *tt, struct tt_local *l, pt__heap4 *h)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < h->len; i++) {
        struct pt__tt_task *t = h->v[i].item;
        bool in_slack = t->in_slack;
        t->in_slack = false; /* before it may be freed */
        if (!tt_try_delete(tt, l, t)) {
            t->in_slack = in_slack;
            h->v[keep++] = h->v[i];
        }
    }
    if (keep == h->len)
        return false;
    h->len = keep;
    pt__heap4_heapify(h);
    return true;
}

static void tt_sweep(pt_timerthread *tt, struct tt_local *l)
{
    uint32_t len = tt->heap.len + tt->slack_when.len;
    if (len == 0 || len < tt->sweep_min)
        return;
    uint64_t u, r;
    tt_sums(tt, &u, &r);
    uint64_t gone = tt->removed_freed + r;
    uint64_t held = u > gone ? u - gone : 0;
    /* sweep_min 0 (the tests' tuning): any removed task held is swept */
    if (held == 0 || (tt->sweep_min && held * 4 < len))
        return;
    (void)tt_sweep_heap(tt, l, &tt->heap);
    if (tt_sweep_heap(tt, l, &tt->slack_when))
        tt_slack_rebuild(tt);
}

static bool tt_stopping(pt_timerthread *tt)
{
    return atomic_load_explicit(&tt->stop, memory_order_relaxed);
}

/* A pulled task into the heap, or, with slack, into the two slack heaps. */
static void tt_take(pt_timerthread *tt, struct pt__tt_task *t)
{
    if (__builtin_expect(t->latest == t->when, 1)) {
        if (pt__heap4_reserve(&tt->heap, 1) != 0)
            tt_oom(tt, "pull");
        pt__heap4_push(&tt->heap, t->when, t);
        return;
    }
    if (pt__heap4_reserve(&tt->slack_when, 1) != 0 || pt__heap4_reserve(&tt->slack_latest, 1) != 0)
        tt_oom(tt, "pull");
    t->in_slack = true;
    pt__heap4_push(&tt->slack_when, t->when, t);
    pt__heap4_push(&tt->slack_latest, t->latest, t);
}

/* Takes every bucket's tasks into the heap, freeing the removed ones,
 * having reset the global nearest time first, so that a task scheduled
 * during the pull that is earlier than what it pulled shows up in it
 * (bRPC's pull_again); sweeps the heap when a reclaim was asked for. */
static void tt_pull(pt_timerthread *tt, struct tt_local *l)
{
    pt__lock(&tt->lock);
    set_nearest(tt, PT_MAXWHEN);
    bool reclaim = tt->reclaim; /* this pull serves every request so far */
    tt->reclaim = false;
    pt__unlock(&tt->lock);

    for (uint32_t i = 0; i < tt->nbuckets; i++) {
        for (struct pt__tt_task *t = tt_consume(&tt->buckets[i]); t;) {
            struct pt__tt_task *next = t->next; /* before t may be freed */
            if (!tt_try_delete(tt, l, t))
                tt_take(tt, t);
            t = next;
        }
    }
    if (reclaim)
        tt_sweep(tt, l);
}

/* The heap whose head has the earliest `when`: the tasks with no slack
 * or those with some; NULL when both are empty. */
static pt__heap4 *tt_head(pt_timerthread *tt)
{
    pt__heap4 *h = &tt->heap, *s = &tt->slack_when;
    if (__builtin_expect(s->len == 0, 1))
        return h->len ? h : NULL;
    return h->len && h->v[0].when <= s->v[0].when ? h : s;
}

/* Takes the head of h (tt_head's) off, and out of the slack heaps. */
static void tt_pop(pt_timerthread *tt, pt__heap4 *h, struct pt__tt_task *t)
{
    pt__heap4_remove(h, 0);
    if (h != &tt->heap)
        t->in_slack = false; /* before it may be freed: its by-latest entry is dead */
}

/* Runs the heaps' tasks due by *now (their `when`, whatever their slack),
 * reading the clock again when the head is not due by the last reading
 * (`driven`: never; *now is the driver's). False: a task announced since
 * the pull may have to run before the head, or stop was asked: pull
 * again. */
static bool tt_run_due(pt_timerthread *tt, struct tt_local *l, pt_nanos *now, bool driven,
                       uint64_t *triggered)
{
    pt__heap4 *h;
    while ((h = tt_head(tt))) {
        struct pt__tt_task *t = h->v[0].item;
        /* removed: off the heap, then freed (tt_try_delete's look first) */
        if (atomic_load_explicit(&t->version, memory_order_relaxed) != t->id_version) {
            tt_pop(tt, h, t);
            (void)tt_try_delete(tt, l, t);
            continue;
        }
        if (t->when > *now) {
            if (driven || t->when > (*now = pt_nanotime()))
                return true;
        }
        /* Before running what we think is the earliest, check the
         * global nearest time: a task scheduled since the pull that must
         * run by then is still in its bucket. Ascending schedules rarely
         * lower it, so this is rarely true. Stop counts too: destroy
         * drops due tasks rather than run them. */
        pt__lock(&tt->lock);
        bool pull_again = t->when > tt->nearest;
        pt__unlock(&tt->lock);
        if (pull_again || tt_stopping(tt))
            return false;
        tt_pop(tt, h, t);
        if (tt_run_task(tt, l, t))
            atomic_store_explicit(&tt->triggered, ++*triggered, memory_order_release);
    }
    return true;
}

/* How long the runner may sleep: the earliest task with no slack, or the
 * earliest `latest` of those with some (dropping the dead entries on top
 * of that heap first). PT_MAXWHEN: none. */
static pt_nanos tt_wake_at(pt_timerthread *tt)
{
    pt__heap4 *h = &tt->heap, *lt = &tt->slack_latest;
    pt_nanos next = h->len ? h->v[0].when : PT_MAXWHEN;
    if (__builtin_expect(lt->len == 0, 1))
        return next;
    while (lt->len) {
        struct pt__tt_task *t = lt->v[0].item;
        /* live: in the slack heaps as this entry put it there, and not
         * removed since (a removed one is skipped by the run anyway) */
        if (t->in_slack && t->latest == lt->v[0].when &&
            atomic_load_explicit(&t->version, memory_order_relaxed) == t->id_version)
            break;
        pt__heap4_remove(lt, 0);
    }
    if (lt->len > 2 * tt->slack_when.len + 64)
        tt_slack_rebuild(tt);
    return lt->len && lt->v[0].when < next ? lt->v[0].when : next;
}

/* Publishes when the runner wakes (tt_wake_at) as what it waits for, so
 * that only a schedule due earlier announces itself, and returns it in
 * *next with nsignals sampled under the same lock: a bump after this
 * makes the futex wait return at once. False: never wait past a task
 * announced since the pull, or stop was asked (under the lock, again: a
 * destroy between the pull's reset of nearest and here has already
 * bumped nsignals, so the sample would sleep through it; the spin
 * model's tt.destroy_lost_wakeup): pull again. */
static bool tt_publish(pt_timerthread *tt, pt_nanos *next, uint32_t *expected)
{
    *next = tt_wake_at(tt);
    pt__lock(&tt->lock);
    if (*next > tt->nearest || tt_stopping(tt)) {
        pt__unlock(&tt->lock);
        return false;
    }
    set_nearest(tt, *next);
    *expected = atomic_load_explicit(&tt->nsignals, memory_order_relaxed);
    pt__unlock(&tt->lock);
    pt__heap4_shrink(&tt->heap);
    pt__heap4_shrink(&tt->slack_when);
    pt__heap4_shrink(&tt->slack_latest);
    return true;
}

static void tt_loop(pt_timerthread *tt, struct tt_local *l)
{
    pt_nanos now = pt_nanotime(), last_sleep = now, next;
    uint64_t triggered = 0, wakeups = 0, busy = 0;
    uint32_t expected;

    while (!tt_stopping(tt)) {
        tt_pull(tt, l);
        if (!tt_run_due(tt, l, &now, false, &triggered) || !tt_publish(tt, &next, &expected))
            continue;
        now = pt_nanotime();
        busy += (uint64_t)(now - last_sleep);
        atomic_store_explicit(&tt->busy_ns, busy, memory_order_relaxed);
        /* An absolute CLOCK_MONOTONIC deadline (PT_MAXWHEN: none). The
         * thread's timer slack is left at the default (50 us): it sets how
         * late this wait may return; ptbench measures whether 1 ns pays. */
        pt__futex_wait(&tt->nsignals, expected, next);
        atomic_store_explicit(&tt->wakeups, ++wakeups, memory_order_relaxed);
        now = last_sleep = pt_nanotime();
    }
}

/* ---- a driven instance: no thread; its driver runs what is due -------- */

int pt_timerthread_run(pt_timerthread *tt, pt_nanos now)
{
    if (!tt || !tt->driven)
        return -EINVAL;
    pt__lock(&tt->drive_lock);
    struct tt_local *l = tt_local(tt);
    uint64_t triggered = atomic_load_explicit(&tt->triggered, memory_order_relaxed);
    uint64_t before = triggered;
    pt_nanos next;
    uint32_t expected;
    for (;;) {
        tt_pull(tt, l);
        if ((tt_run_due(tt, l, &now, true, &triggered) && tt_publish(tt, &next, &expected)) ||
            tt_stopping(tt))
            break;
    }
    pt__unlock(&tt->drive_lock);
    return (int)(triggered - before);
}

/* Between runs, nearest is the earliest pending `latest` (a run ends by
 * publishing when it must run next there, and a schedule lowers it only
 * for a task due earlier), so the look takes no lock. 0 in nearest is a reclaim's
 * request for a pull: answered as due, so that the driver runs and
 * publishes the head again. */
pt_nanos pt_timerthread_next(pt_timerthread *tt)
{
    if (!tt || !tt->driven)
        return -EINVAL;
    pt_nanos next = atomic_load_explicit(&tt->nearest_seen, memory_order_relaxed);
    return next == PT_MAXWHEN ? 0 : next == 0 ? 1 : next;
}

static void tt_free(pt_timerthread *tt)
{
    /* Tasks still pending are dropped with the pool's blocks, unrun. */
    pt__heap4_free(&tt->heap);
    pt__heap4_free(&tt->slack_when);
    pt__heap4_free(&tt->slack_latest);
    for (uint32_t c = 0; c < TT_LOCAL_CHUNKS; c++)
        pt__free_lines(atomic_load_explicit(&tt->locals[c], memory_order_acquire));
    pt__task_pool_destroy(&tt->pool);
    pt__free_lines(tt->buckets);
    pt__free_lines(tt);
}

static void *tt_main(void *arg)
{
    pt_timerthread *tt = arg;
    pthread_setname_np(pthread_self(), "pt_timerthread");
    struct tt_local *l = tt_local(tt);
    atomic_store_explicit(&tt->started, 1, memory_order_release);
    pt__futex_wake(&tt->started, 1);
    tt_loop(tt, l);
    if (tt->self_destroy)
        tt_free(tt);
    return NULL;
}

/* ---- lifetime and stats ------------------------------------------------ */

static int tt_create(pt_timerthread **out, const pt_timerthread_options *opt, bool driven)
{
    if (!out)
        return -EINVAL;
    unsigned n = opt && opt->num_buckets ? opt->num_buckets : TT_DEFAULT_BUCKETS;
    if (n > TT_MAX_BUCKETS || (opt && opt->slack < 0))
        return -EINVAL;
    pt_timerthread *tt = pt__alloc_lines(sizeof *tt);
    if (!tt)
        return -ENOMEM;
    memset(tt, 0, sizeof *tt);
    tt->buckets = pt__alloc_lines(n * sizeof *tt->buckets);
    if (!tt->buckets) {
        pt__free_lines(tt);
        return -ENOMEM;
    }
    tt->nbuckets = n;
    tt->reclaim_mask = TT_RECLAIM_EVERY - 1;
    tt->sweep_min = TT_SWEEP_MIN;
    for (unsigned i = 0; i < n; i++) {
        pt__lock_init(&tt->buckets[i].lock);
        atomic_init(&tt->buckets[i].head, NULL);
        tt->buckets[i].nearest = PT_MAXWHEN;
    }
    atomic_init(&tt->stop, false);
    for (uint32_t c = 0; c < TT_LOCAL_CHUNKS; c++)
        atomic_init(&tt->locals[c], NULL);
    pt__lock_init(&tt->shared_lock);
    tt->shared.bucket = 0;
    atomic_init(&tt->shared.scheduled, 0);
    atomic_init(&tt->shared.unscheduled, 0);
    atomic_init(&tt->shared.reclaimed, 0);
    pt__task_pool_init(&tt->pool);
    pt__lock_init(&tt->lock);
    tt->nearest = PT_MAXWHEN;
    atomic_init(&tt->nearest_seen, PT_MAXWHEN);
    atomic_init(&tt->nsignals, 0);
    pt__heap4_init(&tt->heap, PT__HEAP4_NO_INDEX);
    pt__heap4_init(&tt->slack_when, PT__HEAP4_NO_INDEX);
    pt__heap4_init(&tt->slack_latest, PT__HEAP4_NO_INDEX);
    atomic_init(&tt->triggered, 0);
    atomic_init(&tt->wakeups, 0);
    atomic_init(&tt->busy_ns, 0);
    atomic_init(&tt->freed, 0);
    tt->removed_freed = 0;
    tt->reclaim = false;
    atomic_init(&tt->started, 0);
    tt->driven = driven;
    tt->slack = opt ? opt->slack : 0;
    pt__lock_init(&tt->drive_lock);
    if (driven) {
        *out = tt;
        return 0;
    }

    int rc = pthread_create(&tt->thread, NULL, tt_main, tt);
    if (rc) {
        pt__free_lines(tt->buckets);
        pt__free_lines(tt);
        return -rc;
    }
    while (!atomic_load_explicit(&tt->started, memory_order_acquire))
        pt__futex_wait(&tt->started, 0, 0);
    *out = tt;
    return 0;
}

int pt_timerthread_create(pt_timerthread **out, const pt_timerthread_options *opt)
{
    return tt_create(out, opt, false);
}

int pt_timerthread_create_driven(pt_timerthread **out, const pt_timerthread_options *opt)
{
    return tt_create(out, opt, true);
}

void pt_timerthread_destroy(pt_timerthread *tt)
{
    if (!tt || tt->global)
        return;
    if (tt->driven) {
        tt_free(tt); /* its driver is done with it: nothing runs here */
        return;
    }
    atomic_store_explicit(&tt->stop, true, memory_order_relaxed);
    pt__lock(&tt->lock);
    /* Whatever the thread is about to do, nearest 0 makes it pull again
     * (where it sees stop), and the bump makes its futex wait return. */
    set_nearest(tt, 0);
    atomic_store_explicit(&tt->nsignals,
                          atomic_load_explicit(&tt->nsignals, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    pt__unlock(&tt->lock);
    if (pthread_equal(pthread_self(), tt->thread)) {
        /* From one of tt's callbacks: the thread cannot join itself. It
         * leaves its loop when the callback returns and frees tt. */
        tt->self_destroy = true;
        pthread_detach(tt->thread);
        return;
    }
    pt__futex_wake(&tt->nsignals, 1);
    pthread_join(tt->thread, NULL);
    tt_free(tt);
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static pt_timerthread *global_tt;

static void global_init(void)
{
    pt_timerthread *tt;
    if (pt_timerthread_create(&tt, NULL) == 0) {
        tt->global = true;
        global_tt = tt;
    }
}

pt_timerthread *pt_timerthread_global(void)
{
    /* pthread_once orders global_init before every caller's return. */
    pthread_once(&global_once, global_init);
    return global_tt;
}

void pt_timerthread_read_stats(pt_timerthread *tt, pt_timerthread_stats *out)
{
    if (!tt || !out)
        return;
    /* Outcomes first, with acquire: a task counted as triggered or
     * unscheduled was counted as scheduled before (the release stores pair
     * with these loads), so the scheduled sum read afterwards covers it and
     * pending never goes below zero but for a forged id's unschedule. */
    uint64_t trig = atomic_load_explicit(&tt->triggered, memory_order_acquire);
    uint64_t sched = 0, unsched = 0;
    for (uint32_t c = 0; c < TT_LOCAL_CHUNKS; c++) {
        struct tt_local *chunk = atomic_load_explicit(&tt->locals[c], memory_order_acquire);
        for (uint32_t k = 0; chunk && k < TT_LOCALS_PER_CHUNK; k++)
            unsched += atomic_load_explicit(&chunk[k].unscheduled, memory_order_acquire);
    }
    unsched += atomic_load_explicit(&tt->shared.unscheduled, memory_order_acquire);
    for (uint32_t c = 0; c < TT_LOCAL_CHUNKS; c++) {
        struct tt_local *chunk = atomic_load_explicit(&tt->locals[c], memory_order_acquire);
        for (uint32_t k = 0; chunk && k < TT_LOCALS_PER_CHUNK; k++)
            sched += atomic_load_explicit(&chunk[k].scheduled, memory_order_acquire);
    }
    sched += atomic_load_explicit(&tt->shared.scheduled, memory_order_acquire);
    out->scheduled = sched;
    out->triggered = trig;
    out->unscheduled = unsched;
    out->wakeups = atomic_load_explicit(&tt->wakeups, memory_order_relaxed);
    out->busy_ns = atomic_load_explicit(&tt->busy_ns, memory_order_relaxed);
    out->pending = sched > trig + unsched ? sched - trig - unsched : 0;
}

/* For tests (declared in task_pool.h): the slots tt's pool has handed out. */
uint32_t pt__timerthread_pool_slots(pt_timerthread *tt)
{
    return pt__task_pool_slots(&tt->pool);
}

/* For tests: tasks taken from the pool and not yet given back (scheduled,
 * less those the timer thread freed; tasks dropped by destroy aside). */
uint64_t pt__timerthread_held(pt_timerthread *tt)
{
    pt_timerthread_stats st;
    uint64_t u, r;
    tt_sums(tt, &u, &r);
    uint64_t freed = atomic_load_explicit(&tt->freed, memory_order_relaxed) + r;
    pt_timerthread_read_stats(tt, &st);
    return st.scheduled > freed ? st.scheduled - freed : 0;
}

/* For tests and the fuzzer: a reclaim request every `every` unschedules per
 * thread (a power of two), heaps swept from `sweep_min` entries (0: swept
 * whenever a removed task is held, whatever the share). Called before any
 * unschedule. */
void pt__timerthread_tune_reclaim(pt_timerthread *tt, uint32_t every, uint32_t sweep_min)
{
    tt->reclaim_mask = every - 1;
    tt->sweep_min = sweep_min;
}
