/* fuzz_ptimer.c built into the replay test under the normal build. */
#define PT_FUZZ_ENTRY pt_fuzz_ptimer_one
#include "../fuzz/fuzz_ptimer.c"
