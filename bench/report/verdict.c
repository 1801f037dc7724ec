/* The verdict table, first in the report: per workload and thread count,
 * the winning design and every design's figure over the winner's, peers
 * included, all by one rule (lower is better; metric.c), so that no
 * ratio has to be worked out by hand across tables with different
 * baselines. */
#include <string.h>

#include "model.h"
#include "outputs.h"

enum { MAXCOLS = 32 };

struct columns {
    const char *name[MAXCOLS];
    int n;
};

static void add_column(struct columns *c, const char *design)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->name[i], design) == 0)
            return;
    if (c->n < MAXCOLS)
        c->name[c->n++] = design;
}

/* A cell is "1.35±4" (the ratio to the winner, then the row's spread:
 * half its fastest-to-slowest repetitions, in percent of its figure), or
 * "tie 1.02±3" where that spread overlaps the winner's: "tie 12.3±150"
 * at the widest. */
enum { CELL_MIN = 12 };

static int col_width(const char *design)
{
    int n = (int)strlen(design);
    return n < CELL_MIN ? CELL_MIN : n;
}

/* The verdict's three tables: the timer structures, the scheduler (and
 * the servers built on it), and the netpoller's backends. */
enum block { BLOCK_TIMERS, BLOCK_SCHED, BLOCK_NETPOLL };

static enum block block_of(const struct row *w)
{
    if (w->kind == WL_NETPOLL)
        return BLOCK_NETPOLL;
    if (w->in_sched || w->kind == WL_HTTP || w->kind == WL_IDLE)
        return BLOCK_SCHED;
    return BLOCK_TIMERS;
}

/* The first row of each verdict line is where the line is printed. */
static bool first_of_cell(const struct report *r, int i)
{
    for (int j = 0; j < i; j++)
        if (row_same_cell(&r->rows[j], &r->rows[i]))
            return false;
    return true;
}

/* The largest share of due ticks a design delivered in this cell: the
 * bar, less TICKS_SLACK, for being ranked. Relative, not fixed: when the
 * machine is busy every design drops ticks, and a fixed bar would leave
 * the line without a winner. Peers count, references do not. */
static double most_delivered(const struct report *r, const struct row *like)
{
    double most = 0;
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        if (row_same_cell(w, like) && !(w->origin & ROW_REFERENCE) && ticks_delivered(w) > most)
            most = ticks_delivered(w);
    }
    return most;
}

static const struct row *winner_of(const struct report *r, const struct row *like, double most)
{
    const struct row *best = NULL;
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        if (row_same_cell(w, like) && metric_ranked(w, most) &&
            (!best || metric_value(w) < metric_value(best)))
            best = w;
    }
    return best;
}

/* Half the row's spread, in percent of its figure; -1: unknown. */
static int spread_pct(const struct row *w)
{
    if (w->lo < 0)
        return -1;
    double m = metric_value(w);
    double pct = m > 0 ? 50 * (w->hi - w->lo) / m : 0;
    return pct < 999 ? (int)(pct + 0.5) : 999;
}

/* Whether w's repetitions and the winner's overlap: neither is ahead by
 * more than the run's own noise. */
static bool ties(const struct row *w, const struct row *best)
{
    return w != best && w->lo >= 0 && best->lo >= 0 && w->lo <= best->hi && w->hi >= best->lo;
}

static void print_cell(FILE *f, const struct report *r, const struct row *like,
                       const struct row *best, double most, const char *design, bool figures)
{
    char cell[32] = "-";
    const struct row *w = report_find(r, design, like);
    if (w && figures && metric_value(w) > 0) {
        double v = metric_value(w); /* never an exponent: 16290, not 1.629e+04 */
        snprintf(cell, sizeof cell, v < 1000 ? "%.4g" : "%.0f", v);
    } else if (w && best && metric_value(w) > 0) {
        char ratio[16];
        ratio_format(ratio, sizeof ratio, metric_value(w) / metric_value(best));
        bool dropped =
            w->kind == WL_TICKER && !(w->origin & ROW_REFERENCE) && !metric_ranked(w, most);
        char spread[8] = "?";
        if (spread_pct(w) >= 0)
            snprintf(spread, sizeof spread, "%d", spread_pct(w));
        snprintf(cell, sizeof cell, "%s%s\u00b1%s%s", !dropped && ties(w, best) ? "tie " : "",
                 ratio, spread, dropped ? "!" : "");
    } else if (w) {
        snprintf(cell, sizeof cell, "?");
    }
    /* the ± is two bytes and one column */
    int pad = col_width(design) + (strstr(cell, "\u00b1") ? 1 : 0);
    fprintf(f, " %*s", pad, cell);
}

static const char *const block_title[] = {"timers", "scheduler", "netpoll"};

/* One of the verdict's tables: its lines, and a column for every design
 * and peer with a row in it; a cell is a ratio to the winner, or with
 * `figures` the design's own figure. */
static void print_block(const struct report *r, FILE *f, enum block b, int namew, int winw,
                        bool figures)
{
    struct columns cols = {.n = 0};
    for (int i = 0; i < r->nrows; i++)
        if (block_of(&r->rows[i]) == b)
            add_column(&cols, r->rows[i].design);
    if (!cols.n)
        return;
    fprintf(f, "\n%-*s %4s  %-9s  %-*s %9s |", namew, block_title[b], "thr", "metric", winw,
            "winner", "best");
    for (int c = 0; c < cols.n; c++)
        fprintf(f, " %*s", col_width(cols.name[c]), cols.name[c]);
    fprintf(f, "\n");
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        if (block_of(w) != b || !first_of_cell(r, i))
            continue;
        double most = most_delivered(r, w);
        const struct row *best = winner_of(r, w, most);
        char name[48], thr[16], val[32] = "-";
        group_name(w, name, sizeof name);
        snprintf(thr, sizeof thr, "%d%s", w->threads, w->threads > r->cores ? "*" : "");
        if (best)
            snprintf(val, sizeof val, "%.1f", metric_value(best));
        fprintf(f, "%-*s %4s  %-9s  %-*s %9s |", namew, name, thr,
                metric_name(w->kind, w->in_sched), winw, best ? best->design : "-", val);
        for (int c = 0; c < cols.n; c++)
            print_cell(f, r, w, best, most, cols.name[c], figures);
        fprintf(f, "\n");
    }
}

/* The workloads of one kind, run on the engines or in the scheduler. */
/* Whether row w's figure is per op of the whole run (workload.h). */
static bool row_per_run(const struct row *w)
{
    const struct workload *wl = workload_find(w->workload);
    return wl && wl->per_run;
}

/* The rows of one kind and place, per_run ones apart: their figure is
 * not per thread. */
static void legend_rows(const struct report *r, FILE *f, enum wl_kind kind, bool in_sched,
                        bool per_run, const char *what)
{
    char names[256] = "";
    for (int i = 0; i < r->nrows; i++) {
        const struct row *w = &r->rows[i];
        bool named = false;
        for (int j = 0; j < i && !named; j++)
            named = strcmp(r->rows[j].workload, w->workload) == 0;
        if (w->kind != kind || w->in_sched != in_sched || named || row_per_run(w) != per_run)
            continue;
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", w->workload);
    }
    if (names[0])
        fprintf(f, "  %-9s  %s: %s\n", metric_name(kind, in_sched), names, what);
}

static void legend_kind(const struct report *r, FILE *f, enum wl_kind kind, bool in_sched,
                        const char *what)
{
    legend_rows(r, f, kind, in_sched, false, what);
}

static void legend(const struct report *r, FILE *f)
{
    fprintf(f, "\nEach line: the winner (the lowest figure, shown as best) and every design's\n"
               "figure over the winner's: 1.00 is the winner, 2.00 twice its time, lateness or\n"
               "bytes. After the ratio, \u00b1 the row's spread: half the distance from its best\n"
               "repetition to its worst, in percent of its figure. tie: that spread overlaps the\n"
               "winner's, so this run does not tell the two apart; ±?: no repetition has a\n"
               "figure of its own (its lateness is pooled). The figure, by workload:\n");
    legend_kind(r, f, WL_THROUGHPUT, false,
                "wall time x threads / ops, each thread's time per op\n"
                "             (median of repetitions; paired ratios: under each table of the\n"
                "             run's table.txt)");
    legend_kind(r, f, WL_THROUGHPUT, true,
                "wall time x Ps / ops, each P's time per op (a G\n"
                "             spawned, a round trip, a sleep and its wake, a request)");
    legend_rows(r, f, WL_THROUGHPUT, true, true,
                "wall time / events, however many Ps (an hour of\n"
                "             virtual time: 3,610,000 ticks and wakes)");
    legend_kind(r, f, WL_LATENCY, false, "99th percentile of fire time - deadline");
    legend_kind(r, f, WL_LATENCY, true,
                "99th percentile of wake time - deadline\n"
                "             (when the sleeping G runs again, not when its timer fired)");
    legend_kind(r, f, WL_TICKER, false,
                "the same over the ticks delivered, ranked among the designs\n"
                "             that delivered within a point of the most any did (every one\n"
                "             of them where the machine keeps up); the others' ratios end\n"
                "             in !, as their lateness leaves out the ticks they dropped");
    legend_kind(r, f, WL_NETPOLL, false, "99th percentile of a timed wait's return - its deadline");
    legend_kind(r, f, WL_SLACK, false,
                "wake-ups per second (every thread's voluntary context\n"
                "             switches), ranked as ticker's by ticks delivered");
    legend_kind(r, f, WL_MEMORY, false, "resident bytes per pending timer");
    legend_kind(r, f, WL_MEMORY, true, "resident bytes per parked G");
    legend_kind(r, f, WL_BURST, true, "wall time per G of a burst, none from a pool");
    legend_kind(r, f, WL_HTTP, false,
                "wrk's wall time / requests served (1 / requests per second);\n"
                "             a server process each, wrk on the same cores");
    legend_kind(r, f, WL_IDLE, false,
                "99th percentile of an idle connection's close - (its answer\n"
                "             + the idle timeout), with wrk loading 100 more meanwhile");
    fprintf(f, "Lateness: our designs' samples of every repetition pooled, the peers' (go1.19,\n"
               "libuv, tokio) medians of their repetitions'. The floors are shown and never\n"
               "win: kernel, a futex wait with the same deadline and no timer structure;\n"
               "floor, a bare per-thread heap with no status machine (timers), a blocking\n"
               "socket pair per core with no scheduler (rpc-sched), a single-threaded epoll\n"
               "server (http). tokio-warm: tokio's timer loop yielding every 256 ops, so\n"
               "that its driver parks and an arm no longer wakes it.\n");
    bool sched = false;
    for (int i = 0; i < r->nrows; i++)
        sched |= r->rows[i].in_sched;
    if (sched)
        fprintf(f, "sched-perp, sched-lheap and sched-tt: the scheduler (sched.h), its sleeps and\n"
                   "timeouts on the Ps' heaps (Go 1.14's or Go 1.23's design) or on the\n"
                   "TimerThread; there, threads are Ps (GOMAXPROCS for go1.19's goroutines,\n"
                   "tokio's workers). sched-uring: sched-perp with its Gs' socket reads and\n"
                   "writes on each P's io_uring (rpc-sched, http).\n");
    fprintf(f, "thr*: more threads than the %d cores. -: not run.  ?: no figure.\n", r->cores);
}

static void widths(const struct report *r, int *namew, int *winw)
{
    *namew = 9; /* "scheduler" */
    *winw = 6;
    for (int i = 0; i < r->nrows; i++) {
        char name[48];
        group_name(&r->rows[i], name, sizeof name);
        if ((int)strlen(name) > *namew)
            *namew = (int)strlen(name);
        if ((int)strlen(r->rows[i].design) > *winw)
            *winw = (int)strlen(r->rows[i].design);
    }
}

void verdict_print(const struct report *r, FILE *f)
{
    int namew, winw;
    widths(r, &namew, &winw);
    fprintf(f, "== verdict: which design, when\n");
    for (enum block b = BLOCK_TIMERS; b <= BLOCK_NETPOLL; b++)
        print_block(r, f, b, namew, winw, false);
    legend(r, f);
}

void verdict_figures_print(const struct report *r, FILE *f)
{
    int namew, winw;
    widths(r, &namew, &winw);
    for (enum block b = BLOCK_TIMERS; b <= BLOCK_NETPOLL; b++)
        print_block(r, f, b, namew, winw, true);
}
