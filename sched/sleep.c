/* Sleeps, on either timer design. In a G, pt_sleep parks it and the
 * wake-up timer is armed by park's commit, on the M, once the G is off its
 * stack: a timer that fires at once can then ready a G that is really
 * parked, never one still running (Go arms it in gopark's unlock function,
 * bthread defers it as a "remained" function for the same reason).
 *
 * PT_TIMERS_PER_P: the timer is the G's own pt_timer, armed on the P the
 * G parked on; it fires wherever that heap's timers run (its own M, a
 * thief, the netpoller M or sysmon), and readies the G there.
 * PT_TIMERS_TIMERTHREAD: a task on the process's TimerThread, whose thread
 * readies the G remotely, as bthread_usleep does. */
#include <errno.h>
#include <time.h>

#include "sched/internal.h"

static void sleep_fired(void *arg, uintptr_t seq)
{
    (void)seq;
    pt_g *g = arg;
    if (pt_ready(g) != 0)
        pt__sched_bad(g, "sleep wake-up");
}

static void sleep_task(void *arg)
{
    sleep_fired(arg, 0);
}

void pt__g_timer_init(pt_g *g)
{
    pt_timer_init(&g->timer, sleep_fired, g);
}

void pt__g_timer_fini(pt_g *g)
{
    pt_timer_stop_sync(&g->timer);
}

/* park's commit: the G is off its stack and Waiting. */
static bool arm_sleep(void *arg)
{
    pt_g *g = arg;
    struct pt__m *m = pt__cur_m();
    if (g->s->opt.timers == PT_TIMERS_TIMERTHREAD &&
        pt_timerthread_schedule(g->s->tt, sleep_task, g, g->sleep_until) != PT_INVALID_TASK_ID)
        return true;
    /* per-P (or the TimerThread out of memory): this P's heap. A timer in
     * no heap needs room to be pushed; without it, the G resumes and
     * tries again (pt_sleep's loop). */
    return pt_timer_reset(&m->p->timers, &g->timer, g->sleep_until) >= 0;
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
    while (pt_nanotime() < when) {
        g->sleep_until = when;
        pt_park(arm_sleep, g);
    }
    return 0;
}

int pt_sleep(pt_nanos d)
{
    if (d <= 0)
        return 0;
    return pt_sleep_until(pt_nanotime() + d);
}
