/* Slack on the per-P heap (pt_timers_set_slack, ptimer/slack.h): every
 * arm is keyed at the coarsest round time of its window, so no timer runs
 * before its `when` or after `when + slack`, and timers whose windows
 * overlap share keys: far fewer checks find something to run (a
 * window of 10 ms holds a multiple of 2^23 ns, so 1000 timers over a
 * second land on at most 120 keys). The clock
 * is the test's: each round runs at the heap's next time exactly
 * (slack_rounds.h, the test every per-P family shares). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "ptimer/slack.h"
#include "slack_rounds.h"
#include "util.h"

#define MS ((pt_nanos)1000000)

void test_slack_align_is_in_the_window_with_the_most_trailing_zeros(void)
{
    CHECK_EQ(pt_slack_align(5, 10), 8);
    CHECK_EQ(pt_slack_align(8, 0), 8);
    CHECK_EQ(pt_slack_align(7, -3), 7);
    CHECK_EQ(pt_slack_align(0, 100), 0);   /* at once stays at once */
    CHECK_EQ(pt_slack_align(-1, 100), -1); /* never stays never */
    CHECK_EQ(pt_slack_align(PT_MAXWHEN, 10), PT_MAXWHEN);
    /* past the range: the window ends at PT_MAXWHEN - 1 */
    CHECK_EQ(pt_slack_align(PT_MAXWHEN - 5, 10), PT_MAXWHEN - 3);
    CHECK_EQ(pt_slack_align(PT_MAXWHEN - 10, 10), PT_MAXWHEN - 7);
    CHECK_EQ(pt_slack_align(1, PT_MAXWHEN - 1), (pt_nanos)1 << 62);
    CHECK_EQ(pt_slack_align(1, PT_MAXWHEN), (pt_nanos)1 << 62);
    CHECK_EQ(pt_slack_align(1, 1), 2);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 100000; i++) {
        pt__xorshift64(&x);
        pt_nanos when = 1 + (pt_nanos)(x % (1ull << 50)), slack = (pt_nanos)((x >> 20) % (1u << (i % 30)));
        pt_nanos a = pt_slack_align(when, slack);
        CHECK(a >= when);
        CHECK(a <= when + slack);
        /* no time in the window is a multiple of a larger power of two */
        if (a != 0) {
            pt_nanos bigger = (pt_nanos)1 << (__builtin_ctzll((uint64_t)a) + 1);
            pt_nanos first = (when + bigger - 1) / bigger * bigger;
            CHECK(first > when + slack);
        }
    }
}

static pt_nanos now_of_test;
struct fired {
    pt_nanos when, slack, at, period;
    int runs;
};

static void fired_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct fired *f = arg;
    pt_nanos due = f->when + f->runs * f->period;
    CHECK(now_of_test >= due);               /* never early */
    CHECK(now_of_test <= due + f->slack);    /* never past its window */
    f->at = now_of_test;
    f->runs++;
}

void test_slack_heap_runs_each_in_its_window_on_far_fewer_rounds(void)
{
    SLACK_ROUNDS_TEST(pt_timers, pt_timer, pt_timers_init(h, NULL, NULL), pt_timers_set_slack,
                      pt_timer_init, pt_timer_start, pt_timers_next,
                      pt_timers_check(h, now, true, NULL), pt_timers_destroy);
}

/* A ticker keeps its offset: every tick in its own window, across many
 * periods, and tickers of one period with overlapping first windows share
 * their rounds for good. */
void test_slack_tickers_keep_every_tick_in_its_window(void)
{
    enum { NK = 100, TICKS = 20 };
    static pt_timer t[NK];
    static struct fired f[NK];
    pt_timers ts;
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    CHECK_EQ(pt_timers_set_slack(&ts, 5 * MS), 0);
    for (int i = 0; i < NK; i++) {
        f[i] = (struct fired){.when = 1000 * MS + i * (pt_nanos)(MS / 2), .slack = 5 * MS,
                              .period = 50 * MS};
        pt_timer_init(&t[i], fired_cb, &f[i]);
        CHECK_EQ(pt_timer_start(&ts, &t[i], f[i].when, f[i].period), 0);
    }
    int rounds = 0;
    while (f[NK - 1].runs < TICKS) {
        now_of_test = pt_timers_next(&ts);
        CHECK(now_of_test != 0);
        if (pt_timers_check(&ts, now_of_test, true, NULL) > 0)
            rounds++;
        CHECK(rounds <= NK * TICKS);
    }
    /* 100 first windows of 5 ms over 50 ms: a handful of keys a period */
    CHECK(rounds <= 20 * (TICKS + 1));
    teardown(&ts, t, NK);
}

void test_slack_bad_input_changes_nothing(void)
{
    pt_timers ts;
    CHECK_EQ(pt_timers_set_slack(NULL, 5), -EINVAL);
    CHECK_EQ(pt_timers_init(&ts, NULL, NULL), 0);
    CHECK_EQ(pt_timers_set_slack(&ts, -1), -EINVAL);
    int n = 0;
    pt_timer t;
    pt_timer_init(&t, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &t, 1001, 0), 0);
    CHECK_EQ(heap_key(&t), 1001); /* no slack: as asked */
    teardown(&ts, &t, 1);
}
