/* Gs: where they come from (a P's pool of finished Gs, the global pool,
 * or a fresh stack), how an M runs one (execute), and what a G asks of
 * its M when it switches out (yield, park, exit).
 *
 * What a G asks for is done once it is off its stack -- that is what
 * makes park's commit safe: a G published to its wakers could otherwise
 * be resumed by another M while this one still runs on its stack (Go's
 * gopark runs its unlock function on g0 for the same reason). Two places
 * qualify. A G switches to its M's g0, which does it and then looks for
 * work; or, when the M would only take the head of its own P's queue
 * next and run the P's due timers (pt__next_local), a G that parks or
 * exits switches straight to that G (a handoff), and the G switched to
 * does it first thing, on its own stack, then the timers (arrive). A
 * ping-pong pair then costs two switches a round trip instead of four,
 * and no pass through the search for work. A G that yields, or is
 * preempted, always goes through g0. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/futex.h"
#include "base/lock.h"
#include "sched/internal.h"

/* ---- the pools --------------------------------------------------------- */

static void g_entry(void *arg);

/* A G lives at the top of its own stack mapping, above its first frame:
 * the page a parked G keeps resident holds both, and the fields a park
 * touches sit next to the frames it touches. Each G starts a different
 * number of cache lines below the top (its colour), so that a thousand
 * Gs' hot lines do not all fall in the same few L1 sets, as they would
 * at one page offset. The G's first word is a canary: a write running
 * up off the stack's top frame, which used to fault past the mapping's
 * end, would otherwise corrupt the G in silence; every switch out checks
 * it (g_check). In the G, not in a word below it: that would move the
 * stack's top frames down, onto one more line, which a G stolen by
 * another P then carries across. */
#define G_COLOURS 16u
#define G_CANARY 0x70745f675f746f70ull /* "pot_g_tp" */

/* The G's stack: [stack.lo, g). */
static inline size_t g_stack_size(const pt_g *g)
{
    return (size_t)((const char *)g - (const char *)g->stack.lo);
}

static inline void g_check(const pt_g *g)
{
    if (g->canary != G_CANARY)
        pt__sched_bad(g, "a switch: the stack overran its top into the G");
    if (!pt__stack_intact(&g->stack, (uintptr_t)__builtin_frame_address(0)))
        pt__sched_overflow(g, "a switch: the G overflowed its stack (it is below its end, or the "
                              "canary page below it was touched)");
}

pt_g *pt__g_on_stack(void *lo, size_t size)
{
    for (uint32_t c = 0; c < G_COLOURS; c++) {
        uintptr_t top = (uintptr_t)lo + size - 64 * c - sizeof(pt_g);
        pt_g *g = (pt_g *)(top & ~(uintptr_t)63);
        if (g->canary == G_CANARY && g->stack.lo == lo)
            return g;
    }
    return NULL;
}

size_t pt__g_room(void)
{
    return (sizeof(pt_g) + 63) / 64 * 64 + 64 * G_COLOURS;
}

static pt_g *g_new(pt_sched *s)
{
    static _Atomic uint32_t colour;
    struct pt__stack st;
    uint32_t wanted = atomic_load_explicit(&s->stacks.want, memory_order_relaxed);
    if (pt__stack_alloc(&s->stacks, &st) < 0)
        return NULL;
    /* A burst of new Gs begins: the monitor prepares their stacks (it
     * may be in a long sleep). Once a burst, not once a G. */
    if (!wanted && atomic_load_explicit(&s->stacks.want, memory_order_relaxed))
        pt__sysmon_kick(s);
    uint32_t c = atomic_fetch_add_explicit(&colour, 1, memory_order_relaxed) % G_COLOURS;
    uintptr_t top = (uintptr_t)st.lo + st.size - 64 * c - sizeof(pt_g);
    pt_g *g = (pt_g *)(top & ~(uintptr_t)63);
    memset(g, 0, sizeof *g);
    g->canary = G_CANARY;
    g->stack = st;
    g->s = s;
    g->park.tt_task = PT_INVALID_TASK_ID;
    atomic_init(&g->status, PT__G_IDLE);
    return g;
}

static void g_free(pt_g *g)
{
    struct pt__stack st = g->stack; /* g is in it */
    pt_sched *s = g->s;
    /* a deadline's callback may still run on another M (it lost the
     * claim): the G's memory outlives it */
    if (g->park.timer_made)
        pt__ptimer_stop_sync(pt__lheap(s), &g->park.timer);
    pt__fiber_destroy(&g->fiber);
    if (st.kind == PT__STACK_CANARY && pt__stack_guard_touched(&st))
        pt__sched_overflow(g, "a free: the G, or one before it on its stack, overflowed it (the "
                              "canary page below it was touched)");
    pt__stack_free(&s->stacks, &st);
}

/* The global pool is a stack of batches, each a chain of Gs (linked by
 * next) whose first G holds the chain's length and the next batch: a P
 * gives half its pool as one batch and takes one batch back, each in O(1)
 * under s->lock. Walking a chain under the lock cost a cache miss per G,
 * the Gs having finished on another core (a spawn profile at 2 Ps). */

/* A G to start: the caller's P's pool (M only), else a batch from the
 * global pool (Go's gfget: a P that spawns while its Gs finish on another
 * P finds its own pool empty every time), else a new one. */
static pt_g *g_get(pt_sched *s, struct pt__p *p)
{
    pt_g *g;
    if (p && (g = p->gs.pool)) {
        p->gs.pool = g->next;
        p->gs.npool--;
        return g;
    }
    if (atomic_load_explicit(&s->gpool.batches,
                             memory_order_relaxed)) { /* a peek: the lock decides */
        pt__lock(&s->lock);
        g = atomic_load_explicit(&s->gpool.batches, memory_order_relaxed);
        if (g) {
            pt_g *rest = g->next, *below = g->pool_batch;
            uint32_t n = g->pool_n - 1;
            uint64_t left = atomic_load_explicit(&s->gpool.n, memory_order_relaxed);
            if (p || !rest) {
                atomic_store_explicit(&s->gpool.batches, below, memory_order_relaxed);
                left -= n + 1;
            } else { /* a thread takes one: the rest stays a batch */
                rest->pool_batch = below;
                rest->pool_n = n;
                atomic_store_explicit(&s->gpool.batches, rest, memory_order_relaxed);
                left -= 1;
            }
            atomic_store_explicit(&s->gpool.n, left, memory_order_relaxed);
            if (left < s->gpool.low)
                s->gpool.low = left;
            pt__unlock(&s->lock);
            if (p) { /* the pool was empty */
                p->gs.pool = rest;
                p->gs.npool = n;
            }
            return g;
        }
        pt__unlock(&s->lock);
    }
    return g_new(s);
}

/* A finished G back to its M's P's pool; past PT__G_POOL_LOCAL, half the
 * pool goes to the global one as a batch, where other Ps and other
 * threads find it. */
static void g_put(struct pt__p *p, pt_g *g)
{
    atomic_store_explicit(&g->status, PT__G_IDLE, memory_order_relaxed);
    g->next = p->gs.pool;
    p->gs.pool = g;
    if (++p->gs.npool < PT__G_POOL_LOCAL)
        return;
    pt_g *head = p->gs.pool, *tail = head;
    for (uint32_t i = 1; i < PT__G_POOL_LOCAL / 2; i++)
        tail = tail->next;
    p->gs.pool = tail->next;
    p->gs.npool -= PT__G_POOL_LOCAL / 2;
    tail->next = NULL;
    head->pool_n = PT__G_POOL_LOCAL / 2;
    pt_sched *s = p->s;
    pt__lock(&s->lock);
    head->pool_batch = atomic_load_explicit(&s->gpool.batches, memory_order_relaxed);
    atomic_store_explicit(&s->gpool.batches, head, memory_order_relaxed);
    atomic_store_explicit(&s->gpool.n,
                          atomic_load_explicit(&s->gpool.n, memory_order_relaxed) + head->pool_n,
                          memory_order_relaxed);
    pt__unlock(&s->lock);
}

/* ---- giving stacks back ------------------------------------------------- */

/* After a burst (a million connections served and closed) the finished
 * Gs sit in the global pool, each holding the pages its stack touched.
 * What the pool did not go below for a whole period, the load did not
 * need: the monitor frees it, a batch at a time, keeping
 * PT__G_POOL_KEEP, and the stacks' pages and emptied reservations go
 * back to the kernel (stack.c). Go frees its pool's stacks at each GC
 * (gfpurge); here the period is the clock's, not a collector's. */
#define PT__G_TRIM_NS ((pt_nanos)1000000000)
#define PT__G_POOL_KEEP 1024u

pt_nanos pt__g_trim(pt_sched *s, pt_nanos now)
{
    if (now >= s->gpool.trim_at) {
        pt_g *out = NULL;
        pt__lock(&s->lock);
        uint64_t n = atomic_load_explicit(&s->gpool.n, memory_order_relaxed);
        uint64_t spare = s->gpool.low > PT__G_POOL_KEEP ? s->gpool.low - PT__G_POOL_KEEP : 0;
        pt_g *b;
        while ((b = atomic_load_explicit(&s->gpool.batches, memory_order_relaxed)) &&
               b->pool_n <= spare) {
            atomic_store_explicit(&s->gpool.batches, b->pool_batch, memory_order_relaxed);
            spare -= b->pool_n;
            n -= b->pool_n;
            b->pool_batch = out;
            out = b;
        }
        atomic_store_explicit(&s->gpool.n, n, memory_order_relaxed);
        s->gpool.low = n;
        pt__unlock(&s->lock);
        s->gpool.trim_at = now + PT__G_TRIM_NS;
        for (pt_g *nb; out; out = nb) {
            nb = out->pool_batch;
            for (pt_g *g = out, *nx; g; g = nx) {
                nx = g->next;
                g_free(g);
            }
        }
    }
    return atomic_load_explicit(&s->gpool.n, memory_order_relaxed) > PT__G_POOL_KEEP
               ? s->gpool.trim_at
               : 0;
}

struct parked {
    pt_sched *s;
    pt_g **gs;
    size_t n, cap;
};

static void collect_parked(void *lo, void *arg)
{
    struct parked *w = arg;
    pt_g *g = pt__g_on_stack(lo, w->s->stacks.size);
    if (g && atomic_load_explicit(&g->status, memory_order_relaxed) == PT__G_WAITING && w->n < w->cap)
        w->gs[w->n++] = g;
}

int pt__g_free_parked(pt_sched *s)
{
    int64_t live = atomic_load_explicit(&s->gcount, memory_order_acquire);
    struct parked w = {s, NULL, 0, live > 0 ? (size_t)live : 0};
    if (w.cap && !(w.gs = malloc(w.cap * sizeof *w.gs)))
        return -ENOMEM;
    pt__stack_each(&s->stacks, collect_parked, &w);
    for (size_t i = 0; i < w.n; i++)
        g_free(w.gs[i]);
    free(w.gs);
    return 0;
}

void pt__g_free_all(pt_sched *s)
{
    int n = atomic_load_explicit(&s->maxprocs_made, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct pt__p *p = s->ps[i];
        for (pt_g *g = p->gs.pool, *nx; g; g = nx) {
            nx = g->next;
            g_free(g);
        }
        p->gs.pool = NULL;
        p->gs.npool = 0;
    }
    for (pt_g *b = atomic_load_explicit(&s->gpool.batches, memory_order_relaxed), *nb; b; b = nb) {
        nb = b->pool_batch;
        for (pt_g *g = b, *nx; g; g = nx) {
            nx = g->next;
            g_free(g);
        }
    }
    atomic_store_explicit(&s->gpool.batches, NULL, memory_order_relaxed);
    atomic_store_explicit(&s->gpool.n, 0, memory_order_relaxed);
}

/* ---- running a G ---------------------------------------------------------- */

static void g_exit(pt_sched *s)
{
    /* release: the G's effects happen before a waiter's return */
    if (atomic_fetch_sub_explicit(&s->gcount, 1, memory_order_acq_rel) == 1) {
        atomic_fetch_add_explicit(&s->gdone_word, 1, memory_order_release);
        pt__futex_wake(&s->gdone_word, INT_MAX);
    }
}

/* Does what g asked for as it switched out, now that it is off its
 * stack, on its M's g0 or on the G it handed the M to. True: g must run
 * again at once (its park's commit refused), and it is Running again. */
static bool g_finish(struct pt__m *m, pt_g *g)
{
    switch (g->action) {
    case PT__G_DO_YIELD:
        /* Go's Gosched: behind everything, on the global queue */
        atomic_store_explicit(&g->status, PT__G_RUNNABLE, memory_order_relaxed);
        pt__globq_put(m->s, g);
        return false;
    case PT__G_DO_PARK: {
        /* read before g can be readied: counted once its park stands */
        bool count = m->s->opt.virtual_time && g->wait_durable;
        /* release: whoever readies g (after commit publishes it) sees
         * everything it did before parking */
        atomic_store_explicit(&g->status, PT__G_WAITING, memory_order_release);
        if (!g->commit || g->commit(g->commit_arg)) {
            if (count)
                pt__vt_block(m->s);
            return false; /* g may be running elsewhere already: not touched again */
        }
        /* commit said no: resume at once, unless it was readied after all
         * (a commit that published g and then refused; that ready
         * uncounted the park, which is counted here to match) */
        uint32_t w = PT__G_WAITING;
        if (atomic_compare_exchange_strong_explicit(&g->status, &w, PT__G_RUNNING,
                                                    memory_order_acq_rel, memory_order_relaxed))
            return true;
        if (count)
            pt__vt_block(m->s);
        return false;
    }
    case PT__G_DO_PREEMPT:
        pt__preempt_unblock();
        /* as a yield: behind the Gs that were waiting for this P */
        atomic_store_explicit(&g->status, PT__G_RUNNABLE, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->s->st.preempts, 1, memory_order_relaxed);
        pt__globq_put(m->s, g);
        return false;
    case PT__G_DO_NEXT:
        atomic_store_explicit(&g->status, PT__G_RUNNABLE, memory_order_relaxed);
        pt__runq_put(m->p, g, true);
        return false;
    case PT__G_DO_EXIT: {
        pt_sched *s = g->s;
        pt__fiber_retire(&g->fiber);
        atomic_store_explicit(&g->status, PT__G_DEAD, memory_order_relaxed);
        g_put(m->p, g);
        g_exit(s);
        return false;
    }
    default:
        pt__sched_bad(g, "execute");
    }
}

void pt__execute(struct pt__m *m, pt_g *g)
{
    for (;;) {
        /* a G preempted in a region resumes there: its P's timers wake
         * this M's alarm if they fall due while it computes */
        if (atomic_load_explicit(&g->preemptible, memory_order_relaxed) != 0)
            pt__alarm_resume(m, g);
        atomic_store_explicit(&g->status, PT__G_RUNNING, memory_order_relaxed);
        /* release: the monitor, reading curg, reads the G too (preempt.c) */
        atomic_store_explicit(&m->curg, g, memory_order_release);
        pt__fiber_switch(&m->g0, &g->fiber);
        /* the G that came back: g, or the last G a chain of handoffs from
         * g reached */
        g = atomic_load_explicit(&m->curg, memory_order_relaxed);
        atomic_store_explicit(&m->curg, NULL, memory_order_relaxed);
        /* Its run is over: an alarm armed for it goes. One preempted
         * inside its region may meet the monitor arming for it: with
         * curg taken back first, the monitor, under the lock, either
         * finds the run over or armed before this disarm. (action, not
         * preemptible: g_finish reads that line anyway.) */
        if (atomic_load_explicit(&m->pre.alarm_at, memory_order_relaxed) != 0 ||
            g->action == PT__G_DO_PREEMPT)
            pt__alarm_disarm(m);
        if (!g_finish(m, g))
            return;
        /* g resumes at once; the G it picked to run next goes back to
         * the head of the queue it came from, and the time it read for
         * g0's timers is dropped (g0 reads afresh when it next looks) */
        m->due_now = 0;
        if (m->runnow) {
            pt__runq_put(m->p, m->runnow, true);
            m->runnow = NULL;
        }
    }
}

/* The stack a G switched to needs free for the P's due timers to run
 * on it: their callbacks ready Gs, send on channels and may start Gs
 * (AfterFunc), with a stack mapped by a system call. Below this the G
 * switches to g0, whose stack is the thread's. */
#if defined(PT__ASAN) || defined(PT__TSAN)
#define TIMERS_STACK_ROOM (48 * 1024) /* larger frames, and a report's own */
#else
#define TIMERS_STACK_ROOM (16 * 1024)
#endif

/* Whether g, its stack at sp, has that room. */
static inline bool timers_room(const pt_g *g, const void *sp)
{
    return (size_t)((const char *)sp - (const char *)g->stack.lo) >= TIMERS_STACK_ROOM;
}

/* The G that from, leaving m with from->action set, switches straight
 * to, or NULL: from goes to g0 instead, which first runs the G picked
 * here, if any (runnow). A G preempted in a region resumes inside the
 * signal handler, which does not finish a handoff (from's commit would
 * never run), and with the region still open, where that commit could be
 * preempted in turn with a lock held: it goes through g0. From a handoff
 * until the next G has done from's action (g_arrive), curg is NULL, as on
 * g0: the commit it runs sees no G, and the monitor and the preemption
 * handler leave the M alone. Inlined into its two callers: as a call it
 * cost 26 instructions a ping-pong round trip (callgrind). */
static inline __attribute__((always_inline)) pt_g *hand_off(struct pt__m *m, pt_g *from)
{
    pt_g *next = pt__next_local(m, from->clock_hint);
    from->clock_hint = 0;
    if (!next || atomic_load_explicit(&next->preemptible, memory_order_relaxed) != 0 ||
        (m->due_now && !timers_room(next, next->fiber.ctx.sp))) {
        m->runnow = next;
        return NULL;
    }
    m->handoff = from;
    pt__count32(&m->p->schedtick, 1);
    pt__count(&m->p->n_handoffs, 1);
    atomic_store_explicit(&next->status, PT__G_RUNNING, memory_order_relaxed);
    atomic_store_explicit(&m->curg, NULL, memory_order_relaxed);
    return next;
}

/* First thing on a G that was switched to: if the M came from another G
 * (a handoff), do what that one asked, then run the P's due timers, then
 * take the M. That one's park refused: it resumes at once, and this G
 * goes back to the head of the queue, by the same route. The timers run
 * after the commit, never before: a G parking on a Timer's channel holds
 * that channel's lock until its commit, and the Timer may be due. */
static void g_arrive(pt_g *self)
{
    struct pt__m *m = pt__cur_m();
    pt_g *prev = m->handoff;
    if (!prev)
        return; /* from g0, which did the rest */
    for (;;) {
        m->handoff = NULL;
        if (!g_finish(m, prev))
            break;
        self->action = PT__G_DO_NEXT;
        m->handoff = self;
        pt__fiber_switch(&self->fiber, &prev->fiber);
        /* resumed by a later switch, here or on another M */
        m = pt__cur_m();
        if (!(prev = m->handoff))
            return;
    }
    /* Short of stack (a G a refused park sent the M back to: hand_off
     * looked at the other one), the timers wait for the M's next look */
    if (m->due_now && timers_room(self, __builtin_frame_address(0)))
        pt__run_due_timers(m);
    /* release: the monitor, reading curg, reads the G too (preempt.c) */
    atomic_store_explicit(&m->curg, self, memory_order_release);
}

/* A G that returned inside a region: nothing may preempt its exit, and
 * its M's alarm goes, as at a region's end (the exit may hand the M to
 * the next G, past g0's disarm). Out of line: g_run's frame, which
 * every G's stack starts with, stays as small as it was. */
static __attribute__((noinline, cold)) void exit_region(pt_g *g)
{
    atomic_store_explicit(&g->preemptible, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    pt__alarm_disarm(pt__cur_m());
}

/* A G's life on its stack, from its first switch in to the fiber it
 * leaves for. */
static __attribute__((noinline)) struct pt__fiber *g_run(pt_g *g)
{
    pt__fiber_started(&g->fiber);
    g_arrive(g);
    g->fn(g->arg);
    if (atomic_load_explicit(&g->preemptible, memory_order_relaxed) != 0)
        exit_region(g);
    g_check(g);
    g->action = PT__G_DO_EXIT;
    struct pt__m *m = pt__cur_m();
    pt_g *next = hand_off(m, g);
    return next ? &next->fiber : &m->g0;
}

/* Every G starts here, on its own stack: frameless, so that its fiber
 * ends with nothing of it open (fiber.h), and only a call so that every
 * access the G makes is g_run's, which TSan sees. */
static PT__FIBER_FRAMELESS void g_entry(void *arg)
{
    pt_g *g = arg;
    pt__fiber_exit(&g->fiber, g_run(g));
}

/* g switches out, asking for `action`: to the G its M runs next when
 * that is a handoff (a park), else to the M's g0. */
static void g_switch_out(pt_g *g, uint32_t action)
{
    /* Inside a preemptible region a signal could switch the G out in the
     * middle of this switch: calling into the scheduler there is misuse
     * that would corrupt the G, so it stops here. The caller found g
     * through its M and that M's curg, which a preemption between the
     * two reads makes another G's -- one that may be in no region -- so
     * g must also be the G whose stack this runs on (preempt.c's
     * region_self says why only the stack is a fact). */
    g_check(g); /* first: a G past its stack's end is not in a region */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (atomic_load_explicit(&g->preemptible, memory_order_relaxed) ||
        sp - (uintptr_t)g->stack.lo >= g->stack.size)
        pt__sched_bad(g, "a yield or park inside a preemptible region");
    g->action = action;
    struct pt__m *m = pt__cur_m();
    pt_g *next = action == PT__G_DO_PARK ? hand_off(m, g) : NULL;
    pt__fiber_switch(&g->fiber, next ? &next->fiber : &m->g0);
    g_arrive(g);
}

/* ---- the API ---------------------------------------------------------------- */

static inline bool sched_valid(const pt_sched *s)
{
    return s && s->magic == PT__SCHED_MAGIC;
}

pt_g *pt_g_current(void)
{
    struct pt__m *m = pt__cur_m();
    return m ? atomic_load_explicit(&m->curg, memory_order_relaxed) : NULL;
}

pt_sched *pt_sched_current(void)
{
    struct pt__m *m = pt__cur_m();
    return m && atomic_load_explicit(&m->curg, memory_order_relaxed) ? m->s : NULL;
}

int pt_go(pt_sched *s, void (*fn)(void *), void *arg)
{
    struct pt__m *m = pt__cur_m();
    if (!s && m && atomic_load_explicit(&m->curg, memory_order_relaxed))
        s = m->s;
    if (!fn || !sched_valid(s) || atomic_load_explicit(&s->stopping, memory_order_acquire))
        return -EINVAL;
    struct pt__p *p = m && m->s == s ? m->p : NULL;
    pt_g *g = g_get(s, p);
    if (!g)
        return -ENOMEM;
    g->fn = fn;
    g->arg = arg;
    if (s->opt.virtual_time) { /* for its deadlock report alone */
        g->made_at = __builtin_return_address(0);
        pt_g *parent = m ? atomic_load_explicit(&m->curg, memory_order_relaxed) : NULL;
        g->made_by = parent ? parent->id : 0;
        g->wait = PT__WAIT_NONE;
    }
    if (p) {
        if (p->gs.gid_next == p->gs.gid_end) {
            p->gs.gid_next =
                atomic_fetch_add_explicit(&s->next_gid, PT__GID_BATCH, memory_order_relaxed) + 1;
            p->gs.gid_end = p->gs.gid_next + PT__GID_BATCH;
        }
        g->id = p->gs.gid_next++;
        pt__count(&p->n_gs_created, 1);
    } else {
        g->id = atomic_fetch_add_explicit(&s->next_gid, 1, memory_order_relaxed) + 1;
        atomic_fetch_add_explicit(&s->st.gs_created, 1, memory_order_relaxed);
    }
    pt__fiber_make(&g->fiber, g->stack.lo, g_stack_size(g), g_entry, g);
    atomic_store_explicit(&g->status, PT__G_RUNNABLE, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->gcount, 1, memory_order_relaxed);
    pt__g_put_runnable(s, g);
    return 0;
}

void pt_yield(void)
{
    pt_g *g = pt_g_current();
    if (g)
        g_switch_out(g, PT__G_DO_YIELD);
}

void pt__park(pt_g *g, bool (*commit)(void *), void *arg)
{
    g->commit = commit;
    g->commit_arg = arg;
    g_switch_out(g, PT__G_DO_PARK);
}

int pt_park(bool (*commit)(void *arg), void *arg)
{
    pt_g *g = pt_g_current();
    if (!g)
        return -EPERM;
    pt__g_waits(g, PT__WAIT_PARK, (const void *)commit, true);
    pt__park(g, commit, arg);
    return 0;
}

int pt_ready(pt_g *g)
{
    if (!g)
        return -EINVAL;
    uint32_t w = PT__G_WAITING;
    /* acquire: pairs with the M's release store of Waiting, so the G's
     * state before it parked is visible to whoever runs it next */
    if (!atomic_compare_exchange_strong_explicit(&g->status, &w, PT__G_RUNNABLE,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return -EINVAL;
    if (g->s->opt.virtual_time && g->wait_durable)
        pt__vt_unblock(g->s);
    pt__g_put_runnable(g->s, g);
    return 0;
}
