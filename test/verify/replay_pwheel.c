/* fuzz_pwheel.c built into the replay test under the normal build. */
#define PT_FUZZ_ENTRY pt_fuzz_pwheel_one
#include "../fuzz/fuzz_pwheel.c"
