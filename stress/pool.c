/* The run's threads and phases (pool.h). */
#include <stdlib.h>

#include "pool.h"
#include "base/alloc.h"

#define BATCH 32

static int phase(const struct pool *pl)
{
    return atomic_load_explicit(&pl->phase, memory_order_acquire);
}

static void wait_phase(struct pool *pl, int ph, struct pworker *w)
{
    while (phase(pl) < ph) {
        if (w && w->is_p)
            w->pl->r->eng->idle(w->th, pt_nanotime() + 1000000);
        else
            stress_sleep(1000000);
    }
}

void pool_check(struct pworker *w, bool quiescent)
{
    const struct pt_engine *eng = w->pl->r->eng;
    const char *bad = eng->check ? eng->check(w->th, quiescent) : NULL;
    if (bad)
        stress_violation(w->pl->r, V_INVARIANT, -1, 0, "the design's invariants to hold",
                         "P %d: %s", w->id, bad);
}

void pool_move(struct pworker *w)
{
    const struct pt_engine *eng = w->pl->r->eng;
    int rc = eng->move(w->pl->w[0].th, w->th);
    if (rc < 0)
        stress_violation(w->pl->r, V_ERROR, -1, 0, "move to succeed", "%d", rc);
    pool_check(w, false);
    atomic_store(&w->pl->moved, true);
}

void *pool_quiet_th(const struct pool *pl)
{
    return pl->quiet ? pl->w[pl->np + pl->nout].th : NULL;
}

pt_nanos pool_until(const struct pool *pl, pt_nanos until)
{
    pt_nanos end = atomic_load_explicit(&pl->end, memory_order_relaxed);
    return end && end < until ? end : until;
}

/* A worker's part in a mid-run quiescent check: stop between operations,
 * and once every mutator has stopped, a P checks its own structure in
 * its quiescent form. Only then may the check demand what only a quiet
 * structure shows (every entry at its key, exact counts); a design that
 * leaves a re-keyed timer at its old key until the next adjust hides
 * that from any check made while the heap is busy. */
static void hold_here(struct pworker *w)
{
    struct pool *pl = w->pl;
    /* hold is the check's number (0: none): a worker slow to see one
     * end still joins the next */
    int gen = atomic_load_explicit(&pl->hold, memory_order_acquire);
    if (gen == 0 || gen == w->held_gen)
        return;
    w->held_gen = gen;
    atomic_fetch_add(&pl->held, 1);
    if (w->is_p) {
        while (atomic_load(&pl->held) < pl->np + pl->nout)
            stress_sleep(20000);
        pool_check(w, true);
        atomic_fetch_add(&pl->held_checked, 1);
    }
    while (atomic_load_explicit(&pl->hold, memory_order_acquire) == gen)
        stress_sleep(20000);
}

/* The main thread, every 10 ms of the run: the scenario's scan, and now
 * and then (every 50-250 ms, by the seed) a quiescent check of every P. */
static void pool_scan(void *arg)
{
    struct pool *pl = arg;
    if (pl->scan)
        pl->scan(pl->sc);
    pt_nanos now = pt_nanotime();
    if (now < pl->next_hold || !pl->r->eng->check)
        return;
    witness_pause_begin();
    atomic_store(&pl->held, 0);
    atomic_store(&pl->held_checked, 0);
    atomic_store_explicit(&pl->hold, ++pl->holds, memory_order_release);
    while (atomic_load(&pl->held_checked) < pl->np)
        stress_sleep(20000);
    atomic_store_explicit(&pl->hold, 0, memory_order_release);
    witness_pause_end();
    atomic_fetch_add(&pl->r->quiet_checks, 1);
    pl->next_hold = pt_nanotime() + 50000000 + (pt_nanos)(pt__xorshift64(&pl->hold_rng) % 200000000);
}

/* The quiet P's run phase: long sleeps, woken only by what is armed on it. */
static void quiet_run(struct pworker *w)
{
    struct pool *pl = w->pl;
    const struct pt_engine *eng = pl->r->eng;
    while (phase(pl) == PH_RUN) {
        eng->idle(w->th, pool_until(pl, pt_nanotime() + 4 * pl->r->o->bound));
        pool_check(w, false);
    }
}

static void *p_main(void *arg)
{
    struct pworker *w = arg;
    struct pool *pl = w->pl;
    const struct pt_engine *eng = pl->r->eng;
    /* workers are numbered densely (the table's contract): the quiet P,
     * after the outsiders in w[], is worker np */
    w->th = eng->thread_start(pl->r->e, w->id < pl->np ? w->id : pl->np);
    if (!w->th)
        abort(); /* no context, no run: nothing to report it through yet */
    atomic_fetch_add(&pl->started, 1);
    wait_phase(pl, PH_RUN, w);
    uint64_t ops = 0;
    if (w->id >= pl->np) {
        quiet_run(w);
        goto drained;
    }
    int batch = pl->batch ? pl->batch : BATCH;
    while (phase(pl) == PH_RUN) {
        /* P 0 checks what a move gave it before its own next operations */
        if (w->id == 0 && atomic_exchange(&pl->moved, false))
            pool_check(w, false);
        for (int i = 0; i < batch; i++)
            pl->op(w);
        ops += (uint64_t)batch;
        eng->poll(w->th);
        if (pl->p_round)
            pl->p_round(w);
        hold_here(w);
        /* Verify the structure now and then while others race on it. */
        if (++w->batches % 64 == 0)
            pool_check(w, false);
        if (ops >= 4096) {
            atomic_fetch_add_explicit(&pl->r->ops, ops, memory_order_relaxed);
            ops = 0;
        }
    }
    atomic_fetch_add_explicit(&pl->r->ops, ops, memory_order_relaxed);
drained:
    atomic_fetch_add(&pl->drained, 1);
    wait_phase(pl, PH_CHECK, w);
    if (pl->p_final && w->id < pl->np)
        pl->p_final(w);
    pool_check(w, true);
    atomic_fetch_add(&pl->checked, 1);
    wait_phase(pl, PH_EXIT, w);
    eng->thread_stop(w->th);
    return NULL;
}

static void *out_main(void *arg)
{
    struct pworker *w = arg;
    struct pool *pl = w->pl;
    wait_phase(pl, PH_RUN, NULL);
    uint64_t ops = 0;
    while (phase(pl) == PH_RUN) {
        pl->op(w);
        hold_here(w);
        if (++ops == 4096) {
            atomic_fetch_add_explicit(&pl->r->ops, ops, memory_order_relaxed);
            ops = 0;
        }
    }
    atomic_fetch_add_explicit(&pl->r->ops, ops, memory_order_relaxed);
    return NULL;
}

static void set_phase(struct pool *pl, int ph)
{
    atomic_store_explicit(&pl->phase, ph, memory_order_release);
}

static void wait_count(atomic_int *n, int want)
{
    while (atomic_load(n) < want)
        stress_sleep(1000000);
}

void pool_run(struct pool *pl)
{
    struct stress_run *r = pl->r;
    const struct stress_opts *o = r->o;
    long live0 = pt__alloc_live();
    r->e = r->eng->create(pl->np + pl->quiet, pl->cb); /* the quiet P is a worker too */
    if (!r->e) {
        stress_violation(r, V_ERROR, -1, 0, "an engine", "create failed");
        return;
    }
    if (o->slack && r->eng->set_slack(r->e, o->slack) != 0) { /* ptstress.c: only if it has one */
        stress_violation(r, V_ERROR, -1, 0, "an engine that takes the window", "set_slack failed");
        r->eng->destroy(r->e);
        return;
    }
    if (pl->setup)
        pl->setup(pl);
    int nq = pl->quiet, all = pl->np + pl->nout + nq;
    pl->w = calloc((size_t)all, sizeof *pl->w);
    if (!pl->w)
        abort();
    for (int i = 0; i < all; i++) {
        struct pworker *w = &pl->w[i];
        *w = (struct pworker){.pl = pl, .id = i, .is_p = i < pl->np || i >= pl->np + pl->nout};
        w->rng = o->seed * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull + 1;
        if (w->is_p && pthread_create(&w->thread, NULL, p_main, w) != 0)
            abort();
    }
    wait_count(&pl->started, pl->np + nq);
    for (int i = pl->np; i < pl->np + pl->nout; i++) {
        pl->w[i].th = pl->w[0].th;
        if (pthread_create(&pl->w[i].thread, NULL, out_main, &pl->w[i]) != 0)
            abort();
    }
    if (pl->on_engine)
        pl->on_engine(pl);
    r->t0 = pt_nanotime();
    atomic_store(&pl->end, r->t0 + o->duration);
    set_phase(pl, PH_RUN);
    pl->hold_rng = o->seed * 0x94d049bb133111ebull + 7;
    pl->next_hold = r->t0 + 50000000 + (pt_nanos)(pt__xorshift64(&pl->hold_rng) % 200000000);
    stress_wait(r, r->t0 + o->duration, pool_scan, pl);
    set_phase(pl, PH_DRAIN);
    for (int i = pl->np; i < pl->np + pl->nout; i++)
        pthread_join(pl->w[i].thread, NULL);
    wait_count(&pl->drained, pl->np + nq);
    /* Nothing is armed from here on: let what is due fire, then judge.
     * The final checks allow the whole bound whatever the drain, so a
     * short run (a test's) drains for a quarter of its length at most:
     * less of what was due is judged at the end, nothing is misjudged. */
    pt_nanos drain = pl->drain, cap = o->duration / 4 > 20000000 ? o->duration / 4 : 20000000;
    stress_sleep(drain < cap ? drain : cap);
    if (pl->final)
        pl->final(pl);
    set_phase(pl, PH_CHECK);
    wait_count(&pl->checked, pl->np + nq);
    if (pl->cleanup)
        pl->cleanup(pl);
    set_phase(pl, PH_EXIT);
    for (int i = 0; i < all; i++)
        if (pl->w[i].is_p)
            pthread_join(pl->w[i].thread, NULL);
    r->eng->destroy(r->e);
    free(pl->w);
    long live = pt__alloc_live();
    if (live != live0)
        stress_violation(r, V_LEAK, -1, 0, "every library block freed",
                         "%ld blocks before the run, %ld after", live0, live);
}
