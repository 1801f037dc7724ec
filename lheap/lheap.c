/* pt_lheap: Go 1.23's per-P timers (include/ptimer/lheap.h says what and
 * why). A timer's fields are guarded by its own lock; a heap's entries by
 * the heap's lock, always taken before a timer's. A timer's `ts` and its
 * heap copy of `when` change only under both, so either lock lets one
 * read them. The state bits:
 *   HEAPED    an entry of ts's heap is this timer's;
 *   MODIFIED  `when` has moved since the entry was keyed (only if HEAPED);
 *   ZOMBIE    stopped while HEAPED: the entry is dead, counted in zombies.
 * A heap learns of a change only when it looks: at its top (every add
 * cleans it first, every run looks there), in adjust (when the earliest
 * modified time has come, or zombies pass a quarter), in a move, or in a
 * stop_sync that takes its entry out. */
#include "ptimer/lheap.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/futex.h"
#include "base/lock.h"
#include "base/heap4.h"

#define LHEAP_MAGIC 0x6c686570u /* "lhep" */
#define LTIMER_CHECK 0x1e23u    /* pt_lheap_timer.check, set by init */

enum { HEAPED = 1u, MODIFIED = 2u, ZOMBIE = 4u };

/* The callbacks this thread runs now, innermost first: how stop_sync knows
 * it was called from t's own callback (which it must not wait for), and
 * how it tells the runner not to touch t once that callback returns (the
 * callback may free t). */
struct frame {
    pt_lheap_timer *t;
    bool disposed;
    struct frame *prev;
    pt_nanos when, now; /* pt_lheap_firing's answer */
};
static _Thread_local struct frame *tl_top;

/* The check this thread runs now (0: none; nested checks save and restore
 * it): an arm made by one of its callbacks is marked with it, and that
 * check leaves such a timer to the next one. Ids are process-wide, taken
 * once per check that runs timers, never per arm. */
static _Thread_local uint64_t tl_check;
static _Atomic uint64_t check_ids;

static inline bool heap_ok(const pt_lheap *h)
{
    return h && h->magic == LHEAP_MAGIC;
}

static inline bool timer_ok(const pt_lheap_timer *t)
{
    return t && t->check == LTIMER_CHECK;
}

/* Corruption: abort naming the timer, its state, its heap and the
 * operation. The only output of this part. */
_Noreturn static void bad(const pt_lheap_timer *t, const pt_lheap *h, const char *op)
{
    if (!t) {
        fprintf(stderr, "ptimer: corrupt lheap %p in %s: %d zombies, %u entries\n", (const void *)h,
                op, (int)atomic_load_explicit(&h->zombies, memory_order_relaxed), h->heap.len);
        abort();
    }
    unsigned s = t->state;
    fprintf(stderr,
            "ptimer: corrupt lheap timer %p: state %#x (heaped %u, modified %u, zombie %u) in %s "
            "(heap %p%s, the timer's heap %p, when %lld, heap copy %lld, index %u, check %#x%s)\n",
            (const void *)t, s, s & HEAPED ? 1u : 0u, s & MODIFIED ? 1u : 0u, s & ZOMBIE ? 1u : 0u,
            op, (const void *)h, h && h->magic == LHEAP_MAGIC ? "" : ", not a live heap",
            (const void *)t->ts, (long long)t->when, (long long)t->when_heap, t->index, t->check,
            t->check == LTIMER_CHECK ? "" : ", not a timer's");
    abort();
}

/* ---- locks ------------------------------------------------------------- */

static inline void t_lock(pt_lheap_timer *t)
{
    pt__lock(&t->lock);
}

/* The state the heap may read without the lock, then the unlock. */
static inline void t_unlock(pt_lheap_timer *t)
{
    atomic_store_explicit(&t->astate, t->state, memory_order_relaxed);
    pt__unlock(&t->lock);
}

static inline void h_lock(pt_lheap *h)
{
    pt__lock(&h->lock);
}

/* len is published at unlock only, so that a reader never sees the
 * passing length of an entry taken out and put back. */
static inline void h_unlock(pt_lheap *h)
{
    atomic_store_explicit(&h->len, h->heap.len, memory_order_relaxed);
    pt__unlock(&h->lock);
}

/* ---- the heap's two bounds -------------------------------------------- */

static void update_min_when_heap(pt_lheap *h)
{
    atomic_store_explicit(&h->min_when_heap, h->heap.len ? h->heap.v[0].when : 0,
                          memory_order_release);
}

/* Lower the bound on the modified timers' times to `when` (no lock). */
static void update_min_when_modified(pt_lheap *h, pt_nanos when)
{
    pt_nanos old = atomic_load_explicit(&h->min_when_modified, memory_order_relaxed);
    while ((old == 0 || when < old) &&
           !atomic_compare_exchange_weak_explicit(&h->min_when_modified, &old, when,
                                                  memory_order_release, memory_order_relaxed))
        ;
}

/* The earlier of the two (0: none). The modified bound is read first:
 * adjust moves it into the heap's before clearing it, so a cleared one
 * read here comes with a heap bound that includes it. */
static pt_nanos wake_time(const pt_lheap *h)
{
    pt_nanos mod = atomic_load_explicit(&h->min_when_modified, memory_order_acquire);
    pt_nanos top = atomic_load_explicit(&h->min_when_heap, memory_order_acquire);
    return top == 0 || (mod != 0 && mod < top) ? mod : top;
}

/* ---- entries (the heap locked, and the timer) ---------------------------- */

static void zombie_gone(pt_lheap *h, const pt_lheap_timer *t, const char *op)
{
    if (atomic_fetch_sub_explicit(&h->zombies, 1, memory_order_relaxed) <= 0)
        bad(t, h, op);
}

/* t's entry leaves h: an idle timer names no heap. */
static void take_out(pt_lheap *h, pt_lheap_timer *t, const char *op)
{
    uint32_t i = t->index;
    if (t->ts != h || i >= h->heap.len || h->heap.v[i].item != t)
        bad(t, h, op);
    if (t->state & ZOMBIE)
        zombie_gone(h, t, op);
    t->state = 0;
    t->ts = NULL;
    t->when_heap = t->when;
    pt__heap4_remove(&h->heap, i);
    update_min_when_heap(h);
    if (h->heap.len == 0)
        atomic_store_explicit(&h->min_when_modified, 0, memory_order_relaxed);
}

/* Go's updateHeap for the top entry: a zombie leaves, a modified timer is
 * re-keyed. True if anything changed. */
static bool update_top(pt_lheap *h, pt_lheap_timer *t, const char *op)
{
    if (t->ts != h || h->heap.len == 0 || h->heap.v[0].item != t)
        bad(t, h, op);
    if (t->state & ZOMBIE) {
        take_out(h, t, op);
        return true;
    }
    if (t->state & MODIFIED) {
        t->state &= (uint8_t)~MODIFIED;
        t->when_heap = t->when;
        h->heap.v[0].when = t->when;
        pt__heap4_fix(&h->heap, 0);
        update_min_when_heap(h);
        return true;
    }
    return false;
}

/* ---- making, arming, stopping ---------------------------------------- */

int pt_lheap_init(pt_lheap *h, pt_wake_func wake, void *ctx)
{
    if (!h)
        return -EINVAL;
    pt__lock_init(&h->lock);
    pt__heap4_init(&h->heap, (int32_t)offsetof(pt_lheap_timer, index));
    atomic_init(&h->len, 0);
    atomic_init(&h->zombies, 0);
    atomic_init(&h->run_done, 0);
    atomic_init(&h->sync_waiters, 0);
    atomic_init(&h->min_when_heap, 0);
    atomic_init(&h->min_when_modified, 0);
    h->wake = wake;
    h->wake_ctx = ctx;
    h->slack = 0;
    h->magic = LHEAP_MAGIC;
    return 0;
}

int pt_lheap_set_slack(pt_lheap *h, pt_nanos slack)
{
    if (!heap_ok(h) || slack < 0)
        return -EINVAL;
    h->slack = slack;
    return 0;
}

int pt_lheap_destroy(pt_lheap *h)
{
    if (!heap_ok(h))
        return -EINVAL;
    h_lock(h);
    if (h->heap.len) {
        h_unlock(h);
        return -EBUSY;
    }
    h->magic = 0;
    pt__heap4_free(&h->heap);
    h_unlock(h);
    return 0;
}

void pt_lheap_timer_init(pt_lheap_timer *t, pt_func f, void *arg)
{
    if (!t)
        return;
    pt__lock_init(&t->lock);
    atomic_init(&t->astate, 0);
    t->state = 0;
    t->check = LTIMER_CHECK;
    t->index = 0;
    t->when = t->when_heap = t->period = 0;
    t->f = f;
    t->arg = arg;
    t->seq = 0;
    t->ts = t->run_heap = NULL;
    t->arm_check = 0;
    atomic_init(&t->running, 0);
}

/* `when` as kept: 0 is due at once but kept as 1 (0 means "not armed"),
 * negative is never. */
static inline pt_nanos norm_when(pt_nanos when)
{
    return when < 0 ? PT_MAXWHEN : when == 0 ? 1 : when;
}

/* Go's maybeAdd and its cleanHead: t, armed and in no heap, goes onto h
 * once the top is current; t may have been added or stopped by another
 * thread since its lock was dropped. 0, or -ENOMEM (no room: t is left
 * idle). */
static int maybe_add(pt_lheap *h, pt_lheap_timer *t)
{
    h_lock(h);
    /* cleanHead, but a zombie at the top is let go of and its entry left
     * as a hole for this add: one sift where a removal and an add are two
     * (the entry the RPC pattern stopped last is the top the next arm
     * meets). The hole names a timer that names no heap: nobody reads it
     * before the add below fills or removes it, under the heap's lock. */
    bool hole = false;
    while (h->heap.len && !hole) {
        pt_lheap_timer *top = h->heap.v[0].item;
        if (top->ts != h)
            bad(top, h, "clean");
        if (!(atomic_load_explicit(&top->astate, memory_order_relaxed) & (MODIFIED | ZOMBIE)))
            break;
        t_lock(top);
        if (top->state & ZOMBIE) {
            zombie_gone(h, top, "clean");
            top->state = 0;
            top->ts = NULL;
            top->when_heap = top->when;
            hole = true;
        } else if (!update_top(h, top, "clean")) {
            t_unlock(top);
            break;
        }
        t_unlock(top);
    }
    bool room = hole || pt__heap4_reserve(&h->heap, 1) == 0;
    pt_nanos wake = 0;
    int r = 0;
    t_lock(t);
    if (!(t->state & HEAPED) && t->when > 0) {
        if (!room) {
            t->when = 0;
            r = -ENOMEM;
        } else {
            t->state |= HEAPED;
            t->ts = h;
            t->when_heap = t->when;
            uint32_t at = hole ? pt__heap4_replace_top(&h->heap, t->when, t)
                               : pt__heap4_push(&h->heap, t->when, t);
            if (at == 0 && t->when != PT_MAXWHEN)
                wake = t->when;
            hole = false;
        }
    }
    if (hole) /* nothing to add after all */
        pt__heap4_remove(&h->heap, 0);
    update_min_when_heap(h);
    if (h->heap.len == 0)
        atomic_store_explicit(&h->min_when_modified, 0, memory_order_relaxed);
    t_unlock(t);
    h_unlock(h);
    if (wake && h->wake)
        h->wake(h->wake_ctx, pt_slack_latest(wake, h->slack));
    return r;
}

/* What an arm sets besides `when`. */
enum arm_kind {
    ARM_START,  /* the period; refused if pending */
    ARM_RESET,  /* nothing */
    ARM_MODIFY, /* the period, f, arg and seq */
};

/* Go's modify: start, reset and modify. */
static int rearm(pt_lheap *h, pt_lheap_timer *t, pt_nanos when, enum arm_kind kind, pt_nanos period,
                 pt_func f, void *arg, uintptr_t seq)
{
    if (!heap_ok(h) || !timer_ok(t) || period < 0)
        return -EINVAL;
    when = norm_when(when);
    t_lock(t);
    int pending = t->when > 0;
    if (kind == ARM_START && pending) {
        t_unlock(t);
        return -EBUSY;
    }
    if (kind != ARM_RESET)
        t->period = period;
    if (kind == ARM_MODIFY) {
        t->f = f;
        t->arg = arg;
        t->seq = seq;
    }
    t->when = when;
    t->arm_check = tl_check;
    pt_lheap *wake = NULL;
    if (t->state & HEAPED) {
        /* its entry keeps the old time until its heap looks */
        t->state |= MODIFIED;
        if (t->state & ZOMBIE) {
            t->state &= (uint8_t)~ZOMBIE;
            zombie_gone(t->ts, t, "modify");
        }
        if (when < t->when_heap) {
            update_min_when_modified(t->ts, when);
            wake = t->ts;
        }
    }
    bool add = !(t->state & HEAPED);
    t_unlock(t);
    if (add) {
        int r = maybe_add(h, t);
        if (r < 0)
            return r;
    } else if (wake && wake->wake) {
        wake->wake(wake->wake_ctx, pt_slack_latest(when, wake->slack));
    }
    return pending;
}

int pt_lheap_timer_start(pt_lheap *h, pt_lheap_timer *t, pt_nanos when, pt_nanos period)
{
    return rearm(h, t, when, ARM_START, period, NULL, NULL, 0);
}

int pt_lheap_timer_reset(pt_lheap *h, pt_lheap_timer *t, pt_nanos when)
{
    return rearm(h, t, when, ARM_RESET, 0, NULL, NULL, 0);
}

int pt_lheap_timer_modify(pt_lheap *h, pt_lheap_timer *t, pt_nanos when, pt_nanos period, pt_func f,
                          void *arg, uintptr_t seq)
{
    return rearm(h, t, when, ARM_MODIFY, period, f, arg, seq);
}

/* Go's stop (t locked): 1 if it was armed. A timer in a heap becomes a
 * zombie there. */
static int stop_locked(pt_lheap_timer *t)
{
    if (t->state & HEAPED) {
        t->state |= MODIFIED;
        if (!(t->state & ZOMBIE)) {
            t->state |= ZOMBIE;
            atomic_fetch_add_explicit(&t->ts->zombies, 1, memory_order_relaxed);
        }
    }
    int pending = t->when > 0;
    t->when = 0;
    return pending;
}

int pt_lheap_timer_stop(pt_lheap_timer *t)
{
    if (!timer_ok(t))
        return -EINVAL;
    t_lock(t);
    int r = stop_locked(t);
    t_unlock(t);
    return r;
}

/* Sleep until t has at most `mine` callbacks running; rh is the heap whose
 * check runs them, which bumps run_done after each callback while anyone
 * waits. seq_cst pairs the waiter's count-then-look with the runner's
 * decrement-then-look: one of them sees the other. */
static void wait_runs(pt_lheap *rh, pt_lheap_timer *t, uint32_t mine)
{
    atomic_fetch_add_explicit(&rh->sync_waiters, 1, memory_order_seq_cst);
    for (;;) {
        uint32_t v = atomic_load_explicit(&rh->run_done, memory_order_acquire);
        if (atomic_load_explicit(&t->running, memory_order_seq_cst) <= mine)
            break;
        pt__futex_wait(&rh->run_done, v, 0);
    }
    atomic_fetch_sub_explicit(&rh->sync_waiters, 1, memory_order_relaxed);
}

int pt_lheap_timer_stop_sync(pt_lheap_timer *t)
{
    if (!timer_ok(t))
        return -EINVAL;
    uint32_t mine = 0;
    for (struct frame *fr = tl_top; fr; fr = fr->prev)
        if (fr->t == t && !fr->disposed)
            mine++;
    int r = 0;
    for (;;) {
        t_lock(t);
        r |= stop_locked(t);
        pt_lheap *ts = t->state & HEAPED ? t->ts : NULL;
        pt_lheap *rh = t->run_heap;
        t_unlock(t);
        if (ts) {
            /* its entry out now, the heap's lock first: t may be freed */
            h_lock(ts);
            t_lock(t);
            if (t->ts == ts && (t->state & HEAPED))
                take_out(ts, t, "stop_sync");
            t_unlock(t);
            h_unlock(ts);
            continue; /* moved meanwhile, or re-armed: look again */
        }
        if (atomic_load_explicit(&t->running, memory_order_acquire) > mine) {
            wait_runs(rh, t, mine);
            continue; /* a callback that re-armed t is stopped again */
        }
        t_lock(t);
        bool idle = t->when == 0 && !(t->state & HEAPED);
        t_unlock(t);
        if (idle && atomic_load_explicit(&t->running, memory_order_acquire) <= mine)
            break;
    }
    if (mine) {
        /* Our own frames stop counting: the runner must not touch t again
         * once its callback returns. */
        for (struct frame *fr = tl_top; fr; fr = fr->prev)
            if (fr->t == t)
                fr->disposed = true;
        atomic_fetch_sub_explicit(&t->running, mine, memory_order_release);
    }
    return r;
}

enum pt_lheap_timer_status pt_lheap_timer_status(const pt_lheap_timer *ct)
{
    if (!timer_ok(ct))
        return PT_LHEAP_IDLE;
    pt_lheap_timer *t = (pt_lheap_timer *)ct; /* read under its lock, which it holds */
    t_lock(t);
    enum pt_lheap_timer_status s = t->when > 0 ? PT_LHEAP_PENDING
                                   : atomic_load_explicit(&t->running, memory_order_relaxed)
                                       ? PT_LHEAP_RUNNING
                                       : PT_LHEAP_IDLE;
    t_unlock(t);
    return s;
}

bool pt_lheap_timer_running(pt_lheap_timer *t)
{
    return timer_ok(t) && atomic_load_explicit(&t->running, memory_order_acquire) != 0;
}

bool pt_lheap_timer_in_heap(pt_lheap_timer *t)
{
    if (!timer_ok(t))
        return false;
    /* Still heaped as of its last unlock: no need to wait for the lock
     * (the answer is a snapshot either way). Out: confirmed under the lock,
     * so that the thread that took it out has let go before t is freed. */
    if (atomic_load_explicit(&t->astate, memory_order_relaxed) & HEAPED)
        return true;
    t_lock(t);
    bool in = t->state & HEAPED;
    t_unlock(t);
    return in;
}

/* ---- checking: adjust, run ------------------------------------------------ */

/* The next time of a ticker that fired late: the first when + k * period
 * after now, skipping the missed ticks (Go's rule); never on overflow. */
static pt_nanos ticker_next(pt_nanos when, pt_nanos period, pt_nanos now)
{
    pt_nanos k = 1 + (now > when ? (now - when) / period : 0), add, next;
    if (__builtin_mul_overflow(k, period, &add) || __builtin_add_overflow(when, add, &next) ||
        next == PT_MAXWHEN)
        return PT_MAXWHEN;
    return next;
}

/* Go's adjust (h locked): every modified timer re-keyed and every zombie
 * dropped, in one pass that locks each timer, then the heap rebuilt. Only
 * once the earliest modified time has come, unless forced (zombies over a
 * quarter). The heap bound takes the modified one before it is cleared, so
 * wake_time stays right throughout, and a modification made during the
 * pass lowers the cleared bound again. */
static void adjust(pt_lheap *h, pt_nanos now, bool force)
{
    if (!force) {
        pt_nanos first = atomic_load_explicit(&h->min_when_modified, memory_order_acquire);
        if (first == 0 || first > now)
            return;
    }
    atomic_store_explicit(&h->min_when_heap, wake_time(h), memory_order_release);
    atomic_store_explicit(&h->min_when_modified, 0, memory_order_release);
    bool changed = false;
    for (uint32_t i = 0; i < h->heap.len; i++) {
        pt_lheap_timer *t = h->heap.v[i].item;
        if (t->ts != h)
            bad(t, h, "adjust");
        t_lock(t);
        if (!(t->state & HEAPED))
            bad(t, h, "adjust");
        if (t->state & ZOMBIE) {
            zombie_gone(h, t, "adjust");
            t->state = 0;
            t->ts = NULL;
            t->when_heap = t->when;
            uint32_t last = --h->heap.len;
            if (i != last)
                h->heap.v[i] = h->heap.v[last];
            t_unlock(t);
            i--; /* the entry moved here is looked at next */
            changed = true;
            continue;
        }
        if (t->state & MODIFIED) {
            t->state &= (uint8_t)~MODIFIED;
            t->when_heap = t->when;
            h->heap.v[i].when = t->when;
            changed = true;
        }
        t_unlock(t);
    }
    if (changed) {
        pt__heap4_heapify(&h->heap);
        pt__heap4_shrink(&h->heap);
    }
    update_min_when_heap(h);
}

/* Runs t (h and t locked, t the due top): re-keyed or taken out first,
 * then called with no lock held. Returns with h locked again. */
static void unlock_and_run(pt_lheap *h, pt_lheap_timer *t, pt_nanos now)
{
    pt_func f = t->f;
    void *arg = t->arg;
    uintptr_t seq = t->seq;
    pt_nanos due = t->when;
    pt_nanos next = t->period > 0 ? ticker_next(due, t->period, now) : 0;
    t->when = next;
    t->state |= MODIFIED;
    if (!next) {
        t->state |= ZOMBIE;
        atomic_fetch_add_explicit(&h->zombies, 1, memory_order_relaxed);
    }
    (void)update_top(h, t, "check");
    atomic_fetch_add_explicit(&t->running, 1, memory_order_relaxed);
    t->run_heap = h;
    t_unlock(t);
    h_unlock(h);
    struct frame fr = {t, false, tl_top, due, now};
    tl_top = &fr;
    f(arg, seq);
    tl_top = fr.prev;
    /* The last touch of t (release: what f did comes before a stop_sync's
     * return); unless f's own stop_sync took this frame off the count. */
    if (!fr.disposed)
        atomic_fetch_sub_explicit(&t->running, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&h->sync_waiters, memory_order_seq_cst)) {
        atomic_fetch_add_explicit(&h->run_done, 1, memory_order_release);
        pt__futex_wake(&h->run_done, INT_MAX);
    }
    h_lock(h);
}

/* Go's run (h locked): the top, if due, is run. 0: one ran; -1: h is
 * empty; else the time the top is due. */
/* Timers a check set aside: armed by its own callbacks at or before now,
 * they run on the next check. Out of the heap meanwhile, each counts as a
 * running callback, so that a stop_sync waits until it is back. */
#define DEFER_MAX 32
struct deferred {
    pt_lheap_timer *t[DEFER_MAX];
    int n;
};

static pt_nanos run_one(pt_lheap *h, pt_nanos now, struct deferred *d)
{
    for (;;) {
        if (!h->heap.len)
            return -1;
        pt__heap4_entry *e = &h->heap.v[0];
        pt_lheap_timer *t = e->item;
        if (t->ts != h)
            bad(t, h, "check");
        /* never (PT_MAXWHEN) is not due even at the clock's end */
        if (!(atomic_load_explicit(&t->astate, memory_order_relaxed) & (MODIFIED | ZOMBIE)) &&
            (e->when > now || e->when == PT_MAXWHEN))
            return e->when;
        t_lock(t);
        if (update_top(h, t, "check")) {
            t_unlock(t);
            continue;
        }
        if (t->when > now || t->when == PT_MAXWHEN) {
            pt_nanos w = t->when;
            t_unlock(t);
            return w;
        }
        if (t->arm_check && t->arm_check == tl_check) {
            /* armed by a callback of this very check: set aside, so that
             * the due timers behind it still run (when full, they wait) */
            if (d->n == DEFER_MAX) {
                pt_nanos w = t->when;
                t_unlock(t);
                return w;
            }
            take_out(h, t, "check");
            atomic_fetch_add_explicit(&t->running, 1, memory_order_relaxed);
            t->run_heap = h;
            d->t[d->n++] = t;
            t_unlock(t);
            continue;
        }
        unlock_and_run(h, t, now);
        return 0;
    }
}

/* The set-aside timers back into h (locked), unless stopped or armed
 * onto a heap meanwhile; then each stops counting as running. */
static void undefer(pt_lheap *h, struct deferred *d)
{
    for (int i = 0; i < d->n; i++) {
        pt_lheap_timer *t = d->t[i];
        t_lock(t);
        if (!(t->state & HEAPED) && t->when > 0) {
            if (pt__heap4_reserve(&h->heap, 1) == 0) {
                t->state |= HEAPED;
                t->ts = h;
                t->when_heap = t->when;
                (void)pt__heap4_push(&h->heap, t->when, t);
            } else {
                t->when = 0; /* no room: idle, as an add that failed */
            }
        }
        t_unlock(t);
        /* the last touch of t: a stop_sync waiting for it may free it now */
        atomic_fetch_sub_explicit(&t->running, 1, memory_order_seq_cst);
    }
    if (d->n) {
        update_min_when_heap(h);
        if (atomic_load_explicit(&h->sync_waiters, memory_order_seq_cst)) {
            atomic_fetch_add_explicit(&h->run_done, 1, memory_order_release);
            pt__futex_wake(&h->run_done, INT_MAX);
        }
    }
}

int pt_lheap_check(pt_lheap *h, pt_nanos now, pt_nanos *poll_until)
{
    if (!heap_ok(h))
        return -EINVAL;
    pt_nanos next = wake_time(h);
    if (next == 0) {
        if (poll_until)
            *poll_until = 0;
        return 0;
    }
    if (now <= 0)
        now = pt_nanotime();
    int32_t zombies = atomic_load_explicit(&h->zombies, memory_order_relaxed);
    if (zombies < 0)
        bad(NULL, h, "check");
    bool force = (uint32_t)zombies > atomic_load_explicit(&h->len, memory_order_relaxed) / 4;
    if (now < next && !force) {
        if (poll_until)
            *poll_until = pt_slack_latest(next, h->slack);
        return 0;
    }
    h_lock(h);
    int ran = 0;
    if (h->heap.len) {
        uint64_t outer = tl_check;
        tl_check = atomic_fetch_add_explicit(&check_ids, 1, memory_order_relaxed) + 1;
        struct deferred d;
        d.n = 0;
        adjust(h, now, force);
        while (run_one(h, now, &d) == 0)
            ran++;
        undefer(h, &d);
        tl_check = outer;
    }
    next = wake_time(h);
    h_unlock(h);
    if (poll_until)
        *poll_until = pt_slack_latest(next, h->slack);
    return ran;
}

int pt_lheap_firing(pt_nanos *when, pt_nanos *now)
{
    if (!when || !now)
        return -EINVAL;
    if (!tl_top)
        return -ENOENT;
    *when = tl_top->when;
    *now = tl_top->now;
    return 0;
}

pt_nanos pt_lheap_next(const pt_lheap *h)
{
    return heap_ok(h) ? pt_slack_latest(wake_time(h), h->slack) : 0;
}

/* ---- moving, counting, verifying ---------------------------------------- */

int pt_lheap_move(pt_lheap *dst, pt_lheap *src)
{
    if (!heap_ok(dst) || !heap_ok(src) || dst == src)
        return -EINVAL;
    pt_lheap *first = dst < src ? dst : src, *second = dst < src ? src : dst;
    h_lock(first);
    h_lock(second);
    if (pt__heap4_reserve(&dst->heap, src->heap.len) < 0) {
        h_unlock(second);
        h_unlock(first);
        return -ENOMEM;
    }
    pt_nanos before = wake_time(dst);
    for (uint32_t i = 0; i < src->heap.len; i++) {
        pt_lheap_timer *t = src->heap.v[i].item;
        if (t->ts != src)
            bad(t, src, "move");
        t_lock(t);
        if (t->state & ZOMBIE) {
            zombie_gone(src, t, "move");
            t->state = 0;
            t->ts = NULL;
        } else {
            t->state &= (uint8_t)~MODIFIED;
            t->when_heap = t->when;
            t->ts = dst;
            (void)pt__heap4_push(&dst->heap, t->when_heap, t);
        }
        t_unlock(t);
    }
    src->heap.len = 0;
    if (atomic_load_explicit(&src->zombies, memory_order_relaxed) != 0)
        bad(NULL, src, "move");
    pt__heap4_shrink(&src->heap);
    atomic_store_explicit(&src->min_when_heap, 0, memory_order_release);
    atomic_store_explicit(&src->min_when_modified, 0, memory_order_release);
    update_min_when_heap(dst);
    pt_nanos after = wake_time(dst);
    bool wake = after != 0 && after != PT_MAXWHEN && (before == 0 || after < before);
    h_unlock(second);
    h_unlock(first);
    if (wake && dst->wake)
        dst->wake(dst->wake_ctx, pt_slack_latest(after, dst->slack));
    return 0;
}

size_t pt_lheap_len(const pt_lheap *h)
{
    return heap_ok(h) ? atomic_load_explicit(&h->len, memory_order_relaxed) : 0;
}

size_t pt_lheap_zombies(const pt_lheap *h)
{
    if (!heap_ok(h))
        return 0;
    int32_t z = atomic_load_explicit(&((pt_lheap *)h)->zombies, memory_order_relaxed);
    return z > 0 ? (size_t)z : 0;
}

static _Thread_local char report[200];

const char *pt_lheap_verify_report(void)
{
    return report;
}

int pt_lheap_verify(pt_lheap *h, bool quiescent)
{
    report[0] = 0;
    if (!heap_ok(h))
        return -EINVAL;
    int r = 0;
    h_lock(h);
    int32_t zombies = 0;
    for (uint32_t i = 0; i < h->heap.len && r == 0; i++) {
        pt__heap4_entry *e = &h->heap.v[i];
        pt_lheap_timer *t = e->item;
        if (i > 0 && e->when < h->heap.v[(i - 1) / 4].when) {
            snprintf(report, sizeof report, "entry %u is earlier than its parent", i);
            r = -EUCLEAN;
            break;
        }
        if (!timer_ok(t) || t->ts != h || t->index != i) {
            snprintf(report, sizeof report, "entry %u: timer %p is not this heap's at %u", i,
                     (void *)t, i);
            r = -EUCLEAN;
            break;
        }
        t_lock(t);
        if (!(t->state & HEAPED) || t->when_heap != e->when) {
            snprintf(report, sizeof report,
                     "entry %u: timer %p state %#x, heap copy %lld, key %lld", i, (void *)t,
                     t->state, (long long)t->when_heap, (long long)e->when);
            r = -EUCLEAN;
        } else if (!(t->state & (MODIFIED | ZOMBIE)) && t->when != e->when) {
            snprintf(report, sizeof report, "entry %u: timer %p unmarked, when %lld, key %lld", i,
                     (void *)t, (long long)t->when, (long long)e->when);
            r = -EUCLEAN;
        } else if ((t->state & ZOMBIE) && (t->when != 0 || !(t->state & MODIFIED))) {
            snprintf(report, sizeof report, "entry %u: zombie %p armed or unmarked", i, (void *)t);
            r = -EUCLEAN;
        }
        if (t->state & ZOMBIE)
            zombies++;
        t_unlock(t);
    }
    if (r == 0 && quiescent && zombies != atomic_load_explicit(&h->zombies, memory_order_relaxed)) {
        snprintf(report, sizeof report, "%d zombies counted, %d found",
                 (int)atomic_load_explicit(&h->zombies, memory_order_relaxed), (int)zombies);
        r = -EUCLEAN;
    }
    if (r == 0 && atomic_load_explicit(&h->min_when_heap, memory_order_relaxed) !=
                      (h->heap.len ? h->heap.v[0].when : 0)) {
        snprintf(report, sizeof report, "heap bound %lld, top %lld",
                 (long long)atomic_load_explicit(&h->min_when_heap, memory_order_relaxed),
                 (long long)(h->heap.len ? h->heap.v[0].when : 0));
        r = -EUCLEAN;
    }
    h_unlock(h);
    return r;
}
