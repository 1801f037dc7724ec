/* A log-linear histogram of nanosecond values (16 sub-buckets per power of
 * two: about 6% resolution), safe to record into from any thread. */
#ifndef PTBENCH_HIST_H
#define PTBENCH_HIST_H

#include <stdatomic.h>
#include <stdint.h>

#define HIST_SUB 16
#define HIST_BUCKETS (64 * HIST_SUB)

struct hist {
    atomic_ulong n[HIST_BUCKETS];
    atomic_ulong count;
    atomic_long max;
    atomic_long sum;
};

static inline int hist_bucket(uint64_t v)
{
    if (v < HIST_SUB)
        return (int)v;
    int e = 63 - __builtin_clzll(v); /* >= 4 */
    int sub = (int)((v >> (e - 4)) & (HIST_SUB - 1));
    return (e - 3) * HIST_SUB + sub;
}

/* The smallest value of bucket b, and of the next one. */
static inline uint64_t hist_low(int b)
{
    if (b < HIST_SUB)
        return (uint64_t)b;
    int e = b / HIST_SUB + 3, sub = b % HIST_SUB;
    return ((uint64_t)(HIST_SUB + sub)) << (e - 4);
}

static inline void hist_record(struct hist *h, int64_t v)
{
    if (v < 0)
        v = 0; /* early: counted as on time, and as such by min */
    atomic_fetch_add_explicit(&h->n[hist_bucket((uint64_t)v)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
    long m = atomic_load_explicit(&h->max, memory_order_relaxed);
    while (v > m && !atomic_compare_exchange_weak_explicit(&h->max, &m, v, memory_order_relaxed,
                                                           memory_order_relaxed))
        ;
}

/* hist_record for a histogram that one writer (a thread, or a G) fills
 * alone, merged once it is done: relaxed loads and stores, no locked
 * instruction. A sleeping G records every 50 us; a locked add on a line
 * every P shares would be part of what is measured. */
static inline void hist_record_local(struct hist *h, int64_t v)
{
    if (v < 0)
        v = 0;
    atomic_ulong *b = &h->n[hist_bucket((uint64_t)v)];
    atomic_store_explicit(b, atomic_load_explicit(b, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&h->count, atomic_load_explicit(&h->count, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&h->sum, atomic_load_explicit(&h->sum, memory_order_relaxed) + v,
                          memory_order_relaxed);
    if (v > atomic_load_explicit(&h->max, memory_order_relaxed))
        atomic_store_explicit(&h->max, v, memory_order_relaxed);
}

/* Add every value recorded in `from` to `into` (both quiet). */
static inline void hist_merge(struct hist *into, const struct hist *from)
{
    struct hist *f = (struct hist *)from;
    for (int b = 0; b < HIST_BUCKETS; b++)
        atomic_fetch_add_explicit(&into->n[b], atomic_load(&f->n[b]), memory_order_relaxed);
    atomic_fetch_add_explicit(&into->count, atomic_load(&f->count), memory_order_relaxed);
    atomic_fetch_add_explicit(&into->sum, atomic_load(&f->sum), memory_order_relaxed);
    if (atomic_load(&f->max) > atomic_load(&into->max))
        atomic_store(&into->max, atomic_load(&f->max));
}

/* The p-quantile (0..1), as the middle of its bucket, but never above the
 * largest value recorded; 0 if empty. The cap is for bucket resolution:
 * the top bucket holds the maximum, and when the maximum lies in the
 * lower half of that bucket (a p99 of 20 samples is the 19th, often in
 * the maximum's bucket) the middle reads above it -- 138.4 ms (the
 * middle of [134.2, 142.6] ms) against a maximum of 135.9 ms. Every value
 * in that bucket is at most the maximum, so the quantile is too. */
static inline double hist_quantile(const struct hist *h, double p)
{
    uint64_t total = atomic_load(&((struct hist *)h)->count);
    double max = (double)atomic_load(&((struct hist *)h)->max);
    if (!total)
        return 0;
    uint64_t want = (uint64_t)(p * (double)(total - 1)) + 1, seen = 0;
    for (int b = 0; b < HIST_BUCKETS; b++) {
        seen += atomic_load(&((struct hist *)h)->n[b]);
        if (seen >= want) {
            double mid = (double)(hist_low(b) + hist_low(b + 1)) / 2;
            return mid < max ? mid : max;
        }
    }
    return max;
}

#endif
