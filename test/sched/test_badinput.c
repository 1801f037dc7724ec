/* The bad-input table of sched.h (its rows: badinput_sched.c), in the
 * suite that links the scheduler: every row run, and a check that every
 * function sched.h declares has one (test/verify/badinput_scan.c reads the
 * header), so an API added without its row fails here. */
#include "util.h"
#include "verify/badinput.h"

static const struct badinput_table *sched_table(void)
{
    static struct badinput_table t;
    t = (struct badinput_table){pt_badinput_sched_rows, pt_badinput_sched_nrows};
    return &t;
}

void test_every_sched_call_rejects_bad_input(void)
{
    pt_badinput_run(sched_table(), 1);
}

void test_bad_input_table_has_a_row_for_every_sched_h_function(void)
{
    int n = pt_badinput_check_header(PT_SOURCE_DIR "/include/ptimer/sched.h", sched_table(), 1);
    CHECK(n >= 53); /* the parse found the API, not nothing */
}
