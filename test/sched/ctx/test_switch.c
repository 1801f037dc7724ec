/* The switch itself: counting round trips, registers and locals that must
 * survive it, floating-point modes that must stay with their context, the
 * stack a new fiber starts on. */
#include <execinfo.h>
#include <fenv.h>
#include <stdio.h>

#include "util.h"

/* ---- ping-pong ------------------------------------------------------- */

/* The thread, A and B pass control round a ring; each checks that the
 * shared count is where its own count says it must be. */
struct ring {
    struct pt__fiber thread;
    struct tfiber a, b;
    long rounds;
    long count;
    long a_seen, b_seen;
};

static void ring_a(void *arg)
{
    struct ring *r = arg;
    pt__fiber_started(&r->a.f);
    for (long i = 0; i < r->rounds; i++) {
        CHECK_EQ(r->count, 3 * i + 1);
        r->count++;
        r->a_seen++;
        pt__fiber_switch(&r->a.f, &r->b.f);
    }
    pt__fiber_exit(&r->a.f, &r->b.f);
}

static void ring_b(void *arg)
{
    struct ring *r = arg;
    pt__fiber_started(&r->b.f);
    for (long i = 0; i < r->rounds; i++) {
        CHECK_EQ(r->count, 3 * i + 2);
        r->count++;
        r->b_seen++;
        pt__fiber_switch(&r->b.f, &r->thread);
    }
    pt__fiber_exit(&r->b.f, &r->thread);
}

void test_ping_pong_a_million_rounds_between_two_fibers_and_the_thread(void)
{
    struct ring r = {.rounds = 1000000};
    pt__fiber_init_thread(&r.thread);
    tfiber_make(&r.a, ring_a, &r);
    tfiber_make(&r.b, ring_b, &r);
    for (long i = 0; i < r.rounds; i++) {
        CHECK_EQ(r.count, 3 * i);
        r.count++;
        pt__fiber_switch(&r.thread, &r.a.f);
    }
    CHECK_EQ(r.count, 3 * r.rounds);
    /* once more round: A leaves its loop and exits to B, B exits to us */
    pt__fiber_switch(&r.thread, &r.a.f);
    CHECK_EQ(r.a_seen, r.rounds);
    CHECK_EQ(r.b_seen, r.rounds);
    CHECK_EQ(r.count, 3 * r.rounds);
    tfiber_free(&r.a);
    tfiber_free(&r.b);
}

/* ---- registers --------------------------------------------------------- */

struct regs {
    struct pt__fiber thread;
    struct tfiber fib;
    void (*sw)(void); /* pt__fiber_switch, or the raw pt__ctx_switch */
    int rounds;
    int done;
    unsigned fiber_mask;
};

static void regs_fiber(void *arg)
{
    struct regs *r = arg;
    pt__fiber_started(&r->fib.f);
    /* Each side loads its own values, different from the other's: a
     * register the switch failed to restore would hold the other side's. */
    for (uint64_t i = 0; !r->done; i++)
        r->fiber_mask |=
            pt_test_switch_regs(r->sw, &r->fib.f, &r->thread, 0xf1be700000000000 + 64 * i);
    pt__fiber_exit(&r->fib.f, &r->thread);
}

static void check_regs(void (*sw)(void))
{
    struct regs r = {.sw = sw, .rounds = 10000};
    pt__fiber_init_thread(&r.thread);
    tfiber_make(&r.fib, regs_fiber, &r);
    for (int i = 0; i < r.rounds; i++)
        CHECK_EQ(
            pt_test_switch_regs(sw, &r.thread, &r.fib.f, 0x7ead000000000000 + 64 * (uint64_t)i), 0);
    r.done = 1;
    pt__fiber_switch(&r.thread, &r.fib.f);
    CHECK_EQ(r.fiber_mask, 0);
    tfiber_free(&r.fib);
}

void test_callee_saved_registers_survive_a_switch(void)
{
    check_regs((void (*)(void))pt__fiber_switch);
#ifndef PT__SANITIZED
    /* The raw switch too (sanitizers must see every switch, so only
     * unsanitized builds may bypass fiber.c). ctx is the first member of
     * a fiber, so the same pointers serve. */
    check_regs((void (*)(void))pt__ctx_switch);
#endif
}

/* ---- live locals ---------------------------------------------------------- */

typedef void switch_fn(struct pt__fiber *from, struct pt__fiber *to);

static __attribute__((noinline)) void no_switch(struct pt__fiber *from, struct pt__fiber *to)
{
    (void)from, (void)to;
    __asm__ volatile("" ::: "memory");
}

/* More integer and floating-point values live across each call than there
 * are callee-saved registers: some live in registers, the rest in the
 * frame, both of which must come back intact. Returns a digest. */
static __attribute__((noinline)) uint64_t churn(switch_fn *sw, struct pt__fiber *self,
                                                struct pt__fiber *other, uint64_t seed, int rounds)
{
    uint64_t a = seed, b = seed * 3 + 1, c = seed ^ 0x5555, d = seed + 7, e = seed * 11, f = ~seed,
             g = seed << 3, h = seed >> 2, i2 = seed * 13 + 5, j = seed ^ 0xabcdef;
    double x0 = (double)(seed & 0xffff), x1 = x0 * 0.5, x2 = x0 + 3.25, x3 = x0 * 1.5,
           x4 = x0 - 7.0, x5 = x0 * 0.25, x6 = x0 + 0.125, x7 = x0 * 2.0, x8 = x0 + 1.0,
           x9 = x0 * 3.0;
    for (int n = 0; n < rounds; n++) {
        sw(self, other);
        a += b;
        b ^= c << 1;
        c += d * 3;
        d ^= e >> 2;
        e += f;
        f ^= g + 1;
        g += h * 5;
        h ^= i2 >> 3;
        i2 += j;
        j ^= a;
        x0 += x1 * 0.5;
        x1 = x1 * 0.75 + x2;
        x2 = x2 * 0.5 + x3;
        x3 = x3 * 0.25 + x4;
        x4 = x4 * 0.5 + x5;
        x5 = x5 * 0.75 + x6;
        x6 = x6 * 0.5 + x7;
        x7 = x7 * 0.25 + x8;
        x8 = x8 * 0.5 + x9;
        x9 = x9 * 0.75 + x0 * 1e-3;
    }
    double xs = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9;
    uint64_t xb;
    memcpy(&xb, &xs, sizeof xb);
    return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ i2 ^ j ^ xb;
}

struct locals {
    struct pt__fiber thread;
    struct tfiber fib;
    int rounds;
    uint64_t fiber_digest;
};

static void locals_fiber(void *arg)
{
    struct locals *l = arg;
    pt__fiber_started(&l->fib.f);
    l->fiber_digest = churn(pt__fiber_switch, &l->fib.f, &l->thread, 0x1234567, l->rounds);
    pt__fiber_exit(&l->fib.f, &l->thread);
}

void test_live_locals_survive_switches_in_a_loop(void)
{
    struct locals l = {.rounds = 10000};
    /* What each side computes when nothing switches. */
    uint64_t want_thread = churn(no_switch, NULL, NULL, 0x89abcdef, l.rounds);
    uint64_t want_fiber = churn(no_switch, NULL, NULL, 0x1234567, l.rounds);
    CHECK(want_thread != want_fiber);
    pt__fiber_init_thread(&l.thread);
    tfiber_make(&l.fib, locals_fiber, &l);
    /* Both run churn at once, alternating. The thread's call returns
     * after its rounds-th switch, with the fiber's still at its own last
     * switch; one more switch lets that finish and exit. */
    uint64_t got_thread = churn(pt__fiber_switch, &l.thread, &l.fib.f, 0x89abcdef, l.rounds);
    pt__fiber_switch(&l.thread, &l.fib.f);
    CHECK(got_thread == want_thread);
    CHECK(l.fiber_digest == want_fiber);
    tfiber_free(&l.fib);
}

/* ---- floating-point modes ------------------------------------------------ */

/* 1/3 in the current rounding mode, computed at run time (volatile
 * operands: not folded at compile time, where the mode is nearest). */
static __attribute__((noinline)) double third(void)
{
    volatile double one = 1.0, three = 3.0;
    return one / three;
}

struct fp {
    struct pt__fiber thread;
    struct tfiber a, b;
    double nearest, up, zero;
};

/* fegetround reads the x87 control word on x86-64 (FPCR on aarch64);
 * third() divides in SSE, so it reads MXCSR: both must agree. */
static void check_mode(int mode, double want)
{
    CHECK_EQ(fegetround(), mode);
    CHECK(third() == want);
}

static void fp_a(void *arg)
{
    struct fp *p = arg;
    pt__fiber_started(&p->a.f);
    check_mode(FE_TONEAREST, p->nearest);
    CHECK_EQ(fesetround(FE_UPWARD), 0);
    pt__fiber_switch(&p->a.f, &p->thread); /* to the thread, which goes to B, which comes back */
    check_mode(FE_UPWARD, p->up);
    CHECK_EQ(fesetround(FE_TONEAREST), 0);
    pt__fiber_exit(&p->a.f, &p->thread);
}

static void fp_b(void *arg)
{
    struct fp *p = arg;
    pt__fiber_started(&p->b.f);
    CHECK_EQ(fesetround(FE_TOWARDZERO), 0);
    pt__fiber_switch(&p->b.f, &p->a.f);
    check_mode(FE_TOWARDZERO, p->zero);
    pt__fiber_exit(&p->b.f, &p->thread);
}

void test_rounding_mode_stays_with_the_context_that_set_it(void)
{
    struct fp p = {0};
    p.nearest = third();
    CHECK_EQ(fesetround(FE_UPWARD), 0);
    p.up = third();
    CHECK_EQ(fesetround(FE_TOWARDZERO), 0);
    p.zero = third();
    CHECK_EQ(fesetround(FE_TONEAREST), 0);
    CHECK(p.up > p.nearest && p.zero < p.up);

    pt__fiber_init_thread(&p.thread);
    tfiber_make(&p.a, fp_a, &p);
    tfiber_make(&p.b, fp_b, &p);
    pt__fiber_switch(&p.thread, &p.a.f); /* A sets upward and comes back */
    check_mode(FE_TONEAREST, p.nearest);
    pt__fiber_switch(&p.thread, &p.b.f); /* B sets toward zero, A checks upward, A exits */
    check_mode(FE_TONEAREST, p.nearest);
    pt__fiber_switch(&p.thread, &p.b.f); /* B checks toward zero and exits */
    check_mode(FE_TONEAREST, p.nearest);
    tfiber_free(&p.a);
    tfiber_free(&p.b);
}

struct fresh {
    struct pt__fiber thread;
    struct tfiber fib;
    double nearest;
    int mode_seen;
    double third_seen;
};

static void fresh_fiber(void *arg)
{
    struct fresh *s = arg;
    pt__fiber_started(&s->fib.f);
    s->mode_seen = fegetround();
    s->third_seen = third();
    pt__fiber_exit(&s->fib.f, &s->thread);
}

void test_new_fiber_starts_with_default_rounding_whoever_makes_it(void)
{
    struct fresh s = {0};
    s.nearest = third();
    pt__fiber_init_thread(&s.thread);
    /* Upward: 1/3 rounds down to nearest, so a fiber still running in
     * its maker's upward MXCSR would get a different quotient. */
    CHECK_EQ(fesetround(FE_UPWARD), 0);
    tfiber_make(&s.fib, fresh_fiber, &s);
    pt__fiber_switch(&s.thread, &s.fib.f);
    CHECK_EQ(fegetround(), FE_UPWARD); /* ours came back with us */
    CHECK_EQ(fesetround(FE_TONEAREST), 0);
    CHECK_EQ(s.mode_seen, FE_TONEAREST);
    CHECK(s.third_seen == s.nearest);
    tfiber_free(&s.fib);
}

/* ---- the stack a fiber starts on ------------------------------------------ */

struct align {
    struct pt__fiber thread;
    struct pt__fiber fib;
    uintptr_t frame;
    uintptr_t local;
    char text[64];
};

static __attribute__((noinline)) void align_probe(struct align *al)
{
    _Alignas(16) char buf[16];
    __asm__ volatile("" : : "r"(buf) : "memory");
    al->local = (uintptr_t)buf;
    /* glibc's printf keeps SSE values in aligned stack slots (movaps): a
     * misaligned stack faults here. */
    snprintf(al->text, sizeof al->text, "%.3f %g %Lf", 3.25, 1e-3, (long double)2.5);
}

static void align_fiber(void *arg)
{
    struct align *al = arg;
    pt__fiber_started(&al->fib);
    /* Right after entry's prologue: 16-byte aligned when the stack was at
     * the call, as the ABI wants (frame address = sp at the call - 16). */
    al->frame = (uintptr_t)__builtin_frame_address(0);
    align_probe(al);
    pt__fiber_exit(&al->fib, &al->thread);
}

void test_fiber_stack_is_aligned_for_sse_calls_whatever_the_region(void)
{
    struct pt__stack st;
    CHECK_EQ(pt__stack_alloc(test_stacks(), &st), 0);
    /* Regions that start and end anywhere: pt__ctx_make aligns the top. */
    for (size_t skew_lo = 0; skew_lo < 16; skew_lo += 3) {
        for (size_t skew_hi = 0; skew_hi < 16; skew_hi++) {
            struct align al = {0};
            pt__fiber_init_thread(&al.thread);
            char *lo = (char *)st.lo + skew_lo;
            size_t size = st.size - skew_lo - skew_hi;
            pt__fiber_make(&al.fib, lo, size, align_fiber, &al);
            pt__fiber_switch(&al.thread, &al.fib);
            pt__fiber_destroy(&al.fib);
            CHECK_EQ(al.frame % 16, 0);
            CHECK_EQ(al.local % 16, 0);
            CHECK(al.frame < (uintptr_t)lo + size && al.frame > (uintptr_t)lo);
            CHECK(strcmp(al.text, "3.250 0.001 2.500000") == 0);
        }
    }
    pt__stack_free(test_stacks(), &st);
}

/* ---- unwinding ---------------------------------------------------------------- */

struct bt {
    struct pt__fiber thread;
    struct tfiber fib;
    int depth;
};

static __attribute__((noinline)) void bt_probe(struct bt *b)
{
    void *frames[64];
    b->depth = backtrace(frames, 64);
    __asm__ volatile("" : : "r"(frames) : "memory");
}

static void bt_fiber(void *arg)
{
    struct bt *b = arg;
    pt__fiber_started(&b->fib.f);
    bt_probe(b);
    pt__fiber_exit(&b->fib.f, &b->thread);
}

void test_backtrace_in_a_fiber_ends_at_its_entry(void)
{
    /* The unwinder walks bt_probe, bt_fiber and the trampoline, whose CFI
     * marks the return address undefined: it must stop there rather than
     * run on into the words above the stack (garbage, or a fault). */
    struct bt b = {0};
    pt__fiber_init_thread(&b.thread);
    tfiber_make(&b.fib, bt_fiber, &b);
    pt__fiber_switch(&b.thread, &b.fib.f);
    CHECK(b.depth >= 2);
    CHECK(b.depth <= 6);
    tfiber_free(&b.fib);
}
