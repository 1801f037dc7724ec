/* What fdio.c (timed I/O on descriptors) offers the other files. */
#ifndef PTIMER_SCHED_FDIO_H
#define PTIMER_SCHED_FDIO_H

#include "ptimer/sched.h"

struct pt__pollee;

/* A descriptor's ready function (its pollee's): an event from s's
 * netpoller readies the Gs waiting on those sides. */
void pt__fd_ready(struct pt__pollee *pe, pt_sched *s, unsigned events);

#endif
