/* An M's preemption state, preempt.c's: the monitor's request to
 * preempt a G in a region, and the M's own alarm. Written by the M, the
 * monitor (sysmon.c) and the signal handler, as each field says; g.c
 * reads the alarm's time to disarm it when its G leaves. */
#ifndef PTIMER_SCHED_PREEMPT_H
#define PTIMER_SCHED_PREEMPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ptimer/clock.h"
#include "ptimer/sched.h"

/* A G in a preemptible region that has held its P this long while other
 * Gs wait is preempted (pt_sched_set_preempt_slice): about Linux's base
 * slice; Go's is 10 ms, but Go preempts whether or not anyone waits. */
#define PT__PREEMPT_SLICE_NS 500000

/* With a CPU to spare for the monitor, an M's alarm (preempt.c) fires
 * this much after the timer it is for, so that the monitor, which wakes
 * then too, acts first: it runs the timers due by its wake, a batch,
 * where the alarm's exact time would preempt the G for the first few. */
#define PT__ALARM_GRACE_NS 50000

/* An M's alarm is set at least this far ahead (the monitor's shortest
 * round): set sooner, with a tiny slice, it fired before the M had
 * switched to the G it was set for, and was lost. */
#define PT__ALARM_AHEAD_NS 20000

struct pt__m_preempt {
    pt_g *_Atomic preempt_g; /* the G the monitor asked to preempt */
    /* The M's alarm (preempt.c): a POSIX timer that sends this thread
     * SIGURG when a G computing in a region here should make way for its
     * P's timers or for Gs that wait -- the monitor's rule, kept without
     * the monitor having to get a CPU. None under TSan, or if
     * timer_create failed. */
    timer_t alarm;
    /* The time it is set for (0: off) and the G it would preempt, set
     * under alarm_lock; the handler takes alarm_g */
    _Atomic pt_nanos alarm_at;
    pt_g *_Atomic alarm_g;
    /* The P's schedtick when the alarm, or the monitor's request, was
     * made: a signal that finds another tick is for a run that ended */
    _Atomic uint32_t alarm_tick, preempt_tick;
    _Atomic uint32_t alarm_lock;   /* pt__lock: the M's and the monitor's arming and disarming */
    _Atomic uint32_t alarm_preempts; /* Gs it preempted */
    _Atomic bool has_alarm;        /* published after alarm (the monitor reads both) */
#ifdef PT_TEST_HOOKS
    /* The monitor leaves this M's stuck P, its timers and its region, to
     * the alarm, which it arms, and does nothing else (the scheduler built
     * for its tests only). */
    _Atomic bool alarms_only;
#endif
};

struct pt__m;

/* Installs the SIGURG handler, once per process: 0, -ENOTSUP (a
 * ThreadSanitizer build), or sigaction's error. */
int pt__preempt_install(void);
/* The monitor asks m to preempt g, which is in a region: names it and
 * signals m's thread. */
void pt__preempt_request(struct pt__m *m, pt_g *g, uint32_t tick);
/* On g0, after the handler switched a G out: SIGURG was blocked for the
 * handler, and no sigreturn on this thread will unblock it. */
void pt__preempt_unblock(void);
/* The calling M's alarm: made as it starts, deleted as it ends. */
void pt__alarm_init(struct pt__m *m);
void pt__alarm_fini(struct pt__m *m);
/* The M, resuming g inside its region (g was preempted): arms the alarm
 * for g's new run, when alarm_time (preempt.c) finds it one: Gs that
 * wait, or a timer on the P. */
void pt__alarm_resume(struct pt__m *m, pt_g *g);
/* The monitor, seeing g compute in a region on m since `since` (the P's
 * schedtick `tick`): arms m's alarm for that run if none is armed, or
 * the armed one is past, or this one is earlier. */
void pt__alarm_watch(struct pt__m *m, pt_g *g, pt_nanos since, pt_nanos now, uint32_t tick);
/* Disarms m's alarm, if armed: its G stopped running here, or left its
 * region, so the signal could only interrupt a system call. From m;
 * errno is kept. */
void pt__alarm_disarm(struct pt__m *m);

#endif
