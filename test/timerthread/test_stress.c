/* Concurrency stress: several threads schedule tasks a few milliseconds out
 * (some already due) on two instances, and unschedule random ones -- their
 * own and other threads' -- while the tasks fire; some callbacks cancel
 * themselves, some schedule a follow-up task. Bounded by an op count and a wall-clock cap.
 *
 * Proves: every task runs at most once; no task runs after an unschedule
 * answered 0 for it, and at most one unschedule answers 0; every task not
 * removed runs exactly once; each answer agrees with the outcome (1 or -1:
 * it ran); and the stats add up. TSan checks the memory orders. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

#ifdef PT__SANITIZED
#define OPS_PER_THREAD 100000
#else
#define OPS_PER_THREAD 1000000
#endif
#define NTHREADS 4
#define STRESS_SECONDS 4
#define MAXREC (NTHREADS * OPS_PER_THREAD)

struct rec {
    _Atomic pt_task_id id; /* 0 until schedule returned */
    atomic_int runs;
    atomic_int removed;   /* unschedules that answered 0 */
    atomic_int saw_other; /* unschedules that answered 1 or -1 */
    atomic_int self_cancel;
    int inst;
    bool chain; /* its callback schedules a follow-up task (from the timer thread) */
};

static struct rec *recs;
static atomic_long nrecs;
static pt_timerthread *insts[2];
static pt_nanos stop_at;
static atomic_bool workers_running; /* follow-ups are scheduled only while set */

static long schedule_one(uint64_t x, int inst);

static void fire(void *arg)
{
    struct rec *r = arg;
    if (atomic_fetch_add(&r->runs, 1) != 0) {
        fprintf(stderr, "task %ld ran twice\n", (long)(r - recs));
        abort();
    }
    if (atomic_load(&r->removed) != 0) {
        fprintf(stderr, "task %ld ran after unschedule answered 0\n", (long)(r - recs));
        abort();
    }
    if (atomic_load(&r->self_cancel)) {
        pt_task_id id = atomic_load(&r->id);
        /* its own id, if the scheduler has stored it yet: running now */
        if (id != PT_INVALID_TASK_ID)
            CHECK_EQ(pt_timerthread_unschedule(insts[r->inst], id), 1);
    }
    if (r->chain && atomic_load(&workers_running))
        schedule_one((uint64_t)(r - recs) * 0x9e3779b97f4a7c15ULL, r->inst);
}

/* A new task on instance `inst` (-1: chosen by x), due between 1 ms ago
 * and 3 ms from now. Returns its record, or -1 when the records ran out. */
static long schedule_one(uint64_t x, int inst)
{
    long i = atomic_fetch_add(&nrecs, 1);
    if (i >= MAXREC)
        return -1;
    struct rec *r = &recs[i];
    r->inst = inst >= 0 ? inst : (int)((x >> 8) & 1);
    r->chain = ((x >> 13) & 15) == 0;
    atomic_store(&r->self_cancel, ((x >> 9) & 15) == 0);
    pt_nanos when = pt_nanotime() + (pt_nanos)((x >> 20) % 4000) * 1000 - MS;
    pt_task_id id = pt_timerthread_schedule(insts[r->inst], fire, r, when);
    CHECK(id != PT_INVALID_TASK_ID);
    atomic_store(&r->id, id);
    return i;
}

static void cancel(struct rec *r)
{
    pt_task_id id = atomic_load(&r->id);
    if (id == PT_INVALID_TASK_ID)
        return;
    int a = pt_timerthread_unschedule(insts[r->inst], id);
    if (a == 0) {
        if (atomic_fetch_add(&r->removed, 1) != 0) {
            fprintf(stderr, "two unschedules of task %ld answered 0\n", (long)(r - recs));
            abort();
        }
    } else {
        CHECK(a == 1 || a == -1);
        atomic_fetch_add(&r->saw_other, 1);
    }
}

static void *worker(void *arg)
{
    uint64_t seed = 0x9e3779b97f4a7c15ULL * (uintptr_t)arg + 1;
    long mine[64];
    int nmine = 0;
    for (int op = 0; op < OPS_PER_THREAD; op++) {
        uint64_t x = pt__xorshift64(&seed);
        if ((op & 255) == 0) {
            if (pt_nanotime() > stop_at)
                break;
            /* Now and then pause, so the timer thread also sleeps and is
             * woken, not only kept busy. */
            struct timespec ts = {0, (long)(x % 500000)};
            nanosleep(&ts, NULL);
        }
        unsigned kind = (unsigned)(x % 8);
        if (kind < 5) { /* schedule */
            long i = schedule_one(x, -1);
            if (i < 0)
                return NULL;
            mine[nmine++ % 64] = i;
        } else if (kind < 7) { /* unschedule one of mine, recent */
            if (nmine)
                cancel(&recs[mine[(x >> 8) % (nmine < 64 ? nmine : 64)]]);
        } else { /* unschedule anyone's */
            long n = atomic_load(&nrecs);
            if (n > 0)
                cancel(&recs[(x >> 8) % (n < MAXREC ? n : MAXREC)]);
        }
    }
    return NULL;
}

void test_concurrent_schedule_unschedule_while_firing(void)
{
    recs = calloc(MAXREC, sizeof *recs);
    CHECK(recs != NULL);
    for (int k = 0; k < 2; k++) {
        pt_timerthread_options o = {.num_buckets = k ? 3 : 0};
        CHECK_EQ(pt_timerthread_create(&insts[k], &o), 0);
    }
    stop_at = pt_nanotime() + STRESS_SECONDS * SEC;
    atomic_store(&workers_running, true);
    pthread_t th[NTHREADS];
    for (long t = 0; t < NTHREADS; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, worker, (void *)t), 0);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    atomic_store(&workers_running, false);

    /* Every task not removed must run: they are all due within 3 ms (a
     * follow-up scheduled by a callback counts as scheduled before the
     * callback's own task counts as triggered, so pending stays above 0). */
    pt_nanos end = pt_nanotime() + 30 * SEC;
    for (int k = 0; k < 2; k++) {
        pt_timerthread_stats st;
        for (;;) {
            pt_timerthread_read_stats(insts[k], &st);
            if (st.pending == 0)
                break;
            CHECK(pt_nanotime() < end);
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    /* Nothing pending and no workers: only a callback could schedule, and
     * none is left to run. */
    long n = atomic_load(&nrecs);
    if (n > MAXREC)
        n = MAXREC;
    long removed = 0, ran = 0, per[2] = {0, 0};
    for (long i = 0; i < n; i++) {
        struct rec *r = &recs[i];
        int runs = atomic_load(&r->runs), rm = atomic_load(&r->removed);
        CHECK(atomic_load(&r->id) != PT_INVALID_TASK_ID);
        CHECK(rm <= 1 && runs <= 1);
        CHECK_EQ(runs + rm, 1); /* exactly one outcome */
        removed += rm;
        ran += runs;
        per[r->inst]++;
        /* After all that, the id is dead. */
        CHECK_EQ(pt_timerthread_unschedule(insts[r->inst], atomic_load(&r->id)), -1);
    }
    pt_timerthread_stats st[2];
    for (int k = 0; k < 2; k++)
        pt_timerthread_read_stats(insts[k], &st[k]);
    CHECK_EQ(st[0].scheduled + st[1].scheduled, n);
    CHECK_EQ(st[0].scheduled, per[0]);
    CHECK_EQ(st[0].triggered + st[1].triggered, ran);
    CHECK_EQ(st[0].unscheduled + st[1].unscheduled, removed);
    printf("%ld tasks: %ld ran, %ld removed; wakeups %llu + %llu\n", n, ran, removed,
           (unsigned long long)st[0].wakeups, (unsigned long long)st[1].wakeups);
    for (int k = 0; k < 2; k++)
        pt_timerthread_destroy(insts[k]);
    free(recs);
}
