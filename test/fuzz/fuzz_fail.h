/* The fuzz targets' failure report: the target, the operation it had
 * reached, and what differed from the reference; then abort, which
 * libFuzzer (and the replay tests) turn into a kept input. */
#ifndef PT_FUZZ_FAIL_H
#define PT_FUZZ_FAIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((format(printf, 3, 4), noreturn)) static void fuzz_fail(const char *target,
                                                                      size_t op,
                                                                      const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: op %zu: ", target, op);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#endif
