/* spawn-burst: what a G costs when it cannot come from the pool. The
 * first G starts N Gs (--burst-gs) without yielding; each waits on a gate
 * that opens only once all are started, so none finishes, and none frees
 * a stack for the next, before the last is made: every one gets a stack
 * the process has not touched before. The figure is the wall time from
 * the first pt_go until the last G has finished, over N; with 1 P the Gs
 * run only after the burst, with 2 the second P runs them up to the gate
 * meanwhile. A fresh process per repetition (isolated.c), so that no
 * stack an earlier run freed is reused. */
#include <stdatomic.h>

#include "sched_bench.h"

struct burst {
    pt_wg gate;              /* count 1 until every G is started */
    pt_wg finished;
    atomic_ulong passed;     /* Gs through the gate: each waited once */
};

static void burst_g(void *arg)
{
    struct burst *b = arg;
    pt_wg_wait(&b->gate);
    atomic_fetch_add_explicit(&b->passed, 1, memory_order_relaxed);
    pt_wg_done(&b->finished);
}

void sched_spawn_burst(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    long n = c->cfg->memory_gs;
    struct burst b = {0};
    pt_wg_init(&b.gate);
    pt_wg_init(&b.finished);
    pt_wg_add(&b.gate, 1);
    uint64_t base = sched_gs_now();
    sched_phase_begin(c);
    pt_nanos t0 = c->start;
    /* refused Gs are taken off the wait group, their error kept: the
     * figure is then per G started, and the report says how far it got */
    sched_go_n(c, (int)n, burst_g, &b, 0, &b.finished);
    pt_nanos t1 = pt_nanotime();
    pt_wg_done(&b.gate);
    pt_wg_wait(&b.finished);
    sched_phase_end(c);
    pt_nanos t2 = c->start + r->elapsed;
    uint64_t started = r->gs_started;
    if (started) {
        r->create_ns = (double)(t1 - t0) / (double)started;
        r->cancel_ns = (double)(t2 - t1) / (double)started;
    }
    r->ops = started;
    r->waits = started;
    r->wakes = atomic_load(&b.passed);
    sched_count_finished(c, base);
}
