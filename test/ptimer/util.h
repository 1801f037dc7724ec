/* Helpers shared by the ptimer tests: counting callbacks, a heap of
 * counting timers, white-box looks at where a timer is filed, and the
 * teardown every heap test ends with. */
#ifndef PT_TEST_PTIMER_UTIL_H
#define PT_TEST_PTIMER_UTIL_H

#include <stdatomic.h>
#include <stdint.h>

#include "harness.h"
#include "ptimer/ptimer.h"
#include "base/heap4.h"
#include "pheap/status.h"

#define SECOND ((pt_nanos)1000000000)

#define CHECK_STATUS(t, s) CHECK_EQ(pt_timer_status(t), (s))

/* CHECK_STATUS of t[0], t[1], ... in turn: CHECK_STATUSES(t, s0, s1, ...). */
#define CHECK_STATUSES(t, ...)                                                                 \
    check_statuses((t), (const uint32_t[]){__VA_ARGS__},                                       \
                   sizeof((const uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t), __FILE__,       \
                   __LINE__)

static inline void check_statuses(const pt_timer *t, const uint32_t *want, size_t count,
                                  const char *file, int line)
{
    for (size_t i = 0; i < count; i++) {
        uint32_t s = pt_timer_status(&t[i]);
        if (s != want[i]) {
            fprintf(stderr, "%s:%d: CHECK_STATUSES failed: t[%zu] is %u, not %u\n", file, line, i,
                    s, want[i]);
            abort();
        }
    }
}

/* A callback that counts its firings in the int at arg. */
static inline void count_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    ++*(int *)arg;
}

/* A heap's wake callback that records how often and for when. */
struct wakes {
    int calls;
    pt_nanos when;
};

static inline void wake_cb(void *ctx, pt_nanos when)
{
    struct wakes *w = ctx;
    w->calls++;
    w->when = when;
}

/* A fresh heap whose wakes are recorded in *w (none if w is NULL) and
 * `count` timers counting into *n. */
static inline void counting_timers_woken(pt_timers *ts, pt_timer *t, int count, int *n,
                                         struct wakes *w)
{
    pt_timers_init(ts, w ? wake_cb : NULL, w);
    for (int i = 0; i < count; i++)
        pt_timer_init(&t[i], count_cb, n);
}

/* The same without a wake callback. */
static inline void counting_timers(pt_timers *ts, pt_timer *t, int count, int *n)
{
    counting_timers_woken(ts, t, count, n, NULL);
}

/* The same, with every timer started as a one-shot, t[i] at first + i * step. */
static inline void started_timers(pt_timers *ts, pt_timer *t, int count, int *n, pt_nanos first,
                                  pt_nanos step)
{
    counting_timers(ts, t, count, n);
    for (int i = 0; i < count; i++)
        CHECK_EQ(pt_timer_start(ts, &t[i], first + i * step, 0), 0);
}

/* The heap a timer is filed in (white-box), or NULL. */
static inline pt_timers *heap_of(const pt_timer *t) { return st_heap(st_word(t)); }

/* Overwrite a timer's status (white-box: what another thread in a
 * transient state, or corruption, would leave), its heap and check kept. */
static inline void force_status(pt_timer *t, uint32_t s)
{
    uint64_t w = atomic_load(&t->state);
    atomic_store(&t->state, (w & ~PT__STATE_STATUS_MASK) | (s & PT__STATE_STATUS_MASK));
}

/* The key a timer is filed under in its heap (not its asked-for when). */
static inline pt_nanos heap_key(const pt_timer *t)
{
    pt_timers *ts = heap_of(t);
    CHECK(ts != NULL);
    CHECK(t->heap_index < ts->heap.len);
    CHECK(ts->heap.v[t->heap_index].item == t);
    return ts->heap.v[t->heap_index].when;
}

/* Unlink every timer and free the heap; the timers may be in any state. */
static inline void teardown(pt_timers *ts, pt_timer *t, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(pt_timer_stop_sync(&t[i]) >= 0);
    CHECK_EQ(pt_timers_len(ts), 0);
    CHECK_VERIFIED(ts, true);
    CHECK_EQ(pt_timers_destroy(ts), 0);
}


#endif
