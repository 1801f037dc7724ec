/* The workloads that run inside the scheduler (shapes in
 * bench/WORKLOADS.md; bench/peers/go/sched.go runs the same programs as
 * goroutines). Each is the body of the scheduler's first G: it opens and
 * closes the measured phase, and counts what must add up -- every G it
 * started finished, every wait it began ended once, no sleep woke early.
 * With an op count (-n), throughput workloads do ops x Ps of them: -n is
 * per thread, and threads are Ps. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched_bench.h"

#define US ((pt_nanos)1000)
#define MS ((pt_nanos)1000000)

/* ---- spawn: go + finish, from one G ------------------------------------- */

/* Spawned in batches waited for one at a time, so that at most a batch
 * of Gs (and stacks) is alive: with no preemption the spawner would
 * otherwise run on, and every G it started would hold a stack until it
 * stops. Go's peer runs the same batches. */
enum { SPAWN_BATCH = 1000 };

static void spawn_child(void *arg)
{
    pt_wg_done(arg);
}

void sched_spawn(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    uint64_t want = sched_ops_wanted(c), base = sched_gs_now();
    pt_wg wg;
    pt_wg_init(&wg);
    sched_phase_begin(c);
    while (want ? r->gs_started < want : pt_nanotime() < c->end) {
        uint64_t n =
            want && want - r->gs_started < SPAWN_BATCH ? want - r->gs_started : SPAWN_BATCH;
        sched_go_n(c, (int)n, spawn_child, &wg, 0, &wg);
        r->waits++;
        pt_wg_wait(&wg);
        r->wakes++;
        if (r->spawn_error)
            break;
    }
    sched_phase_end(c);
    r->ops = r->gs_started;
    sched_count_finished(c, base);
}

/* ---- pingpong: a round trip on two unbuffered channels ---------------- */

struct pingpong {
    pt_chan *ping, *pong;
    uint64_t received; /* the ponger's, read once it has finished */
    pt_wg done;
};

static void ponger(void *arg)
{
    struct pingpong *p = arg;
    long v;
    while (pt_chan_recv(p->ping, &v) == 1) { /* 0: closed, the run is over */
        p->received++;
        if (pt_chan_send(p->pong, &v) != 0)
            break;
    }
    pt_wg_done(&p->done);
}

void sched_pingpong(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    struct pingpong p = {0};
    if (pt_chan_make(&p.ping, sizeof(long), 0) != 0 || pt_chan_make(&p.pong, sizeof(long), 0))
        abort();
    pt_wg_init(&p.done);
    uint64_t want = sched_ops_wanted(c), base = sched_gs_now();
    sched_go_n(c, 1, ponger, &p, 0, &p.done);
    sched_phase_begin(c);
    for (long v = 0; r->gs_started; v++) {
        if (want ? (uint64_t)v >= want : (v & 255) == 0 && pt_nanotime() >= c->end)
            break;
        long back = -1;
        r->waits++;
        if (pt_chan_send(p.ping, &v) != 0 || pt_chan_recv(p.pong, &back) != 1)
            break;
        r->ops++;
        r->wakes += back == v; /* the ball came back, and it was this one */
    }
    sched_phase_end(c);
    pt_chan_close(p.ping);
    pt_wg_wait(&p.done);
    /* every ping reached the ponger once: if not, its count is the one
     * that differs from the pings sent */
    if (p.received != r->waits)
        r->wakes = p.received;
    sched_count_finished(c, base);
    pt_chan_free(p.ping);
    pt_chan_free(p.pong);
}

/* ---- chan-timeout: Go's call-with-timeout idiom ------------------------- */

/* Per op: a Timer of 100 ms, a select between an always-ready channel and
 * the timer's channel, then Stop. The ready case always wins: an op whose
 * timer fired first (it never should, 100 ms out) counts as a wait that
 * did not end in a wake. What it measures is the timer's arm and stop on
 * the design (the P's heap, or the TimerThread) around a select. */
void sched_chan_timeout(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    pt_chan *ready;
    if (pt_chan_make(&ready, sizeof(long), 1) != 0)
        abort();
    uint64_t want = sched_ops_wanted(c), base = sched_gs_now();
    long one = 1;
    sched_phase_begin(c);
    for (uint64_t i = 0;; i++) {
        if (want ? i >= want : (i & 255) == 0 && pt_nanotime() >= c->end)
            break;
        pt_time_timer *t;
        if (pt_time_timer_new(&t, 100 * MS) != 0 || pt_chan_try_send(ready, &one) != 0)
            abort();
        long v = 0;
        pt_nanos fired = 0;
        pt_select_case k[2] = {{ready, PT_RECV, &v, false},
                               {pt_time_timer_chan(t), PT_RECV, &fired, false}};
        r->waits++;
        int got = pt_select(k, 2, 0, true);
        r->wakes += got == 0 && v == 1;
        pt_time_timer_stop(t);
        pt_time_timer_free(t);
        r->ops++;
    }
    sched_phase_end(c);
    sched_count_finished(c, base);
    pt_chan_free(ready);
}

/* ---- sleepers: sleep, sleep-1, busy-lateness -------------------------- */

struct sleeper {
    const struct sched_ctx *c;
    pt_nanos d;         /* each sleep */
    uint64_t quota;     /* sleeps to do; 0: until the phase ends */
    atomic_int *asleep; /* counted once, at the first sleep (busy-lateness) */
    pt_wg *done;
    uint64_t sleeps, woke, early;
    struct hist late; /* this G's alone: merged after the run */
};

static void sleeper(void *arg)
{
    struct sleeper *z = arg;
    for (;;) {
        pt_nanos t = pt_nanotime();
        if (z->quota ? z->sleeps >= z->quota : t >= z->c->end)
            break;
        /* as Go's peer: the deadline from a clock read before the call */
        pt_nanos deadline = t + z->d;
        if (z->sleeps++ == 0 && z->asleep)
            atomic_fetch_add_explicit(z->asleep, 1, memory_order_relaxed);
        pt_sleep(z->d);
        pt_nanos now = pt_nanotime();
        z->woke++;
        z->early += now < deadline;
        hist_record_local(&z->late, now - deadline);
    }
    pt_wg_done(z->done);
}

static struct sleeper *sleepers_new(const struct sched_ctx *c, int n, pt_nanos d, uint64_t quota,
                                    atomic_int *asleep, pt_wg *done)
{
    /* 8 KiB of histogram a G, touched only around its lateness */
    struct sleeper *z = calloc((size_t)n, sizeof *z);
    if (!z)
        abort();
    for (int i = 0; i < n; i++)
        z[i] = (struct sleeper){.c = c, .d = d, .quota = quota, .asleep = asleep, .done = done};
    return z;
}

/* After the Gs finished: their counts and samples into the result. */
static void sleepers_merge(struct sched_ctx *c, struct sleeper *z, int n)
{
    struct run_result *r = c->res;
    for (int i = 0; i < n; i++) {
        r->waits += z[i].sleeps;
        r->wakes += z[i].woke;
        r->early_wakes += z[i].early;
        hist_merge(&r->lateness, &z[i].late);
    }
    r->ops = r->wakes;
    free(z);
}

/* n Gs sleeping d in a loop, for the phase or `quota` sleeps each. */
static void run_sleepers(struct sched_ctx *c, int n, pt_nanos d, uint64_t quota)
{
    pt_wg done;
    pt_wg_init(&done);
    struct sleeper *z = sleepers_new(c, n, d, quota, NULL, &done);
    uint64_t base = sched_gs_now();
    sched_phase_begin(c);
    sched_go_n(c, n, sleeper, z, sizeof *z, &done);
    pt_wg_wait(&done);
    sched_phase_end(c);
    sched_count_finished(c, base);
    sleepers_merge(c, z, n);
}

/* sleep: 1000 Gs sleeping 50 us; with -n, ops x Ps sleeps shared out. */
enum { SLEEPERS = 1000 };

void sched_sleep(struct sched_ctx *c)
{
    uint64_t want = sched_ops_wanted(c);
    run_sleepers(c, SLEEPERS, 50 * US, want ? (want + SLEEPERS - 1) / SLEEPERS : 0);
}

/* sleep-1: one G sleeping 50 us, for the phase; its floor is the kernel
 * design's futex wait of the same 50 us (workloads.c: floor_wait). */
void sched_sleep_1(struct sched_ctx *c)
{
    run_sleepers(c, 1, 50 * US, 0);
}

/* ---- busy-lateness ------------------------------------------------------ */

/* A hog per P spins for the whole phase and never yields, while 100 Gs
 * sleep 1 ms in a loop. The hog computes in a preemptible region
 * (pt_preemptible_begin): the monitor fires the sleepers' timers on time
 * and, once a hog has held its P for the slice while they wait, preempts
 * it, so they run. Go preempts any G after 10 ms (sysmon's
 * forcePreemptNS), whether or not others wait. Both wake times are what a
 * program sees; where regions are refused (a ThreadSanitizer build) the
 * hogs keep their Ps and the sleepers wait for the phase's end. */
enum { BUSY_SLEEPERS = 100 };

struct hog {
    pt_nanos end;
    pt_wg *done;
};

static void hog(void *arg)
{
    struct hog *h = arg;
    int region = pt_preemptible_begin();
    while (pt_nanotime() < h->end)
        ; /* computing: no call into the scheduler */
    if (region == 0)
        pt_preemptible_end();
    pt_wg_done(h->done);
}

void sched_busy_lateness(struct sched_ctx *c)
{
    pt_wg done;
    pt_wg_init(&done);
    atomic_int asleep = 0;
    struct sleeper *z = sleepers_new(c, BUSY_SLEEPERS, MS, 0, &asleep, &done);
    struct hog *hogs = calloc((size_t)c->procs, sizeof *hogs);
    if (!hogs)
        abort();
    uint64_t base = sched_gs_now();
    sched_phase_begin(c);
    sched_go_n(c, BUSY_SLEEPERS, sleeper, z, sizeof *z, &done);
    /* the hogs go once every sleeper is in its first sleep: started
     * earlier, a hog could keep a sleeper from ever starting */
    int started = (int)c->res->gs_started;
    while (atomic_load_explicit(&asleep, memory_order_relaxed) < started)
        pt_yield();
    for (int i = 0; i < c->procs; i++)
        hogs[i] = (struct hog){.end = c->end, .done = &done};
    sched_go_n(c, c->procs, hog, hogs, sizeof *hogs, &done);
    pt_wg_wait(&done);
    sched_phase_end(c);
    sched_count_finished(c, base);
    sleepers_merge(c, z, BUSY_SLEEPERS);
    free(hogs);
}
