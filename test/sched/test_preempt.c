/* Asynchronous preemption of marked regions: a G that computes in one
 * gives its P up to Gs that wait, resumes with its registers intact on
 * whichever M, and misuse is refused or stops the process. Under
 * ThreadSanitizer regions are refused (-ENOTSUP), and that is what those
 * runs check. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sched/internal.h"
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
    for (int m = 0; m < PT_TEST_NMODES; m++) {
        pt_sched *s = make_sched(1, pt_test_modes[m]);
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

/* Four crunchers and a yielder on two Ps, and what the crunchers must
 * come out with. */
enum { CRUNCHERS = 4 };

struct crunch_run {
    pt_sched *s;
    atomic_int running;
    struct cruncher c[CRUNCHERS];
    uint64_t want_x;
    double want_f;
};

__attribute__((unused)) static void crunch_run_start(struct crunch_run *r, pt_nanos slice)
{
    const uint64_t n = SCALE(15000000);
    crunch(n, &r->want_x, &r->want_f);
    r->s = make_sched(2, PT_TIMERS_PER_P);
    if (slice)
        CHECK_EQ(pt_sched_set_preempt_slice(r->s, slice), 0);
    atomic_store(&r->running, CRUNCHERS);
    for (int i = 0; i < CRUNCHERS; i++) {
        r->c[i] = (struct cruncher){.n = n, .running = &r->running};
        CHECK_EQ(pt_go(r->s, cruncher_g, &r->c[i]), 0);
    }
    CHECK_EQ(pt_go(r->s, yielder, &r->running), 0);
}

/* Once every G is done: each cruncher's registers came through. */
__attribute__((unused)) static void crunch_run_wait(struct crunch_run *r)
{
    CHECK_EQ(pt_sched_wait(r->s), 0);
    for (int i = 0; i < CRUNCHERS; i++) {
        CHECK_EQ(r->c[i].x, r->want_x);
        CHECK(memcmp(&r->c[i].f, &r->want_f, sizeof r->want_f) == 0);
    }
}

void test_preempted_gs_resume_with_their_registers_on_any_m(void)
{
#ifdef PT__TSAN
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, hog, &(struct hog_race){0}), 0); /* -ENOTSUP: returns at once */
    finish_sched(s);
#else
    /* Four crunchers on two Ps: someone always waits, so the monitor
     * preempts -- once it gets a core. On a loaded machine it may not
     * within one run (seen once in a parallel ctest), and a run without a
     * preemption proves nothing about registers: a few runs, bounded. */
    uint64_t preempts = 0;
    for (int run = 0; run < 5 && preempts == 0; run++) {
        struct crunch_run r;
        crunch_run_start(&r, 50 * US);
        crunch_run_wait(&r);
        preempts = stats_of(r.s).preempts;
        CHECK_EQ(pt_sched_destroy(r.s), 0);
    }
    CHECK(preempts >= 1);
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
#ifdef PT__TSAN
    SKIP("ThreadSanitizer forbids fork() with threads, which the death test needs");
#else
    expect_abort_in_child(yield_in_region, "in a yield or park inside a preemptible region");
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
#ifdef PT__TSAN
    SKIP("ThreadSanitizer forbids fork() with threads, which this test runs in");
#else
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        signal(SIGURG, user_handler);
        int rc = -1;
        pt_sched_run(&(pt_sched_options){.procs = 1, .timers = PT_TIMERS_PER_P}, begin_end, &rc);
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

/* ---- nested begin and end, preempted and moved while they run ---------------- */

/* A nested begin and an end run inside a region: a preemption can stop
 * them between finding their M (a thread-local) and its G, and resume
 * them on another M, which runs some other G by then. Seen on a 16-core
 * machine: an end took another G's region count, and that G aborted in a
 * park "inside a region". Here Gs do little but nest, at a 20 us slice
 * on 2 Ps with yielders waiting, so preemptions land inside them, through
 * the real handler; test_region_steps.c moves the G at each instruction
 * of the calls, without it. */
struct nester {
    uint64_t rounds;
    atomic_int *running;
};

/* Each call checked as it returns: a lost count shows as the call that
 * lost it (a begin or an end that did not find its G says -EPERM),
 * not as the last end's -EINVAL. */
__attribute__((unused)) static void nester_g(void *arg)
{
    struct nester *z = arg;
    CHECK_EQ(pt_preemptible_begin(), 0);
    for (uint64_t i = 0; i < z->rounds; i++) {
        CHECK_EQ(pt_preemptible_begin(), 0);
        CHECK_EQ(pt_preemptible_begin(), 0);
        CHECK_EQ(pt_preemptible_end(), 0);
        CHECK_EQ(pt_preemptible_end(), 0);
    }
    CHECK_EQ(pt_preemptible_end(), 0);
    CHECK_EQ(pt_preemptible_end(), -EINVAL); /* the count is back at zero */
    atomic_fetch_sub(z->running, 1);
}

void test_nested_regions_survive_preemption_inside_begin_and_end(void)
{
#ifdef PT__TSAN
    SKIP("ThreadSanitizer: no signal preemption here (pt_preemptible_begin is -ENOTSUP)");
#else
    enum { NESTERS = 4, YIELDERS = 2 };
    /* A run the monitor saw no CPU in preempts nothing and proves
     * nothing: a few runs, bounded, as with the crunchers above. */
    uint64_t preempts = 0;
    for (int run = 0; run < 5 && preempts == 0; run++) {
        pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
        CHECK_EQ(pt_sched_set_preempt_slice(s, 20 * 1000), 0);
        atomic_int running = NESTERS;
        struct nester z[NESTERS];
        for (int i = 0; i < NESTERS; i++) {
            z[i] = (struct nester){.rounds = SCALE(4000000), .running = &running};
            CHECK_EQ(pt_go(s, nester_g, &z[i]), 0);
        }
        for (int i = 0; i < YIELDERS; i++)
            CHECK_EQ(pt_go(s, yielder, &running), 0);
        preempts = wait_and_read(s).preempts;
    }
    CHECK(preempts >= 1);
#endif
}

/* ---- requests in bursts: a second one inside the first handler -------------- */

/* Two requests sent back to back can land the second inside the first
 * handler, still on the G's stack. Allowed to nest, the second switched
 * the G out from there, and the first, resumed on another M, switched to
 * the g0 of the M it began on while that M's thread ran it: Gs ran twice
 * and queues broke (seen on 16 cores). A thread here sends every M's G
 * two requests at a time while crunchers check their registers. */
struct storm {
    pt_sched *s;
    atomic_int *running;
    uint64_t sent;
};

__attribute__((unused)) static void *storm_thread(void *arg)
{
    struct storm *st = arg;
    while (atomic_load(st->running) > 0) {
        int n = atomic_load_explicit(&st->s->maxprocs_made, memory_order_acquire);
        for (int i = 0; i < n; i++) {
            struct pt__m *m = st->s->ps[i]->m;
            pt_g *g = atomic_load_explicit(&m->curg, memory_order_acquire);
            if (!g || !atomic_load_explicit(&g->preemptible, memory_order_relaxed))
                continue;
            uint32_t tick = atomic_load_explicit(&st->s->ps[i]->schedtick, memory_order_relaxed);
            pt__preempt_request(m, g, tick);
            pt__preempt_request(m, g, tick);
            st->sent += 2;
        }
    }
    return NULL;
}

void test_preemption_requests_in_bursts_do_not_nest(void)
{
#ifdef PT__TSAN
    SKIP("ThreadSanitizer: no signal preemption here (pt_preemptible_begin is -ENOTSUP)");
#else
    struct crunch_run r;
    crunch_run_start(&r, 0);
    struct storm storm = {.s = r.s, .running = &r.running};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, storm_thread, &storm), 0);
    crunch_run_wait(&r);
    CHECK_EQ(pthread_join(t, NULL), 0); /* before the Ms it reads go */
    CHECK(storm.sent >= 2);
    CHECK(stats_of(r.s).preempts >= 1);
    CHECK_EQ(pt_sched_destroy(r.s), 0);
#endif
}

/* ---- the M's alarm ------------------------------------------------------------ */

/* One P, whose monitor leaves it to the M's alarm: it arms the first
 * alarm and does nothing else (no timers run, no request), so what
 * happens after is the alarm's doing. */
__attribute__((unused)) static pt_sched *alarm_only_sched(struct pt__m **m)
{
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    *m = s->ps[0]->m;
    atomic_store(&(*m)->pre.alarms_only, true);
    return s;
}

__attribute__((unused)) static void alarm_sleeper(void *arg)
{
    struct region_case *a = arg;
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(pt_sleep(200 * US), 0);
        a->slept++;
    }
    atomic_store(&a->stop, 1);
}

/* Both on the P's queue before either runs: the sleeper next (the later
 * spawn takes runnext), the region behind it. Started one by one from
 * outside, the sleeper could run its sleeps alone, the M in the netpoller
 * between them, while the test thread waited for a CPU to start the
 * region. */
__attribute__((unused)) static void sleeper_then_region(void *arg)
{
    CHECK_EQ(pt_go(NULL, region_hog, arg), 0);
    CHECK_EQ(pt_go(NULL, alarm_sleeper, arg), 0);
}

/* One P: a G computing in a region, and a sleeper whose timers fall due
 * meanwhile. The monitor is told to leave that P to the M's alarm, which
 * it arms and nothing more: the kernel's timer signals the M at the
 * sleeper's time (once the slice is held), the region is preempted, g0
 * runs the timer and the sleeper, and resuming the region re-arms the
 * alarm for the next. Without it the region keeps the P until it gives
 * up, the sleeper asleep behind it. */
void test_the_ms_alarm_preempts_a_region_for_its_ps_timers(void)
{
#ifdef PT__TSAN
    SKIP("ThreadSanitizer: no signal preemption here (pt_preemptible_begin is -ENOTSUP)");
#else
    struct region_case a = {0};
    struct pt__m *m;
    pt_sched *s = alarm_only_sched(&m);
    CHECK_EQ(pt_go(s, sleeper_then_region, &a), 0);
    WAIT_FOR(atomic_load(&a.stop)); /* aborts past BOUND: the sleeper is lost */
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(a.begin_rc, 0);
    CHECK(!a.gave_up);
    CHECK_EQ(a.slept, 20);
    CHECK(atomic_load(&m->pre.alarm_preempts) >= 10); /* the monitor armed the first only */
    CHECK_EQ(atomic_load(&s->st.timers_sysmon), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
#endif
}

struct alarm_left {
    struct pt__m *m;
    int begin_rc, sleep_rc;
    bool armed;
};

__attribute__((unused)) static void sleep_20ms(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_sleep(20 * MS), 0);
}

/* Spins in its region until the monitor has armed m's alarm, or the
 * alarm has fired (a loaded machine can leave the G off its CPU past the
 * alarm's time: it is preempted, g0 disarms, and the monitor arms no
 * second alarm). True if the G leaves the spin with the alarm armed. */
__attribute__((unused)) static bool spin_until_armed(struct pt__m *m)
{
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (atomic_load_explicit(&m->pre.alarm_at, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&m->pre.alarm_preempts, memory_order_relaxed) == 0)
        CHECK(pt_nanotime() < give_up);
    return atomic_load(&m->pre.alarm_at) != 0;
}

/* Armed by the monitor in its region, then out of it: the G blocks its
 * thread in nanosleep past the alarm's time (the sleeper's, 20 ms on). */
__attribute__((unused)) static void region_then_nanosleep(void *arg)
{
    struct alarm_left *l = arg;
    l->begin_rc = pt_preemptible_begin();
    if (l->begin_rc != 0)
        return;
    l->armed = spin_until_armed(l->m);
    CHECK_EQ(pt_preemptible_end(), 0);
    struct timespec ts = {0, 60 * 1000 * 1000};
    l->sleep_rc = nanosleep(&ts, NULL) == 0 ? 0 : -errno;
}

/* A G that leaves its region takes its M's alarm back: a SIGURG landing
 * in its system calls would cut them short (nanosleep, poll and
 * epoll_wait return EINTR whatever SA_RESTART says), where no request
 * of the monitor's ever lands outside a region but in a race of a few
 * microseconds. A round in which the alarm fired before the G saw it
 * armed proves nothing: another is run, up to 20. */
void test_leaving_a_region_disarms_the_ms_alarm(void)
{
#ifdef PT__TSAN
    SKIP("ThreadSanitizer: no signal preemption here (pt_preemptible_begin is -ENOTSUP)");
#else
    bool armed = false;
    for (int round = 0; round < 20 && !armed; round++) {
        struct alarm_left l = {0};
        pt_sched *s = alarm_only_sched(&l.m);
        CHECK_EQ(pt_go(s, sleep_20ms, NULL), 0); /* asleep first: the P's next timer */
        CHECK_EQ(pt_go(s, region_then_nanosleep, &l), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        CHECK_EQ(pt_sched_destroy(s), 0);
        CHECK_EQ(l.begin_rc, 0);
        CHECK_EQ(l.sleep_rc, 0);
        armed = l.armed;
    }
    CHECK(armed);
#endif
}

struct exit_armed {
    struct pt__m *m;
    int begin_rc, sleep_rc;
    bool armed;
};

/* Blocks its thread in nanosleep past the alarm's time. */
__attribute__((unused)) static void nanosleep_60ms(void *arg)
{
    struct exit_armed *e = arg;
    struct timespec ts = {0, 60 * 1000 * 1000};
    e->sleep_rc = nanosleep(&ts, NULL) == 0 ? 0 : -errno;
}

/* Starts the sleeper first in line, then returns inside a region once
 * the monitor armed its M's alarm (or it fired: spin_until_armed): the
 * exit hands the M to the sleeper without passing g0. */
__attribute__((unused)) static void exit_in_region(void *arg)
{
    struct exit_armed *e = arg;
    CHECK_EQ(pt_go(NULL, nanosleep_60ms, e), 0);
    e->begin_rc = pt_preemptible_begin();
    if (e->begin_rc != 0)
        return;
    e->armed = spin_until_armed(e->m);
}

/* A G that returns inside its region takes its M's alarm back too, as
 * pt_preemptible_end does: else the G its exit hands the M to meets the
 * signal in its system calls. */
void test_exiting_inside_a_region_disarms_the_ms_alarm(void)
{
#ifdef PT__TSAN
    SKIP("ThreadSanitizer: no signal preemption here (pt_preemptible_begin is -ENOTSUP)");
#else
    /* The exit hands the M over unless the global queue's turn comes (one
     * schedule in 61), or the alarm preempted the G before it returned
     * (a loaded machine): then the sleeper starts from g0, which disarms
     * anyway. Some round must have taken the handoff with the alarm
     * armed: as many rounds as that takes, up to 20. */
    int via_handoff = 0;
    for (int round = 0; round < 20 && via_handoff == 0; round++) {
        struct exit_armed e = {0};
        pt_sched *s = alarm_only_sched(&e.m);
        CHECK_EQ(pt_go(s, sleep_20ms, NULL), 0); /* asleep first: the P's next timer */
        CHECK_EQ(pt_go(s, exit_in_region, &e), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        if (e.armed && stats_of(s).handoffs >= 1 && atomic_load(&e.m->pre.alarm_preempts) == 0)
            via_handoff++;
        CHECK_EQ(pt_sched_destroy(s), 0);
        CHECK_EQ(e.begin_rc, 0);
        CHECK_EQ(e.sleep_rc, 0);
    }
    CHECK(via_handoff >= 1);
#endif
}

__attribute__((unused)) static void stopper(void *arg)
{
    struct region_case *w = arg;
    atomic_store(&w->stop, 1);
}

/* No timer on the P, but a G waiting on the global queue (started from
 * outside): the alarm is set for the slice's end, as the monitor would
 * preempt then, and the waiting G runs. */
void test_the_ms_alarm_preempts_a_region_for_a_waiting_g(void)
{
#ifdef PT__TSAN
    SKIP("ThreadSanitizer: no signal preemption here (pt_preemptible_begin is -ENOTSUP)");
#else
    struct region_case w = {0};
    struct pt__m *m;
    pt_sched *s = alarm_only_sched(&m);
    CHECK_EQ(pt_go(s, region_hog, &w), 0);
    WAIT_FOR(atomic_load(&w.in_region));
    CHECK_EQ(pt_go(s, stopper, &w), 0); /* from this thread: the global queue */
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(w.begin_rc, 0);
    CHECK(!w.gave_up);
    CHECK(atomic_load(&m->pre.alarm_preempts) >= 1);
    CHECK_EQ(pt_sched_destroy(s), 0);
#endif
}
