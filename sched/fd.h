/* The descriptors Gs do I/O on (fdtab.c: found by number, registered on
 * first use, unregistered at close; fdio.c: timed I/O on them, parking on
 * a side, the netpoller's events). Included by those two, fdring.c, and
 * sched.c, which forgets them at destroy. */
#ifndef PTIMER_SCHED_FD_H
#define PTIMER_SCHED_FD_H

#include <stddef.h>

#include "sched/fdring.h"
#include "sched/internal.h"

/* A G parked on a side of a descriptor: on its stack, in the side's list
 * while `queued` (both under the descriptor's lock). */
struct pt__fd_waiter {
    pt_g *g;
    struct pt__fd_waiter *prev, *next;
    struct pt__fd_waiter *woken; /* a waker's list of Gs it claimed */
    bool queued;
};

/* One side (read, write) of a descriptor: Go's rg/wg, for any number of
 * Gs. `seq` moves on every readiness event; a G reads it before its
 * system call and parks only if it has not moved since (Go's pollReset
 * before the call and READY after it, in one word). */
struct pt__fd_side {
    _Atomic uint32_t seq;            /* written under the lock, read without */
    /* Read side only: a seq at which it was known to have nothing: set
     * at registration (whose report says otherwise with an event: one
     * always comes for what is readable then) and at each EAGAIN. While
     * seq is still there, a read waits for the event without asking the
     * kernel first, as tokio's readiness does: the first read of a fresh
     * connection, and one after an EAGAIN with nothing since, cost no
     * system call that could only say EAGAIN. */
    _Atomic uint32_t idle;
    struct pt__fd_waiter *head, *tail; /* parked Gs (the lock) */
};

enum { PT__FD_FREE, PT__FD_OPEN, PT__FD_CLOSING };
enum { PT__FD_RD, PT__FD_WR };

/* One per fd number, process-wide, never freed (a netpoll event that
 * names one after its close finds it closed: see fdtab.c). Fields other
 * than reg are guarded by `lock`; state is also read without it. */
struct pt__fd {
    struct pt__pollee pollee; /* first: what its netpoll events point to */
    _Atomic uint32_t lock;  /* pt__lock */
    _Atomic uint32_t state; /* PT__FD_*: stores under the lock */
    _Atomic uint32_t refs;  /* calls in flight (the lock; a closing thread sleeps on it) */
    bool pollable;          /* registered with s->np (not a regular file) */
    bool sock;              /* a socket: writes use send(MSG_NOSIGNAL) */
    /* What its accepts give TCP_NODELAY (fdio.c, listener_nodelay): -1
     * until the first accept asks (only a listener needs to know) */
    _Atomic signed char tcp;
    pt_sched *s;            /* whose netpoller reports it */
    pt_g *closer;           /* a closing G waiting for refs to reach 0 */
    struct pt__fd_side side[2];
    struct pt__uop *uops; /* its Gs' requests on P rings (fdring.h), for a close to end */
    /* with s->np, while pollable: only the registration, as the sides,
     * the waiters and the deadlines are this record's own */
    pt_pollreg reg;
};

_Static_assert(offsetof(struct pt__fd, pollee) == 0, "a netpoll event's pollee is its record");

#include "sched/fdio.h"
#include "sched/fdtab.h"

#endif
