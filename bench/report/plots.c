/* gnuplot plots, one per workload (lateness: per workload, variant and
 * thread count), PNG and SVG. A design has one colour in every plot. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "outputs.h"

static const struct {
    const char *design, *colour;
} colours[] = {
    {"pheap", "#1f77b4"},       {"pheap-sync", "#17becf"},  {"pheap-staged", "#aec7e8"},
    {"floor", "#2ca02c"},       {"timerthread", "#d62728"}, {"globalheap", "#ff7f0e"},
    {"kernel", "#000000"},      {"go1.19", "#9467bd"},      {"libuv", "#8c564b"},
    {"np-epoll", "#e377c2"},    {"np-timerfd", "#bcbd22"},  {"np-uring", "#7f7f7f"},
    {"sched-perp", "#1f77b4"},  {"sched-tt", "#d62728"},    {"pwheel", "#e7ba52"},
    {"tokio", "#ff9896"},       {"tokio-warm", "#c49c94"},  {"lheap", "#98df8a"},
    {"sched-lheap", "#98df8a"}, {"sched-uring", "#2ca02c"},   {"kernel-slack", "#000000"},
};

static const char *colour_of(const char *design)
{
    static const char *const spare[] = {"#393b79", "#637939", "#8c6d31", "#843c39"};
    size_t n = sizeof colours / sizeof colours[0];
    for (size_t i = 0; i < n; i++)
        if (strcmp(colours[i].design, design) == 0)
            return colours[i].colour;
    /* A design added later: a colour of its own for as long as its name
     * hashes apart from the others'. */
    unsigned h = 0;
    for (const char *c = design; *c; c++)
        h = h * 31 + (unsigned char)*c;
    return spare[h % (sizeof spare / sizeof spare[0])];
}

/* The kernel's floor and its slack are references: dashed. */
static const char *dash_of(const char *design)
{
    return strncmp(design, "kernel", 6) == 0 ? "dt 2" : "dt 1";
}

static void terminal(FILE *g, const struct report *r, const char *name, int t)
{
    /* reset: no label or shading carried over from the previous plot.
     * pngcairo where there is one: gd's png draws no dashes. */
    fprintf(g, "reset\n");
    if (t)
        fprintf(g, "set terminal svg size 900,550\n");
    else
        fprintf(g,
                "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) "
                "{ set terminal pngcairo size 900,550 } else { set terminal png size 900,550 }\n");
    fprintf(g, "set output '%s/%s.%s'\n", r->dir, name, t ? "svg" : "png");
}

/* Thread counts as x tics, an oversubscribed one (more threads than
 * cores) starred and shaded: there the OS scheduler shares the cores. */
static void thread_axis(FILE *g, const struct report *r, const struct row *like)
{
    int seen[64], n = 0, most = 0;
    for (int i = 0; i < r->nrows && n < 64; i++) {
        const struct row *w = &r->rows[i];
        bool have = false;
        for (int k = 0; k < n; k++)
            have |= seen[k] == w->threads;
        if (row_same_group(w, like) && !have)
            seen[n++] = w->threads;
    }
    fprintf(g, "set xtics (");
    for (int k = 0; k < n; k++) {
        fprintf(g, "%s\"%d%s\" %d", k ? ", " : "", seen[k], seen[k] > r->cores ? "*" : "", seen[k]);
        most = seen[k] > most ? seen[k] : most;
    }
    fprintf(g, ")\n");
    fprintf(g, "set xrange [0.8:%g]\n", most * 1.25);
    if (most > r->cores) {
        fprintf(g,
                "set object 1 rect from %g, graph 0 to graph 1, graph 1 behind "
                "fillcolor rgb '#eeeeee' fillstyle solid noborder\n",
                r->cores + 0.5);
        fprintf(g, "set label 1 'threads > %d cores' at %g, graph 0.95 left\n", r->cores,
                r->cores + 0.6);
    }
}

/* Adds name to the list unless it holds it already (at most cap). */
static void add_name(const char **list, int *n, int cap, const char *name)
{
    for (int k = 0; k < *n; k++)
        if (strcmp(list[k], name) == 0)
            return;
    if (*n < cap)
        list[(*n)++] = name;
}

/* A line per design, each an index of dat: x, median, min, max. */
static void plot_ranges(FILE *g, const char *dat, const char *const *designs, int nd)
{
    fprintf(g, "plot ");
    for (int k = 0; k < nd; k++)
        fprintf(g,
                "%s'%s' index %d using 1:2:3:4 with yerrorlines lc rgb '%s' lw 2 %s "
                "title '%s'",
                k ? ", " : "", dat, k, colour_of(designs[k]), dash_of(designs[k]), designs[k]);
    fprintf(g, "\n");
}

/* The data file r->dir/name.dat, its path in dat; NULL if it cannot be
 * made (the plot is then left out). */
static FILE *open_dat(const struct report *r, const char *name, char *dat, size_t n)
{
    snprintf(dat, n, "%s/%s.dat", r->dir, name);
    return fopen(dat, "w");
}

/* Throughput: ns/op per thread (the figure rows are judged by) against threads,
 * the median with its range over repetitions. */
static void throughput_plot(FILE *g, const struct report *r, const struct row *like)
{
    char dat[1024], name[128];
    snprintf(name, sizeof name, "throughput-%s", like->workload);
    FILE *d = open_dat(r, name, dat, sizeof dat);
    if (!d)
        return;
    const char *designs[32];
    int nd = 0;
    for (int j = 0; j < r->nrows; j++)
        if (row_same_group(&r->rows[j], like))
            add_name(designs, &nd, 32, r->rows[j].design);
    for (int k = 0; k < nd; k++) {
        fprintf(d, "# %s: threads ns/op/thr min max\n", designs[k]);
        for (int j = 0; j < r->nrows; j++) {
            const struct row *x = &r->rows[j];
            if (row_same_group(x, like) && strcmp(x->design, designs[k]) == 0)
                fprintf(d, "%d %.2f %.2f %.2f\n", x->threads, x->ns_op.median, x->ns_op.min,
                        x->ns_op.max);
        }
        fprintf(d, "\n\n");
    }
    fclose(d);
    for (int t = 0; t < 2; t++) {
        terminal(g, r, name, t);
        fprintf(g,
                "set title 'ptbench %s: time per op per thread (median, min-max; lower is "
                "better)'\n",
                like->workload);
        fprintf(g, "set xlabel 'threads'; set ylabel 'ns/op per thread'; set key outside; "
                   "set logscale x 2; set grid; set yrange [0:*]\n");
        thread_axis(g, r, like);
        plot_ranges(g, dat, designs, nd);
    }
}

/* Lateness: quantile against lateness, the quantile axis on a log scale of
 * 1 - q, so that the tail (p99, p99.9, p99.99) is as wide as the body. */
static void lateness_plot(FILE *g, const struct report *r, int first)
{
    const struct dist *d0 = &r->dists[first];
    char name[128];
    dist_name(d0, NULL, name, sizeof name);
    for (int t = 0; t < 2; t++) {
        terminal(g, r, name, t);
        /* in the scheduler: how late a sleeping G runs again, on N Ps;
         * or what else the workload keeps there */
        const struct workload *wl = workload_find(d0->workload);
        bool sched = wl && wl_in_sched(wl);
        const char *what = wl && wl->dist_what ? wl->dist_what
                           : sched             ? "wake lateness"
                                               : "firing lateness";
        fprintf(g, "set title 'ptbench: %s, %s%s%s, %d %s%s'\n", what, d0->workload,
                d0->variant[0] ? " " : "", d0->variant, d0->threads, sched ? "P" : "thread",
                d0->threads == 1 ? "" : "s");
        fprintf(g, "set logscale xy; set grid; set key outside\n");
        fprintf(g, "set xlabel 'quantile (log scale of 1 - q)'; set ylabel '%s (us)'\n",
                wl && wl->dist_what ? wl->dist_what : "lateness");
        fprintf(g, "set xtics (\"p50\" 2, \"p90\" 10, \"p99\" 100, \"p99.9\" 1000, "
                   "\"p99.99\" 10000); set xrange [1:20000]\n");
        fprintf(g, "plot ");
        int k = 0;
        for (int j = first; j < r->ndists; j++) {
            const struct dist *d = &r->dists[j];
            if (strcmp(d->workload, d0->workload) || strcmp(d->variant, d0->variant) ||
                d->threads != d0->threads)
                continue;
            char file[128];
            dist_name(d, d->design, file, sizeof file);
            fprintf(g,
                    "%s'%s/%s.dat' using (1/(1-$1)):2 with linespoints lc rgb '%s' lw 2 %s "
                    "title '%s'",
                    k++ ? ", " : "", r->dir, file, colour_of(d->design), dash_of(d->design),
                    d->design);
        }
        fprintf(g, "\n");
    }
}

/* Memory: bytes per pending timer (per parked G in the scheduler), a bar
 * per design, its own structures' bytes marked on it (the gap is the
 * allocator's and the page's). A file per row group. */
static void memory_plot(FILE *g, const struct report *r, const struct row *like)
{
    char dat[1024];
    const char *what = like->in_sched ? "parked G" : "pending timer";
    /* a file per row group (memory-g has one per G count and guard):
     * memory-g-N100k-guardauto */
    char stem[64], var[sizeof like->variant];
    variant_in_file_name(like->variant, var, sizeof var);
    snprintf(stem, sizeof stem, "%s%s%s", like->workload, var[0] ? "-" : "", var);
    FILE *d = open_dat(r, stem, dat, sizeof dat);
    if (!d)
        return;
    fprintf(d, "# design bytes_per_timer own_bytes colour\n");
    for (int j = 0; j < r->nrows; j++) {
        const struct row *x = &r->rows[j];
        if (!row_same_group(x, like))
            continue;
        char own[24] = "NaN";
        if (x->timer_bytes)
            snprintf(own, sizeof own, "%zu", x->timer_bytes);
        fprintf(d, "\"%s\" %.2f %s %ld\n", x->design, x->bytes, own,
                strtol(colour_of(x->design) + 1, NULL, 16));
    }
    fclose(d);
    for (int t = 0; t < 2; t++) {
        terminal(g, r, stem, t);
        fprintf(g, "set title 'ptbench %s%s%s: resident bytes per %s (lower is better)'\n",
                like->workload, like->variant[0] ? " " : "", like->variant, what);
        fprintf(g,
                "set ylabel 'bytes per %s'; set yrange [0:*]; set grid ytics; "
                "set key top left; set style fill solid 0.8 border -1; set boxwidth 0.6; "
                "set xtics rotate by -30; set offsets 0.5, 0.5, 0, 0\n",
                what);
        fprintf(g,
                "plot '%s' using 0:2:4:xtic(1) with boxes lc rgb variable title "
                "'measured', '' using 0:2:(sprintf('%%.1f', $2)) with labels offset 0,0.7 "
                "notitle",
                dat);
        /* a G's own structures are the scheduler's, not counted here */
        if (!like->in_sched)
            fprintf(g, ", '' using 0:3 with points pt 7 ps 1.5 lc rgb 'black' title "
                       "\"the design's own structures\"");
        fprintf(g, "\n");
    }
}

/* Slack: wake-ups per second against the window, a line per design (the
 * median, min-max), at one thread count. Log y: a window divides the
 * wake-ups by orders of magnitude, and the kernel's thread per timer does
 * not move with it. */
static void slack_plot(FILE *g, const struct report *r, const struct row *like)
{
    char dat[1024], name[128];
    snprintf(name, sizeof name, "slack-t%d", like->threads);
    FILE *d = open_dat(r, name, dat, sizeof dat);
    if (!d)
        return;
    const char *designs[32], *variants[16];
    int nd = 0, nv = 0;
    for (int j = 0; j < r->nrows; j++) {
        const struct row *x = &r->rows[j];
        if (strcmp(x->workload, like->workload) == 0 && x->threads == like->threads) {
            add_name(designs, &nd, 32, x->design);
            add_name(variants, &nv, 16, x->variant);
        }
    }
    for (int k = 0; k < nd; k++) {
        fprintf(d, "# %s: window wake/s min max\n", designs[k]);
        for (int v = 0; v < nv; v++)
            for (int j = 0; j < r->nrows; j++) {
                const struct row *x = &r->rows[j];
                if (!strcmp(x->workload, like->workload) && x->threads == like->threads &&
                    !strcmp(x->design, designs[k]) && !strcmp(x->variant, variants[v]) &&
                    x->wakeups_s > 0)
                    fprintf(d, "%d %.1f %.1f %.1f\n", v, x->wakeups_s, x->lo, x->hi);
            }
        fprintf(d, "\n\n");
    }
    fclose(d);
    for (int t = 0; t < 2; t++) {
        terminal(g, r, name, t);
        fprintf(g,
                "set title 'ptbench slack, %d thread%s: wake-ups per second by window (median, "
                "min-max; lower is better)'\n",
                like->threads, like->threads == 1 ? "" : "s");
        fprintf(g, "set xlabel 'window (slack= share of the period)'; set ylabel 'wake-ups/s "
                   "(log scale)'; set logscale y; set grid; set key outside\n");
        fprintf(g, "set xtics (");
        for (int v = 0; v < nv; v++) { /* slack=10% as 10%%: gnuplot's tic labels are formats */
            const char *eq = strchr(variants[v], '=');
            fprintf(g, "%s\"", v ? ", " : "");
            for (const char *c = eq ? eq + 1 : variants[v]; *c; c++)
                fputs(*c == '%' ? "%%" : (char[]){*c, 0}, g);
            fprintf(g, "\" %d", v);
        }
        fprintf(g, ")\nset xrange [-0.3:%g]\n", nv - 0.7);
        plot_ranges(g, dat, designs, nd);
    }
}

void plots_write(const struct report *r)
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
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = !row_same_group(&r->rows[j], w);
        if (first && w->kind == WL_THROUGHPUT)
            throughput_plot(g, r, w);
        if (first && w->kind == WL_MEMORY)
            memory_plot(g, r, w);
        bool first_at_threads = true; /* slack: a plot per thread count, every window in it */
        for (int j = 0; j < i && first_at_threads; j++)
            first_at_threads = strcmp(r->rows[j].workload, w->workload) ||
                               r->rows[j].threads != w->threads;
        if (first_at_threads && w->kind == WL_SLACK)
            slack_plot(g, r, w);
    }
    for (int i = 0; i < r->ndists; i++) {
        /* virtual time promises lateness 0, which the table shows; a log
         * axis has no 0 */
        const struct workload *wl = workload_find(r->dists[i].workload);
        if (wl && (wl->virtual_time || wl->kind == WL_SLACK)) /* slack's: 0 in the window */
            continue;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = strcmp(r->dists[j].workload, r->dists[i].workload) ||
                    strcmp(r->dists[j].variant, r->dists[i].variant) ||
                    r->dists[j].threads != r->dists[i].threads;
        if (first)
            lateness_plot(g, r, i);
    }
    fclose(g);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "gnuplot %s/plots.gp 2>%s/plots.log", r->dir, r->dir);
    if (system(cmd) == 0)
        printf("plots: %s/*.png and *.svg (script %s/plots.gp)\n", r->dir, r->dir);
    else
        printf("plots: gnuplot failed, see %s/plots.log\n", r->dir);
}
