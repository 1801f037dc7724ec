/* Sleeps: a G's is a timed park (park.c) that nobody else wakes; a plain
 * thread's is clock_nanosleep, as bthread_usleep outside a bthread. */
#include <errno.h>
#include <time.h>

#include "sched/internal.h"

/* g sleeps until `when`, which had not come at the caller's last clock
 * read. Nobody else wakes a sleeper: every return is its deadline, whose
 * timer fires only once `when` has passed (no clock read needed to
 * know), or a failure to arm it, retried. A clock read is a good part of
 * a sleep's whole cost (bench/journal/2026-11-25-tsc-clock-and-timerthread-reclaim.md,
 * "What a clock read costs"). */
static void sleep_g(pt_g *g, pt_nanos when)
{
    pt__g_waits(g, PT__WAIT_SLEEP, NULL, true);
    while (!(pt__park_until(g, NULL, NULL, when) && g->park.deadline_hit) && pt__now(g->s) < when)
        ;
}

int pt_sleep_until(pt_nanos when)
{
    pt_g *g = pt_g_current();
    if (!g) {
        /* a plain thread: sleep it (bthread_usleep outside a bthread) */
        struct timespec ts = {when / 1000000000, when % 1000000000};
        while (pt_nanotime() < when &&
               clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        return 0;
    }
    pt_nanos now = pt__now(g->s);
    if (now < when) {
        g->clock_hint = now;
        sleep_g(g, when);
    }
    return 0;
}

int pt_sleep(pt_nanos d)
{
    if (d <= 0)
        return 0;
    pt_g *g = pt_g_current();
    pt_nanos now = pt__now(g ? g->s : NULL), when;
    if (__builtin_add_overflow(now, d, &when))
        when = PT_MAXWHEN; /* past the clock's range: never */
    if (!g)
        return pt_sleep_until(when);
    g->clock_hint = now;
    sleep_g(g, when); /* d > 0: when is still to come */
    return 0;
}
