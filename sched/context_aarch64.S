/* pt__ctx_switch and pt__ctx_make for AArch64 AAPCS64 (sched/context.h).
 *
 * A suspended context's frame, at its saved sp (16-byte aligned, as sp
 * always is here), is what pt__ctx_switch stores and loads, and what
 * pt__ctx_make forges for a new context:
 *
 *   sp+0   x19 x20   sp+16  x21 x22   sp+32  x23 x24   sp+48  x25 x26
 *   sp+64  x27 x28   sp+80  x29 (fp) x30 (lr, where the switch returns)
 *   sp+96  d8 d9     sp+112 d10 d11   sp+128 d12 d13   sp+144 d14 d15
 *   sp+160 FPCR      sp+168 padding
 *
 * Only what AAPCS64 makes callee-saved: the low halves of v8-v15, and
 * FPCR's modes (rounding, flush-to-zero, default NaN), which a function
 * may change only on purpose. Saving FPCR keeps a rounding mode with the
 * context that set it.
 */

    .text

/* void pt__ctx_switch(pt__ctx *from, pt__ctx *to): x0 = from, x1 = to */
    .globl  pt__ctx_switch
    .hidden pt__ctx_switch
    .type   pt__ctx_switch, %function
    .p2align 4
pt__ctx_switch:
    .cfi_startproc
    sub     sp, sp, #176
    .cfi_def_cfa_offset 176
    stp     x19, x20, [sp, #0]
    .cfi_offset x19, -176
    .cfi_offset x20, -168
    stp     x21, x22, [sp, #16]
    .cfi_offset x21, -160
    .cfi_offset x22, -152
    stp     x23, x24, [sp, #32]
    .cfi_offset x23, -144
    .cfi_offset x24, -136
    stp     x25, x26, [sp, #48]
    .cfi_offset x25, -128
    .cfi_offset x26, -120
    stp     x27, x28, [sp, #64]
    .cfi_offset x27, -112
    .cfi_offset x28, -104
    stp     x29, x30, [sp, #80]
    .cfi_offset x29, -96
    .cfi_offset x30, -88
    stp     d8, d9, [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    mrs     x9, fpcr
    str     x9, [sp, #160]

    /* The switch. The other context's frame has the same layout, so the
     * CFI above describes it as well. */
    mov     x10, sp
    str     x10, [x0]
    ldr     x10, [x1]
    mov     sp, x10

    /* Write FPCR only when it differs (almost never): on some cores the
     * write is far slower than the read and the compare. x9 still holds
     * the FPCR saved above, which is the current one. */
    ldr     x10, [sp, #160]
    cmp     x9, x10
    b.eq    1f
    msr     fpcr, x10
1:
    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    ldp     d8, d9, [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    add     sp, sp, #176
    .cfi_def_cfa_offset 0
    .cfi_restore x19
    .cfi_restore x20
    .cfi_restore x21
    .cfi_restore x22
    .cfi_restore x23
    .cfi_restore x24
    .cfi_restore x25
    .cfi_restore x26
    .cfi_restore x27
    .cfi_restore x28
    .cfi_restore x29
    .cfi_restore x30
    ret
    .cfi_endproc
    .size   pt__ctx_switch, .-pt__ctx_switch

/* void pt__ctx_make(pt__ctx *c, void *lo, size_t size, void (*entry)(void *), void *arg):
 * x0 = c, x1 = lo, x2 = size, x3 = entry, x4 = arg */
    .globl  pt__ctx_make
    .hidden pt__ctx_make
    .type   pt__ctx_make, %function
    .p2align 4
pt__ctx_make:
    .cfi_startproc
    add     x9, x1, x2
    and     x9, x9, #-16        /* the top, aligned down */
    /* Two zero words at the top, where a frame-pointer walk that reads
     * past the end would look: it finds 0. */
    stp     xzr, xzr, [x9, #-16]!
    sub     x9, x9, #176        /* the frame */
    stp     x3, x4, [x9, #0]    /* x19 = entry, x20 = arg */
    stp     xzr, xzr, [x9, #16]
    stp     xzr, xzr, [x9, #32]
    stp     xzr, xzr, [x9, #48]
    stp     xzr, xzr, [x9, #64]
    adr     x10, pt__ctx_trampoline
    stp     xzr, x10, [x9, #80] /* fp = 0 ends the frame chain; lr: the trampoline */
    stp     xzr, xzr, [x9, #96]
    stp     xzr, xzr, [x9, #112]
    stp     xzr, xzr, [x9, #128]
    stp     xzr, xzr, [x9, #144]
    /* FPCR 0: round to nearest, no flush-to-zero, no default NaN -- the
     * ABI's initial state, not the maker's. */
    stp     xzr, xzr, [x9, #160]
    str     x9, [x0]
    ret
    .cfi_endproc
    .size   pt__ctx_make, .-pt__ctx_make

/* Where a new context starts: pt__ctx_switch's ret lands here with entry
 * in x19 and arg in x20. lr is undefined in this function's CFI, so
 * unwinders stop here; fp is 0 for frame-record walkers. */
    .type   pt__ctx_trampoline, %function
    .p2align 4
pt__ctx_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    mov     x0, x20
    blr     x19
    brk     #1                  /* entry returned: a bug; die loudly here */
    .cfi_endproc
    .size   pt__ctx_trampoline, .-pt__ctx_trampoline

    .section .note.GNU-stack, "", %progbits
