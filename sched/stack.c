/* G stacks (stack.h): slots carved from reservations.
 *
 * A stack of its own mapping, with a PROT_NONE page below it, costs two
 * of the process's vm.max_map_count mappings (65530 by default): a
 * process could not hold a 32768th G. Here a reservation is one mapping
 * of many slots, each a guard page and a stack; slots are carved in
 * order as Gs are made (an uncarved slot costs address space only),
 * freed slots are reused first, and a reservation with no stack in use
 * is unmapped. The guard below a slot is what the kernel allows:
 *   - a guard region (Linux 6.13's MADV_GUARD_INSTALL) marks the page in
 *     the page tables and leaves the mapping whole;
 *   - a PROT_NONE page splits the mapping around it (two mappings more),
 *     so the process's guard pages are capped at an eighth of
 *     vm.max_map_count, leaving three quarters of it to everybody else;
 *   - past that cap, a canary: the page below the stack is left unwritten
 *     (it reads as the kernel's zero page, costing no memory), and every
 *     switch out of a G checks that it still does (pt__stack_intact). */
#define _GNU_SOURCE /* MAP_STACK, MAP_NORESERVE */
#include "sched/stack.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptimer/base/alloc.h"
#include "ptimer/base/lock.h"
#include "sched/sanitizer.h"

/* The headers of older distributions lack the name; the value is the ABI's. */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* A reservation's size: large enough that a million 64 KiB stacks are
 * about a thousand mappings, small enough that one idle reservation is
 * little address space to keep. */
#define CHUNK_BYTES ((size_t)64 << 20)
#define CHUNK_SLOTS_MIN 4u
#define CHUNK_SLOTS_MAX 4096u

struct pt__stack_chunk {
    char *base;
    uint32_t carved;  /* slots [0, carved) have their guard */
    uint32_t nfree;   /* of them, free: their indices in free_slots */
    uint32_t live;    /* handed out */
    uint32_t npages;  /* of the carved, guarded by a PROT_NONE page */
    uint32_t *free_slots;
    uint8_t *kind;    /* per carved slot */
    struct pt__stack_chunk *next, *next_avail;
    bool in_avail;
};

/* ---- the kernel's guards --------------------------------------------------- */

/* -1 until probed, then 1 if guard regions work here and 0 if not (a
 * kernel before 6.13 refuses them with EINVAL; qemu-user accepts any
 * madvise and does nothing), for the process's life. */
static _Atomic int guard_regions = -1;

/* PROT_NONE guard pages the process holds now, against its cap. */
static _Atomic long page_guards;
static _Atomic long page_guard_cap = -1;

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

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

static long guard_cap(void)
{
    long cap = atomic_load_explicit(&page_guard_cap, memory_order_relaxed);
    if (cap >= 0)
        return cap;
    long max = 65530; /* the kernel's default, if /proc cannot say */
    FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1 || max <= 0)
            max = 65530;
        fclose(f);
    }
    cap = max / 8;
    atomic_store_explicit(&page_guard_cap, cap, memory_order_relaxed);
    return cap;
}

/* Guards the page at `page` as the policy and the kernel allow, and says
 * how (0 for an error, in *err). */
static enum pt__stack_kind guard(char *page, size_t len, enum pt_stack_guard policy, int *err)
{
    *err = 0;
    if (policy == PT_STACK_GUARD_AUTO &&
        atomic_load_explicit(&guard_regions, memory_order_relaxed) != 0) {
        int rc = madvise(page, len, MADV_GUARD_INSTALL);
        if (rc != 0 && errno != EINVAL) {
            *err = -errno;
            return 0;
        }
        if (rc == 0 && (atomic_load_explicit(&guard_regions, memory_order_relaxed) == 1 ||
                        guard_faults(page))) {
            atomic_store_explicit(&guard_regions, 1, memory_order_relaxed);
            return PT__STACK_REGION;
        }
        /* Racing first calls may both probe: they agree. */
        atomic_store_explicit(&guard_regions, 0, memory_order_relaxed);
    }
    if (policy != PT_STACK_GUARD_CANARY &&
        atomic_fetch_add_explicit(&page_guards, 1, memory_order_relaxed) < guard_cap()) {
        if (mprotect(page, len, PROT_NONE) == 0)
            return PT__STACK_PAGE;
        *err = -errno;
        atomic_fetch_sub_explicit(&page_guards, 1, memory_order_relaxed);
        return 0;
    }
    if (policy != PT_STACK_GUARD_CANARY)
        atomic_fetch_sub_explicit(&page_guards, 1, memory_order_relaxed);
    return PT__STACK_CANARY;
}

/* A page, once a pool exists (pt__stack_pool_init sets it). */
static size_t guard_bytes;

bool pt__stack_canary_unwritten(const void *lo)
{
    /* Plain loads the compiler vectorises: 4 KiB in a few dozen cycles,
     * from the zero page, shared by every canary and in cache. */
    const uint64_t *w = (const uint64_t *)((const char *)lo - guard_bytes);
    uint64_t any = 0;
    for (size_t i = 0; i < guard_bytes / sizeof *w; i++)
        any |= w[i];
    return any == 0;
}

bool pt__stack_guard_regions(void)
{
    return atomic_load_explicit(&guard_regions, memory_order_relaxed) == 1;
}

/* ---- reservations ---------------------------------------------------------- */

int pt__stack_pool_init(struct pt__stack_pool *sp, size_t size, enum pt_stack_guard policy)
{
    if (size == 0 || size > PT__STACK_POOL_MAX ||
        (policy != PT_STACK_GUARD_AUTO && policy != PT_STACK_GUARD_PAGES &&
         policy != PT_STACK_GUARD_CANARY))
        return -EINVAL;
    size_t page = page_size();
    guard_bytes = page;
    memset(sp, 0, sizeof *sp);
    pt__lock_init(&sp->lock);
    sp->size = (size + page - 1) & ~(page - 1);
    sp->slot = sp->size + page;
    size_t n = CHUNK_BYTES / sp->slot;
    sp->per_chunk = n < CHUNK_SLOTS_MIN ? CHUNK_SLOTS_MIN
                    : n > CHUNK_SLOTS_MAX ? CHUNK_SLOTS_MAX : (uint32_t)n;
    sp->policy = policy;
    return 0;
}

static void chunk_unmap(struct pt__stack_pool *sp, struct pt__stack_chunk *c)
{
    /* ASan's shadow outlives the mapping: clear what the stacks' last
     * fibers left poisoned, or the next mapping here inherits it. */
    pt__asan_unpoison(c->base, (size_t)sp->per_chunk * sp->slot);
    munmap(c->base, (size_t)sp->per_chunk * sp->slot);
    atomic_fetch_sub_explicit(&page_guards, c->npages, memory_order_relaxed);
    atomic_fetch_sub_explicit(&sp->nchunks, 1, memory_order_relaxed);
    free(c->free_slots);
    free(c->kind);
    free(c);
}

void pt__stack_pool_fini(struct pt__stack_pool *sp)
{
    for (struct pt__stack_chunk *c = sp->chunks, *nx; c; c = nx) {
        nx = c->next;
        chunk_unmap(sp, c);
    }
    sp->chunks = sp->avail = sp->spare = NULL;
}

/* A new reservation, or NULL (-errno in *err). Under the pool's lock. */
static struct pt__stack_chunk *chunk_map(struct pt__stack_pool *sp, int *err)
{
    struct pt__stack_chunk *c = calloc(1, sizeof *c);
    uint32_t n = sp->per_chunk;
    if (c) {
        c->free_slots = malloc(n * sizeof *c->free_slots);
        c->kind = malloc(n);
    }
    if (!c || !c->free_slots || !c->kind) {
        if (c) {
            free(c->free_slots);
            free(c->kind);
        }
        free(c);
        *err = -ENOMEM;
        return NULL;
    }
    /* MAP_STACK says what the mapping is for (the kernel may back it
     * accordingly, e.g. no transparent huge pages). Not MAP_GROWSDOWN: its
     * growth is unreliable, and it would defeat the guards. */
    c->base = mmap(NULL, (size_t)n * sp->slot, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (c->base == MAP_FAILED) {
        *err = -errno;
        free(c->free_slots);
        free(c->kind);
        free(c);
        return NULL;
    }
    c->next = sp->chunks;
    sp->chunks = c;
    c->next_avail = sp->avail;
    sp->avail = c;
    c->in_avail = true;
    atomic_fetch_add_explicit(&sp->nchunks, 1, memory_order_relaxed);
    return c;
}

static void avail_drop_head(struct pt__stack_pool *sp)
{
    struct pt__stack_chunk *c = sp->avail;
    sp->avail = c->next_avail;
    c->next_avail = NULL;
    c->in_avail = false;
}

int pt__stack_alloc(struct pt__stack_pool *sp, struct pt__stack *st)
{
    if (pt__alloc_should_fail())
        return -ENOMEM;
    int err = 0;
    pt__lock(&sp->lock);
    struct pt__stack_chunk *c;
    while ((c = sp->avail) && c->nfree == 0 && c->carved == sp->per_chunk)
        avail_drop_head(sp);
    if (!c && !(c = chunk_map(sp, &err))) {
        pt__unlock(&sp->lock);
        return err;
    }
    uint32_t slot;
    bool fresh = c->nfree == 0;
    slot = fresh ? c->carved++ : c->free_slots[--c->nfree];
    c->live++;
    if (sp->spare == c)
        sp->spare = NULL;
    if (c->nfree == 0 && c->carved == sp->per_chunk)
        avail_drop_head(sp);
    pt__unlock(&sp->lock);

    char *guard_page = c->base + (size_t)slot * sp->slot;
    enum pt__stack_kind kind;
    if (fresh) {
        /* The slot is this caller's alone: its guard goes in unlocked. */
        kind = guard(guard_page, sp->slot - sp->size, sp->policy, &err);
        if (kind == 0) {
            /* Back as a slot never carved cannot be (others may follow
             * it): free, its guard to be made again on reuse. */
            pt__lock(&sp->lock);
            c->kind[slot] = 0;
            c->free_slots[c->nfree++] = slot;
            c->live--;
            if (!c->in_avail) {
                c->next_avail = sp->avail;
                sp->avail = c;
                c->in_avail = true;
            }
            pt__unlock(&sp->lock);
            return err;
        }
        c->kind[slot] = (uint8_t)kind;
        if (kind == PT__STACK_PAGE) {
            pt__lock(&sp->lock);
            c->npages++;
            pt__unlock(&sp->lock);
        }
    } else {
        kind = (enum pt__stack_kind)c->kind[slot];
        if (kind == 0) { /* a slot whose guard failed before */
            kind = guard(guard_page, sp->slot - sp->size, sp->policy, &err);
            pt__lock(&sp->lock);
            if (kind == 0) {
                c->free_slots[c->nfree++] = slot;
                c->live--;
                pt__unlock(&sp->lock);
                return err;
            }
            c->kind[slot] = (uint8_t)kind;
            c->npages += kind == PT__STACK_PAGE;
            pt__unlock(&sp->lock);
        }
    }
    atomic_fetch_add_explicit(&sp->live[kind], 1, memory_order_relaxed);
    st->lo = guard_page + (sp->slot - sp->size);
    st->size = sp->size;
    st->chunk = c;
    st->slot = slot;
    st->kind = (uint8_t)kind;
    return 0;
}

void pt__stack_free(struct pt__stack_pool *sp, struct pt__stack *st)
{
    if (!st->lo)
        return;
    struct pt__stack_chunk *c = st->chunk;
    pt__asan_unpoison(st->lo, st->size);
    /* The stack's pages back to the kernel; a guard region or page stays
     * (it is below lo), and so does the slot's kind. */
    madvise(st->lo, st->size, MADV_DONTNEED);
    atomic_fetch_sub_explicit(&sp->live[st->kind], 1, memory_order_relaxed);
    pt__lock(&sp->lock);
    c->free_slots[c->nfree++] = st->slot;
    bool empty = --c->live == 0;
    if (!c->in_avail) {
        c->next_avail = sp->avail;
        sp->avail = c;
        c->in_avail = true;
    }
    /* An empty reservation goes back to the kernel, but for one kept as
     * a spare: a pool that empties and fills again does not map and
     * unmap on every round, and a burst that is over leaves one. */
    if (empty && !sp->spare) {
        sp->spare = c;
        empty = false;
    }
    if (empty) {
        struct pt__stack_chunk **pp = &sp->chunks;
        while (*pp != c)
            pp = &(*pp)->next;
        *pp = c->next;
        pp = &sp->avail;
        while (*pp != c)
            pp = &(*pp)->next_avail;
        *pp = c->next_avail;
    }
    pt__unlock(&sp->lock);
    if (empty)
        chunk_unmap(sp, c);
    memset(st, 0, sizeof *st);
}
