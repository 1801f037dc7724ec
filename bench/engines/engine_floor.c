/* floor: the least a per-P design can do. Each worker has a bare 4-ary heap
 * of {when, node} behind its own (uncontended) lock, with lazy deletion and
 * no status machine: cancel marks the node under the lock, and dead nodes
 * are popped when they reach the head or compacted past a quarter, as
 * pheap does. No other thread can touch a worker's timers, which is what
 * the status machine buys pheap; the gap between the two is its price.
 * White-box: it is built from the library's private 4-ary heap (base/),
 * so that the floor and pheap share their heap and differ by the status
 * machine alone. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "ptimer/slack.h"
#include "base/lock.h"
#include "base/heap4.h"
#include "slots.h"
#include "tobj.h"

struct fl_node {
    uint32_t dead;
    pt_nanos period;
    void *arg;
};

struct fl_thread {
    _Atomic uint32_t lock;
    pt__heap4 heap;
    uint32_t dead;
    pt_engine_cb cb;
    struct slots slots;
    atomic_ulong *wakeups;
    pt_nanos slack; /* the engine's: the worker sleeps to the earliest when + slack */
};

struct fl_engine {
    atomic_ulong wakeups;
    pt_engine_cb cb;
    pt_nanos slack;
};

static void *fl_create(int n, pt_engine_cb cb)
{
    (void)n;
    struct fl_engine *e = calloc(1, sizeof *e);
    if (e)
        e->cb = cb;
    return e;
}
static void fl_destroy(void *e) { free(e); }

static int fl_set_slack(void *e, pt_nanos slack)
{
    if (slack < 0)
        return -EINVAL;
    ((struct fl_engine *)e)->slack = slack;
    return 0;
}

static void *fl_thread_start(void *eng, int tid)
{
    (void)tid;
    struct fl_thread *th = calloc(1, sizeof *th);
    if (!th)
        return NULL;
    pt__lock_init(&th->lock);
    pt__heap4_init(&th->heap, PT__HEAP4_NO_INDEX);
    slots_init(&th->slots, sizeof(struct fl_node));
    th->cb = ((struct fl_engine *)eng)->cb;
    th->wakeups = &((struct fl_engine *)eng)->wakeups;
    th->slack = ((struct fl_engine *)eng)->slack;
    return th;
}

static void fl_reserve_handles(void *vth, long n)
{
    struct fl_thread *th = vth;
    pt__lock(&th->lock);
    (void)slots_reserve(&th->slots, n); /* failing only skews the reading */
    pt__unlock(&th->lock);
}

static void fl_thread_stop(void *vth)
{
    struct fl_thread *th = vth;
    pt__heap4_free(&th->heap);
    slots_free(&th->slots);
    free(th);
}

static bool fl_dead(struct fl_thread *th, uint32_t i)
{
    uint32_t slot = (uint32_t)(uintptr_t)th->heap.v[i].item;
    return ((struct fl_node *)slots_at(&th->slots, slot))->dead;
}

/* Pop dead nodes off the head (lock held). With `add` (a slot), the last
 * dead head is overwritten by {when, add} instead, as pheap does it
 * (pt__timers_add_locked), and add is pushed if there was none. */
static void fl_clean(struct fl_thread *th, int64_t add, pt_nanos when)
{
    while (th->heap.len && fl_dead(th, 0)) {
        uint32_t slot = (uint32_t)(uintptr_t)th->heap.v[0].item;
        uint32_t next = pt__heap4_second(&th->heap);
        th->dead--;
        slots_put(&th->slots, slot);
        if (add >= 0 && !(next && fl_dead(th, next))) {
            pt__heap4_replace_top(&th->heap, when, (void *)(uintptr_t)add);
            return;
        }
        pt__heap4_remove(&th->heap, 0);
    }
    if (add >= 0)
        pt__heap4_push(&th->heap, when, (void *)(uintptr_t)add);
}

static pt_engine_handle fl_schedule(void *vth, pt_nanos when, pt_nanos period, void *arg)
{
    struct fl_thread *th = vth;
    pt__lock(&th->lock);
    int64_t slot = slots_get(&th->slots);
    if (slot < 0 || pt__heap4_reserve(&th->heap, 1) < 0) {
        if (slot >= 0)
            slots_put(&th->slots, (uint32_t)slot);
        pt__unlock(&th->lock);
        return 0;
    }
    slots_fresh(&th->slots, (uint32_t)slot);
    struct fl_node *n = slots_at(&th->slots, (uint32_t)slot);
    n->dead = 0;
    n->period = period;
    n->arg = arg;
    fl_clean(th, slot, when);
    pt_engine_handle h = slots_handle(&th->slots, (uint32_t)slot);
    pt__unlock(&th->lock);
    return h;
}

static bool fl_cancel(void *vth, pt_engine_handle h)
{
    struct fl_thread *th = vth;
    pt__lock(&th->lock);
    struct fl_node *n = slots_check(&th->slots, h);
    bool live = n && !n->dead;
    if (live) {
        n->dead = 1;
        slots_retire(&th->slots, (uint32_t)h); /* freed when popped */
        th->dead++;
    }
    pt__unlock(&th->lock);
    return live;
}

static pt_engine_handle fl_reset(void *vth, pt_engine_handle h, pt_nanos when, void *arg)
{
    struct fl_thread *th = vth;
    pt__lock(&th->lock);
    struct fl_node *n = slots_check(&th->slots, h);
    pt_nanos period = n ? n->period : 0;
    pt__unlock(&th->lock);
    if (!n)
        return 0;
    /* Lazy deletion has no re-key: the old entry dies, a new one is pushed. */
    fl_cancel(th, h);
    return fl_schedule(th, when, period, arg);
}

TOBJ_HOOKS(fl, fl_schedule, fl_cancel)

static size_t fl_held(void *vth)
{
    struct fl_thread *th = vth;
    pt__lock(&th->lock);
    size_t n = th->heap.len;
    pt__unlock(&th->lock);
    return n;
}

/* Drop dead entries in one pass and re-heapify (lock held). */
static void fl_compact(struct fl_thread *th)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < th->heap.len; i++) {
        uint32_t slot = (uint32_t)(uintptr_t)th->heap.v[i].item;
        if (((struct fl_node *)slots_at(&th->slots, slot))->dead)
            slots_put(&th->slots, slot);
        else
            th->heap.v[kept++] = th->heap.v[i];
    }
    th->heap.len = kept;
    th->dead = 0;
    pt__heap4_heapify(&th->heap);
}

/* Run what is due; returns the next time (0: none). */
static pt_nanos fl_run(struct fl_thread *th)
{
    pt_nanos now = 0;
    pt__lock(&th->lock);
    for (;;) {
        fl_clean(th, -1, 0);
        if (!th->heap.len)
            break;
        if (!now)
            now = pt_nanotime();
        if (th->heap.v[0].when > now)
            break;
        uint32_t slot = (uint32_t)(uintptr_t)th->heap.v[0].item;
        struct fl_node *n = slots_at(&th->slots, slot);
        void *arg = n->arg;
        if (n->period > 0) {
            th->heap.v[0].when += n->period * (1 + (now - th->heap.v[0].when) / n->period);
            pt__heap4_fix(&th->heap, 0);
        } else {
            pt__heap4_remove(&th->heap, 0);
            slots_put(&th->slots, slot);
        }
        pt__unlock(&th->lock);
        th->cb(arg);
        pt__lock(&th->lock);
    }
    if (th->dead > th->heap.len / 4)
        fl_compact(th);
    pt_nanos next = pt_slack_latest(pt__heap4_top_when(&th->heap), th->slack);
    pt__unlock(&th->lock);
    return next;
}

static void fl_poll(void *vth) { fl_run(vth); }

static void fl_idle(void *vth, pt_nanos until)
{
    struct fl_thread *th = vth;
    for (;;) {
        /* Read before the run, which runs what is due by a later clock
         * read: once now >= until, everything due by `until` has run. */
        pt_nanos now = pt_nanotime();
        pt_nanos next = fl_run(th);
        if (now >= until)
            return;
        bench_sleep_until(next && next < until ? next : until);
        atomic_fetch_add_explicit(th->wakeups, 1, memory_order_relaxed);
    }
}

static void fl_read_stats(void *eng, struct pt_engine_stats *out)
{
    out->wakeups = atomic_load(&((struct fl_engine *)eng)->wakeups);
}

const struct pt_engine engine_floor = {
    ENGINE_HEAD,
    .name = "floor",
    .what = "bare per-thread 4-ary heap + lock, lazy deletion, no status machine",
    .create = fl_create,
    .set_slack = fl_set_slack,
    .destroy = fl_destroy,
    .thread_start = fl_thread_start,
    .thread_stop = fl_thread_stop,
    .schedule = fl_schedule,
    .cancel = fl_cancel,
    .reset = fl_reset,
    .poll = fl_poll,
    .idle = fl_idle,
    .read_stats = fl_read_stats,
    .reserve_handles = fl_reserve_handles,
    .timer_bytes = sizeof(struct fl_node) + sizeof(pt__heap4_entry),
    /* the least a per-P design can cost: shown, never the winner; fl_idle
     * has no wake: it sleeps to `until` */
    .flags = PT_ENGINE_REFERENCE | PT_ENGINE_IDLE_MISSES_REMOTE,
    TOBJ_FIELDS(fl),
    .held = fl_held,
};
