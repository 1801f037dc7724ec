/* Descriptors (Go's pollDesc): the per-side ready/wait states, deadlines on
 * ptimer timers, and safe close. The side-state table is in netpoll.h.
 *
 * Who writes what:
 *  - rg/wg: CAS by the waiter (NIL -> WAIT, READY -> NIL), by the poller
 *    (-> READY) and by deadlines and close (WAIT -> NIL); all seq_cst.
 *  - info: stored under pd->lock, seq_cst, *before* the writer looks at
 *    rg/wg; the waiter CASes rg/wg to WAIT *before* it loads info. Either
 *    the writer sees WAIT (and wakes the waiter) or the waiter sees the new
 *    info (and does not sleep): Go's publishInfo rule, a Dekker pair.
 *  - rd, wd, rseq, wseq and the arming of rt, wt: under pd->lock.
 * A waiter sleeps on the side word itself (futex while it is WAIT), so a
 * change of the word between its check and its sleep is never missed; that
 * blocking step is what a scheduler will replace by parking a G.
 */
#include <errno.h>
#include <limits.h>

#include "netpoll/internal.h"

static _Atomic uint32_t *side(pt_pollfd *pd, unsigned mode)
{
    return mode == PT_POLL_READ ? &pd->rg : &pd->wg;
}

/* netpollunblock: ioready sets READY (an event), otherwise a waiter is
 * sent back to check its errors (deadline, close). Wakes a sleeper. */
static void unblock(pt_pollfd *pd, unsigned mode, bool ioready)
{
    _Atomic uint32_t *g = side(pd, mode);
    for (;;) {
        uint32_t old = atomic_load_explicit(g, memory_order_seq_cst);
        if (old == PD_READY)
            return;
        if (old == PD_NIL && !ioready)
            return; /* nobody waits; the next waiter checks the errors first */
        uint32_t nw = ioready ? PD_READY : PD_NIL;
        if (atomic_compare_exchange_weak_explicit(g, &old, nw, memory_order_seq_cst,
                                                  memory_order_relaxed)) {
            /* Safe even if the waiter returned and pd was freed since: the
             * kernel only hashes the address. */
            if (old == PD_WAIT)
                pt__futex_wake(g, INT_MAX);
            return;
        }
    }
}

void pt__pd_ready(pt_pollfd *pd, unsigned mode)
{
    unblock(pd, mode, true);
}

/* netpollcheckerr, from the published info: no lock. */
static int check_err(pt_pollfd *pd, unsigned mode)
{
    uint32_t i = atomic_load_explicit(&pd->info, memory_order_seq_cst);
    if (i & PD_CLOSING)
        return -EBADF;
    if ((mode & PT_POLL_READ) && (i & PD_RD_EXPIRED))
        return -ETIMEDOUT;
    if ((mode & PT_POLL_WRITE) && (i & PD_WD_EXPIRED))
        return -ETIMEDOUT;
    return 0;
}

/* publishInfo: pd->lock held. */
static void publish_info(pt_pollfd *pd, bool closing)
{
    uint32_t i = (closing ? PD_CLOSING : 0) | (pd->rd < 0 ? PD_RD_EXPIRED : 0) |
                 (pd->wd < 0 ? PD_WD_EXPIRED : 0);
    atomic_store_explicit(&pd->info, i, memory_order_seq_cst);
}

static bool is_closing(pt_pollfd *pd)
{
    return atomic_load_explicit(&pd->info, memory_order_relaxed) & PD_CLOSING;
}

/* open or closed; acquire: pairs with the release stores in open and close */
static int check_magic(pt_pollfd *pd)
{
    return pt__reg_check(pd ? &pd->reg : NULL);
}

/* Every call but open and close holds a reference while it runs, so close
 * can wait for it to leave. seq_cst: the increment then the load of info
 * here, against close's store of info then its load of refs (wait_refs):
 * either the call sees the close, or the close sees the call. */
static int enter(pt_pollfd *pd)
{
    int err = check_magic(pd);
    if (err < 0)
        return err;
    atomic_fetch_add_explicit(&pd->refs, 2, memory_order_seq_cst);
    if (atomic_load_explicit(&pd->info, memory_order_seq_cst) & PD_CLOSING) {
        atomic_fetch_sub_explicit(&pd->refs, 2, memory_order_release);
        return -EBADF;
    }
    return 0;
}

static void leave(pt_pollfd *pd)
{
    /* Drop our count and the sleeper bit together, then wake the closer by
     * address only: once the count is down, pd may be freed. */
    uint32_t v = atomic_load_explicit(&pd->refs, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&pd->refs, &v, (v - 2) & ~1u,
                                                  memory_order_release, memory_order_relaxed))
        ;
    if (v & 1)
        pt__futex_wake(&pd->refs, INT_MAX);
}

static void wait_refs(pt_pollfd *pd)
{
    for (;;) {
        /* seq_cst: see enter; acquire: pairs with leave's release */
        uint32_t v = atomic_load_explicit(&pd->refs, memory_order_seq_cst);
        if (v >> 1 == 0)
            return;
        if (!(v & 1) && !atomic_compare_exchange_weak_explicit(
                            &pd->refs, &v, v | 1, memory_order_acquire, memory_order_relaxed))
            continue;
        pt__futex_wait(&pd->refs, v | 1, 0);
    }
}

/* ---- deadlines -------------------------------------------------------------- */

/* netpolldeadlineimpl: the timer of side `mode` fired with the sequence
 * number it was armed with. A stale one (the deadline changed since) does
 * nothing. */
static void deadline_fired(pt_pollfd *pd, uintptr_t seq, unsigned mode)
{
    pt_netpoll *np = pd->reg.np;
    pt__lock(&pd->lock);
    uintptr_t cur = mode == PT_POLL_READ ? pd->rseq : pd->wseq;
    if (seq != cur) {
        atomic_fetch_add_explicit(&np->st.deadlines_stale, 1, memory_order_relaxed);
        pt__unlock(&pd->lock);
        return;
    }
    /* Counted before the waiter can see it (tests read it then). */
    atomic_fetch_add_explicit(&np->st.deadlines_fired, 1, memory_order_relaxed);
    if (mode == PT_POLL_READ)
        pd->rd = -1;
    else
        pd->wd = -1;
    publish_info(pd, is_closing(pd));
    unblock(pd, mode, false);
    pt__unlock(&pd->lock);
}

static void rd_fired(void *arg, uintptr_t seq)
{
    deadline_fired(arg, seq, PT_POLL_READ);
}
static void wd_fired(void *arg, uintptr_t seq)
{
    deadline_fired(arg, seq, PT_POLL_WRITE);
}

/* One side to deadline d (0 none, -1 expired, else a time): pd->lock held.
 * The sequence number moves on every change, so a timer already popped
 * for the old deadline is recognised as stale when its callback runs. */
static int set_side(pt_pollfd *pd, unsigned mode, pt_nanos d, pt_timers *ts)
{
    pt_nanos *dp = mode == PT_POLL_READ ? &pd->rd : &pd->wd;
    uintptr_t *seq = mode == PT_POLL_READ ? &pd->rseq : &pd->wseq;
    pt_timer *t = mode == PT_POLL_READ ? &pd->rt : &pd->wt;
    if (*dp == d)
        return 0;
    if (d > 0) {
        int r =
            pt_timer_modify(ts, t, d, 0, mode == PT_POLL_READ ? rd_fired : wd_fired, pd, *seq + 1);
        if (r < 0)
            return r;
    } else {
        pt_timer_stop(t);
    }
    ++*seq;
    *dp = d;
    return 0;
}

int pt_pollfd_set_deadline(pt_pollfd *pd, unsigned mode, pt_nanos when, pt_timers *ts)
{
    int err = enter(pd);
    if (err < 0)
        return err;
    if (when < 0 || !mode || (mode & ~(PT_POLL_READ | PT_POLL_WRITE))) {
        leave(pd);
        return -EINVAL;
    }
    if (!ts)
        ts = pd->reg.np->timers;
    pt_nanos d = when;
    if (when > 0 && when <= pt_nanotime())
        d = -1; /* already past: time out now, as Go does for d < 0 */

    pt__lock(&pd->lock);
    if (is_closing(pd)) {
        err = -EBADF;
        goto out;
    }
    pt_nanos rd0 = pd->rd;
    if ((mode & PT_POLL_READ) && (err = set_side(pd, PT_POLL_READ, d, ts)) < 0)
        goto out;
    if ((mode & PT_POLL_WRITE) && (err = set_side(pd, PT_POLL_WRITE, d, ts)) < 0) {
        /* Put the read side back: its timer is in a heap now (or stopped),
         * so re-arming it allocates nothing. */
        if (mode & PT_POLL_READ)
            set_side(pd, PT_POLL_READ, rd0, ts);
        goto out;
    }
    publish_info(pd, false);
    /* A deadline set in the past unblocks pending I/O at once. */
    if ((mode & PT_POLL_READ) && d < 0)
        unblock(pd, PT_POLL_READ, false);
    if ((mode & PT_POLL_WRITE) && d < 0)
        unblock(pd, PT_POLL_WRITE, false);
out:
    pt__unlock(&pd->lock);
    leave(pd);
    return err;
}

/* ---- open, arm, prepare, wait, close ----------------------------------------- */

int pt_pollfd_open(pt_netpoll *np, pt_pollfd *pd, int fd, unsigned events, void *udata)
{
    int err = pt__reg_open(np, pd ? &pd->reg : NULL, fd, events, udata, true);
    if (err < 0)
        return err;
    atomic_init(&pd->rg, PD_NIL);
    atomic_init(&pd->wg, PD_NIL);
    atomic_init(&pd->info, 0);
    atomic_init(&pd->refs, 0);
    pt__lock_init(&pd->lock);
    pd->rd = pd->wd = 0;
    pd->rseq = pd->wseq = 0;
    pt_timer_init(&pd->rt, rd_fired, pd);
    pt_timer_init(&pd->wt, wd_fired, pd);
    if ((err = pt__np_register(np, &pd->reg, events)) < 0)
        return err;
    pt__reg_opened(&pd->reg);
    return 0;
}

int pt_pollfd_arm(pt_pollfd *pd, unsigned events)
{
    int err = enter(pd);
    if (err < 0)
        return err;
    if (events & ~(PT_POLL_READ | PT_POLL_WRITE))
        err = -EINVAL;
    else
        err = pt__np_rearm(pd->reg.np, &pd->reg, events);
    leave(pd);
    return err;
}

int pt_pollfd_prepare(pt_pollfd *pd, unsigned mode)
{
    int err = enter(pd);
    if (err < 0)
        return err;
    if (!mode || (mode & ~(PT_POLL_READ | PT_POLL_WRITE))) {
        err = -EINVAL;
    } else if ((err = check_err(pd, mode)) == 0) {
        /* pollReset: READY -> NIL. A WAIT belongs to another thread. */
        for (unsigned m = PT_POLL_READ; m <= PT_POLL_WRITE; m <<= 1) {
            uint32_t ready = PD_READY;
            if (mode & m)
                atomic_compare_exchange_strong_explicit(side(pd, m), &ready, PD_NIL,
                                                        memory_order_seq_cst, memory_order_relaxed);
        }
    }
    leave(pd);
    return err;
}

/* netpollblock: 1 if the side was (or became) ready, 0 if sent back to
 * check errors, -EBUSY if another thread waits on it. */
static int block(pt_pollfd *pd, unsigned mode)
{
    _Atomic uint32_t *g = side(pd, mode);
    for (;;) {
        uint32_t v = PD_READY;
        /* wait: READY -> NIL, consume the notification */
        if (atomic_compare_exchange_strong_explicit(g, &v, PD_NIL, memory_order_seq_cst,
                                                    memory_order_seq_cst))
            return 1;
        if (v == PD_WAIT)
            return -EBUSY;
        /* wait: NIL -> WAIT */
        v = PD_NIL;
        if (atomic_compare_exchange_strong_explicit(g, &v, PD_WAIT, memory_order_seq_cst,
                                                    memory_order_seq_cst))
            break;
        if (v == PD_WAIT)
            return -EBUSY;
    }
    /* Re-check the errors after publishing WAIT: close, deadlines and
     * set_deadline store info before they look at the side word. */
    if (check_err(pd, mode) == 0)
        while (atomic_load_explicit(g, memory_order_acquire) == PD_WAIT)
            pt__futex_wait(g, PD_WAIT, 0);
    /* Whatever woke us, leave NIL behind; do not lose a READY that came. */
    return atomic_exchange_explicit(g, PD_NIL, memory_order_seq_cst) == PD_READY;
}

int pt_pollfd_wait(pt_pollfd *pd, unsigned mode)
{
    int err = enter(pd);
    if (err < 0)
        return err;
    if ((mode != PT_POLL_READ && mode != PT_POLL_WRITE) ||
        !(atomic_load_explicit(&pd->reg.events, memory_order_relaxed) & mode)) {
        leave(pd);
        return -EINVAL;
    }
    /* poll_runtime_pollWait: errors first, then block until ready or until
     * an error appears. A wake with neither (the deadline was reset after
     * it fired and before we ran) is ignored. */
    while ((err = check_err(pd, mode)) == 0) {
        int r = block(pd, mode);
        if (r != 0) {
            err = r < 0 ? r : 0;
            break;
        }
    }
    leave(pd);
    return err;
}

int pt_pollfd_close(pt_pollfd *pd)
{
    int err = check_magic(pd);
    if (err < 0)
        return err;
    /* pollUnblock: closing, stale timers, waiters sent back to see it. */
    pt__lock(&pd->lock);
    if (is_closing(pd)) {
        pt__unlock(&pd->lock);
        return -EBADF;
    }
    pd->rseq++;
    pd->wseq++;
    publish_info(pd, true);
    unblock(pd, PT_POLL_READ, false);
    unblock(pd, PT_POLL_WRITE, false);
    pt__unlock(&pd->lock);
    /* Outside pd->lock: a deadline callback may be waiting for it. After
     * these no callback of pd's timers runs, and they are in no heap. */
    pt_timer_stop_sync(&pd->rt);
    pt_timer_stop_sync(&pd->wt);
    /* After this the poller never touches pd again. */
    pt__np_unregister(pd->reg.np, &pd->reg);
    wait_refs(pd);
    atomic_store_explicit(&pd->reg.magic, PT__POLLFD_CLOSED, memory_order_release);
    return 0;
}
