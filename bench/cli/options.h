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
    int slacks[MAXLIST], nslacks; /* slack: windows in % of its period, a row each */
    int slack_tickers;
    long slack_ms;
    int preload, window, tickers[MAXLIST], ntickers;
    long timeout_ms; /* rpc and rpc-pending: each op's timeout */
    long memory_timers;
    int memory_gs[MAXLIST], nmemory_gs; /* memory-g: a row per count */
    int burst_gs[MAXLIST], nburst_gs;   /* spawn-burst: a row per count */
    int http_conns[MAXLIST], nhttp_conns; /* http: wrk's connections, a row per count */
    long http_secs;                       /* http: wrk's run per repetition */
    int idle_conns[MAXLIST], nidle_conns; /* http-idle: a row per count */
    long idle_ms;                         /* http-idle: the servers' idle timeout */
    int stack_guards[MAXLIST], nstack_guards; /* enum pt_stack_guard: a row each */
    int monitor_priority;
    const char *baseline;
    const char *out;
    bool peers, plots, quiet;
    bool full; /* --full: the whole comparison's defaults */
    const char *loaded[MAXLIST]; /* --engine: the names of those loaded */
    int nloaded;
    int engines_refused; /* --engine: those that could not be used */
    long hang_s;         /* --engine: a repetition this far past its end is hung */
};

/* 0, or the exit status to leave with (2: a usage error, said on stderr;
 * --help exits 0 itself). Lists are split in argv, in place. */
int options_parse(int argc, char **argv, struct options *o);
/* A stack guard's name on the command line and in rows: auto, pages, canary. */
const char *stack_guard_name(int guard);

#endif
