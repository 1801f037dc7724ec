/* Every row of the status table in ptimer.h, driven one at a time: each
 * test names the operation and the row, and asserts the status (and the
 * heap) before and after. The clock is the `now` passed to check, so
 * nothing here sleeps. Transient states that only another thread could
 * hold (Running, Moving, Removing, Modifying) are forced with a store to
 * the status word: white-box, through ptimer/status.h. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* ---- start ------------------------------------------------------------ */

void test_start_of_new_timer_makes_it_waiting_on_that_heap(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    counting_timers(&ts, &t, 1, &n);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);

    CHECK_EQ(pt_timer_start(&ts, &t, 1000, 0), 0);
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK(heap_of(&t) == &ts);
    CHECK_EQ(heap_key(&t), 1000);
    CHECK_EQ(pt_timers_next(&ts), 1000);
    CHECK_VERIFIED(&ts, true);
    teardown(&ts, &t, 1);
    CHECK_EQ(n, 0);
}

void test_start_after_stop_sync_makes_removed_timer_waiting(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    started_timers(&ts, &t, 1, &n, 1000, 0);
    CHECK_EQ(pt_timer_stop_sync(&t), 1);
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&ts), 0);

    CHECK_EQ(pt_timer_start(&ts, &t, 2000, 0), 0);
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_EQ(heap_key(&t), 2000);
    CHECK_EQ(pt_timers_check(&ts, 1999, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(n, 1);
    teardown(&ts, &t, 1);
}

void test_start_of_deleted_timer_revives_it_in_its_old_heap(void)
{
    pt_timers a, b;
    pt_timer t[2];
    int n = 0;
    started_timers(&a, t, 2, &n, 5000, 1);
    pt_timers_init(&b, NULL, NULL);
    /* stopped after both starts: a start cleans a Deleted head */
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(pt_timer_stop(&t[i]), 1);
        CHECK_STATUS(&t[i], PT_TIMER_DELETED);
    }
    CHECK_EQ(pt_timers_len(&a), 2);

    /* start: Deleted -> Modifying -> ModifiedXX, in a, whatever heap is
     * passed; the heap key stays until a's owner re-keys it */
    CHECK_EQ(pt_timer_start(&b, &t[0], 3000, 0), 0);
    CHECK_STATUS(&t[0], PT_TIMER_MODIFIED_EARLIER);
    CHECK_EQ(pt_timer_start(&b, &t[1], 9000, 0), 0);
    CHECK_STATUS(&t[1], PT_TIMER_MODIFIED_LATER);
    for (int i = 0; i < 2; i++) {
        CHECK(heap_of(&t[i]) == &a);
        CHECK_EQ(heap_key(&t[i]), 5000 + i);
    }
    CHECK_EQ(pt_timers_len(&a), 2);
    CHECK_EQ(pt_timers_len(&b), 0);
    CHECK_EQ(pt_timers_next(&a), 3000);
    CHECK_EQ(pt_timers_next(&b), 0);
    /* the deleted count went back down: quiescent verify is exact */
    CHECK_VERIFIED(&a, true);

    CHECK_EQ(pt_timers_check(&b, 9000, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&a, 3000, true, NULL), 1);
    CHECK_EQ(pt_timers_check(&a, 8999, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&a, 9000, true, NULL), 1);
    CHECK_EQ(n, 2);
    teardown(&a, t, 2);
    CHECK_EQ(pt_timers_destroy(&b), 0);
}

/* Three pending timers on a fresh heap, one in each pending status: t[0]
 * Waiting at 5000, t[1] started at 5000 + step and reset to 4000
 * (ModifiedEarlier), t[2] at 5000 + 2 step reset to 6000 (ModifiedLater). */
static void three_pending(pt_timers *ts, pt_timer *t, int *n, pt_nanos step)
{
    started_timers(ts, t, 3, n, 5000, step);
    CHECK_EQ(pt_timer_reset(ts, &t[1], 4000), 1);
    CHECK_EQ(pt_timer_reset(ts, &t[2], 6000), 1);
    CHECK_STATUSES(t, PT_TIMER_WAITING, PT_TIMER_MODIFIED_EARLIER, PT_TIMER_MODIFIED_LATER);
}

void test_start_of_pending_timer_returns_ebusy_and_changes_nothing(void)
{
    pt_timers ts;
    pt_timer t[3];
    int n = 0;
    three_pending(&ts, t, &n, 0);
    const uint32_t want[3] = {PT_TIMER_WAITING, PT_TIMER_MODIFIED_EARLIER, PT_TIMER_MODIFIED_LATER};
    const pt_nanos whens[3] = {5000, 4000, 6000};
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(&t[i], want[i]);
        CHECK_EQ(pt_timer_start(&ts, &t[i], 100, 7), -EBUSY);
        CHECK_STATUS(&t[i], want[i]);
        CHECK_EQ(t[i].when, whens[i]);
        CHECK_EQ(t[i].period, 0);
        CHECK_EQ(heap_key(&t[i]), 5000);
    }
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_EQ(pt_timers_next(&ts), 4000);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 3999, true, NULL), 0);
    CHECK_EQ(n, 0);
    teardown(&ts, t, 3);
}

/* ---- stop ------------------------------------------------------------- */

void test_stop_of_pending_timer_marks_it_deleted_and_returns_one(void)
{
    pt_timers ts;
    pt_timer t[3];
    int n = 0;
    three_pending(&ts, t, &n, 1);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(pt_timer_stop(&t[i]), 1);
        CHECK_STATUS(&t[i], PT_TIMER_DELETED);
        /* lazy: still in its heap, counted as deleted */
        CHECK(heap_of(&t[i]) == &ts);
        CHECK_EQ(pt_timers_deleted(&ts), i + 1);
    }
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 10000, false, NULL), 0);
    CHECK_EQ(n, 0);
    teardown(&ts, t, 3);
}

void test_stop_of_inactive_timer_returns_zero_and_keeps_status(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0;
    pt_timer fresh, ran, deleted, removed;
    pt_timer_init(&fresh, count_cb, &n);
    pt_timer_init(&ran, count_cb, &n);
    pt_timer_init(&deleted, count_cb, &n);
    pt_timer_init(&removed, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &ran, 1000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &deleted, 5000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &removed, 5000, 0), 0);
    CHECK_EQ(pt_timer_stop_sync(&removed), 1);
    CHECK_EQ(pt_timers_check(&ts, 1000, false, NULL), 1);
    CHECK_EQ(pt_timer_stop(&deleted), 1);
    CHECK_EQ(pt_timers_len(&ts), 1);

    struct {
        pt_timer *t;
        uint32_t s;
    } rows[] = {{&fresh, PT_TIMER_NOSTATUS},
                {&ran, PT_TIMER_NOSTATUS},
                {&deleted, PT_TIMER_DELETED},
                {&removed, PT_TIMER_REMOVED}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK_STATUS(rows[i].t, rows[i].s);
        CHECK_EQ(pt_timer_stop(rows[i].t), 0);
        CHECK_STATUS(rows[i].t, rows[i].s);
        CHECK_EQ(pt_timer_stop(rows[i].t), 0);
    }
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_EQ(pt_timers_deleted(&ts), 1);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_timer_stop_sync(&deleted), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_stop_of_removing_timer_returns_zero_without_waiting(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    started_timers(&ts, &t, 1, &n, 1000, 0);
    /* another thread is unlinking it (white-box) */
    force_status(&t, PT_TIMER_REMOVING);
    CHECK_EQ(pt_timer_stop(&t), 0);
    CHECK_STATUS(&t, PT_TIMER_REMOVING);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    force_status(&t, PT_TIMER_WAITING);
    teardown(&ts, &t, 1);
}

/* A thread that calls stop or modify on a timer whose status the test has
 * forced into a transient state, and says when it has returned. */
enum op { OP_STOP, OP_MODIFY };
struct waiter {
    pthread_t th;
    pt_timers *ts;
    pt_timer *t;
    enum op op;
    int result;
    atomic_int started, done;
};

static void *waiter_main(void *p)
{
    struct waiter *w = p;
    atomic_store(&w->started, 1);
    w->result = w->op == OP_STOP ? pt_timer_stop(w->t)
                                 : pt_timer_modify(w->ts, w->t, 500, 0, count_cb, w->t->arg, 0);
    atomic_store(&w->done, 1);
    return NULL;
}

/* Start t (counting into *n) on a fresh heap ts at 1000, force it into
 * `transient`, run op on another thread, check that it does not return
 * while the state lasts, then end the state and check that the op found
 * the timer pending (returned 1) and left it in status `want`. */
static void op_waits_out(pt_timers *ts, pt_timer *t, int *n, uint32_t transient, enum op op,
                         uint32_t want)
{
    started_timers(ts, t, 1, n, 1000, 0);
    CHECK_STATUS(t, PT_TIMER_WAITING);
    struct waiter w = {.ts = ts, .t = t, .op = op, .result = -1000};
    atomic_init(&w.started, 0);
    atomic_init(&w.done, 0);
    force_status(t, transient);
    CHECK_EQ(pthread_create(&w.th, NULL, waiter_main, &w), 0);
    while (!atomic_load(&w.started))
        sched_yield();
    /* 20 ms in which the waiter spins on the transient status; asleep, so
     * the core is its (20000 sched_yields could take longer than a
     * minute next to a CPU hog). */
    struct timespec window = {0, 20 * 1000000};
    nanosleep(&window, NULL);
    CHECK_EQ(atomic_load(&w.done), 0);
    CHECK_STATUS(t, transient); /* it waited without touching the word */
    force_status(t, PT_TIMER_WAITING);
    CHECK_EQ(pthread_join(w.th, NULL), 0);
    CHECK_EQ(atomic_load(&w.done), 1);
    CHECK_EQ(w.result, 1);
    CHECK_STATUS(t, want);
    CHECK_VERIFIED(ts, true);
}

/* op_waits_out for each state in transient[], each on a fresh heap; after
 * it the timer is due at `when`, and a check then runs it `fires` times. */
static void op_waits_out_each(const uint32_t *transient, size_t count, enum op op, uint32_t want,
                              pt_nanos when, int fires)
{
    for (size_t i = 0; i < count; i++) {
        pt_timers ts;
        pt_timer t;
        int n = 0;
        op_waits_out(&ts, &t, &n, transient[i], op, want);
        CHECK_EQ(t.when, when);
        CHECK_EQ(pt_timers_check(&ts, when, true, NULL), fires);
        CHECK_EQ(n, fires);
        teardown(&ts, &t, 1);
    }
}

void test_stop_waits_out_running_moving_and_modifying(void)
{
    const uint32_t transient[] = {PT_TIMER_RUNNING, PT_TIMER_MOVING, PT_TIMER_MODIFYING};
    /* stopped: Deleted at its old time, and it never runs */
    op_waits_out_each(transient, sizeof transient / sizeof transient[0], OP_STOP,
                      PT_TIMER_DELETED, 1000, 0);
}

void test_modify_waits_out_running_moving_removing_and_modifying(void)
{
    const uint32_t transient[] = {PT_TIMER_RUNNING, PT_TIMER_MOVING, PT_TIMER_REMOVING,
                                  PT_TIMER_MODIFYING};
    op_waits_out_each(transient, sizeof transient / sizeof transient[0], OP_MODIFY,
                      PT_TIMER_MODIFIED_EARLIER, 500, 1);
}

/* ---- modify, reset ---------------------------------------------------- */

/* Start t (counting into *n) on a fresh heap ts at 5000, then move it to
 * `to` with modify (to a new seq) or reset: it was pending, so either
 * returns 1 and leaves it in status `want`, filed under its old key until
 * the owner re-keys it (lazily). */
static void move_waiting_timer(pt_timers *ts, pt_timer *t, int *n, bool by_modify, pt_nanos to,
                               uint32_t want)
{
    started_timers(ts, t, 1, n, 5000, 0);
    if (by_modify)
        CHECK_EQ(pt_timer_modify(ts, t, to, 0, count_cb, n, 9), 1);
    else
        CHECK_EQ(pt_timer_reset(ts, t, to), 1);
    CHECK_STATUS(t, want);
    CHECK_EQ(heap_key(t), 5000);
    CHECK_EQ(t->when, to);
    CHECK_EQ(atomic_load(&ts->modified_earliest), want == PT_TIMER_MODIFIED_EARLIER ? to : 0);
    CHECK_VERIFIED(ts, true);
}

void test_modify_of_waiting_timer_to_earlier_time_is_modified_earlier(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    move_waiting_timer(&ts, &t, &n, true, 2000, PT_TIMER_MODIFIED_EARLIER);
    CHECK_EQ(pt_timers_next(&ts), 2000);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(n, 1);
    teardown(&ts, &t, 1);
}

void test_reset_of_waiting_timer_to_later_time_is_modified_later(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    move_waiting_timer(&ts, &t, &n, false, 8000, PT_TIMER_MODIFIED_LATER);
    /* the old key comes due first: the owner re-keys instead of running */
    CHECK_EQ(pt_timers_check(&ts, 5000, true, NULL), 0);
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t), 8000);
    CHECK_EQ(pt_timers_check(&ts, 8000, true, NULL), 1);
    CHECK_EQ(n, 1);
    teardown(&ts, &t, 1);
}

void test_modify_of_modified_timer_switches_earlier_and_later(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    move_waiting_timer(&ts, &t, &n, false, 3000, PT_TIMER_MODIFIED_EARLIER);
    CHECK_EQ(pt_timer_reset(&ts, &t, 4000), 1); /* ModifiedEarlier -> ModifiedLater */
    CHECK_STATUS(&t, PT_TIMER_MODIFIED_LATER);
    CHECK_EQ(pt_timer_reset(&ts, &t, 9000), 1); /* ModifiedLater -> ModifiedLater */
    CHECK_STATUS(&t, PT_TIMER_MODIFIED_LATER);
    CHECK_EQ(pt_timer_reset(&ts, &t, 7000), 1); /* ModifiedLater -> ModifiedEarlier */
    CHECK_STATUS(&t, PT_TIMER_MODIFIED_EARLIER);
    CHECK_EQ(pt_timer_reset(&ts, &t, 6000), 1); /* ModifiedEarlier -> ModifiedEarlier */
    CHECK_STATUS(&t, PT_TIMER_MODIFIED_EARLIER);
    CHECK_EQ(heap_key(&t), 5000);
    CHECK_EQ(t.when, 6000);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 5999, true, NULL), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(pt_timers_check(&ts, 6000, true, NULL), 1);
    CHECK_EQ(n, 1);
    teardown(&ts, &t, 1);
}

void test_reset_of_deleted_timer_revives_it_and_returns_zero(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0, m = 0;
    started_timers(&ts, t, 2, &n, 5000, 0);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    CHECK_EQ(pt_timers_deleted(&ts), 2);
    CHECK_EQ(pt_timer_reset(&ts, &t[0], 3000), 0);
    CHECK_STATUS(&t[0], PT_TIMER_MODIFIED_EARLIER);
    CHECK_EQ(pt_timer_modify(&ts, &t[1], 7000, 0, count_cb, &m, 0), 0);
    CHECK_STATUS(&t[1], PT_TIMER_MODIFIED_LATER);
    CHECK_EQ(pt_timers_len(&ts), 2);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 3000, true, NULL), 1);
    CHECK_EQ(pt_timers_check(&ts, 7000, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(m, 1);
    teardown(&ts, t, 2);
}

void test_reset_of_new_timer_makes_it_waiting_and_returns_zero(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    counting_timers(&ts, t, 2, &n);
    CHECK_EQ(pt_timer_reset(&ts, &t[0], 3000), 0);
    CHECK_STATUS(&t[0], PT_TIMER_WAITING);
    CHECK_EQ(pt_timer_modify(&ts, &t[1], 4000, 0, count_cb, &n, 0), 0);
    CHECK_STATUS(&t[1], PT_TIMER_WAITING);
    CHECK_EQ(heap_key(&t[0]), 3000);
    CHECK_EQ(heap_key(&t[1]), 4000);
    CHECK_EQ(pt_timers_len(&ts), 2);
    CHECK_EQ(pt_timers_check(&ts, 4000, true, NULL), 2);
    CHECK_EQ(n, 2);
    teardown(&ts, t, 2);
}

void test_reset_of_removed_timer_pushes_it_onto_the_heap_passed(void)
{
    pt_timers a, b;
    pt_timer t;
    int n = 0;
    started_timers(&a, &t, 1, &n, 3000, 0);
    pt_timers_init(&b, NULL, NULL);
    CHECK_EQ(pt_timer_stop_sync(&t), 1);
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
    CHECK_EQ(pt_timer_reset(&b, &t, 2000), 0);
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK(heap_of(&t) == &b);
    CHECK_EQ(pt_timers_len(&a), 0);
    CHECK_EQ(pt_timers_len(&b), 1);
    CHECK_EQ(pt_timers_check(&a, 3000, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&b, 2000, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_timers_destroy(&a), 0);
    teardown(&b, &t, 1);
}

/* ---- stop_sync -------------------------------------------------------- */

void test_stop_sync_of_deleted_timer_removes_it_from_its_heap(void)
{
    pt_timers ts;
    pt_timer t[3];
    int n = 0;
    started_timers(&ts, t, 3, &n, 1000, 1000);
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    CHECK_STATUS(&t[1], PT_TIMER_DELETED);
    CHECK_EQ(pt_timers_len(&ts), 3);
    CHECK_EQ(pt_timer_stop_sync(&t[1]), 0);
    CHECK_STATUS(&t[1], PT_TIMER_REMOVED);
    CHECK(heap_of(&t[1]) == NULL);
    CHECK_EQ(pt_timers_len(&ts), 2);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_VERIFIED(&ts, true);
    /* and a pending one in one go: stop, then unlink */
    CHECK_EQ(pt_timer_stop_sync(&t[2]), 1);
    CHECK_STATUS(&t[2], PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 5000, true, NULL), 1);
    CHECK_EQ(n, 1);
    teardown(&ts, t, 3);
}

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

/* ---- corruption ------------------------------------------------------- */

/* Run body in a fork()ed child with stderr on a pipe; assert the child died
 * of SIGABRT and said "corrupt timer", the status and the operation. */
static void expect_corrupt(void (*body)(void), const char *status, const char *op)
{
    int fd[2];
    CHECK_EQ(pipe(fd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        body();
        _exit(0); /* no abort: the parent reports it */
    }
    close(fd[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fd[0]);
    int wst;
    CHECK_EQ(waitpid(pid, &wst, 0), pid);
    if (!WIFSIGNALED(wst) || WTERMSIG(wst) != SIGABRT || !strstr(buf, "corrupt timer") ||
        !strstr(buf, status) || !strstr(buf, op)) {
        fprintf(stderr, "child status %#x, wanted SIGABRT with \"%s\" and \"%s\"; stderr:\n%s\n",
                wst, status, op, buf);
        CHECK(!"child did not abort as corrupt");
    }
}

/* A fresh heap with one timer started at 1000, its status word then
 * overwritten with `status`. */
static void forced_status(pt_timers *ts, pt_timer *t, uint32_t status)
{
    pt_timers_init(ts, NULL, NULL);
    pt_timer_init(t, count_cb, NULL);
    pt_timer_start(ts, t, 1000, 0);
    force_status(t, status);
}

static void corrupt_status_then_stop(void)
{
    pt_timers ts;
    pt_timer t;
    forced_status(&ts, &t, 14);
    pt_timer_stop(&t);
}

static void corrupt_status_then_reset(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    pt_timer t;
    pt_timer_init(&t, count_cb, NULL);
    force_status(&t, 14);
    pt_timer_reset(&ts, &t, 1000);
}

static void nostatus_in_heap_then_check(void)
{
    pt_timers ts;
    pt_timer t;
    forced_status(&ts, &t, PT_TIMER_NOSTATUS);
    pt_timers_check(&ts, 1000, true, NULL);
}

static void running_in_heap_then_adjust(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    pt_timer t, u;
    pt_timer_init(&t, count_cb, NULL);
    pt_timer_init(&u, count_cb, NULL);
    pt_timer_start(&ts, &t, 1000, 0);
    pt_timer_start(&ts, &u, 5000, 0);
    pt_timer_reset(&ts, &u, 2000); /* modified_earliest 2000: adjust at 2000 */
    force_status(&t, PT_TIMER_RUNNING);
    pt_timers_check(&ts, 2000, false, NULL);
}

static void removed_in_heap_then_move(void)
{
    pt_timers a, b;
    pt_timer t;
    forced_status(&a, &t, PT_TIMER_REMOVED);
    pt_timers_init(&b, NULL, NULL);
    pt_timers_move(&b, &a);
}

void test_corrupt_status_aborts_with_status_and_operation(void)
{
    expect_corrupt(corrupt_status_then_stop, "(14)", " in stop");
    expect_corrupt(corrupt_status_then_reset, "(14)", " in reset");
    expect_corrupt(nostatus_in_heap_then_check, "NoStatus (0)", " in run");
    expect_corrupt(running_in_heap_then_adjust, "Running (2)", " in adjust");
    expect_corrupt(removed_in_heap_then_move, "Removed (5)", " in move");
}

/* ---- bad input -------------------------------------------------------- */

/* pt_timers_verify finds what corruption leaves (and its report says what):
 * a timer whose word names another heap, a waiting timer whose when is
 * not its key; and passes again once they are mended. */
void test_verify_reports_a_timer_naming_another_heap_or_off_its_key(void)
{
    pt_timers a, b;
    pt_timer t[2];
    int n = 0;
    started_timers(&a, t, 2, &n, 1000, 10);
    pt_timers_init(&b, NULL, NULL);
    CHECK_VERIFIED(&a, true);
    uint64_t w = atomic_load(&t[1].state);
    atomic_store(&t[1].state, (w & PT__STATE_LOW_MASK) | st_pack(&b, 0));
    CHECK_EQ(pt_timers_verify(&a, true), -EUCLEAN);
    CHECK(strstr(pt_timers_verify_report(), "names heap"));
    atomic_store(&t[1].state, w);
    CHECK_VERIFIED(&a, true);
    CHECK_EQ(pt_timers_verify_report()[0], '\0');
    /* not a timer's word, though its status bits read Waiting: reported,
     * not touched (a status CAS on it would abort in the restore) */
    atomic_store(&t[1].state, w ^ PT__STATE_CHECK);
    CHECK_EQ(pt_timers_verify(&a, true), -EUCLEAN);
    CHECK(strstr(pt_timers_verify_report(), "is not a timer"));
    CHECK_EQ(atomic_load(&t[1].state), w ^ PT__STATE_CHECK);
    atomic_store(&t[1].state, w);
    CHECK_VERIFIED(&a, true);
    t[0].when += 5;
    CHECK_EQ(pt_timers_verify(&a, true), -EUCLEAN);
    CHECK(strstr(pt_timers_verify_report(), "has when"));
    t[0].when -= 5;
    CHECK_VERIFIED(&a, true);
    CHECK_EQ(n, 0);
    teardown(&a, t, 2);
    CHECK_EQ(pt_timers_destroy(&b), 0);
}

/* The state word's three parts (ptimer/status.h) never bleed into each
 * other, and a heap address that does not fit is refused. */
void test_state_word_keeps_heap_status_and_check_apart(void)
{
    pt_timers ts;
    pt_timers *heaps[] = {NULL, &ts, (pt_timers *)(uintptr_t)UINT64_C(0xfffffffffff8)};
    for (size_t h = 0; h < sizeof heaps / sizeof heaps[0]; h++)
        for (uint32_t s = PT_TIMER_NOSTATUS; s <= PT_TIMER_MOVING; s++) {
            uint64_t w = st_pack(heaps[h], s);
            CHECK(st_heap(w) == heaps[h]);
            CHECK_EQ(st_status(w), s);
            CHECK_EQ(w & PT__STATE_CHECK_MASK, PT__STATE_CHECK);
        }
    CHECK(st_heap_fits(&ts));
    CHECK(st_heap_fits((pt_timers *)(uintptr_t)UINT64_C(0xffffffffffff)));
#if UINTPTR_MAX > 0xffffffffu
    CHECK(!st_heap_fits((pt_timers *)(uintptr_t)UINT64_C(0x1000000000000)));
    CHECK(!st_heap_fits((pt_timers *)(uintptr_t)(UINT64_C(0x5a) << 56 | (uintptr_t)&ts)));
    CHECK_EQ(sizeof(pt_timer), 56);
#endif
    pt_timer t;
    pt_timer_init(&t, count_cb, NULL);
    CHECK_EQ(atomic_load(&t.state), st_pack(NULL, PT_TIMER_NOSTATUS));
    /* Every transition helper, between every pair of statuses: the
     * status flips, the heap and the check stay (or the heap moves, for
     * the _in and claim forms). */
    for (uint32_t from = PT_TIMER_NOSTATUS; from <= PT_TIMER_MOVING; from++)
        for (uint32_t to = PT_TIMER_NOSTATUS; to <= PT_TIMER_MOVING; to++) {
            atomic_store(&t.state, st_pack(&ts, from));
            CHECK(!st_cas(&t, st_pack(NULL, from), to)); /* another heap: no */
            CHECK(st_cas(&t, st_pack(&ts, from), to));
            CHECK_EQ(atomic_load(&t.state), st_pack(&ts, to));
            st_set(&t, to, from, "test");
            CHECK_EQ(atomic_load(&t.state), st_pack(&ts, from));
            st_set_in(&t, from, to, NULL, "test");
            CHECK_EQ(atomic_load(&t.state), st_pack(NULL, to));
        }
    st_claim(&t, &ts);
    CHECK_EQ(atomic_load(&t.state), st_pack(&ts, PT_TIMER_MODIFYING));
    atomic_store(&t.state, st_pack(NULL, PT_TIMER_NOSTATUS));
}

void test_null_arguments_return_einval_and_change_nothing(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    counting_timers(&ts, &t, 1, &n);
    pt_timers_init(NULL, NULL, NULL); /* no crash */
    pt_timer_init(NULL, count_cb, NULL);
    CHECK_EQ(pt_timer_start(NULL, &t, 1000, 0), -EINVAL);
    CHECK_EQ(pt_timer_start(&ts, NULL, 1000, 0), -EINVAL);
    CHECK_EQ(pt_timer_reset(NULL, &t, 1000), -EINVAL);
    CHECK_EQ(pt_timer_reset(&ts, NULL, 1000), -EINVAL);
    CHECK_EQ(pt_timer_modify(NULL, &t, 1000, 0, count_cb, &n, 0), -EINVAL);
    CHECK_EQ(pt_timer_modify(&ts, NULL, 1000, 0, count_cb, &n, 0), -EINVAL);
    CHECK_EQ(pt_timer_stop(NULL), -EINVAL);
    CHECK_EQ(pt_timer_stop_sync(NULL), -EINVAL);
    CHECK_EQ(pt_timer_status(NULL), PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_check(NULL, 1000, true, NULL), -EINVAL);
    CHECK_EQ(pt_timers_move(NULL, &ts), -EINVAL);
    CHECK_EQ(pt_timers_move(&ts, NULL), -EINVAL);
    CHECK_EQ(pt_timers_verify(NULL, true), -EINVAL);
    CHECK_EQ(pt_timers_destroy(NULL), -EINVAL);
    CHECK_EQ(pt_timers_len(NULL), 0);
    CHECK_EQ(pt_timers_next(NULL), 0);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);

    /* the same with a pending timer: it stays where it was */
    CHECK_EQ(pt_timer_start(&ts, &t, 1000, 0), 0);
    CHECK_EQ(pt_timer_reset(NULL, &t, 9), -EINVAL);
    CHECK_EQ(pt_timer_modify(NULL, &t, 9, 0, count_cb, &n, 0), -EINVAL);
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK_EQ(t.when, 1000);
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_negative_period_returns_einval_and_changes_nothing(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0, m = 0;
    counting_timers(&ts, t, 2, &n);
    CHECK_EQ(pt_timer_start(&ts, &t[0], 1000, -1), -EINVAL);
    CHECK_STATUS(&t[0], PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timer_modify(&ts, &t[0], 1000, -5, count_cb, &m, 3), -EINVAL);
    CHECK_STATUS(&t[0], PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);

    CHECK_EQ(pt_timer_start(&ts, &t[1], 2000, 0), 0);
    CHECK_EQ(pt_timer_modify(&ts, &t[1], 500, INT64_MIN, count_cb, &m, 3), -EINVAL);
    CHECK_STATUS(&t[1], PT_TIMER_WAITING);
    CHECK_EQ(t[1].when, 2000);
    CHECK_EQ(t[1].period, 0);
    CHECK(t[1].arg == &n);
    CHECK_EQ(pt_timers_check(&ts, 1999, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(m, 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_uninitialised_timer_returns_einval(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    pt_timer z;
    memset(&z, 0, sizeof z);
    CHECK_EQ(pt_timer_start(&ts, &z, 1000, 0), -EINVAL);
    CHECK_EQ(pt_timer_reset(&ts, &z, 1000), -EINVAL);
    CHECK_EQ(pt_timer_modify(&ts, &z, 1000, 0, count_cb, NULL, 0), -EINVAL);
    CHECK_EQ(pt_timer_stop(&z), -EINVAL);
    CHECK_EQ(pt_timer_stop_sync(&z), -EINVAL);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(atomic_load(&z.state), 0); /* untouched */
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_destroyed_or_uninitialised_heap_returns_einval(void)
{
    pt_timers ts, zero;
    memset(&zero, 0, sizeof zero);
    pt_timers_init(&ts, NULL, NULL);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    pt_timers *bad[] = {&ts, &zero};
    int n = 0;
    pt_timer t;
    pt_timer_init(&t, count_cb, &n);
    pt_timers good;
    pt_timers_init(&good, NULL, NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(pt_timers_destroy(bad[i]), -EINVAL);
        CHECK_EQ(pt_timer_start(bad[i], &t, 1000, 0), -EINVAL);
        CHECK_EQ(pt_timer_reset(bad[i], &t, 1000), -EINVAL);
        CHECK_EQ(pt_timer_modify(bad[i], &t, 1000, 0, count_cb, &n, 0), -EINVAL);
        CHECK_EQ(pt_timers_check(bad[i], 1000, true, NULL), -EINVAL);
        CHECK_EQ(pt_timers_move(&good, bad[i]), -EINVAL);
        CHECK_EQ(pt_timers_move(bad[i], &good), -EINVAL);
        CHECK_EQ(pt_timers_verify(bad[i], true), -EINVAL);
        CHECK_EQ(pt_timers_len(bad[i]), 0);
        CHECK_EQ(pt_timers_next(bad[i]), 0);
        CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    }
    CHECK_EQ(n, 0);
    CHECK_EQ(pt_timers_destroy(&good), 0);
}

void test_destroy_of_heap_with_pending_timer_returns_ebusy_and_timer_still_fires(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0;
    pt_timer live, ticker, stopped;
    pt_timer_init(&live, count_cb, &n);
    pt_timer_init(&ticker, count_cb, &n);
    pt_timer_init(&stopped, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &live, 2000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &stopped, 1000, 0), 0);
    CHECK_EQ(pt_timer_stop(&stopped), 1);
    CHECK_EQ(pt_timers_destroy(&ts), -EBUSY);
    CHECK_STATUS(&live, PT_TIMER_WAITING);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(n, 1);
    /* a ticker is live too, and a modified one keeps its new time */
    CHECK_EQ(pt_timer_start(&ts, &ticker, 3000, 100), 0);
    CHECK_EQ(pt_timer_reset(&ts, &ticker, 2500), 1);
    CHECK_EQ(pt_timers_destroy(&ts), -EBUSY);
    CHECK_EQ(pt_timers_check(&ts, 2500, true, NULL), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(pt_timer_stop(&ticker), 1);
    /* only stopped timers left: destroy unlinks them and succeeds */
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    CHECK_STATUS(&ticker, PT_TIMER_REMOVED);
    CHECK_STATUS(&stopped, PT_TIMER_REMOVED);
    CHECK(heap_of(&ticker) == NULL);
    CHECK_EQ(pt_timer_stop_sync(&ticker), 0);
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
