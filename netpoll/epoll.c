/* The epoll backend (Go's netpoll_epoll.go), with nanosecond timeouts.
 *
 * Descriptors are registered edge-triggered (EPOLLET) for the sides asked,
 * reads with EPOLLRDHUP, as Go does. The break eventfd is level-triggered
 * (EPOLLIN): it stays readable, so reported, until a blocking wait reads it.
 *
 * Timed waits, best first:
 *  - epoll_pwait2 (Linux 5.11): a relative timespec, hrtimer-precise.
 *    Probed once at init; ENOSYS (old kernel) or EPERM (seccomp) rule it out.
 *  - a timerfd (CLOCK_MONOTONIC, absolute time) in the epoll set, and
 *    epoll_wait with no timeout, as muduo times its loop: one extra syscall
 *    when the deadline changes, none when the loop re-waits for the same.
 *  - epoll_wait with the timeout rounded UP to a millisecond (never early;
 *    Go rounds the same way, though it floors sub-ms waits to 1 ms too).
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "netpoll/internal.h"

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

static uint32_t to_epoll(unsigned events)
{
    uint32_t e = EPOLLET;
    if (events & PT_POLL_READ)
        e |= EPOLLIN | EPOLLRDHUP;
    if (events & PT_POLL_WRITE)
        e |= EPOLLOUT;
    return e;
}

static int ctl(pt_netpoll *np, int op, int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = tag;
    return epoll_ctl(np->epfd, op, fd, &ev) < 0 ? -errno : 0;
}

static int ep_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *ts)
{
    return (int)syscall(SYS_epoll_pwait2, epfd, evs, max, ts, NULL, (size_t)8);
}

static int ep_init(pt_netpoll *np)
{
    np->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (np->epfd < 0)
        return -errno;
    int err = ctl(np, EPOLL_CTL_ADD, np->breakfd, EPOLLIN, np_tag(TAG_BREAK, 0));
    if (err < 0)
        goto fail;
    if (!(np->flags & PT_NETPOLL_TIMERFD)) {
        struct epoll_event ev;
        struct timespec zero = {0, 0};
        np->pwait2 = ep_pwait2(np->epfd, &ev, 1, &zero) >= 0;
    }
    if (!np->pwait2) {
        np->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (np->timerfd >= 0 &&
            ctl(np, EPOLL_CTL_ADD, np->timerfd, EPOLLIN, np_tag(TAG_TIMER, 0)) < 0) {
            close(np->timerfd);
            np->timerfd = -1;
        }
    }
    np->name = np->pwait2 ? "epoll+epoll_pwait2" : np->timerfd >= 0 ? "epoll+timerfd" : "epoll+ms";
    return 0;
fail:
    close(np->epfd);
    np->epfd = -1;
    return err;
}

static void ep_fini(pt_netpoll *np)
{
    if (np->timerfd >= 0)
        close(np->timerfd);
    close(np->epfd);
}

static int ep_add(pt_netpoll *np, int fd, uint64_t tag, unsigned events)
{
    int err = ctl(np, EPOLL_CTL_ADD, fd, to_epoll(events), tag);
    /* The same file under the same number is still in the set: forgotten
     * (pt_pollreg_forget) while another descriptor of it (a dup, a child's
     * copy) kept it open, and then given this number again (dup2). Its
     * entry is taken over; its old tag is stale in the slot table. */
    if (err == -EEXIST)
        err = ctl(np, EPOLL_CTL_MOD, fd, to_epoll(events), tag);
    return err;
}

static int ep_mod(pt_netpoll *np, int fd, uint64_t old_tag, uint64_t tag, unsigned events)
{
    (void)old_tag;
    /* EPOLL_CTL_MOD re-checks readiness: a ready fd is reported again. */
    return ctl(np, EPOLL_CTL_MOD, fd, to_epoll(events), tag);
}

static void ep_del(pt_netpoll *np, int fd, uint64_t tag)
{
    (void)tag;
    /* EBADF or ENOENT: the fd was closed first, which removed it already. */
    ctl(np, EPOLL_CTL_DEL, fd, 0, 0);
}

/* The timerfd fallback: arm it for `until` (0: disarm). Re-arming also
 * clears an expiry not yet read. */
static void arm_timerfd(pt_netpoll *np, pt_nanos until)
{
    if (np->timerfd_until == until)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = until / 1000000000;
    its.it_value.tv_nsec = until % 1000000000;
    if (timerfd_settime(np->timerfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
        np->timerfd_until = until;
}

static int ep_wait(pt_netpoll *np, pt_nanos until, struct np_raw *raw, int max)
{
    struct epoll_event evs[NP_RAW_MAX];
    if (max > NP_RAW_MAX)
        max = NP_RAW_MAX;
    int n;
    if (until == 0) {
        n = epoll_wait(np->epfd, evs, max, 0);
    } else if (until == PT_MAXWHEN) {
        if (np->timerfd >= 0 && np->timerfd_until != 0)
            arm_timerfd(np, 0);
        n = epoll_wait(np->epfd, evs, max, -1);
    } else if (np->pwait2) {
        pt_nanos rel = until - pt_nanotime();
        if (rel < 0)
            rel = 0;
        struct timespec ts = {rel / 1000000000, rel % 1000000000};
        n = ep_pwait2(np->epfd, evs, max, &ts);
    } else if (np->timerfd >= 0) {
        arm_timerfd(np, until);
        n = epoll_wait(np->epfd, evs, max, -1);
    } else {
        pt_nanos rel = until - pt_nanotime();
        pt_nanos ms = rel <= 0 ? 0 : (rel + 999999) / 1000000;
        n = epoll_wait(np->epfd, evs, max, ms > INT32_MAX ? INT32_MAX : (int)ms);
    }
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    int out = 0;
    for (int i = 0; i < n; i++) {
        uint64_t tag = evs[i].data.u64;
        if (TAG_KIND(tag) == TAG_TIMER) {
            uint64_t ticks;
            if (read(np->timerfd, &ticks, sizeof ticks) > 0)
                np->timerfd_until = 0;
            continue;
        }
        raw[out].tag = tag;
        raw[out].res = (int32_t)evs[i].events;
        raw[out].flags = 0;
        out++;
    }
    return out;
}

const struct np_ops pt__np_epoll_ops = {
    .name = "epoll",
    .init = ep_init,
    .fini = ep_fini,
    .add = ep_add,
    .mod = ep_mod,
    .del = ep_del,
    .close_unregisters = true,
    .wait = ep_wait,
};
