/* Go's time package on the scheduler's timers: Timer, AfterFunc and
 * Ticker (time/sleep.go, tick.go), with Go 1.23's guarantee that no value
 * prepared before a Stop or Reset is received after it returns.
 *
 * Two engines carry a timer, picked by whoever arms it (new, reset):
 *  - heap: its own timer on the arming G's P's heap (PT_TIMERS_PER_P and
 *    PT_TIMERS_LHEAP, sched/ptimers.h); a ticker is a periodic timer, whose run re-keys it to the
 * next start + k * period and skips the ticks missed while late (Go's).
 *  - TimerThread: a task on the process's TimerThread (PT_TIMERS_TIMERTHREAD,
 *    and every caller that is not a G of the timer's scheduler). A task
 *    runs once, so a ticker's task schedules the next tick itself, from
 *    the tick it was due at, keeping the same phase and skipping.
 * A stop tears down both (only one is ever armed), and a reset re-arms on
 * whichever engine the caller's place picks.
 *
 * A Timer's or Ticker's channel timer is lazy, as Go 1.23's: it enters an
 * engine only while a G is parked on its channel. Otherwise it is a due
 * time: every receive, select and len on the channel polls it first, and
 * a value that has come due is delivered then (a ticker's next due is the
 * first tick of its phase after the poll, the missed ones skipped). A G
 * about to park on the channel tells the timer (block), which arms an
 * engine at the due time; the last G to leave (unblock) stops it, lazily:
 * on the heap Go's lazy deltimer, on the TimerThread not at all (Go 1.23's
 * zombie): the task stays for the next block to take back, and run with
 * nobody waiting it schedules no next one. So a select that finds another
 * case ready, the call-with-timeout idiom, never touches a heap, and a
 * Ticker nobody reads costs nothing past its one task. Every
 * value, from a poll or an engine, is sent by fire_due_locked under the
 * timer's lock, which is also where Stop and Reset clear or move the due
 * time: a callback of an old arming finds nothing due and sends nothing.
 *
 * The guarantee (Go 1.23 makes timer channels synchronous for it; here
 * they keep their one-value buffer, and Stop and Reset empty it):
 *  0. A channel timer: clear its due time under its lock; no poll or
 *     engine callback sends for the old arming after that. An engine it
 *     used since the last stop still goes through step 1, so that no
 *     callback of it runs once the timer is freed or cached.
 *  1. Stop the engine so that no callback of the old arming is in flight
 *     or can start: on the heap, stop, and when that did not stop
 *     a pending arming or a callback still runs, stop_sync
 *     (running callbacks waited out); or, on the TimerThread, `armed` cleared under
 *     the timer's lock (a task that starts later sees it and sends
 *     nothing), the task unscheduled, and one already running waited out
 *     (tt_pending). After this no old value can enter the channel.
 *  2. Take a buffered value out with try_recv: discarded.
 * A receiver racing with the call meets the sends and the discard under
 * the channel's lock: either it took the value before the discard (its
 * receive is ordered before the call returned), or the discard did and it
 * finds nothing old. A G that was blocked in a receive when the callback
 * sent got the value handed over inside that send, which step 1 waited
 * for: that receive completed before the call returned, even if the G
 * runs only later, and Stop answers 0 for it, as Go's does for a value
 * already delivered. Values after a Reset come from the new arming only.
 *
 * Stop, reset, free, block and unblock of one timer are serialised by its
 * `op` lock (Go 1.23's timer mutex), which they hold across the waits of
 * step 1: a waiter yields (pt_yield in a G), so two Gs on one P cannot
 * deadlock on it. Callbacks and polls never take it. Lock order: op, then
 * the timer's lock, then the channel's and the scheduler's locks (a value
 * is sent, and Gs started, under the timer's lock; the channel's side
 * calls poll, block and unblock with no lock of its own held). */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lock.h"
#include "sched/chan.h"
#include "sched/internal.h"
#include "sched/sanitizer.h"

/* AfterFunc found no memory for its G: it tries again this much later
 * rather than lose f (Go would have thrown). */
#define RETRY_NS ((pt_nanos)1000000)

enum kind { KIND_CHAN, KIND_FUNC, KIND_TICKER };

struct pt_time_timer {
    union pt__ptimer timer; /* the heap engine, of s's per-P family (pheap without s) */
    enum kind kind;
    pt_sched *s; /* the scheduler of the G that made it; NULL: none */
    pt_chan *c;  /* NULL for AfterFunc */
    void (*f)(void *);
    void *arg;
    pt_nanos period;     /* tickers; written under op with nothing armed */
    _Atomic uint32_t op; /* serialises stop, reset and free */
    bool live;           /* armed since the last stop_all (op held, or in make) */
    /* The TimerThread engine. `lock` guards armed, when, task and tt
     * against the running task; tt_pending counts the tasks scheduled
     * for t that have not yet finished with it. */
    _Atomic uint32_t lock;
    bool armed;
    pt_nanos when; /* the time the current task is due */
    pt_task_id task;
    pt_timerthread *tt;
    _Atomic uint32_t tt_pending;
    struct pt_time_timer *cache_next; /* in a P's cache */
    /* The P heap the timer was last armed on, where a lazy stop may
     * have left it (NULL: none). Kept in the cache. */
    union pt__ptimers *heap;
    /* A channel timer's lazy state. due is written under `lock` and read
     * without it by the poll's quick look; engaged under `lock`; blocked
     * changes under op and `lock`, and free reads it; engine_used under op. */
    _Atomic pt_nanos due;      /* the next value's due time; 0: none pending */
    _Atomic uint32_t blocked;  /* Gs between block and unblock */
    bool engaged;              /* an engine holds an arming for it now */
    bool engine_used;          /* an engine held one since the last stop_all */
};

/* A ticker is a timer of its own kind; the type keeps the APIs apart. */
struct pt_time_ticker {
    pt_time_timer t;
};

/* ---- small helpers --------------------------------------------------------- */

/* The family of t's heap timer: its scheduler's per-P one (a timer made
 * outside a G has a status-machine timer, which never enters a heap). */
static bool lheap_of(const pt_time_timer *t)
{
    return t->s && pt__lheap(t->s);
}

/* Go's when(d): now for d <= 0, now + d, or never past the clock's range. */
static pt_nanos when_of(pt_nanos now, pt_nanos d)
{
    pt_nanos w;
    if (d <= 0)
        return now;
    if (__builtin_add_overflow(now, d, &w))
        return PT_MAXWHEN;
    return w;
}

/* The first tick after `now` of the phase through `due` (a tick due at or
 * before now): due + k * period, k >= 1. Overflow means never. */
static pt_nanos next_tick(pt_nanos due, pt_nanos period, pt_nanos now)
{
    pt_nanos missed = now > due ? (now - due) / period : 0, step, next;
    if (__builtin_mul_overflow(missed + 1, period, &step) ||
        __builtin_add_overflow(due, step, &next))
        return PT_MAXWHEN;
    return next;
}

/* A short wait on another thread's few instructions: let the rest run. */
static void pause_for_other(void)
{
    if (pt_g_current())
        pt_yield();
    else
        sched_yield();
}

static void op_lock(pt_time_timer *t)
{
    uint32_t z = 0;
    while (!atomic_compare_exchange_weak_explicit(&t->op, &z, 1, memory_order_acquire,
                                                  memory_order_relaxed)) {
        z = 0;
        pause_for_other();
    }
}

static void op_unlock(pt_time_timer *t)
{
    atomic_store_explicit(&t->op, 0, memory_order_release);
}

/* The fired value: Go's sendTime, a send that drops it when the channel
 * is full (a slow ticker reader). The value is the time the tick was due,
 * not the time of the send, as Go 1.23 sends (Now() less the delay): a
 * lazy timer's send waits for a reader to look, so the send's own time
 * would say when someone looked, and a ticker's values would not show its
 * phase. */
static void send_time(pt_time_timer *t, pt_nanos due)
{
    (void)pt_chan_try_send(t->c, &due);
}

/* A channel timer's value, if one is due by now (t->lock held): the one
 * place a channel timer sends. A ticker's next due is the first tick of
 * its phase after now: ticks missed while nobody looked are skipped. */
static void fire_due_locked(pt_time_timer *t, pt_nanos now)
{
    pt_nanos due = atomic_load_explicit(&t->due, memory_order_relaxed);
    if (due == 0 || due > now)
        return;
    pt_nanos next = t->kind == KIND_TICKER ? next_tick(due, t->period, now) : 0;
    atomic_store_explicit(&t->due, next, memory_order_relaxed);
    send_time(t, due);
}

static int tt_arm_locked(pt_time_timer *t, pt_nanos when);

/* ---- the TimerThread engine ---------------------------------------------- */

/* A task is done with t: its last touch (the stopper may free t at once). */
static void tt_done(pt_time_timer *t)
{
    /* release: pairs with the stopper's acquire, so what the task did to
     * t and the channel comes before the stopper's return */
    atomic_fetch_sub_explicit(&t->tt_pending, 1, memory_order_release);
}

static void tt_fire(void *arg)
{
    pt_time_timer *t = arg;
    pt_nanos now = pt__now(t->s);
    pt__lock(&t->lock);
    if (!t->armed) { /* stopped after this task was due: it sends nothing */
        pt__unlock(&t->lock);
        tt_done(t);
        return;
    }
    switch (t->kind) {
    case KIND_CHAN:
    case KIND_TICKER: {
        fire_due_locked(t, now);
        /* a ticker's next tick, while a G still waits; with no room for
         * it the next poll or block delivers it */
        pt_nanos due = atomic_load_explicit(&t->due, memory_order_relaxed);
        if (!due || !t->engaged || tt_arm_locked(t, due) < 0)
            t->armed = false;
        break;
    }
    case KIND_FUNC:
        t->armed = false;
        if (!t->s) {
            /* no scheduler: f runs here, after the last touch of t, so
             * that f may free its timer and a stop never waits for f */
            void (*f)(void *) = t->f;
            void *farg = t->arg;
            pt__unlock(&t->lock);
            tt_done(t);
            f(farg);
            return;
        }
        if (pt_go(t->s, t->f, t->arg) == -ENOMEM)
            (void)tt_arm_locked(t, when_of(now, RETRY_NS)); /* no room at all: f is lost */
        break;
    }
    pt__unlock(&t->lock);
    tt_done(t);
}

/* Schedules t's task at `when` (t->lock held). 0; -ENOMEM. */
static int tt_arm_locked(pt_time_timer *t, pt_nanos when)
{
    pt_timerthread *tt = t->s && t->s->tt ? t->s->tt : pt_timerthread_global();
    if (!tt)
        return -ENOMEM;
    atomic_fetch_add_explicit(&t->tt_pending, 1, memory_order_relaxed);
    pt_task_id id = pt_timerthread_schedule_slack(tt, tt_fire, t, when, t->s ? t->s->opt.timer_slack : 0);
    if (id == PT_INVALID_TASK_ID) {
        atomic_fetch_sub_explicit(&t->tt_pending, 1, memory_order_relaxed);
        return -ENOMEM;
    }
    t->tt = tt;
    t->task = id;
    t->when = when;
    t->armed = true;
    return 0;
}

static int tt_arm(pt_time_timer *t, pt_nanos when)
{
    pt__lock(&t->lock);
    int r = tt_arm_locked(t, when);
    pt__unlock(&t->lock);
    return r;
}

/* Unschedules t's task, if armed, without waiting for one that runs now.
 * True if it was armed. */
static bool tt_cancel(pt_time_timer *t)
{
    pt__lock(&t->lock);
    bool was = t->armed;
    pt_task_id id = t->task;
    pt_timerthread *tt = t->tt;
    t->armed = false; /* a task that starts from now on sends nothing */
    t->task = PT_INVALID_TASK_ID;
    pt__unlock(&t->lock);
    if (was && pt_timerthread_unschedule(tt, id) == 0)
        atomic_fetch_sub_explicit(&t->tt_pending, 1, memory_order_relaxed);
    return was;
}

/* Step 1 on the TimerThread (op held). True if t was armed there and this
 * call kept its task from firing. */
static bool tt_stop(pt_time_timer *t)
{
    /* Under op, tasks are only added by a task already pending (a ticker's
     * next tick, a retry): none pending means none armed, and none comes. */
    if (atomic_load_explicit(&t->tt_pending, memory_order_acquire) == 0)
        return false;
    bool was = tt_cancel(t);
    /* a task running now (it found armed false, or fired just before):
     * a few instructions under t's lock, then done */
    while (atomic_load_explicit(&t->tt_pending, memory_order_acquire) != 0)
        pause_for_other();
    return was;
}

/* ---- the heap engine ------------------------------------------------------- */

#ifdef PT_TEST_HOOKS
void (*_Atomic pt__time_fire_hook)(pt_time_timer *t);
#endif

uint32_t pt__time_timer_callbacks(pt_time_timer *t)
{
    return atomic_load_explicit(&t->timer.ph.callbacks, memory_order_acquire);
}

pt_nanos pt__time_timer_due(pt_time_timer *t)
{
    return atomic_load_explicit(&t->due, memory_order_relaxed);
}

/* A heap timer's callback, on whichever thread runs that heap's timers. */
static void heap_fire(void *arg, uintptr_t seq)
{
    (void)seq;
    pt_time_timer *t = arg;
#ifdef PT_TEST_HOOKS
    void (*hook)(pt_time_timer *) = atomic_load_explicit(&pt__time_fire_hook, memory_order_relaxed);
    if (hook)
        hook(t);
#endif
    pt_nanos now = pt__now(t->s);
    if (t->kind != KIND_FUNC) {
        pt__lock(&t->lock);
        fire_due_locked(t, now);
        pt__unlock(&t->lock);
        return;
    }
    /* A retry goes to the TimerThread: a stop waits this callback out
     * (stop_sync) before it looks there, so it sees the retry. */
    if (pt_go(t->s, t->f, t->arg) == -ENOMEM)
        (void)tt_arm(t, when_of(now, RETRY_NS)); /* no room at all: f is lost */
}

/* ---- arming and stopping ----------------------------------------------------- */

/* Arms t's engine at `when`, the one the caller's place picks: its P's
 * heap for a G (or an M) of t's per-P scheduler, else the TimerThread,
 * which also takes a timer the heap has no room for. 0; -ENOMEM. */
static int engine_arm(pt_time_timer *t, pt_nanos when)
{
    union pt__ptimers *ts = NULL;
    bool lh = lheap_of(t);
    if (t->s && t->s->opt.timers != PT_TIMERS_TIMERTHREAD)
        ts = pt__here_timers(t->s);
    if (ts && t->heap && t->heap != ts) {
        /* a lazy stop left it in another P's heap, where modify would
         * revive it: unlinked, it goes onto this P's, as its G expects */
        pt__ptimer_stop_sync(lh, &t->timer);
        t->heap = NULL;
    }
    /* t in no heap goes onto ts; one a lazy stop left in ts is revived */
    if (ts && pt__ptimer_modify(lh, ts, &t->timer, when, t->kind == KIND_TICKER ? t->period : 0,
                                heap_fire, t, 0) >= 0) {
        t->heap = ts;
        return 0;
    }
    return tt_arm(t, when);
}

/* Stops t's engine without waiting for a callback that runs now: on the
 * heap Go's lazy deltimer; the next stop_all waits any out. */
static void engine_quiet(pt_time_timer *t)
{
    (void)pt__ptimer_stop(lheap_of(t), &t->timer);
    (void)tt_cancel(t);
}

/* Arms t (op held, or in make): an AfterFunc on its engine; a channel
 * timer lazily, on an engine only while a G waits on its channel. */
static int arm(pt_time_timer *t, pt_nanos when)
{
    t->live = true;
    if (t->kind == KIND_FUNC)
        return engine_arm(t, when);
    pt__lock(&t->lock);
    atomic_store_explicit(&t->due, when, memory_order_relaxed);
    t->engaged = atomic_load_explicit(&t->blocked, memory_order_relaxed) > 0;
    pt__unlock(&t->lock);
    if (!t->engaged)
        return 0;
    t->engine_used = true;
    if (engine_arm(t, when) == 0)
        return 0;
    pt__lock(&t->lock);
    atomic_store_explicit(&t->due, 0, memory_order_relaxed);
    t->engaged = false;
    pt__unlock(&t->lock);
    return -ENOMEM;
}

/* ---- the channel's side: poll, block, unblock ------------------------------------ */

bool pt__time_chan_due(pt_time_timer *t)
{
    pt_nanos due = atomic_load_explicit(&t->due, memory_order_relaxed);
    /* Most polls find the value still to come (a timeout around a
     * receive that something else answers): the unordered read, which a
     * little behind can only make a delivery a little later, answers
     * those; the value itself carries an ordered read. */
    return due && due <= (t->s && t->s->opt.virtual_time ? pt__now(t->s) : pt_nanotime_relaxed());
}

void pt__time_chan_poll(pt_time_timer *t)
{
    if (!pt__time_chan_due(t))
        return;
    pt_nanos now = pt__now(t->s);
    pt__lock(&t->lock);
    fire_due_locked(t, now);
    pt__unlock(&t->lock);
}

void pt__time_chan_block(pt_time_timer *t)
{
    op_lock(t);
    pt__lock(&t->lock);
    atomic_fetch_add_explicit(&t->blocked, 1, memory_order_relaxed);
    pt_nanos due = atomic_load_explicit(&t->due, memory_order_relaxed);
    bool engage = due && !t->engaged;
    /* a task the last unblock left on the TimerThread serves this wait as
     * it is when it is due with this value; any other is cancelled */
    bool kept = engage && t->armed && t->when == due, stale = engage && t->armed && !kept;
    if (engage)
        t->engaged = true;
    pt__unlock(&t->lock);
    if (stale)
        (void)tt_cancel(t);
    if (engage && !kept) {
        t->engine_used = true;
        if (engine_arm(t, due) < 0) {
            /* no room in any engine: the next poll delivers it */
            pt__lock(&t->lock);
            t->engaged = false;
            pt__unlock(&t->lock);
        }
    }
    op_unlock(t);
}

void pt__time_chan_unblock(pt_time_timer *t)
{
    op_lock(t);
    pt__lock(&t->lock);
    bool last = atomic_load_explicit(&t->blocked, memory_order_relaxed) == 1;
    bool quiet = last && t->engaged;
    if (quiet)
        t->engaged = false;
    /* A task on the TimerThread stays (Go 1.23's zombie): the next block
     * takes it back if its time is still the due one (a ticker read in a
     * loop schedules one task a tick, not three), and if it runs first,
     * finding nobody engaged it schedules no next one. */
    if (quiet && t->armed)
        quiet = false;
    pt__unlock(&t->lock);
    if (quiet)
        engine_quiet(t);
    /* release, and last: free waits for 0, then may free t at once */
    atomic_fetch_sub_explicit(&t->blocked, 1, memory_order_release);
    op_unlock(t);
}

/* Step 1 on the heap: Go's lazy deltimer when it stopped the arming
 * before it began and no earlier callback (a ticker's last tick) still
 * runs; the timer then stays in its heap, stopped, so t may go to a P's
 * cache or be armed again, but must be unlinked before it is freed. */
static bool stop_heap(pt_time_timer *t)
{
    bool lh = lheap_of(t);
    bool was = pt__ptimer_stop(lh, &t->timer) == 1;
    if (was && !pt__ptimer_running(lh, &t->timer))
        return true;
    return (pt__ptimer_stop_sync(lh, &t->timer) == 1) | was;
}

/* Step 1 and 2 (op held): nothing of the old arming can reach the channel
 * once this returns. True if it stopped a pending timer or discarded a
 * fired value. The heap first: its callback may re-arm on the TimerThread. */
static bool stop_all(pt_time_timer *t)
{
    bool was, empty = false;
    if (t->kind == KIND_FUNC) {
        was = stop_heap(t);
        was |= tt_stop(t);
    } else {
        /* step 0: pending is what the due time says, whatever an engine
         * held; an engine's callbacks are waited out all the same */
        pt__lock(&t->lock);
        was = atomic_load_explicit(&t->due, memory_order_relaxed) != 0;
        atomic_store_explicit(&t->due, 0, memory_order_relaxed);
        t->engaged = false;
        pt__unlock(&t->lock);
        /* A Timer still due has sent nothing of this arming (its send
         * clears the due time, under the same lock), and the stop or reset
         * that ended each earlier arming took its value out: the channel
         * is empty, and step 2 is not needed. A Ticker's due time is never
         * cleared by a send. */
        empty = was && t->kind == KIND_CHAN;
        if (t->engine_used) {
            (void)stop_heap(t);
            (void)tt_stop(t);
            t->engine_used = false;
        }
    }
    if (t->c && !empty && pt__chan_drain(t->c))
        was = true; /* fired but unread: Go 1.23 treats it as never sent */
    t->live = false;
    return was;
}

/* ---- making and freeing ------------------------------------------------------ */

/* Frees t and its channel; a lazy stop may have left its timer in a
 * heap, so it is unlinked first. -EBUSY (nothing freed) while a G waits
 * on the channel. */
static int dispose(pt_time_timer *t)
{
    if (t->c) {
        int r = pt_chan_free(t->c);
        if (r < 0)
            return r;
    }
    pt__ptimer_stop_sync(lheap_of(t), &t->timer);
    pt__free(t);
    return 0;
}

/* A P keeps up to this many freed timers with a channel (Timer, Ticker),
 * idle and empty, for its Gs' next new: a Go program drops its Timer to
 * the collector, and a C one frees it on the spot, so without the cache
 * every timeout paid two allocations and two frees (a fifth of
 * chan-timeout's instructions). Only the P's own M touches it. */
#define TCACHE_MAX 32

/* While cached, what a caller's stale pointer would reach (everything but
 * the timer, which a heap may still hold stopped, and the cache's own
 * links) is poisoned for AddressSanitizer: Go would keep such a Timer
 * alive; a C caller using one it freed has a bug that should be seen. */
#define CACHED_LO(t) ((char *)(t) + offsetof(pt_time_timer, kind))
#define CACHED_LEN (offsetof(pt_time_timer, cache_next) - offsetof(pt_time_timer, kind))

static struct pt__p *cache_p(pt_sched *s)
{
    struct pt__m *m = s ? pt__cur_m() : NULL;
    if (!m || m->s != s || atomic_load_explicit(&m->p->dead, memory_order_relaxed))
        return NULL;
    return m->p;
}

/* Where a timer of s made or freed is counted: on the caller's P, p,
 * when it runs on one (a line only that P writes: Gs on two Ps making
 * and freeing timers would pass one shared line back and forth on every
 * call), else on s. pt_sched_destroy sums them all. NULL without s. */
static _Atomic int64_t *live_count(pt_sched *s, struct pt__p *p)
{
    return p ? &p->time.timers : s ? &s->time_timers : NULL;
}

/* p: the caller's P (cache_p), NULL for none. */
static pt_time_timer *cache_get(struct pt__p *p)
{
    pt_time_timer *t = p ? p->time.cache : NULL;
    if (t) {
        p->time.cache = t->cache_next;
        p->time.ncache--;
        pt__asan_unpoison(CACHED_LO(t), CACHED_LEN);
    }
    return t;
}

/* t's channel, emptied, goes with it into p's cache (the caller's P,
 * cache_p); false if t stays the caller's. No G is on the channel or
 * about to be: destroy saw t's blocked count at 0, under op. */
static bool cache_put(pt_time_timer *t, struct pt__p *p)
{
    if (!p || p->time.ncache >= TCACHE_MAX || !t->c || !pt__chan_reuse(t->c))
        return false;
    if (t->heap && t->heap != &p->timers) {
        pt__ptimer_stop_sync(lheap_of(t), &t->timer); /* this P's next new arms it here */
        t->heap = NULL;
    }
    t->cache_next = p->time.cache;
    p->time.cache = t;
    p->time.ncache++;
    pt__asan_poison(CACHED_LO(t), CACHED_LEN);
    return true;
}

/* The P's cached timers, at its end */
static void cache_free(struct pt__p *p)
{
    for (pt_time_timer *t = p->time.cache, *next; t; t = next) {
        next = t->cache_next;
        pt__asan_unpoison(CACHED_LO(t), CACHED_LEN);
        dispose(t); /* idle and empty: nobody waits on it */
    }
    p->time.cache = NULL;
    p->time.ncache = 0;
}

const struct pt__service pt__time_service = {.p_close = cache_free};

static int make(pt_time_timer **out, enum kind kind, pt_nanos d, pt_nanos period, void (*f)(void *),
                void *arg)
{
    pt_sched *s = pt_sched_current();
    pt_nanos now = pt__now(s);
    struct pt__p *p = cache_p(s); /* read once: make does not switch */
    pt_time_timer *t = kind != KIND_FUNC ? cache_get(p) : NULL;
    pt_chan *c = NULL;
    if (t) {
        /* its timer is stopped, perhaps still in this P's heap: kept */
        c = t->c;
        union pt__ptimers *heap = t->heap;
        memset((char *)t + sizeof t->timer, 0, sizeof *t - sizeof t->timer);
        t->heap = heap;
    } else {
        if (!(t = pt__malloc(sizeof *t)))
            return -ENOMEM;
        memset(t, 0, sizeof *t);
        pt__ptimer_init(s && pt__lheap(s), &t->timer, heap_fire, t);
    }
    t->kind = kind;
    t->s = s;
    t->c = c;
    t->f = f;
    t->arg = arg;
    t->period = period;
    t->task = PT_INVALID_TASK_ID;
    if (kind != KIND_FUNC && !t->c) {
        if (pt_chan_make(&t->c, sizeof(pt_nanos), 1) < 0) {
            pt__free(t); /* new: its timer was never armed */
            return -ENOMEM;
        }
        t->c->timer = t;
    }
    /* counted before it can fire: its AfterFunc may start a G of s */
    _Atomic int64_t *live = live_count(s, p);
    if (live)
        atomic_fetch_add_explicit(live, 1, memory_order_relaxed);
    pt_nanos when = when_of(now, d);
    if (kind != KIND_FUNC) {
        /* unseen by any other thread yet: no G waits, no lock needed */
        t->live = true;
        atomic_store_explicit(&t->due, when, memory_order_relaxed);
    } else if (arm(t, when) < 0) {
        if (live)
            atomic_fetch_sub_explicit(live, 1, memory_order_release);
        dispose(t); /* nobody has seen it */
        return -ENOMEM;
    }
    *out = t;
    return 0;
}

static int destroy(pt_time_timer *t)
{
    for (;;) {
        op_lock(t);
        /* Stopped and not armed since (Go's Stop, then the end of its
         * reference): nothing can reach t any more, and the channel goes
         * with it, so a second stop is not needed. */
        if (t->live)
            stop_all(t);
        /* A G between block and unblock still touches t: one queued on
         * the channel keeps it (-EBUSY below), one already woken is
         * about to leave, its unblock done once op is ours again. */
        if (atomic_load_explicit(&t->blocked, memory_order_acquire) == 0)
            break;
        op_unlock(t);
        if (pt__chan_waited(t->c))
            return -EBUSY; /* stopped, not freed */
        pause_for_other();
    }
    op_unlock(t);
    pt_sched *s = t->s;
    struct pt__p *p = cache_p(s);
    if (!cache_put(t, p)) {
        int r = dispose(t);
        if (r < 0)
            return r; /* a G waits on it: stopped, not freed */
    }
    if (s) /* release: destroy of s, seeing 0, comes after every use of t */
        atomic_fetch_sub_explicit(live_count(s, p), 1, memory_order_release);
    return 0;
}

/* ---- the API: Timer, AfterFunc ------------------------------------------------ */

int pt_time_timer_new(pt_time_timer **out, pt_nanos d)
{
    if (!out)
        return -EINVAL;
    return make(out, KIND_CHAN, d, 0, NULL, NULL);
}

int pt_time_after_func(pt_time_timer **out, pt_nanos d, void (*f)(void *), void *arg)
{
    if (!out || !f)
        return -EINVAL;
    return make(out, KIND_FUNC, d, 0, f, arg);
}

pt_chan *pt_time_timer_chan(pt_time_timer *t)
{
    return t && t->kind != KIND_TICKER ? t->c : NULL;
}

int pt_time_timer_stop(pt_time_timer *t)
{
    if (!t || t->kind == KIND_TICKER)
        return -EINVAL;
    op_lock(t);
    bool was = stop_all(t);
    op_unlock(t);
    return was;
}

int pt_time_timer_reset(pt_time_timer *t, pt_nanos d)
{
    if (!t || t->kind == KIND_TICKER)
        return -EINVAL;
    pt_nanos now = pt__now(t->s);
    op_lock(t);
    bool was = stop_all(t);
    int r = arm(t, when_of(now, d));
    op_unlock(t);
    return r < 0 ? r : was;
}

int pt_time_timer_free(pt_time_timer *t)
{
    if (!t || t->kind == KIND_TICKER)
        return -EINVAL;
    return destroy(t);
}

/* ---- the API: Ticker --------------------------------------------------------------- */

int pt_time_ticker_new(pt_time_ticker **out, pt_nanos period)
{
    if (!out || period <= 0)
        return -EINVAL;
    pt_time_timer *t;
    int r = make(&t, KIND_TICKER, period, period, NULL, NULL);
    if (r == 0)
        *out = (pt_time_ticker *)t;
    return r;
}

/* A ticker's calls refuse a Timer passed for one, as the Timer's refuse
 * a ticker: the kinds' states differ. */
static inline bool is_ticker(const pt_time_ticker *tk)
{
    return tk && tk->t.kind == KIND_TICKER;
}

pt_chan *pt_time_ticker_chan(pt_time_ticker *tk)
{
    return is_ticker(tk) ? tk->t.c : NULL;
}

int pt_time_ticker_stop(pt_time_ticker *tk)
{
    if (!is_ticker(tk))
        return -EINVAL;
    op_lock(&tk->t);
    stop_all(&tk->t);
    op_unlock(&tk->t);
    return 0;
}

int pt_time_ticker_reset(pt_time_ticker *tk, pt_nanos period)
{
    if (!is_ticker(tk) || period <= 0)
        return -EINVAL;
    pt_time_timer *t = &tk->t;
    pt_nanos now = pt__now(t->s);
    op_lock(t);
    stop_all(t);
    t->period = period; /* nothing armed: no callback reads it now */
    int r = arm(t, when_of(now, period));
    op_unlock(t);
    return r;
}

int pt_time_ticker_free(pt_time_ticker *tk)
{
    if (!is_ticker(tk))
        return -EINVAL;
    return destroy(&tk->t);
}
