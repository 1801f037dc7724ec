/* A P thread for tests: owns one pt_timers and runs the check loop a
 * scheduler would, on the real clock, sleeping on a futex until its next
 * timer and woken by the heap's wake callback. */
#ifndef PT_TEST_PLOOP_H
#define PT_TEST_PLOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "ptimer/ptimer.h"

struct ploop {
    pt_timers ts;
    pthread_t thread;
    _Atomic uint32_t wakeword; /* bumped by the wake callback */
    atomic_bool stop;
    atomic_long ran;           /* timers run so far */
    atomic_long wakes;         /* wake callbacks received */
    bool verify;               /* call pt_timers_verify now and then */
};

void ploop_start(struct ploop *p, bool verify);
/* Stops and joins the thread; the heap stays initialised. */
void ploop_stop(struct ploop *p);

#endif
