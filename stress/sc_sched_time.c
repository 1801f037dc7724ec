/* sched scenario: the Gs that own Go time-package objects (sc_sched.h
 * says what each checks). They run until the scenario's stop; the main
 * thread makes the final checks and frees the objects once every G is out
 * of its loop. */
#include <errno.h>
#include <sched.h>

#include "sc_sched.h"

void ss_lock(atomic_int *l)
{
    int z = 0;
    while (!atomic_compare_exchange_weak_explicit(l, &z, 1, memory_order_acquire,
                                                  memory_order_relaxed)) {
        z = 0;
        if (pt_g_current())
            pt_yield();
        else
            sched_yield();
    }
}

void ss_unlock(atomic_int *l)
{
    atomic_store_explicit(l, 0, memory_order_release);
}

pt_nanos ss_pick_d(uint64_t x)
{
    switch (x % 16) {
    case 0:
        return 0;
    case 1:
        return -(pt_nanos)((x >> 8) % SS_MS);
    case 2:
        return 20 * SS_MS + (pt_nanos)((x >> 8) % (30 * SS_MS));
    default:
        return 100000 + (pt_nanos)((x >> 8) % (3 * SS_MS));
    }
}

static pt_nanos pos(pt_nanos d)
{
    return d > 0 ? d : 0;
}

static void count_op(struct ss *ss)
{
    atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
}

static void count_firing(struct ss *ss)
{
    atomic_fetch_add_explicit(&ss->r->firings, 1, memory_order_relaxed);
}

/* ---- Timer ------------------------------------------------------------ */

static long tm_index(const struct ss_tm *m)
{
    return (long)(m - m->ss->tm);
}

/* The current arming ends, the call ending it (a re-arm, or the final
 * stop) having answered a: it must have ended exactly one way. Lock held. */
static void tm_account(struct ss_tm *m, int a, const char *call)
{
    struct stress_run *r = m->ss->r;
    int total = m->recv + m->ans1 + a;
    if (total == 1)
        return;
    if (total == 0)
        stress_violation(r, V_UNFIRED, tm_index(m), m->cur,
                         "its value received, or a stop or re-arm answering 1",
                         "stops answered 0 (already fired) and no value came");
    else if (m->recv > 1)
        stress_violation(r, V_DOUBLE, tm_index(m), m->cur, "one value per arming",
                         "%d values received", m->recv);
    else if (m->recv && m->ans1)
        stress_violation(r, V_FIRED_STOPPED, tm_index(m), m->cur,
                         "no value received (a stop answered 1: it had not been delivered)",
                         "its value was received");
    else if (m->recv)
        stress_violation(r, V_FIRED_SUPERSEDED, tm_index(m), m->cur,
                         "the arming inactive (its value had been received)", "%s answered 1",
                         call);
    else
        stress_violation(r, V_COUNT, tm_index(m), m->cur, "one stop or re-arm answering 1",
                         "%d stops and the %s answered 1", m->ans1, call);
}

static void tm_begin(struct ss_tm *m, pt_nanos start, pt_nanos d)
{
    m->cur++;
    m->start = start;
    m->armed = pt_nanotime();
    m->when = start + pos(d);
    m->recv = m->ans1 = 0;
    m->stopped = m->late_seen = false;
}

/* A value v received at `now` for the current arming. Lock held. */
static void tm_got(struct ss_tm *m, pt_nanos v, pt_nanos now)
{
    struct stress_run *r = m->ss->r;
    count_firing(m->ss);
    m->recv++;
    if (v < m->armed && v < m->when)
        stress_violation(r, V_FIRED_SUPERSEDED, tm_index(m), m->cur,
                         "no value fired before the reset or new that armed it had returned",
                         "a value fired %.3f ms before that", (double)(m->armed - v) / 1e6);
    else if (v < m->when)
        stress_violation(r, V_EARLY, tm_index(m), m->cur, "a value fired at or after its deadline",
                         "fired %.3f ms early", (double)(m->when - v) / 1e6);
    else if (!m->late_seen && stress_overdue(r, m->when, v, r->o->bound)) {
        m->late_seen = true;
        stress_violation(r, V_LATE, tm_index(m), m->cur, "a firing within the bound",
                         "fired %.3f ms after its deadline", (double)(v - m->when) / 1e6);
    }
    if (v > now)
        stress_violation(r, V_EARLY, tm_index(m), m->cur, "a value's time before its receipt",
                         "received %.3f ms before the time it carries", (double)(v - now) / 1e6);
}

void ss_tm_stop(struct ss_tm *m)
{
    if (!atomic_load_explicit(&m->ready, memory_order_acquire))
        return;
    ss_lock(&m->lock);
    int a = pt_time_timer_stop(m->t);
    if (a < 0)
        stress_violation(m->ss->r, V_ERROR, tm_index(m), m->cur, "stop to succeed", "%d", a);
    m->ans1 += a == 1;
    m->stopped = true;
    ss_unlock(&m->lock);
    count_op(m->ss);
}

/* Go 1.23: once a stop or reset returned, nothing of before it is in the
 * channel. Lock held; after a stop only the next arm can send. */
static void tm_channel_empty(struct ss_tm *m, const char *after)
{
    pt_nanos v;
    if (pt_chan_try_recv(m->c, &v) == 1) {
        stress_violation(m->ss->r, V_FIRED_STOPPED, tm_index(m), m->cur,
                         "an empty channel once stop returned (Go 1.23)",
                         "a value fired %.3f ms %s", (double)(pt_nanotime() - v) / 1e6, after);
        m->recv++;
    }
}

static void tm_op(struct ss_tm *m)
{
    struct ss *ss = m->ss;
    uint64_t x = pt__xorshift64(&m->rng);
    switch (x % 8) {
    case 0:
    case 1: { /* re-arm */
        pt_nanos d = ss_pick_d(x >> 3);
        ss_lock(&m->lock);
        pt_nanos start = pt_nanotime();
        int a = pt_time_timer_reset(m->t, d);
        if (a < 0) {
            stress_violation(ss->r, V_ERROR, tm_index(m), m->cur, "reset to succeed", "%d", a);
        } else {
            tm_account(m, a, "reset");
            tm_begin(m, start, d);
        }
        ss_unlock(&m->lock);
        break;
    }
    case 2: /* stop, then the channel must be empty */
        ss_tm_stop(m);
        ss_lock(&m->lock);
        tm_channel_empty(m, "before the stop returned");
        ss_unlock(&m->lock);
        break;
    case 3: /* away for a while: a value may wait unread, for a stop to discard */
        pt_sleep((pt_nanos)((x >> 3) % (2 * SS_MS)));
        break;
    default: { /* select on the timer and the poke channel, with a deadline */
        pt_nanos v = 0;
        int poke;
        pt_select_case cs[2] = {{.chan = m->c, .dir = PT_RECV, .elem = &v},
                                {.chan = m->poke, .dir = PT_RECV, .elem = &poke}};
        pt_nanos deadline = pt_nanotime() + 1 + (pt_nanos)((x >> 3) % (4 * SS_MS));
        int i = pt_select(cs, 2, deadline, true);
        pt_nanos now = pt_nanotime();
        if (i == 1)
            break;
        ss_lock(&m->lock);
        if (i == 0) {
            tm_got(m, v, now);
        } else if (i == -ETIMEDOUT) {
            if (now < deadline)
                stress_violation(ss->r, V_EARLY, tm_index(m), m->cur,
                                 "a select's timeout at or after its deadline",
                                 "timed out %.3f ms early", (double)(deadline - now) / 1e6);
            if (!m->recv && !m->stopped && !m->late_seen &&
                stress_overdue(ss->r, m->when, now, ss->r->o->bound)) {
                m->late_seen = true;
                stress_violation(ss->r, V_LATE, tm_index(m), m->cur, "a value within the bound",
                                 "none %.3f ms after its deadline", (double)(now - m->when) / 1e6);
            }
        } else {
            stress_violation(ss->r, V_ERROR, tm_index(m), m->cur, "select to succeed", "%d", i);
        }
        ss_unlock(&m->lock);
        break;
    }
    }
    count_op(ss);
}

void ss_tm_owner(void *arg)
{
    struct ss_tm *m = arg;
    struct ss *ss = m->ss;
    pt_nanos d = ss_pick_d(pt__xorshift64(&m->rng));
    ss_lock(&m->lock);
    pt_nanos start = pt_nanotime();
    int rc = pt_time_timer_new(&m->t, d);
    if (rc == 0) {
        m->c = pt_time_timer_chan(m->t);
        tm_begin(m, start, d);
    }
    ss_unlock(&m->lock);
    if (rc != 0) {
        stress_violation(ss->r, V_ERROR, tm_index(m), 0, "pt_time_timer_new to succeed", "%d", rc);
    } else {
        atomic_store_explicit(&m->ready, 1, memory_order_release);
        while (!atomic_load_explicit(&ss->stop, memory_order_relaxed))
            tm_op(m);
    }
    atomic_fetch_sub(&ss->alive, 1);
}

void ss_tm_final(struct ss_tm *m)
{
    if (!m->t)
        return;
    /* the receipt's time after the receive: a value that came due is
     * delivered by the receive itself, and carries that moment */
    pt_nanos v;
    int got = pt_chan_try_recv(m->c, &v);
    pt_nanos now = pt_nanotime();
    if (got == 1)
        tm_got(m, v, now);
    int a = pt_time_timer_stop(m->t);
    if (a == 1 && !m->late_seen && stress_overdue(m->ss->r, m->when, now, m->ss->r->o->bound))
        stress_violation(m->ss->r, V_LATE, tm_index(m), m->cur, "a value within the bound",
                         "still pending at the end, %.3f ms after its deadline",
                         (double)(now - m->when) / 1e6);
    if (a >= 0)
        tm_account(m, a, "final stop");
    tm_channel_empty(m, "before the final stop returned");
    if (pt_time_timer_free(m->t) != 0)
        stress_violation(m->ss->r, V_ERROR, tm_index(m), m->cur, "free to succeed", "-EBUSY");
}

/* ---- AfterFunc -------------------------------------------------------- */

static long af_index(const struct ss_af *m)
{
    return (long)(m - m->ss->af);
}

static void af_f(void *arg)
{
    struct ss_af *m = arg;
    uint64_t i = atomic_fetch_add(&m->started, 1);
    pt_nanos now = pt_nanotime(); /* after the count: i armings were taken by now */
    pt_nanos due = atomic_load(&m->owed_when[i % SS_AF_RING]);
    if (now < due)
        stress_violation(m->ss->r, V_EARLY, af_index(m), i + 1,
                         "the i-th f run at or after the i-th owed arming's deadline",
                         "ran %.3f ms early", (double)(due - now) / 1e6);
    count_firing(m->ss);
    (void)pt_chan_try_send(m->done, &now);
    atomic_fetch_add(&m->runs, 1); /* last: the owner frees m once runs add up */
}

/* Runs never exceed the armings owed one. */
static void af_not_over(struct ss_af *m, const char *after)
{
    uint64_t runs = atomic_load(&m->runs);
    if (runs > m->expect)
        stress_violation(m->ss->r, V_FIRED_STOPPED, af_index(m), runs,
                         "f run once per arming no stop or reset answered 1 for",
                         "%llu runs for %llu such armings, %s", (unsigned long long)runs,
                         (unsigned long long)m->expect, after);
}

/* A stop (d < 0 says so) or re-arm, with what its answer must be when no
 * f was owed before it. */
static void af_call(struct ss_af *m, bool rearm, pt_nanos d)
{
    bool settled = atomic_load(&m->runs) == m->expect;
    /* A re-arm's f is the q-th owed if the last arming ends owed, else
     * it takes the last one's place (q - 1): until the answer says which,
     * that place holds the earlier of the two deadlines. */
    uint64_t q = m->expect;
    pt_nanos when = 0, prev = 0;
    if (rearm) {
        when = pt_nanotime() + pos(d);
        m->hi_when = settled || when > m->hi_when ? when : m->hi_when;
        if (m->last_owed) {
            prev = atomic_load(&m->owed_when[(q - 1) % SS_AF_RING]);
            atomic_store(&m->owed_when[(q - 1) % SS_AF_RING], when < prev ? when : prev);
        }
        atomic_store(&m->owed_when[q % SS_AF_RING], when);
        m->expect++;
    }
    int a = rearm ? pt_time_timer_reset(m->t, d) : pt_time_timer_stop(m->t);
    if (rearm && m->last_owed && a >= 0)
        atomic_store(&m->owed_when[(q - 1) % SS_AF_RING], a == 1 ? when : prev);
    m->last_owed = rearm || (m->last_owed && a != 1);
    if (a < 0) {
        stress_violation(m->ss->r, V_ERROR, af_index(m), m->expect, "stop or reset to succeed",
                         "%d", a);
        return;
    }
    if (a == 1)
        m->expect--;
    if (a == 1 && settled)
        stress_violation(m->ss->r, V_COUNT, af_index(m), m->expect,
                         "0: every f owed had run (nothing was pending)", "%s answered 1",
                         rearm ? "reset" : "stop");
    af_not_over(m, rearm ? "after a reset" : "after a stop");
}

/* Wait until every f owed has run: by the latest deadline plus the bound.
 * Past it, one violation, and on: what is owed stays owed (a late f may
 * still come, and must not then look like an extra run). */
static void af_settle(struct ss_af *m)
{
    pt_nanos deadline = m->hi_when + m->ss->r->o->bound;
    for (;;) {
        uint64_t runs = atomic_load(&m->runs);
        if (runs >= m->expect) {
            m->late_seen = false;
            break;
        }
        pt_nanos now = pt_nanotime();
        if (now >= deadline && stress_overdue(m->ss->r, m->hi_when, now, m->ss->r->o->bound)) {
            if (!m->late_seen)
                stress_violation(m->ss->r, V_LATE, af_index(m), runs + 1, "f run within the bound",
                                 "%llu of %llu runs, %.3f ms after the latest deadline",
                                 (unsigned long long)runs, (unsigned long long)m->expect,
                                 (double)(now - m->hi_when) / 1e6);
            m->late_seen = true;
            break;
        }
        /* f sends, then counts: a short wait, and look again */
        pt_nanos v, step = now + SS_MS;
        if (pt_g_current())
            (void)pt_chan_recv_until(m->done, &v,
                                     now < deadline && deadline < step ? deadline : step);
        else
            stress_sleep(100000);
    }
    af_not_over(m, "once settled");
    pt_nanos v;
    while (pt_chan_try_recv(m->done, &v) == 1)
        ;
}

void ss_af_owner(void *arg)
{
    struct ss_af *m = arg;
    struct ss *ss = m->ss;
    pt_nanos d = ss_pick_d(pt__xorshift64(&m->rng));
    pt_nanos when = pt_nanotime() + pos(d);
    atomic_store(&m->owed_when[0], when);
    m->hi_when = when;
    m->expect = 1;
    m->last_owed = true;
    int rc = pt_time_after_func(&m->t, d, af_f, m);
    if (rc != 0) {
        stress_violation(ss->r, V_ERROR, af_index(m), 0, "pt_time_after_func to succeed", "%d", rc);
        m->t = NULL;
        m->expect = 0;
    }
    while (m->t && !atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        switch (x % 8) {
        case 0:
        case 1:
        case 2:
            af_call(m, true, ss_pick_d(x >> 3));
            break;
        case 3:
            af_call(m, false, 0);
            break;
        case 4:
        case 5:
            af_settle(m);
            break;
        default:
            pt_sleep((pt_nanos)((x >> 3) % (2 * SS_MS)));
            break;
        }
        count_op(ss);
    }
    atomic_fetch_sub(&ss->alive, 1);
}

void ss_af_final(struct ss_af *m)
{
    if (m->t) {
        af_call(m, false, 0);
        af_settle(m);
        if (pt_time_timer_free(m->t) != 0)
            stress_violation(m->ss->r, V_ERROR, af_index(m), 0, "free to succeed", "-EBUSY");
    }
}

/* ---- Ticker ----------------------------------------------------------- */

static long tk_index(const struct ss_tk *m)
{
    return (long)(m - m->ss->tk);
}

/* A tick's value is its own due time (sched.h), so the schedule is checked
 * exactly, not by when the tick was read: the first value is tick 1 of a
 * start within the call, [start, armed]; every later one is first + k *
 * period, in order; the one after a receive is due within a period of
 * that receive (ticks are skipped only while nobody reads); none is read
 * before its time; and one that came due while its reader waited is read
 * within the bound. asked: the clock before the receive; now: after it. */
static void tk_got(struct ss_tk *m, pt_nanos v, pt_nanos asked, pt_nanos now)
{
    struct stress_run *r = m->ss->r;
    long k = tk_index(m);
    count_firing(m->ss);
    m->n++;
    if (!m->running) {
        stress_violation(r, V_TICK_STOPPED, k, m->n, "no tick once stop returned",
                         "a tick due %.3f ms before the stop returned",
                         (double)(m->armed - v) / 1e6);
    } else if (v > now) {
        stress_violation(r, V_EARLY, k, m->n, "a tick read no earlier than its time",
                         "read %.3f ms before it", (double)(v - now) / 1e6);
    } else if (m->n == 1 && v < m->start + m->period) {
        if (v < m->armed)
            stress_violation(
                r, V_TICK_STOPPED, k, m->n, "no tick of an arming before the last reset",
                "a tick due %.3f ms before the reset returned", (double)(m->armed - v) / 1e6);
        else
            stress_violation(r, V_EARLY, k, m->n, "tick 1 due at start + period",
                             "%.3f ms early (period %.3f ms)",
                             (double)(m->start + m->period - v) / 1e6, (double)m->period / 1e6);
    } else if (m->n == 1 && v > m->armed + m->period) {
        stress_violation(r, V_PHASE, k, m->n, "tick 1 due at start + period",
                         "due %.3f ms after it (period %.3f ms)",
                         (double)(v - m->armed - m->period) / 1e6, (double)m->period / 1e6);
    } else if (m->n > 1 && ((v - m->first) % m->period != 0 || v <= m->last)) {
        stress_violation(r, V_PHASE, k, m->n, "each tick at tick 1 + k * period, in order",
                         "%.6f ms after tick 1 (period %.3f ms; the tick before %.6f ms)",
                         (double)(v - m->first) / 1e6, (double)m->period / 1e6,
                         (double)(m->last - m->first) / 1e6);
    } else if (m->n > 1 && v > m->read_at + m->period) {
        stress_violation(r, V_PHASE, k, m->n, "no tick skipped while its reader reads",
                         "due %.3f ms after the receive before it (period %.3f ms)",
                         (double)(v - m->read_at) / 1e6, (double)m->period / 1e6);
    } else if (asked <= v && stress_overdue(r, v, now, r->o->bound)) {
        stress_violation(r, V_LATE, k, m->n, "a tick read within the bound once due",
                         "read %.3f ms after its time by a reader waiting for it",
                         (double)(now - v) / 1e6);
    }
    if (m->n == 1)
        m->first = v;
    m->last = v;
    m->read_at = now;
}

static void tk_channel_empty(struct ss_tk *m)
{
    pt_nanos v, asked = pt_nanotime();
    if (pt_chan_try_recv(m->c, &v) == 1)
        tk_got(m, v, asked, pt_nanotime());
}

static void tk_began(struct ss_tk *m, pt_nanos start, pt_nanos period)
{
    m->start = m->last = m->read_at = start;
    m->armed = pt_nanotime();
    m->period = period;
    m->n = 0;
    m->running = true;
    m->late_seen = false;
}

void ss_tk_owner(void *arg)
{
    struct ss_tk *m = arg;
    struct ss *ss = m->ss;
    pt_nanos period = SS_MS + (pt_nanos)(pt__xorshift64(&m->rng) % (3 * SS_MS));
    pt_nanos start = pt_nanotime();
    int rc = pt_time_ticker_new(&m->t, period);
    if (rc != 0) {
        stress_violation(ss->r, V_ERROR, tk_index(m), 0, "pt_time_ticker_new to succeed", "%d", rc);
        m->t = NULL;
    } else {
        m->c = pt_time_ticker_chan(m->t);
        tk_began(m, start, period);
    }
    while (m->t && !atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        switch (x % 16) {
        case 0:
            period = SS_MS + (pt_nanos)((x >> 4) % (3 * SS_MS));
            start = pt_nanotime();
            rc = pt_time_ticker_reset(m->t, period);
            if (rc != 0)
                stress_violation(ss->r, V_ERROR, tk_index(m), 0, "reset to succeed", "%d", rc);
            tk_began(m, start, period);
            tk_channel_empty(m);
            break;
        case 1:
            pt_time_ticker_stop(m->t);
            m->running = false;
            m->armed = pt_nanotime();
            tk_channel_empty(m);
            break;
        case 2:
        case 3:
            pt_sleep((pt_nanos)((x >> 4) % (uint64_t)(3 * m->period)));
            break;
        default: {
            pt_nanos v, asked = pt_nanotime();
            pt_nanos deadline = asked + 1 + (pt_nanos)((x >> 4) % (uint64_t)(2 * m->period));
            rc = pt_chan_recv_until(m->c, &v, deadline);
            pt_nanos now = pt_nanotime();
            if (rc == 1)
                tk_got(m, v, asked, now);
            else if (rc != -ETIMEDOUT)
                stress_violation(ss->r, V_ERROR, tk_index(m), 0, "a receive to succeed", "%d", rc);
            else if (now < deadline)
                stress_violation(ss->r, V_EARLY, tk_index(m), m->n + 1,
                                 "a receive's timeout at or after its deadline",
                                 "timed out %.3f ms early", (double)(deadline - now) / 1e6);
            else if (m->running && !m->late_seen &&
                     stress_overdue(ss->r, m->read_at + m->period, now, ss->r->o->bound)) {
                /* the next tick is due within a period of the last read */
                m->late_seen = true;
                stress_violation(
                    ss->r, V_LATE, tk_index(m), m->n + 1, "a tick every period (within the bound)",
                    "none for %.3f ms since the last read", (double)(now - m->read_at) / 1e6);
            }
            break;
        }
        }
        count_op(ss);
    }
    atomic_fetch_sub(&ss->alive, 1);
}

void ss_tk_final(struct ss_tk *m)
{
    if (!m->t)
        return;
    pt_time_ticker_stop(m->t);
    m->running = false;
    m->armed = pt_nanotime();
    tk_channel_empty(m);
    if (pt_time_ticker_free(m->t) != 0)
        stress_violation(m->ss->r, V_ERROR, tk_index(m), 0, "free to succeed", "-EBUSY");
}
