/* The scheduler as ptbench's host (sched_bench.h): a scheduler per
 * repetition, made with the design's timer mode and threads = Ps, whose
 * first G runs the workload; and the floors, plain threads. */
#include <stdio.h>
#include <string.h>

#include "base/futex.h"
#include "sched_bench.h"

#define SEC ((pt_nanos)1000000000)

const struct sched_design sched_designs[] = {
    {"sched-perp", "the scheduler; sleeps and timeouts on the calling P's heap (Go)",
     PT_TIMERS_PER_P, SCHED_NOT_FLOOR, PT_FD_IO_POLL},
    {"sched-tt", "the scheduler; sleeps and timeouts on the TimerThread (bthread)",
     PT_TIMERS_TIMERTHREAD, SCHED_NOT_FLOOR, PT_FD_IO_POLL},
    {"sched-lheap",
     "the scheduler; sleeps and timeouts on the calling P's heap of Go 1.23's design",
     PT_TIMERS_LHEAP, SCHED_NOT_FLOOR, PT_FD_IO_POLL},
    {"sched-uring",
     "sched-perp with its Gs' socket reads and writes on each P's io_uring (PT_FD_IO_URING)",
     PT_TIMERS_PER_P, SCHED_NOT_FLOOR, PT_FD_IO_URING},
    /* The same names as the engines' floors: one column each. */
    {"kernel", "no scheduler: a plain thread's futex wait, the same length", PT_TIMERS_PER_P,
     SCHED_FLOOR_WAIT, PT_FD_IO_POLL},
    {"floor", "no scheduler: the workload on plain threads, blocking where a G parks",
     PT_TIMERS_PER_P, SCHED_FLOOR_THREADS, PT_FD_IO_POLL},
};
const int nsched_designs = sizeof sched_designs / sizeof sched_designs[0];

const struct sched_design *sched_design_find(const char *name)
{
    for (int i = 0; i < nsched_designs; i++)
        if (strcmp(sched_designs[i].name, name) == 0)
            return &sched_designs[i];
    return NULL;
}

bool sched_design_runs(const struct sched_design *d, const struct workload *wl)
{
    /* Stacks do not depend on where timers live: the stack workloads run
     * in one timer mode, Go's. */
    if (wl->stack_rows && d->timers != PT_TIMERS_PER_P)
        return false;
    /* The ring changes only how sockets are read and written. */
    if (d->fd_io != PT_FD_IO_POLL && !wl->uses_fds)
        return false;
    switch (d->floor) {
    case SCHED_FLOOR_WAIT:
        return wl_in_sched(wl) && wl->floor_wait > 0;
    case SCHED_FLOOR_THREADS:
        return wl_in_sched(wl) && wl->plain_run;
    case SCHED_NOT_FLOOR:
        break;
    }
    return wl_in_sched(wl);
}

void sched_phase_begin(struct sched_ctx *c)
{
    pt_sched_read_stats(pt_sched_current(), &c->st0);
    c->cpu0 = bench_cpu_seconds();
    c->sys0 = bench_sys_seconds();
    c->rss0 = bench_rss_bytes();
    c->start = pt_nanotime();
    c->end = c->start + c->cfg->duration;
}

void sched_phase_end(struct sched_ctx *c)
{
    struct run_result *r = c->res;
    r->elapsed = pt_nanotime() - c->start;
    r->cpu_s = bench_cpu_seconds() - c->cpu0;
    r->sys_s = bench_sys_seconds() - c->sys0;
    r->rss_bytes = bench_rss_bytes();
    r->rss_growth = r->rss_bytes - c->rss0;
    pt_sched_stats st;
    pt_sched_read_stats(pt_sched_current(), &st);
    r->timers_owner = st.timers_run_owner - c->st0.timers_run_owner;
    r->timers_stolen = st.timers_run_stolen - c->st0.timers_run_stolen;
    r->timers_sysmon = st.timers_run_sysmon - c->st0.timers_run_sysmon;
    r->steals = st.steals - c->st0.steals;
    r->overflowed = st.overflowed - c->st0.overflowed;
    r->handoffs = st.handoffs - c->st0.handoffs;
    /* an idle M's sleep, parked or in the netpoller: what the Ms' idling
     * cost in futex and epoll round trips */
    r->wakeups = st.parks - c->st0.parks + st.netpoll_waits - c->st0.netpoll_waits;
}

uint64_t sched_ops_wanted(const struct sched_ctx *c)
{
    return c->cfg->ops > 0 ? (uint64_t)c->cfg->ops * (uint64_t)c->procs : 0;
}

void sched_go_n(struct sched_ctx *c, int n, void (*fn)(void *), void *args, size_t size, pt_wg *wg)
{
    pt_wg_add(wg, n);
    int i = 0;
    for (; i < n; i++) {
        int rc = pt_go(NULL, fn, (char *)args + (size_t)i * size);
        if (rc != 0) {
            c->res->spawn_error = rc;
            break;
        }
    }
    if (i < n)
        pt_wg_add(wg, -(int64_t)(n - i));
    c->res->gs_started += (uint64_t)i;
}

uint64_t sched_gs_now(void)
{
    pt_sched_stats st;
    pt_sched_read_stats(pt_sched_current(), &st);
    return st.gs_running_now;
}

void sched_count_finished(struct sched_ctx *c, uint64_t base)
{
    /* a G counts until it has returned, which can be just after the wait
     * group it signalled let the first G go on */
    pt_nanos give_up = pt_nanotime() + SEC;
    uint64_t now;
    while ((now = sched_gs_now()) > base && pt_nanotime() < give_up)
        pt_yield();
    uint64_t left = now > base ? now - base : 0;
    c->res->gs_finished = c->res->gs_started > left ? c->res->gs_started - left : 0;
}

/* The floor: what the kernel alone gives a thread that waits
 * wl->floor_wait at a time on a futex with an absolute deadline, the way
 * an idle M waits for its next timer, with no scheduler around it. */
static void kernel_floor(const struct workload *wl, struct sched_ctx *c)
{
    struct run_result *r = c->res;
    _Atomic uint32_t word = 0; /* never changed: each wait ends on time */
    c->cpu0 = bench_cpu_seconds();
    c->sys0 = bench_sys_seconds();
    c->start = pt_nanotime();
    c->end = c->start + c->cfg->duration;
    for (pt_nanos now = c->start; now < c->end;) {
        pt_nanos deadline = now + wl->floor_wait;
        r->waits++;
        do /* a futex may return early: wait again, as the scheduler's M would */
            pt__futex_wait(&word, 0, deadline);
        while ((now = pt_nanotime()) < deadline);
        r->wakes++;
        hist_record_local(&r->lateness, now - deadline);
    }
    r->ops = r->wakes;
    r->wakeups = (double)r->wakes;
    r->elapsed = pt_nanotime() - c->start;
    r->cpu_s = bench_cpu_seconds() - c->cpu0;
    r->sys_s = bench_sys_seconds() - c->sys0;
}

struct first {
    const struct workload *wl;
    struct sched_ctx *c;
};

static void first_g(void *arg)
{
    struct first *f = arg;
    f->wl->sched_run(f->c);
}

int sched_run(const struct workload *wl, const struct sched_design *d, int procs,
              const struct run_config *cfg, struct run_result *out)
{
    memset(out, 0, sizeof *out);
    struct sched_ctx c = {.cfg = cfg, .procs = procs, .res = out};
    if (d->floor == SCHED_FLOOR_WAIT) {
        kernel_floor(wl, &c);
        return 0;
    }
    if (d->floor == SCHED_FLOOR_THREADS) {
        wl->plain_run(&c);
        return 0;
    }
    /* A scheduler per repetition, as an engine per repetition: no G pool,
     * stack or timer left by the last one. Made before the phase, whose
     * clock the first G starts once it runs. */
    pt_sched_options opt = {.procs = procs,
                            .timers = d->timers,
                            .fd_io = d->fd_io,
                            .virtual_time = wl->virtual_time,
                            .stack_guard = (enum pt_stack_guard)cfg->stack_guard};
    pt_sched *s;
    int rc = pt_sched_create(&s, &opt);
    if (rc != 0) {
        fprintf(stderr, "ptbench: %s: pt_sched_create: %s\n", d->name, strerror(-rc));
        return -1;
    }
    if (cfg->monitor_priority > 0 &&
        (rc = pt_sched_set_monitor_priority(s, cfg->monitor_priority)) != 0) {
        static bool said;
        if (!said)
            fprintf(stderr,
                    "ptbench: --monitor-priority %d: %s; the monitor stays a normal thread\n",
                    cfg->monitor_priority, strerror(-rc));
        said = true;
    }
    struct first f = {wl, &c};
    rc = pt_go(s, first_g, &f);
    if (rc == 0)
        rc = pt_sched_wait(s);
    int drc = pt_sched_destroy(s);
    if (rc != 0 || drc != 0) {
        fprintf(stderr, "ptbench: %s: %s\n", d->name,
                rc ? "its first G could not run" : "pt_sched_destroy failed");
        return -1;
    }
    return 0;
}
