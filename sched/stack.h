/* G stacks: slots of one size carved from large reservations (many
 * stacks per mmap), each with a guard below it. Pooling finished Gs is
 * the scheduler's business; this file hands out slots and takes them
 * back. */
#ifndef PT_SCHED_STACK_H
#define PT_SCHED_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/sched.h"

/* How a slot's low end is guarded; fixed when the slot is first carved,
 * kept while it is reused. */
enum pt__stack_kind {
    PT__STACK_REGION = 1, /* a guard region (MADV_GUARD_INSTALL, Linux 6.13): a fault, no mapping */
    PT__STACK_PAGE = 2,   /* a PROT_NONE page: a fault, and a mapping of its own */
    PT__STACK_CANARY = 3, /* a page left untouched, which the kernel is asked about (mincore) */
};

struct pt__stack_chunk;

struct pt__stack {
    void *lo;    /* the usable region, above its guard page */
    size_t size; /* a whole number of pages */
    struct pt__stack_chunk *chunk;
    uint32_t slot;
    uint8_t kind; /* enum pt__stack_kind */
};

/* A scheduler's stacks: one size, one guard policy. */
struct pt__stack_pool {
    _Atomic uint32_t lock;
    size_t size;        /* usable bytes per stack */
    size_t slot;        /* the guard page and the stack */
    uint32_t per_chunk; /* slots per reservation */
    enum pt_stack_guard policy;
    struct pt__stack_chunk *chunks; /* every reservation (lock) */
    struct pt__stack_chunk *avail;  /* those with a slot free or never carved (lock) */
    struct pt__stack_chunk *spare;  /* the one with no stack in use that is kept (lock) */
    /* stacks handed out now, by kind, and reservations mapped now */
    _Atomic uint64_t live[4];
    _Atomic uint64_t nchunks;
    /* Slots prepared ahead of a burst (pt__stack_prepare): wanted while
     * Gs are made faster than slots are prepared; one preparer at a time
     * (`preparer`), on slot prep_slot of prep_chunk (lock). */
    _Atomic uint32_t want, preparer;
    uint32_t fresh_run; /* slots handed out unprepared since preparing last stopped (lock) */
    struct pt__stack_chunk *prep_chunk;
    uint32_t prep_slot;
    _Atomic uint64_t prepared; /* slots prepared ahead, ever */
    /* The monitor's look at canaries (pt__stack_sweep; the monitor only):
     * where it goes on, and a byte a page of a reservation for mincore. */
    uint32_t sweep_pos;
    unsigned char *sweep_vec;
};

/* The largest stack_size a scheduler accepts, and the largest slot a
 * pool makes (that and the G's room above it). */
#define PT__STACK_MAX ((size_t)1 << 30)
#define PT__STACK_POOL_MAX (PT__STACK_MAX + ((size_t)1 << 20))

/* size rounded up to pages; policy as pt_sched_options.stack_guard.
 * 0; -EINVAL (size 0 or above PT__STACK_POOL_MAX, an unknown policy).
 * Maps nothing yet. */
int pt__stack_pool_init(struct pt__stack_pool *sp, size_t size, enum pt_stack_guard policy);

/* Unmaps every reservation; every stack must have been freed. */
void pt__stack_pool_fini(struct pt__stack_pool *sp);

/* A stack: a free slot, else one carved from a reservation, else a new
 * reservation. Its pages are reserved, not committed (MAP_NORESERVE): a
 * stack costs memory only for the pages its G touches. 0; -ENOMEM (or
 * -errno of the mapping); honours an injected allocation failure
 * (pt__alloc_fail_after in base/alloc.h) with -ENOMEM. On failure
 * *st is left as it was.
 *
 * A guard page is caught only by a frame that touches it: one larger
 * than a page can step over it unless compiled with
 * -fstack-clash-protection. */
int pt__stack_alloc(struct pt__stack_pool *sp, struct pt__stack *st);

/* While Gs are being made from slots never used (a burst), prepares up
 * to `max` of the next ones the pool will hand out: their guard in place
 * and the page the G will live in faulted in, the work pt__stack_alloc
 * would do on the spawning thread. Called by the monitor, on a core the
 * Ps leave it. A burst is PT__STACK_BURST slots handed out unprepared:
 * a program that starts a few Gs prepares none. At most PT__STACK_AHEAD
 * slots are kept prepared (a page each). Not slots that would get a PROT_NONE page: splitting the mapping
 * the spawning thread faults in makes both wait. Whether it prepared any. */
#define PT__STACK_BURST 32u
#define PT__STACK_AHEAD 256u
bool pt__stack_prepare(struct pt__stack_pool *sp, unsigned max);

/* Returns the slot: its pages are given back (MADV_DONTNEED), and a
 * reservation left with no stack in use is unmapped, but for one kept as
 * a spare. A zeroed *st is a no-op; *st is zeroed. */
void pt__stack_free(struct pt__stack_pool *sp, struct pt__stack *st);

/* A canary stack's overflow check. Its guard is a page nothing maps
 * apart and nothing reads: a read would cost a page of memory where the
 * kernel has no shared zero page (a G would then cost two), and faulting
 * it in costs a spawn more than the rest of the G. So it is never read;
 *   - at every switch out of a G (and a preemption), the G's stack
 *     pointer: below its stack's end, the G has overflowed; within a page
 *     of it, the kernel is asked whether the guard page is still untouched
 *     (mincore, a system call only a G that deep pays);
 *   - the monitor asks the same of every canary stack in use, a
 *     reservation a system call, a few reservations a round
 *     (pt__stack_sweep), which catches a G that went past its end and
 *     came back between two switches; so is a stack freed.
 * What it cannot catch: a frame larger than a page stepping over the
 * guard (as with a PROT_NONE page, unless built with
 * -fstack-clash-protection); a touched page swapped out before it is
 * asked about (mincore reports what is in memory); and an overflow that came back before a
 * switch is caught only at the monitor's next look at it, after whatever
 * it wrote past the guard page, into the stack below, was written. A
 * touched guard page is blamed on the G using the stack when it is seen:
 * a G that reused a finished G's stack takes the blame for it. */
bool pt__stack_guard_touched(const struct pt__stack *st);

/* Within this of its end at a switch, a canary stack's guard is asked
 * about: about what a switch and a signal frame take. */
#define PT__STACK_NEAR_END ((uintptr_t)4096)

/* sp: an address of the G's frame at the check. */
static inline bool pt__stack_intact(const struct pt__stack *st, uintptr_t sp)
{
    if (st->kind != PT__STACK_CANARY || sp >= (uintptr_t)st->lo + PT__STACK_NEAR_END)
        return true;
    return sp >= (uintptr_t)st->lo && !pt__stack_guard_touched(st);
}

/* The monitor's look (one thread at a time): up to `max` reservations
 * with canary stacks in use, each one mincore, going on where the last
 * look stopped. The low end (lo) of a stack in use whose guard page was
 * touched, else NULL. */
void *pt__stack_sweep(struct pt__stack_pool *sp, unsigned max);

/* fn(lo, ctx) for every stack handed out now (its lowest usable byte),
 * under the pool's lock: fn must not allocate or free a stack. */
void pt__stack_each(struct pt__stack_pool *sp, void (*fn)(void *lo, void *ctx), void *ctx);

/* Whether this kernel has guard regions (probed once per process, on the
 * first stack carved under the automatic policy). */
bool pt__stack_guard_regions(void);

#endif
