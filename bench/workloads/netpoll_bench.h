/* The netpoll workload: not a timer design but the netpoller's timed
 * wait, on each backend and beside the kernel floor, per wait time. */
#ifndef PTBENCH_NETPOLL_BENCH_H
#define PTBENCH_NETPOLL_BENCH_H

#include "report.h"

/* Every backend x wait time, `reps` repetitions of `duration` each, into
 * r's rows. 0, or -1 on an error (said on stderr). */
int netpoll_run(struct report *r, const struct workload *wl, int reps, pt_nanos duration);

#endif
