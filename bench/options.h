/* ptbench's command line. */
#ifndef PTBENCH_OPTIONS_H
#define PTBENCH_OPTIONS_H

#include <stdbool.h>

#define MAXLIST 32

struct options {
    const char *designs[MAXLIST];
    int ndesigns;
    const char *workloads[MAXLIST];
    int nworkloads;
    int threads[MAXLIST];
    int nthreads;
    int reps;
    long duration_ms, ticker_ms, latency_ms;
    long ops;
    long slack_ns;
    int preload, window, tickers[MAXLIST], ntickers;
    long timeout_ms; /* rpc and rpc-pending: each op's timeout */
    long memory_timers, memory_gs;
    int monitor_priority;
    const char *baseline;
    const char *out;
    bool peers, plots, quiet;
};

/* 0, or the exit status to leave with (2: a usage error, said on stderr;
 * --help exits 0 itself). Lists are split in argv, in place. */
int options_parse(int argc, char **argv, struct options *o);

#endif
