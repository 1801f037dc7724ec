/* G stacks: one mapping each, with a guard page below (a guard region
 * where the kernel has them: see stack.c). Pooling and reuse
 * are the scheduler's business; this file only maps and unmaps. */
#ifndef PT_SCHED_STACK_H
#define PT_SCHED_STACK_H

#include <stdbool.h>
#include <stddef.h>

struct pt__stack {
    void *lo;    /* the usable region, above its guard page */
    size_t size; /* a whole number of pages */
};

/* mmap'd, size rounded up to pages, with one guard page below lo: an overflow faults
 * (SIGSEGV) instead of corrupting the next stack. 0 or -ENOMEM (or -errno); -EINVAL for size 0.
 * Honours an injected allocation failure (pt__alloc_fail_after in ptimer/base/alloc.h) with
 * -ENOMEM. On failure *st is left as it was.
 *
 * One page of guard is caught only by a frame that touches it: a function whose frame is larger
 * than a page can step over it unless compiled with -fstack-clash-protection. The pages are
 * reserved, not committed (MAP_NORESERVE): a stack costs memory only for the pages its G has
 * touched. */
int pt__stack_alloc(struct pt__stack *st, size_t size);

/* Whether stacks are guarded by guard regions (MADV_GUARD_INSTALL, no
 * mapping of their own) rather than by PROT_NONE pages; false once a
 * kernel refused them. */
bool pt__stack_guard_regions(void);

/* Unmaps the stack and its guard page, and zeroes *st; a zeroed *st is a no-op. */
void pt__stack_free(struct pt__stack *st);

#endif
