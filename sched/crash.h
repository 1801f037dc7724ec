/* The scheduler's crash reports (crash.c), for every file of it. */
#ifndef PTIMER_SCHED_CRASH_H
#define PTIMER_SCHED_CRASH_H

typedef struct pt_g pt_g;

/* Corruption (a G in a state its operation cannot meet): aborts with the
 * G, its status and the operation. */
_Noreturn void pt__sched_bad(const pt_g *g, const char *op);
/* The same for a G found past its stack's end (a canary), running on
 * that G's stack: a message built in a few bytes of it, no stdio. g may
 * be NULL: the monitor found no G at the overflowed stack's top. */
_Noreturn void pt__sched_overflow(const pt_g *g, const char *op);

#endif
