/* Progress on stderr (see progress.h). */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

static bool quiet, tty, shown;

/* The plan (planned seconds), and the clock of what is done. */
static double planned_total, planned_done, planned_now, spent_done, began_now;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_init(bool q)
{
    quiet = q;
    tty = isatty(STDERR_FILENO);
}

void progress_plan(double planned_s)
{
    planned_total = planned_s;
    planned_done = planned_now = spent_done = 0;
    began_now = now_s();
}

void progress_workload(double planned_s)
{
    double t = now_s();
    planned_done += planned_now;
    spent_done += t - began_now;
    planned_now = planned_s;
    began_now = t;
}

/* "12:34 left", or nothing before a plan. */
static void eta(char *out, size_t n)
{
    out[0] = 0;
    if (planned_total <= 0)
        return;
    /* what is left of this workload, then of the ones after it; one that
     * overruns its plan does not eat into the next ones' */
    double scale = planned_done > 0 ? spent_done / planned_done : 1;
    double here = planned_now * scale - (now_s() - began_now);
    double left = (here > 0 ? here : 0) + (planned_total - planned_done - planned_now) * scale;
    snprintf(out, n, "~%d:%02d left", (int)left / 60, (int)left % 60);
}

void progress_rep(const char *workload, const char *variant, int threads, const char *design,
                  int rep, int nreps)
{
    if (quiet || !tty)
        return;
    char what[24] = "(peer)", left[32];
    if (rep > 0)
        snprintf(what, sizeof what, "rep %d/%d", rep, nreps);
    eta(left, sizeof left);
    fprintf(stderr, "\rptbench: %-12s %-7s threads %-3d %-12s %-10s %s", workload, variant, threads,
            design, what, left);
    shown = true;
}

void progress_row(const struct row *w)
{
    if (quiet || tty)
        return;
    char left[32];
    eta(left, sizeof left);
    fprintf(stderr, "ptbench: %-12s %-7s threads %-3d %-12s %10.1f %s (%d rep%s) %s\n", w->workload,
            w->variant, w->threads, w->design, metric_value(w), metric_name(w->kind, w->in_sched),
            w->reps, w->reps == 1 ? "" : "s", left);
}

void progress_clear(void)
{
    if (shown)
        fprintf(stderr, "\r%99s\r", "");
    shown = false;
}

void progress_done(void)
{
    progress_clear();
}
