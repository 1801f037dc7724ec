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

/* The current CLOCK_MONOTONIC time in nanoseconds. Never goes backwards,
 * across threads too: a read that happens after another (through any
 * synchronisation) returns at least as much. */
PT_API pt_nanos pt_nanotime(void);

/* The same clock, without the ordering: a time the clock had reached by
 * the time the call returns, which may trail pt_nanotime() read at the
 * same point by a few nanoseconds (the counter may be read before the
 * caller's earlier loads have completed). For asking whether a deadline
 * has passed, where a read a little behind makes an answer a little
 * late and never early; cheaper where ordering the counter costs (the
 * TSC source's fence). Not for a time handed to another thread. */
PT_API pt_nanos pt_nanotime_relaxed(void);

/* Where pt_nanotime's time comes from, chosen once, at first use, from the
 * environment variable PT_CLOCK: "tsc" (the CPU's time-stamp counter,
 * calibrated against CLOCK_MONOTONIC and kept on it; x86-64 only),
 * "monotonic" (clock_gettime), or unset / "auto": the counter where the
 * CPU says it is invariant and the kernel itself times CLOCK_MONOTONIC
 * with it, else clock_gettime. Either way the time is CLOCK_MONOTONIC's:
 * the counter's line stays within a few microseconds of it. */
enum pt_clock_source {
    PT_CLOCK_MONOTONIC = 0, /* clock_gettime(CLOCK_MONOTONIC) */
    PT_CLOCK_TSC = 1,       /* the time-stamp counter */
};

/* The source pt_nanotime reads (choosing it now if it has not been). */
PT_API enum pt_clock_source pt_clock_source(void);

/* 0 when the source is the one PT_CLOCK asked for (with PT_CLOCK unset:
 * the counter); else why not: -ENOSYS (no counter on this architecture),
 * -ENOTSUP (the CPU does not say its counter is invariant), -ENODEV (the
 * kernel does not time CLOCK_MONOTONIC with it), -EAGAIN (calibration was
 * interrupted every time), -EINVAL (PT_CLOCK names no source; chosen as if
 * unset). */
PT_API int pt_clock_fallback(void);

#ifdef __cplusplus
}
#endif

#endif
