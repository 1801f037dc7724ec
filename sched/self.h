/* The calling thread's own (self.c): its M, errno and random numbers. */
#ifndef PTIMER_SCHED_SELF_H
#define PTIMER_SCHED_SELF_H

#include <stdint.h>

struct pt__m;

/* The M the calling thread runs as, NULL elsewhere. Read through this
 * function, never cached across a switch: a G resumes on whatever M took
 * it. */
struct pt__m *pt__cur_m(void);
/* An M's thread says it is m (NULL as it ends). */
void pt__set_cur_m(struct pt__m *m);
/* errno of the thread running now. glibc declares __errno_location
 * const, so a compiler may keep its result across a G's switch to
 * another M and read the old thread's errno: code that can park between
 * two system calls reads errno through this. */
int pt__errno(void);
/* A pseudo-random number for the calling thread (select's choice). */
uint32_t pt__fastrand(void);
/* The calling thread's pause before retrying what the kernel refused for
 * want of memory (a ring's submission): a millisecond. */
void pt__backoff(void);

#endif
