/* SPDX-License-Identifier: MIT */
/*
 * fiber_int.h - the fiber record and the one wait every blocking-style
 * call is built on, shared by core/fiber.c (the task glue) and
 * core/fiber_io.c (the wrappers over channels, the blocking pool and
 * sockets). Private to the library.
 *
 * The record is the fiber task's copied state: it lives in the task's
 * slab block, so it never moves and it outlives the fiber's stack as
 * long as anything pins the task. Only the thread running the task
 * touches it.
 */
#ifndef PW_CORE_FIBER_INT_H
#define PW_CORE_FIBER_INT_H

#include <stdint.h>

#include "pinwheel/blocking.h"
#include "pinwheel/fiber.h"
#include "pinwheel/net.h"
#include "pinwheel/time.h"
#include "core/fiber_ctx.h"
#include "core/fiber_stack.h"

struct pw__task;

/* Fiber flags (the task's runner only). */
#define PW__F_STARTED	0x1u /* has a stack and a context */
#define PW__F_DONE	0x2u /* its function returned */
#define PW__F_CANCELLED 0x4u /* aborted: every wait fails at once */
#define PW__F_STACK	0x8u /* the stack is still held */

struct pw__fiber {
	struct pw__fctx ctx;   /* the fiber's side */
	struct pw__fctx *back; /* the poll's side, for this resume */
	struct pw_cx *cx;      /* this resume's poll context; NULL in drop */
	struct pw__task *task; /* the task this record belongs to */
	pw_fiber_fn fn;
	void *arg;
	const char *name;
	size_t stack_size;
	struct pw__fstack stack;
	int64_t result;
	uint64_t deadline;	/* PW_TIME_NEVER: none */
	struct pw_sleep timer;	/* the deadline's timer, and the sleeps' */
	struct pw_blocking blk; /* pw_fiber_blocking()'s job */
	/* The leaves of the calls that own one, in the task rather than in
	 * the call's frame, so a cancelled one can still be written by its
	 * final completion; idle between calls. The connect (its address
	 * makes it large) is allocated by the first pw_fiber_connect() and
	 * freed with the stack, once nothing pins the task. */
	struct pw_close close;
	struct pw_connect *connect;
	int exit_fd;	/* closed once the function returned, or -1 */
	uint32_t flags; /* PW__F_* */
};

/* The fiber running on this thread, or NULL. Read it through this call
 * after any switch (a stolen fiber resumes on another thread). */
struct pw__fiber *pw__fiber_cur(void);

/*
 * pw__fiber_wait - poll @fn(cx, @st) each time the fiber's task is
 * polled, suspending the fiber in between, until it returns PW_READY.
 * @timed: the fiber's deadline applies (one timer, armed only while the
 * fiber waits); false for leaves that take the deadline themselves.
 * @cancel: called with @st when the wait ends before @fn is ready.
 * Return: 0 once @fn is ready; -ECANCELED (at once when the fiber was
 * cancelled before); -ETIMEDOUT.
 * Context: the fiber @f, running.
 */
int pw__fiber_wait(struct pw__fiber *f, pw_poll_fn fn, void *st,
		   pw_drop_fn cancel, bool timed);

/**
 * pw__fiber_close_at_exit - have @fd closed once the running fiber's
 * function has returned (or unwound), by its task on the scheduler's
 * stack, before the task completes. For a wrapper that calls the
 * user's function and owns the descriptor it was given: nothing may run
 * on the fiber's stack after that function returned, since its dead
 * frame may still hold a cancelled leaf that its final completion
 * writes (the stack is kept until then, see fiber.c). A later call
 * replaces @fd (the earlier one is then not closed).
 * Return: 0; -EPERM off a fiber.
 * Context: a running fiber.
 */
int pw__fiber_close_at_exit(int fd);

#endif /* PW_CORE_FIBER_INT_H */
