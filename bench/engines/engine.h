/* ptbench's engine interface: what a timer design must offer so that every
 * workload is written once. A run has one engine instance and N worker
 * threads; each worker calls thread_start on itself first (for per-P
 * designs the worker *is* a P) and thread_stop last.
 *
 * Costs the engines must pay, so that designs compare fairly:
 *  - the caller reads the clock once per arm (workloads do it, not engines);
 *  - cancel disposes of the timer: after it, the engine may reuse the
 *    timer's memory without help from the caller (pheap recycles a stopped
 *    timer once its heap has unlinked it, as Go's GC reclaims a stopped
 *    time.Timer; pheap-sync frees it at once through pt_timer_stop_sync).
 */
#ifndef PTBENCH_ENGINE_H
#define PTBENCH_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/clock.h"

/* A handle names one arming and stays safe to pass to cancel and reset
 * after the timer fired and its memory was reused: engines check a
 * generation (or, for timerthread, the task id's version). 0: none. */
typedef uint64_t bench_handle;
/* Called when a timer fires: on the worker (per-P designs) or on the
 * engine's own thread (timerthread, globalheap), so workloads use atomics.
 * A fired one-shot is recycled by the engine; its handle goes stale. */
typedef void (*bench_cb)(void *arg);

struct engine_stats {
    uint64_t wakeups;   /* times a firing side woke from sleep */
};

struct engine {
    const char *name;
    const char *what;
    bool latency_only; /* holds one timer per thread: latency workloads only */
    bool reference;    /* a floor to compare with, not a timer design: never a winner */
    /* Global state for nthreads workers whose timers all call cb(arg) when
     * they fire; NULL on failure. */
    void *(*create)(int nthreads, bench_cb cb);
    void (*destroy)(void *eng);
    /* Called on the worker thread itself; returns its context. */
    void *(*thread_start)(void *eng, int tid);
    /* On the worker thread: cancels whatever it still has pending. */
    void (*thread_stop)(void *th);
    /* Arm cb(arg) at `when`, repeating every `period` if > 0; 0 on failure. */
    bench_handle (*schedule)(void *th, pt_nanos when, pt_nanos period, void *arg);
    /* True if it was cancelled before firing; disposes the handle. */
    bool (*cancel)(void *th, bench_handle h);
    /* Re-arm a pending handle at `when` (modtimer); returns the handle to
     * use from now on (bucket designs reschedule), or 0 if it was stale. */
    bench_handle (*reset)(void *th, bench_handle h, pt_nanos when, void *arg);
    /* A scheduler round: run this worker's due timers (per-P designs). */
    void (*poll)(void *th);
    /* Idle: block until `until`, running this worker's timers meanwhile
     * (per-P designs sleep until their next timer or a wake). */
    void (*idle)(void *th, pt_nanos until);
    void (*read_stats)(void *eng, struct engine_stats *out);
    /* Optional, on the worker: size the harness's own handle bookkeeping
     * (generations and free links, 8 B a timer: what a caller's handle
     * table would cost) for n more timers. The memory workload calls it
     * before its first reading, as it fills its handle array then, so the
     * reading is what the design stores. */
    void (*reserve_handles)(void *th, long n);
    /* Bytes of memory one pending timer costs in this engine's own
     * structures (timer, handle bookkeeping, heap entry), for the memory
     * report beside the measured resident size. */
    size_t timer_bytes;

    /* Timer objects, for ptstress: one timer, as Go's time.Timer, that any
     * thread may arm and stop, several threads at once. `th` is any
     * worker's context, passed from any thread: the heap a timer that is
     * not pending goes onto (a pending one stays where it is). Each arming
     * calls cb with its own arg. NULL in an engine that holds one timer
     * per thread (kernel): ptstress skips it. */
    void *(*tm_new)(void *eng);
    /* modtimer: 1 if an arming was pending (it will not run now), 0 if
     * not, < 0 on failure. A ticker's tick already taken to run may still
     * call cb once after this returns. */
    int (*tm_arm)(void *th, void *tm, pt_nanos when, pt_nanos period, void *arg);
    /* 1 if it stopped a pending arming, else 0 (same caveat for tickers). */
    int (*tm_stop)(void *tm);
    /* Optional: the design's own start and reset, which keep the callback
     * argument of the last arming (ptimer.h's pt_timer_start and
     * pt_timer_reset). start: 0, or -EBUSY if an arming is pending
     * (nothing changed); reset: 1 if one was pending, else 0. */
    int (*tm_start)(void *th, void *tm, pt_nanos when);
    int (*tm_reset)(void *th, void *tm, pt_nanos when);
    /* Optional, from inside cb on the thread running it: the time this
     * firing is for and the now of the check that ran it (the family's
     * pt_*_firing): 0, or < 0 outside a callback. */
    int (*tm_firing)(pt_nanos *when, pt_nanos *now);
    /* tm_stop also waits until no callback of tm runs (pt_timer_stop_sync):
     * ptstress then checks that none does once it returned. */
    bool tm_stop_waits;
    /* Stop, wait until no callback of tm runs, free it. Nothing else may
     * call on tm meanwhile. Before the thread_stop of any worker. */
    void (*tm_free)(void *tm);
    /* Optional: moveTimers: every live timer of src onto dst (src's P is
     * being removed), called on src's worker; 0 or < 0. */
    int (*move)(void *dst, void *src);
    /* idle sleeps on through a timer that another thread makes the
     * worker's earliest (no wake callback: floor, whose heaps no other
     * thread is meant to touch): ptstress's sleeping-P probe skips it. */
    bool idle_misses_remote;
    /* Optional, on the worker: the entries its structures hold, stopped
     * ones not yet reclaimed included (ptstress's memory bound). */
    size_t (*held)(void *th);
    /* Optional, on the worker: the design's own invariants (quiescent: no
     * arm or stop in flight on its timers). NULL if they hold, else what
     * is wrong. */
    const char *(*check)(void *th, bool quiescent);
};

extern const struct engine engine_pheap, engine_pheap_sync, engine_pheap_staged, engine_timerthread,
    engine_globalheap, engine_floor, engine_kernel, engine_pwheel, engine_lheap;

const struct engine *engine_find(const char *name);

/* Sleeps until the CLOCK_MONOTONIC time `until` (a thread with nothing to
 * run); shared by the engines whose firing happens elsewhere. */
void bench_sleep_until(pt_nanos until);

#endif
