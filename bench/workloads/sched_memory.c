/* memory-g: resident bytes per parked G. The first G starts N Gs (100k by
 * default, --memory-gs), half of which wait on a wait group and half in
 * a receive on an unbuffered channel, the two ways a server's Gs mostly
 * wait; the resident size is read before and once every one is parked.
 * Like memory, each repetition runs in a fresh process (isolated.c), so
 * that pages an earlier run freed are not reused and missed.
 *
 * If pt_go refuses a G (each G's stack is a mapping of its own, with a
 * guard page: two of the kernel's map areas per G, against
 * vm.max_map_count), the Gs parked so far are measured, the error is kept,
 * and the report says how many were parked. */
#include <stdatomic.h>
#include <stdlib.h>

#include "sched_bench.h"

struct memory_g {
    pt_wg gate;      /* count 1 until the release */
    pt_chan *gate_c; /* closed at the release */
    pt_wg finished;
    atomic_ulong parked, released; /* harness counters: no memory per G */
};

static void finish(struct memory_g *m)
{
    atomic_fetch_add_explicit(&m->released, 1, memory_order_relaxed);
    pt_wg_done(&m->finished);
}

static void wg_waiter(void *arg)
{
    struct memory_g *m = arg;
    atomic_fetch_add_explicit(&m->parked, 1, memory_order_relaxed);
    pt_wg_wait(&m->gate);
    finish(m);
}

static void chan_waiter(void *arg)
{
    struct memory_g *m = arg;
    long v;
    atomic_fetch_add_explicit(&m->parked, 1, memory_order_relaxed);
    pt_chan_recv(m->gate_c, &v); /* 0 once closed */
    finish(m);
}

void sched_memory_g(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    long n = c->cfg->memory_gs;
    struct memory_g m = {0};
    pt_wg_init(&m.gate);
    pt_wg_init(&m.finished);
    pt_wg_add(&m.gate, 1);
    if (pt_chan_make(&m.gate_c, sizeof(long), 0) != 0)
        abort();
    uint64_t base = sched_gs_now();
    sched_phase_begin(c);
    long before = bench_rss_bytes();
    pt_nanos t0 = pt_nanotime();
    pt_wg_add(&m.finished, n);
    long i = 0;
    for (; i < n; i++) {
        int rc = pt_go(NULL, i & 1 ? chan_waiter : wg_waiter, &m);
        if (rc != 0) {
            r->spawn_error = rc;
            break;
        }
    }
    pt_wg_add(&m.finished, -(n - i));
    r->gs_started = (uint64_t)i;
    /* every one has counted itself, and, once this G has been round the
     * queues once more, is off its stack and parked */
    while (atomic_load_explicit(&m.parked, memory_order_relaxed) < (uint64_t)i)
        pt_yield();
    pt_yield();
    pt_nanos t1 = pt_nanotime();
    long after = bench_rss_bytes();
    pt_wg_done(&m.gate);
    pt_chan_close(m.gate_c);
    pt_wg_wait(&m.finished);
    pt_nanos t2 = pt_nanotime();
    sched_phase_end(c);
    if (i > 0) {
        r->bytes_per_timer = (double)(after - before) / (double)i;
        r->create_ns = (double)(t1 - t0) / (double)i;
        r->cancel_ns = (double)(t2 - t1) / (double)i;
    }
    r->ops = (uint64_t)i;
    r->waits = atomic_load(&m.parked);
    r->wakes = atomic_load(&m.released);
    sched_count_finished(c, base);
    pt_chan_free(m.gate_c);
}
