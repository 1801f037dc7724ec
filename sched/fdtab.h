/* What fdtab.c (the descriptors, found by number, registered on first
 * use, unregistered at close) offers the other files; the record is fd.h's. */
#ifndef PTIMER_SCHED_FDTAB_H
#define PTIMER_SCHED_FDTAB_H

#include <stdbool.h>

#include "ptimer/sched.h"

struct pt__fd;

/* The descriptor of fd, registered with s on first use, with a reference
 * held: 0; -EBADF (not open, or closing); -EINVAL (fd too large, or
 * registered with another scheduler); -ENOMEM; the netpoll's error. */
int pt__fd_acquire(pt_sched *s, int fd, struct pt__fd **out);
/* The same, told what the caller knows of fd (PT__FD_KNOWN_*), so that a
 * first use does not ask the kernel: an accepted connection is a
 * non-blocking socket, an fd a G connects is a socket. Ignored once the
 * descriptor is registered; *registered (if not NULL) says whether this
 * call registered it. */
enum { PT__FD_KNOWN_NONBLOCK = 1, PT__FD_KNOWN_SOCKET = 2 };
int pt__fd_acquire_known(pt_sched *s, int fd, unsigned known, bool *registered,
                         struct pt__fd **out);
void pt__fd_release(struct pt__fd *f);
/* Whether the table has room for fd's number (below 2^20). */
bool pt__fd_in_range(int fd);
/* The descriptor of fd if one was ever made, else NULL (no allocation). */
struct pt__fd *pt__fd_find(int fd);
/* The end of pt_fd_close, once f is closing and its waiters are woken:
 * waits for the calls in flight, unregisters, closes the fd. 0 or -errno. */
int pt__fd_finish_close(struct pt__fd *f, int fd);
/* Calls fn on every descriptor the table ever made, whatever its state
 * or owner, with no lock held. */
void pt__fd_walk(void (*fn)(struct pt__fd *f, void *arg), void *arg);

#endif
