/* unschedule's three answers, each in every situation that produces it:
 * 0 before the task runs; 1 while it runs (from its own callback, and from
 * another thread racing with it); -1 after it ran, twice, for a stale id
 * whose slot holds a later task, and for ids never issued. Plus bad input. */
#include <sched.h>
#include <stdlib.h>

#include "timerthread/task_pool.h"
#include "util.h"

void test_unschedule_before_run_returns_zero_and_it_never_runs(void)
{
    pt_timerthread *tt = make();
    atomic_int far = 0, soon = 0, after = 0;
    struct gate g = {0, 0};
    hold(tt, &g); /* b cannot run before its unschedule, however late that is */
    pt_nanos b_when = pt_nanotime() + MS;
    pt_task_id a = pt_timerthread_schedule(tt, bump, &far, pt_nanotime() + HOUR);
    pt_task_id b = pt_timerthread_schedule(tt, bump, &soon, b_when);
    CHECK(a != PT_INVALID_TASK_ID && b != PT_INVALID_TASK_ID && a != b);
    CHECK_EQ(pt_timerthread_unschedule(tt, a), 0);
    CHECK_EQ(pt_timerthread_unschedule(tt, b), 0);
    atomic_store(&g.release, 1);
    /* A later task runs: the thread has passed b's time, and b stayed removed. */
    pt_timerthread_schedule(tt, bump, &after, b_when + MS);
    CHECK(wait_for(&after, 1));
    CHECK_EQ(atomic_load(&soon), 0);
    CHECK_EQ(atomic_load(&far), 0);
    pt_timerthread_destroy(tt);
}

struct self_cancel {
    pt_timerthread *tt;
    _Atomic pt_task_id id; /* stored by the scheduler after schedule returns */
    atomic_int answer;
    atomic_int done;
};

static void cancel_self(void *arg)
{
    struct self_cancel *s = arg;
    pt_nanos end = pt_nanotime() + BOUND;
    while (atomic_load(&s->id) == PT_INVALID_TASK_ID) /* the task may beat the store */
        CHECK(pt_nanotime() < end);
    atomic_store(&s->answer, pt_timerthread_unschedule(s->tt, atomic_load(&s->id)));
    atomic_store(&s->done, 1);
}

void test_unschedule_from_own_callback_returns_one(void)
{
    pt_timerthread *tt = make();
    struct self_cancel s = {.tt = tt, .answer = 99};
    pt_task_id id = pt_timerthread_schedule(tt, cancel_self, &s, pt_nanotime() + 5 * MS);
    CHECK(id != PT_INVALID_TASK_ID);
    atomic_store(&s.id, id);
    CHECK(wait_for(&s.done, 1));
    CHECK_EQ(atomic_load(&s.answer), 1);
    wait_triggered(tt, 1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1); /* and after it returned: -1 */
    pt_timerthread_destroy(tt);
}

void test_unschedule_while_running_on_timer_thread_returns_one(void)
{
    pt_timerthread *tt = make();
    struct gate g = {0, 0};
    pt_task_id id = pt_timerthread_schedule(tt, wait_at_gate, &g, pt_nanotime());
    CHECK(id != PT_INVALID_TASK_ID);
    CHECK(wait_for(&g.running, 1));
    CHECK_EQ(pt_timerthread_unschedule(tt, id), 1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), 1); /* still running: still 1 */
    atomic_store(&g.release, 1);
    wait_triggered(tt, 1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    pt_timerthread_destroy(tt);
}

void test_unschedule_after_run_returns_minus_one(void)
{
    pt_timerthread *tt = make();
    atomic_int ran = 0;
    pt_task_id id = pt_timerthread_schedule(tt, bump, &ran, pt_nanotime() + MS);
    CHECK(id != PT_INVALID_TASK_ID);
    wait_triggered(tt, 1);
    CHECK_EQ(atomic_load(&ran), 1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    /* A task due in the past runs at once, and the same holds. */
    id = pt_timerthread_schedule(tt, bump, &ran, pt_nanotime() - SEC);
    wait_triggered(tt, 2);
    CHECK_EQ(atomic_load(&ran), 2);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    pt_timerthread_destroy(tt);
}

void test_unschedule_twice_returns_minus_one(void)
{
    pt_timerthread *tt = make();
    atomic_int ran = 0;
    pt_task_id id = pt_timerthread_schedule(tt, bump, &ran, pt_nanotime() + HOUR);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), 0);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    /* Also once the timer thread has met the removed task and freed it. */
    atomic_int after = 0;
    pt_timerthread_schedule(tt, bump, &after, pt_nanotime());
    CHECK(wait_for(&after, 1));
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    CHECK_EQ(atomic_load(&ran), 0);
    pt_timerthread_destroy(tt);
}

static void never(void *arg)
{
    (void)arg;
    CHECK(!"a removed task ran");
}

void test_unschedule_of_stale_id_after_slot_reuse_returns_minus_one(void)
{
    pt_timerthread *tt = make();
    /* Keep scheduling and removing until some slot comes back to this
     * thread with a new task; remember the last id issued per slot. Which
     * slot comes back first is up to the pool (free chains are a stack, so
     * the first task removed may wait long: CI once saw it not come back
     * within the bound). Removed tasks are freed only when the thread
     * wakes, and later deadlines do not wake it (bRPC's design), so every
     * so often a due task kicks it. */
    enum { SLOTS = 1 << 16 };
    pt_task_id *last = calloc(SLOTS, sizeof *last);
    CHECK(last != NULL);
    pt_task_id old = PT_INVALID_TASK_ID, reused = PT_INVALID_TASK_ID;
    pt_nanos end = pt_nanotime() + BOUND;
    for (long i = 0; reused == PT_INVALID_TASK_ID; i++) {
        CHECK(pt_nanotime() < end);
        pt_task_id id = pt_timerthread_schedule(tt, never, NULL, pt_nanotime() + HOUR);
        CHECK(id != PT_INVALID_TASK_ID);
        uint32_t slot = (uint32_t)id;
        CHECK(slot < SLOTS); /* the pool stays small under this pattern */
        if (last[slot] != PT_INVALID_TASK_ID) {
            old = last[slot];
            reused = id;
            break;
        }
        last[slot] = id;
        CHECK_EQ(pt_timerthread_unschedule(tt, id), 0);
        if (i % 64 == 63)
            kick(tt); /* frees the removed tasks, so the pool cannot outgrow `last` */
    }
    free(last);
    CHECK(reused != old);
    CHECK(reused >> 32 > old >> 32); /* the slot's version moved on */
    CHECK_EQ(pt_timerthread_unschedule(tt, old), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, reused), 0); /* the stale id left it alone */
    pt_timerthread_destroy(tt);
}

void test_unschedule_of_never_issued_id_returns_minus_one(void)
{
    pt_timerthread *tt = make();
    atomic_int ran = 0;
    pt_task_id live = pt_timerthread_schedule(tt, bump, &ran, pt_nanotime() + HOUR);
    uint32_t slot = (uint32_t)live, v = (uint32_t)(live >> 32);
    CHECK_EQ(pt_timerthread_unschedule(tt, PT_INVALID_TASK_ID), -1);
    /* slots never handed out, from just past the pool to the last one */
    CHECK_EQ(pt_timerthread_unschedule(tt, ((pt_task_id)2 << 32) | pt__timerthread_pool_slots(tt)),
             -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, ((pt_task_id)2 << 32) | 0x7fffffffu), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, ((pt_task_id)2 << 32) | 0xffffffffu), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, ~(pt_task_id)0), -1);
    /* the live task's slot with versions it was never issued with */
    CHECK_EQ(pt_timerthread_unschedule(tt, (pt_task_id)slot), -1);                   /* 0 */
    CHECK_EQ(pt_timerthread_unschedule(tt, ((pt_task_id)(v - 1) << 32) | slot), -1); /* odd */
    CHECK_EQ(pt_timerthread_unschedule(tt, ((pt_task_id)(v + 1) << 32) | slot), -1); /* odd */
    CHECK_EQ(pt_timerthread_unschedule(tt, ((pt_task_id)(v + 2) << 32) | slot), -1); /* future */
    CHECK_EQ(pt_timerthread_unschedule(tt, ((pt_task_id)(v + 1000) << 32) | slot), -1);
    /* none of that touched the live task */
    CHECK_EQ(pt_timerthread_unschedule(tt, live), 0);
    CHECK_EQ(atomic_load(&ran), 0);
    pt_timerthread_stats st;
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.unscheduled, 1);
    pt_timerthread_destroy(tt);
}

void test_bad_input_is_refused_and_changes_nothing(void)
{
    pt_timerthread *tt = make();
    atomic_int ran = 0;
    CHECK_EQ(pt_timerthread_schedule(NULL, bump, &ran, 0), PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_schedule(tt, NULL, &ran, 0), PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_unschedule(NULL, 1), -1);
    pt_timerthread_stats st = {.scheduled = 77};
    pt_timerthread_read_stats(NULL, &st);
    CHECK_EQ(st.scheduled, 77);
    pt_timerthread_read_stats(tt, NULL);
    pt_timerthread_destroy(NULL);
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.scheduled, 0);
    CHECK_EQ(st.pending, 0);
    CHECK_EQ(atomic_load(&ran), 0);
    pt_timerthread_destroy(tt);
}
