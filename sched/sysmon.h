/* The monitor's thread and its sleep: sysmon.c's. Only the monitor
 * writes them but the word, which pt__sysmon_kick bumps; the first M to
 * leave a fully idle scheduler reads sleeping to know it must kick
 * (proc.c). */
#ifndef PTIMER_SCHED_SYSMON_H
#define PTIMER_SCHED_SYSMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ptimer/sched.h"

/* The monitor's slice, asked of the kernel: Linux's least. */
#define PT__SYSMON_SLICE_NS 100000

struct pt__sysmon {
    pthread_t thread;
    _Atomic int32_t tid;   /* its thread's id, once it runs (0 before) */
    int32_t nice;          /* its nice value as created (a normal thread's again) */
    _Atomic uint32_t word; /* futex: it sleeps here when every P is idle */
    _Atomic uint32_t sleeping;
};

void *pt__sysmon_main(void *s);
void pt__sysmon_kick(pt_sched *s);

#endif
