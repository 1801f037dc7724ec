/* ptbench: the same timer workloads against every design, side by side,
 * with peers (Go's runtime timers, libuv, tokio) run in the same invocation.
 * `ptbench --help` lists the options; `ptbench compare` runs the standard
 * matrix. Reports: a verdict table and a table per workload on stdout,
 * JSON lines and CSV, gnuplot plots. This file decides what runs, in
 * which order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isolated.h"
#include "netpoll_bench.h"
#include "options.h"
#include "progress.h"
#include "report.h"
#include "workload.h"
#ifdef PTBENCH_HAVE_SCHED
#include "http_bench.h"
#include "http_idle.h"
#include "sched_bench.h"
#endif

/* One design of a cell: a timer engine, or the scheduler in one of its
 * timer modes for the workloads that run inside it. */
struct design {
    const char *name;
    const struct pt_engine *eng;      /* engine workloads */
    const struct sched_design *sd; /* workloads in the scheduler */
    bool reference;                /* a floor: shown, never a winner */
    size_t timer_bytes;
};

/* The design named `name`, if it has a row in wl: an engine that holds
 * one timer per thread runs latency workloads only; the kernel floor runs
 * in the scheduler's workloads that have one. */
static bool design_for(const char *name, const struct workload *wl, struct design *out)
{
    if (wl_in_sched(wl)) {
#ifdef PTBENCH_HAVE_SCHED
        const struct sched_design *sd = sched_design_find(name);
        if (!sd || !sched_design_runs(sd, wl))
            return false;
        *out = (struct design){sd->name, NULL, sd, sd->floor != SCHED_NOT_FLOOR, 0};
        return true;
#else
        return false;
#endif
    }
    const struct pt_engine *eng = engine_find(name);
    if (!eng || (engine_has(eng, PT_ENGINE_LATENCY_ONLY) && wl->kind != WL_LATENCY))
        return false;
    /* slack runs the designs that take a window, beside kernel-slack, a
     * thread per timer, which runs nothing else */
    if (wl->kind == WL_SLACK ? !eng->set_slack : eng == &engine_kernel_slack)
        return false;
    *out = (struct design){eng->name, eng, NULL, engine_has(eng, PT_ENGINE_REFERENCE), eng->timer_bytes};
    return true;
}

static int run_here(const struct workload *wl, const struct design *d, int nt,
                    const struct run_config *cfg, struct run_result *res)
{
#ifdef PTBENCH_HAVE_SCHED
    if (d->sd)
        return sched_run(wl, d->sd, nt, cfg, res);
#endif
    return workload_run(wl, d->eng, nt, cfg, res);
}

/* An engine loaded with --engine: code this program did not build, run
 * where its crash or hang costs its own rows only. */
static bool outside(const struct design *d)
{
    return d->eng && engine_is_loaded(d->eng);
}

/* One repetition of one design: into *out, its lateness samples added to
 * *pool. Non-zero (and said) on failure: 1 ends the run, 2 the design's
 * row in this cell (an outside engine's). */
static int run_rep(struct report *rep, const struct options *o, const struct workload *wl,
                   const struct design *d, int nt, const struct run_config *cfg, struct hist *pool,
                   struct rep *out)
{
    if (wl_isolated(wl)) { /* a fresh process each time */
        if (run_isolated(wl, d->name, nt, cfg, outside(d) ? o->hang_s : 0, out) != 0) {
            progress_clear();
            if (outside(d)) {
                report_error(rep, "%s, %s, %d thread%s: failed in its own process; its row is left out",
                             wl->name, d->name, nt, nt == 1 ? "" : "s");
                return 2;
            }
            fprintf(stderr, "ptbench: %s failed\n", d->name);
            return 1;
        }
        return 0;
    }
    struct run_result *res = calloc(1, sizeof *res);
    char why[200];
    if (res && outside(d) && run_forked(wl, d->eng, nt, cfg, o->hang_s, res, why, sizeof why) != 0) {
        progress_clear();
        report_error(rep, "%s, %s, %d thread%s: %s; its row is left out (rerun: ptbench --engine %s -d %s -w %s -t %d)",
                     wl->name, d->name, nt, nt == 1 ? "" : "s", why, engine_path(d->eng),
                     d->name, wl->name, nt);
        free(res);
        return 2;
    }
    if (!res || (!outside(d) && run_here(wl, d, nt, cfg, res) != 0)) {
        progress_clear();
        fprintf(stderr, "ptbench: %s failed to start\n", d->name);
        free(res);
        return 1;
    }
    rep_of_result(res, out);
    hist_merge(pool, &res->lateness);
    free(res);
    return 0;
}

/* The counts of a repetition in the scheduler: an error if they do not
 * add up; memory-g's or spawn-burst's Gs short of those asked for, a note
 * (from the first repetition: the others reach about as far). */
static void check_rep(struct report *rep, const struct workload *wl, const char *design, int nt,
                      const struct run_config *cfg, const struct rep *p, bool first)
{
    char why[160];
    if (!rep_counts_ok(wl, p, why, sizeof why))
        report_error(rep, "%s, %s, %d P%s: %s", wl->name, design, nt, nt == 1 ? "" : "s", why);
    else if (wl_in_sched(wl) && wl_isolated(wl) && p->spawn_error && first)
        report_note(rep,
                    "%s: %s started %llu of %ld Gs, then pt_go said %s (%d); its figures "
                    "are at that count",
                    wl->name, design, (unsigned long long)p->gs_started, cfg->memory_gs,
                    strerror(-p->spawn_error), p->spawn_error);
}

/* Every design's row for one (workload, variant, threads), then the
 * peers'. Repetitions go round the designs (rep 1 of each, then rep 2,
 * ...), so that a noisy second on this shared machine lands on several
 * designs, not on all of one design's repetitions: the ratios are what
 * we publish. */
static int run_cell(struct report *rep, const struct options *o, const struct workload *wl,
                    const char *variant, int nt, const struct run_config *cfg,
                    struct rep (*reps)[REPORT_MAXREPS], struct hist *pooled)
{
    memset(pooled, 0, MAXLIST * sizeof *pooled);
    struct design d;
    bool failed[MAXLIST] = {false}; /* an outside engine's row, left out */
    for (int r = 0; r < o->reps; r++)
        for (int di = 0; di < o->ndesigns; di++) {
            if (failed[di] || !design_for(o->designs[di], wl, &d))
                continue;
            progress_rep(wl->name, variant, nt, d.name, r + 1, o->reps);
            int rc = run_rep(rep, o, wl, &d, nt, cfg, &pooled[di], &reps[di][r]);
            if (rc == 1)
                return -1;
            failed[di] = rc == 2;
            if (!rc)
                check_rep(rep, wl, d.name, nt, cfg, &reps[di][r], r == 0);
        }
    for (int di = 0; di < o->ndesigns; di++) {
        if (failed[di] || !design_for(o->designs[di], wl, &d))
            continue;
        report_add(rep, wl, variant, d.name, nt, d.timer_bytes, reps[di], o->reps, &pooled[di],
                   ROW_INTERLEAVED | (d.reference ? ROW_REFERENCE : 0));
        if (wl->fires)
            report_distribution(rep, wl, variant, d.name, nt, &pooled[di]);
    }
    if (o->peers && cfg->slack == 0) /* no peer takes a window: its rows are slack 0's */
        peers_run(rep, wl, variant, nt, cfg, o->reps);
    return 0;
}

static pt_nanos duration_ms(const struct options *o, const struct workload *wl)
{
    switch (wl->kind) {
    case WL_TICKER:
        return o->ticker_ms;
    case WL_SLACK:
        return o->slack_ms;
    case WL_LATENCY:
    case WL_NETPOLL:
        return o->latency_ms;
    case WL_HTTP:
    case WL_IDLE:
    case WL_THROUGHPUT:
    case WL_MEMORY:
    case WL_BURST:
        break;
    }
    return o->duration_ms;
}

/* The G counts a stack workload has a row per. */
static const int *gs_counts(const struct options *o, const struct workload *wl, int *n)
{
    bool burst = wl->kind == WL_BURST;
    *n = burst ? o->nburst_gs : o->nmemory_gs;
    return burst ? o->burst_gs : o->memory_gs;
}

/* 1000000 as 1M, 100000 as 100k: a variant's name stays short. */
static void count_name(char *out, size_t n, long v)
{
    if (v % 1000000 == 0)
        snprintf(out, n, "%ldM", v / 1000000);
    else if (v % 1000 == 0)
        snprintf(out, n, "%ldk", v / 1000);
    else
        snprintf(out, n, "%ld", v);
}

static int run_workload(struct report *rep, const struct options *o, const struct workload *wl,
                        struct rep (*reps)[REPORT_MAXREPS], struct hist *pooled)
{
    pt_nanos duration = duration_ms(o, wl) * 1000000;
    if (wl->kind == WL_NETPOLL)
        return netpoll_run(rep, wl, o->reps, duration);
#ifdef PTBENCH_HAVE_SCHED
    if (wl->kind == WL_HTTP)
        return http_run(rep, o, wl);
    if (wl->kind == WL_IDLE)
        return http_idle_run(rep, o, wl);
#endif
    /* a ticker row per ticker count; a stack workload's per G count and
     * stack guard; one row otherwise */
    int ncounts = 0;
    const int *counts = wl->stack_rows ? gs_counts(o, wl, &ncounts) : NULL;
    int nvariants = wl->kind == WL_TICKER  ? o->ntickers
                    : wl->kind == WL_SLACK ? o->nslacks
                    : wl->stack_rows       ? ncounts * o->nstack_guards
                                           : 1;
    if (wl->kind == WL_SLACK) /* a loaded engine without a window: said, not run */
        for (int di = 0; di < o->ndesigns; di++) {
            const struct pt_engine *e = engine_find(o->designs[di]);
            if (e && !e->set_slack && !engine_has(e, PT_ENGINE_LATENCY_ONLY))
                report_note(rep, "%s: %s left out: it has no set_slack (engine ABI 2)", wl->name,
                            e->name);
        }
    for (int vi = 0; vi < nvariants; vi++) {
        struct run_config cfg = {
            .duration = duration,
            /* these run for their time: an op is a tick or a sleep */
            .ops = wl->kind == WL_TICKER || wl->kind == WL_LATENCY || wl->kind == WL_SLACK ? 0
                                                                                      : o->ops,
            /* slack's reference makes a thread per timer: none an hour out */
            .preload = wl->kind == WL_SLACK ? 0 : o->preload,
            .tickers = wl->kind == WL_SLACK    ? o->slack_tickers
                       : wl->kind == WL_TICKER ? o->tickers[vi]
                                               : o->tickers[0],
            .window = o->window,
            .timeout = (pt_nanos)o->timeout_ms * 1000000,
            .busy = wl->busy,
            .memory_timers = o->memory_timers,
            .monitor_priority = o->monitor_priority,
        };
        char variant[32] = "";
        if (wl->kind == WL_TICKER)
            snprintf(variant, sizeof variant, "T=%d", cfg.tickers);
        if (wl->kind == WL_SLACK) { /* a share of the period, 100 ms */
            cfg.slack = (pt_nanos)o->slacks[vi] * 1000000;
            snprintf(variant, sizeof variant, "slack=%d%%", o->slacks[vi]);
        }
        if (wl->stack_rows) { /* the counts, each with every guard in turn */
            char count[16];
            cfg.memory_gs = counts[vi / o->nstack_guards];
            cfg.stack_guard = o->stack_guards[vi % o->nstack_guards];
            count_name(count, sizeof count, cfg.memory_gs);
            snprintf(variant, sizeof variant, "N=%s guard=%s", count,
                     stack_guard_name(cfg.stack_guard));
        }
        for (int ti = 0; ti < o->nthreads; ti++) {
            int nt = o->threads[ti];
            if (wl_single_thread(wl) && nt != 1)
                continue;
            if (wl_cores_only(wl) && nt > sysconf(_SC_NPROCESSORS_ONLN))
                continue;
            if (run_cell(rep, o, wl, variant, nt, &cfg, reps, pooled) != 0)
                return -1;
        }
    }
    return 0;
}

/* What a workload should take, in seconds: its rows' repetitions at
 * their durations, with a guess at what starting each costs. Only the
 * progress line's estimate of time left reads it; that estimate then
 * scales by how the plan compared with the clock so far. */
static double plan_workload(const struct options *o, const struct workload *wl)
{
    double dur = (double)duration_ms(o, wl) / 1000;
    int ncounts = 0;
    const int *counts = wl->stack_rows ? gs_counts(o, wl, &ncounts) : NULL;
    double s = 0;
    for (int ti = 0; ti < o->nthreads; ti++) {
        int nt = o->threads[ti];
        if ((wl_single_thread(wl) && nt != 1) ||
            (wl_cores_only(wl) && nt > sysconf(_SC_NPROCESSORS_ONLN)))
            continue;
        if (wl->kind == WL_HTTP || wl->kind == WL_IDLE) {
            /* a server started per repetition, each answering for http-secs */
            double each = (double)o->http_secs + 1.5 + (wl->kind == WL_IDLE ? o->idle_ms / 1e3 : 0);
            int nconns = wl->kind == WL_HTTP ? o->nhttp_conns : o->nidle_conns;
            s += nconns * (o->peers ? 9 : 5) * o->reps * each;
            continue;
        }
        int ndesigns = 0;
        struct design d;
        for (int di = 0; di < o->ndesigns; di++)
            ndesigns += design_for(o->designs[di], wl, &d);
        double each = dur + 0.1;
        if (wl->kind == WL_MEMORY)
            each = 1.5;
        else if (wl->kind == WL_NETPOLL)
            each = 3 * dur;
        int nvariants = wl->kind == WL_TICKER ? o->ntickers : wl->kind == WL_SLACK ? o->nslacks : 1;
        if (wl->kind == WL_SLACK) /* arming, and kernel-slack's threads */
            each += 0.3;
        for (int vi = 0; vi < (wl->stack_rows ? ncounts * o->nstack_guards : nvariants); vi++) {
            if (wl->stack_rows) /* a fresh process, its Gs made and measured */
                each = 1 + counts[vi / o->nstack_guards] * 25e-6;
            int npeers = o->peers ? peers_planned(wl, nt) : 0;
            s += (ndesigns + npeers) * o->reps * each + npeers * 0.5;
        }
    }
    return s;
}

int main(int argc, char **argv)
{
    if (argc == ISOLATED_ARGC && strcmp(argv[1], ISOLATED_ARG) == 0)
        return isolated_main(argv);
    /* options_parse splits lists in place: keep the command as typed. */
    static char cmd[4096];
    for (int i = 0; i < argc; i++) {
        strncat(cmd, i ? " " : "", sizeof cmd - strlen(cmd) - 1);
        strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 1);
    }
    struct options o;
    int rc = options_parse(argc, argv, &o);
    if (rc)
        return rc;
    progress_init(o.quiet);
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
    struct hist *pooled = calloc(MAXLIST, sizeof *pooled);              /* [design], per row */
    if (!reps || !pooled)
        return 1;
    double plan[MAXLIST], total = 0;
    for (int wi = 0; wi < o.nworkloads; wi++)
        total += plan[wi] = plan_workload(&o, workload_find(o.workloads[wi]));
    progress_plan(total);
    for (int wi = 0; wi < o.nworkloads; wi++) {
        progress_workload(plan[wi]);
        if (run_workload(&rep, &o, workload_find(o.workloads[wi]), reps, pooled) != 0)
            return 1;
    }
    report_finish(&rep, o.plots);
    free(reps);
    free(pooled);
    if (o.engines_refused) {
        fprintf(stderr, "ptbench: %d --engine refused (said at the start)\n", o.engines_refused);
        return 1;
    }
    if (rep.errors) {
        fprintf(stderr, "ptbench: %d result%s did not add up (said above)\n", rep.errors,
                rep.errors == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
