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

int pt__np_register(pt_netpoll *np, pt_pollreg *r, unsigned events)
{
    int fd = r->fd, err;
    pt__lock(&np->lock);
    if ((uint32_t)fd < np->slots.fdmap_len && np->slots.fdmap[fd]) {
        err = -EEXIST;
        goto out;
    }
    if ((err = grow_slots(np)) < 0)
        goto out;
    uint32_t idx = np->slots.free_head;
    struct np_slot *s = &np->slots.v[idx];
    /* the kernel's word first: a number that is no open fd (-EBADF) must
     * not grow the fd map to its size */
    if ((err = np->ops->add(np, fd, np_tag_fd(s->gen, idx), events)) < 0)
        goto out;
    if ((err = grow_fdmap(np, fd)) < 0) {
        np->ops->del(np, fd, np_tag_fd(s->gen, idx));
        s->gen = (s->gen + 1) & TAG_GEN_MASK; /* an event of the add is stale */
        goto out;
    }
    np->slots.free_head = s->next;
    s->reg = r;
    r->slot = idx;
    atomic_store_explicit(&r->events, events, memory_order_relaxed);
    np->slots.fdmap[fd] = idx + 1;
    np->slots.nopen++;
out:
    pt__unlock(&np->lock);
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

void pt__np_unregister(pt_netpoll *np, pt_pollreg *r)
{
    pt__lock(&np->lock);
    struct np_slot *s = &np->slots.v[r->slot];
    np->ops->del(np, r->fd, np_tag_fd(s->gen, r->slot));
    s->reg = NULL;
    s->gen = (s->gen + 1) & TAG_GEN_MASK;
    s->next = np->slots.free_head;
    np->slots.free_head = r->slot;
    np->slots.fdmap[r->fd] = 0;
    np->slots.nopen--;
    pt__unlock(&np->lock);
}

pt_pollreg *pt__np_slot_reg(pt_netpoll *np, uint64_t tag)
{
    uint32_t idx = (uint32_t)tag, gen = (uint32_t)(tag >> 32) & TAG_GEN_MASK;
    if (idx >= np->slots.nslots || np->slots.v[idx].gen != gen)
        return NULL;
    return np->slots.v[idx].reg;
}
