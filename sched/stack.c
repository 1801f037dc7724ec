/* G stacks (stack.h). */
#define _GNU_SOURCE /* MAP_STACK, MAP_NORESERVE */
#include "sched/stack.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptimer/base/alloc.h"
#include "sched/sanitizer.h"

/* Linux 6.13's guard regions: a range that faults on access, installed in
 * the page tables of an ordinary mapping instead of splitting it. The
 * headers of older distributions lack the name; the value is the ABI's. */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* -1 until the first guard is made, then 1 if guard regions work here
 * and 0 if not (a kernel before 6.13 refuses them with EINVAL; qemu-user
 * accepts any madvise and does nothing), for the process's life. */
static _Atomic int guard_regions = -1;

/* Whether the guard at `page` is real: a write(2) from it must fail with
 * EFAULT, as the kernel's copy from a guard region faults. A pipe, as
 * /dev/null would not read the buffer at all. */
static bool guard_faults(const char *page)
{
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    bool faults = write(fds[1], page, 1) < 0 && errno == EFAULT;
    close(fds[0]);
    close(fds[1]);
    return faults;
}

/* Makes the page at `page` a guard. A PROT_NONE page is a mapping of its
 * own: two per stack, and at vm.max_map_count (65530 by default) a
 * process cannot map a 32768th stack. A guard region keeps the stack one
 * mapping, which the kernel merges with its neighbours: 100k stacks are a
 * handful of mappings. */
static int guard(char *page, size_t len)
{
    int mode = atomic_load_explicit(&guard_regions, memory_order_relaxed);
    if (mode != 0) {
        int rc = madvise(page, len, MADV_GUARD_INSTALL);
        if (rc != 0 && errno != EINVAL)
            return -errno;
        if (rc == 0 && (mode == 1 || guard_faults(page))) {
            atomic_store_explicit(&guard_regions, 1, memory_order_relaxed);
            return 0;
        }
        /* Racing first calls may both probe: they agree. */
        atomic_store_explicit(&guard_regions, 0, memory_order_relaxed);
    }
    return mprotect(page, len, PROT_NONE) == 0 ? 0 : -errno;
}

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

bool pt__stack_guard_regions(void)
{
    return atomic_load_explicit(&guard_regions, memory_order_relaxed) == 1;
}

int pt__stack_alloc(struct pt__stack *st, size_t size)
{
    if (size == 0)
        return -EINVAL;
    size_t page = page_size();
    if (size > SIZE_MAX - 2 * page)
        return -ENOMEM;
    size = (size + page - 1) & ~(page - 1);
    if (pt__alloc_should_fail())
        return -ENOMEM;
    /* MAP_STACK says what the mapping is for (the kernel may place or back
     * it accordingly, e.g. no transparent huge pages). Not MAP_GROWSDOWN:
     * its growth is unreliable (the kernel's stack guard gap refuses
     * growth near other mappings) and it would defeat the guard page. */
    char *base = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED)
        return -errno;
    /* Stacks grow down: the guard goes at the low end. */
    int err = guard(base, page);
    if (err != 0) {
        munmap(base, size + page);
        return err;
    }
    st->lo = base + page;
    st->size = size;
    return 0;
}

void pt__stack_free(struct pt__stack *st)
{
    if (!st->lo)
        return;
    size_t page = page_size();
    /* ASan's shadow outlives the mapping: clear what the stack's last
     * fiber left poisoned, or the next mapping at this address (this
     * allocator's, or anyone's) inherits it. */
    pt__asan_unpoison(st->lo, st->size);
    munmap((char *)st->lo - page, st->size + page);
    st->lo = NULL;
    st->size = 0;
}
