/* One P's timers: the heap side of the design, run by the heap's owner
 * (and, for check, by any thread helping it). Everything here that touches
 * the heap holds ts->lock. Rows refer to the table in ptimer.h.
 *
 * Why the work is lazy: stop and modify from other threads only flip a
 * status; the owner pays for heap surgery when it next looks, and most of
 * it is amortised away -- a stopped timer that reaches the head is popped
 * (clean, run), a re-armed one is re-keyed once however often it was
 * modified, and a heap more than a quarter dead is swept a bounded slice
 * per owner check (compacted in one pass only past half dead).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "pheap/heap_locked.h"

_Thread_local struct pt__cb_frame *pt__cb_top;

int pt_timers_init(pt_timers *ts, pt_wake_func wake, void *ctx)
{
    if (!ts)
        return -EINVAL;
    ts->magic = 0;
    /* A timer names its heap in 48 bits of its state word. The heap stays
     * uninitialised, so every later call on it is -EINVAL too. */
    if (!st_heap_fits(ts))
        return -EINVAL;
    pt__lock_init(&ts->lock);
    pt__heap4_init(&ts->heap, (int32_t)offsetof(pt_timer, heap_index));
    atomic_init(&ts->timer0_when, 0);
    atomic_init(&ts->modified_earliest, 0);
    atomic_init(&ts->num_timers, 0);
    atomic_init(&ts->deleted_timers, 0);
    atomic_init(&ts->deleted_cleaned, 0);
    ts->sweep_at = 0;
    ts->stage = NULL;
    ts->slack = 0;
    ts->stage_next = 0;
    ts->staged = 0;
    atomic_init(&ts->stage_hint, 0);
    ts->running = 0;
    ts->wake = wake;
    ts->wake_ctx = ctx;
    pt_timer_init(&ts->standin, NULL, NULL);
    atomic_store_explicit(&ts->standin.state, st_pack(NULL, PT_TIMER_REMOVED),
                          memory_order_relaxed);
    ts->magic = PT__TIMERS_MAGIC;
    return 0;
}

/* The owner's claim on heap entry t (lock held): waits out a Modifying,
 * aborts (naming op) on a status no heap entry can have, and returns the
 * status it found. A Deleted timer is unlinked (Deleted -> Removing ->
 * Removed; the caller drops its entry and counts it cleaned); a live one
 * is in what `rows` made of it (Moving, or Waiting left as it is) for the
 * caller to re-key or move on. Serves compact and move. */
static inline uint32_t entry_claim(pt_timer *t, const st_rows rows, const char *op)
{
    uint64_t w = st_word(t);
    uint32_t s = st_step(t, &w, rows, op);
    if (s == PT_TIMER_DELETED)
        st_set_in(t, PT_TIMER_REMOVING, PT_TIMER_REMOVED, NULL, op);
    return s;
}

/* Rows "adjust", "clear_deleted" (compact) and "move". */
#define ENTRY_ROWS(waiting)                                                                    \
    {                                                                                          \
        [PT_TIMER_WAITING] = waiting, [PT_TIMER_DELETED] = ST_TO(PT_TIMER_REMOVING),           \
        [PT_TIMER_MODIFIED_EARLIER] = ST_TO(PT_TIMER_MOVING),                                  \
        [PT_TIMER_MODIFIED_LATER] = ST_TO(PT_TIMER_MOVING), [PT_TIMER_MODIFYING] = ST_WAIT,    \
    }
static const st_rows compact_rows = ENTRY_ROWS(ST_KEEP);
static const st_rows move_rows = ENTRY_ROWS(ST_TO(PT_TIMER_MOVING));

/* One pass over the whole heap: drop Deleted timers, re-key ModifiedXX
 * ones, compact the survivors in place, then re-heapify once. O(n) with no
 * allocation, where Go 1.14-1.22 removed entries one by one (and had to
 * restart its scan after each, issue 47762). Serves both adjusttimers and
 * clearDeletedTimers. Rows "adjust" and "clear_deleted". */
static void compact(pt_timers *ts, const char *op)
{
    /* Cleared before the scan: a timer moved earlier after the scan passed
     * it raises the value again, one the scan has not reached yet will be
     * re-keyed by it. */
    atomic_store_explicit(&ts->modified_earliest, 0, memory_order_relaxed);
    /* The ring's entries join the pass: a whole-heap pass is rare (an
     * adjust, half the heap stopped, a destroy), and one structure to
     * re-key and drop from keeps it one pass. */
    pt__stage_flush(ts);
    pt__heap4 *h = &ts->heap;
    uint32_t kept = 0, removed = 0;
    for (uint32_t i = 0; i < h->len; i++) {
        pt_timer *t = h->v[i].item;
        uint32_t s = entry_claim(t, compact_rows, op);
        if (s == PT_TIMER_DELETED) {
            removed++;
            continue;
        }
        if (s != PT_TIMER_WAITING) {
            h->v[i].when = t->when;
            st_set(t, PT_TIMER_MOVING, PT_TIMER_WAITING, op);
        }
        h->v[kept++] = h->v[i];
    }
    h->len = kept;
    count_cleaned(ts, removed);
    pt__heap4_heapify(h);
    pt__heap4_shrink(h);
    update_len(ts);
}

/* clearDeletedTimers, bounded: from where the last sweep stopped, unlink
 * the Deleted timers among the next PT__SWEEP_BUDGET entries (each is
 * replaced by the last entry, which is examined in turn). Go clears the
 * whole heap at once, and with a million timers that is milliseconds in
 * which nothing on this P fires; compact() is kept for when the sweeps
 * fall behind (half the heap stopped). Row "clear_deleted". */
static void sweep(pt_timers *ts)
{
    pt__heap4 *h = &ts->heap;
    uint32_t i = ts->sweep_at;
    for (uint32_t n = 0; n < PT__SWEEP_BUDGET && n < h->len; n++) {
        if (i >= h->len)
            i = 0;
        pt_timer *t = h->v[i].item;
        uint64_t w = st_word(t);
        if (st_status(w) != PT_TIMER_DELETED || !retire_deleted(ts, t, w, NULL, "clear_deleted"))
            i++;
    }
    ts->sweep_at = i;
    if (!ts->staged) /* staged timers keep room in the array (stage.h) */
        pt__heap4_shrink(h);
}

/* Run t, which is Running at the head with key `key`; returns with the lock
 * held again. The lock is dropped around the callback (Go issue 35532). */
static void run_one(pt_timers *ts, pt_timer *t, pt_nanos key, pt_nanos now)
{
    pt_func f = t->f;
    void *arg = t->arg;
    uintptr_t seq = t->seq;
    /* Counted before the status leaves Running (release), so a stop_sync
     * that sees the new status also sees this callback. */
    atomic_fetch_add_explicit(&t->callbacks, PT__CB_RUNNING + PT__CB_STARTED,
                              memory_order_relaxed);
    if (t->period > 0) {
        /* run: Waiting -> Running -> Waiting. Skip the ticks missed while
         * late, so a stalled P never fires a burst: the next time is the
         * first key + k*period after now. Overflow means never. */
        pt_nanos missed = (now - key) / t->period, step, next;
        if (__builtin_mul_overflow(missed + 1, t->period, &step) ||
            __builtin_add_overflow(key, step, &next))
            next = PT_MAXWHEN;
        t->when = next;
        ts->heap.v[0].when = next;
        pt__heap4_fix(&ts->heap, 0);
        update_timer0(ts);
        st_set(t, PT_TIMER_RUNNING, PT_TIMER_WAITING, "run");
    } else {
        /* run: Waiting -> Running -> NoStatus, out of the heap first */
        remove_locked(ts, t, NULL, "run");
        st_set_in(t, PT_TIMER_RUNNING, PT_TIMER_NOSTATUS, NULL, "run");
    }
    ts->running = 1;
    pt__unlock(&ts->lock);

    struct pt__cb_frame frame = {t, false, pt__cb_top, key, now};
    pt__cb_top = &frame;
    f(arg, seq);
    pt__cb_top = frame.prev;
    if (!frame.disposed) {
        /* Last touch of t: drop our count and the sleeper bit together,
         * then wake sleepers by address only (t may be freed by then). */
        uint32_t v = atomic_load_explicit(&t->callbacks, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&t->callbacks, &v,
                                                      (v - PT__CB_RUNNING) & ~PT__CB_WAITER,
                                                      memory_order_release,
                                                      memory_order_relaxed))
            ;
        if (v & 1)
            pt__futex_wake(&t->callbacks, INT_MAX);
    }

    pt__lock(&ts->lock);
    ts->running = 0;
}

/* Row "run": every status a head may be in, the CASes its own (they
 * depend on the time and the key). */
static const st_rows run_rows = {
    [PT_TIMER_WAITING] = ST_KEEP,          [PT_TIMER_DELETED] = ST_KEEP,
    [PT_TIMER_MODIFIED_EARLIER] = ST_KEEP, [PT_TIMER_MODIFIED_LATER] = ST_KEEP,
    [PT_TIMER_MODIFYING] = ST_WAIT,
};

/* Go's runtimer: look at the head. Returns 0 after running one timer, the
 * head's key when it is not due, or -1 when the heap is empty. */
static pt_nanos run_head(pt_timers *ts, pt_nanos now)
{
    while (ts->heap.len) {
        pt_timer *t = ts->heap.v[0].item;
        pt_nanos key = ts->heap.v[0].when;
        uint64_t w = st_word(t);
        switch (st_step(t, &w, run_rows, "run")) {
        case PT_TIMER_WAITING:
            if (key > now || key == PT_MAXWHEN)
                return key; /* run: Waiting -> Waiting (never is never due) */
            if (st_cas(t, w, PT_TIMER_RUNNING)) {
                run_one(ts, t, key, now);
                return 0;
            }
            break;
        case PT_TIMER_DELETED:
            retire_deleted(ts, t, w, NULL, "run");
            break;
        default: /* ModifiedXX */
            rekey_modified(ts, t, w, "run");
            break;
        }
    }
    return -1;
}

/* The latest now a check saw, where an empty ring starts (stage.c). A
 * plain store, skipped when nothing changed; 0 (no time given) is none. */
static inline void note_now(pt_timers *ts, pt_nanos now)
{
    if (atomic_load_explicit(&ts->stage_hint, memory_order_relaxed) < now)
        atomic_store_explicit(&ts->stage_hint, now, memory_order_relaxed);
}

int pt_timers_check(pt_timers *ts, pt_nanos now, bool owner, pt_nanos *poll_until)
{
    if (!pt__timers_valid(ts))
        return -EINVAL;
    /* The fast path: two atomic loads, no lock. */
    pt_nanos next = pt__timers_next_time(ts);
    if (next == 0) {
        if (ts->stage)
            note_now(ts, now); /* a time given; no clock read for an empty heap */
        if (poll_until)
            *poll_until = 0;
        return 0;
    }
    if (now == 0)
        now = pt_nanotime();
    if (ts->stage)
        note_now(ts, now);
    if (now < next) {
        /* Nothing due; go on only if the owner should clear deleted timers
         * (the same test as below, without the lock). */
        if (!owner ||
            deleted_count(ts) <= atomic_load_explicit(&ts->num_timers, memory_order_relaxed) / 4) {
            if (poll_until)
                *poll_until = pt_slack_latest(next, ts->slack);
            return 0;
        }
    }

    int ran = 0;
    pt__lock(&ts->lock);
    /* Another thread is in one of this heap's callbacks and will carry on
     * with the due timers when it returns: callbacks of one heap never run
     * concurrently. */
    if (!ts->running) {
        /* Ring slots that have begun go into the heap first, so the run
         * below sees their timers. */
        if (ts->stage_next && ts->stage_next <= now)
            pt__stage_promote(ts, now);
        pt_nanos adj = atomic_load_explicit(&ts->modified_earliest, memory_order_acquire);
        if (ts->heap.len + ts->staged && adj != 0 && adj <= now)
            compact(ts, "adjust"); /* Go's adjusttimers, gated (Go issue 41699) */
        while (ts->heap.len && run_head(ts, now) == 0)
            ran++;
        /* Stopped timers left in the ring (their stop found the lock
         * busy) count too: they go at compaction, or when their slot
         * begins; the bounded sweep looks at the heap only. */
        uint32_t dead = owner ? deleted_count(ts) : 0, total = ts->heap.len + ts->staged;
        if (dead > total / 2)
            compact(ts, "clear_deleted");
        else if (dead > total / 4 && ts->heap.len)
            sweep(ts);
    }
    next = pt__timers_next_time(ts);
    pt__unlock(&ts->lock);
    if (poll_until)
        *poll_until = pt_slack_latest(next, ts->slack);
    return ran;
}

int pt_timers_firing(pt_nanos *when, pt_nanos *now)
{
    if (!when || !now)
        return -EINVAL;
    const struct pt__cb_frame *fr = pt__cb_top;
    if (!fr)
        return -ENOENT;
    *when = fr->when;
    *now = fr->now;
    return 0;
}

pt_nanos pt_timers_next(const pt_timers *ts)
{
    return pt__timers_valid(ts) ? pt_slack_latest(pt__timers_next_time(ts), ts->slack) : 0;
}

/* 1 while ts's stand-in holds an entry: the heap's own, counted in its
 * length and deleted count, never in what they tell callers. */
static uint32_t standin_held(const pt_timers *ts)
{
    return st_load(&ts->standin) == PT_TIMER_DELETED;
}

uint32_t pt_timers_deleted(const pt_timers *ts)
{
    if (!pt__timers_valid(ts))
        return 0;
    uint32_t held = standin_held(ts), n = deleted_count(ts);
    return n > held ? n - held : 0;
}

size_t pt_timers_len(const pt_timers *ts)
{
    if (!pt__timers_valid(ts))
        return 0;
    uint32_t held = standin_held(ts);
    uint32_t n = atomic_load_explicit(&((pt_timers *)ts)->num_timers, memory_order_relaxed);
    return n > held ? n - held : 0;
}

int pt_timers_move(pt_timers *dst, pt_timers *src)
{
    if (!pt__timers_valid(dst) || !pt__timers_valid(src))
        return -EINVAL;
    if (dst == src)
        return 0;
    /* Two heap locks at once happen only here; address order rules out a
     * deadlock between two moves in opposite directions. */
    pt_timers *first = dst < src ? dst : src, *second = dst < src ? src : dst;
    pt__lock(&first->lock);
    pt__lock(&second->lock);
    /* src's ring goes first into src's heap, which keeps room for it. dst
     * gets everything in its heap, keeping the room its own ring needs. */
    int err = pt__heap4_reserve(&dst->heap, src->heap.len + src->staged + dst->staged);
    if (err < 0) {
        pt__unlock(&second->lock);
        pt__unlock(&first->lock);
        return err;
    }
    pt_nanos prev = pt__timers_next_time(dst);
    pt__stage_flush(src);
    pt__heap4 *from = &src->heap, *to = &dst->heap;
    for (uint32_t i = 0; i < from->len; i++) {
        pt_timer *t = from->v[i].item;
        /* move: Waiting, ModifiedXX -> Moving -> Waiting onto dst; Deleted
         * -> Removing -> Removed, dropped (not straight to Removed, Go's
         * row, as every unlink goes: one row for all in the table and the
         * model) */
        if (entry_claim(t, move_rows, "move") == PT_TIMER_DELETED)
            continue;
        to->v[to->len].when = t->when;
        to->v[to->len].item = t;
        to->len++;
        st_set_in(t, PT_TIMER_MOVING, PT_TIMER_WAITING, dst, "move");
    }
    from->len = 0;
    /* Every Deleted timer was dropped: cleaned catches up with the stops
     * counted so far (a stop counted later is of a timer now on dst). */
    count_cleaned(src, deleted_count(src));
    pt__heap4_shrink(from);
    update_len(src);
    pt__heap4_heapify(to);
    update_len(dst);
    pt_nanos now_next = pt__timers_next_time(dst);
    pt__unlock(&second->lock);
    pt__unlock(&first->lock);
    if (dst->wake && now_next != 0 && (prev == 0 || now_next < prev))
        dst->wake(dst->wake_ctx, pt_slack_latest(now_next, dst->slack));
    return 0;
}

int pt_timers_set_slack(pt_timers *ts, pt_nanos slack)
{
    if (!pt__timers_valid(ts) || slack < 0)
        return -EINVAL;
    ts->slack = slack;
    return 0;
}

int pt_timers_destroy(pt_timers *ts)
{
    if (!pt__timers_valid(ts))
        return -EINVAL;
    pt__lock(&ts->lock);
    if (ts->running) {
        pt__unlock(&ts->lock);
        return -EBUSY;
    }
    /* Unlinking stopped timers is invisible to callers and required: their
     * owners may stop_sync them after the heap is gone. */
    if (ts->heap.len + ts->staged)
        compact(ts, "destroy"); /* the ring's timers end in the heap: one place to look */
    if (ts->heap.len) {
        pt__unlock(&ts->lock);
        return -EBUSY;
    }
    pt__heap4_free(&ts->heap);
    pt__stage_free(ts);
    ts->magic = 0;
    pt__unlock(&ts->lock);
    return 0;
}

/* The first problem the calling thread's last pt_timers_verify found. */
static _Thread_local char verify_report[256];

const char *pt_timers_verify_report(void)
{
    return verify_report;
}

#define VERIFY(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond) && !bad) {                                                                 \
            int n_ = snprintf(verify_report, sizeof verify_report, "heap %p: ", (void *)ts);   \
            snprintf(verify_report + n_, sizeof verify_report - (size_t)n_, __VA_ARGS__);      \
            bad = true;                                                                        \
        }                                                                                      \
    } while (0)

/* Row "verify". */
static const st_rows verify_rows = {
    [PT_TIMER_WAITING] = ST_TO(PT_TIMER_MOVING),
    [PT_TIMER_MODIFIED_EARLIER] = ST_TO(PT_TIMER_MOVING),
    [PT_TIMER_MODIFIED_LATER] = ST_TO(PT_TIMER_MOVING),
    [PT_TIMER_DELETED] = ST_TO(PT_TIMER_MOVING),
    [PT_TIMER_MODIFYING] = ST_KEEP,
};

int pt_timers_verify(pt_timers *ts, bool quiescent)
{
    if (!pt__timers_valid(ts))
        return -EINVAL;
    bool bad = false;
    verify_report[0] = '\0';
    pt__lock(&ts->lock);
    const pt__heap4 *h = &ts->heap;
    VERIFY(pt__heap4_valid(h), "heap order or entry indices broken");
    uint32_t deleted = 0, modifying = 0;
    for (uint32_t i = 0; i < h->len && !bad; i++) {
        pt_timer *t = h->v[i].item;
        pt_nanos key = h->v[i].when;
        uint64_t w = st_word(t);
        VERIFY(st_checked(w), "entry %u: %p is not a timer", i, (void *)t);
        VERIFY(st_heap(w) == ts, "entry %u: timer %p names heap %p", i, (void *)t,
               (void *)st_heap(w));
        if (bad)
            break; /* reported; a status CAS on a word that is not ours proves nothing */
        uint32_t s = st_status(w);
        if (s != PT_TIMER_MODIFYING && !st_pending(s) && s != PT_TIMER_DELETED) {
            VERIFY(false, "entry %u: timer %p in a heap with status %u", i, (void *)t, s);
            continue;
        }
        /* verify: X -> Moving -> X. Owning the status (under the lock, like
         * the owner's re-keying) is what makes t->when safe to read. Under
         * the lock no other status can appear. */
        s = st_step(t, &w, verify_rows, "verify");
        if (s == PT_TIMER_MODIFYING) {
            modifying++; /* mid-flight on another thread: nothing to read */
            continue;
        }
        pt_nanos when = t->when;
        st_set(t, PT_TIMER_MOVING, s, "verify");
        if (s == PT_TIMER_WAITING) {
            VERIFY(when == key, "entry %u: waiting timer %p has when %lld, key %lld", i,
                   (void *)t, (long long)when, (long long)key);
        } else {
            /* The invariant that makes lazy re-keying safe: a timer asking
             * for an earlier time than its key has modified_earliest at or
             * before that time, so check adjusts the heap in time. Loaded
             * after the status: a modifier lowers it before publishing. */
            pt_nanos adj = atomic_load_explicit(&ts->modified_earliest, memory_order_acquire);
            VERIFY(when >= key || (adj != 0 && adj <= when),
                   "entry %u: timer %p (status %u) wants %lld before key %lld but "
                   "modified_earliest is %lld",
                   i, (void *)t, s, (long long)when, (long long)key, (long long)adj);
            deleted += s == PT_TIMER_DELETED;
        }
    }
    const char *ring = pt__stage_verify(ts, &deleted, &modifying);
    VERIFY(!ring, "%s", ring);
    VERIFY(atomic_load_explicit(&ts->num_timers, memory_order_relaxed) == h->len + ts->staged,
           "num_timers %u, heap holds %u, ring %u",
           atomic_load_explicit(&ts->num_timers, memory_order_relaxed), h->len, ts->staged);
    pt_nanos head = pt__heap4_top_when(h);
    if (ts->stage_next && (head == 0 || ts->stage_next < head))
        head = ts->stage_next;
    VERIFY(atomic_load_explicit(&ts->timer0_when, memory_order_relaxed) == head,
           "timer0_when %lld, head key or ring slot %lld",
           (long long)atomic_load_explicit(&ts->timer0_when, memory_order_relaxed),
           (long long)head);
    uint32_t counted = deleted_count(ts);
    if (quiescent)
        VERIFY(counted == deleted && modifying == 0, "deleted_timers %u, heap holds %u deleted",
               counted, deleted);
    else
        VERIFY(counted <= h->len + ts->staged, "deleted_timers %u exceeds heap size %u", counted,
               h->len + ts->staged);
    pt__unlock(&ts->lock);
    return bad ? -EUCLEAN : 0;
}
