/* The staging ring in front of a P's heap (pt_timers_set_staging): 64
 * unsorted arrays of {when, timer} entries, one per slot of time, for
 * timers due between one and 64 slots ahead.
 *
 * Why: in the RPC shape a timeout is armed when a call starts and stopped
 * when it returns, long before it is due. Go's lazy deletion leaves each
 * stopped timer in the heap, and every arm and every clean sifts through a
 * heap of tens of thousands of entries, a cache miss a level (bench
 * rpc-pending). In a slot array an arm is an append and an unlink is one
 * swap with the slot's last entry: O(1), and the last entry is the one
 * armed most recently, still in cache. A timer enters the heap only when
 * its slot begins, so only the timers that live that long pay for it.
 *
 * Why slots and not one unsorted area: a slot is emptied into the heap in
 * one go when it begins, so no entry is scanned more than once on its way
 * in; the occupied slots are one 64-bit word, so the ring's next time is a
 * count of trailing zeros.
 *
 * Layout of a staged timer's heap_index: PT__STAGED | slot << 24 | position,
 * so one field tells the heap's code where an entry is, and a slot holds
 * at most 2^24 entries (a timer that would make more goes to the heap).
 *
 * Invariants (ts->lock held for all of it):
 *  - every staged entry of slot number s (its key >> shift) lies in
 *    (base, base + 64), in array s & 63, whose bit in `bits` is set;
 *  - timer0_when is at or before ts->stage_next, the start of the earliest
 *    occupied slot, so a check takes the lock by then and empties it;
 *  - the heap's array has room for every staged entry (heap.cap >=
 *    heap.len + ts->staged), so emptying a slot never allocates and never
 *    fails; an arm reserves it (pt__timers_reserve_locked).
 */
#ifndef PTIMER_STAGE_H
#define PTIMER_STAGE_H

#include "base/heap4.h"
#include "pheap/status.h"

#define PT__STAGE_SLOTS 64u
#define PT__STAGED 0x80000000u
#define PT__STAGE_POS_BITS 24
#define PT__STAGE_POS_MASK ((1u << PT__STAGE_POS_BITS) - 1)

struct pt__stage_slot {
    pt__heap4_entry *v;
    uint32_t len, cap;
};

struct pt__stage {
    uint32_t shift;       /* slot width: 2^shift ns */
    uint64_t bits;        /* bit s & 63: slot s holds entries */
    int64_t base;         /* staged slot numbers lie in (base, base + 64) */
    struct pt__stage_slot slot[PT__STAGE_SLOTS];
    /* The largest array a slot gave back when it emptied (len 0), for the
     * next slot that fills: slots fill one after another, and handing the
     * array on saves mapping and zeroing fresh pages for each. */
    struct pt__stage_slot spare;
};

/* A slot array that empties keeps its memory up to this many entries;
 * a larger one goes to the spare (or is freed). */
#define PT__STAGE_KEEP 1024u

void pt__stage_release(struct pt__stage *st, struct pt__stage_slot *sl);
void pt__stage_free(pt_timers *ts);

static inline bool pt__staged_index(uint32_t i) { return (i & PT__STAGED) != 0; }

/* Give the entry at position pos of slot q back to its timer. */
static inline void pt__stage_set_index(struct pt__stage *st, uint32_t q, uint32_t pos)
{
    ((pt_timer *)st->slot[q].v[pos].item)->heap_index =
        PT__STAGED | q << PT__STAGE_POS_BITS | pos;
}

/* Recompute ts->stage_next from the occupied slots (after a slot emptied). */
static inline void pt__stage_next(pt_timers *ts)
{
    struct pt__stage *st = ts->stage;
    if (!st->bits) {
        ts->stage_next = 0;
        return;
    }
    /* The first occupied slot after base: rotate the word so that bit 0
     * is slot base + 1. */
    uint32_t r = (uint32_t)(st->base + 1) & (PT__STAGE_SLOTS - 1);
    uint64_t rot = r ? st->bits >> r | st->bits << (64 - r) : st->bits;
    ts->stage_next = (st->base + 1 + __builtin_ctzll(rot)) << st->shift;
}

/* Unlink staged timer t (lock held): its place goes to the slot's last
 * entry. Keeps ts->stage_next and ts->staged; the caller updates the counters
 * (update_len). */
static inline void pt__stage_remove(pt_timers *ts, pt_timer *t, const char *op)
{
    struct pt__stage *st = ts->stage;
    uint32_t i = t->heap_index, q = i >> PT__STAGE_POS_BITS & (PT__STAGE_SLOTS - 1),
             pos = i & PT__STAGE_POS_MASK;
    if (!st)
        pt__bad_timer(t, op);
    struct pt__stage_slot *sl = &st->slot[q];
    if (pos >= sl->len || sl->v[pos].item != t)
        pt__bad_timer(t, op);
    ts->staged--;
    if (pos != --sl->len) {
        sl->v[pos] = sl->v[sl->len];
        pt__stage_set_index(st, q, pos);
    } else if (sl->len == 0) {
        st->bits &= ~((uint64_t)1 << q);
        pt__stage_next(ts);
        if (sl->cap > PT__STAGE_KEEP)
            pt__stage_release(st, sl);
    }
}

/* remove_locked for a staged timer (heap_locked.h): pt__stage_remove and
 * the counters; by (a timer to take t's place) must be NULL, as only a
 * heap's head is replaced. */
void pt__stage_unlink(pt_timers *ts, pt_timer *t, pt_timer *by, const char *op);

/* Stage t (key t->when) if it belongs in the ring; false if it does not
 * (too near, too far, its slot full or out of memory): then it goes onto
 * the heap. The caller has reserved heap room for one more (and updates
 * the counters). In stage.c: only an arm of a timer in no heap calls it. */
bool pt__stage_push(pt_timers *ts, pt_timer *t);

/* Empty every slot that has begun by `now` into the heap (a check, lock
 * held); Deleted timers are dropped instead. */
void pt__stage_promote(pt_timers *ts, pt_nanos now);

/* Append every staged entry to the heap's array, unordered: for the
 * whole-heap passes (compact, move, destroy), which re-heapify anyway. */
void pt__stage_flush(pt_timers *ts);

/* Checks the ring for pt_timers_verify: NULL, or what is wrong; adds the
 * Deleted and Modifying timers it holds to the counts. */
const char *pt__stage_verify(pt_timers *ts, uint32_t *deleted, uint32_t *modifying);

#endif
