/* The threads of a run: Ps (workers with an engine context, running their
 * timers between batches of operations) and outsiders (mutators that are
 * not Ps, arming onto P 0's structure), and the phases that end a run
 * without an operation in flight during the final checks. */
#ifndef PTSTRESS_POOL_H
#define PTSTRESS_POOL_H

#include <pthread.h>

#include "stress.h"

enum { PH_START, PH_RUN, PH_DRAIN, PH_CHECK, PH_EXIT };

struct pool;

struct pworker {
    struct pool *pl;
    int id;
    bool is_p;
    void *th; /* a P's own context; P 0's for an outsider */
    uint64_t rng;
    pthread_t thread;
    uint64_t batches;
    int held_gen; /* the last mid-run check it took part in */
};

struct pool {
    struct stress_run *r;
    int np, nout;
    struct pworker *w;
    _Atomic int phase;
    atomic_int started, drained, checked;
    /* A mid-run quiescent check (pool.c): the main thread raises hold,
     * every P and outsider stops between operations and counts itself in
     * held, then each P checks its structure with nothing in flight and
     * counts itself in held_checked; hold drops and they go on. */
    atomic_int hold, held, held_checked;
    int holds;          /* the main thread's: checks so far, the last one's number */
    pt_nanos next_hold; /* ... and when it holds next */
    uint64_t hold_rng;
    atomic_bool moved;    /* a move gave P 0 timers its own check has not seen yet */
    _Atomic pt_nanos end; /* when the run phase ends (0: not yet known) */
    void *sc;             /* the scenario's state */
    /* Hooks, each optional but op. */
    void (*op)(struct pworker *w);      /* one operation (phase RUN) */
    void (*p_round)(struct pworker *w); /* on a P after each batch (pacing, stalls) */
    void (*p_final)(struct pworker *w); /* on a P at the final check */
    void (*scan)(void *sc);             /* on the main thread every 10 ms */
    void (*final)(struct pool *pl);     /* main, once drained, before the P checks */
    void (*cleanup)(struct pool *pl);   /* main, after them: free timer objects */
    void (*setup)(struct pool *pl);     /* main, once the instance exists: timer objects */
    void (*on_engine)(struct pool *pl); /* main, once P 0 has its context */
    int batch;                          /* operations between a P's rounds (0: 32) */
    /* One more P, after the outsiders (w[np + nout]), that runs no
     * operation: it sleeps in the design's idle for long stretches, its
     * heap empty but for what the scenario arms on it from elsewhere, so
     * a missing wake for a new earliest timer shows as a late firing
     * instead of hiding behind the next timer already due. */
    bool quiet;
    pt_engine_cb cb;    /* what the scenario's timers call */
    pt_nanos drain; /* how long to let due timers fire before the final checks */
};

/* On a P: the design's own check (engine.h), a violation if it fails. */
void pool_check(struct pworker *w, bool quiescent);

/* On a P other than 0: every timer of its structure onto P 0's (the
 * engine's move, Go's moveTimers); its own structure is checked at once
 * (emptied: nothing may look due), P 0's at P 0's next round, before
 * the timers moved are touched again, mostly. */
void pool_move(struct pworker *w);

/* The quiet P's context (NULL if the pool has none). */
void *pool_quiet_th(const struct pool *pl);

/* An idle deadline `until`, cut at the end of the run phase, so that a
 * P's long sleep never holds the run's end up. */
pt_nanos pool_until(const struct pool *pl, pt_nanos until);

/* Creates the engine, runs the threads through the phases, destroys it,
 * and checks the library leaked nothing. */
void pool_run(struct pool *pl);

#endif
