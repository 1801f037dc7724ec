/* Shared by the netpoll core (netpoll.c), the descriptors (pollfd.c) and the
 * backends (epoll.c, uring.c). */
#ifndef PTIMER_NETPOLL_INTERNAL_H
#define PTIMER_NETPOLL_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/netpoll.h"

#include "netpoll/slots.h"
#include "base/lock.h"

#define PT__NETPOLL_MAGIC 0x6e706f6cu /* "npol" */
#define PT__POLLFD_OPEN 0x70646f70u   /* "pdop" */
#define PT__POLLFD_CLOSED 0x7064636cu /* "pdcl" */
#define PT__POLLREG_CLOSING 0x70646367u /* "pdcg": a bare registration's close runs */

/* Side states (rg, wg): the table in netpoll.h. */
#define PD_NIL 0u
#define PD_READY 1u
#define PD_WAIT 2u

/* pd->info bits (Go's pollInfo). */
#define PD_CLOSING 0x1u
#define PD_RD_EXPIRED 0x2u
#define PD_WD_EXPIRED 0x4u

/* Why the poller was signalled (np->wake_sig). A user break ends the wait;
 * a timer wake (the owned heap has a new earliest deadline) only makes the
 * waiter recompute how long to sleep. */
#define WAKE_USER 0x1u
#define WAKE_TIMER 0x2u

/* What the kernel hands back with each event (epoll_event.data, io_uring
 * user_data): a kind in the top two bits; for descriptors a generation and
 * a slot index, so that an event queued before a close or a re-arm is
 * recognised as stale (Go tags its pollDesc pointers with fdseq). */
#define TAG_FD 0ull
#define TAG_BREAK 1ull
#define TAG_TIMER 2ull
#define TAG_IGNORE 3ull
#define TAG_KIND(t) ((t) >> 62)
#define TAG_GEN_MASK 0x3fffffffu
static inline uint64_t np_tag_fd(uint32_t gen, uint32_t idx)
{
    return ((uint64_t)(gen & TAG_GEN_MASK) << 32) | idx;
}
static inline uint64_t np_tag(uint64_t kind, uint64_t low)
{
    return kind << 62 | low;
}

/* One event from a backend: res is the poll mask (EPOLLIN ..., the same
 * values as POLLIN ...) or a negative errno; NP_RAW_ENDED: an io_uring
 * multishot poll that will report no more (to be re-armed). */
struct np_raw {
    uint64_t tag;
    int32_t res;
    uint32_t flags;
};
#define NP_RAW_ENDED 0x1u
#define NP_RAW_MAX 128

struct np_ops {
    const char *name;
    /* Creates the backend's kernel objects and registers np->breakfd. */
    int (*init)(pt_netpoll *np);
    void (*fini)(pt_netpoll *np);
    /* Register, re-register (new tag, new interest), unregister: add and
     * del without np->lock (slots.c says why), mod with it held. */
    int (*add)(pt_netpoll *np, int fd, uint64_t tag, unsigned events);
    int (*mod)(pt_netpoll *np, int fd, uint64_t old_tag, uint64_t tag, unsigned events);
    void (*del)(pt_netpoll *np, int fd, uint64_t tag);
    /* Whether closing an fd's last descriptor ends its registration by
     * itself (epoll), so pt_pollreg_forget need not call del. */
    bool close_unregisters;
    /* Waits until the CLOCK_MONOTONIC time `until` (0: poll, PT_MAXWHEN: no
     * limit) for up to max events; by the one waiter only. Returns the
     * number stored (0 on timeout or EINTR) or a negative errno. */
    int (*wait)(pt_netpoll *np, pt_nanos until, struct np_raw *raw, int max);
};

extern const struct np_ops pt__np_epoll_ops;
#ifdef PT_HAVE_URING
extern const struct np_ops pt__np_uring_ops;
#endif

struct pt_netpoll {
    uint32_t magic;
    enum pt_netpoll_backend backend;
    const struct np_ops *ops;
    unsigned flags;
    const char *name;
    int fallback; /* pt_netpoll_fallback() */
    int breakfd; /* eventfd: the break signal */

    /* WAKE_* reasons pending, 0 if none: the eventfd has been written
     * since the waiter last consumed it iff nonzero (Go's netpollWakeSig).
     * fetch_or by wakers (release: what they did before the break is seen
     * by the waiter), exchange to 0 by the waiter (acquire). */
    _Atomic uint32_t wake_sig;
    /* The time the waiter sleeps until: 0 when nobody waits, PT_MAXWHEN
     * while it computes. The waiter's exchange pairs with the wakers'
     * read-modify-write (read_poll_until in netpoll.c). */
    _Atomic pt_nanos poll_until;
    /* 1 while a thread is in pt_netpoll_wait; acquire/release hand the
     * waiter-only fields (backend CQ state, batch) from one waiter to the
     * next. */
    _Atomic uint32_t waiting;

    /* pt__lock: guards the slot table, fdmap, nopen, each open record's
     * slot and events, and the backends' re-arming (not their add and
     * del: slots.c). Held by the waiter while it dispatches a batch of
     * events, so a record is never touched after its close took the slot
     * back. */
    _Atomic uint32_t lock;
    struct np_slots slots;
    uint64_t batch; /* waiter-only: one per pt_netpoll_wait call */

    pt_timers *timers; /* the default heap for deadlines */
    bool owns_timers;  /* timers == &own, run inside wait */
    pt_timers own;

    /* epoll backend */
    int epfd, timerfd;
    bool pwait2;
    pt_nanos timerfd_until; /* waiter-only: what the timerfd is armed for, 0 if not */
    /* io_uring backend (uring.c) */
    void *uring;

    struct {
        atomic_ulong waits, sleeps, events, breaks, signals, deadlines_fired, deadlines_stale;
    } st;
};

static inline bool np_valid(const pt_netpoll *np)
{
    return np && np->magic == PT__NETPOLL_MAGIC;
}

/* Signals the poller for `why` unless a signal is already pending. */
void pt__np_signal(pt_netpoll *np, uint32_t why);
/* The owned heap's pt_wake_func. */
void pt__np_own_wake(void *ctx, pt_nanos when);
/* Reads the break eventfd empty. */
void pt__np_drain_break(pt_netpoll *np);

/* pollreg.c: what opening either record shares. Checks the arguments and
 * initialises r (-EINVAL, -EBADF, -EBUSY; r untouched on failure); the
 * caller registers it, then marks it open. */
int pt__reg_open(pt_netpoll *np, pt_pollreg *r, int fd, unsigned events, void *udata, bool waits);
void pt__reg_opened(pt_pollreg *r);
/* 0 if r is open; -EBADF closed or closing; -EINVAL not a record. */
int pt__reg_check(const pt_pollreg *r);

/* pollfd.c: an event arrived for pd (np->lock held). mode is READ/WRITE. */
void pt__pd_ready(pt_pollfd *pd, unsigned mode);

/* Maps a poll mask to the sides it makes ready, Go's way: in, rdhup, hup
 * and err wake readers; out, hup and err wake writers. */
unsigned pt__np_mask_to_mode(uint32_t mask);

#endif
