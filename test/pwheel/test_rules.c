/* The wheel's rules, one thread, the clock driven by hand: where a timer
 * fires (never before its time, at the first check at or after it, at any
 * distance), what each call returns in each status, tickers, never,
 * next() as a lower bound that checks make exact, wake, move, destroy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A timer's firings: how many, and the `now` of the check that ran it. */
struct fired {
    int n;
    pt_nanos at;
    pt_nanos now; /* set by the test before each check */
};

static void fired_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct fired *f = arg;
    f->n++;
    f->at = f->now;
}

void test_timer_fires_at_its_time_and_not_one_ns_before(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    pt_nanos when = 5 * MS + 123;
    CHECK_EQ(pt_wheel_timer_start(&w, &t, when, 0), 0);
    CHECK_WSTATUS(&t, PT_WHEEL_PENDING);
    CHECK_EQ(pt_wheel_len(&w), 1);
    CHECK_WHEEL(&w);
    CHECK_EQ(pt_wheel_check(&w, when - 1, NULL), 0);
    CHECK_EQ(n, 0);
    CHECK_WHEEL(&w);
    CHECK_EQ(pt_wheel_check(&w, when, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_WSTATUS(&t, PT_WHEEL_IDLE);
    CHECK_EQ(pt_wheel_len(&w), 0);
    CHECK_EQ(pt_wheel_next(&w), 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_two_timers_in_one_tick_fire_each_at_its_own_time(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    struct fired a = {0}, b = {0};
    pt_wheel_timer ta, tb;
    pt_wheel_timer_init(&ta, fired_cb, &a);
    pt_wheel_timer_init(&tb, fired_cb, &b);
    pt_nanos base = 1000 * TICK; /* the start of a tick */
    CHECK_EQ(pt_wheel_timer_start(&w, &tb, base + 900, 0), 0);
    CHECK_EQ(pt_wheel_timer_start(&w, &ta, base + 100, 0), 0);
    CHECK_EQ(pt_wheel_check(&w, base, NULL), 0); /* cascades them to level 0 */
    pt_nanos next;
    a.now = b.now = base + 100;
    CHECK_EQ(pt_wheel_check(&w, base + 100, &next), 1);
    CHECK_EQ(a.n, 1);
    CHECK_EQ(b.n, 0);
    CHECK_EQ(next, base + 900); /* exact on level 0, not the tick's end */
    CHECK_EQ(pt_wheel_next(&w), base + 900);
    CHECK_EQ(pt_wheel_check(&w, base + 899, NULL), 0);
    CHECK_EQ(pt_wheel_check(&w, base + 900, &next), 1);
    CHECK_EQ(b.n, 1);
    CHECK_EQ(next, 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

/* At every distance, from one tick to years, a timer is never run early
 * and is run by the first check at or after its time; following next()
 * from check to check reaches it in at most one look per level. */
void test_far_timers_cascade_and_fire_exactly_when_next_is_followed(void)
{
    static const pt_nanos distances[] = {
        1,         TICK - 1, TICK,       63 * TICK,     64 * TICK,
        65 * TICK, 100 * MS, 4 * SECOND, 3600 * SECOND, (pt_nanos)86400 * 365 * SECOND};
    for (size_t i = 0; i < sizeof distances / sizeof distances[0]; i++) {
        for (pt_nanos start = 0; start < 3; start++) {
            pt_wheel w;
            CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
            pt_nanos now = SECOND + start * 7777777; /* different alignments */
            CHECK_EQ(pt_wheel_check(&w, now, NULL), 0);
            struct fired f = {0};
            pt_wheel_timer t;
            pt_wheel_timer_init(&t, fired_cb, &f);
            pt_nanos when = now + distances[i];
            CHECK_EQ(pt_wheel_timer_start(&w, &t, when, 0), 0);
            int looks = 0;
            while (f.n == 0) {
                pt_nanos next = pt_wheel_next(&w);
                CHECK(next > now);
                CHECK(next <= when); /* a lower bound */
                now = next;
                f.now = now;
                pt_wheel_check(&w, now, NULL);
                CHECK_WHEEL(&w);
                CHECK(++looks <= PT_WHEEL_LEVELS + 1);
            }
            CHECK_EQ(f.at, when);
            CHECK_EQ(pt_wheel_destroy(&w), 0);
        }
    }
}

/* Many timers at random times over six orders of magnitude, the clock
 * advanced in random steps: each runs exactly once, at the first check at
 * or after its time (its seq is its time). */
static pt_nanos g_now, g_prev;
static int g_fired;

static void in_time_cb(void *arg, uintptr_t seq)
{
    pt_nanos when = (pt_nanos)seq;
    CHECK(when <= g_now); /* never early */
    CHECK(when > g_prev); /* not left for a later check */
    ++*(int *)arg;
    g_fired++;
}

void test_random_timers_each_fire_once_at_the_first_check_at_or_after_their_time(void)
{
    enum { N = 20000 };
    static pt_wheel_timer t[N];
    static int n[N];
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    uint64_t rng = 12345;
    g_now = g_prev = 10 * SECOND;
    g_fired = 0;
    CHECK_EQ(pt_wheel_check(&w, g_now, NULL), 0);
    for (int i = 0; i < N; i++) {
        n[i] = 0;
        pt_wheel_timer_init(&t[i], in_time_cb, &n[i]);
        pt_nanos scale = (pt_nanos)1 << (10 + pt__xorshift64(&rng) % 25); /* 1 us .. 17 s */
        pt_nanos when = g_now + 1 + (pt_nanos)(pt__xorshift64(&rng) % (uint64_t)scale);
        CHECK_EQ(pt_wheel_timer_modify(&w, &t[i], when, 0, in_time_cb, &n[i], (uintptr_t)when), 0);
    }
    CHECK_WHEEL(&w);
    while (g_fired < N) {
        g_prev = g_now;
        g_now += 1 + (pt_nanos)(pt__xorshift64(&rng) % (uint64_t)(2 * MS));
        pt_wheel_check(&w, g_now, NULL);
        if (pt__xorshift64(&rng) % 256 == 0)
            CHECK_WHEEL(&w);
        CHECK(g_now < 40 * SECOND);
    }
    for (int i = 0; i < N; i++)
        CHECK_EQ(n[i], 1);
    CHECK_EQ(pt_wheel_len(&w), 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_stop_of_pending_timer_unlinks_it_at_once_and_returns_one(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, 100 * MS, 0), 0);
    CHECK_EQ(pt_wheel_timer_stop(&t), 1);
    CHECK_WSTATUS(&t, PT_WHEEL_IDLE);
    CHECK_EQ(pt_wheel_len(&w), 0);
    CHECK_EQ(atomic_load(&t.wheel), NULL); /* names no wheel: nothing left to clean */
    CHECK_WHEEL(&w);
    CHECK_EQ(pt_wheel_timer_stop(&t), 0);
    CHECK_EQ(pt_wheel_check(&w, SECOND, NULL), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0); /* nothing held */
}

void test_start_of_pending_timer_returns_ebusy_and_changes_nothing(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, 100 * MS, 0), 0);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, 1 * MS, 5), -EBUSY);
    CHECK_EQ(t.when, 100 * MS);
    CHECK_EQ(t.period, 0);
    CHECK_EQ(pt_wheel_check(&w, 99 * MS, NULL), 0);
    CHECK_EQ(pt_wheel_check(&w, 100 * MS, NULL), 1);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_reset_of_pending_timer_stays_on_its_wheel_and_idle_one_goes_onto_the_wheel_passed(void)
{
    pt_wheel a, b;
    CHECK_EQ(pt_wheel_init(&a, 0, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_init(&b, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_reset(&a, &t, 10 * MS), 0); /* idle: onto a */
    CHECK_EQ(pt_wheel_len(&a), 1);
    CHECK_EQ(pt_wheel_timer_reset(&b, &t, 20 * MS), 1); /* pending: stays on a */
    CHECK_EQ(pt_wheel_len(&a), 1);
    CHECK_EQ(pt_wheel_len(&b), 0);
    CHECK_EQ(pt_wheel_check(&a, 10 * MS, NULL), 0);                          /* moved later */
    CHECK_EQ(pt_wheel_timer_modify(&b, &t, 5 * MS, 0, wcount_cb, &n, 7), 1); /* earlier */
    CHECK_EQ(pt_wheel_check(&a, 10 * MS, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_wheel_timer_reset(&b, &t, 30 * MS), 0); /* idle again: onto b */
    CHECK_EQ(pt_wheel_len(&b), 1);
    CHECK_EQ(pt_wheel_timer_stop(&t), 1);
    CHECK_WHEEL(&a);
    CHECK_WHEEL(&b);
    CHECK_EQ(pt_wheel_destroy(&a), 0);
    CHECK_EQ(pt_wheel_destroy(&b), 0);
}

void test_ticker_skips_missed_ticks_after_a_late_check(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, 10 * MS, 3 * MS), 0);
    CHECK_EQ(pt_wheel_check(&w, 10 * MS, NULL), 1);
    CHECK_WSTATUS(&t, PT_WHEEL_PENDING);
    CHECK_EQ(t.when, 13 * MS);
    /* 20 ms late: one run, the next tick the first after now */
    CHECK_EQ(pt_wheel_check(&w, 33 * MS + 1, NULL), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(t.when, 34 * MS);
    CHECK(pt_wheel_next(&w) > 33 * MS + 1); /* a lower bound: 34 ms may be a level up */
    CHECK(pt_wheel_next(&w) <= 34 * MS);
    CHECK_EQ(pt_wheel_timer_stop(&t), 1);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

static void wfiring_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    firings_record(arg, pt_wheel_firing);
}

void test_firing_names_the_tick_due_and_the_checks_now(void)
{
    pt_nanos when = 7, now = 7;
    CHECK_EQ(pt_wheel_firing(&when, &now), -ENOENT);
    CHECK_EQ(when, 7);
    CHECK_EQ(pt_wheel_firing(NULL, &now), -EINVAL);
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    struct firings f = {0};
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wfiring_cb, &f);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, 10 * MS, 3 * MS), 0);
    CHECK_EQ(pt_wheel_check(&w, 10 * MS, NULL), 1);
    CHECK_EQ(pt_wheel_check(&w, 14 * MS, NULL), 1);     /* 1 ms late */
    CHECK_EQ(pt_wheel_check(&w, 33 * MS + 1, NULL), 1); /* 16..31 owed: one run */
    CHECK_EQ(pt_wheel_check(&w, 34 * MS, NULL), 1);
    const pt_nanos when_want[] = {10 * MS, 13 * MS, 16 * MS, 34 * MS},
                   now_want[] = {10 * MS, 14 * MS, 33 * MS + 1, 34 * MS};
    firings_check(&f, when_want, now_want, 4);
    CHECK_EQ(pt_wheel_firing(&when, &now), -ENOENT);
    CHECK_EQ(pt_wheel_timer_stop(&t), 1);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_never_timer_is_pending_yet_never_fires_and_ticker_overflow_is_never(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer t, u, v;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    pt_wheel_timer_init(&u, wcount_cb, &n);
    pt_wheel_timer_init(&v, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, -1, 0), 0);
    CHECK_EQ(pt_wheel_next(&w), 0); /* nothing that can come due */
    CHECK_EQ(pt_wheel_timer_start(&w, &u, PT_MAXWHEN - 5, INT64_MAX / 2), 0); /* far list */
    CHECK_EQ(pt_wheel_timer_start(&w, &v, 0, 0), 0);                          /* 0: at once */
    CHECK_EQ(pt_wheel_next(&w), 1);
    CHECK_WHEEL(&w);
    CHECK_EQ(pt_wheel_check(&w, 1, NULL), 1);
    CHECK_EQ(pt_wheel_check(&w, PT_MAXWHEN - 6, NULL), 0);
    CHECK_WHEEL(&w);
    CHECK_EQ(pt_wheel_check(&w, PT_MAXWHEN - 1, NULL), 1); /* u ran; its next overflows */
    CHECK_EQ(n, 2);
    CHECK_WSTATUS(&u, PT_WHEEL_PENDING);
    CHECK_EQ(u.when, PT_MAXWHEN);
    CHECK_EQ(pt_wheel_check(&w, PT_MAXWHEN, NULL), 0);
    CHECK_EQ(pt_wheel_len(&w), 2);
    CHECK_WHEEL(&w);
    CHECK_EQ(pt_wheel_timer_stop(&t), 1);
    CHECK_EQ(pt_wheel_timer_stop(&u), 1);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_next_stays_a_lower_bound_after_stop_and_a_check_makes_it_exact(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer a, b;
    pt_wheel_timer_init(&a, wcount_cb, &n);
    pt_wheel_timer_init(&b, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_start(&w, &a, 2 * MS + 5, 0), 0);
    CHECK_EQ(pt_wheel_timer_start(&w, &b, 2 * MS + 9, 0), 0);
    CHECK_EQ(pt_wheel_next(&w), 2 * MS + 5);
    CHECK_EQ(pt_wheel_timer_stop(&a), 1);
    CHECK_EQ(pt_wheel_next(&w), 2 * MS + 5); /* stale but low: no lock, no scan */
    pt_nanos next;
    CHECK_EQ(pt_wheel_check(&w, 2 * MS + 5, &next), 0);
    CHECK_EQ(next, 2 * MS + 9);
    CHECK_EQ(pt_wheel_timer_stop(&b), 1);
    CHECK_EQ(pt_wheel_check(&w, 2 * MS + 9, &next), 0);
    CHECK_EQ(next, 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

struct wakes {
    int n;
    pt_nanos when;
};

static void wake_cb(void *ctx, pt_nanos when)
{
    struct wakes *k = ctx;
    k->n++;
    k->when = when;
}

void test_wake_runs_only_when_an_arm_makes_a_new_earliest_time(void)
{
    struct wakes k = {0};
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, wake_cb, &k), 0);
    int n = 0;
    pt_wheel_timer a, b, c;
    pt_wheel_timer_init(&a, wcount_cb, &n);
    pt_wheel_timer_init(&b, wcount_cb, &n);
    pt_wheel_timer_init(&c, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_start(&w, &a, 50 * MS, 0), 0);
    CHECK_EQ(k.n, 1);
    CHECK_EQ(k.when, 50 * MS);
    CHECK_EQ(pt_wheel_timer_start(&w, &b, 60 * MS, 0), 0);
    CHECK_EQ(k.n, 1);
    CHECK_EQ(pt_wheel_timer_start(&w, &c, -1, 0), 0); /* never: no wake */
    CHECK_EQ(k.n, 1);
    CHECK_EQ(pt_wheel_timer_reset(&w, &b, 40 * MS), 1);
    CHECK_EQ(k.n, 2);
    CHECK_EQ(k.when, 40 * MS);
    CHECK_EQ(pt_wheel_check(&w, 40 * MS, NULL), 1);
    CHECK_EQ(k.n, 2); /* checks never wake */
    CHECK_EQ(pt_wheel_timer_stop(&a), 1);
    CHECK_EQ(pt_wheel_timer_stop(&c), 1);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_move_carries_every_pending_timer_and_wakes_dst(void)
{
    struct wakes k = {0};
    pt_wheel src, dst;
    CHECK_EQ(pt_wheel_init(&src, 0, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_init(&dst, 0, wake_cb, &k), 0);
    enum { N = 300 };
    static pt_wheel_timer t[N];
    int n = 0;
    for (int i = 0; i < N; i++) {
        pt_wheel_timer_init(&t[i], wcount_cb, &n);
        CHECK_EQ(pt_wheel_timer_start(&src, &t[i], i == 0 ? -1 : (pt_nanos)i * 997 * US, 0), 0);
    }
    CHECK_EQ(pt_wheel_check(&src, 100 * MS, NULL), 100); /* some cascaded, some ran */
    CHECK_EQ(pt_wheel_move(&dst, &src), 0);
    CHECK_EQ(pt_wheel_len(&src), 0);
    CHECK_EQ(pt_wheel_next(&src), 0);
    CHECK_EQ(pt_wheel_len(&dst), N - 100);
    CHECK_EQ(k.n, 1);
    CHECK_EQ(k.when, 101 * 997 * US);
    CHECK_WHEEL(&src);
    CHECK_WHEEL(&dst);
    CHECK_EQ(pt_wheel_destroy(&src), 0);
    CHECK_EQ(pt_wheel_check(&dst, SECOND, NULL), N - 101);
    CHECK_EQ(n, N - 1);
    CHECK_EQ(pt_wheel_timer_stop(&t[0]), 1);
    CHECK_EQ(pt_wheel_destroy(&dst), 0);
}

void test_destroy_refuses_while_a_timer_is_pending(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, -1, 0), 0);
    CHECK_EQ(pt_wheel_destroy(&w), -EBUSY);
    CHECK_WSTATUS(&t, PT_WHEEL_PENDING);
    CHECK_EQ(pt_wheel_timer_stop(&t), 1);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
    CHECK_EQ(pt_wheel_destroy(&w), -EINVAL);
}

/* ---- callbacks acting on their own timer ------------------------------- */

struct self {
    pt_wheel *other;
    pt_wheel_timer *t;
    int n;
    int ret;
    int what; /* 0 re-arm onto other, 1 stop_sync then free, 2 move src */
    pt_wheel *w;
};

static void self_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct self *s = arg;
    s->n++;
    if (s->what == 0) {
        CHECK_WSTATUS(s->t, PT_WHEEL_RUNNING);
        s->ret = pt_wheel_timer_start(s->other, s->t, 5 * MS, 0);
    } else if (s->what == 1) {
        s->ret = pt_wheel_timer_stop_sync(s->t);
        CHECK_WSTATUS(s->t, PT_WHEEL_IDLE);
        memset(s->t, 0xdd, sizeof *s->t); /* as free() would leave it */
        free(s->t);
        s->t = NULL;
    } else {
        s->ret = pt_wheel_move(s->other, s->w);
    }
}

void test_callback_rearming_its_timer_keeps_it_on_the_wheel_running_it(void)
{
    pt_wheel a, b;
    CHECK_EQ(pt_wheel_init(&a, 0, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_init(&b, 0, NULL, NULL), 0);
    pt_wheel_timer t;
    struct self s = {.other = &b, .t = &t, .what = 0};
    pt_wheel_timer_init(&t, self_cb, &s);
    CHECK_EQ(pt_wheel_timer_start(&a, &t, 1 * MS, 0), 0);
    CHECK_EQ(pt_wheel_check(&a, 1 * MS, NULL), 1);
    CHECK_EQ(s.ret, 0);
    CHECK_EQ(pt_wheel_len(&a), 1); /* on a, as stop_sync must find it */
    CHECK_EQ(pt_wheel_len(&b), 0);
    CHECK_WSTATUS(&t, PT_WHEEL_PENDING);
    CHECK_EQ(pt_wheel_timer_stop_sync(&t), 1);
    CHECK_EQ(pt_wheel_destroy(&a), 0);
    CHECK_EQ(pt_wheel_destroy(&b), 0);
}

void test_stop_sync_from_own_callback_then_free(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    for (pt_nanos period = 0; period <= 1; period++) { /* a one-shot, then a ticker */
        pt_wheel_timer *t = malloc(sizeof *t);
        CHECK(t);
        struct self s = {.t = t, .what = 1};
        pt_wheel_timer_init(t, self_cb, &s);
        CHECK_EQ(pt_wheel_timer_start(&w, t, 1 * MS, period * MS), 0);
        CHECK_EQ(pt_wheel_check(&w, 1 * MS + period * 5 * MS, NULL), 1);
        CHECK_EQ(s.n, 1);
        CHECK_EQ(s.ret, (int)period); /* the ticker was pending again */
        CHECK_EQ(pt_wheel_len(&w), 0);
        CHECK_WHEEL(&w);
    }
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_move_and_destroy_refuse_while_a_callback_runs(void)
{
    pt_wheel a, b;
    CHECK_EQ(pt_wheel_init(&a, 0, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_init(&b, 0, NULL, NULL), 0);
    pt_wheel_timer t;
    struct self s = {.other = &b, .t = &t, .what = 2, .w = &a};
    pt_wheel_timer_init(&t, self_cb, &s);
    CHECK_EQ(pt_wheel_timer_start(&a, &t, 1 * MS, 0), 0);
    CHECK_EQ(pt_wheel_check(&a, 1 * MS, NULL), 1);
    CHECK_EQ(s.ret, -EBUSY);
    CHECK_WSTATUS(&t, PT_WHEEL_IDLE);
    CHECK_EQ(pt_wheel_destroy(&a), 0);
    CHECK_EQ(pt_wheel_destroy(&b), 0);
}

void test_timers_armed_by_a_callback_at_now_run_on_the_next_check(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    pt_wheel_timer t;
    struct self s = {.other = &w, .t = &t, .what = 0};
    pt_wheel_timer_init(&t, self_cb, &s);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, 5 * MS, 0), 0); /* re-arms itself at 5 ms */
    pt_nanos next;
    CHECK_EQ(pt_wheel_check(&w, 6 * MS, &next), 1);
    CHECK(next <= 6 * MS); /* due: the caller looks again at once */
    CHECK_EQ(pt_wheel_check(&w, 6 * MS, &next), 1);
    CHECK_EQ(s.n, 2);
    CHECK_EQ(pt_wheel_timer_stop(&t), 1);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

void test_tick_is_a_power_of_two_from_1us_to_1ms(void)
{
    pt_wheel w;
    memset(&w, 0x5a, sizeof w);
    CHECK_EQ(pt_wheel_init(&w, 1000, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_wheel_init(&w, 512, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_wheel_init(&w, (pt_nanos)1 << 21, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_wheel_init(&w, -1024, NULL, NULL), -EINVAL);
    CHECK_EQ(w.magic, 0x5a5a5a5au); /* left as it was */
    for (int shift = 10; shift <= 20; shift++) {
        CHECK_EQ(pt_wheel_init(&w, (pt_nanos)1 << shift, NULL, NULL), 0);
        int n = 0;
        pt_wheel_timer t;
        pt_wheel_timer_init(&t, wcount_cb, &n);
        CHECK_EQ(pt_wheel_timer_start(&w, &t, 3 * SECOND + 1, 0), 0);
        CHECK_EQ(pt_wheel_check(&w, 3 * SECOND, NULL), 0);
        CHECK_EQ(pt_wheel_check(&w, 3 * SECOND + 1, NULL), 1);
        CHECK_EQ(pt_wheel_destroy(&w), 0);
    }
}
