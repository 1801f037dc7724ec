/* ptbench workloads: each written once against the engine interface. The
 * shapes are those of shared/ANCHORS.md. */
#ifndef PTBENCH_WORKLOAD_H
#define PTBENCH_WORKLOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "hist.h"

struct run_config {
    pt_nanos duration; /* per repetition, for throughput workloads */
    long ops;          /* if > 0: ops per thread instead of a duration */
    int preload;       /* far-future timers per thread before the run */
    int tickers;       /* ticker: timers in all */
    int window;        /* rpc-pending / descending window */
    bool busy;         /* keep every core busy meanwhile (latency-busy) */
    long memory_timers; /* memory: pending timers */
};

/* What one run measured (all threads). */
struct run_result {
    uint64_t ops;       /* arms (an arm + its cancel is one op) */
    uint64_t scheduled, cancelled, fired, stale_cancels;
    uint64_t expected_ticks; /* ticker: ticks due in the run */
    pt_nanos elapsed;   /* wall time of the measured phase */
    double cpu_s;       /* process CPU time of the measured phase */
    uint64_t wakeups;
    double bytes_per_timer; /* memory: resident bytes per pending timer */
    double create_ns, cancel_ns; /* memory: per timer */
    struct hist lateness;  /* fire time - deadline, ns */
};

struct workload_thread;

struct workload {
    const char *name;
    const char *what;
    bench_cb cb;        /* what its timers call when they fire */
    bool single_thread; /* runs with one thread only */
    void (*run)(struct workload_thread *w);
};

/* Per worker thread. */
struct workload_thread {
    const struct engine *eng;
    void *e, *th;
    int tid, nthreads;
    const struct run_config *cfg;
    struct run_result *res; /* shared; counters are added under atomics */
    pt_nanos start, end;    /* the measured phase, set by the runner */
    uint64_t ops, scheduled, cancelled, stale_cancels, expected_ticks;
    uint64_t rng;
    void *free_after; /* freed by the runner once the engine is destroyed */
};

extern const struct workload workloads[];
extern const int nworkloads;
const struct workload *workload_find(const char *name);

/* Runs one repetition: create the engine, start the workers, run, join. */
int workload_run(const struct workload *wl, const struct engine *eng, int nthreads,
                 const struct run_config *cfg, struct run_result *out);

#endif
