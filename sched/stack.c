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
 *     and each split makes the spawning thread and any thread faulting
 *     in the reservation wait on each other: only the process's first
 *     PAGE_GUARDS stacks get one, those a program starts first and keeps
 *     longest (its acceptors, its workers), and never more than an
 *     eighth of vm.max_map_count;
 *   - past that, a canary: the page below the stack is left untouched,
 *     neither written nor read, so it costs no memory on any kernel (one
 *     without the shared zero page too) and no mapping; whether it is
 *     still untouched is asked of the kernel (mincore), never read
 *     (stack.h says when). */
#define _GNU_SOURCE /* MAP_STACK, MAP_NORESERVE */
#include "sched/stack.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/lock.h"
#include "sched/sanitizer.h"

/* The headers of older distributions lack the name; the value is the ABI's. */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* A reservation's size: large enough that a million 64 KiB stacks are
 * about a thousand mappings, small enough that one idle reservation is
 * little address space to keep. */
#define CHUNK_BYTES ((size_t)64 << 20)
#define CHUNK_SLOTS_MIN 4u
#define CHUNK_SLOTS_MAX 4096u

struct pt__stack_chunk {
    char *base;
    uint32_t ncanary; /* slots ever guarded by a canary (the monitor's sweep skips none-such) */
    uint32_t carved;  /* slots [0, carved) have been handed out once */
    uint32_t prep_next; /* where pt__stack_prepare goes on, at least */
    uint32_t nfree;   /* of them, free: their indices in free_slots */
    uint32_t live;    /* handed out */
    uint32_t npages;  /* of the carved, guarded by a PROT_NONE page */
    uint32_t *free_slots;
    uint8_t *kind;    /* per slot carved or prepared; 0 for none yet */
    uint8_t *inuse;   /* per slot: handed out now (the sweep's) */
    struct pt__stack_chunk *next, *next_avail;
    bool in_avail;
};

/* ---- the kernel's guards --------------------------------------------------- */

/* -1 until probed, then 1 if guard regions work here and 0 if not (a
 * kernel before 6.13 refuses them with EINVAL; qemu-user accepts any
 * madvise and does nothing), for the process's life. */
static _Atomic int guard_regions = -1;

/* PROT_NONE guard pages the process holds now, against its cap. */
#define PAGE_GUARDS 256
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
    cap = max / 8 < PAGE_GUARDS ? max / 8 : PAGE_GUARDS;
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
static _Atomic size_t guard_bytes; /* every pool sets the same value */

bool pt__stack_guard_touched(const struct pt__stack *st)
{
    /* mincore says whether the page is in memory: an untouched anonymous
     * page is not; one written is, and so is one read (the zero page, or
     * a page of its own where the kernel has none) */
    size_t n = atomic_load_explicit(&guard_bytes, memory_order_relaxed);
    unsigned char v = 0;
    return mincore((char *)st->lo - n, n, &v) == 0 && (v & 1);
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
    atomic_store_explicit(&guard_bytes, page, memory_order_relaxed);
    /* PT_STACK_REGIONS=0: the kernel's answer taken as "no guard regions"
     * before it is asked, the path kernels before 6.13 take, to be run
     * and tested on a newer one (read until the first probe) */
    const char *e = getenv("PT_STACK_REGIONS");
    if (e && strcmp(e, "0") == 0)
        atomic_store_explicit(&guard_regions, 0, memory_order_relaxed);
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

/* A reservation's bookkeeping (NULL: none) */
static void chunk_free(struct pt__stack_chunk *c)
{
    if (!c)
        return;
    free(c->free_slots);
    free(c->kind);
    free(c->inuse);
    free(c);
}

static void chunk_unmap(struct pt__stack_pool *sp, struct pt__stack_chunk *c)
{
    /* ASan's shadow outlives the mapping: clear what the stacks' last
     * fibers left poisoned, or the next mapping here inherits it. */
    pt__asan_unpoison(c->base, (size_t)sp->per_chunk * sp->slot);
    munmap(c->base, (size_t)sp->per_chunk * sp->slot);
    atomic_fetch_sub_explicit(&page_guards, c->npages, memory_order_relaxed);
    atomic_fetch_sub_explicit(&sp->nchunks, 1, memory_order_relaxed);
    chunk_free(c);
}

void pt__stack_pool_fini(struct pt__stack_pool *sp)
{
    for (struct pt__stack_chunk *c = sp->chunks, *nx; c; c = nx) {
        nx = c->next;
        chunk_unmap(sp, c);
    }
    sp->chunks = sp->avail = sp->spare = NULL;
    free(sp->sweep_vec);
    sp->sweep_vec = NULL;
}

/* A new reservation, or NULL (-errno in *err). Under the pool's lock. */
static struct pt__stack_chunk *chunk_map(struct pt__stack_pool *sp, int *err)
{
    struct pt__stack_chunk *c = calloc(1, sizeof *c);
    uint32_t n = sp->per_chunk;
    if (c) {
        c->free_slots = malloc(n * sizeof *c->free_slots);
        c->kind = calloc(n, 1);
        c->inuse = calloc(n, 1);
    }
    if (!c || !c->free_slots || !c->kind || !c->inuse) {
        chunk_free(c);
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
        chunk_free(c);
        return NULL;
    }
    /* Never huge pages, which MAP_STACK implies only from Linux 6.7: a
     * G's first touch would make 2 MiB of stacks resident, and with them
     * the canary pages mincore is asked about. Best effort: a kernel
     * without THP refuses the advice, and has none to give. */
    (void)madvise(c->base, (size_t)n * sp->slot, MADV_NOHUGEPAGE);
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

/* Faults in the page the G will live in (the slot's top): what the G's
 * first switch in would otherwise fault on. Best effort: a kernel before
 * 5.14 has no MADV_POPULATE_*, and leaves the fault to the G. */
static void prefault(const struct pt__stack_pool *sp, char *guard_page)
{
    size_t page = sp->slot - sp->size;
    (void)madvise(guard_page + sp->slot - page, page, MADV_POPULATE_WRITE);
}

/* The first reservation with a slot to hand out (free, or never handed
 * out), dropping full ones from the list; NULL if none. Under the lock. */
static struct pt__stack_chunk *avail_head(struct pt__stack_pool *sp)
{
    struct pt__stack_chunk *c;
    while ((c = sp->avail) && c->nfree == 0 && c->carved == sp->per_chunk)
        avail_drop_head(sp);
    return c;
}

/* c had no stack in use left (lock held): kept as the spare if there is
 * none, else unlinked. Whether the caller must unmap it, once unlocked. */
static bool chunk_emptied(struct pt__stack_pool *sp, struct pt__stack_chunk *c)
{
    /* An empty reservation goes back to the kernel, but for one kept as
     * a spare: a pool that empties and fills again does not map and
     * unmap on every round, and a burst that is over leaves one. */
    if (!sp->spare) {
        sp->spare = c;
        return false;
    }
    struct pt__stack_chunk **pp = &sp->chunks;
    while (*pp != c)
        pp = &(*pp)->next;
    *pp = c->next;
    pp = &sp->avail;
    while (*pp && *pp != c)
        pp = &(*pp)->next_avail;
    if (*pp)
        *pp = c->next_avail;
    return true;
}

/* A failed guard: slot back as free, its guard to be made again on reuse
 * (back as never handed out cannot be: others may follow it). */
static void slot_unguarded(struct pt__stack_pool *sp, struct pt__stack_chunk *c, uint32_t slot)
{
    pt__lock(&sp->lock);
    c->kind[slot] = 0;
    c->inuse[slot] = 0;
    c->free_slots[c->nfree++] = slot;
    c->live--;
    if (!c->in_avail) {
        c->next_avail = sp->avail;
        sp->avail = c;
        c->in_avail = true;
    }
    pt__unlock(&sp->lock);
}

int pt__stack_alloc(struct pt__stack_pool *sp, struct pt__stack *st)
{
    if (pt__alloc_should_fail())
        return -ENOMEM;
    int err = 0;
    pt__lock(&sp->lock);
    struct pt__stack_chunk *c = avail_head(sp);
    if (!c && !(c = chunk_map(sp, &err))) {
        pt__unlock(&sp->lock);
        return err;
    }
    bool fresh = c->nfree == 0, busy = false;
    uint32_t slot = fresh ? c->carved++ : c->free_slots[--c->nfree];
    /* 0: never guarded (a fresh slot not prepared), or its guard failed */
    enum pt__stack_kind kind = (enum pt__stack_kind)c->kind[slot];
    c->live++;
    c->inuse[slot] = 1;
    if (sp->spare == c)
        sp->spare = NULL;
    if (fresh) {
        busy = sp->prep_chunk == c && sp->prep_slot == slot;
        /* a burst: keep the preparers going, ahead of it */
        sp->fresh_run += kind == 0;
        if (sp->fresh_run >= PT__STACK_BURST ||
            (kind != 0 && c->prep_next < c->carved + PT__STACK_AHEAD / 2))
            atomic_store_explicit(&sp->want, 1, memory_order_relaxed);
    }
    if (c->nfree == 0 && c->carved == sp->per_chunk)
        avail_drop_head(sp);
    pt__unlock(&sp->lock);

    /* Being prepared this moment (rare: preparers keep a few slots
     * ahead): one guard and one fault to wait out. */
    for (unsigned spins = 0; busy;) {
        if (++spins < 256)
            pt__cpu_relax();
        else /* its preparer lost its core */
            sched_yield();
        pt__lock(&sp->lock);
        busy = sp->prep_chunk == c && sp->prep_slot == slot;
        kind = (enum pt__stack_kind)c->kind[slot];
        pt__unlock(&sp->lock);
    }
    char *guard_page = c->base + (size_t)slot * sp->slot;
    if (kind == 0) { /* never guarded, or its guard failed before */
        /* The slot is this caller's alone: its guard goes in unlocked. */
        kind = guard(guard_page, sp->slot - sp->size, sp->policy, &err);
        if (kind == 0) {
            slot_unguarded(sp, c, slot);
            return err;
        }
        pt__lock(&sp->lock);
        c->kind[slot] = (uint8_t)kind;
        c->npages += kind == PT__STACK_PAGE;
        c->ncanary += kind == PT__STACK_CANARY;
        pt__unlock(&sp->lock);
    }
    atomic_fetch_add_explicit(&sp->live[kind], 1, memory_order_relaxed);
    st->lo = guard_page + (sp->slot - sp->size);
    st->size = sp->size;
    st->chunk = c;
    st->slot = slot;
    st->kind = (uint8_t)kind;
    return 0;
}

/* Whether a slot guarded now would get a PROT_NONE page. */
static bool page_guard_next(const struct pt__stack_pool *sp)
{
    return sp->policy != PT_STACK_GUARD_CANARY &&
           (sp->policy == PT_STACK_GUARD_PAGES ||
            atomic_load_explicit(&guard_regions, memory_order_relaxed) == 0) &&
           atomic_load_explicit(&page_guards, memory_order_relaxed) < guard_cap();
}

/* How far past the taker's next slot preparing starts: at its very next,
 * the taker would wait for each in turn, and the two would work as one. */
#define PREP_GAP 8u

bool pt__stack_prepare(struct pt__stack_pool *sp, unsigned max)
{
    if (!atomic_load_explicit(&sp->want, memory_order_relaxed) ||
        atomic_exchange_explicit(&sp->preparer, 1, memory_order_acquire))
        return false;
    unsigned done = 0;
    while (done < max) {
        /* read before the lock: the first look at the cap reads /proc */
        bool page_next = page_guard_next(sp);
        pt__lock(&sp->lock);
        struct pt__stack_chunk *c = avail_head(sp);
        uint32_t slot = c ? c->carved + PREP_GAP : 0;
        if (c && c->prep_next > slot)
            slot = c->prep_next;
        /* only where the next stacks come from a reservation's unused
         * slots, and not too far ahead of them */
        if (!c || c->nfree != 0 || slot >= sp->per_chunk ||
            slot - c->carved >= PT__STACK_AHEAD || page_next) {
            atomic_store_explicit(&sp->want, 0, memory_order_relaxed);
            sp->fresh_run = 0;
            pt__unlock(&sp->lock);
            break;
        }
        c->live++; /* pinned: not unmapped while its slot is prepared */
        if (sp->spare == c)
            sp->spare = NULL;
        sp->prep_chunk = c;
        sp->prep_slot = slot;
        pt__unlock(&sp->lock);

        int err;
        char *guard_page = c->base + (size_t)slot * sp->slot;
        enum pt__stack_kind kind = guard(guard_page, sp->slot - sp->size, sp->policy, &err);
        if (kind != 0)
            prefault(sp, guard_page);

        pt__lock(&sp->lock);
        c->kind[slot] = (uint8_t)kind; /* 0: the taker guards it itself */
        c->npages += kind == PT__STACK_PAGE;
        c->ncanary += kind == PT__STACK_CANARY;
        c->prep_next = slot + 1;
        sp->prep_chunk = NULL;
        bool unmap = --c->live == 0 && chunk_emptied(sp, c);
        pt__unlock(&sp->lock);
        if (unmap)
            chunk_unmap(sp, c);
        done++;
        if (kind == 0)
            break;
    }
    atomic_fetch_add_explicit(&sp->prepared, done, memory_order_relaxed);
    atomic_store_explicit(&sp->preparer, 0, memory_order_release);
    return done > 0;
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
    c->inuse[st->slot] = 0;
    c->free_slots[c->nfree++] = st->slot;
    if (!c->in_avail) {
        c->next_avail = sp->avail;
        sp->avail = c;
        c->in_avail = true;
    }
    bool empty = --c->live == 0 && chunk_emptied(sp, c);
    pt__unlock(&sp->lock);
    if (empty)
        chunk_unmap(sp, c);
    memset(st, 0, sizeof *st);
}

/* ---- the monitor's look at canaries ---------------------------------------- */

/* The next reservation to look at after sp->sweep_pos others (counted,
 * since a reservation's address may be unmapped and reused meanwhile),
 * skipping those with no canary stack in use; NULL at the list's end.
 * Under the lock. */
static struct pt__stack_chunk *sweep_next(struct pt__stack_pool *sp)
{
    uint32_t i = 0;
    for (struct pt__stack_chunk *c = sp->chunks; c; c = c->next, i++)
        if (i >= sp->sweep_pos && c->ncanary != 0 && c->live != 0) {
            sp->sweep_pos = i + 1;
            return c;
        }
    sp->sweep_pos = 0;
    return NULL;
}

void pt__stack_each(struct pt__stack_pool *sp, void (*fn)(void *lo, void *ctx), void *ctx)
{
    pt__lock(&sp->lock);
    for (struct pt__stack_chunk *c = sp->chunks; c; c = c->next)
        for (uint32_t s = 0; s < c->carved; s++)
            if (c->inuse[s])
                fn(c->base + (size_t)s * sp->slot + (sp->slot - sp->size), ctx);
    pt__unlock(&sp->lock);
}

void *pt__stack_sweep(struct pt__stack_pool *sp, unsigned max)
{
    if (atomic_load_explicit(&sp->live[PT__STACK_CANARY], memory_order_relaxed) == 0)
        return NULL;
    size_t page = atomic_load_explicit(&guard_bytes, memory_order_relaxed);
    size_t per_slot = sp->slot / page; /* pages a slot spans: its guard first */
    if (!sp->sweep_vec && !(sp->sweep_vec = calloc((size_t)sp->per_chunk * per_slot, 1)))
        return NULL; /* a later look may have the memory */
    void *found = NULL;
    for (unsigned k = 0; k < max && !found; k++) {
        pt__lock(&sp->lock);
        struct pt__stack_chunk *c = sweep_next(sp);
        if (!c) {
            pt__unlock(&sp->lock);
            break; /* round the list once a look at most */
        }
        c->live++; /* pinned: not unmapped while it is looked at */
        if (sp->spare == c)
            sp->spare = NULL;
        uint32_t carved = c->carved;
        pt__unlock(&sp->lock);
        /* one system call for the whole reservation: the kernel walks
         * its page tables, mostly empty */
        bool ok = mincore(c->base, (size_t)carved * sp->slot, sp->sweep_vec) == 0;
        pt__lock(&sp->lock);
        for (uint32_t s = 0; ok && s < carved && !found; s++)
            if (c->inuse[s] && c->kind[s] == PT__STACK_CANARY && (sp->sweep_vec[s * per_slot] & 1))
                found = c->base + (size_t)s * sp->slot + page;
        bool unmap = --c->live == 0 && chunk_emptied(sp, c);
        pt__unlock(&sp->lock);
        if (unmap)
            chunk_unmap(sp, c);
    }
    return found;
}
