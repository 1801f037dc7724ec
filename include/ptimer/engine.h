/* ptimer/engine.h: a timer design as ptbench and ptstress drive it.
 *
 * An engine is a table of functions, struct pt_engine, that a shared
 * object hands out through one exported function, pt_engine_v2 (write
 * PT_ENGINE_EXPORT(table) once in the engine's source). Then
 *
 *     ptbench  --engine ./libmine.so -w rpc,reset,rpc-pending -t 1,2
 *     ptstress --engine ./libmine.so -T 5
 *
 * run the design beside the ones built in: ptbench's workloads and its
 * verdict, ptstress's scenarios and their oracles. The designs built into
 * both tools fill in this same table; nothing a workload or an oracle
 * uses is outside it. The header needs nothing else of ptimer: an engine
 * is plain C with its own timers, built against this file alone.
 *
 * THE SMALLEST CORRECT ENGINE
 * One mutex and one binary heap per worker, of {when, period, arg, gen}
 * entries. schedule pushes under the worker's mutex and returns
 * (slot << 32 | gen); cancel and reset find the entry by slot, compare the
 * generation (a handle whose timer fired or was cancelled is stale: 0 or
 * false, nothing touched), and remove or re-key it. poll pops and runs
 * what is due (periodic ones pushed back at when + period); idle waits on
 * a condition variable until `until` or the heap's new earliest, running
 * what falls due. For ptstress, a timer object (tm_*) is an entry that
 * stays allocated between armings; tm_arm and tm_stop take the mutex of
 * the worker whose heap holds it. Every flag 0, every optional op NULL.
 *
 * THREADS
 * A run makes one instance (create) for N workers, each a thread of the
 * tool's. A worker calls thread_start first and thread_stop last, on
 * itself; schedule, cancel, reset, poll, idle, reserve_handles, held and
 * check are called by the worker whose context (`th`) they are given,
 * never concurrently with each other on the same th. The timer-object ops
 * (tm_*) may be called from any thread, several at once on one timer: that
 * is what ptstress races. Callbacks may run on any thread the design
 * chooses (the worker, a timer thread of its own): workloads count in them
 * with atomics, and a callback may call schedule, cancel, reset or tm_*
 * on the worker it runs on.
 *
 * TIME
 * Nanoseconds of CLOCK_MONOTONIC (clock_gettime), signed 64 bits. The tool
 * reads the clock for every arming itself and passes absolute times; an
 * engine reads it only where its design must (poll, idle).
 *
 * WHAT EACH TOOL NEEDS
 *  - ptbench's timer workloads (rpc, rpc-pending, reset, random, ticker,
 *    descending, memory, latency): the required ops. reserve_handles,
 *    read_stats and timer_bytes only fill in columns.
 *  - ptstress's churn scenario: the required ops (arm and cancel at full
 *    speed, memory bounded with held). Its modtimer and ticker scenarios:
 *    the tm_* ops too (NULL tm_new: left out of them, said). Their
 *    oracles check every firing against its arming: none lost, none twice,
 *    none early, none later than the bound, none after a stop that said
 *    it stopped it, no callback after a stop that waits (flag
 *    PT_ENGINE_STOP_WAITS) returned; with tm_firing, that the firing's own
 *    when and now agree with the arming; with held, that memory stays
 *    bounded under churn; with check, the design's own invariants at
 *    quiescent points. A sleeping worker is probed too: another thread
 *    arms a timer earlier than all it holds, and it must fire in time,
 *    unless flag PT_ENGINE_IDLE_MISSES_REMOTE says idle cannot be woken.
 *  - ptstress's move scenario: move (NULL: left out, said).
 *  - ptbench's slack workload and ptstress --slack: set_slack (NULL: left
 *    out, said). Their oracles read each timer's window: none before its
 *    `when`, none later than `when + slack` plus the bound.
 *
 * VERSIONS
 * abi is PT_ENGINE_ABI and size sizeof(struct pt_engine), as the engine
 * was compiled: the tools refuse an engine whose abi or size is not their
 * own, with a message naming both. Any change to this table comes with a
 * new PT_ENGINE_ABI and a new entry name. ABI 2 added set_slack at the
 * end; the tools still load an ABI 1 engine (entry pt_engine_v1, a table
 * without it) as one with no slack.
 */
#ifndef PTIMER_ENGINE_H
#define PTIMER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PT_ENGINE_ABI 2

/* The function a shared object exports, and its name for dlsym. */
#define PT_ENGINE_ENTRY "pt_engine_v2"
#define PT_ENGINE_EXPORT(table)                                                                    \
    const struct pt_engine *pt_engine_v2(void)                                                     \
    {                                                                                              \
        return &(table);                                                                           \
    }

/* CLOCK_MONOTONIC, in nanoseconds. */
typedef int64_t pt_engine_time;
/* Names one arming of schedule. It must stay safe to pass to cancel and
 * reset after its timer fired or was cancelled and its memory reused: keep
 * a generation in it. 0 is no handle. */
typedef uint64_t pt_engine_handle;
/* What a firing runs: the run's one callback with the arming's arg. */
typedef void (*pt_engine_cb)(void *arg);

enum pt_engine_flags {
    /* Holds one timer per worker: only the latency workload runs on it. */
    PT_ENGINE_LATENCY_ONLY = 1u << 0,
    /* A floor to compare with (the least a design could cost), not a
     * design: its rows are shown and never named the winner. */
    PT_ENGINE_REFERENCE = 1u << 1,
    /* tm_stop also waits until no callback of the timer is running, as
     * bRPC's unschedule and ptimer's pt_timer_stop_sync: ptstress checks
     * that no callback of it starts or runs once tm_stop returned. */
    PT_ENGINE_STOP_WAITS = 1u << 2,
    /* idle sleeps on to `until` through a timer that another thread makes
     * this worker's earliest (no wake-up from tm_arm): ptstress's
     * sleeping-worker probe leaves the design out. */
    PT_ENGINE_IDLE_MISSES_REMOTE = 1u << 3,
};
#define PT_ENGINE_FLAGS_KNOWN 0xfu

struct pt_engine_stats {
    uint64_t wakeups; /* times a firing side woke from a sleep */
};

struct pt_engine;
/* The entry a shared object exports (PT_ENGINE_EXPORT defines it): its
 * table, which must live as long as the object stays loaded. */
__attribute__((visibility("default"))) const struct pt_engine *pt_engine_v2(void);

struct pt_engine {
    uint32_t abi;  /* PT_ENGINE_ABI */
    uint32_t size; /* sizeof(struct pt_engine) */
    /* Its name in every table, plot and JSON row: 1 to 23 of [a-z0-9-],
     * not one of the tools' own designs. */
    const char *name;
    const char *what;   /* one line, printed when a tool loads it (or NULL) */
    uint32_t flags;     /* enum pt_engine_flags */
    size_t timer_bytes; /* what one pending timer costs in the design's
                           own structures (memory report); 0: unknown */

    /* ---- required ---------------------------------------------------- */

    /* The instance for nworkers workers whose timers all run cb(arg);
     * NULL on failure. cb is NULL in a run that only arms and cancels. */
    void *(*create)(int nworkers, pt_engine_cb cb);
    /* After every worker's thread_stop. */
    void (*destroy)(void *eng);
    /* On worker `worker` (0..nworkers-1) itself: its context; NULL on
     * failure. In a per-P design the worker is a P. */
    void *(*thread_start)(void *eng, int worker);
    /* On the worker, last: cancels whatever it still holds. */
    void (*thread_stop)(void *th);
    /* Arms cb(arg) at `when`, and every `period` after it if period > 0;
     * the handle, or 0 on failure. A one-shot's handle is stale once it
     * fired. */
    pt_engine_handle (*schedule)(void *th, pt_engine_time when, pt_engine_time period, void *arg);
    /* true if it stopped the arming before it fired. The handle is spent
     * either way (a stale one: false, nothing touched). */
    bool (*cancel)(void *th, pt_engine_handle h);
    /* modtimer on a pending arming: now at `when` with `arg`. The handle
     * to use from now on (a bucket design may re-file under a new one), or
     * 0 if h was stale (then nothing changed). */
    pt_engine_handle (*reset)(void *th, pt_engine_handle h, pt_engine_time when, void *arg);
    /* A scheduler round on the worker: run what is due for it (a design
     * that fires on a thread of its own may do nothing). */
    void (*poll)(void *th);
    /* The worker has nothing to do until `until`: block until then,
     * running its due timers meanwhile (a per-P design sleeps until its
     * earliest timer or a wake-up, whichever is first). */
    void (*idle)(void *th, pt_engine_time until);

    /* ---- timer objects, for ptstress: all four or none ---------------- */

    /* A timer, as Go's time.Timer: armed and stopped by any thread,
     * several at once. NULL on failure. */
    void *(*tm_new)(void *eng);
    /* modtimer: arm tm at `when` (every `period` after if > 0) with arg.
     * `th` is any worker's context, passed from any thread: where a timer
     * that is not pending goes (a pending one may stay where it is).
     * 1 if an arming was pending (it will not run now), 0 if not, < 0 on
     * failure. A ticker's tick already taken to run may still call cb
     * once after this returns. */
    int (*tm_arm)(void *th, void *tm, pt_engine_time when, pt_engine_time period, void *arg);
    /* 1 if it stopped a pending arming, else 0 (same caveat for ticks). */
    int (*tm_stop)(void *tm);
    /* Stop, wait until no callback of tm runs, and free it. Nothing else
     * calls on tm meanwhile; before any worker's thread_stop. */
    void (*tm_free)(void *tm);

    /* ---- optional: NULL where the design has none ---------------------- */

    /* Counters since create, read after the workers stopped. */
    void (*read_stats)(void *eng, struct pt_engine_stats *out);
    /* On the worker, before the memory workload's first reading: make
     * room for n more handles in the index that finds a timer by its
     * handle (what a caller's handle table would cost), not for the
     * timers themselves: their memory is what the reading measures. */
    void (*reserve_handles)(void *th, long n);
    /* The design's own start and reset (Go's Reset on a stopped timer, and
     * on any), keeping the arg of the last arming. start: 0, or -EBUSY if
     * an arming is pending (nothing changed); reset: 1 if one was
     * pending, else 0. Any thread. */
    int (*tm_start)(void *th, void *tm, pt_engine_time when);
    int (*tm_reset)(void *th, void *tm, pt_engine_time when);
    /* From inside a callback, on the thread running it: the time this
     * firing was armed for and the now of the check that ran it; 0, or
     * < 0 outside a callback. */
    int (*tm_firing)(pt_engine_time *when, pt_engine_time *now);
    /* Go's moveTimers: every live timer of worker src onto dst, because
     * src is being removed; called on src's worker. 0, or < 0. */
    int (*move)(void *dst, void *src);
    /* On the worker: the entries its structures hold, stopped ones not
     * yet reclaimed included (ptstress bounds it under churn). */
    size_t (*held)(void *th);
    /* On the worker: the design's own invariants; quiescent when no arm
     * or stop is in flight on its timers. NULL if they hold, else a
     * sentence saying what is wrong. */
    const char *(*check)(void *th, bool quiescent);

    /* ---- optional, since ABI 2 ----------------------------------------- */

    /* Timer slack, as Linux's per-thread one (PR_SET_TIMERSLACK): from now
     * on every arming at `when` (schedule, reset, tm_*; each tick of a
     * periodic one) may fire anywhere in [when, when + slack], never
     * before `when`. What the design does with the window is its own: it
     * should let timers whose windows overlap fire on one wake-up. Called
     * once, after create and before any thread_start. 0, or < 0 if the
     * design cannot take this slack (nothing changed). */
    int (*set_slack)(void *eng, pt_engine_time slack);
};

#ifdef __cplusplus
}
#endif

#endif
