/* SPDX-License-Identifier: MIT */
/*
 * fiber_ctx.h - the user-space context switch under the fibers. Private
 * to the library.
 *
 * A context is a saved stack pointer: the callee-saved registers live on
 * the stack it points into (core/fiber_switch.S lays them out). Switching
 * stores the current stack pointer in one context and loads another's;
 * no system call, no signal mask, no ucontext. Under ASan and TSan the
 * switch also tells the sanitizer which stack now runs, so the contexts
 * carry the few fields they need.
 */
#ifndef PW_CORE_FIBER_CTX_H
#define PW_CORE_FIBER_CTX_H

#include <stdbool.h>
#include <stddef.h>

#include "core/fiber_stack.h"

#if defined(__SANITIZE_ADDRESS__)
#define PW__FCTX_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define PW__FCTX_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(PW__FCTX_ASAN)
#define PW__FCTX_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(PW__FCTX_TSAN)
#define PW__FCTX_TSAN 1
#endif
#endif

struct pw__fctx;

/*
 * A context's function: runs on the context's stack and returns the
 * context to resume, which ends this one.
 */
typedef struct pw__fctx *(*pw__fctx_fn)(void *arg);

struct pw__fctx {
	void *sp;	   /* saved stack pointer; NULL while running */
	const void *lo;	   /* lowest byte of its stack (NULL: not known yet) */
	size_t size;	   /* bytes of its stack */
	void *asan_fake;   /* ASan: its fake stack while switched out */
	void *tsan;	   /* TSan: its fiber */
	bool tsan_own;	   /* the TSan fiber was created here */
	pw__fctx_fn entry; /* first call, with arg */
	void *arg;
};

/*
 * pw__fctx_jump - the switch itself (core/fiber_switch.S): push the
 * callee-saved registers, store the stack pointer in *@save, load @to and
 * pop its registers. Returns when someone jumps back to *@save. No
 * sanitizer hook: use pw__fctx_switch().
 */
void pw__fctx_jump(void **save, void *to);

/*
 * pw__fctx_make - make @c a context that, when first switched to, calls
 * entry(arg) on stack @st. When @entry returns a context, @c ends and
 * that context resumes (it must be switched out, as by a
 * pw__fctx_switch() that now returns); nothing may switch to @c again.
 * Ending by returning is cheaper than a switch: see
 * core/fiber_switch.S. @st must stay mapped until pw__fctx_destroy(@c).
 * Context: any thread.
 */
void pw__fctx_make(struct pw__fctx *c, const struct pw__fstack *st,
		   pw__fctx_fn entry, void *arg);

/*
 * pw__fctx_thread - make @c stand for the calling thread's own stack (the
 * scheduler side), to switch from and back to. Context: the thread whose
 * stack it is.
 */
void pw__fctx_thread(struct pw__fctx *c);

/*
 * pw__fctx_switch - save the callee-saved registers to @from and resume
 * @to; returns when someone switches back to @from. @to was made by
 * pw__fctx_make() or last switched out of. Tells ASan and TSan about the
 * switch in builds with them. No system call.
 * Context: the thread running @from (the context may later resume on
 * another thread: it keeps no thread-local state of its own).
 */
#if defined(PW__FCTX_ASAN) || defined(PW__FCTX_TSAN)
void pw__fctx_switch(struct pw__fctx *from, struct pw__fctx *to);
#else
static inline void pw__fctx_switch(struct pw__fctx *from, struct pw__fctx *to)
{
	pw__fctx_jump(&from->sp, to->sp);
}
#endif

/*
 * pw__fctx_destroy - release what the sanitizers hold for @c (its TSan
 * fiber). Call it once @c is switched out for good, from another
 * context. Nothing to do in builds without sanitizers. Context: any
 * thread.
 */
void pw__fctx_destroy(struct pw__fctx *c);

#endif /* PW_CORE_FIBER_CTX_H */
