/* Timer objects (engine.h's tm_* hooks) over a design's handles, for the
 * engines that have no timer object of their own (timerthread, globalheap,
 * floor): a lock, the worker whose structure holds the arming, and its
 * handle. An arm is cancel + schedule under the object's lock, as a caller
 * of those designs would write it (bRPC's users do this with a task id).
 * The lock serialises calls on one object, so these designs are stressed
 * by the racing of arms with firing, not of arms with each other. */
#ifndef PTBENCH_TOBJ_H
#define PTBENCH_TOBJ_H

#include <errno.h>
#include <stdlib.h>

#include "engine.h"
#include "base/lock.h"

struct tobj {
    _Atomic uint32_t lock;
    void *th;
    pt_engine_handle h; /* 0: none armed by us, or stopped */
};

typedef pt_engine_handle (*tobj_schedule_fn)(void *th, pt_nanos when, pt_nanos period, void *arg);
typedef bool (*tobj_cancel_fn)(void *th, pt_engine_handle h);

static inline void *tobj_new(void)
{
    struct tobj *o = calloc(1, sizeof *o);
    if (o)
        pt__lock_init(&o->lock);
    return o;
}

static inline int tobj_arm(struct tobj *o, void *th, pt_nanos when, pt_nanos period, void *arg,
                           tobj_schedule_fn sched, tobj_cancel_fn cancel)
{
    pt__lock(&o->lock);
    int r = o->h && cancel(o->th, o->h);
    o->h = sched(th, when, period, arg);
    o->th = th;
    bool ok = o->h != 0;
    pt__unlock(&o->lock);
    return ok ? r : -ENOMEM;
}

static inline int tobj_stop(struct tobj *o, tobj_cancel_fn cancel)
{
    pt__lock(&o->lock);
    int r = o->h && cancel(o->th, o->h);
    o->h = 0;
    pt__unlock(&o->lock);
    return r;
}

/* The designs' callbacks never touch the object, so once cancelled it may
 * go at once. */
static inline void tobj_free(struct tobj *o, tobj_cancel_fn cancel)
{
    (void)tobj_stop(o, cancel);
    free(o);
}

#define TOBJ_HOOKS(pfx, sched, cancel)                                                             \
    static void *pfx##_tm_new(void *eng)                                                           \
    {                                                                                              \
        (void)eng;                                                                                 \
        return tobj_new();                                                                         \
    }                                                                                              \
    static int pfx##_tm_arm(void *th, void *o, pt_nanos when, pt_nanos period, void *arg)          \
    {                                                                                              \
        return tobj_arm(o, th, when, period, arg, sched, cancel);                                  \
    }                                                                                              \
    static int pfx##_tm_stop(void *o)                                                              \
    {                                                                                              \
        return tobj_stop(o, cancel);                                                               \
    }                                                                                              \
    static void pfx##_tm_free(void *o)                                                             \
    {                                                                                              \
        tobj_free(o, cancel);                                                                      \
    }

#define TOBJ_FIELDS(pfx)                                                                           \
    .tm_new = pfx##_tm_new, .tm_arm = pfx##_tm_arm, .tm_stop = pfx##_tm_stop,                      \
    .tm_free = pfx##_tm_free

#endif
