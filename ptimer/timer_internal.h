/* Shared between timer.c (operations on one timer, from any thread) and
 * timers.c (operations on one P's heap, under its lock). */
#ifndef PTIMER_TIMER_INTERNAL_H
#define PTIMER_TIMER_INTERNAL_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "ptimer/ptimer.h"

#include "lock.h"

#define PT_TIMER_MAGIC 0x7074696du  /* "ptim" */
#define PT_TIMERS_MAGIC 0x70746873u /* "pths" */

/* Heap entries one owner check examines when more than a quarter (and at
 * most half) of its heap is stopped (timers.c, sweep): at a quarter
 * stopped that unlinks about 256 timers, each in O(1) on average (most
 * entries are leaves), so a check never stalls its P for long. */
#define PT_SWEEP_BUDGET 1024u

/* Status word access. Acquire on load and on every CAS into a state,
 * release on every CAS out of it: owning a transient state (Modifying,
 * Moving, Removing, Running) is what protects when, period, f, arg, seq
 * and ts, so these pair with each other across threads. */
static inline uint32_t st_load(const pt_timer *t)
{
    return atomic_load_explicit(&((pt_timer *)t)->status, memory_order_acquire);
}

static inline bool st_cas(pt_timer *t, uint32_t from, uint32_t to)
{
    return atomic_compare_exchange_strong_explicit(&t->status, &from, to, memory_order_acq_rel,
                                                   memory_order_acquire);
}

_Noreturn void pt_bad_timer(const pt_timer *t, const char *op);

/* A transition out of a transient state this thread owns (Modifying,
 * Moving, Removing, Running). No other thread ever CASes from those, so a
 * release store does what Go's CAS does, without a locked instruction;
 * the load before it still catches a corrupt word (Go's badTimer). */
static inline void st_set(pt_timer *t, uint32_t from, uint32_t to, const char *op)
{
    if (atomic_load_explicit(&t->status, memory_order_relaxed) != from)
        pt_bad_timer(t, op);
    atomic_store_explicit(&t->status, to, memory_order_release);
}

/* Another thread holds a transient state; let it finish. */
static inline void st_wait(void) { sched_yield(); }

static inline bool pt_timer_valid(const pt_timer *t) { return t && t->magic == PT_TIMER_MAGIC; }
static inline bool pt_timers_valid(const pt_timers *ts)
{
    return ts && ts->magic == PT_TIMERS_MAGIC;
}

/* Normalise a user `when`: negative is never, 0 is "at once" but kept as 1
 * so that 0 can mean "none" in next and poll_until. */
static inline pt_nanos pt_norm_when(pt_nanos when)
{
    return when < 0 ? PT_MAXWHEN : when == 0 ? 1 : when;
}

/* The callbacks word of a pt_timer (see ptimer.h). */
#define PT_CB_WAITER 1u
#define PT_CB_RUNNING 2u                /* one running callback */
#define PT_CB_STARTED (1u << 16)        /* one started callback */
#define PT_CB_RUNNING_MASK 0xfffeu
static inline uint32_t pt_cb_running(uint32_t v) { return (v & PT_CB_RUNNING_MASK) >> 1; }
static inline uint32_t pt_cb_started(uint32_t v) { return v >> 16; }

/* Callbacks running on this thread, innermost first: lets stop_sync called
 * from a timer's own callback skip waiting for itself, and tell the runner
 * not to touch a timer its callback may have freed. */
struct pt_cb_frame {
    pt_timer *t;
    bool disposed;
    struct pt_cb_frame *prev;
};
extern _Thread_local struct pt_cb_frame *pt_cb_top;

#endif
