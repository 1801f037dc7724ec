/* Virtual time (sched.h's "Virtual time"): written from Go 1.25's
 * testing/synctest documentation and its tests. Every G sees the exact
 * times the clock promised (a sleep returns at its deadline, not a tick
 * later), the clock moves only when every G is durably blocked, settle
 * waits for the others, a deadlock ends the wait with a report, and a G
 * on a descriptor holds the clock. No test here sleeps in real time but
 * the one that waits for a descriptor's G to be parked. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "util.h"

#define HOUR (3600 * SEC)
#define T0 PT_VIRTUAL_EPOCH

static pt_sched *vsched(int procs, enum pt_timer_mode mode)
{
    pt_sched_options o = {.procs = procs, .timers = mode, .virtual_time = true};
    pt_sched *s = NULL;
    CHECK_EQ(pt_sched_create(&s, &o), 0);
    return s;
}

/* Runs fn in a G of a fresh virtual scheduler to the end. */
static void vrun(int procs, enum pt_timer_mode mode, void (*fn)(void *), void *arg)
{
    pt_sched *s = vsched(procs, mode);
    CHECK_EQ(pt_go(s, fn, arg), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- sleeps -------------------------------------------------------------- */

struct sleepers {
    pt_wg wg;
    atomic_long wrong; /* Gs that woke at any time but their deadline */
    int n;
};

static void one_sleeper(void *arg)
{
    struct sleepers *sl = arg;
    uint64_t x = (uint64_t)(uintptr_t)&x ^ (uint64_t)pt_time_now();
    for (int i = 0; i < 3; i++) {
        pt_nanos d = (pt_nanos)(pt__xorshift64(&x) % (uint64_t)HOUR) + 1;
        pt_nanos t = pt_time_now();
        CHECK_EQ(pt_sleep(d), 0);
        if (pt_time_now() != t + d)
            atomic_fetch_add(&sl->wrong, 1);
    }
    pt_wg_done(&sl->wg);
}

static void sleepers_main(void *arg)
{
    struct sleepers *sl = arg;
    CHECK_EQ(pt_time_now(), T0); /* the documented start */
    pt_wg_init(&sl->wg);
    pt_wg_add(&sl->wg, sl->n);
    for (int i = 0; i < sl->n; i++)
        CHECK_EQ(pt_go(NULL, one_sleeper, sl), 0);
    CHECK_EQ(pt_wg_wait(&sl->wg), 0);
    CHECK(pt_time_now() > T0);
    CHECK(pt_time_now() <= T0 + 3 * HOUR);
    /* an hour on the scheduler's clock; none on the process's */
    CHECK(pt_nanotime() < T0);
}

void test_vtime_sleeps_return_at_their_deadlines_exactly(int mode)
{
    for (int procs = 1; procs <= 2; procs++) {
        struct sleepers sl = {.n = (int)GS_AT_ONCE(1000)};
        vrun(procs, (enum pt_timer_mode)mode, sleepers_main, &sl);
        CHECK_EQ(atomic_load(&sl.wrong), 0);
    }
}

/* ---- time.* timers, tickers, AfterFunc ------------------------------------ */

static atomic_llong after_func_at;

static void after_func(void *arg)
{
    (void)arg;
    atomic_store(&after_func_at, pt_time_now());
}

static void timers_main(void *arg)
{
    (void)arg;
    pt_time_timer *t, *af;
    pt_time_ticker *tk;
    pt_nanos v = 0;
    CHECK_EQ(pt_time_after_func(&af, 3 * SEC, after_func, NULL), 0);
    CHECK_EQ(pt_time_timer_new(&t, 5 * SEC), 0);
    CHECK_EQ(pt_chan_recv(pt_time_timer_chan(t), &v), 1);
    CHECK_EQ(v, T0 + 5 * SEC); /* the value is the time it was due */
    CHECK_EQ(pt_time_now(), T0 + 5 * SEC);
    CHECK_EQ(atomic_load(&after_func_at), T0 + 3 * SEC);
    /* a ticker read ten times: each tick at start + k * period, read then */
    pt_nanos start = pt_time_now();
    CHECK_EQ(pt_time_ticker_new(&tk, 250 * MS), 0);
    for (int k = 1; k <= 10; k++) {
        CHECK_EQ(pt_chan_recv(pt_time_ticker_chan(tk), &v), 1);
        CHECK_EQ(v, start + k * 250 * MS);
        CHECK_EQ(pt_time_now(), v);
    }
    /* reset, stop: a stopped timer never fires, however long we wait */
    CHECK_EQ(pt_time_timer_reset(t, HOUR), 0);
    CHECK_EQ(pt_time_timer_stop(t), 1);
    CHECK_EQ(pt_sleep(2 * HOUR), 0);
    CHECK_EQ(pt_chan_try_recv(pt_time_timer_chan(t), &v), -EAGAIN);
    CHECK_EQ(pt_time_ticker_free(tk), 0);
    CHECK_EQ(pt_time_timer_free(t), 0);
    CHECK_EQ(pt_time_timer_free(af), 0);
}

void test_vtime_timers_tickers_and_after_func_fire_at_their_times(int mode)
{
    for (int procs = 1; procs <= 2; procs++) {
        atomic_store(&after_func_at, 0);
        vrun(procs, (enum pt_timer_mode)mode, timers_main, NULL);
    }
}

/* ---- deadlines ------------------------------------------------------------ */

static pt_chan *never_sent; /* a channel nobody sends on (made by the G) */

static void deadlines_main(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_chan_make(&never_sent, sizeof(int), 0), 0);
    int x;
    pt_nanos dl = pt_time_now() + 2 * SEC;
    CHECK_EQ(pt_chan_recv_until(never_sent, &x, dl), -ETIMEDOUT);
    CHECK_EQ(pt_time_now(), dl); /* at the deadline, not a tick later */
    pt_select_case c[1] = {{.chan = never_sent, .dir = PT_RECV, .elem = &x}};
    dl = pt_time_now() + 90 * SEC;
    CHECK_EQ(pt_select(c, 1, dl, true), -ETIMEDOUT);
    CHECK_EQ(pt_time_now(), dl);
    /* a deadline already past is looked at before the wait, at once */
    CHECK_EQ(pt_chan_recv_until(never_sent, &x, dl), -ETIMEDOUT);
    CHECK_EQ(pt_time_now(), dl);
    CHECK_EQ(pt_chan_free(never_sent), 0);
}

void test_vtime_deadlines_end_waits_at_their_time(int mode)
{
    for (int procs = 1; procs <= 2; procs++)
        vrun(procs, (enum pt_timer_mode)mode, deadlines_main, NULL);
}

/* ---- settle ------------------------------------------------------------- */

struct settle_case {
    pt_chan *c;
    atomic_int stage; /* how far the worker got */
    atomic_llong woke_at;
};

static void settle_worker(void *arg)
{
    struct settle_case *sc = arg;
    atomic_store(&sc->stage, 1);
    int x;
    CHECK_EQ(pt_chan_recv(sc->c, &x), 1);
    atomic_store(&sc->stage, 2);
    CHECK_EQ(pt_sleep(SEC), 0);
    atomic_store(&sc->woke_at, pt_time_now());
    atomic_store(&sc->stage, 3);
}

static void settle_main(void *arg)
{
    struct settle_case *sc = arg;
    CHECK_EQ(pt_chan_make(&sc->c, sizeof(int), 0), 0);
    CHECK_EQ(pt_go(NULL, settle_worker, sc), 0);
    /* synctest's TestWait: after settle, the worker is blocked in its
     * receive, with the clock unmoved */
    CHECK_EQ(pt_sched_settle(), 0);
    CHECK_EQ(atomic_load(&sc->stage), 1);
    CHECK_EQ(pt_time_now(), T0);
    int one = 1;
    CHECK_EQ(pt_chan_send(sc->c, &one), 0);
    CHECK_EQ(pt_sched_settle(), 0);
    CHECK_EQ(atomic_load(&sc->stage), 2); /* in its sleep, not past it */
    CHECK_EQ(pt_time_now(), T0);
    /* advance, then look: sleep past its wake-up, settle, check */
    CHECK_EQ(pt_sleep(2 * SEC), 0);
    CHECK_EQ(pt_sched_settle(), 0);
    CHECK_EQ(atomic_load(&sc->stage), 3);
    CHECK_EQ(atomic_load(&sc->woke_at), T0 + SEC);
    CHECK_EQ(pt_chan_free(sc->c), 0);
}

void test_vtime_settle_returns_once_every_other_g_is_blocked(int mode)
{
    for (int procs = 1; procs <= 2; procs++) {
        struct settle_case sc = {0};
        vrun(procs, (enum pt_timer_mode)mode, settle_main, &sc);
        CHECK_EQ(atomic_load(&sc.stage), 3);
    }
}

struct two_settlers {
    pt_wg wg;
    pt_chan *stop;
    atomic_int rc[2];
};

struct settler_arg {
    struct two_settlers *ts;
    int i;
};

static void settler(void *arg)
{
    struct settler_arg *a = arg;
    struct two_settlers *ts = a->ts;
    atomic_store(&ts->rc[a->i], pt_sched_settle());
    pt_wg_done(&ts->wg);
    CHECK_EQ(pt_chan_recv(ts->stop, NULL), 0); /* closed */
}

static void two_settlers_main(void *arg)
{
    struct two_settlers *ts = arg;
    static struct settler_arg a[2];
    a[0] = (struct settler_arg){ts, 0};
    a[1] = (struct settler_arg){ts, 1};
    CHECK_EQ(pt_chan_make(&ts->stop, 0, 0), 0);
    pt_wg_init(&ts->wg);
    pt_wg_add(&ts->wg, 2);
    CHECK_EQ(pt_go(NULL, settler, &a[0]), 0);
    CHECK_EQ(pt_go(NULL, settler, &a[1]), 0);
    CHECK_EQ(pt_wg_wait(&ts->wg), 0);
    CHECK_EQ(pt_chan_close(ts->stop), 0);
    CHECK_EQ(pt_sched_settle(), 0); /* the two are gone or blocked: no other settles */
}

void test_vtime_one_g_settles_at_a_time(int mode)
{
    for (int procs = 1; procs <= 2; procs++) {
        struct two_settlers ts = {0};
        vrun(procs, (enum pt_timer_mode)mode, two_settlers_main, &ts);
        int a = atomic_load(&ts.rc[0]), b = atomic_load(&ts.rc[1]);
        CHECK((a == 0 && b == -EBUSY) || (a == -EBUSY && b == 0));
        CHECK_EQ(pt_chan_free(ts.stop), 0);
    }
}

static void settle_refused(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_sched_settle(), -EINVAL); /* a scheduler on the real clock */
}

void test_vtime_settle_is_refused_off_virtual_time(void)
{
    CHECK_EQ(pt_sched_settle(), -EPERM); /* not a G */
    pt_sched_options o = {.procs = 1};
    CHECK_EQ(pt_sched_run(&o, settle_refused, NULL), 0);
}

/* ---- deadlock ----------------------------------------------------------- */

/* Static, so that what the abandoned Gs hold stays reachable (they are
 * never resumed: the leak checker would see their channel lost). */
static pt_chan *deadlock_chans[8];
static atomic_int deadlock_nchans;
static pt_wg deadlock_wgs[8];
static char deadlock_seen[8192];
static atomic_int deadlock_calls;

static void on_deadlock(const char *report, void *arg)
{
    CHECK(arg == &deadlock_calls);
    atomic_fetch_add(&deadlock_calls, 1);
    snprintf(deadlock_seen, sizeof deadlock_seen, "%s", report);
}

static void blocked_on_chan(void *arg)
{
    pt_chan_recv(arg, NULL);
}

static void blocked_on_wg(void *arg)
{
    pt_wg_wait(arg);
}

static bool keep_parked(void *arg)
{
    (void)arg;
    return true;
}

static void deadlock_main(void *arg)
{
    (void)arg;
    int i = atomic_fetch_add(&deadlock_nchans, 1);
    CHECK(i < 8);
    CHECK_EQ(pt_chan_make(&deadlock_chans[i], 0, 0), 0);
    pt_wg_init(&deadlock_wgs[i]);
    pt_wg_add(&deadlock_wgs[i], 1);
    CHECK_EQ(pt_go(NULL, blocked_on_chan, deadlock_chans[i]), 0);
    CHECK_EQ(pt_go(NULL, blocked_on_wg, &deadlock_wgs[i]), 0);
    CHECK_EQ(pt_sleep(HOUR), 0); /* a timer pending: no deadlock yet */
    pt_park(keep_parked, NULL);  /* now every G is blocked for good */
}

void test_vtime_deadlock_ends_the_wait_with_a_report(int mode)
{
    for (int procs = 1; procs <= 2; procs++) {
        atomic_store(&deadlock_calls, 0);
        pt_sched_options o = {.procs = procs,
                              .timers = (enum pt_timer_mode)mode,
                              .virtual_time = true,
                              .on_deadlock = on_deadlock,
                              .on_deadlock_arg = &deadlock_calls};
        pt_sched *s;
        CHECK_EQ(pt_sched_create(&s, &o), 0);
        CHECK(pt_sched_deadlock_report(s) == NULL);
        CHECK_EQ(pt_go(s, deadlock_main, NULL), 0);
        CHECK_EQ(pt_sched_wait(s), -ENOTRECOVERABLE);
        CHECK_EQ(pt_sched_wait(s), -ENOTRECOVERABLE); /* for good */
        const char *r = pt_sched_deadlock_report(s);
        CHECK(r != NULL);
        CHECK_EQ(atomic_load(&deadlock_calls), 1);
        CHECK(strcmp(r, deadlock_seen) == 0);
        printf("%s", r);
        CHECK(strstr(r, "deadlock: all 3 Gs are durably blocked") != NULL);
        CHECK(strstr(r, "chan receive") != NULL);
        CHECK(strstr(r, "wait group") != NULL);
        CHECK(strstr(r, "pt_park") != NULL);
        CHECK(strstr(r, "by a thread") != NULL); /* the first G */
        CHECK(strstr(r, "by G ") != NULL);       /* the two it made */
        char at[64];
        snprintf(at, sizeof at, "epoch + %lld ns", (long long)HOUR);
        CHECK(strstr(r, at) != NULL); /* the clock went as far as the sleep */
        CHECK_EQ(pt_sched_destroy(s), 0); /* the parked Gs are freed, never resumed */
    }
}

void test_vtime_sched_run_returns_the_deadlock(void)
{
    atomic_store(&deadlock_calls, 0);
    pt_sched_options o = {.procs = 1,
                          .virtual_time = true,
                          .on_deadlock = on_deadlock,
                          .on_deadlock_arg = &deadlock_calls};
    CHECK_EQ(pt_sched_run(&o, deadlock_main, NULL), -ENOTRECOVERABLE);
    CHECK_EQ(atomic_load(&deadlock_calls), 1);
    CHECK(strstr(deadlock_seen, "deadlock") != NULL);
}

/* ---- a G on a descriptor holds the clock ----------------------------------- */

struct fd_hold {
    int sv[2];
    atomic_int order; /* who woke first: 1 the reader, 2 the sleeper */
    atomic_int reader_rank, sleeper_rank;
    atomic_llong read_at, slept_to;
    atomic_int sleeping;
};

static void fd_reader(void *arg)
{
    struct fd_hold *h = arg;
    char b;
    /* its deadline is an hour away: if the clock moved while this G
     * waits, the sleeper's second would go first */
    CHECK_EQ(pt_fd_read(h->sv[0], &b, 1, pt_time_now() + HOUR), 1);
    atomic_store(&h->read_at, pt_time_now());
    atomic_store(&h->reader_rank, atomic_fetch_add(&h->order, 1) + 1);
}

static void fd_sleeper(void *arg)
{
    struct fd_hold *h = arg;
    atomic_store(&h->sleeping, 1);
    CHECK_EQ(pt_sleep(SEC), 0);
    atomic_store(&h->slept_to, pt_time_now());
    atomic_store(&h->sleeper_rank, atomic_fetch_add(&h->order, 1) + 1);
}

void test_vtime_a_g_waiting_on_a_descriptor_holds_the_clock(void)
{
    struct fd_hold h = {0};
    socket_pair(h.sv);
    pt_sched *s = vsched(1, PT_TIMERS_PER_P);
    /* one P, both from this thread: the reader runs first and parks on
     * its socket, then the sleeper parks in its sleep */
    CHECK_EQ(pt_go(s, fd_reader, &h), 0);
    CHECK_EQ(pt_go(s, fd_sleeper, &h), 0);
    /* The M goes to sleep in the netpoller once both are parked. Were an
     * fd wait durable, it would have jumped the clock and run the
     * sleeper first. Waited for in real time, with a bound. */
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (!(atomic_load(&h.sleeping) && stats_of(s).netpoll_waits > 0) && pt_nanotime() < give_up)
        nap_ms();
    CHECK(atomic_load(&h.sleeping));
    CHECK_EQ(atomic_load(&h.sleeper_rank), 0);
    CHECK_EQ(write(h.sv[1], "x", 1), 1);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&h.reader_rank), 1);
    CHECK_EQ(atomic_load(&h.read_at), T0);
    CHECK_EQ(atomic_load(&h.sleeper_rank), 2);
    CHECK_EQ(atomic_load(&h.slept_to), T0 + SEC);
    CHECK_EQ(pt_sched_destroy(s), 0);
    close(h.sv[0]);
    close(h.sv[1]);
}

/* ---- a channel made outside the scheduler is not durable -------------------- */

static pt_chan *outside_chan;
static atomic_int outside_waiting;
static atomic_llong outside_got_at;

static void outside_receiver(void *arg)
{
    (void)arg;
    atomic_store(&outside_waiting, 1);
    int v;
    CHECK_EQ(pt_chan_recv(outside_chan, &v), 1);
    atomic_store(&outside_got_at, pt_time_now());
}

static void outside_sleeper(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_sleep(HOUR), 0);
}

void test_vtime_a_channel_made_by_a_thread_holds_the_clock(void)
{
    CHECK_EQ(pt_chan_make(&outside_chan, sizeof(int), 0), 0);
    atomic_store(&outside_waiting, 0);
    pt_sched *s = vsched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, outside_receiver, NULL), 0);
    CHECK_EQ(pt_go(s, outside_sleeper, NULL), 0);
    /* the sender is this thread, which the scheduler cannot see: the
     * receive holds the clock (no jump to the hour, no deadlock) */
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (!(atomic_load(&outside_waiting) && stats_of(s).netpoll_waits > 0) &&
           pt_nanotime() < give_up)
        nap_ms();
    int v = 7;
    while (pt_chan_try_send(outside_chan, &v) == -EAGAIN && pt_nanotime() < give_up)
        nap_ms();
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&outside_got_at), T0);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(pt_chan_free(outside_chan), 0);
}

/* ---- the same run, the same times ----------------------------------------------- */

#define TRACE_MAX 4096
#define TRACED 24

struct trace_ev {
    pt_nanos t;
    int ev;
};

struct trace {
    atomic_int n;
    struct trace_ev e[TRACE_MAX];
};

static void trace_add(struct trace *tr, int ev)
{
    int i = atomic_fetch_add(&tr->n, 1);
    CHECK(i < TRACE_MAX);
    tr->e[i].t = pt_time_now();
    tr->e[i].ev = ev;
}

struct traced {
    struct trace *tr;
    int id;
    pt_chan *from_prev, *to_next; /* unbuffered, one pair each */
    pt_wg *wg;
};

/* A worker: sleeps of its own lengths, a ticker read a few times, then a
 * hand-over with its neighbours, each side with a deadline (at times no
 * other event shares: which side wins must not hang on the order of
 * Gs at one instant, which two Ps may change). */
static void traced_worker(void *arg)
{
    struct traced *w = arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
    for (int k = 0; k < 4; k++) {
        pt_sleep((pt_nanos)(pt__xorshift64(&x) % (uint64_t)(10 * SEC)));
        trace_add(w->tr, w->id * 100 + k);
    }
    pt_time_ticker *tk;
    CHECK_EQ(pt_time_ticker_new(&tk, (pt_nanos)(w->id + 1) * 700 * MS + w->id), 0);
    for (int k = 0; k < 3; k++) {
        pt_nanos v;
        CHECK_EQ(pt_chan_recv(pt_time_ticker_chan(tk), &v), 1);
        trace_add(w->tr, w->id * 100 + 10 + k);
    }
    CHECK_EQ(pt_time_ticker_free(tk), 0);
    int v = w->id;
    if (w->to_next)
        trace_add(w->tr, w->id * 100 + 20 +
                             (pt_chan_send_until(w->to_next, &v, pt_time_now() + 2 * SEC + 3 * w->id) ==
                              0));
    if (w->from_prev)
        trace_add(w->tr, w->id * 100 + 30 +
                             (pt_chan_recv_until(w->from_prev, &v, pt_time_now() + SEC + 7 * w->id) ==
                              1));
    pt_wg_done(w->wg);
}

static void traced_main(void *arg)
{
    struct trace *tr = arg;
    static struct traced ws[TRACED];
    static pt_chan *cs[TRACED];
    pt_wg wg;
    pt_wg_init(&wg);
    pt_wg_add(&wg, TRACED);
    for (int i = 1; i < TRACED; i++)
        CHECK_EQ(pt_chan_make(&cs[i], sizeof(int), 0), 0);
    for (int i = 0; i < TRACED; i++) {
        ws[i] = (struct traced){tr, i, i > 0 ? cs[i] : NULL, i + 1 < TRACED ? cs[i + 1] : NULL,
                                &wg};
        CHECK_EQ(pt_go(NULL, traced_worker, &ws[i]), 0);
    }
    CHECK_EQ(pt_wg_wait(&wg), 0);
    trace_add(tr, 99999);
    for (int i = 1; i < TRACED; i++)
        CHECK_EQ(pt_chan_free(cs[i]), 0);
}

static int by_time_then_event(const void *a, const void *b)
{
    const struct trace_ev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->ev - y->ev;
}

/* 100 runs with one P: the same (time, event) lines in the same order;
 * with two, the same lines, in an order that may differ. */
void test_vtime_every_run_sees_the_same_times(int mode)
{
    static struct trace first, again;
    int runs = (int)SCALE(100);
    for (int procs = 1; procs <= 2; procs++) {
        for (int r = 0; r < runs; r++) {
            struct trace *tr = r == 0 ? &first : &again;
            atomic_store(&tr->n, 0);
            vrun(procs, (enum pt_timer_mode)mode, traced_main, tr);
            if (procs == 2)
                qsort(tr->e, (size_t)atomic_load(&tr->n), sizeof tr->e[0], by_time_then_event);
            if (r == 0)
                continue;
            CHECK_EQ(atomic_load(&again.n), atomic_load(&first.n));
            for (int i = 0; i < atomic_load(&first.n); i++) {
                CHECK_EQ(again.e[i].t, first.e[i].t);
                CHECK_EQ(again.e[i].ev, first.e[i].ev);
            }
        }
    }
}

/* ---- timer slack on the virtual clock ------------------------------------- */

/* With a timer slack of 10 ms every sleep returns within [d, d + 10 ms]
 * and a Timer's value is still its due time, received within its window;
 * and the Gs' wake times collapse: 200 spread over [1 ms, 1.011 s] share
 * at most 121 (a 10 ms window always holds a multiple of 2^23 ns, where
 * the Ps' heaps key them, and that span holds 121 of them from the
 * epoch; the TimerThread runs every window open at the earliest one's
 * end, fewer still). */
#define SLACK (10 * MS)
#define NSLACKERS 200

struct slackers {
    pt_wg wg;
    atomic_long outside;          /* wakes outside their windows */
    pt_nanos woke[NSLACKERS];     /* each G's wake time */
    atomic_int n;
};

static void slack_sleeper(void *arg)
{
    struct slackers *sl = arg;
    int i = atomic_fetch_add(&sl->n, 1);
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    pt_nanos d = MS + (pt_nanos)(pt__xorshift64(&x) % (uint64_t)SEC), t = pt_time_now();
    if (i % 2) {
        CHECK_EQ(pt_sleep(d), 0);
    } else {
        pt_time_timer *tm;
        pt_nanos v = 0;
        CHECK_EQ(pt_time_timer_new(&tm, d), 0);
        CHECK_EQ(pt_chan_recv(pt_time_timer_chan(tm), &v), 1);
        CHECK_EQ(v, t + d); /* the value is the due time, slack or not */
        CHECK_EQ(pt_time_timer_free(tm), 0);
    }
    pt_nanos now = pt_time_now();
    sl->woke[i] = now;
    if (now < t + d || now > t + d + SLACK)
        atomic_fetch_add(&sl->outside, 1);
    pt_wg_done(&sl->wg);
}

static void slackers_main(void *arg)
{
    struct slackers *sl = arg;
    pt_wg_init(&sl->wg);
    pt_wg_add(&sl->wg, NSLACKERS);
    for (int i = 0; i < NSLACKERS; i++)
        CHECK_EQ(pt_go(NULL, slack_sleeper, sl), 0);
    CHECK_EQ(pt_wg_wait(&sl->wg), 0);
}

static int cmp_nanos(const void *a, const void *b)
{
    pt_nanos x = *(const pt_nanos *)a, y = *(const pt_nanos *)b;
    return (x > y) - (x < y);
}

void test_vtime_timer_slack_keeps_each_wake_in_its_window_and_shares_them(int mode)
{
    for (int procs = 1; procs <= 2; procs++) {
        static struct slackers sl;
        memset(&sl, 0, sizeof sl);
        pt_sched_options o = {.procs = procs, .timers = (enum pt_timer_mode)mode,
                              .virtual_time = true, .timer_slack = SLACK};
        pt_sched *s = NULL;
        CHECK_EQ(pt_sched_create(&s, &o), 0);
        CHECK_EQ(pt_go(s, slackers_main, &sl), 0);
        CHECK_EQ(pt_sched_wait(s), 0);
        CHECK_EQ(pt_sched_destroy(s), 0);
        CHECK_EQ(atomic_load(&sl.outside), 0);
        qsort(sl.woke, NSLACKERS, sizeof sl.woke[0], cmp_nanos);
        int distinct = 1;
        for (int i = 1; i < NSLACKERS; i++)
            distinct += sl.woke[i] != sl.woke[i - 1];
        CHECK(distinct <= (int)(SEC / (1 << 23)) + 2);
    }
    pt_sched_options bad = {.timer_slack = -1};
    pt_sched *s = NULL;
    CHECK_EQ(pt_sched_create(&s, &bad), -EINVAL);
    CHECK(s == NULL);
}
