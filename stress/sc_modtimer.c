/* modtimer (and move): Ps and outsiders hammer one set of timer objects
 * with arm (modify: each arming a new sequence number) and stop, and,
 * where the design has them, start and reset, which re-arm with the last
 * arming's callback argument: its record then owes one more firing
 * (`extra`) at a deadline the record widens to cover both. Most timers are "exclusive": their
 * operations are serialised by the tool's own lock, so every answer can be matched to the arming it
 * is about. The last CONTENDED are hit by several threads at once with no lock of ours: there only
 * the totals can be judged (armings = firings + "was pending" answers). move adds Ps being removed
 * (their timers moved to P 0 with the engine's move hook, Go's moveTimers) and added back.
 *
 * Both add a probe: one more exclusive timer, armed only by the main
 * thread, onto a quiet P (pool.h) whose heap holds nothing else. Each of
 * its armings becomes that heap's earliest while the P sleeps far past
 * it, so unless the design wakes the P (ptimer's wake callback, Go's
 * wakeNetPoller), it fires late. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "pool.h"

#define CONTENDED 16

struct mt_timer {
    void *tm;
    pthread_mutex_t mu; /* exclusive timers: held across each operation */
    uint64_t cur;       /* exclusive: the last arming; guarded by mu */
    bool cur_live;      /* it may still be pending, as far as answers told */
    uint64_t late_seen; /* the arming last reported late (scan only) */
    _Atomic uint64_t next_seq;
    atomic_ullong armed, pending_answers, fired; /* contended totals */
    atomic_int in_cb;                            /* callbacks of it running now */
    /* Firings of re-arms still owed when their record was reused: a
     * firing too old for the ring pays one; at the end none may be left */
    atomic_uint owed;
    struct arm_rec ring[ARM_RING];
};

struct mt {
    struct stress_run *r;
    struct pool *pl;
    int n, nexcl;
    bool move;
    bool probe;         /* t[n] is the probe (not every design wakes an idle P) */
    uint64_t probe_rng; /* the main thread's */
    struct mt_timer *t;
};

static struct mt *mt_cur; /* the callback's context: one run at a time */

static void mt_check_fire(struct mt *m, uint64_t k, struct arm_rec *a, uint64_t seq, pt_nanos now,
                          pt_nanos when, uint64_t w);

static void mt_fire(void *arg)
{
    struct mt *m = mt_cur;
    uint64_t k = arg_timer(arg), seq = arg_seq(arg);
    struct mt_timer *t = &m->t[k];
    struct arm_rec *a = &t->ring[seq % ARM_RING];
    pt_nanos now = pt_nanotime();
    pt_nanos when = atomic_load(&a->when);
    uint64_t w = atomic_load(&a->word);
    atomic_fetch_add_explicit(&m->r->firings, 1, memory_order_relaxed);
    atomic_fetch_add(&t->fired, 1);
    atomic_fetch_add(&t->in_cb, 1);
    /* One callback in eight takes 50 us, so that a stop_sync that does not
     * wait for it is seen returning while it runs. */
    if (seq % 8 == 0)
        while (pt_nanotime() - now < 50000)
            ;
    mt_check_fire(m, k, a, seq, now, when, w);
    atomic_fetch_sub(&t->in_cb, 1);
}

/* One of the record's owed re-arm firings, if it has one. */
static bool take_extra(struct arm_rec *a)
{
    unsigned e = atomic_load(&a->extra);
    while (e > 0)
        if (atomic_compare_exchange_weak(&a->extra, &e, e - 1))
            return true;
    return false;
}

static void mt_check_fire(struct mt *m, uint64_t k, struct arm_rec *a, uint64_t seq, pt_nanos now,
                          pt_nanos when, uint64_t w)
{
    for (;;) {
        if ((w & 0xff) == A_OPENING && w >> 8 != seq) {
            /* the record is being reused: its owed firings are on their
             * way to the timer's count (arm_open_owing) */
            sched_yield();
            w = atomic_load(&a->word);
            continue;
        }
        if (w >> 8 != seq) {
            unsigned o = atomic_load(&m->t[k].owed);
            while (o > 0 && !atomic_compare_exchange_weak(&m->t[k].owed, &o, o - 1))
                ;
            atomic_fetch_add(&m->r->untracked, 1);
            return;
        }
        enum arm_state s = w & 0xff;
        if ((s == A_FIRED || s == A_STOPPED || s == A_SUPERSEDED) && take_extra(a)) {
            /* a start or reset of this arming, which had ended */
            atomic_store(&a->fired_at, now);
            if (s == A_FIRED || atomic_compare_exchange_weak(&a->word, &w, arm_word(seq, A_FIRED)))
                break;
            atomic_fetch_add(&a->extra, 1); /* the word moved: look again */
            continue;
        }
        if (s == A_FIRED || s == A_STOPPED || s == A_SUPERSEDED) {
            /* no extra left: unless the record was reused since w was
             * read (a callback held up past ARM_RING armings), whose
             * owed firing this one pays */
            uint64_t again = atomic_load(&a->word);
            if (again != w) {
                w = again;
                continue;
            }
        }
        if (s == A_FIRED) {
            stress_violation(m->r, V_DOUBLE, (long)k, seq, "one firing per arming",
                             "fired again %.3f ms after its deadline", (double)(now - when) / 1e6);
            return;
        }
        if (s == A_STOPPED || s == A_SUPERSEDED) {
            stress_violation(m->r, s == A_STOPPED ? V_FIRED_STOPPED : V_FIRED_SUPERSEDED, (long)k,
                             seq,
                             s == A_STOPPED ? "no firing (a stop returned 1 for it)"
                                            : "no firing (an arm returned 1: it replaced it)",
                             "fired %.3f ms after its deadline", (double)(now - when) / 1e6);
            return;
        }
        atomic_store(&a->fired_at, now);
        if (atomic_compare_exchange_weak(&a->word, &w, arm_word(seq, A_FIRED)))
            break;
    }
    if (now < when)
        stress_violation(m->r, V_EARLY, (long)k, seq, "a firing at or after its deadline",
                         "fired %.3f ms early", (double)(when - now) / 1e6);
}

/* What an answer (1: was pending) says about exclusive timer k's arming
 * seq, checked against what its firing said. */
static void resolve(struct mt *m, uint64_t k, uint64_t seq, int answer, enum arm_state to)
{
    struct mt_timer *t = &m->t[k];
    enum arm_state seen;
    if (answer == 1) {
        /* after a start or reset answered as if nothing was pending, the
         * arming pending is that re-arm */
        if (take_extra(&t->ring[seq % ARM_RING]))
            return;
        if (!arm_move(t->ring, ARM_RING, seq, A_PENDING, to, &seen) && seen == A_FIRED)
            stress_violation(m->r, to == A_STOPPED ? V_FIRED_STOPPED : V_FIRED_SUPERSEDED, (long)k,
                             seq, "no firing of an arming that was still pending",
                             "%s returned 1 after it had fired", to == A_STOPPED ? "stop" : "arm");
    } else {
        (void)arm_move(t->ring, ARM_RING, seq, A_PENDING, A_CLAIMED, &seen);
    }
}

static pt_nanos pick_when(uint64_t x, pt_nanos now)
{
    switch (x % 16) {
    case 0:
        return now; /* due at once */
    case 1:
    case 2:
        return now + 20000000 + (pt_nanos)(x >> 8) % 1000000000; /* far: later moved earlier */
    default:
        return now + (pt_nanos)(x >> 8) % 2000000;
    }
}

/* Arms exclusive timer k (its mu held) onto th's heap at `when`, and
 * judges the answer against the arming it replaced. */
/* A firing still owed to exclusive timer k's record c past its deadline
 * and the bound: at the end, and (an arming's own, not its re-arms',
 * which go to the timer's count) when the record is about to be reused. */
static void mt_owed(struct mt *m, uint64_t k, struct arm_rec *c, pt_nanos now, bool rearms)
{
    pt_nanos bound = m->r->o->bound;
    uint64_t w = atomic_load(&c->word);
    if ((w & 0xff) == A_CLAIMED && stress_overdue(m->r, atomic_load(&c->when), now, bound))
        stress_violation(
            m->r, V_UNFIRED, (long)k, w >> 8, "a firing (a stop or arm returned 0: not pending)",
            "never fired; deadline %.3f ms ago", (double)(now - atomic_load(&c->when)) / 1e6);
    if (rearms && atomic_load(&c->extra) > 0 &&
        stress_overdue(m->r, atomic_load(&c->when_hi), now, bound))
        stress_violation(m->r, V_UNFIRED, (long)k, w >> 8,
                         "a firing of each start or reset no answer said replaced",
                         "%u never fired; deadline %.3f ms ago", atomic_load(&c->extra),
                         (double)(now - atomic_load(&c->when_hi)) / 1e6);
}

static void mt_arm_excl(struct mt *m, void *th, uint64_t k, pt_nanos when)
{
    struct mt_timer *t = &m->t[k];
    uint64_t seq = ++t->next_seq;
    struct arm_rec *old = &t->ring[seq % ARM_RING];
    mt_owed(m, k, old, pt_nanotime(), false);
    arm_open_owing(t->ring, ARM_RING, seq, when, 0, &t->owed);
    int a = m->r->eng->tm_arm(th, t->tm, when, 0, arm_arg(k, seq));
    if (a < 0) {
        stress_violation(m->r, V_ERROR, (long)k, seq, "an arm to succeed", "%d", a);
        return;
    }
    if (t->cur_live)
        resolve(m, k, t->cur, a, A_SUPERSEDED);
    else if (a == 1)
        stress_violation(m->r, V_COUNT, (long)k, t->cur, "arm to return 0 (nothing armed)",
                         "arm returned 1");
    t->cur = seq;
    t->cur_live = true;
}

/* Re-arms exclusive timer k (its mu held) at `when` with the design's
 * start or reset, which keep the last arming's argument: that arming's
 * record owes one more firing, and may see it as early as the earlier of
 * the two deadlines, as late as the later, unless the answer says a
 * pending arming was replaced (reset: 1) or nothing happened (start:
 * -EBUSY, which only a pending arming may answer). */
static void mt_rearm_excl(struct mt *m, void *th, uint64_t k, pt_nanos when, bool reset)
{
    const struct pt_engine *eng = m->r->eng;
    struct mt_timer *t = &m->t[k];
    uint64_t seq = t->cur;
    struct arm_rec *a = &t->ring[seq % ARM_RING];
    if (atomic_load(&a->when) > when)
        atomic_store(&a->when, when);
    if (atomic_load(&a->when_hi) < when)
        atomic_store(&a->when_hi, when);
    /* before the call: nothing owed and the arming over means nothing
     * can be pending (after it, a pending arming may just have fired) */
    uint64_t before = atomic_load(&a->word);
    bool over = atomic_load(&a->extra) == 0 && before >> 8 == seq && (before & 0xff) != A_PENDING;
    atomic_fetch_add(&a->extra, 1);
    int r = reset ? eng->tm_reset(th, t->tm, when) : eng->tm_start(th, t->tm, when);
    if (r < 0 && r != -EBUSY) {
        stress_violation(m->r, V_ERROR, (long)k, seq, "a re-arm to succeed", "%d", r);
        (void)take_extra(a);
        return;
    }
    if ((reset && r == 1) || (!reset && r == -EBUSY)) {
        /* one arming pending, as before: nothing more is owed */
        if (!take_extra(a))
            stress_violation(m->r, V_DOUBLE, (long)k, seq, "one firing per arming",
                             "%s answered %d (an arming pending), yet both armings fired",
                             reset ? "reset" : "start", r);
        enum arm_state s = before & 0xff;
        if (over)
            stress_violation(m->r, V_COUNT, (long)k, seq, "an answer that nothing was pending",
                             "%s answered %d, its last arming %s", reset ? "reset" : "start", r,
                             s == A_FIRED     ? "fired"
                             : s == A_STOPPED ? "stopped"
                                              : "ended");
    }
    t->cur_live = true;
}

static void mt_op(struct pworker *w)
{
    struct mt *m = w->pl->sc;
    const struct pt_engine *eng = m->r->eng;
    uint64_t x = pt__xorshift64(&w->rng);
    bool contended = m->nexcl < m->n && x % 4 == 0;
    uint64_t k = contended ? (uint64_t)m->nexcl + (x >> 2) % (uint64_t)(m->n - m->nexcl)
                           : (x >> 2) % (uint64_t)m->nexcl;
    struct mt_timer *t = &m->t[k];
    bool stop = (x >> 40) % 8 < 3;
    if (contended) {
        int a;
        if (stop) {
            a = eng->tm_stop(t->tm);
        } else {
            uint64_t seq = atomic_fetch_add(&t->next_seq, 1) + 1;
            pt_nanos when = pick_when(pt__xorshift64(&w->rng), pt_nanotime());
            arm_open(t->ring, ARM_RING, seq, when, 0);
            a = eng->tm_arm(w->th, t->tm, when, 0, arm_arg(k, seq));
            if (a < 0) {
                stress_violation(m->r, V_ERROR, (long)k, seq, "an arm to succeed", "%d", a);
                return;
            }
            atomic_fetch_add(&t->armed, 1);
        }
        atomic_fetch_add(&t->pending_answers, (unsigned)(a == 1));
        return;
    }
    pthread_mutex_lock(&t->mu);
    if (stop) {
        int a = eng->tm_stop(t->tm);
        int running = atomic_load(&t->in_cb);
        if (engine_has(eng, PT_ENGINE_STOP_WAITS) && running)
            stress_violation(m->r, V_SYNC, (long)k, t->cur,
                             "no callback of the timer running once stop returned", "%d running",
                             running);
        if (t->cur_live)
            resolve(m, k, t->cur, a, A_STOPPED);
        else if (a == 1)
            stress_violation(m->r, V_COUNT, (long)k, t->cur, "stop to return 0 (nothing armed)",
                             "stop returned 1");
        t->cur_live = false;
    } else if (t->cur != 0 && eng->tm_start && (x >> 40) % 8 < 5) {
        /* a re-arm that keeps the last arming's argument */
        mt_rearm_excl(m, w->th, k, pick_when(pt__xorshift64(&w->rng), pt_nanotime()),
                      (x >> 44) % 2 == 0);
    } else {
        mt_arm_excl(m, w->th, k, pick_when(pt__xorshift64(&w->rng), pt_nanotime()));
    }
    pthread_mutex_unlock(&t->mu);
}

/* Now and then a P sleeps for twice the bound: a timer that another thread
 * makes its earliest must wake it (the design's wake callback), or it
 * fires late. In move, a P other than 0 may instead be removed: its timers
 * go to P 0, and it comes back a few ms later. */
static void mt_round(struct pworker *w)
{
    struct mt *m = w->pl->sc;
    const struct pt_engine *eng = m->r->eng;
    uint64_t x = pt__xorshift64(&w->rng);
    if (m->move && w->id > 0 && x % 16 == 0) {
        pool_move(w);
        stress_sleep((pt_nanos)(1 + (x >> 8) % 4) * 1000000);
        return;
    }
    if (x % 512 == 1)
        eng->idle(w->th, pool_until(w->pl, pt_nanotime() + 2 * m->r->o->bound));
}

/* The probe's next arming (main thread, every scan): when the last one
 * has fired, a new one due in 1-4 ms, or far (1 s) to be moved earlier by
 * the next scan; both make it the quiet P's earliest, the first through
 * an add, the second through a modify (ModifiedEarlier). */
static void mt_probe(struct mt *m)
{
    uint64_t k = (uint64_t)m->n;
    struct mt_timer *t = &m->t[k];
    pthread_mutex_lock(&t->mu);
    pt_nanos now = pt_nanotime(), when = 0;
    uint64_t x = pt__xorshift64(&m->probe_rng);
    struct arm_rec *a = &t->ring[t->cur % ARM_RING];
    bool pending = t->cur_live && atomic_load(&a->word) == arm_word(t->cur, A_PENDING);
    if (!pending)
        when = now + (x % 4 ? 1000000 + (pt_nanos)(x >> 8) % 3000000 : 1000000000);
    else if (atomic_load(&a->when) > now + 5000000)
        when = now + 1000000;
    if (when) {
        mt_arm_excl(m, pool_quiet_th(m->pl), k, when);
        atomic_fetch_add_explicit(&m->r->ops, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&t->mu);
}

/* Exclusive timer k's current arming, pending past its bound. */
static void mt_late(struct mt *m, int k, pt_nanos now)
{
    struct mt_timer *t = &m->t[k];
    if (pthread_mutex_trylock(&t->mu) != 0)
        return;
    struct arm_rec *a = &t->ring[t->cur % ARM_RING];
    pt_nanos by = atomic_load(&a->when_hi); /* a re-arm's: the later deadline */
    if (t->cur_live && t->late_seen != t->cur &&
        (atomic_load(&a->word) == arm_word(t->cur, A_PENDING) || atomic_load(&a->extra) > 0) &&
        stress_overdue(m->r, by, now, m->r->o->bound)) {
        t->late_seen = t->cur;
        stress_violation(m->r, V_LATE, k, t->cur, "a firing within the bound",
                         "still pending %.3f ms after its deadline%s", (double)(now - by) / 1e6,
                         k == m->n ? " (the probe: its P was not woken)" : "");
    }
    pthread_mutex_unlock(&t->mu);
}

static void mt_scan(void *vm)
{
    struct mt *m = vm;
    if (m->probe)
        mt_probe(m);
    pt_nanos now = pt_nanotime();
    for (int k = 0; k < m->nexcl; k++)
        mt_late(m, k, now);
    if (m->probe)
        mt_late(m, m->n, now);
}

static void mt_final(struct pool *pl)
{
    struct mt *m = pl->sc;
    const struct pt_engine *eng = m->r->eng;
    pt_nanos now = pt_nanotime(), bound = m->r->o->bound;
    for (int k = 0; k < m->n + m->probe; k++) {
        struct mt_timer *t = &m->t[k];
        int a = eng->tm_stop(t->tm);
        if (k >= m->nexcl && k < m->n) {
            uint64_t armed = atomic_load(&t->armed), fired = atomic_load(&t->fired);
            uint64_t said = atomic_load(&t->pending_answers) + (a == 1);
            /* stop_sync also stops an arming made while it ran, without
             * saying so (ptimer.h): with it, only a bound holds. */
            if (engine_has(eng, PT_ENGINE_STOP_WAITS) ? armed < fired + said : armed != fired + said)
                stress_violation(m->r, V_COUNT, k, 0, "armings = firings + \"was pending\" answers",
                                 "%llu armings, %llu firings, %llu answers of 1",
                                 (unsigned long long)armed, (unsigned long long)fired,
                                 (unsigned long long)said);
            continue;
        }
        if (t->cur_live) {
            struct arm_rec *c = &t->ring[t->cur % ARM_RING];
            if (a == 1 && t->late_seen != t->cur &&
                stress_overdue(m->r, atomic_load(&c->when_hi), now, bound))
                stress_violation(m->r, V_LATE, k, t->cur, "a firing within the bound",
                                 "still pending at the end, %.3f ms after its deadline",
                                 (double)(now - atomic_load(&c->when_hi)) / 1e6);
            resolve(m, (uint64_t)k, t->cur, a, A_STOPPED);
            t->cur_live = false;
        }
        for (unsigned i = 0; i < ARM_RING; i++)
            mt_owed(m, k, &t->ring[i], now, true);
        if (atomic_load(&t->owed) > 0)
            stress_violation(m->r, V_UNFIRED, k, 0,
                             "a firing of each start or reset no answer said replaced",
                             "%u never fired (their records since reused)", atomic_load(&t->owed));
    }
}

static void mt_cleanup(struct pool *pl)
{
    struct mt *m = pl->sc;
    for (int k = 0; k < m->n + m->probe; k++) {
        m->r->eng->tm_free(m->t[k].tm);
        pthread_mutex_destroy(&m->t[k].mu);
    }
}

/* The timers, from the instance: an engine may keep them in its own. */
static void mt_setup(struct pool *pl)
{
    struct mt *m = pl->sc;
    for (int k = 0; k < m->n + m->probe; k++) {
        pthread_mutex_init(&m->t[k].mu, NULL);
        m->t[k].tm = m->r->eng->tm_new(m->r->e);
        if (!m->t[k].tm)
            abort();
    }
}

static void mt_run(struct stress_run *r, bool move)
{
    const struct stress_opts *o = r->o;
    struct mt m = {.r = r, .n = o->timers < 2 ? 2 : o->timers, .move = move};
    m.nexcl = m.n >= 2 * CONTENDED ? m.n - CONTENDED : m.n;
    m.probe = !engine_has(r->eng, PT_ENGINE_IDLE_MISSES_REMOTE);
    m.probe_rng = o->seed * 0x2545f4914f6cdd1dull + 7;
    m.t = calloc((size_t)(m.n + 1), sizeof *m.t);
    if (!m.t)
        abort();
    mt_cur = &m;
    struct pool pl = {
        .r = r,
        .np = o->threads,
        .nout = o->outsiders,
        .sc = &m,
        .op = mt_op,
        .p_round = mt_round,
        .scan = mt_scan,
        .final = mt_final,
        .setup = mt_setup,
        .cleanup = mt_cleanup,
        .cb = mt_fire,
        .drain = STRESS_DRAIN,
        .quiet = m.probe,
    };
    m.pl = &pl;
    pool_run(&pl);
    mt_cur = NULL;
    free(m.t);
}

void sc_modtimer(struct stress_run *r)
{
    mt_run(r, false);
}
void sc_move(struct stress_run *r)
{
    mt_run(r, true);
}
