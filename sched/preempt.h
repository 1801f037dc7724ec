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

#endif
