/* Operations on one timer, callable from any thread: start, stop, modify,
 * reset, stop_sync. They change the timer's status word and leave heap
 * work to the heap's owner (timers.c), except when a timer that is in no
 * heap has to be pushed onto one. Rows refer to the table in ptimer.h. */
#include <errno.h>
#include <limits.h>

#include "pheap/heap_locked.h"

void pt_timer_init(pt_timer *t, pt_func f, void *arg)
{
    if (!t)
        return;
    atomic_init(&t->state, st_pack(NULL, PT_TIMER_NOSTATUS));
    t->heap_index = 0;
    atomic_init(&t->callbacks, 0);
    t->when = 0;
    t->period = 0;
    t->f = f;
    t->arg = arg;
    t->seq = 0;
}

/* Lower ts->modified_earliest to `when` (Go's updateTimerModifiedEarliest).
 * Done while the timer is Modifying, before its ModifiedEarlier status is
 * published, so whoever sees that status also sees this. */
static void lower_modified_earliest(pt_timers *ts, pt_nanos when)
{
    pt_nanos old = atomic_load_explicit(&ts->modified_earliest, memory_order_relaxed);
    while (old == 0 || when < old)
        if (atomic_compare_exchange_weak_explicit(&ts->modified_earliest, &old, when,
                                                  memory_order_release, memory_order_relaxed))
            break;
}

/* Row "stop". */
static const st_rows stop_rows = {
    [PT_TIMER_WAITING] = ST_TO(PT_TIMER_MODIFYING),
    [PT_TIMER_MODIFIED_EARLIER] = ST_TO(PT_TIMER_MODIFYING),
    [PT_TIMER_MODIFIED_LATER] = ST_TO(PT_TIMER_MODIFYING),
    [PT_TIMER_NOSTATUS] = ST_KEEP,
    [PT_TIMER_DELETED] = ST_KEEP,
    [PT_TIMER_REMOVING] = ST_KEEP,
    [PT_TIMER_REMOVED] = ST_KEEP,
    [PT_TIMER_RUNNING] = ST_WAIT,
    [PT_TIMER_MOVING] = ST_WAIT,
    [PT_TIMER_MODIFYING] = ST_WAIT,
};

/* deltimer. w: t's word, just loaded. Inlined: GCC kept it out of line
 * once its loop became st_step, a call on every stop. */
static inline __attribute__((always_inline)) int timer_stop(pt_timer *t, uint64_t w)
{
    if (!st_pending(st_step(t, &w, stop_rows, "stop")))
        return 0;
    /* stop: Waiting, ModifiedXX -> Modifying -> Deleted. The count goes up
     * before the Deleted status is visible, so any clean of this timer
     * (counted in deleted_cleaned) comes after it: what keeps
     * deleted_count (heap_locked.h) from going below zero. */
    atomic_fetch_add_explicit(&st_heap(w)->deleted_timers, 1, memory_order_relaxed);
    st_set(t, PT_TIMER_MODIFYING, PT_TIMER_DELETED, "stop");
    return 1;
}

/* Row "stop, eager": on a staged heap whose lock is free, the stopper
 * unlinks t itself (Waiting, ModifiedXX -> Removing -> Removed) instead of
 * leaving it Deleted for the owner. In the ring that is an O(1) swap in its
 * slot's array, so a timer stopped before its slot begins never touches
 * the heap; in the heap, any entry but the head is removed at once (the
 * O(log n) the owner's pop or sweep would pay later, now, while t's entry
 * is still warm), and the head is left to the lazy stop, whose Deleted
 * head the next arm overwrites without a sift. Three locked instructions
 * (try-lock, the status CAS, unlock) where a lazy stop and a later unlink
 * take five. The lock comes first, so nothing waits while t is claimed:
 * Removing is a lock holder's status, and whoever meets it yields until
 * the unlock, as for the owner's own cleaning. False: t was left as it
 * was, for the lazy stop. */
static __attribute__((noinline)) bool stop_eager(pt_timers *ts, pt_timer *t, uint64_t w)
{
    if (!st_pending(st_status(w)) || !pt__trylock(&ts->lock))
        return false;
    w = st_word(t); /* the word under the lock: t may have moved or changed */
    /* Its index only once the word says ts holds it: in another heap, that
     * heap's lock holder may be moving the entry (and writing the index)
     * right now. In ts, nothing but a holder of the lock we hold moves it. */
    bool done = st_heap(w) == ts && st_pending(st_status(w));
    uint32_t i = done ? t->heap_index : 0;
    done = i != 0 && st_cas(t, w, PT_TIMER_REMOVING);
    if (done) {
        if (pt__staged_index(i)) {
            pt__stage_remove(ts, t, "stop"); /* inline here: the staged stop's own path */
            update_len(ts);
        } else {
            remove_locked(ts, t, NULL, "stop");
        }
        st_set_in(t, PT_TIMER_REMOVING, PT_TIMER_REMOVED, NULL, "stop");
    }
    pt__unlock(&ts->lock);
    return done;
}

int pt_timer_stop(pt_timer *t)
{
    uint64_t w;
    if (!st_valid(t, &w))
        return -EINVAL;
    /* The heap the word names (none for a timer in no heap), read as
     * stop_sync's unlink reads it: the lifetime contract (ptimer.h) keeps
     * it valid meanwhile. Out of line past this test, so a plain heap's
     * stop pays two loads and a branch for the ring. */
    pt_timers *ts = st_heap(w);
    if (ts && ts->stage && stop_eager(ts, t, w))
        return 1;
    return timer_stop(t, w); /* w may be stale: st_step CASes from it and reloads */
}

/* What an arming keeps: start keeps f, arg and seq; reset keeps the period
 * too; modify replaces all. Kept fields are read only once the status is
 * claimed, since a concurrent modify may be writing them. */
enum arm_mode { ARM_START, ARM_RESET, ARM_MODIFY };

static void set_fields(pt_timer *t, enum arm_mode mode, pt_nanos when, pt_nanos period,
                       pt_func f, void *arg, uintptr_t seq)
{
    t->when = when;
    if (mode == ARM_RESET)
        return;
    t->period = period;
    if (mode == ARM_START)
        return;
    t->f = f;
    t->arg = arg;
    t->seq = seq;
}

/* Rows "start" and "modify, reset": a pending timer is -EBUSY to start
 * and re-armed by modify; one in no heap is pushed onto ts; a Deleted one
 * is revived in the heap that holds it. */
#define ARM_ROWS(pending)                                                                      \
    {                                                                                          \
        [PT_TIMER_WAITING] = pending, [PT_TIMER_MODIFIED_EARLIER] = pending,                   \
        [PT_TIMER_MODIFIED_LATER] = pending,                                                   \
        [PT_TIMER_NOSTATUS] = ST_TO(PT_TIMER_MODIFYING),                                       \
        [PT_TIMER_REMOVED] = ST_TO(PT_TIMER_MODIFYING),                                        \
        [PT_TIMER_DELETED] = ST_TO(PT_TIMER_MODIFYING), [PT_TIMER_RUNNING] = ST_WAIT,           \
        [PT_TIMER_MOVING] = ST_WAIT, [PT_TIMER_REMOVING] = ST_WAIT,                            \
        [PT_TIMER_MODIFYING] = ST_WAIT,                                                        \
    }
static const st_rows start_rows = ARM_ROWS(ST_KEEP);
static const st_rows arm_rows = ARM_ROWS(ST_TO(PT_TIMER_MODIFYING));

/* addtimer and modtimer in one: claim the status, set the fields, then
 * either push onto ts (the timer is in no heap) or leave the re-keying to
 * the heap that holds it. Inlined into each of its three callers, where
 * mode is a constant: what a mode keeps and its name fold away. */
static inline __attribute__((always_inline)) int
timer_arm(pt_timers *ts, pt_timer *t, uint64_t w, pt_nanos when, pt_nanos period, pt_func f,
          void *arg, uintptr_t seq, enum arm_mode mode)
{
    const char *op = mode == ARM_START ? "start" : mode == ARM_RESET ? "reset" : "modify";
    when = pt__norm_when(when);
    uint32_t s = st_step(t, &w, mode == ARM_START ? start_rows : arm_rows, op);
    bool pending = st_pending(s), in_heap = pending || s == PT_TIMER_DELETED;
    if (mode == ARM_START && pending)
        return -EBUSY;
    if (s == PT_TIMER_DELETED)
        atomic_fetch_sub_explicit(&st_heap(w)->deleted_timers, 1, memory_order_relaxed);

    if (!in_heap) {
        /* Not in any heap: push onto ts. Taking a lock while Modifying is
         * safe here: no heap holds t, so no lock holder can be waiting for
         * this Modifying to end. */
        pt__lock(&ts->lock);
        if (pt__timers_reserve_locked(ts) < 0) {
            pt__unlock(&ts->lock);
            st_set(t, PT_TIMER_MODIFYING, s, op); /* undo: nothing changed */
            return -ENOMEM;
        }
        set_fields(t, mode, when, period, f, arg, seq);
        pt_nanos prev, wake_at = when;
        if (ts->stage && pt__stage_push(ts, t)) {
            /* Staged: the heap's next time is now at most t's slot's start,
             * which is what a sleeping owner must wake for. */
            prev = pt__timers_next_time(ts);
            st_claim(t, ts);
            update_len(ts);
            wake_at = ts->stage_next;
        } else {
            prev = pt__timers_add_locked(ts, t);
        }
        pt__unlock(&ts->lock);
        st_set(t, PT_TIMER_MODIFYING, PT_TIMER_WAITING, op);
        if (ts->wake && (prev == 0 || wake_at < prev))
            ts->wake(ts->wake_ctx, pt_slack_latest(wake_at, ts->slack));
        return 0;
    }

    /* In some heap, maybe another P's: only its owner may move the entry,
     * so record the new time in t->when and let the owner re-key it. A time
     * earlier than the last one asked for is ModifiedEarlier and lowers the
     * heap's modified_earliest, which makes the owner adjust in time; see
     * pt_timers_verify for the invariant this keeps. */
    pt_timers *h = st_heap(w);
    pt_nanos prev = pt__timers_next_time(h);
    uint32_t ns = when < t->when ? PT_TIMER_MODIFIED_EARLIER : PT_TIMER_MODIFIED_LATER;
    set_fields(t, mode, when, period, f, arg, seq);
    /* Read h's wake while Modifying pins t in h: once that ends, h's owner
     * may move t away and destroy h. */
    pt_wake_func wake = NULL;
    void *wake_ctx = NULL;
    pt_nanos by = 0;
    if (ns == PT_TIMER_MODIFIED_EARLIER) {
        lower_modified_earliest(h, when);
        if (prev == 0 || when < prev) {
            wake = h->wake;
            wake_ctx = h->wake_ctx;
            by = pt_slack_latest(when, h->slack);
        }
    }
    st_set(t, PT_TIMER_MODIFYING, ns, op);
    if (wake)
        wake(wake_ctx, by);
    return pending;
}

int pt_timer_start(pt_timers *ts, pt_timer *t, pt_nanos when, pt_nanos period)
{
    uint64_t w;
    if (!pt__timers_valid(ts) || !st_valid(t, &w) || period < 0)
        return -EINVAL;
    int r = timer_arm(ts, t, w, when, period, NULL, NULL, 0, ARM_START);
    return r < 0 ? r : 0;
}

int pt_timer_modify(pt_timers *ts, pt_timer *t, pt_nanos when, pt_nanos period, pt_func f,
                    void *arg, uintptr_t seq)
{
    uint64_t w;
    if (!pt__timers_valid(ts) || !st_valid(t, &w) || period < 0)
        return -EINVAL;
    return timer_arm(ts, t, w, when, period, f, arg, seq, ARM_MODIFY);
}

int pt_timer_reset(pt_timers *ts, pt_timer *t, pt_nanos when)
{
    uint64_t w;
    if (!pt__timers_valid(ts) || !st_valid(t, &w))
        return -EINVAL;
    return timer_arm(ts, t, w, when, 0, NULL, NULL, 0, ARM_RESET);
}

/* stop_sync of the plain heap's head (lock held, t Deleted, its word w):
 * Deleted -> Removing -> Removed, its entry handed to ts's stand-in, left
 * Deleted with t's key and t's count in deleted_timers. The next add's
 * clean overwrites that entry (pt__timers_add_locked), so a timeout
 * stopped and the next one armed, the RPC pattern, costs no sift: a
 * removal would move the last entry to the top and sift it all the way
 * down, and the add would sift up to where it came from. Until then the
 * heap holds a dead head, as after a lazy stop, and drops it if it is
 * left alone (update_len). False (nothing done) if t is not the head, or
 * is the heap's only entry, or the stand-in is still in the heap. */
static bool hand_head_to_standin(pt_timers *ts, pt_timer *t, uint64_t w)
{
    pt_timer *sd = &ts->standin;
    if (t->heap_index != 0 || ts->heap.len < 2 || st_load(sd) != PT_TIMER_REMOVED)
        return false; /* (a lone entry's unlink is no sift) */
    if (!st_cas(t, w, PT_TIMER_REMOVING))
        return true; /* changed since: the caller looks again */
    if (ts->heap.v[0].item != t)
        pt__bad_timer(t, "stop_sync");
    sd->when = ts->heap.v[0].when;
    sd->heap_index = 0;
    ts->heap.v[0].item = sd;
    atomic_store_explicit(&sd->state, st_pack(ts, PT_TIMER_DELETED), memory_order_release);
    st_set_in(t, PT_TIMER_REMOVING, PT_TIMER_REMOVED, NULL, "stop_sync");
    return true;
}

/* stop_sync: Deleted -> Removing -> Removed, under the holding heap's lock.
 * The heap is re-checked under its lock: the timer may have been cleaned,
 * moved or revived since we looked. */
static void unlink_deleted(pt_timer *t)
{
    for (;;) {
        uint64_t w = st_word(t);
        pt_timers *ts = st_heap(w);
        if (st_status(w) != PT_TIMER_DELETED)
            return;
        if (!ts)
            pt__bad_timer(t, "stop_sync"); /* Deleted is always in a heap */
        pt__lock(&ts->lock);
        /* Cleaned, moved or revived since we looked? Only then leave it. */
        w = st_word(t);
        if (st_heap(w) == ts && st_status(w) == PT_TIMER_DELETED && !hand_head_to_standin(ts, t, w))
            retire_deleted(ts, t, w, NULL, "stop_sync");
        pt__unlock(&ts->lock);
    }
}

/* Sleep until at most `mine` callbacks of t are running (the caller's own). */
static void wait_callbacks(pt_timer *t, uint32_t mine)
{
    for (;;) {
        /* acquire: pairs with the release in the runner's decrement, so the
         * callback's effects are visible once we return */
        uint32_t v = atomic_load_explicit(&t->callbacks, memory_order_acquire);
        if (pt__cb_running(v) <= mine)
            return;
        if (!(v & 1) && !atomic_compare_exchange_weak_explicit(&t->callbacks, &v, v | 1,
                                                               memory_order_acquire,
                                                               memory_order_relaxed))
            continue;
        pt__futex_wait(&t->callbacks, v | 1, 0);
    }
}

int pt_timer_stop_sync(pt_timer *t)
{
    uint64_t w;
    if (!st_valid(t, &w))
        return -EINVAL;
    int ret = timer_stop(t, w);
    uint32_t mine = 0;
    for (struct pt__cb_frame *fr = pt__cb_top; fr; fr = fr->prev)
        if (fr->t == t && !fr->disposed)
            mine++;
    for (;;) {
        unlink_deleted(t);
        /* A status seen after the wait proves nothing about a callback
         * that started after the wait (a one-shot whose callback re-armed
         * it onto another heap, which ran it at once). A count of started
         * callbacks unchanged across the wait and the status load does:
         * the runner counts a start before it releases Running. Found by
         * the spin model (test/model, stop_sync_returns_during_callback). */
        uint32_t started =
            pt__cb_started(atomic_load_explicit(&t->callbacks, memory_order_acquire));
        wait_callbacks(t, mine);
        uint32_t s = st_load(t);
        if ((s == PT_TIMER_NOSTATUS || s == PT_TIMER_REMOVED) &&
            pt__cb_started(atomic_load_explicit(&t->callbacks, memory_order_acquire)) == started)
            break;
        /* A callback re-armed it (a ticker, or a reset from inside), or it
         * is in a transient state: stop it again and look once more. */
        ret |= timer_stop(t, st_word(t));
    }
    if (mine) {
        /* Our own frames stop counting: the caller may free t once its
         * callback returns, so the runner must not touch it again. */
        for (struct pt__cb_frame *fr = pt__cb_top; fr; fr = fr->prev)
            if (fr->t == t)
                fr->disposed = true;
        atomic_fetch_sub_explicit(&t->callbacks, PT__CB_RUNNING * mine, memory_order_relaxed);
    }
    return ret;
}
