/* fuzz_lheap.c built into the replay test under the normal build. */
#define PT_FUZZ_ENTRY pt_fuzz_lheap_one
#include "../fuzz/fuzz_lheap.c"
