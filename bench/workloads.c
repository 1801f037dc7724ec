/* The workloads (shapes from shared/ANCHORS.md) and the runner that times
 * one repetition of one (design, workload, threads). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rng.h"
#include "workload.h"

#define MS ((pt_nanos)1000000)
#define SEC ((pt_nanos)1000000000)

/* ---- what fired: shared by every callback of the current run ---------- */

static struct hist *g_late;
static atomic_ulong g_fired;
static pt_nanos g_end; /* ticks due after the measured phase are not counted */

/* One-shots carry their deadline as their argument. */
static void cb_deadline(void *arg)
{
    pt_nanos deadline = (pt_nanos)(uintptr_t)arg;
    hist_record(g_late, pt_nanotime() - deadline);
    atomic_fetch_add_explicit(&g_fired, 1, memory_order_relaxed);
}

struct ticker {
    pt_nanos first, period;
};

/* A tick is late by the time since the latest multiple of its period. */
static void cb_ticker(void *arg)
{
    const struct ticker *k = arg;
    pt_nanos now = pt_nanotime();
    pt_nanos due = k->first + (now - k->first) / k->period * k->period;
    if (due > g_end)
        return;
    hist_record(g_late, now - due);
    atomic_fetch_add_explicit(&g_fired, 1, memory_order_relaxed);
}

static uint64_t rnd(struct workload_thread *w) { return xorshift64(&w->rng); }

/* Uniform in [lo, hi). */
static pt_nanos uniform(struct workload_thread *w, pt_nanos lo, pt_nanos hi)
{
    return lo + (pt_nanos)(rnd(w) % (uint64_t)(hi - lo));
}

/* Fast loops look at the clock every 256 ops; slow ones (an op that sleeps)
 * every op, or a late wake-up would stretch the run by 256 sleeps. */
static bool done_every(struct workload_thread *w, uint64_t mask)
{
    if (w->cfg->ops > 0)
        return w->ops >= (uint64_t)w->cfg->ops;
    return (w->ops & mask) == 0 && pt_nanotime() >= w->end;
}

static bool done(struct workload_thread *w) { return done_every(w, 255); }

static bench_handle arm(struct workload_thread *w, pt_nanos when)
{
    bench_handle h = w->eng->schedule(w->th, when, 0, (void *)(uintptr_t)when);
    if (!h) {
        fprintf(stderr, "ptbench: %s: schedule failed\n", w->eng->name);
        abort();
    }
    w->scheduled++;
    return h;
}

static void disarm(struct workload_thread *w, bench_handle h)
{
    if (w->eng->cancel(w->th, h))
        w->cancelled++;
    else
        w->stale_cancels++;
}

/* A scheduler round every 16 operations: per-P designs run their due timers
 * here, as Go's schedule() calls checkTimers. */
static void maybe_poll(struct workload_thread *w)
{
    if ((w->ops & 15) == 0)
        w->eng->poll(w->th);
}

/* ---- the workloads ---------------------------------------------------- */

/* rpc: arm at now + 100 ms (+ up to 1 ms), then cancel it. */
static void run_rpc(struct workload_thread *w)
{
    while (!done(w)) {
        pt_nanos now = pt_nanotime();
        disarm(w, arm(w, now + 100 * MS + uniform(w, 0, MS)));
        w->ops++;
        maybe_poll(w);
    }
}

/* A window of outstanding timers: each op arms one and cancels the one
 * armed `window` ops ago. `step` < 0 makes deadlines descend. */
static void run_window(struct workload_thread *w, int window, bool descending)
{
    bench_handle *ring = calloc((size_t)window, sizeof *ring);
    pt_nanos base = pt_nanotime() + 20 * SEC;
    for (int i = 0; !done(w); i = (i + 1) % window) {
        pt_nanos now = pt_nanotime();
        pt_nanos when = descending ? base - (pt_nanos)w->ops * 10 : now + 100 * MS + uniform(w, 0, MS);
        if (ring[i])
            disarm(w, ring[i]);
        ring[i] = arm(w, when);
        w->ops++;
        maybe_poll(w);
    }
    for (int i = 0; i < window; i++)
        if (ring[i])
            disarm(w, ring[i]);
    free(ring);
}

static void run_rpc_pending(struct workload_thread *w) { run_window(w, w->cfg->window, false); }

/* descending: every arm is earlier than all pending: bRPC's worst case. */
static void run_descending(struct workload_thread *w) { run_window(w, 1000, true); }

/* random: arm at now + U(1 ms, 1 s); half are cancelled at a random later
 * point, half are left to fire. Every handle is disposed of at the end. */
static void run_random(struct workload_thread *w)
{
    enum { RING = 4096 };
    bench_handle ring[RING] = {0};
    size_t nkeep = 0, capkeep = 1 << 16;
    bench_handle *keep = malloc(capkeep * sizeof *keep);
    while (!done(w)) {
        pt_nanos now = pt_nanotime();
        bench_handle h = arm(w, now + uniform(w, MS, SEC));
        uint64_t r = rnd(w);
        if (r & 1) {
            size_t i = (r >> 1) % RING; /* cancel whoever sat there */
            if (ring[i])
                disarm(w, ring[i]);
            ring[i] = h;
        } else {
            if (nkeep == capkeep)
                keep = realloc(keep, (capkeep *= 2) * sizeof *keep);
            keep[nkeep++] = h;
        }
        w->ops++;
        maybe_poll(w);
    }
    for (int i = 0; i < RING; i++)
        if (ring[i])
            disarm(w, ring[i]);
    for (size_t i = 0; i < nkeep; i++)
        disarm(w, keep[i]);
    free(keep);
}

/* reset: K = 1000 owned timers, each op re-arms one to now + U(1 s, 2 s);
 * reset-alt alternates the earlier and the later half of that range. */
static void run_reset_common(struct workload_thread *w, bool alternate)
{
    enum { K = 1000 };
    bench_handle h[K];
    pt_nanos now = pt_nanotime();
    for (int k = 0; k < K; k++)
        h[k] = arm(w, now + uniform(w, SEC, 2 * SEC));
    while (!done(w)) {
        int k = (int)(rnd(w) % K);
        now = pt_nanotime();
        pt_nanos when = alternate ? now + SEC + (pt_nanos)(w->ops & 1) * (SEC / 2) + uniform(w, 0, SEC / 2)
                                  : now + uniform(w, SEC, 2 * SEC);
        bench_handle nh = w->eng->reset(w->th, h[k], when, (void *)(uintptr_t)when);
        if (nh != h[k]) { /* a bucket design rescheduled it */
            w->cancelled++;
            w->scheduled++;
        }
        h[k] = nh ? nh : arm(w, when);
        w->ops++;
        maybe_poll(w);
    }
    for (int k = 0; k < K; k++)
        disarm(w, h[k]);
}

static void run_reset(struct workload_thread *w) { run_reset_common(w, false); }
static void run_reset_alt(struct workload_thread *w) { run_reset_common(w, true); }

/* ticker: this thread's share of the tickers, periods spread over 1-10 ms;
 * then the thread idles (running its timers, for per-P designs). */
static void run_ticker(struct workload_thread *w)
{
    int n = w->cfg->tickers / w->nthreads + (w->tid < w->cfg->tickers % w->nthreads);
    struct ticker *k = calloc((size_t)n, sizeof *k);
    bench_handle *h = calloc((size_t)n, sizeof *h);
    pt_nanos now = pt_nanotime();
    for (int i = 0; i < n; i++) {
        k[i].period = MS + (pt_nanos)(rnd(w) % (uint64_t)(9 * MS));
        k[i].first = now + k[i].period;
        h[i] = w->eng->schedule(w->th, k[i].first, k[i].period, &k[i]);
        if (k[i].first <= w->end)
            w->expected_ticks += (uint64_t)((w->end - k[i].first) / k[i].period) + 1;
    }
    w->eng->idle(w->th, w->end);
    for (int i = 0; i < n; i++)
        if (h[i])
            w->eng->cancel(w->th, h[i]);
    free(h);
    /* The records must outlive any tick still in flight (a bucket design's
     * tickers run until the engine is destroyed): the runner frees them. */
    w->free_after = k;
}

/* latency: one timer at a time, 300 us - 1 ms ahead; the thread idles until
 * its deadline, and the lateness is recorded when it fires. */
static void run_latency(struct workload_thread *w)
{
    pt_nanos last = 0;
    while (!done_every(w, 0)) {
        pt_nanos now = pt_nanotime();
        last = now + uniform(w, 300000, MS);
        arm(w, last);
        w->eng->idle(w->th, last);
        w->ops++;
    }
    /* Let the last one fire before the engine goes away. */
    w->eng->idle(w->th, last + 20 * MS);
}

/* Resident anonymous memory: statm's resident less its shared field
 * (file-backed and shmem pages). Code pages of libc faulted in while
 * arming (about 100 KiB, a tenth of a byte per timer) are not what the
 * design stores. */
static long rss_bytes(void)
{
    long pages = 0, resident = 0, shared = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld %ld", &pages, &resident, &shared) != 3)
            resident = shared = 0;
        fclose(f);
    }
    return (resident - shared) * sysconf(_SC_PAGESIZE);
}

/* memory: 1,000,000 pending timers: resident bytes per timer, and the time
 * to create and to cancel them. */
static void run_memory(struct workload_thread *w)
{
    long N = w->cfg->memory_timers;
    /* The handle array is the harness's, not the design's: touched before
     * the first reading so that its pages are not counted. */
    bench_handle *h = calloc((size_t)N, sizeof *h);
    memset(h, 1, (size_t)N * sizeof *h);
    if (w->eng->reserve_handles)
        w->eng->reserve_handles(w->th, N);
    long before = rss_bytes();
    pt_nanos t0 = pt_nanotime();
    for (long i = 0; i < N; i++)
        h[i] = arm(w, t0 + 3600 * SEC + i);
    pt_nanos t1 = pt_nanotime();
    long after = rss_bytes();
    for (long i = 0; i < N; i++)
        disarm(w, h[i]);
    pt_nanos t2 = pt_nanotime();
    w->res->bytes_per_timer = (double)(after - before) / N;
    w->res->create_ns = (double)(t1 - t0) / N;
    w->res->cancel_ns = (double)(t2 - t1) / N;
    w->ops = (uint64_t)N;
    free(h);
}

/* netpoll is not run through an engine: ptbench calls netpoll_bench (at
 * the end of this file) for each backend and wait instead. */
static void run_netpoll_unused(struct workload_thread *w) { (void)w; }

const struct workload workloads[] = {
    {"rpc", "arm at now+100ms(+<=1ms), then cancel it", cb_deadline, false, run_rpc},
    {"rpc-pending", "arm one, cancel the one armed W ops ago", cb_deadline, false,
     run_rpc_pending},
    {"descending", "each arm earlier than all pending; cancel 1000 ops later", cb_deadline,
     false, run_descending},
    {"random", "arm at now+U(1ms,1s); cancel half at random, half fire", cb_deadline, false,
     run_random},
    {"reset", "re-arm one of 1000 timers to now+U(1s,2s)", cb_deadline, false, run_reset},
    {"reset-alt", "as reset, alternating the earlier and later half", cb_deadline, false,
     run_reset_alt},
    {"ticker", "T tickers, periods over 1-10ms; ticks delivered and lateness", cb_ticker,
     false, run_ticker},
    {"latency", "one timer 300us-1ms ahead at a time; fire time - deadline", cb_deadline,
     false, run_latency},
    {"latency-busy", "latency with every core kept busy", cb_deadline, false, run_latency},
    {"memory", "1,000,000 pending timers: bytes each, create and cancel time", cb_deadline,
     true, run_memory},
    {"netpoll", "timed waits of 100us/1ms/10ms per netpoll backend, beside the kernel floor",
     cb_deadline, true, run_netpoll_unused},
};
const int nworkloads = sizeof workloads / sizeof workloads[0];

const struct workload *workload_find(const char *name)
{
    for (int i = 0; i < nworkloads; i++)
        if (strcmp(workloads[i].name, name) == 0)
            return &workloads[i];
    return NULL;
}

/* ---- the runner ------------------------------------------------------- */

struct runner {
    const struct workload *wl;
    pthread_barrier_t ready, finished, cleaned;
    atomic_bool spin_stop;
};

/* Each worker's on cache lines of its own (two, for the adjacent-line
 * prefetcher): a calloc'd array of them put one worker's rng and counters,
 * written on every op, on the line another worker reads its engine
 * pointers from on every op, or not, depending on where the array
 * landed. */
#define WORKER_ALIGN 128
struct worker_arg {
    _Alignas(WORKER_ALIGN) struct runner *r;
    struct workload_thread w;
};

static void *worker_main(void *arg)
{
    struct worker_arg *a = arg;
    struct workload_thread *w = &a->w;
    w->th = w->eng->thread_start(w->e, w->tid);
    if (!w->th)
        abort();
    /* Preload: realistic heap sizes, as Go's own timer benchmarks do. */
    int np = a->r->wl->run == run_memory || w->eng->latency_only ? 0 : w->cfg->preload;
    bench_handle *pre = calloc((size_t)np + 1, sizeof *pre);
    pt_nanos now = pt_nanotime();
    for (int i = 0; i < np; i++)
        pre[i] = arm(w, now + 3600 * SEC + uniform(w, 0, SEC));
    pthread_barrier_wait(&a->r->ready);
    pthread_barrier_wait(&a->r->ready); /* the runner has set start and end */
    a->r->wl->run(w);
    pthread_barrier_wait(&a->r->finished);
    for (int i = 0; i < np; i++)
        disarm(w, pre[i]);
    free(pre);
    pthread_barrier_wait(&a->r->cleaned);
    w->eng->thread_stop(w->th);
    return NULL;
}

static void *spinner(void *arg)
{
    struct runner *r = arg;
    while (!atomic_load_explicit(&r->spin_stop, memory_order_relaxed))
        ;
    return NULL;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

int workload_run(const struct workload *wl, const struct engine *eng, int nthreads,
                 const struct run_config *cfg, struct run_result *out)
{
    memset(out, 0, sizeof *out);
    g_late = &out->lateness;
    atomic_store(&g_fired, 0);
    /* Every field of each worker's argument is set below. */
    struct worker_arg *args = aligned_alloc(WORKER_ALIGN, (size_t)nthreads * sizeof *args);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    void *e = args && tids ? eng->create(nthreads, wl->cb) : NULL;
    if (!e) {
        free(args);
        free(tids);
        return -1;
    }
    struct runner r = {.wl = wl};
    pthread_barrier_init(&r.ready, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&r.finished, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&r.cleaned, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++) {
        args[i].r = &r;
        args[i].w = (struct workload_thread){.eng = eng, .e = e, .tid = i, .nthreads = nthreads,
                                             .cfg = cfg, .res = out,
                                             .rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)};
        pthread_create(&tids[i], NULL, worker_main, &args[i]);
    }
    int nspin = cfg->busy ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 0;
    pthread_t spin[64];
    if (nspin > 64)
        nspin = 64;
    pthread_barrier_wait(&r.ready); /* preloaded */
    for (int i = 0; i < nspin; i++)
        pthread_create(&spin[i], NULL, spinner, &r);
    struct engine_stats s0, s1;
    eng->read_stats(e, &s0);
    double cpu0 = cpu_seconds();
    pt_nanos start = pt_nanotime();
    pt_nanos end = start + cfg->duration;
    g_end = end;
    for (int i = 0; i < nthreads; i++) {
        args[i].w.start = start;
        args[i].w.end = end;
    }
    pthread_barrier_wait(&r.ready);
    pthread_barrier_wait(&r.finished);
    out->elapsed = pt_nanotime() - start;
    out->cpu_s = cpu_seconds() - cpu0;
    eng->read_stats(e, &s1);
    out->wakeups = s1.wakeups - s0.wakeups;
    atomic_store(&r.spin_stop, true);
    for (int i = 0; i < nspin; i++)
        pthread_join(spin[i], NULL);
    pthread_barrier_wait(&r.cleaned);
    for (int i = 0; i < nthreads; i++)
        pthread_join(tids[i], NULL);
    if (wl->run == run_latency) {
        /* A design that fires on a thread of its own (timerthread,
         * globalheap) may not have run the last timers yet if that thread
         * was kept off the CPU through the workers' last idle; destroy
         * would drop them unfired. Wait for them (after the measurement). */
        uint64_t owed = 0;
        for (int i = 0; i < nthreads; i++)
            owed += args[i].w.scheduled - args[i].w.cancelled;
        pt_nanos give_up = pt_nanotime() + 30 * SEC;
        while (atomic_load(&g_fired) < owed && pt_nanotime() < give_up)
            bench_sleep_until(pt_nanotime() + MS);
    }
    eng->destroy(e); /* every callback has returned after this */
    for (int i = 0; i < nthreads; i++) {
        struct workload_thread *w = &args[i].w;
        out->ops += w->ops;
        out->scheduled += w->scheduled;
        out->cancelled += w->cancelled;
        out->stale_cancels += w->stale_cancels;
        out->expected_ticks += w->expected_ticks;
        free(w->free_after);
    }
    out->fired = atomic_load(&g_fired);
    if (wl->run == run_ticker)
        out->ops = out->fired;
    pthread_barrier_destroy(&r.ready);
    pthread_barrier_destroy(&r.finished);
    pthread_barrier_destroy(&r.cleaned);
    free(args);
    free(tids);
    return 0;
}

/* ---- netpoll: lateness of the netpoller's timed wait ---------------------
 * Not a timer design: each row is one way of sleeping for a fixed time
 * (100 us, 1 ms, 10 ms) on one thread -- "kernel", a futex wait with an
 * absolute deadline (the floor, as the kernel design), and
 * pt_netpoll_wait(timeout) on each backend: np-epoll (epoll_pwait2),
 * np-timerfd (epoll with its timerfd fallback), np-uring (io_uring,
 * IORING_OP_TIMEOUT). */
#include "ptimer/base/futex.h"
#include "ptimer/netpoll.h"

const char *const netpoll_designs[] = {"kernel", "np-epoll", "np-timerfd",
                                       "np-uring", NULL};
int netpoll_bench(const char *design, pt_nanos wait, pt_nanos duration, struct run_result *out);

/* One repetition: timed waits for `duration` (at least 3). 0; 1 if the
 * backend is not available here (the row is skipped); -1 on error. */
int netpoll_bench(const char *design, pt_nanos wait, pt_nanos duration, struct run_result *out)
{
    pt_netpoll *np = NULL;
    if (strcmp(design, "kernel") != 0) {
        pt_netpoll_options o = {PT_NETPOLL_EPOLL, 0, NULL};
        if (strcmp(design, "np-timerfd") == 0)
            o.flags = PT_NETPOLL_TIMERFD;
        else if (strcmp(design, "np-uring") == 0)
            o.backend = PT_NETPOLL_URING;
        if (pt_netpoll_create(&np, &o) != 0)
            return -1;
        if (o.backend == PT_NETPOLL_URING && pt_netpoll_backend(np) != PT_NETPOLL_URING) {
            pt_netpoll_destroy(np);
            return 1;
        }
    }
    _Atomic uint32_t word = 0; /* never changes: the futex wait ends on time */
    pt_poll_event ev[1];
    double cpu0 = cpu_seconds();
    pt_nanos start = pt_nanotime(), now = start;
    while (now - start < duration || out->ops < 3) {
        pt_nanos deadline = now + wait;
        if (np) {
            if (pt_netpoll_wait(np, wait, ev, 1) < 0) {
                pt_netpoll_destroy(np);
                return -1;
            }
            out->wakeups++;
        }
        while ((now = pt_nanotime()) < deadline) { /* never early; futex may wake spuriously */
            if (np) {
                fprintf(stderr, "ptbench: %s woke %lld ns early\n", design,
                        (long long)(deadline - now));
                pt_netpoll_destroy(np);
                return -1;
            }
            pt__futex_wait(&word, 0, deadline);
            out->wakeups++;
        }
        hist_record(&out->lateness, now - deadline);
        out->ops++;
    }
    out->elapsed = now - start;
    out->cpu_s = cpu_seconds() - cpu0;
    out->scheduled = out->fired = out->ops;
    if (np)
        pt_netpoll_destroy(np);
    return 0;
}
