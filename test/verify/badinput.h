/* A row of the bad-input table: a public function's name and the test of
 * its bad arguments. test_badinput.c holds the heaps' and the TimerThread's
 * rows; badinput_pwheel.c the wheel's, badinput_lheap.c Go 1.23's family's,
 * badinput_clock.c the clock's; test/netpoll/badinput_netpoll.c and
 * test/sched/badinput_sched.c those of netpoll.h and sched.h, in the suites
 * that link those libraries. badinput_scan.c (in each of those suites)
 * runs tables and checks a header against them. */
#ifndef PT_TEST_BADINPUT_H
#define PT_TEST_BADINPUT_H

#include <stddef.h>

struct badinput_row {
    const char *name;
    void (*row)(void);
};

/* The row of a family's pt_*_firing: a NULL pointer is -EINVAL, a call
 * outside any callback -ENOENT, and neither writes an answer. */
#define BADINPUT_FIRING_ROW(fn)                                                                    \
    static void row_##fn(void)                                                                     \
    {                                                                                              \
        pt_nanos when = 7, now = 8;                                                                \
        CHECK_EQ(fn(NULL, &now), -EINVAL);                                                         \
        CHECK_EQ(fn(&when, NULL), -EINVAL);                                                        \
        CHECK_EQ(fn(NULL, NULL), -EINVAL);                                                         \
        CHECK_EQ(fn(&when, &now), -ENOENT);                                                        \
        CHECK_EQ(when, 7);                                                                         \
        CHECK_EQ(now, 8);                                                                          \
    }

/* A table of rows, as the scan takes them. */
struct badinput_table {
    const struct badinput_row *rows;
    size_t n;
};
#define BADINPUT_TABLE(rows)                                                                       \
    {                                                                                              \
        (rows), sizeof(rows) / sizeof((rows)[0])                                                   \
    }

/* Runs every row of the n tables. */
void pt_badinput_run(const struct badinput_table *t, size_t n);

/* The public functions the header at path declares (names pt_... followed
 * by "(" outside comments), at most max, into names; how many. */
int pt_badinput_declared(const char *path, char names[][64], int max);

/* Fails (CHECK) unless every public function the header at path declares
 * has a row in one of the n tables; returns how many it declares. */
int pt_badinput_check_header(const char *path, const struct badinput_table *t, size_t n);

extern const struct badinput_row pt_badinput_pwheel_rows[];
extern const size_t pt_badinput_pwheel_nrows;
extern const struct badinput_row pt_badinput_lheap_rows[];
extern const size_t pt_badinput_lheap_nrows;
extern const struct badinput_row pt_badinput_clock_rows[];
extern const size_t pt_badinput_clock_nrows;
extern const struct badinput_row pt_badinput_sched_rows[];
extern const size_t pt_badinput_sched_nrows;

#endif
