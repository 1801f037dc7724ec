/* ptimer/pwheel.h: per-processor hierarchical timing wheels, the third
 * timer family beside the per-P heaps (ptimer.h) and the TimerThread's
 * buckets (timerthread.h). The shape of Linux's per-CPU timer wheel and of
 * tokio's wheel: levels of 64 slots, arm and cancel in O(1), far timers
 * moved down a level at a time ("cascading") as their time approaches.
 *
 * The wheel. PT_WHEEL_LEVELS levels of 64 slots. A slot of level 0 is one
 * tick wide (16.384 us by default, a power of two chosen at init), a slot
 * of level L is 64^L ticks wide, so level 0 spans about 1 ms, level 1
 * 67 ms, level 2 4.3 s, level 3 4.6 min, ... and eight levels cover 146
 * years ahead. A timer is filed by its tick at the lowest level whose
 * current 64-slot rotation contains it; when a slot of level L >= 1 comes
 * due its timers are re-filed by their exact time one or more levels down
 * (a timer moves at most once per level). Beyond the top level's rotation
 * a timer waits in a list of its own until the rotation turns.
 *
 * Precision. Unlike Linux (which rounds a far timer up to its level's
 * granularity, firing up to 1/8 of its delay late, to avoid cascades), a
 * pt_wheel never rounds: level 0 keeps each timer's exact `when` and a
 * check runs only those with when <= now, so a timer never fires early,
 * and pt_wheel_next() reports the exact earliest time when that timer is
 * on level 0 (it scans that one slot), or the start of the earliest slot
 * of a higher level (a lower bound: a poller woken there finds the slot
 * cascaded and sleeps again until the exact time). The tick therefore
 * sets no lateness: it sets how many timers share a level-0 slot (what
 * next() scans) and how often far timers cascade.
 *
 * Threads. One lock per wheel (a 4-byte futex mutex, uncontended for the
 * owner: arm and cancel are one lock/unlock pair each) protects its slots
 * and every field of the timers it holds. A timer names its wheel in one
 * atomic pointer, set while it is pending or its callback runs and NULL
 * while idle; any thread locks the wheel the pointer names and checks it
 * again under the lock (Linux's lock_timer_base), so start, stop, reset,
 * modify and stop_sync are safe from any thread, on any timer, at any
 * time. An idle timer is claimed by the wheel passed to start/reset/modify
 * with one CAS of that pointer under that wheel's lock. A pending timer
 * stays on its wheel when re-armed, and so does a timer whose callback is
 * running (as Linux does, so that stop_sync knows which wheel to watch).
 *
 * Statuses (pt_wheel_timer_status), every change made under the lock of
 * the wheel the timer names:
 *  start, reset, modify  Idle -> Pending (filed on the wheel passed)
 *                        Running -> Pending (filed on the wheel running it)
 *                        Pending -> Pending (re-filed: reset, modify;
 *                                   start returns -EBUSY)
 *  stop                  Pending -> Idle (unlinked at once: no lazy state)
 *  check, due one-shot   Pending -> Running (callback) -> Idle
 *  check, due ticker     Pending -> Pending (re-filed at its next tick
 *                                   before the callback runs)
 *  move                  Pending -> Pending (on dst)
 * A timer in a slot whose status is not Pending, or that names another
 * wheel, is corruption: the library aborts, naming the timer, its status,
 * its wheel and the operation. Nothing else in this part aborts or prints.
 *
 * Lifetime: a timer may be freed once pt_wheel_timer_stop_sync() returned
 * (or before its first start); stop_sync may be called from the timer's
 * own callback, which may then free it. A wheel may be destroyed when it
 * holds no pending timer, runs no callback, and no thread is inside a call
 * on it or on a timer it holds; pt_wheel_destroy() refuses (-EBUSY) the
 * first two. Nothing here allocates: wheels and timers are caller memory.
 *
 * Callbacks run on the thread that calls pt_wheel_check(), one at a time
 * per wheel, with the lock released, and may call any function here. */
#ifndef PTIMER_PWHEEL_H
#define PTIMER_PWHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/ptimer.h" /* pt_func, pt_wake_func, PT_ATOMIC, PT_ALIGN8 */

#ifdef __cplusplus
extern "C" {
#endif

#define PT_WHEEL_LEVELS 8
#define PT_WHEEL_SLOTS 64
/* The default level-0 tick, 2^14 ns = 16.384 us: with exact firing on
 * level 0 the tick costs no precision, and at this width a level-0 slot
 * holds few timers even at a million arms a second, while level 0 still
 * spans a millisecond (most RPC-style cancels happen before a cascade). */
#define PT_WHEEL_DEFAULT_TICK ((pt_nanos)1 << 14)

enum pt_wheel_timer_status {
    PT_WHEEL_IDLE,    /* never started, stopped, or a one-shot that ran */
    PT_WHEEL_PENDING, /* filed on a wheel */
    PT_WHEEL_RUNNING, /* a one-shot whose callback runs now, not re-armed */
};

typedef struct pt_wheel pt_wheel;

/* A doubly linked list node; a slot's head is one too. Private. */
struct pt__wlink {
    struct pt__wlink *next, *prev;
};

/* One timer (72 bytes on 64-bit targets). Embeddable; every field is
 * private, guarded by the lock of the wheel `wheel` names. */
typedef struct pt_wheel_timer {
    struct pt__wlink link;       /* in a slot, the due list, the far or never list */
    PT_ATOMIC(pt_wheel *) wheel; /* NULL while idle */
    pt_nanos when;               /* the exact time asked for */
    pt_nanos period;             /* > 0: a ticker */
    pt_func f;
    void *arg;
    uintptr_t seq;
    PT_ATOMIC(uint32_t) status; /* enum pt_wheel_timer_status; written under the lock */
    uint16_t where;             /* which list holds it (pwheel/levels.h) */
    uint16_t check;             /* set by init: a zeroed or garbage timer is refused */
} pt_wheel_timer;

/* One P's wheel (about 8.4 KiB: the 512 slot heads). Embeddable; every
 * field is private. */
struct pt_wheel {
    PT_ATOMIC(uint32_t) lock; /* pt__lock: guards everything below but `next`, `len` */
    uint32_t magic;           /* set by init, cleared by destroy */
    uint32_t shift;           /* tick = 2^shift ns */
    uint32_t sync_waiters;    /* stop_sync callers waiting for a callback to end */
    pt_nanos slack;           /* pt_wheel_set_slack's; set before the wheel is shared */
    /* Ticks before `elapsed` have been looked at: every timer filed has
     * its tick at or after it. */
    uint64_t elapsed;
    /* A lower bound of the earliest pending time, 0 if none: lowered by
     * arms under the lock, made exact again by checks; stops leave it
     * (a poller woken early finds nothing and sleeps again). Read anywhere. */
    PT_ATOMIC(pt_nanos) next PT_ALIGN8;
    PT_ATOMIC(uint32_t) len;            /* pending timers, for readers without the lock */
    PT_ATOMIC(uint32_t) run_done;       /* bumped when a callback ends: stop_sync's futex */
    pt_wheel_timer *running;            /* the timer whose callback runs now, if not released */
    uint32_t busy;                      /* a check is running callbacks (one at a time per wheel) */
    uint64_t occupied[PT_WHEEL_LEVELS]; /* bit s: slot s of that level is non-empty */
    struct pt__wlink due;               /* collected by a check, not yet run */
    struct pt__wlink far;               /* beyond the top level's current rotation */
    struct pt__wlink never;             /* when = never (pending, never due) */
    struct pt__wlink slot[PT_WHEEL_LEVELS * PT_WHEEL_SLOTS];
    pt_wake_func wake;
    void *wake_ctx;
};

/* An empty wheel. tick: the level-0 slot width in ns, a power of two from
 * 2^10 (1 us) to 2^20 (1 ms); 0 takes PT_WHEEL_DEFAULT_TICK. wake(ctx,
 * when), if not NULL, is called without the lock when an arm (start,
 * reset, modify, move) makes `when` the earliest time of w. 0; -EINVAL
 * for NULL or a bad tick (w is then left as it was). */
PT_API int pt_wheel_init(pt_wheel *w, pt_nanos tick, pt_wake_func wake, void *ctx);

/* 0; -EBUSY while it holds a pending timer or runs a callback; -EINVAL
 * for NULL or a wheel not initialised (or destroyed). */
PT_API int pt_wheel_destroy(pt_wheel *w);

/* A slack for every timer on w, as pt_timers_set_slack: each may run
 * anywhere in [when, when + slack]. Timers are filed by their when;
 * pt_wheel_next, a check's *poll_until and the wake callback's time are
 * the wheel's next bound plus the slack, and a check advances over every
 * slot due by its now, so one advance serves every window open by then.
 * 0 (the default): no window. 0; -EINVAL (a bad wheel, slack < 0). */
PT_API int pt_wheel_set_slack(pt_wheel *w, pt_nanos slack);

/* A new idle timer calling f(arg, seq). */
PT_API void pt_wheel_timer_init(pt_wheel_timer *t, pt_func f, void *arg);

/* Arm t on w (the caller's P; a timer whose callback runs stays on the
 * wheel running it). period > 0 makes a ticker; when == 0 is due at once;
 * when < 0 means never. 0; -EINVAL (NULL, uninitialised, period < 0);
 * -EBUSY (already pending). */
PT_API int pt_wheel_timer_start(pt_wheel *w, pt_wheel_timer *t, pt_nanos when, pt_nanos period);

/* Unlink t at once. 1 if it was pending, 0 if not; -EINVAL. */
PT_API int pt_wheel_timer_stop(pt_wheel_timer *t);

/* Re-arm at `when` with the same period, f, arg and seq; an idle timer
 * goes onto w, a pending one stays on its wheel. 1 if it was pending, 0
 * if not; -EINVAL. */
PT_API int pt_wheel_timer_reset(pt_wheel *w, pt_wheel_timer *t, pt_nanos when);

/* As reset, with a new period, f, arg and seq (Go's modtimer). */
PT_API int pt_wheel_timer_modify(pt_wheel *w, pt_wheel_timer *t, pt_nanos when, pt_nanos period,
                                 pt_func f, void *arg, uintptr_t seq);

/* Stop, then wait until no callback of t runs (not counting the caller's
 * own, from t's callback); a timer re-armed meanwhile is stopped again.
 * On return t may be freed. 1 if it stopped a pending arming (the one
 * it found, or one made while it waited), else 0; -EINVAL. */
PT_API int pt_wheel_timer_stop_sync(pt_wheel_timer *t);

/* The current status (PT_WHEEL_IDLE for NULL). */
PT_API enum pt_wheel_timer_status pt_wheel_timer_status(const pt_wheel_timer *t);

/* Run every timer of w due at `now` (0 or negative: read the clock),
 * each callback with the lock released; any thread may call it. Timers
 * made due by the callbacks themselves run on the next call (poll_until
 * then says a time not after now). Stores the next time to look (a lower bound of the
 * earliest pending time; 0: none) in *poll_until if not NULL. Returns the
 * number of callbacks run, or -EINVAL. When nothing is due this is one
 * atomic load. A check that meets another thread's callbacks running on
 * w leaves what it collected for that thread to run. */
PT_API int pt_wheel_check(pt_wheel *w, pt_nanos now, pt_nanos *poll_until);

/* From inside a callback that pt_wheel_check started on this thread (the
 * innermost): the time this firing is for and the check's now, as
 * pt_timers_firing. 0; -ENOENT outside a callback; -EINVAL (NULL). */
PT_API int pt_wheel_firing(pt_nanos *when, pt_nanos *now);

/* The lower bound described at `next` above, read without the lock; 0 if
 * nothing is pending. */
PT_API pt_nanos pt_wheel_next(const pt_wheel *w);

/* Every pending timer of src goes onto dst (a P going away), O(n). 0;
 * -EINVAL (NULL, uninitialised, dst == src); -EBUSY while src runs a
 * callback (nothing moved). dst's wake runs if it gained an earlier timer. */
PT_API int pt_wheel_move(pt_wheel *dst, pt_wheel *src);

/* Pending timers of w (never ones included); 0 for a bad w. */
PT_API size_t pt_wheel_len(const pt_wheel *w);

/* Under the lock: every slot's timers (status, wheel, position against
 * `elapsed`: each is filed where its time belongs), the occupancy bits,
 * the count and the lower bound. Every one is exact under the lock, as
 * the wheel files a timer when it is armed, so `quiescent` (no arm or
 * stop in flight) checks nothing more; it is there for the one shape of
 * the families' checks (pt_timers_verify, pt_lheap_verify). For tests
 * and stress harnesses. 0 if consistent, -EUCLEAN if not
 * (pt_wheel_verify_report() says what is wrong), -EINVAL for a bad w. */
PT_API int pt_wheel_verify(pt_wheel *w, bool quiescent);

/* The calling thread's last pt_wheel_verify() finding, one line; "" if none. */
PT_API const char *pt_wheel_verify_report(void);

#ifdef __cplusplus
}
#endif

#endif
