/* SPDX-License-Identifier: MIT */
/*
 * fiber_ctx.c - making, switching and ending fiber contexts.
 *
 * The switch itself is core/fiber_switch.S. This file lays out the first
 * frame of a new context (so its first switch returns into the
 * trampoline, which calls the entry function) and, in ASan and TSan
 * builds, wraps each switch in the sanitizer's fiber calls: ASan must
 * know which stack runs (or it reports the fiber's frames as overflows
 * of the thread stack) and TSan keeps a shadow state per fiber.
 */
#include <stdint.h>
#include <string.h>

#include "core/fiber_ctx.h"

#if defined(PW__FCTX_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(PW__FCTX_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

/* core/fiber_switch.S: where a new context's first switch returns. */
void pw__fctx_tramp(void);

#if defined(__x86_64__)
/* The frame pw__fctx_jump pops, lowest address first. */
struct first_frame {
	uint32_t mxcsr;
	uint16_t x87cw;
	uint16_t pad;
	uint64_t r15, r14, r13, r12, rbx, rbp;
	uint64_t ret;
	uint64_t end[2]; /* the trampoline's stack, 16-byte aligned */
};

static void frame_set(struct first_frame *f, pw__fctx_fn fn, void *arg)
{
	memset(f, 0, sizeof(*f));
	f->mxcsr = 0x1f80; /* the ABI's initial values: all masked, */
	f->x87cw = 0x037f; /* round to nearest, extended precision */
	f->r13 = (uintptr_t)fn;
	f->r12 = (uintptr_t)arg;
	f->ret = (uintptr_t)pw__fctx_tramp;
}
#elif defined(__aarch64__)
struct first_frame {
	uint64_t x19, x20, x21_28[8], x29, x30;
	uint64_t d8_15[8];
	uint64_t end[2]; /* the trampoline's stack, 16-byte aligned */
};

static void frame_set(struct first_frame *f, pw__fctx_fn fn, void *arg)
{
	memset(f, 0, sizeof(*f));
	f->x19 = (uintptr_t)arg;
	f->x20 = (uintptr_t)fn;
	f->x30 = (uintptr_t)pw__fctx_tramp;
}
#endif

_Static_assert(sizeof(struct first_frame) % 16 == 0, "first frame align");

#if defined(PW__FCTX_ASAN) || defined(PW__FCTX_TSAN)
/* The context that switched to the one now starting or resuming on this
 * thread: it learns its stack bounds from ASan on the first switch. */
static _Thread_local struct pw__fctx *fctx_prev;

/* On the new stack, right after a switch into @self. */
static void switched_in(struct pw__fctx *self)
{
#if defined(PW__FCTX_ASAN)
	const void *lo = NULL;
	size_t size = 0;

	__sanitizer_finish_switch_fiber(self->asan_fake, &lo, &size);
	if (fctx_prev && !fctx_prev->lo) {
		fctx_prev->lo = lo;
		fctx_prev->size = size;
	}
#else
	(void)self;
#endif
}

static void switch_out(struct pw__fctx *from, struct pw__fctx *to, bool dying)
{
	fctx_prev = from;
#if defined(PW__FCTX_ASAN)
	/* NULL fake-stack slot: ASan frees the dying context's. */
	__sanitizer_start_switch_fiber(dying ? NULL : &from->asan_fake, to->lo,
				       to->size);
#else
	(void)dying;
#endif
#if defined(PW__FCTX_TSAN)
	__tsan_switch_to_fiber(to->tsan, 0);
#endif
}

/*
 * First frame of a new context in a sanitizer build. It ends with a
 * switch, not through the trampoline: returning would run this frame's
 * TSan exit hook after the switch, on @to's shadow call stack. The last
 * switch out lets ASan drop the fake stack.
 */
static struct pw__fctx *fctx_boot(void *arg)
{
	struct pw__fctx *c = arg;

	switched_in(c);
	struct pw__fctx *to = c->entry(c->arg);
	switch_out(c, to, true);
	pw__fctx_jump(&c->sp, to->sp);
	__builtin_trap(); /* nobody switches back to a finished context */
}

void pw__fctx_switch(struct pw__fctx *from, struct pw__fctx *to)
{
	switch_out(from, to, false);
	pw__fctx_jump(&from->sp, to->sp);
	switched_in(from);
}
#endif /* sanitizers */

void pw__fctx_make(struct pw__fctx *c, const struct pw__fstack *st,
		   pw__fctx_fn entry, void *arg)
{
	uintptr_t top = ((uintptr_t)st->lo + st->size) & ~(uintptr_t)15;
	struct first_frame *f = (struct first_frame *)(top - sizeof(*f));

	memset(c, 0, sizeof(*c));
	c->lo = st->lo;
	c->size = st->size;
	c->entry = entry;
	c->arg = arg;
#if defined(PW__FCTX_ASAN)
	/* A pooled stack keeps the poison of the frames its last fiber
	 * never returned from. */
	__asan_unpoison_memory_region(st->lo, st->size);
#endif
#if defined(PW__FCTX_TSAN)
	c->tsan = __tsan_create_fiber(0);
	c->tsan_own = true;
#endif
#if defined(PW__FCTX_ASAN) || defined(PW__FCTX_TSAN)
	frame_set(f, fctx_boot, c);
#else
	frame_set(f, entry, arg);
#endif
	c->sp = f;
}

void pw__fctx_thread(struct pw__fctx *c)
{
	memset(c, 0, sizeof(*c));
#if defined(PW__FCTX_TSAN)
	c->tsan = __tsan_get_current_fiber();
#endif
	/* Under ASan the stack bounds are filled in on the first switch
	 * out (switched_in() on the other side). */
}

void pw__fctx_destroy(struct pw__fctx *c)
{
#if defined(PW__FCTX_TSAN)
	if (c->tsan_own && c->tsan)
		__tsan_destroy_fiber(c->tsan);
#endif
	c->tsan = NULL;
	c->tsan_own = false;
}
