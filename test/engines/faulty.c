/* Engines that are wrong in one way each, for the tests of --engine:
 * Seastar's timer set (the example) with one fault chosen at build time.
 * Those the loader must refuse: FAULT_ABI, FAULT_SIZE, FAULT_NO_CANCEL,
 * FAULT_CLASH, FAULT_NO_ENTRY. Those that load and then fail a run:
 * FAULT_CRASH and FAULT_HANG (the 2000th arm crashes, or never returns).
 * And two correct designs: FAULT_NO_TM, with no timer objects, and
 * FAULT_V1, built for engine ABI 1 (a table without set_slack). */
#define pt_engine_v2 timerset_entry /* the example's own entry, renamed */
#include "../../examples/engine/timerset.c"
#undef pt_engine_v2

#include <signal.h>
#include <unistd.h>

static atomic_int arms;

static void fault(void)
{
    if (atomic_fetch_add(&arms, 1) != 2000)
        return;
#ifdef FAULT_CRASH
    raise(SIGSEGV);
#endif
#ifdef FAULT_HANG
    for (;;)
        pause();
#endif
}

static pt_engine_handle f_schedule(void *th, pt_engine_time when, pt_engine_time period, void *arg)
{
    fault();
    return t_schedule(th, when, period, arg);
}

static int f_tm_arm(void *th, void *tm, pt_engine_time when, pt_engine_time period, void *arg)
{
    fault();
    return t_tm_arm(th, tm, when, period, arg);
}

static struct pt_engine faulty;

#ifndef FAULT_NO_ENTRY
#ifdef FAULT_V1
#define FAULTY_ENTRY pt_engine_v1
const struct pt_engine *pt_engine_v1(void);
#else
#define FAULTY_ENTRY pt_engine_v2
#endif
__attribute__((visibility("default"))) const struct pt_engine *FAULTY_ENTRY(void)
{
    faulty = timerset;
    faulty.name = FAULT_NAME;
    faulty.schedule = f_schedule;
    faulty.tm_arm = f_tm_arm;
#ifdef FAULT_ABI
    faulty.abi = PT_ENGINE_ABI + 1;
#endif
#ifdef FAULT_SIZE
    faulty.size -= 8;
#endif
#ifdef FAULT_V1 /* what ABI 1 ended with: every op before set_slack */
    faulty.abi = 1;
    faulty.size = offsetof(struct pt_engine, set_slack);
#endif
#ifdef FAULT_NO_CANCEL
    faulty.cancel = NULL;
#endif
#ifdef FAULT_NO_TM /* not a fault: a design without timer objects */
    faulty.tm_new = NULL;
    faulty.tm_arm = NULL;
    faulty.tm_stop = NULL;
    faulty.tm_free = NULL;
    faulty.tm_start = NULL;
    faulty.tm_reset = NULL;
    faulty.tm_firing = NULL;
    faulty.move = NULL;
#endif
    return &faulty;
}
#endif
