/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/stream.h - two small poll contracts: streams and futures.
 *
 * A stream produces a sequence of fixed-size items, one per successful
 * poll (Rust's Stream::poll_next). A future produces one int64_t result
 * (Rust's Future::poll). Both are embeddable structs whose first field is
 * an ops table: an implementation embeds the struct in its own state and
 * recovers that state with pw_container_of() in its ops. Nothing here
 * allocates; the calls below only dispatch through the table.
 *
 * Contract of poll_next(cx, s, item, res):
 *  - PW_PENDING: nothing yet. The implementation registered the current
 *    task's waker with whatever will produce the next item (or ran out of
 *    coop budget, in which case the task is polled again soon). *res is
 *    untouched.
 *  - PW_READY with *res = 1: one item of s->item_size bytes was copied to
 *    *item.
 *  - *item holds an item only after *res = 1: on any other outcome its
 *    bytes are unspecified (an adapter may have read an item into it and
 *    discarded it), so never keep data there across polls.
 *  - PW_READY with *res = 0: the end of the stream. A stream is fused:
 *    once it ended it keeps answering PW_READY with *res = 0.
 *  - PW_READY with *res < 0: an error (-errno) for this poll; the stream
 *    may produce more items afterwards unless its documentation says
 *    otherwise.
 *
 * Contract of poll(cx, f, out): PW_PENDING as above, or PW_READY with
 * *out set to the result (a value >= 0, or -errno). A future is polled
 * until it is ready and not after (a ready future may answer -EINVAL or
 * repeat its result; the pinwheel ones repeat it).
 *
 * Ownership and drop: whoever holds a stream or future calls its drop
 * exactly once when done with it, whether it finished or not. Drop
 * cancels what the object still has armed (sleeps, operations, waiting
 * senders) and releases wakers it cloned; it must be safe on an object
 * that finished. A combinator that wraps a stream or future takes
 * ownership of it and drops it itself (see pinwheel/combinators.h).
 *
 * Threads: a stream or future is polled by one task, on one shard, and
 * dropped on that shard (normally from the task's drop hook).
 */
#ifndef PINWHEEL_STREAM_H
#define PINWHEEL_STREAM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pw_stream;
struct pw_future;

/* The operations of a stream. */
struct pw_stream_ops {
	/* Produce the next item; see the contract above. Never NULL. */
	enum pw_poll (*poll_next)(struct pw_cx *cx, struct pw_stream *s,
				  void *item, int *res);
	/* Release what the stream holds; may be NULL (nothing to do). */
	void (*drop)(struct pw_stream *s);
};

/* A stream: embed it in the implementation's state. */
struct pw_stream {
	const struct pw_stream_ops *ops; /* NULL until initialised */
	size_t item_size;		 /* bytes of one item, > 0 */
};

/* The operations of a one-shot future. */
struct pw_future_ops {
	/* Make progress; see the contract above. Never NULL. */
	enum pw_poll (*poll)(struct pw_cx *cx, struct pw_future *f,
			     int64_t *out);
	/* Release what the future holds; may be NULL. */
	void (*drop)(struct pw_future *f);
};

/* A future: embed it in the implementation's state. */
struct pw_future {
	const struct pw_future_ops *ops; /* NULL until initialised */
};

/**
 * pw_stream_poll_next - poll @s for its next item.
 * @item: receives one item of @s->item_size bytes when *@res is 1.
 * @res: receives 1 (an item), 0 (end of stream) or -errno.
 *
 * Return: PW_PENDING (a waker is registered) or PW_READY with *@res set.
 * A NULL @cx, @s, @item or @res, or a stream without ops, gives PW_READY
 * with *@res = -EINVAL (when @res is not NULL).
 * Context: a task on the stream's shard.
 */
static inline enum pw_poll
pw_stream_poll_next(struct pw_cx *cx, struct pw_stream *s, void *item, int *res)
{
	if (!cx || !s || !item || !res || !s->ops || !s->ops->poll_next) {
		if (res)
			*res = -EINVAL;
		return PW_READY;
	}
	return s->ops->poll_next(cx, s, item, res);
}

/**
 * pw_stream_drop - drop @s: call its drop operation, if it has one.
 * A NULL @s or a stream without ops is ignored.
 * Context: the stream's shard (a drop hook is fine).
 */
static inline void pw_stream_drop(struct pw_stream *s)
{
	if (s && s->ops && s->ops->drop)
		s->ops->drop(s);
}

/**
 * pw_future_poll - poll @f.
 * @out: receives the result when ready.
 *
 * Return: PW_PENDING (a waker is registered) or PW_READY with *@out set.
 * A NULL @cx, @f or @out, or a future without ops, gives PW_READY with
 * *@out = -EINVAL (when @out is not NULL).
 * Context: a task on the future's shard.
 */
static inline enum pw_poll pw_future_poll(struct pw_cx *cx, struct pw_future *f,
					  int64_t *out)
{
	if (!cx || !f || !out || !f->ops || !f->ops->poll) {
		if (out)
			*out = -EINVAL;
		return PW_READY;
	}
	return f->ops->poll(cx, f, out);
}

/**
 * pw_future_drop - drop @f: call its drop operation, if it has one.
 * A NULL @f or a future without ops is ignored.
 * Context: the future's shard (a drop hook is fine).
 */
static inline void pw_future_drop(struct pw_future *f)
{
	if (f && f->ops && f->ops->drop)
		f->ops->drop(f);
}

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_STREAM_H */
