/* The http workload: server processes under wrk (http_bench.c). */
#ifndef PTBENCH_HTTP_BENCH_H
#define PTBENCH_HTTP_BENCH_H

#include "options.h"
#include "report.h"

/* Every server x connection count x Ps, o->reps repetitions each, into
 * r's rows; a server or client that is missing is a note. 0, or -1 on an
 * error (said on stderr). */
int http_run(struct report *r, const struct options *o, const struct workload *wl);

#endif
