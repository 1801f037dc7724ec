/* Differential fuzzing of the TimerThread's id/version protocol
 * (timerthread.c's table): the input is decoded into schedules (far in
 * the future, never, or due at once), unschedules of issued ids, of stale
 * ids and of forged ones, injected allocation failures, and waits; a
 * reference that knows which ids were issued and what became of each
 * says what every answer must be:
 *  - an id is never 0, its version is even, and no two live tasks share one;
 *  - unschedule of a pending far task answers 0, and again -1;
 *  - unschedule of a task due at once answers 0 (then it must never run),
 *    1 (it is running: it must have run by the end) or -1 (it has run, and
 *    its callback's effects are visible at once);
 *  - a stale id (its task done, its slot maybe reused) and a forged one
 *    (odd version, version 0, a slot never handed out) answer -1 and do
 *    not touch the task now in the slot;
 *  - a schedule fails (PT_INVALID_TASK_ID) only with a failure injected;
 *  - every due task not removed runs exactly once, and soon (a bounded wait:
 *    the liveness the TimerThread promises);
 *  - the stats add up, and destroy frees every block the instance allocated;
 *  - removed tasks are given back: with the reclaim tuned to a request on
 *    every unschedule (one input in four; others every 2nd or 8th, or the
 *    default 4096th, so requests race with due tasks), the tasks the
 *    instance holds at the end come down to the far ones still pending.
 * The timer thread is real, so due tasks race with unschedule; the
 * reference accepts each outcome the protocol allows and checks its
 * consequence. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "timerthread/task_pool.h" /* the reclaim's test hooks */
#include "fuzz_fail.h"
#include "ptimer/timerthread.h"

#ifndef PT_FUZZ_ENTRY
#define PT_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

#define MAX_TASKS 48
#define MAX_OPS 160

enum rstate { R_PENDING, R_REMOVED, R_DONE /* due: ran, or running and answered 1/-1 */ };

struct rec {
    pt_task_id id;
    bool due;
    enum rstate state;
    atomic_int ran; /* times the callback ran */
};

static struct {
    pt_timerthread *tt;
    struct rec r[MAX_TASKS];
    int n;
    uint64_t scheduled, unscheduled;
    const uint8_t *p;
    size_t len;
    size_t op;
} Z;

#define fail(...) fuzz_fail("fuzz_timerthread", Z.op, __VA_ARGS__)

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__VA_ARGS__);                                                                     \
    } while (0)

static uint8_t take(void)
{
    if (!Z.len)
        return 0;
    Z.len--;
    return *Z.p++;
}

static void task_fn(void *arg)
{
    struct rec *r = arg;
    atomic_fetch_add_explicit(&r->ran, 1, memory_order_relaxed);
}

static void never_fn(void *arg)
{
    (void)arg;
    fail("a task scheduled far in the future ran");
}

/* Waits until every due task that was not removed has run; a bound of
 * seconds, not a guess: a due task the thread never runs is a bug. */
static void wait_due(void)
{
    pt_nanos deadline = pt_nanotime() + 10 * (pt_nanos)1000000000;
    for (int k = 0; k < Z.n; k++) {
        struct rec *r = &Z.r[k];
        if (!r->due || r->state == R_REMOVED)
            continue;
        while (atomic_load_explicit(&r->ran, memory_order_acquire) == 0) {
            EXPECT(pt_nanotime() < deadline, "task %d (due at once) has not run after 10 s", k);
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        r->state = R_DONE;
    }
}

static void schedule(bool due, bool never, bool injected)
{
    if (Z.n == MAX_TASKS)
        return;
    struct rec *r = &Z.r[Z.n];
    atomic_store(&r->ran, 0);
    pt_nanos when = due ? 0 : never ? -1 : pt_nanotime() + 3600 * (pt_nanos)1000000000;
    pt_task_id id = pt_timerthread_schedule(Z.tt, due ? task_fn : never_fn, r, when);
    if (id == PT_INVALID_TASK_ID) {
        EXPECT(injected && !pt__alloc_fail_armed(), "schedule failed with no failure injected");
        return;
    }
    uint32_t v = (uint32_t)(id >> 32);
    EXPECT(v != 0 && !(v & 1), "id %#llx has version %u", (unsigned long long)id, v);
    for (int k = 0; k < Z.n; k++)
        EXPECT(Z.r[k].id != id || Z.r[k].state != R_PENDING,
               "id %#llx issued to task %d while task %d holds it", (unsigned long long)id, Z.n, k);
    r->id = id;
    r->due = due;
    r->state = R_PENDING;
    Z.n++;
    Z.scheduled++;
}

static void unschedule(int k)
{
    struct rec *r = &Z.r[k];
    int got = pt_timerthread_unschedule(Z.tt, r->id);
    if (!r->due) {
        int want = r->state == R_PENDING ? 0 : -1;
        EXPECT(got == want, "unschedule of far task %d (state %d) answered %d, want %d", k,
               r->state, got, want);
        if (got == 0) {
            r->state = R_REMOVED;
            Z.unscheduled++;
        }
        return;
    }
    if (r->state == R_REMOVED) {
        EXPECT(got == -1, "second unschedule of removed task %d answered %d", k, got);
        return;
    }
    switch (got) {
    case 0:
        EXPECT(r->state == R_PENDING, "unschedule of task %d that ran answered 0", k);
        r->state = R_REMOVED;
        Z.unscheduled++;
        break;
    case 1: /* running now, on the timer thread */
        r->state = R_DONE;
        break;
    case -1: /* done: its effects are visible (acquire in unschedule) */
        EXPECT(atomic_load_explicit(&r->ran, memory_order_relaxed) == 1,
               "unschedule of task %d answered -1 before its callback's effects", k);
        r->state = R_DONE;
        break;
    default:
        fail("unschedule answered %d", got);
    }
}

/* Ids that were never issued, or no longer name a live task. */
static void unschedule_forged(uint8_t how, int k)
{
    pt_task_id id = Z.n ? Z.r[k].id : ((pt_task_id)2 << 32);
    switch (how % 5) {
    case 0:
        id = PT_INVALID_TASK_ID;
        break;
    case 1:
        id |= (pt_task_id)1 << 32;
        break; /* odd version */
    case 2:
        id &= 0xffffffffull;
        break; /* version 0 */
    case 3:
        id = (id & ~0xffffffffull) | 0xfffffff0u;
        break; /* slot never handed out */
    /* A version two ahead of a finished task's is the version its free
     * slot now holds and the next task there will get: unschedule answers
     * 0 to it, though no task is there (see test/README.md: a forged id
     * can name a free slot, not only a live task). Four ahead is neither
     * while the slot has not been reused; once it has (a thread that helps
     * the reclaim frees removed tasks into its own cache, whose next
     * schedule takes them back), it may be the free version again: skip. */
    default:
        id += (pt_task_id)4 << 32;
        for (int j = 0; j < Z.n; j++)
            if ((uint32_t)Z.r[j].id == (uint32_t)id && Z.r[j].id != Z.r[k].id)
                return;
        break;
    }
    /* a forged id equal to a live one acts on it (timerthread.h): skip */
    for (int j = 0; j < Z.n; j++)
        if (Z.r[j].id == id && Z.r[j].state == R_PENDING)
            return;
    int got = pt_timerthread_unschedule(Z.tt, id);
    EXPECT(got == -1, "unschedule of forged id %#llx answered %d", (unsigned long long)id, got);
}

static void warm_up(void)
{
    /* The first thread to exit allocates the process's free-index table
     * (task_pool.c), once for the life of the process: not a leak. */
    static bool done;
    if (done)
        return;
    done = true;
    pt_timerthread *tt;
    if (pt_timerthread_create(&tt, NULL) == 0)
        pt_timerthread_destroy(tt);
}

int PT_FUZZ_ENTRY(const uint8_t *data, size_t size);
int PT_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    warm_up();
    long live0 = pt__alloc_live();
    memset(&Z, 0, sizeof Z);
    Z.p = data;
    Z.len = size;
    pt_timerthread_options opt = {.num_buckets = 1 + (size ? data[0] % 4 : 0)};
    EXPECT(pt_timerthread_create(&Z.tt, &opt) == 0, "create failed");
    static const uint32_t every[4] = {1, 2, 8, 0}; /* 0: the default */
    uint32_t reclaim_every = every[size ? (data[0] >> 2) & 3 : 3];
    if (reclaim_every)
        pt__timerthread_tune_reclaim(Z.tt, reclaim_every, 0);

    for (Z.op = 0; Z.len && Z.op < MAX_OPS; Z.op++) {
        uint8_t code = take();
        bool injected = false;
        if (code >= 0xf0) {
            pt__alloc_fail_after(code & 3);
            injected = true;
            code = take();
        }
        uint8_t arg = take();
        switch (code % 8) {
        case 0:
        case 1:
            schedule(false, arg & 1, injected);
            break;
        case 2:
        case 3:
            schedule(true, false, injected);
            break;
        case 4:
        case 5:
            if (Z.n)
                unschedule(arg % Z.n);
            break;
        case 6:
            unschedule_forged(arg, Z.n ? take() % Z.n : 0);
            break;
        default:
            wait_due();
            break;
        }
        pt__alloc_fail_after(-1);
    }

    wait_due();
    for (int k = 0; k < Z.n; k++) {
        struct rec *r = &Z.r[k];
        int ran = atomic_load(&r->ran);
        if (r->due)
            EXPECT(ran == (r->state == R_REMOVED ? 0 : 1), "due task %d (state %d) ran %d times", k,
                   r->state, ran);
    }
    uint64_t due_run = 0;
    for (int k = 0; k < Z.n; k++)
        due_run += Z.r[k].due && Z.r[k].state != R_REMOVED;
    /* triggered counts a task once its callback has returned, a few
     * instructions after the callback's own effects are visible: wait for
     * it (bounded), never past the number of tasks that ran */
    pt_timerthread_stats st;
    pt_nanos deadline = pt_nanotime() + 10 * (pt_nanos)1000000000;
    for (;;) {
        pt_timerthread_read_stats(Z.tt, &st);
        EXPECT(st.triggered <= due_run, "stats: triggered %llu, but only %llu tasks ran",
               (unsigned long long)st.triggered, (unsigned long long)due_run);
        if (st.triggered == due_run)
            break;
        EXPECT(pt_nanotime() < deadline, "stats: triggered stuck at %llu, want %llu",
               (unsigned long long)st.triggered, (unsigned long long)due_run);
        sched_yield();
    }
    EXPECT(st.scheduled == Z.scheduled, "stats: scheduled %llu, want %llu",
           (unsigned long long)st.scheduled, (unsigned long long)Z.scheduled);
    EXPECT(st.unscheduled == Z.unscheduled, "stats: unscheduled %llu, want %llu",
           (unsigned long long)st.unscheduled, (unsigned long long)Z.unscheduled);
    EXPECT(st.pending == st.scheduled - st.triggered - st.unscheduled, "stats: pending %llu",
           (unsigned long long)st.pending);
    if (reclaim_every == 1) {
        /* the last unschedule asked for a reclaim: every removed task goes
         * back to the pool (bounded wait), and nothing pending does */
        uint64_t far = 0;
        for (int k = 0; k < Z.n; k++)
            far += !Z.r[k].due && Z.r[k].state == R_PENDING;
        deadline = pt_nanotime() + 10 * (pt_nanos)1000000000;
        uint64_t held;
        while ((held = pt__timerthread_held(Z.tt)) != far) {
            EXPECT(held > far, "holds %llu tasks, fewer than the %llu pending",
                   (unsigned long long)held, (unsigned long long)far);
            EXPECT(pt_nanotime() < deadline, "still holds %llu tasks after 10 s, want %llu",
                   (unsigned long long)held, (unsigned long long)far);
            sched_yield();
        }
    }
    pt_timerthread_destroy(Z.tt);
    /* after destroy nothing may run: a removed due task stays unrun */
    for (int k = 0; k < Z.n; k++)
        if (Z.r[k].due && Z.r[k].state == R_REMOVED)
            EXPECT(atomic_load(&Z.r[k].ran) == 0, "removed task %d ran", k);
    EXPECT(pt__alloc_live() == live0, "%ld blocks leaked", pt__alloc_live() - live0);
    return 0;
}
