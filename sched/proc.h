/* What proc.c (an M's life: schedule, findrunnable, idling, wakep)
 * offers the scheduler's other files. */
#ifndef PTIMER_SCHED_PROC_H
#define PTIMER_SCHED_PROC_H

#include "ptimer/clock.h"
#include "ptimer/sched.h"

struct pt__m;
union pt__ptimers;

/* An M's thread: runs Gs until its scheduler lets it go. */
void *pt__m_main(void *m);
/* Makes g runnable somewhere and gets an M to it. */
void pt__g_put_runnable(pt_sched *s, pt_g *g);
/* A P's pt_wake_func: a new earliest timer (Go's wakeNetPoller). */
void pt__wake_timers(void *p, pt_nanos when);
/* On a G about to park or exit: the G its M would run next, taken from
 * the head of the M's own P's queue, when going back to g0 would do
 * nothing but take it and run the P's due timers (not the 61st round, not
 * stopping or retiring); else NULL. Due timers leave the time in
 * m->due_now: whoever runs next on the M runs them first
 * (pt__run_due_timers), as the Gs they ready go behind the one taken. */
pt_g *pt__next_local(struct pt__m *m, pt_nanos now); /* now: 0, or a clock read just made */
/* Runs the M's own P's timers found due by pt__next_local, if any. */
void pt__run_due_timers(struct pt__m *m);
/* The heap a timer armed now belongs on: the calling M's P's, when the
 * caller runs on an M of s (a G, or a callback on the M); NULL elsewhere
 * (then the process's TimerThread: the fallback). */
union pt__ptimers *pt__here_timers(pt_sched *s);

#endif
