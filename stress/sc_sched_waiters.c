/* sched scenario: one Timer's channel read by several Gs at once
 * (sc_sched.h, struct ss_tw, says what is checked). Go's channel timers
 * serve every G that waits on them: when some of the waiters leave (their
 * own select timed out, another case won), the timer must still send to
 * the ones that stay, and a value handed to one waiter is that arming's
 * only one. The owner G arms the timer and ends its armings; the waiters
 * record what they receive; the main thread makes the final checks once
 * every G is out of its loop. */
#include <errno.h>

#include "sc_sched.h"

#define TW_LEAVERS (SS_TW_WAITERS - 1)

static long tw_index(const struct ss_tw *m)
{
    return (long)(m - m->ss->tw);
}

static pt_nanos pos(pt_nanos d)
{
    return d > 0 ? d : 0;
}

static pt_nanos later(pt_nanos a, pt_nanos b)
{
    return a > b ? a : b;
}

#define ARM(m, k) ((m)->arm[(k) % SS_TW_RING])

bool ss_tw_init(struct ss_tw *m, struct ss *ss, uint64_t seed)
{
    *m = (struct ss_tw){.ss = ss, .rng = seed};
    for (int i = 0; i < SS_TW_WAITERS; i++)
        m->w[i] =
            (struct ss_tw_w){.m = m, .idx = i, .rng = seed ^ (0x9e3779b97f4a7c15ull * (i + 1))};
    return pt_chan_make(&m->poke, sizeof(int), TW_LEAVERS) == 0 &&
           pt_chan_make(&m->quit, sizeof(int), 0) == 0 &&
           pt_chan_make(&m->note, sizeof(int), 2 * SS_TW_WAITERS) == 0;
}

/* A new arming: its value's time lies in [start + d, armed + d]. Lock held. */
static void tw_begin(struct ss_tw *m, pt_nanos start, pt_nanos armed, pt_nanos d)
{
    m->cur++;
    ARM(m, m->cur).lo = start + pos(d);
    ARM(m, m->cur).hi = armed + pos(d);
    ARM(m, m->cur).end = SS_TW_OPEN;
    m->open = true;
    m->late_seen = false;
}

/* The current arming's value was recorded (and the arming is still open). */
static bool tw_received(const struct ss_tw *m)
{
    return m->open && m->got > m->owed;
}

/* The stop or reset `call` answered a for the current arming. True when a
 * value is owed that no waiter has recorded yet. Lock held. */
static bool tw_end(struct ss_tw *m, int a, const char *call)
{
    struct stress_run *r = m->ss->r;
    if (!m->open) { /* ended before (a stop): nothing was pending */
        if (a == 1)
            stress_violation(r, V_COUNT, tw_index(m), m->cur,
                             "0: the arming had ended (a stop answered before)", "%s answered 1",
                             call);
        return false;
    }
    bool recvd = tw_received(m);
    m->open = false;
    if (a == 1) {
        ARM(m, m->cur).end = SS_TW_STOPPED;
        if (recvd) {
            stress_violation(r, call[0] == 'r' ? V_FIRED_SUPERSEDED : V_FIRED_STOPPED, tw_index(m),
                             m->cur, "0: its value had been received by a waiter", "%s answered 1",
                             call);
            m->got--; /* counted once */
        }
        return false;
    }
    ARM(m, m->cur).end = SS_TW_DELIVERED;
    m->owed++;
    return !recvd;
}

/* A waiter received v at `now`, having waited since `since`. Lock held. */
static void tw_got(struct ss_tw *m, int who, pt_nanos v, pt_nanos since, pt_nanos now)
{
    struct stress_run *r = m->ss->r;
    long ix = tw_index(m);
    atomic_fetch_add_explicit(&r->firings, 1, memory_order_relaxed);
    /* the arming that sent it: the newest whose window holds its time */
    uint64_t k = m->cur;
    while (k > 0 && m->cur - k < SS_TW_RING && !(ARM(m, k).lo <= v && v <= ARM(m, k).hi))
        k--;
    bool found = k > 0 && m->cur - k < SS_TW_RING;
    bool stale = found && ARM(m, k).end == SS_TW_STOPPED;
    if (v > now)
        stress_violation(r, V_EARLY, ix, m->cur, "a value's time no later than its receipt",
                         "received %.3f ms before the time it carries (waiter %d)",
                         (double)(v - now) / 1e6, who);
    if (stale)
        stress_violation(r, V_FIRED_STOPPED, ix, k,
                         "no value of an arming a stop or reset answered 1 for",
                         "waiter %d received its value (due %.3f ms before the receipt; arming "
                         "%llu is current)",
                         who, (double)(now - v) / 1e6, (unsigned long long)m->cur);
    else if (!found && v < ARM(m, m->cur).lo)
        stress_violation(r, V_EARLY, ix, m->cur, "a value fired at or after its arming's deadline",
                         "waiter %d received one %.3f ms before the deadline, of no earlier "
                         "arming",
                         who, (double)(ARM(m, m->cur).lo - v) / 1e6);
    else if (!found && stress_overdue(r, ARM(m, m->cur).lo, v, r->o->bound))
        stress_violation(r, V_LATE, ix, m->cur, "a value carrying its due time (sched.h)",
                         "waiter %d received one carrying %.3f ms after the deadline", who,
                         (double)(v - ARM(m, m->cur).hi) / 1e6);
    m->got++;
    if (m->got > m->owed + (m->open ? 1 : 0)) {
        if (!stale)
            stress_violation(r, V_DOUBLE, ix, m->cur, "one value per arming",
                             "waiter %d received a value past the %llu armings delivered%s", who,
                             (unsigned long long)m->owed, m->open ? " and the current one's" : "");
        m->got--; /* counted once */
    }
    /* received within the bound once due, by a G that waited for it */
    if (k == m->cur && m->open && !m->late_seen &&
        stress_overdue(r, later(ARM(m, k).hi, since), now, r->o->bound)) {
        m->late_seen = true;
        stress_violation(r, V_LATE, ix, m->cur, "a value received within the bound once due",
                         "waiter %d, waiting since %.3f ms before its time, received it %.3f ms "
                         "after",
                         who, (double)(v - since) / 1e6, (double)(now - v) / 1e6);
    }
}

/* After a stop or reset answered 0 for an arming not yet recorded as
 * received: its value was handed to a waiter, which records it once it
 * runs again, within the bound. */
static void tw_owed(struct ss_tw *m, pt_nanos since)
{
    struct stress_run *r = m->ss->r;
    for (;;) {
        ss_lock(&m->lock);
        bool ok = m->got >= m->owed;
        ss_unlock(&m->lock);
        if (ok)
            return;
        pt_nanos now = pt_nanotime();
        if (stress_overdue(r, since, now, r->o->bound)) {
            ss_lock(&m->lock);
            if (m->got < m->owed) {
                stress_violation(r, V_UNFIRED, tw_index(m), m->cur,
                                 "its value received (a stop or reset answered 0: it had been "
                                 "handed to a waiter)",
                                 "no waiter received it %.3f ms later",
                                 (double)(now - since) / 1e6);
                m->owed = m->got; /* lost: owed no longer */
            }
            ss_unlock(&m->lock);
            return;
        }
        (void)pt_chan_recv_until(m->note, NULL, now + SS_MS);
    }
}

static void tw_reset(struct ss_tw *m, pt_nanos d)
{
    ss_lock(&m->lock);
    pt_nanos start = pt_nanotime();
    int a = pt_time_timer_reset(m->t, d);
    pt_nanos armed = pt_nanotime();
    bool owe = false;
    if (a < 0) {
        stress_violation(m->ss->r, V_ERROR, tw_index(m), m->cur, "reset to succeed", "%d", a);
    } else {
        owe = tw_end(m, a, "reset");
        tw_begin(m, start, armed, d);
    }
    ss_unlock(&m->lock);
    if (owe)
        tw_owed(m, armed);
}

static void tw_stop(struct ss_tw *m, bool look)
{
    ss_lock(&m->lock);
    int a = pt_time_timer_stop(m->t);
    pt_nanos at = pt_nanotime();
    bool owe = false;
    if (a < 0)
        stress_violation(m->ss->r, V_ERROR, tw_index(m), m->cur, "stop to succeed", "%d", a);
    else
        owe = tw_end(m, a, "stop");
    ss_unlock(&m->lock);
    if (owe)
        tw_owed(m, at);
    /* Go 1.23: nothing of before the stop is in the channel once it
     * returned, and only the owner arms */
    pt_nanos v;
    if (look && pt_chan_try_recv(m->c, &v) == 1)
        stress_violation(m->ss->r, V_FIRED_STOPPED, tw_index(m), m->cur,
                         "an empty channel once stop returned (Go 1.23)",
                         "a value due %.3f ms before the look", (double)(pt_nanotime() - v) / 1e6);
}

/* The stayer in its select since when, in its n-th; or 0. */
static pt_nanos stayer_since(struct ss_tw *m, uint64_t *n)
{
    *n = atomic_load(&m->stay_n);
    return atomic_load(&m->stay_since);
}

/* Wait for the current arming's value: received, ended, the run's stop,
 * or past its time by the bound. A value due while the stayer has been
 * waiting and not received within the bound is late, whichever waiters
 * left meanwhile. */
static void tw_wait(struct ss_tw *m)
{
    struct stress_run *r = m->ss->r;
    while (!atomic_load_explicit(&m->ss->stop, memory_order_relaxed)) {
        uint64_t n0, n1;
        pt_nanos since = stayer_since(m, &n0);
        ss_lock(&m->lock);
        bool waiting = m->open && !tw_received(m);
        pt_nanos hi = ARM(m, m->cur).hi;
        pt_nanos now = pt_nanotime();
        bool late = waiting && since && stress_overdue(r, later(hi, since), now, r->o->bound);
        if (late && !m->late_seen && stayer_since(m, &n1) == since && n1 == n0) {
            m->late_seen = true;
            stress_violation(r, V_LATE, tw_index(m), m->cur,
                             "the value received within the bound by the G waiting for it",
                             "none %.3f ms after its time, the stayer waiting since %.3f ms "
                             "before it",
                             (double)(now - hi) / 1e6, (double)(hi - since) / 1e6);
        }
        ss_unlock(&m->lock);
        if (!waiting || late || (now > hi && stress_overdue(r, hi, now, 2 * r->o->bound)))
            return;
        pt_nanos step = now + SS_MS;
        (void)pt_chan_recv_until(m->note, NULL, hi > now && hi < step ? hi + 1 : step);
    }
}

/* The leavers sent away (those in their selects leave now, the others at
 * their next one) until the current arming's value is received: the
 * stayer alone must still get it. */
static void tw_scatter(struct ss_tw *m, uint64_t x)
{
    int one = 1;
    while (pt_chan_try_recv(m->poke, NULL) == 1)
        ; /* stale pokes */
    tw_reset(m, 2 * SS_MS + (pt_nanos)(x % (3 * SS_MS)));
    pt_sleep(200000);
    ss_lock(&m->lock);
    pt_nanos hi = ARM(m, m->cur).hi;
    ss_unlock(&m->lock);
    atomic_store(&m->away_until, hi + 2 * m->ss->r->o->bound);
    for (int i = 0; i < TW_LEAVERS; i++)
        (void)pt_chan_try_send(m->poke, &one);
    tw_wait(m);
    atomic_store(&m->away_until, 0);
}

void ss_tw_owner(void *arg)
{
    struct ss_tw *m = arg;
    struct ss *ss = m->ss;
    pt_nanos d = ss_pick_d(pt__xorshift64(&m->rng));
    ss_lock(&m->lock);
    pt_nanos start = pt_nanotime();
    int rc = pt_time_timer_new(&m->t, d);
    if (rc == 0) {
        m->c = pt_time_timer_chan(m->t);
        tw_begin(m, start, pt_nanotime(), d);
    }
    ss_unlock(&m->lock);
    if (rc != 0) {
        m->t = NULL;
        stress_violation(ss->r, V_ERROR, tw_index(m), 0, "pt_time_timer_new to succeed", "%d", rc);
    } else {
        atomic_store_explicit(&m->ready, 1, memory_order_release);
    }
    while (m->t && !atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        switch (x % 16) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4:
            tw_reset(m, ss_pick_d(x >> 4));
            break;
        case 5:
        case 6:
        case 7:
            tw_stop(m, (x >> 4) & 1);
            break;
        case 8:
        case 9:
        case 10:
            tw_wait(m);
            break;
        case 11:
        case 12:
            tw_scatter(m, x >> 4);
            break;
        case 13: {
            int one = 1;
            (void)pt_chan_try_send(m->poke, &one);
            break;
        }
        default:
            pt_sleep((pt_nanos)((x >> 4) % (2 * SS_MS)));
            break;
        }
        atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
    }
    /* every waiter leaves its loop */
    (void)pt_chan_close(m->quit);
    atomic_fetch_sub(&ss->alive, 1);
}

/* A waiter: the stayer selects on the channel and quit with no deadline;
 * a leaver on the channel, poke and quit, mostly with a short deadline,
 * and when poked stays away while away_until says so. */
void ss_tw_waiter(void *arg)
{
    struct ss_tw_w *w = arg;
    struct ss_tw *m = w->m;
    struct ss *ss = m->ss;
    struct stress_run *r = ss->r;
    while (!atomic_load_explicit(&m->ready, memory_order_acquire) &&
           !atomic_load_explicit(&ss->stop, memory_order_relaxed))
        pt_sleep(100000);
    bool stays = w->idx == 0;
    while (atomic_load_explicit(&m->ready, memory_order_acquire) &&
           !atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&w->rng);
        pt_nanos v = 0, since = pt_nanotime(), deadline = 0;
        int poke, q;
        pt_select_case cs[3] = {{.chan = m->c, .dir = PT_RECV, .elem = &v},
                                {.chan = m->quit, .dir = PT_RECV, .elem = &q},
                                {.chan = m->poke, .dir = PT_RECV, .elem = &poke}};
        if (stays) {
            atomic_fetch_add(&m->stay_n, 1);
            atomic_store(&m->stay_since, since);
        } else if (x % 4) {
            deadline = since + 1 + (pt_nanos)((x >> 2) % (3 * SS_MS));
        }
        int i = pt_select(cs, stays ? 2 : 3, deadline, true);
        pt_nanos now = pt_nanotime();
        if (stays)
            atomic_store(&m->stay_since, 0);
        atomic_fetch_add_explicit(&r->ops, 1, memory_order_relaxed);
        if (i == 0) {
            ss_lock(&m->lock);
            tw_got(m, w->idx, v, since, now);
            ss_unlock(&m->lock);
            int one = 1;
            (void)pt_chan_try_send(m->note, &one);
        } else if (i == 1) {
            break; /* quit closed: the run is over */
        } else if (i == 2) {
            pt_nanos until;
            while ((until = atomic_load(&m->away_until)) > pt_nanotime() &&
                   !atomic_load_explicit(&ss->stop, memory_order_relaxed))
                pt_sleep(SS_MS);
        } else if (i == -ETIMEDOUT && deadline) {
            if (now < deadline)
                stress_violation(r, V_EARLY, tw_index(m), m->cur,
                                 "a waiter's select timed out at or after its deadline",
                                 "waiter %d: %.3f ms early", w->idx,
                                 (double)(deadline - now) / 1e6);
            else if (stress_overdue(r, deadline, now, r->o->bound))
                stress_violation(r, V_LATE, tw_index(m), m->cur,
                                 "a waiter's select timed out within the bound",
                                 "waiter %d: %.3f ms after its deadline", w->idx,
                                 (double)(now - deadline) / 1e6);
            if (x % 8 == 1)
                pt_sleep((pt_nanos)((x >> 8) % SS_MS));
        } else {
            stress_violation(r, i == -ETIMEDOUT ? V_EARLY : V_ERROR, tw_index(m), m->cur,
                             "a select with no deadline to return a case",
                             "waiter %d: pt_select %d", w->idx, i);
        }
    }
    atomic_fetch_sub(&ss->alive, 1);
}

void ss_tw_final(struct ss_tw *m)
{
    struct stress_run *r = m->ss->r;
    if (m->t) {
        int a = pt_time_timer_stop(m->t);
        if (a < 0)
            stress_violation(r, V_ERROR, tw_index(m), m->cur, "stop to succeed", "%d", a);
        else if (tw_end(m, a, "final stop"))
            stress_violation(r, V_UNFIRED, tw_index(m), m->cur,
                             "its value received (the final stop answered 0: it had been "
                             "handed to a waiter)",
                             "every waiter has left, and none received it");
        if (m->got < m->owed)
            stress_violation(r, V_UNFIRED, tw_index(m), m->cur,
                             "every value handed to a waiter received",
                             "%llu armings delivered, %llu values received",
                             (unsigned long long)m->owed, (unsigned long long)m->got);
        pt_nanos v;
        if (pt_chan_try_recv(m->c, &v) == 1)
            stress_violation(r, V_FIRED_STOPPED, tw_index(m), m->cur,
                             "an empty channel once the final stop returned (Go 1.23)",
                             "a value due %.3f ms before the look",
                             (double)(pt_nanotime() - v) / 1e6);
        if (pt_time_timer_free(m->t) != 0)
            stress_violation(r, V_ERROR, tw_index(m), m->cur, "free to succeed", "-EBUSY");
        m->t = NULL;
    }
    pt_chan_free(m->poke);
    pt_chan_free(m->quit);
    pt_chan_free(m->note);
}
