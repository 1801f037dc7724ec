/* The runner: times one repetition of one (design, workload, threads) --
 * creates the engine, starts the workers, opens and closes the measured
 * phase, and collects the counts. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "workload.h"

#define MS ((pt_nanos)1000000)
#define SEC ((pt_nanos)1000000000)

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
    /* memory counts what its own timers add; an engine that holds one
     * timer per thread has no room for more. */
    int np = a->r->wl->kind == WL_MEMORY || engine_has(w->eng, PT_ENGINE_LATENCY_ONLY) ? 0 : w->cfg->preload;
    pt_engine_handle *pre = workload_preload(w, np);
    if (a->r->wl->setup)
        a->r->wl->setup(w);
    pthread_barrier_wait(&a->r->ready);
    pthread_barrier_wait(&a->r->ready); /* the runner has set start and end */
    a->r->wl->run(w);
    pthread_barrier_wait(&a->r->finished);
    workload_unload(w, pre, np);
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

double bench_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* Voluntary context switches of every thread: each a thread that went to
 * sleep and was woken, whoever's it is (slack's wake-ups). */
static long bench_nvcsw(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_nvcsw;
}

double bench_sys_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int workload_run(const struct workload *wl, const struct pt_engine *eng, int nthreads,
                 const struct run_config *cfg, struct run_result *out)
{
    memset(out, 0, sizeof *out);
    workload_sink_open(&out->lateness);
    /* Every field of each worker's argument is set below. */
    struct worker_arg *args = aligned_alloc(WORKER_ALIGN, (size_t)nthreads * sizeof *args);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    long rss0 = bench_rss_bytes(); /* before the engine and its threads exist */
    void *e = args && tids ? eng->create(nthreads, wl->cb) : NULL;
    if (e && wl->kind == WL_SLACK && (!eng->set_slack || eng->set_slack(e, cfg->slack) != 0)) {
        eng->destroy(e);
        e = NULL;
    }
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
        args[i].w = (struct workload_thread){.eng = eng,
                                             .e = e,
                                             .tid = i,
                                             .nthreads = nthreads,
                                             .cfg = cfg,
                                             .res = out,
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
    struct pt_engine_stats s0 = {0}, s1 = {0};
    if (eng->read_stats)
        eng->read_stats(e, &s0);
    double cpu0 = bench_cpu_seconds(), sys0 = bench_sys_seconds();
    long nvcsw0 = bench_nvcsw();
    pt_nanos start = pt_nanotime();
    pt_nanos end = start + cfg->duration;
    workload_sink_end(end);
    workload_sink_window(start, cfg->slack);
    for (int i = 0; i < nthreads; i++) {
        args[i].w.start = start;
        args[i].w.end = end;
    }
    pthread_barrier_wait(&r.ready);
    pthread_barrier_wait(&r.finished);
    out->elapsed = pt_nanotime() - start;
    out->cpu_s = bench_cpu_seconds() - cpu0;
    out->sys_s = bench_sys_seconds() - sys0;
    /* Resident memory with every timer of the run still where the design
     * keeps it (cancelled ones a design has not reclaimed included),
     * before the workers dispose of their preload. */
    out->rss_bytes = bench_rss_bytes();
    out->rss_growth = out->rss_bytes - rss0;
    if (eng->read_stats)
        eng->read_stats(e, &s1);
    out->wakeups = s1.wakeups - s0.wakeups;
    /* slack compares designs with the kernel's threads and the peers, on
     * a count none of them keeps itself */
    if (wl->kind == WL_SLACK)
        out->wakeups = (uint64_t)(bench_nvcsw() - nvcsw0);
    atomic_store(&r.spin_stop, true);
    for (int i = 0; i < nspin; i++)
        pthread_join(spin[i], NULL);
    pthread_barrier_wait(&r.cleaned);
    for (int i = 0; i < nthreads; i++)
        pthread_join(tids[i], NULL);
    if (wl->kind == WL_LATENCY) {
        /* A design that fires on a thread of its own (timerthread,
         * globalheap) may not have run the last timers yet if that thread
         * was kept off the CPU through the workers' last idle; destroy
         * would drop them unfired. Wait for them (after the measurement). */
        uint64_t owed = 0;
        for (int i = 0; i < nthreads; i++)
            owed += args[i].w.scheduled - args[i].w.cancelled;
        pt_nanos give_up = pt_nanotime() + 30 * SEC;
        while (workload_sink_fired() < owed && pt_nanotime() < give_up)
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
    out->fired = workload_sink_fired();
    out->early_wakes = workload_sink_early();
    if (wl->kind == WL_TICKER || wl->kind == WL_SLACK) /* an op is a tick delivered */
        out->ops = out->fired;
    pthread_barrier_destroy(&r.ready);
    pthread_barrier_destroy(&r.finished);
    pthread_barrier_destroy(&r.cleaned);
    free(args);
    free(tids);
    return 0;
}
