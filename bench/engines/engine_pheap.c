/* pheap: ptimer's per-P heaps. Each worker is a P with its own pt_timers;
 * it runs its timers in poll (a scheduler round) and sleeps in idle until
 * its next timer or a wake from the heap's wake callback.
 *
 * Disposal, the cost a C caller pays that Go's GC hides:
 *  - pheap: cancel is pt_timer_stop (lazy, as Go's Stop); the timer's
 *    memory is reused once its heap has unlinked it (Removed), which the
 *    owner does when the timer reaches the head or in its compaction.
 *  - pheap-sync: cancel is pt_timer_stop_sync: unlinked at once, reusable
 *    at once.
 *  - pheap-staged: pheap with a staging ring (pt_timers_set_staging) of
 *    4.2 ms slots, 268 ms in all: the 100 ms timeouts of rpc and
 *    rpc-pending are staged, and a stop unlinks them from the ring at once
 *    (reusable at once) where pheap leaves them in the heap; the preload,
 *    an hour out, and descending's deadlines, 20 s out, are beyond the
 *    ring and go to the heap as in pheap.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "engine.h"
#include "base/futex.h"
#include "ptimer/ptimer.h"
#include "base/heap4.h" /* the entry size a pending timer costs */
#include "slots.h"

/* The engine's timer is the library's, 56 bytes, nothing added. */
struct ph_timer {
    pt_timer t;
};

struct ph_thread {
    pt_timers ts;
    _Atomic uint32_t wakeword; /* bumped by the wake callback */
    atomic_bool sleeping;      /* the worker is (about to be) in futex_wait */
    bool sync, staged;
    pt_engine_cb cb;
    struct slots slots;
    struct slot_limbo limbo; /* stopped timers waiting to be unlinked */
    struct ph_engine *eng;
};

/* pheap-staged's slot: 2^22 ns. The ring then spans 64 slots, 268 ms,
 * the range of common RPC timeouts; the slot is what a stop that comes
 * later than its arm by less than a slot costs nothing in the heap. */
#define PH_STAGE_SLOT ((pt_nanos)1 << 22)

struct ph_engine {
    bool sync, staged;
    pt_engine_cb cb;
    pt_nanos slack; /* every worker's heap's (pt_timers_set_slack) */
    atomic_ulong wakeups;
};

static _Thread_local struct ph_thread *tl_thread;

static void *ph_create(int nthreads, pt_engine_cb cb, bool sync, bool staged)
{
    (void)nthreads;
    struct ph_engine *e = calloc(1, sizeof *e);
    if (e) {
        e->sync = sync;
        e->staged = staged;
        e->cb = cb;
    }
    return e;
}
static void *ph_create_lazy(int n, pt_engine_cb cb)
{
    return ph_create(n, cb, false, false);
}
static void *ph_create_sync(int n, pt_engine_cb cb)
{
    return ph_create(n, cb, true, false);
}
static void *ph_create_staged(int n, pt_engine_cb cb)
{
    return ph_create(n, cb, false, true);
}
static void ph_destroy(void *eng) { free(eng); }

static int ph_set_slack(void *eng, pt_nanos slack)
{
    if (slack < 0)
        return -EINVAL;
    ((struct ph_engine *)eng)->slack = slack;
    return 0;
}

static void ph_wake(void *ctx, pt_nanos when)
{
    struct ph_thread *th = ctx;
    (void)when;
    if (th == tl_thread)
        return; /* the P itself armed it: it is awake, and will look */
    /* As Go's wakeNetPoller: only a sleeping P needs the system call. The
     * seq_cst pair (sleeping store / wakeword load in idle, wakeword bump /
     * sleeping load here) means one of the two sides always sees the other. */
    atomic_fetch_add_explicit(&th->wakeword, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&th->sleeping, memory_order_seq_cst))
        pt__futex_wake(&th->wakeword, 1);
}

/* pt_timer callback: seq is the slot. One-shots are recycled here, on the
 * owner, after they ran: their handle goes stale. */
static void ph_fire(void *arg, uintptr_t slot)
{
    struct ph_thread *th = tl_thread;
    struct ph_timer *pt = slots_at(&th->slots, (uint32_t)slot);
    bool once = pt_timer_status(&pt->t) == PT_TIMER_NOSTATUS;
    uint32_t gen = th->slots.gen[slot];
    th->cb(arg);
    /* Unless the callback disposed of it or re-armed it itself. */
    if (once && th->slots.gen[slot] == gen && pt_timer_status(&pt->t) == PT_TIMER_NOSTATUS)
        slots_put(&th->slots, (uint32_t)slot);
}

static void *ph_thread_start(void *eng, int tid)
{
    (void)tid;
    struct ph_thread *th = calloc(1, sizeof *th);
    if (!th)
        return NULL;
    th->eng = eng;
    th->sync = th->eng->sync;
    th->staged = th->eng->staged;
    th->cb = th->eng->cb;
    pt_timers_init(&th->ts, ph_wake, th);
    if (pt_timers_set_slack(&th->ts, th->eng->slack) != 0)
        abort();
    if (th->eng->staged && pt_timers_set_staging(&th->ts, PH_STAGE_SLOT) != 0)
        abort();
    slots_init(&th->slots, sizeof(struct ph_timer));
    tl_thread = th;
    return th;
}

/* A stopped timer's slot is reusable once its heap has unlinked it. */
static inline __attribute__((always_inline)) bool ph_released(void *timer)
{
    enum pt_timer_status s = pt_timer_status(&((struct ph_timer *)timer)->t);
    return s == PT_TIMER_REMOVED || s == PT_TIMER_NOSTATUS;
}

static inline __attribute__((always_inline)) void ph_reclaim(struct ph_thread *th)
{
    limbo_reclaim(&th->limbo, &th->slots, ph_released);
}

static pt_engine_handle ph_schedule(void *vth, pt_nanos when, pt_nanos period, void *arg)
{
    struct ph_thread *th = vth;
    /* A poll since the last arm may have unlinked stopped timers: reuse
     * them before growing the pool. */
    if (!th->slots.free_head && th->limbo.len)
        ph_reclaim(th);
    int64_t slot = slots_get(&th->slots);
    if (slot < 0)
        return 0;
    struct ph_timer *pt = slots_at(&th->slots, (uint32_t)slot);
    if (slots_fresh(&th->slots, (uint32_t)slot))
        pt_timer_init(&pt->t, ph_fire, NULL);
    if (pt_timer_modify(&th->ts, &pt->t, when, period, ph_fire, arg, (uintptr_t)slot) < 0) {
        slots_put(&th->slots, (uint32_t)slot);
        return 0;
    }
    /* Reuse the oldest stopped timers as soon as their heap has let go of
     * them, as a caller's own pool would: their memory is still warm.
     * (Waiting for the free list to run dry instead cycles through a
     * thousand timers.) Asked after the arm, which is what most often
     * unlinks them: the timer stopped last is usually the head it
     * replaced, so one look finds it free. */
    if (th->limbo.len)
        ph_reclaim(th);
    return slots_handle(&th->slots, (uint32_t)slot);
}

static bool ph_cancel(void *vth, pt_engine_handle h)
{
    struct ph_thread *th = vth;
    struct ph_timer *pt = slots_check(&th->slots, h);
    if (!pt)
        return false; /* fired and recycled */
    if (th->sync) {
        int r = pt_timer_stop_sync(&pt->t);
        slots_put(&th->slots, (uint32_t)h);
        return r == 1;
    }
    int r = pt_timer_stop(&pt->t);
    /* A stop that unlinked the timer itself (pheap-staged's eager stop)
     * leaves it Removed: reusable at once. Otherwise the handle is stale
     * now, and the slot reusable once its heap has unlinked the timer. */
    if (th->staged && pt_timer_status(&pt->t) == PT_TIMER_REMOVED) {
        slots_put(&th->slots, (uint32_t)h);
        return r == 1;
    }
    slots_retire(&th->slots, (uint32_t)h);
    limbo_push(&th->limbo, (uint32_t)h);
    return r == 1;
}

static pt_engine_handle ph_reset(void *vth, pt_engine_handle h, pt_nanos when, void *arg)
{
    (void)arg;
    struct ph_thread *th = vth;
    struct ph_timer *pt = slots_check(&th->slots, h);
    if (!pt)
        return 0;
    return pt_timer_reset(&th->ts, &pt->t, when) >= 0 ? h : 0;
}

static void ph_poll(void *vth)
{
    struct ph_thread *th = vth;
    pt_timers_check(&th->ts, 0, true, NULL);
}

static void ph_idle(void *vth, pt_nanos until)
{
    struct ph_thread *th = vth;
    for (;;) {
        uint32_t w = atomic_load_explicit(&th->wakeword, memory_order_acquire);
        /* The clock is read before the check, and the check runs what is
         * due by then: so once now >= until, every timer due by `until`
         * has run, however long this thread stalled in between. */
        pt_nanos checked = pt_nanotime(), next;
        pt_timers_check(&th->ts, checked, true, &next);
        if (checked >= until)
            return;
        /* Callbacks may have taken a while: decide on a fresh reading. */
        pt_nanos now = pt_nanotime();
        pt_nanos deadline = next && next < until ? next : until;
        if (deadline > now) {
            atomic_store_explicit(&th->sleeping, true, memory_order_seq_cst);
            if (atomic_load_explicit(&th->wakeword, memory_order_seq_cst) == w)
                pt__futex_wait(&th->wakeword, w, deadline);
            atomic_store_explicit(&th->sleeping, false, memory_order_relaxed);
            atomic_fetch_add_explicit(&th->eng->wakeups, 1, memory_order_relaxed);
        }
    }
}

static void ph_thread_stop(void *vth)
{
    struct ph_thread *th = vth;
    for (uint32_t i = 0; i < slots_total(&th->slots); i++)
        if (th->slots.gen[i]) /* ever used */
            pt_timer_stop_sync(&((struct ph_timer *)slots_at(&th->slots, i))->t);
    if (pt_timers_destroy(&th->ts) != 0)
        abort();
    slots_free(&th->slots);
    limbo_free(&th->limbo);
    tl_thread = NULL;
    free(th);
}

static void ph_reserve_handles(void *vth, long n)
{
    struct ph_thread *th = vth;
    (void)slots_reserve(&th->slots, n); /* failing only skews the reading */
}

/* Timer objects: a bare pt_timer, armed with pt_timer_modify from any
 * thread onto the given worker's heap, stopped with pt_timer_stop: the
 * status machine itself is what ptstress races. */
static void ph_tm_fire(void *arg, uintptr_t seq)
{
    (void)seq;
    tl_thread->cb(arg); /* run by a worker's pt_timers_check */
}

static void *ph_tm_new(void *eng)
{
    (void)eng;
    pt_timer *t = malloc(sizeof *t);
    if (t)
        pt_timer_init(t, ph_tm_fire, NULL);
    return t;
}

static int ph_tm_arm(void *vth, void *t, pt_nanos when, pt_nanos period, void *arg)
{
    struct ph_thread *th = vth;
    return pt_timer_modify(&th->ts, t, when, period, ph_tm_fire, arg, 0);
}

static int ph_tm_start(void *vth, void *t, pt_nanos when)
{
    return pt_timer_start(&((struct ph_thread *)vth)->ts, t, when, 0);
}

static int ph_tm_reset(void *vth, void *t, pt_nanos when)
{
    return pt_timer_reset(&((struct ph_thread *)vth)->ts, t, when);
}

static int ph_tm_stop(void *t) { return pt_timer_stop(t); }
/* pheap-sync stops as it cancels: unlinked, and no callback running. */
static int ph_tm_stop_sync(void *t) { return pt_timer_stop_sync(t); }

static void ph_tm_free(void *t)
{
    pt_timer_stop_sync(t);
    free(t);
}

static int ph_move(void *dst, void *src)
{
    return pt_timers_move(&((struct ph_thread *)dst)->ts, &((struct ph_thread *)src)->ts);
}

static size_t ph_held(void *th) { return pt_timers_len(&((struct ph_thread *)th)->ts); }

static const char *ph_check(void *vth, bool quiescent)
{
    struct ph_thread *th = vth;
    /* An empty heap has nothing due (Go issue 51654: a stale
     * modified_earliest left a P spinning). On the owner, only another
     * thread's push can change the length, and it leaves it above 0, so
     * two readings of 0 around the next time mean the heap was empty. */
    if (pt_timers_len(&th->ts) == 0) {
        pt_nanos next = pt_timers_next(&th->ts);
        if (next != 0 && pt_timers_len(&th->ts) == 0)
            return "an empty heap reports a next time (modified_earliest not cleared)";
    }
    return pt_timers_verify(&th->ts, quiescent) ? pt_timers_verify_report() : NULL;
}

static void ph_read_stats(void *eng, struct pt_engine_stats *out)
{
    struct ph_engine *e = eng;
    out->wakeups = atomic_load(&e->wakeups);
}

#define PH_ENGINE(ident, nm, create_fn, stop_fn, desc)                                             \
    const struct pt_engine ident = {                                                                  \
        ENGINE_HEAD,                                                                               \
        .name = nm,                                                                                \
        .what = desc,                                                                              \
        .create = create_fn,                                                                       \
        .destroy = ph_destroy,                                                                     \
        .thread_start = ph_thread_start,                                                           \
        .thread_stop = ph_thread_stop,                                                             \
        .schedule = ph_schedule,                                                                   \
        .cancel = ph_cancel,                                                                       \
        .reset = ph_reset,                                                                         \
        .poll = ph_poll,                                                                           \
        .idle = ph_idle,                                                                           \
        .read_stats = ph_read_stats,                                                               \
        .reserve_handles = ph_reserve_handles,                                                     \
        .timer_bytes = sizeof(struct ph_timer) + sizeof(pt__heap4_entry),                          \
        .tm_new = ph_tm_new,                                                                       \
        .tm_arm = ph_tm_arm,                                                                       \
        .tm_stop = stop_fn,                                                                        \
        .tm_start = ph_tm_start,                                                                   \
        .tm_reset = ph_tm_reset,                                                                   \
        .tm_firing = pt_timers_firing,                                                             \
        .flags = stop_fn == ph_tm_stop_sync ? PT_ENGINE_STOP_WAITS : 0,                                               \
        .tm_free = ph_tm_free,                                                                     \
        .move = ph_move,                                                                           \
        .held = ph_held,                                                                           \
        .check = ph_check,                                                                         \
        .set_slack = ph_set_slack,                                                                 \
    }

PH_ENGINE(engine_pheap, "pheap", ph_create_lazy, ph_tm_stop,
          "ptimer per-P heaps; cancel = pt_timer_stop, memory reused once unlinked");
PH_ENGINE(engine_pheap_sync, "pheap-sync", ph_create_sync, ph_tm_stop_sync,
          "ptimer per-P heaps; cancel = pt_timer_stop_sync, memory reused at once");
PH_ENGINE(engine_pheap_staged, "pheap-staged", ph_create_staged, ph_tm_stop,
          "ptimer per-P heaps with a staging ring (4.2 ms slots); cancel = pt_timer_stop");
