/* Every row of the status table in ptimer.h for the calls a user makes
 * (start, stop, modify and reset, stop_sync), driven one at a time: each
 * test names the operation and the row, and asserts the status (and the
 * heap) before and after. The clock is the `now` passed to check, so
 * nothing here sleeps. Transient states that only another thread could
 * hold (Running, Moving, Removing, Modifying) are forced with a store to
 * the status word: white-box, through pheap/status.h. */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

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

/* stop_sync of a plain heap's head: the timer leaves at once (it may be
 * freed), and its entry stays with the heap's own stand-in, Deleted, for
 * the next arm to overwrite in place. Callers see neither the entry nor a
 * deleted timer; a check at its time runs nothing; a head stopped while
 * the stand-in is still held elsewhere in the heap is unlinked as before. */
void test_stop_sync_of_the_head_leaves_its_entry_to_the_next_arm(void)
{
    enum { N = 40 };
    pt_timers ts, other;
    pt_timer t[N];
    int n = 0;
    started_timers(&ts, t, N, &n, 1000, 10); /* t[0] is the head */
    pt_timer *head = malloc(sizeof *head);   /* freed at once: ASan sees any touch */
    CHECK(head != NULL);
    pt_timer_init(head, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, head, 500, 0), 0);
    CHECK_EQ(head->heap_index, 0);
    CHECK_EQ(pt_timer_stop_sync(head), 1);
    CHECK_STATUS(head, PT_TIMER_REMOVED);
    free(head);
    CHECK_EQ(pt_timers_len(&ts), N);
    CHECK_EQ(pt_timers_deleted(&ts), 0);
    CHECK_EQ(ts.heap.len, N + 1); /* white-box: the stand-in holds the entry */
    CHECK(ts.heap.v[0].item == &ts.standin);
    CHECK_VERIFIED(&ts, true);

    /* the next arm, earlier than all, takes the entry without a sift */
    pt_timer u;
    pt_timer_init(&u, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &u, 600, 0), 0);
    CHECK_EQ(u.heap_index, 0);
    CHECK_EQ(ts.heap.len, N + 1);
    CHECK_EQ(pt_timers_len(&ts), N + 1);
    CHECK_EQ(pt_timer_stop_sync(&u), 1);
    CHECK(ts.heap.v[0].item == &ts.standin);

    /* a check at the dead entry's time runs nothing and drops it */
    CHECK_EQ(pt_timers_check(&ts, 999, true, NULL), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(ts.heap.len, N);
    CHECK_STATUS(&ts.standin, PT_TIMER_REMOVED);
    CHECK_VERIFIED(&ts, true);

    /* held below the top (a move pushes earlier timers past it): the
     * next head stop_sync'd is unlinked */
    CHECK_EQ(pt_timer_stop_sync(&t[0]), 1);
    CHECK(ts.heap.v[0].item == &ts.standin);
    pt_timer early[2];
    counting_timers(&other, early, 2, &n);
    CHECK_EQ(pt_timer_start(&other, &early[0], 100, 0), 0);
    CHECK_EQ(pt_timer_start(&other, &early[1], 200, 0), 0);
    CHECK_EQ(pt_timers_move(&ts, &other), 0);
    CHECK(ts.heap.v[0].item == &early[0]);
    CHECK_EQ(pt_timer_stop_sync(&early[0]), 1);
    CHECK_EQ(pt_timers_len(&ts), N); /* t[1..N-1] and early[1] */
    CHECK_EQ(ts.heap.len, N + 1);    /* and the stand-in */
    CHECK(ts.heap.v[0].item == &early[1]);
    CHECK_VERIFIED(&ts, true);

    /* everything stopped, the stand-in's entry the last: the heap is
     * empty and names no time */
    CHECK_EQ(pt_timer_stop_sync(&early[1]), 1);
    CHECK_EQ(pt_timers_destroy(&other), 0);
    for (int i = N - 1; i >= 1; i--)
        CHECK_EQ(pt_timer_stop_sync(&t[i]), 1);
    CHECK_EQ(ts.heap.len, 0);
    CHECK_EQ(pt_timers_next(&ts), 0);
    CHECK_STATUS(&ts.standin, PT_TIMER_REMOVED);
    teardown(&ts, t, N);
}
