/* The sanitizer runtimes' fiber and poisoning APIs, behind names that
 * compile to nothing in a build without that sanitizer. Only fiber.c,
 * stack.c, preempt.c and time.c's cache use these: the rest of the
 * scheduler never calls the sanitizer API itself. */
#ifndef PT_SCHED_SANITIZER_H
#define PT_SCHED_SANITIZER_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define PT__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PT__ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define PT__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PT__TSAN 1
#endif
#endif

/* Always inlined, in sanitized builds too: an out-of-line copy is itself
 * instrumented, and TSan's entry hook for it would run on the fiber being
 * left while its exit hook, after __tsan_switch_to_fiber, pops the shadow
 * call stack of the fiber being entered -- which, repeated, overruns it.
 * Clang 14 does not inline these into pt__fiber_exit (a cold, noreturn
 * path) unless told. */
#define PT__SAN_INLINE static inline __attribute__((always_inline))

#ifdef PT__ASAN
/* Declared here rather than taken from <sanitizer/common_interface_defs.h>,
 * which not every toolchain ships; the runtime exports these names. */
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
void __asan_poison_memory_region(void const volatile *addr, size_t size);

/* Before a switch: the stack we go to, and where to keep the fake stack
 * (use-after-return frames) of the one we leave -- NULL when it leaves
 * for good, and ASan drops it. */
PT__SAN_INLINE void pt__asan_start_switch(void **fake_save, const void *lo, size_t size)
{
    __sanitizer_start_switch_fiber(fake_save, lo, size);
}
/* After it, on the stack we came to: reinstates that stack's fake stack. */
PT__SAN_INLINE void pt__asan_finish_switch(void *fake)
{
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
}
/* A fiber that exited never returned from its frames: their redzones are
 * still poisoned where the next fiber on that stack will put its own. */
PT__SAN_INLINE void pt__asan_unpoison(const void *lo, size_t size)
{
    __asan_unpoison_memory_region(lo, size);
}
/* Memory the library keeps but nobody may touch meanwhile (a freed timer
 * in a P's cache): an access is reported as a use after poison. */
PT__SAN_INLINE void pt__asan_poison(const void *lo, size_t size)
{
    __asan_poison_memory_region(lo, size);
}
#else
PT__SAN_INLINE void pt__asan_start_switch(void **fake_save, const void *lo, size_t size)
{
    (void)fake_save, (void)lo, (void)size;
}
PT__SAN_INLINE void pt__asan_finish_switch(void *fake)
{
    (void)fake;
}
PT__SAN_INLINE void pt__asan_unpoison(const void *lo, size_t size)
{
    (void)lo, (void)size;
}
PT__SAN_INLINE void pt__asan_poison(const void *lo, size_t size)
{
    (void)lo, (void)size;
}
#endif

#ifdef PT__TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);

PT__SAN_INLINE void *pt__tsan_current(void)
{
    return __tsan_get_current_fiber();
}
PT__SAN_INLINE void *pt__tsan_create(void)
{
    return __tsan_create_fiber(0);
}
PT__SAN_INLINE void pt__tsan_destroy(void *fiber)
{
    __tsan_destroy_fiber(fiber);
}
/* Flags 0: the switch synchronises, so what the fiber we leave did
 * happens before what the one we resume does, as on one thread -- also
 * when the resumed fiber last ran on another thread. */
PT__SAN_INLINE void pt__tsan_switch(void *fiber)
{
    __tsan_switch_to_fiber(fiber, 0);
}
#else
PT__SAN_INLINE void *pt__tsan_current(void)
{
    return NULL;
}
PT__SAN_INLINE void *pt__tsan_create(void)
{
    return NULL;
}
PT__SAN_INLINE void pt__tsan_destroy(void *fiber)
{
    (void)fiber;
}
PT__SAN_INLINE void pt__tsan_switch(void *fiber)
{
    (void)fiber;
}
#endif

#endif
