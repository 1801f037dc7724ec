/* The 4-ary heap: see heap4.h for the layout and why. */
#include "base/heap4.h"

#include <errno.h>

#include "base/alloc.h"

#define HEAP4_MIN_CAP 64u

void pt__heap4_init(pt__heap4 *h, int32_t idx_off)
{
    h->v = NULL;
    h->len = 0;
    h->cap = 0;
    h->idx_off = idx_off;
}

void pt__heap4_free(pt__heap4 *h)
{
    pt__array_free(h->v, (size_t)h->cap * sizeof *h->v);
    h->v = NULL;
    h->len = h->cap = 0;
}

static int heap4_resize(pt__heap4 *h, uint32_t cap)
{
    pt__heap4_entry *v =
        pt__array_realloc(h->v, (size_t)h->cap * sizeof *v, (size_t)cap * sizeof *v);
    if (!v)
        return -ENOMEM;
    h->v = v;
    h->cap = cap;
    return 0;
}

int pt__heap4_reserve(pt__heap4 *h, uint32_t more)
{
    if (h->cap - h->len >= more)
        return 0;
    if (more > UINT32_MAX / 2 - h->len)
        return -ENOMEM;
    uint32_t cap = h->cap ? h->cap : HEAP4_MIN_CAP;
    while (cap - h->len < more)
        cap *= 2;
    return heap4_resize(h, cap);
}

void pt__heap4_shrink(pt__heap4 *h)
{
    if (h->cap <= HEAP4_MIN_CAP || h->len >= h->cap / 4)
        return;
    uint32_t cap = h->len * 2 > HEAP4_MIN_CAP ? h->len * 2 : HEAP4_MIN_CAP;
    (void)heap4_resize(h, cap); /* failing to shrink is harmless */
}

/* Move the entry at i towards the root until its parent is not later.
 * The entry is held in a hole: each level copies one parent down. */
/* Store i into the item's index field, if items carry one. Locals, not
 * h->: the store goes through a char pointer, which may alias anything. */
static inline void set_index(pt__heap4_entry *v, int32_t off, uint32_t i)
{
    if (off >= 0)
        *(uint32_t *)((char *)v[i].item + off) = i;
}

static uint32_t sift_up(pt__heap4 *h, uint32_t i)
{
    pt__heap4_entry *v = h->v, e = v[i];
    int32_t off = h->idx_off;
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (e.when >= v[p].when)
            break;
        v[i] = v[p];
        set_index(v, off, i);
        i = p;
    }
    v[i] = e;
    set_index(v, off, i);
    return i;
}

/* The earliest of the children c..c+3 that exist (c < n). With all four
 * present (the common case) it is a two-level tournament the compiler
 * turns into conditional moves. */
static inline uint32_t min_child(const pt__heap4_entry *v, uint32_t c, uint32_t n)
{
    if (c + 4 <= n) {
        uint32_t a = v[c + 1].when < v[c].when ? c + 1 : c;
        uint32_t b = v[c + 3].when < v[c + 2].when ? c + 3 : c + 2;
        return v[b].when < v[a].when ? b : a;
    }
    uint32_t m = c;
    for (uint32_t k = c + 1; k < n; k++)
        if (v[k].when < v[m].when)
            m = k;
    return m;
}

static uint32_t sift_down(pt__heap4 *h, uint32_t i)
{
    pt__heap4_entry *v = h->v, e = v[i];
    uint32_t n = h->len;
    int32_t off = h->idx_off;
    for (uint32_t c; (c = 4 * i + 1) < n;) {
        uint32_t m = min_child(v, c, n);
        if (v[m].when >= e.when)
            break;
        v[i] = v[m];
        set_index(v, off, i);
        i = m;
    }
    v[i] = e;
    set_index(v, off, i);
    return i;
}

/* Removing the root, Floyd's way: the hole goes all the way down along the
 * earliest children without comparing against the entry that will fill it
 * (the last one, which almost always belongs near the bottom), and that
 * entry then sifts up the few levels it needs. */
static void pop_root(pt__heap4 *h)
{
    uint32_t n = --h->len, i = 0;
    if (n == 0)
        return;
    pt__heap4_entry *v = h->v;
    int32_t off = h->idx_off;
    for (uint32_t c; (c = 4 * i + 1) < n;) {
        uint32_t m = min_child(v, c, n);
        v[i] = v[m];
        set_index(v, off, i);
        i = m;
    }
    v[i] = v[n];
    sift_up(h, i);
}

uint32_t pt__heap4_push(pt__heap4 *h, pt_nanos when, void *item)
{
    uint32_t i = h->len++;
    h->v[i].when = when;
    h->v[i].item = item;
    return sift_up(h, i);
}

uint32_t pt__heap4_replace_top(pt__heap4 *h, pt_nanos when, void *item)
{
    if (h->len == 0)
        return pt__heap4_push(h, when, item);
    h->v[0].when = when;
    h->v[0].item = item;
    /* The common case, an entry no later than every child, needs no sift
     * (and not sift_down's frame: most of its cost when nothing moves). */
    if (h->len == 1 || when <= h->v[min_child(h->v, 1, h->len)].when) {
        set_index(h->v, h->idx_off, 0);
        return 0;
    }
    return sift_down(h, 0);
}

uint32_t pt__heap4_second(const pt__heap4 *h)
{
    return h->len > 1 ? min_child(h->v, 1, h->len) : 0;
}

void pt__heap4_fix(pt__heap4 *h, uint32_t i)
{
    if (i > 0 && h->v[i].when < h->v[(i - 1) / 4].when)
        sift_up(h, i);
    else
        sift_down(h, i);
}

void pt__heap4_remove(pt__heap4 *h, uint32_t i)
{
    if (i == 0) {
        pop_root(h);
        return;
    }
    uint32_t last = --h->len;
    if (i == last)
        return;
    h->v[i] = h->v[last];
    pt__heap4_fix(h, i);
}

void pt__heap4_heapify(pt__heap4 *h)
{
    if (h->len > 1)
        for (uint32_t i = (h->len - 2) / 4 + 1; i-- > 0;)
            sift_down(h, i);
    for (uint32_t i = 0; i < h->len; i++)
        set_index(h->v, h->idx_off, i);
}

bool pt__heap4_valid(const pt__heap4 *h)
{
    for (uint32_t i = 0; i < h->len; i++) {
        if (i > 0 && h->v[i].when < h->v[(i - 1) / 4].when)
            return false;
        if (h->idx_off >= 0 &&
            *(const uint32_t *)((const char *)h->v[i].item + h->idx_off) != i)
            return false;
    }
    return true;
}
