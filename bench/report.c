/* Medians, the table, JSON lines, CSV and plots. */
#include "report.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef PT_BUILD_TYPE
#define PT_BUILD_TYPE "unknown"
#endif
#ifndef PT_SOURCE_DIR
#define PT_SOURCE_DIR "."
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct stat3 stat3_of(const double *v, int n)
{
    double s[REPORT_MAXREPS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    return (struct stat3){med, s[0], s[n - 1]};
}

static void read_line(const char *cmd, char *out, size_t n)
{
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (fgets(out, (int)n, p))
        out[strcspn(out, "\n")] = 0;
    pclose(p);
}

static void cpu_model(char *out, size_t n)
{
    snprintf(out, n, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                snprintf(out, n, "%s", c + 2);
                out[strcspn(out, "\n")] = 0;
            }
            break;
        }
    fclose(f);
}

int report_open(struct report *r, const char *dir, const char *cmd, const char *baseline,
                long slack_ns)
{
    memset(r, 0, sizeof *r);
    r->dir = dir;
    r->baseline = baseline;
    char commit[64], cpu[256], path[1024];
    read_line("git -C " PT_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null", commit,
              sizeof commit);
    if (!commit[0])
        snprintf(commit, sizeof commit, "unknown");
    char dirty[8];
    read_line("git -C " PT_SOURCE_DIR " status --porcelain --untracked-files=no 2>/dev/null | "
              "head -1",
              dirty, sizeof dirty);
    cpu_model(cpu, sizeof cpu);
    struct utsname u;
    uname(&u);
    snprintf(r->header, sizeof r->header,
             "command:  %s\n"
             "commit:   %s%s\n"
             "machine:  %s, %ld cores, Linux %s\n"
             "build:    %s; timer slack %ld ns on every thread; medians of the repetitions\n"
             "          (our designs' lateness percentiles: all repetitions' samples pooled)\n",
             cmd, commit, dirty[0] ? " (with uncommitted changes)" : "", cpu,
             sysconf(_SC_NPROCESSORS_ONLN), u.release, PT_BUILD_TYPE, slack_ns);
    printf("%s\n", r->header);
    fflush(stdout);
    snprintf(path, sizeof path, "%s/ptbench.jsonl", dir);
    r->jsonl = fopen(path, "w");
    snprintf(path, sizeof path, "%s/ptbench.csv", dir);
    r->csv = fopen(path, "w");
    if (!r->jsonl || !r->csv) {
        fprintf(stderr, "ptbench: cannot write under %s\n", dir);
        return -1;
    }
    fprintf(r->csv, "design,workload,variant,threads,reps,ops_per_s,ops_per_s_min,ops_per_s_max,"
                    "ns_per_op,lat_p50_us,lat_p99_us,lat_p999_us,lat_max_us,wakeups,cpu_s,"
                    "bytes_per_timer,scheduled,fired,cancelled,stale_cancels,expected_ticks\n");
    return 0;
}

static void add_row(struct report *r, const char *design, const char *workload,
                    const char *variant, int threads, size_t timer_bytes, const struct rep *reps,
                    int n, const struct hist *pooled, bool interleaved)
{
    if (n <= 0)
        return;
    if (n > REPORT_MAXREPS)
        n = REPORT_MAXREPS;
    if (r->nrows == r->caprows) {
        r->caprows = r->caprows ? 2 * r->caprows : 64;
        r->rows = realloc(r->rows, (size_t)r->caprows * sizeof *r->rows);
    }
    struct row *w = &r->rows[r->nrows++];
    memset(w, 0, sizeof *w);
    snprintf(w->design, sizeof w->design, "%s", design);
    snprintf(w->workload, sizeof w->workload, "%s", workload);
    snprintf(w->variant, sizeof w->variant, "%s", variant);
    w->threads = threads;
    w->reps = n;
    w->timer_bytes = timer_bytes;
    double v[12][REPORT_MAXREPS];
    for (int i = 0; i < n; i++) {
        const struct rep *p = &reps[i];
        double secs = p->elapsed_ns / 1e9;
        v[0][i] = secs > 0 ? (double)p->ops / secs : 0;
        /* per thread, as the anchors count: each thread's time per op */
        v[1][i] = p->ops ? p->elapsed_ns * threads / (double)p->ops : 0;
        v[2][i] = p->p50 / 1e3;
        v[3][i] = p->p99 / 1e3;
        v[4][i] = p->p999 / 1e3;
        v[5][i] = p->max / 1e3;
        v[6][i] = p->wakeups;
        v[7][i] = p->cpu_s;
        v[8][i] = p->bytes_per_timer;
        v[9][i] = p->create_ns;
        v[10][i] = p->cancel_ns;
    }
    memcpy(w->ns_op_rep, v[1], (size_t)n * sizeof v[1][0]);
    w->interleaved = interleaved;
    w->ops_s = stat3_of(v[0], n);
    w->ns_op = stat3_of(v[1], n);
    w->p50 = stat3_of(v[2], n);
    w->p99 = stat3_of(v[3], n);
    w->p999 = stat3_of(v[4], n);
    w->max = stat3_of(v[5], n);
    if (pooled && atomic_load(&((struct hist *)pooled)->count)) {
        w->p50.median = hist_quantile(pooled, 0.50) / 1e3;
        w->p99.median = hist_quantile(pooled, 0.99) / 1e3;
        w->p999.median = hist_quantile(pooled, 0.999) / 1e3;
        w->max.median = (double)atomic_load(&((struct hist *)pooled)->max) / 1e3;
    }
    w->wakeups = stat3_of(v[6], n);
    w->cpu_s = stat3_of(v[7], n);
    w->bytes = stat3_of(v[8], n);
    w->create_ns = stat3_of(v[9], n);
    w->cancel_ns = stat3_of(v[10], n);
    w->last = reps[n - 1];
    const struct rep *l = &w->last;
    fprintf(r->jsonl,
            "{\"design\":\"%s\",\"workload\":\"%s\",\"variant\":\"%s\",\"threads\":%d,"
            "\"reps\":%d,\"ops_per_s\":%.0f,\"ops_per_s_min\":%.0f,\"ops_per_s_max\":%.0f,"
            "\"ns_per_op\":%.2f,\"lat_p50_us\":%.2f,\"lat_p99_us\":%.2f,\"lat_p999_us\":%.2f,"
            "\"lat_max_us\":%.2f,\"wakeups\":%.0f,\"cpu_s\":%.4f,\"bytes_per_timer\":%.2f,"
            "\"create_ns\":%.2f,\"cancel_ns\":%.2f,\"timer_bytes\":%zu,\"ops\":%llu,"
            "\"scheduled\":%llu,\"fired\":%llu,\"cancelled\":%llu,\"stale_cancels\":%llu,"
            "\"expected_ticks\":%llu}\n",
            w->design, w->workload, w->variant, w->threads, n, w->ops_s.median, w->ops_s.min,
            w->ops_s.max, w->ns_op.median, w->p50.median, w->p99.median, w->p999.median,
            w->max.median, w->wakeups.median, w->cpu_s.median, w->bytes.median,
            w->create_ns.median, w->cancel_ns.median, timer_bytes, (unsigned long long)l->ops,
            (unsigned long long)l->scheduled, (unsigned long long)l->fired,
            (unsigned long long)l->cancelled, (unsigned long long)l->stale_cancels,
            (unsigned long long)l->expected_ticks);
    fprintf(r->csv, "%s,%s,%s,%d,%d,%.0f,%.0f,%.0f,%.2f,%.2f,%.2f,%.2f,%.2f,%.0f,%.4f,%.2f,%llu,"
                    "%llu,%llu,%llu,%llu\n",
            w->design, w->workload, w->variant, w->threads, n, w->ops_s.median, w->ops_s.min,
            w->ops_s.max, w->ns_op.median, w->p50.median, w->p99.median, w->p999.median,
            w->max.median, w->wakeups.median, w->cpu_s.median, w->bytes.median,
            (unsigned long long)l->scheduled, (unsigned long long)l->fired,
            (unsigned long long)l->cancelled, (unsigned long long)l->stale_cancels,
            (unsigned long long)l->expected_ticks);
    fflush(r->jsonl);
    fflush(r->csv);
}

void report_add(struct report *r, const char *design, const char *workload, const char *variant,
                int threads, size_t timer_bytes, const struct rep *reps, int n)
{
    add_row(r, design, workload, variant, threads, timer_bytes, reps, n, NULL, false);
}

void report_add_pooled(struct report *r, const char *design, const char *workload,
                       const char *variant, int threads, size_t timer_bytes,
                       const struct rep *reps, int n, const struct hist *pooled)
{
    add_row(r, design, workload, variant, threads, timer_bytes, reps, n, pooled, true);
}

const double report_quantiles[REPORT_NQ] = {0.01, 0.05, 0.1,  0.2,   0.3,   0.4,
                                            0.5,  0.6,  0.7,  0.8,   0.9,   0.95,
                                            0.97, 0.99, 0.995, 0.999, 0.9995, 0.9999};

void report_distribution(struct report *r, const char *workload, const char *design,
                         int threads, const struct hist *h)
{
    double us[REPORT_NQ];
    for (int i = 0; i < REPORT_NQ; i++)
        us[i] = hist_quantile(h, report_quantiles[i]) / 1e3;
    report_distribution_values(r, workload, design, threads, us);
}

void report_distribution_values(struct report *r, const char *workload, const char *design,
                                int threads, const double *us)
{
    /* One plot entry per (workload, design, threads): written again, the
     * file is replaced and the entry stays. */
    bool known = false;
    for (int i = 0; i < r->ndists && !known; i++)
        known = !strcmp(r->dists[i].design, design) && !strcmp(r->dists[i].workload, workload) &&
                r->dists[i].threads == threads;
    if (!known) {
        if (r->ndists == r->capdists) {
            int cap = r->capdists ? 2 * r->capdists : 32;
            struct dist *d = realloc(r->dists, (size_t)cap * sizeof *d);
            if (!d)
                return;
            r->dists = d;
            r->capdists = cap;
        }
        struct dist *d = &r->dists[r->ndists++];
        snprintf(d->design, sizeof d->design, "%s", design);
        snprintf(d->workload, sizeof d->workload, "%s", workload);
        d->threads = threads;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/lateness-%s-%s-t%d.dat", r->dir, workload, design, threads);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "# quantile lateness_us (%s, %s, %d threads)\n", design, workload, threads);
    for (int i = 0; i < REPORT_NQ; i++)
        fprintf(f, "%g %.3f\n", report_quantiles[i], us[i]);
    fclose(f);
}

static const struct row *find_row(const struct report *r, const char *design, const struct row *like)
{
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        if (strcmp(w->design, design) == 0 && strcmp(w->workload, like->workload) == 0 &&
            strcmp(w->variant, like->variant) == 0 && w->threads == like->threads)
            return w;
    }
    return NULL;
}

static bool lateness_workload(const char *wl)
{
    return strncmp(wl, "latency", 7) == 0 || strcmp(wl, "ticker") == 0;
}

/* Under a latency group: every design's p99 over the kernel floor's (a
 * futex wait with the same deadline), per thread count. */
static void kernel_footer(const struct report *r, FILE *f, const char *wl, const char *var)
{
    bool any = false;
    for (int i = 0; i < r->nrows; i++) {
        const struct row *k = &r->rows[i];
        if (strcmp(k->design, "kernel") || strcmp(k->workload, wl) || strcmp(k->variant, var))
            continue;
        fprintf(f, "%s threads %d: p99 over the kernel floor's (%.1f us):", any ? "\n" : "",
                k->threads, k->p99.median);
        any = true;
        for (int j = 0; j < r->nrows; j++) {
            const struct row *w = &r->rows[j];
            if (strcmp(w->workload, wl) || strcmp(w->variant, var) || w->threads != k->threads ||
                !strcmp(w->design, "kernel") || k->p99.median <= 0)
                continue;
            fprintf(f, " %s %.2f", w->design, w->p99.median / k->p99.median);
        }
    }
    if (any)
        fprintf(f, "\n");
}

/* Under a throughput group: every design's ns/op over floor's, as the
 * median of per-repetition ratios. Repetitions go round the designs, so
 * repetition i of each ran within a second or two of floor's: this
 * shared machine's slow spells (a third off for seconds at a time) land
 * on both sides of most ratios, where they would decide a ratio of two
 * medians taken minutes apart. */
static void floor_footer(const struct report *r, FILE *f, const char *wl, const char *var)
{
    for (int i = 0; i < r->nrows; i++) {
        const struct row *fl = &r->rows[i];
        if (strcmp(fl->design, "floor") || strcmp(fl->workload, wl) || strcmp(fl->variant, var) ||
            !fl->interleaved)
            continue;
        bool header = false;
        for (int j = 0; j < r->nrows; j++) {
            const struct row *w = &r->rows[j];
            if (strcmp(w->workload, wl) || strcmp(w->variant, var) || w->threads != fl->threads ||
                w == fl || !w->interleaved || w->reps != fl->reps)
                continue;
            double q[REPORT_MAXREPS];
            int n = 0;
            for (int k = 0; k < w->reps; k++)
                if (fl->ns_op_rep[k] > 0 && w->ns_op_rep[k] > 0)
                    q[n++] = w->ns_op_rep[k] / fl->ns_op_rep[k];
            if (!n)
                continue;
            if (!header)
                fprintf(f, " threads %d: ns/op over floor's, paired by repetition"
                           " (median [min - max]):\n",
                        fl->threads);
            header = true;
            struct stat3 s = stat3_of(q, n);
            fprintf(f, "   %-12s %.2f [%.2f - %.2f]\n", w->design, s.median, s.min, s.max);
        }
    }
}

/* kernel_footer prints only where a group has kernel rows (latency,
 * netpoll); floor_footer only where it has floor rows. */
static void group_footer(const struct report *r, FILE *f, const char *wl, const char *var)
{
    kernel_footer(r, f, wl, var);
    if (!lateness_workload(wl) && strcmp(wl, "memory") != 0)
        floor_footer(r, f, wl, var);
}

static void print_table(const struct report *r, FILE *f)
{
    const char *last_wl = "", *last_var = "";
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        bool lat = lateness_workload(w->workload);
        bool mem = strcmp(w->workload, "memory") == 0;
        if (strcmp(w->workload, last_wl) != 0 || strcmp(w->variant, last_var) != 0) {
            if (*last_wl)
                group_footer(r, f, last_wl, last_var);
            fprintf(f, "\n== %s %s\n", w->workload, w->variant);
            if (mem)
                fprintf(f, "%-12s %3s %12s %12s %12s %12s\n", "design", "thr", "bytes/timer",
                        "(own struct)", "create ns", "cancel ns");
            else
                fprintf(f, "%-12s %3s %11s %19s %8s %8s %8s %8s %9s %8s %6s %9s\n", "design",
                        "thr", "ops/s", "[min - max]", "ns/op", "p50 us", "p99 us", "p999 us",
                        "max us", "wakeups", "cpu s",
                        lat ? "p99/base" : "x base");
            last_wl = w->workload;
            last_var = w->variant;
        }
        if (mem) {
            fprintf(f, "%-12s %3d %12.1f %12zu %12.1f %12.1f\n", w->design, w->threads,
                    w->bytes.median, w->timer_bytes, w->create_ns.median, w->cancel_ns.median);
            continue;
        }
        const struct row *b = find_row(r, r->baseline, w);
        char ratio[16] = "-";
        if (b && lat && b->p99.median > 0)
            snprintf(ratio, sizeof ratio, "%.2f", w->p99.median / b->p99.median);
        else if (b && !lat && b->ops_s.median > 0)
            snprintf(ratio, sizeof ratio, "%.2f", w->ops_s.median / b->ops_s.median);
        char range[40];
        snprintf(range, sizeof range, "[%.3g - %.3g]", w->ops_s.min, w->ops_s.max);
        fprintf(f, "%-12s %3d %11.4g %19s %8.1f %8.1f %8.1f %8.1f %9.1f %8.0f %6.2f %9s\n",
                w->design, w->threads, w->ops_s.median, range, w->ns_op.median, w->p50.median,
                w->p99.median, w->p999.median, w->max.median, w->wakeups.median,
                w->cpu_s.median, ratio);
        if (strcmp(w->workload, "ticker") == 0 && w->last.expected_ticks)
            fprintf(f, "%16s ticks delivered: %.1f%% of %llu due\n", "",
                    100.0 * (double)w->last.fired / (double)w->last.expected_ticks,
                    (unsigned long long)w->last.expected_ticks);
    }
    if (*last_wl)
        group_footer(r, f, last_wl, last_var);
    fprintf(f, "\nns/op is per thread (wall time x threads / ops); an op is an arm plus its\n"
               "cancel where both happen. x base: ops/s over %s's; p99/base: p99 lateness over\n"
               "%s's (lower is better).\n",
            r->baseline, r->baseline);
}

/* gnuplot: throughput against threads per workload, lateness quantiles. */
static void plots(const struct report *r)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("plots: skipped (gnuplot not installed)\n");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/plots.gp", r->dir);
    FILE *g = fopen(path, "w");
    if (!g)
        return;
    const char *done[64];
    int ndone = 0;
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        if (lateness_workload(w->workload) || strcmp(w->workload, "memory") == 0)
            continue;
        bool seen = false;
        for (int k = 0; k < ndone; k++)
            seen |= strcmp(done[k], w->workload) == 0;
        if (seen || ndone == 64)
            continue;
        done[ndone++] = w->workload;
        /* one data block per design: threads, ops/s per thread */
        char dat[1024];
        snprintf(dat, sizeof dat, "%s/throughput-%s.dat", r->dir, w->workload);
        FILE *d = fopen(dat, "w");
        if (!d)
            continue;
        const char *designs[32];
        int nd = 0;
        for (int j = 0; j < r->nrows; j++) {
            const struct row *x = &r->rows[j];
            if (strcmp(x->workload, w->workload) != 0)
                continue;
            bool have = false;
            for (int k = 0; k < nd; k++)
                have |= strcmp(designs[k], x->design) == 0;
            if (!have && nd < 32)
                designs[nd++] = x->design;
        }
        for (int k = 0; k < nd; k++) {
            fprintf(d, "\"%s\"\n", designs[k]);
            for (int j = 0; j < r->nrows; j++) {
                const struct row *x = &r->rows[j];
                if (strcmp(x->workload, w->workload) == 0 && strcmp(x->design, designs[k]) == 0)
                    fprintf(d, "%d %.0f %.0f %.0f\n", x->threads, x->ops_s.median / x->threads,
                            x->ops_s.min / x->threads, x->ops_s.max / x->threads);
            }
            fprintf(d, "\n\n");
        }
        fclose(d);
        for (int t = 0; t < 2; t++) {
            fprintf(g, "set terminal %s size 800,500\n", t ? "svg" : "png");
            fprintf(g, "set output '%s/throughput-%s.%s'\n", r->dir, w->workload,
                    t ? "svg" : "png");
            fprintf(g, "set title 'ptbench %s: ops/s per thread (median, min-max)'\n",
                    w->workload);
            fprintf(g, "set xlabel 'threads'; set ylabel 'ops/s per thread'; set key outside; "
                       "set logscale x 2; set grid\n");
            fprintf(g, "plot for [i=0:%d] '%s' index i using 1:2:3:4 with yerrorlines "
                       "title columnheader(1)\n",
                    nd - 1, dat);
        }
    }
    /* lateness: one plot per (workload, threads), every design and peer
     * that wrote a distribution for it */
    for (int i = 0; i < r->ndists; i++) {
        const struct dist *first = &r->dists[i];
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(r->dists[j].workload, first->workload) &&
                   r->dists[j].threads == first->threads;
        if (seen)
            continue;
        for (int t = 0; t < 2; t++) {
            fprintf(g, "set terminal %s size 900,550\n", t ? "svg" : "png");
            fprintf(g, "set output '%s/lateness-%s-t%d.%s'\n", r->dir, first->workload,
                    first->threads, t ? "svg" : "png");
            fprintf(g, "unset logscale; set logscale x 10; set grid; set key outside\n");
            fprintf(g, "set title 'ptbench: firing lateness, %s, %d thread%s'\n", first->workload,
                    first->threads, first->threads == 1 ? "" : "s");
            fprintf(g, "set xlabel 'lateness (us)'; set ylabel 'quantile'\n");
            fprintf(g, "plot ");
            int k = 0;
            for (int j = i; j < r->ndists; j++) {
                const struct dist *d = &r->dists[j];
                if (strcmp(d->workload, first->workload) || d->threads != first->threads)
                    continue;
                fprintf(g, "%s'%s/lateness-%s-%s-t%d.dat' using 2:1 with linespoints title '%s'",
                        k++ ? ", " : "", r->dir, d->workload, d->design, d->threads, d->design);
            }
            fprintf(g, "\n");
        }
    }
    fclose(g);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "gnuplot %s/plots.gp 2>%s/plots.log", r->dir, r->dir);
    if (system(cmd) == 0)
        printf("plots: %s/*.png and *.svg (script %s/plots.gp)\n", r->dir, r->dir);
    else
        printf("plots: gnuplot failed, see %s/plots.log\n", r->dir);
}

void report_finish(struct report *r, bool want_plots)
{
    print_table(r, stdout);
    char path[1024];
    snprintf(path, sizeof path, "%s/table.txt", r->dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s", r->header);
        print_table(r, f);
        fclose(f);
    }
    printf("\nresults: %s/table.txt, %s/ptbench.jsonl, %s/ptbench.csv\n", r->dir, r->dir,
           r->dir);
    if (want_plots)
        plots(r);
    fclose(r->jsonl);
    fclose(r->csv);
    free(r->rows);
    free(r->dists);
}
