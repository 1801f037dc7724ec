/* ptbench's command line, through getopt_long. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "report.h"
#include "workload.h"
#ifdef PTBENCH_HAVE_SCHED
#include "sched_bench.h"
#endif

/* floor right after pheap: their repetitions run back to back, which is
 * what the paired ratio under each table (tables.c) leans on. Engines run
 * the engine workloads, the sched designs those in the scheduler; kernel
 * is the floor of both kinds' latency workloads. kernel-slack, slack's
 * reference, runs only when named: ten thousand threads on two cores
 * starve the machine's own work for as long as they run. */
static const char *const default_designs[] = {
    "pheap",      "floor",    "pheap-sync",  "pheap-staged", "timerthread",
    "globalheap", "pwheel",   "lheap",       "kernel",
#ifdef PTBENCH_HAVE_SCHED
    "sched-perp", "sched-tt", "sched-lheap", "sched-uring",
#endif
};

static bool design_known(const char *name)
{
#ifdef PTBENCH_HAVE_SCHED
    if (sched_design_find(name))
        return true;
#endif
    return engine_find(name) != NULL;
}

/* Names an engine of the user's may not take: the scheduler's designs and
 * the peers (the built-in engines engine_load checks itself). */
static bool reserved(const char *name)
{
#ifdef PTBENCH_HAVE_SCHED
    if (sched_design_find(name))
        return true;
#endif
    return peer_known(name);
}

/* --engine: loaded before the other options are read, so that -d and -b
 * may name it. One that cannot be used is said in a line and left out;
 * the run goes on with the others and ends with status 1. */
static void load_engine(struct options *o, const char *path)
{
    char why[600];
    const struct pt_engine *e = engine_load(path, reserved, why, sizeof why);
    if (!e) {
        fprintf(stderr, "ptbench: --engine %s\n", why);
        o->engines_refused++;
        return;
    }
    fprintf(stderr, "ptbench: loaded %s (%s)%s%s\n", e->name, engine_path(e), e->what ? ": " : "",
            e->what ? e->what : "");
    if (o->nloaded < MAXLIST)
        o->loaded[o->nloaded++] = e->name;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ptbench [compare] [options]\n"
            "  compare               the standard comparison: every design and peer on the\n"
            "                        workloads that decide which design, when (rpc,\n"
            "                        rpc-pending, reset, latency, ticker T=1000, memory;\n"
            "                        spawn, pingpong, chan-timeout, sleep, rpc-sched,\n"
            "                        conn-churn; http at\n"
            "                        1000 connections), 1 and 2 threads, 3 repetitions\n"
            "      --full            the whole comparison instead: every workload, the\n"
            "                        defaults below (options given still win)\n"
            "  -d, --design LIST     designs, comma-separated (default: all):\n"
            "                        pheap pheap-sync pheap-staged timerthread globalheap floor\n"
            "                        pwheel lheap (Go 1.23's timers)\n"
            "                        kernel (latency workloads only: the futex floor)\n"
            "                        kernel-slack (slack only, when named: a thread per\n"
            "                        timer, with PR_SET_TIMERSLACK at the row's slack)\n"
            "      --engine PATH     a design of your own: a shared object built against\n"
            "                        ptimer/engine.h, run beside -d's (repeatable). Each\n"
            "                        repetition of it runs in a process of its own: a crash\n"
            "                        or hang loses its rows, not the run's\n"
            "      --hang-s N        such a repetition still going N s past its duration\n"
            "                        is hung (default 60)\n");
#ifdef PTBENCH_HAVE_SCHED
    fprintf(f,
            "                        sched-perp sched-tt sched-lheap (the workloads in the\n"
            "                        scheduler, with timers per P, on the TimerThread, or per P\n"
            "                        in Go 1.23's design); sched-uring (sched-perp with socket\n"
            "                        reads and writes on each P's io_uring: rpc-sched, http)\n");
#endif
    fprintf(f, "  -w, --workload LIST   workloads (default: all):\n");
    for (int i = 0; i < nworkloads; i++)
        fprintf(f, "                          %-13s %s\n", workloads[i].name, workloads[i].what);
    fprintf(f, "  -t, --threads LIST    worker threads, or Ps in the scheduler\n"
               "                        (default: 1,2; --full: 1,2,<2 x cores>)\n"
               "  -r, --reps N          repetitions, 1-64; medians are reported (default 3;\n"
               "                        --full: 5)\n"
               "  -D, --duration-ms N   per repetition of throughput workloads (default 300)\n"
               "      --ticker-ms N     per repetition of ticker (default 300)\n"
               "      --latency-ms N    per repetition of latency, netpoll, sleep-1 and\n"
               "                        busy-lateness (default 600)\n"
               "  -n, --ops N           ops per thread instead of a duration\n"
               "      --preload N       far-future timers per thread first (default 32768)\n"
               "      --window N        rpc-pending window (default 10000)\n"
               "      --timeout-ms N    rpc and rpc-pending: each timer's timeout, plus up to\n"
               "                        1 ms of jitter (default 100)\n"
               "      --memory-timers N pending timers in the memory workload (default 1000000)\n"
               "      --memory-gs LIST  parked Gs in memory-g, a row each (default\n"
               "                        100000,1000000)\n"
               "      --burst-gs LIST   Gs in spawn-burst, a row each (default\n"
               "                        10000,100000,1000000)\n"
               "      --http-conns LIST wrk's connections in http, a row each (default\n"
               "                        1000; --full: 100,1000,10000)\n"
               "      --http-secs N     wrk's run in each http repetition, and the load's in\n"
               "                        http-idle (default 3)\n"
               "      --idle-conns LIST idle connections in http-idle, a row each (default\n"
               "                        10000)\n"
               "      --idle-ms N       the servers' idle timeout in http-idle (default 2000)\n"
               "      --stack-guards LIST  memory-g's and spawn-burst's stack guards, a row\n"
               "                        each: auto pages canary (default auto,pages: what\n"
               "                        this kernel gets, and what one before 6.13 gets)\n"
               "      --tickers LIST    ticker counts (default 1000; --full: 1000,10000)\n"
               "      --slack-ns N      PR_SET_TIMERSLACK for every thread (default 1000)\n"
               "      --slacks LIST     slack's windows, in %% of its 100 ms period, a row\n"
               "                        each (default 0,1,10)\n"
               "      --slack-tickers N slack's tickers in all (default 10000)\n"
               "      --slack-ms N      per repetition of slack (default 1000)\n"
               "      --monitor-priority N  the scheduler's monitor thread as SCHED_FIFO at N,\n"
               "                        1-99 (needs CAP_SYS_NICE; default 0: a normal thread)\n"
               "  -b, --baseline NAME   the design the tables' ratio column is against\n"
               "                        (default timerthread; the verdict's ratios are\n"
               "                        against each line's winner)\n"
               "  -o, --out DIR         results folder (default results)\n"
               "      --peers LIST      only these peers: go1.19, libuv, tokio, tokio-warm\n"
               "                        (default: all whose toolchain is present)\n"
               "      --no-peers        skip them all\n"
               "      --no-plots        skip gnuplot\n"
               "  -q, --quiet           no progress on stderr (on a terminal: a line\n"
               "                        rewritten per repetition; else a line per row)\n");
}

static int split(char *s, const char **out)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < MAXLIST; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

static long parse_long(const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || !*s || v < lo || v > hi)
        return -1;
    return v;
}

/* Positive integers up to hi; how many, or -1. */
static int split_ints(char *s, int *out, long lo, long hi)
{
    const char *parts[MAXLIST];
    int n = split(s, parts);
    for (int i = 0; i < n; i++) {
        long v = parse_long(parts[i], lo, hi);
        if (v < 0)
            return -1;
        out[i] = (int)v;
    }
    return n;
}

/* The names PT_STACK_GUARD takes too (include/ptimer/sched.h). */
static const char *const guard_names[] = {"auto", "pages", "canary"};

const char *stack_guard_name(int guard)
{
    return guard >= 0 && guard < 3 ? guard_names[guard] : "?";
}

static int stack_guard_of(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, guard_names[i]) == 0)
            return i;
    return -1;
}

static int bad_option(const char *opt, const char *val)
{
    fprintf(stderr, "ptbench: bad value for %s: '%s'\n\n", opt, val ? val : "(missing)");
    usage(stderr);
    return 2;
}

enum {
    OPT_TICKER_MS = 256,
    OPT_LATENCY_MS,
    OPT_PRELOAD,
    OPT_WINDOW,
    OPT_TIMEOUT_MS,
    OPT_MEMORY_TIMERS,
    OPT_MEMORY_GS,
    OPT_BURST_GS,
    OPT_HTTP_CONNS,
    OPT_HTTP_SECS,
    OPT_IDLE_CONNS,
    OPT_IDLE_MS,
    OPT_STACK_GUARDS,
    OPT_TICKERS,
    OPT_SLACK_NS,
    OPT_SLACKS,
    OPT_SLACK_TICKERS,
    OPT_SLACK_MS,
    OPT_MONITOR_PRIORITY,
    OPT_PEERS,
    OPT_NO_PEERS,
    OPT_NO_PLOTS,
    OPT_FULL,
    OPT_ENGINE,
    OPT_HANG_S,
};

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"design", required_argument, NULL, 'd'},
    {"workload", required_argument, NULL, 'w'},
    {"threads", required_argument, NULL, 't'},
    {"reps", required_argument, NULL, 'r'},
    {"duration-ms", required_argument, NULL, 'D'},
    {"ticker-ms", required_argument, NULL, OPT_TICKER_MS},
    {"latency-ms", required_argument, NULL, OPT_LATENCY_MS},
    {"ops", required_argument, NULL, 'n'},
    {"preload", required_argument, NULL, OPT_PRELOAD},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS},
    {"memory-timers", required_argument, NULL, OPT_MEMORY_TIMERS},
    {"memory-gs", required_argument, NULL, OPT_MEMORY_GS},
    {"burst-gs", required_argument, NULL, OPT_BURST_GS},
    {"http-conns", required_argument, NULL, OPT_HTTP_CONNS},
    {"http-secs", required_argument, NULL, OPT_HTTP_SECS},
    {"idle-conns", required_argument, NULL, OPT_IDLE_CONNS},
    {"idle-ms", required_argument, NULL, OPT_IDLE_MS},
    {"stack-guards", required_argument, NULL, OPT_STACK_GUARDS},
    {"tickers", required_argument, NULL, OPT_TICKERS},
    {"slack-ns", required_argument, NULL, OPT_SLACK_NS},
    {"slacks", required_argument, NULL, OPT_SLACKS},
    {"slack-tickers", required_argument, NULL, OPT_SLACK_TICKERS},
    {"slack-ms", required_argument, NULL, OPT_SLACK_MS},
    {"monitor-priority", required_argument, NULL, OPT_MONITOR_PRIORITY},
    {"baseline", required_argument, NULL, 'b'},
    {"out", required_argument, NULL, 'o'},
    {"peers", required_argument, NULL, OPT_PEERS},
    {"no-peers", no_argument, NULL, OPT_NO_PEERS},
    {"no-plots", no_argument, NULL, OPT_NO_PLOTS},
    {"quiet", no_argument, NULL, 'q'},
    {"full", no_argument, NULL, OPT_FULL},
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"hang-s", required_argument, NULL, OPT_HANG_S},
    {NULL, 0, NULL, 0},
};

/* What `compare` runs without --full: the question most people bring,
 * which design wins where, against Go and tokio, answered in minutes on
 * two cores. The whole comparison (--full) adds the other workloads,
 * thread counts and rows, and more repetitions. */
static const char *const quick_workloads[] = {
    "rpc",   "rpc-pending", "reset",        "latency", "ticker",    "memory",
    "spawn", "pingpong",    "chan-timeout", "sleep",   "rpc-sched", "conn-churn", "http",
};

static void defaults(struct options *o, bool full)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (struct options){.hang_s = 60,
                          .reps = 5,
                          .duration_ms = 300,
                          .ticker_ms = 300,
                          .latency_ms = 600,
                          .slack_ns = 1000,
                          .slacks = {0, 1, 10},
                          .nslacks = 3,
                          .slack_tickers = 10000,
                          .slack_ms = 1000,
                          .preload = 32768,
                          .window = 10000,
                          .timeout_ms = 100,
                          .memory_timers = 1000000,
                          .memory_gs = {100000, 1000000},
                          .nmemory_gs = 2,
                          .burst_gs = {10000, 100000, 1000000},
                          .nburst_gs = 3,
                          .http_conns = {100, 1000, 10000},
                          .nhttp_conns = 3,
                          .http_secs = 3,
                          .idle_conns = {10000},
                          .nidle_conns = 1,
                          .idle_ms = 2000,
                          .stack_guards = {0, 1}, /* auto, pages */
                          .nstack_guards = 2,
                          .baseline = "timerthread",
                          .out = "results",
                          .peers = true,
                          .plots = true};
    o->threads[o->nthreads++] = 1;
    o->threads[o->nthreads++] = 2;
    o->threads[o->nthreads++] = (int)(2 * (ncpu > 0 ? ncpu : 1));
    if (o->threads[2] <= 2)
        o->nthreads = 2;
    o->tickers[o->ntickers++] = 1000;
    o->tickers[o->ntickers++] = 10000;
    o->full = full;
    if (full)
        return;
    o->reps = 3;
    o->nthreads = 2;
    o->ntickers = 1;
    o->http_conns[0] = 1000;
    o->nhttp_conns = 1;
}

/* One option: 0, or 2 after saying what was wrong. */
static int apply(struct options *o, int c, const char *opt, char *v)
{
    long n;
    switch (c) {
    case 'd':
        o->ndesigns = split(v, o->designs);
        for (int k = 0; k < o->ndesigns; k++)
            if (!design_known(o->designs[k]))
                return bad_option(opt, o->designs[k]);
        return 0; /* none named: all */
    case 'w':
        o->nworkloads = split(v, o->workloads);
        for (int k = 0; k < o->nworkloads; k++)
            if (!workload_find(o->workloads[k]))
                return bad_option(opt, o->workloads[k]);
        return 0;
    case 't':
        o->nthreads = split_ints(v, o->threads, 1, 1024);
        return o->nthreads > 0 ? 0 : bad_option(opt, v);
    case OPT_TICKERS:
        o->ntickers = split_ints(v, o->tickers, 1, 10000000);
        return o->ntickers > 0 ? 0 : bad_option(opt, v);
    case 'r':
        n = parse_long(v, 1, REPORT_MAXREPS);
        o->reps = (int)n;
        break;
    case 'D':
        n = o->duration_ms = parse_long(v, 1, 3600000);
        break;
    case OPT_TICKER_MS:
        n = o->ticker_ms = parse_long(v, 1, 3600000);
        break;
    case OPT_LATENCY_MS:
        n = o->latency_ms = parse_long(v, 1, 3600000);
        break;
    case 'n':
        n = o->ops = parse_long(v, 1, 1L << 40);
        break;
    case OPT_PRELOAD:
        n = parse_long(v, 0, 1 << 24);
        o->preload = (int)n;
        break;
    case OPT_WINDOW:
        n = parse_long(v, 1, 1 << 24);
        o->window = (int)n;
        break;
    case OPT_TIMEOUT_MS:
        n = o->timeout_ms = parse_long(v, 1, 86400000);
        break;
    case OPT_MEMORY_TIMERS:
        n = o->memory_timers = parse_long(v, 1, 100000000);
        break;
    case OPT_MEMORY_GS:
        o->nmemory_gs = split_ints(v, o->memory_gs, 1, 10000000);
        return o->nmemory_gs > 0 ? 0 : bad_option(opt, v);
    case OPT_BURST_GS:
        o->nburst_gs = split_ints(v, o->burst_gs, 1, 10000000);
        return o->nburst_gs > 0 ? 0 : bad_option(opt, v);
    case OPT_HTTP_CONNS:
        o->nhttp_conns = split_ints(v, o->http_conns, 1, 1000000);
        return o->nhttp_conns > 0 ? 0 : bad_option(opt, v);
    case OPT_HTTP_SECS:
        n = o->http_secs = parse_long(v, 1, 3600);
        break;
    case OPT_IDLE_CONNS:
        o->nidle_conns = split_ints(v, o->idle_conns, 1, 1000000);
        return o->nidle_conns > 0 ? 0 : bad_option(opt, v);
    case OPT_HANG_S:
        n = o->hang_s = parse_long(v, 1, 86400);
        break;
    case OPT_IDLE_MS:
        n = o->idle_ms = parse_long(v, 1, 3600000);
        break;
    case OPT_STACK_GUARDS: {
        const char *parts[MAXLIST];
        o->nstack_guards = split(v, parts);
        for (int k = 0; k < o->nstack_guards; k++)
            if ((o->stack_guards[k] = stack_guard_of(parts[k])) < 0)
                return bad_option(opt, parts[k]);
        return o->nstack_guards > 0 ? 0 : bad_option(opt, v);
    }
    case OPT_SLACK_NS:
        n = o->slack_ns = parse_long(v, 1, 1000000000);
        break;
    case OPT_SLACKS: /* under the period: a window as long would be none */
        o->nslacks = split_ints(v, o->slacks, 0, 99);
        return o->nslacks > 0 ? 0 : bad_option(opt, v);
    case OPT_SLACK_TICKERS:
        n = o->slack_tickers = (int)parse_long(v, 1, 1000000);
        break;
    case OPT_SLACK_MS:
        n = o->slack_ms = parse_long(v, 1, 3600000);
        break;
    case OPT_MONITOR_PRIORITY:
        n = parse_long(v, 0, 99);
        o->monitor_priority = (int)n;
        break;
    case 'b':
        /* the peers' rows can be the baseline too */
        if (!design_known(v) && !peer_known(v))
            return bad_option(opt, v);
        o->baseline = v;
        return 0;
    case 'o':
        o->out = v;
        return 0;
    case OPT_PEERS: {
        const char *parts[MAXLIST];
        int np = split(v, parts);
        return np > 0 && peers_choose(parts, np) == 0 ? 0 : bad_option(opt, v);
    }
    case OPT_NO_PEERS:
        o->peers = false;
        return 0;
    case OPT_NO_PLOTS:
        o->plots = false;
        return 0;
    case 'q':
        o->quiet = true;
        return 0;
    case OPT_FULL: /* read before the others (options_parse) */
    case OPT_ENGINE:
        return 0;
    default:
        return 2;
    }
    return n < 0 ? bad_option(opt, v) : 0;
}

int options_parse(int argc, char **argv, struct options *o)
{
    /* `compare` names the defaults, the standard matrix; it may only come
     * first. */
    if (argc > 1 && strcmp(argv[1], "compare") == 0) {
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    /* --full chooses the defaults the other options then change, wherever
     * it stands among them: a first pass finds it as getopt reads it (an
     * abbreviation, not an option's value), the second applies the rest */
    const char *optstring = "+hd:w:t:r:D:n:b:o:q";
    bool full = false;
    int c;
    opterr = 0;
    const char *engines[MAXLIST];
    int nengines = 0;
    while ((c = getopt_long(argc, argv, optstring, long_options, NULL)) != -1) {
        full |= c == OPT_FULL;
        if (c == OPT_ENGINE && nengines < MAXLIST)
            engines[nengines++] = optarg;
    }
    defaults(o, full);
    for (int k = 0; k < nengines; k++)
        load_engine(o, engines[k]);
    optind = 0; /* glibc: start over, with its state reset */
    opterr = 1; /* getopt says what it refused; usage follows */
    while ((c = getopt_long(argc, argv, optstring, long_options, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            exit(0);
        }
        if (c == '?' || c == ':') {
            fprintf(stderr, "\n");
            usage(stderr);
            return 2;
        }
        /* the option as typed, for the message: argv[optind - 1] is its
         * value when it was a separate word */
        const char *opt =
            argv[optind - 1] == optarg && optind >= 2 ? argv[optind - 2] : argv[optind - 1];
        if (apply(o, c, opt, optarg) != 0)
            return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "ptbench: unexpected argument '%s'\n\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (!o->ndesigns)
        for (size_t k = 0; k < sizeof default_designs / sizeof *default_designs; k++)
            o->designs[o->ndesigns++] = default_designs[k];
    /* the engines loaded run beside whatever -d chose */
    for (int k = 0; k < o->nloaded; k++) {
        bool named = false;
        for (int d = 0; d < o->ndesigns; d++)
            named |= strcmp(o->designs[d], o->loaded[k]) == 0;
        if (!named && o->ndesigns < MAXLIST)
            o->designs[o->ndesigns++] = o->loaded[k];
    }
    if (!o->nworkloads && o->full)
        for (int k = 0; k < nworkloads && k < MAXLIST; k++)
            o->workloads[o->nworkloads++] = workloads[k].name;
    if (!o->nworkloads)
        for (size_t k = 0; k < sizeof quick_workloads / sizeof *quick_workloads; k++)
            if (workload_find(quick_workloads[k])) /* http: only with the scheduler */
                o->workloads[o->nworkloads++] = quick_workloads[k];
    return 0;
}
