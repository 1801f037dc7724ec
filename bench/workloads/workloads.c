/* The workloads (shapes in bench/WORKLOADS.md): what each worker does in
 * the measured phase. runner.c times them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rng.h"
#include "workload.h"
#ifdef PTBENCH_HAVE_SCHED
#include "sched_bench.h"
#endif

#define MS ((pt_nanos)1000000)
#define SEC ((pt_nanos)1000000000)

/* ---- what fired: shared by every callback of the current run ---------- */

static struct hist *g_late;
static atomic_ulong g_fired, g_early;
/* The measured phase: ticks due outside it are not counted. Atomic: slack
 * arms its timers before the runner sets them. */
static _Atomic pt_nanos g_start, g_end;
static _Atomic pt_nanos g_slack; /* slack's window */

void workload_sink_open(struct hist *late)
{
    g_late = late;
    atomic_store(&g_fired, 0);
    atomic_store(&g_early, 0);
    atomic_store(&g_start, 0);
    atomic_store(&g_end, 0);
}

void workload_sink_end(pt_nanos end) { atomic_store(&g_end, end); }

void workload_sink_window(pt_nanos start, pt_nanos slack)
{
    atomic_store(&g_slack, slack);
    atomic_store(&g_start, start);
}

uint64_t workload_sink_early(void) { return atomic_load(&g_early); }

uint64_t workload_sink_fired(void) { return atomic_load(&g_fired); }

/* One-shots carry their deadline as their argument. */
static void cb_deadline(void *arg)
{
    pt_nanos deadline = (pt_nanos)(uintptr_t)arg;
    hist_record(g_late, pt_nanotime() - deadline);
    atomic_fetch_add_explicit(&g_fired, 1, memory_order_relaxed);
}

struct ticker {
    pt_nanos first, period;
};

/* A tick is late by the time since the latest multiple of its period. */
static void cb_ticker(void *arg)
{
    const struct ticker *k = arg;
    pt_nanos now = pt_nanotime();
    pt_nanos due = k->first + (now - k->first) / k->period * k->period;
    if (due > atomic_load_explicit(&g_end, memory_order_relaxed))
        return;
    hist_record(g_late, now - due);
    atomic_fetch_add_explicit(&g_fired, 1, memory_order_relaxed);
}

/* slack's timers, tickers and one-shots (period 0, first its deadline). */
struct slack_timer {
    pt_nanos first, period;
    _Atomic pt_nanos last_due; /* a ticker's: the tick it last ran */
};

/* A firing is judged against its window [due, due + slack]: before it is
 * early (a bug: counted, and the run fails); lateness is past its end
 * (0 anywhere inside). A ticker's due is its latest tick by now, so a
 * tick run before its time reads as its predecessor's run twice: early. */
static void cb_slack(void *arg)
{
    struct slack_timer *k = arg;
    pt_nanos now = pt_nanotime();
    pt_nanos due = k->first;
    if (now >= k->first && k->period > 0) {
        due += (now - k->first) / k->period * k->period;
        if (atomic_exchange_explicit(&k->last_due, due, memory_order_relaxed) == due)
            now = due - 1;
    }
    if (now < due) {
        atomic_fetch_add_explicit(&g_early, 1, memory_order_relaxed);
        return;
    }
    /* owed: those whose window lies in the measured phase (run_slack) */
    pt_nanos slack = atomic_load_explicit(&g_slack, memory_order_relaxed);
    if (due < atomic_load_explicit(&g_start, memory_order_relaxed) ||
        due + slack > atomic_load_explicit(&g_end, memory_order_relaxed))
        return;
    hist_record(g_late, now - due - slack);
    atomic_fetch_add_explicit(&g_fired, 1, memory_order_relaxed);
}

static uint64_t rnd(struct workload_thread *w) { return pt__xorshift64(&w->rng); }

/* Uniform in [lo, hi). */
static pt_nanos uniform(struct workload_thread *w, pt_nanos lo, pt_nanos hi)
{
    return lo + (pt_nanos)(rnd(w) % (uint64_t)(hi - lo));
}

/* Fast loops look at the clock every 256 ops; slow ones (an op that sleeps)
 * every op, or a late wake-up would stretch the run by 256 sleeps. */
static bool done_every(struct workload_thread *w, uint64_t mask)
{
    if (w->cfg->ops > 0)
        return w->ops >= (uint64_t)w->cfg->ops;
    return (w->ops & mask) == 0 && pt_nanotime() >= w->end;
}

static bool done(struct workload_thread *w) { return done_every(w, 255); }

static pt_engine_handle arm(struct workload_thread *w, pt_nanos when)
{
    pt_engine_handle h = w->eng->schedule(w->th, when, 0, (void *)(uintptr_t)when);
    if (!h) {
        fprintf(stderr, "ptbench: %s: schedule failed\n", w->eng->name);
        abort();
    }
    w->scheduled++;
    return h;
}

static void disarm(struct workload_thread *w, pt_engine_handle h)
{
    if (w->eng->cancel(w->th, h))
        w->cancelled++;
    else
        w->stale_cancels++;
}

/* A scheduler round every 16 operations: per-P designs run their due timers
 * here, as Go's schedule() calls checkTimers. */
static void maybe_poll(struct workload_thread *w)
{
    if ((w->ops & 15) == 0)
        w->eng->poll(w->th);
}

pt_engine_handle *workload_preload(struct workload_thread *w, int n)
{
    pt_engine_handle *pre = calloc((size_t)n + 1, sizeof *pre);
    if (!pre)
        abort();
    pt_nanos now = pt_nanotime();
    for (int i = 0; i < n; i++)
        pre[i] = arm(w, now + 3600 * SEC + uniform(w, 0, SEC));
    return pre;
}

void workload_unload(struct workload_thread *w, pt_engine_handle *pre, int n)
{
    for (int i = 0; i < n; i++)
        disarm(w, pre[i]);
    free(pre);
}

/* ---- the workloads ---------------------------------------------------- */

/* rpc: arm at now + 100 ms (+ up to 1 ms), then cancel it. */
static void run_rpc(struct workload_thread *w)
{
    while (!done(w)) {
        pt_nanos now = pt_nanotime();
        disarm(w, arm(w, now + w->cfg->timeout + uniform(w, 0, MS)));
        w->ops++;
        maybe_poll(w);
    }
}

/* A window of outstanding timers: each op arms one and cancels the one
 * armed `window` ops ago. `step` < 0 makes deadlines descend. */
static void run_window(struct workload_thread *w, int window, bool descending)
{
    pt_engine_handle *ring = calloc((size_t)window, sizeof *ring);
    pt_nanos base = pt_nanotime() + 20 * SEC;
    for (int i = 0; !done(w); i = (i + 1) % window) {
        pt_nanos now = pt_nanotime();
        pt_nanos when =
            descending ? base - (pt_nanos)w->ops * 10 : now + w->cfg->timeout + uniform(w, 0, MS);
        if (ring[i])
            disarm(w, ring[i]);
        ring[i] = arm(w, when);
        w->ops++;
        maybe_poll(w);
    }
    for (int i = 0; i < window; i++)
        if (ring[i])
            disarm(w, ring[i]);
    free(ring);
}

static void run_rpc_pending(struct workload_thread *w) { run_window(w, w->cfg->window, false); }

/* descending: every arm is earlier than all pending: bRPC's worst case. */
static void run_descending(struct workload_thread *w) { run_window(w, 1000, true); }

/* random: arm at now + U(1 ms, 1 s); half are cancelled at a random later
 * point, half are left to fire. Every handle is disposed of at the end. */
static void run_random(struct workload_thread *w)
{
    enum { RING = 4096 };
    pt_engine_handle ring[RING] = {0};
    size_t nkeep = 0, capkeep = 1 << 16;
    pt_engine_handle *keep = malloc(capkeep * sizeof *keep);
    while (!done(w)) {
        pt_nanos now = pt_nanotime();
        pt_engine_handle h = arm(w, now + uniform(w, MS, SEC));
        uint64_t r = rnd(w);
        if (r & 1) {
            size_t i = (r >> 1) % RING; /* cancel whoever sat there */
            if (ring[i])
                disarm(w, ring[i]);
            ring[i] = h;
        } else {
            if (nkeep == capkeep)
                keep = realloc(keep, (capkeep *= 2) * sizeof *keep);
            keep[nkeep++] = h;
        }
        w->ops++;
        maybe_poll(w);
    }
    for (int i = 0; i < RING; i++)
        if (ring[i])
            disarm(w, ring[i]);
    for (size_t i = 0; i < nkeep; i++)
        disarm(w, keep[i]);
    free(keep);
}

/* reset: K = 1000 owned timers, each op re-arms one to now + U(1 s, 2 s);
 * reset-alt alternates the earlier and the later half of that range. */
static void run_reset_common(struct workload_thread *w, bool alternate)
{
    enum { K = 1000 };
    pt_engine_handle h[K];
    pt_nanos now = pt_nanotime();
    for (int k = 0; k < K; k++)
        h[k] = arm(w, now + uniform(w, SEC, 2 * SEC));
    while (!done(w)) {
        int k = (int)(rnd(w) % K);
        now = pt_nanotime();
        pt_nanos when = alternate ? now + SEC + (pt_nanos)(w->ops & 1) * (SEC / 2) + uniform(w, 0, SEC / 2)
                                  : now + uniform(w, SEC, 2 * SEC);
        pt_engine_handle nh = w->eng->reset(w->th, h[k], when, (void *)(uintptr_t)when);
        if (nh != h[k]) { /* a bucket design rescheduled it */
            w->cancelled++;
            w->scheduled++;
        }
        h[k] = nh ? nh : arm(w, when);
        w->ops++;
        maybe_poll(w);
    }
    for (int k = 0; k < K; k++)
        disarm(w, h[k]);
}

static void run_reset(struct workload_thread *w) { run_reset_common(w, false); }
static void run_reset_alt(struct workload_thread *w) { run_reset_common(w, true); }

/* ticker: this thread's share of the tickers, periods spread over 1-10 ms;
 * then the thread idles (running its timers, for per-P designs). */
static void run_ticker(struct workload_thread *w)
{
    int n = w->cfg->tickers / w->nthreads + (w->tid < w->cfg->tickers % w->nthreads);
    struct ticker *k = calloc((size_t)n, sizeof *k);
    pt_engine_handle *h = calloc((size_t)n, sizeof *h);
    pt_nanos now = pt_nanotime();
    for (int i = 0; i < n; i++) {
        k[i].period = MS + (pt_nanos)(rnd(w) % (uint64_t)(9 * MS));
        k[i].first = now + k[i].period;
        h[i] = w->eng->schedule(w->th, k[i].first, k[i].period, &k[i]);
        if (k[i].first <= w->end)
            w->expected_ticks += (uint64_t)((w->end - k[i].first) / k[i].period) + 1;
    }
    w->eng->idle(w->th, w->end);
    for (int i = 0; i < n; i++)
        if (h[i])
            w->eng->cancel(w->th, h[i]);
    free(h);
    /* The records must outlive any tick still in flight (a bucket design's
     * tickers run until the engine is destroyed): the runner frees them. */
    w->free_after = k;
}

/* slack: this thread's share of the tickers, 100 ms each with a random
 * phase, and a tenth as many one-shots due at random over the measured
 * phase, all armed before it (setup) so that it times only their firing.
 * The engine's slack (set_slack) is the row's. */
#define SLACK_PERIOD (100 * MS)
#define SLACK_SETTLE (100 * MS) /* no firing before the workers have armed */

struct slack_own {
    struct slack_timer *k;
    pt_engine_handle *h;
    int n; /* tickers first, then one-shots */
};

static void setup_slack(struct workload_thread *w)
{
    int ntick = w->cfg->tickers / w->nthreads + (w->tid < w->cfg->tickers % w->nthreads);
    int n = ntick + ntick / 10;
    struct slack_own *o = calloc(1, sizeof *o);
    if (!o || !(o->k = calloc((size_t)n, sizeof *o->k)) || !(o->h = calloc((size_t)n, sizeof *o->h)))
        abort();
    pt_nanos base = pt_nanotime() + SLACK_SETTLE;
    for (int i = 0; i < n; i++) {
        struct slack_timer *k = &o->k[i];
        k->period = i < ntick ? SLACK_PERIOD : 0;
        k->first = base + uniform(w, 0, i < ntick ? SLACK_PERIOD : w->cfg->duration);
        atomic_init(&k->last_due, 0);
        o->h[i] = w->eng->schedule(w->th, k->first, k->period, k);
        if (!o->h[i]) {
            fprintf(stderr, "ptbench: %s: schedule failed\n", w->eng->name);
            abort();
        }
        w->scheduled++;
    }
    o->n = n;
    w->own = o;
    w->eng->poll(w->th); /* a round: kernel-slack lets its threads go */
}

/* What it owes: the ticks and one-shots whose whole window lies in the
 * measured phase (one closing after it may fire once the workers stop). */
static void run_slack(struct workload_thread *w)
{
    struct slack_own *o = w->own;
    pt_nanos last = w->end - w->cfg->slack; /* the latest due owed */
    for (int i = 0; i < o->n; i++) {
        const struct slack_timer *k = &o->k[i];
        if (k->period == 0) {
            w->expected_ticks += k->first >= w->start && k->first <= last;
            continue;
        }
        pt_nanos from = k->first >= w->start ? k->first
                                              : k->first + (w->start - k->first + k->period - 1) /
                                                               k->period * k->period;
        if (from <= last)
            w->expected_ticks += (uint64_t)((last - from) / k->period) + 1;
    }
    w->eng->idle(w->th, w->end);
    for (int i = 0; i < o->n; i++)
        disarm(w, o->h[i]);
    free(o->h);
    /* as ticker's: the records outlive a tick still in flight */
    w->free_after = o->k;
    free(o);
    w->own = NULL;
}

/* latency: one timer at a time, 300 us - 1 ms ahead; the thread idles until
 * its deadline, and the lateness is recorded when it fires. */
static void run_latency(struct workload_thread *w)
{
    pt_nanos last = 0;
    while (!done_every(w, 0)) {
        pt_nanos now = pt_nanotime();
        last = now + uniform(w, 300000, MS);
        arm(w, last);
        w->eng->idle(w->th, last);
        w->ops++;
    }
    /* Let the last one fire before the engine goes away. */
    w->eng->idle(w->th, last + 20 * MS);
}

/* Resident anonymous memory: statm's resident less its shared field
 * (file-backed and shmem pages). Code pages of libc faulted in while
 * arming (about 100 KiB, a tenth of a byte per timer) are not what the
 * design stores. */
long bench_rss_bytes(void)
{
    long pages = 0, resident = 0, shared = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld %ld", &pages, &resident, &shared) != 3)
            resident = shared = 0;
        fclose(f);
    }
    return (resident - shared) * sysconf(_SC_PAGESIZE);
}

/* memory: 1,000,000 pending timers: resident bytes per timer, and the time
 * to create and to cancel them. */
static void run_memory(struct workload_thread *w)
{
    long N = w->cfg->memory_timers;
    /* The handle array is the harness's, not the design's: touched before
     * the first reading so that its pages are not counted. */
    pt_engine_handle *h = calloc((size_t)N, sizeof *h);
    memset(h, 1, (size_t)N * sizeof *h);
    if (w->eng->reserve_handles)
        w->eng->reserve_handles(w->th, N);
    long before = bench_rss_bytes();
    pt_nanos t0 = pt_nanotime();
    for (long i = 0; i < N; i++)
        h[i] = arm(w, t0 + 3600 * SEC + i);
    pt_nanos t1 = pt_nanotime();
    long after = bench_rss_bytes();
    for (long i = 0; i < N; i++)
        disarm(w, h[i]);
    pt_nanos t2 = pt_nanotime();
    w->res->bytes_per_timer = (double)(after - before) / N;
    w->res->create_ns = (double)(t1 - t0) / N;
    w->res->cancel_ns = (double)(t2 - t1) / N;
    w->ops = (uint64_t)N;
    free(h);
}

#define GO PEER_GO
#define UV PEER_LIBUV
#define TK PEER_TOKIO
#define TKW PEER_TOKIO_WARM
const struct workload workloads[] = {
    {.name = "rpc",
     .what = "arm at now+100ms(+<=1ms), then cancel it",
     .kind = WL_THROUGHPUT,
     .peers = GO | UV | TK | TKW,
     .cb = cb_deadline,
     .run = run_rpc},
    {.name = "rpc-pending",
     .what = "arm one, cancel the one armed W ops ago",
     .kind = WL_THROUGHPUT,
     .peers = GO | UV | TK | TKW,
     .cb = cb_deadline,
     .run = run_rpc_pending},
    {.name = "descending",
     .what = "each arm earlier than all pending; cancel 1000 ops later",
     .kind = WL_THROUGHPUT,
     .cb = cb_deadline,
     .run = run_descending},
    {.name = "random",
     .what = "arm at now+U(1ms,1s); cancel half at random, half fire",
     .kind = WL_THROUGHPUT,
     .fires = true,
     .peers = GO,
     .cb = cb_deadline,
     .run = run_random},
    {.name = "reset",
     .what = "re-arm one of 1000 timers to now+U(1s,2s)",
     .kind = WL_THROUGHPUT,
     .peers = GO | UV | TK,
     .cb = cb_deadline,
     .run = run_reset},
    {.name = "reset-alt",
     .what = "as reset, alternating the earlier and later half",
     .kind = WL_THROUGHPUT,
     .cb = cb_deadline,
     .run = run_reset_alt},
    {.name = "ticker",
     .what = "T tickers, periods over 1-10ms; ticks delivered and lateness",
     .kind = WL_TICKER,
     .fires = true,
     .peers = GO | TK,
     .cb = cb_ticker,
     .run = run_ticker},
    {.name = "slack",
     .what = "T 100ms tickers, random phases, T/10 one-shots; a row per slack: wake-ups/s",
     .kind = WL_SLACK,
     .fires = true,
     .peers = GO | TK,
     .cb = cb_slack,
     .setup = setup_slack,
     .run = run_slack,
     .dist_what = "fire - (deadline + slack)"},
    {.name = "latency",
     .what = "one timer 300us-1ms ahead at a time; fire time - deadline",
     .kind = WL_LATENCY,
     .fires = true,
     .peers = GO | UV | TK,
     .cb = cb_deadline,
     .run = run_latency},
    {.name = "latency-busy",
     .what = "latency with every core kept busy",
     .kind = WL_LATENCY,
     .fires = true,
     .busy = true,
     .peers = GO,
     .cb = cb_deadline,
     .run = run_latency},
    {.name = "memory",
     .what = "1,000,000 pending timers: bytes each, create and cancel time",
     .kind = WL_MEMORY,
     .peers = GO | UV | TK,
     .cb = cb_deadline,
     .run = run_memory},
    /* Run by netpoll_bench.c for each backend and wait, not by an engine. */
    {.name = "netpoll",
     .what = "timed waits of 100us/1ms/10ms per netpoll backend, beside the kernel floor",
     .kind = WL_NETPOLL,
     .fires = true},
#ifdef PTBENCH_HAVE_SCHED
    /* Run by http_bench.c: examples/httpd.c and the peers' servers, each
     * a process of its own, under wrk. */
    {.name = "http",
     .what = "HTTP servers under wrk (ours, Go's, nginx): time per request",
     .kind = WL_HTTP,
     .fires = true,
     .dist_what = "request latency"},
    /* Run by http_idle.c, on the same servers. */
    {.name = "http-idle",
     .what = "N idle keep-alive connections closed by the idle timeout, under load",
     .kind = WL_IDLE,
     .fires = true,
     .dist_what = "close - (answer + idle timeout)"},
    /* Inside the scheduler (sched_workloads.c, sched_memory.c): threads are
     * Ps, the designs sched-perp, sched-lheap and sched-tt. */
    {.name = "spawn",
     .what = "go + finish (a wait group), from one G; in batches of 1000",
     .kind = WL_THROUGHPUT,
     .peers = GO | TK,
     .sched_run = sched_spawn},
    {.name = "pingpong",
     .what = "two Gs, a round trip on unbuffered channels",
     .kind = WL_THROUGHPUT,
     .peers = GO | TK,
     .sched_run = sched_pingpong},
    {.name = "chan-timeout",
     .what = "a 100ms Timer, select on a ready channel and the timer's, Stop",
     .kind = WL_THROUGHPUT,
     .peers = GO | TK,
     .sched_run = sched_chan_timeout},
    {.name = "sleep",
     .what = "1000 Gs sleeping 50us in a loop: per sleep and wake, lateness",
     .kind = WL_THROUGHPUT,
     .fires = true,
     .peers = GO | TK,
     .sched_run = sched_sleep},
    {.name = "sleep-1",
     .what = "one G sleeping 50us in a loop: lateness, beside the kernel floor",
     .kind = WL_LATENCY,
     .fires = true,
     .peers = GO | TK,
     .sched_run = sched_sleep_1,
     .floor_wait = 50000},
    {.name = "busy-lateness",
     .what = "every P in a G that never yields; 100 Gs' 1ms sleeps: lateness",
     .kind = WL_LATENCY,
     .fires = true,
     .peers = GO | TK,
     .sched_run = sched_busy_lateness},
    {.name = "rpc-sched",
     .what = "64 client Gs: request/response on socketpairs, a deadline each",
     .kind = WL_THROUGHPUT,
     .fires = true,
     .peers = GO | TK,
     .sched_run = sched_rpc,
     .plain_run = sched_rpc_plain,
     .dist_what = "request round trip",
     .uses_fds = true},
    {.name = "conn-churn",
     .what = "a G per TCP connection: accept, one request and answer, close",
     .kind = WL_THROUGHPUT,
     .fires = true,
     .peers = GO | TK,
     .sched_run = sched_conn_churn,
     .dist_what = "connect to answer",
     .uses_fds = true},
    {.name = "vtime-hour",
     .what = "virtual time: an hour of a 1ms Ticker and 10000 random sleeps; wall ns per event",
     .kind = WL_THROUGHPUT,
     .fires = true,
     .sched_run = sched_vtime_hour,
     .dist_what = "wake - deadline, virtual",
     .virtual_time = true,
     .per_run = true},
    {.name = "memory-g",
     .what = "N parked Gs (wait group, channel): resident bytes each",
     .kind = WL_MEMORY,
     .peers = GO | TK,
     .sched_run = sched_memory_g,
     .stack_rows = true},
    {.name = "spawn-burst",
     .what = "N Gs started by one, before any may finish: wall time per G",
     .kind = WL_BURST,
     .peers = GO | TK,
     .sched_run = sched_spawn_burst,
     .stack_rows = true},
#endif
};
#undef GO
#undef UV
#undef TK
#undef TKW
const int nworkloads = sizeof workloads / sizeof workloads[0];

const struct workload *workload_find(const char *name)
{
    for (int i = 0; i < nworkloads; i++)
        if (strcmp(workloads[i].name, name) == 0)
            return &workloads[i];
    return NULL;
}
