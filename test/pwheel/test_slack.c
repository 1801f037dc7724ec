/* Slack on the wheel (pt_wheel_set_slack, ptimer/slack.h): every arm is
 * filed at the coarsest round time of its window, so timers whose
 * windows overlap share a slot (slack_rounds.h says what is checked). */
#include <errno.h>

#include "slack_rounds.h"
#include "util.h"

void test_slack_wheel_runs_each_in_its_window_on_far_fewer_rounds(void)
{
    SLACK_ROUNDS_TEST(pt_wheel, pt_wheel_timer, pt_wheel_init(h, 0, NULL, NULL), pt_wheel_set_slack,
                      pt_wheel_timer_init, pt_wheel_timer_start, pt_wheel_next,
                      pt_wheel_check(h, now, NULL), pt_wheel_destroy);
}

void test_slack_wheel_bad_input_changes_nothing(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_set_slack(NULL, 1), -EINVAL);
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_set_slack(&w, -1), -EINVAL);
    CHECK_EQ(w.slack, 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}
