/* Handoffs: a G that parks or exits switches straight to the G at the
 * head of its P's queue, which first does what the other asked for (its
 * park's commit, or its return to the pool), and only then runs on. */
#include <errno.h>
#include <string.h>

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
    for (int mode = 0; mode < 2; mode++) {
        struct pair p = {.rounds = SCALE(20000)};
        CHECK_EQ(pt_chan_make(&p.ping, sizeof(long), 0), 0);
        CHECK_EQ(pt_chan_make(&p.pong, sizeof(long), 0), 0);
        pt_sched *s = make_sched(1, mode ? PT_TIMERS_TIMERTHREAD : PT_TIMERS_PER_P);
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
    long n = SCALE(10000);
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

struct hog_sleeper {
    atomic_int stop;
    int begin_rc;
    bool gave_up;
    long slept;
};

static void region_hog(void *arg)
{
    struct hog_sleeper *h = arg;
    h->begin_rc = pt_preemptible_begin();
    if (h->begin_rc != 0)
        return;
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (!atomic_load_explicit(&h->stop, memory_order_relaxed) && pt_nanotime() < give_up)
        ;
    h->gave_up = !atomic_load(&h->stop);
    CHECK_EQ(pt_preemptible_end(), 0);
}

static void short_sleeper(void *arg)
{
    struct hog_sleeper *h = arg;
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
    struct hog_sleeper h = {0};
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

struct due {
    pt_time_timer *t;
    char seq[4];
    int len;
    int recv_rc;
    bool stop_saw_fired; /* B found the Timer fired before it ran */
};

static struct due due;

static void due_second(void *arg)
{
    (void)arg;
    /* 0: already fired -- by this G's arrival, before this body runs */
    due.stop_saw_fired = pt_time_timer_stop(due.t) == 0;
    due.seq[due.len++] = 'B';
}

static void due_first(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_go(NULL, due_second, NULL), 0); /* first in line */
    pt_nanos start = pt_nanotime();
    CHECK_EQ(pt_time_timer_new(&due.t, 1 * US), 0);
    /* due before the park, with no switch in between to run it */
    while (pt_nanotime() < start + 20 * US)
        ;
    pt_nanos fired = 0;
    due.recv_rc = pt_chan_recv(pt_time_timer_chan(due.t), &fired);
    due.seq[due.len++] = 'A';
    CHECK_EQ(pt_time_timer_free(due.t), 0); /* before destroy, which refuses a live one */
}

/* A parks on the channel of a Timer already due, holding that channel's
 * lock until its commit; its P's queue holds B. The park hands the M to
 * B, whose arrival does A's commit and only then the P's due timers: the
 * Timer's send, run before the commit, would spin on the lock A holds.
 * The Timer readies A behind B. Two handoffs: A's park, B's exit. */
void test_handoff_runs_due_timers_after_the_commit(void)
{
    memset(&due, 0, sizeof due);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, due_first, NULL), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    pt_sched_stats st = stats_of(s);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(due.recv_rc, 1);
    CHECK(due.stop_saw_fired);
    CHECK_EQ(due.len, 2);
    CHECK(memcmp(due.seq, "BA", 2) == 0);
    CHECK(st.handoffs >= 2);
    CHECK(st.timers_run_owner >= 1);
}

/* ---- due timers on a small stack: g0 runs them ---------------------------- */

struct deep {
    int sleeps;
    long woke;
};

/* Spends about `kib` KiB of stack, then sleeps at the bottom. */
static __attribute__((noinline)) void sleep_deep(struct deep *d, int kib)
{
    volatile char pad[1024];
    pad[0] = (char)kib;
    pad[sizeof pad - 1] = pad[0];
    if (kib > 1) {
        sleep_deep(d, kib - 1);
    } else {
        for (int i = 0; i < d->sleeps; i++) {
            CHECK_EQ(pt_sleep(1 * US), 0);
            d->woke++;
        }
    }
    CHECK_EQ(pad[sizeof pad - 1], (char)kib);
}

static void deep_g(void *arg)
{
    sleep_deep(arg, 10);
}

/* Gs of 16 KiB stacks, each sleeping 10 KiB down: every park finds
 * timers due and the next G first in line, resumed where it has too little
 * stack left for the timers' callbacks (a G's allocation, a futex wake).
 * Those parks go through g0, whose stack is the thread's: every sleep
 * wakes, and nothing overflows onto a guard page. */
void test_due_timers_never_run_on_a_g_short_of_stack(void)
{
    enum { N = 8 };
    struct deep d[N];
    pt_sched_options o = {1, 0, PT_TIMERS_PER_P};
    o.stack_size = 16 * 1024;
    pt_sched *s = NULL;
    CHECK_EQ(pt_sched_create(&s, &o), 0);
    for (int i = 0; i < N; i++) {
        d[i] = (struct deep){.sleeps = SCALE(2000)};
        CHECK_EQ(pt_go(s, deep_g, &d[i]), 0);
    }
    CHECK_EQ(pt_sched_wait(s), 0);
    pt_sched_stats st = stats_of(s);
    CHECK_EQ(pt_sched_destroy(s), 0);
    for (int i = 0; i < N; i++)
        CHECK_EQ(d[i].woke, d[i].sleeps);
    CHECK(st.timers_run_owner >= (uint64_t)(N * d[0].sleeps) / 2);
}
