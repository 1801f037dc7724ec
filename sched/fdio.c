/* Timed I/O on file descriptors for Gs (Go's internal/poll and pollDesc
 * in the runtime). */
#include "sched/internal.h"

void pt__fd_dispatch(pt_sched *s, const pt_poll_event *ev, int n)
{
    (void)s;
    (void)ev;
    (void)n;
}
