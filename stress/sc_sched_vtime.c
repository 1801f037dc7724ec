/* vtime: the scheduler on its virtual clock (pt_sched_options
 * .virtual_time), in one of its three timer modes, with exact oracles.
 * The clock moves only when every G is durably blocked, and then to the
 * next timer, so nothing here is allowed a bound: a wake, a tick, a
 * timeout or an AfterFunc at any time but the one promised is a bug.
 *  - sleepers: pt_sleep and pt_sleep_until wake at exactly their
 *    deadline; a G that runs (spins in real time, yields) sees the clock
 *    stand still meanwhile;
 *  - Timer owners: a select on the Timer's channel, a poke channel other
 *    Gs send to and a deadline of its own ends at the first of the three,
 *    exactly then, and the value is the Timer's due time; Stop answers 1
 *    exactly when the value was not received, and nothing is received
 *    after it;
 *  - Ticker readers: every tick, the previous one plus the period, read
 *    at its time (the reader is always back before the next), across
 *    resets to a new period;
 *  - AfterFunc owners: f runs at its due time exactly; one stopped before
 *    that (Stop answers 1) never runs, which a receive with a deadline
 *    past the due time shows by timing out exactly at it;
 *  - a settler: hands a listener G a value, settles (pt_sched_settle),
 *    then finds the listener has taken it, with the clock unmoved;
 *  - a descriptor reader: a plain thread writes its socket some real
 *    microseconds later, and the clock must not move while the G waits
 *    (its wait is not durable), even past the read's own deadline;
 *  - the main thread sets a new number of Ps every 10 ms or so, as in
 *    the sched scenario, and at the end the scheduler must wind down
 *    with every G finished, never report a deadlock. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "sc_sched.h"

struct vt;

struct vt_g {
    struct vt *vt;
    long idx;
    uint64_t rng, seq;
    pt_chan *poke; /* Timer owners: what pokers send to */
    pt_chan *done; /* AfterFunc owners: f's time */
};

struct vt {
    struct stress_run *r;
    pt_sched *s;
    atomic_int stop;
    int n;                /* Gs of each kind */
    struct vt_g *sl, *tm, *tk, *af, *pk;
    pt_chan *listen;      /* the settler's values to the listener */
    _Atomic uint64_t heard; /* the listener's last value */
    int sv[2];            /* the descriptor reader's socketpair */
    atomic_int want;      /* the reader asks the writer thread for a byte */
    atomic_int read_done; /* the reader has left its loop: the writer may go */
    pthread_t writer;
    struct vt_g *all;
    atomic_int started;
};

static void bad(struct vt_g *g, enum viol_kind k, const char *expected, const char *what,
                pt_nanos got, pt_nanos want)
{
    stress_violation(g->vt->r, k, g->idx, g->seq, expected, "%s: at %+.6f ms of %.6f ms", what,
                     (double)(got - want) / 1e6, (double)(want - PT_VIRTUAL_EPOCH) / 1e6);
}

/* got must be want exactly: earlier is V_EARLY, later V_LATE. */
static void exact(struct vt_g *g, const char *what, pt_nanos got, pt_nanos want)
{
    if (got != want)
        bad(g, got < want ? V_EARLY : V_LATE, "exactly the promised virtual time", what, got,
            want);
}

static bool stopping(struct vt_g *g)
{
    return atomic_load_explicit(&g->vt->stop, memory_order_relaxed);
}

static void count(struct vt_g *g, bool fired)
{
    atomic_fetch_add_explicit(&g->vt->r->ops, 1, memory_order_relaxed);
    if (fired)
        atomic_fetch_add_explicit(&g->vt->r->firings, 1, memory_order_relaxed);
}

/* ---- sleepers ----------------------------------------------------------- */

static void vt_sleeper(void *arg)
{
    struct vt_g *g = arg;
    while (!stopping(g)) {
        uint64_t x = pt__xorshift64(&g->rng);
        g->seq++;
        if (x % 16 == 3) {
            /* running, in real time: nobody is blocked, the clock stands */
            pt_nanos t0 = pt_time_now(), until = pt_nanotime() + 50000;
            while (pt_nanotime() < until)
                if (x & 64)
                    pt_yield();
            pt_nanos t1 = pt_time_now();
            if (t1 != t0)
                bad(g, V_INVARIANT, "the clock still while a G runs", "moved", t1, t0);
            continue;
        }
        pt_nanos d = ss_pick_d(x >> 4), t0 = pt_time_now();
        if (x & 32)
            pt_sleep(d);
        else
            pt_sleep_until(t0 + d);
        exact(g, "a sleep's wake", pt_time_now(), d > 0 ? t0 + d : t0);
        count(g, true);
    }
}

/* ---- Timer owners and their pokers ------------------------------------- */

static void vt_timer_owner(void *arg)
{
    struct vt_g *g = arg;
    pt_time_timer *t;
    if (pt_time_timer_new(&t, 3600 * (pt_nanos)1000000000) != 0) {
        bad(g, V_ERROR, "a Timer", "pt_time_timer_new failed", 0, 0);
        return;
    }
    (void)pt_time_timer_stop(t);
    while (!stopping(g)) {
        uint64_t x = pt__xorshift64(&g->rng);
        g->seq++;
        pt_nanos d = ss_pick_d(x), t0 = pt_time_now(), due = d > 0 ? t0 + d : t0;
        /* its own deadline: before the value, after it, at it, or none */
        pt_nanos dl = 0;
        switch ((x >> 8) % 4) {
        case 0:
            dl = t0 + 1 + (pt_nanos)((x >> 16) % (4 * SS_MS));
            break;
        case 1:
            dl = due;
            break;
        case 2:
            dl = due + 1 + (pt_nanos)((x >> 16) % SS_MS);
            break;
        }
        if (pt_time_timer_reset(t, d) < 0) {
            bad(g, V_ERROR, "a reset", "pt_time_timer_reset failed", 0, 0);
            break;
        }
        pt_nanos v = 0;
        int one = 0;
        pt_select_case k[2] = {{pt_time_timer_chan(t), PT_RECV, &v, false},
                               {g->poke, PT_RECV, &one, false}};
        int got = pt_select(k, 2, dl, true);
        pt_nanos t1 = pt_time_now();
        if (got == 0) {
            exact(g, "a Timer's value", v, due);
            exact(g, "a Timer's value received", t1, due);
            if (dl && dl < due)
                bad(g, V_LATE, "the select's deadline first", "the value came after it", t1, dl);
        } else if (got == -ETIMEDOUT) {
            exact(g, "a select's timeout", t1, dl);
            if (dl > due)
                bad(g, V_LATE, "the value before the deadline", "timed out after the value",
                    t1, due);
        } else if (got == 1) {
            if (t1 > due || (dl && t1 > dl))
                bad(g, V_LATE, "the poke before the value and the deadline", "poked after",
                    t1, dl && dl < due ? dl : due);
        } else {
            bad(g, V_ERROR, "a select's answer", "pt_select failed", got, 0);
        }
        int st = pt_time_timer_stop(t);
        if (got == 0 && st != 0)
            bad(g, V_FIRED_STOPPED, "Stop 0 after the value was received", "Stop said 1", t1,
                due);
        else if (got != 0 && st != 1)
            bad(g, V_UNFIRED, "Stop 1 while the value was not received", "Stop said 0", t1, due);
        if (pt_chan_try_recv(pt_time_timer_chan(t), &v) == 1)
            bad(g, V_FIRED_STOPPED, "nothing after Stop", "a value received after it", v, due);
        count(g, got == 0);
    }
    pt_time_timer_free(t);
}

static void vt_poker(void *arg)
{
    struct vt_g *g = arg;
    struct vt *vt = g->vt;
    while (!stopping(g)) {
        uint64_t x = pt__xorshift64(&g->rng);
        pt_sleep((pt_nanos)(x % (3 * SS_MS)));
        int one = 1;
        (void)pt_chan_try_send(vt->tm[(x >> 32) % (uint64_t)vt->n].poke, &one);
    }
}

/* ---- Ticker readers ------------------------------------------------------- */

static pt_nanos pick_period(uint64_t x)
{
    return 100000 + (pt_nanos)(x % (2 * SS_MS));
}

static void vt_ticker(void *arg)
{
    struct vt_g *g = arg;
    pt_time_ticker *tk;
    pt_nanos period = pick_period(g->rng), last = pt_time_now();
    if (pt_time_ticker_new(&tk, period) != 0) {
        bad(g, V_ERROR, "a Ticker", "pt_time_ticker_new failed", 0, 0);
        return;
    }
    while (!stopping(g)) {
        uint64_t x = pt__xorshift64(&g->rng);
        g->seq++;
        if (x % 64 == 0) {
            period = pick_period(x >> 8);
            last = pt_time_now();
            if (pt_time_ticker_reset(tk, period) != 0) {
                bad(g, V_ERROR, "a reset", "pt_time_ticker_reset failed", 0, 0);
                break;
            }
        }
        pt_nanos v = 0;
        if (pt_chan_recv(pt_time_ticker_chan(tk), &v) != 1) {
            bad(g, V_ERROR, "a tick", "the Ticker's channel closed", 0, 0);
            break;
        }
        pt_nanos t1 = pt_time_now();
        if (v != last + period)
            bad(g, v < last + period ? V_BURST : V_PHASE, "the tick one period after the last",
                "a tick", v, last + period);
        exact(g, "a tick received", t1, v);
        last = v;
        count(g, true);
    }
    pt_time_ticker_free(tk);
}

/* ---- AfterFunc owners ------------------------------------------------------ */

static void vt_af_fire(void *arg)
{
    struct vt_g *g = arg;
    pt_nanos now = pt_time_now();
    if (pt_chan_try_send(g->done, &now) != 0)
        bad(g, V_DOUBLE, "one f per arming", "f's note found the last one unread", now, 0);
}

static void vt_af_owner(void *arg)
{
    struct vt_g *g = arg;
    while (!stopping(g)) {
        uint64_t x = pt__xorshift64(&g->rng);
        g->seq++;
        pt_nanos d = ss_pick_d(x), t0 = pt_time_now(), due = d > 0 ? t0 + d : t0;
        pt_time_timer *t;
        if (pt_time_after_func(&t, d, vt_af_fire, g) != 0) {
            bad(g, V_ERROR, "an AfterFunc", "pt_time_after_func failed", 0, 0);
            break;
        }
        bool stop = d > 1 && (x >> 8) % 3 == 0;
        if (stop) {
            pt_sleep((pt_nanos)((x >> 16) % (uint64_t)(d - 1)) + 1); /* before its time */
            if (pt_time_timer_stop(t) != 1)
                bad(g, V_UNFIRED, "Stop 1 before f's time", "Stop said 0", pt_time_now(), due);
        }
        pt_nanos ran = 0, wait_dl = due + SS_MS;
        int got = pt_chan_recv_until(g->done, &ran, wait_dl);
        pt_nanos t1 = pt_time_now();
        if (stop) {
            if (got == 1)
                bad(g, V_FIRED_STOPPED, "no f after Stop said 1", "f ran", ran, due);
            else
                exact(g, "the wait for a stopped f", t1, wait_dl);
        } else if (got != 1) {
            bad(g, V_LATE, "f by its time", "f never ran", t1, due);
        } else {
            exact(g, "f's run", ran, due);
        }
        pt_time_timer_free(t);
        count(g, !stop);
    }
}

/* ---- settle ------------------------------------------------------------------ */

static void vt_listener(void *arg)
{
    struct vt_g *g = arg;
    uint64_t v;
    while (pt_chan_recv(g->vt->listen, &v) == 1)
        atomic_store(&g->vt->heard, v);
}

static void vt_settler(void *arg)
{
    struct vt_g *g = arg;
    struct vt *vt = g->vt;
    while (!stopping(g)) {
        uint64_t x = pt__xorshift64(&g->rng);
        pt_sleep((pt_nanos)(x % (2 * SS_MS)));
        g->seq++;
        (void)pt_chan_send(vt->listen, &g->seq);
        pt_nanos t0 = pt_time_now();
        int rc = pt_sched_settle();
        pt_nanos t1 = pt_time_now();
        if (rc != 0)
            bad(g, V_ERROR, "settle to succeed (one settler)", "pt_sched_settle failed", rc, 0);
        else if (atomic_load(&vt->heard) != g->seq)
            bad(g, V_INVARIANT, "the listener done with the value once settled",
                "it had not taken it", t1, t0);
        if (t1 != t0)
            bad(g, V_INVARIANT, "the clock unmoved by settle", "moved", t1, t0);
        count(g, false);
    }
    pt_chan_close(vt->listen);
}

/* ---- a descriptor wait holds the clock ---------------------------------------- */

static void *vt_writer(void *arg)
{
    struct vt *vt = arg;
    while (!atomic_load(&vt->read_done)) {
        if (!atomic_exchange(&vt->want, 0)) {
            stress_sleep(20000);
            continue;
        }
        stress_sleep(100000); /* real time the reader's clock must not see */
        char b = 1;
        if (write(vt->sv[1], &b, 1) != 1)
            abort();
    }
    return NULL;
}

static void vt_reader(void *arg)
{
    struct vt_g *g = arg;
    struct vt *vt = g->vt;
    while (!stopping(g)) {
        uint64_t x = pt__xorshift64(&g->rng);
        pt_sleep(SS_MS + (pt_nanos)(x % (8 * SS_MS)));
        g->seq++;
        pt_nanos t0 = pt_time_now();
        atomic_store(&vt->want, 1);
        char b;
        /* its deadline is 1 virtual ns away: still it must not pass */
        ssize_t n = pt_fd_read(vt->sv[0], &b, 1, x & 1 ? t0 + 1 : 0);
        pt_nanos t1 = pt_time_now();
        if (n != 1)
            bad(g, n == -ETIMEDOUT ? V_LATE : V_ERROR, "the byte, the clock held",
                "the read failed", t1, t0);
        if (t1 != t0)
            bad(g, V_INVARIANT, "the clock held by a descriptor wait", "moved", t1, t0);
        count(g, false);
    }
    atomic_store(&vt->read_done, 1);
}

/* ---- the run ------------------------------------------------------------------- */

struct vt_main {
    struct vt *vt;
    uint64_t rng;
    int maxprocs;
};

static void vt_scan(void *arg)
{
    struct vt_main *mm = arg;
    uint64_t x = pt__xorshift64(&mm->rng);
    if (x % 3 == 0) {
        int rc = pt_sched_set_procs(mm->vt->s, 1 + (int)((x >> 8) % (uint64_t)mm->maxprocs));
        if (rc != 0)
            stress_violation(mm->vt->r, V_ERROR, -1, 0, "set_procs to succeed", "%d", rc);
    }
}

static uint64_t seed_of(const struct stress_opts *o, int kind, long i)
{
    return o->seed * 0x9e3779b97f4a7c15ull + (uint64_t)kind * 0xbf58476d1ce4e5b9ull +
           (uint64_t)i * 0x94d049bb133111ebull + 1;
}

/* Gs of one kind: n of them, g[i] handed to fn. */
static bool start(struct vt *vt, struct vt_g *g, int n, int kind, void (*fn)(void *))
{
    for (int i = 0; i < n; i++) {
        g[i].vt = vt;
        g[i].idx = kind * 1000 + i;
        g[i].rng = seed_of(vt->r->o, kind, i);
        int rc = pt_go(vt->s, fn, &g[i]);
        if (rc != 0) {
            stress_violation(vt->r, V_ERROR, -1, 0, "pt_go to succeed", "%d", rc);
            return false;
        }
    }
    return true;
}

/* The first G: the channels, then every other G. started: 1, or -1 if
 * something could not be made or started. */
static void vt_first(void *arg)
{
    struct vt *vt = arg;
    int n = vt->n;
    struct vt_g *all = vt->all;
    vt->sl = all;
    vt->tm = all + n;
    vt->tk = all + 2 * n;
    vt->af = all + 3 * n;
    vt->pk = all + 4 * n;
    struct vt_g *one = all + 5 * n; /* listener, settler, reader */
    if (pt_chan_make(&vt->listen, sizeof(uint64_t), 0) != 0)
        abort();
    for (int i = 0; i < n; i++)
        if (pt_chan_make(&vt->tm[i].poke, sizeof(int), 1) != 0 ||
            pt_chan_make(&vt->af[i].done, sizeof(pt_nanos), 1) != 0)
            abort();
    bool ok = start(vt, vt->sl, n, 1, vt_sleeper) && start(vt, vt->tm, n, 2, vt_timer_owner) &&
              start(vt, vt->tk, n, 3, vt_ticker) && start(vt, vt->af, n, 4, vt_af_owner) &&
              start(vt, vt->pk, n, 5, vt_poker) && start(vt, one, 1, 6, vt_listener) &&
              start(vt, one + 1, 1, 7, vt_settler) && start(vt, one + 2, 1, 8, vt_reader);
    if (!ok) /* the listener may have started and the settler not */
        (void)pt_chan_close(vt->listen);
    atomic_store(&vt->started, ok ? 1 : -1);
}

void sc_sched_vtime(struct stress_run *r)
{
    const struct stress_opts *o = r->o;
    int n = o->timers / 8 < 2 ? 2 : o->timers / 8;
    struct vt vt = {.r = r, .n = n};
    pt_sched_options opt = {.procs = o->threads,
                            .timers = stress_sched_mode(r->eng),
                            .virtual_time = true};
    int rc = pt_sched_create(&vt.s, &opt);
    if (rc != 0) {
        stress_violation(r, V_ERROR, -1, 0, "a scheduler", "pt_sched_create: %d", rc);
        return;
    }
    struct vt_g *all = calloc((size_t)(5 * n + 3), sizeof *all);
    if (!all || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, vt.sv) != 0)
        abort();
    vt.all = all;
    if (pthread_create(&vt.writer, NULL, vt_writer, &vt) != 0)
        abort();
    r->t0 = pt_nanotime();
    /* The channels are made by a G: a wait on one a plain thread made
     * would hold the clock (sched.h), and the run would stand still. */
    rc = pt_go(vt.s, vt_first, &vt);
    if (rc != 0)
        stress_violation(r, V_ERROR, -1, 0, "pt_go to succeed", "%d", rc);
    while (rc == 0 && !atomic_load(&vt.started))
        stress_sleep(SS_MS);
    bool ok = rc == 0 && atomic_load(&vt.started) == 1;
    if (!ok)
        atomic_store(&vt.read_done, 1); /* it may never have started */
    struct vt_main mm = {.vt = &vt, .rng = seed_of(o, 9, 0), .maxprocs = o->threads};
    if (ok)
        stress_wait(r, r->t0 + o->duration, vt_scan, &mm);
    atomic_store(&vt.stop, 1);
    /* Every G leaves its loop within 50 virtual ms, which take no real
     * time; a hang here is the watchdog's. */
    rc = pt_sched_wait(vt.s);
    if (rc == -ENOTRECOVERABLE) {
        const char *rep = pt_sched_deadlock_report(vt.s);
        stress_violation(r, V_HUNG, -1, 0, "every G finished, no deadlock", "%.600s",
                         rep ? rep : "(no report)");
    } else if (rc != 0) {
        stress_violation(r, V_ERROR, -1, 0, "the scheduler to wind down", "%d", rc);
    }
    pthread_join(vt.writer, NULL);
    (void)pt_fd_close(vt.sv[0]);
    rc = pt_sched_destroy(vt.s);
    if (rc != 0)
        stress_violation(r, V_ERROR, -1, 0, "the scheduler destroyed", "%d", rc);
    bool made = atomic_load(&vt.started) != 0; /* the first G made the channels */
    for (int i = 0; i < n && made; i++) {
        pt_chan_free(vt.tm[i].poke);
        pt_chan_free(vt.af[i].done);
    }
    if (made)
        pt_chan_free(vt.listen);
    close(vt.sv[1]);
    free(all);
}
