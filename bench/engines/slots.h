/* Generation-checked handles over a slab of fixed-size objects, for the
 * engines that own their timers' memory. A handle is (gen << 32) | slot;
 * a slot's memory is never returned until the table is freed, so checking
 * a stale handle's generation is always safe. Generations and free-list
 * links live in arrays beside the objects, so an object is exactly what
 * the design stores (a pt_timer is 56 bytes, and stays 56 here). Not
 * thread-safe: each table has one owner (a worker, or a lock). */
#ifndef PTBENCH_SLOTS_H
#define PTBENCH_SLOTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SLOTS_CHUNK 1024u

struct slots {
    char **chunks;
    uint32_t nchunks, cap_chunks;
    uint32_t size;      /* bytes per object */
    uint32_t free_head; /* slot + 1, 0: empty */
    uint32_t *next;     /* free-list links, per slot */
    uint32_t *gen;      /* generations, per slot; never 0 once used */
};

static inline void slots_init(struct slots *s, uint32_t size)
{
    *s = (struct slots){.size = size};
}

static inline size_t slots_chunk_bytes(const struct slots *s)
{
    return (size_t)SLOTS_CHUNK * s->size;
}

static inline void *slots_at(const struct slots *s, uint32_t slot)
{
    return s->chunks[slot / SLOTS_CHUNK] + (size_t)(slot % SLOTS_CHUNK) * s->size;
}

static inline uint32_t slots_total(const struct slots *s)
{
    return s->nchunks * SLOTS_CHUNK;
}

/* Room in the bookkeeping arrays for cap chunks' slots. */
static int slots_resize(struct slots *s, uint32_t cap)
{
    char **c = realloc(s->chunks, cap * sizeof *c);
    if (!c)
        return -1;
    s->chunks = c;
    uint32_t *n = realloc(s->next, (size_t)cap * SLOTS_CHUNK * sizeof *n);
    if (!n)
        return -1;
    s->next = n;
    uint32_t *g = realloc(s->gen, (size_t)cap * SLOTS_CHUNK * sizeof *g);
    if (!g)
        return -1;
    s->gen = g;
    s->cap_chunks = cap;
    return 0;
}

/* Size (and touch) the bookkeeping for n more slots now, objects not
 * included: the memory workload does this before its first reading, so
 * that what it measures is what the design stores. */
static inline int slots_reserve(struct slots *s, long n)
{
    uint32_t need = s->nchunks + (uint32_t)((n + SLOTS_CHUNK - 1) / SLOTS_CHUNK);
    if (need <= s->cap_chunks)
        return 0;
    uint32_t old = s->cap_chunks;
    if (slots_resize(s, need) != 0)
        return -1;
    size_t from = (size_t)old * SLOTS_CHUNK, count = (size_t)(need - old) * SLOTS_CHUNK;
    memset(s->next + from, 0, count * sizeof *s->next);
    memset(s->gen + from, 0, count * sizeof *s->gen);
    memset(s->chunks + old, 0, (need - old) * sizeof *s->chunks);
    return 0;
}

static int slots_grow(struct slots *s)
{
    if (s->nchunks == s->cap_chunks && slots_resize(s, s->cap_chunks ? 2 * s->cap_chunks : 16) != 0)
        return -1;
    /* A mapping of its own: page-aligned (so cache-line aligned, as a C
     * caller's embedded timers would be), and no allocator's headers or
     * size-class rounding around it, which the memory workload would
     * otherwise count as the design's (mimalloc: 0.12 B per timer). */
    void *chunk = mmap(NULL, slots_chunk_bytes(s), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED)
        return -1;
    uint32_t base = s->nchunks * SLOTS_CHUNK;
    s->chunks[s->nchunks++] = chunk;
    for (uint32_t i = 0; i < SLOTS_CHUNK; i++) {
        s->next[base + i] = i + 1 < SLOTS_CHUNK ? base + i + 2 : s->free_head;
        s->gen[base + i] = 0; /* 0: never used; the object is uninitialised */
    }
    s->free_head = base + 1;
    return 0;
}

/* A free slot; -1 on OOM. Its object is uninitialised on first use
 * (slots_fresh says so) and as its last user left it after that. */
static inline int64_t slots_get(struct slots *s)
{
    if (!s->free_head && slots_grow(s) != 0)
        return -1;
    uint32_t slot = s->free_head - 1;
    s->free_head = s->next[slot];
    return slot;
}

/* True the first time a slot is handed out (then its generation becomes 1:
 * handle 0 means none). */
static inline int slots_fresh(struct slots *s, uint32_t slot)
{
    if (s->gen[slot])
        return 0;
    s->gen[slot] = 1;
    return 1;
}

/* Make every handle to the slot stale, without freeing it. */
static inline void slots_retire(struct slots *s, uint32_t slot)
{
    if (++s->gen[slot] == 0)
        s->gen[slot] = 1;
}

static inline void slots_put(struct slots *s, uint32_t slot)
{
    slots_retire(s, slot);
    s->next[slot] = s->free_head;
    s->free_head = slot + 1;
}

static inline uint64_t slots_handle(const struct slots *s, uint32_t slot)
{
    return (uint64_t)s->gen[slot] << 32 | slot;
}

/* The object a handle names, or NULL if the handle is stale. */
static inline void *slots_check(const struct slots *s, uint64_t h)
{
    uint32_t slot = (uint32_t)h;
    if (h == 0 || slot >= slots_total(s) || s->gen[slot] != (uint32_t)(h >> 32))
        return NULL;
    return slots_at(s, slot);
}

static inline void slots_free(struct slots *s)
{
    for (uint32_t i = 0; i < s->nchunks; i++)
        munmap(s->chunks[i], slots_chunk_bytes(s));
    free(s->chunks);
    free(s->next);
    free(s->gen);
    *s = (struct slots){0};
}

/* Slots retired by a lazy stop, whose family still holds the timer (a
 * heap's deleted entry, a zombie), oldest first: a ring, its capacity a
 * power of two. A slot goes back to the free list once released(timer)
 * says the family has let go, as a caller's own pool would reuse it. */
struct slot_limbo {
    uint32_t *v;
    uint32_t head, len, cap;
};

static inline void limbo_push(struct slot_limbo *l, uint32_t slot)
{
    if (l->len == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 1024;
        uint32_t *v = malloc(cap * sizeof *v);
        if (!v)
            abort();
        for (uint32_t i = 0; i < l->len; i++)
            v[i] = l->v[(l->head + i) & (l->cap - 1)];
        free(l->v);
        l->v = v;
        l->head = 0;
        l->cap = cap;
    }
    l->v[(l->head + l->len++) & (l->cap - 1)] = slot;
}

/* Back to the free list, the released ones at the head of the ring. Always
 * inlined: engines call it on every arm, where a call is a visible share
 * of the cost, and released() inlines with it. */
static inline __attribute__((always_inline)) void
limbo_reclaim(struct slot_limbo *l, struct slots *s, bool (*released)(void *timer))
{
    while (l->len) {
        uint32_t slot = l->v[l->head];
        if (!released(slots_at(s, slot)))
            break;
        l->head = (l->head + 1) & (l->cap - 1);
        l->len--;
        slots_put(s, slot);
    }
}

static inline void limbo_free(struct slot_limbo *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

#endif
