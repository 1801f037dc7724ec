/* Slack on the wheel (pt_lheap_set_slack, ptimer/slack.h): every arm is
 * keyed at the coarsest round time of its window, so no timer runs before
 * its `when` or after `when + slack`, and timers whose windows overlap
 * share a key: far fewer checks find something to run. The clock is the
 * test's: each round runs at the heap's next time. */
#include <errno.h>

#include "util.h"

static pt_nanos now_of_test;
struct wfired {
    pt_nanos when, slack;
    int runs;
};

static void wfired_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct wfired *f = arg;
    CHECK(now_of_test >= f->when);
    CHECK(now_of_test <= f->when + f->slack);
    f->runs++;
}

#define NT 1000

void test_slack_lheap_runs_each_in_its_window_on_far_fewer_rounds(void)
{
    static pt_lheap_timer t[NT];
    static struct wfired f[NT];
    int rounds[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        pt_nanos slack = pass ? 10 * MS : 0;
        pt_lheap w;
        CHECK_EQ(pt_lheap_init(&w, NULL, NULL), 0);
        CHECK_EQ(pt_lheap_set_slack(&w, slack), 0);
        uint64_t x = 88172645463325252ull;
        for (int i = 0; i < NT; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            f[i] = (struct wfired){.when = SECOND + (pt_nanos)(x % (uint64_t)SECOND),
                                   .slack = slack};
            pt_lheap_timer_init(&t[i], wfired_cb, &f[i]);
            CHECK_EQ(pt_lheap_timer_start(&w, &t[i], f[i].when, 0), 0);
        }
        pt_nanos next;
        int checks = 0;
        while ((next = pt_lheap_next(&w)) != 0) {
            now_of_test = next;
            int n = pt_lheap_check(&w, next, NULL);
            CHECK(n >= 0);
            rounds[pass] += n > 0;
            CHECK(++checks <= 100 * NT);
        }
        for (int i = 0; i < NT; i++)
            CHECK_EQ(f[i].runs, 1);
        CHECK_EQ(pt_lheap_destroy(&w), 0);
    }
    CHECK_EQ(rounds[0], NT);
    /* a window of 10 ms holds a multiple of 2^23 ns: at most 120 keys */
    CHECK(rounds[1] <= (int)(SECOND / (1 << 23)) + 1);
}

void test_slack_lheap_bad_input_changes_nothing(void)
{
    pt_lheap w;
    CHECK_EQ(pt_lheap_set_slack(NULL, 1), -EINVAL);
    CHECK_EQ(pt_lheap_init(&w, NULL, NULL), 0);
    CHECK_EQ(pt_lheap_set_slack(&w, -1), -EINVAL);
    CHECK_EQ(w.slack, 0);
    CHECK_EQ(pt_lheap_destroy(&w), 0);
}
