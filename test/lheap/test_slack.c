/* Slack on Go 1.23's heap (pt_lheap_set_slack, ptimer/slack.h): every
 * arm is keyed at the coarsest round time of its window, so timers whose
 * windows overlap share a key (slack_rounds.h says what is checked). */
#include <errno.h>

#include "slack_rounds.h"
#include "util.h"

void test_slack_lheap_runs_each_in_its_window_on_far_fewer_rounds(void)
{
    SLACK_ROUNDS_TEST(pt_lheap, pt_lheap_timer, pt_lheap_init(h, NULL, NULL), pt_lheap_set_slack,
                      pt_lheap_timer_init, pt_lheap_timer_start, pt_lheap_next,
                      pt_lheap_check(h, now, NULL), pt_lheap_destroy);
}

void test_slack_lheap_bad_input_changes_nothing(void)
{
    pt_lheap h;
    CHECK_EQ(pt_lheap_set_slack(NULL, 1), -EINVAL);
    CHECK_EQ(pt_lheap_init(&h, NULL, NULL), 0);
    CHECK_EQ(pt_lheap_set_slack(&h, -1), -EINVAL);
    CHECK_EQ(h.slack, 0);
    CHECK_EQ(pt_lheap_destroy(&h), 0);
}
