/* Asynchronous preemption of compute (Go 1.14's, for regions a G marks).
 *
 * Go can stop a goroutine at almost any instruction because its compiler
 * records, for each one, whether the stack and registers can be scanned
 * there. C has no such map, and most C code is not safe to leave at an
 * arbitrary point: a G stopped inside malloc, or holding any lock, would
 * leave that lock held while other Gs run on its M -- one of which may
 * spin on it forever. So preemption here is opt-in: a G brackets pure
 * computation with pt_preemptible_begin/end, and only inside such a region
 * may the monitor stop it.
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
 * M had too, unless the creating threads' masks differed.
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
#include <ucontext.h>

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
    pt_g *want = m ? atomic_exchange_explicit(&m->preempt_g, NULL, memory_order_relaxed) : NULL;
    if (!want) {
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
    g->action = PT__G_DO_PREEMPT;
    pt__fiber_switch(&g->fiber, &m->g0);
    /* Resumed, perhaps on another M: the errno the region saw is put back
     * on this thread, as a handler that returns in place would leave it. */
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

void pt__preempt_request(struct pt__m *m, pt_g *g)
{
    atomic_store_explicit(&m->preempt_g, g, memory_order_relaxed);
    if (pthread_kill(m->thread, SIGURG) == 0)
        atomic_fetch_add_explicit(&m->s->st.preempt_signals, 1, memory_order_relaxed);
}

/* ---- the API ---------------------------------------------------------------- */

/* The G running this code, found so that a preemption in the middle of
 * finding it cannot mislead: inside a region (a nested begin, an end) the
 * G may be stopped between reading its M, a thread-local, and that M's
 * curg, and resumed on another M -- the first one then runs some other G,
 * or none. Only the G's own stack holds the stack pointer, so a curg
 * whose stack does not is a stale read, made again on the thread the G
 * runs on now. NULL on a thread that is no M, or on an M's g0 (a timer's
 * callback). */
static pt_g *region_self(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    for (;;) {
        struct pt__m *m = pt__cur_m();
        if (!m)
            return NULL;
        pt_g *g = atomic_load_explicit(&m->curg, memory_order_relaxed);
        if (g && sp - (uintptr_t)g->stack.lo < g->stack.size)
            return g;
        if (m->g0.stack_size == 0 || sp - (uintptr_t)m->g0.stack_lo < m->g0.stack_size)
            return NULL;
        /* No G on this M, which is still the caller's: a park's commit,
         * run on the stack of the G that runs next (g.c, handoffs) */
        if (!g && pt__cur_m() == m)
            return NULL;
    }
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
    return 0;
}

int pt_sched_set_preempt_slice(pt_sched *s, pt_nanos slice)
{
    if (!s || s->magic != PT__SCHED_MAGIC || slice < 0)
        return -EINVAL;
    atomic_store_explicit(&s->preempt_slice, slice, memory_order_relaxed);
    return 0;
}
