/* Slack (pt_timerthread_schedule_slack, the options' default): a task
 * runs within [when, when + slack]. On a driven instance, whose clock is
 * the test's, that is exact: next answers the earliest `when + slack`,
 * a run at now runs every task whose `when` has come (however far its
 * window reaches), in order of `when`, and none before its `when`;
 * tasks whose windows overlap run in one run. On a threaded instance:
 * never before `when`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "util.h"

#define NSLACK 100

struct ran {
    int order[NSLACK + 8];
    pt_nanos when[NSLACK + 8], at[NSLACK + 8];
    int n;
    pt_nanos now; /* the driver's, for the task to record */
};

struct one {
    struct ran *r;
    int id;
    pt_nanos when;
};

static void note(void *arg)
{
    struct one *o = arg;
    struct ran *r = o->r;
    r->order[r->n] = o->id;
    r->when[r->n] = o->when;
    r->at[r->n] = r->now;
    r->n++;
}

static int run_at(pt_timerthread *tt, struct ran *r, pt_nanos now)
{
    r->now = now;
    return pt_timerthread_run(tt, now);
}

void test_slack_task_runs_in_its_window_when_the_driver_comes(void)
{
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create_driven(&tt, NULL), 0);
    struct ran r = {0};
    struct one a = {&r, 1, 100}, b = {&r, 2, 120}, c = {&r, 3, 130};
    CHECK(pt_timerthread_schedule_slack(tt, note, &a, 100, 50) != PT_INVALID_TASK_ID);
    CHECK(pt_timerthread_schedule_slack(tt, note, &b, 120, 100) != PT_INVALID_TASK_ID);
    /* the sleep is the earliest latest; before any run, what was announced */
    CHECK_EQ(pt_timerthread_next(tt), 150);
    CHECK(pt_timerthread_schedule(tt, note, &c, 130) != PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_next(tt), 130);
    /* none before its when */
    CHECK_EQ(run_at(tt, &r, 99), 0);
    CHECK_EQ(r.n, 0);
    CHECK_EQ(pt_timerthread_next(tt), 130);
    /* at 130 every task whose when has come, in order of when: b's
     * window reaches 220, and it runs now all the same */
    CHECK_EQ(run_at(tt, &r, 130), 3);
    CHECK_EQ(r.n, 3);
    CHECK_EQ(r.order[0], 1);
    CHECK_EQ(r.order[1], 2);
    CHECK_EQ(r.order[2], 3);
    CHECK_EQ(pt_timerthread_next(tt), 0);
    pt_timerthread_destroy(tt);
}

/* NSLACK tasks 10 apart with slack 500: the driver comes when next says,
 * and two runs take them all (the first at 1500, whose window holds the
 * first 51 whens, the second at the 52nd's latest, 2010). */
void test_slack_tasks_with_overlapping_windows_run_together(void)
{
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create_driven(&tt, NULL), 0);
    static struct ran r;
    static struct one o[NSLACK];
    memset(&r, 0, sizeof r);
    for (int i = 0; i < NSLACK; i++) {
        o[i] = (struct one){&r, i, 1000 + 10 * (pt_nanos)i};
        CHECK(pt_timerthread_schedule_slack(tt, note, &o[i], o[i].when, 500) !=
              PT_INVALID_TASK_ID);
    }
    int runs = 0;
    pt_nanos next;
    while ((next = pt_timerthread_next(tt)) != 0) {
        CHECK(next > 1);
        CHECK(run_at(tt, &r, next) > 0);
        runs++;
        CHECK(runs <= NSLACK);
    }
    CHECK_EQ(runs, 2);
    CHECK_EQ(r.n, NSLACK);
    for (int i = 0; i < r.n; i++) {
        CHECK_EQ(r.order[i], i);
        CHECK(r.at[i] >= r.when[i]);        /* never early */
        CHECK(r.at[i] <= r.when[i] + 500); /* never past its window */
    }
    CHECK_EQ(r.at[50], 1500);
    CHECK_EQ(r.at[51], 2010);
    pt_timerthread_destroy(tt);
}

/* The options' slack is what schedule gives; a task with slack that is
 * unscheduled never runs, and next moves on past it once a run has
 * dropped it. */
void test_slack_default_from_options_and_removed_slack_tasks_never_run(void)
{
    pt_timerthread *tt;
    pt_timerthread_options opt = {.slack = 40};
    CHECK_EQ(pt_timerthread_create_driven(&tt, &opt), 0);
    struct ran r = {0};
    struct one a = {&r, 1, 100}, b = {&r, 2, 200};
    pt_task_id ia = pt_timerthread_schedule(tt, note, &a, 100);
    CHECK(ia != PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_next(tt), 140);
    /* schedule_slack says the slack itself, 0 included */
    CHECK(pt_timerthread_schedule_slack(tt, note, &b, 200, 0) != PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_unschedule(tt, ia), 0);
    CHECK_EQ(run_at(tt, &r, 140), 0);
    CHECK_EQ(r.n, 0);
    CHECK_EQ(pt_timerthread_next(tt), 200);
    CHECK_EQ(run_at(tt, &r, 200), 1);
    CHECK_EQ(r.order[0], 2);
    CHECK_EQ(pt_timerthread_next(tt), 0);
    pt_timerthread_destroy(tt);
}

/* Many slack tasks scheduled and removed in turn: the by-latest heap's
 * dead entries are dropped or rebuilt away, so once a run has looked next
 * names no time of a removed task with slack, and what is left runs
 * exactly once each. */
void test_slack_churn_leaves_next_on_a_live_task(void)
{
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create_driven(&tt, NULL), 0);
    static struct ran r;
    static struct one o[NSLACK];
    memset(&r, 0, sizeof r);
    pt_task_id id[NSLACK];
    uint64_t x = 88172645463325252ull;
    pt_nanos live_min_latest = PT_MAXWHEN;
    for (int i = 0; i < NSLACK; i++) {
        pt__xorshift64(&x);
        /* slack 1 at least: every task in the slack heaps, whose dead
         * entries next skips (a dead task with none may still be named) */
        pt_nanos when = 1000 + (pt_nanos)(x % 1000), slack = 1 + (pt_nanos)((x >> 20) % 300);
        o[i] = (struct one){&r, i, when};
        id[i] = pt_timerthread_schedule_slack(tt, note, &o[i], when, slack);
        CHECK(id[i] != PT_INVALID_TASK_ID);
        if (i % 4 == 0 && when + slack < live_min_latest)
            live_min_latest = when + slack;
    }
    CHECK(run_at(tt, &r, 0) == 0); /* a pull: every task in the heaps */
    for (int i = 0; i < NSLACK; i++)
        if (i % 4 != 0)
            CHECK_EQ(pt_timerthread_unschedule(tt, id[i]), 0);
    CHECK(run_at(tt, &r, 1) == 0); /* the dead ones dropped as the run meets them */
    CHECK_EQ(pt_timerthread_next(tt), live_min_latest);
    while (pt_timerthread_next(tt) != 0)
        run_at(tt, &r, pt_timerthread_next(tt));
    CHECK_EQ(r.n, NSLACK / 4);
    for (int i = 0; i < r.n; i++) {
        CHECK_EQ(r.order[i] % 4, 0);
        CHECK(r.at[i] >= r.when[i]);
    }
    pt_timerthread_destroy(tt);
}

void test_slack_bad_input_changes_nothing(void)
{
    pt_timerthread *tt;
    pt_timerthread_options opt = {.slack = -1};
    CHECK_EQ(pt_timerthread_create_driven(&tt, &opt), -EINVAL);
    CHECK_EQ(pt_timerthread_create(&tt, &opt), -EINVAL);
    CHECK_EQ(pt_timerthread_create_driven(&tt, NULL), 0);
    struct ran r = {0};
    struct one a = {&r, 1, 100};
    CHECK_EQ(pt_timerthread_schedule_slack(tt, note, &a, 100, -1), PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_schedule_slack(NULL, note, &a, 100, 5), PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_schedule_slack(tt, NULL, &a, 100, 5), PT_INVALID_TASK_ID);
    pt_timerthread_stats st;
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.scheduled, 0);
    CHECK_EQ(pt_timerthread_next(tt), 0);
    /* a window past the clock's range ends at its last instant, and the
     * task runs when a run comes after its when */
    CHECK(pt_timerthread_schedule_slack(tt, note, &a, 100, PT_MAXWHEN) != PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_next(tt), PT_MAXWHEN - 1);
    CHECK_EQ(run_at(tt, &r, 100), 1);
    pt_timerthread_destroy(tt);
}

/* A threaded instance: slack tasks never run before their when, each
 * runs once, among tasks with none. */
struct clocked {
    pt_nanos when;
    atomic_int runs, early;
};

static void clocked_run(void *arg)
{
    struct clocked *c = arg;
    if (pt_nanotime() < c->when)
        atomic_fetch_add(&c->early, 1);
    atomic_fetch_add(&c->runs, 1);
}

void test_slack_threaded_tasks_never_run_early_and_run_once(void)
{
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
    static struct clocked c[200];
    memset(c, 0, sizeof c);
    pt_nanos t0 = pt_nanotime();
    for (int i = 0; i < 200; i++) {
        c[i].when = t0 + (pt_nanos)(i % 50) * 100000;
        pt_nanos slack = i % 2 ? (pt_nanos)(i % 7) * 200000 : 0;
        CHECK(pt_timerthread_schedule_slack(tt, clocked_run, &c[i], c[i].when, slack) !=
              PT_INVALID_TASK_ID);
    }
    pt_nanos give_up = pt_nanotime() + BOUND;
    pt_timerthread_stats st;
    do {
        pt_timerthread_read_stats(tt, &st);
        CHECK(pt_nanotime() < give_up);
        if (st.triggered < 200)
            nap();
    } while (st.triggered < 200);
    for (int i = 0; i < 200; i++) {
        CHECK_EQ(atomic_load(&c[i].runs), 1);
        CHECK_EQ(atomic_load(&c[i].early), 0);
    }
    pt_timerthread_destroy(tt);
}
