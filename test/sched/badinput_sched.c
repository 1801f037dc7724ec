/* The bad-input table's rows for sched.h (test_badinput.c runs them and
 * checks that every function sched.h declares has one; the table's shape
 * is test/verify/badinput.h). The classes are the heaps': NULL, negative
 * and out of range, wrong state (a G call from a plain thread, a thread
 * call from a G, a park's commit, a busy or closed object, a deadline
 * past), and after each bad call the good objects it was given are as
 * they were (a channel still holds its values, a G still parked, a
 * ticker still ticking, a scheduler still running a G).
 *
 * Not tried, as sched.h makes them undefined or leaves them undetected:
 * a scheduler, channel, G or time.* timer used after it was destroyed or
 * freed (all opaque, made only by their calls: the freed memory is all a
 * later call could be given); a pt_wg never initialised (caller memory
 * with no mark to check); pt_ready of a G parked by another call or
 * finished; a call into the scheduler from a park's commit or from a
 * preemptible region (that aborts: test_preempt.c's death tests); a
 * time.* timer's channel closed or freed by the user. */
#define _GNU_SOURCE /* IOV_MAX */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "sched/internal.h"  /* a G's region depth, for -EOVERFLOW */
#include "sched/sanitizer.h" /* PT__TSAN: regions are refused there */
#include "util.h"
#include "verify/badinput.h"

/* ---- helpers ----------------------------------------------------------------- */

static void noop(void *arg)
{
    (void)arg;
}

static void set_flag(void *arg)
{
    atomic_store((atomic_int *)arg, 1);
}

/* s still runs a G: one started now runs to its end. */
static void check_runs_a_g(pt_sched *s)
{
    atomic_int ran = 0;
    CHECK_EQ(pt_go(s, set_flag, &ran), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&ran), 1);
}

/* fn(arg) as the one G of a fresh 1-P scheduler, run to its end: with one
 * P a G runs until it parks or yields, so a G it starts and yields to has
 * parked by the time it runs again. */
static void in_a_g(void (*fn)(void *), void *arg)
{
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, fn, arg), 0);
    finish_sched(s);
}

/* A G that parks (pt_park) once, published in its commit, until readied. */
struct parker {
    pt_g *self;
    pt_g *_Atomic published;
    atomic_int resumed;
};

static bool publish_parker(void *arg)
{
    struct parker *p = arg;
    atomic_store(&p->published, p->self);
    return true;
}

static void park_once(void *arg)
{
    struct parker *p = arg;
    p->self = pt_g_current();
    CHECK_EQ(pt_park(publish_parker, p), 0);
    atomic_store(&p->resumed, 1);
}

/* Whether thread tid sleeps in the kernel ('S' in its /proc stat), waited
 * for up to BOUND. */
static bool thread_asleep(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    pt_nanos end = pt_nanotime() + BOUND;
    while (pt_nanotime() < end) {
        FILE *f = fopen(path, "r");
        if (!f)
            return false;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')'); /* the state follows "(comm) " */
        if (p && p[1] == ' ' && p[2] == 'S')
            return true;
        nap_ms();
    }
    return false;
}

/* An environment variable set for one call, then put back. */
struct saved_env {
    const char *name;
    char value[64];
    bool had;
};

static void env_set(struct saved_env *e, const char *name, const char *value)
{
    const char *v = getenv(name);
    e->name = name;
    e->had = v != NULL;
    if (v)
        snprintf(e->value, sizeof e->value, "%s", v);
    CHECK_EQ(setenv(name, value, 1), 0);
}

static void env_restore(struct saved_env *e)
{
    CHECK_EQ(e->had ? setenv(e->name, e->value, 1) : unsetenv(e->name), 0);
}

/* ---- the scheduler -------------------------------------------------------------- */

static void row_pt_sched_create(void)
{
    pt_sched *const sentinel = (pt_sched *)&sentinel;
    pt_sched *s = sentinel; /* must not be written on error */
    CHECK_EQ(pt_sched_create(NULL, NULL), -EINVAL);
    static const pt_sched_options bad[] = {
        {.procs = -1},
        {.procs = INT_MIN},
        {.procs = 1025},
        {.procs = INT_MAX},
        {.procs = 1, .timers = (enum pt_timer_mode)3},
        {.procs = 1, .timers = (enum pt_timer_mode) - 1},
        {.procs = 1, .stack_guard = (enum pt_stack_guard)3},
        {.procs = 1, .stack_guard = (enum pt_stack_guard) - 1},
        {.procs = 1, .fd_io = (enum pt_fd_io)2},
        {.procs = 1, .fd_io = (enum pt_fd_io) - 1},
        {.procs = 1, .stack_size = ((size_t)1 << 30) + 1},
        {.procs = 1, .stack_size = SIZE_MAX},
        {.procs = 1, .timer_slack = -1},
        {.procs = 1, .timer_slack = INT64_MIN},
        /* a bad argument is -EINVAL, not the build's -ENOTSUP for rings */
        {.procs = -1, .fd_io = PT_FD_IO_URING},
        {.procs = 1, .stack_size = SIZE_MAX, .fd_io = PT_FD_IO_URING},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(pt_sched_create(&s, &bad[i]), -EINVAL);
        CHECK_EQ(pt_sched_create(NULL, &bad[i]), -EINVAL);
    }
    CHECK_EQ(pt_sched_create(NULL, &(pt_sched_options){.procs = 1, .fd_io = PT_FD_IO_URING}),
             -EINVAL);
    /* the environment's overrides, with values they do not know */
    struct saved_env e;
    env_set(&e, "PT_STACK_GUARD", "guarded");
    CHECK_EQ(pt_sched_create(&s, &(pt_sched_options){.procs = 1}), -EINVAL);
    env_restore(&e);
    env_set(&e, "PT_FD_IO", "epoll");
    CHECK_EQ(pt_sched_create(&s, &(pt_sched_options){.procs = 1}), -EINVAL);
    env_restore(&e);
    CHECK(s == sentinel);
    /* rings: -ENOTSUP in a build without liburing; with it, made, or the
     * kernel's refusal */
    int r = pt_sched_create(&s, &(pt_sched_options){.procs = 1, .fd_io = PT_FD_IO_URING});
#ifdef PT_TEST_URING
    if (r == 0) {
        check_runs_a_g(s);
        CHECK_EQ(pt_sched_destroy(s), 0);
        s = sentinel;
    }
    CHECK(r <= 0);
#else
    CHECK_EQ(r, -ENOTSUP);
#endif
    CHECK(s == sentinel);
    /* the edges that are fine: NULL options, procs 0 (the CPUs) */
    CHECK_EQ(pt_sched_create(&s, NULL), 0);
    check_runs_a_g(s);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(pt_sched_create(&s, &(pt_sched_options){0}), 0);
    CHECK(pt_sched_procs(s) >= 1);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

struct two_scheds {
    pt_sched *own, *other;
    int r_own, r_other;
};

static void wait_from_a_g(void *arg)
{
    struct two_scheds *t = arg;
    t->r_own = pt_sched_wait(t->own);
    t->r_other = pt_sched_wait(t->other);
}

static void row_pt_sched_wait(void)
{
    CHECK_EQ(pt_sched_wait(NULL), -EINVAL);
    /* from a G: of its own scheduler, or of another */
    struct two_scheds t = {make_sched(2, PT_TIMERS_PER_P), make_sched(1, PT_TIMERS_PER_P), 1, 1};
    CHECK_EQ(pt_go(t.own, wait_from_a_g, &t), 0);
    CHECK_EQ(pt_sched_wait(t.own), 0);
    CHECK_EQ(t.r_own, -EDEADLK);
    CHECK_EQ(t.r_other, -EDEADLK);
    check_runs_a_g(t.own);
    check_runs_a_g(t.other);
    finish_sched(t.own);
    finish_sched(t.other);
}

struct destroy_from_g {
    pt_sched *s;
    int r;
    pt_time_timer *left;
};

static void destroy_own(void *arg)
{
    struct destroy_from_g *d = arg;
    d->r = pt_sched_destroy(d->s);
}

static void leave_a_timer(void *arg)
{
    struct destroy_from_g *d = arg;
    CHECK_EQ(pt_time_timer_new(&d->left, 1000 * SEC), 0);
}

static void row_pt_sched_destroy(void)
{
    CHECK_EQ(pt_sched_destroy(NULL), -EINVAL);
    /* from a G of its own */
    struct destroy_from_g d = {make_sched(2, PT_TIMERS_PER_P), 1, NULL};
    CHECK_EQ(pt_go(d.s, destroy_own, &d), 0);
    CHECK_EQ(pt_sched_wait(d.s), 0);
    CHECK_EQ(d.r, -EDEADLK);
    check_runs_a_g(d.s);
    /* wrong state: a G left (parked) */
    struct parker p = {0};
    CHECK_EQ(pt_go(d.s, park_once, &p), 0);
    WAIT_FOR(atomic_load(&p.published) != NULL);
    CHECK_EQ(pt_sched_destroy(d.s), -EBUSY);
    CHECK_EQ(atomic_load(&p.resumed), 0);
    CHECK_EQ(pt_ready(atomic_load(&p.published)), 0);
    CHECK_EQ(pt_sched_wait(d.s), 0);
    CHECK_EQ(atomic_load(&p.resumed), 1);
    /* wrong state: a time.* timer a G made, not freed */
    CHECK_EQ(pt_go(d.s, leave_a_timer, &d), 0);
    CHECK_EQ(pt_sched_wait(d.s), 0);
    CHECK_EQ(pt_sched_destroy(d.s), -EBUSY);
    check_runs_a_g(d.s);
    CHECK_EQ(pt_time_timer_stop(d.left), 1); /* still pending */
    CHECK_EQ(pt_time_timer_free(d.left), 0);
    CHECK_EQ(pt_sched_destroy(d.s), 0);
}

struct run_case {
    int r;
    atomic_int ran;
    pt_sched *s;
    pt_time_timer *left;
};

static void run_from_a_g(void *arg)
{
    struct run_case *c = arg;
    c->r = pt_sched_run(&(pt_sched_options){.procs = 1}, set_flag, &c->ran);
}

static void leave_a_timer_in_run(void *arg)
{
    struct run_case *c = arg;
    c->s = pt_sched_current();
    CHECK_EQ(pt_time_timer_new(&c->left, 1000 * SEC), 0);
}

static void row_pt_sched_run(void)
{
    struct run_case c = {0};
    CHECK_EQ(pt_sched_run(NULL, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_sched_run(&(pt_sched_options){.procs = 1}, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_sched_run(&(pt_sched_options){.procs = -1}, set_flag, &c.ran), -EINVAL);
    CHECK_EQ(pt_sched_run(&(pt_sched_options){.timers = (enum pt_timer_mode)9}, set_flag, &c.ran),
             -EINVAL);
    CHECK_EQ(atomic_load(&c.ran), 0);
    /* from a G: the wait could never be made; fn is not started */
    c.r = 1;
    in_a_g(run_from_a_g, &c);
    CHECK_EQ(c.r, -EDEADLK);
    CHECK_EQ(atomic_load(&c.ran), 0);
    /* fn's G left a timer: -EBUSY, the scheduler left for it */
    CHECK_EQ(pt_sched_run(&(pt_sched_options){.procs = 1}, leave_a_timer_in_run, &c), -EBUSY);
    CHECK(c.s != NULL);
    check_runs_a_g(c.s);
    CHECK_EQ(pt_time_timer_free(c.left), 0);
    CHECK_EQ(pt_sched_destroy(c.s), 0);
    /* the edge that is fine: NULL options */
    CHECK_EQ(pt_sched_run(NULL, set_flag, &c.ran), 0);
    CHECK_EQ(atomic_load(&c.ran), 1);
}

static void row_pt_sched_set_procs(void)
{
    CHECK_EQ(pt_sched_set_procs(NULL, 1), -EINVAL);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    static const int bad[] = {0, -1, INT_MIN, 1025, INT_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(pt_sched_set_procs(s, bad[i]), -EINVAL);
        CHECK_EQ(pt_sched_procs(s), 2);
    }
    CHECK_EQ(stats_of(s).procs, 2);
    check_runs_a_g(s);
    finish_sched(s);
}

/* No bad input: off a scheduler it is the process's clock. */
static void row_pt_time_now(void)
{
    pt_nanos a = pt_nanotime(), b = pt_time_now(), c = pt_nanotime();
    CHECK(a <= b && b <= c);
}

/* Outside a G, or on the real clock (settle_refused in test_vtime.c). */
static void row_pt_sched_settle(void)
{
    CHECK_EQ(pt_sched_settle(), -EPERM);
}

static void row_pt_sched_deadlock_report(void)
{
    CHECK(pt_sched_deadlock_report(NULL) == NULL);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK(pt_sched_deadlock_report(s) == NULL); /* on the real clock: never */
    finish_sched(s);
}

static void row_pt_sched_procs(void)
{
    CHECK_EQ(pt_sched_procs(NULL), -EINVAL);
    pt_sched *s = make_sched(3, PT_TIMERS_PER_P);
    CHECK_EQ(pt_sched_procs(s), 3);
    finish_sched(s);
}

static void row_pt_sched_read_stats(void)
{
    pt_sched_stats st;
    memset(&st, 0x5a, sizeof st);
    pt_sched_read_stats(NULL, &st); /* a bad s: zeros */
    CHECK_EQ(st.gs_created, 0);
    CHECK_EQ(st.procs, 0);
    CHECK_EQ(st.ring_enters, 0);
    pt_sched_read_stats(NULL, NULL); /* nowhere to write: nothing */
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    pt_sched_read_stats(s, NULL);
    CHECK_EQ(stats_of(s).procs, 1);
    finish_sched(s);
}

/* What the calls that name the caller answer inside a park's commit: no
 * G is current there (sched.h, pt_park), on the M's own stack or, in a
 * handoff, on the stack of the G that runs next. */
struct in_commit {
    bool other; /* a G runnable behind the parker: the handoff's commit */
    pt_sched *s;
    pt_g *g;
    int begin, end;
    pt_sched *s_in_g;
    pt_g *g_in_g;
};

static bool look_in_commit(void *arg)
{
    struct in_commit *c = arg;
    c->s = pt_sched_current();
    c->g = pt_g_current();
    c->begin = pt_preemptible_begin();
    c->end = pt_preemptible_end();
    return false; /* resume at once */
}

static void commit_looker(void *arg)
{
    struct in_commit *c = arg;
    c->s_in_g = pt_sched_current();
    c->g_in_g = pt_g_current();
    if (c->other)
        CHECK_EQ(pt_go(NULL, noop, NULL), 0); /* first in line on this P */
    CHECK_EQ(pt_park(look_in_commit, c), 0);
}

static void commits_look(void)
{
    for (int other = 0; other < 2; other++) {
        struct in_commit c = {.other = other, .s = (pt_sched *)&c, .g = (pt_g *)&c, 1, 1};
        pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
        CHECK_EQ(pt_go(s, commit_looker, &c), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        CHECK(c.s_in_g == s);
        CHECK(c.g_in_g != NULL);
        CHECK(c.s == NULL);
        CHECK(c.g == NULL);
        CHECK_EQ(c.begin, -EPERM);
        CHECK_EQ(c.end, -EPERM);
        CHECK_EQ(pt_sched_destroy(s), 0);
    }
}

static void row_pt_sched_current(void)
{
    /* nothing to refuse: NULL outside a G, and in a park's commit */
    CHECK(pt_sched_current() == NULL);
    commits_look();
}

static void row_pt_g_current(void)
{
    CHECK(pt_g_current() == NULL); /* nothing to refuse: NULL outside a G */
    commits_look();
}

struct go_case {
    int r_null_fn;
    int r_null_s;
    atomic_int ran;
};

static void go_from_a_g(void *arg)
{
    struct go_case *c = arg;
    c->r_null_fn = pt_go(NULL, NULL, NULL);
    c->r_null_s = pt_go(NULL, set_flag, &c->ran); /* fine: the caller's scheduler */
}

static void row_pt_go(void)
{
    CHECK_EQ(pt_go(NULL, noop, NULL), -EINVAL); /* outside a G, no scheduler of its own */
    CHECK_EQ(pt_go(NULL, NULL, NULL), -EINVAL);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    uint64_t made = stats_of(s).gs_created;
    CHECK_EQ(pt_go(s, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_go(s, NULL, &made), -EINVAL);
    CHECK_EQ(stats_of(s).gs_created, made);
    struct go_case c = {1, 1, 0};
    CHECK_EQ(pt_go(s, go_from_a_g, &c), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(c.r_null_fn, -EINVAL);
    CHECK_EQ(c.r_null_s, 0);
    CHECK_EQ(atomic_load(&c.ran), 1);
    CHECK_EQ(stats_of(s).gs_created, made + 2);
    check_runs_a_g(s);
    finish_sched(s);
    /* (a scheduler stopping is one inside pt_sched_destroy, which refuses
     * while a G or a time.* timer of it lives and then frees it: no caller
     * can hold it then but through a use after free) */
}

static void yield_alone(void *arg)
{
    pt_yield(); /* no other G: back at once */
    set_flag(arg);
}

static void row_pt_yield(void)
{
    /* void: nothing to refuse. Outside a G it returns; a G alone gets its
     * P back. (Inside a preemptible region it aborts: test_preempt.c.) */
    pt_yield();
    atomic_int ran = 0;
    in_a_g(yield_alone, &ran);
    CHECK_EQ(atomic_load(&ran), 1);
}

/* ---- sleeps ---------------------------------------------------------------------- */

/* d <= 0 and `when` already past, a negative one too: 0 at once. */
static void sleeps_now(void *arg)
{
    (void)arg;
    static const pt_nanos d[] = {0, -1, INT64_MIN};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        CHECK_EQ(pt_sleep(d[i]), 0);
        CHECK_EQ(pt_sleep_until(d[i]), 0);
    }
    CHECK_EQ(pt_sleep_until(pt_nanotime() - 1), 0);
}

struct never {
    bool until;
    atomic_int tid, returned;
};

static void *sleep_forever(void *arg)
{
    struct never *n = arg;
    atomic_store(&n->tid, (int)syscall(SYS_gettid));
    if (n->until)
        pt_sleep_until(INT64_MAX);
    else
        pt_sleep(INT64_MAX); /* now + d past the clock's range */
    atomic_store(&n->returned, 1);
    return NULL;
}

/* A plain thread's sleep that never ends must not return: seen asleep in
 * the kernel, not returned. The thread is left asleep, detached, until
 * the process exits (a cancel would unwind through frames a sanitizer
 * instruments). A G's sleep of the same length cannot be ended (nobody
 * else wakes a sleeper), so only the thread is tried; a G's `now + d` is
 * saturated the same way (sleep.c). */
static void sleeps_never_from_a_thread(bool until)
{
    static struct never n[2]; /* the thread's, for as long as it sleeps */
    struct never *me = &n[until];
    me->until = until;
    pthread_attr_t a;
    pthread_t th;
    CHECK_EQ(pthread_attr_init(&a), 0);
    CHECK_EQ(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
    CHECK_EQ(pthread_create(&th, &a, sleep_forever, me), 0);
    CHECK_EQ(pthread_attr_destroy(&a), 0);
    WAIT_FOR(atomic_load(&me->tid) != 0);
    CHECK(thread_asleep(atomic_load(&me->tid)));
    CHECK_EQ(atomic_load(&me->returned), 0);
}

static void row_pt_sleep(void)
{
    sleeps_now(NULL);
    in_a_g(sleeps_now, NULL);
    sleeps_never_from_a_thread(false);
}

static void row_pt_sleep_until(void)
{
    sleeps_now(NULL);
    in_a_g(sleeps_now, NULL);
    sleeps_never_from_a_thread(true);
}

/* ---- park and ready ---------------------------------------------------------------- */

static bool count_commit(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return false;
}

static void park_refused_at_once(void *arg)
{
    atomic_int *commits = arg;
    CHECK_EQ(pt_park(count_commit, commits), 0); /* commit false: resumed at once */
    CHECK_EQ(atomic_load(commits), 1);
}

static void row_pt_park(void)
{
    atomic_int commits = 0;
    CHECK_EQ(pt_park(NULL, NULL), -EPERM);
    CHECK_EQ(pt_park(count_commit, &commits), -EPERM);
    CHECK_EQ(atomic_load(&commits), 0); /* nothing ran */
    in_a_g(park_refused_at_once, &commits);
    /* (commit itself must not block or call into the scheduler:
     * undefined, not tried; what the naming calls answer there is
     * pt_sched_current's row) */
}

static void ready_driver(void *arg)
{
    struct parker *p = arg;
    CHECK_EQ(pt_ready(pt_g_current()), -EINVAL); /* running, not parked */
    CHECK_EQ(pt_go(NULL, park_once, p), 0);
    while (!atomic_load(&p->published))
        pt_yield(); /* it runs until it parks */
    pt_g *g = atomic_load(&p->published);
    CHECK_EQ(pt_ready(g), 0);
    CHECK_EQ(pt_ready(g), -EINVAL); /* runnable now, not parked */
    CHECK_EQ(atomic_load(&p->resumed), 0);
    while (!atomic_load(&p->resumed))
        pt_yield();
}

static void row_pt_ready(void)
{
    CHECK_EQ(pt_ready(NULL), -EINVAL);
    struct parker p = {0};
    in_a_g(ready_driver, &p);
    /* a parked G readied from a plain thread: pt_sched_destroy's row */
}

/* ---- preemptible regions ------------------------------------------------------------ */

struct region_rows_case {
    int end_outside, begin, end, end_after;
    int begin_off, end_off;
    int overflow;
    uint32_t depth_after_overflow;
};

static void region_rows_in_a_g(void *arg)
{
    struct region_rows_case *c = arg;
    pt_sched *s = pt_sched_current();
    c->end_outside = pt_preemptible_end(); /* outside a region */
    c->begin = pt_preemptible_begin();
    c->end = c->begin == 0 ? pt_preemptible_end() : -1;
    c->end_after = pt_preemptible_end();
    /* preemption off: refused, the depth left at 0 */
    CHECK_EQ(pt_sched_set_preempt_slice(s, 0), 0);
    c->begin_off = pt_preemptible_begin();
    c->end_off = pt_preemptible_end();
    CHECK_EQ(pt_sched_set_preempt_slice(s, 500 * US), 0);
#ifndef PT__TSAN
    /* the deepest nesting: one more is refused, the depth kept */
    pt_g *g = pt_g_current();
    atomic_store(&g->preemptible, UINT32_MAX);
    c->overflow = pt_preemptible_begin();
    c->depth_after_overflow = atomic_load(&g->preemptible);
    atomic_store(&g->preemptible, 1);
    CHECK_EQ(pt_preemptible_end(), 0);
#endif
}

static void region_rows(void)
{
    CHECK_EQ(pt_preemptible_begin(), -EPERM); /* a plain thread */
    CHECK_EQ(pt_preemptible_end(), -EPERM);
    struct region_rows_case c;
    memset(&c, 0x5a, sizeof c);
    in_a_g(region_rows_in_a_g, &c);
    CHECK_EQ(c.end_outside, -EINVAL);
#ifdef PT__TSAN
    CHECK_EQ(c.begin, -ENOTSUP); /* refused under TSan (sched.h) */
#else
    CHECK_EQ(c.begin, 0);
    CHECK_EQ(c.end, 0);
    CHECK_EQ(c.overflow, -EOVERFLOW);
    CHECK_EQ(c.depth_after_overflow, UINT32_MAX);
#endif
    CHECK_EQ(c.end_after, -EINVAL);
    CHECK_EQ(c.begin_off, -ENOTSUP);
    CHECK_EQ(c.end_off, -EINVAL);
    commits_look(); /* -EPERM in a park's commit */
}

static void row_pt_preemptible_begin(void)
{
    region_rows();
}

static void row_pt_preemptible_end(void)
{
    region_rows();
}

static void begin_and_end(void *arg)
{
    int *r = arg;
    *r = pt_preemptible_begin();
    if (*r == 0)
        CHECK_EQ(pt_preemptible_end(), 0);
}

static void row_pt_sched_set_preempt_slice(void)
{
    CHECK_EQ(pt_sched_set_preempt_slice(NULL, 0), -EINVAL);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_sched_set_preempt_slice(s, -1), -EINVAL);
    CHECK_EQ(pt_sched_set_preempt_slice(s, INT64_MIN), -EINVAL);
    /* the slice is as it was: regions are still allowed */
    int r = 1;
    CHECK_EQ(pt_go(s, begin_and_end, &r), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
#ifdef PT__TSAN
    CHECK_EQ(r, -ENOTSUP);
#else
    CHECK_EQ(r, 0);
#endif
    finish_sched(s);
}

static void row_pt_sched_set_monitor_priority(void)
{
    CHECK_EQ(pt_sched_set_monitor_priority(NULL, 0), -EINVAL);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    static const int bad[] = {-1, 100, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(pt_sched_set_monitor_priority(s, bad[i]), -EINVAL);
    /* nothing was changed: the default is set again as it was (or, in a
     * sandbox that forbids sched_setattr, refused as before) */
    int r = pt_sched_set_monitor_priority(s, 0);
    CHECK(r == 0 || r == -EPERM);
    check_runs_a_g(s);
    finish_sched(s);
}

/* ---- wait groups -------------------------------------------------------------------- */

struct wg_case {
    pt_wg w;
    atomic_int waiting, woken;
};

static void wg_waiter(void *arg)
{
    struct wg_case *c = arg;
    atomic_store(&c->waiting, 1);
    CHECK_EQ(pt_wg_wait(&c->w), 0);
    atomic_store(&c->woken, 1);
}

/* A refused add or done leaves a waiting G waiting: on one P, a G it had
 * readied would run at the driver's next yield. */
static void wg_driver(void *arg)
{
    struct wg_case *c = arg;
    CHECK_EQ(pt_wg_init(&c->w), 0);
    CHECK_EQ(pt_wg_add(&c->w, 1), 0);
    CHECK_EQ(pt_go(NULL, wg_waiter, c), 0);
    while (!atomic_load(&c->waiting))
        pt_yield(); /* it runs until it parks in the wait */
    CHECK_EQ(pt_wg_add(&c->w, -2), -EINVAL);
    CHECK_EQ(pt_wg_add(&c->w, INT64_MAX), -EINVAL);
    CHECK_EQ(pt_wg_add(&c->w, INT64_MIN), -EINVAL);
    pt_yield();
    CHECK_EQ(atomic_load(&c->woken), 0);
    CHECK_EQ(pt_wg_done(&c->w), 0);
    while (!atomic_load(&c->woken))
        pt_yield();
    CHECK_EQ(pt_wg_done(&c->w), -EINVAL); /* at zero */
}

static void wg_rows(void)
{
    CHECK_EQ(pt_wg_init(NULL), -EINVAL);
    CHECK_EQ(pt_wg_add(NULL, 1), -EINVAL);
    CHECK_EQ(pt_wg_add(NULL, 0), -EINVAL);
    CHECK_EQ(pt_wg_done(NULL), -EINVAL);
    CHECK_EQ(pt_wg_wait(NULL), -EINVAL);
    pt_wg w;
    CHECK_EQ(pt_wg_init(&w), 0);
    /* below zero, or past INT64_MAX: refused, the count kept */
    CHECK_EQ(pt_wg_add(&w, -1), -EINVAL);
    CHECK_EQ(pt_wg_add(&w, INT64_MIN), -EINVAL);
    CHECK_EQ(pt_wg_done(&w), -EINVAL);
    CHECK_EQ(pt_wg_wait(&w), 0); /* still zero: at once */
    CHECK_EQ(pt_wg_add(&w, INT64_MAX), 0);
    CHECK_EQ(pt_wg_add(&w, 1), -EINVAL);
    CHECK_EQ(pt_wg_add(&w, INT64_MAX), -EINVAL);
    CHECK_EQ(pt_wg_add(&w, INT64_MIN), -EINVAL); /* below zero by one */
    CHECK_EQ(pt_wg_add(&w, -INT64_MAX + 1), 0);
    CHECK_EQ(pt_wg_done(&w), 0);
    CHECK_EQ(pt_wg_wait(&w), 0);
    struct wg_case c = {0};
    in_a_g(wg_driver, &c);
    CHECK_EQ(atomic_load(&c.woken), 1);
}

static void row_pt_wg_init(void)
{
    wg_rows();
}
static void row_pt_wg_add(void)
{
    wg_rows();
}
static void row_pt_wg_done(void)
{
    wg_rows();
}
static void row_pt_wg_wait(void)
{
    wg_rows();
}

/* ---- channels ------------------------------------------------------------------------ */

/* A good channel: two longs of room, one value (41) in it. */
static pt_chan *good_chan(void)
{
    pt_chan *c = NULL;
    CHECK_EQ(pt_chan_make(&c, sizeof(long), 2), 0);
    long v = 41;
    CHECK_EQ(pt_chan_try_send(c, &v), 0);
    return c;
}

/* It still holds 41 alone (taken and put back). */
static void check_chan_holds(pt_chan *c)
{
    CHECK_EQ(pt_chan_len(c), 1);
    CHECK_EQ(pt_chan_cap(c), 2);
    long v = 0;
    CHECK_EQ(pt_chan_try_recv(c, &v), 1);
    CHECK_EQ(v, 41);
    CHECK_EQ(pt_chan_try_send(c, &v), 0);
}

static void row_pt_chan_make(void)
{
    pt_chan *const sentinel = (pt_chan *)&sentinel;
    pt_chan *c = sentinel;
    CHECK_EQ(pt_chan_make(NULL, 8, 1), -EINVAL);
    CHECK_EQ(pt_chan_make(&c, SIZE_MAX / 2, 4), -EINVAL);            /* elem * cap overflows */
    CHECK_EQ(pt_chan_make(&c, 1, SIZE_MAX), -EINVAL);                /* + the header overflows */
    CHECK_EQ(pt_chan_make(&c, 8, (SIZE_MAX >> 2) / 8 + 1), -EINVAL); /* past SIZE_MAX / 4 */
    CHECK_EQ(pt_chan_make(&c, (SIZE_MAX >> 2) + 1, 0), -EINVAL);     /* an element too big */
    CHECK_EQ(pt_chan_make(&c, SIZE_MAX, 0), -EINVAL);
    CHECK(c == sentinel);
    /* the edges that are fine: no element, no buffer, both */
    CHECK_EQ(pt_chan_make(&c, 0, 0), 0);
    CHECK_EQ(pt_chan_free(c), 0);
    CHECK_EQ(pt_chan_make(&c, 0, SIZE_MAX), 0); /* struct{} elements: no buffer bytes */
    CHECK_EQ(pt_chan_cap(c), SIZE_MAX);
    CHECK_EQ(pt_chan_free(c), 0);
}

struct chan_case {
    pt_chan *c, *closed;
};

/* The blocking sends from a G: refused without blocking. */
static void sends_in_a_g(void *arg)
{
    struct chan_case *k = arg;
    long v = 5;
    CHECK_EQ(pt_chan_send(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_send(k->c, NULL), -EINVAL);
    CHECK_EQ(pt_chan_send(k->closed, &v), -EPIPE);
    CHECK_EQ(pt_chan_send_until(NULL, &v, 0), -EINVAL);
    CHECK_EQ(pt_chan_send_until(k->c, NULL, 0), -EINVAL);
    CHECK_EQ(pt_chan_send_until(k->closed, &v, 0), -EPIPE);
    /* full, with a deadline past or negative: -ETIMEDOUT without waiting */
    CHECK_EQ(pt_chan_try_send(k->c, &v), 0);
    CHECK_EQ(pt_chan_send_until(k->c, &v, 1), -ETIMEDOUT);
    CHECK_EQ(pt_chan_send_until(k->c, &v, -1), -ETIMEDOUT);
    CHECK_EQ(pt_chan_send_until(k->c, &v, INT64_MIN), -ETIMEDOUT);
    CHECK_EQ(pt_chan_send_until(k->c, &v, pt_nanotime()), -ETIMEDOUT);
    CHECK_EQ(pt_chan_len(k->c), 2);
    CHECK_EQ(pt_chan_try_recv(k->c, NULL), 1); /* the 41, dropped */
    CHECK_EQ(pt_chan_try_recv(k->c, &v), 1);
    CHECK_EQ(v, 5);
    v = 41;
    CHECK_EQ(pt_chan_try_send(k->c, &v), 0); /* as it was */
}

static void send_rows(void)
{
    struct chan_case k = {good_chan(), good_chan()};
    CHECK_EQ(pt_chan_close(k.closed), 0);
    long v = 5;
    /* from a plain thread: a blocking send is -EPERM, even with room */
    CHECK_EQ(pt_chan_send(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_send(k.c, NULL), -EINVAL);
    CHECK_EQ(pt_chan_send(k.c, &v), -EPERM);
    CHECK_EQ(pt_chan_send_until(k.c, &v, pt_nanotime() + SEC), -EPERM);
    check_chan_holds(k.c);
    in_a_g(sends_in_a_g, &k);
    check_chan_holds(k.c);
    CHECK_EQ(pt_chan_len(k.closed), 1); /* closed, its value still there to drain */
    CHECK_EQ(pt_chan_free(k.c), 0);
    CHECK_EQ(pt_chan_free(k.closed), 0);
}

static void row_pt_chan_send(void)
{
    send_rows();
}
static void row_pt_chan_send_until(void)
{
    send_rows();
}

static void row_pt_chan_try_send(void)
{
    pt_chan *c = good_chan();
    long v = 5;
    CHECK_EQ(pt_chan_try_send(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_try_send(c, NULL), -EINVAL); /* nothing to send */
    check_chan_holds(c);
    CHECK_EQ(pt_chan_try_send(c, &v), 0);
    CHECK_EQ(pt_chan_try_send(c, &v), -EAGAIN); /* full */
    CHECK_EQ(pt_chan_len(c), 2);
    CHECK_EQ(pt_chan_try_recv(c, NULL), 1);
    CHECK_EQ(pt_chan_try_recv(c, NULL), 1);
    CHECK_EQ(pt_chan_close(c), 0);
    CHECK_EQ(pt_chan_try_send(c, &v), -EPIPE);
    CHECK_EQ(pt_chan_len(c), 0);
    CHECK_EQ(pt_chan_free(c), 0);
    /* the edge that is fine: a NULL elem where elements have no size */
    CHECK_EQ(pt_chan_make(&c, 0, 1), 0);
    CHECK_EQ(pt_chan_try_send(c, NULL), 0);
    CHECK_EQ(pt_chan_free(c), 0);
}

static void recvs_in_a_g(void *arg)
{
    struct chan_case *k = arg;
    long v = 77;
    CHECK_EQ(pt_chan_recv(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_recv_until(NULL, &v, 0), -EINVAL);
    /* empty, with a deadline past or negative: -ETIMEDOUT, v untouched */
    CHECK_EQ(pt_chan_try_recv(k->c, &v), 1);
    v = 77;
    CHECK_EQ(pt_chan_recv_until(k->c, &v, 1), -ETIMEDOUT);
    CHECK_EQ(pt_chan_recv_until(k->c, &v, -1), -ETIMEDOUT);
    CHECK_EQ(pt_chan_recv_until(k->c, &v, INT64_MIN), -ETIMEDOUT);
    CHECK_EQ(v, 77);
    /* with a value, a deadline past is not looked at */
    long x = 41;
    CHECK_EQ(pt_chan_try_send(k->c, &x), 0);
    CHECK_EQ(pt_chan_recv_until(k->c, &v, 1), 1);
    CHECK_EQ(v, 41);
    CHECK_EQ(pt_chan_try_send(k->c, &x), 0); /* as it was */
    /* closed and drained: 0 and a zero value, not an error */
    CHECK_EQ(pt_chan_recv(k->closed, &v), 1);
    CHECK_EQ(pt_chan_recv(k->closed, &v), 0);
    CHECK_EQ(v, 0);
    v = 77;
    CHECK_EQ(pt_chan_recv_until(k->closed, &v, 1), 0);
    CHECK_EQ(v, 0);
}

static void recv_rows(void)
{
    struct chan_case k = {good_chan(), good_chan()};
    CHECK_EQ(pt_chan_close(k.closed), 0);
    long v = 77;
    /* from a plain thread: a blocking receive is -EPERM, even with a value */
    CHECK_EQ(pt_chan_recv(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_recv(k.c, &v), -EPERM);
    CHECK_EQ(pt_chan_recv_until(k.c, &v, pt_nanotime() + SEC), -EPERM);
    CHECK_EQ(pt_chan_recv(k.c, NULL), -EPERM);
    CHECK_EQ(v, 77);
    check_chan_holds(k.c);
    in_a_g(recvs_in_a_g, &k);
    check_chan_holds(k.c);
    CHECK_EQ(pt_chan_free(k.c), 0);
    CHECK_EQ(pt_chan_free(k.closed), 0);
}

static void row_pt_chan_recv(void)
{
    recv_rows();
}
static void row_pt_chan_recv_until(void)
{
    recv_rows();
}

static void row_pt_chan_try_recv(void)
{
    long v = 77;
    CHECK_EQ(pt_chan_try_recv(NULL, &v), -EINVAL);
    pt_chan *c = good_chan();
    CHECK_EQ(pt_chan_try_recv(c, NULL), 1); /* fine: the value dropped */
    CHECK_EQ(pt_chan_try_recv(c, &v), -EAGAIN);
    CHECK_EQ(v, 77);
    CHECK_EQ(pt_chan_close(c), 0);
    CHECK_EQ(pt_chan_try_recv(c, &v), 0); /* closed and drained */
    CHECK_EQ(v, 0);
    CHECK_EQ(pt_chan_free(c), 0);
}

static void row_pt_chan_close(void)
{
    CHECK_EQ(pt_chan_close(NULL), -EINVAL);
    pt_chan *c = good_chan();
    CHECK_EQ(pt_chan_close(c), 0);
    CHECK_EQ(pt_chan_close(c), -EPIPE); /* twice */
    /* its value still there to drain (by hand: a closed channel takes no
     * send to put it back) */
    CHECK_EQ(pt_chan_len(c), 1);
    long v = 0;
    CHECK_EQ(pt_chan_try_recv(c, &v), 1);
    CHECK_EQ(v, 41);
    CHECK_EQ(pt_chan_try_recv(c, &v), 0);
    CHECK_EQ(pt_chan_free(c), 0);
}

struct free_case {
    pt_chan *c;
    atomic_int waiting, got;
    long v;
};

static void chan_receiver(void *arg)
{
    struct free_case *f = arg;
    atomic_store(&f->waiting, 1);
    CHECK_EQ(pt_chan_recv(f->c, &f->v), 1);
    atomic_store(&f->got, 1);
}

static void free_driver(void *arg)
{
    struct free_case *f = arg;
    CHECK_EQ(pt_go(NULL, chan_receiver, f), 0);
    while (!atomic_load(&f->waiting))
        pt_yield(); /* it runs until it parks in the receive */
    CHECK_EQ(pt_chan_free(f->c), -EBUSY);
    long v = 9;
    CHECK_EQ(pt_chan_try_send(f->c, &v), 0); /* still a channel: to the receiver */
    while (!atomic_load(&f->got))
        pt_yield();
    CHECK_EQ(f->v, 9);
}

static void row_pt_chan_free(void)
{
    CHECK_EQ(pt_chan_free(NULL), -EINVAL);
    struct free_case f = {0};
    CHECK_EQ(pt_chan_make(&f.c, sizeof(long), 0), 0);
    in_a_g(free_driver, &f);
    CHECK_EQ(pt_chan_free(f.c), 0);
    /* (after free, and a time.* timer's channel at any time: not the
     * caller's to free, undefined, not tried) */
}

static void row_pt_chan_len(void)
{
    CHECK_EQ(pt_chan_len(NULL), 0); /* size_t: nothing to refuse, 0 */
    pt_chan *c = good_chan();
    CHECK_EQ(pt_chan_len(c), 1);
    CHECK_EQ(pt_chan_free(c), 0);
}

static void row_pt_chan_cap(void)
{
    CHECK_EQ(pt_chan_cap(NULL), 0); /* size_t: nothing to refuse, 0 */
    pt_chan *c = good_chan();
    CHECK_EQ(pt_chan_cap(c), 2);
    CHECK_EQ(pt_chan_free(c), 0);
}

/* ---- select ---------------------------------------------------------------------------- */

struct select_case {
    pt_chan *c, *closed;
};

static void selects_in_a_g(void *arg)
{
    struct select_case *k = arg;
    /* blocking with nothing that could ever be ready and no deadline */
    CHECK_EQ(pt_select(NULL, 0, 0, true), -EINVAL);
    pt_select_case none[2] = {{NULL, PT_RECV, NULL, true}, {NULL, PT_SEND, NULL, true}};
    CHECK_EQ(pt_select(none, 2, 0, true), -EINVAL);
    CHECK(none[0].ok && none[1].ok);
    /* a deadline past or negative, nothing ready: -ETIMEDOUT */
    long v = 77;
    pt_select_case recv[1] = {{k->c, PT_RECV, &v, true}};
    CHECK_EQ(pt_chan_try_recv(k->c, NULL), 1); /* empty it */
    CHECK_EQ(pt_select(recv, 1, 1, true), -ETIMEDOUT);
    CHECK_EQ(pt_select(recv, 1, -1, true), -ETIMEDOUT);
    CHECK_EQ(pt_select(none, 2, 1, true), -ETIMEDOUT);
    CHECK_EQ(pt_select(NULL, 0, -1, true), -ETIMEDOUT);
    CHECK_EQ(v, 77);
    CHECK(recv[0].ok);
    v = 41;
    CHECK_EQ(pt_chan_try_send(k->c, &v), 0); /* as it was */
}

static void row_pt_select(void)
{
    struct select_case k = {good_chan(), good_chan()};
    CHECK_EQ(pt_chan_close(k.closed), 0);
    long v = 77, s = 5;
    pt_select_case one[1] = {{k.c, PT_RECV, &v, true}};
    CHECK_EQ(pt_select(NULL, 1, 0, false), -EINVAL);
    CHECK_EQ(pt_select(one, -1, 0, false), -EINVAL);
    CHECK_EQ(pt_select(one, INT_MIN, 0, false), -EINVAL);
    CHECK_EQ(pt_select(one, 65536, 0, false), -EINVAL);
    static const int bad_dirs[] = {0, 3, -1, PT_SEND | PT_RECV | 4};
    for (size_t i = 0; i < sizeof bad_dirs / sizeof bad_dirs[0]; i++) {
        pt_select_case bad[2] = {{k.c, PT_RECV, &v, true}, {k.c, bad_dirs[i], &v, true}};
        CHECK_EQ(pt_select(bad, 2, 0, false), -EINVAL);
        CHECK(bad[0].ok && bad[1].ok);
    }
    /* a send with nothing to send, on elements with a size */
    pt_select_case nosend[2] = {{k.c, PT_RECV, &v, true}, {k.c, PT_SEND, NULL, true}};
    CHECK_EQ(pt_select(nosend, 2, 0, false), -EINVAL);
    CHECK_EQ(v, 77);
    CHECK(nosend[0].ok);
    check_chan_holds(k.c);
    /* blocking from a plain thread: -EPERM, even with a case ready */
    CHECK_EQ(pt_select(one, 1, 0, true), -EPERM);
    CHECK_EQ(pt_select(one, 1, pt_nanotime() + SEC, true), -EPERM);
    CHECK_EQ(v, 77);
    check_chan_holds(k.c);
    /* non-blocking, nothing ready: -EAGAIN (no case, NULL channels, a
     * full channel to send on) */
    CHECK_EQ(pt_select(NULL, 0, 0, false), -EAGAIN);
    pt_select_case none[1] = {{NULL, PT_RECV, &v, true}};
    CHECK_EQ(pt_select(none, 1, 0, false), -EAGAIN);
    CHECK_EQ(pt_chan_try_send(k.c, &s), 0);
    pt_select_case full[1] = {{k.c, PT_SEND, &s, true}};
    CHECK_EQ(pt_select(full, 1, 0, false), -EAGAIN);
    CHECK_EQ(pt_chan_len(k.c), 2);
    CHECK_EQ(pt_chan_try_recv(k.c, NULL), 1);
    CHECK_EQ(pt_chan_try_recv(k.c, NULL), 1);
    s = 41;
    CHECK_EQ(pt_chan_try_send(k.c, &s), 0);
    /* a send chosen on a closed channel */
    pt_select_case closed[1] = {{k.closed, PT_SEND, &s, true}};
    CHECK_EQ(pt_select(closed, 1, 0, false), -EPIPE);
    CHECK_EQ(pt_chan_len(k.closed), 1);
    in_a_g(selects_in_a_g, &k);
    check_chan_holds(k.c);
    CHECK_EQ(pt_chan_free(k.c), 0);
    CHECK_EQ(pt_chan_free(k.closed), 0);
}

/* ---- descriptors ------------------------------------------------------------------------ */

/* A socket pair with a byte waiting at sv[0] (registered when a G first
 * uses it), a socket of another scheduler's, a listener and an fd
 * number that is not open. */
struct fdfix {
    int sv[2];
    int osv[2];
    pt_sched *other;
    int lfd;
    struct sockaddr_in la;
    int gone;
};

static void register_with_other(void *arg)
{
    struct fdfix *f = arg;
    CHECK_EQ(pt_fd_write(f->osv[0], "o", 1, 0), 1);
}

static void fdfix_open(struct fdfix *f)
{
    memset(f, 0, sizeof *f);
    socket_pair(f->sv);
    CHECK_EQ(write(f->sv[1], "q", 1), 1);
    socket_pair(f->osv);
    f->other = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(f->other, register_with_other, f), 0);
    CHECK_EQ(pt_sched_wait(f->other), 0);
    f->lfd = listen_loopback(SOCK_NONBLOCK, &f->la);
    /* the highest number a descriptor here may have, and not open: a
     * number just closed would be the kernel's next, which a scheduler
     * made later takes for its netpoll */
    f->gone = (1 << 20) - 1;
    CHECK_EQ(fcntl(f->gone, F_GETFD), -1);
}

/* The byte is still waiting at sv[0], and nothing reached sv[1]. */
static void fdfix_check(struct fdfix *f)
{
    char b[2];
    CHECK_EQ(recv(f->sv[0], b, sizeof b, MSG_PEEK | MSG_DONTWAIT), 1);
    CHECK_EQ(b[0], 'q');
    CHECK_EQ(recv(f->sv[1], b, sizeof b, MSG_DONTWAIT), -1);
    CHECK_EQ(errno, EAGAIN);
    /* the listener has no connection pending */
    CHECK_EQ(accept(f->lfd, NULL, NULL), -1);
    CHECK_EQ(errno, EAGAIN);
}

static void fdfix_close(struct fdfix *f)
{
    CHECK_EQ(pt_fd_close(f->sv[0]), 0);
    CHECK_EQ(close(f->sv[1]), 0);
    CHECK_EQ(pt_fd_close(f->osv[0]), 0); /* from any thread */
    CHECK_EQ(close(f->osv[1]), 0);
    CHECK_EQ(pt_fd_close(f->lfd), 0);
    CHECK_EQ(pt_sched_destroy(f->other), 0);
}

/* fn(f) as a G of a scheduler of its own, then f as it was. */
static void fd_rows_in_a_g(void (*fn)(void *), struct fdfix *f)
{
    in_a_g(fn, f);
    fdfix_check(f);
}

static void reads_in_a_g(void *arg)
{
    struct fdfix *f = arg;
    char b[4];
    CHECK_EQ(pt_fd_read(-1, b, 1, 0), -EBADF);
    CHECK_EQ(pt_fd_read(INT_MIN, b, 1, 0), -EBADF);
    CHECK_EQ(pt_fd_read(f->gone, b, 1, 0), -EBADF);
    CHECK_EQ(pt_fd_read(1 << 20, b, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_read(INT_MAX, b, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_read(f->sv[0], NULL, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_read(f->sv[0], b, (size_t)SSIZE_MAX + 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_read(f->sv[0], b, SIZE_MAX, 0), -EINVAL);
    CHECK_EQ(pt_fd_read(f->sv[0], b, 1, -1), -EINVAL);
    CHECK_EQ(pt_fd_read(f->sv[0], b, 1, INT64_MIN), -EINVAL);
    CHECK_EQ(pt_fd_read(f->osv[0], b, 1, 0), -EINVAL); /* another scheduler's */
    /* a deadline past: -ETIMEDOUT before the fd is looked at, data or not */
    CHECK_EQ(pt_fd_read(f->sv[0], b, 1, 1), -ETIMEDOUT);
    CHECK_EQ(pt_fd_read(f->sv[0], b, 1, pt_nanotime()), -ETIMEDOUT);
    /* the edge that is fine: zero bytes, at once (NULL buf too) */
    CHECK_EQ(pt_fd_read(f->sv[0], NULL, 0, 0), 0);
}

static void row_pt_fd_read(void)
{
    struct fdfix f;
    fdfix_open(&f);
    char b[4];
    CHECK_EQ(pt_fd_read(f.sv[0], b, 1, 0), -EPERM); /* a plain thread */
    CHECK_EQ(pt_fd_read(-1, NULL, SIZE_MAX, -1), -EPERM);
    fdfix_check(&f);
    fd_rows_in_a_g(reads_in_a_g, &f);
    fdfix_close(&f);
}

static void writes_in_a_g(void *arg)
{
    struct fdfix *f = arg;
    CHECK_EQ(pt_fd_write(-1, "w", 1, 0), -EBADF);
    CHECK_EQ(pt_fd_write(f->gone, "w", 1, 0), -EBADF);
    CHECK_EQ(pt_fd_write(1 << 20, "w", 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_write(f->sv[0], NULL, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_write(f->sv[0], "w", (size_t)SSIZE_MAX + 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_write(f->sv[0], "w", 1, -1), -EINVAL);
    CHECK_EQ(pt_fd_write(f->osv[0], "w", 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_write(f->sv[0], "w", 1, 1), -ETIMEDOUT); /* nothing written */
    CHECK_EQ(pt_fd_write(f->sv[0], NULL, 0, 0), 0);         /* fine: zero bytes */
}

static void row_pt_fd_write(void)
{
    struct fdfix f;
    fdfix_open(&f);
    CHECK_EQ(pt_fd_write(f.sv[0], "w", 1, 0), -EPERM);
    fdfix_check(&f);
    fd_rows_in_a_g(writes_in_a_g, &f);
    fdfix_close(&f);
}

static void writevs_in_a_g(void *arg)
{
    struct fdfix *f = arg;
    char b[2] = {'w', 'v'};
    struct iovec one = {b, 1};
    struct iovec nul[2] = {{b, 1}, {NULL, 1}};
    struct iovec big[2] = {{b, 1}, {b, (size_t)SSIZE_MAX}};
    struct {
        int fd;
        const struct iovec *iov;
        int cnt;
        pt_nanos deadline;
        int want;
    } bad[] = {
        {f->sv[0], &one, -1, 0, -EINVAL},
        {f->sv[0], &one, INT_MIN, 0, -EINVAL},
        {f->sv[0], &one, IOV_MAX + 1, 0, -EINVAL},
        {f->sv[0], NULL, 1, 0, -EINVAL},
        {f->sv[0], nul, 2, 0, -EINVAL}, /* NULL with a length */
        {f->sv[0], big, 2, 0, -EINVAL}, /* past SSIZE_MAX */
        {f->sv[0], &one, 1, -1, -EINVAL},
        {f->osv[0], &one, 1, 0, -EINVAL},
        {1 << 20, &one, 1, 0, -EINVAL},
        {-1, &one, 1, 0, -EBADF},
        {f->gone, &one, 1, 0, -EBADF},
        {f->sv[0], &one, 1, 1, -ETIMEDOUT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t w = 99;
        CHECK_EQ(pt_fd_writev(bad[i].fd, bad[i].iov, bad[i].cnt, bad[i].deadline, &w), bad[i].want);
        CHECK_EQ(w, 0); /* nothing went out, and it says so */
        CHECK_EQ(pt_fd_writev(bad[i].fd, bad[i].iov, bad[i].cnt, bad[i].deadline, NULL),
                 bad[i].want);
    }
    /* the edges that are fine: no segment (iov NULL too) */
    size_t w = 99;
    CHECK_EQ(pt_fd_writev(f->sv[0], NULL, 0, 0, &w), 0);
    CHECK_EQ(w, 0);
}

static void row_pt_fd_writev(void)
{
    struct fdfix f;
    fdfix_open(&f);
    size_t w = 99;
    CHECK_EQ(pt_fd_writev(f.sv[0], &(struct iovec){"w", 1}, 1, 0, &w), -EPERM);
    CHECK_EQ(w, 0);
    fdfix_check(&f);
    fd_rows_in_a_g(writevs_in_a_g, &f);
    fdfix_close(&f);
}

static void accepts_in_a_g(void *arg)
{
    struct fdfix *f = arg;
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    CHECK_EQ(pt_fd_accept(f->lfd, (struct sockaddr *)&sa, NULL, 0), -EINVAL);
    CHECK_EQ(pt_fd_accept(-1, NULL, NULL, 0), -EBADF);
    CHECK_EQ(pt_fd_accept(f->gone, NULL, NULL, 0), -EBADF);
    CHECK_EQ(pt_fd_accept(1 << 20, NULL, NULL, 0), -EINVAL);
    CHECK_EQ(pt_fd_accept(f->lfd, NULL, NULL, -1), -EINVAL);
    CHECK_EQ(pt_fd_accept(f->osv[0], NULL, NULL, 0), -EINVAL);
    /* not a listener: the system call's answer */
    CHECK_EQ(pt_fd_accept(f->sv[0], NULL, NULL, 0), -EINVAL);
    /* a deadline past, a connection pending: refused, and kept */
    CHECK_EQ(pt_fd_accept(f->lfd, (struct sockaddr *)&sa, &len, 1), -ETIMEDOUT);
    CHECK_EQ(len, sizeof sa);
    int c = pt_fd_accept(f->lfd, (struct sockaddr *)&sa, &len, 0);
    CHECK(c >= 0);
    CHECK_EQ(pt_fd_close(c), 0);
}

static void row_pt_fd_accept(void)
{
    struct fdfix f;
    fdfix_open(&f);
    CHECK_EQ(pt_fd_accept(f.lfd, NULL, NULL, 0), -EPERM);
    /* a client whose connection waits in the listener's queue */
    int cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(cl >= 0);
    CHECK_EQ(connect(cl, (struct sockaddr *)&f.la, sizeof f.la), 0);
    fd_rows_in_a_g(accepts_in_a_g, &f); /* (its check: the queue is empty now) */
    CHECK_EQ(close(cl), 0);
    fdfix_close(&f);
}

static void connects_in_a_g(void *arg)
{
    struct fdfix *f = arg;
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(c >= 0);
    const struct sockaddr *sa = (const struct sockaddr *)&f->la;
    CHECK_EQ(pt_fd_connect(c, NULL, sizeof f->la, 0), -EINVAL);
    CHECK_EQ(pt_fd_connect(-1, sa, sizeof f->la, 0), -EBADF);
    CHECK_EQ(pt_fd_connect(f->gone, sa, sizeof f->la, 0), -EBADF);
    CHECK_EQ(pt_fd_connect(1 << 20, sa, sizeof f->la, 0), -EINVAL);
    CHECK_EQ(pt_fd_connect(c, sa, sizeof f->la, -1), -EINVAL);
    CHECK_EQ(pt_fd_connect(f->osv[0], sa, sizeof f->la, 0), -EINVAL);
    /* a deadline past: not started (the listener's queue stays empty) */
    CHECK_EQ(pt_fd_connect(c, sa, sizeof f->la, 1), -ETIMEDOUT);
    /* a bad length: the system call's answer */
    CHECK_EQ(pt_fd_connect(c, sa, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_close(c), 0);
}

static void row_pt_fd_connect(void)
{
    struct fdfix f;
    fdfix_open(&f);
    CHECK_EQ(pt_fd_connect(f.sv[0], (struct sockaddr *)&f.la, sizeof f.la, 0), -EPERM);
    fd_rows_in_a_g(connects_in_a_g, &f);
    fdfix_close(&f);
}

static void dials_in_a_g(void *arg)
{
    struct fdfix *f = arg;
    const struct sockaddr *sa = (const struct sockaddr *)&f->la;
    int next = dup(0); /* the number a leaked socket would take */
    CHECK(next >= 0);
    CHECK_EQ(close(next), 0);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, NULL, sizeof f->la, 0), -EINVAL);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, sa, 1, 0), -EINVAL);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, sa, sizeof f->la, -1), -EINVAL);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM | SOCK_NONBLOCK, sa, sizeof f->la, 0), -EINVAL);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM | SOCK_CLOEXEC, sa, sizeof f->la, 0), -EINVAL);
    /* a deadline past: not started (the listener's queue stays empty) */
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, sa, sizeof f->la, 1), -ETIMEDOUT);
    /* the system calls' answers, the socket closed after connect's */
    struct sockaddr bad = {.sa_family = AF_MAX + 1};
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, &bad, sizeof bad, 0), -EAFNOSUPPORT);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, sa, sizeof f->la - 1, 0), -EINVAL);
    int after = dup(0);
    CHECK_EQ(after, next); /* no socket left open */
    CHECK_EQ(close(after), 0);
}

static void row_pt_fd_dial(void)
{
    struct fdfix f;
    fdfix_open(&f);
    CHECK_EQ(pt_fd_dial(SOCK_STREAM, (struct sockaddr *)&f.la, sizeof f.la, 0), -EPERM);
    fd_rows_in_a_g(dials_in_a_g, &f);
    fdfix_close(&f);
}

static void closes_in_a_g(void *arg)
{
    struct fdfix *f = arg;
    int sv[2];
    socket_pair(sv);
    char b[1];
    CHECK_EQ(pt_fd_write(sv[0], "c", 1, 0), 1); /* registered */
    CHECK_EQ(pt_fd_close(sv[0]), 0);
    CHECK_EQ(pt_fd_close(sv[0]), -EBADF); /* twice */
    CHECK_EQ(pt_fd_read(sv[0], b, 1, 0), -EBADF);
    CHECK_EQ(close(sv[1]), 0);
    CHECK_EQ(pt_fd_close(f->gone), -EBADF);
}

static void row_pt_fd_close(void)
{
    struct fdfix f;
    fdfix_open(&f);
    CHECK_EQ(pt_fd_close(-1), -EBADF);
    CHECK_EQ(pt_fd_close(INT_MIN), -EBADF);
    CHECK_EQ(pt_fd_close(f.gone), -EBADF);
    CHECK_EQ(pt_fd_close(1 << 20), -EBADF);
    fd_rows_in_a_g(closes_in_a_g, &f);
    /* the edge that is fine: an fd never used here is just closed */
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(pt_fd_close(p[0]), 0);
    CHECK_EQ(pt_fd_close(p[1]), 0);
    CHECK_EQ(fcntl(p[0], F_GETFD), -1);
    /* (a close while another close of the fd is under way is -EBADF too:
     * a race, left to the fd tests' close-while-waiting cases) */
    fdfix_close(&f);
}

struct cancel_case {
    struct fdfix *f;
    pt_chan *c;
    int r[5];
    long v;
};

static void cancelled_calls(void *arg)
{
    struct cancel_case *k = arg;
    char b[1];
    k->r[0] = (int)pt_fd_read(k->f->sv[0], b, 1, 0);
    k->r[1] = (int)pt_fd_write(k->f->sv[0], "x", 1, 0);
    k->r[2] = pt_fd_accept(k->f->lfd, NULL, NULL, 0);
    k->r[3] = pt_chan_recv(k->c, &k->v);               /* channels: not touched */
    k->r[4] = pt_sched_cancel_fds(pt_sched_current()); /* again: fine */
}

static void row_pt_sched_cancel_fds(void)
{
    CHECK_EQ(pt_sched_cancel_fds(NULL), -EINVAL);
    struct fdfix f;
    fdfix_open(&f);
    struct cancel_case k = {&f, NULL, {1, 1, 1, 1, 1}, 0};
    CHECK_EQ(pt_chan_make(&k.c, sizeof(long), 1), 0);
    long v = 6;
    CHECK_EQ(pt_chan_try_send(k.c, &v), 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_sched_cancel_fds(s), 0);
    CHECK_EQ(pt_go(s, cancelled_calls, &k), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(k.r[0], -ECANCELED);
    CHECK_EQ(k.r[1], -ECANCELED);
    CHECK_EQ(k.r[2], -ECANCELED);
    CHECK_EQ(k.r[3], 1);
    CHECK_EQ(k.v, 6);
    CHECK_EQ(k.r[4], 0);
    fdfix_check(&f);
    /* another scheduler's calls are not cancelled */
    CHECK_EQ(pt_go(f.other, register_with_other, &f), 0);
    CHECK_EQ(pt_sched_wait(f.other), 0);
    char b[2];
    CHECK_EQ(read(f.osv[1], b, 2), 2);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(pt_chan_free(k.c), 0);
    fdfix_close(&f); /* pt_fd_close still works */
}

/* ---- time.*: Timer, AfterFunc, Ticker --------------------------------------------------- */

/* A ticker of 1 ms ticks: a value comes, and comes again. */
static void check_ticks(pt_time_ticker *tk)
{
    pt_chan *c = pt_time_ticker_chan(tk);
    CHECK(c != NULL);
    WAIT_FOR(pt_chan_try_recv(c, NULL) == 1);
    WAIT_FOR(pt_chan_try_recv(c, NULL) == 1);
}

static void row_pt_time_timer_new(void)
{
    CHECK_EQ(pt_time_timer_new(NULL, 1), -EINVAL);
    CHECK_EQ(pt_time_timer_new(NULL, -1), -EINVAL);
    /* not errors: d <= 0 is now, INT64_MAX never */
    pt_time_timer *t;
    CHECK_EQ(pt_time_timer_new(&t, INT64_MIN), 0);
    WAIT_FOR(pt_chan_len(pt_time_timer_chan(t)) == 1);
    CHECK_EQ(pt_time_timer_free(t), 0);
    CHECK_EQ(pt_time_timer_new(&t, INT64_MAX), 0);
    CHECK_EQ(pt_time_timer_stop(t), 1);
    CHECK_EQ(pt_time_timer_free(t), 0);
}

static void row_pt_time_after_func(void)
{
    pt_time_timer *const sentinel = (pt_time_timer *)&sentinel;
    pt_time_timer *t = sentinel;
    CHECK_EQ(pt_time_after_func(NULL, 1, noop, NULL), -EINVAL);
    CHECK_EQ(pt_time_after_func(&t, 1, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_time_after_func(NULL, 1, NULL, NULL), -EINVAL);
    CHECK(t == sentinel);
    atomic_int ran = 0;
    CHECK_EQ(pt_time_after_func(&t, INT64_MIN, set_flag, &ran), 0); /* d <= 0: now */
    WAIT_FOR(atomic_load(&ran) == 1);
    CHECK_EQ(pt_time_timer_free(t), 0);
}

/* A Timer and a Ticker each passed for the other: refused, both kept. */
struct kinds {
    pt_time_timer *t;
    pt_time_ticker *tk;
};

static void make_kinds(struct kinds *k)
{
    CHECK_EQ(pt_time_timer_new(&k->t, 1000 * SEC), 0);
    CHECK_EQ(pt_time_ticker_new(&k->tk, 1 * MS), 0);
}

/* The timer still pending, the ticker still ticking; then both freed. */
static void check_and_free_kinds(struct kinds *k)
{
    check_ticks(k->tk);
    CHECK_EQ(pt_chan_len(pt_time_timer_chan(k->t)), 0);
    CHECK_EQ(pt_time_timer_stop(k->t), 1);
    CHECK_EQ(pt_time_timer_free(k->t), 0);
    CHECK_EQ(pt_time_ticker_free(k->tk), 0);
}

#define AS_TIMER(tk) ((pt_time_timer *)(tk))
#define AS_TICKER(t) ((pt_time_ticker *)(t))

static void row_pt_time_timer_chan(void)
{
    CHECK(pt_time_timer_chan(NULL) == NULL);
    struct kinds k;
    make_kinds(&k);
    CHECK(pt_time_timer_chan(AS_TIMER(k.tk)) == NULL);
    pt_time_timer *f;
    CHECK_EQ(pt_time_after_func(&f, 1000 * SEC, noop, NULL), 0);
    CHECK(pt_time_timer_chan(f) == NULL); /* AfterFunc: no channel */
    CHECK_EQ(pt_time_timer_free(f), 0);
    check_and_free_kinds(&k);
}

static void row_pt_time_timer_stop(void)
{
    CHECK_EQ(pt_time_timer_stop(NULL), -EINVAL);
    struct kinds k;
    make_kinds(&k);
    CHECK_EQ(pt_time_timer_stop(AS_TIMER(k.tk)), -EINVAL);
    check_and_free_kinds(&k);
    /* wrong state is not an error: a stop of a stopped timer is 0 */
    pt_time_timer *t;
    CHECK_EQ(pt_time_timer_new(&t, 1000 * SEC), 0);
    CHECK_EQ(pt_time_timer_stop(t), 1);
    CHECK_EQ(pt_time_timer_stop(t), 0);
    CHECK_EQ(pt_time_timer_free(t), 0);
}

static void row_pt_time_timer_reset(void)
{
    CHECK_EQ(pt_time_timer_reset(NULL, 1), -EINVAL);
    struct kinds k;
    make_kinds(&k);
    CHECK_EQ(pt_time_timer_reset(AS_TIMER(k.tk), 1), -EINVAL);
    CHECK_EQ(pt_time_timer_reset(AS_TIMER(k.tk), 1000 * SEC), -EINVAL);
    check_and_free_kinds(&k);
    /* not errors: d <= 0 is now, INT64_MAX never. (-ENOMEM, no room to
     * arm it, is the fault injection's: test_time_life.c) */
    pt_time_timer *t;
    CHECK_EQ(pt_time_timer_new(&t, 1000 * SEC), 0);
    CHECK_EQ(pt_time_timer_reset(t, INT64_MAX), 1);
    CHECK_EQ(pt_time_timer_reset(t, INT64_MIN), 1);
    WAIT_FOR(pt_chan_len(pt_time_timer_chan(t)) == 1);
    CHECK_EQ(pt_time_timer_free(t), 0);
}

/* A G blocked on a time.* channel (the timer or ticker made by the
 * driver G): its free is -EBUSY and leaves it stopped, not freed; once
 * the G has its value the free works. */
struct busy_case {
    bool ticker;
    pt_time_timer *t;
    pt_time_ticker *tk;
    atomic_int waiting, got;
    pt_nanos v;
};

static void time_receiver(void *arg)
{
    struct busy_case *b = arg;
    pt_chan *c = b->ticker ? pt_time_ticker_chan(b->tk) : pt_time_timer_chan(b->t);
    atomic_store(&b->waiting, 1);
    CHECK_EQ(pt_chan_recv(c, &b->v), 1);
    atomic_store(&b->got, 1);
}

static void busy_driver(void *arg)
{
    struct busy_case *b = arg;
    if (b->ticker)
        CHECK_EQ(pt_time_ticker_new(&b->tk, 1000 * SEC), 0);
    else
        CHECK_EQ(pt_time_timer_new(&b->t, 1000 * SEC), 0);
    CHECK_EQ(pt_go(NULL, time_receiver, b), 0);
    while (!atomic_load(&b->waiting))
        pt_yield(); /* it runs until it parks in the receive */
    if (b->ticker) {
        CHECK_EQ(pt_time_ticker_free(b->tk), -EBUSY);
        CHECK_EQ(pt_time_ticker_reset(b->tk, 1 * MS), 0); /* still a ticker */
    } else {
        CHECK_EQ(pt_time_timer_free(b->t), -EBUSY);
        CHECK_EQ(pt_time_timer_stop(b->t), 0); /* stopped by the refused free */
        CHECK_EQ(pt_time_timer_reset(b->t, 0), 0);
    }
    while (!atomic_load(&b->got))
        pt_yield();
    CHECK(b->v > 0);
    CHECK_EQ(b->ticker ? pt_time_ticker_free(b->tk) : pt_time_timer_free(b->t), 0);
}

static void busy_free(bool ticker)
{
    struct busy_case b = {.ticker = ticker};
    in_a_g(busy_driver, &b); /* (its destroy: nothing of the G's left) */
    CHECK_EQ(atomic_load(&b.got), 1);
}

static void row_pt_time_timer_free(void)
{
    CHECK_EQ(pt_time_timer_free(NULL), -EINVAL);
    struct kinds k;
    make_kinds(&k);
    CHECK_EQ(pt_time_timer_free(AS_TIMER(k.tk)), -EINVAL);
    check_and_free_kinds(&k);
    busy_free(false);
    /* (after free: undefined, not tried; ASan reports it: test_time_life.c) */
}

static void row_pt_time_ticker_new(void)
{
    pt_time_ticker *const sentinel = (pt_time_ticker *)&sentinel;
    pt_time_ticker *tk = sentinel;
    CHECK_EQ(pt_time_ticker_new(NULL, 1 * MS), -EINVAL);
    /* Go panics on a period <= 0 (TestNewTickerLtZeroDuration) */
    static const pt_nanos bad[] = {0, -1, INT64_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(pt_time_ticker_new(&tk, bad[i]), -EINVAL);
        CHECK_EQ(pt_time_ticker_new(NULL, bad[i]), -EINVAL);
    }
    CHECK(tk == sentinel);
    /* the edge that is fine: INT64_MAX, a tick never */
    CHECK_EQ(pt_time_ticker_new(&tk, INT64_MAX), 0);
    CHECK_EQ(pt_chan_len(pt_time_ticker_chan(tk)), 0);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

static void row_pt_time_ticker_chan(void)
{
    CHECK(pt_time_ticker_chan(NULL) == NULL);
    struct kinds k;
    make_kinds(&k);
    CHECK(pt_time_ticker_chan(AS_TICKER(k.t)) == NULL);
    CHECK_EQ(pt_chan_cap(pt_time_ticker_chan(k.tk)), 1);
    check_and_free_kinds(&k);
}

static void row_pt_time_ticker_stop(void)
{
    CHECK_EQ(pt_time_ticker_stop(NULL), -EINVAL);
    struct kinds k;
    make_kinds(&k);
    CHECK_EQ(pt_time_ticker_stop(AS_TICKER(k.t)), -EINVAL);
    check_and_free_kinds(&k);
    /* wrong state is not an error: stopped twice */
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, 1 * MS), 0);
    CHECK_EQ(pt_time_ticker_stop(tk), 0);
    CHECK_EQ(pt_time_ticker_stop(tk), 0);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
}

static void row_pt_time_ticker_reset(void)
{
    CHECK_EQ(pt_time_ticker_reset(NULL, 1 * MS), -EINVAL);
    struct kinds k;
    make_kinds(&k);
    CHECK_EQ(pt_time_ticker_reset(AS_TICKER(k.t), 1 * MS), -EINVAL);
    /* Go panics on a period <= 0 (TestTickerResetLtZeroDuration): refused,
     * and the ticker keeps ticking */
    static const pt_nanos bad[] = {0, -5, INT64_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(pt_time_ticker_reset(k.tk, bad[i]), -EINVAL);
    check_and_free_kinds(&k);
}

static void row_pt_time_ticker_free(void)
{
    CHECK_EQ(pt_time_ticker_free(NULL), -EINVAL);
    struct kinds k;
    make_kinds(&k);
    CHECK_EQ(pt_time_ticker_free(AS_TICKER(k.t)), -EINVAL);
    check_and_free_kinds(&k);
    busy_free(true);
}

/* ---- the table ----------------------------------------------------------------------- */

const struct badinput_row pt_badinput_sched_rows[] = {
    {"pt_sched_create", row_pt_sched_create},
    {"pt_sched_wait", row_pt_sched_wait},
    {"pt_sched_destroy", row_pt_sched_destroy},
    {"pt_sched_run", row_pt_sched_run},
    {"pt_sched_set_procs", row_pt_sched_set_procs},
    {"pt_sched_procs", row_pt_sched_procs},
    {"pt_time_now", row_pt_time_now},
    {"pt_sched_settle", row_pt_sched_settle},
    {"pt_sched_deadlock_report", row_pt_sched_deadlock_report},
    {"pt_sched_read_stats", row_pt_sched_read_stats},
    {"pt_sched_current", row_pt_sched_current},
    {"pt_go", row_pt_go},
    {"pt_yield", row_pt_yield},
    {"pt_sleep", row_pt_sleep},
    {"pt_sleep_until", row_pt_sleep_until},
    {"pt_g_current", row_pt_g_current},
    {"pt_park", row_pt_park},
    {"pt_ready", row_pt_ready},
    {"pt_preemptible_begin", row_pt_preemptible_begin},
    {"pt_preemptible_end", row_pt_preemptible_end},
    {"pt_sched_set_preempt_slice", row_pt_sched_set_preempt_slice},
    {"pt_sched_set_monitor_priority", row_pt_sched_set_monitor_priority},
    {"pt_wg_init", row_pt_wg_init},
    {"pt_wg_add", row_pt_wg_add},
    {"pt_wg_done", row_pt_wg_done},
    {"pt_wg_wait", row_pt_wg_wait},
    {"pt_chan_make", row_pt_chan_make},
    {"pt_chan_send", row_pt_chan_send},
    {"pt_chan_recv", row_pt_chan_recv},
    {"pt_chan_send_until", row_pt_chan_send_until},
    {"pt_chan_recv_until", row_pt_chan_recv_until},
    {"pt_chan_try_send", row_pt_chan_try_send},
    {"pt_chan_try_recv", row_pt_chan_try_recv},
    {"pt_chan_close", row_pt_chan_close},
    {"pt_chan_free", row_pt_chan_free},
    {"pt_chan_len", row_pt_chan_len},
    {"pt_chan_cap", row_pt_chan_cap},
    {"pt_select", row_pt_select},
    {"pt_fd_read", row_pt_fd_read},
    {"pt_fd_write", row_pt_fd_write},
    {"pt_fd_writev", row_pt_fd_writev},
    {"pt_fd_accept", row_pt_fd_accept},
    {"pt_fd_connect", row_pt_fd_connect},
    {"pt_fd_dial", row_pt_fd_dial},
    {"pt_fd_close", row_pt_fd_close},
    {"pt_sched_cancel_fds", row_pt_sched_cancel_fds},
    {"pt_time_timer_new", row_pt_time_timer_new},
    {"pt_time_after_func", row_pt_time_after_func},
    {"pt_time_timer_chan", row_pt_time_timer_chan},
    {"pt_time_timer_stop", row_pt_time_timer_stop},
    {"pt_time_timer_reset", row_pt_time_timer_reset},
    {"pt_time_timer_free", row_pt_time_timer_free},
    {"pt_time_ticker_new", row_pt_time_ticker_new},
    {"pt_time_ticker_chan", row_pt_time_ticker_chan},
    {"pt_time_ticker_stop", row_pt_time_ticker_stop},
    {"pt_time_ticker_reset", row_pt_time_ticker_reset},
    {"pt_time_ticker_free", row_pt_time_ticker_free},
};
const size_t pt_badinput_sched_nrows =
    sizeof pt_badinput_sched_rows / sizeof pt_badinput_sched_rows[0];
