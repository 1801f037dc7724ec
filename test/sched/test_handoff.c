/* Handoffs: a G that parks or exits switches straight to the G at the
 * head of its P's queue, which first does what the other asked for (its
 * park's commit, or its return to the pool), and only then runs on. */
#include <alloca.h>
#include <errno.h>
#include <string.h>

#include "ptimer/ptimer.h"
#include "sched/internal.h"
#include "sched/sanitizer.h"
#include "util.h"

/* ---- the common paths: a channel pair, and Gs that exit -------------------- */

struct pair {
    pt_chan *ping, *pong;
    long rounds;
    long bad; /* values out of order */
};

static void ponger(void *arg)
{
    struct pair *p = arg;
    for (long i = 0; i < p->rounds; i++) {
        long v = -1;
        CHECK_EQ(pt_chan_recv(p->ping, &v), 1);
        v++;
        CHECK_EQ(pt_chan_send(p->pong, &v), 0);
    }
}

static void pinger(void *arg)
{
    struct pair *p = arg;
    CHECK_EQ(pt_go(NULL, ponger, p), 0);
    for (long i = 0; i < p->rounds; i++) {
        long v = i;
        CHECK_EQ(pt_chan_send(p->ping, &v), 0);
        CHECK_EQ(pt_chan_recv(p->pong, &v), 1);
        if (v != i + 1)
            p->bad++;
    }
}

/* On one P every park of the pair finds the other G first in line: all
 * but the rounds whose turn it is to look at the global queue (one in 61)
 * hand the M over without the scheduler loop. */
void test_handoff_ping_pong_on_one_p_skips_the_scheduler_loop(void)
{
    for (int m = 0; m < PT_TEST_NMODES; m++) {
        struct pair p = {.rounds = SCALE(20000)};
        CHECK_EQ(pt_chan_make(&p.ping, sizeof(long), 0), 0);
        CHECK_EQ(pt_chan_make(&p.pong, sizeof(long), 0), 0);
        pt_sched *s = make_sched(1, pt_test_modes[m]);
        CHECK_EQ(pt_go(s, pinger, &p), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        pt_sched_stats st = stats_of(s);
        CHECK_EQ(pt_sched_destroy(s), 0);
        CHECK_EQ(p.bad, 0);
        /* two parks a round; every 61st G run goes through g0 */
        CHECK(st.handoffs >= (uint64_t)p.rounds);
        CHECK_EQ(pt_chan_free(p.ping), 0);
        CHECK_EQ(pt_chan_free(p.pong), 0);
    }
}

static atomic_long children_ran;

static void child(void *arg)
{
    atomic_fetch_add(&children_ran, 1);
    CHECK_EQ(pt_wg_done(arg), 0);
}

static void parent(void *arg)
{
    long n = (long)(intptr_t)arg;
    pt_wg wg;
    CHECK_EQ(pt_wg_init(&wg), 0);
    CHECK_EQ(pt_wg_add(&wg, n), 0);
    for (long i = 0; i < n; i++)
        CHECK_EQ(pt_go(NULL, child, &wg), 0);
    CHECK_EQ(pt_wg_wait(&wg), 0);
}

/* The parent's wait hands the M to the first child; each child's exit to
 * the next, its own return to the pool done by that next one (a G reused
 * while its stack was still in use would crash or lose a count). */
void test_handoff_exiting_gs_pass_the_m_along(void)
{
    long n = GS_AT_ONCE(10000);
    atomic_store(&children_ran, 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    for (int round = 0; round < 3; round++) /* the later rounds reuse the pooled Gs */
        CHECK_EQ(pt_go(s, parent, (void *)(intptr_t)n), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    pt_sched_stats st = stats_of(s);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(atomic_load(&children_ran), 3 * n);
    CHECK_EQ(st.gs_running_now, 0);
    CHECK(st.handoffs >= (uint64_t)(3 * n / 2));
}

/* ---- a refused park: the G resumes at once --------------------------------- */

struct order {
    char seq[8];
    int len;
    atomic_int commits;
    bool commit_saw_a_g;
    pt_g *_Atomic parked;
};

static struct order ord;

static bool refuse_once(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ord.commits, 1);
    ord.commit_saw_a_g = pt_g_current() != NULL;
    return false;
}

static bool publish(void *g)
{
    atomic_store(&ord.parked, g);
    return true;
}

/* Runs as the G the refused one handed its M to. */
static void second_new(void *arg)
{
    (void)arg;
    ord.seq[ord.len++] = 'B';
}

static void second_parked(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_park(publish, pt_g_current()), 0);
    ord.seq[ord.len++] = 'B';
}

static void first(void *arg)
{
    if (arg) {
        /* B parks first (a yield lets it run), then is readied onto this
         * P's runnext */
        CHECK_EQ(pt_go(NULL, second_parked, NULL), 0);
        while (!atomic_load(&ord.parked))
            pt_yield();
        CHECK_EQ(pt_ready(atomic_load(&ord.parked)), 0);
    } else {
        CHECK_EQ(pt_go(NULL, second_new, NULL), 0); /* B first in line, never run */
    }
    CHECK_EQ(pt_park(refuse_once, NULL), 0);
    ord.seq[ord.len++] = 'A';
}

/* A's park hands the M to B (a new G, or one that resumes inside its own
 * park); B runs A's commit, which refuses, and hands the M straight back:
 * A runs on before B does, as a refused park promises. */
void test_handoff_of_a_refused_park_resumes_the_parker_first(void)
{
    for (int parked = 0; parked < 2; parked++) {
        memset(&ord, 0, sizeof ord);
        pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
        CHECK_EQ(pt_go(s, first, parked ? (void *)1 : NULL), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        pt_sched_stats st = stats_of(s);
        CHECK_EQ(pt_sched_destroy(s), 0);
        CHECK_EQ(atomic_load(&ord.commits), 1);
        CHECK(!ord.commit_saw_a_g); /* the commit runs as on g0: no G current */
        CHECK_EQ(ord.len, 2);
        CHECK(memcmp(ord.seq, "AB", 2) == 0);
        CHECK(st.handoffs >= 1);
    }
}

/* ---- a preempted G first in line ------------------------------------------- */

static void short_sleeper(void *arg)
{
    struct region_case *h = arg;
    for (int i = 0; i < 20 && h->begin_rc == 0; i++) {
        CHECK_EQ(pt_sleep(100 * 1000), 0);
        h->slept++;
    }
    atomic_store(&h->stop, 1);
}

/* One P: a hog in a region, and a sleeper. The monitor readies the
 * sleeper onto the global queue and preempts the hog behind it; the M
 * takes both, runs the sleeper and leaves the hog first in its queue. The
 * sleeper's next park finds that preempted G at the head: it resumes
 * inside the signal handler with its region open, where another G's
 * commit must not run, so the M goes through g0 to run it. A handoff
 * there left the sleeper's commit undone: its timer never armed, the hog
 * spinning until it gave up. */
void test_handoff_skips_a_preempted_g_and_runs_it_from_g0(void)
{
    struct region_case h = {0};
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, region_hog, &h), 0);
    CHECK_EQ(pt_go(s, short_sleeper, &h), 0);
    WAIT_FOR(atomic_load(&h.stop)); /* aborts past BOUND: the sleeper is lost */
    CHECK_EQ(pt_sched_wait(s), 0);
    pt_sched_stats st = stats_of(s);
    CHECK_EQ(pt_sched_destroy(s), 0);
#ifdef PT__TSAN
    (void)st;
    CHECK_EQ(h.begin_rc, -ENOTSUP);
#else
    CHECK_EQ(h.begin_rc, 0);
    CHECK(!h.gave_up);
    CHECK_EQ(h.slept, 20);
    CHECK(st.preempts >= 2);
#endif
}

/* ---- due timers: run by the G handed to, after the commit ----------------- */

/* A timer on the running G's P's heap whose callback sends the time into
 * a channel of one: a heap timer due at a park, which is what these tests
 * need (a Timer of the time package enters a heap only while a G waits on
 * its channel, and is delivered by the receive itself when already due). */
struct heap_timer {
    pt_timer t;
    pt_chan *c;
};

static void heap_send(void *arg, uintptr_t seq)
{
    (void)seq;
    pt_nanos now = pt_nanotime();
    (void)pt_chan_try_send(arg, &now);
}

static void heap_timer_start(struct heap_timer *h, pt_nanos d)
{
    CHECK_EQ(pt_chan_make(&h->c, sizeof(pt_nanos), 1), 0);
    pt_timer_init(&h->t, heap_send, h->c);
    CHECK(pt_timer_modify(&pt__here_timers(pt_sched_current())->ph, &h->t, pt_nanotime() + d, 0,
                          heap_send, h->c, 0) >= 0);
}

static void heap_timer_end(struct heap_timer *h)
{
    pt_timer_stop_sync(&h->t);
    CHECK_EQ(pt_chan_free(h->c), 0);
}

struct due {
    struct heap_timer t;
    char seq[4];
    int len;
    int recv_rc;
    bool stop_saw_fired; /* B found the timer fired before it ran */
};

static struct due due;

static void due_second(void *arg)
{
    (void)arg;
    /* 0: already fired -- by this G's arrival, before this body runs */
    due.stop_saw_fired = pt_timer_stop(&due.t.t) == 0;
    due.seq[due.len++] = 'B';
}

static void due_first(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_go(NULL, due_second, NULL), 0); /* first in line */
    /* 1 ns: due by the park's look at the clock, with no switch in
     * between to run it */
    heap_timer_start(&due.t, 1);
    pt_nanos fired = 0;
    due.recv_rc = pt_chan_recv(due.t.c, &fired);
    due.seq[due.len++] = 'A';
    heap_timer_end(&due.t);
}

/* Runs fn(arg) as the one G of a fresh 1-P scheduler until a run in
 * which the monitor ran no timer: the tests below set up a timer due at
 * a park, and the monitor, finding the P busy past a round, may run it
 * first (a sanitized build is slow enough to, often). Returns that run's
 * counters. */
static pt_sched_stats run_without_the_monitor(void (*fn)(void *), void *arg, void (*reset)(void))
{
    for (int attempt = 0; attempt < 50; attempt++) {
        reset();
        pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
        CHECK_EQ(pt_go(s, fn, arg), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        pt_sched_stats st = stats_of(s);
        CHECK_EQ(pt_sched_destroy(s), 0);
        if (st.timers_run_sysmon == 0)
            return st;
    }
    CHECK(!"the monitor ran the timer in 50 runs of 50");
    return (pt_sched_stats){0};
}

static void due_reset(void)
{
    memset(&due, 0, sizeof due);
}

/* A parks on the channel of a heap timer already due, holding that channel's
 * lock until its commit; its P's queue holds B. The park hands the M to
 * B, whose arrival does A's commit and only then the P's due timers: the
 * timer's send, run before the commit, would spin on the lock A holds.
 * The timer readies A behind B. Two handoffs: A's park, B's exit. */
void test_handoff_runs_due_timers_after_the_commit(void)
{
    pt_sched_stats st = run_without_the_monitor(due_first, NULL, due_reset);
    CHECK_EQ(due.recv_rc, 1);
    CHECK(due.stop_saw_fired);
    CHECK_EQ(due.len, 2);
    CHECK(memcmp(due.seq, "BA", 2) == 0);
    CHECK(st.handoffs >= 2);
    CHECK(st.timers_run_owner >= 1);
}

/* ---- due timers on a G short of stack: never ------------------------------- */

/* Stack a G spends before parking: with what is left (about 10 KiB of a
 * 64 KiB stack) under the room due timers need on a G (16 KiB, 48 KiB
 * in a sanitized build), and well over what a park needs. */
#define DEEP (56 * 1024)

struct short_of_stack {
    pt_g *_Atomic parked;
    struct heap_timer t;
    uint64_t handoffs_before, handoffs_after;
    int woke;
};

static struct short_of_stack sos;

static bool publish_sos(void *g)
{
    atomic_store(&sos.parked, g);
    return true;
}

/* Parks DEEP down, then reads the handoffs its resumption took. */
static __attribute__((noinline)) void park_deep(pt_sched *s)
{
    volatile char *p = alloca(DEEP);
    touch_down(p, DEEP);
    CHECK_EQ(pt_park(publish_sos, pt_g_current()), 0);
    sos.handoffs_after = stats_of(s).handoffs;
    sos.woke = p[DEEP - 1];
}

static void deep_parker(void *arg)
{
    park_deep(arg);
}

static void due_parker(void *arg)
{
    (void)arg;
    pt_sched *s = pt_sched_current();
    CHECK_EQ(pt_go(NULL, deep_parker, s), 0);
    while (!atomic_load(&sos.parked))
        pt_yield();
    CHECK_EQ(pt_ready(atomic_load(&sos.parked)), 0); /* first in line */
    sos.handoffs_before = stats_of(s).handoffs;
    heap_timer_start(&sos.t, 1); /* due by the park */
    pt_nanos fired = 0;
    CHECK_EQ(pt_chan_recv(sos.t.c, &fired), 1);
    heap_timer_end(&sos.t);
}

/* A G parks with its P's timer due; first in line is a G parked deep in
 * its stack, with less left than the timers' callbacks may need. The
 * park does not hand the M to it (where the timers would run on that
 * stack): it goes through g0, which runs them on the thread's stack and
 * then runs that G. So no handoff between the park and the deep G's
 * resumption, where a handoff would have counted one. */
static void sos_reset(void)
{
    memset(&sos, 0, sizeof sos);
}

void test_due_timers_never_run_on_a_g_short_of_stack(void)
{
    run_without_the_monitor(due_parker, NULL, sos_reset);
    CHECK_EQ(sos.woke, 1);
    CHECK_EQ(sos.handoffs_after, sos.handoffs_before);
}

/* ---- a refused park with timers due ------------------------------------- */

static struct heap_timer refused_t;
static size_t refused_len; /* the timer's channel right after the refused park */

static bool refuse_always(void *arg)
{
    (void)arg;
    return false;
}

static void run_once(void *arg)
{
    (void)arg;
}

static __attribute__((noinline)) void refuse_at(size_t depth)
{
    volatile char *p = alloca(depth);
    touch_down(p, depth);
    heap_timer_start(&refused_t, 1); /* due by the park */
    CHECK_EQ(pt_park(refuse_always, NULL), 0);
    refused_len = pt_chan_len(refused_t.c);
    CHECK_EQ(p[depth - 1], 1);
}

static void refusing_g(void *arg)
{
    CHECK_EQ(pt_go(NULL, run_once, NULL), 0); /* first in line: the park hands off to it */
    refuse_at((size_t)(intptr_t)arg);
    heap_timer_end(&refused_t);
}

/* A G parks with its P's timer due, handing the M to the next G, whose
 * run of the park's commit refuses: the M goes straight back, and the
 * G resumed runs the due timers on its way -- only with room for them.
 * Parked 64 bytes down, the timer has fired when the park returns (its
 * value waits in the channel); parked DEEP down, it has not, and fires
 * at the next look at the timers instead. */
static void refused_reset(void)
{
    refused_len = 9;
}

void test_a_refused_park_runs_due_timers_only_with_room(void)
{
    static const size_t depth[2] = {64, DEEP};
    static const size_t want[2] = {1, 0};
    for (int i = 0; i < 2; i++) {
        pt_sched_stats st =
            run_without_the_monitor(refusing_g, (void *)(intptr_t)depth[i], refused_reset);
        CHECK_EQ(refused_len, want[i]);
        CHECK(st.handoffs >= 1);
    }
}
