/* The scheduler's own structures: the G, the P, the M and the scheduler
 * (DESIGN.md's sched section maps the files and their layers).
 *
 * Each part's state sits in the header named for the file that owns it,
 * which says who else may touch it: runq.h (runq.c), gpool.h (g.c's pools
 * of finished Gs), idle.h (proc.c's idle and spinning Ms), sysmon.h,
 * time.h, park.h (park.c's timed parks), preempt.h (the M's alarm),
 * stack.h, fiber.h, ptimers.h (a P's timers in either per-P mode), fd.h
 * and chan.h; what each .c offers the others is declared in the header
 * named after it (g.h, proc.h, park.h, ...), and the shapes of the hooks
 * through which the core calls the services in hooks.h. This file ties
 * the state into the four structs, each with its rule of who writes what.
 *
 * Locks, outermost first: a descriptor's lock (fdtab.c; held around its
 * netpoll registration, so before the netpoll's own), s->lock (the global
 * queue, the global G pool, set_procs), then a P's timer heap lock
 * (inside its pt_timers or pt_lheap; an lheap timer's own lock after
 * it). No lock is held across a timer callback; the wait
 * group's and a descriptor's lock are held across a G's switch to its M,
 * whose park commit releases them (pt_park's unlock function). A time
 * timer's op lock (time.c) is held across yields and the wait for its
 * running callback, so its waiters yield rather than sleep; its own lock
 * comes before a channel's lock and s->lock (its TimerThread task sends
 * and starts Gs under it).
 */
#ifndef PTIMER_SCHED_INTERNAL_H
#define PTIMER_SCHED_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/netpoll.h"
#include "ptimer/ptimer.h"
#include "ptimer/sched.h"
#include "ptimer/timerthread.h"
#include "sched/crash.h"
#include "sched/fiber.h"
#include "sched/gpool.h"
#include "sched/hooks.h"
#include "sched/idle.h"
#include "sched/park.h"
#include "sched/preempt.h"
#include "sched/ptimers.h"
#include "sched/runq.h"
#include "sched/self.h"
#include "sched/stack.h"
#include "sched/sysmon.h"
#include "sched/time.h"
#include "sched/vtime.h"

#define PT__MAX_PROCS 1024

struct pt__p;
struct pt__m;

/* A G. Its fields are its own: written by the G, or by g.c while no
 * one else can see it (made, or reused from a pool, before pt_go
 * publishes it), and read by the M running it; except as noted. */
struct pt_g {
    /* First, right above the G's stack (g.c): what a write running up
     * off the stack's top frame hits first. */
    uint64_t canary;
    struct pt__fiber fiber;
    struct pt__stack stack;
    _Atomic uint32_t status; /* any thread: parks and readies race on it (g.c) */
    /* PT__G_DO_*, for the M; a preempted G's stays PREEMPT until the G
     * is back in its handler, which clears it (preempt.c) */
    uint32_t action;
    pt_sched *s;
    void (*fn)(void *);
    void *arg;
    bool (*commit)(void *); /* pt_park's, run on the M after the switch */
    void *commit_arg;
    /* The link of the one list that holds the G, under that list's
     * guard: the global queue or the global pool (s->lock), a P's pool
     * (its M), a wait group's waiters (the group's lock). */
    pt_g *next;
    pt_g *pool_batch; /* the first G of a batch in the global pool (gpool.h): the next batch */
    uint32_t pool_n;  /* ... and its batch's length (both s->lock) */
    /* The channel wait (struct pt__sudog) a waker completed: written by
     * the waker under the channel's lock before it readies the G, read
     * and cleared by the G once it runs again (chan.c, select.c). */
    void *wake_sg;
    uint64_t id;
    /* The clock as the G read it just before parking (a sleep's start),
     * for its M's look at the P's timers as it switches out: a read
     * saved per sleep (0: none; taken by that look). */
    pt_nanos clock_hint;
    struct pt__g_park park; /* its timed parks and their deadline (sched/park.h) */
    /* pt_preemptible_begin's nesting depth: written by the G, read by the
     * signal handler on the same thread (preempt.c) */
    _Atomic uint32_t preemptible;
    /* What it parks on (vtime.h): written by the G before each park,
     * read by its M and its waker while it is parked, and by the
     * deadlock report */
    uint8_t wait;      /* enum pt__wait */
    bool wait_durable; /* only another G or the clock can end it */
    const void *wait_on;
    void *made_at;    /* pt_go's return address (virtual time only): where made */
    uint64_t made_by; /* ... by the G of this id (0: a thread) */
};

/* A processor. Its fields are its M's (one M per P, for life): written
 * by that M only, read elsewhere with relaxed loads where atomic; except
 * as noted. */
struct pt__p {
    int id;
    pt_sched *s;
    struct pt__runq rq;       /* its run queue (runq.c) */
    union pt__ptimers timers; /* Go's per-P timers; its wake is wake_timers (proc.c) */
    struct pt__p_gs gs;       /* finished Gs kept, G ids (g.c; M) */
    /* Gs run (M): every 61st round looks at the global queue first, and
     * sysmon tells a P stuck in one G by a count that does not move. */
    _Atomic uint32_t schedtick;
    _Atomic int dead;       /* removed by set_procs and retired by its M */
    struct pt__m *m;        /* the M that runs it (one each, for life) */
    /* counters written by its M only (relaxed loads elsewhere) */
    _Atomic uint64_t n_timers_owner, n_timers_stolen, n_steals, n_overflowed,
        n_handoffs, n_gs_created;
    struct pt__p_time time; /* Go's time package: its timer cache, its count (time.c) */
    struct pt__ring *ring;  /* PT_FD_IO_URING: its Gs' socket reads and writes (fdring.c) */
    struct pt__p_queue *queue; /* ... as the core sees it: NULL, or ring's */
};

/* A machine: an OS thread bound to one P for life. Its fields are its
 * thread's own, except as noted. */
struct pt__m {
    pthread_t thread;
    struct pt__p *p; /* set before the thread starts (sched.c), then read-only */
    pt_sched *s;
    struct pt__fiber g0; /* the thread's own stack: where schedule runs */
    pt_g *_Atomic curg;  /* the G it runs now, NULL on g0 (sysmon reads it) */
    bool spinning;       /* looking for work, counted in s->idle.nmspinning */
    uint64_t rng;        /* steal order */
    _Atomic uint32_t retired_word; /* futex: a removed P's M waits here until set_procs or
                                    * destroy bumps it */
    /* A G that switched straight to the running one (g.c): what it asked
     * for is still to be done, by the G it switched to (M only). */
    pt_g *handoff;
    /* A G picked to run next by a G that could not switch to it (it was
     * preempted in a region): g0 runs it before looking for work (M only). */
    pt_g *runnow;
    /* The clock as pt__next_local read it when it found a timer due: the
     * time the G switched to, or g0, runs them at, read once (M only; 0:
     * none). */
    pt_nanos due_now;
    bool running_timers; /* in run_timers: its readies go behind the queue (M only) */
    struct pt__m_preempt pre; /* preemption: the monitor's request, the alarm (preempt.h) */
};

/* A scheduler. Its fields are set by pt_sched_create before any of its
 * threads starts and read-only after; except as noted. */
struct pt_sched {
    uint32_t magic;
    pt_sched_options opt;
    struct pt__stack_pool stacks; /* every G's stack and its G (g.c, stack.c) */
    struct pt__p *ps[PT__MAX_PROCS];   /* created on demand, freed by destroy */
    _Atomic int nprocs;                /* GOMAXPROCS: set_procs, under s->lock */
    int cpus;                          /* CPUs the process could run on at creation */
    _Atomic int maxprocs_made;         /* Ps created so far (written under s->lock) */

    _Atomic uint32_t lock;             /* pt__lock: global queue, global pool, set_procs */
    struct pt__globq globq;            /* the global queue (runq.c; s->lock) */
    struct pt__gpool gpool;            /* finished Gs beyond the Ps' pools (g.c) */

    struct pt__idle idle; /* idle and spinning Ms, the netpoller's claim (proc.c) */
    pt_netpoll *np;

    /* Counts and flags any thread updates atomically: */
    _Alignas(64) _Atomic int64_t gcount; /* Gs started and not finished (pt_go, a G's end) */
    _Atomic uint32_t gdone_word;         /* futex for pt_sched_wait: bumped when gcount hits 0 */
    _Atomic uint64_t next_gid; /* G ids not yet handed out, in batches to the Ps (g.c) */
    /* Set once, by destroy (seq_cst), before it wakes every M; every M
     * and the monitor read it (acquire) before they sleep. */
    _Atomic uint32_t stopping;
    _Atomic uint32_t nfds;               /* descriptors registered for Gs (fdtab.c) */
    _Atomic uint32_t fds_cancelled;      /* pt_sched_cancel_fds was called (fdio.c) */
    _Atomic pt_nanos last_poll; /* when an M or sysmon last took the netpoller's events
                                 * (relaxed: the monitor's hint to poll) */
    _Atomic int64_t time_timers;         /* pt_time_* timers made off the Ps, less those freed
                                          * off them (time.c) */

    struct pt__sysmon sysmon; /* the monitor's thread and sleep (sysmon.c) */

    pt_timerthread *tt; /* PT_TIMERS_TIMERTHREAD: the process's; a driven one of its own
                         * under virtual time */
    struct pt__vt vt;   /* opt.virtual_time: the clock and what moves it (vtime.c) */
    _Atomic pt_nanos preempt_slice; /* 0: regions refused, nobody preempted (any thread, relaxed) */

    struct { /* counters: relaxed, summed by pt_sched_read_stats */
        _Atomic uint64_t gs_created, timers_sysmon, netpoll_waits, netpoll_breaks, parks,
            spinning_max, sysmon_wakeps, preempt_signals, preempts;
    } st;
};

#define PT__SCHED_MAGIC 0x73636864u /* "schd" */

/* Whether s's per-P timers are Go 1.23's (sched/ptimers.h's flag). */
static inline bool pt__lheap(const pt_sched *s)
{
    return s->opt.timers == PT_TIMERS_LHEAP;
}

/* The Gs' clock (vtime.h): a virtual scheduler's, else CLOCK_MONOTONIC
 * (s NULL too: a timer made off the scheduler). */
static inline pt_nanos pt__now(const pt_sched *s)
{
    if (s && s->opt.virtual_time)
        return atomic_load_explicit(&((pt_sched *)s)->vt.now, memory_order_acquire);
    return pt_nanotime();
}

/* What the calling G g is about to park on (vtime.h). */
static inline void pt__g_waits(pt_g *g, enum pt__wait what, const void *on, bool durable)
{
    g->wait = (uint8_t)what;
    g->wait_on = on;
    g->wait_durable = durable;
    g->park.deadline = 0; /* a timed park sets its own */
}

/* A counter with one writer: a load and a store, no locked instruction;
 * relaxed, since readers only sum them. */
static inline void pt__count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}
static inline void pt__count32(_Atomic uint32_t *c, uint32_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

#include "sched/g.h"
#include "sched/proc.h"

#endif
