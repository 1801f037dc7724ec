/* The checks: the corruption abort, the status query, and
 * pt_wheel_verify's walk over a wheel. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/lock.h"
#include "pwheel/internal.h"
#include "pwheel/levels.h"

static const char *status_name(uint32_t s)
{
    static const char *const names[] = {"Idle", "Pending", "Running"};
    return s < sizeof names / sizeof names[0] ? names[s] : "(invalid)";
}

_Noreturn void pt__wheel_bad(const pt_wheel_timer *t, const pt_wheel *w, const char *op)
{
    uint32_t s = pt__wt_status(t);
    fprintf(stderr,
            "ptimer: corrupt wheel timer %p: status %s (%u) in %s (wheel %p%s, list %u, "
            "when %lld, check %#x%s)\n",
            (const void *)t, status_name(s), s, op, (const void *)w,
            w && w->magic == PT__WHEEL_MAGIC ? "" : ", not a live wheel", t->where,
            (long long)t->when, t->check, t->check == PT__WTIMER_CHECK ? "" : ", not a timer's");
    abort();
}

enum pt_wheel_timer_status pt_wheel_timer_status(const pt_wheel_timer *t)
{
    return t ? (enum pt_wheel_timer_status)pt__wt_status(t) : PT_WHEEL_IDLE;
}

static _Thread_local char report[200];

__attribute__((format(printf, 1, 2))) static int found(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report, sizeof report, fmt, ap);
    va_end(ap);
    return -EUCLEAN;
}

struct verify_ctx {
    pt_wheel *w;
    uint32_t count;
    pt_nanos earliest; /* of everything but never; 0: none */
};

static int verify_one(pt_wheel_timer *t, uint32_t where, void *vctx)
{
    struct verify_ctx *v = vctx;
    v->count++;
    if (t->check != PT__WTIMER_CHECK)
        return found("timer %p in list %u is not a timer", (void *)t, where);
    if (pt__wt_status(t) != PT_WHEEL_PENDING)
        return found("timer %p in list %u is %s", (void *)t, where, status_name(pt__wt_status(t)));
    if (atomic_load_explicit(&t->wheel, memory_order_relaxed) != v->w)
        return found("timer %p in list %u names wheel %p", (void *)t, where,
                     (void *)atomic_load_explicit(&t->wheel, memory_order_relaxed));
    if (t->where != where)
        return found("timer %p in list %u says list %u", (void *)t, where, t->where);
    if (!pt__wl_placed_right(v->w, t->when, where))
        return found("timer %p at %lld is in list %u, elapsed tick %llu", (void *)t,
                     (long long)t->when, where, (unsigned long long)v->w->elapsed);
    if (t->when != PT_MAXWHEN && (v->earliest == 0 || t->when < v->earliest))
        v->earliest = t->when;
    return 0;
}

int pt_wheel_verify(pt_wheel *w, bool quiescent)
{
    (void)quiescent; /* pwheel.h: every check is exact under the lock */
    if (!pt__wheel_ok(w))
        return -EINVAL;
    report[0] = 0;
    pt__lock(&w->lock);
    struct verify_ctx v = {w, 0, 0};
    int r = pt__wl_walk(w, verify_one, &v);
    /* A set bit over an empty slot; a timer under a clear bit is not
     * walked, so the count below misses it. */
    for (unsigned l = 0; !r && l < PT_WHEEL_LEVELS; l++)
        for (uint64_t occ = w->occupied[l]; !r && occ; occ &= occ - 1) {
            unsigned i = l * PT_WHEEL_SLOTS + (unsigned)__builtin_ctzll(occ);
            if (pt__wl_list_empty(&w->slot[i]))
                r = found("slot %u: occupancy bit set, list empty", i);
        }
    uint32_t len = atomic_load_explicit(&w->len, memory_order_relaxed);
    pt_nanos next = atomic_load_explicit(&w->next, memory_order_relaxed);
    if (!r && len != v.count)
        r = found("len %u, but %u timers filed under occupancy bits", len, v.count);
    if (!r && v.earliest && (next == 0 || next > v.earliest))
        r = found("next %lld, but a timer is filed at %lld", (long long)next,
                  (long long)v.earliest);
    if (!r && w->running && atomic_load_explicit(&w->running->wheel, memory_order_relaxed) != w)
        r = found("running timer %p names wheel %p", (void *)w->running,
                  (void *)atomic_load_explicit(&w->running->wheel, memory_order_relaxed));
    pt__unlock(&w->lock);
    return r;
}

const char *pt_wheel_verify_report(void)
{
    return report;
}
