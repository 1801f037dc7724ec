/* Every suite's main: the table of its tests from its own list.h (the
 * suite's directory is on its include path, see pt_test_suite). A suite
 * with timer modes (modes.h) has tests run once in each. */
#include "harness.h"

#if __has_include("modes.h")
#include "modes.h"
#endif

#define PT_TEST(label, name) void test_##name(void);
#define PT_TEST_MODES(label, name) void test_##name(int mode);
#include "list.h"
#undef PT_TEST
#undef PT_TEST_MODES

static const struct pt_test tests[] = {
#define PT_TEST(label, name) {#name, #label, test_##name, NULL, 0},
#define PT_TEST_MODE_ROW(label, name, suffix, mode)                                            \
    {#name "_" #suffix, #label, NULL, test_##name, mode},
#define PT_TEST_MODES(label, name) PT_TEST_EACH_MODE(PT_TEST_MODE_ROW, label, name)
#include "list.h"
#undef PT_TEST
#undef PT_TEST_MODES
};

int main(int argc, char **argv)
{
    return pt_test_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
