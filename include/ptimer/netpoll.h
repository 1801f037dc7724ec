/* ptimer/netpoll.h: the netpoller, where timers and I/O meet (Go's
 * runtime/netpoll.go, netpoll_epoll.go) in C.
 *
 * A pt_netpoll waits for readiness of registered descriptors with a timeout
 * in nanoseconds, can be broken out of that wait from any thread, and gives
 * every waiting descriptor (a pt_pollfd, Go's pollDesc) a read and a write
 * deadline built on per-P timers (ptimer.h); a bare registration
 * (pt_pollreg) is for callers that handle the events themselves. One
 * interface, two backends:
 *
 *   backend   timed wait                               precision
 *   epoll     epoll_pwait2 (Linux >= 5.11)             nanoseconds (hrtimer)
 *             else a timerfd in the epoll set (muduo)  nanoseconds (hrtimer)
 *             else epoll_wait, rounded UP to a ms      milliseconds, never early
 *   io_uring  IORING_OP_TIMEOUT, absolute monotonic    nanoseconds (hrtimer)
 *
 * Go rounds a timed netpoll up to whole milliseconds (epoll_wait's unit);
 * ptimer does that only when the kernel has neither epoll_pwait2 nor
 * timerfd. A wait never returns before its timeout unless something woke it
 * (an event, a break). The kernel's timer slack (50 us by default,
 * prctl(PR_SET_TIMERSLACK)) still applies to every backend.
 *
 * Choosing the backend: pt_netpoll_options.backend, else the environment
 * variable PT_NETPOLL=epoll|uring, else epoll. epoll is the default because
 * it is what Go, libuv and muduo use, it works wherever Linux does, and for
 * readiness polling io_uring buys no precision (both time with hrtimers)
 * while container runtimes and kernel.io_uring_disabled often refuse it.
 * When io_uring is asked for but not built in (PT_URING off), or the kernel
 * or a sandbox refuses it (io_uring_setup fails, or a needed opcode is
 * missing), the netpoll falls back to epoll: pt_netpoll_backend() tells
 * which one runs and pt_netpoll_fallback() why (the library never prints;
 * a program that cares says so itself).
 *
 * Readiness is edge-triggered, as in Go: registering (or re-arming) a
 * descriptor reports it once if it is ready now, then each new readiness is
 * reported once (EPOLLET; io_uring multishot poll). Each side (read, write)
 * keeps a ready bit that a waiter consumes, Go's rg/wg:
 *
 *   side state (rg/wg)   meaning
 *   NIL                  nothing pending
 *   READY                readiness arrived and no waiter has consumed it
 *   WAIT                 a thread waits (pt_pollfd_wait), sleeping on the word
 *
 *   event (pt_netpoll_wait)       NIL, WAIT -> READY (waking the waiter)
 *   deadline fires, close         WAIT -> NIL (waking it: it sees the error)
 *   pt_pollfd_wait                READY -> NIL (returns at once); NIL -> WAIT,
 *                                 sleep until the state leaves WAIT, -> NIL
 *   pt_pollfd_prepare             READY -> NIL (Go's pollReset)
 *
 * The intended use, as Go's internal/poll does it: prepare, try the I/O
 * syscall, and on EAGAIN wait, then try again. Some thread must be in
 * pt_netpoll_wait for readiness (and, with an owned heap, deadlines) to be
 * delivered to waiting threads; or use the events pt_netpoll_wait returns
 * directly, as an event loop would.
 *
 * Deadlines. Each descriptor owns two pt_timer, read and write. They live on
 * the heap named in pt_pollfd_set_deadline (a P's heap), or on the netpoll's
 * default heap: the one given in the options, or one the netpoll owns and
 * runs inside pt_netpoll_wait (so deadlines fire while waiting). A deadline
 * that fires marks its side timed out (-ETIMEDOUT) and wakes the side's
 * waiter; every change of a side's deadline bumps that side's sequence
 * number, which the timer carries as its `seq`, so a timer that fires after
 * its deadline was reset (Go's rseq/wseq) is ignored.
 *
 * Errors: every function that can fail returns a negative errno and changes
 * nothing: -EINVAL (NULL, bad mode or flags, a pt_pollfd never opened), -EBADF
 * (not an open fd, or a closed pt_pollfd), -EEXIST (fd already registered with this netpoll),
 * -EPERM (the kernel cannot poll the fd: a regular file), -ETIMEDOUT (the
 * side's deadline passed), -EBUSY, -ENOMEM.
 *
 * Lifetime: a pt_pollfd is caller memory (embeddable). After
 * pt_pollfd_close() returns, no callback of its timers runs, the kernel no
 * longer reports it, and no thread is inside a call on it that began before
 * the close: the caller may free it. Calls on a closed (not freed) pt_pollfd
 * return -EBADF. Unregister a descriptor before closing the fd itself: the
 * fd number may be reused at once. pt_netpoll_destroy() refuses (-EBUSY)
 * while descriptors are open or a thread waits.
 */
#ifndef PTIMER_NETPOLL_H
#define PTIMER_NETPOLL_H

#include <stdint.h>

#include "ptimer/clock.h"
#include "ptimer/ptimer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pt_netpoll pt_netpoll;

enum pt_netpoll_backend {
    PT_NETPOLL_DEFAULT, /* $PT_NETPOLL (epoll|uring), else epoll */
    PT_NETPOLL_EPOLL,
    PT_NETPOLL_URING,
};

/* Interest and event bits. */
#define PT_POLL_READ 0x1u  /* readable, or the peer shut down its side (EPOLLRDHUP) */
#define PT_POLL_WRITE 0x2u /* writable */
#define PT_POLL_ERR 0x4u   /* events only: an error is pending on the fd (EPOLLERR) */
#define PT_POLL_HUP 0x8u   /* events only: hang-up (EPOLLHUP) */

/* Option flags. */
#define PT_NETPOLL_TIMERFD                                                                         \
    0x1u /* epoll: time waits with the timerfd even where                                          \
            epoll_pwait2 exists (to test the fallback) */

typedef struct pt_netpoll_options {
    enum pt_netpoll_backend backend;
    unsigned flags;
    /* The default heap for deadlines. NULL: the netpoll owns one and runs
     * it inside pt_netpoll_wait. Otherwise its owner runs it (checks it,
     * and sleeps no later than its next timer); pass pt_netpoll_wake and
     * the netpoll to its pt_timers_init so a new earliest timer breaks the
     * wait. It must outlive the netpoll. */
    pt_timers *timers;
} pt_netpoll_options;

/* Two records, one for each kind of user:
 *  - pt_pollreg, the bare registration: an fd's interest and the user data
 *    its events carry, nothing else. For an event loop that handles
 *    pt_netpoll_wait's events itself, or a scheduler that parks its own
 *    waiters (ptimer's does): no side states, no deadline timers, no lock
 *    or reference count of its own.
 *  - pt_pollfd, the waiting descriptor (Go's pollDesc) built on one: the
 *    read and write side states a thread waits on, and deadlines on ptimer
 *    timers.
 * Both are embeddable; treat every field as private. Any memory that is
 * not an open record will do for its open; it is initialised there. */
typedef struct pt_pollreg {
    PT_ATOMIC(uint32_t) events; /* interest; written under the netpoll's lock */
    PT_ATOMIC(uint32_t) magic;  /* open or closed: release store, acquire load */
    uint32_t slot;              /* index in the netpoll's table (its lock) */
    uint32_t waits;             /* set at open: this is the first member of a pt_pollfd */
    int fd;
    int out;        /* the waiter's: this fd's entry in the events of its wait */
    uint64_t batch; /* the waiter's: merges one fd's events per wait */
    pt_netpoll *np;
    void *udata;
} pt_pollreg;

typedef struct pt_pollfd {
    pt_pollreg reg;         /* first: a registration is the record's start */
    PT_ATOMIC(uint32_t) rg; /* read side: NIL, READY, WAIT; the waiter's futex word */
    PT_ATOMIC(uint32_t) wg; /* write side, the same */
    /* closing and expired-deadline bits, written under lock, read without
     * it by waiters (Go's atomicInfo) */
    PT_ATOMIC(uint32_t) info;
    PT_ATOMIC(uint32_t) refs; /* 2 x calls in flight, + 1 while close sleeps on it */
    PT_ATOMIC(uint32_t) lock; /* pt__lock: guards rd, wd, rseq, wseq, arming rt and wt */
    pt_nanos rd, wd;          /* deadlines: 0 none, -1 expired, else when */
    uintptr_t rseq, wseq;     /* bumped on every deadline change (stale timers) */
    pt_timer rt, wt;          /* the deadline timers */
} pt_pollfd;

/* What pt_netpoll_wait reports: one entry per ready descriptor. */
typedef struct pt_poll_event {
    pt_pollfd *pd; /* NULL for a bare registration */
    void *udata;   /* as given to its open */
    int fd;
    unsigned events; /* PT_POLL_READ | PT_POLL_WRITE | PT_POLL_ERR | PT_POLL_HUP */
    pt_pollreg *reg; /* the registration (pd's own for a pt_pollfd) */
} pt_poll_event;

typedef struct pt_netpoll_stats {
    uint64_t waits;           /* pt_netpoll_wait calls */
    uint64_t sleeps;          /* kernel waits that could block */
    uint64_t events;          /* events returned */
    uint64_t breaks;          /* pt_netpoll_break calls */
    uint64_t signals;         /* wake-ups written to the kernel; concurrent breaks coalesce */
    uint64_t deadlines_fired; /* deadline timers that timed a side out */
    uint64_t deadlines_stale; /* deadline timers ignored: reset after they fired */
} pt_netpoll_stats;

/* ---- the netpoll -------------------------------------------------------- */

/* A new netpoll; opt may be NULL (defaults). 0, or -EINVAL (unknown backend
 * or flags), -ENOMEM, -EMFILE, ... (no backend could start). */
PT_API int pt_netpoll_create(pt_netpoll **out, const pt_netpoll_options *opt);

/* Frees np: its kernel objects and its owned heap. 0; -EBUSY while
 * descriptors are open, a thread waits, or the owned heap still holds
 * timers the caller put there; -EINVAL. */
PT_API int pt_netpoll_destroy(pt_netpoll *np);

/* The backend in use (after any fallback): PT_NETPOLL_EPOLL or _URING;
 * PT_NETPOLL_DEFAULT for a bad np. */
PT_API enum pt_netpoll_backend pt_netpoll_backend(const pt_netpoll *np);

/* Why the backend in use is not the one asked for: 0 if it is; -ENOSYS
 * when io_uring was asked for and not built in (PT_URING off); the error
 * io_uring's setup returned (-EPERM, -ENOMEM, ...) when the kernel or a
 * sandbox refused it; -EINVAL when $PT_NETPOLL names no backend (epoll is
 * used). -EINVAL for a bad np as well. */
PT_API int pt_netpoll_fallback(const pt_netpoll *np);

/* "epoll+epoll_pwait2", "epoll+timerfd", "epoll+ms" or
 * "io_uring+IORING_OP_TIMEOUT": the backend and how it times waits;
 * "none" for a bad np. */
PT_API const char *pt_netpoll_name(const pt_netpoll *np);

/* The default heap for deadlines (the owned one, or options.timers);
 * NULL for a bad np. */
PT_API pt_timers *pt_netpoll_timers(pt_netpoll *np);

/* Waits for readiness and stores up to max events in ev. timeout_ns: 0
 * polls without blocking, negative blocks until an event or a break,
 * positive waits at most that long (never returning earlier unless woken).
 * With an owned heap, due deadlines fire during the wait. Returns the
 * number of events (0: timeout or break), or -EINVAL. One thread waits at
 * a time (Go lets one M block in netpoll): another concurrent call returns
 * 0 at once if its timeout is 0, else -EBUSY. A non-blocking wait leaves a
 * pending break for the next blocking one (Go's netpollBreak rule). */
PT_API int pt_netpoll_wait(pt_netpoll *np, pt_nanos timeout_ns, pt_poll_event *ev, int max);

/* Wakes the thread blocked in pt_netpoll_wait, from any thread, or makes
 * the next blocking wait return at once: no wake is lost. Breaks before the
 * waiter consumes one coalesce into one kernel signal (Go's
 * netpollWakeSig). 0 or -EINVAL. */
PT_API int pt_netpoll_break(pt_netpoll *np);

/* A pt_wake_func (ctx: the netpoll) for a heap whose owner sleeps in
 * pt_netpoll_wait: breaks the wait if `when` is earlier than the time the
 * waiter will wake by (Go's wakeNetPoller). Nothing for a NULL ctx. */
PT_API void pt_netpoll_wake(void *np, pt_nanos when);

/* Counters since create: all zero for a bad np; nothing with out NULL. */
PT_API void pt_netpoll_read_stats(const pt_netpoll *np, pt_netpoll_stats *out);

/* ---- bare registrations ------------------------------------------------ */

/* Registers fd with interest `events` (PT_POLL_READ and/or PT_POLL_WRITE;
 * 0 is allowed: errors and hang-ups are still reported), its events to
 * carry udata. 0; -EINVAL, -EBADF (fd not open), -EEXIST (fd already
 * registered here), -EBUSY (r is open: close it first), -EPERM, -ENOMEM.
 * A refused open leaves r as it was. */
PT_API int pt_pollreg_open(pt_netpoll *np, pt_pollreg *r, int fd, unsigned events, void *udata);

/* Changes the interest; if the fd is ready now for the new interest, that
 * is reported once more. 0; -EINVAL, -EBADF (closed, or closed while this
 * ran), -ENOMEM. */
PT_API int pt_pollreg_arm(pt_pollreg *r, unsigned events);

/* Unregisters r and tells the kernel; no wait that starts handing out its
 * events after this returns names r (a wait hands out a batch under the
 * netpoll's lock, which this takes). An event a wait already handed out
 * may still carry udata: whoever reads it must find the owner closed.
 * Calls on r racing this one return -EBADF or act before it; r's memory
 * must outlive them. 0; -EBADF if already closed; -EINVAL. Does not close
 * the fd. */
PT_API int pt_pollreg_close(pt_pollreg *r);

/* pt_pollreg_close for a caller that closes r's fd itself right after
 * (nginx's close-event flag): where closing the fd's last descriptor ends
 * the kernel's registration by itself (the epoll backend), the kernel is
 * not told, one system call less a connection. If another descriptor of
 * the file stays open (a dup, a forked child's copy), the kernel keeps
 * reporting the file under r's old tag until that one closes too: those
 * events are recognised as stale and dropped, and registering the same
 * file under the same number again works. On io_uring the same as
 * pt_pollreg_close (a poll holds its file open). Same returns. */
PT_API int pt_pollreg_forget(pt_pollreg *r);

/* ---- waiting descriptors ------------------------------------------------ */

/* Registers fd with interest `events` (PT_POLL_READ and/or PT_POLL_WRITE;
 * 0 is allowed: errors and hang-ups are still reported). 0; -EINVAL, -EBADF
 * (fd not open), -EEXIST (fd already registered here), -EBUSY (pd is open:
 * close it first), -EPERM, -ENOMEM. A refused open leaves pd as it was (a
 * closed one stays closed). */
PT_API int pt_pollfd_open(pt_netpoll *np, pt_pollfd *pd, int fd, unsigned events, void *udata);

/* Changes the interest; if the fd is ready now for the new interest, that
 * is reported once more. 0; -EINVAL, -EBADF (closed), -ENOMEM. */
PT_API int pt_pollfd_arm(pt_pollfd *pd, unsigned events);

/* Before an I/O attempt on the sides in mode (Go's pollReset): -ETIMEDOUT
 * if a side's deadline passed, -EBADF if closed; else clears their ready
 * bits and returns 0. */
PT_API int pt_pollfd_prepare(pt_pollfd *pd, unsigned mode);

/* Blocks until the side `mode` (PT_POLL_READ or PT_POLL_WRITE, which must be
 * in the interest) is ready, consuming its ready bit (at once if it is
 * already set). 0; -ETIMEDOUT (its deadline passed, now or while waiting),
 * -EBADF (closed, now or while waiting), -EBUSY (another thread waits on
 * that side), -EINVAL. */
PT_API int pt_pollfd_wait(pt_pollfd *pd, unsigned mode);

/* Sets the deadline of the sides in mode to the CLOCK_MONOTONIC time `when`:
 * 0 clears it; a time already past times the sides out at once (waking
 * their waiters); a later one arms the side's timer on ts (NULL: the
 * netpoll's default heap). Setting a deadline clears a timed-out state.
 * 0; -EINVAL (negative when, bad mode, a heap that pt_timer_modify refuses),
 * -EBADF (closed), -ENOMEM. */
PT_API int pt_pollfd_set_deadline(pt_pollfd *pd, unsigned mode, pt_nanos when, pt_timers *ts);

/* Unregisters pd: wakes its waiters (they return -EBADF), stops its timers
 * (pt_timer_stop_sync: no callback runs after), tells the kernel, and waits
 * for calls in flight on pd to return. On return pd may be freed. 0;
 * -EBADF if already closed or closing; -EINVAL. Does not close the fd. */
PT_API int pt_pollfd_close(pt_pollfd *pd);

#ifdef __cplusplus
}
#endif

#endif
