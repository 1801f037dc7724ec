/* ptimer/ptimer.h: per-processor timer heaps, the Go runtime's design
 * (runtime/time.go, Go 1.14-1.22) in C.
 *
 * Each processor ("P") owns one pt_timers: a lock, a 4-ary heap ordered by
 * `when`, and atomics that let any thread decide without the lock whether
 * anything is due. A timer lives in at most one heap; stop and modify from
 * any thread only change the timer's status word, and the heap's owner does
 * the heap work later (lazily) when it checks. That keeps stop and modify
 * lock-free and lets a scheduler poll its timers for the price of two
 * atomic loads.
 *
 * The status machine. Every transition in ptimer/ names its row here.
 * "-> wait" means: spin (yielding) until another thread finishes a window
 * that is a few instructions long (Modifying), or short and under a heap
 * lock (Running, Moving, Removing).
 *
 *  start (addtimer)       NoStatus, Removed  -> Modifying -> Waiting  pushed onto ts
 *                         Deleted            -> Modifying -> ModifiedXX  revived in its heap
 *                         Waiting, ModifiedXX -> -EBUSY, nothing changed
 *                         Running, Moving, Removing, Modifying -> wait, then as above
 *  stop (deltimer)        Waiting, ModifiedXX -> Modifying -> Deleted  returns 1
 *  stop, eager (a staged  Waiting, ModifiedXX -> Removing -> Removed  unlinked, returns 1
 *  heap, its lock taken   (any other status, the head, or the lock busy: as stop)
 *  by a try-lock, t not
 *  the heap's head)
 *                         NoStatus, Deleted, Removing, Removed      returns 0
 *                         Running, Moving, Modifying -> wait
 *  modify, reset          Waiting, ModifiedXX -> Modifying -> ModifiedXX  returns 1
 *  (modtimer)             Deleted            -> Modifying -> ModifiedXX  returns 0
 *                         NoStatus, Removed  -> Modifying -> Waiting  pushed onto ts, 0
 *                         Running, Moving, Removing, Modifying -> wait
 *  stop_sync              stop, then Deleted -> Removing -> Removed  (unlinked under
 *                         its heap's lock), then waits out running callbacks; the
 *                         head of a plain heap leaves its entry to the heap's own
 *                         stand-in timer, Deleted, which the next add overwrites
 *  clean, adjust,         Deleted    -> Removing -> Removed
 *  clear_deleted          ModifiedXX -> Moving -> Waiting  (re-keyed to its new when)
 *  (heap lock held)       Modifying  -> wait
 *  promote (lock held,    Deleted    -> Removing -> Removed  dropped
 *  a ring slot begins)    any other status: moved into the heap as it is, same key
 *  run (heap lock held,   Waiting    -> Waiting  (not due yet)
 *  head of the heap)      Waiting    -> Running -> NoStatus  one-shot: removed, then f
 *                         Waiting    -> Running -> Waiting   ticker: re-keyed, then f
 *                         ModifiedXX -> Moving -> Waiting
 *                         Deleted    -> Removing -> Removed
 *                         Modifying  -> wait
 *  move (both heaps       Waiting, ModifiedXX -> Moving -> Waiting  onto dst
 *  locked)                Deleted    -> Removing -> Removed  dropped
 *                         Modifying  -> wait
 *  verify (lock held)     X -> Moving -> X  to read a timer's fields safely
 *  Any status not listed for an operation is corruption: the library aborts
 *  with the timer, its status and the operation (Go's badTimer).
 *
 * Lifetime (C has no GC, so this is the contract):
 *  - A pt_timer may be freed only when it is in no heap and no callback of
 *    it runs: after pt_timer_stop_sync() returns, or before its first start.
 *    pt_timer_stop() alone is not enough: the timer stays in its heap as
 *    Deleted until that heap's owner cleans it.
 *  - pt_timer_stop_sync() may be called from the timer's own callback (it
 *    does not wait for itself), and the callback may then free the timer.
 *    Two callbacks that stop_sync each other on two threads deadlock, as
 *    with Linux's timer_delete_sync().
 *  - A pt_timers may be destroyed only when no thread is inside one of its
 *    calls, nor inside a call on a timer it holds (a stop_sync of a timer
 *    stopped on it unlinks it there); pt_timers_destroy() refuses (-EBUSY)
 *    while it holds live timers.
 *
 * Callbacks run on the thread that calls pt_timers_check(), one at a time
 * per heap, with the heap's lock released, and may call any function here.
 */
#ifndef PTIMER_PTIMER_H
#define PTIMER_PTIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/clock.h"
#include "ptimer/slack.h"

#ifdef __cplusplus
extern "C" {
#define PT_ATOMIC(T) T /* layout only: C++ code does not touch the fields */
#else
#define PT_ATOMIC(T) _Atomic(T)
#endif
/* 64-bit atomics are 8-aligned in C; a plain 64-bit field in C++ is only
 * 4-aligned on i386: this keeps the layout the same for both. */
#define PT_ALIGN8 __attribute__((aligned(8)))

typedef void (*pt_func)(void *arg, uintptr_t seq);
typedef void (*pt_wake_func)(void *ctx, pt_nanos when);

enum pt_timer_status {
    PT_TIMER_NOSTATUS,        /* never started, or a one-shot that ran: in no heap */
    PT_TIMER_WAITING,         /* in a heap, waiting for its when */
    PT_TIMER_RUNNING,         /* being run (heap lock held, briefly) */
    PT_TIMER_DELETED,         /* stopped, still in a heap until cleaned */
    PT_TIMER_REMOVING,        /* being removed from its heap (briefly) */
    PT_TIMER_REMOVED,         /* stopped and removed from its heap */
    PT_TIMER_MODIFYING,       /* being stopped or modified (a few instructions) */
    PT_TIMER_MODIFIED_EARLIER, /* in a heap, re-armed earlier than its heap key */
    PT_TIMER_MODIFIED_LATER,  /* in a heap, re-armed no earlier than before */
    PT_TIMER_MOVING,          /* being re-keyed or moved by a heap's owner (briefly) */
};

typedef struct pt_timers pt_timers;

/* The storage of one P's 4-ary heap. Its functions are private
 * (base/heap4.h); the layout is here only so that pt_timers can be
 * embedded. */
struct pt__heap4_entry;
typedef struct pt__heap4 {
    struct pt__heap4_entry *v;
    uint32_t len;
    uint32_t cap;
    int32_t idx_off;
} pt__heap4;

/* One timer. Embeddable; every field is private, laid out here only so
 * that a timer can live inside the caller's own objects (56 bytes on
 * 64-bit targets; pt_timer_status() reads the status). The layout of the
 * state and callbacks words is the library's own (pheap/status.h). */
typedef struct pt_timer {
    PT_ATOMIC(uint64_t) state PT_ALIGN8; /* status, a check, and the heap holding it */
    uint32_t heap_index;                 /* where in that heap (or ring); its lock guards it */
    PT_ATOMIC(uint32_t) callbacks;       /* running and started callbacks, for stop_sync */
    /* The time the user asked for. While the timer is Waiting it equals its
     * heap key; while ModifiedXX it is the new time and the heap key is the
     * old one, until the owner re-keys it (Go keeps this in `nextwhen`). */
    pt_nanos when;
    pt_nanos period;            /* > 0: a ticker */
    pt_func f;
    void *arg;
    uintptr_t seq;
} pt_timer;

/* One P's timers. Embeddable; treat every field as private. */
struct pt_timers {
    PT_ATOMIC(uint32_t) lock;   /* pt__lock: guards heap, running, its timers' heap_index */
    uint32_t magic;             /* set by init, cleared by destroy */
    /* The staging ring (pt_timers_set_staging), NULL when off: set before
     * the heap is shared and never changed after, so any thread may read
     * the pointer; what it points to is guarded by lock. Here, in the
     * line a stop touches anyway (deleted_timers), as every stop reads it. */
    struct pt__stage *stage;
    /* pt_timers_set_slack's: every timer in this heap may run by its
     * when + slack (ptimer/slack.h). Set before the heap is shared;
     * read where the heap's next time is handed out. */
    pt_nanos slack;
    pt__heap4 heap;              /* entries {key, pt_timer *} */
    /* heap.v[0].when, or 0 if empty: lets pollers decide without the lock.
     * Written under lock, read anywhere. */
    PT_ATOMIC(pt_nanos) timer0_when PT_ALIGN8;
    /* The earliest `when` of any ModifiedEarlier timer, 0 if none: a timer
     * moved earlier is still keyed at its old time, and this makes check
     * adjust the heap before that time (Go's timerModifiedEarliest). */
    PT_ATOMIC(pt_nanos) modified_earliest PT_ALIGN8;
    PT_ATOMIC(uint32_t) num_timers;     /* heap.len + staged, for readers without the lock */
    /* Deleted timers still in the heap: deleted_timers - deleted_cleaned.
     * Stops (and revivals, backwards) count in deleted_timers from any
     * thread; cleaning counts in deleted_cleaned, only under the lock, by
     * a plain store: one locked instruction fewer per cleaned timer than
     * one shared counter. */
    PT_ATOMIC(uint32_t) deleted_timers;
    PT_ATOMIC(uint32_t) deleted_cleaned;
    uint32_t staged;            /* timers in the ring (lock); heap.len + staged = num_timers */
    /* The start of the ring's earliest occupied slot, 0 if none (lock):
     * here, not in the ring, so that a plain heap's update of timer0_when
     * tests one field it has in cache anyway. */
    pt_nanos stage_next;
    /* The last `now` a check of this heap saw: where the ring starts when
     * it is empty. Written by checks without the lock, read under it. */
    PT_ATOMIC(pt_nanos) stage_hint PT_ALIGN8;
    uint32_t running;           /* a callback of this heap runs now (lock dropped) */
    uint32_t sweep_at;          /* where the owner's next bounded sweep starts (lock) */
    pt_wake_func wake;
    void *wake_ctx;
    /* A stop_sync of the head leaves its entry to this timer of the heap's
     * own, Deleted, for the next add to overwrite (lock; Removed when free). */
    pt_timer standin;
};

/* A P's empty timer heap. wake(ctx, when), if not NULL, is called without
 * the lock when a start or modify makes `when` the earliest time of ts
 * (Go's wakeNetPoller): the place to break a sleeping poller. 0; -EINVAL
 * for NULL, or for a heap at an address a timer cannot name in 48 bits
 * (only with tagged pointers, or addresses above 2^48 asked for on
 * purpose): that heap is left uninitialised, and every call on it is then
 * -EINVAL too. */
PT_API int pt_timers_init(pt_timers *ts, pt_wake_func wake, void *ctx);

/* Turns on a staging ring in front of ts's heap, for timers that are
 * mostly stopped long before they are due (RPC timeouts). A timer armed at
 * least one `slot` after the last check's now (slot rounded up to a power
 * of two, at least 1 us), and within 64 slots of the ring's start, is not
 * pushed onto the heap: it is appended to an unsorted array, one per slot
 * of time, and enters the heap only when its slot begins (the heap's next
 * time, pt_timers_next, is then that slot's start). The ring starts at the
 * first check that reads the clock. On a staged heap pt_timer_stop
 * unlinks the timer itself when the heap's lock is free (a try-lock: stop
 * still never waits) and the timer is not the heap's head: O(1) from the
 * ring, O(log n) from the heap; the timer is then Removed, its memory
 * reusable at once. So a timer stopped long before its slot begins never
 * touches the heap. Timers further out or due sooner go to the heap, and
 * a stop that finds the lock busy is lazy, as without the ring. Call it
 * on an empty heap, before other threads use it. 0; -EINVAL (a bad heap, or
 * slot <= 0 or over 2^40 ns); -EBUSY (ts holds timers, or is staged
 * already); -ENOMEM. */
PT_API int pt_timers_set_staging(pt_timers *ts, pt_nanos slot);

/* A slack for every timer in ts, as Linux's per-thread timer slack:
 * each may run anywhere in [when, when + slack], never before its when.
 * Timers stay keyed at their when; what changes is the time ts asks to
 * be checked by: pt_timers_next, a check's *poll_until and the wake
 * callback's `when` are the earliest when plus the slack (the earliest
 * end among the windows), and a check then runs every timer due by its
 * now. So one wake-up serves every window open by then, at no cost to
 * the heap: checks come at most one window apart. A ticker's ticks stay on its phase. A timer moved
 * or re-armed onto another heap takes that heap's slack. Call it before
 * other threads use ts. 0; -EINVAL (a bad heap, slack < 0). */
PT_API int pt_timers_set_slack(pt_timers *ts, pt_nanos slack);

/* Frees the heap's storage. Stopped timers still in the heap are unlinked
 * first. 0; -EBUSY while it holds a live timer or runs a callback;
 * -EINVAL for NULL or a heap not initialised. */
PT_API int pt_timers_destroy(pt_timers *ts);

/* A new inactive timer calling f(arg, seq). */
PT_API void pt_timer_init(pt_timer *t, pt_func f, void *arg);

/* addtimer onto ts (the caller's P). period > 0 makes a ticker; when == 0
 * is due at once; when < 0 means never. A stopped timer still in a heap is
 * revived on that heap. 0; -EINVAL (NULL, period < 0, uninitialised);
 * -EBUSY (already pending); -ENOMEM. */
PT_API int pt_timer_start(pt_timers *ts, pt_timer *t, pt_nanos when, pt_nanos period);

/* deltimer. Lazy: the timer may stay in its heap as Deleted (on a staged
 * heap, see pt_timers_set_staging, it is unlinked at once, Removed, when
 * the heap's lock is free and it is not the head). 1 if this call
 * stopped a pending timer, 0 if it had already run or been stopped;
 * -EINVAL for NULL or an uninitialised timer. */
PT_API int pt_timer_stop(pt_timer *t);

/* resettimer: re-arm at `when` with the same period, f, arg and seq. A timer
 * no longer in a heap goes onto ts. 1 if it was pending, 0 if not;
 * -EINVAL, -ENOMEM. */
PT_API int pt_timer_reset(pt_timers *ts, pt_timer *t, pt_nanos when);

/* modtimer: re-arm with new when, period, f, arg and seq. As reset. */
PT_API int pt_timer_modify(pt_timers *ts, pt_timer *t, pt_nanos when, pt_nanos period,
                           pt_func f, void *arg, uintptr_t seq);

/* Stop; then unlink t from any heap and wait until no callback of t runs
 * (not counting the caller's own, when called from t's callback). A timer
 * re-armed meanwhile (by its callback, say) is stopped again. On return t
 * may be freed. The head of a plain heap leaves its entry, not itself, to
 * the heap's own stand-in, which the next arm overwrites without a sift;
 * until then pt_timers_next may still name its time. 1 if it stopped a
 * pending timer, else 0; -EINVAL. */
PT_API int pt_timer_stop_sync(pt_timer *t);

/* The current status (PT_TIMER_NOSTATUS for NULL). */
PT_API enum pt_timer_status pt_timer_status(const pt_timer *t);

/* Whether a callback of t runs now, on any thread (the caller's own
 * included); false for NULL. A false answer comes after everything the
 * callbacks that ended did (acquire). So a pt_timer_stop that returned 1
 * followed by false here means: nothing of t runs, or can start before t
 * is armed again -- bRPC's unschedule answer, without the wait of
 * pt_timer_stop_sync (t stays in its heap, so it may not be freed). A
 * callback that stop_sync'd its own timer no longer counts: it said it
 * is done with t. */
PT_API bool pt_timer_running(const pt_timer *t);

/* checkTimers: run every timer of ts due at `now` (0: read the clock),
 * each callback with the lock released. `owner` is true when the caller is
 * the P that owns ts: only the owner clears out deleted timers (past a
 * quarter of the heap, at most 1024 entries a call; all at once past half,
 * as Go does at a quarter). Stores the
 * next `when` (0: none) in *poll_until if not NULL. Returns the number of
 * timers run, or -EINVAL. When nothing is due this is two atomic loads. */
PT_API int pt_timers_check(pt_timers *ts, pt_nanos now, bool owner, pt_nanos *poll_until);

/* From inside a callback that pt_timers_check started on this thread (the
 * innermost one, if callbacks nest): in *when the time this firing is
 * for, and in *now the time of the check that found it due. A ticker's
 * firings are for its first when + k*period; a check a period or more
 * late fires once, for the earliest tick it owes, and skips the rest
 * (the next is the first after *now). *now - *when is how late the check
 * came (what Go 1.23 hands its timer functions as delay). 0; -ENOENT
 * outside a callback; -EINVAL if a pointer is NULL. */
PT_API int pt_timers_firing(pt_nanos *when, pt_nanos *now);

/* nobarrierWakeTime: the earliest of timer0_when and modified_earliest,
 * read without the lock; 0 if none. */
PT_API pt_nanos pt_timers_next(const pt_timers *ts);

/* moveTimers: every live timer of src goes onto dst; stopped ones are
 * dropped (Removed). Safe while other threads stop or modify them. dst's
 * wake runs if it gained an earlier timer. Returns 0, or -EINVAL, or
 * -ENOMEM with every timer left on src (callers may ignore it, as with
 * Go's void moveTimers, when they know dst has room). */
PT_API int pt_timers_move(pt_timers *dst, pt_timers *src);

/* Timers in the heap, stopped ones still waiting to be cleaned included
 * (not the entry a stop_sync of the head leaves to the heap's stand-in). */
PT_API size_t pt_timers_len(const pt_timers *ts);
/* Of those, the stopped (Deleted) ones: exact when nobody is stopping or
 * reviving a timer of ts; a statistic otherwise. 0 for a bad ts. */
PT_API uint32_t pt_timers_deleted(const pt_timers *ts);

/* Checks, under the lock, the heap order, every entry's back-pointers, key
 * and status, timer0_when, modified_earliest and the counters. For tests
 * and stress harnesses. Pass quiescent = true when no stop, reset or modify
 * can be in flight on ts's timers: then the deleted count must be exact;
 * otherwise only its bounds are checked. 0 if consistent, -EUCLEAN if not
 * (pt_timers_verify_report() says what is wrong), -EINVAL for a bad heap. */
PT_API int pt_timers_verify(pt_timers *ts, bool quiescent);

/* The first inconsistency the calling thread's last pt_timers_verify()
 * found, as one line; "" if it found none. */
PT_API const char *pt_timers_verify_report(void);

#ifdef __cplusplus
}
#endif

#endif
