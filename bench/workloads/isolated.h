/* A repetition of memory, memory-g or spawn-burst in a process of its own. */
#ifndef PTBENCH_ISOLATED_H
#define PTBENCH_ISOLATED_H

#include "report.h"

/* The hidden first argument that makes ptbench the child. */
#define ISOLATED_ARG "--isolated-rep"
#define ISOLATED_ARGC 8

/* In ptbench executed afresh: one repetition, its struct rep written to
 * the pipe named on the command line. The exit status. */
int isolated_main(char **argv);

/* One repetition of wl on the design named `design` (an engine, or a
 * sched design for a workload in the scheduler) in this program executed
 * afresh; killed, and -1, if it has not answered in hang_s seconds (0: no
 * limit). */
int run_isolated(const struct workload *wl, const char *design, int nt,
                 const struct run_config *cfg, long hang_s, struct rep *out);



/* One repetition of wl on an engine loaded with --engine, in a forked
 * child, into *res: a crash or hang of code this program did not build
 * costs that repetition, not the run. 0, or -1 with why (one line). */
int run_forked(const struct workload *wl, const struct pt_engine *eng, int nt,
               const struct run_config *cfg, long hang_s, struct run_result *res, char *why,
               size_t n);
#endif
