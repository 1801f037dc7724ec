/* churn: each P arms and cancels through the engine's own handles at full
 * speed, RPC-style: a window of outstanding timers, each op cancelling the
 * oldest... of a random slot and arming a new one, mostly far (an RPC
 * timeout that never fires), one in eight near (it fires). The owner's
 * cleanup races with it (pheap: stopped timers left Deleted in the heap).
 * Checks: what a cancel said against what fired, early and double
 * firings, the design's entries bounded by the live timers (stopped ones
 * are reclaimed), and no library block left at exit (pool.c). */
#include <stdlib.h>

#include "pool.h"

#define WINDOW 256
#define RING 4096u /* records per P: far more than WINDOW + those in flight */

struct ch_p {
    pt_engine_handle h[WINDOW];
    uint64_t seq[WINDOW];
    uint64_t next_seq, armed, said_pending;
    atomic_ullong fired;
    bool memory_seen;
    struct arm_rec ring[RING];
};

struct ch {
    struct stress_run *r;
    struct ch_p *p;
};

static struct ch *ch_cur;

static void ch_fire(void *arg)
{
    struct ch *m = ch_cur;
    uint64_t pi = arg_timer(arg), seq = arg_seq(arg);
    struct ch_p *p = &m->p[pi];
    struct arm_rec *a = &p->ring[seq % RING];
    pt_nanos now = pt_nanotime(), when = atomic_load(&a->when);
    atomic_fetch_add_explicit(&m->r->firings, 1, memory_order_relaxed);
    atomic_fetch_add(&p->fired, 1);
    enum arm_state seen;
    if (arm_move(p->ring, RING, seq, A_PENDING, A_FIRED, &seen) ||
        arm_move(p->ring, RING, seq, A_CLAIMED, A_FIRED, &seen)) {
        if (now < when)
            stress_violation(m->r, V_EARLY, (long)pi, seq, "a firing at or after its deadline",
                             "fired %.3f ms early", (double)(when - now) / 1e6);
    } else if (seen == A_FIRED) {
        stress_violation(m->r, V_DOUBLE, (long)pi, seq, "one firing per arming", "fired again");
    } else if (seen == A_STOPPED) {
        stress_violation(m->r, V_FIRED_STOPPED, (long)pi, seq, "no firing (cancel returned true)",
                         "fired %.3f ms after its deadline", (double)(now - when) / 1e6);
    } else {
        atomic_fetch_add(&m->r->untracked, 1);
    }
}

static void cancel_slot(struct ch *m, struct pworker *w, int i)
{
    struct ch_p *p = &m->p[w->id];
    if (!p->h[i])
        return;
    bool c = m->r->eng->cancel(w->th, p->h[i]);
    enum arm_state seen;
    if (c) {
        p->said_pending++;
        if (!arm_move(p->ring, RING, p->seq[i], A_PENDING, A_STOPPED, &seen) && seen == A_FIRED)
            stress_violation(m->r, V_FIRED_STOPPED, w->id, p->seq[i],
                             "no firing (cancel returned true)", "it had fired already");
    } else {
        (void)arm_move(p->ring, RING, p->seq[i], A_PENDING, A_CLAIMED, &seen);
    }
    p->h[i] = 0;
}

static void ch_op(struct pworker *w)
{
    struct ch *m = w->pl->sc;
    struct ch_p *p = &m->p[w->id];
    uint64_t x = pt__xorshift64(&w->rng);
    int i = (int)((x >> 8) % WINDOW);
    cancel_slot(m, w, i);
    pt_nanos now = pt_nanotime();
    pt_nanos when = x % 8 == 0 ? now + (pt_nanos)(x >> 40) % 500000
                               : now + 50000000 + (pt_nanos)(x >> 32) % 1000000000;
    uint64_t seq = ++p->next_seq;
    arm_open(p->ring, RING, seq, when, 0);
    p->h[i] = m->r->eng->schedule(w->th, when, 0, arm_arg((uint64_t)w->id, seq));
    p->seq[i] = seq;
    if (!p->h[i]) {
        stress_violation(m->r, V_ERROR, w->id, seq, "schedule to succeed", "0");
        return;
    }
    p->armed++;
}

static void ch_round(struct pworker *w)
{
    struct ch *m = w->pl->sc;
    struct ch_p *p = &m->p[w->id];
    const struct pt_engine *eng = m->r->eng;
    if (!eng->held || w->batches % 32 != 0 || p->memory_seen)
        return;
    /* Live: WINDOW here (a shared structure holds every P's). Cleaning may
     * leave up to a quarter of a heap deleted, swept 1024 a call. */
    size_t live = (size_t)WINDOW * (size_t)w->pl->np, held = eng->held(w->th);
    if (held > 2 * live + 4096) {
        p->memory_seen = true;
        stress_violation(m->r, V_MEMORY, w->id, 0, "entries <= 2 x live + 4096",
                         "%zu entries for %zu live timers", held, live);
    }
}

static void ch_final(struct pworker *w)
{
    struct ch *m = w->pl->sc;
    struct ch_p *p = &m->p[w->id];
    for (int i = 0; i < WINDOW; i++)
        cancel_slot(m, w, i);
    /* A cancel that said "not pending" may have met a firing still under
     * way on another thread (globalheap's firing thread): let in-flight
     * firings land, running this P's own timers meanwhile, for at most
     * the bound. */
    pt_nanos from = pt_nanotime();
    while (p->armed != atomic_load(&p->fired) + p->said_pending &&
           !stress_overdue(m->r, from, pt_nanotime(), m->r->o->bound))
        m->r->eng->idle(w->th, pt_nanotime() + 1000000);
    uint64_t fired = atomic_load(&p->fired);
    if (p->armed != fired + p->said_pending)
        stress_violation(m->r, V_COUNT, w->id, 0, "armings = firings + cancels that said pending",
                         "%llu armings, %llu firings, %llu cancels said pending",
                         (unsigned long long)p->armed, (unsigned long long)fired,
                         (unsigned long long)p->said_pending);
    for (unsigned i = 0; i < RING; i++)
        if ((atomic_load(&p->ring[i].word) & 0xff) == A_CLAIMED)
            stress_violation(m->r, V_UNFIRED, w->id, atomic_load(&p->ring[i].word) >> 8,
                             "a firing (cancel returned false: not pending)", "never fired");
}

void sc_churn(struct stress_run *r)
{
    const struct stress_opts *o = r->o;
    struct ch m = {.r = r, .p = calloc((size_t)o->threads, sizeof *m.p)};
    if (!m.p)
        abort();
    ch_cur = &m;
    struct pool pl = {
        .r = r,
        .np = o->threads,
        .sc = &m,
        .op = ch_op,
        .p_round = ch_round,
        .p_final = ch_final,
        .cb = ch_fire,
        .drain = STRESS_DRAIN,
    };
    pool_run(&pl);
    ch_cur = NULL;
    free(m.p);
}
