/* Status names and the corruption abort (Go's badTimer). */
#include <stdio.h>
#include <stdlib.h>

#include "pheap/status.h"

static const char *status_name(uint32_t s)
{
    static const char *const names[] = {
        "NoStatus", "Waiting",  "Running",         "Deleted",       "Removing",
        "Removed",  "Modifying", "ModifiedEarlier", "ModifiedLater", "Moving",
    };
    return s < sizeof names / sizeof names[0] ? names[s] : "(invalid)";
}

_Noreturn void pt__bad_timer(const pt_timer *t, const char *op)
{
    uint64_t w = atomic_load_explicit(&((pt_timer *)t)->state, memory_order_relaxed);
    uint32_t s = st_status(w);
    fprintf(stderr,
            "ptimer: corrupt timer %p: status %s (%u) in %s (heap %p, index %u, when %lld, "
            "state word %#llx%s)\n",
            (const void *)t, status_name(s), s, op, (void *)st_heap(w), t->heap_index,
            (long long)t->when, (unsigned long long)w,
            st_checked(w) ? "" : ", not a timer's");
    abort();
}

bool pt_timer_running(const pt_timer *t)
{
    return t && pt__cb_running(atomic_load_explicit(&((pt_timer *)t)->callbacks,
                                                    memory_order_acquire)) != 0;
}

enum pt_timer_status pt_timer_status(const pt_timer *t)
{
    return t ? (enum pt_timer_status)st_load(t) : PT_TIMER_NOSTATUS;
}
