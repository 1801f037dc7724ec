#include "alloc.h"

#include <stdatomic.h>

/* Countdown to the injected failure, -1 when none is armed: see alloc.h. */
static _Thread_local long fail_countdown = -1;
/* Live blocks. Relaxed: a statistic read by tests once everything is
 * quiet; nothing is ordered by it. */
static atomic_long live_blocks;

void pt_alloc_fail_after(long n)
{
    fail_countdown = n < 0 ? -1 : n;
}

bool pt_alloc_fail_armed(void)
{
    return fail_countdown >= 0;
}

long pt_alloc_live(void)
{
    return atomic_load_explicit(&live_blocks, memory_order_relaxed);
}

static inline bool inject_failure(void)
{
    if (__builtin_expect(fail_countdown < 0, 1))
        return false;
    return fail_countdown-- == 0;
}

#ifdef PT_HAVE_MIMALLOC
#include <mimalloc.h>
#define RAW_MALLOC mi_malloc
#define RAW_REALLOC mi_realloc
#define RAW_FREE mi_free
#else
#include <stdlib.h>
#define RAW_MALLOC malloc
#define RAW_REALLOC realloc
#define RAW_FREE free
#endif

void *pt_malloc(size_t n)
{
    if (inject_failure())
        return NULL;
    void *p = RAW_MALLOC(n);
    if (p)
        atomic_fetch_add_explicit(&live_blocks, 1, memory_order_relaxed);
    return p;
}

void *pt_realloc(void *p, size_t n)
{
    if (inject_failure())
        return NULL;
    void *q = RAW_REALLOC(p, n);
    if (q && !p)
        atomic_fetch_add_explicit(&live_blocks, 1, memory_order_relaxed);
    return q;
}

void pt_free(void *p)
{
    if (p)
        atomic_fetch_sub_explicit(&live_blocks, 1, memory_order_relaxed);
    RAW_FREE(p);
}
