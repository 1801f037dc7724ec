/* The bad-input table's rows for clock.h (test_badinput.c runs them and
 * checks that every function clock.h declares has one). None of its
 * functions takes an argument or can fail: each row says so, and checks
 * the answer the header promises. The one bad input the clock has is the
 * environment (PT_CLOCK naming no source, or asking for a counter this
 * machine cannot use), which is answered by pt_clock_fallback, not
 * refused; the clock suite runs these calls under each PT_CLOCK value
 * (test/CMakeLists.txt), this row under the one it is given. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "badinput.h"
#include "harness.h"
#include "ptimer/clock.h"

/* Nothing to refuse: a CLOCK_MONOTONIC time, never going backwards. */
static void row_pt_nanotime(void)
{
    pt_nanos a = pt_nanotime();
    pt_nanos b = pt_nanotime();
    CHECK(a > 0);
    CHECK(b >= a);
}

/* Nothing to refuse: a time the clock had reached, so never past a
 * pt_nanotime read after it returned. */
static void row_pt_nanotime_relaxed(void)
{
    pt_nanos r = pt_nanotime_relaxed();
    pt_nanos after = pt_nanotime();
    CHECK(r > 0);
    CHECK(r <= after); /* (it may trail a pt_nanotime read before it) */
}

/* Nothing to refuse: one of the two sources, the same at every call. */
static void row_pt_clock_source(void)
{
    enum pt_clock_source s = pt_clock_source();
    CHECK(s == PT_CLOCK_MONOTONIC || s == PT_CLOCK_TSC);
    CHECK_EQ(pt_clock_source(), s);
}

/* Nothing to refuse: the answer for the environment this process has.
 * 0 exactly when the source is the one asked for; a PT_CLOCK that names
 * no source is -EINVAL (and chosen as if unset); otherwise one of the
 * documented reasons, with the clock_gettime source. */
static void row_pt_clock_fallback(void)
{
    int f = pt_clock_fallback();
    CHECK_EQ(pt_clock_fallback(), f); /* chosen once */
    const char *e = getenv("PT_CLOCK");
    bool unset = !e || !*e || strcmp(e, "auto") == 0;
    if (e && strcmp(e, "monotonic") == 0) {
        CHECK_EQ(f, 0);
        CHECK_EQ(pt_clock_source(), PT_CLOCK_MONOTONIC);
    } else if (unset || strcmp(e, "tsc") == 0) {
        CHECK(f == 0 || f == -ENOSYS || f == -ENOTSUP || f == -ENODEV || f == -EAGAIN);
        CHECK_EQ(f == 0, pt_clock_source() == PT_CLOCK_TSC);
    } else {
        CHECK_EQ(f, -EINVAL);
    }
}

const struct badinput_row pt_badinput_clock_rows[] = {
    {"pt_nanotime", row_pt_nanotime},
    {"pt_nanotime_relaxed", row_pt_nanotime_relaxed},
    {"pt_clock_source", row_pt_clock_source},
    {"pt_clock_fallback", row_pt_clock_fallback},
};
const size_t pt_badinput_clock_nrows =
    sizeof pt_badinput_clock_rows / sizeof pt_badinput_clock_rows[0];
