/* The bad-input table: every public function of ptimer.h and
 * timerthread.h, with every class of bad argument it can be given (NULL,
 * negative, out of range, wrong state, after destroy where that is
 * defined), and the answer the header documents. After each bad call the
 * good objects it was given must be as they were. A second test reads the
 * headers of the libraries this suite links (those two, pwheel.h, lheap.h,
 * clock.h, engine.h) and fails if a public function has no row, so the
 * table keeps in step with the API (badinput_scan.c). */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "badinput.h"
#include "harness.h"
#include "ptimer/engine.h"
#include "ptimer/ptimer.h"
#include "ptimer/timerthread.h"

#define CHECK_STATUS(t, s) CHECK_EQ(pt_timer_status(t), (s))

static void count_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    ++*(int *)arg;
}

/* The bad heaps every heap argument is tried with. */
struct bad_heaps {
    pt_timers uninit;  /* never initialised (zeroed: no magic) */
    pt_timers garbage; /* never initialised (0xa5 bytes) */
    pt_timers destroyed;
};

static void make_bad_heaps(struct bad_heaps *b)
{
    memset(&b->uninit, 0, sizeof b->uninit);
    memset(&b->garbage, 0xa5, sizeof b->garbage);
    pt_timers_init(&b->destroyed, NULL, NULL);
    CHECK_EQ(pt_timers_destroy(&b->destroyed), 0);
}

#define N_BAD_HEAPS 4
static pt_timers *bad_heap(struct bad_heaps *b, int i)
{
    pt_timers *h[N_BAD_HEAPS] = {NULL, &b->uninit, &b->garbage, &b->destroyed};
    return h[i];
}

/* A good heap with one pending timer and one stopped one, to show a bad
 * call changed nothing. */
struct good {
    pt_timers ts;
    pt_timer live, stopped;
    int n;
};

static void make_good(struct good *g)
{
    pt_timers_init(&g->ts, NULL, NULL);
    g->n = 0;
    pt_timer_init(&g->live, count_cb, &g->n);
    pt_timer_init(&g->stopped, count_cb, &g->n);
    CHECK_EQ(pt_timer_start(&g->ts, &g->live, 1000, 0), 0);
    CHECK_EQ(pt_timer_start(&g->ts, &g->stopped, 500, 0), 0);
    CHECK_EQ(pt_timer_stop(&g->stopped), 1);
}

static void check_good_unchanged(struct good *g)
{
    CHECK_STATUS(&g->live, PT_TIMER_WAITING);
    CHECK_STATUS(&g->stopped, PT_TIMER_DELETED);
    CHECK_EQ(pt_timers_len(&g->ts), 2);
    CHECK_EQ(pt_timers_next(&g->ts), 500); /* the stopped one's stale key */
    CHECK_VERIFIED(&g->ts, true);
    CHECK_EQ(g->n, 0);
}

static void free_good(struct good *g)
{
    CHECK_EQ(pt_timer_stop_sync(&g->live), 1);
    CHECK_EQ(pt_timer_stop_sync(&g->stopped), 0);
    CHECK_EQ(pt_timers_destroy(&g->ts), 0);
}

/* A timer that was never initialised, two ways. */
static void make_bad_timers(pt_timer *zero, pt_timer *garbage)
{
    memset(zero, 0, sizeof *zero);
    memset(garbage, 0xa5, sizeof *garbage);
}

/* ---- one row per function ----------------------------------------------- */

static void row_pt_timers_init(void)
{
    CHECK_EQ(pt_timers_init(NULL, NULL, NULL), -EINVAL);
    /* re-initialising an empty destroyed heap makes it usable again */
    pt_timers ts;
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    CHECK_EQ(pt_timers_check(&ts, 1, true, NULL), -EINVAL);
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 1, true, NULL), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

static void row_pt_timers_destroy(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_timers_destroy(bad_heap(&b, i)), -EINVAL);
    /* wrong state: a live timer in it */
    struct good g;
    make_good(&g);
    CHECK_EQ(pt_timers_destroy(&g.ts), -EBUSY);
    /* (destroy unlinks the stopped timer even when it refuses) */
    CHECK_STATUS(&g.stopped, PT_TIMER_REMOVED);
    CHECK_STATUS(&g.live, PT_TIMER_WAITING);
    CHECK_VERIFIED(&g.ts, true);
    CHECK_EQ(pt_timer_stop_sync(&g.live), 1);
    CHECK_EQ(pt_timers_destroy(&g.ts), 0);
    /* after destroy */
    CHECK_EQ(pt_timers_destroy(&g.ts), -EINVAL);
}

static void row_pt_timers_set_staging(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_timers_set_staging(bad_heap(&b, i), 1 << 20), -EINVAL);
    pt_timers ts;
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    CHECK_EQ(pt_timers_set_staging(&ts, 0), -EINVAL);
    CHECK_EQ(pt_timers_set_staging(&ts, -1), -EINVAL);
    CHECK_EQ(pt_timers_set_staging(&ts, ((pt_nanos)1 << 40) + 1), -EINVAL);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    /* wrong state: a heap holding timers (a stopped one too) */
    struct good g;
    make_good(&g);
    CHECK_EQ(pt_timers_set_staging(&g.ts, 1 << 20), -EBUSY);
    check_good_unchanged(&g);
    free_good(&g);
    /* twice */
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    CHECK_EQ(pt_timers_set_staging(&ts, 1 << 20), 0);
    CHECK_EQ(pt_timers_set_staging(&ts, 1 << 20), -EBUSY);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    /* after destroy */
    CHECK_EQ(pt_timers_set_staging(&ts, 1 << 20), -EINVAL);
}

static void row_pt_timers_set_slack(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_timers_set_slack(bad_heap(&b, i), 1000), -EINVAL);
    struct good g;
    make_good(&g);
    CHECK_EQ(pt_timers_set_slack(&g.ts, -1), -EINVAL);
    CHECK_EQ(g.ts.slack, 0);
    check_good_unchanged(&g);
    free_good(&g);
    /* after destroy */
    CHECK_EQ(pt_timers_set_slack(&g.ts, 1000), -EINVAL);
}

struct destroy_arg {
    pt_timers *ts;
    int r;
};

static void destroy_own_heap_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct destroy_arg *a = arg;
    a->r = pt_timers_destroy(a->ts);
}

static void row_pt_timers_destroy_from_callback(void)
{
    /* wrong state: from one of the heap's own callbacks */
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    struct destroy_arg arg = {&ts, 1};
    pt_timer t;
    pt_timer_init(&t, destroy_own_heap_cb, &arg);
    CHECK_EQ(pt_timer_start(&ts, &t, 10, 0), 0);
    CHECK_EQ(pt_timers_check(&ts, 10, true, NULL), 1);
    CHECK_EQ(arg.r, -EBUSY);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

static void row_pt_timer_init(void)
{
    pt_timer_init(NULL, count_cb, NULL); /* NULL: nothing happens */
    /* re-initialising an idle timer is allowed and leaves it NoStatus */
    int n = 0;
    pt_timer t;
    pt_timer_init(&t, count_cb, &n);
    pt_timer_init(&t, count_cb, &n);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
}

/* start, reset and modify share their argument classes */
static void arm_rows(int kind)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    struct good g;
    make_good(&g);
    pt_timer zero, garbage;
    make_bad_timers(&zero, &garbage);
    int n = 0;
    pt_timer idle;
    pt_timer_init(&idle, count_cb, &n);
#define ARM(ts, t, when, period)                                                                   \
    (kind == 0   ? pt_timer_start((ts), (t), (when), (period))                                     \
     : kind == 1 ? pt_timer_reset((ts), (t), (when))                                               \
                 : pt_timer_modify((ts), (t), (when), (period), count_cb, &n, 1))
    /* NULL, uninitialised and destroyed heaps */
    for (int i = 0; i < N_BAD_HEAPS; i++) {
        CHECK_EQ(ARM(bad_heap(&b, i), &idle, 100, 0), -EINVAL);
        CHECK_EQ(ARM(bad_heap(&b, i), &g.stopped, 100, 0), -EINVAL);
        CHECK_STATUS(&idle, PT_TIMER_NOSTATUS);
    }
    /* NULL and uninitialised timers */
    CHECK_EQ(ARM(&g.ts, NULL, 100, 0), -EINVAL);
    CHECK_EQ(ARM(&g.ts, &zero, 100, 0), -EINVAL);
    CHECK_EQ(ARM(&g.ts, &garbage, 100, 0), -EINVAL);
    /* negative period (reset takes none) */
    if (kind != 1) {
        CHECK_EQ(ARM(&g.ts, &idle, 100, -1), -EINVAL);
        CHECK_EQ(ARM(&g.ts, &idle, 100, INT64_MIN), -EINVAL);
        CHECK_EQ(ARM(&g.ts, &g.live, 100, -1), -EINVAL);
        CHECK_EQ(ARM(&g.ts, &g.stopped, 100, -1), -EINVAL);
        CHECK_STATUS(&idle, PT_TIMER_NOSTATUS);
    }
    /* wrong state: start of a pending timer */
    if (kind == 0)
        CHECK_EQ(ARM(&g.ts, &g.live, 100, 0), -EBUSY);
    check_good_unchanged(&g);
    /* not errors: a negative when is never, INT64_MIN too, 0 is at once */
    CHECK(ARM(&g.ts, &idle, INT64_MIN, 0) >= 0);
    /* only live fires: stopped is stopped, idle is never */
    CHECK_EQ(pt_timers_check(&g.ts, INT64_MAX, true, NULL), 1);
    CHECK_STATUS(&idle, PT_TIMER_WAITING);
    CHECK_EQ(pt_timer_stop_sync(&idle), 1);
    CHECK_EQ(pt_timers_destroy(&g.ts), 0);
#undef ARM
}

static void row_pt_timer_start(void)
{
    arm_rows(0);
}
static void row_pt_timer_reset(void)
{
    arm_rows(1);
}
static void row_pt_timer_modify(void)
{
    arm_rows(2);
}

static void row_pt_timer_stop(void)
{
    pt_timer zero, garbage;
    make_bad_timers(&zero, &garbage);
    CHECK_EQ(pt_timer_stop(NULL), -EINVAL);
    CHECK_EQ(pt_timer_stop(&zero), -EINVAL);
    CHECK_EQ(pt_timer_stop(&garbage), -EINVAL);
    /* wrong state is not an error: stop of an idle or stopped timer is 0 */
    struct good g;
    make_good(&g);
    CHECK_EQ(pt_timer_stop(&g.stopped), 0);
    check_good_unchanged(&g);
    free_good(&g);
}

static void row_pt_timer_stop_sync(void)
{
    pt_timer zero, garbage;
    make_bad_timers(&zero, &garbage);
    CHECK_EQ(pt_timer_stop_sync(NULL), -EINVAL);
    CHECK_EQ(pt_timer_stop_sync(&zero), -EINVAL);
    CHECK_EQ(pt_timer_stop_sync(&garbage), -EINVAL);
    /* a timer in a destroyed heap was unlinked by destroy: 0, no touch */
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0;
    pt_timer t;
    pt_timer_init(&t, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &t, 10, 0), 0);
    CHECK_EQ(pt_timer_stop(&t), 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    CHECK_EQ(pt_timer_stop_sync(&t), 0);
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
}

static void row_pt_timer_running(void)
{
    CHECK(!pt_timer_running(NULL));
    pt_timer t;
    memset(&t, 0, sizeof t); /* never initialised: no callback of it runs */
    CHECK(!pt_timer_running(&t));
}

static void row_pt_timer_status(void)
{
    CHECK_EQ(pt_timer_status(NULL), PT_TIMER_NOSTATUS);
}

static void row_pt_timers_check(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    pt_nanos poll = 12345;
    for (int i = 0; i < N_BAD_HEAPS; i++) {
        CHECK_EQ(pt_timers_check(bad_heap(&b, i), 1000, true, &poll), -EINVAL);
        CHECK_EQ(pt_timers_check(bad_heap(&b, i), 1000, false, NULL), -EINVAL);
    }
    CHECK_EQ(poll, 12345); /* not written */
    /* not errors: a NULL poll_until, a negative or INT64_MAX now */
    struct good g;
    make_good(&g);
    CHECK_EQ(pt_timers_check(&g.ts, -5, false, NULL), 0); /* (an owner would compact) */
    check_good_unchanged(&g);
    CHECK_EQ(pt_timers_check(&g.ts, INT64_MAX, true, NULL), 1);
    CHECK_EQ(g.n, 1);
    CHECK_EQ(pt_timer_stop_sync(&g.stopped), 0);
    CHECK_EQ(pt_timers_destroy(&g.ts), 0);
}

BADINPUT_FIRING_ROW(pt_timers_firing)

static void row_pt_timers_next(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_timers_next(bad_heap(&b, i)), 0);
}

static void row_pt_timers_move(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    struct good g;
    make_good(&g);
    for (int i = 0; i < N_BAD_HEAPS; i++) {
        CHECK_EQ(pt_timers_move(bad_heap(&b, i), &g.ts), -EINVAL);
        CHECK_EQ(pt_timers_move(&g.ts, bad_heap(&b, i)), -EINVAL);
        CHECK_EQ(pt_timers_move(bad_heap(&b, i), bad_heap(&b, i)), -EINVAL);
        check_good_unchanged(&g);
    }
    /* onto itself: nothing to do */
    CHECK_EQ(pt_timers_move(&g.ts, &g.ts), 0);
    check_good_unchanged(&g);
    free_good(&g);
}

static void row_pt_timers_len(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_timers_len(bad_heap(&b, i)), 0);
}

static void row_pt_timers_deleted(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_timers_deleted(bad_heap(&b, i)), 0);
}

static void row_pt_timers_verify(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++) {
        CHECK_EQ(pt_timers_verify(bad_heap(&b, i), true), -EINVAL);
        CHECK_EQ(pt_timers_verify(bad_heap(&b, i), false), -EINVAL);
        CHECK_EQ(pt_timers_verify_report()[0], '\0'); /* a bad heap is no finding */
    }
}

/* ---- TimerThread ---------------------------------------------------------- */

static void noop_task(void *arg)
{
    (void)arg;
}

static void row_pt_timerthread_create(void)
{
    pt_timerthread *tt = (pt_timerthread *)&tt; /* must not be written on error */
    pt_timerthread_options o = {.num_buckets = 1025};
    CHECK_EQ(pt_timerthread_create(NULL, NULL), -EINVAL);
    CHECK_EQ(pt_timerthread_create(&tt, &o), -EINVAL);
    o.num_buckets = UINT32_MAX;
    CHECK_EQ(pt_timerthread_create(&tt, &o), -EINVAL);
    CHECK(tt == (pt_timerthread *)&tt);
    /* the edges that are fine: 1024 buckets, 0 (the default), NULL options */
    o.num_buckets = 1024;
    CHECK_EQ(pt_timerthread_create(&tt, &o), 0);
    pt_timerthread_destroy(tt);
    o.num_buckets = 0;
    CHECK_EQ(pt_timerthread_create(&tt, &o), 0);
    pt_timerthread_destroy(tt);
}

struct self_destroy {
    pt_timerthread *tt;
    pt_task_id after;
    atomic_int done;
};

static void self_destroy_task(void *arg)
{
    struct self_destroy *s = arg;
    pt_timerthread_destroy(s->tt);
    /* after destroy: schedules from this callback are refused */
    s->after = pt_timerthread_schedule(s->tt, noop_task, NULL, 0);
    atomic_store(&s->done, 1);
}

static void row_pt_timerthread_schedule_slack(void)
{
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create_driven(&tt, NULL), 0);
    CHECK_EQ(pt_timerthread_schedule_slack(NULL, noop_task, NULL, 0, 1), PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_schedule_slack(tt, NULL, NULL, 0, 1), PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_schedule_slack(tt, noop_task, NULL, 0, -1), PT_INVALID_TASK_ID);
    pt_timerthread_stats st;
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.scheduled, 0);
    CHECK_EQ(pt_timerthread_next(tt), 0);
    pt_timerthread_destroy(tt);
}

static void row_pt_timerthread_schedule(void)
{
    /* before any instance of this row's: a joined thread can linger in
     * /proc/self/task for a moment after pthread_join returns */
    int threads = pt_test_threads_named("pt_timerthread");
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
    CHECK_EQ(pt_timerthread_schedule(NULL, noop_task, NULL, 0), PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_schedule(tt, NULL, NULL, 0), PT_INVALID_TASK_ID);
    pt_timerthread_stats st;
    pt_timerthread_read_stats(tt, &st);
    CHECK_EQ(st.scheduled, 0);
    /* not errors: a negative when is never, INT64_MIN too */
    pt_task_id id = pt_timerthread_schedule(tt, noop_task, NULL, INT64_MIN);
    CHECK(id != PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), 0);
    pt_timerthread_destroy(tt);
    /* after destroy, where it is defined: from a callback of the instance */
    struct self_destroy s = {.after = 1};
    CHECK_EQ(pt_timerthread_create(&s.tt, NULL), 0);
    CHECK(pt_timerthread_schedule(s.tt, self_destroy_task, &s, 0) != PT_INVALID_TASK_ID);
    pt_nanos deadline = pt_nanotime() + 10 * (pt_nanos)1000000000;
    while (!atomic_load(&s.done)) {
        CHECK(pt_nanotime() < deadline);
        sched_yield();
    }
    CHECK_EQ(s.after, PT_INVALID_TASK_ID);
    /* The thread frees the instance as it exits: wait, so that no later
     * test in this process sees that free in its allocation count. */
    while (pt_test_threads_named("pt_timerthread") > threads) {
        CHECK(pt_nanotime() < deadline);
        sched_yield();
    }
}

static void row_pt_timerthread_create_driven(void)
{
    pt_timerthread *tt = NULL;
    pt_timerthread_options o = {.num_buckets = 1025};
    CHECK_EQ(pt_timerthread_create_driven(NULL, NULL), -EINVAL);
    CHECK_EQ(pt_timerthread_create_driven(&tt, &o), -EINVAL);
    CHECK(tt == NULL);
    CHECK_EQ(pt_timerthread_create_driven(&tt, NULL), 0);
    CHECK_EQ(pt_timerthread_next(tt), 0);
    pt_timerthread_destroy(tt);
}

/* run and next: NULL and an instance with its own thread are refused,
 * and the refusal runs nothing */
static void row_pt_timerthread_run(void)
{
    pt_timerthread *tt, *dt;
    CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
    CHECK_EQ(pt_timerthread_create_driven(&dt, NULL), 0);
    CHECK(pt_timerthread_schedule(dt, noop_task, NULL, 5) != PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_run(NULL, 10), -EINVAL);
    CHECK_EQ(pt_timerthread_run(tt, 10), -EINVAL);
    CHECK_EQ(pt_timerthread_next(NULL), -EINVAL);
    CHECK_EQ(pt_timerthread_next(tt), -EINVAL);
    CHECK_EQ(pt_timerthread_next(dt), 5);
    CHECK_EQ(pt_timerthread_run(dt, 4), 0); /* not yet due */
    CHECK_EQ(pt_timerthread_run(dt, 5), 1);
    CHECK_EQ(pt_timerthread_next(dt), 0);
    pt_timerthread_destroy(dt);
    pt_timerthread_destroy(tt);
}

static void row_pt_timerthread_unschedule(void)
{
    pt_timerthread *tt;
    CHECK_EQ(pt_timerthread_create(&tt, NULL), 0);
    pt_task_id id = pt_timerthread_schedule(tt, noop_task, NULL, -1);
    CHECK(id != PT_INVALID_TASK_ID);
    CHECK_EQ(pt_timerthread_unschedule(NULL, id), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, PT_INVALID_TASK_ID), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id | (1ull << 32)), -1);  /* odd version */
    CHECK_EQ(pt_timerthread_unschedule(tt, id & 0xffffffffull), -1); /* version 0 */
    CHECK_EQ(pt_timerthread_unschedule(tt, (id & ~0xffffffffull) | 0xfffffffeu), -1); /* slot */
    CHECK_EQ(pt_timerthread_unschedule(tt, UINT64_MAX), -1);
    CHECK_EQ(pt_timerthread_unschedule(tt, id - (2ull << 32)), -1); /* an older version */
    /* the task survived all of that; wrong state: a second unschedule */
    CHECK_EQ(pt_timerthread_unschedule(tt, id), 0);
    CHECK_EQ(pt_timerthread_unschedule(tt, id), -1);
    pt_timerthread_destroy(tt);
}

static void row_pt_timerthread_destroy(void)
{
    pt_timerthread_destroy(NULL);                    /* nothing */
    pt_timerthread_destroy(pt_timerthread_global()); /* the global one: nothing */
    CHECK(pt_timerthread_schedule(pt_timerthread_global(), noop_task, NULL, -1) !=
          PT_INVALID_TASK_ID);
}

static void row_pt_timerthread_global(void)
{
    CHECK(pt_timerthread_global() != NULL);
    CHECK(pt_timerthread_global() == pt_timerthread_global());
}

static void row_pt_timerthread_read_stats(void)
{
    pt_timerthread_stats st;
    memset(&st, 0x5a, sizeof st);
    pt_timerthread_read_stats(NULL, &st); /* nothing written */
    CHECK_EQ(st.scheduled, 0x5a5a5a5a5a5a5a5aull);
    pt_timerthread_read_stats(pt_timerthread_global(), NULL); /* nothing */
}

/* engine.h declares one function, pt_engine_v2, which the library does
 * not define: an engine's shared object does (PT_ENGINE_EXPORT), and
 * ptbench and ptstress look it up by PT_ENGINE_ENTRY and check the table
 * it hands out (the bad tables they refuse: test/engines/faulty.c). The
 * rest of engine.h is that table of function pointers. So the library has
 * nothing of it to refuse; the row checks that the name the tools look up
 * is the one declared. */
static void row_pt_engine_v2(void)
{
    CHECK(strcmp(PT_ENGINE_ENTRY, "pt_engine_v2") == 0);
}

static const struct badinput_row rows[] = {
    {"pt_timers_init", row_pt_timers_init},
    {"pt_timers_destroy", row_pt_timers_destroy},
    {"pt_timers_set_staging", row_pt_timers_set_staging},
    {"pt_timers_set_slack", row_pt_timers_set_slack},
    {"pt_timers_destroy", row_pt_timers_destroy_from_callback},
    {"pt_timer_init", row_pt_timer_init},
    {"pt_timer_start", row_pt_timer_start},
    {"pt_timer_stop", row_pt_timer_stop},
    {"pt_timer_reset", row_pt_timer_reset},
    {"pt_timer_modify", row_pt_timer_modify},
    {"pt_timer_stop_sync", row_pt_timer_stop_sync},
    {"pt_timer_status", row_pt_timer_status},
    {"pt_timer_running", row_pt_timer_running},
    {"pt_timers_check", row_pt_timers_check},
    {"pt_timers_next", row_pt_timers_next},
    {"pt_timers_firing", row_pt_timers_firing},
    {"pt_timers_move", row_pt_timers_move},
    {"pt_timers_len", row_pt_timers_len},
    {"pt_timers_deleted", row_pt_timers_deleted},
    {"pt_timers_verify", row_pt_timers_verify},
    {"pt_timers_verify_report", row_pt_timers_verify},
    {"pt_timerthread_create", row_pt_timerthread_create},
    {"pt_timerthread_schedule", row_pt_timerthread_schedule},
    {"pt_timerthread_schedule_slack", row_pt_timerthread_schedule_slack},
    {"pt_timerthread_unschedule", row_pt_timerthread_unschedule},
    {"pt_timerthread_destroy", row_pt_timerthread_destroy},
    {"pt_timerthread_create_driven", row_pt_timerthread_create_driven},
    {"pt_timerthread_run", row_pt_timerthread_run},
    {"pt_timerthread_next", row_pt_timerthread_run},
    {"pt_timerthread_global", row_pt_timerthread_global},
    {"pt_timerthread_read_stats", row_pt_timerthread_read_stats},
    {"pt_engine_v2", row_pt_engine_v2},
};

/* Every table this suite holds: the heaps', the TimerThread's, the
 * wheel's, Go 1.23's family's and the clock's (netpoll.h's and sched.h's
 * are in their own suites, which link those libraries). */
static const struct badinput_table *tables(size_t *n)
{
    static struct badinput_table t[4] = {BADINPUT_TABLE(rows)};
    t[1] = (struct badinput_table){pt_badinput_pwheel_rows, pt_badinput_pwheel_nrows};
    t[2] = (struct badinput_table){pt_badinput_lheap_rows, pt_badinput_lheap_nrows};
    t[3] = (struct badinput_table){pt_badinput_clock_rows, pt_badinput_clock_nrows};
    *n = 4;
    return t;
}

void test_every_public_function_rejects_each_bad_argument_class(void)
{
    size_t n;
    const struct badinput_table *t = tables(&n);
    pt_badinput_run(t, n);
}

void test_bad_input_table_has_a_row_for_every_public_function(void)
{
    /* engine.h: its one function is an engine's, not the library's
     * (row_pt_engine_v2); the header is read so that a function added to
     * it fails here until it has a row. */
    static const char *headers[] = {
        PT_SOURCE_DIR "/include/ptimer/ptimer.h", PT_SOURCE_DIR "/include/ptimer/timerthread.h",
        PT_SOURCE_DIR "/include/ptimer/pwheel.h", PT_SOURCE_DIR "/include/ptimer/lheap.h",
        PT_SOURCE_DIR "/include/ptimer/clock.h",  PT_SOURCE_DIR "/include/ptimer/engine.h"};
    size_t n;
    const struct badinput_table *t = tables(&n);
    int total = 0;
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++)
        total += pt_badinput_check_header(headers[h], t, n);
    CHECK(total >= 60); /* the parse found the API, not nothing */
}
