/* The hooks by which the core reaches the services without naming them
 * (DESIGN.md's sched section): the core defines each shape and calls
 * through it; a service fills one in. A hook is a pointer, not a call,
 * so the call graph of sched/ has no edge from the core up. */
#ifndef PTIMER_SCHED_HOOKS_H
#define PTIMER_SCHED_HOOKS_H

#include <stdbool.h>

#include "ptimer/sched.h"

struct pt__p;

/* What the udata of the scheduler's own netpoll registrations points
 * to (a descriptor's record, a P ring's eventfd): the core hands each
 * event to its ready function, which knows its kind (Go's netpollready,
 * for more than one kind of registration). Each record has it first. */
struct pt__pollee {
    void (*ready)(struct pt__pollee *pe, pt_sched *s, unsigned events);
};

/* A queue of its Gs' requests that a P submits at its rounds (a P's
 * io_uring, fdring.c, embeds it): the core calls it as it runs out of Gs,
 * never naming the service behind it. */
struct pt__p_queue {
    /* Submits what was queued and takes what completed: true if that
     * readied Gs. */
    bool (*flush)(struct pt__p_queue *q);
    /* True while a submission the kernel refused waits to be retried:
     * the M must not sleep on it. */
    bool (*owes)(struct pt__p_queue *q);
};

/* A service's part in a scheduler's life, each hook optional (NULL).
 * sched.c runs them in its list's order as a P or the scheduler is
 * made, and in reverse as it ends. */
struct pt__service {
    /* A new P, before its M starts: 0 or -errno, which fails the create
     * or set_procs that made it. */
    int (*p_open)(pt_sched *s, struct pt__p *p);
    /* A P's end (destroy, or a make that failed after p_open, or before
     * it: then with nothing opened), every G gone. */
    void (*p_close)(struct pt__p *p);
    /* pt_sched_read_stats: adds what the service counts on p to out. */
    void (*p_stats)(const struct pt__p *p, pt_sched_stats *out);
    /* Destroy, every G gone and the Ps freed, before the netpoller goes. */
    void (*close)(pt_sched *s);
};

extern const struct pt__service pt__time_service; /* time.c: a P's timer cache */
extern const struct pt__service pt__fd_service;   /* fdtab.c: the fds registered for Gs */
#ifdef PT_HAVE_URING
extern const struct pt__service pt__ring_service; /* fdring.c: a P's io_uring */
#endif

#endif
