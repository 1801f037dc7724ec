/* The library's own allocations: mimalloc when built with PT_MIMALLOC,
 * the C library otherwise. Every part allocates through these, so there is
 * one place to swap the allocator or inject failures. */
#ifndef PTIMER_ALLOC_H
#define PTIMER_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sanitized.h"

void *pt__malloc(size_t n);
void *pt__realloc(void *p, size_t n);
void pt__free(void *p);

/* 64-byte aligned blocks through pt__malloc, for structures laid out in
 * cache lines (per-thread or per-P state that others must not share a line
 * with). */
void *pt__alloc_lines(size_t size);
void pt__free_lines(void *p);

/* Arrays that can grow large (a heap of a million timers is 16 MiB), sized
 * by the caller, who passes the current size back. From PT__ARRAY_MAP_BYTES
 * (one page) up an array is a mapping of its own, grown and shrunk with
 * mremap: no copy under the owner's lock while it grows, no outgrown copy
 * left resident in the allocator, and capacity never touched costs no
 * memory. The line is low on purpose: with it much higher, the smaller
 * copies a heap outgrows on its way to a million timers stay resident in
 * the allocator's pages, which ptbench's memory figure counts against every
 * timer. Below it, pt__realloc. Failure injection and
 * pt__alloc_live count these as they count pt__realloc. */
#define PT__ARRAY_MAP_LINE ((size_t)4 << 10)
#ifdef PT__SANITIZED
/* Sanitizers do not intercept mremap (a moved mapping keeps stale
 * ThreadSanitizer shadow: false races) and LeakSanitizer does not scan
 * mappings it did not make (timers reachable only from a heap would be
 * reported lost): sanitized builds keep every array in the allocator. */
#define PT__ARRAY_MAP_BYTES SIZE_MAX
#else
#define PT__ARRAY_MAP_BYTES PT__ARRAY_MAP_LINE
#endif
void *pt__array_realloc(void *p, size_t old_bytes, size_t new_bytes);
void pt__array_free(void *p, size_t bytes);

/* Fault injection, for tests (test/verify/). Compiled in always: the
 * library allocates only when a heap grows or shrinks and when the
 * TimerThread's pool or per-thread tables grow -- never per timer
 * operation in the steady state -- so one thread-local test and one
 * relaxed counter update per allocation cost nothing measurable, and the
 * tests exercise the very library that ships rather than a special build.
 *
 * pt__alloc_fail_after(n): the calling thread's n-th allocation from now
 * (n = 0: the very next one) returns NULL, once; n < 0 disarms. Only the
 * calling thread: a test drives one operation deterministically while the
 * TimerThread's own thread (whose heap growth aborts on failure, having no
 * caller to report to) allocates normally. pt__realloc failing leaves the
 * old block as it was, as realloc does. */
void pt__alloc_fail_after(long n);
/* True while an injected failure is armed and has not happened yet. */
bool pt__alloc_fail_armed(void);
/* For allocators outside this file (sched/stack.c maps G stacks): counts
 * one allocation against the armed failure and says whether this one is
 * to fail, so an injected failure reaches them as it reaches pt__malloc. */
bool pt__alloc_should_fail(void);
/* Blocks allocated through pt__malloc/pt__realloc and not yet freed, by any
 * thread: lets a test show an operation that failed leaked nothing. */
long pt__alloc_live(void);

#endif
