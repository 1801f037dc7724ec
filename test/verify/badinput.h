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

extern const struct badinput_row pt_badinput_pwheel_rows[];
extern const size_t pt_badinput_pwheel_nrows;
extern const struct badinput_row pt_badinput_lheap_rows[];
extern const size_t pt_badinput_lheap_nrows;

#endif
