/* sched: the scheduler itself under stress, in one of its three timer
 * modes (the designs sched-perp, sched-lheap and sched-tt, named as
 * ptbench names them in bench/workloads/sched_runner.c). Gs sleep (never
 * early, woken once, within the bound); Gs own Timers, AfterFuncs and
 * Tickers (sc_sched_time.c) that other Gs and plain threads stop
 * meanwhile; a Timer whose channel several Gs wait on at once, some of
 * them leaving and coming back (sc_sched_waiters.c); Gs read socketpairs
 * with deadlines that Gs and a plain thread write to, under a watchdog
 * for stalls, write with deadlines to a pair nobody drains for a while
 * and accept with deadlines, while the plain thread sleeps with
 * pt_sleep (sc_sched_io.c), on the Ps' rings or through the netpoller;
 * and every 10 ms or so the main thread sets a new number of Ps
 * (pt_sched_set_procs, 1 to -t), so removed Ps hand their Gs and, per-P,
 * their timers to the rest. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/alloc.h"
#include "sc_sched.h"

/* Designs that are a scheduler, not an engine: a name and a mode. */
struct sched_design {
    struct pt_engine eng; /* a name for the reports; nothing else is set */
    enum pt_timer_mode mode;
};

static const struct sched_design designs[] = {
    {{.name = "sched-perp", .what = "the scheduler; its timers on the G's P's heap (Go)"},
     PT_TIMERS_PER_P},
    {{.name = "sched-tt", .what = "the scheduler; its timers on the TimerThread (bthread)"},
     PT_TIMERS_TIMERTHREAD},
    {{.name = "sched-lheap", .what = "the scheduler; its timers on the G's P's heap (Go 1.23)"},
     PT_TIMERS_LHEAP},
};
#define NDESIGNS (int)(sizeof designs / sizeof designs[0])

const struct pt_engine *stress_sched_design(int i)
{
    return i >= 0 && i < NDESIGNS ? &designs[i].eng : NULL;
}

bool stress_is_sched(const struct pt_engine *e)
{
    for (int i = 0; i < NDESIGNS; i++)
        if (e == &designs[i].eng)
            return true;
    return false;
}

enum pt_timer_mode stress_sched_mode(const struct pt_engine *e)
{
    return ((const struct sched_design *)e)->mode;
}

/* ---- sleepers ----------------------------------------------------------- */

struct ss_sl {
    struct ss *ss;
    _Atomic pt_nanos until; /* the sleep's deadline while in it; 0 awake */
    _Atomic uint64_t seq, late_seen;
    uint64_t rng;
};

static struct ss_sl *sleepers;
static int nsleepers;

static void sl_late(struct ss_sl *m, uint64_t seq, pt_nanos late)
{
    uint64_t seen = atomic_load(&m->late_seen);
    if (seen != seq && atomic_compare_exchange_strong(&m->late_seen, &seen, seq))
        stress_violation(m->ss->r, V_LATE, (long)(m - sleepers), seq, "a wake within the bound",
                         "still asleep %.3f ms after its deadline", (double)late / 1e6);
}

static void sleeper(void *arg)
{
    struct ss_sl *m = arg;
    struct ss *ss = m->ss;
    const struct stress_opts *o = ss->r->o;
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        pt_nanos d = ss_pick_d(x);
        if (x % 32 == 3) { /* a busy G now and then: its P stays taken */
            pt_nanos until = pt_nanotime() + 200000;
            while (pt_nanotime() < until)
                ;
        } else if (x % 32 == 4) {
            pt_yield();
        }
        uint64_t seq = atomic_fetch_add(&m->seq, 1) + 1;
        pt_nanos t0 = pt_nanotime(), until = t0 + (d > 0 ? d : 0);
        atomic_store(&m->until, until);
        if (x & 32)
            pt_sleep(d);
        else
            pt_sleep_until(t0 + d);
        pt_nanos t1 = pt_nanotime();
        atomic_store(&m->until, 0);
        atomic_fetch_add_explicit(&ss->r->firings, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
        if (t1 < until)
            stress_violation(ss->r, V_EARLY, (long)(m - sleepers), seq,
                             "a wake at or after the deadline", "woke %.3f ms early",
                             (double)(until - t1) / 1e6);
        else if (stress_overdue(ss->r, until, t1, o->bound))
            sl_late(m, seq, t1 - until);
    }
    atomic_fetch_sub(&ss->alive, 1);
}

/* A G that stops the timers of its pair now and then (or pokes their
 * owners' selects). */
struct ss_stopper {
    struct ss *ss;
    int first; /* the pair: tm[first], tm[first + 1] */
    uint64_t rng;
};

static void stopper(void *arg)
{
    struct ss_stopper *m = arg;
    struct ss *ss = m->ss;
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        pt_sleep((pt_nanos)(x % (3 * SS_MS)));
        int k = m->first + (int)((x >> 32) & 1);
        if (k >= ss->ntm)
            k = m->first;
        if ((x >> 33) % 4 == 0) {
            int one = 1;
            (void)pt_chan_try_send(ss->tm[k].poke, &one);
        } else {
            ss_tm_stop(&ss->tm[k]);
        }
    }
    atomic_fetch_sub(&ss->alive, 1);
}

/* Plain threads that stop any timer (stop may be called from any thread). */
struct ss_out {
    struct ss *ss;
    pthread_t thread;
    uint64_t rng;
};

static void *outsider(void *arg)
{
    struct ss_out *m = arg;
    struct ss *ss = m->ss;
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        stress_sleep((pt_nanos)(x % (2 * SS_MS)));
        ss_tm_stop(&ss->tm[(x >> 32) % (uint64_t)ss->ntm]);
    }
    return NULL;
}

/* ---- the main thread --------------------------------------------------- */

struct ss_main {
    struct ss *ss;
    uint64_t rng;
    int maxprocs;
    pt_nanos hold; /* no change of Ps until then */
};

/* Every 10 ms: a new number of Ps one time in three, and the sleepers'
 * deadlines. One time in 32, one P only, held for twice the bound: a
 * removed P whose timers were not handed on (moveTimers) would hold them
 * that long, and they would fire late. */
static void ss_scan(void *arg)
{
    struct ss_main *mm = arg;
    struct ss *ss = mm->ss;
    uint64_t x = pt__xorshift64(&mm->rng);
    pt_nanos now = pt_nanotime();
    if (now >= mm->hold && x % 3 == 0) {
        int procs = 1 + (int)((x >> 8) % (uint64_t)mm->maxprocs);
        if (x % 32 == 0) {
            procs = 1;
            mm->hold = now + 2 * ss->r->o->bound;
        }
        int rc = pt_sched_set_procs(ss->s, procs);
        if (rc != 0)
            stress_violation(ss->r, V_ERROR, -1, 0, "set_procs to succeed", "%d", rc);
        atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
    }
    for (int i = 0; i < nsleepers; i++) {
        struct ss_sl *m = &sleepers[i];
        uint64_t seq = atomic_load(&m->seq);
        pt_nanos until = atomic_load(&m->until);
        if (until && stress_overdue(ss->r, until, now, ss->r->o->bound) &&
            seq == atomic_load(&m->seq))
            sl_late(m, seq, now - until);
    }
    ss_io_scan(ss, now);
}

static uint64_t seed_of(const struct stress_opts *o, int kind, int i)
{
    return o->seed * 0x9e3779b97f4a7c15ull + (uint64_t)kind * 0xbf58476d1ce4e5b9ull +
           (uint64_t)i * 0x94d049bb133111ebull + 1;
}

static bool go(struct ss *ss, void (*fn)(void *), void *arg)
{
    atomic_fetch_add(&ss->alive, 1);
    int rc = pt_go(ss->s, fn, arg);
    if (rc != 0) {
        atomic_fetch_sub(&ss->alive, 1);
        stress_violation(ss->r, V_ERROR, -1, 0, "pt_go to succeed", "%d", rc);
    }
    return rc == 0;
}

/* A scheduler run once in the mode before the first measured run, so what
 * the library keeps for the process (the TimerThread, its per-thread
 * table) is there before the leak check's first reading. */
static void prime_g(void *arg)
{
    (void)arg;
    /* a descriptor registered: the process's table of them (never freed)
     * has its first part */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        char b = 0;
        (void)pt_fd_write(sv[1], &b, 1, 0);
        (void)pt_fd_read(sv[0], &b, 1, 0);
        (void)pt_fd_close(sv[0]);
        (void)pt_fd_close(sv[1]);
    }
    pt_time_timer *t;
    if (pt_time_timer_new(&t, 100000) == 0) {
        pt_nanos v;
        (void)pt_chan_recv(pt_time_timer_chan(t), &v);
        pt_time_timer_free(t);
    }
    pt_sleep(100000);
}

static void prime(enum pt_timer_mode mode)
{
    static bool primed[PT_TIMERS_LHEAP + 1];
    if (primed[mode])
        return;
    primed[mode] = true;
    pt_sched_options opt = {.procs = 1, .timers = mode};
    (void)pt_sched_run(&opt, prime_g, NULL);
}

void sc_sched(struct stress_run *r)
{
    const struct stress_opts *o = r->o;
    enum pt_timer_mode mode = stress_sched_mode(r->eng);
    prime(mode);
    long live0 = pt__alloc_live();
    int k = o->timers / 8 < 2 ? 2 : o->timers / 8;
    /* a Timer with several waiters: 1 + SS_TW_WAITERS Gs each */
    struct ss ss = {.r = r, .ntm = k, .naf = k, .ntk = k, .ntw = (k + 3) / 4};
    /* The Gs' socket I/O on the Ps' rings on odd seeds, with a CQ of 16
     * entries so that the bursts (sc_sched_io.c) go past it; through the
     * netpoller on even ones, or in a build without liburing. PT_FD_IO
     * and PT_RING_CQ, set by the user, win. */
    pt_sched_options opt = {.procs = o->threads,
                            .timers = mode,
                            .timer_slack = o->slack,
                            .fd_io = o->seed & 1 ? PT_FD_IO_URING : PT_FD_IO_POLL};
    if (opt.fd_io == PT_FD_IO_URING)
        setenv("PT_RING_CQ", "16", 0);
    int rc = pt_sched_create(&ss.s, &opt);
    if (rc == -ENOTSUP && opt.fd_io == PT_FD_IO_URING) {
        opt.fd_io = PT_FD_IO_POLL;
        rc = pt_sched_create(&ss.s, &opt);
    }
    if (rc != 0) {
        stress_violation(r, V_ERROR, -1, 0, "a scheduler", "pt_sched_create: %d", rc);
        return;
    }
    nsleepers = k;
    int nstop = (k + 1) / 2;
    sleepers = calloc((size_t)k, sizeof *sleepers);
    ss.tm = calloc((size_t)k, sizeof *ss.tm);
    ss.af = calloc((size_t)k, sizeof *ss.af);
    ss.tk = calloc((size_t)k, sizeof *ss.tk);
    ss.tw = calloc((size_t)ss.ntw, sizeof *ss.tw);
    struct ss_stopper *st = calloc((size_t)nstop, sizeof *st);
    struct ss_out *out = calloc((size_t)o->outsiders + 1, sizeof *out);
    if (!sleepers || !ss.tm || !ss.af || !ss.tk || !ss.tw || !st || !out)
        abort();
    for (int i = 0; i < ss.ntw; i++)
        if (!ss_tw_init(&ss.tw[i], &ss, seed_of(o, 8, i)))
            abort();
    for (int i = 0; i < k; i++) {
        struct ss_tm *m = &ss.tm[i];
        m->ss = &ss;
        m->rng = seed_of(o, 1, i);
        if (pt_chan_make(&m->poke, sizeof(int), 1) != 0)
            abort();
        ss.af[i] = (struct ss_af){.ss = &ss, .rng = seed_of(o, 2, i)};
        if (pt_chan_make(&ss.af[i].done, sizeof(pt_nanos), 4) != 0)
            abort();
        ss.tk[i] = (struct ss_tk){.ss = &ss, .rng = seed_of(o, 3, i)};
        sleepers[i] = (struct ss_sl){.ss = &ss, .rng = seed_of(o, 4, i)};
    }
    r->t0 = pt_nanotime();
    bool ok = true;
    for (int i = 0; i < k && ok; i++)
        ok = go(&ss, ss_tm_owner, &ss.tm[i]) && go(&ss, ss_af_owner, &ss.af[i]) &&
             go(&ss, ss_tk_owner, &ss.tk[i]) && go(&ss, sleeper, &sleepers[i]);
    for (int i = 0; i < ss.ntw && ok; i++) {
        ok = go(&ss, ss_tw_owner, &ss.tw[i]);
        for (int j = 0; j < SS_TW_WAITERS && ok; j++)
            ok = go(&ss, ss_tw_waiter, &ss.tw[i].w[j]);
    }
    for (int i = 0; i < nstop && ok; i++) {
        st[i] = (struct ss_stopper){.ss = &ss, .first = 2 * i, .rng = seed_of(o, 5, i)};
        ok = go(&ss, stopper, &st[i]);
    }
    ok = ok && ss_io_start(&ss, k, go);
    int nout = 0;
    for (; ok && nout < o->outsiders; nout++) {
        out[nout] = (struct ss_out){.ss = &ss, .rng = seed_of(o, 6, nout)};
        if (pthread_create(&out[nout].thread, NULL, outsider, &out[nout]) != 0)
            abort();
    }
    struct ss_main mm = {.ss = &ss, .rng = seed_of(o, 7, 0), .maxprocs = o->threads};
    stress_wait(r, r->t0 + o->duration, ss_scan, &mm);
    atomic_store(&ss.stop, 1);
    pt_sched_stats sst;
    pt_sched_read_stats(ss.s, &sst);
    r->io = sst.ring_requests ? "rings" : "netpoller";
    for (int i = 0; i < nout; i++)
        pthread_join(out[i].thread, NULL);
    ss_io_stop();
    /* Every G's loop blocks for a few ms at most, an AfterFunc's wait for
     * its latest deadline (50 ms away at most) plus the bound. */
    pt_nanos stopped = pt_nanotime();
    while (atomic_load(&ss.alive) > 0 &&
           !stress_overdue(r, stopped, pt_nanotime(), 100 * SS_MS + 2 * o->bound)) {
        ss_scan(&mm);
        stress_sleep(SS_MS);
    }
    if (atomic_load(&ss.alive) > 0) {
        stress_violation(r, V_LATE, -1, 0, "every G out of its loop once the run ended",
                         "%d still blocked %.0f ms later", atomic_load(&ss.alive),
                         (double)(pt_nanotime() - r->t0 - o->duration) / 1e6);
        return; /* a G parked for ever: the scheduler cannot be destroyed */
    }
    for (int i = 0; i < k; i++) {
        ss_tm_final(&ss.tm[i]);
        ss_af_final(&ss.af[i]);
        ss_tk_final(&ss.tk[i]);
        pt_chan_free(ss.tm[i].poke);
        pt_chan_free(ss.af[i].done);
    }
    for (int i = 0; i < ss.ntw; i++)
        ss_tw_final(&ss.tw[i]);
    ss_io_free();
    rc = pt_sched_wait(ss.s);
    if (rc == 0)
        rc = pt_sched_destroy(ss.s);
    if (rc != 0)
        stress_violation(r, V_ERROR, -1, 0, "the scheduler to wind down", "%d", rc);
    free(sleepers);
    free(ss.tm);
    free(ss.af);
    free(ss.tk);
    free(ss.tw);
    free(st);
    free(out);
    sleepers = NULL;
    /* Per-P modes only: the process's TimerThread keeps its task pool and its
     * per-thread tables grown to the most ever in use, so in TimerThread
     * mode a run may leave it holding more blocks without leaking any. */
    long live = pt__alloc_live();
    if (rc == 0 && mode != PT_TIMERS_TIMERTHREAD && live != live0)
        stress_violation(r, V_LEAK, -1, 0, "every library block freed",
                         "%ld blocks before the run, %ld after", live0, live);
}
