/* The timed park every waiting primitive stands on. A G parks until a
 * waker claims it or its deadline passes, whichever comes first: both
 * race for the park's one wake token (a CAS), and the winner readies the
 * G. Channels with deadlines, select and timed I/O are such parks; a
 * sleep (sleep.c) is one that nobody else wakes.
 *
 * The deadline is armed by park's commit, on the M, once the G is off its
 * stack and published by the caller's own commit: a deadline that fires
 * at once then readies a G that is really parked (Go arms a sleep in
 * gopark's unlock function; bthread defers it as a "remained" function for
 * the same reason).
 *
 * The wake token holds the number of the park it belongs to while nobody
 * has claimed it, and 0 once claimed. A waker claims whatever park is
 * current; a deadline claims only its own (its CAS expects its number), so
 * one that fires after its park ended -- stopped lazily, or armed after a
 * waker already won -- can never end a later park.
 *
 * PT_TIMERS_PER_P, PT_TIMERS_LHEAP: the G's own timer (of the P heaps'
 * family), armed on the P the G parked on with the park's number as its
 * seq; it fires wherever that heap's timers
 * run (its own M, a thief, the netpoller M or the monitor).
 * PT_TIMERS_TIMERTHREAD: a task on the process's TimerThread, whose thread
 * readies the G onto the global queue, as bthread_usleep does. A task
 * carries no seq, so the G, once awake, unschedules it and waits out one
 * that is running before it may park again. */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "sched/internal.h"

/* The deadline of park number seq of g fell due. */
static void deadline_fired(void *arg, uintptr_t seq)
{
    pt_g *g = arg;
    /* acq_rel: pairs with the parking G's release of the token, so the
     * park's fields are seen; a park that ended, or a waker that came
     * first, fails the CAS */
    if (!atomic_compare_exchange_strong_explicit(&g->park.wake_token, &seq, 0, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return;
    g->park.timed_out = true;
    g->park.deadline_hit = true;
    if (pt_ready(g) != 0)
        pt__sched_bad(g, "deadline");
}

static void deadline_task(void *arg)
{
    pt_g *g = arg;
    /* no seq on a task: the G waits out a running one before it parks
     * again (pt__park_until), so the park now current is this task's */
    deadline_fired(g, g->park.seq);
    /* release: the G, waiting for this to reach zero, sees the above */
    atomic_fetch_sub_explicit(&g->park.tt_pending, 1, memory_order_release);
}

bool pt__g_claim(pt_g *g)
{
    uintptr_t t = atomic_load_explicit(&g->park.wake_token, memory_order_acquire);
    while (t != 0)
        if (atomic_compare_exchange_weak_explicit(&g->park.wake_token, &t, 0, memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    return false;
}

/* Arms the park's deadline (on the M). False: it could not be armed (no
 * room for the timer), and the wake-up is taken as a timeout. */
static bool arm_deadline(pt_g *g)
{
    if (g->s->opt.timers == PT_TIMERS_TIMERTHREAD) {
        atomic_fetch_add_explicit(&g->park.tt_pending, 1, memory_order_relaxed);
        g->park.tt_task = pt_timerthread_schedule_slack(g->s->tt, deadline_task, g,
                                                        g->park.deadline, g->s->opt.timer_slack);
        if (g->park.tt_task != PT_INVALID_TASK_ID)
            return true;
        atomic_fetch_sub_explicit(&g->park.tt_pending, 1, memory_order_relaxed);
        /* out of memory: the P's heap instead */
    }
    struct pt__m *m = pt__cur_m(); /* on the M, not the G: no migration here */
    if (!g->park.timer_made) { /* the G's first deadline on a heap */
        pt__ptimer_init(pt__lheap(g->s), &g->park.timer, deadline_fired, g);
        g->park.timer_made = true;
    }
    if (pt__ptimer_modify(pt__lheap(g->s), &m->p->timers, &g->park.timer, g->park.deadline, 0,
                          deadline_fired, g, g->park.seq) >= 0)
        return true;
    uintptr_t seq = g->park.seq;
    if (atomic_compare_exchange_strong_explicit(&g->park.wake_token, &seq, 0, memory_order_acq_rel,
                                                memory_order_relaxed))
        g->park.timed_out = true;
    return false;
}

/* park's commit for a timed park: the caller's commit (it publishes the
 * G), then the deadline. From the publication on, a waker or the deadline
 * may ready the G while this still runs: `arming`, cleared last, tells
 * the G when this M is done with it. */
static bool commit_timed(void *arg)
{
    pt_g *g = arg;
    bool park = !g->park.timed_commit || g->park.timed_commit(g->park.timed_commit_arg);
    if (park && g->park.deadline != 0 && !arm_deadline(g) && g->park.timed_out)
        park = false; /* no deadline could be armed: resume at once, timed out */
    /* release: the G, once it sees 0, sees tt_task and timed_out */
    atomic_store_explicit(&g->park.arming, 0, memory_order_release);
    return park;
}

bool pt__park_until(pt_g *g, bool (*commit)(void *), void *arg, pt_nanos deadline)
{
    g->park.timed_commit = commit;
    g->park.timed_commit_arg = arg;
    g->park.deadline = deadline;
    g->park.timed_out = false;
    g->park.deadline_hit = false;
    if (++g->park.seq == 0)
        g->park.seq = 1; /* 0 is "claimed" */
    atomic_store_explicit(&g->park.arming, 1, memory_order_relaxed);
    /* release: whoever claims the token sees the fields above */
    atomic_store_explicit(&g->park.wake_token, g->park.seq, memory_order_release);
    pt__park(g, commit_timed, g);
    /* readied before the M that parked it was done arming: let it finish
     * (a few hundred ns on another thread) */
    for (int spins = 0; atomic_load_explicit(&g->park.arming, memory_order_acquire); spins++)
        if (spins > 100)
            sched_yield();
    /* The park is over: its deadline must not outlive it. Per-P, the
     * seq check makes a late firing harmless and a lazy stop is enough;
     * a TimerThread task is taken back, or waited out if it runs. */
    if (deadline != 0 && !g->park.timed_out) {
        if (g->s->opt.timers == PT_TIMERS_TIMERTHREAD && g->park.tt_task != PT_INVALID_TASK_ID &&
            atomic_load_explicit(&g->park.tt_pending, memory_order_acquire) != 0) {
            if (pt_timerthread_unschedule(g->s->tt, g->park.tt_task) == 0)
                atomic_fetch_sub_explicit(&g->park.tt_pending, 1, memory_order_relaxed);
        } else if (g->park.timer_made) {
            pt__ptimer_stop(pt__lheap(g->s), &g->park.timer);
        }
    }
    /* A deadline task running now on the TimerThread: it readied this G
     * and is on its way out (waking an M). Other Gs run meanwhile; and
     * every few rounds the thread gives up its CPU too, since the woken
     * M may have taken the TimerThread's core -- then, on one P, yields
     * alone would spin until the kernel's next tick (4 ms at HZ=250). */
    for (unsigned spins = 1; atomic_load_explicit(&g->park.tt_pending, memory_order_acquire) != 0;
         spins++) {
        pt_yield();
        if (spins % 8 == 0)
            sched_yield();
    }
    g->park.tt_task = PT_INVALID_TASK_ID;
    return g->park.timed_out;
}
