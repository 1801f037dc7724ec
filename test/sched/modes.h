/* The scheduler's timer modes, each a suffix of the tests run in it. A
 * line PT_TEST_MODES(label, name) in list.h makes test_name(int mode) a
 * test in every mode below (name_per_p, name_lheap, name_timerthread);
 * a mode added here runs every such test, and CMake reads this list for
 * the tests' names (pt_test_lines, test/CMakeLists.txt). A test that
 * loops over the modes itself uses pt_test_modes. */
#ifndef PT_TEST_SCHED_MODES_H
#define PT_TEST_SCHED_MODES_H

#include "ptimer/sched.h"

#define PT_TEST_EACH_MODE(X, label, name)                                                      \
    X(label, name, per_p, PT_TIMERS_PER_P)                                                     \
    X(label, name, lheap, PT_TIMERS_LHEAP)                                                     \
    X(label, name, timerthread, PT_TIMERS_TIMERTHREAD)

#define PT_TEST_MODE_VALUE(label, name, suffix, mode) mode,
__attribute__((unused)) static const enum pt_timer_mode pt_test_modes[] = {
    PT_TEST_EACH_MODE(PT_TEST_MODE_VALUE, , )};
#define PT_TEST_NMODES (int)(sizeof pt_test_modes / sizeof pt_test_modes[0])

#endif
