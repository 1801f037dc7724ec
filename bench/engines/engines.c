/* The designs by name: those built in, then those loaded (engine_load.c);
 * and the plain sleep used by designs whose timers fire on a thread of
 * their own. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "loaded.h"

static const struct pt_engine *const engines[] = {
    &engine_pheap,      &engine_pheap_sync, &engine_pheap_staged, &engine_timerthread,
    &engine_globalheap, &engine_floor,      &engine_kernel,       &engine_pwheel,
    &engine_lheap,      &engine_kernel_slack,
};

const struct pt_engine *engine_find(const char *name)
{
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (strcmp(engines[i]->name, name) == 0)
            return engines[i];
    for (int i = 0; i < nloaded; i++)
        if (strcmp(loaded[i].e->name, name) == 0)
            return loaded[i].e;
    return NULL;
}

const struct pt_engine *engine_builtin(int i)
{
    return i >= 0 && i < (int)(sizeof engines / sizeof engines[0]) ? engines[i] : NULL;
}

void bench_sleep_until(pt_nanos until)
{
    struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}
