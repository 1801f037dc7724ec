/* The http-idle workload: idle keep-alive connections closed by their
 * server's idle timeout, under load (http_idle.c). */
#ifndef PTBENCH_HTTP_IDLE_H
#define PTBENCH_HTTP_IDLE_H

#include "options.h"
#include "report.h"

/* Every server x idle connection count x Ps, o->reps repetitions each,
 * into r's rows. 0, or -1 on an error (said on stderr). */
int http_idle_run(struct report *r, const struct options *o, const struct workload *wl);

#endif
