/* ptimer: the TimerThread, bRPC's bucket design (src/bthread/timer_thread.cpp).
 *
 * One thread runs every task of an instance. Callers hash (by calling
 * thread) into one of N buckets, each a mutex-guarded list with its own
 * nearest run time; the timer thread empties every bucket into its private
 * min-heap, runs what is due, and sleeps on a futex until the earliest
 * task. A schedule wakes it only when the new task is earlier than both its
 * bucket's and the global nearest time, so ascending deadlines (the RPC
 * timeout pattern) almost never wake it, and descending ones wake it every
 * time (its documented worst case). It is the baseline every ptimer
 * comparison is measured against, and the fallback for timers created from
 * threads that are not a P.
 *
 * Callbacks run on the timer thread, one at a time, and may call any
 * function here, including schedule, unschedule of their own id (which
 * answers 1), and destroy of their own instance (see destroy).
 *
 * How this differs from bRPC, and why:
 * - Time is pt_nanos of CLOCK_MONOTONIC, and the thread sleeps with an
 *   absolute monotonic futex deadline. bRPC uses gettimeofday (wall time,
 *   microseconds): stepping the clock makes its timers fire early or hang.
 * - The task pool belongs to the instance, not to the process, so destroy
 *   frees every byte. Its per-thread caches are kept per instance, indexed
 *   by a small per-thread index that is reused after a thread exits: the
 *   next thread inherits the cache instead of stranding it, so thread churn
 *   cannot grow the pool. The bucket hash is fmix64 of that index (bRPC:
 *   of the pthread id).
 * - unschedule rejects ids whose version is 0 or odd (never issued) before
 *   looking: bRPC would answer 1 ("running") to such a guess.
 * - Stats are exact at any moment: scheduled and unscheduled are counted by
 *   the calling thread in its own line (no shared counter on the hot path);
 *   bRPC counts a task as scheduled only once the timer thread pulls it.
 * - Once destroy has begun, the thread runs no further task, even a due
 *   one; the clock is read again only when the head is not due by the last
 *   reading (bRPC reads it before every task).
 * - num_buckets 0 takes the default (bRPC: EINVAL); `when < 0` means never.
 * - A task may have slack (pt_timerthread_schedule_slack, or the options'
 *   default): a window in which it may run, used to run many on one
 *   wake-up. bRPC has none.
 * - The private heap is ptimer's 4-ary heap of {when, task} (bRPC: a binary
 *   std::push_heap of Task*, which dereferences a task per comparison).
 */
#ifndef PTIMER_TIMERTHREAD_H
#define PTIMER_TIMERTHREAD_H

#include <stdint.h>

#include "ptimer/clock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t pt_task_id; /* (version << 32) | slot */
#define PT_INVALID_TASK_ID ((pt_task_id)0)

typedef struct pt_timerthread pt_timerthread;

typedef struct pt_timerthread_options {
    unsigned num_buckets; /* 0: the default, 13; at most 1024 */
    /* The slack pt_timerthread_schedule gives every task (as Linux's
     * per-thread timer slack): 0, the default, runs each at its time;
     * negative is -EINVAL. */
    pt_nanos slack;
} pt_timerthread_options;

typedef struct pt_timerthread_stats {
    uint64_t scheduled;   /* schedules that returned an id */
    uint64_t triggered;   /* tasks whose callback ran (and returned) */
    uint64_t unscheduled; /* unschedules that answered 0 */
    uint64_t wakeups;     /* times the timer thread returned from its futex wait */
    uint64_t busy_ns;     /* time the timer thread spent not sleeping */
    uint64_t pending;     /* scheduled - triggered - unscheduled */
} pt_timerthread_stats;

/* Start an instance and its thread ("pt_timerthread"); returns once that
 * thread runs. `opt` NULL or zero fields take the defaults. 0, -EINVAL
 * (NULL out, more than 1024 buckets), -ENOMEM, or the negated
 * pthread_create error. */
PT_API int pt_timerthread_create(pt_timerthread **out, const pt_timerthread_options *opt);

/* Run fn(arg) on the timer thread at monotonic time `when` (at once if it
 * has passed; never if negative). Returns the task's id, or
 * PT_INVALID_TASK_ID if tt or fn is NULL, tt is stopping, or out of memory. */
PT_API pt_task_id pt_timerthread_schedule(pt_timerthread *tt, void (*fn)(void *), void *arg,
                                          pt_nanos when);

/* schedule with a window: fn(arg) runs at some time in [when, when +
 * slack], never before `when`, and no later than `when + slack` plus the
 * thread's usual lateness; with slack 0 exactly as schedule. The thread
 * sleeps until the earliest `when + slack` it holds and, woken, runs
 * every task whose `when` has come, in order of `when`: timers whose
 * windows overlap fire on one wake-up. Tasks with slack sit in a second
 * pair of heaps (one by `when`, one by `when + slack` for the sleep),
 * so a task with none costs what it did. PT_INVALID_TASK_ID as
 * schedule, and for slack < 0. */
PT_API pt_task_id pt_timerthread_schedule_slack(pt_timerthread *tt, void (*fn)(void *), void *arg,
                                                pt_nanos when, pt_nanos slack);

/* Cancel a task: 0 if it was removed before it ran (it never will);
 * 1 if it is running now (from its own callback, or racing with it);
 * -1 if there is no such task: it ran, was removed, or never was (an id
 * whose slot now holds a later task is stale and answers -1). One CAS;
 * the task's memory goes back to the pool when the timer thread meets it,
 * and every 4096th removal of a thread wakes the timer thread to reclaim
 * removed tasks (so with far deadlines they are not held until their
 * time). Ids are checked, not authenticated: a forged id that happens to
 * equal a live task's id acts on that task. */
PT_API int pt_timerthread_unschedule(pt_timerthread *tt, pt_task_id id);

/* Stop the thread, join it, and free everything. Tasks not yet run are
 * dropped, not run. Called from one of tt's own callbacks it cannot join:
 * it stops tt, schedules made afterwards in that callback return
 * PT_INVALID_TASK_ID, and the thread frees everything once the callback
 * returns. Does nothing to the global instance or NULL. */
PT_API void pt_timerthread_destroy(pt_timerthread *tt);

/* A driven instance: the TimerThread's buckets and heap with no thread
 * of their own, for a caller that owns its threads and its clock (an
 * event loop, or a scheduler on virtual time, whose clock the timer
 * thread could not see). Schedules and unschedules are as above; the
 * tasks run only inside pt_timerthread_run, on the thread that calls
 * it, and `when` is whatever clock the driver keeps. Destroy must not
 * race a run, and drops the tasks not yet run. 0 or as create. */
PT_API int pt_timerthread_create_driven(pt_timerthread **out, const pt_timerthread_options *opt);

/* Runs a driven instance's tasks due at `now` (when <= now, whatever
 * their slack), in order of `when`, on the calling thread; one driver at a time (another waits).
 * A task it runs may schedule, unschedule and call run's neighbours but
 * not run or next. The count of tasks run; -EINVAL (NULL, or an instance
 * with its own thread). */
PT_API int pt_timerthread_run(pt_timerthread *tt, pt_nanos now);

/* A driven instance's time to run: the earliest pending `when + slack`
 * (perhaps of a task removed since, which a run then skips), or 1 when a run must first gather
 * the tasks to know (every 4096th unschedule of a thread asks for
 * that); 0 with none pending; -EINVAL as run. A look without a lock:
 * exact between runs, and during one on another thread perhaps 0. */
PT_API pt_nanos pt_timerthread_next(pt_timerthread *tt);

/* The process-wide instance (default options), created on first use by
 * whichever thread gets there first, never destroyed. NULL only if it could
 * not be created. */
PT_API pt_timerthread *pt_timerthread_global(void);

/* A snapshot of tt's counters (each exact; read one after another, so a
 * concurrent schedule may show in one and not yet another). */
PT_API void pt_timerthread_read_stats(pt_timerthread *tt, pt_timerthread_stats *out);

#ifdef __cplusplus
}
#endif

#endif
