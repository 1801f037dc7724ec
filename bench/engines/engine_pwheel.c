/* pwheel: ptimer's per-P hierarchical timing wheels (include/ptimer/
 * pwheel.h). Each worker is a P with its own pt_wheel; it runs its timers
 * in poll (a scheduler round) and sleeps in idle until its wheel's next
 * time or a wake from the wheel's wake callback, exactly as pheap does.
 *
 * Disposal: a wheel unlinks a stopped timer at once (no lazy deletion),
 * so cancel is pt_wheel_timer_stop and the slot is reusable at once: the
 * worker is the only thread that runs its wheel's callbacks, so none of
 * its own timers can be running while it cancels. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "p_wake.h"
#include "ptimer/pwheel.h"
#include "slots.h"

struct pw_thread {
    pt_wheel w;
    void *block; /* what to free: the state sits a few lines into it */
    struct p_wake wake;
    pt_engine_cb cb;
    struct slots slots;
    struct pw_engine *eng;
};

struct pw_engine {
    pt_engine_cb cb;
    pt_nanos slack; /* every worker's wheel's (pt_wheel_set_slack) */
    atomic_ulong wakeups;
};

static _Thread_local struct pw_thread *tl_thread;

static void *pw_create(int nthreads, pt_engine_cb cb)
{
    (void)nthreads;
    struct pw_engine *e = calloc(1, sizeof *e);
    if (e)
        e->cb = cb;
    return e;
}

static void pw_destroy(void *eng)
{
    free(eng);
}

static int pw_set_slack(void *eng, pt_nanos slack)
{
    if (slack < 0)
        return -EINVAL;
    ((struct pw_engine *)eng)->slack = slack;
    return 0;
}

static void pw_wake(void *ctx, pt_nanos when)
{
    struct pw_thread *th = ctx;
    (void)when;
    if (th != tl_thread) /* else the P itself armed it: it is awake, and will look */
        p_wake_up(&th->wake);
}

/* seq is the slot. A one-shot that ran is recycled here, on the owner,
 * unless its callback re-armed or disposed of it: its handle goes stale. */
static void pw_fire(void *arg, uintptr_t slot)
{
    struct pw_thread *th = tl_thread;
    pt_wheel_timer *t = slots_at(&th->slots, (uint32_t)slot);
    bool once = pt_wheel_timer_status(t) == PT_WHEEL_RUNNING;
    uint32_t gen = th->slots.gen[slot];
    th->cb(arg);
    if (once && th->slots.gen[slot] == gen && pt_wheel_timer_status(t) == PT_WHEEL_RUNNING)
        slots_put(&th->slots, (uint32_t)slot);
}

static void *pw_thread_start(void *eng, int tid)
{
    /* The wheel is 8.4 KiB, and an allocator hands a block that large out
     * on a page boundary (mimalloc: at 0 or 2048 mod 4096). There the
     * wheel's lock shares an L1 set, and 4K-aliases, with the first timer
     * of a slots chunk and the first words of the slots' arrays, all
     * page-aligned too: rpc took nearly twice as long there as with the
     * state one line further on (bench/journal/2026-11-28-figures-behind-comments.md).
     * So the state starts 1 to 8 lines into
     * its block, by thread: ptbench measures the wheel, not that
     * coincidence of its own allocations. */
    size_t colour = 64 * (1 + (size_t)tid % 8);
    char *block = calloc(1, sizeof(struct pw_thread) + colour);
    if (!block)
        return NULL;
    struct pw_thread *th = (struct pw_thread *)(block + colour);
    th->block = block;
    th->eng = eng;
    th->cb = th->eng->cb;
    if (pt_wheel_init(&th->w, 0, pw_wake, th) != 0 || pt_wheel_set_slack(&th->w, th->eng->slack) != 0)
        abort();
    slots_init(&th->slots, sizeof(pt_wheel_timer));
    tl_thread = th;
    return th;
}

static pt_engine_handle pw_schedule(void *vth, pt_nanos when, pt_nanos period, void *arg)
{
    struct pw_thread *th = vth;
    int64_t slot = slots_get(&th->slots);
    if (slot < 0)
        return 0;
    pt_wheel_timer *t = slots_at(&th->slots, (uint32_t)slot);
    if (slots_fresh(&th->slots, (uint32_t)slot))
        pt_wheel_timer_init(t, pw_fire, NULL);
    if (pt_wheel_timer_modify(&th->w, t, when, period, pw_fire, arg, (uintptr_t)slot) < 0) {
        slots_put(&th->slots, (uint32_t)slot);
        return 0;
    }
    return slots_handle(&th->slots, (uint32_t)slot);
}

static bool pw_cancel(void *vth, pt_engine_handle h)
{
    struct pw_thread *th = vth;
    pt_wheel_timer *t = slots_check(&th->slots, h);
    if (!t)
        return false; /* fired and recycled */
    int r = pt_wheel_timer_stop(t);
    slots_put(&th->slots, (uint32_t)h); /* unlinked: reusable now */
    return r == 1;
}

static pt_engine_handle pw_reset(void *vth, pt_engine_handle h, pt_nanos when, void *arg)
{
    (void)arg;
    struct pw_thread *th = vth;
    pt_wheel_timer *t = slots_check(&th->slots, h);
    if (!t)
        return 0;
    return pt_wheel_timer_reset(&th->w, t, when) >= 0 ? h : 0;
}

static void pw_poll(void *vth)
{
    struct pw_thread *th = vth;
    pt_wheel_check(&th->w, 0, NULL);
}

static void pw_check_until(void *vth, pt_nanos now, pt_nanos *next)
{
    pt_wheel_check(&((struct pw_thread *)vth)->w, now, next);
}

static void pw_idle(void *vth, pt_nanos until)
{
    struct pw_thread *th = vth;
    p_wake_idle(&th->wake, th, pw_check_until, until, &th->eng->wakeups);
}

static void pw_thread_stop(void *vth)
{
    struct pw_thread *th = vth;
    for (uint32_t i = 0; i < slots_total(&th->slots); i++)
        if (th->slots.gen[i]) /* ever used */
            pt_wheel_timer_stop_sync(slots_at(&th->slots, i));
    if (pt_wheel_destroy(&th->w) != 0)
        abort();
    slots_free(&th->slots);
    tl_thread = NULL;
    free(th->block);
}

static void pw_reserve_handles(void *vth, long n)
{
    struct pw_thread *th = vth;
    (void)slots_reserve(&th->slots, n); /* failing only skews the reading */
}

/* Timer objects: a bare pt_wheel_timer armed with modify from any thread
 * onto the given worker's wheel and stopped with pt_wheel_timer_stop:
 * the wheel's locking is what ptstress races. */
static void pw_tm_fire(void *arg, uintptr_t seq)
{
    (void)seq;
    tl_thread->cb(arg); /* run by a worker's pt_wheel_check */
}

static void *pw_tm_new(void *eng)
{
    (void)eng;
    pt_wheel_timer *t = malloc(sizeof *t);
    if (t)
        pt_wheel_timer_init(t, pw_tm_fire, NULL);
    return t;
}

static int pw_tm_arm(void *vth, void *t, pt_nanos when, pt_nanos period, void *arg)
{
    struct pw_thread *th = vth;
    return pt_wheel_timer_modify(&th->w, t, when, period, pw_tm_fire, arg, 0);
}

static int pw_tm_start(void *vth, void *t, pt_nanos when)
{
    return pt_wheel_timer_start(&((struct pw_thread *)vth)->w, t, when, 0);
}

static int pw_tm_reset(void *vth, void *t, pt_nanos when)
{
    return pt_wheel_timer_reset(&((struct pw_thread *)vth)->w, t, when);
}

static int pw_tm_stop(void *t)
{
    return pt_wheel_timer_stop(t);
}

static void pw_tm_free(void *t)
{
    pt_wheel_timer_stop_sync(t);
    free(t);
}

static int pw_move(void *dst, void *src)
{
    return pt_wheel_move(&((struct pw_thread *)dst)->w, &((struct pw_thread *)src)->w);
}

static size_t pw_held(void *th)
{
    return pt_wheel_len(&((struct pw_thread *)th)->w);
}

static const char *pw_check(void *vth, bool quiescent)
{
    (void)quiescent; /* the wheel's invariants hold at every unlock */
    struct pw_thread *th = vth;
    return pt_wheel_verify(&th->w, quiescent) ? pt_wheel_verify_report() : NULL;
}

static void pw_read_stats(void *eng, struct pt_engine_stats *out)
{
    out->wakeups = atomic_load(&((struct pw_engine *)eng)->wakeups);
}

const struct pt_engine engine_pwheel = {
    ENGINE_HEAD,
    .name = "pwheel",
    .what = "ptimer per-P hierarchical timing wheels; O(1) arm and cancel, exact level 0",
    .create = pw_create,
    .set_slack = pw_set_slack,
    .destroy = pw_destroy,
    .thread_start = pw_thread_start,
    .thread_stop = pw_thread_stop,
    .schedule = pw_schedule,
    .cancel = pw_cancel,
    .reset = pw_reset,
    .poll = pw_poll,
    .idle = pw_idle,
    .read_stats = pw_read_stats,
    .reserve_handles = pw_reserve_handles,
    .timer_bytes = sizeof(pt_wheel_timer),
    .tm_new = pw_tm_new,
    .tm_arm = pw_tm_arm,
    .tm_stop = pw_tm_stop,
    .tm_start = pw_tm_start,
    .tm_reset = pw_tm_reset,
    .tm_firing = pt_wheel_firing,
    .tm_free = pw_tm_free,
    .move = pw_move,
    .held = pw_held,
    .check = pw_check,
};
