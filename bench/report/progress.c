/* Progress on stderr (see progress.h). */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "model.h"

static bool quiet, tty, shown;

void progress_init(bool q)
{
    quiet = q;
    tty = isatty(STDERR_FILENO);
}

void progress_rep(const char *workload, const char *variant, int threads, const char *design,
                  int rep, int nreps)
{
    if (quiet || !tty)
        return;
    char what[24] = "(peer)";
    if (rep > 0)
        snprintf(what, sizeof what, "rep %d/%d", rep, nreps);
    fprintf(stderr, "\rptbench: %-12s %-7s threads %-3d %-12s %-10s", workload, variant, threads,
            design, what);
    shown = true;
}

void progress_row(const struct row *w)
{
    if (quiet || tty)
        return;
    fprintf(stderr, "ptbench: %-12s %-7s threads %-3d %-12s %10.1f %s (%d rep%s)\n", w->workload,
            w->variant, w->threads, w->design, metric_value(w), metric_name(w->kind, w->in_sched),
            w->reps, w->reps == 1 ? "" : "s");
}

void progress_clear(void)
{
    if (shown)
        fprintf(stderr, "\r%79s\r", "");
    shown = false;
}

void progress_done(void)
{
    progress_clear();
}
