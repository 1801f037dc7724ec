/* The library's own allocations: mimalloc when built with PT_MIMALLOC,
 * the C library otherwise. Every part allocates through these, so there is
 * one place to swap the allocator or inject failures. */
#ifndef PTIMER_ALLOC_H
#define PTIMER_ALLOC_H

#include <stddef.h>

void *pt_malloc(size_t n);
void *pt_realloc(void *p, size_t n);
void pt_free(void *p);

#endif
