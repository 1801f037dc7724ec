/* pt_test_switch_regs (util.h) for x86-64: rdi = sw, rsi = from, rdx = to,
 * rcx = seed. Bits 0-5 of the result: rbx, rbp, r12, r13, r14, r15. */
    .text
    .globl  pt_test_switch_regs
    .type   pt_test_switch_regs, @function
    .p2align 4
pt_test_switch_regs:
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
    pushq   %rcx                /* the seed; rsp is now 16-byte aligned for the call */
    .cfi_adjust_cfa_offset 8

    movq    %rdi, %rax
    movq    %rsi, %rdi
    movq    %rdx, %rsi
    movq    %rcx, %rbx
    leaq    1(%rcx), %rbp
    leaq    2(%rcx), %r12
    leaq    3(%rcx), %r13
    leaq    4(%rcx), %r14
    leaq    5(%rcx), %r15
    callq   *%rax

    movq    (%rsp), %rcx
    xorl    %eax, %eax
    cmpq    %rcx, %rbx
    je      1f
    orl     $1, %eax
1:  leaq    1(%rcx), %rdx
    cmpq    %rdx, %rbp
    je      2f
    orl     $2, %eax
2:  leaq    2(%rcx), %rdx
    cmpq    %rdx, %r12
    je      3f
    orl     $4, %eax
3:  leaq    3(%rcx), %rdx
    cmpq    %rdx, %r13
    je      4f
    orl     $8, %eax
4:  leaq    4(%rcx), %rdx
    cmpq    %rdx, %r14
    je      5f
    orl     $16, %eax
5:  leaq    5(%rcx), %rdx
    cmpq    %rdx, %r15
    je      6f
    orl     $32, %eax
6:
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %r15
    .cfi_adjust_cfa_offset -8
    popq    %r14
    .cfi_adjust_cfa_offset -8
    popq    %r13
    .cfi_adjust_cfa_offset -8
    popq    %r12
    .cfi_adjust_cfa_offset -8
    popq    %rbx
    .cfi_adjust_cfa_offset -8
    popq    %rbp
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size   pt_test_switch_regs, .-pt_test_switch_regs

    .section .note.GNU-stack, "", @progbits
