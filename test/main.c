/* Every suite's main: the table of its tests from its own list.h (the
 * suite's directory is on its include path, see pt_test_suite). */
#include "harness.h"

#define PT_TEST(label, name) void test_##name(void);
#include "list.h"
#undef PT_TEST

static const struct pt_test tests[] = {
#define PT_TEST(label, name) {#name, #label, test_##name},
#include "list.h"
#undef PT_TEST
};

int main(int argc, char **argv)
{
    return pt_test_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
