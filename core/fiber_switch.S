/* SPDX-License-Identifier: MIT */
/*
 * fiber_switch.S - the context switch of the fibers, x86-64 and aarch64.
 *
 * pw__fctx_jump(void **save, void *to) pushes the registers the ABI says
 * a callee must preserve, stores the stack pointer in *save, loads @to as
 * the stack pointer and pops the registers saved there. Everything else
 * (caller-saved registers, flags, vector registers but d8-d15 on
 * aarch64) is dead across a call, so it is not saved: a switch is a
 * function call that returns on another stack. No system call, no
 * signal mask (unlike swapcontext).
 *
 * x86-64 frame, from the saved stack pointer up: MXCSR (4 bytes) and the
 * x87 control word (2 bytes) in one 8-byte slot, r15, r14, r13, r12,
 * rbx, rbp, return address. The SysV ABI makes the control bits of
 * MXCSR and the x87 control word callee-saved, so a fiber that changes
 * its rounding mode does not change another's.
 *
 * aarch64 frame (160 bytes): x19..x28, x29 (fp), x30 (lr), d8..d15. The
 * FPCR is not switched (AAPCS64 leaves it to the thread).
 *
 * A new context (core/fiber_ctx.c lays its first frame out) returns into
 * pw__fctx_tramp with the function in r13 / x20 and its argument in
 * r12 / x19; the trampoline calls it. When the function returns a
 * context, the trampoline ends this one by resuming that one: it loads
 * the saved stack pointer, pops the registers and returns with ret.
 * That ret is predicted: every call made on the fiber's stack has
 * returned, so the return predictor's top entry is the call into
 * pw__fctx_jump that switched to this context, and a context that
 * starts and finishes without suspending (a short fiber) is resumed
 * from with no mispredicted return, where a switch from inside the
 * function costs one miss per frame the resumed side returns through.
 * The trampoline's CFI marks the return address undefined, so debuggers
 * and unwinders stop at a fiber's first frame; its frame pointer is 0
 * for frame-pointer walkers.
 *
 * x86-64 resumes with an indirect jump to the saved return address, not
 * a ret: the return predictor always misses on a ret that lands in
 * another context, which cost 9 ns of the 22.9 ns round trip measured
 * (ret) against 9.7 ns (jump) on the development machine. aarch64 keeps
 * ret, because an indirect branch to a return address is not a BTI
 * landing pad.
 *
 * Saving MXCSR and the x87 control word costs about 5 of those 9.7 ns
 * (4.45 ns without): ldmxcsr dominates. Loading them only when they
 * differ measured slower (reading back a just-stored MXCSR stalls), so
 * they are loaded on every switch.
 *
 * Control-flow protection: with -fcf-protection (x86-64) both entry
 * points start with endbr64, the resuming jump is notrack, and the
 * object claims IBT only; it does not claim the shadow stack, since a
 * switch resumes at an address no call on that shadow stack pushed, so a
 * program linking it runs without one. On aarch64 the entry points
 * carry BTI landing pads.
 */

#if defined(__x86_64__)

#if defined(__CET__) && (__CET__ & 1)
#define ENDBR	endbr64
#define NOTRACK notrack
#else
#define ENDBR
#define NOTRACK
#endif

	.text

/* Pop the frame pw__fctx_jump pushed, from %rsp up to the return
 * address. */
.macro RESTORE
#ifndef PW_FCTX_NO_FPU
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
#endif
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r15
	popq	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r14
	popq	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r13
	popq	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
.endm

	.globl	pw__fctx_jump
	.hidden	pw__fctx_jump
	.type	pw__fctx_jump, @function
	.p2align 4
pw__fctx_jump:
	.cfi_startproc
	ENDBR
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r15, 0
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
#ifndef PW_FCTX_NO_FPU
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
#endif
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	RESTORE
	/* Not ret: the return predictor expects the caller of this
	 * call, not the context resumed, and a miss costs more than the
	 * rest of the switch. An indirect jump from one site is predicted
	 * from its history instead. */
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	.cfi_register %rip, %rcx
	NOTRACK jmpq *%rcx
	.cfi_endproc
	.size	pw__fctx_jump, .-pw__fctx_jump

	.globl	pw__fctx_tramp
	.hidden	pw__fctx_tramp
	.type	pw__fctx_tramp, @function
	.p2align 4
pw__fctx_tramp:
	.cfi_startproc
	.cfi_undefined %rip
	ENDBR
	movq	%r12, %rdi
	callq	*%r13
	/* The context to resume; sp is its first member. Its frame is
	 * the one pw__fctx_jump pushed: describe it for unwinders. */
	movq	(%rax), %rsp
	.cfi_def_cfa %rsp, 64
	.cfi_offset %rip, -8
	.cfi_offset %rbp, -16
	.cfi_offset %rbx, -24
	.cfi_offset %r12, -32
	.cfi_offset %r13, -40
	.cfi_offset %r14, -48
	.cfi_offset %r15, -56
	RESTORE
	ret
	.cfi_endproc
	.size	pw__fctx_tramp, .-pw__fctx_tramp

#if defined(__CET__) && (__CET__ & 1)
	/* GNU_PROPERTY_X86_FEATURE_1_AND: IBT only (see above). */
	.section .note.gnu.property, "a"
	.p2align 3
	.long	4
	.long	16
	.long	5
	.asciz	"GNU"
	.long	0xc0000002
	.long	4
	.long	1
	.p2align 3
#endif

#elif defined(__aarch64__)

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define BTI_C hint 34
#else
#define BTI_C
#endif

	.text

/* Pop the frame pw__fctx_jump pushed, from sp up. */
.macro RESTORE
	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	add	sp, sp, #160
	.cfi_def_cfa_offset 0
	.cfi_restore x29
	.cfi_restore x30
.endm

	.globl	pw__fctx_jump
	.hidden	pw__fctx_jump
	.type	pw__fctx_jump, %function
	.p2align 4
pw__fctx_jump:
	.cfi_startproc
	BTI_C
	sub	sp, sp, #160
	.cfi_def_cfa_offset 160
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	.cfi_offset x29, -80
	.cfi_offset x30, -72
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mov	x9, sp
	str	x9, [x0]
	mov	sp, x1
	RESTORE
	ret
	.cfi_endproc
	.size	pw__fctx_jump, .-pw__fctx_jump

	.globl	pw__fctx_tramp
	.hidden	pw__fctx_tramp
	.type	pw__fctx_tramp, %function
	.p2align 4
pw__fctx_tramp:
	.cfi_startproc
	.cfi_undefined x30
	BTI_C
	mov	x0, x19
	blr	x20
	/* The context to resume; sp is its first member. Its frame is
	 * the one pw__fctx_jump pushed: describe it for unwinders. */
	ldr	x9, [x0]
	mov	sp, x9
	.cfi_def_cfa sp, 160
	.cfi_offset x29, -80
	.cfi_offset x30, -72
	RESTORE
	ret
	.cfi_endproc
	.size	pw__fctx_tramp, .-pw__fctx_tramp

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
	/* GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI. */
	.section .note.gnu.property, "a"
	.p2align 3
	.long	4
	.long	16
	.long	5
	.asciz	"GNU"
	.long	0xc0000000
	.long	4
	.long	1
	.p2align 3
#endif

#else
#error "pinwheel fibers: no context switch for this architecture"
#endif

	.section .note.GNU-stack, "", %progbits
