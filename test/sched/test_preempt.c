/* Asynchronous preemption of marked regions: a G that computes in one
 * gives its P up to Gs that wait, resumes with its registers intact on
 * whichever M, and misuse is refused or stops the process. Under
 * ThreadSanitizer regions are refused (-ENOTSUP), and that is what those
 * runs check. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/sanitizer.h"
#include "util.h"

static pt_sched_stats wait_and_read(pt_sched *s)
{
    CHECK_EQ(pt_sched_wait(s), 0);
    pt_sched_stats st = stats_of(s);
    CHECK_EQ(pt_sched_destroy(s), 0);
    return st;
}

/* ---- a hog that only a preemption lets the others past --------------------- */

struct hog_race {
    atomic_int flag; /* set by the G that waits behind the hog */
    int begin_rc;
    bool saw_flag;
};

static void flag_setter(void *arg)
{
    struct hog_race *h = arg;
    atomic_store(&h->flag, 1);
}

/* One P: the hog spins until the other G sets the flag, which that G can
 * do only once the hog was preempted. Bounded: it gives up after BOUND. */
static void hog(void *arg)
{
    struct hog_race *h = arg;
    CHECK_EQ(pt_go(NULL, flag_setter, h), 0); /* queued behind the hog on this P */
    h->begin_rc = pt_preemptible_begin();
    if (h->begin_rc != 0)
        return;
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (!atomic_load_explicit(&h->flag, memory_order_relaxed) && pt_nanotime() < give_up)
        ;
    h->saw_flag = atomic_load(&h->flag) != 0;
    CHECK_EQ(pt_preemptible_end(), 0);
}

void test_preempted_hog_lets_the_waiting_g_run(void)
{
    for (int mode = 0; mode < 2; mode++) {
        pt_sched *s = make_sched(1, mode ? PT_TIMERS_TIMERTHREAD : PT_TIMERS_PER_P);
        struct hog_race h = {0};
        CHECK_EQ(pt_go(s, hog, &h), 0);
        pt_sched_stats st = wait_and_read(s);
#ifdef PT__TSAN
        CHECK_EQ(h.begin_rc, -ENOTSUP);
        CHECK_EQ(st.preempts, 0);
#else
        CHECK_EQ(h.begin_rc, 0);
        CHECK(h.saw_flag);
        CHECK(st.preempts >= 1);
#endif
    }
}

/* ---- registers survive preemption and migration ------------------------------ */

/* Integer and floating-point state live across the whole loop, so a
 * preemption that lost a register (or an MXCSR bit) changes the result. */
static __attribute__((noinline, unused)) void crunch(uint64_t n, uint64_t *out_x, double *out_f)
{
    uint64_t x = 88172645463325252ull, y = 1;
    double f = 0.5, g = 1.25;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        y = y * 6364136223846793005ull + x;
        f = f * 0.999999 + (double)(x & 0xffff) * 1e-6;
        g = g + f / (1.0 + (double)(y & 0xff));
    }
    *out_x = x ^ y;
    *out_f = f + g;
}

struct cruncher {
    uint64_t n, x;
    double f;
    atomic_int *running;
};

__attribute__((unused)) static void cruncher_g(void *arg)
{
    struct cruncher *c = arg;
    CHECK_EQ(pt_preemptible_begin(), 0);
    crunch(c->n, &c->x, &c->f);
    CHECK_EQ(pt_preemptible_end(), 0);
    atomic_fetch_sub(c->running, 1);
}

/* Keeps a G waiting (on the global queue) while the crunchers run. */
__attribute__((unused)) static void yielder(void *arg)
{
    atomic_int *running = arg;
    while (atomic_load(running) > 0)
        pt_yield();
}

void test_preempted_gs_resume_with_their_registers_on_any_m(void)
{
#ifdef PT__TSAN
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, hog, &(struct hog_race){0}), 0); /* -ENOTSUP: returns at once */
    finish_sched(s);
#else
    enum { CRUNCHERS = 4 };
    const uint64_t n = SCALE(15000000);
    uint64_t want_x;
    double want_f;
    crunch(n, &want_x, &want_f);

    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_sched_set_preempt_slice(s, 50 * US), 0);
    atomic_int running = CRUNCHERS;
    struct cruncher c[CRUNCHERS];
    for (int i = 0; i < CRUNCHERS; i++) {
        c[i] = (struct cruncher){.n = n, .running = &running};
        CHECK_EQ(pt_go(s, cruncher_g, &c[i]), 0);
    }
    CHECK_EQ(pt_go(s, yielder, &running), 0);
    pt_sched_stats st = wait_and_read(s);
    for (int i = 0; i < CRUNCHERS; i++) {
        CHECK_EQ(c[i].x, want_x);
        CHECK(memcmp(&c[i].f, &want_f, sizeof want_f) == 0);
    }
    /* four crunchers on two Ps: someone always waits */
    CHECK(st.preempts >= 1);
#endif
}

/* ---- the rules ---------------------------------------------------------------- */

struct rules {
    int outside_end, nested[4], slice_off;
};

static void rules_g(void *arg)
{
    struct rules *r = arg;
    r->outside_end = pt_preemptible_end();
    r->nested[0] = pt_preemptible_begin();
    r->nested[1] = pt_preemptible_begin();
    r->nested[2] = pt_preemptible_end();
    r->nested[3] = pt_preemptible_end();
    CHECK_EQ(pt_sched_set_preempt_slice(pt_sched_current(), 0), 0);
    r->slice_off = pt_preemptible_begin();
}

void test_preemptible_regions_nest_and_refuse_misuse(void)
{
    CHECK_EQ(pt_preemptible_begin(), -EPERM); /* not a G */
    CHECK_EQ(pt_preemptible_end(), -EPERM);
    CHECK_EQ(pt_sched_set_preempt_slice(NULL, 1), -EINVAL);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_sched_set_preempt_slice(s, -1), -EINVAL);
    struct rules r;
    memset(&r, 0x55, sizeof r);
    CHECK_EQ(pt_go(s, rules_g, &r), 0);
    finish_sched(s);
    CHECK_EQ(r.outside_end, -EINVAL);
#ifdef PT__TSAN
    CHECK_EQ(r.nested[0], -ENOTSUP);
#else
    CHECK_EQ(r.nested[0], 0);
    CHECK_EQ(r.nested[1], 0);
    CHECK_EQ(r.nested[2], 0);
    CHECK_EQ(r.nested[3], 0);
#endif
    CHECK_EQ(r.slice_off, -ENOTSUP);
}

#ifndef PT__TSAN
static void yield_in_region(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_preemptible_begin(), 0);
    pt_yield(); /* misuse: aborts */
}
#endif

/* A yield inside a region would let a signal switch the G out in the
 * middle of its own switch: the scheduler stops the process instead. */
void test_yield_inside_a_region_aborts(void)
{
#ifndef PT__TSAN
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* the abort's report is expected: keep the test's output clean */
        if (!freopen("/dev/null", "w", stderr))
            _exit(3);
        pt_sched_run(&(pt_sched_options){1, 0, PT_TIMERS_PER_P}, yield_in_region, NULL);
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    /* a sanitizer reports the abort and exits non-zero instead */
#ifdef PT__SANITIZED
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
#else
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGABRT);
#endif
#endif
}

/* ---- SIGURG that is not ours ------------------------------------------------- */

static atomic_int user_sigurgs;

__attribute__((unused)) static void user_handler(int sig)
{
    (void)sig;
    atomic_fetch_add(&user_sigurgs, 1);
}

__attribute__((unused)) static void begin_end(void *arg)
{
    int *rc = arg;
    *rc = pt_preemptible_begin();
    if (*rc == 0)
        CHECK_EQ(pt_preemptible_end(), 0);
}

/* The handler installed before the scheduler's still gets the SIGURGs
 * that are not preemption requests (a socket's out-of-band data). Run in
 * a child: the handler is the process's for good. */
void test_foreign_sigurg_reaches_the_earlier_handler(void)
{
#ifndef PT__TSAN
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        signal(SIGURG, user_handler);
        int rc = -1;
        pt_sched_run(&(pt_sched_options){1, 0, PT_TIMERS_PER_P}, begin_end, &rc);
        if (rc != 0)
            _exit(2);
        raise(SIGURG);
        pthread_kill(pthread_self(), SIGURG);
        _exit(atomic_load(&user_sigurgs) == 2 ? 0 : 1);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
#endif
}
