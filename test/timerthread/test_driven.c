/* A driven instance (pt_timerthread_create_driven): no thread, its tasks
 * run only inside pt_timerthread_run, in `when` order, on the caller,
 * each exactly when its time is at or before the driver's now; next
 * answers the earliest pending; schedules from other threads and from
 * the tasks themselves are seen by the next run. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NTASKS 2000

struct drv {
    pt_nanos when[NTASKS];
    atomic_int ran_at_run[NTASKS]; /* which run (1-based) ran it; 0: none */
    pt_task_id id[NTASKS];
    int run_no;
    pt_nanos last_when; /* order within a run */
    atomic_int out_of_order, ran;
    pthread_t runner;
};

struct drv_task {
    struct drv *d;
    int i;
};
static struct drv_task args[NTASKS];

static void drv_task(void *arg)
{
    struct drv_task *a = arg;
    struct drv *d = a->d;
    if (!pthread_equal(pthread_self(), d->runner) || d->when[a->i] < d->last_when)
        atomic_fetch_add(&d->out_of_order, 1);
    d->last_when = d->when[a->i];
    atomic_store(&d->ran_at_run[a->i], d->run_no);
    atomic_fetch_add(&d->ran, 1);
}

struct sched_half {
    pt_timerthread *tt;
    struct drv *d;
    int from, to;
};

static void *schedule_half(void *arg)
{
    struct sched_half *h = arg;
    for (int i = h->from; i < h->to; i++)
        h->d->id[i] = pt_timerthread_schedule(h->tt, drv_task, &args[i], h->d->when[i]);
    return NULL;
}

void test_driven_instance_runs_due_tasks_only_when_run_in_order(void)
{
    static struct drv d;
    memset(&d, 0, sizeof d);
    d.runner = pthread_self();
    int threads = pt_test_threads_named("pt_timerthread");
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create_driven(&tt, NULL), 0);
    CHECK_EQ(pt_test_threads_named("pt_timerthread"), threads); /* no thread of its own */
    uint64_t x = 12345;
    for (int i = 0; i < NTASKS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        d.when[i] = 1000 + (pt_nanos)(x % 100000);
        args[i] = (struct drv_task){&d, i};
    }
    /* scheduled from two threads: two buckets */
    struct sched_half h[2] = {{tt, &d, 0, NTASKS / 2}, {tt, &d, NTASKS / 2, NTASKS}};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, schedule_half, &h[1]), 0);
    schedule_half(&h[0]);
    CHECK_EQ(pthread_join(th, NULL), 0);
    /* a tenth unscheduled: never run, whatever the runs */
    for (int i = 0; i < NTASKS; i += 10)
        CHECK_EQ(pt_timerthread_unschedule(tt, d.id[i]), 0);
    CHECK_EQ(atomic_load(&d.ran), 0);
    pt_nanos min = PT_MAXWHEN;
    for (int i = 0; i < NTASKS; i++)
        if (i % 10 && d.when[i] < min)
            min = d.when[i];
    pt_nanos next = pt_timerthread_next(tt);
    CHECK(next >= 1000 && next <= min); /* perhaps an unscheduled one's */
    /* runs at rising nows: each runs exactly what came due since the last */
    pt_nanos nows[] = {999, 5000, 5000, 50000, 100999, 200000};
    pt_nanos prev = 0;
    for (int r = 0; r < 6; r++) {
        d.run_no = r + 1;
        d.last_when = 0;
        int n = pt_timerthread_run(tt, nows[r]);
        int expect = 0;
        for (int i = 0; i < NTASKS; i++)
            if (i % 10 && d.when[i] <= nows[r] && d.when[i] > prev)
                expect++;
        CHECK_EQ(n, expect);
        prev = nows[r];
    }
    CHECK_EQ(atomic_load(&d.out_of_order), 0);
    for (int i = 0; i < NTASKS; i++) {
        int run = atomic_load(&d.ran_at_run[i]);
        if (i % 10 == 0) {
            CHECK_EQ(run, 0);
            continue;
        }
        /* the first run whose now reached its time */
        int want = 1;
        while (nows[want - 1] < d.when[i])
            want++;
        CHECK_EQ(run, want);
    }
    CHECK_EQ(pt_timerthread_next(tt), 0);
    pt_timerthread_stats st;
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.pending, 0);
    pt_timerthread_destroy(tt);
}

/* A task that schedules another already due: the same run takes it, as
 * the thread's loop would before it slept. */
static pt_timerthread *chain_tt;
static atomic_int chain_ran;

static void chain_task(void *arg)
{
    int left = (int)(intptr_t)arg;
    atomic_fetch_add(&chain_ran, 1);
    if (left > 0)
        CHECK(pt_timerthread_schedule(chain_tt, chain_task, (void *)(intptr_t)(left - 1), 50 - left) !=
              PT_INVALID_TASK_ID);
}

void test_driven_task_scheduled_due_by_a_task_runs_in_the_same_run(void)
{
    CHECK_EQ(pt_timerthread_create_driven(&chain_tt, NULL), 0);
    atomic_store(&chain_ran, 0);
    CHECK(pt_timerthread_schedule(chain_tt, chain_task, (void *)(intptr_t)9, 10) !=
          PT_INVALID_TASK_ID);
    CHECK(pt_timerthread_schedule(chain_tt, chain_task, (void *)(intptr_t)0, 1000) !=
          PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_run(chain_tt, 100), 10);
    CHECK_EQ(pt_timerthread_next(chain_tt), 1000);
    CHECK_EQ(pt_timerthread_run(chain_tt, 1000), 1);
    CHECK_EQ(atomic_load(&chain_ran), 11);
    /* destroy drops what was never run */
    CHECK(pt_timerthread_schedule(chain_tt, chain_task, NULL, 5000) != PT_INVALID_TASK_ID);
    pt_timerthread_destroy(chain_tt);
    CHECK_EQ(atomic_load(&chain_ran), 11);
}
