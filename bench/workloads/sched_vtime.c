/* vtime-hour: an hour of the scheduler's virtual time (pt_sched_options
 * .virtual_time), as a timeout test would spend it. One G reads a 1 ms
 * Ticker for the whole hour; 10,000 Gs each sleep one random span of up
 * to an hour. The clock moves only when every G is blocked, to the next
 * timer, so the run's wall time is what the scheduler costs per event:
 * 3,600,000 ticks and 10,000 wakes. ops counts those events, and the
 * figure is the wall time per event, however many Ps (the hour's wall
 * time is it times ops).
 *
 * Lateness is on the virtual clock, which promises exact times: a wake
 * after its deadline is a late one, before it an early one, and a tick
 * whose value is not its slot of the phase is a wait that ended in no
 * wake. Every lateness figure should read 0. */
#include <stdatomic.h>
#include <stdlib.h>

#include "rng.h"
#include "sched_bench.h"

#define MS ((pt_nanos)1000000)
#define HOUR ((pt_nanos)3600 * 1000 * MS)
#define SLEEPERS 10000
#define TICK MS

struct vhour {
    struct sched_ctx *c;
    pt_wg done;
    atomic_ulong waits, wakes, early;
};

/* The i-th sleeper's span: the same in every run and on every design. */
static pt_nanos span_of(uint64_t i)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull; /* nonzero for every i */
    return (pt_nanos)(pt__xorshift64(&x) % (uint64_t)HOUR) + 1;
}

struct sleeper {
    struct vhour *h;
    pt_nanos span;
};

static void sleeper(void *arg)
{
    struct sleeper *z = arg;
    struct vhour *h = z->h;
    pt_nanos deadline = pt_time_now() + z->span;
    atomic_fetch_add_explicit(&h->waits, 1, memory_order_relaxed);
    pt_sleep(z->span);
    pt_nanos now = pt_time_now();
    atomic_fetch_add_explicit(&h->wakes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->early, now < deadline, memory_order_relaxed);
    hist_record(&h->c->res->lateness, now - deadline);
    pt_wg_done(&h->done);
}

static void ticker(void *arg)
{
    struct vhour *h = arg;
    struct run_result *r = h->c->res;
    pt_time_ticker *tk;
    if (pt_time_ticker_new(&tk, TICK) != 0)
        abort();
    /* its own histogram, one writer: merged at the end */
    struct hist *late = calloc(1, sizeof *late);
    if (!late)
        abort();
    pt_nanos start = pt_time_now();
    uint64_t waits = 0, wakes = 0, early = 0;
    for (pt_nanos k = 1; k * TICK <= HOUR; k++) {
        pt_nanos v = 0, due = start + k * TICK;
        waits++;
        if (pt_chan_recv(pt_time_ticker_chan(tk), &v) != 1)
            abort();
        pt_nanos now = pt_time_now();
        wakes += v == due;
        early += now < due;
        hist_record_local(late, now - due);
    }
    pt_time_ticker_free(tk);
    hist_merge(&r->lateness, late);
    free(late);
    atomic_fetch_add_explicit(&h->waits, waits, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->wakes, wakes, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->early, early, memory_order_relaxed);
    pt_wg_done(&h->done);
}

void sched_vtime_hour(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    struct vhour h = {.c = c};
    struct sleeper *z = calloc(SLEEPERS, sizeof *z);
    if (!z)
        abort();
    for (int i = 0; i < SLEEPERS; i++)
        z[i] = (struct sleeper){&h, span_of((uint64_t)i)};
    pt_wg_init(&h.done);
    uint64_t base = sched_gs_now();
    sched_phase_begin(c);
    sched_go_n(c, 1, ticker, &h, 0, &h.done);
    sched_go_n(c, SLEEPERS, sleeper, z, sizeof *z, &h.done);
    pt_wg_wait(&h.done);
    sched_phase_end(c);
    sched_count_finished(c, base);
    r->waits = h.waits;
    r->wakes = h.wakes;
    r->early_wakes = h.early;
    r->ops = r->wakes;
    free(z);
}
