/* Go's timer behaviours (runtime/time.go and time/sleep_test.go), driven
 * with an explicit clock: every check is given its `now`, so nothing here
 * sleeps and every firing is exactly predictable. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- order ------------------------------------------------------------ */

struct order_log {
    int n;
    uintptr_t seq[256];
};

static void log_cb(void *arg, uintptr_t seq)
{
    struct order_log *l = arg;
    CHECK(l->n < 256);
    l->seq[l->n++] = seq;
}

void test_timers_fire_in_when_order(void)
{
    enum { N = 200 };
    static pt_timer t[N];
    static struct order_log log;
    int perm[N];
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < N; i++)
        perm[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(pt__xorshift64(&x) % (uint64_t)(i + 1));
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    /* timer i is due at 1000 + 10 i and says i; started in shuffled order,
     * some via modify so the seq is set */
    for (int k = 0; k < N; k++) {
        int i = perm[k];
        pt_timer_init(&t[i], log_cb, &log);
        CHECK_EQ(pt_timer_modify(&ts, &t[i], 1000 + 10 * i, 0, log_cb, &log, (uintptr_t)i), 0);
    }
    /* a few checks along the way: each fires exactly the due prefix */
    pt_nanos nows[] = {999, 1000, 1255, 1256, 2000, 2990, 5000};
    for (size_t k = 0; k < sizeof nows / sizeof nows[0]; k++) {
        pt_timers_check(&ts, nows[k], true, NULL);
        int due = nows[k] < 1000 ? 0 : (int)((nows[k] - 1000) / 10) + 1;
        CHECK_EQ(log.n, due < N ? due : N);
    }
    for (int i = 0; i < N; i++)
        CHECK_EQ(log.seq[i], i);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

/* ---- Stop and Reset results ------------------------------------------- */

void test_stop_returns_one_for_pending_timer_and_zero_after_run_or_stop(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    counting_timers(&ts, t, 2, &n);
    CHECK_EQ(pt_timer_stop(&t[0]), 0); /* never started */
    CHECK_EQ(pt_timer_start(&ts, &t[0], 1000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &t[1], 1000, 0), 0);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_timer_stop(&t[0]), 0);
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 1);
    CHECK_EQ(n, 1);                 /* only t[1] */
    CHECK_EQ(pt_timer_stop(&t[1]), 0); /* it ran */
    CHECK_EQ(pt_timer_stop(&t[0]), 0);
    CHECK_EQ(pt_timer_stop_sync(&t[0]), 0);
    CHECK_EQ(pt_timer_stop_sync(&t[1]), 0);
    /* a ticker is pending after it fires */
    CHECK_EQ(pt_timer_start(&ts, &t[0], 2000, 100), 0);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_timers_check(&ts, 5000, true, NULL), 0);
    CHECK_EQ(n, 2);
    teardown(&ts, &t[0], 1);
}

void test_reset_reports_pending_and_rearms_either_way(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    started_timers(&ts, &t, 1, &n, 1000, 0);
    CHECK_EQ(pt_timer_reset(&ts, &t, 2000), 1); /* pending */
    CHECK_EQ(pt_timers_check(&ts, 1999, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(pt_timer_reset(&ts, &t, 3000), 0); /* it ran: re-armed */
    CHECK_EQ(pt_timers_check(&ts, 3000, true, NULL), 1);
    CHECK_EQ(pt_timer_stop(&t), 0);
    CHECK_EQ(pt_timer_reset(&ts, &t, 4000), 0);
    CHECK_EQ(pt_timer_stop(&t), 1);
    CHECK_EQ(pt_timer_reset(&ts, &t, 5000), 0); /* stopped: re-armed */
    CHECK_EQ(pt_timers_check(&ts, 4999, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 5000, true, NULL), 1);
    CHECK_EQ(n, 3);
    CHECK_EQ(pt_timers_check(&ts, 100000, true, NULL), 0);
    CHECK_EQ(n, 3);
    teardown(&ts, &t, 1);
}

struct cbrec {
    int calls;
    uintptr_t seq;
    void *arg;
};

static void rec_a(void *arg, uintptr_t seq)
{
    struct cbrec *r = arg;
    r->calls++;
    r->seq = seq;
}

static void rec_b(void *arg, uintptr_t seq)
{
    struct cbrec *r = arg;
    r->calls += 100;
    r->seq = seq;
}

void test_modify_replaces_callback_arg_seq_and_period(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    struct cbrec r1 = {0}, r2 = {0};
    pt_timer t;
    pt_timer_init(&t, rec_a, &r1);
    CHECK_EQ(pt_timer_start(&ts, &t, 1000, 0), 0);
    CHECK_EQ(pt_timer_modify(&ts, &t, 1500, 200, rec_b, &r2, 77), 1);
    CHECK_EQ(pt_timers_check(&ts, 1500, true, NULL), 1);
    CHECK_EQ(r1.calls, 0);
    CHECK_EQ(r2.calls, 100);
    CHECK_EQ(r2.seq, 77);
    CHECK_STATUS(&t, PT_TIMER_WAITING); /* a ticker now */
    /* reset keeps all of it, the period included */
    CHECK_EQ(pt_timer_reset(&ts, &t, 3000), 1);
    CHECK_EQ(pt_timers_check(&ts, 3000, true, NULL), 1);
    CHECK_EQ(r2.calls, 200);
    CHECK_EQ(t.when, 3200);
    CHECK_EQ(pt_timers_check(&ts, 3200, true, NULL), 1);
    CHECK_EQ(r2.calls, 300);
    CHECK_EQ(r1.calls, 0);
    teardown(&ts, &t, 1);
}

/* ---- Go's TestTimerModifiedEarlier ------------------------------------ */

void test_timer_moved_earlier_ten_times_fires_once_at_first_check(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    counting_timers(&ts, &t, 1, &n);
    const pt_nanos now = 1000000, hour = 3600 * SECOND;
    CHECK_EQ(pt_timer_start(&ts, &t, now + hour, 0), 0);
    for (int j = 0; j < 10; j++) {
        /* Go: if !timer.Stop() { <-timer.C }; timer.Reset(past) */
        CHECK_EQ(pt_timer_stop(&t), 1); /* pending: no drain needed */
        CHECK_EQ(pt_timer_reset(&ts, &t, now - 500000 + j), 0);
    }
    CHECK_EQ(pt_timers_len(&ts), 1);
    CHECK(pt_timers_next(&ts) <= now);
    CHECK_EQ(pt_timers_check(&ts, now, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_check(&ts, now + 2 * hour, true, NULL), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

/* ---- Go's TestAdjustTimers (issue 47762) ------------------------------ */

void test_random_reset_stop_sequences_lose_no_firing(void)
{
    enum { N = 100, ROUNDS = 300, OPS = 400 };
    const pt_nanos LONG = 60 * SECOND;
    static pt_timer t[N];
    static int fired[N];
    bool pending[N];
    pt_nanos when[N];
    int want[N];
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    for (int i = 0; i < N; i++) {
        pt_timer_init(&t[i], count_cb, &fired[i]);
        pending[i] = false;
    }
    uint64_t x = 0x2545f4914f6cdd1dull;
    pt_nanos now = 1000;
    for (int round = 0; round < ROUNDS; round++) {
        memset(want, 0, sizeof want);
        memset(fired, 0, sizeof fired);
        for (int k = 0; k < OPS; k++) {
            int i = (int)(pt__xorshift64(&x) % N);
            switch (pt__xorshift64(&x) % 8) {
            case 0:
            case 1:
            case 2: { /* reset to one of several long durations */
                pt_nanos w = now + LONG * (pt_nanos)(1 + pt__xorshift64(&x) % 3);
                CHECK_EQ(pt_timer_reset(&ts, &t[i], w), pending[i]);
                pending[i] = true;
                when[i] = w;
                break;
            }
            case 3:
            case 4:
            case 5: /* stop */
                CHECK_EQ(pt_timer_stop(&t[i]), pending[i]);
                pending[i] = false;
                break;
            case 6: /* reset to zero: due at once */
                CHECK_EQ(pt_timer_reset(&ts, &t[i], 0), pending[i]);
                pending[i] = true;
                when[i] = 1;
                break;
            case 7: { /* a check now: what is due fires, nothing else */
                int due = 0;
                for (int j = 0; j < N; j++)
                    if (pending[j] && when[j] <= now) {
                        pending[j] = false;
                        want[j]++;
                        due++;
                    }
                CHECK_EQ(pt_timers_check(&ts, now, (pt__xorshift64(&x) & 1) != 0, NULL), due);
                for (int j = 0; j < N; j++)
                    CHECK_EQ(fired[j], want[j]);
                CHECK_VERIFIED(&ts, true);
                break;
            }
            }
            now += (pt_nanos)(pt__xorshift64(&x) % 1000);
        }
        /* the long ones come due: every timer whose last op was a reset
         * fires exactly once, stopped ones never */
        now += 4 * LONG;
        int due = 0;
        for (int j = 0; j < N; j++)
            if (pending[j]) {
                pending[j] = false;
                want[j]++;
                due++;
            }
        CHECK_EQ(pt_timers_check(&ts, now, true, NULL), due);
        for (int j = 0; j < N; j++)
            CHECK_EQ(fired[j], want[j]);
        CHECK_VERIFIED(&ts, true);
        CHECK_EQ(pt_timers_check(&ts, now + 4 * LONG, true, NULL), 0);
    }
    teardown(&ts, t, N);
}

/* ---- tickers ---------------------------------------------------------- */

void test_ticker_after_stall_fires_once_and_keeps_phase(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    counting_timers(&ts, &t, 1, &n);
    const pt_nanos first = 1000, period = 100;
    CHECK_EQ(pt_timer_start(&ts, &t, first, period), 0);
    CHECK_EQ(pt_timers_check(&ts, first, true, NULL), 1);
    CHECK_EQ(t.when, first + period);
    /* stalled for 57.3 periods */
    pt_nanos now = first + 57 * period + 30;
    pt_nanos poll = 0;
    CHECK_EQ(pt_timers_check(&ts, now, true, &poll), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(t.when, first + 58 * period);
    CHECK_EQ(poll, first + 58 * period);
    CHECK_EQ(pt_timers_next(&ts), first + 58 * period);
    CHECK_EQ(pt_timers_check(&ts, now, true, NULL), 0);
    CHECK_EQ(n, 2);
    /* a stall ending exactly on a tick: that tick fires, the next is one on */
    now = first + 80 * period;
    CHECK_EQ(pt_timers_check(&ts, now, true, NULL), 1);
    CHECK_EQ(t.when, first + 81 * period);
    CHECK_EQ(pt_timers_check(&ts, first + 81 * period, true, NULL), 1);
    CHECK_EQ(n, 4);
    teardown(&ts, &t, 1);
}

static void firing_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    firings_record(arg, pt_timers_firing);
}

void test_firing_names_the_tick_due_and_the_checks_now(void)
{
    pt_nanos when = 7, now = 7;
    CHECK_EQ(pt_timers_firing(&when, &now), -ENOENT); /* outside a callback */
    CHECK_EQ(when, 7);
    CHECK_EQ(pt_timers_firing(NULL, &now), -EINVAL);
    CHECK_EQ(pt_timers_firing(&when, NULL), -EINVAL);
    pt_timers ts;
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    struct firings f = {0};
    pt_timer t;
    pt_timer_init(&t, firing_cb, &f);
    CHECK_EQ(pt_timer_start(&ts, &t, 1000, 100), 0);
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 1); /* on time */
    CHECK_EQ(pt_timers_check(&ts, 1130, true, NULL), 1); /* 30 late */
    CHECK_EQ(pt_timers_check(&ts, 1475, true, NULL), 1); /* 1200..1400 owed: one run */
    CHECK_EQ(pt_timers_check(&ts, 1500, true, NULL), 1);
    const pt_nanos when_want[] = {1000, 1100, 1200, 1500}, now_want[] = {1000, 1130, 1475, 1500};
    firings_check(&f, when_want, now_want, 4);
    CHECK_EQ(pt_timers_firing(&when, &now), -ENOENT); /* the frame is gone */
    CHECK_EQ(pt_timer_stop_sync(&t), 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_ticker_near_maxwhen_clamps_next_when_to_never(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    counting_timers(&ts, t, 2, &n);
    /* when + period overflows the add */
    CHECK_EQ(pt_timer_start(&ts, &t[0], INT64_MAX - 10, 100), 0);
    CHECK_EQ(pt_timers_check(&ts, INT64_MAX - 5, true, NULL), 1);
    CHECK_EQ(t[0].when, PT_MAXWHEN);
    CHECK_EQ(pt_timers_next(&ts), PT_MAXWHEN);
    CHECK_STATUS(&t[0], PT_TIMER_WAITING);
    CHECK_EQ(pt_timers_check(&ts, INT64_MAX - 1, true, NULL), 0);
    CHECK_EQ(n, 1);
    /* a missed tick times a huge period overflows the multiplication */
    const pt_nanos period = INT64_MAX / 2 + 2; /* 2^62 + 1 */
    CHECK_EQ(pt_timer_start(&ts, &t[1], 1000, period), 0);
    CHECK_EQ(pt_timers_check(&ts, 1000 + period + 5, true, NULL), 1);
    CHECK_EQ(t[1].when, PT_MAXWHEN);
    CHECK_EQ(pt_timers_check(&ts, INT64_MAX - 1, true, NULL), 0);
    CHECK_EQ(n, 2);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timer_stop_sync(&t[0]), 1);
    CHECK_EQ(pt_timer_stop_sync(&t[1]), 1);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_negative_when_means_never(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    counting_timers(&ts, t, 2, &n);
    CHECK_EQ(pt_timer_start(&ts, &t[0], -1, 0), 0);
    CHECK_EQ(t[0].when, PT_MAXWHEN);
    CHECK_EQ(pt_timers_next(&ts), PT_MAXWHEN);
    pt_nanos poll = 0;
    CHECK_EQ(pt_timers_check(&ts, INT64_MAX - 1, true, &poll), 0);
    CHECK_EQ(poll, PT_MAXWHEN);
    CHECK_STATUS(&t[0], PT_TIMER_WAITING);
    /* resetting a pending timer to never is not earlier than anything */
    CHECK_EQ(pt_timer_start(&ts, &t[1], 1000, 0), 0);
    CHECK_EQ(pt_timer_reset(&ts, &t[1], INT64_MIN), 1);
    CHECK_STATUS(&t[1], PT_TIMER_MODIFIED_LATER);
    CHECK_EQ(pt_timers_check(&ts, INT64_MAX - 1, true, NULL), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(pt_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_timer_stop(&t[1]), 1);
    CHECK_EQ(pt_timer_stop_sync(&t[0]), 0);
    teardown(&ts, &t[1], 1);
}

void test_zero_when_is_due_at_once(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    started_timers(&ts, &t, 1, &n, 0, 0);
    CHECK_EQ(t.when, 1); /* 0 means "none" in next and poll_until */
    CHECK_EQ(pt_timers_next(&ts), 1);
    CHECK_EQ(pt_timers_check(&ts, 1, true, NULL), 1);
    CHECK_EQ(n, 1);
    /* and with now read from the clock */
    CHECK_EQ(pt_timer_reset(&ts, &t, 0), 0);
    CHECK_EQ(pt_timers_check(&ts, 0, true, NULL), 1);
    CHECK_EQ(n, 2);
    teardown(&ts, &t, 1);
}

/* ---- cross-P ---------------------------------------------------------- */

void test_modify_through_another_heap_keeps_timer_on_its_own_heap(void)
{
    pt_timers a, b;
    struct wakes wa = {0}, wb = {0};
    pt_timers_init(&a, wake_cb, &wa);
    pt_timers_init(&b, wake_cb, &wb);
    int n = 0, m = 0;
    pt_timer t, u;
    pt_timer_init(&t, count_cb, &n);
    pt_timer_init(&u, count_cb, &m);
    CHECK_EQ(pt_timer_start(&a, &t, 5000, 0), 0);
    CHECK_EQ(pt_timer_start(&b, &u, 9000, 0), 0);
    wa.calls = wb.calls = 0;

    CHECK_EQ(pt_timer_reset(&b, &t, 1000), 1);
    CHECK_EQ(pt_timers_len(&a), 1);
    CHECK_EQ(pt_timers_len(&b), 1);
    CHECK(heap_of(&t) == &a);
    CHECK_EQ(wa.calls, 1); /* a's poller is the one to wake */
    CHECK_EQ(wa.when, 1000);
    CHECK_EQ(wb.calls, 0);
    CHECK_EQ(pt_timers_next(&b), 9000);
    CHECK_EQ(pt_timers_check(&b, 1000, true, NULL), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(pt_timers_check(&a, 1000, true, NULL), 1);
    CHECK_EQ(n, 1);
    /* once it has run it is in no heap, and the heap passed gets it */
    CHECK_EQ(pt_timer_modify(&b, &t, 2000, 0, count_cb, &n, 0), 0);
    CHECK_EQ(pt_timers_len(&a), 0);
    CHECK_EQ(pt_timers_len(&b), 2);
    CHECK_EQ(pt_timers_check(&b, 2000, true, NULL), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(m, 0);
    CHECK_EQ(pt_timers_destroy(&a), 0);
    teardown(&b, &u, 1);
}

void test_next_reports_modified_earlier_time_before_any_check(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0;
    started_timers(&ts, t, 2, &n, 5000, 3000);
    CHECK_EQ(pt_timers_next(&ts), 5000);
    CHECK_EQ(pt_timer_reset(&ts, &t[1], 2000), 1);
    CHECK_EQ(pt_timers_next(&ts), 2000);
    CHECK_EQ(atomic_load(&ts.timer0_when), 5000); /* the heap itself is untouched */
    pt_nanos poll = 0;
    CHECK_EQ(pt_timers_check(&ts, 1999, true, &poll), 0);
    CHECK_EQ(poll, 2000);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, &poll), 1);
    CHECK_EQ(poll, 5000);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_timer_stop_sync(&t[1]), 0);
    teardown(&ts, &t[0], 1);
}

void test_wake_fires_only_when_a_new_earliest_appears(void)
{
    pt_timers ts;
    struct wakes w = {0};
    int n = 0;
    pt_timer t[5];
    counting_timers_woken(&ts, t, 5, &n, &w);

    CHECK_EQ(pt_timer_start(&ts, &t[0], 5000, 0), 0); /* empty heap */
    CHECK_EQ(w.calls, 1);
    CHECK_EQ(w.when, 5000);
    CHECK_EQ(pt_timer_start(&ts, &t[1], 6000, 0), 0); /* later */
    CHECK_EQ(w.calls, 1);
    CHECK_EQ(pt_timer_start(&ts, &t[2], 5000, 0), 0); /* equal: not earlier */
    CHECK_EQ(w.calls, 1);
    CHECK_EQ(pt_timer_start(&ts, &t[3], 4000, 0), 0); /* earlier than all */
    CHECK_EQ(w.calls, 2);
    CHECK_EQ(w.when, 4000);
    CHECK_EQ(pt_timer_reset(&ts, &t[1], 3000), 1); /* modify earlier than head */
    CHECK_EQ(w.calls, 3);
    CHECK_EQ(w.when, 3000);
    CHECK_EQ(pt_timer_reset(&ts, &t[0], 4500), 1); /* earlier, not than the head */
    CHECK_EQ(w.calls, 3);
    CHECK_EQ(pt_timer_reset(&ts, &t[2], 9000), 1); /* later */
    CHECK_EQ(w.calls, 3);
    CHECK_EQ(pt_timer_stop(&t[3]), 1); /* stopping never wakes */
    CHECK_EQ(w.calls, 3);
    CHECK_EQ(pt_timer_reset(&ts, &t[3], 100), 0); /* revived earlier than all */
    CHECK_EQ(w.calls, 4);
    CHECK_EQ(w.when, 100);
    CHECK_EQ(pt_timer_modify(&ts, &t[4], 50, 0, count_cb, &n, 0), 0); /* a new timer */
    CHECK_EQ(w.calls, 5);
    CHECK_EQ(w.when, 50);
    /* checks never wake */
    CHECK_EQ(pt_timers_check(&ts, 10000, true, NULL), 5);
    CHECK_EQ(w.calls, 5);
    /* and the empty heap wakes again */
    CHECK_EQ(pt_timer_start(&ts, &t[0], 20000, 0), 0);
    CHECK_EQ(w.calls, 6);
    CHECK_EQ(w.when, 20000);
    teardown(&ts, t, 5);
}

/* ---- callbacks that call back in -------------------------------------- */

struct self {
    pt_timers *ts;
    pt_timer *t;
    int calls, limit;
    pt_nanos again; /* re-arm at this when, or stop_sync if 0 */
    int (*stop)(pt_timer *t); /* what stop_self_cb calls */
    int ret;
};

/* Runs s->t once on s->ts, initialised here: its callback cb, on s, started
 * at 1000 with `period`, and a check at 1000 that runs just it. */
static void run_self_once(struct self *s, pt_func cb, pt_nanos period)
{
    pt_timers_init(s->ts, NULL, NULL);
    pt_timer_init(s->t, cb, s);
    CHECK_EQ(pt_timer_start(s->ts, s->t, 1000, period), 0);
    CHECK_EQ(pt_timers_check(s->ts, 1000, true, NULL), 1);
    CHECK_EQ(s->calls, 1);
}

/* Stops its own timer with s->stop. */
static void stop_self_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct self *s = arg;
    s->calls++;
    s->ret = s->stop(s->t);
}

static void reset_self_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct self *s = arg;
    s->calls++;
    if (s->calls < s->limit)
        s->ret = pt_timer_reset(s->ts, s->t, s->again + s->calls);
}

void test_one_shot_reset_from_its_callback_fires_at_next_due_check(void)
{
    pt_timers ts;
    pt_timer t;
    struct self s = {.ts = &ts, .t = &t, .limit = 3, .again = 2000, .ret = -1};
    run_self_once(&s, reset_self_cb, 0);
    CHECK_EQ(s.ret, 0); /* it had run: not pending */
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK_EQ(t.when, 2001);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 2001, true, NULL), 1);
    CHECK_EQ(s.calls, 2);
    CHECK_EQ(t.when, 2002);
    CHECK_EQ(pt_timers_check(&ts, 5000, true, NULL), 1);
    CHECK_EQ(s.calls, 3); /* the limit: no more re-arming */
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_check(&ts, 9000, true, NULL), 0);

    /* re-armed into the past: due within the same check */
    s.calls = 0;
    s.again = 0;
    s.limit = 4;
    CHECK_EQ(pt_timer_reset(&ts, &t, 10000), 0);
    CHECK_EQ(pt_timers_check(&ts, 10000, true, NULL), 4);
    CHECK_EQ(s.calls, 4);
    teardown(&ts, &t, 1);
}

void test_ticker_stop_synced_from_its_callback_never_fires_again(void)
{
    pt_timers ts;
    pt_timer t;
    struct self s = {.ts = &ts, .t = &t, .stop = pt_timer_stop_sync, .ret = -1};
    run_self_once(&s, stop_self_cb, 100);
    CHECK_EQ(s.ret, 1); /* the ticker was pending at its next tick */
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt__cb_running(atomic_load(&t.callbacks)), 0);
    CHECK_EQ(pt_timers_check(&ts, 1100, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 100000, true, NULL), 0);
    CHECK_EQ(s.calls, 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

static void stop_sync_and_free_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct self *s = arg;
    s->calls++;
    s->ret = pt_timer_stop_sync(s->t);
    memset(s->t, 0xa5, sizeof *s->t); /* any later touch of t reads garbage */
    free(s->t);
    s->t = NULL;
}

void test_heap_timer_stop_synced_and_freed_in_its_callback_is_clean(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0;
    /* a one-shot and a ticker, each freeing itself from its callback;
     * `after` is due in the same check, so the runner carries on after the
     * free (ASan reports any touch of the freed timer) */
    for (pt_nanos period = 0; period <= 100; period += 100) {
        pt_timer after;
        pt_timer_init(&after, count_cb, &n);
        CHECK_EQ(pt_timer_start(&ts, &after, 950, 0), 0);
        pt_timer *t = malloc(sizeof *t);
        CHECK(t != NULL);
        struct self s = {.ts = &ts, .t = t, .ret = -1};
        pt_timer_init(t, stop_sync_and_free_cb, &s);
        CHECK_EQ(pt_timer_start(&ts, t, 900, period), 0);
        CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 2);
        CHECK_EQ(s.calls, 1);
        CHECK_EQ(s.ret, period ? 1 : 0);
        CHECK(s.t == NULL);
        CHECK_EQ(pt_timers_len(&ts), 0);
        CHECK_VERIFIED(&ts, true);
        CHECK_EQ(pt_timers_check(&ts, 100000, true, NULL), 0);
    }
    CHECK_EQ(n, 2);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

struct others {
    pt_timers *ts;
    pt_timer *b, *c, *d, *e;
    int calls;
    int stop_b, reset_c, start_d, sync_e;
};

static void others_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct others *o = arg;
    o->calls++;
    o->stop_b = pt_timer_stop(o->b);
    o->reset_c = pt_timer_reset(o->ts, o->c, 1000);
    o->start_d = pt_timer_start(o->ts, o->d, 1000, 0);
    o->sync_e = pt_timer_stop_sync(o->e);
    /* and a check of the heap being run: nothing, no deadlock */
    CHECK_EQ(pt_timers_check(o->ts, 1000000, true, NULL), 0);
}

void test_callback_stops_resets_starts_and_stop_syncs_others_on_its_heap(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int nb = 0, nc = 0, nd = 0, ne = 0;
    pt_timer a, b, c, d, e;
    struct others o = {.ts = &ts, .b = &b, .c = &c, .d = &d, .e = &e};
    pt_timer_init(&a, others_cb, &o);
    pt_timer_init(&b, count_cb, &nb);
    pt_timer_init(&c, count_cb, &nc);
    pt_timer_init(&d, count_cb, &nd);
    pt_timer_init(&e, count_cb, &ne);
    CHECK_EQ(pt_timer_start(&ts, &a, 1000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &b, 2000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &c, 3000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &e, 5000, 0), 0);

    /* a runs; b stopped, c moved to now, d started at now, e unlinked:
     * c and d are due and run in the same check */
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 3);
    CHECK_EQ(o.calls, 1);
    CHECK_EQ(o.stop_b, 1);
    CHECK_EQ(o.reset_c, 1);
    CHECK_EQ(o.start_d, 0);
    CHECK_EQ(o.sync_e, 1);
    CHECK_EQ(nc, 1);
    CHECK_EQ(nd, 1);
    CHECK_STATUS(&b, PT_TIMER_REMOVED);
    CHECK_STATUS(&e, PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_check(&ts, 100000, true, NULL), 0);
    CHECK_EQ(nb, 0);
    CHECK_EQ(ne, 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_stop_from_own_callback_returns_pending_for_ticker_only(void)
{
    pt_timers ts;
    pt_timer t;
    struct self s = {.ts = &ts, .t = &t, .stop = pt_timer_stop, .ret = -1};
    run_self_once(&s, stop_self_cb, 0);
    CHECK_EQ(s.ret, 0); /* a one-shot is no longer pending in its callback */
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timer_start(&ts, &t, 2000, 100), 0);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(s.ret, 1); /* a ticker is */
    /* stopped at its next tick, the new head: the same check removes it */
    CHECK_STATUS(&t, PT_TIMER_REMOVED);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_check(&ts, 2100, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 100000, true, NULL), 0);
    CHECK_EQ(s.calls, 2);
    teardown(&ts, &t, 1);
}
