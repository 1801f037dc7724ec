/* sync.WaitGroup: a count under a small lock, the Gs waiting on it in a
 * list, and a word plain threads sleep on. The last pt_wg_add to reach
 * zero readies every G and bumps the word. */
#include <errno.h>
#include <limits.h>

#include "base/futex.h"
#include "base/lock.h"
#include "sched/internal.h"

int pt_wg_init(pt_wg *w)
{
    if (!w)
        return -EINVAL;
    pt__lock_init(&w->lock);
    atomic_init(&w->seq, 0);
    w->count = 0;
    w->waiters = NULL;
    return 0;
}

int pt_wg_add(pt_wg *w, int64_t n)
{
    if (!w)
        return -EINVAL;
    pt__lock(&w->lock);
    int64_t c;
    if (__builtin_add_overflow(w->count, n, &c) || c < 0) {
        pt__unlock(&w->lock);
        return -EINVAL;
    }
    w->count = c;
    pt_g *ready = NULL;
    if (c == 0) {
        ready = w->waiters;
        w->waiters = NULL;
        atomic_fetch_add_explicit(&w->seq, 1, memory_order_release);
    }
    pt__unlock(&w->lock);
    if (c == 0) {
        pt__futex_wake(&w->seq, INT_MAX);
        for (pt_g *g = ready, *nx; g; g = nx) {
            nx = g->next;
            if (pt_ready(g) != 0)
                pt__sched_bad(g, "wait group");
        }
    }
    return 0;
}

int pt_wg_done(pt_wg *w)
{
    return pt_wg_add(w, -1);
}

/* park's commit: the G is on the list; let pt_wg_add at it. */
static bool wg_unlock(void *arg)
{
    pt__unlock(arg);
    return true;
}

int pt_wg_wait(pt_wg *w)
{
    if (!w)
        return -EINVAL;
    pt_g *g = pt_g_current();
    if (g) {
        pt__lock(&w->lock);
        if (w->count == 0) {
            pt__unlock(&w->lock);
            return 0;
        }
        g->next = w->waiters;
        w->waiters = g;
        /* readied only by the add that empties the list, under the lock
         * this commit releases once g is off its stack */
        pt__g_waits(g, PT__WAIT_WG, w, true);
        pt__park(g, wg_unlock, &w->lock);
        return 0;
    }
    for (;;) {
        uint32_t seen = atomic_load_explicit(&w->seq, memory_order_acquire);
        pt__lock(&w->lock);
        int64_t c = w->count;
        pt__unlock(&w->lock);
        if (c == 0)
            return 0;
        pt__futex_wait(&w->seq, seen, 0);
    }
}
