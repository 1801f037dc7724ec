/* The monitor (Go's sysmon). C has no preemption, so a G that computes
 * for a long time keeps its M, and the timers of its P wait for it (the
 * Go 1.14 regression, golang/go#38860, was timers tens of ms late on busy
 * Ps). Each round the monitor looks for a P with a timer overdue by more
 * than its own period whose M has not scheduled since the last round: a
 * P stuck in one G. If some P is idle, it wakes an idle M, which steals
 * and runs those timers (findrunnable's last steal pass); if every P is
 * busy, it runs them itself: their callbacks ready Gs onto the global
 * queue, so the Gs run the moment any P frees up. A stuck P with Gs
 * waiting in its queue while another P idles gets the same wake-up: the
 * idle M steals them (where Go would preempt the stuck G).
 *
 * Gs parked on fds have the same problem: an M polls the network only
 * when it finds no G to run (or, idle, sleeps in the netpoller), so a P
 * that always has a G runnable -- one that yields in a loop, say -- never
 * looks. As Go's sysmon does, the monitor polls the network itself when
 * descriptors are registered and nobody has polled for 10 ms; the Gs it
 * readies go on the global queue.
 *
 * A G in a preemptible region (preempt.c) that has held a busy P for the
 * slice while Gs wait is preempted, so those Gs, the ones the timers
 * above readied among them, get the P.
 *
 * Its period starts at 20 us and doubles after 50 quiet rounds, up to
 * 10 ms, as Go's does, but it wakes for the next timer of a stuck P when
 * that comes sooner; with every P idle it sleeps until an M wakes (the
 * netpoller covers the timers then).
 *
 * The monitor asks the kernel for a short slice (EEVDF's custom slice,
 * Linux 6.12): a thread woken with a shorter slice than the running
 * one's gets an earlier deadline, so it can preempt that thread at once.
 * With the default slice, when every core runs a G that computes -- the
 * very case the monitor is for -- its wake-up could wait for the next
 * tick, and busy-lateness's p99 sat at one tick whenever Ps = cores. The
 * slice takes part of that tail, not all of it; the rest goes only with
 * a real-time monitor (pt_sched_set_monitor_priority; opt-in, since it
 * needs the privilege and a library should not raise its own threads).
 * Figures: bench/journal/2026-11-28-figures-behind-comments.md. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <limits.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/futex.h"
#include "sched/internal.h"

#define SYSMON_MIN_NS 20000
#define SYSMON_MAX_NS 10000000
#define SYSMON_NETPOLL_NS 10000000 /* Go's: poll if nobody has for 10 ms */
/* Stacks prepared per round: each is a guard and a page fault, so the
 * round stays short beside the monitor's other work. */
#define SYSMON_PREPARE 64
/* The look at canary stacks' guard pages (stack.h): up to 32 reservations
 * (about 900 stacks each, one mincore walking mostly empty page tables)
 * every 100 ms: a bounded share of a core whatever the number of Gs, and
 * a round over a million of them in seconds. */
#define SYSMON_SWEEP_NS 100000000
#define SYSMON_SWEEP_CHUNKS 32

/* sched_setattr's argument (Linux's struct sched_attr, first version). */
struct slice_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

/* Best effort: a kernel without the call or the field keeps the default
 * slice. Only a normal-policy thread (one created by a real-time caller
 * keeps its policy), and its nice value is kept. */
static void short_slice(pt_sched *s)
{
#ifdef SYS_sched_setattr
    struct slice_attr a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0 || a.policy != SCHED_OTHER)
        return;
    s->sysmon.nice = a.nice;
    a.size = sizeof a;
    a.runtime = PT__SYSMON_SLICE_NS;
    (void)syscall(SYS_sched_setattr, 0, &a, 0);
#else
    (void)s;
#endif
}

void pt__sysmon_kick(pt_sched *s)
{
    atomic_fetch_add_explicit(&s->sysmon.word, 1, memory_order_release);
    pt__futex_wake(&s->sysmon.word, 1);
}

/* Sleeps `ns`, or until every P is idle and then until kicked (or, with
 * finished Gs to free, until `trim_at`). */
static void sysmon_sleep(pt_sched *s, pt_nanos ns, pt_nanos trim_at)
{
    uint32_t seen = atomic_load_explicit(&s->sysmon.word, memory_order_acquire);
    if (atomic_load_explicit(&s->stopping, memory_order_acquire))
        return;
    if (atomic_load_explicit(&s->idle.npidle, memory_order_acquire) >=
        atomic_load_explicit(&s->nprocs, memory_order_acquire)) {
        atomic_store_explicit(&s->sysmon.sleeping, 1, memory_order_seq_cst);
        /* looked at again after announcing the sleep: an M that left the
         * idle state before the announcement is seen here */
        if (atomic_load_explicit(&s->idle.npidle, memory_order_seq_cst) >=
            atomic_load_explicit(&s->nprocs, memory_order_acquire))
            pt__futex_wait(&s->sysmon.word, seen, trim_at);
        atomic_store_explicit(&s->sysmon.sleeping, 0, memory_order_relaxed);
        return;
    }
    pt__futex_wait(&s->sysmon.word, seen, pt_nanotime() + ns);
}

/* Whether the G running on stuck P p should make way: it is in a
 * preemptible region, has held the P for the slice, no P is idle (an idle
 * M would take the work instead), and Gs wait -- on p's queue or the
 * global one, where the timers the monitor runs put theirs. */
static bool should_preempt(pt_sched *s, struct pt__p *p, pt_g *g, pt_nanos held)
{
    pt_nanos slice = atomic_load_explicit(&s->preempt_slice, memory_order_relaxed);
    return slice > 0 && held >= slice &&
           atomic_load_explicit(&g->preemptible, memory_order_relaxed) != 0 &&
           atomic_load_explicit(&s->idle.npidle, memory_order_acquire) == 0 &&
           (atomic_load_explicit(&s->globq.len, memory_order_relaxed) != 0 || !pt__runq_empty(p));
}

void *pt__sysmon_main(void *arg)
{
    pt_sched *s = arg;
    pthread_setname_np(pthread_self(), "pt_sysmon");
    short_slice(s);
    /* release: the nice value above is read by whoever sees the id */
    atomic_store_explicit(&s->sysmon.tid, (int32_t)syscall(SYS_gettid), memory_order_release);
    uint32_t last_tick[PT__MAX_PROCS];
    pt_nanos since[PT__MAX_PROCS]; /* when the monitor first saw that tick */
    memset(last_tick, 0, sizeof last_tick);
    memset(since, 0, sizeof since);
    pt_nanos period = SYSMON_MIN_NS, nap = period;
    int quiet = 0;
    pt_nanos trim_at = 0, swept = 0;
    while (!atomic_load_explicit(&s->stopping, memory_order_acquire)) {
        sysmon_sleep(s, nap, trim_at);
        pt_nanos now = pt_nanotime();
        trim_at = pt__g_trim(s, now);
        bool acted = false;
        pt_nanos next_due = 0; /* the earliest timer of a stuck P, still ahead */
        if (atomic_load_explicit(&s->nfds, memory_order_relaxed) != 0 &&
            now - atomic_load_explicit(&s->last_poll, memory_order_relaxed) > SYSMON_NETPOLL_NS)
            pt__poll_ready_fds(s);
        int n = atomic_load_explicit(&s->maxprocs_made, memory_order_acquire);
        for (int i = 0; i < n; i++) {
            struct pt__p *p = s->ps[i];
            uint32_t tick = atomic_load_explicit(&p->schedtick, memory_order_relaxed);
            bool stuck = tick == last_tick[i];
            if (!stuck) {
                last_tick[i] = tick;
                since[i] = now;
            }
            pt_g *g = atomic_load_explicit(&p->m->curg, memory_order_acquire);
            if (!stuck || !g)
                continue;
            /* Stuck: its M has run one G since the last round. Its
             * timers wait for the monitor, not for a period of slack. */
            /* virtual timers are never late in real time: they fall due
             * only when the clock jumps, run by the M that moved it */
            pt_nanos next = s->opt.virtual_time ? 0 : pt__ptimers_next(pt__lheap(s), &p->timers);
            bool overdue = next != 0 && next <= now;
            if (next > now && (next_due == 0 || next < next_due))
                next_due = next;
            bool idle_ps = atomic_load_explicit(&s->idle.npidle, memory_order_acquire) > 0;
#ifdef PT_TEST_HOOKS
            if (atomic_load_explicit(&p->m->pre.alarms_only, memory_order_relaxed)) {
                /* the first alarm only: the M's own arming does the rest */
                if (atomic_load_explicit(&p->m->pre.alarm_preempts, memory_order_relaxed) == 0 &&
                    atomic_load_explicit(&g->preemptible, memory_order_relaxed) != 0)
                    pt__alarm_watch(p->m, g, since[i], now, tick);
                continue;
            }
#endif
            /* Gs queued behind the stuck one, with a P idle: an idle M is
             * woken to steal them (and the timers). */
            if (idle_ps && (overdue || !pt__runq_empty(p))) {
                acted = true;
                atomic_fetch_add_explicit(&s->st.sysmon_wakeps, 1, memory_order_relaxed);
                pt__wakep(s);
            } else if (overdue) {
                acted = true;
                int ran = pt__ptimers_check(pt__lheap(s), &p->timers, now, false);
                if (ran > 0)
                    atomic_fetch_add_explicit(&s->st.timers_sysmon, (uint64_t)ran,
                                              memory_order_relaxed);
            }
            if (should_preempt(s, p, g, now - since[i])) {
                acted = true;
                pt__preempt_request(p->m, g, tick);
            } else if (atomic_load_explicit(&g->preemptible, memory_order_relaxed) != 0) {
                /* computing in a region: the M's alarm takes over from
                 * here, should this thread not get a CPU in time */
                pt__alarm_watch(p->m, g, since[i], now, tick);
            }
        }
        /* A burst of new Gs: the monitor prepares the stacks they will
         * take (stack.c), on a core the Ps leave it, while it lasts. */
        if (pt__stack_prepare(&s->stacks, SYSMON_PREPARE))
            acted = true;
        if (now - swept >= SYSMON_SWEEP_NS) {
            swept = now;
            void *lo = pt__stack_sweep(&s->stacks, SYSMON_SWEEP_CHUNKS);
            if (lo)
                pt__sched_overflow(pt__g_on_stack(lo, s->stacks.size),
                                   "the monitor's look: a G overflowed its stack (the canary page "
                                   "below it was touched)");
        }
        if (acted) {
            period = SYSMON_MIN_NS;
            quiet = 0;
        } else if (++quiet > 50 && period < SYSMON_MAX_NS) {
            period = period * 2 > SYSMON_MAX_NS ? SYSMON_MAX_NS : period * 2;
        }
        /* A stuck P's next timer would otherwise wait out a long period. */
        nap = period;
        if (next_due != 0 && next_due - now < nap)
            nap = next_due - now < SYSMON_MIN_NS ? SYSMON_MIN_NS : next_due - now;
    }
    return NULL;
}

int pt_sched_set_monitor_priority(pt_sched *s, int priority)
{
    if (!s || s->magic != PT__SCHED_MAGIC || priority < 0 ||
        priority > sched_get_priority_max(SCHED_FIFO))
        return -EINVAL;
#ifdef SYS_sched_setattr
    /* the monitor starts with the scheduler; its id follows at once */
    int32_t tid;
    while ((tid = atomic_load_explicit(&s->sysmon.tid, memory_order_acquire)) == 0)
        sched_yield();
    struct slice_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    if (priority > 0) {
        a.policy = SCHED_FIFO;
        a.priority = (uint32_t)priority;
    } else {
        a.policy = SCHED_OTHER;
        a.nice = s->sysmon.nice;
        a.runtime = PT__SYSMON_SLICE_NS;
    }
    if (syscall(SYS_sched_setattr, tid, &a, 0) == 0)
        return 0;
    int err = errno;
    if (priority == 0 && err == EINVAL) { /* no custom slice on this kernel */
        a.runtime = 0;
        if (syscall(SYS_sched_setattr, tid, &a, 0) == 0)
            return 0;
        err = errno;
    }
    return err == EPERM ? -EPERM : -err;
#else
    return priority == 0 ? 0 : -EPERM;
#endif
}
