/* Memory stays bounded: the RPC pattern (schedule a timeout, cancel it at
 * once) reuses slots instead of growing the pool, and threads that come
 * and go hand their caches on instead of stranding them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "timerthread/task_pool.h"
#include "util.h"

/* Many million pairs in a normal build; scaled down so a sanitizer build
 * stays near a second. PT_TT_RPC_PAIRS in the environment overrides. */
#ifdef PT__SANITIZED
#define RPC_PAIRS 400000L
#else
#define RPC_PAIRS 8000000L
#endif

#define KICK 8192L

void test_rpc_pattern_keeps_pool_bounded(void)
{
    long pairs = RPC_PAIRS;
    const char *env = getenv("PT_TT_RPC_PAIRS");
    if (env && atol(env) > 0)
        pairs = atol(env);
    pt_timerthread *tt = make();
    long answers[3] = {0, 0, 0}; /* -1, 0, 1 */
    for (long i = 0; i < pairs; i++) {
        /* Every KICK pairs, wait until the timer thread has drained its
         * buckets (freeing the removed tasks): the bound below is then on
         * reuse, whatever the scheduler does to the timer thread (a fixed
         * share of the pairs was a bound on its speed, and failed 3 in 3
         * ASan runs next to CPU hogs). */
        if (i % KICK == 0)
            kick(tt);
        /* A 1 ms timeout: the timer thread meets (and frees) the removed
         * tasks about once a millisecond. A rare pair whose producer was
         * preempted that long fires first; that is allowed. */
        pt_task_id id = pt_timerthread_schedule(tt, noop, NULL, pt_nanotime() + MS);
        CHECK(id != PT_INVALID_TASK_ID);
        int r = pt_timerthread_unschedule(tt, id);
        CHECK(r >= -1 && r <= 1);
        answers[r + 1]++;
    }
    uint32_t slots = pt__timerthread_pool_slots(tt);
    printf("%ld pairs: %ld removed, %ld running, %ld ran; pool %u slots (%u KiB)\n", pairs,
           answers[1], answers[2], answers[0], slots, slots / 16);
    /* Without reuse the pool would hold a slot per pair. With it, the
     * removed tasks of one KICK of pairs at most, plus the caches' chains
     * and the last block. */
    CHECK(slots <= 4 * KICK);
    pt_nanos end = pt_nanotime() + BOUND;
    pt_timerthread_stats st = stats(tt);
    while (st.pending != 0) {
        CHECK(pt_nanotime() < end);
        nap();
        st = stats(tt);
    }
    long kicks = (pairs + KICK - 1) / KICK; /* each one a task that ran */
    CHECK_EQ(st.scheduled, pairs + kicks);
    CHECK_EQ(st.unscheduled, answers[1]);
    CHECK_EQ(st.triggered, pairs - answers[1] + kicks);
    pt_timerthread_destroy(tt);
}

struct churn {
    pt_timerthread *tt;
    uint32_t index;
};

static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    c->index = pt__thread_index();
    for (int i = 0; i < 100; i++) {
        pt_task_id id = pt_timerthread_schedule(c->tt, noop, NULL, pt_nanotime() + HOUR);
        CHECK(id != PT_INVALID_TASK_ID);
        CHECK_EQ(pt_timerthread_unschedule(c->tt, id), 0);
    }
    return NULL;
}

/* Run n threads, then kick the timer thread with a due task and wait for
 * it: removed tasks are freed only when the thread wakes, and the hour-out
 * deadlines here never wake it (bRPC's design). */
static void run_churn(struct churn *c, int n)
{
    pthread_t th[4];
    for (int i = 0; i < n; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, churn_thread, &c[i]), 0);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    kick(c[0].tt);
}

void test_thread_churn_reuses_caches(void)
{
    pt_timerthread *tt = make();
    /* An exited thread's index goes to the next new thread. This thread
     * and the timer thread take theirs first: the timer thread takes its
     * index as it starts, which a kick proves has happened (else it could
     * take the one thread a gives back, as CI once saw: 2 != 1). */
    (void)pt__thread_index();
    kick(tt);
    struct churn a = {tt, 0}, b = {tt, 0};
    run_churn(&a, 1);
    run_churn(&b, 1);
    CHECK_EQ(b.index, a.index);

    /* So do its cached tasks: 400 threads each strand about 28 tasks in
     * their caches (they take two chains of 64 and use 100), which would
     * add up to over 11000 slots if nobody inherited them. */
    for (int round = 0; round < 100; round++) {
        struct churn c[4];
        for (int i = 0; i < 4; i++)
            c[i] = (struct churn){tt, 0};
        run_churn(c, 4);
    }
    uint32_t slots = pt__timerthread_pool_slots(tt);
    printf("pool after 402 threads: %u slots\n", slots);
    CHECK(slots <= 4096);
    pt_timerthread_destroy(tt);
}

/* Waits until tt holds at most `most` tasks (taken from its pool and not
 * given back): a bound on waiting, not on speed. Returns what it holds. */
static uint64_t wait_held_at_most(pt_timerthread *tt, uint64_t most)
{
    pt_nanos end = pt_nanotime() + BOUND;
    uint64_t held;
    while ((held = pt__timerthread_held(tt)) > most) {
        if (pt_nanotime() > end) {
            fprintf(stderr, "the timer thread still holds %llu tasks, want <= %llu\n",
                    (unsigned long long)held, (unsigned long long)most);
            abort();
        }
        nap();
    }
    return held;
}

#ifdef PT__SANITIZED
#define FAR_TASKS 20000L
#else
#define FAR_TASKS 100000L
#endif
#define RECLAIM_EVERY 4096L /* timerthread.c's TT_RECLAIM_EVERY */

/* The RPC pattern with a far timeout: nothing wakes the timer thread for
 * its deadlines, so before reclaiming every removed task stayed in its
 * bucket for the hour. Now every 4096th unschedule has the thread pull the
 * buckets: what is left is the removed tasks after the last request. */
void test_removed_far_tasks_in_buckets_are_reclaimed(void)
{
    pt_timerthread *tt = make();
    kick(tt); /* the thread has started and taken its index */
    for (long i = 0; i < FAR_TASKS; i++) {
        pt_task_id id = pt_timerthread_schedule(tt, noop, NULL, pt_nanotime() + HOUR);
        CHECK(id != PT_INVALID_TASK_ID);
        CHECK_EQ(pt_timerthread_unschedule(tt, id), 0);
    }
    uint64_t held = wait_held_at_most(tt, FAR_TASKS % RECLAIM_EVERY);
    uint32_t slots = pt__timerthread_pool_slots(tt);
    printf("%ld removed far tasks: %llu still held, pool %u slots\n", FAR_TASKS,
           (unsigned long long)held, slots);
    CHECK_EQ(stats(tt).pending, 0);
    pt_timerthread_destroy(tt);
}

/* Far tasks pulled into the heap while pending, then removed: the sweep
 * frees them once they are a quarter of the heap, over and over as the
 * removals go on, so at the end at most a quarter of what was left at the
 * last request is held: under RECLAIM_EVERY here (the top of
 * timerthread.c has the rule). */
void test_removed_far_tasks_in_the_heap_are_swept(void)
{
    pt_timerthread *tt = make();
    pt_task_id *ids = malloc(FAR_TASKS * sizeof *ids);
    CHECK(ids != NULL);
    for (long i = 0; i < FAR_TASKS; i++) {
        ids[i] = pt_timerthread_schedule(tt, noop, NULL, pt_nanotime() + HOUR + i);
        CHECK(ids[i] != PT_INVALID_TASK_ID);
    }
    kick(tt); /* the thread pulled every bucket: all of them are in its heap */
    CHECK(pt__timerthread_held(tt) >= (uint64_t)FAR_TASKS);
    for (long i = 0; i < FAR_TASKS; i++)
        CHECK_EQ(pt_timerthread_unschedule(tt, ids[i]), 0);
    uint64_t held = wait_held_at_most(tt, RECLAIM_EVERY);
    printf("%ld far tasks removed from the heap: %llu still held\n", FAR_TASKS,
           (unsigned long long)held);
    CHECK_EQ(stats(tt).pending, 0);
    free(ids);
    pt_timerthread_destroy(tt);
}

/* With a request on every unschedule (the tests' tuning) and no sweep
 * minimum, every removed task is given back, from bucket and heap alike,
 * while pending ones stay: held counts exactly the pending. */
void test_reclaim_on_every_unschedule_gives_back_every_removed_task(void)
{
    pt_timerthread *tt = make();
    pt__timerthread_tune_reclaim(tt, 1, 0);
    enum { N = 2000 };
    pt_task_id ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = pt_timerthread_schedule(tt, noop, NULL, pt_nanotime() + HOUR + i);
        CHECK(ids[i] != PT_INVALID_TASK_ID);
        if (i == N / 2)
            kick(tt); /* the first half in the heap, the second in buckets */
    }
    for (int i = 0; i < N; i += 2) /* every other: pending ones stay */
        CHECK_EQ(pt_timerthread_unschedule(tt, ids[i]), 0);
    wait_held_at_most(tt, N / 2);
    CHECK_EQ(stats(tt).pending, N / 2);
    for (int i = 1; i < N; i += 2)
        CHECK_EQ(pt_timerthread_unschedule(tt, ids[i]), 0);
    wait_held_at_most(tt, 0);
    for (int i = 0; i < N; i++) /* ids of freed tasks stay answerable */
        CHECK_EQ(pt_timerthread_unschedule(tt, ids[i]), -1);
    pt_timerthread_destroy(tt);
}

/* The timer thread held in a callback cannot serve a reclaim request; a
 * thread whose request finds the last one unserved drains its own bucket:
 * it frees its removed tasks and puts the pending ones back, announced, so
 * a due one among them still runs once the timer thread is free. Checked
 * while the thread is still held: nothing to wait for. */
void test_removed_tasks_are_reclaimed_by_their_thread_while_the_timer_thread_is_held(void)
{
    pt_timerthread *tt = make();
    struct gate g = {0, 0};
    hold(tt, &g);
    enum { N = 5 * 4096 + 100 };
    static pt_task_id pending[N / 7 + 1];
    int npending = 0, ndue = 0;
    atomic_int due_ran = 0;
    for (int i = 0; i < N; i++) {
        bool keep = i % 7 == 0, due = i % 14 == 0;
        pt_nanos when = due ? 0 : pt_nanotime() + HOUR;
        pt_task_id id = pt_timerthread_schedule(tt, due ? bump : noop, due ? (void *)&due_ran : NULL, when);
        CHECK(id != PT_INVALID_TASK_ID);
        if (!keep)
            CHECK_EQ(pt_timerthread_unschedule(tt, id), 0);
        else if (due)
            ndue++;
        else
            pending[npending++] = id;
    }
    /* removed tasks held: at most those since the last help, under 4096;
     * plus the pending ones and the gate's task */
    uint64_t held = pt__timerthread_held(tt);
    printf("timer thread held: %llu tasks held of %d scheduled, %d pending\n",
           (unsigned long long)held, N, npending + ndue);
    CHECK(held <= (uint64_t)(npending + ndue + 1 + RECLAIM_EVERY));
    atomic_store(&g.release, 1);
    CHECK(wait_for(&due_ran, ndue)); /* the due ones put back still run */
    for (int i = 0; i < npending; i++) /* and the far ones are still pending */
        CHECK_EQ(pt_timerthread_unschedule(tt, pending[i]), 0);
    CHECK_EQ(stats(tt).pending, 0);
    pt_timerthread_destroy(tt);
}
