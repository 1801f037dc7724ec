/* Fault injection: every operation that allocates is made to fail (the
 * n-th allocation of the calling thread, pt__alloc_fail_after in alloc.h)
 * and must answer -ENOMEM / PT_INVALID_TASK_ID with nothing changed:
 * every timer in the status it had, every heap passing pt_timers_verify,
 * and no block left allocated that was not there before (pt__alloc_live).
 * The sweeps fail allocation 0, 1, 2, ... of a whole workload until one
 * run makes no more allocations than the failure's index, so every
 * allocation site on the path is hit once. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "harness.h"
#include "ptimer/ptimer.h"
#include "ptimer/timerthread.h"
#include "timerthread/task_pool.h"

#define CHECK_STATUS(t, s) CHECK_EQ(pt_timer_status(t), (s))

static void count_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    ++*(int *)arg;
}

struct seen {
    int calls;
    uintptr_t seq;
};

static void seq_cb(void *arg, uintptr_t seq)
{
    struct seen *s = arg;
    s->calls++;
    s->seq = seq;
}

/* ---- per-P timers ------------------------------------------------------ */

void test_start_onto_empty_heap_fails_with_enomem_and_changes_nothing(void)
{
    long live0 = pt__alloc_live();
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0;
    pt_timer t;
    pt_timer_init(&t, count_cb, &n);
    pt__alloc_fail_after(0); /* the heap's first array */
    CHECK_EQ(pt_timer_start(&ts, &t, 100, 0), -ENOMEM);
    CHECK(!pt__alloc_fail_armed());
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_next(&ts), 0);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt__alloc_live(), live0);
    /* and it works once memory is there */
    CHECK_EQ(pt_timer_start(&ts, &t, 100, 0), 0);
    CHECK_EQ(pt_timers_check(&ts, 100, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    CHECK_EQ(pt__alloc_live(), live0);
}

void test_reset_and_modify_of_idle_timer_fail_with_enomem_and_keep_its_fields(void)
{
    long live0 = pt__alloc_live();
    pt_timers a, b;
    pt_timers_init(&a, NULL, NULL);
    pt_timers_init(&b, NULL, NULL);
    struct seen s = {0, 0};
    pt_timer t;
    pt_timer_init(&t, seq_cb, &s);
    CHECK_EQ(pt_timer_modify(&a, &t, 100, 0, seq_cb, &s, 7), 0);
    CHECK_EQ(pt_timer_stop_sync(&t), 1); /* Removed, in no heap */
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
    /* b has no array yet: pushing onto it must allocate */
    pt__alloc_fail_after(0);
    CHECK_EQ(pt_timer_modify(&b, &t, 50, 10, seq_cb, &s, 9), -ENOMEM);
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
    pt__alloc_fail_after(0);
    CHECK_EQ(pt_timer_reset(&b, &t, 60), -ENOMEM);
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&b), 0);
    CHECK_VERIFIED(&b, true);
    /* the failed modify left seq 7 and period 0: a reset fires it once, as 7 */
    CHECK_EQ(pt_timer_reset(&b, &t, 60), 0);
    CHECK_EQ(pt_timers_check(&b, 1000, true, NULL), 1);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(s.seq, 7);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS); /* a one-shot: not the failed ticker */
    /* a timer that never ran fails the same way from NoStatus */
    pt_timers c;
    pt_timers_init(&c, NULL, NULL);
    pt__alloc_fail_after(0);
    CHECK_EQ(pt_timer_reset(&c, &t, 5), -ENOMEM);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_destroy(&a), 0);
    CHECK_EQ(pt_timers_destroy(&b), 0);
    CHECK_EQ(pt_timers_destroy(&c), 0);
    CHECK_EQ(pt__alloc_live(), live0);
}

void test_heap_growth_fails_with_enomem_at_each_doubling_and_keeps_every_timer(void)
{
    enum { N = 300 };
    static pt_timer t[N];
    long live0 = pt__alloc_live();
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0, failed = 0;
    for (int i = 0; i < N; i++) {
        pt_timer_init(&t[i], count_cb, &n);
        pt__alloc_fail_after(0);
        int r = pt_timer_start(&ts, &t[i], 1000 + i, 0);
        if (r == -ENOMEM) {
            /* only where the array is full: 0, 64, 128, 256 entries */
            CHECK(i == 0 || i == 64 || i == 128 || i == 256);
            failed++;
            CHECK_STATUS(&t[i], PT_TIMER_NOSTATUS);
            CHECK_EQ(pt_timers_len(&ts), (size_t)i);
            CHECK_VERIFIED(&ts, true);
            CHECK_EQ(pt_timer_start(&ts, &t[i], 1000 + i, 0), 0);
        } else {
            CHECK_EQ(r, 0);
            pt__alloc_fail_after(-1); /* not used up: the array had room */
        }
    }
    CHECK_EQ(failed, 4);
    CHECK_EQ(pt_timers_len(&ts), N);
    CHECK_EQ(pt_timers_check(&ts, 1000 + N, true, NULL), N);
    CHECK_EQ(n, N);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    CHECK_EQ(pt__alloc_live(), live0);
}

void test_move_fails_with_enomem_and_leaves_every_timer_on_src(void)
{
    enum { N = 40 };
    static pt_timer t[N];
    long live0 = pt__alloc_live();
    pt_timers src, dst;
    pt_timers_init(&src, NULL, NULL);
    pt_timers_init(&dst, NULL, NULL);
    int n = 0;
    for (int i = 0; i < N; i++) {
        pt_timer_init(&t[i], count_cb, &n);
        CHECK_EQ(pt_timer_start(&src, &t[i], 1000 + i, 0), 0);
    }
    for (int i = 0; i < N; i += 4)
        CHECK_EQ(pt_timer_stop(&t[i]), 1); /* Deleted */
    for (int i = 1; i < N; i += 4)
        CHECK_EQ(pt_timer_reset(&dst, &t[i], 500 + i), 1); /* ModifiedEarlier, on src */
    enum pt_timer_status before[N];
    for (int i = 0; i < N; i++)
        before[i] = pt_timer_status(&t[i]);
    pt__alloc_fail_after(0);
    CHECK_EQ(pt_timers_move(&dst, &src), -ENOMEM);
    for (int i = 0; i < N; i++)
        CHECK_STATUS(&t[i], before[i]);
    CHECK_EQ(pt_timers_len(&src), N);
    CHECK_EQ(pt_timers_len(&dst), 0);
    CHECK_VERIFIED(&src, true);
    CHECK_VERIFIED(&dst, true);
    /* then it moves: the live ones fire from dst at their times */
    CHECK_EQ(pt_timers_move(&dst, &src), 0);
    CHECK_EQ(pt_timers_len(&src), 0);
    CHECK_EQ(pt_timers_len(&dst), N - N / 4);
    CHECK_EQ(pt_timers_check(&src, 5000, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&dst, 5000, true, NULL), N - N / 4);
    CHECK_EQ(n, N - N / 4);
    CHECK_EQ(pt_timers_destroy(&src), 0);
    CHECK_EQ(pt_timers_destroy(&dst), 0);
    CHECK_EQ(pt__alloc_live(), live0);
}

void test_check_survives_a_failed_shrink_after_compaction(void)
{
    enum { N = 400 };
    static pt_timer t[N];
    long live0 = pt__alloc_live();
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0;
    for (int i = 0; i < N; i++) {
        pt_timer_init(&t[i], count_cb, &n);
        CHECK_EQ(pt_timer_start(&ts, &t[i], 10000 + i, 0), 0);
    }
    for (int i = 10; i < N; i++)
        CHECK_EQ(pt_timer_stop(&t[i]), 1);
    pt__alloc_fail_after(0); /* the shrink after the owner's compaction */
    CHECK_EQ(pt_timers_check(&ts, 1, true, NULL), 0);
    CHECK(!pt__alloc_fail_armed());
    CHECK_EQ(pt_timers_len(&ts), 10);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 20000, true, NULL), 10);
    CHECK_EQ(n, 10);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    CHECK_EQ(pt__alloc_live(), live0);
}

/* The workload of the sweep: starts that grow two heaps, modifies of idle
 * and pending timers, a move, checks, stops. Every call that may allocate
 * accepts -ENOMEM; after each, both heaps verify; at the end everything is
 * disposed of and every block given back. Returns whether the injected
 * failure was used. */
static bool sweep_workload(long fail_at)
{
    enum { N = 150 };
    static pt_timer t[N];
    long live0 = pt__alloc_live();
    pt_timers a, b;
    pt_timers_init(&a, NULL, NULL);
    pt_timers_init(&b, NULL, NULL);
    int n = 0, armed = 0;
    pt__alloc_fail_after(fail_at);
    for (int i = 0; i < N; i++) {
        pt_timer_init(&t[i], count_cb, &n);
        pt_timers *h = i % 3 ? &a : &b;
        int r = i % 2 ? pt_timer_start(h, &t[i], 100 + i, i % 5 == 0 ? 50 : 0)
                      : pt_timer_modify(h, &t[i], 100 + i, 0, count_cb, &n, (uintptr_t)i);
        CHECK(r == 0 || r == -ENOMEM);
        if (r == 0)
            armed++;
        else
            CHECK_STATUS(&t[i], PT_TIMER_NOSTATUS);
    }
    CHECK_VERIFIED(&a, true);
    CHECK_VERIFIED(&b, true);
    for (int i = 0; i < N; i += 7)
        (void)pt_timer_stop(&t[i]);
    for (int i = 3; i < N; i += 7)
        CHECK(pt_timer_reset(&b, &t[i], 50) >= 0 || pt_timer_status(&t[i]) == PT_TIMER_NOSTATUS);
    int r = pt_timers_move(&b, &a);
    CHECK(r == 0 || r == -ENOMEM);
    CHECK_VERIFIED(&a, true);
    CHECK_VERIFIED(&b, true);
    CHECK(pt_timers_check(&a, 120, true, NULL) >= 0);
    CHECK(pt_timers_check(&b, 120, false, NULL) >= 0);
    CHECK_VERIFIED(&a, true);
    CHECK_VERIFIED(&b, true);
    bool used = !pt__alloc_fail_armed();
    pt__alloc_fail_after(-1);
    for (int i = 0; i < N; i++)
        CHECK(pt_timer_stop_sync(&t[i]) >= 0);
    CHECK_EQ(pt_timers_destroy(&a), 0);
    CHECK_EQ(pt_timers_destroy(&b), 0);
    CHECK_EQ(pt__alloc_live(), live0);
    return used;
}

void test_every_allocation_of_a_workload_failing_in_turn_leaves_it_consistent(void)
{
    long k = 0;
    while (sweep_workload(k))
        k++;
    CHECK(k >= 4); /* two heaps' first arrays, growth, the move's reserve */
}

/* ---- TimerThread ------------------------------------------------------- */

void test_timerthread_create_fails_with_enomem_and_leaks_nothing(void)
{
    long live0 = pt__alloc_live();
    for (long k = 0;; k++) {
        pt_timerthread *tt = NULL;
        pt__alloc_fail_after(k);
        int r = pt_timerthread_create(&tt, NULL);
        bool used = !pt__alloc_fail_armed();
        pt__alloc_fail_after(-1);
        if (r == -ENOMEM) {
            CHECK(used);
            CHECK(tt == NULL);
            CHECK_EQ(pt__alloc_live(), live0);
            continue;
        }
        CHECK_EQ(r, 0);
        pt_timerthread_destroy(tt);
        if (!used)
            break;
    }
}

static void tt_flag_cb(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void never_cb(void *arg)
{
    (void)arg;
    CHECK(!"a far task ran");
}

/* Schedule far tasks until the pool must grow (a new block every 256
 * slots, per-thread tables on first use), failing allocation k of each
 * schedule: a failed schedule returns PT_INVALID_TASK_ID and counts
 * nothing; every id issued stays good; destroy gives every block back. */
void test_timerthread_schedule_fails_with_invalid_id_and_keeps_issued_ids(void)
{
    enum { N = 600 };
    static pt_task_id id[2 * N]; /* a failure absorbed by a fallback issues one more */
    long live0 = pt__alloc_live();
    { /* the process's free-index table is made by the first thread to
       * exit, once: not this test's leak */
        pt_timerthread *w;
        CHECK_EQ(pt_timerthread_create(&w, NULL), 0);
        pt_timerthread_destroy(w);
        live0 = pt__alloc_live();
    }
    pt_nanos far = pt_nanotime() + 3600 * (pt_nanos)1000000000;
    /* the first schedule of a fresh instance: this thread's table (unless
     * the timer thread, started by create, made the chunk both indices share),
     * then the pool's first group and block */
    int first_failed = 0;
    for (long k = 0;; k++) {
        pt_timerthread *tt;
        CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
        pt__alloc_fail_after(k);
        pt_task_id x = pt_timerthread_schedule(tt, never_cb, NULL, far);
        bool used = !pt__alloc_fail_armed();
        pt__alloc_fail_after(-1);
        pt_timerthread_stats st;
        pt_timerthread_read_stats(tt, &st);
        if (x == PT_INVALID_TASK_ID) {
            CHECK(used);
            CHECK_EQ(st.scheduled, 0);
            first_failed++;
        } else {
            CHECK_EQ(st.scheduled, 1);
            CHECK_EQ(pt_timerthread_unschedule(tt, x), 0);
        }
        pt_timerthread_destroy(tt);
        CHECK_EQ(pt__alloc_live(), live0);
        if (!used)
            break;
    }
    CHECK(first_failed >= 2); /* the group and the block (the table falls back) */

    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
    int failed = 0, issued = 0;
    for (int i = 0; i < N; i++) {
        for (long k = 0;; k++) {
            pt__alloc_fail_after(k);
            pt_task_id x = pt_timerthread_schedule(tt, never_cb, NULL, far);
            bool used = !pt__alloc_fail_armed();
            pt__alloc_fail_after(-1);
            if (x == PT_INVALID_TASK_ID) {
                CHECK(used);
                failed++;
                continue;
            }
            CHECK(issued < 2 * N);
            id[issued++] = x;
            if (!used)
                break;
            /* the failure was absorbed (a per-thread table falls back to
             * the shared one): the schedule worked anyway */
        }
    }
    CHECK(failed >= 2); /* the blocks at slots 256 and 512 */
    pt_timerthread_stats st;
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.scheduled, (uint64_t)issued);
    /* every issued id is distinct and still cancels its own task */
    for (int i = 0; i < issued; i++)
        CHECK_EQ(pt_timerthread_unschedule(tt, id[i]), 0);
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.unscheduled, (uint64_t)issued);
    CHECK_EQ(st.pending, 0);
    /* and a due task still runs */
    atomic_int ran = 0;
    CHECK(pt_timerthread_schedule(tt, tt_flag_cb, &ran, 0) != PT_INVALID_TASK_ID);
    pt_nanos deadline = pt_nanotime() + 10 * (pt_nanos)1000000000;
    while (atomic_load(&ran) == 0) {
        CHECK(pt_nanotime() < deadline);
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    pt_timerthread_destroy(tt);
    CHECK_EQ(pt__alloc_live(), live0);
}
