/* pt_lheap: Go 1.23's per-P timers, the fourth timer family.
 *
 * Go 1.23 replaced the design the per-P heaps (ptimer.h) port -- a ten-state
 * status machine moved by CAS, Go 1.14 to 1.22 -- with a lock per timer and
 * three state bits (runtime/time.go since Go 1.23). This is that design, in
 * C, with the operations of the other families so that one program drives
 * all four:
 *
 *  - every field of a timer is guarded by the timer's own lock; its heap's
 *    lock guards the heap, and is taken before a timer's, never after;
 *  - a heap holds {when, timer} entries (the heap's copy of `when`, so that
 *    sifting never touches a timer), and a timer is in at most one heap;
 *  - stop and modify change only the timer: a timer stopped while in a heap
 *    is marked a zombie and stays there, one modified is marked modified
 *    and keeps its old place; the heap catches up when such a timer
 *    reaches its top (every add cleans the top first), when the earliest
 *    modified time comes due (adjust: a scan that locks only the marked
 *    timers... and every timer it passes, as Go's), and when zombies pass a
 *    quarter of the heap (the same scan, forced);
 *  - a check runs due callbacks with no lock held.
 *
 * What C adds to Go's design, which a collector makes unnecessary there:
 * stop_sync, after which a timer may be freed: it stops the timer, waits
 * out its running callbacks (not the caller's own, from its callback) and
 * takes it out of its heap at once (the heap tracks each timer's index for
 * that). A timer re-armed meanwhile is stopped again.
 *
 * Statuses (pt_lheap_timer_status), read under the timer's lock:
 *  start, reset, modify  Idle or Running -> Pending (start: -EBUSY if Pending)
 *  stop                  Pending -> Idle (a zombie in its heap, if in one)
 *  check, due one-shot   Pending -> Running (callback) -> Idle
 *  check, due ticker     Pending -> Pending (re-keyed before the callback)
 * Corruption (a heap entry whose timer names another heap, a negative
 * zombie count) aborts, naming the timer, its state, its heap and the
 * operation; nothing else here prints.
 *
 * Lifetime: a timer may be freed once stop_sync returned (or before its
 * first arm); a heap may be destroyed once it holds no timer and no thread
 * is inside a call on it or on its timers (pt_lheap_destroy refuses while
 * it holds one). Nothing is allocated but each heap's entry array. */
#ifndef PTIMER_LHEAP_H
#define PTIMER_LHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/ptimer.h" /* pt_func, pt_wake_func, pt__heap4, PT_ATOMIC, PT_ALIGN8 */

#ifdef __cplusplus
extern "C" {
#endif

enum pt_lheap_timer_status {
    PT_LHEAP_IDLE,    /* never armed, stopped, or a one-shot that ran */
    PT_LHEAP_PENDING, /* armed: in a heap, or on its way into one */
    PT_LHEAP_RUNNING, /* a one-shot whose callback runs now, not re-armed */
};

typedef struct pt_lheap pt_lheap;

/* One timer (96 bytes on 64-bit targets). Embeddable; every field is
 * private. */
typedef struct pt_lheap_timer {
    PT_ATOMIC(uint32_t) lock;  /* pt__lock: Go 1.23's t.mu, guards all below */
    PT_ATOMIC(uint8_t) astate; /* `state` as of the last unlock: the heap's lock-free looks */
    uint8_t state;             /* heaped, modified, zombie bits (lheap/lheap.c) */
    uint16_t check;            /* set by init: a zeroed or garbage timer is refused */
    uint32_t index;            /* its entry's position in ts's heap (both locks) */
    pt_nanos when;             /* 0: not armed */
    pt_nanos when_heap;        /* the heap entry's copy (both locks to write) */
    pt_nanos period;           /* > 0: a ticker */
    pt_func f;
    void *arg;
    uintptr_t seq;
    pt_lheap *ts;                /* the heap holding it; NULL: none (both locks to write) */
    pt_lheap *run_heap;          /* the heap whose check ran its last callback */
    uint64_t arm_check;          /* the check whose callback armed it last; 0: none */
    PT_ATOMIC(uint32_t) running; /* its callbacks running now */
} pt_lheap_timer;

/* One P's timers. Embeddable; every field is private. */
struct pt_lheap {
    PT_ATOMIC(uint32_t) lock;     /* pt__lock: the heap; taken before a timer's */
    uint32_t magic;               /* set by init, cleared by destroy */
    pt_nanos slack;               /* pt_lheap_set_slack's; set before the heap is shared */
    pt__heap4 heap;               /* {when_heap, timer}, each timer's index tracked */
    PT_ATOMIC(uint32_t) len;      /* entries, zombies included, as of the last unlock */
    PT_ATOMIC(int32_t) zombies;   /* entries whose timer was stopped */
    PT_ATOMIC(uint32_t) run_done; /* bumped when a callback ends while stop_syncs wait */
    PT_ATOMIC(uint32_t) sync_waiters;
    /* The top entry's time (0: empty), and a lower bound of the `when`
     * of the timers marked modified (0: none); next is their minimum. */
    PT_ATOMIC(pt_nanos) min_when_heap PT_ALIGN8;
    PT_ATOMIC(pt_nanos) min_when_modified PT_ALIGN8;
    pt_wake_func wake;
    void *wake_ctx;
};

/* An empty heap. wake(ctx, when), if not NULL, is called with no lock held
 * when an arm makes `when` the earliest time it must look at. 0; -EINVAL. */
PT_API int pt_lheap_init(pt_lheap *h, pt_wake_func wake, void *ctx);

/* A slack for every timer in h, as pt_timers_set_slack: each may run
 * anywhere in [when, when + slack]; pt_lheap_next, a check's *poll_until
 * and the wake callback's time are the earliest when plus the slack, and
 * a check runs every timer due by its now. 0 (the default): no window.
 * 0; -EINVAL (a bad heap, slack < 0). */
PT_API int pt_lheap_set_slack(pt_lheap *h, pt_nanos slack);

/* 0 (and its memory is given back); -EBUSY while it holds a timer, a
 * zombie included (a check or move that empties it ends that); -EINVAL
 * for NULL or a heap not initialised (or destroyed). */
PT_API int pt_lheap_destroy(pt_lheap *h);

/* A new idle timer calling f(arg, seq). */
PT_API void pt_lheap_timer_init(pt_lheap_timer *t, pt_func f, void *arg);

/* Arm t to fire at `when` (0: at once; < 0: never), every `period` after
 * if period > 0, going onto h if it is in no heap (a timer in a heap stays
 * there, as in Go). 0; -EINVAL (NULL, uninitialised, period < 0); -EBUSY
 * (already pending); -ENOMEM (no room in h: t stays idle). */
PT_API int pt_lheap_timer_start(pt_lheap *h, pt_lheap_timer *t, pt_nanos when, pt_nanos period);

/* Go's t.stop(): 1 if t was pending, 0 if not; -EINVAL. */
PT_API int pt_lheap_timer_stop(pt_lheap_timer *t);

/* Re-arm with the same period, f, arg and seq. 1 if t was pending, 0 if
 * not; -EINVAL; -ENOMEM (t is then idle). */
PT_API int pt_lheap_timer_reset(pt_lheap *h, pt_lheap_timer *t, pt_nanos when);

/* As reset, with a new period, f, arg and seq (Go's t.modify). */
PT_API int pt_lheap_timer_modify(pt_lheap *h, pt_lheap_timer *t, pt_nanos when, pt_nanos period,
                                 pt_func f, void *arg, uintptr_t seq);

/* Stop, wait until no callback of t runs (not counting the caller's own,
 * from t's callback), and take t out of its heap; a timer re-armed
 * meanwhile is stopped again. On return t may be freed. 1 if it stopped a
 * pending arming (the one it found, or one made while it waited), else
 * 0; -EINVAL. */
PT_API int pt_lheap_timer_stop_sync(pt_lheap_timer *t);

/* The current status (PT_LHEAP_IDLE for NULL). */
PT_API enum pt_lheap_timer_status pt_lheap_timer_status(const pt_lheap_timer *t);

/* Whether a callback of t runs now, on any thread (the caller's own
 * included); false for NULL or an uninitialised timer. A false answer
 * comes after everything the callbacks that ended did (acquire), so a
 * stop that returned 1 followed by false here means nothing of t runs or
 * can start before t is armed again (pt_timer_running's answer). A
 * callback that stop_sync'd its own timer no longer counts; a timer a
 * check set aside (re-armed at or before that check's `now` by its own
 * callback) counts until it is back in its heap. */
PT_API bool pt_lheap_timer_running(pt_lheap_timer *t);

/* Whether a heap holds an entry for t: a stopped timer keeps its entry (a
 * zombie) until its heap looks. An idle timer that no heap holds, and
 * whose callback does not run, may be freed without stop_sync (a pool of
 * timers reuses them so). false for NULL or an uninitialised timer. */
PT_API bool pt_lheap_timer_in_heap(pt_lheap_timer *t);

/* Go's ts.check: run every timer of h due at `now` (0 or negative: read
 * the clock), each callback with no lock held; any thread may call it.
 * Tidies h first when its earliest modified time has come or zombies are
 * over a quarter of it. Stores the next time to look (0: none) in
 * *poll_until if not NULL. Returns the number of callbacks run, or
 * -EINVAL. A timer armed by one of this call's callbacks at or before now
 * is set aside and runs on the next call (poll_until then says a time not
 * after now), so a callback that re-arms its timer at `now` cannot hold
 * the check forever, and the due timers behind it still run.
 * With nothing due and little to tidy it is three atomic loads. */
PT_API int pt_lheap_check(pt_lheap *h, pt_nanos now, pt_nanos *poll_until);

/* From inside a callback that pt_lheap_check started on this thread (the
 * innermost): the time this firing is for and the check's now, as
 * pt_timers_firing. 0; -ENOENT outside a callback; -EINVAL (NULL). */
PT_API int pt_lheap_firing(pt_nanos *when, pt_nanos *now);

/* The next time to look, read without the lock; 0 if nothing is held. */
PT_API pt_nanos pt_lheap_next(const pt_lheap *h);

/* Every timer of src goes onto dst (a P going away), zombies dropped and
 * modified times applied on the way, O(n). 0; -EINVAL (NULL,
 * uninitialised, dst == src); -ENOMEM (nothing moved). */
PT_API int pt_lheap_move(pt_lheap *dst, pt_lheap *src);

/* Entries of h, zombies included (what it holds in memory); 0 for a bad h. */
PT_API size_t pt_lheap_len(const pt_lheap *h);

/* Zombies of h (stopped timers still holding an entry). */
PT_API size_t pt_lheap_zombies(const pt_lheap *h);

/* Checks h's invariants under its lock (and each timer's): the heap
 * order, every entry's timer, status and key (an entry not marked
 * modified must be keyed at its timer's time), the zombies' marks and the
 * bound the waker reads. With `quiescent` (no other thread is in a call
 * on h or its timers) the zombie count is checked too: a stop changes it
 * under the timer's lock alone. 0 if consistent, -EUCLEAN if not
 * (pt_lheap_verify_report() says what is wrong), -EINVAL for a bad h.
 * For tests, fuzzers and stress harnesses; the same shape as
 * pt_timers_verify and pt_wheel_verify. */
PT_API int pt_lheap_verify(pt_lheap *h, bool quiescent);

/* The first inconsistency the calling thread's last pt_lheap_verify()
 * found, as one line; "" if it found none. */
PT_API const char *pt_lheap_verify_report(void);

#ifdef __cplusplus
}
#endif

#endif
