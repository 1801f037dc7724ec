/* ticker: tickers with periods of 1-5 ms, re-armed and stopped at random
 * (one operation per P per ms, so each lives a few periods), while Ps
 * stall now and then for 5-30 ms without running their timers, and, in a
 * design that can move timers, a P other than 0 now and then hands every
 * ticker it holds to P 0 (Go's moveTimers): a moved ticker keeps its
 * phase and period, which every check below then holds it to.
 *
 * Where the design says what each firing is for and when its check ran
 * (engine.h's tm_firing), a ticker is held to its schedule exactly: the
 * oracle computes the time each tick must name (the arming's when first,
 * then the first when + k*period after the check that ran the last one)
 * and checks
 *  - phase: the tick names that time, not one off the schedule, nor a
 *    later one (a tick owed, skipped: the ticker fell behind its rate);
 *  - burst: nor an earlier one (a tick a late check had passed, re-fired);
 *  - early: its check ran, and it calls, at or after that time;
 *  - late: its check came within the bound of that time, past the delays
 *    the run itself causes (a P's round, a stall that ended after it), and
 *    a live ticker's owed tick is never longer overdue than that.
 * Elsewhere (designs whose tickers are the harness's own), the looser
 * checks: tick n at or after when + n*period; never four ticks within one
 * period; a live ticker silent for no more than a period plus the same
 * limit as a check's.
 * Always:
 *  - tick-after-stop: at most the one tick already taken to run may call
 *    after a stop or re-arm returned;
 *  - ticks: no more than the periods the arming lived, plus that one; at
 *    least one if it lived past the bound;
 *  - memory: the design's entries (engine's held) bounded by the tickers:
 *    a stopped ticker's state is reclaimed, not kept until exit. */
#include <pthread.h>
#include <stdlib.h>

#include "pool.h"

struct tk_ticker {
    void *tm;
    pthread_mutex_t mu;
    uint64_t cur; /* guarded by mu */
    bool live;
    uint64_t late_seen, burst_seen;
    struct arm_rec ring[ARM_RING];
};

struct tk {
    struct stress_run *r;
    int n;
    struct tk_ticker *t;
    atomic_bool memory_seen;
};

static struct tk *tk_cur;

/* A P's round: it runs its timers at least this often when not stalled. */
#define TK_ROUND ((pt_nanos)1000000)

/* The latest end of a stall any P injected (the planned end while it
 * sleeps): a tick due before it may be checked as late as it, on its own
 * P or, moved, on P 0. */
static _Atomic pt_nanos tk_stall_end;

static void tk_note_stall_end(pt_nanos end)
{
    pt_nanos cur = atomic_load(&tk_stall_end);
    while (cur < end && !atomic_compare_exchange_weak(&tk_stall_end, &cur, end))
        ;
}

/* How late the check of a tick due at `due` may come. */
static pt_nanos tk_allowed(const struct tk *m, pt_nanos due)
{
    pt_nanos stall = atomic_load(&tk_stall_end) - due;
    return (stall > 0 ? stall : 0) + TK_ROUND + m->r->o->bound;
}

/* A tick for `fw`, found due by a check at `fn`, called at `now`: held to
 * the time the oracle says it must name, which then moves to the next. */
static void tk_exact(struct tk *m, uint64_t k, uint64_t seq, struct arm_rec *a, pt_nanos fw,
                     pt_nanos fn, pt_nanos now)
{
    pt_nanos when = atomic_load(&a->when), period = atomic_load(&a->period);
    pt_nanos due = atomic_load(&a->due), slack = m->r->o->slack;
    /* --slack: the tick may name any time in [due, due + slack], and the
     * ticks after it keep that offset (tk_fire holds a window as wide as
     * a period to the looser checks) */
    pt_nanos offset = ((fw - when) % period + period) % period;
    if (fw < due || fw > due + slack) {
        double off = (double)(fw - due) / 1e6, per = (double)period / 1e6;
        if (offset > slack)
            stress_violation(m->r, V_PHASE, (long)k, seq, "a tick for when + k*period",
                             "a tick for %.6f ms past the arming's when, off its %.0f ms "
                             "schedule (%.6f ms from the one owed)",
                             (double)(fw - when) / 1e6, per, off);
        else if (fw < due)
            stress_violation(m->r, V_BURST, (long)k, seq,
                             "one tick per check, the ticks a late check passed skipped",
                             "a tick for %.3f ms before the one owed (period %.0f ms)", -off, per);
        else
            stress_violation(m->r, V_PHASE, (long)k, seq,
                             "each tick owed fired, only those a late check passed skipped",
                             "a tick %.0f periods on from the one owed (period %.0f ms)", off / per,
                             per);
    }
    if (fn < fw || now < fw)
        stress_violation(m->r, V_EARLY, (long)k, seq, "a tick checked and run at or after its time",
                         "checked %.3f ms and run %.3f ms before it", (double)(fw - fn) / 1e6,
                         (double)(fw - now) / 1e6);
    else if (stress_overdue(m->r, fw, fn, tk_allowed(m, fw)))
        stress_violation(m->r, V_LATE, (long)k, seq,
                         "a tick checked within the bound of its time (past the run's own stalls)",
                         "checked %.3f ms after it", (double)(fn - fw) / 1e6);
    pt_nanos next = fw - offset + period * (1 + (fn > fw ? (fn - fw) / period : 0));
    atomic_store(&a->due, next);
}

static void tk_fire(void *arg)
{
    struct tk *m = tk_cur;
    uint64_t k = arg_timer(arg), seq = arg_seq(arg);
    struct tk_ticker *t = &m->t[k];
    struct arm_rec *a = &t->ring[seq % ARM_RING];
    pt_nanos now = pt_nanotime();
    atomic_fetch_add_explicit(&m->r->firings, 1, memory_order_relaxed);
    uint64_t w = atomic_load(&a->word);
    if (w >> 8 != seq) {
        atomic_fetch_add(&m->r->untracked, 1);
        return;
    }
    pt_nanos when = atomic_load(&a->when), period = atomic_load(&a->period);
    unsigned n = atomic_fetch_add(&a->ticks, 1);
    if ((w & 0xff) != A_PENDING && atomic_fetch_add(&a->after_stop, 1) >= 1)
        stress_violation(m->r, V_TICK_STOPPED, (long)k, seq,
                         "no tick after stop returned (but one already taken to run)",
                         "tick %u, %.3f ms after the stop returned", n,
                         (double)(now - atomic_load(&a->stopped_at)) / 1e6);
    pt_nanos fw, fn;
    if (m->r->o->slack < period && m->r->eng->tm_firing && m->r->eng->tm_firing(&fw, &fn) == 0) {
        tk_exact(m, k, seq, a, fw, fn, now);
        atomic_store(&a->fired_at, now);
        return;
    }
    if (now < when + (pt_nanos)n * period)
        stress_violation(m->r, V_EARLY, (long)k, seq, "tick n at or after when + n*period",
                         "tick %u %.3f ms early (period %.0f ms)", n,
                         (double)(when + (pt_nanos)n * period - now) / 1e6, (double)period / 1e6);
    pt_nanos oldest = atomic_load(&a->recent[n % 3]);
    if (n >= 3 && now - oldest < period && t->burst_seen != seq) {
        t->burst_seen = seq;
        stress_violation(m->r, V_BURST, (long)k, seq, "at most three ticks within one period",
                         "four ticks within %.3f ms (period %.0f ms), the last %u",
                         (double)(now - oldest) / 1e6, (double)period / 1e6, n);
    }
    atomic_store(&a->recent[n % 3], now);
    atomic_store(&a->fired_at, now);
}

/* The arming cur has ended (a stop or re-arm answered `answer`). */
static void tk_end(struct tk *m, uint64_t k, int answer, enum arm_state to)
{
    struct tk_ticker *t = &m->t[k];
    struct arm_rec *a = &t->ring[t->cur % ARM_RING];
    pt_nanos now = pt_nanotime();
    atomic_store(&a->stopped_at, now);
    enum arm_state seen;
    if (!arm_move(t->ring, ARM_RING, t->cur, A_PENDING, to, &seen))
        return;
    if (answer != 1)
        stress_violation(m->r, V_COUNT, (long)k, t->cur, "1 from stopping a live ticker", "%d",
                         answer);
    pt_nanos when = atomic_load(&a->when), period = atomic_load(&a->period);
    unsigned ticks = atomic_load(&a->ticks);
    pt_nanos lived = now - when;
    if (lived > 0 && ticks > (uint64_t)(lived / period) + 2)
        stress_violation(m->r, V_TICKS, (long)k, t->cur, "ticks <= periods lived + 2",
                         "%u ticks in %.3f ms (period %.0f ms)", ticks, (double)lived / 1e6,
                         (double)period / 1e6);
    if (ticks == 0 && stress_overdue(m->r, when, now, tk_allowed(m, when) + period))
        stress_violation(m->r, V_TICKS, (long)k, t->cur, "a tick within the bound",
                         "none in %.3f ms (period %.0f ms)", (double)lived / 1e6,
                         (double)period / 1e6);
}

static void tk_op(struct pworker *w)
{
    struct tk *m = w->pl->sc;
    const struct pt_engine *eng = m->r->eng;
    uint64_t x = pt__xorshift64(&w->rng);
    uint64_t k = (x >> 8) % (uint64_t)m->n;
    struct tk_ticker *t = &m->t[k];
    pthread_mutex_lock(&t->mu);
    if (t->live && x % 5 < 2) {
        tk_end(m, k, eng->tm_stop(t->tm), A_STOPPED);
        t->live = false;
    } else {
        uint64_t seq = t->cur + 1;
        pt_nanos period = (pt_nanos)(1 + (x >> 32) % 5) * 1000000;
        pt_nanos when = pt_nanotime() + period;
        arm_open(t->ring, ARM_RING, seq, when, period);
        int a = eng->tm_arm(w->th, t->tm, when, period, arm_arg(k, seq));
        if (a < 0) {
            stress_violation(m->r, V_ERROR, (long)k, seq, "an arm to succeed", "%d", a);
        } else {
            if (t->live)
                tk_end(m, k, a, A_SUPERSEDED);
            else if (a == 1)
                stress_violation(m->r, V_COUNT, (long)k, seq, "0 from arming a stopped ticker",
                                 "1");
            t->cur = seq;
            t->live = true;
        }
    }
    pthread_mutex_unlock(&t->mu);
    /* Outsiders pace themselves; Ps by their round. */
    if (!w->is_p)
        stress_sleep(1000000);
}

static void tk_memory(struct pworker *w)
{
    struct tk *m = w->pl->sc;
    const struct pt_engine *eng = m->r->eng;
    if (!eng->held || w->batches % 32 != 0 || atomic_load(&m->memory_seen))
        return;
    /* One arming live per ticker; lazily deleted ones as in churn. */
    size_t live = (size_t)m->n, held = eng->held(w->th);
    if (held > 2 * live + 4096 && !atomic_exchange(&m->memory_seen, true))
        stress_violation(m->r, V_MEMORY, w->id, 0, "entries <= 2 x tickers + 4096",
                         "%zu entries for %zu tickers", held, live);
}

static void tk_round(struct pworker *w)
{
    uint64_t x = pt__xorshift64(&w->rng);
    const struct pt_engine *eng = w->pl->r->eng;
    tk_memory(w);
    if (eng->move && w->id > 0 && x % 64 == 1) {
        pool_move(w);
        return;
    }
    if (x % 64 == 0) { /* a stall: no timers run */
        pt_nanos d = (pt_nanos)(5 + (x >> 8) % 25) * 1000000;
        tk_note_stall_end(pt_nanotime() + d);
        stress_sleep(d);
        tk_note_stall_end(pt_nanotime());
    } else
        eng->idle(w->th, pt_nanotime() + 1000000);
}

static void tk_scan(void *vm)
{
    struct tk *m = vm;
    pt_nanos now = pt_nanotime();
    for (int k = 0; k < m->n; k++) {
        struct tk_ticker *t = &m->t[k];
        if (pthread_mutex_trylock(&t->mu) != 0)
            continue;
        struct arm_rec *a = &t->ring[t->cur % ARM_RING];
        if (t->live && t->late_seen != t->cur) {
            /* exact: the tick owed; else a period past the last one */
            pt_nanos owed = atomic_load(&a->due), last = atomic_load(&a->fired_at);
            pt_nanos period = atomic_load(&a->period);
            if ((!m->r->eng->tm_firing || m->r->o->slack >= period) && last)
                owed = last + period;
            if (stress_overdue(m->r, owed, now, tk_allowed(m, owed))) {
                t->late_seen = t->cur;
                stress_violation(m->r, V_LATE, k, t->cur,
                                 "a tick every period (the one owed within the bound)",
                                 "none for %.3f ms past the one owed", (double)(now - owed) / 1e6);
            }
        }
        pthread_mutex_unlock(&t->mu);
    }
}

static void tk_final(struct pool *pl)
{
    struct tk *m = pl->sc;
    tk_scan(m);
    for (int k = 0; k < m->n; k++) {
        struct tk_ticker *t = &m->t[k];
        if (t->live)
            tk_end(m, (uint64_t)k, m->r->eng->tm_stop(t->tm), A_STOPPED);
        t->live = false;
    }
}

static void tk_cleanup(struct pool *pl)
{
    struct tk *m = pl->sc;
    for (int k = 0; k < m->n; k++) {
        m->r->eng->tm_free(m->t[k].tm);
        pthread_mutex_destroy(&m->t[k].mu);
    }
}

/* The tickers, from the instance: an engine may keep them in its own. */
static void tk_setup(struct pool *pl)
{
    struct tk *m = pl->sc;
    for (int k = 0; k < m->n; k++) {
        pthread_mutex_init(&m->t[k].mu, NULL);
        m->t[k].tm = m->r->eng->tm_new(m->r->e);
        if (!m->t[k].tm)
            abort();
    }
}

void sc_ticker(struct stress_run *r)
{
    const struct stress_opts *o = r->o;
    struct tk m = {.r = r, .n = o->timers < 1 ? 1 : o->timers / 2};
    m.t = calloc((size_t)m.n, sizeof *m.t);
    if (!m.t)
        abort();
    tk_cur = &m;
    atomic_store(&tk_stall_end, 0);
    struct pool pl = {
        .r = r,
        .np = o->threads,
        .nout = o->outsiders,
        .sc = &m,
        .op = tk_op,
        .p_round = tk_round,
        .scan = tk_scan,
        .final = tk_final,
        .setup = tk_setup,
        .cleanup = tk_cleanup,
        .cb = tk_fire,
        .drain = 1000000,
        .batch = 1,
    };
    pool_run(&pl);
    tk_cur = NULL;
    free(m.t);
}
