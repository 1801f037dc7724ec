/* What proc.c (an M's life: schedule, findrunnable, idling, wakep)
 * offers the scheduler's other files. */
#ifndef PTIMER_SCHED_PROC_H
#define PTIMER_SCHED_PROC_H

#include <stdbool.h>

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
/* The earliest timer of any P, and of the driven TimerThread on virtual
 * time (0: none). */
pt_nanos pt__earliest_timer(pt_sched *s);
/* The heap a timer armed now belongs on: the calling M's P's, when the
 * caller runs on an M of s (a G, or a callback on the M); NULL elsewhere
 * (then the process's TimerThread: the fallback). */
union pt__ptimers *pt__here_timers(pt_sched *s);

/* ---- idle Ms and the netpoller's claim (their state: idle.h) ---- */
/* Gets an idle M looking for work if none is spinning. */
void pt__wakep(pt_sched *s);
/* Wakes every idle M (destroy, set_procs). */
void pt__wake_all(pt_sched *s);
/* Go's non-blocking netpoll: with descriptors registered and nobody in
 * the netpoller, takes what is ready now and readies its Gs (onto the
 * calling M's P, or the global queue from sysmon). True if any event. */
bool pt__poll_ready_fds(pt_sched *s);
/* The netpoller's claim (polling) for a poll that does not sleep: true
 * if the caller now holds it. */
bool pt__poller_try(pt_sched *s);
/* Drops the claim, any poller's: wakes a parked M if one parked because
 * the claim was taken (proc.c says why). */
void pt__poller_release(pt_sched *s);

#endif
