/* Generation-checked handles over a slab of fixed-size objects, for the
 * engines that own their timers' memory. A handle is (gen << 32) | slot;
 * a slot's memory is never returned until the table is freed, so checking
 * a stale handle's generation is always safe. Not thread-safe: each table
 * has one owner (a worker, or a lock). */
#ifndef PTBENCH_SLOTS_H
#define PTBENCH_SLOTS_H

#include <stdint.h>
#include <stdlib.h>

#define SLOTS_CHUNK 1024u

struct slots {
    char **chunks;
    uint32_t nchunks, cap_chunks;
    uint32_t size;     /* bytes per object, first field a uint32_t gen */
    uint32_t free_head; /* slot + 1, 0: empty */
    uint32_t *next;    /* free-list links, per slot */
};

static inline void slots_init(struct slots *s, uint32_t size)
{
    *s = (struct slots){.size = size};
}

static inline void *slots_at(const struct slots *s, uint32_t slot)
{
    return s->chunks[slot / SLOTS_CHUNK] + (size_t)(slot % SLOTS_CHUNK) * s->size;
}

static inline uint32_t slots_total(const struct slots *s) { return s->nchunks * SLOTS_CHUNK; }

/* A free slot (its object zeroed on first use, gen kept after); -1 on OOM. */
static inline int64_t slots_get(struct slots *s)
{
    if (!s->free_head) {
        if (s->nchunks == s->cap_chunks) {
            uint32_t cap = s->cap_chunks ? 2 * s->cap_chunks : 16;
            char **c = realloc(s->chunks, cap * sizeof *c);
            uint32_t *n = realloc(s->next, (size_t)cap * SLOTS_CHUNK * sizeof *n);
            if (!c || !n) {
                if (c)
                    s->chunks = c;
                if (n)
                    s->next = n;
                return -1;
            }
            s->chunks = c;
            s->next = n;
            s->cap_chunks = cap;
        }
        char *chunk = calloc(SLOTS_CHUNK, s->size);
        if (!chunk)
            return -1;
        uint32_t base = s->nchunks * SLOTS_CHUNK;
        s->chunks[s->nchunks++] = chunk;
        for (uint32_t i = 0; i < SLOTS_CHUNK; i++)
            s->next[base + i] = i + 1 < SLOTS_CHUNK ? base + i + 2 : s->free_head;
        s->free_head = base + 1;
    }
    uint32_t slot = s->free_head - 1;
    s->free_head = s->next[slot];
    uint32_t *gen = slots_at(s, slot);
    if (*gen == 0)
        *gen = 1; /* handle 0 means none */
    return slot;
}

static inline void slots_put(struct slots *s, uint32_t slot)
{
    uint32_t *gen = slots_at(s, slot);
    if (++*gen == 0) /* every handle to it is stale from now on */
        *gen = 1;
    s->next[slot] = s->free_head;
    s->free_head = slot + 1;
}

static inline uint64_t slots_handle(const struct slots *s, uint32_t slot)
{
    return (uint64_t)*(const uint32_t *)slots_at(s, slot) << 32 | slot;
}

/* The object a handle names, or NULL if the handle is stale. */
static inline void *slots_check(const struct slots *s, uint64_t h)
{
    uint32_t slot = (uint32_t)h;
    if (h == 0 || slot >= slots_total(s))
        return NULL;
    uint32_t *gen = slots_at(s, slot);
    return *gen == (uint32_t)(h >> 32) ? gen : NULL;
}

static inline void slots_free(struct slots *s)
{
    for (uint32_t i = 0; i < s->nchunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    free(s->next);
    *s = (struct slots){0};
}

#endif
