/* Status names and the corruption abort (Go's badTimer). */
#include <stdio.h>
#include <stdlib.h>

#include "timer_internal.h"

static const char *status_name(uint32_t s)
{
    static const char *const names[] = {
        "NoStatus", "Waiting",  "Running",         "Deleted",       "Removing",
        "Removed",  "Modifying", "ModifiedEarlier", "ModifiedLater", "Moving",
    };
    return s < sizeof names / sizeof names[0] ? names[s] : "(invalid)";
}

_Noreturn void pt_bad_timer(const pt_timer *t, const char *op)
{
    uint32_t s = atomic_load_explicit(&((pt_timer *)t)->status, memory_order_relaxed);
    fprintf(stderr,
            "ptimer: corrupt timer %p: status %s (%u) in %s (heap %p, index %u, when %lld)\n",
            (const void *)t, status_name(s), s, op,
            (void *)atomic_load_explicit(&((pt_timer *)t)->ts, memory_order_relaxed),
            t->heap_index, (long long)t->when);
    abort();
}

enum pt_timer_status pt_timer_status(const pt_timer *t)
{
    return t ? (enum pt_timer_status)st_load(t) : PT_TIMER_NOSTATUS;
}
