/* A row of the bad-input table: a public function's name and the test of
 * its bad arguments. test_badinput.c holds the heaps' and the TimerThread's
 * rows; badinput_pwheel.c the wheel's, badinput_lheap.c Go 1.23's family's. */
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

extern const struct badinput_row pt_badinput_pwheel_rows[];
extern const size_t pt_badinput_pwheel_nrows;
extern const struct badinput_row pt_badinput_lheap_rows[];
extern const size_t pt_badinput_lheap_nrows;

#endif
