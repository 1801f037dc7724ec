/* pt_wheel: the operations, their locking and the status rows of
 * include/ptimer/pwheel.h. The wheel's data structure is levels.c.
 *
 * Invariant, under the lock of the wheel t->wheel names: t->wheel is set
 * exactly while t is Pending on that wheel or that wheel's `running` is t
 * (its callback runs and its own stop_sync has not released it). So an
 * idle timer names no wheel, a destroyed wheel is named by no timer, and
 * stop_sync always knows which wheel's callback to wait for. */
#include <errno.h>
#include <limits.h>

#include "base/futex.h"
#include "base/lock.h"
#include "pwheel/internal.h"
#include "pwheel/levels.h"

/* The timer whose callback this thread runs now (nested checks of other
 * wheels save and restore it): how stop_sync knows it is called from that
 * callback and must not wait for itself. */
/* The callbacks this thread runs now, innermost first: how stop_sync knows
 * it was called from t's own callback, and pt_wheel_firing's answer. */
struct frame {
    pt_wheel_timer *t;
    pt_nanos when, now; /* the time it fired for; the check's now */
    struct frame *prev;
};
static _Thread_local struct frame *tl_top;

/* The arm and cancel path, inlined into each call: a call is a visible
 * share of an arm + cancel pair (about 400 instructions). */
#define PT__WHOT static inline __attribute__((always_inline))

/* Lock the wheel t names and return it (Linux's lock_timer_base): the
 * pointer is read, its wheel locked, and the pointer read again, since
 * only a holder of that lock changes it. An idle timer names no wheel:
 * with `claim` it is claimed for claim (a CAS under claim's lock, so two
 * threads starting it on two wheels agree on one), else NULL is returned
 * with no lock held. */
PT__WHOT pt_wheel *lock_timer(pt_wheel_timer *t, pt_wheel *claim, const char *op)
{
    for (;;) {
        /* acquire: pairs with the release stores of t->wheel, so the
         * fields written under the previous wheel's lock are visible. */
        pt_wheel *w = atomic_load_explicit(&t->wheel, memory_order_acquire);
        if (!w) {
            if (!claim)
                return NULL;
            pt__lock(&claim->lock);
            pt_wheel *none = NULL;
            if (atomic_compare_exchange_strong_explicit(
                    &t->wheel, &none, claim, memory_order_acq_rel, memory_order_relaxed)) {
                if (pt__wt_status(t) != PT_WHEEL_IDLE)
                    pt__wheel_bad(t, claim, op); /* idle timers name no wheel */
                return claim;
            }
            pt__unlock(&claim->lock);
            continue;
        }
        pt__lock(&w->lock);
        if (atomic_load_explicit(&t->wheel, memory_order_relaxed) == w) {
            if (w->magic != PT__WHEEL_MAGIC)
                pt__wheel_bad(t, w, op); /* a timer on a wheel that is no more */
            return w;
        }
        pt__unlock(&w->lock);
    }
}

/* Pending -> Idle (lock held): unlinked at once. A timer whose callback
 * runs keeps naming the wheel until the callback ends. */
PT__WHOT void unlink_locked(pt_wheel *w, pt_wheel_timer *t, const char *op)
{
    if (t->where == PT__WHERE_NONE)
        pt__wheel_bad(t, w, op); /* Pending, yet in no list */
    pt__wl_unlink(w, t);
    atomic_store_explicit(&w->len, atomic_load_explicit(&w->len, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    pt__wt_set_status(t, PT_WHEEL_IDLE);
}

/* t names no wheel from here (idle, its callback over or released). */
static void release_locked(pt_wheel_timer *t)
{
    /* release: the next thread to claim t (lock_timer's acquire) sees
     * every field written under the lock of the wheel it was on. */
    atomic_store_explicit(&t->wheel, NULL, memory_order_release);
}

/* stop (lock held): 1 if t was pending. Idle is legal only while t's
 * callback runs (that is why t still names w). */
PT__WHOT int stop_locked(pt_wheel *w, pt_wheel_timer *t, const char *op)
{
    uint32_t s = pt__wt_status(t);
    if (s != PT_WHEEL_PENDING) {
        if (w->running != t)
            pt__wheel_bad(t, w, op);
        return 0;
    }
    unlink_locked(w, t, op);
    if (w->running != t)
        release_locked(t);
    return 1;
}

/* `when` as kept: 0 is due at once but kept as 1, since 0 means "none"
 * in next and poll_until; negative is never. */
PT__WHOT pt_nanos norm_when(pt_nanos when)
{
    return when < 0 ? PT_MAXWHEN : when == 0 ? 1 : when;
}

/* Idle or Running -> Pending at `when` (normalised; lock held; period, f,
 * arg, seq set). True if it lowered the wheel's earliest time: the caller
 * then calls wake once the lock is dropped. */
PT__WHOT bool arm_locked(pt_wheel *w, pt_wheel_timer *t, pt_nanos when)
{
    t->when = when;
    pt__wl_file(w, t);
    pt__wt_set_status(t, PT_WHEEL_PENDING);
    atomic_store_explicit(&w->len, atomic_load_explicit(&w->len, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    pt_nanos cur = atomic_load_explicit(&w->next, memory_order_relaxed);
    if (when == PT_MAXWHEN || (cur != 0 && cur <= when))
        return false;
    /* release: a checker that sees this bound and takes the lock finds t */
    atomic_store_explicit(&w->next, when, memory_order_release);
    return true;
}

PT__WHOT void unlock_and_wake(pt_wheel *w, bool wake, pt_nanos when)
{
    pt__unlock(&w->lock);
    /* wake and wake_ctx are set once, by init */
    if (wake && w->wake)
        w->wake(w->wake_ctx, pt_slack_latest(when, w->slack));
}

int pt_wheel_init(pt_wheel *w, pt_nanos tick, pt_wake_func wake, void *ctx)
{
    if (!w)
        return -EINVAL;
    if (tick == 0)
        tick = PT_WHEEL_DEFAULT_TICK;
    if (tick < ((pt_nanos)1 << 10) || tick > ((pt_nanos)1 << 20) || (tick & (tick - 1)))
        return -EINVAL;
    pt__lock_init(&w->lock);
    w->shift = (uint32_t)__builtin_ctzll((uint64_t)tick);
    w->sync_waiters = 0;
    atomic_init(&w->next, 0);
    atomic_init(&w->len, 0);
    atomic_init(&w->run_done, 0);
    w->running = NULL;
    w->busy = 0;
    pt__wl_init(w);
    w->wake = wake;
    w->wake_ctx = ctx;
    w->slack = 0;
    w->magic = PT__WHEEL_MAGIC;
    return 0;
}

int pt_wheel_destroy(pt_wheel *w)
{
    if (!pt__wheel_ok(w))
        return -EINVAL;
    pt__lock(&w->lock);
    int r = 0;
    if (atomic_load_explicit(&w->len, memory_order_relaxed) || w->busy || w->running)
        r = -EBUSY;
    else
        w->magic = 0;
    pt__unlock(&w->lock);
    return r;
}

void pt_wheel_timer_init(pt_wheel_timer *t, pt_func f, void *arg)
{
    if (!t)
        return;
    pt__wl_list_init(&t->link);
    atomic_init(&t->wheel, NULL);
    t->when = 0;
    t->period = 0;
    t->f = f;
    t->arg = arg;
    t->seq = 0;
    atomic_init(&t->status, PT_WHEEL_IDLE);
    t->where = PT__WHERE_NONE;
    t->check = PT__WTIMER_CHECK;
}


int pt_wheel_set_slack(pt_wheel *w, pt_nanos slack)
{
    if (!pt__wheel_ok(w) || slack < 0)
        return -EINVAL;
    w->slack = slack;
    return 0;
}

int pt_wheel_timer_start(pt_wheel *ts, pt_wheel_timer *t, pt_nanos when, pt_nanos period)
{
    if (!pt__wheel_ok(ts) || !pt__wtimer_ok(t) || period < 0)
        return -EINVAL;
    pt_wheel *w = lock_timer(t, ts, "start");
    if (pt__wt_status(t) == PT_WHEEL_PENDING) {
        pt__unlock(&w->lock);
        return -EBUSY;
    }
    t->period = period;
    when = norm_when(when);
    bool wake = arm_locked(w, t, when);
    unlock_and_wake(w, wake, when);
    return 0;
}

/* reset and modify: Pending -> Pending (re-filed on its wheel), Idle or
 * Running -> Pending (on ts, or on the wheel running its callback). */
static int rearm(pt_wheel *ts, pt_wheel_timer *t, pt_nanos when, bool fields, pt_nanos period,
                 pt_func f, void *arg, uintptr_t seq, const char *op)
{
    if (!pt__wheel_ok(ts) || !pt__wtimer_ok(t) || period < 0)
        return -EINVAL;
    pt_wheel *w = lock_timer(t, ts, op);
    int was = pt__wt_status(t) == PT_WHEEL_PENDING;
    if (was)
        unlink_locked(w, t, op);
    if (fields) {
        t->period = period;
        t->f = f;
        t->arg = arg;
        t->seq = seq;
    }
    when = norm_when(when);
    bool wake = arm_locked(w, t, when);
    unlock_and_wake(w, wake, when);
    return was;
}

int pt_wheel_timer_reset(pt_wheel *ts, pt_wheel_timer *t, pt_nanos when)
{
    return rearm(ts, t, when, false, 0, NULL, NULL, 0, "reset");
}

int pt_wheel_timer_modify(pt_wheel *ts, pt_wheel_timer *t, pt_nanos when, pt_nanos period,
                          pt_func f, void *arg, uintptr_t seq)
{
    return rearm(ts, t, when, true, period, f, arg, seq, "modify");
}

int pt_wheel_timer_stop(pt_wheel_timer *t)
{
    if (!pt__wtimer_ok(t))
        return -EINVAL;
    pt_wheel *w = lock_timer(t, NULL, "stop");
    if (!w)
        return 0; /* idle */
    int r = stop_locked(w, t, "stop");
    pt__unlock(&w->lock);
    return r;
}

int pt_wheel_timer_stop_sync(pt_wheel_timer *t)
{
    if (!pt__wtimer_ok(t))
        return -EINVAL;
    /* 1 if any round stopped a pending arming: one made while this waited
     * for a callback (by the callback, or another thread) is stopped by a
     * later round, and its end is this call's to report (a caller that
     * counts armings and their ends lost one when only the first round
     * counted: the thread test, 1 run in 10 under TSan) */
    int r = 0;
    for (;;) {
        pt_wheel *w = lock_timer(t, NULL, "stop_sync");
        if (!w)
            return r;
        r |= stop_locked(w, t, "stop_sync");
        if (w->running != t) {
            pt__unlock(&w->lock);
            return r;
        }
        if (tl_top && tl_top->t == t) {
            /* From t's own callback: release t, so the check running it
             * does not touch it again (the callback may free it now). */
            w->running = NULL;
            pt__wt_set_status(t, PT_WHEEL_IDLE);
            release_locked(t);
            pt__unlock(&w->lock);
            return r;
        }
        /* Its callback runs on another thread: sleep until a callback of
         * w ends (the runner bumps run_done under the lock, so a bump
         * after this read makes the wait return), then look again: a
         * callback that re-armed t is stopped again. */
        uint32_t v = atomic_load_explicit(&w->run_done, memory_order_relaxed);
        w->sync_waiters++;
        pt__unlock(&w->lock);
        pt__futex_wait(&w->run_done, v, 0);
    }
}

/* The next time of a ticker that fired late: the first when + k * period
 * after now, skipping missed ticks (Go's rule); never on overflow. */
static pt_nanos ticker_next(pt_nanos when, pt_nanos period, pt_nanos now)
{
    pt_nanos k = 1 + (now - when) / period, add, next;
    if (__builtin_mul_overflow(k, period, &add) || __builtin_add_overflow(when, add, &next) ||
        next == PT_MAXWHEN)
        return PT_MAXWHEN;
    return next;
}

/* Run the due list (lock held, w->busy set by the caller): one timer at a
 * time, the lock dropped around its callback. Returns how many ran. */
static int run_due(pt_wheel *w, pt_nanos now)
{
    int ran = 0;
    while (!pt__wl_list_empty(&w->due)) {
        pt_wheel_timer *t = pt__wl_timer(w->due.next);
        if (pt__wt_status(t) != PT_WHEEL_PENDING || t->where != PT__WHERE_DUE ||
            atomic_load_explicit(&t->wheel, memory_order_relaxed) != w)
            pt__wheel_bad(t, w, "check");
        pt__wl_unlink(w, t);
        /* Another thread's check, with a later now, may have collected t
         * while this one ran callbacks: read the clock again rather than
         * key the ticker's next tick (and the firing's now) by a time t
         * was not yet due at. */
        if (t->when > now)
            now = pt_nanotime();
        struct frame fr = {t, t->when, now, tl_top};
        if (t->period > 0) {
            /* Pending -> Pending: re-filed before the callback, which may
             * stop or re-arm it like any pending timer. */
            t->when = ticker_next(t->when, t->period, now);
            pt__wl_file(w, t);
        } else {
            /* Pending -> Running: it keeps naming w until the callback ends. */
            pt__wt_set_status(t, PT_WHEEL_RUNNING);
            atomic_store_explicit(&w->len, atomic_load_explicit(&w->len, memory_order_relaxed) - 1,
                                  memory_order_relaxed);
        }
        pt_func f = t->f;
        void *arg = t->arg;
        uintptr_t seq = t->seq;
        w->running = t;
        pt__unlock(&w->lock);
        tl_top = &fr;
        f(arg, seq);
        tl_top = fr.prev;
        pt__lock(&w->lock);
        if (w->running == t) { /* not released by its own stop_sync: t is still alive */
            w->running = NULL;
            /* Running -> Idle, unless the callback re-armed it */
            if (pt__wt_status(t) != PT_WHEEL_PENDING) {
                pt__wt_set_status(t, PT_WHEEL_IDLE);
                release_locked(t);
            }
        }
        if (w->sync_waiters) {
            w->sync_waiters = 0;
            atomic_fetch_add_explicit(&w->run_done, 1, memory_order_relaxed);
            pt__futex_wake(&w->run_done, INT_MAX);
        }
        ran++;
    }
    return ran;
}

int pt_wheel_firing(pt_nanos *when, pt_nanos *now)
{
    if (!when || !now)
        return -EINVAL;
    if (!tl_top)
        return -ENOENT;
    *when = tl_top->when;
    *now = tl_top->now;
    return 0;
}

int pt_wheel_check(pt_wheel *w, pt_nanos now, pt_nanos *poll_until)
{
    if (!pt__wheel_ok(w))
        return -EINVAL;
    if (now <= 0)
        now = pt_nanotime();
    /* acquire: pairs with arm_locked's release of a lower bound */
    pt_nanos next = atomic_load_explicit(&w->next, memory_order_acquire);
    if (next == 0 || next > now) {
        if (poll_until)
            *poll_until = pt_slack_latest(next, w->slack);
        return 0;
    }
    pt__lock(&w->lock);
    pt__wl_collect(w, now);
    int ran = 0;
    if (!w->busy) { /* else the thread running callbacks runs what was collected */
        w->busy = 1;
        ran = run_due(w, now);
        w->busy = 0;
    }
    next = pt__wl_bound(w);
    atomic_store_explicit(&w->next, next, memory_order_release);
    pt__unlock(&w->lock);
    if (poll_until)
        *poll_until = pt_slack_latest(next, w->slack);
    return ran;
}

pt_nanos pt_wheel_next(const pt_wheel *w)
{
    if (!pt__wheel_ok(w))
        return 0;
    return pt_slack_latest(atomic_load_explicit(&((pt_wheel *)w)->next, memory_order_acquire),
                           w->slack);
}

size_t pt_wheel_len(const pt_wheel *w)
{
    if (!pt__wheel_ok(w))
        return 0;
    return atomic_load_explicit(&((pt_wheel *)w)->len, memory_order_relaxed);
}

struct move_ctx {
    pt_wheel *dst, *src;
    pt_nanos earliest; /* of the timers moved; 0: none */
};

static int move_one(pt_wheel_timer *t, uint32_t where, void *vctx)
{
    struct move_ctx *m = vctx;
    (void)where;
    if (pt__wt_status(t) != PT_WHEEL_PENDING ||
        atomic_load_explicit(&t->wheel, memory_order_relaxed) != m->src)
        pt__wheel_bad(t, m->src, "move");
    pt__wl_unlink(m->src, t);
    /* Both locks are held: whoever locked src for t rechecks and follows. */
    atomic_store_explicit(&t->wheel, m->dst, memory_order_release);
    pt__wl_file(m->dst, t);
    if (t->when != PT_MAXWHEN && (m->earliest == 0 || t->when < m->earliest))
        m->earliest = t->when;
    return 0;
}

int pt_wheel_move(pt_wheel *dst, pt_wheel *src)
{
    if (!pt__wheel_ok(dst) || !pt__wheel_ok(src) || dst == src)
        return -EINVAL;
    /* Two wheels' locks, always in address order. */
    pt_wheel *first = dst < src ? dst : src, *second = dst < src ? src : dst;
    pt__lock(&first->lock);
    pt__lock(&second->lock);
    if (src->busy || src->running) {
        pt__unlock(&second->lock);
        pt__unlock(&first->lock);
        return -EBUSY;
    }
    struct move_ctx m = {dst, src, 0};
    pt__wl_walk(src, move_one, &m);
    uint32_t n = atomic_load_explicit(&src->len, memory_order_relaxed);
    atomic_store_explicit(&src->len, 0, memory_order_relaxed);
    atomic_store_explicit(&dst->len, atomic_load_explicit(&dst->len, memory_order_relaxed) + n,
                          memory_order_relaxed);
    atomic_store_explicit(&src->next, 0, memory_order_release);
    pt_nanos cur = atomic_load_explicit(&dst->next, memory_order_relaxed);
    bool wake = m.earliest != 0 && (cur == 0 || m.earliest < cur);
    if (wake)
        atomic_store_explicit(&dst->next, m.earliest, memory_order_release);
    pt__unlock(&second->lock);
    pt__unlock(&first->lock);
    if (wake && dst->wake)
        dst->wake(dst->wake_ctx, pt_slack_latest(m.earliest, dst->slack));
    return 0;
}
