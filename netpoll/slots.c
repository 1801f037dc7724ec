/* The slot table (netpoll/slots.h). */
#include <errno.h>
#include <string.h>

#include "netpoll/internal.h"
#include "base/alloc.h"

void pt__np_slots_init(pt_netpoll *np)
{
    memset(&np->slots, 0, sizeof np->slots);
    np->slots.free_head = UINT32_MAX;
}

void pt__np_slots_free(pt_netpoll *np)
{
    pt__free(np->slots.v);
    pt__free(np->slots.fdmap);
}

static int grow_fdmap(pt_netpoll *np, int fd)
{
    if ((uint32_t)fd < np->slots.fdmap_len)
        return 0;
    uint32_t n = np->slots.fdmap_len ? np->slots.fdmap_len : 64;
    while (n <= (uint32_t)fd)
        n *= 2;
    uint32_t *m = pt__realloc(np->slots.fdmap, (size_t)n * sizeof *m);
    if (!m)
        return -ENOMEM;
    memset(m + np->slots.fdmap_len, 0, (size_t)(n - np->slots.fdmap_len) * sizeof *m);
    np->slots.fdmap = m;
    np->slots.fdmap_len = n;
    return 0;
}

static int grow_slots(pt_netpoll *np)
{
    if (np->slots.free_head != UINT32_MAX)
        return 0;
    uint32_t n = np->slots.nslots ? np->slots.nslots * 2 : 16;
    struct np_slot *s = pt__realloc(np->slots.v, (size_t)n * sizeof *s);
    if (!s)
        return -ENOMEM;
    for (uint32_t i = np->slots.nslots; i < n; i++) {
        s[i].reg = NULL;
        s[i].gen = 1;
        s[i].next = i + 1 < n ? i + 1 : UINT32_MAX;
    }
    np->slots.v = s;
    np->slots.free_head = np->slots.nslots;
    np->slots.nslots = n;
    return 0;
}

/* Puts slot idx back on the free list, its generation moved on so that
 * an event under its old tag is stale. np->lock held. */
static void slot_release(pt_netpoll *np, uint32_t idx)
{
    struct np_slot *s = &np->slots.v[idx];
    s->reg = NULL;
    s->gen = (s->gen + 1) & TAG_GEN_MASK;
    s->next = np->slots.free_head;
    np->slots.free_head = idx;
}

/* The kernel is told outside np->lock, which a waiter holds while it hands
 * out a batch: a register or a close on another thread would otherwise
 * queue behind the batch and then hold every other one up for the length
 * of a system call (a connection churn on two Ps spent most of its futex
 * calls there). The slot is taken, and r in it, before the kernel knows
 * the fd, so an event of the new tag finds r; an event for a slot given
 * back finds it stale before the kernel is told to stop. */
int pt__np_register(pt_netpoll *np, pt_pollreg *r, unsigned events)
{
    int fd = r->fd, err;
    pt__lock(&np->lock);
    if ((uint32_t)fd < np->slots.fdmap_len && np->slots.fdmap[fd]) {
        pt__unlock(&np->lock);
        return -EEXIST;
    }
    if ((err = grow_slots(np)) < 0) {
        pt__unlock(&np->lock);
        return err;
    }
    uint32_t idx = np->slots.free_head;
    struct np_slot *s = &np->slots.v[idx];
    np->slots.free_head = s->next;
    s->reg = r;
    r->slot = idx;
    atomic_store_explicit(&r->events, events, memory_order_relaxed);
    uint64_t tag = np_tag_fd(s->gen, idx);
    pt__unlock(&np->lock);

    /* the kernel's word first: a number that is no open fd (-EBADF) must
     * not grow the fd map to its size */
    err = np->ops->add(np, fd, tag, events);
    bool added = err == 0;
    pt__lock(&np->lock);
    if (added && (uint32_t)fd < np->slots.fdmap_len && np->slots.fdmap[fd])
        err = -EEXIST; /* registered by another thread meanwhile */
    else if (added)
        err = grow_fdmap(np, fd);
    if (err == 0) {
        np->slots.fdmap[fd] = idx + 1;
        np->slots.nopen++;
    } else {
        slot_release(np, idx);
    }
    pt__unlock(&np->lock);
    if (added && err != 0)
        np->ops->del(np, fd, tag);
    return err;
}

int pt__np_rearm(pt_netpoll *np, pt_pollreg *r, unsigned events)
{
    int err = -EBADF;
    pt__lock(&np->lock);
    struct np_slot *s = r->slot < np->slots.nslots ? &np->slots.v[r->slot] : NULL;
    if (s && s->reg == r) {
        uint32_t gen = (s->gen + 1) & TAG_GEN_MASK;
        err = np->ops->mod(np, r->fd, np_tag_fd(s->gen, r->slot), np_tag_fd(gen, r->slot), events);
        if (err == 0) {
            /* Events queued under the old tag are stale from here on. */
            s->gen = gen;
            atomic_store_explicit(&r->events, events, memory_order_relaxed);
        }
    }
    pt__unlock(&np->lock);
    return err;
}

/* r's slot back (np->lock): its tag as it was, stale from here on */
static uint64_t take_back(pt_netpoll *np, pt_pollreg *r)
{
    pt__lock(&np->lock);
    uint64_t tag = np_tag_fd(np->slots.v[r->slot].gen, r->slot);
    slot_release(np, r->slot);
    np->slots.fdmap[r->fd] = 0;
    np->slots.nopen--;
    pt__unlock(&np->lock);
    return tag;
}

void pt__np_unregister(pt_netpoll *np, pt_pollreg *r)
{
    uint64_t tag = take_back(np, r);
    /* stale in the slot table; the kernel next (see pt__np_register) */
    np->ops->del(np, r->fd, tag);
}

void pt__np_forget(pt_netpoll *np, pt_pollreg *r)
{
    uint64_t tag = take_back(np, r);
    if (!np->ops->close_unregisters)
        np->ops->del(np, r->fd, tag);
}

pt_pollreg *pt__np_slot_reg(pt_netpoll *np, uint64_t tag)
{
    uint32_t idx = (uint32_t)tag, gen = (uint32_t)(tag >> 32) & TAG_GEN_MASK;
    if (idx >= np->slots.nslots || np->slots.v[idx].gen != gen)
        return NULL;
    return np->slots.v[idx].reg;
}
