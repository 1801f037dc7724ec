/* What a heap's owner does to its timers' statuses: the clean a start
 * makes at the head, adjust, clear_deleted, run and move, each driven by
 * the `now` passed to check (nothing here sleeps), asserting the statuses
 * and the heap after. */

#include <errno.h>

#include "util.h"

/* ---- clean (on start) ------------------------------------------------- */

void test_start_cleans_deleted_timer_at_head(void)
{
    pt_timers ts;
    pt_timer t[4];
    int n = 0;
    started_timers(&ts, t, 3, &n, 1000, 1000);
    pt_timer_init(&t[3], count_cb, &n);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    CHECK_EQ(pt_timers_len(&ts), 3);
    /* both Deleted timers are at the head in turn; both go */
    CHECK_EQ(pt_timer_start(&ts, &t[3], 4000, 0), 0);
    CHECK_STATUS(&t[0], PT_TIMER_REMOVED);
    CHECK_STATUS(&t[1], PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&ts), 2);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(pt_timers_next(&ts), 3000);
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 4);
}

void test_start_rekeys_modified_timer_at_head(void)
{
    pt_timers ts;
    pt_timer t[3];
    int n = 0;
    started_timers(&ts, t, 2, &n, 1000, 1000);
    pt_timer_init(&t[2], count_cb, &n);
    CHECK_EQ(pt_timer_reset(&ts, &t[0], 6000), 1);
    CHECK_STATUS(&t[0], PT_TIMER_MODIFIED_LATER);
    CHECK_EQ(heap_key(&t[0]), 1000);
    CHECK_EQ(pt_timer_start(&ts, &t[2], 4000, 0), 0);
    CHECK_STATUS(&t[0], PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t[0]), 6000);
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_EQ(pt_timers_next(&ts), 2000);
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 3);
}

/* The last Deleted head is overwritten by the started timer (one sift, not
 * a pop and a push), and a Deleted second is popped first: the heap ends
 * as a pop-then-push would leave it, and the wake follows Go's rule
 * against the head after the clean. */
void test_start_takes_the_place_of_the_last_deleted_head(void)
{
    pt_timers ts;
    pt_timer t[6];
    int n = 0;
    struct wakes w = {0};
    counting_timers_woken(&ts, t, 6, &n, &w);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pt_timer_start(&ts, &t[i], 1000 * (i + 1), 0), 0);
    CHECK_EQ(w.calls, 1); /* only the first was earlier than the head */
    /* t0 stopped, t1 live: t4 at 1500 takes t0's place at the top, and
     * wakes (1500 is earlier than t1's 2000, the head after the clean). */
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_timer_start(&ts, &t[4], 1500, 0), 0);
    CHECK_STATUS(&t[0], PT_TIMER_REMOVED);
    CHECK(heap_of(&t[0]) == NULL);
    CHECK_EQ(t[4].heap_index, 0);
    CHECK_EQ(pt_timers_len(&ts), 4);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(w.calls, 2);
    CHECK_EQ(w.when, 1500);
    CHECK_VERIFIED(&ts, true);
    /* t4 stopped, t1 live: t0 again, at 2500, sinks below t1 and wakes
     * no one (t1's 2000 is still first). */
    CHECK_EQ(pt_timer_stop(&t[4]), 1);
    CHECK_EQ(pt_timer_start(&ts, &t[0], 2500, 0), 0);
    CHECK_STATUS(&t[4], PT_TIMER_REMOVED);
    CHECK_EQ(heap_key(&t[0]), 2500);
    CHECK_EQ(pt_timers_len(&ts), 4);
    CHECK_EQ(pt_timers_next(&ts), 2000);
    CHECK_EQ(w.calls, 2);
    CHECK_VERIFIED(&ts, true);
    /* t1 and t0 stopped (2000, 2500), t2 moved later: the start pops t1,
     * pops t0 too (its successor t2 needs cleaning), re-keys t2 at the
     * head, then pushes t5 (the head, t3, is live). */
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_timer_reset(&ts, &t[2], 9000), 1);
    CHECK_EQ(pt_timer_start(&ts, &t[5], 3500, 0), 0);
    CHECK_STATUSES(t, PT_TIMER_REMOVED, PT_TIMER_REMOVED, PT_TIMER_WAITING, PT_TIMER_WAITING,
                   PT_TIMER_REMOVED, PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t[2]), 9000);
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(pt_timers_next(&ts), 3500);
    CHECK_EQ(w.calls, 3); /* 3500 is earlier than t3's 4000 */
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 10000, true, NULL), 3);
    CHECK_EQ(n, 3);
    teardown(&ts, t, 6);
}

/* A modified head is re-keyed first, then the stopped head behind it is
 * overwritten; and a stopped head that is the only entry is overwritten
 * as if the heap had emptied: its modified_earliest goes (Go issue 51654)
 * and the wake is decided against an empty heap. */
void test_start_rekeys_then_takes_the_place_of_a_lone_deleted_head(void)
{
    pt_timers ts;
    pt_timer t[4];
    int n = 0;
    struct wakes w = {0};
    counting_timers_woken(&ts, t, 4, &n, &w);
    /* t0 at 1000 moved later to 5000, t1 at 2000 stopped, t2 at 3000 */
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pt_timer_start(&ts, &t[i], 1000 * (i + 1), 0), 0);
    CHECK_EQ(pt_timer_reset(&ts, &t[0], 5000), 1);
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    w.calls = 0;
    CHECK_EQ(pt_timer_start(&ts, &t[3], 2500, 0), 0);
    CHECK_STATUSES(t, PT_TIMER_WAITING, PT_TIMER_REMOVED, PT_TIMER_WAITING, PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t[0]), 5000);
    CHECK_EQ(t[3].heap_index, 0); /* in t1's place, earlier than t2 */
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(w.calls, 1); /* 2500 is earlier than t2's 3000 */
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 4);

    /* One timer, moved earlier (modified_earliest 500) and stopped: the
     * start that overwrites it leaves no trace of the 500. */
    counting_timers_woken(&ts, t, 2, &n, &w);
    CHECK_EQ(pt_timer_start(&ts, &t[0], 1000, 0), 0);
    CHECK_EQ(pt_timer_reset(&ts, &t[0], 500), 1);
    CHECK_EQ(atomic_load(&ts.modified_earliest), 500);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    w.calls = 0;
    CHECK_EQ(pt_timer_start(&ts, &t[1], 800, 0), 0);
    CHECK_STATUS(&t[0], PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_EQ(atomic_load(&ts.modified_earliest), 0);
    CHECK_EQ(pt_timers_next(&ts), 800);
    CHECK_EQ(w.calls, 1); /* the heap was as good as empty */
    CHECK_EQ(w.when, 800);
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, t, 2);
}

/* ---- adjust ----------------------------------------------------------- */

/* Five timers at 10000..50000; t[2] moved earlier to 5000 and then away
 * to 45000 (so nothing is due at 5000, but modified_earliest is), t[3]
 * moved later, t[1] stopped, t[4] moved earlier and stopped. */
static void adjust_setup(pt_timers *ts, pt_timer *t, int *n)
{
    started_timers(ts, t, 5, n, 10000, 10000);
    CHECK_EQ(pt_timer_reset(ts, &t[2], 5000), 1);
    CHECK_EQ(pt_timer_reset(ts, &t[2], 45000), 1);
    CHECK_EQ(pt_timer_reset(ts, &t[3], 60000), 1);
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    CHECK_EQ(pt_timer_reset(ts, &t[4], 7000), 1);
    CHECK_EQ(pt_timer_stop(&t[4]), 1);
    CHECK_STATUSES(t, PT_TIMER_WAITING, PT_TIMER_DELETED, PT_TIMER_MODIFIED_LATER,
                   PT_TIMER_MODIFIED_LATER, PT_TIMER_DELETED);
    CHECK_EQ(atomic_load(&ts->modified_earliest), 5000);
    CHECK_EQ(pt_timers_next(ts), 5000);
    CHECK_EQ(pt_timers_len(ts), 5);
}

void test_check_at_modified_earliest_adjusts_every_modified_and_deleted_timer(void)
{
    pt_timers ts;
    pt_timer t[5];
    int n = 0;
    adjust_setup(&ts, t, &n);
    /* not the owner: this is adjust's work, not clear_deleted's */
    pt_nanos poll = -1;
    CHECK_EQ(pt_timers_check(&ts, 5000, false, &poll), 0);
    CHECK_STATUSES(t, PT_TIMER_WAITING, PT_TIMER_REMOVED, PT_TIMER_WAITING, PT_TIMER_WAITING,
                   PT_TIMER_REMOVED);
    CHECK_EQ(heap_key(&t[2]), 45000);
    CHECK_EQ(heap_key(&t[3]), 60000);
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(atomic_load(&ts.modified_earliest), 0);
    CHECK_EQ(poll, 10000);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(n, 0);
    teardown(&ts, t, 5);
}

void test_check_before_modified_earliest_leaves_modified_timers_alone(void)
{
    pt_timers ts;
    pt_timer t[5], head;
    int n = 0;
    adjust_setup(&ts, t, &n);
    /* nothing due: the lock-free path */
    CHECK_EQ(pt_timers_check(&ts, 4999, false, NULL), 0);
    CHECK_EQ(pt_timers_len(&ts), 5);
    CHECK_STATUS(&t[1], PT_TIMER_DELETED);
    CHECK_STATUS(&t[2], PT_TIMER_MODIFIED_LATER);

    /* a timer due before modified_earliest: the lock is taken and the head
     * runs, but the heap is not adjusted (gated, Go issue 41699) */
    pt_timer_init(&head, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &head, 1000, 0), 0);
    CHECK_EQ(pt_timers_check(&ts, 1000, false, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_STATUS(&head, PT_TIMER_NOSTATUS);
    CHECK_STATUSES(t, PT_TIMER_WAITING, PT_TIMER_DELETED, PT_TIMER_MODIFIED_LATER,
                   PT_TIMER_MODIFIED_LATER, PT_TIMER_DELETED);
    CHECK_EQ(heap_key(&t[2]), 30000);
    CHECK_EQ(heap_key(&t[3]), 40000);
    CHECK_EQ(pt_timers_len(&ts), 5);
    CHECK_EQ(pt_timers_deleted(&ts), 2);
    CHECK_EQ(atomic_load(&ts.modified_earliest), 5000);
    CHECK_VERIFIED(&ts, true);
    /* at modified_earliest it is */
    CHECK_EQ(pt_timers_check(&ts, 5000, false, NULL), 0);
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_STATUS(&t[2], PT_TIMER_WAITING);
    teardown(&ts, t, 5);
}

/* ---- clear_deleted ---------------------------------------------------- */

void test_owner_check_clears_deleted_timers_past_a_quarter(void)
{
    pt_timers ts;
    pt_timer t[9];
    int n = 0;
    started_timers(&ts, t, 9, &n, 1000, 1000);
    /* two of nine is not more than a quarter: nothing to clear, whether
     * the check stays lock-free (nothing due) ... */
    CHECK_EQ(pt_timer_stop(&t[5]), 1);
    CHECK_EQ(pt_timer_stop(&t[6]), 1);
    CHECK_EQ(pt_timers_check(&ts, 500, true, NULL), 0);
    CHECK_EQ(pt_timers_len(&ts), 9);
    /* ... or runs t[0] under the lock, leaving two of eight */
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 1);
    CHECK_EQ(pt_timers_len(&ts), 8);
    CHECK_STATUS(&t[5], PT_TIMER_DELETED);
    CHECK_STATUS(&t[6], PT_TIMER_DELETED);
    /* three of eight is */
    CHECK_EQ(pt_timer_stop(&t[7]), 1);
    CHECK_EQ(pt_timers_check(&ts, 1500, true, NULL), 0);
    CHECK_EQ(pt_timers_len(&ts), 5);
    for (int i = 5; i < 8; i++) {
        CHECK_STATUS(&t[i], PT_TIMER_REMOVED);
        CHECK(heap_of(&t[i]) == NULL);
    }
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 9000, true, NULL), 5);
    CHECK_EQ(n, 6);
    teardown(&ts, t, 9);
}

void test_non_owner_check_leaves_deleted_timers_in_heap(void)
{
    pt_timers ts;
    pt_timer t[8];
    int n = 0;
    started_timers(&ts, t, 8, &n, 1000, 1000);
    for (int i = 4; i < 8; i++)
        CHECK_EQ(pt_timer_stop(&t[i]), 1);
    CHECK_EQ(pt_timers_check(&ts, 500, false, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 1000, false, NULL), 1); /* takes the lock */
    CHECK_EQ(pt_timers_len(&ts), 7);
    for (int i = 4; i < 8; i++)
        CHECK_STATUS(&t[i], PT_TIMER_DELETED);
    CHECK_EQ(pt_timers_deleted(&ts), 4);
    CHECK_VERIFIED(&ts, true);
    /* the owner then does it */
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 0);
    CHECK_EQ(pt_timers_len(&ts), 3);
    teardown(&ts, t, 8);
}

/* ---- run -------------------------------------------------------------- */

void test_check_leaves_timer_not_yet_due_waiting(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    started_timers(&ts, t, 2, &n, 1000, 1000);
    pt_nanos poll = 0;
    CHECK_EQ(pt_timers_check(&ts, 999, true, &poll), 0);
    CHECK_EQ(poll, 1000);
    /* through the lock: t[0] runs, t[1] stays */
    CHECK_EQ(pt_timers_check(&ts, 1999, true, &poll), 1);
    CHECK_EQ(poll, 2000);
    CHECK_STATUS(&t[1], PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t[1]), 2000);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_EQ(n, 1);
    teardown(&ts, t, 2);
}

struct probe {
    pt_timers *ts;
    pt_timer *t;
    int calls;
    uint32_t status;
    size_t len;
    pt_nanos when, next;
    pt_timers *heap;
};

static void probe_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct probe *p = arg;
    p->calls++;
    p->status = pt_timer_status(p->t);
    p->len = pt_timers_len(p->ts);
    p->when = p->t->when;
    p->next = pt_timers_next(p->ts);
    p->heap = heap_of(p->t);
}

/* Runs p->t once on p->ts (initialised): its callback cb, on p, started at
 * 1000 with `period`, and a check at `now` that runs just it. */
static void run_once(struct probe *p, pt_func cb, pt_nanos period, pt_nanos now)
{
    pt_timer_init(p->t, cb, p);
    CHECK_EQ(pt_timer_start(p->ts, p->t, 1000, period), 0);
    CHECK_EQ(pt_timers_check(p->ts, now, true, NULL), 1);
    CHECK_EQ(p->calls, 1);
}

void test_one_shot_is_nostatus_and_out_of_heap_before_its_callback(void)
{
    pt_timers ts;
    pt_timer t, other;
    int n = 0;
    struct probe p = {.ts = &ts, .t = &t};
    started_timers(&ts, &other, 1, &n, 3000, 0);
    run_once(&p, probe_cb, 0, 1500);
    CHECK_EQ(p.status, PT_TIMER_NOSTATUS);
    CHECK_EQ(p.len, 1);
    CHECK(p.heap == NULL);
    CHECK_EQ(p.next, 3000);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_check(&ts, 2999, true, NULL), 0);
    CHECK_EQ(p.calls, 1);
    CHECK_EQ(n, 0);
    CHECK_EQ(pt_timer_stop_sync(&other), 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_ticker_is_waiting_at_next_when_before_its_callback(void)
{
    pt_timers ts;
    pt_timer t;
    struct probe p = {.ts = &ts, .t = &t};
    pt_timers_init(&ts, NULL, NULL);
    run_once(&p, probe_cb, 250, 1000);
    CHECK_EQ(p.status, PT_TIMER_WAITING);
    CHECK_EQ(p.len, 1);
    CHECK(p.heap == &ts);
    CHECK_EQ(p.when, 1250);
    CHECK_EQ(p.next, 1250);
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t), 1250);
    CHECK_EQ(pt_timers_check(&ts, 1249, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 1250, true, NULL), 1);
    CHECK_EQ(p.when, 1500);
    CHECK_EQ(p.calls, 2);
    teardown(&ts, &t, 1);
}

void test_run_rekeys_modified_timer_at_head_without_firing_it(void)
{
    pt_timers ts;
    pt_timer t[3];
    int n = 0;
    counting_timers(&ts, t, 3, &n);
    CHECK_EQ(pt_timer_start(&ts, &t[0], 1000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &t[1], 1100, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &t[2], 5000, 0), 0);
    /* t[0]: ModifiedLater. t[1]: later, then back a little: ModifiedEarlier
     * (earlier than its last when, not than its key), and modified_earliest
     * (2000) is after now, so only run, not adjust, looks at them. */
    CHECK_EQ(pt_timer_reset(&ts, &t[0], 3000), 1);
    CHECK_EQ(pt_timer_reset(&ts, &t[1], 4000), 1);
    CHECK_EQ(pt_timer_reset(&ts, &t[1], 2000), 1);
    CHECK_STATUS(&t[0], PT_TIMER_MODIFIED_LATER);
    CHECK_STATUS(&t[1], PT_TIMER_MODIFIED_EARLIER);
    CHECK_EQ(atomic_load(&ts.modified_earliest), 2000);
    CHECK_EQ(pt_timers_check(&ts, 1100, false, NULL), 0);
    CHECK_STATUS(&t[0], PT_TIMER_WAITING);
    CHECK_STATUS(&t[1], PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t[0]), 3000);
    CHECK_EQ(heap_key(&t[1]), 2000);
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_EQ(n, 0);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 3000, false, NULL), 2);
    teardown(&ts, t, 3);
}

void test_run_removes_deleted_timer_at_head(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    started_timers(&ts, t, 2, &n, 1000, 1000);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    /* not the owner, one deleted of two: only run can remove it */
    CHECK_EQ(pt_timers_check(&ts, 1000, false, NULL), 0);
    CHECK_STATUS(&t[0], PT_TIMER_REMOVED);
    CHECK(heap_of(&t[0]) == NULL);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(pt_timers_next(&ts), 2000);
    CHECK_EQ(n, 0);
    teardown(&ts, t, 2);
}

/* ---- move ------------------------------------------------------------- */

void test_move_takes_live_timers_as_waiting_and_drops_deleted(void)
{
    pt_timers src, dst;
    struct wakes w = {0};
    pt_timer t[6], d;
    int n = 0;
    started_timers(&src, t, 6, &n, 5000, 1000);
    pt_timers_init(&dst, wake_cb, &w);
    pt_timer_init(&d, count_cb, &n);
    CHECK_EQ(pt_timer_start(&dst, &d, 4000, 0), 0);
    w.calls = 0;
    /* t[0] Waiting, t[1] ModifiedEarlier, t[2] ModifiedLater, t[3] Deleted,
     * t[4] moved earlier then stopped, t[5] Waiting */
    CHECK_EQ(pt_timer_reset(&src, &t[1], 4500), 1);
    CHECK_EQ(pt_timer_reset(&src, &t[2], 20000), 1);
    CHECK_EQ(pt_timer_stop(&t[3]), 1);
    CHECK_EQ(pt_timer_reset(&src, &t[4], 100), 1);
    CHECK_EQ(pt_timer_stop(&t[4]), 1);

    CHECK_EQ(pt_timers_move(&dst, &src), 0);
    CHECK_EQ(pt_timers_len(&src), 0);
    CHECK_EQ(pt_timers_next(&src), 0);
    CHECK_EQ(pt_timers_deleted(&src), 0);
    CHECK_EQ(pt_timers_len(&dst), 5);
    const int live[] = {0, 1, 2, 5};
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(&t[live[i]], PT_TIMER_WAITING);
        CHECK(heap_of(&t[live[i]]) == &dst);
        CHECK_EQ(heap_key(&t[live[i]]), t[live[i]].when);
    }
    CHECK_EQ(heap_key(&t[1]), 4500);
    CHECK_EQ(heap_key(&t[2]), 20000);
    CHECK_STATUS(&t[3], PT_TIMER_REMOVED);
    CHECK_STATUS(&t[4], PT_TIMER_REMOVED);
    CHECK(heap_of(&t[3]) == NULL);
    CHECK(heap_of(&t[4]) == NULL);
    CHECK_VERIFIED(&src, true);
    CHECK_VERIFIED(&dst, true);
    CHECK_EQ(w.calls, 0); /* 4000 was already dst's earliest */

    CHECK_EQ(pt_timers_check(&src, 100000, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&dst, 4500, true, NULL), 2);
    CHECK_EQ(pt_timers_check(&dst, 100000, true, NULL), 3);
    CHECK_EQ(n, 5);
    CHECK_EQ(pt_timers_destroy(&src), 0);
    CHECK_EQ(pt_timers_destroy(&dst), 0);
}

void test_move_wakes_dst_only_when_it_gains_an_earlier_timer(void)
{
    pt_timers src, dst;
    struct wakes w = {0};
    pt_timer t[3];
    int n = 0;
    counting_timers(&src, t, 3, &n);
    pt_timers_init(&dst, wake_cb, &w);
    CHECK_EQ(pt_timer_start(&dst, &t[0], 5000, 0), 0);
    CHECK_EQ(w.calls, 1);
    w.calls = 0;

    /* later than dst's earliest: no wake */
    CHECK_EQ(pt_timer_start(&src, &t[1], 6000, 0), 0);
    CHECK_EQ(pt_timers_move(&dst, &src), 0);
    CHECK_EQ(w.calls, 0);
    /* earlier: one wake, with the new earliest */
    CHECK_EQ(pt_timer_start(&src, &t[2], 3000, 0), 0);
    CHECK_EQ(pt_timers_move(&dst, &src), 0);
    CHECK_EQ(w.calls, 1);
    CHECK_EQ(w.when, 3000);
    /* an empty src: nothing gained, no wake */
    CHECK_EQ(pt_timers_move(&dst, &src), 0);
    CHECK_EQ(w.calls, 1);
    CHECK_EQ(pt_timers_len(&dst), 3);
    CHECK_EQ(pt_timers_check(&dst, 6000, true, NULL), 3);
    CHECK_EQ(n, 3);
    CHECK_EQ(pt_timers_destroy(&src), 0);
    CHECK_EQ(pt_timers_destroy(&dst), 0);
}


static void destroy_own_heap_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct probe *p = arg;
    p->calls++;
    p->status = (uint32_t)-pt_timers_destroy(p->ts);
}

void test_destroy_from_a_callback_of_the_heap_returns_ebusy(void)
{
    pt_timers ts;
    pt_timer t;
    struct probe p = {.ts = &ts, .t = &t};
    pt_timers_init(&ts, NULL, NULL);
    run_once(&p, destroy_own_heap_cb, 0, 1000);
    CHECK_EQ(p.status, EBUSY); /* the heap was empty, but a callback ran */
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}
