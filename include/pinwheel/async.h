/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/async.h - straight-line poll functions: begin, await, yield,
 * return, written top to bottom over the ordinary poll contract.
 *
 * A poll function that waits for several things in turn is a state
 * machine: each wait is a numbered step. These macros number the steps
 * for you. The resume point is a small integer (pw_async_t) the task
 * embeds in its state; PW_ASYNC_BEGIN switches on it and every await
 * records its own source line as the case to come back to (Duff's device,
 * as in protothreads). The result is the same switch a hand-written state
 * machine uses, so it costs the same: no allocation, no stack of its own,
 * one compare-and-jump on entry.
 *
 *	struct two_naps {
 *		pw_async_t at;		(starts at 0: PW_ASYNC_INIT)
 *		struct pw_sleep nap;
 *	};
 *
 *	static enum pw_poll two_naps_poll(struct pw_cx *cx, void *state)
 *	{
 *		struct two_naps *s = state;
 *
 *		PW_ASYNC_BEGIN(cx, &s->at);
 *		pw_sleep_init(&s->nap, 30 * PW_NSEC_PER_MSEC);
 *		PW_AWAIT(pw_sleep_poll(cx, &s->nap));
 *		pw_sleep_init(&s->nap, 70 * PW_NSEC_PER_MSEC);
 *		PW_AWAIT(pw_sleep_poll(cx, &s->nap));
 *		PW_RETURN(100);
 *		PW_ASYNC_END();
 *	}
 *
 * The rules (docs/async.md explains them): only the state survives an
 * await, locals do not; at most one await, yield or return per source
 * line; no switch statement of the function's own may contain an await;
 * no declaration may be live across an await; one BEGIN/END pair per
 * function. Everything is C11; no compiler extension is used.
 */
#ifndef PINWHEEL_ASYNC_H
#define PINWHEEL_ASYNC_H

#include <stdbool.h>

#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The resume point of a straight-line poll function. Embed one in the
 * task's state and set it to PW_ASYNC_INIT (zero, as a zeroed state has)
 * before the first poll. Only the macros below write it.
 */
typedef int pw_async_t;

/* The resume point before the first poll: start at the top. */
#define PW_ASYNC_INIT 0

/* The resume point once PW_RETURN (or PW_ASYNC_END) has finished. */
#define PW_ASYNC_DONE (-1)

#define PW__ASYNC_CAT2(a, b) a##b
#define PW__ASYNC_CAT(a, b)  PW__ASYNC_CAT2(a, b)
#define PW__ASYNC_LABEL	     PW__ASYNC_CAT(pw__async_line_, __LINE__)

/**
 * PW_ASYNC_BEGIN - open the straight-line body of a poll function.
 * @cx: the poll's struct pw_cx pointer (the macros below return through it).
 * @at: a pw_async_t pointer into the task's state: the resume point.
 *
 * Jumps to where the last poll stopped (the top when *@at is
 * PW_ASYNC_INIT). Opens a block that PW_ASYNC_END closes; place it after
 * the function's declarations, and pair it with exactly one PW_ASYNC_END
 * at the end of the function.
 * Context: inside a poll function, once.
 */
#define PW_ASYNC_BEGIN(cx, at)                     \
	{                                          \
		struct pw_cx *pw__async_cx = (cx); \
		pw_async_t *pw__async_at = (at);   \
		(void)pw__async_cx;                \
		switch (*pw__async_at) {           \
		case PW_ASYNC_INIT:

/**
 * PW_AWAIT - evaluate a poll expression until it is ready.
 * @expr: an expression of type enum pw_poll, e.g.
 *        pw_sleep_poll(cx, &s->nap), or one that also writes an output,
 *        e.g. pw_join_poll(cx, &s->join, &s->result).
 *
 * When @expr gives PW_READY the body goes on at once, in the same poll
 * (an operation already complete costs no suspension). When it gives
 * PW_PENDING the poll function returns PW_PENDING and the next poll
 * evaluates @expr again, here. @expr is evaluated once per poll, so it
 * must be safe to repeat (every pinwheel *_poll call is). An output it
 * writes is valid after the await; write it into the state, or into a
 * local read before the next await. (The goto to the line's own label
 * reaches the case without falling into it, which keeps
 * -Wimplicit-fallthrough quiet; it compiles to nothing.)
 * Context: between PW_ASYNC_BEGIN and PW_ASYNC_END, one per line.
 */
#define PW_AWAIT(expr)                            \
	do {                                      \
		goto PW__ASYNC_LABEL;             \
	case __LINE__:                            \
PW__ASYNC_LABEL:                                  \
		if ((expr) == PW_PENDING) {       \
			*pw__async_at = __LINE__; \
			return PW_PENDING;        \
		}                                 \
	} while (0)

/**
 * PW_YIELD - let the other ready tasks run, then go on.
 *
 * Returns PW_PENDING exactly once, with the task rescheduled at the back
 * of its run queue (pw_yield()); the next poll continues after this line.
 * Context: between PW_ASYNC_BEGIN and PW_ASYNC_END, one per line.
 */
#define PW_YIELD()                             \
	do {                                   \
		*pw__async_at = __LINE__;      \
		return pw_yield(pw__async_cx); \
	case __LINE__:;                        \
	} while (0)

/**
 * PW_RETURN - finish the task with @value (an int64_t).
 *
 * Sets the resume point to PW_ASYNC_DONE and returns
 * pw_ready(cx, @value): the value reaches the join handle, or
 * pw_block_on()'s result. A task must not be polled once finished (the
 * poll contract); if it is, it finishes again with 0.
 * Context: between PW_ASYNC_BEGIN and PW_ASYNC_END, any number.
 */
#define PW_RETURN(value)                                         \
	do {                                                     \
		*pw__async_at = PW_ASYNC_DONE;                   \
		return pw_ready(pw__async_cx, (int64_t)(value)); \
	} while (0)

/**
 * PW_ASYNC_END - close the body opened by PW_ASYNC_BEGIN.
 *
 * A body that runs off its end finishes the task with 0, as PW_RETURN(0).
 * Must be the last statement of the poll function.
 * Context: inside a poll function, once, after PW_ASYNC_BEGIN.
 */
#define PW_ASYNC_END()                    \
	}                                 \
	*pw__async_at = PW_ASYNC_DONE;    \
	return pw_ready(pw__async_cx, 0); \
	}

/**
 * pw_async_done - true once the body behind @at has finished
 * (PW_RETURN or PW_ASYNC_END ran). Handy in a drop hook, which must
 * cancel what an unfinished body left in flight.
 * Context: the task's shard.
 */
static inline bool pw_async_done(const pw_async_t *at)
{
	return *at == PW_ASYNC_DONE;
}

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_ASYNC_H */
