/* Asynchronous preemption of compute (Go 1.14's, for regions a G marks).
 *
 * Go can stop a goroutine at almost any instruction because its compiler
 * records, for each one, whether the stack and registers can be scanned
 * there. C has no such map, and most C code is not safe to leave at an
 * arbitrary point: a G stopped inside malloc, or holding any lock, would
 * leave that lock held while other Gs run on its M -- one of which may
 * spin on it forever. So preemption here is opt-in: a G brackets pure
 * computation with pt_preemptible_begin/end, and only inside such a region
 * may the monitor, or the M's own alarm (below), stop it.
 *
 * How: the monitor (sysmon.c) sees a P whose G has run for a whole slice
 * while other Gs wait and no P is idle; if the G is in a region, it names
 * the G in its M's preempt_g and sends the M's thread SIGURG (Go's choice:
 * ignored by default and rarely used otherwise). The handler runs on the
 * G's own stack, above the kernel's signal frame. If the request is still
 * for the G running here, the G is in a region and the interrupted stack
 * pointer lies in the G's stack (not g0's, not another handler's), the
 * handler switches to the M's g0 as a yield would (the clock's re-anchor,
 * the one write a region may reach through pt_nanotime, holds signals
 * off: base/tsc.c); the M puts the G on the global queue. When some M later
 * resumes the G, the switch returns into the handler, which returns, and
 * the kernel's sigreturn restores every register the interruption saved
 * -- on whichever thread that now is, which is why nothing in a region
 * may depend on the thread it runs on.
 *
 * SIGURG is blocked while the handler runs (no SA_NODEFER). A second
 * request landing inside a first handler, still on the G's stack, would
 * pass every check and switch the G out from there; resumed on another M,
 * the first handler would then switch to the g0 of the M it started on,
 * which another thread runs by then (seen on 16 cores as Gs run twice and
 * corrupt queues). A handler that switches out leaves SIGURG blocked on
 * its M, which unblocks it once back on g0 (pt__preempt_unblock); the G,
 * resumed elsewhere, gets the mask it was interrupted with from
 * sigreturn. Ms inherit their creator's mask, so that is the mask the new
 * M had too, unless the creating threads' masks differed. The switch
 * that resumes the G runs on the new M's thread with SIGURG open, and
 * ends inside the handler the G left (under ASan, with the annotation
 * that finishes the fiber switch). Until it has, the G's action still
 * says PREEMPT, and a request landing there is dropped: switching out
 * from there would start a switch inside the unfinished one, which
 * ASan's fiber bookkeeping refuses. The handler clears the action once
 * back.
 *
 * Which G a region is counted on. Begin and end change the depth of
 * the G that calls them, and inside a region (a nested begin; an end up
 * to its store) the handler may stop them between any two instructions
 * and some other M resume them. They find the G through its M, a
 * thread-local, and that M's curg: two reads, which a move can fall
 * between. The M read first runs another G by then, or none, and a G
 * that moves away and back meets its first M again, so no comparison of
 * Ms read before and after a read of curg can tell that it moved. So the
 * M and its curg are a hint only, and every answer region_self gives is
 * a fact about the stack the caller runs on, which no move changes: the
 * G whose stack holds the stack pointer is the caller (no two stacks
 * overlap); g0's stack holding it, or a thread that is no M, means no G
 * calls. A hint that proves neither is read again with SIGURG blocked
 * on the thread, where nothing can move the caller: the read a G makes
 * outside any region. Past the lookup the depth is a field of the G,
 * which nothing else writes while the G runs, so a move between its
 * load and its store resumes with the value loaded still right; and
 * once an end's store has made it 0 the handler stops the G no more, so
 * the M whose alarm that end disarms is the one it runs on. The harness
 * in test/sched/test_region_steps.c moves the G at each instruction of
 * begin and end where the handler could.
 *
 * The other paths that look at a region do not depend on where the G
 * is between two instructions. The handler reads its M with SIGURG
 * blocked, on the thread it interrupted. The monitor (should_preempt,
 * pt__alarm_watch) reads another thread's curg and depth, and acts only
 * through what is checked again where it counts: the handler checks, on
 * the G's own thread, that the request is for the G running there, in
 * the same run, in a region, on its own stack; the alarm is armed under
 * alarm_lock with curg, depth and tick unchanged, and the M's disarming
 * takes that lock too. An M arms the alarm for a G it resumes and
 * disarms it from g0; a G disarms it only once its depth is 0. Code in a
 * region may not call into the scheduler, whose own lookups
 * (pt_g_current) read the M once and, after a move, may name another G
 * or none: a yield or park there is misuse, which g.c stops before any
 * switch, as the G named must be in no region and own the stack the
 * call runs on. (One that named no G switches nothing: pt_park returns
 * -EPERM, a yield does nothing.)
 *
 * A SIGURG that is not a request (a socket's out-of-band data) goes to
 * the handler installed before ours, if any.
 *
 * Not under ThreadSanitizer: TSan runs a signal handler inside its own
 * bookkeeping for the thread, and a handler that switches to another
 * stack and returns on another thread corrupts it. There regions are
 * refused with -ENOTSUP and the monitor never signals. */
#define _GNU_SOURCE /* REG_RSP */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/lock.h"
#include "sched/internal.h"
#include "sched/sanitizer.h"

static struct sigaction previous;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error; /* 0, or the negative errno sigaction gave */

/* errno of the thread the handler runs on now (see PT__TLS_READER). */
PT__TLS_READER static void set_errno(int e)
{
    errno = e;
}

static uintptr_t interrupted_sp(const void *ucv)
{
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    return 0; /* no architecture here: never preempt */
#endif
}

static void forward(int sig, siginfo_t *si, void *uc)
{
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction)
            previous.sa_sigaction(sig, si, uc);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    }
}

static void on_sigurg(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    struct pt__m *m = pt__cur_m();
    pt_g *g = m ? atomic_load_explicit(&m->curg, memory_order_relaxed) : NULL;
    /* The M's own alarm (the kernel's timer: SI_TIMER, with the M as its
     * value), or the monitor's request, or somebody else's SIGURG */
    bool alarm = m && si && si->si_code == SI_TIMER && si->si_value.sival_ptr == m;
    pt_g *want = !m      ? NULL
                 : alarm ? atomic_exchange_explicit(&m->pre.alarm_g, NULL, memory_order_acquire)
                         : atomic_exchange_explicit(&m->pre.preempt_g, NULL, memory_order_acquire);
    /* For the run it was made for, and with preemption still on: a
     * request the monitor made before an alarm preempted the G, landing
     * once the G runs again, would stop it at once. An alarm whose
     * timers the monitor ran meanwhile still preempts: the Gs they
     * readied wait for a P on the global queue. */
    if (want && (atomic_load_explicit(&m->p->schedtick, memory_order_relaxed) !=
                     atomic_load_explicit(alarm ? &m->pre.alarm_tick : &m->pre.preempt_tick,
                                          memory_order_relaxed) ||
                 atomic_load_explicit(&m->s->preempt_slice, memory_order_relaxed) == 0))
        want = NULL, alarm = true; /* stale: ours, not forwarded */
    if (!want) {
        if (!alarm)
            forward(sig, si, uc);
        errno = saved;
        return;
    }
    uintptr_t sp = interrupted_sp(uc), lo = (uintptr_t)(g ? g->stack.lo : NULL);
    if (g != want || atomic_load_explicit(&g->preemptible, memory_order_relaxed) == 0 ||
        sp <= lo || sp > lo + g->stack.size) {
        errno = saved;
        return; /* the G left its region, or the M moved on: a stale request */
    }
    /* Still PREEMPT: the G is being resumed from its last preemption,
     * inside the switch that brings it back into that handler (below),
     * which its new M made with SIGURG open. Switching out from there
     * would start a switch inside that one. The request waits for the
     * next. */
    if (g->action == PT__G_DO_PREEMPT) {
        errno = saved;
        return;
    }
    if (!pt__stack_intact(&g->stack, (uintptr_t)__builtin_frame_address(0)))
        pt__sched_overflow(g, "a preemption: the G overflowed its stack (it is below its end, or "
                              "the canary page below it was touched)");
    g->action = PT__G_DO_PREEMPT;
    if (alarm)
        atomic_fetch_add_explicit(&m->pre.alarm_preempts, 1, memory_order_relaxed);
    pt__fiber_switch(&g->fiber, &m->g0);
    /* Resumed, perhaps on another M, the switch finished: a request may
     * stop the G again from here. The errno the region saw is put back on
     * this thread, as a handler that returns in place would leave it. */
    g->action = 0;
    atomic_signal_fence(memory_order_seq_cst);
    set_errno(saved);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigurg;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGURG, &sa, &previous) != 0)
        install_error = -errno;
}

int pt__preempt_install(void)
{
#ifdef PT__TSAN
    (void)install_once;
    (void)install;
    return -ENOTSUP;
#else
    pthread_once(&install_once, install);
    return install_error;
#endif
}

void pt__preempt_unblock(void)
{
    sigset_t urg;
    sigemptyset(&urg);
    sigaddset(&urg, SIGURG);
    pthread_sigmask(SIG_UNBLOCK, &urg, NULL);
}

void pt__preempt_request(struct pt__m *m, pt_g *g, uint32_t tick)
{
    atomic_store_explicit(&m->pre.preempt_tick, tick, memory_order_relaxed);
    /* release: the handler, taking g, sees the tick */
    atomic_store_explicit(&m->pre.preempt_g, g, memory_order_release);
    if (pthread_kill(m->thread, SIGURG) == 0)
        atomic_fetch_add_explicit(&m->s->st.preempt_signals, 1, memory_order_relaxed);
}

/* ---- the M's alarm ------------------------------------------------------------ */

/* The monitor preempts a G that computes in a region once its P's timers
 * are due or Gs wait, when it gets a CPU. With as many Ps as cores,
 * every core runs such a G, and a normal monitor thread can wait for the
 * kernel's next tick before it runs: the Gs waiting wait as long. The
 * alarm does not need a CPU: the kernel's timer signals the M's own
 * thread, on the core it computes on, at the time the monitor or the M
 * set in advance. The M arms it whenever it resumes a G inside a region
 * (a preempted one); the monitor, for a region it finds running. */
void pt__alarm_init(struct pt__m *m)
{
#ifndef PT__TSAN /* under TSan regions are refused: nothing to preempt */
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGURG;
    ev.sigev_value.sival_ptr = m;
#ifdef sigev_notify_thread_id
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid); /* glibc before 2.35 */
#endif
    /* release: the monitor, seeing has_alarm, sees the timer's id */
    if (timer_create(CLOCK_MONOTONIC, &ev, &m->pre.alarm) == 0)
        atomic_store_explicit(&m->pre.has_alarm, true, memory_order_release);
#else
    (void)m;
#endif
}

void pt__alarm_fini(struct pt__m *m)
{
    /* Past the M's loop no G runs on it, so the monitor arms it no more */
    if (atomic_exchange_explicit(&m->pre.has_alarm, false, memory_order_acquire))
        timer_delete(m->pre.alarm);
}

/* When the alarm for a run on m's P, held since `since`, is due, as the
 * monitor would preempt it: never while a P is idle (an idle M takes the
 * work and the timers); once the slice is up if Gs wait (the monitor
 * readies a stuck P's timers' Gs onto the global queue); else at the
 * P's next timer, not before the slice is up. Later by the grace where a
 * CPU is spare for the monitor (internal.h), and never sooner than
 * PT__ALARM_AHEAD_NS from `now`. 0: nothing to arm for. */
static pt_nanos alarm_time(struct pt__m *m, pt_nanos since, pt_nanos now)
{
    pt_sched *s = m->s;
    pt_nanos slice = atomic_load_explicit(&s->preempt_slice, memory_order_relaxed);
    if (slice == 0 || atomic_load_explicit(&s->idle.npidle, memory_order_acquire) != 0)
        return 0;
    pt_nanos when = since + slice;
    if (atomic_load_explicit(&s->globq.len, memory_order_relaxed) == 0 && pt__runq_empty(m->p)) {
        pt_nanos next = pt__ptimers_next(pt__lheap(m->s), &m->p->timers);
        if (next == 0)
            return 0;
        if (next > when)
            when = next;
    }
    if (atomic_load_explicit(&s->nprocs, memory_order_relaxed) < s->cpus)
        when += PT__ALARM_GRACE_NS;
    return when > now + PT__ALARM_AHEAD_NS ? when : now + PT__ALARM_AHEAD_NS;
}

/* Under alarm_lock: the kernel's timer set for `when` (0: off), and the
 * G it would preempt. Set before the timer, so that it fires with the G
 * named; a signal of the timer's previous setting that lands meanwhile
 * is for the same run (the monitor re-arms only the run it saw; a
 * resumption finds the alarm off). The handler writes none of these
 * but alarm_g, which it takes. */
static void alarm_set(struct pt__m *m, pt_g *g, pt_nanos when, uint32_t tick)
{
    atomic_store_explicit(&m->pre.alarm_tick, tick, memory_order_relaxed);
    atomic_store_explicit(&m->pre.alarm_at, when, memory_order_relaxed);
    /* release: the handler, taking g, sees the tick */
    atomic_store_explicit(&m->pre.alarm_g, g, memory_order_release);
    /* pt_nanotime counts CLOCK_MONOTONIC's time (base/clock.c) */
    struct itimerspec its = {{0, 0}, {when / 1000000000, when % 1000000000}};
    timer_settime(m->pre.alarm, TIMER_ABSTIME, &its, NULL);
}

void pt__alarm_resume(struct pt__m *m, pt_g *g)
{
    if (!atomic_load_explicit(&m->pre.has_alarm, memory_order_acquire))
        return;
    pt_nanos now = pt_nanotime();
    pt_nanos when = alarm_time(m, now, now);
    if (when == 0)
        return;
    pt__lock(&m->pre.alarm_lock);
    alarm_set(m, g, when, atomic_load_explicit(&m->p->schedtick, memory_order_relaxed));
    pt__unlock(&m->pre.alarm_lock);
}

void pt__alarm_watch(struct pt__m *m, pt_g *g, pt_nanos since, pt_nanos now, uint32_t tick)
{
    if (!atomic_load_explicit(&m->pre.has_alarm, memory_order_acquire))
        return;
    pt_nanos when = alarm_time(m, since, now);
    /* An alarm still to come, no later than this one: nothing to do, and
     * no lock taken (the monitor comes every round for a long region) */
    pt_nanos at = atomic_load_explicit(&m->pre.alarm_at, memory_order_relaxed);
    if (when == 0 || (at > now && at <= when))
        return;
    pt__lock(&m->pre.alarm_lock);
    /* Under the lock, the run the monitor saw must still be on, in its
     * region: the M, ending it, takes curg back and then the lock. An
     * armed alarm is replaced only by an earlier one (the P's timers
     * changed: a timer was added, or a P's moved here) or once its time
     * has passed (it fired, or will have, for a run that is over or
     * into which it landed on g0). */
    at = atomic_load_explicit(&m->pre.alarm_at, memory_order_relaxed);
    if (atomic_load_explicit(&m->curg, memory_order_relaxed) == g &&
        atomic_load_explicit(&g->preemptible, memory_order_relaxed) != 0 &&
        atomic_load_explicit(&m->p->schedtick, memory_order_relaxed) == tick &&
        (at == 0 || at <= now || when < at))
        alarm_set(m, g, when, tick);
    pt__unlock(&m->pre.alarm_lock);
}

void pt__alarm_disarm(struct pt__m *m)
{
    if (!atomic_load_explicit(&m->pre.has_alarm, memory_order_acquire))
        return;
    int saved = errno; /* a contended lock sleeps in futex(2) */
    pt__lock(&m->pre.alarm_lock);
    if (atomic_load_explicit(&m->pre.alarm_at, memory_order_relaxed) != 0)
        alarm_set(m, NULL, 0, 0);
    pt__unlock(&m->pre.alarm_lock);
    errno = saved;
}

/* ---- the API ---------------------------------------------------------------- */

/* Whether sp lies in the stack [lo, lo + size). */
static inline bool stack_holds(const void *lo, size_t size, uintptr_t sp)
{
    return sp - (uintptr_t)lo < size;
}

/* The M's curg, read with SIGURG held off this thread: nothing can move
 * the caller to another M between reading the thread's M and that M's
 * G, so the pair is the one a G outside any region reads. Still checked
 * against the stack: NULL on g0 (when its bounds are unknown), in a
 * handoff's commit or timers (on the stack of the G arriving, whose
 * curg is not set yet: g.c), on a signal's alternate stack. */
static __attribute__((noinline, cold)) pt_g *region_self_held(uintptr_t sp)
{
    sigset_t urg, was;
    sigemptyset(&urg);
    sigaddset(&urg, SIGURG);
    pthread_sigmask(SIG_BLOCK, &urg, &was);
    struct pt__m *m = pt__cur_m();
    pt_g *g = m ? atomic_load_explicit(&m->curg, memory_order_relaxed) : NULL;
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    return g && stack_holds(g->stack.lo, g->stack.size, sp) ? g : NULL;
}

/* The G running this code: the region's count is that G's, and the
 * answer must be a fact about the stack this runs on, which no
 * preemption changes. Inside a region (a nested begin, an end) the G may
 * be stopped between reading its M, a thread-local, and that M's curg,
 * and resumed on another M; the first M by then runs another G, or sits
 * on g0 with curg NULL. So the M and its curg are a hint: the G whose
 * stack holds the stack pointer is the caller, and g0's stack holding it
 * means no G calls; any other answer is looked up again with SIGURG
 * held off (region_self_held). NULL on a thread that is no M, on g0 (a
 * timer's callback), in a park's commit. */
static pt_g *region_self(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    struct pt__m *m = pt__cur_m();
    if (!m)
        return NULL; /* no G runs on a thread that is no M */
    pt_g *g = atomic_load_explicit(&m->curg, memory_order_relaxed);
    if (g && stack_holds(g->stack.lo, g->stack.size, sp))
        return g;
    if (stack_holds(m->g0.stack_lo, m->g0.stack_size, sp))
        return NULL;
    return region_self_held(sp);
}

int pt_preemptible_begin(void)
{
    pt_g *g = region_self();
    if (!g)
        return -EPERM;
    if (atomic_load_explicit(&g->s->preempt_slice, memory_order_relaxed) == 0)
        return -ENOTSUP;
    int err = pt__preempt_install();
    if (err < 0)
        return err;
    uint32_t n = atomic_load_explicit(&g->preemptible, memory_order_relaxed);
    if (n == UINT32_MAX)
        return -EOVERFLOW;
    /* a signal fence: the store is seen by this thread's handler, and no
     * access of the region moves above it */
    atomic_store_explicit(&g->preemptible, n + 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    return 0;
}

int pt_preemptible_end(void)
{
    pt_g *g = region_self();
    if (!g)
        return -EPERM;
    uint32_t n = atomic_load_explicit(&g->preemptible, memory_order_relaxed);
    if (n == 0)
        return -EINVAL;
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&g->preemptible, n - 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    /* Out of every region: nothing may stop the G now, so it stays on
     * this M, whose alarm, if armed for it, would only interrupt the
     * system calls the G may make from here */
    if (n == 1)
        pt__alarm_disarm(pt__cur_m());
    return 0;
}

int pt_sched_set_preempt_slice(pt_sched *s, pt_nanos slice)
{
    if (!s || s->magic != PT__SCHED_MAGIC || slice < 0)
        return -EINVAL;
    atomic_store_explicit(&s->preempt_slice, slice, memory_order_relaxed);
    return 0;
}
