/* The slot table: maps what the kernel hands back with an event (a tag,
 * netpoll/internal.h) to its descriptor, and a descriptor's fd to its slot.
 * A slot's generation changes on every close and re-arm, so an event the
 * kernel queued before either is recognised as stale. Everything here runs
 * with np->lock held, or takes it. */
#ifndef PTIMER_NETPOLL_SLOTS_H
#define PTIMER_NETPOLL_SLOTS_H

#include <stdint.h>

#include "ptimer/netpoll.h"

struct np_slot {
    pt_pollreg *reg; /* NULL: free */
    uint32_t gen;  /* bumped on every close and re-arm */
    uint32_t next; /* free list */
};

/* Guarded by the owning pt_netpoll's lock. */
struct np_slots {
    struct np_slot *v;
    uint32_t nslots, free_head;
    uint32_t *fdmap; /* fd -> slot + 1, 0 if not registered */
    uint32_t fdmap_len;
    uint32_t nopen; /* descriptors registered */
};

void pt__np_slots_init(pt_netpoll *np);
void pt__np_slots_free(pt_netpoll *np);

/* Register r (its fd, udata and events set) with the kernel; change its
 * interest (-EBADF if r no longer holds its slot: closed meanwhile); take
 * it back. Each takes np->lock. */
int pt__np_register(pt_netpoll *np, pt_pollreg *r, unsigned events);
int pt__np_rearm(pt_netpoll *np, pt_pollreg *r, unsigned events);
void pt__np_unregister(pt_netpoll *np, pt_pollreg *r);
/* The slot taken back as by pt__np_unregister; the kernel is told only
 * if closing the fd would not tell it (pt_pollreg_forget). */
void pt__np_forget(pt_netpoll *np, pt_pollreg *r);

/* The registration an fd event's tag names, or NULL if the event is stale
 * (its slot was closed or re-armed since). np->lock held. */
pt_pollreg *pt__np_slot_reg(pt_netpoll *np, uint64_t tag);

#endif
