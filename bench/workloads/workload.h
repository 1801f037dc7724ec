/* ptbench workloads: each written once against the engine interface. The
 * shapes are those of bench/WORKLOADS.md. */
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
    pt_nanos timeout;  /* rpc, rpc-pending: each op's timeout (plus up to 1 ms) */
    bool busy;         /* keep every core busy meanwhile (latency-busy) */
    long memory_timers; /* memory: pending timers */
    long memory_gs;     /* memory-g: parked Gs; spawn-burst: Gs in the burst */
    int stack_guard;    /* workloads in the scheduler: enum pt_stack_guard */
    int monitor_priority; /* the scheduler's monitor: SCHED_FIFO priority, 0 a normal thread */
    pt_nanos slack;       /* slack: every timer's window (the engine's set_slack) */
};

/* What one run measured (all threads). */
struct run_result {
    uint64_t ops;       /* arms (an arm + its cancel is one op) */
    uint64_t scheduled, cancelled, fired, stale_cancels;
    uint64_t expected_ticks; /* ticker: ticks due in the run */
    pt_nanos elapsed;   /* wall time of the measured phase */
    double cpu_s;       /* process CPU time of the measured phase */
    double sys_s;       /* the part of cpu_s spent in the kernel: system calls */
    uint64_t wakeups;
    /* Throughput: the process's resident anonymous bytes at the end of the
     * measured phase (before the engine disposes of anything), and their
     * change since just before the engine was made. */
    long rss_bytes, rss_growth;
    double bytes_per_timer; /* memory: resident bytes per pending timer */
    double create_ns, cancel_ns; /* memory: per timer */
    struct hist lateness;  /* fire time - deadline, ns */
    /* Workloads run in the scheduler (sched_bench.h): what must add up. */
    uint64_t gs_started, gs_finished; /* the workload's Gs: every one finishes */
    uint64_t waits, wakes;            /* blocking waits begun and ended: every one ends once */
    uint64_t early_wakes;             /* sleeps that returned before their deadline, or
                                         slack's timers fired before theirs: none */
    int spawn_error;                  /* a pt_go that failed (negative errno), 0 if none */
    /* The scheduler's own counters over the measured phase (pt_sched_stats). */
    uint64_t timers_owner, timers_stolen, timers_sysmon, steals, overflowed, handoffs;
};

struct workload_thread;
struct sched_ctx; /* sched_bench.h */

/* What a workload measures. It decides how the workload is run (threads,
 * duration, a process of its own) and by what its rows are judged. */
enum wl_kind {
    WL_THROUGHPUT, /* ops back to back: time per op per thread */
    WL_LATENCY,    /* one timer at a time, idling until it fires: lateness */
    WL_TICKER,     /* periodic timers: ticks delivered, and their lateness */
    WL_MEMORY,     /* pending timers: resident bytes each */
    WL_BURST,      /* Gs made in a burst, none from a pool: wall time per G */
    WL_NETPOLL,    /* the netpoller's timed waits, not an engine (netpoll_bench.c) */
    WL_HTTP,       /* server processes under wrk, not an engine (http_bench.c) */
    WL_IDLE,       /* a server's idle connections closed on time (http_idle.c) */
    WL_SLACK,      /* timers with a window: wake-ups per second, a row per slack */
};

/* kind says what a workload measures and is judged by, wherever it runs:
 * a workload with sched_run runs inside the scheduler (G/M/P, threads =
 * Ps) against the sched designs (sched_bench.h), not on an engine. */

/* The peer programs (peers.c) that implement a workload too. TOKIO_WARM:
 * tokio's loop that yields now and then, so that its driver parks and
 * an arm stops waking it (rpc, rpc-pending). */
enum { PEER_GO = 1u << 0, PEER_LIBUV = 1u << 1, PEER_TOKIO = 1u << 2, PEER_TOKIO_WARM = 1u << 3 };

struct workload {
    const char *name;
    const char *what;
    enum wl_kind kind;
    bool fires;     /* its timers fire during the run, so lateness is measured */
    bool busy;      /* every core is kept busy meanwhile */
    unsigned peers; /* PEER_* */
    pt_engine_cb cb;    /* what its timers call when they fire */
    /* If set: arms the worker's timers before the measured phase (not
     * timed), for a workload whose measured phase only lets them fire. */
    void (*setup)(struct workload_thread *w);
    void (*run)(struct workload_thread *w);
    /* Instead of run: the body of the scheduler's first G, given the
     * scheduler's options (sched_runner.c makes the scheduler). */
    void (*sched_run)(struct sched_ctx *c);
    /* A sched workload's kernel floor, a plain thread's futex wait of
     * this long in a loop, run as the `kernel` design; 0: none. */
    pt_nanos floor_wait;
    /* Its floor on plain threads, no scheduler: blocking calls where the
     * Gs park (rpc-sched: sched_rpc.c), run as the `floor` design. */
    void (*plain_run)(struct sched_ctx *c);
    /* What its lateness columns hold, for the plots, where they are not
     * fire (or wake) time - deadline: rpc-sched's are round trips. */
    const char *dist_what;
    /* A row per G count (--memory-gs, --burst-gs) and per stack guard
     * (--stack-guards): the workloads that measure stacks. */
    bool stack_rows;
    /* Its Gs read and write sockets: the ring design (sched-uring) runs it. */
    bool uses_fds;
    /* Its scheduler runs on the virtual clock (pt_sched_options
     * .virtual_time): lateness is in virtual ns, where late is a bug. */
    bool virtual_time;
    /* Its figure is the run's wall time per op, however many threads ran
     * them (a fixed amount of work, not ops back to back per thread). */
    bool per_run;
};

static inline bool wl_in_sched(const struct workload *wl)
{
    return wl->sched_run != NULL;
}

/* memory counts one thread's arming in a process of its own; netpoll
 * times one thread's waits. */
static inline bool wl_single_thread(const struct workload *wl)
{
    return wl->kind == WL_MEMORY || wl->kind == WL_NETPOLL;
}

/* Each repetition in a fresh process (isolated.c): memory a run before
 * freed would otherwise hide what this one costs. */
static inline bool wl_isolated(const struct workload *wl)
{
    return wl->kind == WL_MEMORY || wl->kind == WL_BURST;
}

/* Lateness with more workers than cores measures the kernel's scheduler,
 * not the timers: these run only up to one thread per core. */
static inline bool wl_cores_only(const struct workload *wl)
{
    return wl->kind == WL_LATENCY || wl->kind == WL_TICKER || wl->kind == WL_SLACK;
}

/* Per worker thread. */
struct workload_thread {
    const struct pt_engine *eng;
    void *e, *th;
    int tid, nthreads;
    const struct run_config *cfg;
    struct run_result *res; /* shared; counters are added under atomics */
    pt_nanos start, end;    /* the measured phase, set by the runner */
    uint64_t ops, scheduled, cancelled, stale_cancels, expected_ticks;
    uint64_t rng;
    void *free_after; /* freed by the runner once the engine is destroyed */
    void *own;        /* what setup armed, for run and the runner */
};

extern const struct workload workloads[];
extern const int nworkloads;
const struct workload *workload_find(const char *name);

/* The callbacks of one run record into `late` and count what fired; ticks
 * due after `end` are not counted. One run at a time per process. */
void workload_sink_open(struct hist *late);
void workload_sink_end(pt_nanos end);
/* slack's callbacks judge each firing against [deadline, deadline +
 * slack] and count those in the measured phase [start, end] only. */
void workload_sink_window(pt_nanos start, pt_nanos slack);
uint64_t workload_sink_fired(void);
uint64_t workload_sink_early(void); /* slack's firings before their window */

/* Realistic heap sizes, as Go's own timer benchmarks have: n timers an
 * hour away, armed before the measured phase and cancelled after it. */
pt_engine_handle *workload_preload(struct workload_thread *w, int n);
void workload_unload(struct workload_thread *w, pt_engine_handle *pre, int n);

/* Runs one repetition: create the engine, start the workers, run, join. */
int workload_run(const struct workload *wl, const struct pt_engine *eng, int nthreads,
                 const struct run_config *cfg, struct run_result *out);

/* Process CPU time, user and system, of every thread. */
double bench_cpu_seconds(void);
/* The process's system (kernel) CPU time alone. */
double bench_sys_seconds(void);

/* Resident anonymous memory of the process, bytes (workloads.c). */
long bench_rss_bytes(void);

#endif
