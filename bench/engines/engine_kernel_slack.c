/* kernel-slack: Linux's own timer coalescing, the reference the slack
 * workload measures the designs against. Every timer is a thread of its
 * own that sleeps in the kernel until its deadline, with its timer slack
 * (PR_SET_TIMERSLACK) set to the run's: the kernel may end each sleep
 * anywhere in [when, when + slack], and its hrtimer code expires every
 * sleeper whose window has opened on one interrupt. What it cannot share
 * is the wake-up itself: each timer is a thread, so each firing is a
 * thread woken and switched to, however many share an interrupt.
 *
 * The sleep is a futex wait with an absolute CLOCK_MONOTONIC deadline,
 * not clock_nanosleep: the kernel arms both as an hrtimer sleeper over
 * the same range (futex_setup_timer and do_nanosleep both pass the
 * thread's timer_slack_ns), and a futex lets a cancel end the sleep at
 * once. A reference, not a design: it runs in the slack workload only
 * (ptbench.c).
 *
 * On two cores ten thousand such threads fall behind (a thread woken per
 * firing is the cost this reference shows), and a worker that competed
 * with them as an equal took minutes to make or stop them. So the timer
 * threads are SCHED_IDLE (in the measured phase nothing else runs), use
 * every core at any worker count, and wait at a gate until the first
 * poll or idle: none fires while the worker is still making them. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "base/futex.h"
#include "engine.h"

enum { KS_ARMED, KS_CANCELLED, KS_FIRING };

struct ks_timer {
    _Atomic uint32_t state; /* KS_*: a one-shot fires or is cancelled, not both */
    pt_nanos when, period;
    void *arg;
    struct ks_engine *e;
    pthread_t thread;
    struct ks_timer *next; /* its worker's, for thread_stop */
};

struct ks_engine {
    pt_engine_cb cb;
    pt_nanos slack;
    _Atomic uint32_t gate;   /* 0 until the first poll or idle opens it */
    atomic_ulong made, past; /* threads made, and those past the gate */
    atomic_ulong wakeups;
};

/* The timer threads' stacks, KS_CHUNK at a time in one map: a thread on
 * a stack of its own making is not unmapped as it exits. Ten thousand
 * exits that each take the address space's lock, while ten thousand
 * threads fault in and switch, took minutes on two cores. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define KS_STACK ((size_t)1 << 20) /* the sanitizers refuse a stack under 900 KiB */
#else
#define KS_STACK ((size_t)64 << 10)
#endif
#define KS_CHUNK 256
struct ks_chunk {
    struct ks_chunk *next;
    char *base;
    int used;
};

struct ks_thread {
    struct ks_engine *e;
    struct ks_timer *timers;
    struct ks_chunk *chunks;
};

static void *ks_create(int n, pt_engine_cb cb)
{
    (void)n;
    struct ks_engine *e = calloc(1, sizeof *e);
    if (e)
        e->cb = cb;
    return e;
}

static void ks_destroy(void *e) { free(e); }

static int ks_set_slack(void *e, pt_nanos slack)
{
    if (slack < 0)
        return -EINVAL;
    ((struct ks_engine *)e)->slack = slack;
    return 0;
}

static void *ks_thread_start(void *eng, int tid)
{
    (void)tid;
    struct ks_thread *th = calloc(1, sizeof *th);
    if (th)
        th->e = eng;
    return th;
}

static void *ks_main(void *arg)
{
    struct ks_timer *t = arg;
    struct ks_engine *e = t->e;
    /* 0 would mean the default (50 us): no slack is 1 ns */
    prctl(PR_SET_TIMERSLACK, (unsigned long)(e->slack > 0 ? e->slack : 1), 0, 0, 0);
    while (!atomic_load_explicit(&e->gate, memory_order_acquire))
        pt__futex_wait(&e->gate, 0, 0);
    atomic_fetch_add_explicit(&e->past, 1, memory_order_relaxed);
    for (;;) {
        while (atomic_load_explicit(&t->state, memory_order_acquire) == KS_ARMED &&
               pt_nanotime() < t->when) {
            pt__futex_wait(&t->state, KS_ARMED, t->when);
            atomic_fetch_add_explicit(&e->wakeups, 1, memory_order_relaxed);
        }
        if (t->period <= 0) {
            uint32_t armed = KS_ARMED;
            if (atomic_compare_exchange_strong(&t->state, &armed, KS_FIRING))
                e->cb(t->arg);
            return NULL;
        }
        if (atomic_load_explicit(&t->state, memory_order_acquire) != KS_ARMED)
            return NULL;
        e->cb(t->arg);
        pt_nanos now = pt_nanotime(); /* missed ticks are skipped, as Go's */
        t->when += t->period * (1 + (now > t->when ? (now - t->when) / t->period : 0));
    }
}

static void *ks_stack(struct ks_thread *th)
{
    struct ks_chunk *c = th->chunks;
    if (!c || c->used == KS_CHUNK) {
        c = calloc(1, sizeof *c);
        void *base = c ? mmap(NULL, KS_STACK * KS_CHUNK, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                       : MAP_FAILED;
        if (base == MAP_FAILED) {
            free(c);
            return NULL;
        }
        c->base = base;
        c->next = th->chunks;
        th->chunks = c;
    }
    return c->base + KS_STACK * (size_t)c->used++;
}

static pt_engine_handle ks_schedule(void *vth, pt_nanos when, pt_nanos period, void *arg)
{
    struct ks_thread *th = vth;
    struct ks_timer *t = calloc(1, sizeof *t);
    void *stack = t ? ks_stack(th) : NULL;
    if (!stack) {
        free(t);
        return 0;
    }
    *t = (struct ks_timer){.when = when, .period = period, .arg = arg, .e = th->e};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, KS_STACK);
    struct sched_param none = {0};
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, SCHED_IDLE);
    pthread_attr_setschedparam(&attr, &none);
    int rc = pthread_create(&t->thread, &attr, ks_main, t);
    pthread_attr_destroy(&attr);
    if (rc != 0) { /* its stack stays unused in the chunk until thread_stop */
        free(t);
        return 0;
    }
    atomic_fetch_add_explicit(&th->e->made, 1, memory_order_relaxed);
    t->next = th->timers;
    th->timers = t;
    return (pt_engine_handle)(uintptr_t)t;
}

/* The handle is the timer: kept until thread_stop, so never stale. */
static bool ks_cancel(void *vth, pt_engine_handle h)
{
    (void)vth;
    struct ks_timer *t = (struct ks_timer *)(uintptr_t)h;
    uint32_t armed = KS_ARMED;
    bool stopped = atomic_compare_exchange_strong(&t->state, &armed, KS_CANCELLED);
    if (stopped)
        pt__futex_wake(&t->state, 1);
    return stopped;
}

static pt_engine_handle ks_reset(void *vth, pt_engine_handle h, pt_nanos when, void *arg)
{
    struct ks_timer *t = (struct ks_timer *)(uintptr_t)h;
    pt_nanos period = t->period;
    return ks_cancel(vth, h) ? ks_schedule(vth, when, period, arg) : 0;
}

/* Opens the gate, and waits (up to 30 s) until every thread made is past
 * it: their herd settles before a measured phase begins. */
static void ks_open(struct ks_engine *e)
{
    if (atomic_load_explicit(&e->gate, memory_order_relaxed))
        return;
    atomic_store_explicit(&e->gate, 1, memory_order_release);
    pt__futex_wake(&e->gate, INT32_MAX);
    pt_nanos give_up = pt_nanotime() + 30000000000;
    while (atomic_load(&e->past) < atomic_load(&e->made) && pt_nanotime() < give_up)
        bench_sleep_until(pt_nanotime() + 1000000);
}

static void ks_poll(void *vth) { ks_open(((struct ks_thread *)vth)->e); }

static void ks_idle(void *vth, pt_nanos until)
{
    ks_open(((struct ks_thread *)vth)->e);
    bench_sleep_until(until);
}

static void ks_thread_stop(void *vth)
{
    struct ks_thread *th = vth;
    atomic_store_explicit(&th->e->gate, 1, memory_order_release); /* none left waiting */
    pt__futex_wake(&th->e->gate, INT32_MAX);
    for (struct ks_timer *t = th->timers; t; t = t->next)
        ks_cancel(th, (pt_engine_handle)(uintptr_t)t);
    while (th->timers) {
        struct ks_timer *t = th->timers;
        th->timers = t->next;
        pthread_join(t->thread, NULL);
        free(t);
    }
    while (th->chunks) {
        struct ks_chunk *c = th->chunks;
        th->chunks = c->next;
        munmap(c->base, KS_STACK * KS_CHUNK);
        free(c);
    }
    free(th);
}

static void ks_read_stats(void *eng, struct pt_engine_stats *out)
{
    out->wakeups = atomic_load(&((struct ks_engine *)eng)->wakeups);
}

const struct pt_engine engine_kernel_slack = {
    ENGINE_HEAD,
    .name = "kernel-slack",
    .what = "a thread per timer sleeping in the kernel with PR_SET_TIMERSLACK: Linux's coalescing",
    .flags = PT_ENGINE_REFERENCE,
    .create = ks_create,
    .destroy = ks_destroy,
    .set_slack = ks_set_slack,
    .thread_start = ks_thread_start,
    .thread_stop = ks_thread_stop,
    .schedule = ks_schedule,
    .cancel = ks_cancel,
    .reset = ks_reset,
    .poll = ks_poll,
    .idle = ks_idle,
    .read_stats = ks_read_stats,
};
