/* G stacks (stack.h). */
#define _GNU_SOURCE /* MAP_STACK, MAP_NORESERVE */
#include "sched/stack.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptimer/base/alloc.h"
#include "sched/sanitizer.h"

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
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
    if (mprotect(base, page, PROT_NONE) != 0) {
        int err = errno;
        munmap(base, size + page);
        return -err;
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
