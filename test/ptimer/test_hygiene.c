/* Heap hygiene: stopped timers do not pile up, and moveTimers carries live
 * timers while dropping dead ones. */
#include <stdlib.h>

#include "harness.h"
#include "ptimer/ptimer.h"
#include "pheap/status.h"

static int order_fired;
static pt_nanos order_last;

static void in_order(void *arg, uintptr_t seq)
{
    (void)arg;
    CHECK((pt_nanos)seq >= order_last);
    order_last = (pt_nanos)seq;
    order_fired++;
}

/* n timers on a fresh ts, due from 1 ms in a shuffled order, that check
 * their firing order (in_order). */
static pt_timer *started_in_order(pt_timers *ts, int n)
{
    pt_timers_init(ts, NULL, NULL);
    pt_timer *t = calloc((size_t)n, sizeof *t);
    CHECK(t);
    for (int i = 0; i < n; i++) {
        pt_timer_init(&t[i], in_order, NULL);
        CHECK_EQ(pt_timer_start(ts, &t[i], 1000000 + (i * 7919) % n, 0), 0);
    }
    return t;
}

void test_owner_check_compacts_after_ninety_percent_stopped(void)
{
    enum { N = 20000 };
    pt_timers ts;
    pt_timer *t = started_in_order(&ts, N);
    for (int i = 0; i < N; i++)
        if (i % 10 != 0)
            CHECK_EQ(pt_timer_stop(&t[i]), 1);
    CHECK_EQ(pt_timers_len(&ts), N); /* lazy: still there */
    /* A non-owner check leaves them (only the owner compacts)... */
    CHECK_EQ(pt_timers_check(&ts, 10, false, NULL), 0);
    CHECK_EQ(pt_timers_len(&ts), N);
    /* ...the owner's check, with nothing due, clears them in one pass. */
    pt_nanos next = 0;
    CHECK_EQ(pt_timers_check(&ts, 10, true, &next), 0);
    CHECK(pt_timers_len(&ts) <= N / 10 + 8);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(next, 1000000); /* t[0], the earliest survivor */
    for (int i = 0; i < N; i++)
        CHECK(pt_timer_status(&t[i]) ==
              (i % 10 ? PT_TIMER_REMOVED : PT_TIMER_WAITING));
    order_last = 0;
    order_fired = 0;
    CHECK_EQ(pt_timers_check(&ts, 2000000, true, NULL), N / 10);
    CHECK_EQ(order_fired, N / 10);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    free(t);
}

/* Past a quarter stopped but not half, the owner's check unlinks a bounded
 * slice (a sweep from where the last one stopped) instead of compacting
 * the whole heap: no check stalls its P for a whole-heap pass, and a
 * series of checks still brings the stopped share back under a quarter. */
void test_owner_check_sweeps_a_bounded_slice_past_a_quarter(void)
{
    enum { N = 40000 };
    pt_timers ts;
    pt_timer *t = started_in_order(&ts, N);
    int stopped = 0;
    for (int i = 0; i < N; i++)
        if (i % 10 < 4) /* 40%: more than a quarter, not half */
            stopped += pt_timer_stop(&t[i]);
    CHECK_EQ(stopped, N * 4 / 10);
    /* One check with nothing due: at most one budget's worth is examined,
     * so at most that many unlinked; the heap is still consistent. */
    CHECK_EQ(pt_timers_check(&ts, 10, true, NULL), 0);
    uint32_t after_one = pt_timers_deleted(&ts);
    CHECK(after_one < (uint32_t)stopped);
    CHECK(after_one >= (uint32_t)stopped - PT__SWEEP_BUDGET);
    CHECK_EQ(pt_timers_len(&ts), (size_t)(N - stopped + after_one));
    CHECK_VERIFIED(&ts, true);
    /* More checks: each unlinks more, until no more than a quarter is left
     * (then checks stay lock-free and unlink nothing). */
    int checks = 1;
    while (pt_timers_deleted(&ts) > pt_timers_len(&ts) / 4) {
        uint32_t before = pt_timers_deleted(&ts);
        CHECK_EQ(pt_timers_check(&ts, 10, true, NULL), 0);
        CHECK(pt_timers_deleted(&ts) < before);
        CHECK_VERIFIED(&ts, true);
        CHECK(++checks < N);
    }
    CHECK(checks > 1);
    size_t len = pt_timers_len(&ts);
    CHECK_EQ(pt_timers_check(&ts, 10, true, NULL), 0);
    CHECK_EQ(pt_timers_len(&ts), len);
    /* Every live timer still fires, in order; the rest never do. */
    order_last = 0;
    order_fired = 0;
    CHECK_EQ(pt_timers_check(&ts, 2000000, true, NULL), N - stopped);
    CHECK_EQ(order_fired, N - stopped);
    for (int i = 0; i < N; i++)
        if (i % 10 < 4)
            CHECK(pt_timer_status(&t[i]) == PT_TIMER_REMOVED); /* unlinked by now */
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    free(t);
}

static void record_seq(void *arg, uintptr_t seq)
{
    in_order(arg, seq);
}

void test_move_carries_live_timers_and_drops_deleted(void)
{
    enum { N = 3000 };
    pt_timers src, dst;
    pt_timers_init(&src, NULL, NULL);
    pt_timers_init(&dst, NULL, NULL);
    pt_timer *t = calloc(N, sizeof *t);
    CHECK(t);
    int live = 0;
    for (int i = 0; i < N; i++) {
        pt_nanos when = 1000 + (i * 7919) % N;
        pt_timer_init(&t[i], record_seq, NULL);
        /* seq carries the time it must fire at, to check the order */
        CHECK_EQ(pt_timer_modify(i % 5 == 4 ? &dst : &src, &t[i], when, 0, record_seq, NULL,
                                 (uintptr_t)when),
                 0);
    }
    for (int i = 0; i < N; i++) {
        if (i % 5 == 4) {
            live++; /* already on dst */
        } else if (i % 5 == 0) {
            CHECK_EQ(pt_timer_stop(&t[i]), 1); /* Deleted: dropped by move */
        } else if (i % 5 == 1) {
            pt_nanos when = 500 + i % 100; /* ModifiedEarlier: moves re-keyed */
            CHECK_EQ(pt_timer_modify(&dst, &t[i], when, 0, record_seq, NULL, (uintptr_t)when), 1);
            CHECK_EQ(pt_timer_status(&t[i]), PT_TIMER_MODIFIED_EARLIER);
            live++;
        } else {
            live++;
        }
    }
    CHECK_EQ(pt_timers_move(&dst, &src), 0);
    CHECK_EQ(pt_timers_len(&src), 0);
    CHECK_EQ(pt_timers_next(&src), 0);
    CHECK_EQ(pt_timers_len(&dst), live);
    CHECK_VERIFIED(&dst, true);
    for (int i = 0; i < N; i++)
        CHECK(pt_timer_status(&t[i]) == (i % 5 == 0 ? PT_TIMER_REMOVED : PT_TIMER_WAITING));
    order_last = 0;
    order_fired = 0;
    CHECK_EQ(pt_timers_check(&dst, 100000, true, NULL), live);
    CHECK_EQ(order_fired, live);
    CHECK_EQ(pt_timers_destroy(&src), 0);
    CHECK_EQ(pt_timers_destroy(&dst), 0);
    free(t);
}
