/* Bare registrations (pt_pollreg): an fd's interest and user data in the
 * netpoll's slot table, and nothing else. A pt_pollfd starts with one and
 * opens it here too (pollfd.c).
 *
 * No lock and no reference count of its own: the netpoll's lock orders
 * everything that touches a registration. The waiter hands out a batch of
 * events under it, and close takes it to unregister, so no batch begun
 * after a close names the record; an arm racing a close finds its slot
 * gone under the same lock (pt__np_rearm). */
#include <errno.h>
#include <stddef.h>

#include "netpoll/internal.h"

_Static_assert(offsetof(pt_pollfd, reg) == 0, "a waiting descriptor starts with its registration");

int pt__reg_open(pt_netpoll *np, pt_pollreg *r, int fd, unsigned events, void *udata, bool waits)
{
    if (!np_valid(np) || !r || (events & ~(PT_POLL_READ | PT_POLL_WRITE)))
        return -EINVAL;
    /* a number that is no open fd is the backend's -EBADF, at register */
    if (fd < 0)
        return -EBADF;
    /* An open record is refused before it is touched: re-initialising it
     * would orphan its slot (and a pt_pollfd's timers in a heap). */
    uint32_t m = atomic_load_explicit(&r->magic, memory_order_acquire);
    if (m == PT__POLLFD_OPEN || m == PT__POLLREG_CLOSING)
        return -EBUSY;
    atomic_init(&r->events, 0);
    /* magic is left as it was until the registration succeeds: a refused
     * open leaves a closed record closed */
    r->slot = 0;
    r->waits = waits;
    r->fd = fd;
    r->out = 0;
    r->batch = 0;
    r->np = np;
    r->udata = udata;
    return 0;
}

void pt__reg_opened(pt_pollreg *r)
{
    atomic_store_explicit(&r->magic, PT__POLLFD_OPEN, memory_order_release);
}

int pt__reg_check(const pt_pollreg *r)
{
    if (!r)
        return -EINVAL;
    uint32_t m = atomic_load_explicit(&r->magic, memory_order_acquire);
    return m == PT__POLLFD_OPEN                                   ? 0
           : m == PT__POLLFD_CLOSED || m == PT__POLLREG_CLOSING ? -EBADF
                                                                 : -EINVAL;
}

int pt_pollreg_open(pt_netpoll *np, pt_pollreg *r, int fd, unsigned events, void *udata)
{
    int err = pt__reg_open(np, r, fd, events, udata, false);
    if (err == 0 && (err = pt__np_register(np, r, events)) == 0)
        pt__reg_opened(r);
    return err;
}

int pt_pollreg_arm(pt_pollreg *r, unsigned events)
{
    int err = pt__reg_check(r);
    if (err < 0)
        return err;
    if (r->waits) /* a pt_pollfd's: its own calls, which count their refs */
        return pt_pollfd_arm((pt_pollfd *)r, events);
    if (events & ~(PT_POLL_READ | PT_POLL_WRITE))
        return -EINVAL;
    return pt__np_rearm(r->np, r, events);
}

static int reg_close(pt_pollreg *r, bool forget)
{
    int err = pt__reg_check(r);
    if (err < 0)
        return err;
    if (r->waits)
        return pt_pollfd_close((pt_pollfd *)r);
    /* one closer: the others, and opens, see it closing until it is */
    uint32_t open = PT__POLLFD_OPEN;
    if (!atomic_compare_exchange_strong_explicit(&r->magic, &open, PT__POLLREG_CLOSING,
                                                 memory_order_acq_rel, memory_order_acquire))
        return -EBADF;
    if (forget)
        pt__np_forget(r->np, r);
    else
        pt__np_unregister(r->np, r);
    atomic_store_explicit(&r->magic, PT__POLLFD_CLOSED, memory_order_release);
    return 0;
}

int pt_pollreg_close(pt_pollreg *r)
{
    return reg_close(r, false);
}

int pt_pollreg_forget(pt_pollreg *r)
{
    return reg_close(r, true);
}
