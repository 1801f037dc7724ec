#define _GNU_SOURCE /* mremap */
#include "base/alloc.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Countdown to the injected failure, -1 when none is armed: see alloc.h. */
static _Thread_local long fail_countdown = -1;
/* Live blocks. Relaxed: a statistic read by tests once everything is
 * quiet; nothing is ordered by it. */
static atomic_long live_blocks;

void pt__alloc_fail_after(long n)
{
    fail_countdown = n < 0 ? -1 : n;
}

bool pt__alloc_fail_armed(void)
{
    return fail_countdown >= 0;
}

long pt__alloc_live(void)
{
    return atomic_load_explicit(&live_blocks, memory_order_relaxed);
}

static inline bool inject_failure(void)
{
    if (__builtin_expect(fail_countdown < 0, 1))
        return false;
    return fail_countdown-- == 0;
}

bool pt__alloc_should_fail(void)
{
    return inject_failure();
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

void *pt__malloc(size_t n)
{
    if (inject_failure())
        return NULL;
    void *p = RAW_MALLOC(n);
    if (p)
        atomic_fetch_add_explicit(&live_blocks, 1, memory_order_relaxed);
    return p;
}

void *pt__realloc(void *p, size_t n)
{
    if (inject_failure())
        return NULL;
    void *q = RAW_REALLOC(p, n);
    if (q && !p)
        atomic_fetch_add_explicit(&live_blocks, 1, memory_order_relaxed);
    return q;
}

void pt__free(void *p)
{
    if (p)
        atomic_fetch_sub_explicit(&live_blocks, 1, memory_order_relaxed);
    RAW_FREE(p);
}

void *pt__alloc_lines(size_t size)
{
    /* pt__malloc gives 16-byte alignment, so there are at least 16 bytes
     * below the aligned address to keep the raw pointer in. */
    char *raw = pt__malloc(size + 64);
    if (!raw)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + 64) & ~(uintptr_t)63);
    ((void **)p)[-1] = raw;
    return p;
}

void pt__free_lines(void *p)
{
    if (p)
        pt__free(((void **)p)[-1]);
}

/* ---- large arrays (alloc.h) ---------------------------------------- */

static bool array_mapped(size_t bytes)
{
    return bytes >= PT__ARRAY_MAP_BYTES;
}

static size_t page_round(size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + page - 1) & ~(page - 1);
}

void *pt__array_realloc(void *p, size_t old_bytes, size_t new_bytes)
{
    if (!p)
        old_bytes = 0;
    if (!array_mapped(old_bytes) && !array_mapped(new_bytes))
        return pt__realloc(p, new_bytes);
    if (inject_failure())
        return NULL;
    void *q;
    if (array_mapped(old_bytes) && array_mapped(new_bytes)) {
        q = mremap(p, page_round(old_bytes), page_round(new_bytes), MREMAP_MAYMOVE);
        return q == MAP_FAILED ? NULL : q;
    }
    if (array_mapped(new_bytes)) { /* growing past the threshold */
        q = mmap(NULL, page_round(new_bytes), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
            return NULL;
        if (p) {
            memcpy(q, p, old_bytes);
            RAW_FREE(p); /* the block count moves to the mapping */
        } else {
            atomic_fetch_add_explicit(&live_blocks, 1, memory_order_relaxed);
        }
        return q;
    }
    /* shrinking below it */
    q = RAW_MALLOC(new_bytes);
    if (!q)
        return NULL;
    memcpy(q, p, new_bytes);
    munmap(p, page_round(old_bytes));
    return q;
}

void pt__array_free(void *p, size_t bytes)
{
    if (!p)
        return;
    if (!array_mapped(bytes)) {
        pt__free(p);
        return;
    }
    atomic_fetch_sub_explicit(&live_blocks, 1, memory_order_relaxed);
    munmap(p, page_round(bytes));
}
