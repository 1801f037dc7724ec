/* kernel: no timer structure at all, the floor every design sits on. A
 * worker's one pending timer is a deadline in a variable, and the worker
 * sleeps on a futex with that absolute CLOCK_MONOTONIC deadline (what
 * pheap's idle does, minus the heap). Only the latency workloads use it:
 * it holds one timer per thread. */
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "base/futex.h"

struct k_engine {
    pt_engine_cb cb;
    atomic_ulong wakeups;
};

struct k_thread {
    struct k_engine *e;
    _Atomic uint32_t word; /* never changed: the wait only ends on time */
    pt_nanos deadline;     /* 0: none */
    void *arg;
    uint32_t gen;
};

static void *k_create(int n, pt_engine_cb cb)
{
    (void)n;
    struct k_engine *e = calloc(1, sizeof *e);
    if (e)
        e->cb = cb;
    return e;
}
static void k_destroy(void *e) { free(e); }

static void *k_thread_start(void *eng, int tid)
{
    (void)tid;
    struct k_thread *th = calloc(1, sizeof *th);
    if (th)
        th->e = eng;
    return th;
}
static void k_thread_stop(void *th) { free(th); }

static pt_engine_handle k_schedule(void *vth, pt_nanos when, pt_nanos period, void *arg)
{
    struct k_thread *th = vth;
    if (period > 0 || th->deadline)
        return 0; /* one one-shot at a time */
    th->deadline = when;
    th->arg = arg;
    return (pt_engine_handle)++th->gen;
}

static bool k_cancel(void *vth, pt_engine_handle h)
{
    struct k_thread *th = vth;
    bool live = th->deadline && h == th->gen;
    if (live)
        th->deadline = 0;
    return live;
}

static pt_engine_handle k_reset(void *vth, pt_engine_handle h, pt_nanos when, void *arg)
{
    struct k_thread *th = vth;
    if (!k_cancel(th, h))
        return 0;
    return k_schedule(th, when, 0, arg);
}

static void k_fire_due(struct k_thread *th)
{
    if (th->deadline && pt_nanotime() >= th->deadline) {
        th->deadline = 0;
        th->e->cb(th->arg);
    }
}

static void k_poll(void *th) { k_fire_due(th); }

static void k_idle(void *vth, pt_nanos until)
{
    struct k_thread *th = vth;
    for (;;) {
        k_fire_due(th);
        pt_nanos now = pt_nanotime();
        if (now >= until)
            return;
        pt_nanos d = th->deadline && th->deadline < until ? th->deadline : until;
        pt__futex_wait(&th->word, 0, d);
        atomic_fetch_add_explicit(&th->e->wakeups, 1, memory_order_relaxed);
    }
}

static void k_read_stats(void *eng, struct pt_engine_stats *out)
{
    out->wakeups = atomic_load(&((struct k_engine *)eng)->wakeups);
}

const struct pt_engine engine_kernel = {
    ENGINE_HEAD,
    .name = "kernel",
    .what = "no timer structure: a futex wait with an absolute deadline (latency floor)",
    .flags = PT_ENGINE_LATENCY_ONLY | PT_ENGINE_REFERENCE,
    .create = k_create,
    .destroy = k_destroy,
    .thread_start = k_thread_start,
    .thread_stop = k_thread_stop,
    .schedule = k_schedule,
    .cancel = k_cancel,
    .reset = k_reset,
    .poll = k_poll,
    .idle = k_idle,
    .read_stats = k_read_stats,
    .timer_bytes = 0,
};
