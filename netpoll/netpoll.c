/* The netpoll instance: backend choice, the slot table that maps kernel
 * events to descriptors, the wait loop, and the break (Go's netpoll,
 * netpollBreak, wakeNetPoller).
 *
 * The wait loop in one picture (one waiter at a time):
 *
 *   exchange poll_until = MAXWHEN       wakers: heap/state change; RMW
 *   run the owned heap's due timers             read poll_until; if it is
 *   until = min(deadline, next timer)           later than their time (or
 *   poll_until = until                          MAXWHEN), signal: fetch_or
 *   a signal pending? then do not sleep         wake_sig, and write the
 *   kernel wait until `until`                   eventfd if it was 0
 *   dispatch events (np->lock)
 *   a signal seen? drain eventfd, take wake_sig: a user break ends the
 *   wait; a timer wake only loops, to sleep for the new, shorter time
 *
 * No wake is lost: a waker either sees the waiter's poll_until (and the
 * waiter wakes by then anyway, or the waker signals), or its change is seen
 * by the waiter's next look at the heap; and a signal, once written, stays
 * in the eventfd (level-triggered in epoll; in io_uring, the posted CQE or
 * wake_sig itself) until a blocking wait consumes it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "netpoll/internal.h"

/* ---- creation ------------------------------------------------------------ */

/* The backend asked for: the option, else $PT_NETPOLL. A value that
 * names no backend is epoll, and *why says so (-EINVAL). */
static enum pt_netpoll_backend choose(enum pt_netpoll_backend asked, int *why)
{
    if (asked != PT_NETPOLL_DEFAULT)
        return asked;
    const char *env = getenv("PT_NETPOLL");
    if (!env || !*env || strcmp(env, "epoll") == 0)
        return PT_NETPOLL_EPOLL;
    if (strcmp(env, "uring") == 0 || strcmp(env, "io_uring") == 0)
        return PT_NETPOLL_URING;
    *why = -EINVAL;
    return PT_NETPOLL_EPOLL;
}

static int start_backend(pt_netpoll *np, const struct np_ops *ops, enum pt_netpoll_backend which)
{
    np->ops = ops;
    np->backend = which;
    np->epfd = np->timerfd = -1;
    np->uring = NULL;
    return ops->init(np);
}

int pt_netpoll_create(pt_netpoll **out, const pt_netpoll_options *opt)
{
    pt_netpoll_options o = {PT_NETPOLL_DEFAULT, 0, NULL};
    if (opt)
        o = *opt;
    if (!out || (unsigned)o.backend > PT_NETPOLL_URING || (o.flags & ~PT_NETPOLL_TIMERFD))
        return -EINVAL;
    pt_netpoll *np = pt__malloc(sizeof *np);
    if (!np)
        return -ENOMEM;
    memset(np, 0, sizeof *np);
    np->flags = o.flags;
    atomic_init(&np->wake_sig, 0);
    atomic_init(&np->poll_until, 0);
    atomic_init(&np->waiting, 0);
    pt__lock_init(&np->lock);
    pt__np_slots_init(np);
    np->batch = 1;
    np->breakfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (np->breakfd < 0) {
        int err = -errno;
        pt__free(np);
        return err;
    }

    int err = -ENOSYS, fallback = 0;
    enum pt_netpoll_backend which = choose(o.backend, &fallback);
    if (which == PT_NETPOLL_URING) {
#ifdef PT_HAVE_URING
        err = start_backend(np, &pt__np_uring_ops, PT_NETPOLL_URING);
#endif
        /* -ENOSYS when not built (PT_URING=OFF), else why it failed */
        if (err < 0)
            fallback = err;
    }
    if (err < 0)
        err = start_backend(np, &pt__np_epoll_ops, PT_NETPOLL_EPOLL);
    if (err < 0) {
        close(np->breakfd);
        pt__free(np);
        return err;
    }

    if (o.timers) {
        np->timers = o.timers;
    } else {
        pt_timers_init(&np->own, pt__np_own_wake, np);
        np->timers = &np->own;
        np->owns_timers = true;
    }
    np->fallback = fallback;
    np->magic = PT__NETPOLL_MAGIC;
    *out = np;
    return 0;
}

int pt_netpoll_destroy(pt_netpoll *np)
{
    if (!np_valid(np))
        return -EINVAL;
    pt__lock(&np->lock);
    bool busy = np->slots.nopen != 0 || atomic_load_explicit(&np->waiting, memory_order_acquire);
    pt__unlock(&np->lock);
    if (busy)
        return -EBUSY;
    /* The owned heap goes first: it is the one step that can refuse. */
    if (np->owns_timers && pt_timers_destroy(&np->own) < 0)
        return -EBUSY;
    np->magic = 0;
    np->ops->fini(np);
    close(np->breakfd);
    pt__np_slots_free(np);
    pt__free(np);
    return 0;
}

enum pt_netpoll_backend pt_netpoll_backend(const pt_netpoll *np)
{
    return np_valid(np) ? np->backend : PT_NETPOLL_DEFAULT;
}

int pt_netpoll_fallback(const pt_netpoll *np)
{
    return np_valid(np) ? np->fallback : -EINVAL;
}

const char *pt_netpoll_name(const pt_netpoll *np)
{
    return np_valid(np) ? np->name : "none";
}

pt_timers *pt_netpoll_timers(pt_netpoll *np)
{
    return np_valid(np) ? np->timers : NULL;
}

void pt_netpoll_read_stats(const pt_netpoll *np, pt_netpoll_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!np_valid(np))
        return;
    pt_netpoll *m = (pt_netpoll *)np;
    out->waits = atomic_load_explicit(&m->st.waits, memory_order_relaxed);
    out->sleeps = atomic_load_explicit(&m->st.sleeps, memory_order_relaxed);
    out->events = atomic_load_explicit(&m->st.events, memory_order_relaxed);
    out->breaks = atomic_load_explicit(&m->st.breaks, memory_order_relaxed);
    out->signals = atomic_load_explicit(&m->st.signals, memory_order_relaxed);
    out->deadlines_fired = atomic_load_explicit(&m->st.deadlines_fired, memory_order_relaxed);
    out->deadlines_stale = atomic_load_explicit(&m->st.deadlines_stale, memory_order_relaxed);
}

/* ---- break ---------------------------------------------------------------- */

void pt__np_signal(pt_netpoll *np, uint32_t why)
{
    /* release: pairs with the waiter's acquire exchange, so whatever the
     * waker did before breaking is visible once the waiter takes the
     * reason. Only the waker that finds no reason pending writes the
     * eventfd: concurrent breaks coalesce into one kernel wake. */
    if (atomic_fetch_or_explicit(&np->wake_sig, why, memory_order_acq_rel) != 0)
        return;
    uint64_t one = 1;
    ssize_t r;
    do
        r = write(np->breakfd, &one, sizeof one);
    while (r < 0 && errno == EINTR);
    /* EAGAIN: the counter is at its maximum, so the fd is readable anyway. */
    atomic_fetch_add_explicit(&np->st.signals, 1, memory_order_relaxed);
}

void pt__np_drain_break(pt_netpoll *np)
{
    uint64_t v;
    ssize_t r;
    do
        r = read(np->breakfd, &v, sizeof v);
    while (r < 0 && errno == EINTR);
}

int pt_netpoll_break(pt_netpoll *np)
{
    if (!np_valid(np))
        return -EINVAL;
    atomic_fetch_add_explicit(&np->st.breaks, 1, memory_order_relaxed);
    pt__np_signal(np, WAKE_USER);
    return 0;
}

/* The waker's half of the poll_until handshake. A read-modify-write, not
 * a load: it reads the latest value, and (release) it is what the waiter's
 * next exchange reads if it comes first, so that the caller's heap change
 * is visible to the waiter's look at the heap. (A fence would do the same;
 * ThreadSanitizer does not model fences.) */
static pt_nanos read_poll_until(pt_netpoll *np)
{
    return atomic_fetch_add_explicit(&np->poll_until, 0, memory_order_acq_rel);
}

void pt_netpoll_wake(void *ctx, pt_nanos when)
{
    pt_netpoll *np = ctx;
    if (!np_valid(np))
        return;
    /* wakeNetPoller: break unless the poller wakes by `when` anyway. 0
     * (nobody waits) breaks too: the caller of the next wait computed its
     * timeout from the heap before it called. */
    pt_nanos pu = read_poll_until(np);
    if (pu == 0 || when < pu)
        pt__np_signal(np, WAKE_USER);
}

/* The owned heap's wake: the waiter computes its sleep from this heap
 * itself, after publishing poll_until, so 0 (nobody waits) needs no
 * signal, and a signal only makes the waiter recompute (WAKE_TIMER). */
void pt__np_own_wake(void *ctx, pt_nanos when)
{
    pt_netpoll *np = ctx;
    pt_nanos pu = read_poll_until(np);
    if (pu != 0 && when < pu)
        pt__np_signal(np, WAKE_TIMER);
}

/* ---- waiting --------------------------------------------------------------- */

unsigned pt__np_mask_to_mode(uint32_t mask)
{
    unsigned mode = 0;
    if (mask & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        mode |= PT_POLL_READ;
    if (mask & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        mode |= PT_POLL_WRITE;
    return mode;
}

/* Hands a batch of kernel events to their descriptors (netpollready) and
 * to the caller, one entry per descriptor. */
static void dispatch(pt_netpoll *np, const struct np_raw *raw, int nraw, pt_poll_event *ev, int *n,
                     bool *saw_break)
{
    pt__lock(&np->lock);
    for (int i = 0; i < nraw; i++) {
        uint64_t tag = raw[i].tag;
        if (TAG_KIND(tag) == TAG_BREAK) {
            *saw_break = true;
            continue;
        }
        if (TAG_KIND(tag) != TAG_FD)
            continue;
        pt_pollreg *r = pt__np_slot_reg(np, tag);
        if (!r)
            continue; /* closed or re-armed since the kernel queued it */
        unsigned events = atomic_load_explicit(&r->events, memory_order_relaxed);
        uint32_t mask = raw[i].res >= 0 ? (uint32_t)raw[i].res : 0;
        if (raw[i].flags & NP_RAW_ENDED) {
            /* An io_uring multishot poll ended: cancelled because the
             * thread that armed it exited (-ECANCELED), or the CQ
             * overflowed. Re-arm it from here; the new poll reports the
             * fd at once if it is still ready. Other errors are reported
             * and leave the poll off until the next arm. */
            if (raw[i].res >= 0 || raw[i].res == -ECANCELED)
                np->ops->add(np, r->fd, tag, events);
            else
                mask = EPOLLERR;
        }
        unsigned mode = pt__np_mask_to_mode(mask) & events;
        pt_pollfd *pd = r->waits ? (pt_pollfd *)r : NULL;
        if (pd && (mode & PT_POLL_READ))
            pt__pd_ready(pd, PT_POLL_READ);
        if (pd && (mode & PT_POLL_WRITE))
            pt__pd_ready(pd, PT_POLL_WRITE);
        unsigned flags =
            mode | (mask & EPOLLERR ? PT_POLL_ERR : 0) | (mask & EPOLLHUP ? PT_POLL_HUP : 0);
        if (!flags)
            continue;
        if (r->batch == np->batch) {
            ev[r->out].events |= flags; /* io_uring may post one fd twice */
        } else {
            r->batch = np->batch;
            r->out = *n;
            ev[*n].pd = pd;
            ev[*n].udata = r->udata;
            ev[*n].fd = r->fd;
            ev[*n].events = flags;
            ev[*n].reg = r;
            ++*n;
        }
    }
    pt__unlock(&np->lock);
}

int pt_netpoll_wait(pt_netpoll *np, pt_nanos timeout, pt_poll_event *ev, int max)
{
    if (!np_valid(np) || !ev || max <= 0)
        return -EINVAL;
    uint32_t idle = 0;
    /* acquire: pairs with the release below in the previous waiter */
    if (!atomic_compare_exchange_strong_explicit(&np->waiting, &idle, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return timeout == 0 ? 0 : -EBUSY;
    atomic_fetch_add_explicit(&np->st.waits, 1, memory_order_relaxed);
    np->batch++;

    pt_nanos deadline = 0;
    if (timeout < 0)
        deadline = PT_MAXWHEN;
    else if (timeout > 0 && __builtin_add_overflow(pt_nanotime(), timeout, &deadline))
        deadline = PT_MAXWHEN;

    struct np_raw raw[NP_RAW_MAX];
    int n = 0, err = 0;
    for (;;) {
        pt_nanos until = deadline;
        if (deadline != 0) {
            /* "Asleep, bound unknown": any waker that looks from now on
             * signals. acquire: pairs with the release RMW in
             * read_poll_until; a waker that read an older value made its
             * change before that RMW, so the look at the heap below sees
             * it. */
            atomic_exchange_explicit(&np->poll_until, PT_MAXWHEN, memory_order_acq_rel);
        }
        if (np->owns_timers) {
            pt_nanos next = 0;
            pt_timers_check(&np->own, 0, true, &next);
            if (next != 0 && next < until)
                until = next; /* wake for the next deadline */
        }
        if (until != 0) {
            atomic_store_explicit(&np->poll_until, until, memory_order_seq_cst);
            /* A signal already pending: collect it without sleeping. */
            if (atomic_load_explicit(&np->wake_sig, memory_order_seq_cst) != 0)
                until = 0;
            else
                atomic_fetch_add_explicit(&np->st.sleeps, 1, memory_order_relaxed);
        }
        int room = max - n < NP_RAW_MAX ? max - n : NP_RAW_MAX;
        int r = np->ops->wait(np, until, raw, room);
        if (r < 0) {
            err = r;
            break;
        }
        bool saw_break = false, user = false;
        dispatch(np, raw, r, ev, &n, &saw_break);
        /* Only a blocking wait consumes a signal: a non-blocking one may run
         * beside a thread about to block, whose wake it must not eat (Go
         * reads netpollEventFd only when delay != 0). */
        if (deadline != 0 &&
            (saw_break || atomic_load_explicit(&np->wake_sig, memory_order_relaxed))) {
            pt__np_drain_break(np);
            /* acquire: pairs with the wakers' fetch_or */
            uint32_t why = atomic_exchange_explicit(&np->wake_sig, 0, memory_order_acq_rel);
            user = why & WAKE_USER;
        }
        if (np->owns_timers)
            pt_timers_check(&np->own, 0, true, NULL); /* deadlines due by now */
        if (n > 0 || user || deadline == 0 || (deadline != PT_MAXWHEN && pt_nanotime() >= deadline))
            break;
    }
    atomic_store_explicit(&np->poll_until, 0, memory_order_seq_cst);
    atomic_fetch_add_explicit(&np->st.events, (unsigned long)n, memory_order_relaxed);
    atomic_store_explicit(&np->waiting, 0, memory_order_release);
    return err < 0 ? err : n;
}
