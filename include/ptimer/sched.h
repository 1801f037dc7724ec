/* ptimer/sched.h: a goroutine-style M:N scheduler (Go's runtime/proc.go
 * G/M/P model) whose processors run the per-P timers (ptimer.h).
 *
 * Gs are coroutines on stacks of their own (mmap'd, with a guard below
 * each whose kind depends on the kernel, enum pt_stack_guard: a guard
 * region or page, on which an overflowing G faults, or a canary page left
 * untouched, checked at the G's switches and by the monitor: either way
 * the process stops with a message naming the G). Ms are OS threads, one per P. A P
 * is a processor: a local run queue, a heap of timers (pt_timers) and a
 * pool of finished Gs whose stacks it reuses. An M with nothing to run
 * looks at its P's timers, its queue, the global queue, then steals half
 * of another P's queue and runs other Ps' due timers; with nothing found,
 * one idle M sleeps in the netpoller until the earliest timer of any P and
 * the others park. A new earliest timer breaks that sleep (Go's
 * wakeNetPoller).
 *
 * C has no preemption: a G that never yields keeps its M. A monitor
 * thread (Go's sysmon) notices Ps whose timers are overdue because their
 * M is busy, and gets those timers run: by waking an idle M that steals
 * them, or, when every P is busy, by running their runtime work itself (a
 * sleeping G made runnable goes on the global queue). It also polls the
 * network when nobody has for 10 ms, for Gs parked on fds while every P
 * is busy.
 *
 * Timer mode: PT_TIMERS_PER_P (Go) puts every sleep on the calling P's
 * heap, of Go 1.14-1.22's design (ptimer.h); PT_TIMERS_LHEAP does the
 * same with Go 1.23's (lheap.h: a lock per timer); PT_TIMERS_TIMERTHREAD
 * puts it on the process's TimerThread, whose thread readies the G
 * remotely (bthread_usleep's way). A sleep from a
 * thread that is not running a G sleeps that thread.
 *
 * Errors: every call that can fail returns a negative errno and changes
 * nothing, but where its comment says otherwise (pt_time_timer_free's
 * -EBUSY leaves the timer stopped; pt_time_timer_reset's -ENOMEM leaves
 * it stopped). A call marked "G" must run inside a G: elsewhere it is
 * -EPERM.
 * Durations are pt_nanos; a duration <= 0 means now (Go's rule).
 */
#ifndef PTIMER_SCHED_H
#define PTIMER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "ptimer/clock.h"

#ifdef __cplusplus
extern "C" {
#define PT_SCHED_ATOMIC(T) T /* layout only: C++ code does not touch the fields */
#else
#define PT_SCHED_ATOMIC(T) _Atomic(T)
#endif

typedef struct pt_sched pt_sched;
typedef struct pt_g pt_g;

enum pt_timer_mode {
    PT_TIMERS_PER_P = 0,       /* sleeps and timeouts on the calling P's heap (Go) */
    PT_TIMERS_TIMERTHREAD = 1, /* on the process's TimerThread (bthread) */
    PT_TIMERS_LHEAP = 2,       /* on the calling P's heap of Go 1.23's design (lheap.h) */
};

/* How a G's stack overflow is caught. Stacks are slots carved from large
 * reservations, so the number of live Gs is bounded by memory, not by
 * vm.max_map_count; what sits below each stack depends on the kernel.
 * The environment variable PT_STACK_GUARD (auto, pages or canary), when
 * set, overrides the option, for every scheduler the process creates;
 * PT_STACK_REGIONS=0 has the automatic choice act as on a kernel without
 * guard regions (before 6.13: pages, then canaries), to run that path on
 * a newer kernel (set before the process's first scheduler). */
enum pt_stack_guard {
    /* A guard region (MADV_GUARD_INSTALL, Linux 6.13+) below every stack:
     * an overflow faults, and costs no mapping. A kernel without them
     * gets PT_STACK_GUARD_PAGES. A fault on a G's guard (region or page)
     * is told from any other by the scheduler's SIGSEGV handler, which
     * runs on each M's own signal stack, names the G and aborts; other
     * faults go to the handler installed before it, or kill as before.
     * (Not in sanitized builds, whose own handlers report faults.) */
    PT_STACK_GUARD_AUTO = 0,
    /* What a kernel before 6.13 gets: a PROT_NONE page below each of the
     * process's first 256 stacks (a fault; two mappings each, and a
     * mapping split that costs a spawn as much as the rest of the G),
     * then canaries. */
    PT_STACK_GUARD_PAGES = 1,
    /* No faulting guard: the page below each stack is left untouched,
     * neither written nor read, so it costs no memory (on a kernel
     * without the shared zero page too) and no mapping. Overflow is
     * caught three ways, each aborting with a message that names the G:
     * a switch out of a G (yield, park, preemption, exit) finds its frame
     * below its stack's end; a switch within 4 KiB of the end asks the
     * kernel whether the page below was touched (mincore); and the
     * monitor asks the same of every canary stack in use, up to 32
     * reservations of them (about 900 stacks each) every 100 ms, so an
     * overflow that came back before a switch is caught within seconds
     * even among a million Gs. What it cannot catch in time: frames of
     * more than a page step over the page (as over a PROT_NONE page), a
     * touched page swapped out before it is asked about is not seen, and
     * an overflow that came back has written whatever it wrote past that
     * page, into the stack below, before the monitor sees it. */
    PT_STACK_GUARD_CANARY = 2,
};

/* How Gs' reads and writes on sockets reach the kernel (pt_fd_read,
 * pt_fd_write, pt_fd_writev). The environment variable PT_FD_IO (poll or
 * uring), when set, overrides the option, for every scheduler the process
 * creates. */
enum pt_fd_io {
    /* Go's: the system call first, and on EAGAIN a park until the
     * netpoller reports the socket ready, then the call again. */
    PT_FD_IO_POLL = 0,
    /* Each P has an io_uring: a read or write is a request on the ring of
     * the G's P, and the G parks until it completes. A P submits what its
     * Gs queued in one io_uring_enter when it has no G left to run (and
     * every 61 Gs, or 32 requests, while it has), so a round of reads and
     * writes on many connections costs one system call, and a read that
     * finds nothing costs none (the kernel completes it when data comes).
     * A completion readies its G from the P's next round, or from the M
     * asleep in the netpoller (the ring signals an eventfd registered
     * there). The calls keep their meaning: a deadline cancels the request
     * and returns -ETIMEDOUT unless it completed first (then its count),
     * a close or pt_sched_cancel_fds ends it. Accept, connect and
     * descriptors other than sockets keep the poll path. A G that runs
     * without parking holds its P's queued requests until it does. A
     * ring's completion queue has four entries for each descriptor the
     * process may open (RLIMIT_NOFILE when the scheduler is made; 4,096
     * to 65,536; PT_RING_CQ=N sets it), and a read or write that would
     * find it full takes the poll path instead: no completion is ever
     * left in the kernel. A read or write moves at most what one system
     * call does (just under 2 GiB), a short count as on the poll path. Linux
     * 5.6 or later (5.19 or later lets the rings run without interrupting
     * a busy M for each completion; PT_RING_COOP=0 turns that off, as on
     * older kernels); pt_sched_create returns -ENOTSUP where the library
     * was built without liburing or the kernel lacks a request it needs,
     * or the kernel's error where it refuses a ring (-ENOSYS, -EPERM under
     * kernel.io_uring_disabled). */
    PT_FD_IO_URING = 1,
};

/* NULL or zeroed: the defaults. Fields may be added at the end: set them
 * by name ({.procs = 2}), and the ones a program does not name are 0. */
typedef struct pt_sched_options {
    int procs;                 /* Ps; 0: the CPUs this process may run on */
    size_t stack_size;         /* per G, rounded up to pages, plus the guard below it
                                * (stack_guard); 0: 64 KiB; at most 1 GiB */
    enum pt_timer_mode timers; /* where sleeps, timeouts and time.* timers live */
    enum pt_stack_guard stack_guard; /* below every G's stack (PT_STACK_GUARD overrides) */
    enum pt_fd_io fd_io;             /* how sockets are read and written (PT_FD_IO overrides) */
    /* Run on a virtual clock (see "Virtual time" below): true for tests
     * of timeout code, which then take no real time and give the same
     * times on every run. */
    bool virtual_time;
    /* Called once if the scheduler deadlocks (virtual time only): with
     * the report pt_sched_deadlock_report returns, on the thread that
     * found it, before pt_sched_wait returns; it must not call into the
     * scheduler. NULL: none. pt_sched_run's way to the report. */
    void (*on_deadlock)(const char *report, void *arg);
    void *on_deadlock_arg;
    /* The Gs' timer slack, as Linux's per-thread one: every sleep,
     * deadline and time.* timer of this scheduler may fire anywhere in
     * [when, when + timer_slack], so that those whose windows overlap
     * share a wake-up (the Ps' heaps, pt_timers_set_slack, ask to be
     * checked by their earliest when + timer_slack; the TimerThread,
     * pt_timerthread_schedule_slack, wakes at its earliest window's end). A
     * time.* value is still its due time; a sleep returns within its
     * window (on the virtual clock too). 0, the default: at `when`;
     * negative: -EINVAL. */
    pt_nanos timer_slack;
} pt_sched_options;

/* Counters since create, exact once the scheduler is quiet (each is
 * updated by one atomic or by its P's own M). */
typedef struct pt_sched_stats {
    uint64_t gs_created;        /* Gs started by pt_go */
    uint64_t gs_running_now;    /* Gs started and not finished (Go's NumGoroutine) */
    uint64_t steals;            /* Gs taken from another P's queue */
    uint64_t timers_run_owner;  /* per-P timers run by their own P */
    uint64_t timers_run_stolen; /* ... by another P while looking for work */
    uint64_t timers_run_sysmon; /* ... on the monitor's say-so, every P being busy */
    uint64_t netpoll_waits;     /* times an idle M slept in the netpoller */
    uint64_t netpoll_breaks;    /* times a new earliest timer or work broke that sleep */
    uint64_t parks;             /* times an idle M parked on its futex */
    uint64_t spinning_max;      /* most Ms ever looking for work at once */
    uint64_t sysmon_wakeps;     /* idle Ms the monitor woke to run overdue timers */
    uint64_t procs;             /* Ps now */
    uint64_t preempts;          /* Gs stopped in a preemptible region (pt_preemptible_begin) */
    uint64_t overflowed;        /* Gs queued on a P's overflow list, behind its full ring of
                                 * 1024 (Go's ring of 256 moves half of itself to the global
                                 * queue instead) */
    uint64_t handoffs;          /* Gs a parking or exiting G switched to directly, its M
                                 * skipping the search for work (the head of its P's queue) */
    /* G stacks in use now (running, runnable, parked or pooled), by what
     * guards them (enum pt_stack_guard), and the reservations they are
     * carved from */
    uint64_t stacks_guard_region; /* a guard region: no mapping of its own */
    uint64_t stacks_guard_page;   /* a PROT_NONE page: a mapping of its own */
    uint64_t stacks_canary;       /* a canary, checked at switches and by the monitor */
    uint64_t stack_reservations;  /* mappings the stacks are carved from */
    uint64_t stacks_prepared;     /* stacks an idle M or the monitor made ready (guarded,
                                   * first page faulted in) ahead of a burst of new Gs */
    /* PT_FD_IO_URING: reads and writes queued on the Ps' rings, and the
     * io_uring_enter calls that submitted them (and the cancels) */
    uint64_t ring_requests;
    uint64_t ring_enters;
} pt_sched_stats;

/* ---- virtual time (Go's testing/synctest, tokio's time::pause) ----------
 *
 * With .virtual_time, every time the scheduler gives its Gs is a virtual
 * clock's: sleeps, channel, select and fd deadlines, the time.* timers
 * and the values they send, and pt_time_now. The clock starts at
 * PT_VIRTUAL_EPOCH and moves only when every G is durably blocked: then
 * it jumps, at once, to the earliest timer pending on any P (or on the
 * scheduler's TimerThread), and what falls due there runs. A sleep of an
 * hour takes no real time, returns at its deadline exactly, and every
 * run of the same program sees the same times.
 *
 * Durably blocked: parked on something only another G of the scheduler,
 * or its clock, can end. Those waits are: a sleep; a channel operation or
 * a blocking select, on channels made by Gs of this scheduler (a
 * channel made by another thread may be sent on by that thread, which
 * the scheduler cannot see: Go's rule for channels made outside a
 * bubble); a time.* timer's or ticker's channel; a wait group
 * (pt_wg_wait); pt_park, whose waker must then be one of its Gs (or a
 * timer); pt_sched_settle's other Gs. Not durable, so the clock holds
 * while any G waits on them: every wait on a descriptor (pt_fd_*: the
 * kernel's events come in real time), a channel made outside the
 * scheduler, and a G running, runnable or in a system call. A G
 * waiting on a descriptor keeps the clock still, its own deadline
 * included, until the kernel's event ends the wait (Go's rule too: a
 * test that wants a network timeout to fire uses a socketpair and lets
 * a G of its own hold the other end).
 *
 * Deadlock: every G durably blocked and no timer pending (no sleep, no
 * deadline, no timer that could end a wait) can never end. The M that
 * finds it writes a report of every G (its id, the function it runs,
 * where it was made and by which G, what it waits on), calls
 * on_deadlock, and pt_sched_wait returns -ENOTRECOVERABLE from then on;
 * pt_sched_destroy then frees the scheduler with the Gs still parked
 * (never resumed: what they hold stays held), once their time.* timers
 * are freed (from any thread).
 *
 * The rest of the process keeps the real clock: pt_nanotime, threads
 * that are not the scheduler's, timers made outside its Gs. Under
 * PT_TIMERS_TIMERTHREAD the scheduler has a TimerThread of its own with
 * no thread (pt_timerthread_create_driven), whose due tasks its Ms run
 * as they run a P's timers. The monitor runs no timers (it rescues timers
 * that are late in real time, which virtual ones never are). */

/* The virtual clock's start: 2000-01-01T00:00:00Z as Unix nanoseconds
 * (synctest's start), so a time printed as wall time reads as that date. */
#define PT_VIRTUAL_EPOCH ((pt_nanos)946684800 * 1000000000)

/* Go's time.Now for Gs: the scheduler's clock, virtual or not, read from
 * any thread of a scheduler (its Gs, callbacks its Ms run); pt_nanotime()
 * elsewhere. */
PT_API pt_nanos pt_time_now(void);

/* synctest.Wait (G): returns once every other G of the caller's
 * scheduler is durably blocked (above), the clock unmoved. The basis of
 * "advance, then look": sleep past a deadline, settle, then check what
 * the Gs did. 0; -EPERM outside a G; -EINVAL on a scheduler without
 * virtual time; -EBUSY while another G settles. */
PT_API int pt_sched_settle(void);

/* The report of a deadlock (above), valid until pt_sched_destroy; NULL
 * when s has not deadlocked or is not valid. */
PT_API const char *pt_sched_deadlock_report(pt_sched *s);

/* Starts the Ps and their Ms. 0; -EINVAL (out NULL, procs < 0 or > 1024,
 * an unknown timer mode, stack guard or fd I/O, stack_size above 1 GiB, a
 * PT_STACK_GUARD value other than auto, pages or canary, a PT_FD_IO other
 * than poll or uring); -ENOMEM; -EAGAIN (threads); for PT_FD_IO_URING,
 * -ENOTSUP or the kernel's error (above). */
PT_API int pt_sched_create(pt_sched **out, const pt_sched_options *opt);

/* Blocks the calling thread (not a G) until no G of s is left. 0;
 * -EDEADLK from a G; -EINVAL; -ENOTRECOVERABLE once s, on virtual time,
 * deadlocked (every G blocked for good: see "Virtual time"). */
PT_API int pt_sched_wait(pt_sched *s);

/* Stops the Ms and frees everything. 0; -EBUSY while Gs remain (but
 * after a deadlock), or timers and tickers made by its Gs (pt_time_*)
 * are not yet freed;
 * -EDEADLK from a G of s; -EINVAL. */
PT_API int pt_sched_destroy(pt_sched *s);

/* A whole program's main: create, pt_go(fn, arg), wait, destroy. 0, or
 * the first error of those calls: -EINVAL (fn NULL, or as create);
 * -ENOTRECOVERABLE (a deadlock on virtual time: on_deadlock has the
 * report);
 * -EDEADLK from a G (nothing is created or started); -EBUSY when fn's Gs
 * left time.* timers unfreed (the scheduler is then left as it is:
 * pt_sched_current() in one of its Gs names it, for a later destroy). */
PT_API int pt_sched_run(const pt_sched_options *opt, void (*fn)(void *), void *arg);

/* procresize: 1 to 1024 Ps. A P removed hands its runnable Gs to the
 * global queue and its timers to P 0 (pt_timers_move) when its M next
 * schedules (at once when idle; after the running G yields or parks when
 * busy). 0; -EINVAL. */
PT_API int pt_sched_set_procs(pt_sched *s, int procs);

/* GOMAXPROCS; -EINVAL for a bad s. */
PT_API int pt_sched_procs(const pt_sched *s);

/* The counters into *out: all zero for a bad s; nothing with out NULL. */
PT_API void pt_sched_read_stats(pt_sched *s, pt_sched_stats *out);

/* The scheduler running the calling G; NULL outside a G. */
PT_API pt_sched *pt_sched_current(void);

/* go fn(arg): from a G (s NULL: the caller's scheduler; the new G goes
 * first in line on the caller's P) or from any thread (on the global
 * queue). 0; -EINVAL (fn NULL, s NULL outside a G, s stopping); -ENOMEM. */
PT_API int pt_go(pt_sched *s, void (*fn)(void *), void *arg);

/* Gosched (G): lets the other runnable Gs run first. Outside a G it
 * returns at once (there is nothing to refuse). */
PT_API void pt_yield(void);

/* time.Sleep. In a G, parks it and arms its wake-up timer (per the mode)
 * once it is off its stack; elsewhere, sleeps the calling thread. Never
 * returns early: d <= 0, or a `when` already past (a negative one too),
 * returns at once; a `now + d` past the clock's range never returns. 0. */
PT_API int pt_sleep(pt_nanos d);
PT_API int pt_sleep_until(pt_nanos when);

/* getg: the calling G; NULL outside a G. */
PT_API pt_g *pt_g_current(void);

/* gopark (G): once the G is off its stack, commit(arg) runs on its M (it
 * may be NULL): on the M's own stack, or on the stack of the G the M
 * runs next, below that G's frames, with no G current (pt_g_current is
 * NULL there); true keeps the G parked until pt_ready, false resumes it
 * at once. The G must be published to whoever readies it only inside
 * commit (or later): a pt_ready that comes before the G is parked is
 * refused. Go's unlock function: commit is the place to release a lock
 * that guards the wait list. It must not block or call into the
 * scheduler. 0; -EPERM outside a G. */
PT_API int pt_park(bool (*commit)(void *arg), void *arg);

/* goready, from any thread: a parked G becomes runnable (on the caller's
 * P when the caller is a G of the same scheduler, else on the global
 * queue). 0; -EINVAL (NULL, or a G that is not parked). g must be one the
 * caller's own protocol parked with pt_park: readying a G parked inside
 * another call (a channel, select, sleep, wait group or fd wait), or a G
 * that has finished, is undefined. */
PT_API int pt_ready(pt_g *g);

/* Asynchronous preemption, for the regions a G marks (Go 1.14's, which
 * Go applies everywhere; C code cannot be stopped safely at any point).
 * Between pt_preemptible_begin and pt_preemptible_end (they nest) the
 * calling G may be stopped at any instruction, by a signal (SIGURG, as
 * Go's), once it has held its P for the scheduler's slice while other Gs
 * wait and no P is idle, or once it has held it for the slice when a
 * timer of its P falls due: by the monitor thread, or, should that not
 * get a CPU, by its M's alarm (a POSIX timer on the M's thread). It
 * resumes later, perhaps on another thread.
 * So a region must be pure computation: no locks, no allocation, no
 * thread-locals, errno or pthread_self, nothing that is not
 * async-signal-safe but pt_nanotime (never stopped inside its clock's
 * re-anchor), and no call into the scheduler (a yield, park,
 * sleep, channel operation or I/O inside a region aborts). The stack
 * needs room for a signal frame (a few KiB) above its deepest point.
 * The first region installs a SIGURG handler for the process; a SIGURG
 * that is not the scheduler's goes on to the handler installed before.
 * 0; -EPERM outside a G (in a park's commit too); -ENOTSUP with
 * preemption off (slice 0) or in a ThreadSanitizer build (TSan's own
 * signal handling cannot follow a handler that resumes on another
 * thread); sigaction's error; -EOVERFLOW past 2^32 - 1 nested regions;
 * end: -EINVAL outside a region. A refused call leaves the depth as it
 * was. */
PT_API int pt_preemptible_begin(void);
PT_API int pt_preemptible_end(void);

/* The slice after which a G in a region is preempted while others wait:
 * 500 us unless set; 0 turns preemption off (regions are refused). 0;
 * -EINVAL (bad s, slice < 0). */
PT_API int pt_sched_set_preempt_slice(pt_sched *s, pt_nanos slice);

/* The monitor thread's scheduling: 0 (the default) a normal thread that
 * asks the kernel for its shortest slice; 1 to 99, SCHED_FIFO at that
 * real-time priority. The monitor runs the timers of Ps stuck in one G
 * and preempts their regions, so it must get a CPU while every core runs
 * a G that computes; with as many Ps as cores a normal thread can wait
 * for the kernel's next tick, a real-time one preempts at once. A region
 * does not wait for it once the monitor saw it run, or it resumed, with
 * Gs waiting or timers on its P: its M's alarm, a POSIX timer on the M's
 * own thread, preempts it on time. The timers of a P whose G computes
 * outside any region still wait. The monitor wakes at most every 20 us and
 * runs briefly. Needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least the
 * priority; 0 makes it SCHED_OTHER with the nice value it was created
 * with. 0; -EINVAL (bad s, a priority out of range); -EPERM (not
 * permitted: nothing changed); another error of sched_setattr(2). */
PT_API int pt_sched_set_monitor_priority(pt_sched *s, int priority);

/* sync.WaitGroup. Embeddable; every field is private. */
typedef struct pt_wg {
    PT_SCHED_ATOMIC(uint32_t) lock;
    PT_SCHED_ATOMIC(uint32_t) seq; /* bumped when the count reaches zero: threads sleep on it */
    int64_t count;
    pt_g *waiters;                 /* parked Gs, linked through the G */
} pt_wg;

/* An empty group. 0; -EINVAL (NULL). A group is not checked for having
 * been initialised: using one that was not is undefined. */
PT_API int pt_wg_init(pt_wg *w);
/* Adds n (may be negative). 0; -EINVAL (NULL, or the count would go
 * below zero or past INT64_MAX: nothing changes). Reaching zero wakes
 * every waiter. */
PT_API int pt_wg_add(pt_wg *w, int64_t n);
/* pt_wg_add(w, -1). */
PT_API int pt_wg_done(pt_wg *w);
/* Blocks until the count is zero: parks a G, or sleeps a plain thread.
 * 0; -EINVAL. */
PT_API int pt_wg_wait(pt_wg *w);

/* ---- channels and select (Go's chan.go, select.go) -----------------------
 *
 * A channel of elements of elem_size bytes (0 allowed), buffered (cap > 0)
 * or not. Blocking calls (send, recv, their _until forms, a blocking
 * select) are G calls; the try_ forms, close, len and cap work from any
 * thread. A sender hands its element straight to a waiting receiver and
 * the other way round, as Go's do. Deadlines are absolute pt_nanos (0:
 * none); their timer goes on the calling P's heap (or the TimerThread, per
 * the mode). A deadline is looked at only when the call would wait: one
 * already past (a negative one too) is -ETIMEDOUT then. A receive's elem
 * may be NULL (the value is dropped). -EINVAL for a NULL channel, or a
 * NULL elem to send on a channel whose elements have a size; a channel
 * is not checked once freed (using it then is undefined). len and cap of
 * NULL are 0. */
typedef struct pt_chan pt_chan;

/* 0; -EINVAL (out NULL, elem_size or elem_size * cap past SIZE_MAX / 4);
 * -ENOMEM */
PT_API int pt_chan_make(pt_chan **out, size_t elem_size, size_t cap);
PT_API int pt_chan_send(pt_chan *c, const void *elem);  /* 0; -EPIPE closed; -EPERM; -EINVAL */
PT_API int pt_chan_recv(pt_chan *c, void *elem);        /* 1 value; 0 closed and drained */
PT_API int pt_chan_send_until(pt_chan *c, const void *elem, pt_nanos deadline); /* ...; -ETIMEDOUT */
PT_API int pt_chan_recv_until(pt_chan *c, void *elem, pt_nanos deadline);
PT_API int pt_chan_try_send(pt_chan *c, const void *elem); /* 0; -EAGAIN; -EPIPE */
PT_API int pt_chan_try_recv(pt_chan *c, void *elem);       /* 1; 0 closed; -EAGAIN */
PT_API int pt_chan_close(pt_chan *c);                      /* 0; -EPIPE already closed */
PT_API int pt_chan_free(pt_chan *c);                       /* 0; -EBUSY while a G waits on it */
PT_API size_t pt_chan_len(const pt_chan *c);
PT_API size_t pt_chan_cap(const pt_chan *c);

enum { PT_SEND = 1, PT_RECV = 2 };
typedef struct pt_select_case {
    pt_chan *chan; /* NULL: never ready */
    int dir;       /* PT_SEND or PT_RECV */
    void *elem;    /* what to send, or where to receive (may be NULL for recv) */
    bool ok;       /* recv: true for a value, false for closed (elem zeroed) */
} pt_select_case;

/* select over n cases: the index of the case done, chosen uniformly among
 * the ready ones; -ETIMEDOUT past the deadline (0: none); -EAGAIN when
 * !block and none is ready (select with default); -EPIPE for a send case
 * chosen on a closed channel; -EINVAL (n < 0 or > 65535, cases NULL with
 * n > 0, a case whose dir is neither PT_SEND nor PT_RECV, a send case with
 * a NULL elem on a channel whose elements have a size, or a blocking
 * select with no channel and no deadline, which could never return);
 * -EPERM (blocking outside a G). A refused select changes no case. */
PT_API int pt_select(pt_select_case *cases, int n, pt_nanos deadline, bool block);

/* ---- timed I/O on file descriptors (Go's internal/poll over the
 * netpoller) ----------------------------------------------------------------
 *
 * An fd is made non-blocking and registered with the netpoller of the
 * calling G's scheduler on its first use here; its readiness readies the
 * Gs parked on it. Each call tries the system call first and parks the G
 * only on EAGAIN, until the fd is ready, it is closed, or the deadline
 * passes. Several Gs may wait on one fd at once (say, an accept loop in
 * each of several Gs): readiness wakes them all and each tries again.
 *
 * Deadlines are absolute CLOCK_MONOTONIC times (pt_nanotime()); 0 is none.
 * A deadline is a timer on the calling P's heap (PT_TIMERS_PER_P,
 * PT_TIMERS_LHEAP) or on the TimerThread (PT_TIMERS_TIMERTHREAD). As in Go, the deadline is
 * checked before the fd: one already past returns -ETIMEDOUT without
 * trying the system call, even when data is waiting. -ETIMEDOUT never
 * comes before the deadline.
 *
 * An fd belongs to the scheduler that registered it until pt_fd_close
 * (or until that scheduler is destroyed, which unregisters it and leaves
 * it open and non-blocking): a G of another scheduler gets -EINVAL, since
 * only the owner's netpoller reports its readiness. Close an fd used here
 * with pt_fd_close, never close(2) alone: the registration is found by
 * the fd's number, which the kernel reuses.
 *
 * An fd the kernel cannot poll (a regular file) is used as Go uses one:
 * the system call is made directly (it does not wait for readiness) and
 * only a deadline already past is checked.
 *
 * Errors common to the calls marked G: -EPERM outside a G; -EBADF (not
 * an open fd, or closed by pt_fd_close, now or while waiting);
 * -ECANCELED (pt_sched_cancel_fds); -EINVAL (NULL where data is needed,
 * a count past SSIZE_MAX, a negative deadline, an fd registered by
 * another scheduler, an fd number of 2^20 or more); -ENOMEM; -ETIMEDOUT;
 * else the system call's -errno. Writes to a socket never raise SIGPIPE
 * (-EPIPE instead); to a pipe they do, as write(2) does. */

/* conn.Read (G): up to n bytes into buf; the count, 0 at end of file (or
 * for n == 0, as Go returns at once). */
PT_API ssize_t pt_fd_read(int fd, void *buf, size_t n, pt_nanos deadline);

/* conn.Write (G): all n bytes, returning n; or -ETIMEDOUT or an error,
 * after which some of the bytes may have been written (pt_fd_writev says
 * how many). */
PT_API ssize_t pt_fd_write(int fd, const void *buf, size_t n, pt_nanos deadline);

/* conn.Write's (n, err), over segments (Go's net.Buffers): writes all
 * bytes of iov[0..iovcnt) in order by the deadline, several segments to a
 * system call (a response's head and body in one). Returns their total,
 * or an error as pt_fd_write's; either way *written (when not NULL) is
 * how many bytes went out. -EINVAL for iovcnt outside [0, IOV_MAX], a
 * NULL segment with a length, or a total past SSIZE_MAX. */
PT_API ssize_t pt_fd_writev(int fd, const struct iovec *iov, int iovcnt, pt_nanos deadline,
                            size_t *written);

/* Accept (G) on a listening socket: the new connection's fd, non-blocking,
 * close-on-exec and registered like lfd; its address in sa, *len as for
 * accept(2) (sa and len may both be NULL). A connection aborted before it
 * was accepted is skipped, as Go does. A TCP connection comes with
 * TCP_NODELAY set, as Go's do (clear it for Nagle's batching): the
 * listener gets it at its first accept, and Linux copies it into every
 * connection it completes after that. Go's other
 * default, a 15 s keep-alive probe, is left off: a server here holds a
 * read deadline on every connection, which ends a vanished peer sooner
 * (set SO_KEEPALIVE where a connection may idle without one). */
PT_API int pt_fd_accept(int lfd, struct sockaddr *sa, socklen_t *len, pt_nanos deadline);

/* Dial (G): connects the socket fd to sa, waiting for the handshake up to
 * the deadline. 0; -ETIMEDOUT (the connection attempt may still be under
 * way: close the socket, as Go's Dial does); -ECONNREFUSED and the like. */
PT_API int pt_fd_connect(int fd, const struct sockaddr *sa, socklen_t len, pt_nanos deadline);

/* net.Dial (G): a socket of sa's family and `type` (SOCK_STREAM,
 * SOCK_DGRAM, ...), non-blocking and close-on-exec, connected to sa as
 * pt_fd_connect connects one: the connected fd, to close with pt_fd_close.
 * One system call fewer than socket(2) and pt_fd_connect on a socket not
 * made here, whose flags must be asked. On failure the socket is closed:
 * -EINVAL (type with SOCK_NONBLOCK or SOCK_CLOEXEC, which it sets
 * itself, or a length short of a family), -EMFILE (a number of 2^20 or
 * more), socket(2)'s or the connect's errors. */
PT_API int pt_fd_dial(int type, const struct sockaddr *sa, socklen_t len, pt_nanos deadline);

/* Closes fd, from a G or any thread: marks it closing, wakes the Gs
 * waiting on it (they return -EBADF), waits for the calls in flight on it
 * to return, unregisters it and closes it. An fd never used here is just
 * closed. 0; -EBADF (not open, or a close of it already under way). As
 * with close(2), the number is free once the close reaches the kernel: a
 * call on it made after that is a call on whatever file the kernel gives
 * the number next (a connection another G accepts, say). */
PT_API int pt_fd_close(int fd);

/* Stops every G of s that waits on a descriptor, for good: each pt_fd_*
 * call of its Gs parked now, and each one made from now on, returns
 * -ECANCELED (pt_fd_close still works, for the Gs to close what they
 * hold). How a server stops: a G reads SIGINT/SIGTERM from a signalfd
 * (the signals blocked in main before the scheduler starts: its threads
 * inherit the mask), closes its listeners with pt_fd_close, lets the
 * requests under way finish, then calls this; its connection Gs unwind,
 * and pt_sched_wait returns once every G has ended. Waits on channels,
 * timers and sleeps are not touched. From a G or any thread (not a
 * signal handler). 0; -EINVAL. */
PT_API int pt_sched_cancel_fds(pt_sched *s);

/* ---- Go's time package: Timer, AfterFunc, Ticker (time/sleep.go, tick.go)
 *
 * With Go 1.23's guarantee: once a Stop or Reset returns, no receive from
 * the channel yields a value prepared before that call (before Go 1.23 a
 * value already in the channel could still be read after Stop). A channel
 * is a pt_chan of one pt_nanos, capacity 1: the pt_nanotime() at which the
 * timer fired. Durations <= 0 mean now; a `now + d` past the clock's range
 * means never.
 *
 * As in Go 1.23, a Timer's or Ticker's timer is lazy: it is in no heap and
 * on no TimerThread while no G waits on its channel. A value that has
 * come due is delivered when the channel is next used (a receive, a
 * select naming it, pt_chan_len), so it carries the time of that use; a
 * G that parks on the channel puts the timer on an engine until it
 * leaves. A select that finds another case ready never touches a heap,
 * and a Ticker nobody reads costs nothing and keeps its phase.
 *
 * Where a timer lives is decided by whoever arms it (new, reset): from a G
 * of a per-P scheduler (PT_TIMERS_PER_P, PT_TIMERS_LHEAP), on that G's
 * P's heap (its callback runs
 * wherever that heap's timers run: the P's own M, a thief, the monitor);
 * from a G of a PT_TIMERS_TIMERTHREAD scheduler, and from any thread that
 * is not running a G, on the process's TimerThread. Both behave the same.
 *
 * A timer made by a G belongs to that G's scheduler: pt_sched_destroy is
 * -EBUSY until every such timer and ticker is freed. A Timer's calls
 * refuse a ticker and a Ticker's a timer (-EINVAL; the _chan calls
 * NULL). Stop, reset and free
 * may be called from any thread and concurrently with receives; calls on
 * one timer are serialised with each other. A timer must not be used after
 * free, and its channel must not be closed or freed by the user. */
typedef struct pt_time_timer pt_time_timer;
typedef struct pt_time_ticker pt_time_ticker;

/* time.NewTimer: fires once, d from now, into its channel. The value is
 * the time it was due (the call's time plus d), whenever it is delivered:
 * Go 1.23's value (Now() less the delay), not the time of the send. 0;
 * -EINVAL (out NULL); -ENOMEM. */
PT_API int pt_time_timer_new(pt_time_timer **out, pt_nanos d);

/* time.AfterFunc: once d has passed, f(arg) runs in a G of its own on the
 * caller's scheduler; the timer has no channel. Made outside any G there
 * is no scheduler to start a G on, so f(arg) runs on the TimerThread's own
 * thread, as bRPC's timer callbacks do: it must be short and must not
 * block (every timer of the process waits behind it), and it may call
 * pt_go to hand its work to a scheduler. f never touches the timer: the
 * timer may be freed while f runs, from f too. 0; -EINVAL (out or f NULL);
 * -ENOMEM. */
PT_API int pt_time_after_func(pt_time_timer **out, pt_nanos d, void (*f)(void *), void *arg);

/* t.C; NULL for an AfterFunc timer, or NULL t. */
PT_API pt_chan *pt_time_timer_chan(pt_time_timer *t);

/* t.Stop: 1 if this call stopped the timer, 0 if it had already fired or
 * been stopped; -EINVAL. As in Go 1.23, a fired value still unread in the
 * channel counts as not yet delivered: it is discarded, and the call
 * answers 1. A value already handed to a G blocked in a receive was
 * delivered: 0. For AfterFunc, 0 means f has been started (Stop does not
 * wait for f). */
PT_API int pt_time_timer_stop(pt_time_timer *t);

/* t.Reset: stop (discarding an unread value, as stop does), then fire d
 * from now. 1 if the timer had been active by stop's rule, else 0; -EINVAL;
 * -ENOMEM (no room to arm it: it stays stopped). An AfterFunc timer is
 * re-armed to run f again. */
PT_API int pt_time_timer_reset(pt_time_timer *t, pt_nanos d);

/* Stops the timer (no callback of it runs once this returns) and frees it
 * and its channel. 0; -EINVAL; -EBUSY while a G waits on its channel (the
 * timer is then stopped, not freed). A G already woken from such a wait
 * (its select won by another case) is waited for, not refused. */
PT_API int pt_time_timer_free(pt_time_timer *t);

/* time.NewTicker: ticks at start + k * period (k = 1, 2, ...), start being
 * the call's time: the phase is kept, ticks missed while late are skipped,
 * never fired in a burst. A reader slower than the period loses ticks: the
 * channel holds one, the earliest not yet read, and the tick after it is
 * the first due after that one was sent, so the value received next is
 * due at most a period after the receive. Each value is its tick's time,
 * start + k * period exactly, as Go 1.23 sends it. 0; -EINVAL (out NULL,
 * period <= 0); -ENOMEM. */
PT_API int pt_time_ticker_new(pt_time_ticker **out, pt_nanos period);
/* ticker.C; NULL for a NULL t. */
PT_API pt_chan *pt_time_ticker_chan(pt_time_ticker *t);

/* ticker.Stop: no tick arrives once it returns (an unread one is
 * discarded). 0; -EINVAL. */
PT_API int pt_time_ticker_stop(pt_time_ticker *t);

/* ticker.Reset: stop, then tick every `period` from now (a new phase).
 * 0; -EINVAL (period <= 0: nothing changes); -ENOMEM (it stays stopped). */
PT_API int pt_time_ticker_reset(pt_time_ticker *t, pt_nanos period);

/* Stop and free, as pt_time_timer_free. */
PT_API int pt_time_ticker_free(pt_time_ticker *t);

#ifdef __cplusplus
}
#endif

#endif
