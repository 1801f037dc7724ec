/* fuzz_timerthread.c built into the replay test under the normal build. */
#define PT_FUZZ_ENTRY pt_fuzz_timerthread_one
#include "../fuzz/fuzz_timerthread.c"
