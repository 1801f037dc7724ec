/* Memory stays bounded: the RPC pattern (schedule a timeout, cancel it at
 * once) reuses slots instead of growing the pool, and threads that come
 * and go hand their caches on instead of stranding them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ptimer/task_pool.h"
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
