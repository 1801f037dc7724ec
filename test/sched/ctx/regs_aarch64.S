/* pt_test_switch_regs (util.h) for aarch64: x0 = sw, x1 = from, x2 = to,
 * x3 = seed. Bits 0-10 of the result: x19-x29; bits 11-18: d8-d15. */
    .text
    .globl  pt_test_switch_regs
    .type   pt_test_switch_regs, %function
    .p2align 4
pt_test_switch_regs:
    .cfi_startproc
    stp     x29, x30, [sp, #-176]!
    .cfi_def_cfa_offset 176
    .cfi_offset x29, -176
    .cfi_offset x30, -168
    stp     x19, x20, [sp, #16]
    stp     x21, x22, [sp, #32]
    stp     x23, x24, [sp, #48]
    stp     x25, x26, [sp, #64]
    stp     x27, x28, [sp, #80]
    stp     d8, d9, [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    str     x3, [sp, #160]      /* the seed */

    mov     x9, x0
    mov     x0, x1
    mov     x1, x2
    add     x19, x3, #0
    add     x20, x3, #1
    add     x21, x3, #2
    add     x22, x3, #3
    add     x23, x3, #4
    add     x24, x3, #5
    add     x25, x3, #6
    add     x26, x3, #7
    add     x27, x3, #8
    add     x28, x3, #9
    add     x29, x3, #10
    add     x10, x3, #11
    fmov    d8, x10
    add     x10, x3, #12
    fmov    d9, x10
    add     x10, x3, #13
    fmov    d10, x10
    add     x10, x3, #14
    fmov    d11, x10
    add     x10, x3, #15
    fmov    d12, x10
    add     x10, x3, #16
    fmov    d13, x10
    add     x10, x3, #17
    fmov    d14, x10
    add     x10, x3, #18
    fmov    d15, x10
    blr     x9

    ldr     x3, [sp, #160]
    mov     x0, #0
    .macro  chk reg, n
    add     x10, x3, #\n
    cmp     \reg, x10
    b.eq    1f
    mov     x11, #1
    lsl     x11, x11, #\n
    orr     x0, x0, x11
1:
    .endm
    .macro  chkd reg, n
    add     x10, x3, #\n
    fmov    x12, \reg
    cmp     x12, x10
    b.eq    1f
    mov     x11, #1
    lsl     x11, x11, #\n
    orr     x0, x0, x11
1:
    .endm
    chk     x19, 0
    chk     x20, 1
    chk     x21, 2
    chk     x22, 3
    chk     x23, 4
    chk     x24, 5
    chk     x25, 6
    chk     x26, 7
    chk     x27, 8
    chk     x28, 9
    chk     x29, 10
    chkd    d8, 11
    chkd    d9, 12
    chkd    d10, 13
    chkd    d11, 14
    chkd    d12, 15
    chkd    d13, 16
    chkd    d14, 17
    chkd    d15, 18

    ldp     x19, x20, [sp, #16]
    ldp     x21, x22, [sp, #32]
    ldp     x23, x24, [sp, #48]
    ldp     x25, x26, [sp, #64]
    ldp     x27, x28, [sp, #80]
    ldp     d8, d9, [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    ldp     x29, x30, [sp], #176
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    ret
    .cfi_endproc
    .size   pt_test_switch_regs, .-pt_test_switch_regs

    .section .note.GNU-stack, "", %progbits
