#include "alloc.h"

#ifdef PT_HAVE_MIMALLOC
#include <mimalloc.h>
void *pt_malloc(size_t n) { return mi_malloc(n); }
void *pt_realloc(void *p, size_t n) { return mi_realloc(p, n); }
void pt_free(void *p) { mi_free(p); }
#else
#include <stdlib.h>
void *pt_malloc(size_t n) { return malloc(n); }
void *pt_realloc(void *p, size_t n) { return realloc(p, n); }
void pt_free(void *p) { free(p); }
#endif
