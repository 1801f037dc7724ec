/* timerthread: ptimer's TimerThread (bRPC's bucket design) behind the
 * engine interface. Every timer fires on the one timer thread. bRPC has no
 * periodic tasks, so tickers reschedule themselves from their callback, as
 * bRPC's users do (a stopped one stops rescheduling); reset is unschedule +
 * schedule, as it must be there.
 *
 * A ticker's record goes as soon as nothing can reach it: freed by the
 * cancel that removed its pending task, or else by the tick running when
 * it was cancelled. Each handle is cancelled at most once (tobj.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "base/lock.h"
#include "ptimer/timerthread.h"
#include "tobj.h"

struct tt_engine {
    pt_timerthread *tt;
    pt_engine_cb cb;            /* one workload per run: the same for all threads */
    pt_nanos slack;             /* every task's (pt_timerthread_schedule_slack) */
    _Atomic uint32_t lock;  /* guards tickers */
    struct tt_ticker *tickers;
    _Atomic size_t ntickers; /* records not yet freed (held) */
};

/* A ticker: reschedules itself after each run, skipping missed ticks.
 * Its handle is its address with the top bit set (not a task id). */
struct tt_ticker {
    struct tt_engine *e;
    pt_nanos when, period;
    void *arg;
    struct tt_ticker *prev, *next; /* e->tickers, for destroy */
    _Atomic uint32_t lock; /* guards id and dead, between a tick and a cancel */
    bool dead;
    pt_task_id id;
};

#define TT_TICKER_BIT ((pt_engine_handle)1 << 63)

static struct tt_engine *tt_current; /* for the one-shot trampoline */

static void tt_fire(void *arg) { tt_current->cb(arg); }

/* Every task goes in with the instance's slack: with 0 it is schedule. */
static pt_task_id tt_at(struct tt_engine *e, void (*fn)(void *), void *arg, pt_nanos when)
{
    return pt_timerthread_schedule_slack(e->tt, fn, arg, when, e->slack);
}

static void tt_ticker_link(struct tt_engine *e, struct tt_ticker *k)
{
    pt__lock(&e->lock);
    k->prev = NULL;
    k->next = e->tickers;
    if (k->next)
        k->next->prev = k;
    e->tickers = k;
    atomic_fetch_add_explicit(&e->ntickers, 1, memory_order_relaxed);
    pt__unlock(&e->lock);
}

/* The caller is the last one that can reach k. */
static void tt_ticker_free(struct tt_ticker *k)
{
    struct tt_engine *e = k->e;
    pt__lock(&e->lock);
    if (k->prev)
        k->prev->next = k->next;
    else
        e->tickers = k->next;
    if (k->next)
        k->next->prev = k->prev;
    atomic_fetch_sub_explicit(&e->ntickers, 1, memory_order_relaxed);
    pt__unlock(&e->lock);
    free(k);
}

/* Until it takes k's lock after the callback, this tick is the task k->id
 * names: a cancel meanwhile fails to unschedule it and leaves k to us. */
static void tt_tick(void *varg)
{
    struct tt_ticker *k = varg;
    k->e->cb(k->arg);
    pt_nanos now = pt_nanotime();
    pt__lock(&k->lock);
    bool dead = k->dead;
    if (!dead) {
        k->when += k->period * (1 + (now > k->when ? (now - k->when) / k->period : 0));
        k->id = tt_at(k->e, tt_tick, k, k->when);
    }
    pt__unlock(&k->lock);
    if (dead)
        tt_ticker_free(k);
}

static void *tt_create(int n, pt_engine_cb cb)
{
    (void)n;
    struct tt_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->cb = cb;
    if (pt_timerthread_create(&e->tt, NULL) != 0) {
        free(e);
        return NULL;
    }
    pt__lock_init(&e->lock);
    tt_current = e;
    return e;
}

static int tt_set_slack(void *ve, pt_nanos slack)
{
    if (slack < 0)
        return -EINVAL;
    ((struct tt_engine *)ve)->slack = slack;
    return 0;
}

static void tt_destroy(void *ve)
{
    struct tt_engine *e = ve;
    pt_timerthread_destroy(e->tt); /* joins: no ticker runs after this */
    while (e->tickers) /* never cancelled, or their last task dropped */
        tt_ticker_free(e->tickers);
    tt_current = NULL;
    free(e);
}

static void *tt_thread_start(void *eng, int tid)
{
    (void)tid;
    return eng;
}

static void tt_thread_stop(void *th) { (void)th; }

static pt_engine_handle tt_schedule(void *th, pt_nanos when, pt_nanos period, void *arg)
{
    struct tt_engine *e = th;
    if (period <= 0)
        return tt_at(e, tt_fire, arg, when);
    struct tt_ticker *k = malloc(sizeof *k);
    if (!k)
        return 0;
    *k = (struct tt_ticker){.e = e, .when = when, .period = period, .arg = arg};
    pt__lock_init(&k->lock);
    tt_ticker_link(e, k);
    pt__lock(&k->lock); /* its first tick may run before the id is stored */
    k->id = tt_at(e, tt_tick, k, when);
    bool ok = k->id != PT_INVALID_TASK_ID;
    pt__unlock(&k->lock);
    if (!ok) {
        tt_ticker_free(k);
        return 0;
    }
    return TT_TICKER_BIT | (pt_engine_handle)(uintptr_t)k;
}

/* A ticker was pending while it was not stopped: a tick that runs now
 * has its successor to come. */
static bool tt_cancel_ticker(struct tt_ticker *k)
{
    pt__lock(&k->lock);
    bool live = !k->dead;
    k->dead = true;
    /* No task (a reschedule failed) or ours removed: no tick will run.
     * Otherwise the tick running now frees k once it sees dead. */
    bool mine = k->id == PT_INVALID_TASK_ID || pt_timerthread_unschedule(k->e->tt, k->id) == 0;
    k->id = PT_INVALID_TASK_ID;
    pt__unlock(&k->lock);
    if (mine)
        tt_ticker_free(k);
    return live;
}

static bool tt_cancel(void *th, pt_engine_handle h)
{
    struct tt_engine *e = th;
    if (h & TT_TICKER_BIT)
        return tt_cancel_ticker((struct tt_ticker *)(uintptr_t)(h & ~TT_TICKER_BIT));
    return pt_timerthread_unschedule(e->tt, h) == 0;
}

static pt_engine_handle tt_reset(void *th, pt_engine_handle h, pt_nanos when, void *arg)
{
    struct tt_engine *e = th;
    if ((h & TT_TICKER_BIT) || pt_timerthread_unschedule(e->tt, h) != 0)
        return 0;
    return tt_at(e, tt_fire, arg, when);
}

TOBJ_HOOKS(tt, tt_schedule, tt_cancel)

static void tt_poll(void *th) { (void)th; }
static void tt_idle(void *th, pt_nanos until)
{
    (void)th;
    bench_sleep_until(until);
}

/* The engine's own ticker records, which must go as their tickers stop.
 * The instance's tasks are not counted: its pending figure is a
 * difference of per-thread sums read while those threads run, off by
 * tens of thousands on a loaded machine, and removed tasks awaiting
 * reclaim are not exposed at all (ptbench's resident memory shows them). */
static size_t tt_held(void *th)
{
    return atomic_load_explicit(&((struct tt_engine *)th)->ntickers, memory_order_relaxed);
}

static void tt_read_stats(void *eng, struct pt_engine_stats *out)
{
    pt_timerthread_stats st;
    pt_timerthread_read_stats(((struct tt_engine *)eng)->tt, &st);
    out->wakeups = st.wakeups;
}

const struct pt_engine engine_timerthread = {
    ENGINE_HEAD,
    .name = "timerthread",
    .what = "ptimer's TimerThread: bRPC's 13 hashed buckets feeding one timer thread",
    .create = tt_create,
    .set_slack = tt_set_slack,
    .destroy = tt_destroy,
    .thread_start = tt_thread_start,
    .thread_stop = tt_thread_stop,
    .schedule = tt_schedule,
    .cancel = tt_cancel,
    .reset = tt_reset,
    .poll = tt_poll,
    .idle = tt_idle,
    .read_stats = tt_read_stats,
    .held = tt_held,
    /* One 64-byte task (timerthread/task_pool.h). A pending task sits in its
     * bucket's list, linked through the task itself, until the timer
     * thread wakes and pulls it into its heap (16 more bytes, an entry).
     * The memory workload's timers, an hour away and ascending, wake it
     * once, for the first: the rest stay in the bucket. Under mimalloc
     * the measured figure is higher for another reason: each 256-task
     * block is 16 KiB + 64 B of alignment slack, which its size classes
     * round up (bench/journal/2026-11-25-first-comparison.md,
     * "How memory is counted"). */
    .timer_bytes = 64,
    TOBJ_FIELDS(tt),
};
