/* ptbench-switch: what a context switch costs (sched/context.h), against
 * swapcontext. A round trip is two switches: the thread to a context and
 * back. One thread, no contention; figures in ns, the best of 5 runs.
 *
 * Each switch returns to another call site than the one the CPU's return
 * stack predicts, so every switch pays one misprediction: most of its
 * cost. The "3 frames deep" row switches from inside a chain of calls
 * that then return, as a G parking from a few frames down does: there a
 * jmp instead of the switch's ret (Boost.Context's choice, which halves
 * the tight loop's figure) would leave the return stack one entry off and
 * mispredict every return after it -- it measured twice as slow here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "ptimer/clock.h"
#include "sched/fiber.h"
#include "sched/stack.h"

#define ROUNDS 5

static struct pt__fiber thread_fiber, fib;
static volatile long sink;

static void ctx_entry(void *arg)
{
    (void)arg;
    for (;;) {
        sink++;
        pt__ctx_switch(&fib.ctx, &thread_fiber.ctx);
    }
}

static void fiber_entry(void *arg)
{
    (void)arg;
    pt__fiber_started(&fib);
    for (;;) {
        sink++;
        pt__fiber_switch(&fib, &thread_fiber);
    }
}

static double time_ctx(long n, struct pt__stack *st)
{
    pt__ctx_make(&fib.ctx, st->lo, st->size, ctx_entry, NULL);
    pt_nanos t0 = pt_nanotime();
    for (long i = 0; i < n; i++)
        pt__ctx_switch(&thread_fiber.ctx, &fib.ctx);
    return (double)(pt_nanotime() - t0) / (double)n;
}

static double time_fiber(long n, struct pt__stack *st)
{
    pt__fiber_make(&fib, st->lo, st->size, fiber_entry, NULL);
    pt_nanos t0 = pt_nanotime();
    for (long i = 0; i < n; i++)
        pt__fiber_switch(&thread_fiber, &fib);
    double ns = (double)(pt_nanotime() - t0) / (double)n;
    /* Left suspended, never exited: destroy only forgets it (TSan). */
    pt__fiber_destroy(&fib);
    return ns;
}

#define NOINLINE __attribute__((noinline))
NOINLINE static void deep3(pt__ctx *from, pt__ctx *to)
{
    pt__ctx_switch(from, to);
    sink++;
}
NOINLINE static void deep2(pt__ctx *from, pt__ctx *to)
{
    deep3(from, to);
    sink++;
}
NOINLINE static void deep1(pt__ctx *from, pt__ctx *to)
{
    deep2(from, to);
    sink++;
}

static void deep_entry(void *arg)
{
    (void)arg;
    for (;;)
        deep1(&fib.ctx, &thread_fiber.ctx);
}

static double time_ctx_deep(long n, struct pt__stack *st)
{
    pt__ctx_make(&fib.ctx, st->lo, st->size, deep_entry, NULL);
    pt_nanos t0 = pt_nanotime();
    for (long i = 0; i < n; i++)
        deep1(&thread_fiber.ctx, &fib.ctx);
    return (double)(pt_nanotime() - t0) / (double)n;
}

static ucontext_t uc_main, uc_fib;

static void uc_entry(void)
{
    for (;;) {
        sink++;
        swapcontext(&uc_fib, &uc_main);
    }
}

static double time_ucontext(long n, struct pt__stack *st)
{
    getcontext(&uc_fib);
    uc_fib.uc_stack.ss_sp = st->lo;
    uc_fib.uc_stack.ss_size = st->size;
    uc_fib.uc_link = NULL;
    makecontext(&uc_fib, uc_entry, 0);
    pt_nanos t0 = pt_nanotime();
    for (long i = 0; i < n; i++)
        swapcontext(&uc_main, &uc_fib);
    return (double)(pt_nanotime() - t0) / (double)n;
}

static double best(double (*fn)(long, struct pt__stack *), long n, struct pt__stack *st)
{
    double b = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double ns = fn(n, st);
        if (ns < b)
            b = ns;
    }
    return b;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    struct pt__stack_pool pool;
    struct pt__stack st;
    if (pt__stack_pool_init(&pool, 64 << 10, PT_STACK_GUARD_AUTO) != 0 ||
        pt__stack_alloc(&pool, &st) != 0) {
        fprintf(stderr, "ptbench-switch: no stack\n");
        return 1;
    }
    pt__fiber_init_thread(&thread_fiber);
    double ctx = best(time_ctx, n, &st);
    double deep = best(time_ctx_deep, n, &st);
    double fiber = best(time_fiber, n, &st);
    double uc = best(time_ucontext, n / 10, &st);
    printf("%-30s %8s %8s\n", "", "ns/trip", "ns/sw");
    printf("%-30s %8.1f %8.1f\n", "pt__ctx_switch", ctx, ctx / 2);
    printf("%-30s %8.1f %8.1f\n", "pt__ctx_switch, 3 frames deep", deep, deep / 2);
    printf("%-30s %8.1f %8.1f\n", "pt__fiber_switch", fiber, fiber / 2);
    printf("%-30s %8.1f %8.1f\n", "swapcontext (glibc)", uc, uc / 2);
    pt__stack_free(&pool, &st);
    pt__stack_pool_fini(&pool);
    return 0;
}
