/* ptbench's reports: medians over repetitions; a verdict table (the
 * winner of each workload and thread count), a table per workload, JSON
 * lines, CSV and gnuplot plots. Peers (other programs speaking the same
 * JSON lines) are merged in here too. */
#ifndef PTBENCH_REPORT_H
#define PTBENCH_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "workload.h"

/* Repetitions a row keeps (more are run but not reported). */
enum { REPORT_MAXREPS = 64 };

/* One repetition's figures; peers print these as JSON lines. */
struct rep {
    uint64_t ops;
    double elapsed_ns, cpu_s, sys_s, wakeups;
    double p50, p99, p999, max; /* lateness, ns */
    uint64_t late_count;
    double bytes_per_timer, create_ns, cancel_ns;
    double rss_bytes, rss_growth; /* throughput: resident at the end, and its growth */
    uint64_t scheduled, fired, cancelled, stale_cancels, expected_ticks;
    /* workloads in the scheduler (workload.h, struct run_result) */
    uint64_t gs_started, gs_finished, waits, wakes, early_wakes;
    uint64_t timers_owner, timers_stolen, timers_sysmon, steals, overflowed, handoffs;
    int spawn_error;
    /* http: the client's errors (connect, read, write, status, timeout)
     * and its CPU time; cpu_s, sys_s and rss_bytes are the server's */
    double errors, client_cpu_s;
    double load_rps; /* http-idle: the load's requests per second */
};

void rep_of_result(const struct run_result *res, struct rep *out);

/* Whether a sched workload's counts add up (every G finished, every wait
 * ended once, no sleep woke early); if not, why, in `why`. */
bool rep_counts_ok(const struct workload *wl, const struct rep *p, char *why, size_t n);

struct stat3 {
    double median, min, max;
};

/* Where a row's repetitions come from. */
enum {
    ROW_INTERLEAVED = 1 << 0, /* run here, repetitions round the designs: pairable */
    ROW_PEER = 1 << 1,        /* a peer program's, with its own medians */
    ROW_REFERENCE = 1 << 2,   /* a floor to compare with, never a winner */
};

struct row {
    char design[24], workload[24], variant[24];
    enum wl_kind kind;
    bool fires; /* lateness was measured */
    bool in_sched;   /* ran in the scheduler: its memory is per parked G */
    unsigned origin; /* ROW_* */
    int threads, reps;
    size_t timer_bytes;
    struct stat3 ops_s, ns_op; /* ns_op: per thread */
    /* The row's figure (metric.c) in its fastest and slowest repetitions,
     * widened to hold the figure itself (a pooled p99 can lie outside
     * every repetition's): the verdict's spread, and its ties. -1 where
     * no repetition has a figure of its own (pooled lateness only). */
    double lo, hi;
    /* Lateness, us: over every repetition's samples pooled where they
     * were kept, else (peers, who keep their own) medians of
     * repetitions'. Either way p50 <= p99 <= p999 <= max. */
    double p50, p99, p999, max;
    double wakeups, cpu_s, sys_s, bytes, create_ns, cancel_ns; /* medians */
    /* slack: medians of wake-ups and CPU seconds per second of the
     * measured phase, and of timers run per wake-up */
    double wakeups_s, cpu_per_s, fired_per_wakeup;
    double rss, rss_growth; /* medians, bytes: resident at the end of a throughput run */
    double errors, client_cpu; /* http: medians of the client's errors and CPU seconds */
    double load_rps;           /* http-idle: median of the load's requests per second */
    double ns_op_rep[REPORT_MAXREPS]; /* each repetition's, in order: paired ratios */
    uint64_t ticks_fired, ticks_due;  /* ticker: every repetition's, summed */
    struct rep last; /* counts, from the last repetition */
};

/* A lateness distribution written this run: plotted by (workload,
 * variant, threads). */
struct dist {
    char design[24], workload[24], variant[24];
    int threads;
};

struct report {
    const char *dir, *baseline;
    int cores;
    char header[2048];
    char notes[4096]; /* what was skipped and why, for the report */
    FILE *jsonl, *csv;
    struct row *rows;
    int nrows, caprows;
    struct dist *dists;
    int ndists, capdists;
    int errors; /* counts that did not add up: ptbench exits 1 */
};

int report_open(struct report *r, const char *dir, const char *command, const char *baseline,
                long slack_ns);
/* A row of n repetitions. `pooled`, if it holds samples, is every
 * repetition's lateness together: a p99 of five 0.6-second latency
 * repetitions then rests on about 41 samples, not on the median of five
 * 8-sample ones. */
void report_add(struct report *r, const struct workload *wl, const char *variant,
                const char *design, int threads, size_t timer_bytes, const struct rep *reps,
                int n, const struct hist *pooled, unsigned origin);
/* Said once in the report, after the verdict. */
void report_note(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A result that cannot be trusted (counts that do not add up): said on
 * stderr at once and in the report, and ptbench exits 1 at the end. */
void report_error(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Lateness distributions are sampled at these quantiles, ours and the
 * peers' alike (peers are handed the list: -quantiles). */
enum { REPORT_NQ = 18 };
extern const double report_quantiles[REPORT_NQ];
/* Lateness distribution of one row, for the plots: from our histogram, or
 * from a peer's REPORT_NQ values in microseconds. */
void report_distribution(struct report *r, const struct workload *wl, const char *variant,
                         const char *design, int threads, const struct hist *h);
void report_distribution_values(struct report *r, const struct workload *wl,
                                const char *variant, const char *design, int threads,
                                const double *us);
void report_finish(struct report *r, bool plots);

/* --peers LIST: run only the peers named (go1.19, libuv, tokio,
 * tokio-warm); -EINVAL, and nothing changed, for a name not among them. */
int peers_choose(const char *const *names, int n);
bool peer_known(const char *name);
/* How many peers would run workload wl at this thread count. */
int peers_planned(const struct workload *wl, int threads);
/* Runs the peers that have this workload, when their toolchain is here. */
void peers_run(struct report *r, const struct workload *wl, const char *variant, int threads,
               const struct run_config *cfg, int reps);

#endif
