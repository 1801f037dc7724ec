/* One P's heap as its lock holder edits it: the primitives timers.c's
 * owner operations (clean, run, sweep, move) are built of, and the push an
 * arm makes (timer.c). In a header so that the arm's push inlines: it is
 * on every arm of a timer in no heap, where a call across files is a
 * visible share of an arm + stop pair. Everything
 * but the lock-free readers at the top needs ts->lock held. */
#ifndef PTIMER_HEAP_LOCKED_H
#define PTIMER_HEAP_LOCKED_H

#include "base/heap4.h"
#include "pheap/stage.h"
#include "pheap/status.h"

/* The earlier of a head time and ts's modified_earliest (0: neither). */
static inline pt_nanos pt__next_time_with(const pt_timers *ts, pt_nanos head)
{
    pt_nanos adj =
        atomic_load_explicit(&((pt_timers *)ts)->modified_earliest, memory_order_acquire);
    return head == 0 || (adj != 0 && adj < head) ? adj : head;
}

/* Earliest time of interest, without the lock: nobarrierWakeTime. */
static inline pt_nanos pt__timers_next_time(const pt_timers *ts)
{
    return pt__next_time_with(
        ts, atomic_load_explicit(&((pt_timers *)ts)->timer0_when, memory_order_acquire));
}

/* Room for one more push, besides the room every staged timer keeps
 * (stage.h): 0 or -ENOMEM. Inline: an arm asks every time, and the answer
 * is almost always yes. */
static inline int pt__timers_reserve_locked(pt_timers *ts)
{
    return ts->heap.cap - ts->heap.len > ts->staged ? 0
                                                    : pt__heap4_reserve(&ts->heap, ts->staged + 1);
}

/* Stopped timers in ts's heap (see pt_timers in ptimer.h). cleaned is
 * loaded first, with acquire: every clean it counts came after its stop's
 * increment, which the second load then sees, so the difference never
 * goes below zero. */
static inline uint32_t deleted_count(const pt_timers *ts)
{
    uint32_t cleaned = atomic_load_explicit(&ts->deleted_cleaned, memory_order_acquire);
    return atomic_load_explicit(&ts->deleted_timers, memory_order_relaxed) - cleaned;
}

/* Count n more cleaned (lock held: the only writers hold it, so a load and
 * a release store do, with no locked instruction). */
static inline void count_cleaned(pt_timers *ts, uint32_t n)
{
    uint32_t c = atomic_load_explicit(&ts->deleted_cleaned, memory_order_relaxed);
    atomic_store_explicit(&ts->deleted_cleaned, c + n, memory_order_release);
}

/* Publish the head's key for lock-free readers; skip the store when it is
 * unchanged so pollers' cache lines stay clean. */
static inline void update_timer0(pt_timers *ts)
{
    pt_nanos top = pt__heap4_top_when(&ts->heap);
    /* A staged heap needs its check by the time its ring's earliest slot
     * begins, to move that slot into the heap (stage.h). */
    if (ts->stage_next && (top == 0 || ts->stage_next < top))
        top = ts->stage_next;
    if (atomic_load_explicit(&ts->timer0_when, memory_order_relaxed) != top)
        atomic_store_explicit(&ts->timer0_when, top, memory_order_release);
}

static inline void update_len(pt_timers *ts)
{
    /* A heap left holding only the entry stop_sync gave its stand-in
     * drops it (rows "clean"): an empty heap names no time. */
    if (__builtin_expect(ts->heap.len == 1, 0) && ts->heap.v[0].item == &ts->standin &&
        ts->staged == 0) {
        ts->heap.len = 0;
        count_cleaned(ts, 1);
        atomic_store_explicit(&ts->standin.state, st_pack(NULL, PT_TIMER_REMOVED),
                              memory_order_release);
    }
    atomic_store_explicit(&ts->num_timers, ts->heap.len + ts->staged, memory_order_relaxed);
    /* An empty heap has no modified timers (Go issue 51654). */
    if (ts->heap.len + ts->staged == 0)
        atomic_store_explicit(&ts->modified_earliest, 0, memory_order_relaxed);
    update_timer0(ts);
}

/* Take t out of ts's heap (it must be there: else corruption, named by op);
 * keeps the counters and timer0_when. The caller's transition out of the
 * transient status it holds on t clears t's heap (st_set_in). With `by`
 * (t must then be the head), by's entry {by->when, by} takes t's place
 * and by is claimed for ts: see pt__timers_add_locked. */
static inline void remove_locked(pt_timers *ts, pt_timer *t, pt_timer *by, const char *op)
{
    uint32_t i = t->heap_index;
    if (__builtin_expect(pt__staged_index(i), 0)) {
        /* Out of line: every unlink of a plain heap passes here, and the
         * ring's code inlined would keep retire_deleted, which an rpc arm
         * calls, from inlining (54 instructions more an arm + stop). */
        pt__stage_unlink(ts, t, by, op);
        return;
    }
    if (i >= ts->heap.len || ts->heap.v[i].item != t || (by && i != 0))
        pt__bad_timer(t, op);
    if (by) {
        /* The pop this stands for would have emptied a one-entry heap, and
         * an empty heap has no modified timers (update_len). Safe to clear
         * now that t is Removing: no timer here can be modified. */
        if (ts->heap.len + ts->staged == 1)
            atomic_store_explicit(&ts->modified_earliest, 0, memory_order_relaxed);
        st_claim(by, ts);
        pt__heap4_replace_top(&ts->heap, by->when, by);
    } else {
        pt__heap4_remove(&ts->heap, i);
    }
    update_len(ts);
}

/* Deleted -> Removing -> Removed, t's entry removed or replaced by `by`;
 * w is t's word as loaded (status Deleted). False if it changed since. */
static inline bool retire_deleted(pt_timers *ts, pt_timer *t, uint64_t w, pt_timer *by,
                                  const char *op)
{
    if (!st_cas(t, w, PT_TIMER_REMOVING))
        return false;
    remove_locked(ts, t, by, op);
    count_cleaned(ts, 1);
    st_set_in(t, PT_TIMER_REMOVING, PT_TIMER_REMOVED, NULL, op);
    return true;
}

/* ModifiedXX -> Moving -> Waiting: give the entry its new key. w is t's
 * word as loaded (status ModifiedXX). */
static inline bool rekey_modified(pt_timers *ts, pt_timer *t, uint64_t w, const char *op)
{
    if (!st_cas(t, w, PT_TIMER_MOVING))
        return false;
    uint32_t i = t->heap_index;
    ts->heap.v[i].when = t->when;
    pt__heap4_fix(&ts->heap, i);
    update_timer0(ts);
    st_set(t, PT_TIMER_MOVING, PT_TIMER_WAITING, op);
    return true;
}

/* A timer the head-cleaning loop would not stop at. */
static inline bool needs_clean(uint32_t s)
{
    return s == PT_TIMER_DELETED || s == PT_TIMER_MODIFIED_EARLIER || s == PT_TIMER_MODIFIED_LATER;
}

/* Go's cleantimers followed by doaddtimer. Stopped timers at the head are
 * popped and modified ones re-keyed, so the add (and the poller's
 * timer0_when) sees a head that will really fire; rows "clean". The last
 * stopped head -- the one whose successor needs no cleaning -- is not
 * popped but overwritten by t (pt__heap4_replace_top): one sift instead of
 * a pop and a push, and none at all when t is the earliest, which is the
 * common case of a timeout armed right after the last one was stopped.
 * What the heap holds afterwards is what a pop and a push would leave
 * (the same entries and counters; among equal keys the order may differ).
 * Returns what pt__timers_next_time would have read between the clean and
 * the add, for the caller's wake decision. Forced inline: GCC keeps it out
 * of line otherwise (it is inlined into three always-inline arms). */
static inline __attribute__((always_inline)) pt_nanos pt__timers_add_locked(pt_timers *ts,
                                                                           pt_timer *t)
{
    while (ts->heap.len) {
        pt_timer *h = ts->heap.v[0].item;
        uint64_t w = st_word(h);
        uint32_t s = st_status(w);
        if (s == PT_TIMER_MODIFIED_EARLIER || s == PT_TIMER_MODIFIED_LATER) {
            rekey_modified(ts, h, w, "clean");
            continue;
        }
        if (s != PT_TIMER_DELETED)
            break;
        uint32_t next = pt__heap4_second(&ts->heap);
        if (next && needs_clean(st_load(ts->heap.v[next].item))) {
            retire_deleted(ts, h, w, NULL, "clean");
            continue;
        }
        /* With no successor the pop would leave the heap empty: next time 0. */
        pt_nanos prev = next ? pt__next_time_with(ts, ts->heap.v[next].when) : 0;
        if (retire_deleted(ts, h, w, t, "clean"))
            return prev;
        /* revived meanwhile: look at it again */
    }
    pt_nanos prev = pt__timers_next_time(ts);
    st_claim(t, ts);
    pt__heap4_push(&ts->heap, t->when, t);
    update_len(ts);
    return prev;
}

#endif
