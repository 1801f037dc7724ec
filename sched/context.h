/* The context switch: the scheduler's lowest layer. One assembly file per
 * architecture (context_x86_64.S, context_aarch64.S) implements both
 * functions and owns the layout of a suspended context's frame.
 *
 * A switch saves only what the ABI says a call must preserve: x86-64
 * SysV rbx, rbp, r12-r15, MXCSR and the x87 control word (whose control
 * bits are callee-saved); aarch64 x19-x28, fp, lr, d8-d15 and FPCR. So a
 * rounding mode stays with the context that set it. Everything else is dead
 * across a call anyway, which is why pt__ctx_switch is an ordinary call.
 * Most of a switch's cost is the one mispredicted return every switch
 * makes; swapcontext, which saves the signal mask with a system call,
 * costs many times as much (ptbench-switch;
 * bench/journal/2026-11-28-figures-behind-comments.md).
 *
 * These are raw switches: sanitizers do not see them. The scheduler
 * switches through sched/fiber.h, which annotates them for ASan and TSan.
 *
 * Not compatible with CET shadow stacks (a switch returns on another
 * stack): the assembly carries no GNU property note, so a link that
 * includes it does not claim shadow-stack support. */
#ifndef PT_SCHED_CONTEXT_H
#define PT_SCHED_CONTEXT_H

#include <stddef.h>

/* A suspended execution context: its stack pointer; everything else is on that stack. */
typedef struct pt__ctx {
    void *sp;
} pt__ctx;

/* Saves the running context into *from and resumes `to`. Returns when some later switch resumes
 * *from. from == to is not allowed. */
void pt__ctx_switch(pt__ctx *from, pt__ctx *to);

/* Prepares c so that the first switch to it runs entry(arg) on the stack [lo, lo + size), 16-byte
 * aligned as the ABI wants at a call. entry must never return (it switches away for good). The
 * new context starts with the ABI's default floating-point control state (round to nearest,
 * exceptions masked), not its maker's. Nothing is written outside [lo, lo + size), and only the
 * top PT__CTX_MAKE_BYTES of it; size must leave room for entry's frames beyond that. */
void pt__ctx_make(pt__ctx *c, void *lo, size_t size, void (*entry)(void *), void *arg);

/* What pt__ctx_make writes at the top of the stack, alignment slack included. */
#define PT__CTX_MAKE_BYTES 256

#endif
