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
    PT__STACK_CANARY = 3, /* an untouched page whose top line must read as zero (checked) */
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
 * (pt__alloc_fail_after in ptimer/base/alloc.h) with -ENOMEM. On failure
 * *st is left as it was.
 *
 * A guard page is caught only by a frame that touches it: one larger
 * than a page can step over it unless compiled with
 * -fstack-clash-protection. */
int pt__stack_alloc(struct pt__stack_pool *sp, struct pt__stack *st);

/* Returns the slot: its pages are given back (MADV_DONTNEED), and a
 * reservation left with no stack in use is unmapped, but for one kept as
 * a spare. A zeroed *st is a no-op; *st is zeroed. */
void pt__stack_free(struct pt__stack_pool *sp, struct pt__stack *st);

/* Whether the page below a canary stack still reads as zero, all of it:
 * a frame writes at least its return address, so an overflow through
 * frames no larger than a page leaves a word there however deep it went.
 * A read only: an unwritten page stays the kernel's shared zero page,
 * costing no memory and staying in cache. */
bool pt__stack_canary_unwritten(const void *lo);

static inline bool pt__stack_intact(const struct pt__stack *st)
{
    return st->kind != PT__STACK_CANARY || pt__stack_canary_unwritten(st->lo);
}

/* Whether this kernel has guard regions (probed once per process, on the
 * first stack carved under the automatic policy). */
bool pt__stack_guard_regions(void);

#endif
