/* SPDX-License-Identifier: MIT */
/*
 * switch_test.c - the aarch64 context switch (core/fiber_switch.S and
 * the first frame core/fiber_ctx.c lays out), built statically with
 * aarch64-linux-gnu-gcc and run under qemu-aarch64 by `make test`:
 * ping-pong switches in exact order and count, the entry's argument,
 * and x19-x29 and d8-d15 kept across switches while the fiber
 * overwrites them. No Criterion, no liburing: plain asserts, exit 0 on
 * success.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fiber_ctx.h"

#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "switch_test: %s:%d: %s\n", __FILE__, \
				__LINE__, #c);                                \
			exit(1);                                              \
		}                                                             \
	} while (0)

static _Alignas(16) char stack_a[64 * 1024], stack_b[64 * 1024];

static struct pw__fstack fstack(char *mem, size_t size)
{
	struct pw__fstack st = {
		.lo = mem, .size = size, .map = mem, .map_len = size
	};
	return st;
}

/* ---- ping-pong ----------------------------------------------------------- */

static struct pw__fctx main_ctx, fib_ctx;
static long rounds, count, order_errors;

static struct pw__fctx *pp_fiber(void *arg)
{
	CHECK(arg == &rounds);
	for (long i = 1; i <= rounds; i++) {
		if (count != i - 1)
			order_errors++;
		count = i;
		pw__fctx_switch(&fib_ctx, &main_ctx);
	}
	count = -1;
	return &main_ctx;
}

static void ping_pong(void)
{
	struct pw__fstack st = fstack(stack_a, sizeof(stack_a));

	rounds = 200000;
	pw__fctx_thread(&main_ctx);
	pw__fctx_make(&fib_ctx, &st, pp_fiber, &rounds);
	for (long i = 1; i <= rounds; i++) {
		pw__fctx_switch(&main_ctx, &fib_ctx);
		CHECK(count == i);
	}
	pw__fctx_switch(&main_ctx, &fib_ctx);
	CHECK(count == -1);
	CHECK(order_errors == 0);
	pw__fctx_destroy(&fib_ctx);
}

/* ---- registers ----------------------------------------------------------- */

/*
 * regs_probe(save, to, out): load known values into x19-x29 and d8-d15,
 * switch away with pw__fctx_jump(save, to) and, once switched back,
 * store what those registers hold in out[0..18]. The caller's own
 * values are saved and restored around it.
 */
void regs_probe(void **save, void *to, uint64_t *out);
__asm__(".text\n"
	".p2align 4\n"
	".type regs_probe, %function\n"
	"regs_probe:\n"
	"	stp x29, x30, [sp, #-176]!\n"
	"	stp x19, x20, [sp, #16]\n"
	"	stp x21, x22, [sp, #32]\n"
	"	stp x23, x24, [sp, #48]\n"
	"	stp x25, x26, [sp, #64]\n"
	"	stp x27, x28, [sp, #80]\n"
	"	stp d8, d9, [sp, #96]\n"
	"	stp d10, d11, [sp, #112]\n"
	"	stp d12, d13, [sp, #128]\n"
	"	stp d14, d15, [sp, #144]\n"
	"	str x2, [sp, #160]\n"
	"	movz x19, #0x1919, lsl #48\n"
	"	movz x20, #0x2020, lsl #48\n"
	"	movz x21, #0x2121, lsl #48\n"
	"	movz x22, #0x2222, lsl #48\n"
	"	movz x23, #0x2323, lsl #48\n"
	"	movz x24, #0x2424, lsl #48\n"
	"	movz x25, #0x2525, lsl #48\n"
	"	movz x26, #0x2626, lsl #48\n"
	"	movz x27, #0x2727, lsl #48\n"
	"	movz x28, #0x2828, lsl #48\n"
	"	movz x9, #0x0808, lsl #32\n	fmov d8, x9\n"
	"	movz x9, #0x0909, lsl #32\n	fmov d9, x9\n"
	"	movz x9, #0x1010, lsl #32\n	fmov d10, x9\n"
	"	movz x9, #0x1111, lsl #32\n	fmov d11, x9\n"
	"	movz x9, #0x1212, lsl #32\n	fmov d12, x9\n"
	"	movz x9, #0x1313, lsl #32\n	fmov d13, x9\n"
	"	movz x9, #0x1414, lsl #32\n	fmov d14, x9\n"
	"	movz x9, #0x1515, lsl #32\n	fmov d15, x9\n"
	"	movz x29, #0x2929, lsl #48\n"
	"	bl pw__fctx_jump\n"
	"	ldr x2, [sp, #160]\n"
	"	stp x19, x20, [x2, #0]\n"
	"	stp x21, x22, [x2, #16]\n"
	"	stp x23, x24, [x2, #32]\n"
	"	stp x25, x26, [x2, #48]\n"
	"	stp x27, x28, [x2, #64]\n"
	"	str x29, [x2, #80]\n"
	"	stp d8, d9, [x2, #88]\n"
	"	stp d10, d11, [x2, #104]\n"
	"	stp d12, d13, [x2, #120]\n"
	"	stp d14, d15, [x2, #136]\n"
	"	ldp x19, x20, [sp, #16]\n"
	"	ldp x21, x22, [sp, #32]\n"
	"	ldp x23, x24, [sp, #48]\n"
	"	ldp x25, x26, [sp, #64]\n"
	"	ldp x27, x28, [sp, #80]\n"
	"	ldp d8, d9, [sp, #96]\n"
	"	ldp d10, d11, [sp, #112]\n"
	"	ldp d12, d13, [sp, #128]\n"
	"	ldp d14, d15, [sp, #144]\n"
	"	ldp x29, x30, [sp], #176\n"
	"	ret\n"
	".size regs_probe, .-regs_probe\n");

static int clobbers;

static struct pw__fctx *clobber_fiber(void *arg)
{
	(void)arg;
	for (;;) {
		__asm__ volatile("mov x19, #-1\n\tmov x20, #-1\n\t"
				 "mov x21, #-1\n\tmov x22, #-1\n\t"
				 "mov x23, #-1\n\tmov x24, #-1\n\t"
				 "mov x25, #-1\n\tmov x26, #-1\n\t"
				 "mov x27, #-1\n\tmov x28, #-1\n\t"
				 "fmov d8, #1.0\n\tfmov d9, #1.0\n\t"
				 "fmov d10, #1.0\n\tfmov d11, #1.0\n\t"
				 "fmov d12, #1.0\n\tfmov d13, #1.0\n\t"
				 "fmov d14, #1.0\n\tfmov d15, #1.0\n\t" ::
					 : "x19", "x20", "x21", "x22", "x23",
					   "x24", "x25", "x26", "x27", "x28",
					   "d8", "d9", "d10", "d11", "d12",
					   "d13", "d14", "d15");
		clobbers++;
		if (clobbers == 3)
			return &main_ctx; /* the trampoline's way back */
		pw__fctx_switch(&fib_ctx, &main_ctx);
	}
}

static void registers(void)
{
	struct pw__fstack st = fstack(stack_b, sizeof(stack_b));
	static const uint64_t gpr[11] = { 0x19, 0x20, 0x21, 0x22, 0x23, 0x24,
					  0x25, 0x26, 0x27, 0x28, 0x29 };
	static const uint64_t fpr[8] = { 0x08, 0x09, 0x10, 0x11,
					 0x12, 0x13, 0x14, 0x15 };

	pw__fctx_thread(&main_ctx);
	pw__fctx_make(&fib_ctx, &st, clobber_fiber, NULL);
	for (int r = 0; r < 3; r++) {
		uint64_t out[19];

		memset(out, 0, sizeof(out));
		regs_probe(&main_ctx.sp, fib_ctx.sp, out);
		CHECK(clobbers == r + 1);
		for (int i = 0; i < 11; i++) {
			uint64_t want = (gpr[i] | gpr[i] << 8) << 48;
			if (out[i] != want) {
				fprintf(stderr, "x%d: %#llx\n", 19 + i,
					(unsigned long long)out[i]);
				CHECK(!"callee-saved GPR kept");
			}
		}
		for (int i = 0; i < 8; i++) {
			uint64_t want = (fpr[i] | fpr[i] << 8) << 32;
			if (out[11 + i] != want) {
				fprintf(stderr, "d%d: %#llx\n", 8 + i,
					(unsigned long long)out[11 + i]);
				CHECK(!"callee-saved FPR kept");
			}
		}
	}
	pw__fctx_destroy(&fib_ctx);
}

int main(void)
{
	ping_pong();
	registers();
	printf("aarch64 switch test: %ld switches, registers kept: ok\n",
	       2 * rounds + 1);
	return 0;
}
