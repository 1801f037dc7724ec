/* Creating and destroying instances: options, destroy drops pending tasks
 * (LeakSanitizer checks that it frees them), destroy from a callback, the
 * global instance, and many instances in a row. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "util.h"

/* Schedules a due task and a far one on tt and waits until the due one
 * has run and been counted (triggered counts once the callback returned). */
static void works(pt_timerthread *tt)
{
    atomic_int due = 0, far = 0;
    uint64_t triggered = stats(tt).triggered;
    CHECK(pt_timerthread_schedule(tt, bump, &far, pt_nanotime() + HOUR) != PT_INVALID_TASK_ID);
    CHECK(pt_timerthread_schedule(tt, bump, &due, pt_nanotime()) != PT_INVALID_TASK_ID);
    wait_triggered(tt, triggered + 1);
    CHECK_EQ(atomic_load(&due), 1);
    CHECK_EQ(atomic_load(&far), 0);
}

void test_options_zero_buckets_default_and_1025_is_einval(void)
{
    pt_timerthread *tt = (pt_timerthread *)&tt; /* a canary: refusals must not write */
    pt_timerthread_options o = {.num_buckets = 1025};
    CHECK_EQ(pt_timerthread_create(&tt, &o), -EINVAL);
    CHECK(tt == (pt_timerthread *)&tt);
    o.num_buckets = 4096;
    CHECK_EQ(pt_timerthread_create(&tt, &o), -EINVAL);
    o.num_buckets = 0xffffffffu;
    CHECK_EQ(pt_timerthread_create(&tt, &o), -EINVAL);
    CHECK(tt == (pt_timerthread *)&tt);
    CHECK_EQ(pt_timerthread_create(NULL, NULL), -EINVAL);

    unsigned ok[] = {0, 1, 13, 1024};
    for (unsigned i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        o.num_buckets = ok[i];
        tt = NULL;
        CHECK_EQ(pt_timerthread_create(&tt, &o), 0);
        CHECK(tt != NULL);
        works(tt);
        pt_timerthread_destroy(tt);
    }
    tt = NULL;
    CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
    works(tt);
    pt_timerthread_destroy(tt);
}

static atomic_int dropped_ran;

static void *schedule_far(void *arg)
{
    pt_timerthread *tt = arg;
    for (int i = 0; i < 5000; i++)
        CHECK(pt_timerthread_schedule(tt, bump, &dropped_ran, pt_nanotime() + HOUR + i) !=
              PT_INVALID_TASK_ID);
    return NULL;
}

void test_destroy_with_pending_tasks_runs_none_and_frees_all(void)
{
    pt_timerthread *tt = make();
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, schedule_far, tt), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    /* Some in the heap, some still in buckets, some removed. */
    works(tt);
    pt_task_id ids[100];
    for (int i = 0; i < 100; i++)
        ids[i] = pt_timerthread_schedule(tt, bump, &dropped_ran, pt_nanotime() + HOUR);
    for (int i = 0; i < 100; i += 2)
        CHECK_EQ(pt_timerthread_unschedule(tt, ids[i]), 0);
    CHECK_EQ(stats(tt).pending, 15000 + 50 + 1);
    pt_timerthread_destroy(tt); /* LeakSanitizer (ASan build) checks it all went */
    CHECK_EQ(atomic_load(&dropped_ran), 0);
}

static int timer_threads(void) { return pt_test_threads_named("pt_timerthread"); }

struct self_destroy {
    pt_timerthread *tt;
    atomic_int far_ran;
    _Atomic pt_task_id after; /* what schedule answered after destroy */
    atomic_int done;
};

static void destroy_self(void *arg)
{
    struct self_destroy *s = arg;
    pt_timerthread_destroy(s->tt);
    atomic_store(&s->after, pt_timerthread_schedule(s->tt, bump, &s->far_ran, 0));
    atomic_store(&s->done, 1);
}

void test_destroy_from_own_callback_stops_and_frees(void)
{
    int before = timer_threads();
    struct self_destroy s = {.after = 12345};
    CHECK_EQ(pt_timerthread_create(&s.tt, NULL), 0);
    pt_timerthread_schedule(s.tt, bump, &s.far_ran, pt_nanotime() + HOUR);
    pt_timerthread_schedule(s.tt, destroy_self, &s, pt_nanotime());
    CHECK(wait_for(&s.done, 1));
    CHECK_EQ(atomic_load(&s.after), PT_INVALID_TASK_ID);
    /* The thread frees the instance and exits on its own; wait for it so
     * LeakSanitizer sees the end state. */
    pt_nanos end = pt_nanotime() + BOUND;
    /* >, not !=: a thread joined before `before` was read may have been
     * listed then (a joined thread lingers in /proc a moment) */
    while (timer_threads() > before) {
        CHECK(pt_nanotime() < end);
        nap();
    }
    CHECK_EQ(atomic_load(&s.far_ran), 0);
}

static void *get_global(void *arg)
{
    (void)arg;
    return pt_timerthread_global();
}

void test_global_is_created_once_and_never_destroyed(void)
{
    pthread_t th[4];
    void *got[4];
    for (int i = 0; i < 4; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, get_global, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], &got[i]);
    pt_timerthread *g = pt_timerthread_global();
    CHECK(g != NULL);
    for (int i = 0; i < 4; i++)
        CHECK(got[i] == g);
    pt_timerthread_destroy(g); /* refused: the global lives as long as the process */
    CHECK(pt_timerthread_global() == g);
    works(g);
}

void test_instances_created_and_destroyed_repeatedly(void)
{
    /* Per-thread caches are per instance: a new instance at a freed one's
     * address must not see the old one's free tasks. */
    for (int round = 0; round < 40; round++) {
        pt_timerthread *tt = make();
        atomic_int ran = 0;
        for (int i = 0; i < 200; i++) {
            pt_task_id id = pt_timerthread_schedule(tt, bump, &ran, pt_nanotime() + HOUR);
            CHECK(id != PT_INVALID_TASK_ID);
            CHECK_EQ(pt_timerthread_unschedule(tt, id), 0);
        }
        works(tt);
        pt_timerthread_destroy(tt);
        CHECK_EQ(atomic_load(&ran), 0);
    }
}
