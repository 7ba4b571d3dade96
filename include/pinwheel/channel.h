/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/channel.h - a local bounded channel with backpressure.
 *
 * A FIFO queue of fixed-size items between tasks of one shard: no lock,
 * no atomic, no allocation (the caller gives the storage). Senders wait
 * while it is full; the receiver waits while it is empty. The receiver is
 * also a pw_stream (pinwheel/stream.h), so combinators can consume it.
 *
 * Backpressure and fairness. A send that finds the channel full (or other
 * senders already waiting) queues its struct pw_channel_sender on the
 * channel's intrusive list and sleeps. Each item the receiver takes grants
 * the freed slot to the sender at the head of that list and wakes it; its
 * next poll stores its item in the granted slot. Waiting senders therefore
 * complete in FIFO order and a newcomer never takes a slot from one that
 * waits (pw_channel_try_send() gives -EAGAIN while anyone waits).
 *
 * Closing. pw_channel_close_tx() says no more items will come;
 * pw_channel_close_rx() says none is wanted. After either, every send
 * (new, waiting or granted) gets -EPIPE and waiting senders are woken to
 * see it; the receiver still drains what is buffered and then sees the
 * end of the stream (0). Closing twice gives -EALREADY.
 *
 * Cancellation. A task that may be dropped while a send is pending calls
 * pw_channel_send_cancel() on its sender state from its drop hook: the
 * node is unlinked, and a slot already granted to it passes to the next
 * waiting sender. The receiver's pw_stream_drop() closes the receiving
 * side and releases its waker.
 *
 * Wakers: the channel keeps owned clones (pw_waker_clone) of the waiting
 * receiver's and each waiting sender's waker, and consumes them when it
 * wakes; a clone keeps its task's memory alive, so nothing the channel
 * points to can be freed under it.
 *
 * Threads: a channel belongs to the shard that first uses it (any call
 * but pw_channel_init() and pw_channel_stats()); calls from another shard
 * get -EXDEV and calls from a thread that is not a shard get -EPERM. It
 * may be initialised anywhere. The channel must not move after init and
 * must outlive every task that sends to or receives from it.
 */
#ifndef PINWHEEL_CHANNEL_H
#define PINWHEEL_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "list.h"
#include "stream.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* States of a sender (private to the channel; zero is idle). */
enum pw_channel_sender_state {
	PW_CHANNEL_SENDER_IDLE = 0, /* no send in progress */
	PW_CHANNEL_SENDER_WAITING,  /* queued, waiting for a slot */
	PW_CHANNEL_SENDER_GRANTED,  /* a slot is reserved for its item */
};

struct pw_channel;

/*
 * The state of one send in progress, embedded in the sending task's
 * state. Zero-initialise it ({0} or memset) before its first use; after
 * a send completes it is idle again and may be reused. Fields are the
 * channel's.
 */
struct pw_channel_sender {
	struct pw_list node;   /* link in the channel's waiting list */
	struct pw_waker waker; /* owned clone while waiting */
	struct pw_channel *ch; /* channel it waits on, NULL when idle */
	uint8_t state;	       /* enum pw_channel_sender_state */
};

/* A bounded channel. Fields are the channel's; read them through
 * pw_channel_stats(). */
struct pw_channel {
	struct pw_stream rx;	  /* the receiving side as a stream */
	unsigned char *buf;	  /* caller storage: capacity * item_size */
	struct pw__shard *shard;  /* owner; NULL until first used */
	struct pw_list waiters;	  /* waiting senders, oldest first */
	struct pw_waker rx_waker; /* owned clone of the waiting receiver */
	uint32_t cap;		  /* capacity in items */
	uint32_t head;		  /* index of the oldest item */
	uint32_t len;		  /* items buffered */
	uint32_t reserved;	  /* slots granted to senders, not yet used */
	uint32_t nwaiting;	  /* senders on the waiting list */
	bool tx_closed, rx_closed;
	uint64_t sent, received; /* items stored and taken */
	uint64_t full_waits;	 /* sends that had to wait */
};

/* Counters and state of a channel. */
struct pw_channel_stats {
	uint64_t sent;	     /* items stored */
	uint64_t received;   /* items taken */
	uint64_t full_waits; /* sends that had to wait for a slot */
	uint32_t len;	     /* items buffered now */
	uint32_t capacity;   /* capacity in items */
	uint32_t waiting;    /* senders waiting now */
	uint32_t reserved;   /* slots granted, not yet filled */
	bool tx_closed;	     /* pw_channel_close_tx() was called */
	bool rx_closed;	     /* pw_channel_close_rx() (or the drop) was */
};

/**
 * pw_channel_init - make @ch an open, empty channel.
 * @item_size: bytes of one item, > 0.
 * @capacity: items it holds before senders wait, 1..UINT32_MAX.
 * @storage: @capacity * @item_size bytes owned by the caller, kept alive
 *           (and unmoved) as long as the channel.
 *
 * Nothing is allocated. The receiving stream is pw_channel_stream(@ch).
 * Return: 0; -EINVAL for a NULL @ch or @storage, a zero @item_size or
 * @capacity, a @capacity above UINT32_MAX, or a product that overflows.
 * Context: any thread; the channel then belongs to the first shard that
 * uses it.
 */
PW_API int pw_channel_init(struct pw_channel *ch, size_t item_size,
			   size_t capacity, void *storage);

/**
 * pw_channel_send_poll - send one item, waiting while the channel is full.
 * @snd: this send's state, in the sending task's state (see above).
 * @item: the item (@ch's item size); read only when it is stored.
 * @res: receives 0 when the item is stored, or -errno.
 *
 * Return: PW_PENDING while the channel is full or other senders wait
 * before this one (@snd is queued and the task is woken when a slot is
 * granted to it or the channel closes); PW_READY with *@res = 0 when the
 * item was stored (the receiver is woken), leaving @snd idle for reuse.
 * PW_READY with *@res = -EPIPE when the channel is closed (either side);
 * -EINVAL for a NULL @cx, @ch, @snd or @item, an uninitialised @ch, or
 * @snd pending on another channel; -EXDEV from another shard. Counts
 * against the coop budget.
 * Context: a task on the channel's shard.
 */
PW_API enum pw_poll pw_channel_send_poll(struct pw_cx *cx,
					 struct pw_channel *ch,
					 struct pw_channel_sender *snd,
					 const void *item, int *res);

/**
 * pw_channel_send_cancel - abandon a pending send (the sender's drop).
 *
 * A waiting @snd is unlinked and its waker dropped; a slot granted to it
 * goes to the next waiting sender. @snd is idle afterwards.
 * Return: 0 when a send was pending; -EALREADY when @snd was idle (a
 * completed or never-started send: harmless); -EINVAL for NULL.
 * Context: the channel's shard; safe from a drop hook.
 */
PW_API int pw_channel_send_cancel(struct pw_channel_sender *snd);

/**
 * pw_channel_try_send - store @item now if there is room.
 * Return: 0; -EAGAIN when the channel is full or senders are waiting;
 * -EPIPE when it is closed; -EINVAL for NULL or uninitialised arguments;
 * -EXDEV or -EPERM off the channel's shard.
 * Context: the channel's shard.
 */
PW_API int pw_channel_try_send(struct pw_channel *ch, const void *item);

/**
 * pw_channel_recv_poll - take the oldest item, waiting while empty.
 * @item: receives the item when *@res is 1.
 * @res: 1 (an item), 0 (closed and drained: the end), or -errno.
 *
 * Taking an item grants its slot to the oldest waiting sender. Only one
 * task receives at a time: a poll from another task replaces the waker.
 * Return: PW_PENDING while the channel is empty and open; PW_READY with
 * *@res set. -EINVAL for NULL or an uninitialised @ch; -EXDEV from
 * another shard. Counts against the coop budget. The same as
 * pw_stream_poll_next() on pw_channel_stream(@ch).
 * Context: a task on the channel's shard.
 */
PW_API enum pw_poll pw_channel_recv_poll(struct pw_cx *cx,
					 struct pw_channel *ch, void *item,
					 int *res);

/**
 * pw_channel_try_recv - take the oldest item if there is one.
 * Return: 1 with *@item set; 0 when closed and drained; -EAGAIN when
 * empty and open; -EINVAL for NULL or uninitialised arguments; -EXDEV or
 * -EPERM off the channel's shard.
 * Context: the channel's shard.
 */
PW_API int pw_channel_try_recv(struct pw_channel *ch, void *item);

/**
 * pw_channel_stream - the receiving side of @ch as a stream.
 * Its items are the channel's; its drop is pw_channel_close_rx() plus
 * the release of the receiver's waker.
 * Return: the stream, or NULL for a NULL or uninitialised @ch.
 * Context: any thread.
 */
PW_API struct pw_stream *pw_channel_stream(struct pw_channel *ch);

/**
 * pw_channel_close_tx - no more items will be sent.
 * Waiting senders are woken and get -EPIPE; the receiver is woken and
 * sees the end once it has drained the buffer.
 * Return: 0; -EALREADY if already closed for sending; -EINVAL for NULL
 * or uninitialised; -EXDEV or -EPERM off the channel's shard.
 * Context: the channel's shard.
 */
PW_API int pw_channel_close_tx(struct pw_channel *ch);

/**
 * pw_channel_close_rx - no more items are wanted.
 * Every later or waiting send gets -EPIPE (waiting senders are woken);
 * what is buffered may still be drained, then the receiver sees the end.
 * Return: 0; -EALREADY if already closed for receiving; -EINVAL for NULL
 * or uninitialised; -EXDEV or -EPERM off the channel's shard.
 * Context: the channel's shard.
 */
PW_API int pw_channel_close_rx(struct pw_channel *ch);

/**
 * pw_channel_stats - copy @ch's counters into @out.
 * Return: 0; -EINVAL for NULL or an uninitialised @ch.
 * Context: the channel's shard, or any thread while no shard uses it.
 */
PW_API int pw_channel_stats(const struct pw_channel *ch,
			    struct pw_channel_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_CHANNEL_H */
