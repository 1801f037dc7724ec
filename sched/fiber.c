/* Fibers (fiber.h): the sanitizer annotations around pt__ctx_switch.
 *
 * Order around a switch: ASan's start and TSan's switch come last before
 * pt__ctx_switch, ASan's finish first after it, so no instrumented code
 * runs between an announcement and the switch it announces. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "sched/fiber.h"

#include <pthread.h>
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

void pt__fiber_make(struct pt__fiber *f, void *lo, size_t size, void (*entry)(void *), void *arg)
{
    /* A TSan fiber that exited still holds the frames it never returned
     * from; a fresh one starts clean. */
    if (f->tsan_fiber)
        pt__tsan_destroy(f->tsan_fiber);
    f->tsan_fiber = pt__tsan_create();
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

void pt__fiber_switch(struct pt__fiber *from, struct pt__fiber *to)
{
    pt__asan_start_switch(&from->asan_fake_stack, to->stack_lo, to->stack_size);
    pt__tsan_switch(to->tsan_fiber);
    pt__ctx_switch(&from->ctx, &to->ctx);
    /* Resumed, perhaps on another thread: the runtime finds the current
     * one itself; `from` is this fiber and was kept in a register/our
     * frame, both of which travel with the context. */
    pt__asan_finish_switch(from->asan_fake_stack);
}

_Noreturn void pt__fiber_exit(struct pt__fiber *from, struct pt__fiber *to)
{
    pt__asan_start_switch(NULL, to->stack_lo, to->stack_size);
    pt__tsan_switch(to->tsan_fiber);
    pt__ctx_switch(&from->ctx, &to->ctx);
    abort(); /* nothing resumes an exited fiber: only pt__fiber_make revives it */
}

void pt__fiber_destroy(struct pt__fiber *f)
{
    if (f->tsan_fiber)
        pt__tsan_destroy(f->tsan_fiber);
    memset(f, 0, sizeof *f);
}
