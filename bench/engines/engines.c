/* The engine registry, and the plain sleep used by designs whose timers
 * fire on a thread of their own. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "engine.h"

static const struct engine *const engines[] = {
    &engine_pheap,      &engine_pheap_sync, &engine_pheap_staged, &engine_timerthread,
    &engine_globalheap, &engine_floor,      &engine_kernel,    &engine_pwheel,
    &engine_lheap,
};

const struct engine *engine_find(const char *name)
{
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (strcmp(engines[i]->name, name) == 0)
            return engines[i];
    return NULL;
}

void bench_sleep_until(pt_nanos until)
{
    struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}
