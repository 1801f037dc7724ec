/* The scheduler in a few lines: Gs that sleep, and Gs that park until
 * another G wakes them. A relay of ten Gs passes a baton: each parks until
 * the one before it readies it, sleeps a millisecond, and readies the
 * next; a wait group tells main when all have run. It runs once per timer
 * mode. Built against the installed package by CI. */
#include <ptimer/sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define RUNNERS 10

static pt_g *_Atomic parked[RUNNERS]; /* runner i, once it is parked */
static pt_wg done;
static atomic_int order[RUNNERS], next_place;

struct publish {
    pt_g *_Atomic *slot;
    pt_g *self;
};

/* pt_park's commit runs once the G is off its stack: only from then on
 * may another G ready it, so this is where it says where it is. */
static bool publish(void *arg)
{
    struct publish *p = arg;
    atomic_store(p->slot, p->self);
    return true;
}

static void runner(void *arg)
{
    int i = (int)(intptr_t)arg;
    if (i > 0) {
        struct publish p = {&parked[i], pt_g_current()};
        pt_park(publish, &p); /* until runner i-1 passes the baton */
    }
    pt_sleep(1000000); /* 1 ms */
    atomic_store(&order[i], atomic_fetch_add(&next_place, 1));
    if (i + 1 < RUNNERS) {
        pt_g *next;
        while (!(next = atomic_exchange(&parked[i + 1], NULL)))
            pt_yield(); /* it has not parked yet */
        pt_ready(next);
    }
    pt_wg_done(&done);
}

static int relay(enum pt_timer_mode mode)
{
    pt_sched_options opt = {.procs = 2, .timers = mode}; /* 64 KiB stacks */
    pt_sched *s;
    if (pt_sched_create(&s, &opt) != 0)
        return -1;
    atomic_store(&next_place, 0);
    pt_wg_init(&done);
    pt_wg_add(&done, RUNNERS);
    for (int i = RUNNERS - 1; i >= 0; i--)
        pt_go(s, runner, (void *)(intptr_t)i);
    pt_wg_wait(&done); /* a plain thread may wait on a wait group too */
    pt_sched_wait(s);
    pt_sched_stats st;
    pt_sched_read_stats(s, &st);
    printf("%s: %llu Gs, timers run by their own P %llu, by another %llu\n",
           mode == PT_TIMERS_PER_P   ? "per-P timers"
           : mode == PT_TIMERS_LHEAP ? "Go 1.23 heaps"
                                     : "TimerThread ",
           (unsigned long long)st.gs_created, (unsigned long long)st.timers_run_owner,
           (unsigned long long)st.timers_run_stolen);
    int ok = pt_sched_destroy(s) == 0;
    for (int i = 0; i < RUNNERS; i++)
        ok &= atomic_load(&order[i]) == i; /* the baton went in order */
    return ok ? 0 : -1;
}

int main(void)
{
    if (relay(PT_TIMERS_PER_P) != 0 || relay(PT_TIMERS_LHEAP) != 0 ||
        relay(PT_TIMERS_TIMERTHREAD) != 0)
        return EXIT_FAILURE;
    return EXIT_SUCCESS;
}
