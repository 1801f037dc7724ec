/* The slack test every per-P family shares (ptimer/slack.h, each
 * family's set_slack): 1000 one-shots spread over a second, run at the
 * structure's next time round after round on the test's clock. With no
 * slack they take 1000 rounds; with windows of 10 ms each runs in its
 * window ([when, when + 10 ms], checked in the callback), on at most 101
 * rounds: the next time is the earliest when plus 10 ms, and a round
 * there runs every timer due by then, so rounds are 10 ms apart or more
 * over [1 s, 2.01 s]. SLACK_ROUNDS_TEST writes the test for one family
 * from its calls. */
#ifndef PT_TEST_SLACK_ROUNDS_H
#define PT_TEST_SLACK_ROUNDS_H

#include <stdint.h>

#include "base/rng.h"
#include "harness.h"
#include "ptimer/clock.h"

#define SLACK_NT 1000
#define SLACK_SEC ((pt_nanos)1000000000)
#define SLACK_WINDOW ((pt_nanos)10000000)

static pt_nanos slack_now; /* the round's now, for the callback */

struct slack_fired {
    pt_nanos when, slack;
    int runs;
};

static inline void slack_fired_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct slack_fired *f = arg;
    CHECK(slack_now >= f->when);           /* never early */
    CHECK(slack_now <= f->when + f->slack); /* never past its window */
    f->runs++;
}

/* The i-th timer's when, the same for every family and pass. */
static inline pt_nanos slack_when(uint64_t *x)
{
    return SLACK_SEC + (pt_nanos)(pt__xorshift64(x) % (uint64_t)SLACK_SEC);
}

static inline void slack_rounds_check(const int rounds[2])
{
    CHECK_EQ(rounds[0], SLACK_NT); /* distinct times, none shared */
    CHECK(rounds[1] <= (int)(SLACK_SEC / SLACK_WINDOW) + 1);
}

/* The test body for one family: H its heap type, T its timer's; the
 * calls take `h` (H *) and `t` (T *), and CHECK_AT runs what is due at
 * `now`, answering how many ran. */
#define SLACK_ROUNDS_TEST(H, T, INIT, SET_SLACK, TIMER_INIT, START, NEXT, CHECK_AT, DESTROY)       \
    do {                                                                                           \
        static T ts_[SLACK_NT];                                                                    \
        static struct slack_fired f_[SLACK_NT];                                                    \
        int rounds_[2] = {0, 0};                                                                   \
        for (int pass_ = 0; pass_ < 2; pass_++) {                                                  \
            H hh_;                                                                                 \
            H *h = &hh_;                                                                           \
            pt_nanos slack_ = pass_ ? SLACK_WINDOW : 0;                                            \
            CHECK_EQ(INIT, 0);                                                                     \
            CHECK_EQ(SET_SLACK(h, slack_), 0);                                                     \
            uint64_t x_ = 88172645463325252ull;                                                    \
            for (int i_ = 0; i_ < SLACK_NT; i_++) {                                                \
                T *t = &ts_[i_];                                                                   \
                f_[i_] = (struct slack_fired){.when = slack_when(&x_), .slack = slack_};           \
                TIMER_INIT(t, slack_fired_cb, &f_[i_]);                                            \
                CHECK_EQ(START(h, t, f_[i_].when, 0), 0);                                          \
            }                                                                                      \
            pt_nanos now;                                                                          \
            int checks_ = 0;                                                                       \
            while ((now = NEXT(h)) != 0) {                                                         \
                slack_now = now;                                                                   \
                int n_ = CHECK_AT;                                                                 \
                CHECK(n_ >= 0);                                                                    \
                rounds_[pass_] += n_ > 0;                                                          \
                CHECK(++checks_ <= 100 * SLACK_NT);                                                \
            }                                                                                      \
            for (int i_ = 0; i_ < SLACK_NT; i_++)                                                  \
                CHECK_EQ(f_[i_].runs, 1);                                                          \
            CHECK_EQ(DESTROY(h), 0);                                                               \
        }                                                                                          \
        slack_rounds_check(rounds_);                                                               \
    } while (0)

#endif
