/* A table per workload (and variant), after the verdict: every row's
 * figures, with only the columns that the workload measures. */
#include <string.h>

#include "model.h"
#include "outputs.h"

static bool is_peer(const struct row *w)
{
    return w->origin & ROW_PEER;
}

static void header(const struct report *r, FILE *f, const struct row *g, bool base)
{
    fprintf(f, "%-12s %4s", "design", "thr");
    switch (g->kind) {
    case WL_THROUGHPUT:
        fprintf(f, " %10s %21s %9s %8s", "ns/op/thr", "[min - max]", "Mops/s", "RSS MiB");
        break;
    case WL_TICKER:
        fprintf(f, " %9s", "delivered");
        break;
    case WL_SLACK:
        fprintf(f, " %9s %21s %8s %6s %6s %9s", "wake/s", "[min - max]", "cb/wake", "cpu/s", "early",
                "delivered");
        break;
    case WL_BURST: /* per G: started until all are, then run to the end */
        fprintf(f, " %10s %21s %10s %10s %8s %6s", "ns/G", "[min - max]", "spawn ns", "run ns", "Gs",
                "cpu s");
        break;
    case WL_MEMORY:
        if (g->in_sched) /* per G: spawned until parked, released until finished */
            fprintf(f, " %8s %10s %10s %8s", "B/G", "spawn ns", "release ns", "Gs");
        else
            fprintf(f, " %8s %6s %10s %10s", "B/timer", "own B", "create ns", "cancel ns");
        break;
    case WL_IDLE:
        fprintf(f, " %8s %7s %7s %9s %7s %8s", "B/conn", "closed", "errors", "load r/s",
                "srv cpu", "RSS MiB");
        break;
    case WL_HTTP: /* the server's CPU and memory; the client's CPU */
        fprintf(f, " %10s %21s %9s %7s %7s %7s %8s", "ns/req", "[min - max]", "req/s", "errors",
                "srv cpu", "cli cpu", "RSS MiB");
        break;
    case WL_LATENCY:
    case WL_NETPOLL:
        break;
    }
    if (g->fires)
        fprintf(f, " %8s %8s %8s %9s", "p50 us", "p99 us", "p999 us", "max us");
    if (g->kind != WL_MEMORY && g->kind != WL_BURST && g->kind != WL_HTTP && g->kind != WL_IDLE &&
        g->kind != WL_SLACK)
        fprintf(f, " %8s %6s %5s", "wakeups", "cpu s", "sys%");
    if (base) {
        char title[32];
        snprintf(title, sizeof title, "/%s", r->baseline);
        fprintf(f, " %12s", title);
    }
    fprintf(f, "\n");
}

static void line(const struct report *r, FILE *f, const struct row *w, bool base)
{
    char thr[16];
    snprintf(thr, sizeof thr, "%d%s", w->threads, w->threads > r->cores ? "*" : "");
    fprintf(f, "%-12s %4s", w->design, thr);
    switch (w->kind) {
    case WL_THROUGHPUT: {
        /* One format for the median and its range: rounding then keeps
         * min <= median <= max, which %.4g against %.3g did not. */
        char range[48];
        snprintf(range, sizeof range, "[%.1f - %.1f]", w->ns_op.min, w->ns_op.max);
        char rss[24] = "-"; /* a peer that does not say */
        if (w->rss > 0)
            snprintf(rss, sizeof rss, "%.1f", w->rss / (1024.0 * 1024.0));
        fprintf(f, " %10.1f %21s %9.3f %8s", w->ns_op.median, range, w->ops_s.median / 1e6, rss);
        break;
    }
    case WL_BURST: {
        char range[48];
        snprintf(range, sizeof range, "[%.1f - %.1f]", w->ns_op.min, w->ns_op.max);
        fprintf(f, " %10.1f %21s %10.1f %10.1f %8llu %6.2f", w->ns_op.median, range, w->create_ns,
                w->cancel_ns, (unsigned long long)w->last.gs_started, w->cpu_s);
        break;
    }
    case WL_TICKER:
    case WL_SLACK: {
        double d = ticks_delivered(w);
        char share[16] = "-";
        if (d >= 0)
            snprintf(share, sizeof share, "%.1f%%", 100 * d);
        if (w->kind == WL_SLACK) {
            char range[48];
            snprintf(range, sizeof range, "[%.0f - %.0f]", w->lo, w->hi);
            fprintf(f, " %9.0f %21s %8.1f %6.3f %6llu", w->wakeups_s, range, w->fired_per_wakeup,
                    w->cpu_per_s, (unsigned long long)w->last.early_wakes);
        }
        fprintf(f, " %9s", share);
        break;
    }
    case WL_MEMORY: {
        if (w->in_sched) { /* the Gs parked: fewer than asked if pt_go failed */
            fprintf(f, " %8.1f %10.1f %10.1f %8llu", w->bytes, w->create_ns, w->cancel_ns,
                    (unsigned long long)w->last.gs_started);
            break;
        }
        char own[24] = "-";
        if (w->timer_bytes)
            snprintf(own, sizeof own, "%zu", w->timer_bytes);
        fprintf(f, " %8.1f %6s %10.1f %10.1f", w->bytes, own, w->create_ns, w->cancel_ns);
        break;
    }
    case WL_IDLE:
        fprintf(f, " %8.0f %7llu %7.0f %9.0f %7.2f %8.1f", w->bytes,
                (unsigned long long)w->last.ops, w->errors, w->load_rps, w->cpu_s,
                w->rss / (1024.0 * 1024.0));
        break;
    case WL_HTTP: {
        char range[48];
        snprintf(range, sizeof range, "[%.1f - %.1f]", w->ns_op.min, w->ns_op.max);
        fprintf(f, " %10.1f %21s %9.0f %7.0f %7.2f %7.2f %8.1f", w->ns_op.median, range,
                w->ops_s.median, w->errors, w->cpu_s, w->client_cpu, w->rss / (1024.0 * 1024.0));
        break;
    }
    case WL_LATENCY:
    case WL_NETPOLL:
        break;
    }
    if (w->fires)
        fprintf(f, " %8.1f %8.1f %8.1f %9.1f", w->p50, w->p99, w->p999, w->max);
    if (w->kind != WL_MEMORY && w->kind != WL_BURST && w->kind != WL_HTTP &&
        w->kind != WL_IDLE && w->kind != WL_SLACK) {
        char wake[24] = "-"; /* peers do not count theirs */
        if (!is_peer(w))
            snprintf(wake, sizeof wake, "%.0f", w->wakeups);
        char sys[16] = "-"; /* a peer that does not report it */
        if (w->cpu_s > 0 && w->sys_s > 0)
            snprintf(sys, sizeof sys, "%.0f", 100 * w->sys_s / w->cpu_s);
        fprintf(f, " %8s %6.2f %5s", wake, w->cpu_s, sys);
    }
    if (base) {
        const struct row *b = report_find(r, r->baseline, w);
        char ratio[16] = "-";
        if (b && metric_value(b) > 0 && metric_value(w) > 0)
            ratio_format(ratio, sizeof ratio, metric_value(w) / metric_value(b));
        fprintf(f, " %12s", ratio);
    }
    fprintf(f, "\n");
}

/* Under a latency or netpoll table: every design's p99 over the kernel
 * floor's (a futex wait with the same deadline), per thread count; in the
 * scheduler, the p50 too (a lone sleeper's typical wake is the figure
 * there, beside its tail). */
static void kernel_footer(const struct report *r, FILE *f, const struct row *g)
{
    bool any = false;
    for (int i = 0; i < r->nrows; i++) {
        const struct row *k = &r->rows[i];
        /* the kernel's row, not any reference: floor is one in latency too */
        if (!(k->origin & ROW_REFERENCE) || strcmp(k->design, "kernel") || !row_same_group(k, g))
            continue;
        if (k->in_sched)
            fprintf(f, "%s threads %d: p50 / p99 over the kernel floor's (%.1f / %.1f us):",
                    any ? "\n" : "", k->threads, k->p50, k->p99);
        else
            fprintf(f, "%s threads %d: p99 over the kernel floor's (%.1f us):", any ? "\n" : "",
                    k->threads, k->p99);
        any = true;
        for (int j = 0; j < r->nrows; j++) {
            const struct row *w = &r->rows[j];
            if (!row_same_cell(w, k) || w == k || k->p99 <= 0)
                continue;
            if (k->in_sched && k->p50 > 0)
                fprintf(f, " %s %.2f / %.2f", w->design, w->p50 / k->p50, w->p99 / k->p99);
            else
                fprintf(f, " %s %.2f", w->design, w->p99 / k->p99);
        }
    }
    if (any)
        fprintf(f, "\n");
}

/* Under a throughput table: every design's ns/op over floor's, as the
 * median of per-repetition ratios. Repetitions go round the designs, so
 * repetition i of each ran within a second or two of floor's: this
 * shared machine's slow spells (a third off for seconds at a time) land
 * on both sides of most ratios, where they would decide a ratio of two
 * medians taken minutes apart. */
static void floor_footer(const struct report *r, FILE *f, const struct row *g)
{
    for (int i = 0; i < r->nrows; i++) {
        const struct row *fl = &r->rows[i];
        if (strcmp(fl->design, "floor") || !row_same_group(fl, g) ||
            !(fl->origin & ROW_INTERLEAVED))
            continue;
        bool said = false;
        for (int j = 0; j < r->nrows; j++) {
            const struct row *w = &r->rows[j];
            if (!row_same_cell(w, fl) || w == fl || !(w->origin & ROW_INTERLEAVED) ||
                w->reps != fl->reps)
                continue;
            double q[REPORT_MAXREPS];
            int n = 0;
            for (int k = 0; k < w->reps; k++)
                if (fl->ns_op_rep[k] > 0 && w->ns_op_rep[k] > 0)
                    q[n++] = w->ns_op_rep[k] / fl->ns_op_rep[k];
            if (!n)
                continue;
            if (!said)
                fprintf(f,
                        " threads %d: ns/op/thr over floor's, paired by repetition"
                        " (median [min - max]):\n",
                        fl->threads);
            said = true;
            struct stat3 s = stat3_of(q, n);
            fprintf(f, "   %-12s %.2f [%.2f - %.2f]\n", w->design, s.median, s.min, s.max);
        }
    }
}

/* Under a table of Gs' stacks (memory-g, spawn-burst): each design's
 * figure over each runtime peer's (Go's goroutines, tokio's tasks) in the
 * same run, the ratio the stack work is judged by. The peers' rows are
 * their medians, not paired. */
static void peer_footer(const struct report *r, FILE *f, const struct row *g)
{
    static const char *const runtimes[] = {"go1.19", "tokio"};
    for (size_t k = 0; k < sizeof runtimes / sizeof *runtimes; k++)
        for (int i = 0; i < r->nrows; i++) {
            const struct row *pr = &r->rows[i];
            if (strcmp(pr->design, runtimes[k]) || !row_same_group(pr, g) || metric_value(pr) <= 0)
                continue;
            fprintf(f, " threads %d: %s over %s's (%.1f):", pr->threads,
                    metric_name(pr->kind, true), pr->design, metric_value(pr));
            for (int j = 0; j < r->nrows; j++) {
                const struct row *w = &r->rows[j];
                if (row_same_cell(w, pr) && w != pr && metric_value(w) > 0)
                    fprintf(f, " %s %.2f", w->design, metric_value(w) / metric_value(pr));
            }
            fprintf(f, "\n");
        }
}

static void legend(const struct report *r, FILE *f)
{
    fprintf(f,
            "\nColumns:\n"
            "  ns/op/thr  wall time x threads / ops: each thread's time per op; an op is an\n"
            "             arm plus its cancel where both happen. [min - max] over repetitions\n"
            "  Mops/s     all threads' ops per second\n"
            "  RSS MiB    the process's resident anonymous memory at the end of the\n"
            "             measured phase, before any timer is disposed of (median; the\n"
            "             JSON's rss_bytes, and rss_growth_bytes over the run). One\n"
            "             process runs every design in turn, and an allocator keeps\n"
            "             what an earlier run freed: for one design's own figure, run\n"
            "             it alone (-d). Peers: their own process's. -: not reported\n"
            "  p50 .. max lateness, fire time - deadline (tables of workloads whose timers\n"
            "             fire); ours pooled over repetitions, the peers' their medians\n"
            "  delivered  ticks delivered by the end of each run over the ticks due by\n"
            "             then, all repetitions together\n"
            "  wakeups    times the side that fires timers woke from a sleep in the measured\n"
            "             phase, all threads: the workers' idle for pheap, pheap-sync, floor\n"
            "             and kernel; the timer thread for timerthread and globalheap; a\n"
            "             returned wait for netpoll. -: not counted (peers)\n"
            "  cpu s      the process's CPU time (user + system, every thread) in the\n"
            "             measured phase: against wall time x threads, how busy it kept\n"
            "             the machine, timer and firing threads included\n"
            "  sys%%       the share of cpu s spent in the kernel (system calls, wake-ups):\n"
            "             the rest is the timer design and the scheduler, in user space\n"
            "  B/timer    resident bytes per pending timer, measured in a fresh process\n"
            "  own B      the design's own structures per pending timer, by its layout\n"
            "  /%-9s the row's figure (ns/op/thr, p99 us of lateness or B/timer, by\n"
            "             workload) over %s's (-b): lower is better\n"
            "  thr*       more threads than the %d cores\n",
            r->baseline, r->baseline, r->cores);
    bool sched = false;
    for (int i = 0; i < r->nrows; i++)
        sched |= r->rows[i].in_sched;
    if (sched)
        fprintf(f, "In the scheduler's tables (sched-perp, sched-lheap, sched-tt, go1.19's\n"
                   "goroutines, tokio's tasks):\n"
                   "  ns/op/thr  wall time x Ps / ops: an op is a G spawned and finished, a\n"
                   "             round trip, a sleep and its wake, a request or a\n"
                   "             connection answered\n"
                   "  p50 .. max how late a sleeping G runs again: wake time - deadline;\n"
                   "             rpc-sched: a request's round trip; conn-churn: connect to\n"
                   "             answer\n"
                   "  wakeups    times an idle M went to sleep (parked or in the netpoller)\n"
                   "  B/G        resident bytes per parked G, measured in a fresh process;\n"
                   "             spawn ns and release ns per G; Gs: how many were parked\n"
                   "  ns/G       spawn-burst: wall time from the first G started to the last\n"
                   "             finished, over the Gs (none finishes before all are started),\n"
                   "             in a fresh process; spawn ns and run ns split it there;\n"
                   "             cpu s: the process's CPU time meanwhile, every thread (ours: the\n"
                   "             monitor's preparing of stacks on an idle core included)\n"
                   "  vtime-hour an hour of virtual time (the scheduler's virtual clock):\n"
                   "             ns/op/thr is wall time / events (ticks and wakes), however\n"
                   "             many Ps: the hour's wall time is that times 3,610,000; p50 ..\n"
                   "             max on the virtual clock, where anything but 0 is a bug\n"
                   "  N=, guard= memory-g and spawn-burst rows: the Gs, and the stack guard\n"
                   "             (auto: guard regions where the kernel has them; pages: what a\n"
                   "             kernel before 6.13 gets, guard pages within the map budget,\n"
                   "             then canaries)\n");
    bool slack = false;
    for (int i = 0; i < r->nrows; i++)
        slack |= r->rows[i].kind == WL_SLACK;
    if (slack)
        fprintf(f, "In the slack tables (slack=: every timer's window, in %% of the 100 ms period;\n"
                   "kernel-slack: a thread per timer with PR_SET_TIMERSLACK at that window; go1.19\n"
                   "and tokio run at slack 0 only, having no way to be told a window):\n"
                   "  wake/s     every thread's voluntary context switches (getrusage's nvcsw)\n"
                   "             per second of the measured phase: each a thread that slept\n"
                   "             and was woken, whoever's; [min - max] over repetitions\n"
                   "  cb/wake    timers run per wake-up (median of repetitions)\n"
                   "  cpu/s      the process's CPU seconds per second of the measured phase\n"
                   "  early      firings before their time (last repetition): any fails the run\n"
                   "  p50 .. max lateness past each timer's window: fire - (deadline + slack),\n"
                   "             0 anywhere inside it\n");
    bool http = false;
    for (int i = 0; i < r->nrows; i++)
        http |= r->rows[i].kind == WL_HTTP || r->rows[i].kind == WL_IDLE;
    if (http)
        fprintf(f, "In the http tables (a server process each, fresh every repetition, wrk -t1 on\n"
                   "the same cores; c= wrk's connections, thr the server's Ps, GOMAXPROCS or\n"
                   "nginx's workers):\n"
                   "  ns/req     wrk's wall time / requests answered; req/s its inverse\n"
                   "  errors     wrk's connect, read, write, timeout and non-2xx errors\n"
                   "  srv cpu    the server's CPU seconds over the load (every process of it)\n"
                   "  cli cpu    wrk's own CPU seconds: on 2 cores, what the server did not get\n"
                   "  RSS MiB    the server's resident memory less shared pages, at the end\n"
                   "  p50 .. max a request's latency as wrk measured it (its histogram)\n"
                   "  sched-perp, sched-lheap, sched-tt: examples/httpd.c on the scheduler,\n"
                   "             timers per P (Go 1.14's or 1.23's design) or on the\n"
                   "             TimerThread; sched-uring: sched-perp with reads and writes\n"
                   "             on each P's io_uring (PT_FD_IO_URING); go1.19: raw net.Conn with "
                   "SetReadDeadline per\n"
                   "             request; go1.19-http: net/http, same timeouts; tokio: a task per\n"
                   "             connection, timeout() around each read (bench/peers/tokio-http);\n"
                   "             nginx: return 200\n"
                   "  http-idle, idle=N: N connections, one request each, then idle until the\n"
                   "             server closes them (--idle-ms) while wrk -c100 loads it;\n"
                   "             p50 .. max: close - (answer + idle timeout); B/conn: the\n"
                   "             server's growth over N; closed: of N (last repetition);\n"
                   "             errors: early closes, connections never closed or never made\n");
}

static bool first_of_group(const struct report *r, int i)
{
    for (int j = 0; j < i; j++)
        if (row_same_group(&r->rows[j], &r->rows[i]))
            return false;
    return true;
}

/* Under an http table: per P count, sched-perp's requests per second
 * over each other server's, and its p99 over theirs (in one run, the
 * servers' repetitions alternated). */
static void http_footer(const struct report *r, FILE *f, const struct row *g)
{
    bool any = false;
    for (int i = 0; i < r->nrows; i++) {
        const struct row *k = &r->rows[i];
        if (!row_same_group(k, g) || strcmp(k->design, "sched-perp") != 0 || k->ops_s.median <= 0)
            continue;
        fprintf(f, "%s threads %d: sched-perp's req/s / p99 over:", any ? "\n" : "", k->threads);
        any = true;
        for (int j = 0; j < r->nrows; j++) {
            const struct row *w = &r->rows[j];
            if (!row_same_cell(w, k) || w == k || w->ops_s.median <= 0 || w->p99 <= 0)
                continue;
            fprintf(f, " %s %.2f / %.2f", w->design, k->ops_s.median / w->ops_s.median,
                    k->p99 / w->p99);
        }
    }
    if (any)
        fprintf(f, "\n");
}

void tables_print(const struct report *r, FILE *f)
{
    for (int i = 0; i < r->nrows; i++) {
        const struct row *g = &r->rows[i];
        if (!first_of_group(r, i))
            continue;
        bool base = false;
        for (int j = i; j < r->nrows && !base; j++)
            base = row_same_group(&r->rows[j], g) && !strcmp(r->rows[j].design, r->baseline);
        char name[48];
        group_name(g, name, sizeof name);
        fprintf(f, "\n== %s\n", name);
        header(r, f, g, base);
        for (int j = i; j < r->nrows; j++)
            if (row_same_group(&r->rows[j], g))
                line(r, f, &r->rows[j], base);
        if (g->kind == WL_THROUGHPUT)
            floor_footer(r, f, g);
        if (g->kind == WL_LATENCY || g->kind == WL_NETPOLL)
            kernel_footer(r, f, g);
        if (g->in_sched && (g->kind == WL_MEMORY || g->kind == WL_BURST))
            peer_footer(r, f, g);
        if (g->kind == WL_HTTP)
            http_footer(r, f, g);
    }
    legend(r, f);
}
