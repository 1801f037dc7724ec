/* ptbench: the same timer workloads against every design, side by side,
 * with peers (Go's runtime timers, libuv) run in the same invocation.
 * `ptbench --help` lists the options; `ptbench compare` runs the standard
 * matrix. Reports: a table on stdout, JSON lines and CSV, gnuplot plots. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"
#include "workload.h"

#define MAXLIST 16

/* floor right after pheap: their repetitions run back to back, which is
 * what the paired ratio under each table (report.c) leans on. */
static const char *const default_designs[] = {"pheap",       "floor",      "pheap-sync",
                                              "timerthread", "globalheap", "kernel"};

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
    long memory_timers;
    const char *baseline;
    const char *out;
    bool peers, plots, quiet;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ptbench [compare] [options]\n"
            "  compare               the standard matrix (every design x workload x threads)\n"
            "  -d, --design LIST     designs, comma-separated (default: all):\n"
            "                        pheap pheap-sync timerthread globalheap floor\n"
            "                        kernel (latency workloads only: the futex floor)\n"
            "  -w, --workload LIST   workloads (default: all):\n");
    for (int i = 0; i < nworkloads; i++)
        fprintf(f, "                          %-13s %s\n", workloads[i].name, workloads[i].what);
    fprintf(f,
            "  -t, --threads LIST    worker threads (default: 1,2,<2 x cores>)\n"
            "  -r, --reps N          repetitions, 1-64; medians are reported (default 5)\n"
            "  -D, --duration-ms N   per repetition of throughput workloads (default 300)\n"
            "      --ticker-ms N     per repetition of ticker (default 300)\n"
            "      --latency-ms N    per repetition of latency (default 600)\n"
            "  -n, --ops N           ops per thread instead of a duration\n"
            "      --preload N       far-future timers per thread first (default 32768)\n"
            "      --window N        rpc-pending window (default 10000)\n"
            "      --memory-timers N pending timers in the memory workload (default 1000000)\n"
            "      --tickers LIST    ticker counts (default 1000,10000)\n"
            "      --slack-ns N      PR_SET_TIMERSLACK for every thread (default 1000)\n"
            "  -b, --baseline NAME   the design ratios are against (default timerthread)\n"
            "  -o, --out DIR         results folder (default results)\n"
            "      --no-peers        skip Go and libuv\n"
            "      --no-plots        skip gnuplot\n"
            "  -q, --quiet           no progress on stderr\n");
}

static int split(char *s, const char **out)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < MAXLIST; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

static int split_ints(char *s, int *out)
{
    const char *parts[MAXLIST];
    int n = split(s, parts);
    for (int i = 0; i < n; i++) {
        char *end;
        long v = strtol(parts[i], &end, 10);
        if (*end || v <= 0 || v > 10000000)
            return -1;
        out[i] = (int)v;
    }
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

static int bad_option(const char *opt, const char *val)
{
    fprintf(stderr, "ptbench: bad value for %s: '%s'\n\n", opt, val ? val : "(missing)");
    usage(stderr);
    return 2;
}

static int parse(int argc, char **argv, struct options *o)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (struct options){.reps = 5, .duration_ms = 300, .ticker_ms = 300, .latency_ms = 600,
                          .slack_ns = 1000, .preload = 32768, .window = 10000,
                          .memory_timers = 1000000,
                          .baseline = "timerthread", .out = "results", .peers = true,
                          .plots = true};
    o->threads[o->nthreads++] = 1;
    o->threads[o->nthreads++] = 2;
    o->threads[o->nthreads++] = (int)(2 * (ncpu > 0 ? ncpu : 1));
    if (o->threads[2] <= 2)
        o->nthreads = 2;
    o->tickers[o->ntickers++] = 1000;
    o->tickers[o->ntickers++] = 10000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(s, l) (strcmp(a, s) == 0 || strcmp(a, l) == 0)
#define NEED()                                                                                 \
    do {                                                                                       \
        if (!v)                                                                                \
            return bad_option(a, v);                                                           \
        i++;                                                                                   \
    } while (0)
        if (strcmp(a, "compare") == 0 && i == 1) {
            continue; /* the defaults are the standard matrix */
        } else if (OPT("-h", "--help")) {
            usage(stdout);
            exit(0);
        } else if (OPT("-d", "--design")) {
            NEED();
            o->ndesigns = split(argv[i], o->designs);
            for (int k = 0; k < o->ndesigns; k++)
                if (!engine_find(o->designs[k]))
                    return bad_option(a, o->designs[k]);
        } else if (OPT("-w", "--workload")) {
            NEED();
            o->nworkloads = split(argv[i], o->workloads);
            for (int k = 0; k < o->nworkloads; k++)
                if (!workload_find(o->workloads[k]))
                    return bad_option(a, o->workloads[k]);
        } else if (OPT("-t", "--threads")) {
            NEED();
            if ((o->nthreads = split_ints(argv[i], o->threads)) <= 0)
                return bad_option(a, v);
            for (int k = 0; k < o->nthreads; k++)
                if (o->threads[k] > 1024)
                    return bad_option(a, v);
        } else if (OPT("-r", "--reps")) {
            NEED();
            if ((o->reps = (int)parse_long(v, 1, REPORT_MAXREPS)) < 0)
                return bad_option(a, v);
        } else if (OPT("-D", "--duration-ms")) {
            NEED();
            if ((o->duration_ms = parse_long(v, 1, 3600000)) < 0)
                return bad_option(a, v);
        } else if (OPT("--ticker-ms", "--ticker-ms")) {
            NEED();
            if ((o->ticker_ms = parse_long(v, 1, 3600000)) < 0)
                return bad_option(a, v);
        } else if (OPT("--latency-ms", "--latency-ms")) {
            NEED();
            if ((o->latency_ms = parse_long(v, 1, 3600000)) < 0)
                return bad_option(a, v);
        } else if (OPT("-n", "--ops")) {
            NEED();
            if ((o->ops = parse_long(v, 1, 1L << 40)) < 0)
                return bad_option(a, v);
        } else if (OPT("--preload", "--preload")) {
            NEED();
            if ((o->preload = (int)parse_long(v, 0, 1 << 24)) < 0)
                return bad_option(a, v);
        } else if (OPT("--window", "--window")) {
            NEED();
            if ((o->window = (int)parse_long(v, 1, 1 << 24)) < 0)
                return bad_option(a, v);
        } else if (OPT("--memory-timers", "--memory-timers")) {
            NEED();
            if ((o->memory_timers = parse_long(v, 1, 100000000)) < 0)
                return bad_option(a, v);
        } else if (OPT("--tickers", "--tickers")) {
            NEED();
            if ((o->ntickers = split_ints(argv[i], o->tickers)) <= 0)
                return bad_option(a, v);
        } else if (OPT("--slack-ns", "--slack-ns")) {
            NEED();
            if ((o->slack_ns = parse_long(v, 1, 1000000000)) < 0)
                return bad_option(a, v);
        } else if (OPT("-b", "--baseline")) {
            NEED();
            if (!engine_find(v) && strcmp(v, "go1.19") != 0 && strcmp(v, "libuv") != 0)
                return bad_option(a, v);
            o->baseline = v;
        } else if (OPT("-o", "--out")) {
            NEED();
            o->out = v;
        } else if (OPT("--no-peers", "--no-peers")) {
            o->peers = false;
        } else if (OPT("--no-plots", "--no-plots")) {
            o->plots = false;
        } else if (OPT("-q", "--quiet")) {
            o->quiet = true;
        } else {
            fprintf(stderr, "ptbench: unknown option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
#undef OPT
#undef NEED
    }
    if (!o->ndesigns)
        for (size_t k = 0; k < sizeof default_designs / sizeof *default_designs; k++)
            o->designs[o->ndesigns++] = default_designs[k];
    if (!o->nworkloads)
        for (int k = 0; k < nworkloads && k < MAXLIST; k++)
            o->workloads[o->nworkloads++] = workloads[k].name;
    return 0;
}

static void to_rep(const struct run_result *r, const struct workload *wl, struct rep *p)
{
    *p = (struct rep){
        .ops = r->ops,
        .elapsed_ns = (double)r->elapsed,
        .cpu_s = r->cpu_s,
        .wakeups = (double)r->wakeups,
        .p50 = hist_quantile(&r->lateness, 0.50),
        .p99 = hist_quantile(&r->lateness, 0.99),
        .p999 = hist_quantile(&r->lateness, 0.999),
        .max = (double)atomic_load(&((struct run_result *)r)->lateness.max),
        .late_count = atomic_load(&((struct run_result *)r)->lateness.count),
        .bytes_per_timer = r->bytes_per_timer,
        .create_ns = r->create_ns,
        .cancel_ns = r->cancel_ns,
        .scheduled = r->scheduled,
        .fired = r->fired,
        .cancelled = r->cancelled,
        .stale_cancels = r->stale_cancels,
        .expected_ticks = r->expected_ticks,
    };
    (void)wl;
}

/* One repetition, run by a process of its own (see run_isolated): the
 * workload and engine named, nt threads, `timers` timers; the struct rep
 * is written to fd. This process's exit status says whether it worked. */
#define ISOLATED_ARG "--isolated-rep"
static int isolated_main(char **argv)
{
    const struct workload *wl = workload_find(argv[2]);
    const struct engine *eng = engine_find(argv[3]);
    int nt = atoi(argv[4]), fd = atoi(argv[6]);
    /* Only the memory workload runs here, and memory_timers is all of
     * the configuration it reads. */
    struct run_config cfg = {.memory_timers = atol(argv[5])};
    struct run_result *res = calloc(1, sizeof *res);
    struct rep r;
    if (!wl || !wl->single_thread || !eng || nt < 1 || cfg.memory_timers < 1 || !res ||
        workload_run(wl, eng, nt, &cfg, res) != 0)
        return 1;
    to_rep(res, wl, &r);
    return write(fd, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1;
}

/* One repetition in a new process (this program, executed afresh), so
 * that its resident-size delta is not hidden by memory an earlier run
 * freed to the allocator: the memory workload measures from a fresh
 * process every time. A fork alone is not fresh: the child inherits the
 * allocator's free pages, and TimerThread's tasks, placed in them, read
 * 1.6 B per timer after an rpc run instead of 80. */
static int run_isolated(const struct workload *wl, const struct engine *eng, int nt,
                        const struct run_config *cfg, struct rep *out)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        char nts[16], timers[24], fds[16];
        snprintf(nts, sizeof nts, "%d", nt);
        snprintf(timers, sizeof timers, "%ld", cfg->memory_timers);
        snprintf(fds, sizeof fds, "%d", fd[1]);
        char *args[] = {"ptbench", ISOLATED_ARG, (char *)wl->name, (char *)eng->name,
                        nts, timers, fds, NULL};
        execv("/proc/self/exe", args);
        fprintf(stderr, "ptbench: cannot execute /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], out, sizeof *out);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return n == (ssize_t)sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* netpoll (workloads.c): every backend's timed wait, per wait time. */
extern const char *const netpoll_designs[];
int netpoll_bench(const char *design, pt_nanos wait, pt_nanos duration, struct run_result *out);

static int run_netpoll(struct report *rep, const struct options *o)
{
    static const struct {
        const char *name;
        pt_nanos wait;
    } waits[] = {{"100us", 100000}, {"1ms", 1000000}, {"10ms", 10000000}};
    const struct workload *wl = workload_find("netpoll");
    for (size_t vi = 0; vi < sizeof waits / sizeof waits[0]; vi++)
        for (int di = 0; netpoll_designs[di]; di++) {
            const char *design = netpoll_designs[di];
            struct rep reps[REPORT_MAXREPS];
            int nr = o->reps, rc = 0;
            for (int r = 0; r < nr && rc == 0; r++) {
                if (!o->quiet)
                    fprintf(stderr, "\rptbench: %-12s %-7s threads %-3d %-12s rep %d/%d   ",
                            wl->name, waits[vi].name, 1, design, r + 1, nr);
                struct run_result *res = calloc(1, sizeof *res);
                if (!res)
                    return -1;
                rc = netpoll_bench(design, waits[vi].wait, o->latency_ms * 1000000, res);
                if (rc == 0) {
                    to_rep(res, wl, &reps[r]);
                    if (r == nr - 1) {
                        char name[32];
                        snprintf(name, sizeof name, "netpoll-%s", waits[vi].name);
                        report_distribution(rep, name, design, 1, &res->lateness);
                    }
                }
                free(res);
            }
            if (rc < 0) {
                fprintf(stderr, "\nptbench: netpoll %s failed\n", design);
                return -1;
            }
            if (rc > 0) {
                if (!o->quiet)
                    fprintf(stderr, "\nptbench: %s is not available here; skipped\n", design);
                continue;
            }
            report_add(rep, design, wl->name, waits[vi].name, 1, 0, reps, nr);
        }
    return 0;
}

/* One repetition of one design: into *out, its lateness samples added to
 * *pool. Non-zero (and said) on failure. */
static int run_rep(const struct workload *wl, const struct engine *eng, int nt,
                   const struct run_config *cfg, struct hist *pool, struct rep *out)
{
    if (wl->single_thread) { /* memory: a fresh process each time */
        if (run_isolated(wl, eng, nt, cfg, out) != 0) {
            fprintf(stderr, "\nptbench: %s failed\n", eng->name);
            return 1;
        }
        return 0;
    }
    struct run_result *res = calloc(1, sizeof *res);
    if (!res || workload_run(wl, eng, nt, cfg, res) != 0) {
        fprintf(stderr, "\nptbench: %s failed to start\n", eng->name);
        free(res);
        return 1;
    }
    to_rep(res, wl, out);
    hist_merge(pool, &res->lateness);
    free(res);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], ISOLATED_ARG) == 0)
        return isolated_main(argv);
    /* parse() splits lists in place: keep the command as typed. */
    static char cmd[4096];
    for (int i = 0; i < argc; i++) {
        strncat(cmd, i ? " " : "", sizeof cmd - strlen(cmd) - 1);
        strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 1);
    }
    struct options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    /* Every thread created from here on inherits this timer slack; the
     * report says which one was used (Linux's default is 50 us). */
    prctl(PR_SET_TIMERSLACK, (unsigned long)o.slack_ns, 0, 0, 0);
    if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "ptbench: cannot create %s: %s\n", o.out, strerror(errno));
        return 1;
    }
    struct report rep;
    if (report_open(&rep, o.out, cmd, o.baseline, o.slack_ns) != 0)
        return 1;
    struct rep(*reps)[REPORT_MAXREPS] = calloc(MAXLIST, sizeof *reps); /* [design][repetition] */
    struct hist *pooled = calloc(MAXLIST, sizeof *pooled); /* [design], per row */
    if (!reps || !pooled)
        return 1;

    for (int wi = 0; wi < o.nworkloads; wi++) {
        const struct workload *wl = workload_find(o.workloads[wi]);
        if (strcmp(wl->name, "netpoll") == 0) {
            if (run_netpoll(&rep, &o) != 0)
                return 1;
            continue;
        }
        bool is_ticker = strcmp(wl->name, "ticker") == 0;
        bool is_latency = strncmp(wl->name, "latency", 7) == 0;
        int nvariants = is_ticker ? o.ntickers : 1;
        for (int vi = 0; vi < nvariants; vi++) {
            struct run_config cfg = {
                .duration = (is_ticker ? o.ticker_ms : is_latency ? o.latency_ms : o.duration_ms) *
                            1000000,
                .ops = is_ticker || is_latency ? 0 : o.ops,
                .preload = o.preload,
                .tickers = o.tickers[vi],
                .window = o.window,
                .busy = strcmp(wl->name, "latency-busy") == 0,
                .memory_timers = o.memory_timers,
            };
            char variant[32] = "";
            if (is_ticker)
                snprintf(variant, sizeof variant, "T=%d", cfg.tickers);
            for (int ti = 0; ti < o.nthreads; ti++) {
                int nt = o.threads[ti];
                if (wl->single_thread && nt != 1)
                    continue;
                /* Lateness with more workers than cores measures the
                 * kernel's scheduler, not the timers. */
                if ((is_ticker || is_latency) && nt > sysconf(_SC_NPROCESSORS_ONLN))
                    continue;
                /* Repetitions go round the designs (rep 1 of each, then
                 * rep 2, ...), so that a noisy second on this shared
                 * machine lands on several designs, not on all of one
                 * design's repetitions: the ratios are what we publish. */
                int nr = o.reps;
                memset(pooled, 0, MAXLIST * sizeof *pooled);
                for (int r = 0; r < nr; r++)
                    for (int di = 0; di < o.ndesigns; di++) {
                        const struct engine *eng = engine_find(o.designs[di]);
                        if (eng->latency_only && !is_latency)
                            continue;
                        if (!o.quiet)
                            fprintf(stderr, "\rptbench: %-12s %-7s threads %-3d %-12s rep %d/%d   ",
                                    wl->name, variant, nt, eng->name, r + 1, nr);
                        if (run_rep(wl, eng, nt, &cfg, &pooled[di], &reps[di][r]) != 0)
                            return 1;
                    }
                for (int di = 0; di < o.ndesigns; di++) {
                    const struct engine *eng = engine_find(o.designs[di]);
                    if (eng->latency_only && !is_latency)
                        continue;
                    report_add_pooled(&rep, eng->name, wl->name, variant, nt, eng->timer_bytes,
                                      reps[di], nr, &pooled[di]);
                    if (is_latency)
                        report_distribution(&rep, wl->name, eng->name, nt, &pooled[di]);
                }
                if (o.peers)
                    peers_run(&rep, wl->name, variant, nt, &cfg, o.reps, o.quiet);
            }
        }
    }
    if (!o.quiet)
        fprintf(stderr, "\r%79s\r", "");
    report_finish(&rep, o.plots);
    free(reps);
    free(pooled);
    return 0;
}
