/* ptbench's reports: medians over repetitions, a table with ratios against a
 * baseline design, JSON lines, CSV, and gnuplot plots. Peers (other
 * programs speaking the same JSON lines) are merged in here too. */
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
    double elapsed_ns, cpu_s, wakeups;
    double p50, p99, p999, max; /* lateness, ns */
    uint64_t late_count;
    double bytes_per_timer, create_ns, cancel_ns;
    uint64_t scheduled, fired, cancelled, stale_cancels, expected_ticks;
};

struct stat3 {
    double median, min, max;
};

struct row {
    char design[24], workload[24], variant[16];
    int threads, reps;
    size_t timer_bytes;
    struct stat3 ops_s, ns_op, p50, p99, p999, max, wakeups, cpu_s, bytes, create_ns, cancel_ns;
    double ns_op_rep[REPORT_MAXREPS]; /* each repetition's, in order: paired ratios */
    bool interleaved;     /* run here, repetitions round the designs (not a peer's) */
    struct rep last; /* counts, from the last repetition */
};

/* A lateness distribution written this run: plotted by (workload, threads). */
struct dist {
    char design[24], workload[24];
    int threads;
};

struct report {
    const char *dir, *baseline;
    char header[2048];
    FILE *jsonl, *csv;
    struct row *rows;
    int nrows, caprows;
    struct dist *dists;
    int ndists, capdists;
};

int report_open(struct report *r, const char *dir, const char *command, const char *baseline,
                long slack_ns);
void report_add(struct report *r, const char *design, const char *workload, const char *variant,
                int threads, size_t timer_bytes, const struct rep *reps, int n);
/* The same for a design run here, its repetitions interleaved with the
 * other designs' (so ratios paired by repetition mean something), with
 * lateness percentiles (p50, p99, p999, max) over `pooled`, every
 * repetition's samples together, when it holds any: a p99 of five
 * 0.6-second latency repetitions then rests on about 41 samples, not on
 * the median of five 8-sample ones. Their min and max stay per repetition. */
void report_add_pooled(struct report *r, const char *design, const char *workload,
                       const char *variant, int threads, size_t timer_bytes,
                       const struct rep *reps, int n, const struct hist *pooled);
/* Lateness distributions are sampled at these quantiles, ours and the
 * peers' alike (peers are handed the list: -quantiles). */
enum { REPORT_NQ = 18 };
extern const double report_quantiles[REPORT_NQ];
/* Lateness distribution of one run, for the plots: from our histogram, or
 * from a peer's REPORT_NQ values in microseconds. */
void report_distribution(struct report *r, const char *workload, const char *design,
                         int threads, const struct hist *h);
void report_distribution_values(struct report *r, const char *workload, const char *design,
                                int threads, const double *us);
void report_finish(struct report *r, bool plots);

/* Runs the peers that have this workload, when their toolchain is here. */
void peers_run(struct report *r, const char *workload, const char *variant, int threads,
               const struct run_config *cfg, int reps, bool quiet);

#endif
