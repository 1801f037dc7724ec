/* Slack on the per-P heap (pt_timers_set_slack, ptimer/slack.h): timers
 * stay keyed at their `when`, and the heap asks to be checked by its
 * earliest `when` plus the slack, where a check runs every timer due; so
 * no timer runs before its `when` or after `when + slack`, and far fewer
 * checks find something to run (1000 timers over a second with windows of
 * 10 ms: at most 101). The clock is the test's: each round runs at the
 * heap's next time exactly (slack_rounds.h, the test every per-P family
 * shares). pt_slack_align, for a window of one timer's own, is tested
 * here too. */
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

/* A ticker keeps its phase: every tick in its own window, across many
 * periods, and a round at the earliest window's end serves every ticker
 * whose window is open by then. */
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
    /* 100 windows of 5 ms over each 50 ms period: a handful of rounds */
    CHECK(rounds <= 20 * (TICKS + 1));
    teardown(&ts, t, NK);
}

static pt_nanos woken_for;
static void record_wake(void *ctx, pt_nanos when)
{
    (void)ctx;
    woken_for = when;
}

/* What the heap asks of its owner is its earliest window's end: the next
 * time, a check's poll_until and the wake callback all name when + slack,
 * the key stays when, and a check before that end runs what is due. */
void test_slack_heap_asks_for_the_earliest_windows_end(void)
{
    pt_timers ts;
    CHECK_EQ(pt_timers_init(&ts, record_wake, NULL), 0);
    CHECK_EQ(pt_timers_set_slack(&ts, 5 * MS), 0);
    int n = 0;
    pt_timer t[2];
    pt_timer_init(&t[0], count_cb, &n);
    pt_timer_init(&t[1], count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &t[0], 100 * MS, 0), 0);
    CHECK_EQ(woken_for, 105 * MS);
    CHECK_EQ(heap_key(&t[0]), 100 * MS);
    CHECK_EQ(pt_timers_next(&ts), 105 * MS);
    CHECK_EQ(pt_timer_start(&ts, &t[1], 103 * MS, 0), 0);
    CHECK_EQ(pt_timers_next(&ts), 105 * MS); /* the earliest end is still t[0]'s */
    pt_nanos until = 0;
    CHECK_EQ(pt_timers_check(&ts, 99 * MS, true, &until), 0);
    CHECK_EQ(until, 105 * MS);
    CHECK_EQ(pt_timers_check(&ts, 103 * MS, true, &until), 2); /* both due: one round */
    CHECK_EQ(n, 2);
    CHECK_EQ(until, 0);
    teardown(&ts, t, 2);
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
