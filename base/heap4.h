/* A 4-ary min-heap of {when, item} entries, used by every
 * part that needs a timer heap (per-P timers, the TimerThread's private heap, the bench's
 * global heap).
 *
 * Why 4-ary: half the depth of a binary heap, and the four children of a
 * node sit in one 64-byte line, so a sift-down level costs one cache miss.
 * Why `when` is stored in the entry: comparisons never dereference items,
 * so sifting touches only the entry array (the layout Go 1.23 moved to).
 *
 * Items may carry their own position: with an index offset >= 0, the heap
 * stores each entry's position into the uint32_t at that byte offset of
 * its item whenever the entry moves, which makes removal of an arbitrary
 * item O(log n). That is one store per level moved, never a load.
 *
 * Not thread-safe: the owner of the heap provides the lock.
 */
#ifndef PTIMER_HEAP4_H
#define PTIMER_HEAP4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/ptimer.h" /* struct pt__heap4: pt_timers embeds one */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pt__heap4_entry {
    pt_nanos when;
    void *item;
} pt__heap4_entry;

#define PT__HEAP4_NO_INDEX (-1)

void pt__heap4_init(pt__heap4 *h, int32_t idx_off);
void pt__heap4_free(pt__heap4 *h);

/* Make room for `more` pushes; 0 or -ENOMEM (the heap is unchanged). */
int pt__heap4_reserve(pt__heap4 *h, uint32_t more);

/* Insert; room must have been reserved. Returns the entry's final index. */
uint32_t pt__heap4_push(pt__heap4 *h, pt_nanos when, void *item);

/* Put {when, item} in the top entry's place (len > 0): the same entries
 * as a pop of the top and a push (among equal keys the order may differ),
 * with one sift instead of two: the cheap way
 * to retire a dead top when a new entry is due to go in anyway (and an
 * entry earlier than everything stays at the top without moving). No
 * room is needed. Returns the entry's final index. With len == 0 it is a
 * push, and room must have been reserved. */
uint32_t pt__heap4_replace_top(pt__heap4 *h, pt_nanos when, void *item);

/* The index of the entry that becomes the top if the top is removed, or
 * 0 if none would remain (len <= 1). */
uint32_t pt__heap4_second(const pt__heap4 *h);

/* Remove the entry at index i (i < len). */
void pt__heap4_remove(pt__heap4 *h, uint32_t i);

/* Restore order after v[i].when was changed in place. */
void pt__heap4_fix(pt__heap4 *h, uint32_t i);

/* Rebuild order in O(n) after the caller rewrote v[0..len) in bulk (for
 * example after compacting out dead entries); refreshes every index. */
void pt__heap4_heapify(pt__heap4 *h);

/* Give back memory when the heap has become much smaller than its array. */
void pt__heap4_shrink(pt__heap4 *h);

/* True when the order and the stored indices are all consistent. */
bool pt__heap4_valid(const pt__heap4 *h);

static inline pt_nanos pt__heap4_top_when(const pt__heap4 *h)
{
    return h->len ? h->v[0].when : 0;
}

static inline void pt__heap4_set_index(const pt__heap4 *h, uint32_t i)
{
    if (h->idx_off >= 0)
        *(uint32_t *)((char *)h->v[i].item + h->idx_off) = i;
}

#ifdef __cplusplus
}
#endif

#endif
