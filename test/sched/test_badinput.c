/* Every sched call given what it must refuse: a negative errno, nothing
 * changed, never a hang or a crash. */
#include <errno.h>
#include <string.h>

#include "util.h"

static void noop(void *arg)
{
    (void)arg;
}

static atomic_int in_g_checked;

/* The calls that need to be outside a G, made from inside one. */
static void from_a_g(void *arg)
{
    pt_sched *s = arg;
    CHECK_EQ(pt_sched_wait(s), -EDEADLK);
    CHECK_EQ(pt_sched_destroy(s), -EDEADLK);
    CHECK(pt_sched_current() == s);
    pt_g *self = pt_g_current();
    CHECK(self != NULL);
    CHECK_EQ(pt_ready(self), -EINVAL); /* running, not parked */
    atomic_store(&in_g_checked, 1);
}

static pt_g *_Atomic parked_g;

static void park_once(void *arg)
{
    (void)arg;
    atomic_store(&parked_g, pt_g_current());
    /* published before parking on purpose: a ready before the park is
     * refused, and the test readies it only once it is parked */
    CHECK_EQ(pt_park(NULL, NULL), 0);
}

void test_every_sched_call_rejects_bad_input(void)
{
    pt_sched *s = NULL;
    pt_sched_options o;
    memset(&o, 0, sizeof o);
    /* create */
    CHECK_EQ(pt_sched_create(NULL, NULL), -EINVAL);
    o.procs = -1;
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    o.procs = 1025;
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    o.procs = 1;
    o.timers = (enum pt_timer_mode)7;
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    CHECK(s == NULL);
    /* NULL schedulers */
    CHECK_EQ(pt_sched_wait(NULL), -EINVAL);
    CHECK_EQ(pt_sched_destroy(NULL), -EINVAL);
    CHECK_EQ(pt_sched_set_procs(NULL, 1), -EINVAL);
    CHECK_EQ(pt_sched_procs(NULL), -EINVAL);
    CHECK_EQ(pt_sched_set_preempt_slice(NULL, 0), -EINVAL);
    CHECK_EQ(pt_sched_set_monitor_priority(NULL, 0), -EINVAL);
    /* G calls from a plain thread */
    CHECK_EQ(pt_preemptible_begin(), -EPERM);
    CHECK_EQ(pt_preemptible_end(), -EPERM);
    pt_sched_stats st;
    pt_sched_read_stats(NULL, &st);
    CHECK_EQ(st.gs_created, 0);
    pt_sched_read_stats(NULL, NULL);
    CHECK_EQ(pt_sched_run(NULL, NULL, NULL), -EINVAL);
    /* G-only calls outside a G */
    CHECK(pt_g_current() == NULL);
    CHECK(pt_sched_current() == NULL);
    CHECK_EQ(pt_park(NULL, NULL), -EPERM);
    pt_yield(); /* nothing to yield to: returns */
    CHECK_EQ(pt_go(NULL, noop, NULL), -EINVAL); /* no scheduler of its own */
    CHECK_EQ(pt_ready(NULL), -EINVAL);
    /* wait group */
    CHECK_EQ(pt_wg_init(NULL), -EINVAL);
    CHECK_EQ(pt_wg_add(NULL, 1), -EINVAL);
    CHECK_EQ(pt_wg_done(NULL), -EINVAL);
    CHECK_EQ(pt_wg_wait(NULL), -EINVAL);
    pt_wg wg;
    CHECK_EQ(pt_wg_init(&wg), 0);
    CHECK_EQ(pt_wg_add(&wg, INT64_MAX), 0);
    CHECK_EQ(pt_wg_add(&wg, 1), -EINVAL); /* overflow: nothing changes */
    CHECK_EQ(pt_wg_add(&wg, -INT64_MAX), 0);
    CHECK_EQ(pt_wg_wait(&wg), 0);

    s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_sched_set_procs(s, 0), -EINVAL);
    CHECK_EQ(pt_sched_set_procs(s, 1025), -EINVAL);
    CHECK_EQ(pt_sched_set_preempt_slice(s, -1), -EINVAL);
    CHECK_EQ(pt_sched_set_monitor_priority(s, -1), -EINVAL);
    CHECK_EQ(pt_sched_set_monitor_priority(s, 100), -EINVAL);
    CHECK_EQ(pt_sched_procs(s), 2);
    atomic_store(&in_g_checked, 0);
    CHECK_EQ(pt_go(s, from_a_g, s), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&in_g_checked), 1);
    /* destroy refuses while a G is left (parked), then works */
    atomic_store(&parked_g, NULL);
    CHECK_EQ(pt_go(s, park_once, NULL), 0);
    WAIT_FOR(atomic_load(&parked_g) != NULL);
    CHECK_EQ(pt_sched_destroy(s), -EBUSY);
    /* ready succeeds once the G is parked: retry while it is not yet */
    pt_nanos end = pt_nanotime() + BOUND;
    while (pt_ready(atomic_load(&parked_g)) != 0)
        CHECK(pt_nanotime() < end);
    CHECK_EQ(pt_ready(atomic_load(&parked_g)), -EINVAL); /* no longer parked */
    finish_sched(s);
}
