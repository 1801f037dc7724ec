/* The timer's status word: its layout, the transitions every operation
 * makes through it (st_*), and the corruption abort and status names
 * (status.c). Used by timer.c (operations on one timer, from any thread)
 * and timers.c (operations on one P's heap, under its lock). */
#ifndef PTIMER_STATUS_H
#define PTIMER_STATUS_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "ptimer/ptimer.h"

#include "base/lock.h"

#define PT__TIMERS_MAGIC 0x70746873u /* "pths" */

/* Heap entries one owner check examines when more than a quarter (and at
 * most half) of its heap is stopped (timers.c, sweep): at a quarter
 * stopped that unlinks about 256 timers, each in O(1) on average (most
 * entries are leaves), so a check never stalls its P for long. */
#define PT__SWEEP_BUDGET 1024u

/* The state word (pt_timer.state): the status in bits 0-3, PT__STATE_CHECK
 * in bits 4-15, the heap holding the timer in bits 16-63 (its address
 * shifted up: user-space addresses fit in 48 bits). One word, so a status
 * CAS carries the heap with it: whoever sees a status sees the heap that
 * went with it, and the timer is 56 bytes instead of 64 with a separate
 * heap pointer and magic. The status and the check sit at the bottom so
 * that every mask is a small immediate (at the top, every mask and check
 * is a 64-bit constant to load on the hot path). The heap part changes only while its writer owns a
 * transient status (st_set_in, st_claim), so for any other status it is
 * stable until the status changes. */
#define PT__STATE_STATUS_MASK UINT64_C(0xf)
#define PT__STATE_CHECK_MASK UINT64_C(0xfff0)
#define PT__STATE_LOW_MASK (PT__STATE_STATUS_MASK | PT__STATE_CHECK_MASK)
#define PT__STATE_HEAP_SHIFT 16
/* Set by pt_timer_init: a zeroed or garbage word is not a timer. */
#define PT__STATE_CHECK UINT64_C(0x7d10)
_Static_assert(PT_TIMER_MOVING <= PT__STATE_STATUS_MASK, "every status fits its 4 bits");
/* One word, updated by CAS from any thread: it must be a real atomic, not
 * a library lock (i386 has cmpxchg8b; a target without it is refused). */
_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0), "lock-free 64-bit atomics");

static inline uint32_t st_status(uint64_t w) { return (uint32_t)(w & PT__STATE_STATUS_MASK); }
static inline pt_timers *st_heap(uint64_t w)
{
    return (pt_timers *)(uintptr_t)(w >> PT__STATE_HEAP_SHIFT);
}
static inline uint64_t st_pack(const pt_timers *ts, uint32_t s)
{
    return (uint64_t)(uintptr_t)ts << PT__STATE_HEAP_SHIFT | PT__STATE_CHECK | s;
}
/* A heap address the word can hold (all of user space on x86-64 and
 * AArch64, short of opting in to 57/52-bit addresses or tagged pointers). */
static inline bool st_heap_fits(const pt_timers *ts)
{
    return (uint64_t)(uintptr_t)ts >> (64 - PT__STATE_HEAP_SHIFT) == 0;
}

/* Access. Acquire on load and on every CAS into a state, release on every
 * CAS out of it: owning a transient state (Modifying, Moving, Removing,
 * Running) is what protects when, period, f, arg, seq and the heap part,
 * so these pair with each other across threads. */
static inline uint64_t st_word(const pt_timer *t)
{
    return atomic_load_explicit(&((pt_timer *)t)->state, memory_order_acquire);
}

static inline uint32_t st_load(const pt_timer *t) { return st_status(st_word(t)); }

_Noreturn void pt__bad_timer(const pt_timer *t, const char *op);

/* From the word w (as loaded) to status `to`, the heap kept: fails if
 * anything changed since the load. */
static inline bool st_cas(pt_timer *t, uint64_t w, uint32_t to)
{
    /* Written as a flip of the status bits: where the caller has just
     * tested the status, the compiler folds it to one xor with a constant. */
    return atomic_compare_exchange_strong_explicit(&t->state, &w, w ^ (st_status(w) ^ to),
                                                   memory_order_acq_rel, memory_order_acquire);
}

/* The word of a timer this thread holds in the transient status `from`
 * (Modifying, Moving, Removing, Running). No other thread writes it, so
 * a relaxed load reads what this thread left; checking it still catches
 * a corrupt word (Go's badTimer). */
static inline uint64_t st_owned(const pt_timer *t, uint32_t from, const char *op)
{
    uint64_t w = atomic_load_explicit(&((pt_timer *)t)->state, memory_order_relaxed);
    if ((w & PT__STATE_LOW_MASK) != st_pack(NULL, from))
        pt__bad_timer(t, op);
    return w;
}

/* A transition out of a transient state this thread owns, the heap kept.
 * No other thread ever CASes from those, so a release store does what
 * Go's CAS does, without a locked instruction. */
static inline void st_set(pt_timer *t, uint32_t from, uint32_t to, const char *op)
{
    atomic_store_explicit(&t->state, st_owned(t, from, op) ^ (from ^ to), memory_order_release);
}

/* As st_set, also moving the timer to ts's heap (NULL: out of any heap).
 * The heap part changes only here and in st_claim, always by the owner
 * of a transient status. */
static inline void st_set_in(pt_timer *t, uint32_t from, uint32_t to, const pt_timers *ts,
                             const char *op)
{
    (void)st_owned(t, from, op);
    atomic_store_explicit(&t->state, st_pack(ts, to), memory_order_release);
}

/* A timer this thread holds Modifying, in no heap, goes into ts's heap
 * (under its lock): its word is known, so it is stored, not updated.
 * Relaxed: the release store that ends Modifying publishes it. */
static inline void st_claim(pt_timer *t, const pt_timers *ts)
{
    atomic_store_explicit(&t->state, st_pack(ts, PT_TIMER_MODIFYING), memory_order_relaxed);
}

/* A row of an operation in the table of ptimer.h, as data for st_step:
 * for each status (the index), what the operation does with a timer it
 * finds there. Statuses a row leaves out are 0, ST_BAD: corruption. */
#define ST_BAD 0u
#define ST_KEEP 1u              /* leave the status as it is */
#define ST_WAIT 2u              /* another thread holds it briefly: yield, look again */
#define ST_TO(s) (0x10u | (s)) /* CAS it into status s */
typedef uint8_t st_rows[16];   /* indexed by the 4-bit status */

/* The one "load the status, look up the row, CAS or wait" loop that every
 * status change runs. w holds t's word as last loaded; on return it holds
 * the word the status was found in, and the status found is returned: the
 * timer is now in rows[s]'s target when that is an ST_TO, else untouched.
 * Always inlined with a constant row, so each caller gets the switch it
 * would have spelled out. */
static inline __attribute__((always_inline)) uint32_t st_step(pt_timer *t, uint64_t *w,
                                                              const st_rows rows, const char *op)
{
    unsigned waits = 0;
    for (;; *w = st_word(t)) {
        uint32_t s = st_status(*w), r = rows[s];
        if (r >= ST_TO(0)) {
            if (st_cas(t, *w, r & PT__STATE_STATUS_MASK))
                return s;
        } else if (r == ST_KEEP) {
            return s;
        } else if (r == ST_WAIT) {
            pt__wait_other(&waits); /* another thread holds a transient state */
        } else {
            pt__bad_timer(t, op);
        }
    }
}

/* Whether a status is one of a timer pending in a heap. */
static inline bool st_pending(uint32_t s)
{
    return s == PT_TIMER_WAITING || s == PT_TIMER_MODIFIED_EARLIER ||
           s == PT_TIMER_MODIFIED_LATER;
}

/* Whether a word is an initialised timer's. */
static inline bool st_checked(uint64_t w) { return (w & PT__STATE_CHECK_MASK) == PT__STATE_CHECK; }

/* Whether t is an initialised timer; its word (acquire) in *w if so, so
 * that an operation's first look at the status is this same load. */
static inline bool st_valid(const pt_timer *t, uint64_t *w)
{
    return t && st_checked(*w = st_word(t));
}
static inline bool pt__timers_valid(const pt_timers *ts)
{
    return ts && ts->magic == PT__TIMERS_MAGIC;
}

/* Normalise a user `when`: negative is never, 0 is "at once" but kept as 1
 * so that 0 can mean "none" in next and poll_until. */
static inline pt_nanos pt__norm_when(pt_nanos when)
{
    return when < 0 ? PT_MAXWHEN : when == 0 ? 1 : when;
}

/* The callbacks word of a pt_timer. Bit 0: a stop_sync sleeps on this
 * word. Bits 1-15: callbacks of this timer running now. Bits 16-31:
 * callbacks ever started, mod 2^16, which is how stop_sync tells that one
 * started behind its back. */
#define PT__CB_WAITER 1u
#define PT__CB_RUNNING 2u                /* one running callback */
#define PT__CB_STARTED (1u << 16)        /* one started callback */
#define PT__CB_RUNNING_MASK 0xfffeu
static inline uint32_t pt__cb_running(uint32_t v) { return (v & PT__CB_RUNNING_MASK) >> 1; }
static inline uint32_t pt__cb_started(uint32_t v) { return v >> 16; }

/* Callbacks running on this thread, innermost first: lets stop_sync called
 * from a timer's own callback skip waiting for itself, tell the runner
 * not to touch a timer its callback may have freed, and answer
 * pt_timers_firing. */
struct pt__cb_frame {
    pt_timer *t;
    bool disposed;
    struct pt__cb_frame *prev;
    pt_nanos when, now; /* the key it fired for; the check's now */
};
extern _Thread_local struct pt__cb_frame *pt__cb_top;

#endif
