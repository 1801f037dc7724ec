/* The hierarchical wheel: filing, cascading, the lower bound (levels.h
 * explains the layout). The wheel's lock is held by every caller. */
#include "pwheel/levels.h"

/* The first tick of slot s of level lvl in elapsed's rotation of that
 * level: the earliest tick at which a timer in it can be due. */
static inline uint64_t slot_start(uint64_t elapsed, unsigned lvl, unsigned s)
{
    unsigned span = PT__WHEEL_BITS * (lvl + 1); /* at most 48 */
    uint64_t base = elapsed & ~((UINT64_C(1) << span) - 1);
    return base + ((uint64_t)s << (PT__WHEEL_BITS * lvl));
}

void pt__wl_init(pt_wheel *w)
{
    w->elapsed = 0;
    for (unsigned i = 0; i < PT__WHEEL_NSLOTS; i++)
        pt__wl_list_init(&w->slot[i]);
    for (unsigned l = 0; l < PT_WHEEL_LEVELS; l++)
        w->occupied[l] = 0;
    pt__wl_list_init(&w->due);
    pt__wl_list_init(&w->far);
    pt__wl_list_init(&w->never);
}

/* The slot that comes due first: the lowest occupied slot of each level
 * (every occupied slot is at or after elapsed's, levels.h), the earliest
 * start among levels, and on a tie the higher level, so that a cascade
 * into a level-0 slot happens before that slot is run. */
static bool earliest(const pt_wheel *w, unsigned *lvl, unsigned *s, uint64_t *start)
{
    bool found = false;
    for (unsigned l = PT_WHEEL_LEVELS; l-- > 0;) {
        uint64_t occ = w->occupied[l];
        if (!occ)
            continue;
        unsigned i = (unsigned)__builtin_ctzll(occ);
        uint64_t d = slot_start(w->elapsed, l, i);
        if (!found || d < *start) {
            found = true;
            *lvl = l;
            *s = i;
            *start = d;
        }
    }
    return found;
}

/* Takes every timer of `from` and files it again against the current
 * elapsed, or, with due_by >= 0, moves those with when <= due_by to the
 * due list instead. */
static void refile(pt_wheel *w, struct pt__wlink *from, pt_nanos due_by)
{
    struct pt__wlink tmp;
    pt__wl_list_init(&tmp);
    if (!pt__wl_list_empty(from)) { /* splice: the slot is empty from here */
        tmp.next = from->next;
        tmp.prev = from->prev;
        tmp.next->prev = &tmp;
        tmp.prev->next = &tmp;
        pt__wl_list_init(from);
    }
    while (!pt__wl_list_empty(&tmp)) {
        pt_wheel_timer *t = pt__wl_timer(tmp.next);
        pt__wl_list_del(&t->link);
        if (due_by >= 0 && t->when <= due_by) {
            pt__wl_list_add(&w->due, &t->link);
            t->where = PT__WHERE_DUE;
        } else {
            pt__wl_file(w, t);
        }
    }
}

void pt__wl_collect(pt_wheel *w, pt_nanos now)
{
    uint64_t n = (uint64_t)now >> w->shift;
    if (n < w->elapsed)
        n = w->elapsed; /* a `now` behind an earlier check's: still run what is due */
    for (;;) {
        unsigned lvl = 0, s = 0;
        uint64_t d = 0;
        if (earliest(w, &lvl, &s, &d) && d <= n) {
            unsigned idx = lvl * PT_WHEEL_SLOTS + s;
            w->elapsed = d;
            w->occupied[lvl] &= ~(UINT64_C(1) << s);
            /* Level 0 runs what is due by the exact time and keeps the
             * rest (only in slot n can a timer be not yet due); a higher
             * level cascades: its timers are filed again against d, on
             * lower levels. */
            refile(w, &w->slot[idx], lvl == 0 ? now : -1);
            if (lvl == 0 && d == n)
                break; /* what stayed in slot n is not due yet */
            continue;
        }
        /* Nothing due in this rotation of the top level. When `now` is
         * past it, the slots are empty: turn to the next rotation and file
         * the far timers against it. */
        uint64_t rot_end = w->elapsed | PT__WHEEL_ROT_MASK;
        if (n > rot_end && !pt__wl_list_empty(&w->far)) {
            w->elapsed = rot_end + 1;
            refile(w, &w->far, -1);
            continue;
        }
        break;
    }
    /* Every slot left starts after n (or is level 0's slot n), and if the
     * far list is not empty n is within the rotation: so every filed timer
     * keeps its place when elapsed moves up to n. */
    if (n > w->elapsed)
        w->elapsed = n;
}

static pt_nanos min_when(const struct pt__wlink *h, pt_nanos best)
{
    for (const struct pt__wlink *l = h->next; l != h; l = l->next) {
        pt_nanos when = pt__wl_timer((struct pt__wlink *)l)->when;
        if (best == 0 || when < best)
            best = when;
    }
    return best;
}

pt_nanos pt__wl_bound(const pt_wheel *w)
{
    pt_nanos best = min_when(&w->due, 0);
    uint64_t occ0 = w->occupied[0];
    if (occ0) /* exact: the level-0 slot that comes first holds the earliest of level 0 */
        best = min_when(&w->slot[(unsigned)__builtin_ctzll(occ0)], best);
    for (unsigned l = 1; l < PT_WHEEL_LEVELS; l++) {
        uint64_t occ = w->occupied[l];
        if (!occ)
            continue;
        /* Its timers are at or after its start; < INT64_MAX >> shift, so
         * the shift back cannot overflow. */
        pt_nanos d =
            (pt_nanos)(slot_start(w->elapsed, l, (unsigned)__builtin_ctzll(occ)) << w->shift);
        if (best == 0 || d < best)
            best = d;
    }
    if (!pt__wl_list_empty(&w->far)) {
        pt_nanos d = (pt_nanos)(((w->elapsed | PT__WHEEL_ROT_MASK) + 1) << w->shift);
        if (best == 0 || d < best)
            best = d;
    }
    return best;
}

static int walk_list(struct pt__wlink *h, uint32_t where,
                     int (*fn)(pt_wheel_timer *t, uint32_t where, void *ctx), void *ctx)
{
    for (struct pt__wlink *l = h->next, *next; l != h; l = next) {
        next = l->next; /* fn may unlink it */
        int r = fn(pt__wl_timer(l), where, ctx);
        if (r)
            return r;
    }
    return 0;
}

int pt__wl_walk(pt_wheel *w, int (*fn)(pt_wheel_timer *t, uint32_t where, void *ctx), void *ctx)
{
    /* Only the occupied slots: a timer in a slot whose bit is clear is not
     * visited, which verify catches by counting against len. */
    for (unsigned l = 0; l < PT_WHEEL_LEVELS; l++) {
        for (uint64_t occ = w->occupied[l]; occ; occ &= occ - 1) {
            unsigned idx = l * PT_WHEEL_SLOTS + (unsigned)__builtin_ctzll(occ);
            int r = walk_list(&w->slot[idx], idx, fn, ctx);
            if (r)
                return r;
        }
    }
    int r = walk_list(&w->due, PT__WHERE_DUE, fn, ctx);
    if (!r)
        r = walk_list(&w->far, PT__WHERE_FAR, fn, ctx);
    if (!r)
        r = walk_list(&w->never, PT__WHERE_NEVER, fn, ctx);
    return r;
}

bool pt__wl_placed_right(const pt_wheel *w, pt_nanos when, uint32_t where)
{
    if (where == PT__WHERE_DUE)
        return when != PT_MAXWHEN;
    if (where == PT__WHERE_NEVER)
        return when == PT_MAXWHEN;
    if (when == PT_MAXWHEN || when < 1)
        return false;
    uint64_t e = pt__wl_tick_of(w, when);
    bool far = (e ^ w->elapsed) > PT__WHEEL_ROT_MASK;
    if (where == PT__WHERE_FAR)
        return far;
    if (far || where >= PT__WHEEL_NSLOTS)
        return false;
    unsigned lvl = pt__wl_level_of(w->elapsed, e);
    unsigned s = (unsigned)(e >> (PT__WHEEL_BITS * lvl)) & PT__WHEEL_SLOT_MASK;
    return where == lvl * PT_WHEEL_SLOTS + s;
}
