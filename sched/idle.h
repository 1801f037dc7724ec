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
