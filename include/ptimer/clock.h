/* ptimer: the one clock every part reads.
 *
 * All times are pt_nanos: signed 64-bit nanoseconds of CLOCK_MONOTONIC,
 * never the wall clock (a stepped wall clock would make every deadline
 * meaningless). A negative `when` means "never"; PT_MAXWHEN is that never
 * once normalised.
 */
#ifndef PTIMER_CLOCK_H
#define PTIMER_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the public functions: the shared library is built with hidden
 * visibility, so these are all it exports (its internals stay private
 * and can change without an ABI break). */
#ifndef PT_API
#define PT_API __attribute__((visibility("default")))
#endif

typedef int64_t pt_nanos; /* nanoseconds, CLOCK_MONOTONIC */
#define PT_MAXWHEN INT64_MAX

/* The current CLOCK_MONOTONIC time in nanoseconds. Never goes backwards. */
PT_API pt_nanos pt_nanotime(void);

#ifdef __cplusplus
}
#endif

#endif
