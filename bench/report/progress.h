/* Progress on stderr: on a terminal, one line rewritten in place per
 * repetition; otherwise (a log file) one line per finished row, so a
 * logged run does not become one line of carriage returns. */
#ifndef PTBENCH_PROGRESS_H
#define PTBENCH_PROGRESS_H

#include <stdbool.h>

struct row;

void progress_init(bool quiet);
/* About to run a repetition (rep 0: a peer's whole row). */
void progress_rep(const char *workload, const char *variant, int threads, const char *design,
                  int rep, int nreps);
void progress_row(const struct row *w);
/* The time left, estimated: the run's plan in planned seconds (the sum
 * of what each workload should take), then each workload begun with its
 * share. The estimate scales what is left by how the finished workloads'
 * time compared with their plan. */
void progress_plan(double planned_s);
void progress_workload(double planned_s);
/* Before anything else goes to stderr or stdout: clears the terminal's
 * progress line. */
void progress_clear(void);
void progress_done(void);

#endif
