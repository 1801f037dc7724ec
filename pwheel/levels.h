/* The hierarchical wheel itself: where a timer is filed, how the wheel
 * advances and cascades, and the lower bound of its earliest time. A data
 * structure and nothing else: every function here is called with the
 * wheel's lock held (pwheel.c takes it), and none looks at statuses,
 * callbacks or threads.
 *
 * Layout. Level L, slot s is w->slot[L * 64 + s], covering the ticks
 * whose bits 6L..6L+5 are s, within the current rotation of level L: the
 * ticks sharing elapsed's bits above 6L+6. A timer at tick e is filed at
 * the lowest level whose rotation holds it: the level of the highest
 * 6-bit group in which e and elapsed differ. Hence every timer on level
 * L >= 1 is in a slot after elapsed's own slot of that level, on level 0
 * in elapsed's slot or after it, and the start of a slot (its "deadline",
 * slot_start()) is the first tick at which it can hold a due timer.
 *
 * Cost. Filing and unlinking are O(1): a few shifts and a bit set or
 * clear. Finding the earliest slot is one count-trailing-zeros per level.
 * A timer is re-filed at most once per level it crosses, so cascading
 * costs O(levels) per timer over its life, and nothing when it is
 * cancelled first (the RPC case).
 *
 * Ranges. The top level's rotation is 2^48 ticks (146 years at the default
 * tick). A timer beyond the current rotation waits on the far list and is
 * filed when the rotation turns; a timer at `never` waits on the never
 * list and is never due. */
#ifndef PTIMER_PWHEEL_LEVELS_H
#define PTIMER_PWHEEL_LEVELS_H

#include <stdbool.h>
#include <stdint.h>

#include "ptimer/pwheel.h"

#define PT__WHEEL_BITS 6
#define PT__WHEEL_SLOT_MASK ((uint64_t)PT_WHEEL_SLOTS - 1)
#define PT__WHEEL_NSLOTS (PT_WHEEL_LEVELS * PT_WHEEL_SLOTS)
/* The ticks one rotation of the top level spans, less one. */
#define PT__WHEEL_ROT_MASK ((UINT64_C(1) << (PT__WHEEL_BITS * PT_WHEEL_LEVELS)) - 1)

/* pt_wheel_timer.where: a slot index below PT__WHEEL_NSLOTS, or a list. */
enum {
    PT__WHERE_DUE = PT__WHEEL_NSLOTS, /* collected by a check, about to run */
    PT__WHERE_FAR,
    PT__WHERE_NEVER,
    PT__WHERE_NONE = 0xffff, /* in no list */
};

static inline void pt__wl_list_init(struct pt__wlink *h)
{
    h->next = h->prev = h;
}
static inline bool pt__wl_list_empty(const struct pt__wlink *h)
{
    return h->next == h;
}
static inline void pt__wl_list_add(struct pt__wlink *h, struct pt__wlink *n)
{
    n->prev = h->prev;
    n->next = h;
    h->prev->next = n;
    h->prev = n;
}
static inline void pt__wl_list_del(struct pt__wlink *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n->prev = n;
}

static inline pt_wheel_timer *pt__wl_timer(struct pt__wlink *l)
{
    return (pt_wheel_timer *)((char *)l - offsetof(pt_wheel_timer, link));
}

/* Empty slots and lists, elapsed 0. */
void pt__wl_init(pt_wheel *w);

/* The level a timer at tick e belongs on: that of the highest 6-bit group
 * in which e differs from elapsed (level 0 when they are equal). e must
 * be in the top level's current rotation. */
static inline unsigned pt__wl_level_of(uint64_t elapsed, uint64_t e)
{
    uint64_t diff = (elapsed ^ e) | PT__WHEEL_SLOT_MASK;
    return (unsigned)(63 - __builtin_clzll(diff)) / PT__WHEEL_BITS;
}

/* A timer's tick, or elapsed's for one already due: a timer is never
 * filed behind the wheel. */
static inline uint64_t pt__wl_tick_of(const pt_wheel *w, pt_nanos when)
{
    uint64_t e = (uint64_t)when >> w->shift;
    return e < w->elapsed ? w->elapsed : e;
}

/* File t (t->when set, >= 1, PT_MAXWHEN for never) on w: the hot half
 * of an arm, inline in pwheel.c's callers. */
static inline __attribute__((always_inline)) void pt__wl_file(pt_wheel *w, pt_wheel_timer *t)
{
    if (t->when == PT_MAXWHEN) {
        pt__wl_list_add(&w->never, &t->link);
        t->where = PT__WHERE_NEVER;
        return;
    }
    uint64_t e = pt__wl_tick_of(w, t->when);
    if ((e ^ w->elapsed) > PT__WHEEL_ROT_MASK) { /* past the top level's rotation */
        pt__wl_list_add(&w->far, &t->link);
        t->where = PT__WHERE_FAR;
        return;
    }
    unsigned lvl = pt__wl_level_of(w->elapsed, e);
    unsigned s = (unsigned)(e >> (PT__WHEEL_BITS * lvl)) & PT__WHEEL_SLOT_MASK;
    unsigned idx = lvl * PT_WHEEL_SLOTS + s;
    pt__wl_list_add(&w->slot[idx], &t->link);
    w->occupied[lvl] |= UINT64_C(1) << s;
    t->where = (uint16_t)idx;
}

/* Take t off whatever list of w holds it; its slot's bit goes with the
 * slot's last timer. */
static inline void pt__wl_unlink(pt_wheel *w, pt_wheel_timer *t)
{
    uint32_t where = t->where;
    pt__wl_list_del(&t->link);
    t->where = PT__WHERE_NONE;
    if (where < PT__WHEEL_NSLOTS && pt__wl_list_empty(&w->slot[where]))
        w->occupied[where / PT_WHEEL_SLOTS] &= ~(UINT64_C(1) << (where % PT_WHEEL_SLOTS));
}

/* Advance to `now`: cascade every slot that has come due and move every
 * timer with when <= now onto w->due (in order of their slots; within a
 * slot, in the order filed). Timers not yet due stay filed. */
void pt__wl_collect(pt_wheel *w, pt_nanos now);

/* A lower bound of the earliest time filed (due list, slots, far list;
 * never excluded): exact when it is on level 0 or the due list; 0 if
 * nothing is filed. O(levels) plus the length of one level-0 slot. */
pt_nanos pt__wl_bound(const pt_wheel *w);

/* Calls fn(t, where, ctx) for every timer in an occupied slot (by the
 * occupancy bits) and on the due, far and never lists, in no particular
 * order; stops at, and returns, the first nonzero answer. fn may unlink
 * the timer it is given. For verify and move. */
int pt__wl_walk(pt_wheel *w, int (*fn)(pt_wheel_timer *t, uint32_t where, void *ctx), void *ctx);

/* Whether `where` is the right place for a timer at `when` given the
 * wheel's elapsed (verify's placement check). */
bool pt__wl_placed_right(const pt_wheel *w, pt_nanos when, uint32_t where);

#endif
