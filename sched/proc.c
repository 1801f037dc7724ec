/* An M's life (Go's schedule, findrunnable, stealWork, stopm, wakep,
 * wakeNetPoller), with one M bound to each P for life: Gs never block in
 * system calls here (I/O goes through the netpoller, sleeps through
 * timers), so Go's handoff of a P to a fresh M has no work to do, and an
 * idle P is simply one whose M sleeps.
 *
 * Finding work, in order: this P's due timers (the lock-free check when
 * nothing is due), every 61st round the global queue first (fairness),
 * this P's queue, the global queue, then, as a spinning M (at most half as
 * many spinning as busy Ps, as Go bounds them), four passes over the other
 * Ps in random order stealing half a queue, and on the last pass running
 * their due timers and taking their runnext. Nothing: the M goes idle.
 *
 * Going idle without losing a wake-up (the reason for every ordering
 * below). An idle M reads the parking word, counts itself idle (npidle),
 * stops spinning, and then looks at every queue and timer once more. A
 * waker publishes its G first and then reads npidle and nmspinning. One of
 * the two sees the other: either the M finds the G, or the waker signals
 * (bumps the parking word, so an M that read it earlier does not sleep).
 * With nothing found, one idle M owns the netpoller and sleeps in it until
 * the earliest timer of any P; the others park on the parking word, and
 * whoever drops the netpoller's claim next wakes one of them if any
 * parked while it held the claim (pt__poller_release). A new
 * earliest timer breaks the netpoller's sleep (pt_netpoll_wake, which
 * keeps the break if the poller has not started waiting yet).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <limits.h>

#include "base/futex.h"
#include "base/lock.h"
#include "base/rng.h"
#include "sched/fault.h"
#include "sched/internal.h"

static inline int32_t load_i32(_Atomic int32_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

/* Ps made so far (never fewer: a removed P stays, retired, until
 * destroy); scans for queues and timers cover them all, since a P being
 * removed may still hold work until its M retires it. */
static inline int made_procs(pt_sched *s)
{
    return atomic_load_explicit(&s->maxprocs_made, memory_order_acquire);
}

/* ---- waking an idle M ---------------------------------------------------- */

void pt__wakep(pt_sched *s)
{
    /* A full fence between the caller's publication (a queued G, an armed
     * timer) and these loads: the idle M's side is a read-modify-write of
     * npidle followed by its last look at the queues (see the top). */
    atomic_thread_fence(memory_order_seq_cst);
    if (load_i32(&s->idle.npidle) <= 0 || load_i32(&s->idle.nmspinning) != 0)
        return;
    /* One signal in flight at a time: the woken M clears the flag once it
     * runs, so a burst of readies costs one futex wake, not one each. A
     * wakep that finds a signal in flight joins it (the flag counts to 2,
     * no further) and leaves its G to that signal. */
    uint32_t w = atomic_load_explicit(&s->idle.wakeup_pending, memory_order_acquire);
    do {
        if (w >= 2)
            return;
    } while (!atomic_compare_exchange_weak_explicit(&s->idle.wakeup_pending, &w, w + 1,
                                                    memory_order_acq_rel, memory_order_acquire));
    if (w != 0)
        return;
    for (;;) {
        /* seq_cst, the bump and the load of `polling` below: an M that
         * claims `polling` after that load reads the parking word after
         * its claim, and one of the two sees the other */
        atomic_fetch_add_explicit(&s->idle.park_word, 1, memory_order_seq_cst);
        if (pt__futex_wake(&s->idle.park_word, 1) > 0)
            return;
        /* Nobody was parked: the idle M is the poller, or one about to
         * park or poll (the bumped word sends it straight back). */
        if (atomic_load_explicit(&s->idle.polling, memory_order_seq_cst)) {
            pt_netpoll_break(s->np); /* the poller clears the flag when it wakes */
            return;
        }
        /* The signal reached nobody. Take the flag down by one: from 1 to
         * 0 when no wakep joined; from 2 to 1 when one did, and signal
         * again, since an M that went idle after the bump above (its last
         * look before the joiner's G) would sleep with that G queued. A
         * flag already at 0 was taken down by an M that woke (it looks for
         * work after, see find_runnable), which covers any joiner. */
        w = 1;
        while (w != 0 &&
               !atomic_compare_exchange_weak_explicit(&s->idle.wakeup_pending, &w, w - 1,
                                                      memory_order_acq_rel, memory_order_acquire))
            ;
        if (w != 2)
            return;
    }
}

void pt__wake_all(pt_sched *s)
{
    atomic_fetch_add_explicit(&s->idle.park_word, 1, memory_order_release);
    pt__futex_wake(&s->idle.park_word, INT_MAX);
    pt_netpoll_break(s->np);
    int n = made_procs(s);
    for (int i = 0; i < n; i++) {
        struct pt__m *m = s->ps[i]->m;
        atomic_fetch_add_explicit(&m->retired_word, 1, memory_order_release);
        pt__futex_wake(&m->retired_word, INT_MAX);
    }
}

/* The wake function of every P's heap: Go's wakeNetPoller. `when` is now
 * the earliest time of that heap. If an M sleeps in the netpoller, break
 * its sleep unless it wakes by `when` anyway; otherwise get an idle M
 * going, which will poll with the new time. */
void pt__wake_timers(void *ctx, pt_nanos when)
{
    struct pt__p *p = ctx;
    pt_sched *s = p->s;
    /* A virtual timer still to come falls due only when an idle M moves
     * the clock, and that M runs it: nobody need wake for it. */
    if (s->opt.virtual_time && when > pt__now(s))
        return;
    /* a read-modify-write: ordered after the caller's heap update, as the
     * poller orders its claim before its look at the heaps */
    if (atomic_fetch_add_explicit(&s->idle.polling, 0, memory_order_seq_cst))
        pt_netpoll_wake(s->np, when);
    else
        pt__wakep(s);
}

/* Where a G made runnable goes: on the caller's P when the caller is an
 * M of s, else the global queue. On the P, first in line (Go's ready: a
 * G readied by a channel operation runs next, on the same core as its
 * partner), but at the back when a timer readied it. Go puts those first
 * too, and then every fired sleeper jumped the queue: with a thousand
 * sleepers on one P, half the wakes ran at once and the Gs pushed back
 * waited behind them, a tail far longer than the one in line
 * (bench/journal/2026-11-28-figures-behind-comments.md). */
void pt__g_put_runnable(pt_sched *s, pt_g *g)
{
    struct pt__m *m = pt__cur_m();
    if (m && m->s == s && !atomic_load_explicit(&m->p->dead, memory_order_relaxed)) {
        pt__runq_put(m->p, g, !m->running_timers);
        /* a virtual timer's G: its M, done with the timers, runs it or
         * wakes another for more (run_virtual_timers) */
        if (m->running_timers && s->opt.virtual_time)
            return;
    } else {
        pt__globq_put(s, g);
    }
    pt__wakep(s);
}

pt_g *pt__next_local(struct pt__m *m, pt_nanos now)
{
    pt_sched *s = m->s;
    struct pt__p *p = m->p;
    if (atomic_load_explicit(&s->stopping, memory_order_relaxed) ||
        p->id >= atomic_load_explicit(&s->nprocs, memory_order_relaxed) ||
        atomic_load_explicit(&p->schedtick, memory_order_relaxed) % 61 == 0)
        return NULL;
    pt_nanos due = pt__ptimers_next(pt__lheap(s), &p->timers);
    if (due != 0) {
        /* a hint some ns old at most: a timer it misses runs next round */
        if (now == 0)
            now = pt__now(s);
        if (due <= now)
            m->due_now = now; /* for the G switched to, or g0 */
    }
    return pt__runq_get(p);
}

/* ---- spinning ------------------------------------------------------------ */

static bool start_spinning(struct pt__m *m)
{
    pt_sched *s = m->s;
    if (m->spinning)
        return true;
    int32_t busy =
        atomic_load_explicit(&s->nprocs, memory_order_relaxed) - load_i32(&s->idle.npidle);
    if (2 * load_i32(&s->idle.nmspinning) >= busy)
        return false;
    m->spinning = true;
    uint64_t n =
        (uint64_t)atomic_fetch_add_explicit(&s->idle.nmspinning, 1, memory_order_acq_rel) + 1;
    uint64_t max = atomic_load_explicit(&s->st.spinning_max, memory_order_relaxed);
    while (n > max && !atomic_compare_exchange_weak_explicit(
                          &s->st.spinning_max, &max, n, memory_order_relaxed, memory_order_relaxed))
        ;
    return true;
}

/* Stops spinning (seq_cst: the decrement comes before the caller's last
 * look at the queues). Returns whether this was the last spinning M. */
static bool stop_spinning(struct pt__m *m)
{
    if (!m->spinning)
        return false;
    m->spinning = false;
    return atomic_fetch_sub_explicit(&m->s->idle.nmspinning, 1, memory_order_seq_cst) == 1;
}

/* Go's resetspinning: a spinning M found work. If it was the last one,
 * wake another, so that one M keeps looking while work may be left. */
static pt_g *found(struct pt__m *m, pt_g *g)
{
    if (stop_spinning(m))
        pt__wakep(m->s);
    return g;
}

/* ---- timers -------------------------------------------------------------- */

/* run_timers on virtual time: at the clock's now, under its lock (see
 * vtime.c), with the scheduler's TimerThread's due tasks when q is the
 * M's own P; with nothing due, a look without the lock. */
static int run_virtual_timers(struct pt__m *m, struct pt__p *q)
{
    pt_sched *s = m->s;
    pt_nanos now = pt__now(s), w = pt__ptimers_next(pt__lheap(s), &q->timers);
    pt_nanos tw = q == m->p ? pt_timerthread_next(s->tt) : 0;
    if ((w == 0 || w > now) && (tw == 0 || tw > now))
        return 0;
    pt__lock(&s->vt.lock);
    now = pt__now(s);
    m->running_timers = true;
    int n = pt__ptimers_check(pt__lheap(s), &q->timers, now, q == m->p);
    if (q == m->p && (tw = pt_timerthread_next(s->tt)) > 0 && tw <= now)
        n += pt_timerthread_run(s->tt, now);
    m->running_timers = false;
    pt__unlock(&s->vt.lock);
    if (n > 1)
        pt__wakep(s); /* more than this M's next G: another M may help */
    return n;
}

/* Runs the due timers of P q from this M (q's own M or not). */
static void run_timers(struct pt__m *m, struct pt__p *q, pt_nanos now)
{
    pt_sched *s = m->s;
    int n;
    if (s->opt.virtual_time) {
        n = run_virtual_timers(m, q);
    } else {
        m->running_timers = true;
        n = pt__ptimers_check(pt__lheap(s), &q->timers, now, q == m->p);
        m->running_timers = false;
    }
    if (n > 0)
        pt__count(q == m->p ? &m->p->n_timers_owner : &m->p->n_timers_stolen, (uint64_t)n);
}

void pt__run_due_timers(struct pt__m *m)
{
    pt_nanos now = m->due_now;
    if (now == 0)
        return;
    m->due_now = 0;
    run_timers(m, m->p, now);
}

pt_nanos pt__earliest_timer(pt_sched *s)
{
    pt_nanos min = s->opt.virtual_time ? pt_timerthread_next(s->tt) : 0;
    int n = made_procs(s);
    for (int i = 0; i < n; i++) {
        pt_nanos w = pt__ptimers_next(pt__lheap(s), &s->ps[i]->timers);
        if (w != 0 && (min == 0 || w < min))
            min = w;
    }
    return min;
}

/* Runs every P's due timers; true if any ran. */
static bool run_all_due_timers(struct pt__m *m, pt_nanos now)
{
    pt_sched *s = m->s;
    bool any = false;
    int n = made_procs(s);
    for (int i = 0; i < n; i++) {
        pt_nanos w = pt__ptimers_next(pt__lheap(s), &s->ps[i]->timers);
        if (w != 0 && w <= now) {
            run_timers(m, s->ps[i], now);
            any = true;
        }
    }
    if (s->opt.virtual_time) {
        pt_nanos w = pt_timerthread_next(s->tt);
        if (w != 0 && w <= now) {
            run_timers(m, m->p, now);
            any = true;
        }
    }
    return any;
}

/* ---- stealing ------------------------------------------------------------ */

/* Go's stealWork: four passes over the other Ps from a random start; the
 * last also runs their due timers and takes their runnext. */
static pt_g *steal_work(struct pt__m *m)
{
    pt_sched *s = m->s;
    struct pt__p *p = m->p;
    int n = made_procs(s);
    if (n < 2)
        return NULL;
    for (int pass = 0; pass < 4; pass++) {
        bool last = pass == 3;
        pt_nanos now = last ? pt__now(s) : 0;
        int start = (int)(pt__xorshift64(&m->rng) % (uint64_t)n);
        for (int k = 0; k < n; k++) {
            struct pt__p *q = s->ps[(start + k) % n];
            if (q == p)
                continue;
            if (last) {
                pt_nanos w = pt__ptimers_next(pt__lheap(s), &q->timers);
                if (w != 0 && w <= now) {
                    run_timers(m, q, now);
                    pt_g *g = pt__runq_get(p);
                    if (g)
                        return g;
                }
            }
            if (pt__runq_empty(q))
                continue;
            uint32_t stolen;
            pt_g *g = pt__runq_steal(p, q, last, &stolen);
            if (g) {
                pt__count(&p->n_steals, stolen);
                return g;
            }
        }
    }
    return NULL;
}

/* Whether any queue holds a G (the idle M's last look). */
static bool work_anywhere(pt_sched *s)
{
    if (atomic_load_explicit(&s->globq.len, memory_order_acquire))
        return true;
    int n = made_procs(s);
    for (int i = 0; i < n; i++)
        if (!pt__runq_empty(s->ps[i]))
            return true;
    return false;
}

/* ---- the poller's claim ----------------------------------------------------- */

/* An idle M that finds the claim taken parks on the parking word, with
 * no deadline, trusting the holder to be the one in the netpoller. The
 * holder may not be: the monitor's and find_runnable's non-blocking
 * polls take the claim too, and drop it without sleeping. So an M that
 * loses the claim says so (poll_wanted) and looks at the claim once more;
 * whoever drops the claim looks at poll_wanted and, if set, wakes a
 * parked M, which comes round to the claim again or finds work. Both
 * sides write, then read the other's word (seq_cst): either the M sees
 * the claim dropped and takes it, or the holder sees the M's want. The
 * wake is the parking word's own (a bump, then a futex wake), not
 * wakep's: wakep stands back while an M spins or a signal is on its way,
 * which says that work will be taken, not that anyone will poll.
 *
 * Without this, a monitor that polled while the last busy M went idle
 * left every thread asleep with no deadline and nobody in the netpoller:
 * ready descriptors and due timers were never seen again. */
void pt__poller_release(pt_sched *s)
{
    atomic_store_explicit(&s->idle.polling, 0, memory_order_seq_cst);
    if (atomic_load_explicit(&s->idle.poll_wanted, memory_order_seq_cst) &&
        atomic_exchange_explicit(&s->idle.poll_wanted, 0, memory_order_acq_rel)) {
        atomic_fetch_add_explicit(&s->idle.park_word, 1, memory_order_seq_cst);
        pt__futex_wake(&s->idle.park_word, 1);
    }
}

/* The idle M's claim: true if it now owns the netpoller; false if it
 * should park, having left its want for the holder (see above). */
static bool claim_poller(pt_sched *s)
{
    for (;;) {
        if (!atomic_exchange_explicit(&s->idle.polling, 1, memory_order_seq_cst))
            return true;
        atomic_store_explicit(&s->idle.poll_wanted, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&s->idle.polling, memory_order_seq_cst))
            return false;
    }
}

/* ---- I/O ---------------------------------------------------------------------- */

bool pt__poller_try(pt_sched *s)
{
    return !atomic_load_explicit(&s->idle.polling, memory_order_relaxed) &&
           !atomic_exchange_explicit(&s->idle.polling, 1, memory_order_acquire);
}

/* Events taken from the netpoller per call. */
#define POLL_BATCH 64

/* Hands each event to its registration's ready function (readies the Gs
 * it is for). */
static void dispatch(pt_sched *s, const pt_poll_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        struct pt__pollee *pe = ev[i].udata;
        if (pe)
            pe->ready(pe, s, ev[i].events);
    }
}

/* Go's non-blocking netpoll in findrunnable (and sysmon's): with
 * descriptors registered and nobody in the netpoller, take what is ready
 * now. */
bool pt__poll_ready_fds(pt_sched *s)
{
    if (atomic_load_explicit(&s->nfds, memory_order_relaxed) == 0 || !pt__poller_try(s))
        return false;
    pt_poll_event ev[POLL_BATCH];
    int n = pt_netpoll_wait(s->np, 0, ev, POLL_BATCH);
    atomic_store_explicit(&s->last_poll, pt_nanotime(), memory_order_relaxed);
    pt__poller_release(s);
    if (n <= 0)
        return false;
    dispatch(s, ev, n);
    return true;
}

union pt__ptimers *pt__here_timers(pt_sched *s)
{
    struct pt__m *m = pt__cur_m();
    if (!m || m->s != s || atomic_load_explicit(&m->p->dead, memory_order_relaxed))
        return NULL;
    return &m->p->timers;
}

/* ---- a removed P ----------------------------------------------------------- */

/* set_procs removed this M's P: hand its Gs to the global queue and its
 * timers to P 0, then wait until the P is wanted again or the scheduler
 * stops. */
static void retire(struct pt__m *m)
{
    pt_sched *s = m->s;
    struct pt__p *p = m->p;
    stop_spinning(m);
    atomic_store_explicit(&p->dead, 1, memory_order_release);
    /* its Gs' queued requests go in; completions come through the
     * netpoller from now on (readied Gs go to the global queue) */
    if (p->queue)
        while (p->queue->flush(p->queue), p->queue->owes(p->queue))
            pt__backoff(); /* the kernel refused them: nobody else would retry */
    pt__runq_put_slow_all(p);
    /* P 0 is never removed. Its wake function breaks the poller if it
     * gained an earlier timer. Moving needs room on P 0 (-ENOMEM leaves
     * every timer here): retry, the timers are never dropped. */
    while (pt__ptimers_move(pt__lheap(s), &s->ps[0]->timers, &p->timers) == -ENOMEM)
        sched_yield();
    pt__wakep(s);
    for (;;) {
        uint32_t seen = atomic_load_explicit(&m->retired_word, memory_order_acquire);
        if (atomic_load_explicit(&s->stopping, memory_order_acquire) ||
            p->id < atomic_load_explicit(&s->nprocs, memory_order_acquire))
            break;
        pt__futex_wait(&m->retired_word, seen, 0);
    }
    atomic_store_explicit(&p->dead, 0, memory_order_release);
}

/* ---- finding work ---------------------------------------------------------- */

/* Go's findrunnable: a G to run, or NULL once the scheduler stops. */
static pt_g *find_runnable(struct pt__m *m)
{
    pt_sched *s = m->s;
    struct pt__p *p = m->p;
    for (;;) {
        if (atomic_load_explicit(&s->stopping, memory_order_acquire))
            return found(m, NULL);
        if (p->id >= atomic_load_explicit(&s->nprocs, memory_order_acquire)) {
            retire(m);
            continue;
        }
        /* two atomic loads when nothing is due; a time read just before,
         * when a parking G found a timer due, saves a clock read */
        run_timers(m, p, m->due_now);
        m->due_now = 0;

        pt_g *g = NULL;
        if (atomic_load_explicit(&p->schedtick, memory_order_relaxed) % 61 == 0) {
            g = pt__globq_get(s, p, 1);
            if (p->queue)
                p->queue->flush(p->queue); /* a P never out of Gs still submits */
        }
        if (g || (g = pt__runq_get(p)) || (g = pt__globq_get(s, p, 0)))
            return found(m, g);
        /* out of Gs: what they queued on the ring goes in, what completed
         * comes back (one system call for every read and write queued) */
        if (p->queue && p->queue->flush(p->queue) && (g = pt__runq_get(p)))
            return found(m, g);
        if (pt__poll_ready_fds(s) && (g = pt__runq_get(p)))
            return found(m, g);
        if (start_spinning(m) && (g = steal_work(m)))
            return found(m, g);
        if (run_all_due_timers(m, pt__now(s)))
            continue;
        if (p->queue && p->queue->owes(p->queue)) {
            /* the kernel refused the round's submission (short of memory):
             * its Gs wait on it, so the M retries instead of sleeping */
            pt__backoff();
            continue;
        }

        /* Idle. The order is what keeps wake-ups: see the top. */
        uint32_t seen = atomic_load_explicit(&s->idle.park_word, memory_order_acquire);
        atomic_fetch_add_explicit(&s->idle.npidle, 1, memory_order_seq_cst);
        /* the increment before the looks below, on every target: a
         * seq_cst RMW alone does not order later relaxed loads (Arm) */
        atomic_thread_fence(memory_order_seq_cst);
        bool was_spinning = m->spinning;
        stop_spinning(m);
        pt_nanos now = pt__now(s), until = pt__earliest_timer(s);
        if (work_anywhere(s) || (until != 0 && until <= now) ||
            atomic_load_explicit(&s->stopping, memory_order_acquire) ||
            p->id >= atomic_load_explicit(&s->nprocs, memory_order_acquire)) {
            atomic_fetch_sub_explicit(&s->idle.npidle, 1, memory_order_seq_cst);
            if (was_spinning)
                start_spinning(m);
            continue;
        }
        /* Virtual time: every G blocked moves the clock (vtime.c). This M
         * runs what fell due, not spinning: finding its own G then wakes
         * nobody, as one the clock readied needs nobody else. */
        if (s->opt.virtual_time && pt__vt_idle(m)) {
            atomic_fetch_sub_explicit(&s->idle.npidle, 1, memory_order_seq_cst);
            continue;
        }
        if (claim_poller(s)) {
            /* The poller: its claim above comes before this look at the
             * heaps, as a timer's arming comes before its wake's look at
             * `polling` (pt__wake_timers). */
            until = pt__earliest_timer(s);
            now = pt__now(s);
            pt_poll_event ev[POLL_BATCH];
            /* A wakep that read `polling` before the claim signalled by the
             * parking word alone, which the netpoller does not watch: with
             * the word moved since `seen`, do not sleep (that wake-up was
             * lost: a G on the global queue while this M slept in the
             * netpoller with no timer due), but still take what is ready.
             * Skipping the poll altogether let two idle Ms hand the claim
             * back and forth, each release's bump (poll_wanted) sending the
             * other past its wait, with a ready descriptor never looked at. */
            pt_nanos timeout = 0;
            if (atomic_load_explicit(&s->idle.park_word, memory_order_seq_cst) == seen) {
                atomic_fetch_add_explicit(&s->st.netpoll_waits, 1, memory_order_relaxed);
                timeout = until == 0 || s->opt.virtual_time ? -1 : until > now ? until - now : 0;
            }
            int n = pt_netpoll_wait(s->np, timeout, ev, POLL_BATCH);
            atomic_store_explicit(&s->last_poll, pt_nanotime(), memory_order_relaxed);
            pt__poller_release(s);
            if (n > 0)
                dispatch(s, ev, n); /* readies the Gs the events are for */
        } else {
            atomic_fetch_add_explicit(&s->st.parks, 1, memory_order_relaxed);
            pt__futex_wait(&s->idle.park_word, seen, 0);
        }
        /* an exchange, not a store: it reads any wakep that joined the
         * signal, so the looks below see that wakep's G */
        atomic_exchange_explicit(&s->idle.wakeup_pending, 0, memory_order_acq_rel);
        if (atomic_fetch_sub_explicit(&s->idle.npidle, 1, memory_order_seq_cst) ==
                atomic_load_explicit(&s->nprocs, memory_order_relaxed) &&
            atomic_load_explicit(&s->sysmon.sleeping, memory_order_acquire))
            pt__sysmon_kick(s); /* the first M to leave a fully idle scheduler */
        /* Woken Ms look for work as spinning Ms (Go's startm(spinning)):
         * one that finds work then wakes the next (found), so work that
         * arrived in a burst, or that it takes in a batch from the global
         * queue, gets as many Ms as it needs. */
        start_spinning(m);
    }
}

void *pt__m_main(void *arg)
{
    struct pt__m *m = arg;
    pt__set_cur_m(m);
    pthread_setname_np(pthread_self(), "pt_sched_m");
    pt__fiber_init_thread(&m->g0);
    pt__alarm_init(m);
    pt__fault_stack_on();
    pt_g *g;
    while ((g = m->runnow) || (g = find_runnable(m))) {
        m->runnow = NULL;
        pt__run_due_timers(m); /* a G picked with timers due: they run first */
        pt__count32(&m->p->schedtick, 1);
        pt__execute(m, g);
    }
    pt__fault_stack_off();
    pt__alarm_fini(m);
    pt__set_cur_m(NULL);
    return NULL;
}
