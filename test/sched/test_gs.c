/* Gs: spawning and finishing, yield, park and ready, the wait group, and
 * work stealing. */
#include <alloca.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sched/internal.h" /* PT__RUNQ_SIZE */
#include "sched/sanitizer.h"
#include "util.h"

/* ---- spawning ---------------------------------------------------------- */

static atomic_long ran;

static void count_and_done(void *arg)
{
    atomic_fetch_add(&ran, 1);
    CHECK_EQ(pt_wg_done(arg), 0);
}

struct spawner {
    pt_wg wg;
    long n;
};

static void spawn_n(void *arg)
{
    struct spawner *sp = arg;
    CHECK(pt_g_current() != NULL);
    CHECK(pt_sched_current() != NULL);
    for (long i = 0; i < sp->n; i++)
        CHECK_EQ(pt_go(NULL, count_and_done, &sp->wg), 0);
    CHECK_EQ(pt_wg_wait(&sp->wg), 0);
}

void test_spawn_and_finish_100k_gs_from_a_thread_and_from_a_g(void)
{
    long n = SCALE(100000);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    /* from a plain thread: the global queue */
    atomic_store(&ran, 0);
    pt_wg wg;
    CHECK_EQ(pt_wg_init(&wg), 0);
    CHECK_EQ(pt_wg_add(&wg, n), 0);
    for (long i = 0; i < n; i++)
        CHECK_EQ(pt_go(s, count_and_done, &wg), 0);
    CHECK_EQ(pt_wg_wait(&wg), 0); /* a thread waits too */
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&ran), n);
    pt_sched_stats st = stats_of(s);
    CHECK_EQ(st.gs_created, n);
    CHECK_EQ(st.gs_running_now, 0);
    /* from a G: its P's queue; the finished Gs' stacks are reused */
    atomic_store(&ran, 0);
    struct spawner sp = {.n = n};
    CHECK_EQ(pt_wg_init(&sp.wg), 0);
    CHECK_EQ(pt_wg_add(&sp.wg, n), 0);
    CHECK_EQ(pt_go(s, spawn_n, &sp), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&ran), n);
    CHECK_EQ(stats_of(s).gs_created, 2 * n + 1);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* A binary tree of Gs, depth d: 2^(d+1) - 1 in all. */
static void tree(void *arg)
{
    long d = (long)(intptr_t)arg;
    atomic_fetch_add(&ran, 1);
    if (d > 0) {
        CHECK_EQ(pt_go(NULL, tree, (void *)(intptr_t)(d - 1)), 0);
        CHECK_EQ(pt_go(NULL, tree, (void *)(intptr_t)(d - 1)), 0);
    }
}

/* ---- the stack a G asked for ------------------------------------------- */

/* Spends n bytes of stack (touch_down, util.h). */
static __attribute__((noinline)) int use_stack(size_t n)
{
    volatile char *p = alloca(n);
    touch_down(p, n);
    return p[0] + p[n - 1];
}

static void use_15_and_a_half_kib(void *arg)
{
    *(int *)arg = use_stack(15 * 1024 + 512);
}

/* A G lives in its stack's mapping, above the stack: the room it takes
 * is added, so a G still has all the stack it asked for. 15.5 KiB in a
 * 16 KiB stack reach the guard page (a crash) if the G is carved out of
 * the 16 KiB instead. */
void test_a_g_has_the_whole_stack_it_asked_for(void)
{
    pt_sched_options o = {.procs = 1, .timers = PT_TIMERS_PER_P};
    o.stack_size = 16 * 1024;
    int levels[4] = {0};
    pt_sched *s = NULL;
    CHECK_EQ(pt_sched_create(&s, &o), 0);
    for (int i = 0; i < 4; i++) /* Gs at different offsets in their mappings */
        CHECK_EQ(pt_go(s, use_15_and_a_half_kib, &levels[i]), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(levels[i], 2);
}

/* Stands for a write running up off the stack's top frame: it reaches
 * the canary, the G's first word, first. */
__attribute__((unused)) static void overrun_then_yield(void *arg)
{
    (void)arg;
    pt_g_current()->canary ^= 1;
    pt_yield(); /* aborts */
}

/* Such a write, which faulted off the end of the mapping before the G
 * moved to the top of its stack, stops the process at the G's next
 * switch instead of corrupting the G in silence. */
void test_a_stack_overrun_into_the_g_aborts_at_its_next_switch(void)
{
#ifdef PT__TSAN
    SKIP("ThreadSanitizer forbids fork() with threads, which the death test needs");
#else
    expect_abort_in_child(overrun_then_yield, "in a switch: the stack overran its top into the G");
#endif
}

void test_sched_run_returns_only_when_every_g_has_finished(void)
{
    atomic_store(&ran, 0);
    pt_sched_options o = {.procs = 2, .timers = PT_TIMERS_PER_P};
#ifdef PT__TSAN
    long depth = 8; /* 511 Gs: each a TSan fiber (GS_AT_ONCE) */
#else
    long depth = 12;
#endif
    CHECK_EQ(pt_sched_run(&o, tree, (void *)(intptr_t)depth), 0);
    CHECK_EQ(atomic_load(&ran), (1L << (depth + 1)) - 1);
}

/* ---- yield ------------------------------------------------------------- */

static atomic_int turn;

/* Two Gs on one P take turns: each waits for its turn by yielding. */
static void taker(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int i = 0; i < 1000; i++) {
        while (atomic_load(&turn) % 2 != me)
            pt_yield();
        atomic_fetch_add(&turn, 1);
    }
}

void test_yield_lets_the_other_runnable_gs_run(void)
{
    atomic_store(&turn, 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, taker, (void *)0), 0);
    CHECK_EQ(pt_go(s, taker, (void *)1), 0);
    finish_sched(s);
    CHECK_EQ(atomic_load(&turn), 2000);
}

/* ---- past a full ring: the overflow ---------------------------------- */

#define OVF_N ((int)(2 * PT__RUNQ_SIZE + 88)) /* more than a ring */
static int ovf_order[OVF_N];
static atomic_int ovf_ran;

static void ovf_child(void *arg)
{
    ovf_order[atomic_fetch_add(&ovf_ran, 1)] = (int)(intptr_t)arg;
}

/* Each pt_go puts its child first in line and the one before behind
 * the queue: OVF_N - 1 children queue, past the ring's PT__RUNQ_SIZE. */
static void ovf_spawner(void *arg)
{
    (void)arg;
    for (int i = 0; i < OVF_N; i++)
        CHECK_EQ(pt_go(NULL, ovf_child, (void *)(intptr_t)i), 0);
}

void test_gs_past_a_full_ring_run_after_it_in_the_order_they_came(void)
{
    atomic_store(&ovf_ran, 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, ovf_spawner, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&ovf_ran), OVF_N);
    CHECK_EQ(ovf_order[0], OVF_N - 1); /* the last one, first in line */
    for (int i = 1; i < OVF_N; i++)
        CHECK_EQ(ovf_order[i], i - 1); /* then ring and overflow, in order */
    CHECK_EQ(stats_of(s).overflowed, OVF_N - 1 - PT__RUNQ_SIZE);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* One G holds P 0 (never parking) after filling its ring and overflow:
 * only a thief can run the others, and only by taking from the overflow
 * too. */
static void ovf_holder(void *arg)
{
    pt_sched *s = arg;
    ovf_spawner(NULL);
    CHECK(stats_of(s).overflowed > 0);
    CHECK_EQ(pt_sched_set_procs(s, 2), 0);
    pt_nanos deadline = pt_nanotime() + BOUND;
    while (atomic_load(&ovf_ran) < OVF_N)
        CHECK(pt_nanotime() < deadline);
}

void test_a_thief_takes_gs_from_the_overflow_of_a_p_held_by_one_g(void)
{
    atomic_store(&ovf_ran, 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, ovf_holder, s), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&ovf_ran), OVF_N);
    pt_sched_stats st = stats_of(s);
    CHECK_EQ(st.overflowed, OVF_N - 1 - PT__RUNQ_SIZE);
    CHECK_EQ(st.steals, OVF_N); /* every child ran on P 1 */
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- where readied Gs go ------------------------------------------------ */

/* A G that a channel operation readies runs next (it keeps pairs on one
 * core); one its own timer readies goes behind the Gs already waiting,
 * in the order the timers fell due. */
static int line_order[8];
static atomic_int line_n;

static void line_mark(void *arg)
{
    line_order[atomic_fetch_add(&line_n, 1)] = (int)(intptr_t)arg;
}

static void line_sleeper(void *arg)
{
    (void)arg;
    line_mark((void *)(intptr_t)9);
    CHECK_EQ(pt_sleep(1), 0); /* due at once: its next look at the timers runs it */
    line_mark((void *)(intptr_t)10);
}

static void line_main(void *arg)
{
    (void)arg;
    for (int i = 1; i <= 3; i++)
        CHECK_EQ(pt_go(NULL, line_mark, (void *)(intptr_t)i), 0);
    CHECK_EQ(pt_go(NULL, line_sleeper, NULL), 0); /* first in line; 1-3 behind */
}

void test_a_g_its_timer_readies_goes_behind_the_gs_waiting(void)
{
    atomic_store(&line_n, 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, line_main, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&line_n), 5);
    static const int want[5] = {9, 1, 2, 3, 10};
    for (int i = 0; i < 5; i++)
        CHECK_EQ(line_order[i], want[i]);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- park -------------------------------------------------------------- */

static atomic_int commits;

static bool refuse(void *arg)
{
    (void)arg;
    atomic_fetch_add(&commits, 1);
    return false;
}

static void park_refused(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++)
        CHECK_EQ(pt_park(refuse, NULL), 0);
    atomic_fetch_add(&ran, 1);
}

void test_park_commit_false_resumes_at_once(void)
{
    atomic_store(&commits, 0);
    atomic_store(&ran, 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, park_refused, NULL), 0);
    finish_sched(s);
    CHECK_EQ(atomic_load(&commits), 100);
    CHECK_EQ(atomic_load(&ran), 1);
}

/* ---- the wait group ---------------------------------------------------- */

struct wg_case {
    pt_wg wg;
    atomic_int woke;
};

static void wg_waiter(void *arg)
{
    struct wg_case *c = arg;
    CHECK_EQ(pt_wg_wait(&c->wg), 0);
    atomic_fetch_add(&c->woke, 1);
}

static void *wg_thread_waiter(void *arg)
{
    wg_waiter(arg);
    return NULL;
}

void test_wait_group_wakes_gs_and_threads_and_refuses_negative(void)
{
    struct wg_case c;
    atomic_init(&c.woke, 0);
    CHECK_EQ(pt_wg_init(&c.wg), 0);
    CHECK_EQ(pt_wg_add(&c.wg, -1), -EINVAL); /* below zero: nothing changes */
    CHECK_EQ(pt_wg_wait(&c.wg), 0);          /* zero: returns at once */
    CHECK_EQ(pt_wg_add(&c.wg, 2), 0);
    CHECK_EQ(pt_wg_add(&c.wg, -3), -EINVAL);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(pt_go(s, wg_waiter, &c), 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, wg_thread_waiter, &c), 0);
    CHECK_EQ(pt_wg_done(&c.wg), 0);
    CHECK_EQ(atomic_load(&c.woke), 0); /* count 1: nobody may pass */
    CHECK_EQ(pt_wg_done(&c.wg), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    finish_sched(s);
    CHECK_EQ(atomic_load(&c.woke), 11);
    CHECK_EQ(pt_wg_done(&c.wg), -EINVAL);
}

/* ---- park and ready across Ps ------------------------------------------ */

/* Parkers publish themselves in a mailbox from park's commit (so only a
 * parked G is ever there); readiers, Gs on every P and a plain thread,
 * take them out and ready them. Every park must be matched by exactly one
 * ready: a lost wake-up leaves a parker parked and the test never ends
 * (ctest's timeout), a double one shows in the counts. */
#define PARKERS 200
static pthread_mutex_t box_lock = PTHREAD_MUTEX_INITIALIZER;
static pt_g *box[PARKERS];
static int nbox;
static atomic_long woken, readied, total;

static bool post(void *arg)
{
    CHECK(pt_g_current() == NULL); /* on the M, off the G's stack */
    pthread_mutex_lock(&box_lock);
    CHECK(nbox < PARKERS);
    box[nbox++] = arg;
    pthread_mutex_unlock(&box_lock);
    return true;
}

static void parker(void *arg)
{
    long rounds = (long)(intptr_t)arg;
    for (long r = 0; r < rounds; r++) {
        CHECK_EQ(pt_park(post, pt_g_current()), 0);
        atomic_fetch_add(&woken, 1);
    }
}

/* One ready; false when the mailbox was empty. */
static bool ready_one(void)
{
    pthread_mutex_lock(&box_lock);
    pt_g *g = nbox ? box[--nbox] : NULL;
    pthread_mutex_unlock(&box_lock);
    if (!g)
        return false;
    CHECK_EQ(pt_ready(g), 0);
    atomic_fetch_add(&readied, 1);
    return true;
}

static void readier(void *arg)
{
    (void)arg;
    while (atomic_load(&readied) < atomic_load(&total))
        if (!ready_one())
            pt_yield();
}

static void *thread_readier(void *arg)
{
    (void)arg;
    while (atomic_load(&readied) < atomic_load(&total))
        if (!ready_one())
            sched_yield();
    return NULL;
}

void test_park_ready_across_ps_loses_no_wakeup(void)
{
    long rounds = SCALE(500);
    atomic_store(&woken, 0);
    atomic_store(&readied, 0);
    atomic_store(&total, PARKERS * rounds);
    nbox = 0;
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    for (int i = 0; i < PARKERS; i++)
        CHECK_EQ(pt_go(s, parker, (void *)(intptr_t)rounds), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pt_go(s, readier, NULL), 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, thread_readier, NULL), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    finish_sched(s);
    CHECK_EQ(atomic_load(&readied), PARKERS * rounds);
    CHECK_EQ(atomic_load(&woken), PARKERS * rounds);
    CHECK_EQ(nbox, 0);
}

/* ---- a ready beside a busy P ----------------------------------------------- */

/* One P busy in a G that never yields, the other's M idle with no timer
 * due, so it sleeps in the netpoller: every ready from a plain thread must
 * reach that M. A wakep that looked at `polling` just before the idle M
 * claimed it once signalled only through the parking word, which the
 * netpoller does not watch, and the readied G stayed on the global queue
 * for good. */
static pt_g *_Atomic bp_parked;
static atomic_long bp_woken;
static atomic_int bp_stop;

static bool bp_publish(void *g)
{
    atomic_store(&bp_parked, g);
    return true;
}

static void bp_parker(void *arg)
{
    long rounds = (long)(intptr_t)arg;
    for (long i = 0; i < rounds; i++) {
        CHECK_EQ(pt_park(bp_publish, pt_g_current()), 0);
        atomic_fetch_add(&bp_woken, 1);
    }
}

static void bp_spinner(void *arg)
{
    (void)arg;
    while (!atomic_load(&bp_stop))
        ;
}

void test_ready_reaches_the_netpoller_m_beside_a_busy_p(void)
{
    long rounds = SCALE(20000);
    atomic_store(&bp_parked, NULL);
    atomic_store(&bp_woken, 0);
    atomic_store(&bp_stop, 0);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, bp_spinner, NULL), 0);
    CHECK_EQ(pt_go(s, bp_parker, (void *)(intptr_t)rounds), 0);
    /* the thread spins, not naps: a ready right after the park is the
     * one that meets the M on its way to idle */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (long i = 0; i < rounds; i++) {
        /* per round: on a loaded machine the whole run took 22 s of the
         * 30, where one round stalls for good only on a lost wake-up */
        pt_nanos end = pt_nanotime() + BOUND;
        pt_g *g;
        while (!(g = atomic_exchange(&bp_parked, NULL)))
            CHECK(pt_nanotime() < end); /* a lost wake-up stops here */
        /* a little later each time: somewhere on the M's way to idle */
        pt_nanos at = pt_nanotime() + (pt_nanos)(pt__xorshift64(&x) % (20 * US));
        while (pt_nanotime() < at)
            ;
        CHECK_EQ(pt_ready(g), 0);
    }
    atomic_store(&bp_stop, 1);
    finish_sched(s);
    CHECK_EQ(atomic_load(&bp_woken), rounds);
}

/* ---- stealing ----------------------------------------------------------- */

#define MAX_THREADS 8
static pthread_t seen_threads[MAX_THREADS];
static atomic_int nseen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_thread(void)
{
    pthread_mutex_lock(&seen_lock);
    int n = atomic_load(&nseen);
    bool known = false;
    for (int i = 0; i < n; i++)
        known |= pthread_equal(seen_threads[i], pthread_self());
    if (!known && n < MAX_THREADS) {
        seen_threads[n] = pthread_self();
        atomic_store(&nseen, n + 1);
    }
    pthread_mutex_unlock(&seen_lock);
}

/* Busy until two Ms have run Gs (or BOUND: then the check below fails). */
static void busy_worker(void *arg)
{
    note_thread();
    pt_nanos end = pt_nanotime() + BOUND;
    while (atomic_load(&nseen) < 2 && pt_nanotime() < end)
        ;
    CHECK_EQ(pt_wg_done(arg), 0);
}

static void spawn_busy(void *arg)
{
    pt_wg *wg = arg;
    for (int i = 0; i < 100; i++)
        CHECK_EQ(pt_go(NULL, busy_worker, wg), 0);
}

void test_work_stealing_keeps_two_ps_busy(void)
{
    atomic_store(&nseen, 0);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    pt_wg wg;
    CHECK_EQ(pt_wg_init(&wg), 0);
    CHECK_EQ(pt_wg_add(&wg, 100), 0);
    /* one G spawns them all onto its own P: the other P's M must steal */
    CHECK_EQ(pt_go(s, spawn_busy, &wg), 0);
    CHECK_EQ(pt_wg_wait(&wg), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&nseen), 2);
    CHECK(stats_of(s).steals > 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}
