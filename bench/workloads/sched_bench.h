/* Workloads inside the scheduler (include/ptimer/sched.h): the designs are
 * the scheduler in its two timer modes, the workload's body is its first
 * G, and threads are Ps. Shapes in bench/WORKLOADS.md. */
#ifndef PTBENCH_SCHED_BENCH_H
#define PTBENCH_SCHED_BENCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "ptimer/sched.h"
#include "workload.h"

struct sched_design {
    const char *name;
    const char *what;
    enum pt_timer_mode timers;
    /* A floor, not the scheduler: SCHED_FLOOR_WAIT, a plain thread's
     * futex wait of the workload's floor_wait (kernel); SCHED_FLOOR_THREADS,
     * the workload's plain_run on threads with blocking calls (floor).
     * Each only for the workloads that have one. */
    enum { SCHED_NOT_FLOOR, SCHED_FLOOR_WAIT, SCHED_FLOOR_THREADS } floor;
    enum pt_fd_io fd_io; /* how its Gs' sockets are read and written */
};

extern const struct sched_design sched_designs[];
extern const int nsched_designs;
const struct sched_design *sched_design_find(const char *name);
/* Whether design d has a row in workload wl. */
bool sched_design_runs(const struct sched_design *d, const struct workload *wl);

/* What a workload's first G is handed. It opens and closes the measured
 * phase itself (sched_phase_begin / _end: the clock, CPU time and the
 * scheduler's counters) and fills in the counts of res. */
struct sched_ctx {
    const struct run_config *cfg;
    int procs;
    struct run_result *res;
    pt_nanos start, end; /* the phase began; when a timed workload stops */
    double cpu0, sys0;
    long rss0; /* resident bytes at the start of the measured phase */
    pt_sched_stats st0;
};

void sched_phase_begin(struct sched_ctx *c);
void sched_phase_end(struct sched_ctx *c);
/* With an op count (-n, per thread), ops x Ps in all; 0: run for the
 * duration. */
uint64_t sched_ops_wanted(const struct sched_ctx *c);
/* Starts n Gs fn(args + i * size) (size 0: all get args), each counted in
 * wg and in res->gs_started; those pt_go refused are taken off wg again,
 * and its error kept in res->spawn_error. */
void sched_go_n(struct sched_ctx *c, int n, void (*fn)(void *), void *args, size_t size, pt_wg *wg);
/* The Gs now started and not finished (the caller's own included). */
uint64_t sched_gs_now(void);
/* After the phase: res->gs_finished, from the scheduler's own count of
 * Gs back at `base` (sched_gs_now before the workload started any),
 * once the workload's Gs have returned or a second has passed. */
void sched_count_finished(struct sched_ctx *c, uint64_t base);

/* One repetition of wl on design d with `procs` Ps. 0, or -1 (said). */
int sched_run(const struct workload *wl, const struct sched_design *d, int procs,
              const struct run_config *cfg, struct run_result *out);

/* The bodies (sched_workloads.c, sched_memory.c, sched_burst.c, sched_rpc.c,
 * sched_conn.c, sched_vtime.c). */
void sched_spawn(struct sched_ctx *c);
void sched_pingpong(struct sched_ctx *c);
void sched_chan_timeout(struct sched_ctx *c);
void sched_sleep(struct sched_ctx *c);
void sched_sleep_1(struct sched_ctx *c);
void sched_busy_lateness(struct sched_ctx *c);
void sched_memory_g(struct sched_ctx *c);
void sched_spawn_burst(struct sched_ctx *c);
void sched_rpc(struct sched_ctx *c);
void sched_rpc_plain(struct sched_ctx *c);
void sched_conn_churn(struct sched_ctx *c);
void sched_vtime_hour(struct sched_ctx *c);
/* Exactly n bytes from a G's fd by the deadline (0: none); n, 0 at end of
 * file, or -errno (sched_rpc.c). */
ssize_t sched_read_full(int fd, char *buf, size_t n, pt_nanos deadline);

#endif
