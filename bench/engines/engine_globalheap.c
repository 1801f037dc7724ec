/* globalheap: the naive design both bRPC and Go moved away from. One 4-ary
 * heap behind one lock shared by every thread, eager removal on cancel,
 * and one firing thread, woken (futex) whenever a new earliest timer
 * arrives. White-box: the heap and the futex are the library's private
 * ones (base/), so that it differs from the per-P designs by its one lock
 * and its one thread, not by a slower heap. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "ptimer/slack.h"
#include "base/futex.h"
#include "base/lock.h"
#include "base/heap4.h"
#include "slots.h"
#include "tobj.h"

struct gh_node {
    uint32_t idx;  /* heap position, kept by heap4 */
    uint32_t slot;
    pt_nanos period;
    void *arg;
};

struct gh_engine {
    _Atomic uint32_t lock; /* guards heap, slots, stop */
    pt__heap4 heap;
    struct slots slots;
    bool stop;
    _Atomic uint32_t wakeword; /* bumped when a new earliest arrives */
    pthread_t thread;
    atomic_ulong wakeups;
    pt_engine_cb cb;
    pt_nanos slack; /* the thread sleeps until the earliest when + slack */
};

static void *gh_main(void *arg)
{
    struct gh_engine *e = arg;
    pt__lock(&e->lock);
    while (!e->stop) {
        pt_nanos now = pt_nanotime();
        while (e->heap.len && e->heap.v[0].when <= now) {
            struct gh_node *n = e->heap.v[0].item;
            void *cbarg = n->arg;
            if (n->period > 0) {
                e->heap.v[0].when += n->period * (1 + (now - e->heap.v[0].when) / n->period);
                pt__heap4_fix(&e->heap, 0);
            } else {
                pt__heap4_remove(&e->heap, 0);
                slots_put(&e->slots, n->slot);
            }
            pt__unlock(&e->lock);
            e->cb(cbarg);
            pt__lock(&e->lock);
        }
        /* stop, again: destroy may have set it (and bumped wakeword, with
         * no one to wake) while a callback ran unlocked; the sample below
         * would then sleep through it, forever if the heap is empty. Under
         * the lock, a destroy not yet seen bumps after the sample. */
        if (e->stop)
            break;
        pt_nanos next = pt_slack_latest(pt__heap4_top_when(&e->heap), e->slack);
        uint32_t w = atomic_load_explicit(&e->wakeword, memory_order_acquire);
        pt__unlock(&e->lock);
        pt__futex_wait(&e->wakeword, w, next);
        atomic_fetch_add_explicit(&e->wakeups, 1, memory_order_relaxed);
        pt__lock(&e->lock);
    }
    pt__unlock(&e->lock);
    return NULL;
}

static int gh_set_slack(void *ve, pt_nanos slack)
{
    if (slack < 0)
        return -EINVAL;
    ((struct gh_engine *)ve)->slack = slack;
    return 0;
}

static void *gh_create(int n, pt_engine_cb cb)
{
    (void)n;
    struct gh_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->cb = cb;
    pt__lock_init(&e->lock);
    pt__heap4_init(&e->heap, (int32_t)offsetof(struct gh_node, idx));
    slots_init(&e->slots, sizeof(struct gh_node));
    if (pthread_create(&e->thread, NULL, gh_main, e) != 0) {
        free(e);
        return NULL;
    }
    return e;
}

static void gh_destroy(void *ve)
{
    struct gh_engine *e = ve;
    pt__lock(&e->lock);
    e->stop = true;
    pt__unlock(&e->lock);
    atomic_fetch_add(&e->wakeword, 1);
    pt__futex_wake(&e->wakeword, 1);
    pthread_join(e->thread, NULL);
    pt__heap4_free(&e->heap);
    slots_free(&e->slots);
    free(e);
}

static void gh_reserve_handles(void *ve, long n)
{
    struct gh_engine *e = ve;
    pt__lock(&e->lock);
    (void)slots_reserve(&e->slots, n); /* failing only skews the reading */
    pt__unlock(&e->lock);
}

/* Workers share everything: their context is the engine itself. */
static void *gh_thread_start(void *eng, int tid)
{
    (void)tid;
    return eng;
}

static void gh_thread_stop(void *th) { (void)th; }

static pt_engine_handle gh_schedule(void *vth, pt_nanos when, pt_nanos period, void *arg)
{
    struct gh_engine *e = vth;
    pt__lock(&e->lock);
    int64_t slot = slots_get(&e->slots);
    if (slot < 0 || pt__heap4_reserve(&e->heap, 1) < 0) {
        if (slot >= 0)
            slots_put(&e->slots, (uint32_t)slot);
        pt__unlock(&e->lock);
        return 0;
    }
    slots_fresh(&e->slots, (uint32_t)slot);
    struct gh_node *n = slots_at(&e->slots, (uint32_t)slot);
    n->slot = (uint32_t)slot;
    n->period = period;
    n->arg = arg;
    bool earliest = pt__heap4_push(&e->heap, when, n) == 0;
    pt_engine_handle h = slots_handle(&e->slots, (uint32_t)slot);
    pt__unlock(&e->lock);
    if (earliest) {
        atomic_fetch_add_explicit(&e->wakeword, 1, memory_order_release);
        pt__futex_wake(&e->wakeword, 1);
    }
    return h;
}

static bool gh_cancel(void *vth, pt_engine_handle h)
{
    struct gh_engine *e = vth;
    pt__lock(&e->lock);
    struct gh_node *n = slots_check(&e->slots, h);
    if (n) {
        pt__heap4_remove(&e->heap, n->idx);
        slots_put(&e->slots, n->slot);
    }
    pt__unlock(&e->lock);
    return n != NULL;
}

static pt_engine_handle gh_reset(void *vth, pt_engine_handle h, pt_nanos when, void *arg)
{
    (void)arg;
    struct gh_engine *e = vth;
    pt__lock(&e->lock);
    struct gh_node *n = slots_check(&e->slots, h);
    bool earliest = false;
    if (n) {
        e->heap.v[n->idx].when = when;
        pt__heap4_fix(&e->heap, n->idx);
        earliest = n->idx == 0;
    }
    pt__unlock(&e->lock);
    if (earliest) {
        atomic_fetch_add_explicit(&e->wakeword, 1, memory_order_release);
        pt__futex_wake(&e->wakeword, 1);
    }
    return n ? h : 0;
}

TOBJ_HOOKS(gh, gh_schedule, gh_cancel)

static size_t gh_held(void *vth)
{
    struct gh_engine *e = vth;
    pt__lock(&e->lock);
    size_t n = e->heap.len;
    pt__unlock(&e->lock);
    return n;
}

static void gh_poll(void *th) { (void)th; }
static void gh_idle(void *th, pt_nanos until)
{
    (void)th;
    bench_sleep_until(until);
}

static void gh_read_stats(void *eng, struct pt_engine_stats *out)
{
    out->wakeups = atomic_load(&((struct gh_engine *)eng)->wakeups);
}

const struct pt_engine engine_globalheap = {
    ENGINE_HEAD,
    .name = "globalheap",
    .what = "one 4-ary heap + one lock for all threads, eager cancel, one firing thread",
    .create = gh_create,
    .set_slack = gh_set_slack,
    .destroy = gh_destroy,
    .thread_start = gh_thread_start,
    .thread_stop = gh_thread_stop,
    .schedule = gh_schedule,
    .cancel = gh_cancel,
    .reset = gh_reset,
    .poll = gh_poll,
    .idle = gh_idle,
    .read_stats = gh_read_stats,
    .reserve_handles = gh_reserve_handles,
    .timer_bytes = sizeof(struct gh_node) + sizeof(pt__heap4_entry),
    TOBJ_FIELDS(gh),
    .held = gh_held,
};
