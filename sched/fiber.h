/* A fiber: a context, its stack, and the sanitizers' bookkeeping for it,
 * so that the scheduler switches Gs without calling the sanitizer API
 * itself. In a build without sanitizers every annotation compiles away
 * and pt__fiber_switch is a jump to pt__ctx_switch.
 *
 * Fibers migrate: one suspended on OS thread A may be resumed on B (Gs
 * move between Ms). Nothing in this layer keeps thread-local state across
 * a switch -- the sanitizer runtimes look up the current thread afresh
 * when called after it.
 *
 * Callers must do the same. A function that reads a thread-local variable
 * before and after a switch may read the OLD thread's copy after it: the
 * compiler takes a TLS variable's address as fixed for the whole function
 * and computes it once. Checked with GCC 12 and clang 14 at -O2: with -fPIC
 * (global-dynamic model, as in the shared library) both keep the address
 * __tls_get_addr returned before the switch and load through it after, and
 * both fold `&tls_var` to a constant even when a noinline function returns
 * it. pthread_self() and errno are the same hazard: glibc declares
 * pthread_self and __errno_location const, so a call made before a switch
 * may serve for one after it (clang 14 hoisted pthread_self() out of a
 * switching loop in test/sched). The rule: after a switch, read
 * thread-locals, pthread_self() and errno only through a function marked
 * PT__TLS_READER that returns the value (not an address). Such a call
 * runs on the thread the caller is on now, and may not be merged with one
 * made before the switch. */
#ifndef PT_SCHED_FIBER_H
#define PT_SCHED_FIBER_H

#include <stdbool.h>
#include <stddef.h>

#include "sched/context.h"
#include "sched/sanitizer.h"

/* A function TSan gives no frame in its shadow call stack (and whose own
 * memory accesses it does not see): for the frames a fiber leaves open for
 * good -- a G's first and last, below and above everything it runs --
 * so that a fiber that ends a G holds the same empty shadow stack it
 * started with and can start the next one. GCC's attribute
 * drops the entry and exit hooks with the rest; clang 14 keeps them under
 * no_sanitize("thread") and drops them only under this one. */
#if !defined(PT__TSAN)
#define PT__FIBER_FRAMELESS
#elif defined(__clang__)
#define PT__FIBER_FRAMELESS __attribute__((disable_sanitizer_instrumentation))
#else
#define PT__FIBER_FRAMELESS __attribute__((no_sanitize_thread))
#endif

/* noinline alone is not enough: both compilers infer that a function
 * whose body only calls const functions (pthread_self) is itself const,
 * and hoist the call out of a loop that switches. noipa (GCC) and optnone
 * (clang) stop that inference; a reader is a few instructions either way. */
#if defined(__clang__)
#define PT__TLS_READER __attribute__((noinline, optnone))
#else
#define PT__TLS_READER __attribute__((noinline, noipa))
#endif

struct pt__fiber {
    pt__ctx ctx;
    void *stack_lo; /* [stack_lo, stack_lo + stack_size): ASan must know where each stack is */
    size_t stack_size;
    void *asan_fake_stack; /* ASan: its use-after-return frames while suspended */
    void *tsan_fiber;      /* TSan: its state; NULL without TSan */
    bool open;             /* made and not exited: its entry's frames are live */
};

/* The calling thread's own stack (an M's g0): bounds from pthread_getattr_np (left 0 if that
 * fails: only ASan reads them); TSan's current fiber. Never made or destroyed. */
void pt__fiber_init_thread(struct pt__fiber *f);

/* A new fiber running entry(arg) on [lo, lo + size) at the first switch to it. *f must be zeroed
 * before its first make; after that it may be made again once it has exited (pt__fiber_exit),
 * to reuse its stack, or once destroyed. Not for a thread's fiber. entry must be
 * PT__FIBER_FRAMELESS, do its work in calls that return, and end in pt__fiber_exit: under TSan
 * the fiber is kept for the next make, and a frame left open would stay on its shadow stack. */
void pt__fiber_make(struct pt__fiber *f, void *lo, size_t size, void (*entry)(void *), void *arg);

/* The first thing entry() calls: finishes the switch that started it (ASan). */
void pt__fiber_started(struct pt__fiber *self);

/* Annotate, switch, and on resumption finish the switch (ASan). from is the running fiber. On
 * return, from may be on another OS thread than before: see the top of this file. */
void pt__fiber_switch(struct pt__fiber *from, struct pt__fiber *to);

/* The last switch of a fiber whose entry is done: ASan drops its fake stack (start_switch_fiber
 * with NULL). from may then be made again or destroyed -- by another fiber, as this one never
 * runs again. */
PT__FIBER_FRAMELESS _Noreturn void pt__fiber_exit(struct pt__fiber *from, struct pt__fiber *to);

/* An exited fiber gives back what it holds between lives (under TSan its
 * TSan fiber, to a pool; the next make takes one at its first switch).
 * Not from itself: from whoever handles its exit. */
#ifdef PT__TSAN
void pt__fiber_retire(struct pt__fiber *f);
#else
static inline void pt__fiber_retire(struct pt__fiber *f)
{
    (void)f;
}
#endif

/* TSan forgets it (not for thread fibers). For a fiber that exited or never started, and not
 * from itself. Leaves it as zeroed, ready for pt__fiber_make. */
void pt__fiber_destroy(struct pt__fiber *f);

#endif
