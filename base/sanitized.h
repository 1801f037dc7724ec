/* PT__SANITIZED: defined when ThreadSanitizer or AddressSanitizer is
 * compiled in (GCC's macros, Clang's __has_feature). The one test for it:
 * the library keeps arrays in the allocator then (alloc.h), and the tests
 * scale their stress loops down (test/harness.h). */
#ifndef PTIMER_SANITIZED_H
#define PTIMER_SANITIZED_H

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define PT__SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define PT__SANITIZED 1
#endif
#endif

#endif
