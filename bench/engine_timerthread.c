/* timerthread: ptimer's TimerThread (bRPC's bucket design) behind the
 * engine interface. Every timer fires on the one timer thread. bRPC has no
 * periodic tasks, so tickers reschedule themselves from their callback, as
 * bRPC's users do (a stopped one stops rescheduling); reset is unschedule +
 * schedule, as it must be there. */
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "ptimer/base/lock.h"
#include "ptimer/timerthread.h"
#include "tobj.h"

struct tt_engine {
    pt_timerthread *tt;
    bench_cb cb;            /* one workload per run: the same for all threads */
    _Atomic uint32_t lock;  /* guards tickers */
    struct tt_ticker *tickers;
};

/* A ticker: reschedules itself after each run, skipping missed ticks.
 * Its handle is its address with the top bit set (not a task id). */
struct tt_ticker {
    struct tt_engine *e;
    pt_nanos when, period;
    void *arg;
    struct tt_ticker *next;
    _Atomic uint32_t lock; /* guards id and dead, between a tick and a cancel */
    bool dead;
    pt_task_id id;
};

#define TT_TICKER_BIT ((bench_handle)1 << 63)

static struct tt_engine *tt_current; /* for the one-shot trampoline */

static void tt_fire(void *arg) { tt_current->cb(arg); }

static void tt_tick(void *varg)
{
    struct tt_ticker *k = varg;
    k->e->cb(k->arg);
    pt_nanos now = pt_nanotime();
    pt__lock(&k->lock);
    if (!k->dead) {
        k->when += k->period * (1 + (now > k->when ? (now - k->when) / k->period : 0));
        k->id = pt_timerthread_schedule(k->e->tt, tt_tick, k, k->when);
    }
    pt__unlock(&k->lock);
}

static void *tt_create(int n, bench_cb cb)
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

static void tt_destroy(void *ve)
{
    struct tt_engine *e = ve;
    pt_timerthread_destroy(e->tt); /* joins: no ticker runs after this */
    while (e->tickers) {
        struct tt_ticker *k = e->tickers;
        e->tickers = k->next;
        free(k);
    }
    tt_current = NULL;
    free(e);
}

static void *tt_thread_start(void *eng, int tid)
{
    (void)tid;
    return eng;
}

static void tt_thread_stop(void *th) { (void)th; }

static bench_handle tt_schedule(void *th, pt_nanos when, pt_nanos period, void *arg)
{
    struct tt_engine *e = th;
    if (period <= 0)
        return pt_timerthread_schedule(e->tt, tt_fire, arg, when);
    struct tt_ticker *k = malloc(sizeof *k);
    if (!k)
        return 0;
    *k = (struct tt_ticker){.e = e, .when = when, .period = period, .arg = arg};
    pt__lock_init(&k->lock);
    pt__lock(&e->lock);
    k->next = e->tickers; /* freed by destroy: a late tick may still read it */
    e->tickers = k;
    pt__unlock(&e->lock);
    pt__lock(&k->lock);
    k->id = pt_timerthread_schedule(e->tt, tt_tick, k, when);
    bool ok = k->id != PT_INVALID_TASK_ID;
    pt__unlock(&k->lock);
    return ok ? TT_TICKER_BIT | (bench_handle)(uintptr_t)k : 0;
}

/* A ticker was pending while it was not stopped: a tick that runs now
 * has its successor to come. */
static bool tt_cancel_ticker(struct tt_ticker *k)
{
    pt__lock(&k->lock);
    bool live = !k->dead;
    k->dead = true;
    if (k->id)
        (void)pt_timerthread_unschedule(k->e->tt, k->id);
    k->id = PT_INVALID_TASK_ID;
    pt__unlock(&k->lock);
    return live;
}

static bool tt_cancel(void *th, bench_handle h)
{
    struct tt_engine *e = th;
    if (h & TT_TICKER_BIT)
        return tt_cancel_ticker((struct tt_ticker *)(uintptr_t)(h & ~TT_TICKER_BIT));
    return pt_timerthread_unschedule(e->tt, h) == 0;
}

static bench_handle tt_reset(void *th, bench_handle h, pt_nanos when, void *arg)
{
    struct tt_engine *e = th;
    if ((h & TT_TICKER_BIT) || pt_timerthread_unschedule(e->tt, h) != 0)
        return 0;
    return pt_timerthread_schedule(e->tt, tt_fire, arg, when);
}

TOBJ_HOOKS(tt, tt_schedule, tt_cancel)

static void tt_poll(void *th) { (void)th; }
static void tt_idle(void *th, pt_nanos until)
{
    (void)th;
    bench_sleep_until(until);
}

static void tt_read_stats(void *eng, struct engine_stats *out)
{
    pt_timerthread_stats st;
    pt_timerthread_read_stats(((struct tt_engine *)eng)->tt, &st);
    out->wakeups = st.wakeups;
}

const struct engine engine_timerthread = {
    .name = "timerthread",
    .what = "ptimer's TimerThread: bRPC's 13 hashed buckets feeding one timer thread",
    .create = tt_create,
    .destroy = tt_destroy,
    .thread_start = tt_thread_start,
    .thread_stop = tt_thread_stop,
    .schedule = tt_schedule,
    .cancel = tt_cancel,
    .reset = tt_reset,
    .poll = tt_poll,
    .idle = tt_idle,
    .read_stats = tt_read_stats,
    /* One 64-byte task (ptimer/task_pool.h). A pending task sits in its
     * bucket's list, linked through the task itself, until the timer
     * thread wakes and pulls it into its heap (16 more bytes, an entry).
     * The memory workload's timers, an hour away and ascending, wake it
     * once, for the first: the rest stay in the bucket (glibc: 64.4 B
     * measured). mimalloc reads 80 B for another reason: each 256-task
     * block is 16 KiB + 64 B of alignment slack, which its 20 KiB size
     * class rounds up by 16 B a task. */
    .timer_bytes = 64,
    TOBJ_FIELDS(tt),
};
