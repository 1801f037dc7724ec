/* The staging ring in front of a P's heap: see stage.h for the layout,
 * the invariants and why. Everything here runs with ts->lock held, except
 * pt_timers_set_staging, which runs before the heap is shared. */
#include <errno.h>
#include <stdio.h>

#include "pheap/heap_locked.h"

#include "base/alloc.h"

#define STAGE_MIN_CAP 64u

int pt_timers_set_staging(pt_timers *ts, pt_nanos slot)
{
    if (!pt__timers_valid(ts) || slot <= 0 || slot > (pt_nanos)1 << 40)
        return -EINVAL;
    /* A slot of at least 1 us: finer than that, the ring spans less than
     * the time a check takes to come round on a busy P. */
    uint32_t shift = 10;
    while (((pt_nanos)1 << shift) < slot)
        shift++;
    pt__lock(&ts->lock);
    int err = ts->stage ? -EBUSY : ts->heap.len ? -EBUSY : 0;
    struct pt__stage *st = NULL;
    if (!err && !(st = pt__malloc(sizeof *st)))
        err = -ENOMEM;
    if (!err) {
        *st = (struct pt__stage){.shift = shift, .base = -1};
        ts->stage = st;
    }
    pt__unlock(&ts->lock);
    return err;
}

/* The slot arrays and the ring itself, for pt_timers_destroy (empty). */
void pt__stage_free(pt_timers *ts)
{
    struct pt__stage *st = ts->stage;
    if (!st)
        return;
    for (uint32_t q = 0; q < PT__STAGE_SLOTS; q++)
        pt__array_free(st->slot[q].v, (size_t)st->slot[q].cap * sizeof *st->slot[q].v);
    pt__array_free(st->spare.v, (size_t)st->spare.cap * sizeof *st->spare.v);
    pt__free(st);
    ts->stage = NULL;
}

/* A slot array that emptied gives its memory up once it is large: a slot
 * fills while its stretch of time is being armed and is not used again
 * for 63 slots, and 64 arrays sized for a burst would stay resident
 * otherwise. The largest becomes the spare, which the next slot to grow
 * takes over; small ones are kept (refilling them is the common case). */
void pt__stage_release(struct pt__stage *st, struct pt__stage_slot *sl)
{
    struct pt__stage_slot *drop = sl;
    if (sl->cap > st->spare.cap) {
        drop = &st->spare;
        struct pt__stage_slot t = st->spare;
        st->spare = *sl;
        *sl = t;
    }
    pt__array_free(drop->v, (size_t)drop->cap * sizeof *drop->v);
    drop->v = NULL;
    drop->cap = 0;
}

void pt__stage_unlink(pt_timers *ts, pt_timer *t, pt_timer *by, const char *op)
{
    if (by)
        pt__bad_timer(t, op);
    pt__stage_remove(ts, t, op);
    update_len(ts);
}

bool pt__stage_push(pt_timers *ts, pt_timer *t)
{
    struct pt__stage *st = ts->stage;
    int64_t s = t->when >> st->shift;
    /* The last now a check saw: at least one whole slot must lie between
     * it and t's slot, or t is due too soon for the ring to pay. */
    pt_nanos seen = atomic_load_explicit(&ts->stage_hint, memory_order_relaxed);
    int64_t hint = seen >> st->shift;
    /* No check has read the clock yet: nothing to measure "far" from (and
     * anchoring the ring at t itself would let one far timer, say an hour
     * out, claim the ring for its hour). */
    if (seen == 0 || s <= hint + 1)
        return false;
    /* An empty ring may start anywhere its entries are not yet due: at the
     * last check's slot. (A hint gone stale, on a P whose check found
     * nothing at all to look at, only sends timers to the heap, whose next
     * check then reads the clock.) */
    if (!st->bits && hint > st->base)
        st->base = hint;
    if (s <= st->base || s >= st->base + (int64_t)PT__STAGE_SLOTS)
        return false;
    uint32_t q = (uint32_t)s & (PT__STAGE_SLOTS - 1);
    struct pt__stage_slot *sl = &st->slot[q];
    if (sl->len == sl->cap && sl->len == 0 && st->spare.cap) {
        *sl = st->spare; /* len 0 */
        st->spare = (struct pt__stage_slot){0};
    }
    if (sl->len == sl->cap) {
        if (sl->cap > PT__STAGE_POS_MASK / 2)
            return false;
        uint32_t cap = sl->cap ? 2 * sl->cap : STAGE_MIN_CAP;
        pt__heap4_entry *v =
            pt__array_realloc(sl->v, (size_t)sl->cap * sizeof *v, (size_t)cap * sizeof *v);
        if (!v)
            return false; /* the heap has room for it: it goes there */
        sl->v = v;
        sl->cap = cap;
    }
    uint32_t pos = sl->len++;
    sl->v[pos].when = t->when;
    sl->v[pos].item = t;
    pt__stage_set_index(st, q, pos);
    ts->staged++;
    if (!(st->bits & (uint64_t)1 << q)) {
        st->bits |= (uint64_t)1 << q;
        pt_nanos at = s << st->shift;
        if (ts->stage_next == 0 || at < ts->stage_next)
            ts->stage_next = at;
    }
    return true;
}

/* Row "promote": Deleted timers are dropped (Deleted -> Removing ->
 * Removed, counted cleaned); every other status moves into the heap as it
 * is, under the same key. Nothing else reads a timer's heap_index or its
 * entry without this lock, so a Waiting timer needs no claim to move, and
 * a Modifying or ModifiedXX one is the heap's to settle as usual (its key
 * is the one it was staged under, and a ModifiedEarlier one lowered
 * modified_earliest when it was modified). */
static void promote_slot(pt_timers *ts, uint32_t q)
{
    struct pt__stage *st = ts->stage;
    struct pt__stage_slot *sl = &st->slot[q];
    uint32_t removed = 0;
    for (uint32_t i = 0; i < sl->len; i++) {
        pt_timer *t = sl->v[i].item;
        uint64_t w = st_word(t);
        if (st_status(w) == PT_TIMER_DELETED && st_cas(t, w, PT_TIMER_REMOVING)) {
            removed++;
            st_set_in(t, PT_TIMER_REMOVING, PT_TIMER_REMOVED, NULL, "promote");
            continue;
        }
        /* Room was reserved when t was staged (stage.h). */
        pt__heap4_push(&ts->heap, sl->v[i].when, t);
    }
    ts->staged -= sl->len;
    sl->len = 0;
    st->bits &= ~((uint64_t)1 << q);
    if (sl->cap > PT__STAGE_KEEP)
        pt__stage_release(st, sl);
    count_cleaned(ts, removed);
}

void pt__stage_promote(pt_timers *ts, pt_nanos now)
{
    struct pt__stage *st = ts->stage;
    int64_t upto = now >> st->shift;
    while (ts->stage_next && ts->stage_next <= now) {
        promote_slot(ts, (uint32_t)(ts->stage_next >> st->shift) & (PT__STAGE_SLOTS - 1));
        pt__stage_next(ts);
    }
    /* Every slot up to now's has been emptied: the ring may start there. */
    if (upto > st->base)
        st->base = upto;
    pt__stage_next(ts);
    update_len(ts);
}

void pt__stage_flush(pt_timers *ts)
{
    struct pt__stage *st = ts->stage;
    if (!st || !ts->staged)
        return;
    pt__heap4 *h = &ts->heap;
    for (uint32_t q = 0; q < PT__STAGE_SLOTS; q++) {
        struct pt__stage_slot *sl = &st->slot[q];
        for (uint32_t i = 0; i < sl->len; i++)
            h->v[h->len++] = sl->v[i]; /* room reserved (stage.h); indices: heapify's */
        sl->len = 0;
        if (sl->cap > PT__STAGE_KEEP)
            pt__stage_release(st, sl);
    }
    ts->staged = 0;
    st->bits = 0;
    ts->stage_next = 0;
}

const char *pt__stage_verify(pt_timers *ts, uint32_t *deleted, uint32_t *modifying)
{
    static _Thread_local char why[160];
    struct pt__stage *st = ts->stage;
    if (!st)
        return ts->staged ? "entries counted staged without a ring" : NULL;
    uint32_t n = 0;
    pt_nanos first = 0;
    for (uint32_t q = 0; q < PT__STAGE_SLOTS; q++) {
        const struct pt__stage_slot *sl = &st->slot[q];
        if (!!sl->len != !!(st->bits & (uint64_t)1 << q)) {
            snprintf(why, sizeof why, "ring slot %u holds %u entries, occupied bit %d", q, sl->len,
                     (int)(st->bits >> q & 1));
            return why;
        }
        for (uint32_t i = 0; i < sl->len; i++) {
            const pt_timer *t = sl->v[i].item;
            int64_t s = sl->v[i].when >> st->shift;
            uint64_t w = st_word(t);
            uint32_t status = st_status(w);
            if (!st_checked(w) || st_heap(w) != ts ||
                (!st_pending(status) && status != PT_TIMER_DELETED &&
                 status != PT_TIMER_MODIFYING)) {
                snprintf(why, sizeof why, "ring slot %u entry %u: timer %p, word %#llx", q, i,
                         (const void *)t, (unsigned long long)w);
                return why;
            }
            *deleted += status == PT_TIMER_DELETED;
            *modifying += status == PT_TIMER_MODIFYING;
            if (t->heap_index != (PT__STAGED | q << PT__STAGE_POS_BITS | i) ||
                ((uint32_t)s & (PT__STAGE_SLOTS - 1)) != q || s <= st->base ||
                s >= st->base + (int64_t)PT__STAGE_SLOTS) {
                snprintf(why, sizeof why, "ring slot %u entry %u: timer %p, index %#x, key %lld", q,
                         i, (const void *)t, t->heap_index, (long long)sl->v[i].when);
                return why;
            }
            pt_nanos at = s << st->shift;
            if (first == 0 || at < first)
                first = at;
        }
        n += sl->len;
    }
    if (n != ts->staged)
        return "ring holds a different number of entries than counted";
    if (first != ts->stage_next)
        return "ring's next time is not its earliest slot's start";
    if (ts->heap.cap - ts->heap.len < n)
        return "heap has no room reserved for the ring's entries";
    return NULL;
}
