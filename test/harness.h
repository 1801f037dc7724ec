/* The test harness: one table of tests per part (list.h, one PT_TEST line
 * each, read by CMake too so every test is its own ctest entry with its
 * label), and CHECK macros that abort with the expression and values. */
#ifndef PT_TEST_HARNESS_H
#define PT_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct pt_test {
    const char *name;
    const char *label;
    void (*fn)(void);
    void (*fn_mode)(int mode); /* or, for a test run in each mode: this, with */
    int mode;
};

int pt_test_main(const struct pt_test *tests, size_t n, int argc, char **argv);

/* A test that cannot run in this build or on this machine says why and
 * returns: the harness prints "skip" with the reason, and a run of that
 * test alone exits PT_TEST_SKIP_CODE, which ctest counts as skipped
 * (SKIP_RETURN_CODE), never as passed. */
#define PT_TEST_SKIP_CODE 77
void pt_test_skip(const char *why);
#define SKIP(why)                                                                              \
    do {                                                                                       \
        pt_test_skip(why);                                                                     \
        return;                                                                                \
    } while (0)

/* Threads of this process whose name starts with `prefix` (from /proc):
 * how a test waits for a thread that exits on its own, such as a
 * TimerThread destroyed from its own callback ("pt_timerthread"). */
int pt_test_threads_named(const char *prefix);

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

#define CHECK_EQ(a, b)                                                                         \
    do {                                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                                    \
        if (a_ != b_) {                                                                        \
            fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %lld != %lld\n", __FILE__,        \
                    __LINE__, #a, #b, a_, b_);                                                 \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* pt_timers_verify(ts, quiescent) passes; if not, what it found. A macro
 * (the harness does not include ptimer.h): the caller does. */
#define CHECK_VERIFIED(ts, quiescent)                                                          \
    do {                                                                                       \
        int v_ = pt_timers_verify((ts), (quiescent));                                          \
        if (v_ != 0) {                                                                         \
            fprintf(stderr, "%s:%d: pt_timers_verify(%s) = %d: %s\n", __FILE__, __LINE__, #ts, \
                    v_, pt_timers_verify_report());                                            \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* What each firing of a timer said it was for, in order: a callback
 * records the answer of its family's pt_*_firing (pt_timers_firing,
 * pt_wheel_firing, pt_lheap_firing), and the test compares them all. */
#include "ptimer/clock.h"
#define FIRINGS_MAX 4
struct firings {
    int n;
    pt_nanos when[FIRINGS_MAX], now[FIRINGS_MAX];
};

static inline void firings_record(struct firings *f, int (*firing)(pt_nanos *, pt_nanos *))
{
    CHECK(f->n < FIRINGS_MAX);
    CHECK_EQ(firing(&f->when[f->n], &f->now[f->n]), 0);
    f->n++;
}

static inline void firings_check(const struct firings *f, const pt_nanos *when, const pt_nanos *now,
                                 int n)
{
    CHECK_EQ(f->n, n);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(f->when[i], when[i]);
        CHECK_EQ(f->now[i], now[i]);
    }
}

/* A fast, reproducible pseudo-random sequence for tests (the state must
 * start nonzero): the project's one pt__xorshift64. */
#include "base/rng.h"

/* PT__SANITIZED (base/sanitized.h): sanitized builds scale the stress
 * loops down, as they run many times slower. */
#include "base/sanitized.h"

#endif
