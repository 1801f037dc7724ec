/* The TSC line: pt_nanotime's fast source where the CPU's time-stamp
 * counter is invariant (x86-64 only; everything else reads
 * CLOCK_MONOTONIC). Private to the base layer: clock.c chooses the source,
 * tsc.c calibrates and re-anchors the line, this header reads it.
 *
 * A read maps a counter value onto CLOCK_MONOTONIC nanoseconds with a
 * line anchored at a recent (tsc, ns) pair:
 *
 *     ns = base_ns + ((tsc - base_tsc) * mult) >> 32       (mult: ns/cycle, 32.32)
 *
 * The line is re-anchored every PT__TSC_REFRESH_NS by whichever reader
 * first finds it that old (tsc.c): continuous at the anchor, so time
 * never jumps back, with a slope that steers it onto CLOCK_MONOTONIC
 * again by the next anchor. Readers take no lock and write nothing
 * shared: the three words sit behind a sequence count that is odd only
 * for the few instructions of a re-anchor (a seqlock), and a reader
 * whose count changed reads again.
 */
#ifndef PTIMER_TSC_H
#define PTIMER_TSC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ptimer/clock.h"

#if defined(__x86_64__)
#define PT__HAVE_TSC 1
#endif

/* How old the anchor may get before a reader re-anchors the line (one
 * clock_gettime pair and a few stores every 10 ms: nothing), and the
 * bound that keeps the fast path's 64-bit product from overflowing
 * (d * mult < 2^64 while d is under 2^32 ns: 4.29 s). */
#define PT__TSC_REFRESH_NS 10000000

struct pt__tsc_line {
    /* Odd while a re-anchor writes the words below (tsc.c's
     * reanchor); each re-anchor adds 2. Readers pair their
     * acquire load with the writer's release store. */
    _Atomic uint32_t seq;
    _Atomic uint64_t base_tsc;
    _Atomic int64_t base_ns;
    _Atomic uint64_t mult;
    /* Constant once the line is published (before the clock's state
     * says TSC, with a release store that the reader's acquire load of
     * that state pairs with). */
    uint64_t refresh_cycles;
};

extern struct pt__tsc_line pt__tsc;

/* 0 when the TSC may back pt_nanotime here; else why not: -ENOSYS (not
 * x86-64), -ENOTSUP (the CPU does not say its TSC is invariant),
 * -ENODEV (the kernel does not time CLOCK_MONOTONIC with the TSC; see
 * tsc.c). `forced`: PT_CLOCK=tsc, only the architecture is checked. */
int pt__tsc_probe(int forced);

/* Calibrates the line against CLOCK_MONOTONIC (about 0.5 ms of reads):
 * 0, or -EAGAIN when no clean pair of readings could be had. */
int pt__tsc_calibrate(void);

/* The slow path of a read: the line is older than refresh_cycles (so
 * re-anchor it) or the counter reads before its anchor (another core's
 * counter a little behind: clamp to the anchor). `seq` is the even count
 * the read saw with the line (bt, bn, m). Returns the time, or -1: read
 * again. */
pt_nanos pt__tsc_slow(uint64_t tsc, uint32_t seq, uint64_t bt, int64_t bn, uint64_t m);

/* Tests only: called inside each re-anchor's write, signals held off. */
extern void (*pt__tsc_in_write)(void);

/* Waits until no re-anchor is mid-write: spins a little (the write is a
 * few instructions), then yields, so that a writer preempted inside it
 * gets a CPU back sooner from a reader that would otherwise spin out its
 * time slice. */
void pt__tsc_wait_even(void);

#ifdef PT__HAVE_TSC
/* The counter, ordered after every earlier load (lfence waits for them:
 * a read that happens after another thread's, through any memory
 * handshake, then sees a later counter). Plain rdtsc could run ahead of a
 * load still in flight and return a time from before the handshake;
 * the kernel's vDSO uses the same ordered read for the same reason. */
static inline uint64_t pt__rdtsc_ordered(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* The counter with no fence: it may be read before earlier loads are
 * done, so a little behind the ordered read (pt_nanotime_relaxed). */
static inline uint64_t pt__rdtsc_relaxed(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* The line's time: the counter read ordered (pt_nanotime) or not
 * (pt_nanotime_relaxed); a constant at each call site. */
static inline pt_nanos pt__tsc_read(bool ordered)
{
    for (;;) {
        /* acquire: pairs with the release store that ended the last
         * re-anchor, so the words below are that re-anchor's. */
        uint32_t s1 = atomic_load_explicit(&pt__tsc.seq, memory_order_acquire);
        if (__builtin_expect(s1 & 1, 0)) {
            pt__tsc_wait_even(); /* a re-anchor is mid-write: a few instructions */
            continue;
        }
        /* acquire (plain loads on x86-64): the second look at seq below
         * cannot move above them, and a word a re-anchor stored (with
         * release, after its CAS made seq odd) brings that CAS with it,
         * so the second look then sees seq changed. C11's seqlock reader
         * without a fence, which ThreadSanitizer does not model. */
        uint64_t bt = atomic_load_explicit(&pt__tsc.base_tsc, memory_order_acquire);
        int64_t bn = atomic_load_explicit(&pt__tsc.base_ns, memory_order_acquire);
        uint64_t m = atomic_load_explicit(&pt__tsc.mult, memory_order_acquire);
        uint64_t t = ordered ? pt__rdtsc_ordered() : pt__rdtsc_relaxed();
        /* The second look at seq must come after the counter is read, or
         * a re-anchor could begin (and read its own, later, counter)
         * between our check and our rdtsc, and a reading past the new
         * anchor would be mapped by the old line. The address of the
         * load depends on t (z is 0, but the CPU cannot know that before
         * t arrives), which orders it. */
        uint64_t z = t;
        __asm__("" : "+r"(z));
        z -= t;
        uint32_t s2 = atomic_load_explicit((_Atomic uint32_t *)((uintptr_t)&pt__tsc.seq + z),
                                           memory_order_relaxed);
        if (s2 != s1)
            continue;
        uint64_t d = t - bt;
        /* d under refresh_cycles (10 ms) keeps d * m far from 2^64. A
         * counter behind the anchor wraps to a huge d and goes slow too. */
        if (d < pt__tsc.refresh_cycles)
            return bn + (pt_nanos)((d * m) >> 32);
        pt_nanos r = pt__tsc_slow(t, s1, bt, bn, m);
        if (r >= 0)
            return r;
    }
}

static inline pt_nanos pt__tsc_now(void)
{
    return pt__tsc_read(true);
}
#endif

#endif
