/* Fibers on their own stacks for the tests, and the assembly helper that
 * checks callee-saved registers across a switch (regs_<arch>.S). */
#ifndef PT_TEST_SCHED_UTIL_H
#define PT_TEST_SCHED_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "sched/fiber.h"
#include "sched/stack.h"

/* Sanitized frames are several times larger; stacks cost only what is
 * touched (MAP_NORESERVE). */
#define TEST_STACK_BYTES ((size_t)256 << 10)

struct tfiber {
    struct pt__fiber f;
    struct pt__stack st;
};

/* The tests' stacks: TEST_STACK_BYTES each, guarded as the kernel allows. */
static inline struct pt__stack_pool *test_stacks(void)
{
    static struct pt__stack_pool pool;
    static bool made;
    if (!made) {
        CHECK_EQ(pt__stack_pool_init(&pool, TEST_STACK_BYTES, PT_STACK_GUARD_AUTO), 0);
        made = true;
    }
    return &pool;
}

static inline void tfiber_make(struct tfiber *t, void (*entry)(void *), void *arg)
{
    memset(t, 0, sizeof *t);
    CHECK_EQ(pt__stack_alloc(test_stacks(), &t->st), 0);
    pt__fiber_make(&t->f, t->st.lo, t->st.size, entry, arg);
}

static inline void tfiber_free(struct tfiber *t)
{
    pt__fiber_destroy(&t->f);
    pt__stack_free(test_stacks(), &t->st);
}

/* Loads every callee-saved general register (x86-64: rbx, rbp, r12-r15;
 * aarch64: x19-x29 and d8-d15) with seed + 0, 1, 2, ..., calls sw(from, to),
 * and returns a bitmask of the registers that no longer hold their value:
 * 0 when the switch (and whatever ran meanwhile) preserved them all. */
unsigned pt_test_switch_regs(void (*sw)(void), void *from, void *to, uint64_t seed);

#endif
