/* What pwheel.c and verify.c share: the magic numbers, status access and
 * the corruption abort. */
#ifndef PTIMER_PWHEEL_INTERNAL_H
#define PTIMER_PWHEEL_INTERNAL_H

#include <stdatomic.h>

#include "ptimer/pwheel.h"

#define PT__WHEEL_MAGIC 0x7077686cu /* "pwhl" */
#define PT__WTIMER_CHECK 0x5e7du    /* pt_wheel_timer.check, set by init */

static inline bool pt__wheel_ok(const pt_wheel *w)
{
    return w && w->magic == PT__WHEEL_MAGIC;
}
static inline bool pt__wtimer_ok(const pt_wheel_timer *t)
{
    return t && t->check == PT__WTIMER_CHECK;
}

/* The status is written only under the lock of the timer's wheel; the
 * atomic is for pt_wheel_timer_status() from anywhere. */
static inline uint32_t pt__wt_status(const pt_wheel_timer *t)
{
    return atomic_load_explicit(&((pt_wheel_timer *)t)->status, memory_order_relaxed);
}
static inline void pt__wt_set_status(pt_wheel_timer *t, uint32_t s)
{
    atomic_store_explicit(&t->status, s, memory_order_relaxed);
}

/* Corruption (a timer in a list with a status or wheel its operation
 * cannot meet): abort with the timer, its status, its wheel and the
 * operation. The only output of this part. */
_Noreturn void pt__wheel_bad(const pt_wheel_timer *t, const pt_wheel *w, const char *op);

#endif
