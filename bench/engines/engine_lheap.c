/* lheap: Go 1.23's per-P timers (include/ptimer/lheap.h): a lock per
 * timer, zombies and lazily re-keyed entries. Each worker is a P with its
 * own pt_lheap; it runs its timers in poll and sleeps in idle until the
 * heap's next time or a wake, as pwheel does.
 *
 * Disposal: cancel is pt_lheap_timer_stop, Go's: the timer stays in its
 * heap as a zombie, and its slot waits in a limbo until the heap has let
 * go of it (at the top, or in adjust once zombies pass a quarter), as
 * pheap's lazily stopped timers do: each arm is then a new timer, as
 * Go's AfterFunc makes one, not a zombie revived in place (which the
 * reset workload measures). The worker is the only thread that runs its
 * heap's callbacks, so none of its own timers runs while it cancels. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "p_wake.h"
#include "ptimer/lheap.h"
#include "slots.h"

struct lh_thread {
    pt_lheap h;
    struct p_wake wake;
    pt_engine_cb cb;
    struct slots slots;
    struct slot_limbo limbo; /* stopped timers whose heap still holds them */
    struct lh_engine *eng;
};

struct lh_engine {
    pt_engine_cb cb;
    pt_nanos slack; /* every worker's heap's (pt_lheap_set_slack) */
    atomic_ulong wakeups;
};

static _Thread_local struct lh_thread *tl_thread;

static void *lh_create(int nthreads, pt_engine_cb cb)
{
    (void)nthreads;
    struct lh_engine *e = calloc(1, sizeof *e);
    if (e)
        e->cb = cb;
    return e;
}

static void lh_destroy(void *eng)
{
    free(eng);
}

static int lh_set_slack(void *eng, pt_nanos slack)
{
    if (slack < 0)
        return -EINVAL;
    ((struct lh_engine *)eng)->slack = slack;
    return 0;
}

static void lh_wake(void *ctx, pt_nanos when)
{
    struct lh_thread *th = ctx;
    (void)when;
    if (th != tl_thread) /* else the P itself armed it: it is awake, and will look */
        p_wake_up(&th->wake);
}

/* seq is the slot. A one-shot that ran is recycled here, on the owner,
 * unless its callback re-armed or disposed of it: its handle goes stale. */
static void lh_fire(void *arg, uintptr_t slot)
{
    struct lh_thread *th = tl_thread;
    pt_lheap_timer *t = slots_at(&th->slots, (uint32_t)slot);
    bool once = pt_lheap_timer_status(t) == PT_LHEAP_RUNNING;
    uint32_t gen = th->slots.gen[slot];
    th->cb(arg);
    if (once && th->slots.gen[slot] == gen && pt_lheap_timer_status(t) == PT_LHEAP_RUNNING)
        slots_put(&th->slots, (uint32_t)slot);
}

static void *lh_thread_start(void *eng, int tid)
{
    (void)tid;
    struct lh_thread *th = calloc(1, sizeof *th);
    if (!th)
        return NULL;
    th->eng = eng;
    th->cb = th->eng->cb;
    if (pt_lheap_init(&th->h, lh_wake, th) != 0 || pt_lheap_set_slack(&th->h, th->eng->slack) != 0)
        abort();
    slots_init(&th->slots, sizeof(pt_lheap_timer));
    tl_thread = th;
    return th;
}

static inline __attribute__((always_inline)) bool lh_released(void *timer)
{
    return !pt_lheap_timer_in_heap(timer);
}

static pt_engine_handle lh_schedule(void *vth, pt_nanos when, pt_nanos period, void *arg)
{
    struct lh_thread *th = vth;
    if (!th->slots.free_head && th->limbo.len)
        limbo_reclaim(&th->limbo, &th->slots, lh_released);
    int64_t slot = slots_get(&th->slots);
    if (slot < 0)
        return 0;
    pt_lheap_timer *t = slots_at(&th->slots, (uint32_t)slot);
    if (slots_fresh(&th->slots, (uint32_t)slot))
        pt_lheap_timer_init(t, lh_fire, NULL);
    if (pt_lheap_timer_modify(&th->h, t, when, period, lh_fire, arg, (uintptr_t)slot) < 0) {
        slots_put(&th->slots, (uint32_t)slot);
        return 0;
    }
    /* the oldest stopped ones, once an add's cleanHead has let them go */
    if (th->limbo.len)
        limbo_reclaim(&th->limbo, &th->slots, lh_released);
    return slots_handle(&th->slots, (uint32_t)slot);
}

static bool lh_cancel(void *vth, pt_engine_handle h)
{
    struct lh_thread *th = vth;
    pt_lheap_timer *t = slots_check(&th->slots, h);
    if (!t)
        return false; /* fired and recycled */
    int r = pt_lheap_timer_stop(t);
    if (pt_lheap_timer_in_heap(t)) { /* a zombie: reusable once its heap lets go */
        slots_retire(&th->slots, (uint32_t)h);
        limbo_push(&th->limbo, (uint32_t)h);
    } else {
        slots_put(&th->slots, (uint32_t)h);
    }
    return r == 1;
}

static pt_engine_handle lh_reset(void *vth, pt_engine_handle h, pt_nanos when, void *arg)
{
    (void)arg;
    struct lh_thread *th = vth;
    pt_lheap_timer *t = slots_check(&th->slots, h);
    if (!t)
        return 0;
    return pt_lheap_timer_reset(&th->h, t, when) >= 0 ? h : 0;
}

static void lh_poll(void *vth)
{
    struct lh_thread *th = vth;
    pt_lheap_check(&th->h, 0, NULL);
}

static void lh_check_until(void *vth, pt_nanos now, pt_nanos *next)
{
    pt_lheap_check(&((struct lh_thread *)vth)->h, now, next);
}

static void lh_idle(void *vth, pt_nanos until)
{
    struct lh_thread *th = vth;
    p_wake_idle(&th->wake, th, lh_check_until, until, &th->eng->wakeups);
}

static void lh_thread_stop(void *vth)
{
    struct lh_thread *th = vth;
    for (uint32_t i = 0; i < slots_total(&th->slots); i++)
        if (th->slots.gen[i]) /* ever used */
            pt_lheap_timer_stop_sync(slots_at(&th->slots, i));
    if (pt_lheap_destroy(&th->h) != 0)
        abort();
    limbo_free(&th->limbo);
    slots_free(&th->slots);
    tl_thread = NULL;
    free(th);
}

static void lh_reserve_handles(void *vth, long n)
{
    struct lh_thread *th = vth;
    (void)slots_reserve(&th->slots, n); /* failing only skews the reading */
}

/* Timer objects: a bare pt_lheap_timer armed with modify from any thread
 * onto the given worker's heap and stopped with pt_lheap_timer_stop: the
 * per-timer locks are what ptstress races. */
static void lh_tm_fire(void *arg, uintptr_t seq)
{
    (void)seq;
    tl_thread->cb(arg); /* run by a worker's pt_lheap_check */
}

static void *lh_tm_new(void *eng)
{
    (void)eng;
    pt_lheap_timer *t = malloc(sizeof *t);
    if (t)
        pt_lheap_timer_init(t, lh_tm_fire, NULL);
    return t;
}

static int lh_tm_arm(void *vth, void *t, pt_nanos when, pt_nanos period, void *arg)
{
    struct lh_thread *th = vth;
    return pt_lheap_timer_modify(&th->h, t, when, period, lh_tm_fire, arg, 0);
}

static int lh_tm_start(void *vth, void *t, pt_nanos when)
{
    return pt_lheap_timer_start(&((struct lh_thread *)vth)->h, t, when, 0);
}

static int lh_tm_reset(void *vth, void *t, pt_nanos when)
{
    return pt_lheap_timer_reset(&((struct lh_thread *)vth)->h, t, when);
}

static int lh_tm_stop(void *t)
{
    return pt_lheap_timer_stop(t);
}

static void lh_tm_free(void *t)
{
    pt_lheap_timer_stop_sync(t);
    free(t);
}

static int lh_move(void *dst, void *src)
{
    return pt_lheap_move(&((struct lh_thread *)dst)->h, &((struct lh_thread *)src)->h);
}

static size_t lh_held(void *th)
{
    return pt_lheap_len(&((struct lh_thread *)th)->h);
}

static const char *lh_check(void *vth, bool quiescent)
{
    struct lh_thread *th = vth;
    return pt_lheap_verify(&th->h, quiescent) ? pt_lheap_verify_report() : NULL;
}

static void lh_read_stats(void *eng, struct pt_engine_stats *out)
{
    out->wakeups = atomic_load(&((struct lh_engine *)eng)->wakeups);
}

const struct pt_engine engine_lheap = {
    ENGINE_HEAD,
    .name = "lheap",
    .what = "Go 1.23's per-P timers: a lock per timer, zombies, lazy re-keying",
    .create = lh_create,
    .set_slack = lh_set_slack,
    .destroy = lh_destroy,
    .thread_start = lh_thread_start,
    .thread_stop = lh_thread_stop,
    .schedule = lh_schedule,
    .cancel = lh_cancel,
    .reset = lh_reset,
    .poll = lh_poll,
    .idle = lh_idle,
    .read_stats = lh_read_stats,
    .reserve_handles = lh_reserve_handles,
    .timer_bytes = sizeof(pt_lheap_timer),
    .tm_new = lh_tm_new,
    .tm_arm = lh_tm_arm,
    .tm_stop = lh_tm_stop,
    .tm_start = lh_tm_start,
    .tm_reset = lh_tm_reset,
    .tm_firing = pt_lheap_firing,
    .tm_free = lh_tm_free,
    .move = lh_move,
    .held = lh_held,
    .check = lh_check,
};
