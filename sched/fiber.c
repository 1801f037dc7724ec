/* Fibers (fiber.h): the sanitizer annotations around pt__ctx_switch.
 *
 * Order around a switch: ASan's start and TSan's switch come last before
 * pt__ctx_switch, ASan's finish first after it, so no instrumented code
 * runs between an announcement and the switch it announces. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "sched/fiber.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sanitizer.h"

void pt__fiber_init_thread(struct pt__fiber *f)
{
    memset(f, 0, sizeof *f);
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *lo;
        size_t size;
        if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
            f->stack_lo = lo;
            f->stack_size = size;
        }
        pthread_attr_destroy(&attr);
    }
    f->tsan_fiber = pt__tsan_current();
}

/* TSan fibers of Gs that ended, clean (no frame open), kept for the next
 * G to start, in this scheduler or the next: a program that runs many
 * short schedulers (a test suite) otherwise creates a fiber for every G
 * of every one. Bounded, as each holds its TSan thread state. */
#ifdef PT__TSAN
#define TSAN_POOL_MAX 1024
static pthread_mutex_t tsan_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *tsan_pool[TSAN_POOL_MAX];
static int tsan_pool_n;

static void *tsan_fiber_get(void)
{
    void *f = NULL;
    pthread_mutex_lock(&tsan_pool_lock);
    if (tsan_pool_n > 0)
        f = tsan_pool[--tsan_pool_n];
    pthread_mutex_unlock(&tsan_pool_lock);
    return f ? f : pt__tsan_create();
}

static void tsan_fiber_put(void *f)
{
    pthread_mutex_lock(&tsan_pool_lock);
    bool kept = tsan_pool_n < TSAN_POOL_MAX;
    if (kept)
        tsan_pool[tsan_pool_n++] = f;
    pthread_mutex_unlock(&tsan_pool_lock);
    if (!kept)
        pt__tsan_destroy(f);
}
#else
static void tsan_fiber_put(void *f)
{
    (void)f;
}
#endif

void pt__fiber_make(struct pt__fiber *f, void *lo, size_t size, void (*entry)(void *), void *arg)
{
    /* A TSan fiber is taken at the G's first switch in (tsan_fiber_take)
     * and given back to tsan_pool as the G ends (pt__fiber_retire), so
     * the fibers ever made are the most Gs alive past their first switch
     * at once, not the Gs made: creating one builds a whole TSan thread
     * state (a vector clock and more, zeroed in fresh memory; measured in
     * the tsan-fibers journal), and a G queued to start needs none.
     * Reuse is sound because the fiber's shadow call stack is empty again
     * when its G ends: entry and pt__fiber_exit push no frame
     * (PT__FIBER_FRAMELESS), and every frame between them has returned.
     * What TSan still sees: every access of the G's code, and the order
     * of its switches (each one synchronises, as on one thread). What it
     * cannot: a fiber keeps its TSan thread id and clock from G to G, so
     * a report names the thread of the first G that used it, and two
     * lives of one fiber count as ordered -- which they are, through the
     * switches that ended one and started the other. */
    f->open = true;
    pt__asan_unpoison(lo, size);
    f->stack_lo = lo;
    f->stack_size = size;
    f->asan_fake_stack = NULL;
    pt__ctx_make(&f->ctx, lo, size, entry, arg);
}

void pt__fiber_started(struct pt__fiber *self)
{
    pt__asan_finish_switch(self->asan_fake_stack);
}

#ifdef PT__TSAN
/* A G's first switch in: its TSan fiber, from the pool or new. */
static inline void tsan_fiber_take(struct pt__fiber *to)
{
    if (!to->tsan_fiber)
        to->tsan_fiber = tsan_fiber_get();
}
#else
static inline void tsan_fiber_take(struct pt__fiber *to)
{
    (void)to;
}
#endif

void pt__fiber_switch(struct pt__fiber *from, struct pt__fiber *to)
{
    tsan_fiber_take(to);
    pt__asan_start_switch(&from->asan_fake_stack, to->stack_lo, to->stack_size);
    pt__tsan_switch(to->tsan_fiber);
    pt__ctx_switch(&from->ctx, &to->ctx);
    /* Resumed, perhaps on another thread: the runtime finds the current
     * one itself; `from` is this fiber and was kept in a register/our
     * frame, both of which travel with the context. */
    pt__asan_finish_switch(from->asan_fake_stack);
}

PT__FIBER_FRAMELESS _Noreturn void pt__fiber_exit(struct pt__fiber *from, struct pt__fiber *to)
{
    from->open = false;
    tsan_fiber_take(to); /* a G handed the M that never ran */
    pt__asan_start_switch(NULL, to->stack_lo, to->stack_size);
    pt__tsan_switch(to->tsan_fiber);
    pt__ctx_switch(&from->ctx, &to->ctx);
    abort(); /* nothing resumes an exited fiber: only pt__fiber_make revives it */
}

#ifdef PT__TSAN
void pt__fiber_retire(struct pt__fiber *f)
{
    if (f->tsan_fiber && !f->open) {
        tsan_fiber_put(f->tsan_fiber);
        f->tsan_fiber = NULL;
    }
}
#endif

void pt__fiber_destroy(struct pt__fiber *f)
{
    /* a fiber whose G never ended (made, or parked for good) has frames
     * on its shadow stack that no later G may inherit */
    if (f->tsan_fiber && f->open)
        pt__tsan_destroy(f->tsan_fiber);
    else if (f->tsan_fiber)
        tsan_fiber_put(f->tsan_fiber);
    memset(f, 0, sizeof *f);
}
