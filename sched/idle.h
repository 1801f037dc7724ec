/* Idle Ms, spinning Ms and the netpoller's claim: proc.c's (its comment
 * says why each ordering holds). Written by Ms going idle and waking, by
 * wakers on every ready (pt__wakep) and by the monitor (sysmon.c), all
 * through proc.c's functions; the monitor and preempt.c read npidle
 * without them. */
#ifndef PTIMER_SCHED_IDLE_H
#define PTIMER_SCHED_IDLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/sched.h"

struct pt__idle {
    /* Read by wakep on every ready, so on their own line. npidle counts
     * Ps whose M is idle (parked or polling). */
    _Alignas(64) _Atomic int32_t npidle;
    _Atomic int32_t nmspinning;
    _Atomic uint32_t
        wakeup_pending; /* a wakep's signal is on its way (1), and others joined it (2) */
    /* bthread's ParkingLot: idle Ms read the word, look for work once
     * more, and sleep only while it is unchanged; every signal adds 1. */
    _Alignas(64) _Atomic uint32_t park_word;
    /* 1 while a thread owns the netpoller: an idle M blocked in it (or
     * about to be), or a non-blocking poll (find_runnable's, the
     * monitor's). */
    _Atomic uint32_t polling;
    /* An idle M found `polling` taken and parked: whoever drops the claim
     * wakes a parked M (pt__poller_release). */
    _Atomic uint32_t poll_wanted;
};

#endif
