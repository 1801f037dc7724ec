/* The staging ring (pt_timers_set_staging): where a timer is filed, when
 * it reaches the heap, what a stop does there, and that the heap's other
 * operations (adjust, move, destroy) take staged timers with them. The
 * clock is driven by hand: every check passes its own now. */
#include <stdlib.h>

#include "base/rng.h"
#include "pheap/stage.h"
#include "util.h"

#define SLOT ((pt_nanos)1 << 20) /* 1.05 ms */
#define T0 (1000 * SLOT)         /* the first check's now: a slot boundary */

static bool staged(const pt_timer *t)
{
    return pt__staged_index(t->heap_index);
}

/* A staged heap with `count` counting timers whose ring starts at T0. */
static void staged_timers(pt_timers *ts, pt_timer *t, int count, int *n, struct wakes *w)
{
    counting_timers_woken(ts, t, count, n, w);
    CHECK_EQ(pt_timers_set_staging(ts, SLOT), 0);
    CHECK_EQ(pt_timers_check(ts, T0, true, NULL), 0); /* the ring starts here */
}

void test_staged_timer_waits_in_the_ring_until_its_slot_begins(void)
{
    pt_timers ts;
    pt_timer t[1];
    int n = 0;
    staged_timers(&ts, t, 1, &n, NULL);
    pt_nanos when = T0 + 10 * SLOT + SLOT / 2;
    CHECK_EQ(pt_timer_start(&ts, &t[0], when, 0), 0);
    CHECK(staged(&t[0]));
    CHECK_EQ(ts.heap.len, 0);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_EQ(pt_timers_next(&ts), T0 + 10 * SLOT); /* its slot's start */
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, T0 + 10 * SLOT - 1, true, NULL), 0);
    CHECK(staged(&t[0]));
    pt_nanos next = 0;
    CHECK_EQ(pt_timers_check(&ts, T0 + 10 * SLOT, true, &next), 0);
    CHECK(!staged(&t[0])); /* in the heap now, under its own key */
    CHECK_EQ(heap_key(&t[0]), when);
    CHECK_EQ(next, when);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, when - 1, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, when, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_STATUS(&t[0], PT_TIMER_NOSTATUS);
    teardown(&ts, t, 1);
}

void test_timers_too_near_too_far_or_before_any_check_go_to_the_heap(void)
{
    pt_timers ts;
    pt_timer t[4];
    int n = 0;
    counting_timers(&ts, t, 4, &n);
    CHECK_EQ(pt_timers_set_staging(&ts, SLOT), 0);
    /* no check has read a clock: nothing to measure "far" from */
    CHECK_EQ(pt_timer_start(&ts, &t[0], T0 + 10 * SLOT, 0), 0);
    CHECK(!staged(&t[0]));
    CHECK_EQ(pt_timers_check(&ts, T0, true, NULL), 0);
    CHECK_EQ(pt_timer_start(&ts, &t[1], T0 + SLOT + SLOT / 2, 0), 0); /* the next slot */
    CHECK_EQ(pt_timer_start(&ts, &t[2], T0 + 64 * SLOT, 0), 0);       /* past the ring */
    CHECK_EQ(pt_timer_start(&ts, &t[3], -1, 0), 0);                   /* never */
    for (int i = 1; i < 4; i++)
        CHECK(!staged(&t[i]));
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 4);
}

void test_stop_of_staged_timer_unlinks_it_at_once(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    staged_timers(&ts, t, 2, &n, NULL);
    CHECK_EQ(pt_timer_start(&ts, &t[0], T0 + 5 * SLOT, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &t[1], T0 + 5 * SLOT + 1, 0), 0);
    CHECK(staged(&t[0]) && staged(&t[1]));
    /* t[0] is not its slot's last entry: t[1] takes its place */
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_STATUS(&t[0], PT_TIMER_REMOVED);
    CHECK_EQ(heap_of(&t[0]), NULL);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timer_stop(&t[0]), 0);
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_next(&ts), 0); /* an empty ring asks for no check */
    CHECK_VERIFIED(&ts, true);
    /* a Removed timer starts again as any other */
    CHECK_EQ(pt_timer_start(&ts, &t[0], T0 + 7 * SLOT, 0), 0);
    CHECK(staged(&t[0]));
    CHECK_EQ(pt_timers_check(&ts, T0 + 7 * SLOT, true, NULL), 1);
    CHECK_EQ(n, 1);
    teardown(&ts, t, 2);
}

void test_stop_with_the_heap_lock_held_is_lazy_and_the_slot_drops_it(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    staged_timers(&ts, t, 2, &n, NULL);
    CHECK_EQ(pt_timer_start(&ts, &t[0], T0 + 5 * SLOT, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &t[1], T0 + 5 * SLOT + 1, 0), 0);
    pt__lock(&ts.lock); /* what another thread's check would hold */
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    pt__unlock(&ts.lock);
    CHECK_STATUS(&t[0], PT_TIMER_DELETED);
    CHECK(staged(&t[0]));
    CHECK_EQ(pt_timers_deleted(&ts), 1);
    CHECK_VERIFIED(&ts, true);
    /* its slot begins: dropped, not moved into the heap */
    CHECK_EQ(pt_timers_check(&ts, T0 + 5 * SLOT + 1, true, NULL), 1);
    CHECK_STATUS(&t[0], PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(n, 1); /* t[1] only */
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 2);
}

void test_eager_stop_unlinks_a_heap_entry_but_leaves_the_head(void)
{
    pt_timers ts;
    pt_timer t[3];
    int n = 0;
    staged_timers(&ts, t, 3, &n, NULL);
    for (int i = 0; i < 3; i++) /* past the ring: in the heap */
        CHECK_EQ(pt_timer_start(&ts, &t[i], T0 + (100 + i) * SLOT, 0), 0);
    CHECK_EQ(pt_timer_stop(&t[2]), 1);
    CHECK_STATUS(&t[2], PT_TIMER_REMOVED);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_STATUS(&t[0], PT_TIMER_DELETED); /* the head: the next arm overwrites it */
    CHECK_EQ(pt_timers_len(&ts), 2);
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 3);
}

void test_staged_timer_modified_earlier_or_later_fires_at_its_new_time(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    staged_timers(&ts, t, 2, &n, NULL);
    CHECK_EQ(pt_timer_start(&ts, &t[0], T0 + 10 * SLOT, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &t[1], T0 + 10 * SLOT, 0), 0);
    CHECK_EQ(pt_timer_reset(&ts, &t[0], T0 + 3 * SLOT), 1);
    CHECK_EQ(pt_timer_reset(&ts, &t[1], T0 + 20 * SLOT), 1);
    CHECK_STATUS(&t[0], PT_TIMER_MODIFIED_EARLIER);
    CHECK_STATUS(&t[1], PT_TIMER_MODIFIED_LATER);
    CHECK_EQ(pt_timers_next(&ts), T0 + 3 * SLOT);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, T0 + 3 * SLOT, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_STATUS(&t[0], PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_check(&ts, T0 + 10 * SLOT, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, T0 + 20 * SLOT - 1, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, T0 + 20 * SLOT, true, NULL), 1);
    CHECK_EQ(n, 2);
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 2);
}

void test_first_staged_timer_wakes_the_owner_for_its_slot(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    struct wakes w = {0};
    staged_timers(&ts, t, 2, &n, &w);
    CHECK_EQ(pt_timer_start(&ts, &t[0], T0 + 10 * SLOT + 5, 0), 0);
    CHECK_EQ(w.calls, 1);
    CHECK_EQ(w.when, T0 + 10 * SLOT);
    CHECK_EQ(pt_timer_start(&ts, &t[1], T0 + 12 * SLOT, 0), 0); /* later: no wake */
    CHECK_EQ(w.calls, 1);
    teardown(&ts, t, 2);
}

void test_move_and_destroy_take_staged_timers_along(void)
{
    pt_timers src, dst;
    pt_timer t[3];
    int n = 0;
    staged_timers(&src, t, 3, &n, NULL);
    CHECK_EQ(pt_timers_init(&dst, NULL, NULL), 0);
    CHECK_EQ(pt_timer_start(&src, &t[0], T0 + 4 * SLOT, 0), 0);
    CHECK_EQ(pt_timer_start(&src, &t[1], T0 + 5 * SLOT, 0), 0);
    CHECK_EQ(pt_timer_start(&src, &t[2], T0 + 6 * SLOT, 0), 0);
    pt__lock(&src.lock);
    CHECK_EQ(pt_timer_stop(&t[2]), 1); /* lazy: left Deleted in the ring */
    pt__unlock(&src.lock);
    CHECK_EQ(pt_timers_move(&dst, &src), 0);
    CHECK_EQ(pt_timers_len(&src), 0);
    CHECK_EQ(pt_timers_len(&dst), 2);
    CHECK_STATUS(&t[2], PT_TIMER_REMOVED);
    CHECK_EQ(heap_of(&t[0]), &dst);
    CHECK_VERIFIED(&src, true);
    CHECK_VERIFIED(&dst, true);
    CHECK_EQ(pt_timers_check(&dst, T0 + 5 * SLOT, true, NULL), 2);
    CHECK_EQ(n, 2);
    /* destroy unlinks a stopped staged timer and frees the ring */
    CHECK_EQ(pt_timer_start(&src, &t[0], T0 + 8 * SLOT, 0), 0);
    CHECK(staged(&t[0]));
    pt__lock(&src.lock);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    pt__unlock(&src.lock);
    CHECK_EQ(pt_timers_destroy(&src), 0);
    CHECK_STATUS(&t[0], PT_TIMER_REMOVED);
    teardown(&dst, t, 3);
}

/* Random arms, stops and re-arms against a list of what must fire when:
 * each pending timer fires exactly once, never before its time and at
 * the first check at or after it; a stopped one never. */
void test_staged_heap_fires_what_a_plain_heap_would(void)
{
    enum { N = 2000, STEPS = 20000 };
    pt_timers ts;
    pt_timer *t = calloc(N, sizeof *t);
    pt_nanos *due = calloc(N, sizeof *due); /* 0: not pending */
    int *fired = calloc(N, sizeof *fired);
    CHECK(t && due && fired);
    pt_timers_init(&ts, NULL, NULL);
    CHECK_EQ(pt_timers_set_staging(&ts, SLOT), 0);
    for (int i = 0; i < N; i++)
        pt_timer_init(&t[i], count_cb, &fired[i]);
    uint64_t rng = 12345;
    pt_nanos now = T0;
    for (int step = 0; step < STEPS; step++) {
        uint64_t r = pt__xorshift64(&rng);
        int i = (int)(r % N);
        switch (r >> 32 & 3) {
        case 0:
        case 1: { /* arm (modify) from 0 to 80 slots ahead */
            pt_nanos when = now + (pt_nanos)((r >> 8) % (80 * (uint64_t)SLOT));
            int ret = pt_timer_modify(&ts, &t[i], when, 0, count_cb, &fired[i], 0);
            CHECK_EQ(ret, due[i] != 0);
            due[i] = when;
            break;
        }
        case 2:
            CHECK_EQ(pt_timer_stop(&t[i]), due[i] != 0);
            due[i] = 0;
            break;
        default: { /* time passes, up to two slots */
            now += (pt_nanos)((r >> 8) % (2 * (uint64_t)SLOT));
            pt_timers_check(&ts, now, true, NULL);
            for (int k = 0; k < N; k++) {
                if (due[k] && due[k] <= now) {
                    CHECK_EQ(fired[k], 1);
                    fired[k] = 0;
                    due[k] = 0;
                }
                CHECK_EQ(fired[k], 0);
            }
            if (step % 64 == 3)
                CHECK_VERIFIED(&ts, true);
        }
        }
    }
    teardown(&ts, t, N);
    free(t);
    free(due);
    free(fired);
}
