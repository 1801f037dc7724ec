/* netpoll: lateness of the netpoller's timed wait. Each row is one way of
 * sleeping for a fixed time (100 us, 1 ms, 10 ms) on one thread --
 * "kernel", a futex wait with an absolute deadline (the floor, as the
 * kernel design), and pt_netpoll_wait(timeout) on each backend: np-epoll
 * (epoll_pwait2), np-timerfd (epoll with its timerfd fallback), np-uring
 * (io_uring, IORING_OP_TIMEOUT). */
#include "netpoll_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/futex.h"
#include "progress.h"
#include "ptimer/netpoll.h"

static const struct backend {
    const char *name;
    bool kernel; /* the floor: a futex wait, no netpoll */
    pt_netpoll_options opt;
} backends[] = {
    {"kernel", true, {PT_NETPOLL_EPOLL, 0, NULL}},
    {"np-epoll", false, {PT_NETPOLL_EPOLL, 0, NULL}},
    {"np-timerfd", false, {PT_NETPOLL_EPOLL, PT_NETPOLL_TIMERFD, NULL}},
    {"np-uring", false, {PT_NETPOLL_URING, 0, NULL}},
};

static const struct {
    const char *name;
    pt_nanos wait;
} waits[] = {{"100us", 100000}, {"1ms", 1000000}, {"10ms", 10000000}};

/* One repetition: timed waits for `duration` (at least 3). 0; 1 if the
 * backend is not available here (the row is skipped); -1 on error. */
static int netpoll_rep(const struct backend *b, pt_nanos wait, pt_nanos duration,
                       struct run_result *out)
{
    const char *design = b->name;
    pt_netpoll *np = NULL;
    if (!b->kernel) {
        pt_netpoll_options o = b->opt;
        if (pt_netpoll_create(&np, &o) != 0)
            return -1;
        /* io_uring falls back to epoll where the kernel refuses it */
        if (o.backend == PT_NETPOLL_URING && pt_netpoll_backend(np) != PT_NETPOLL_URING) {
            pt_netpoll_destroy(np);
            return 1;
        }
    }
    _Atomic uint32_t word = 0; /* never changes: the futex wait ends on time */
    pt_poll_event ev[1];
    double cpu0 = bench_cpu_seconds(), sys0 = bench_sys_seconds();
    pt_nanos start = pt_nanotime(), now = start;
    while (now - start < duration || out->ops < 3) {
        pt_nanos deadline = now + wait;
        if (np) {
            if (pt_netpoll_wait(np, wait, ev, 1) < 0) {
                pt_netpoll_destroy(np);
                return -1;
            }
            out->wakeups++;
        }
        while ((now = pt_nanotime()) < deadline) { /* never early; futex may wake spuriously */
            if (np) {
                progress_clear();
                fprintf(stderr, "ptbench: %s woke %lld ns early\n", design,
                        (long long)(deadline - now));
                pt_netpoll_destroy(np);
                return -1;
            }
            pt__futex_wait(&word, 0, deadline);
            out->wakeups++;
        }
        hist_record(&out->lateness, now - deadline);
        out->ops++;
    }
    out->elapsed = now - start;
    out->cpu_s = bench_cpu_seconds() - cpu0;
    out->sys_s = bench_sys_seconds() - sys0;
    out->scheduled = out->fired = out->ops;
    if (np)
        pt_netpoll_destroy(np);
    return 0;
}

/* A backend's repetitions, back to back (they do not go round the
 * backends: no ratio here is paired), their samples pooled. */
static int netpoll_row(struct report *r, const struct workload *wl, const struct backend *b, int wi,
                       int reps, pt_nanos duration)
{
    struct rep rs[REPORT_MAXREPS];
    struct hist *pool = calloc(1, sizeof *pool);
    struct run_result *res = calloc(1, sizeof *res);
    int rc = pool && res ? 0 : -1;
    for (int k = 0; k < reps && rc == 0; k++) {
        progress_rep(wl->name, waits[wi].name, 1, b->name, k + 1, reps);
        memset(res, 0, sizeof *res);
        rc = netpoll_rep(b, waits[wi].wait, duration, res);
        if (rc == 0) {
            rep_of_result(res, &rs[k]);
            hist_merge(pool, &res->lateness);
        }
    }
    if (rc == 0) {
        report_add(r, wl, waits[wi].name, b->name, 1, 0, rs, reps, pool,
                   b->kernel ? ROW_REFERENCE : 0);
        report_distribution(r, wl, waits[wi].name, b->name, 1, pool);
    } else if (rc > 0) {
        report_note(r, "netpoll: %s is not available here; skipped", b->name);
    } else {
        progress_clear();
        fprintf(stderr, "ptbench: netpoll %s failed\n", b->name);
    }
    free(pool);
    free(res);
    return rc < 0 ? -1 : 0;
}

int netpoll_run(struct report *r, const struct workload *wl, int reps, pt_nanos duration)
{
    for (size_t wi = 0; wi < sizeof waits / sizeof waits[0]; wi++)
        for (size_t bi = 0; bi < sizeof backends / sizeof backends[0]; bi++)
            if (netpoll_row(r, wl, &backends[bi], (int)wi, reps, duration) != 0)
                return -1;
    return 0;
}
