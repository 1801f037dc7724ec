/* The library's own allocations: mimalloc when built with PT_MIMALLOC,
 * the C library otherwise. Every part allocates through these, so there is
 * one place to swap the allocator or inject failures. */
#ifndef PTIMER_ALLOC_H
#define PTIMER_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sanitized.h"

void *pt_malloc(size_t n);
void *pt_realloc(void *p, size_t n);
void pt_free(void *p);

/* Arrays that can grow large (a heap of a million timers is 16 MiB), sized
 * by the caller, who passes the current size back. From PT_ARRAY_MAP_BYTES
 * (one page) up an array is a mapping of its own, grown and shrunk with
 * mremap: no copy under the owner's lock while it grows, no outgrown copy
 * left resident in the allocator, and capacity never touched costs no
 * memory. The line is low on purpose: with it at 64 KiB, the 1-32 KiB
 * copies a heap outgrew on its way to a million timers stayed resident in
 * mimalloc's pages, 108 KB measured (smaps), a tenth of a byte per timer
 * in ptbench's memory figure. Below it, pt_realloc. Failure injection and
 * pt_alloc_live count these as they count pt_realloc. */
#define PT_ARRAY_MAP_LINE ((size_t)4 << 10)
#ifdef PT_SANITIZED
/* Sanitizers do not intercept mremap (a moved mapping keeps stale
 * ThreadSanitizer shadow: false races) and LeakSanitizer does not scan
 * mappings it did not make (timers reachable only from a heap would be
 * reported lost): sanitized builds keep every array in the allocator. */
#define PT_ARRAY_MAP_BYTES SIZE_MAX
#else
#define PT_ARRAY_MAP_BYTES PT_ARRAY_MAP_LINE
#endif
void *pt_array_realloc(void *p, size_t old_bytes, size_t new_bytes);
void pt_array_free(void *p, size_t bytes);

/* Fault injection, for tests (test/verify/). Compiled in always: the
 * library allocates only when a heap grows or shrinks and when the
 * TimerThread's pool or per-thread tables grow -- never per timer
 * operation in the steady state -- so one thread-local test and one
 * relaxed counter update per allocation cost nothing measurable, and the
 * tests exercise the very library that ships rather than a special build.
 *
 * pt_alloc_fail_after(n): the calling thread's n-th allocation from now
 * (n = 0: the very next one) returns NULL, once; n < 0 disarms. Only the
 * calling thread: a test drives one operation deterministically while the
 * TimerThread's own thread (whose heap growth aborts on failure, having no
 * caller to report to) allocates normally. pt_realloc failing leaves the
 * old block as it was, as realloc does. */
void pt_alloc_fail_after(long n);
/* True while an injected failure is armed and has not happened yet. */
bool pt_alloc_fail_armed(void);
/* Blocks allocated through pt_malloc/pt_realloc and not yet freed, by any
 * thread: lets a test show an operation that failed leaked nothing. */
long pt_alloc_live(void);

#endif
