/* pt__ctx_switch and pt__ctx_make for x86-64 SysV (sched/context.h).
 *
 * A suspended context's frame, at its saved sp (16-byte aligned), is what
 * pt__ctx_switch pushes and pops, and what pt__ctx_make forges for a new
 * context:
 *
 *   sp+0   MXCSR (4 bytes)  sp+4  x87 control word (2 bytes, 2 of padding)
 *   sp+8   r15    sp+16  r14    sp+24  r13    sp+32  r12
 *   sp+40  rbx    sp+48  rbp    sp+56  return address
 *
 * Only the registers the ABI makes callee-saved are here: the caller of
 * pt__ctx_switch has already treated every other one as clobbered. MXCSR
 * and the x87 control word are saved whole, so a rounding mode set in one
 * context stays with it (and the sticky MXCSR flags too, which the ABI
 * leaves to the caller anyway).
 */

    .text

/* void pt__ctx_switch(pt__ctx *from, pt__ctx *to): rdi = from, rsi = to */
    .globl  pt__ctx_switch
    .hidden pt__ctx_switch
    .type   pt__ctx_switch, @function
    .p2align 4
pt__ctx_switch:
    .cfi_startproc
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbp, 0
    pushq   %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbx, 0
    pushq   %r12
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r12, 0
    pushq   %r13
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r13, 0
    pushq   %r14
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r14, 0
    pushq   %r15
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r15, 0
    subq    $8, %rsp
    .cfi_adjust_cfa_offset 8
    stmxcsr (%rsp)
    fnstcw  4(%rsp)

    /* The switch. The other context's frame has the same layout, so the
     * CFI above describes it as well: an unwinder stopped past this point
     * sees the resumed context's caller, which is where we return. */
    movq    %rsp, (%rdi)
    movq    (%rsi), %rsp

    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %r15
    .cfi_adjust_cfa_offset -8
    .cfi_restore r15
    popq    %r14
    .cfi_adjust_cfa_offset -8
    .cfi_restore r14
    popq    %r13
    .cfi_adjust_cfa_offset -8
    .cfi_restore r13
    popq    %r12
    .cfi_adjust_cfa_offset -8
    .cfi_restore r12
    popq    %rbx
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbx
    popq    %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbp
    ret
    .cfi_endproc
    .size   pt__ctx_switch, .-pt__ctx_switch

/* void pt__ctx_make(pt__ctx *c, void *lo, size_t size, void (*entry)(void *), void *arg):
 * rdi = c, rsi = lo, rdx = size, rcx = entry, r8 = arg */
    .globl  pt__ctx_make
    .hidden pt__ctx_make
    .type   pt__ctx_make, @function
    .p2align 4
pt__ctx_make:
    .cfi_startproc
    leaq    (%rsi,%rdx), %rax
    andq    $-16, %rax          /* the top, aligned down */
    /* Two zero words at the top: where the trampoline's frame would keep
     * its return address, so a frame-pointer walk that reads past the end
     * finds 0 rather than whatever the stack held before. */
    subq    $16, %rax           /* rsp once the first switch has returned */
    xorl    %r9d, %r9d
    movq    %r9, 8(%rax)
    movq    %r9, (%rax)
    leaq    pt__ctx_trampoline(%rip), %r10
    movq    %r10, -8(%rax)      /* return address: the trampoline */
    movq    %r9, -16(%rax)      /* rbp = 0: the frame-pointer chain ends here */
    movq    %r9, -24(%rax)      /* rbx */
    movq    %rcx, -32(%rax)     /* r12 = entry */
    movq    %r8, -40(%rax)      /* r13 = arg */
    movq    %r9, -48(%rax)      /* r14 */
    movq    %r9, -56(%rax)      /* r15 */
    /* The ABI's initial control state, not the maker's: where a context
     * starts must not depend on which context happened to make it. */
    movl    $0x1f80, -64(%rax)  /* MXCSR: round to nearest, all masked */
    movl    $0x037f, -60(%rax)  /* x87: round to nearest, extended, all masked */
    subq    $64, %rax
    movq    %rax, (%rdi)
    ret
    .cfi_endproc
    .size   pt__ctx_make, .-pt__ctx_make

/* Where a new context starts: pt__ctx_switch's ret lands here with rsp
 * 16-byte aligned, entry in r12 and arg in r13. The call leaves a return
 * address inside this function, whose CFI marks rip undefined: unwinders
 * (gdb, libgcc's backtrace) stop here instead of walking off into
 * whatever is above the stack. rbp is 0 for frame-pointer walkers. */
    .type   pt__ctx_trampoline, @function
    .p2align 4
pt__ctx_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    %r13, %rdi
    callq   *%r12
    ud2                         /* entry returned: a bug; die loudly here */
    .cfi_endproc
    .size   pt__ctx_trampoline, .-pt__ctx_trampoline

    .section .note.GNU-stack, "", @progbits
