/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/xchannel.h - a bounded channel whose senders live anywhere.
 *
 * Tokio's mpsc in C: many senders, on any shard, any stealing worker or
 * any plain thread; one receiver, a task. Items are fixed-size copies.
 * pw_xchan_open() makes the channel and its first two handles; every
 * other sender is a pw_xchan_tx_clone(). The channel's memory is its own
 * (counted by its handles) and is freed when the receiver and the last
 * sender are dropped, on whichever thread drops last: across shards no
 * single owner can know when the other side is done with it.
 *
 * The path. A send takes a permit (a free slot) from an atomic counter,
 * claims a position in a lock-free ring and publishes its item there;
 * the receiver takes items in position order and gives each permit back.
 * No lock is taken while there is room: a send from another shard costs
 * two atomic read-modify-writes and the cache lines of its slot.
 *
 * Backpressure and fairness. A send that finds no permit, or finds
 * senders waiting already, joins one waiting list (under a mutex: this is
 * the slow path only) and sleeps. A permit the receiver gives back goes
 * straight to the sender at the head of that list, which is woken. So
 * waiting senders finish in the order they started waiting, across all
 * shards and threads, and while anyone waits no newcomer takes a slot
 * (pw_xchan_try_send() gives -EAGAIN). Items of one sender arrive in the
 * order it sent them; items of different senders in the order their
 * sends completed.
 *
 * Closing and dropping. pw_xchan_close_tx() (from any sender) or the
 * drop of the last sender closes the sending side; pw_xchan_close_rx()
 * or the receiver's drop closes the receiving side. After either, every
 * new or waiting send gets -EPIPE (waiting senders are woken to see it,
 * and a sender that was granted a slot but had not filled it yet gets
 * -EPIPE too and gives the slot back); a send that had already taken its
 * slot completes and the receiver gets its item. The receiver drains what
 * is buffered and then sees the end (0). Closing a side twice gives
 * -EALREADY.
 *
 * Cancellation. A task dropped while a send is pending calls
 * pw_xchan_send_cancel() (or pw_xchan_tx_drop(), which does it first)
 * from its drop hook: the sender leaves the waiting list, and a slot
 * already granted to it passes to the next waiting sender.
 *
 * Handles. A struct pw_xchan_tx is one producer: it carries that
 * producer's send in progress, so it is used by one task (or thread) at
 * a time; to send from two places, clone it. Handles may be copied (into
 * a spawned task's state, say) only while no send is pending on them, and
 * then only one copy is used and dropped. Neither handle may be used
 * after its drop.
 *
 * The receiver is a pw_stream (pw_xchan_stream()), so combinators
 * (debounce, timeout) consume it; its drop is pw_xchan_rx_drop().
 */
#ifndef PINWHEEL_XCHANNEL_H
#define PINWHEEL_XCHANNEL_H

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

struct pw_xchan;

/* The largest item, in bytes. */
#define PW_XCHAN_ITEM_MAX 65536u

/* The largest capacity, in items. */
#define PW_XCHAN_CAP_MAX (1u << 24)

/*
 * A sender: one producer's handle and its send in progress. Fields are
 * the channel's (state is read and written atomically).
 */
struct pw_xchan_tx {
	struct pw_xchan *ch;   /* NULL once dropped */
	struct pw_list node;   /* link in the waiting list */
	struct pw_waker waker; /* owned clone while a task waits */
	uint32_t state;	       /* idle, waiting, granted or refused */
	uint32_t blocking;     /* the waiter is a blocked thread */
};

/* The receiver: a stream of the channel's items. Fields are the
 * channel's. */
struct pw_xchan_rx {
	struct pw_stream s;  /* the stream view */
	struct pw_xchan *ch; /* NULL once dropped */
};

/* Counters and state of a channel. */
struct pw_xchan_stats {
	uint64_t sent;	     /* items whose send took a slot */
	uint64_t received;   /* items taken */
	uint64_t full_waits; /* sends that had to wait for a slot */
	uint32_t len;	     /* slots taken and not yet received */
	uint32_t capacity;   /* capacity in items */
	uint32_t waiting;    /* senders waiting now */
	uint32_t senders;    /* sender handles alive */
	bool tx_closed;	     /* closed for sending (explicitly or last drop) */
	bool rx_closed;	     /* closed for receiving (explicitly or drop) */
};

/**
 * pw_xchan_open - make a channel and its first sender and receiver.
 * @item_size: bytes of one item, 1..PW_XCHAN_ITEM_MAX.
 * @capacity: items buffered before senders wait, 1..PW_XCHAN_CAP_MAX.
 * @tx, @rx: receive the handles (any previous content is overwritten).
 *
 * The channel's memory (about the next power of two above @capacity
 * times the item size rounded up to 8, plus 8 bytes a slot) is allocated
 * here, once; nothing is allocated per send.
 * Return: 0; -EINVAL for a NULL handle or a size out of range; -ENOMEM.
 * Context: any thread.
 */
PW_API int pw_xchan_open(size_t item_size, size_t capacity,
			 struct pw_xchan_tx *tx, struct pw_xchan_rx *rx);

/**
 * pw_xchan_tx_clone - make @dst another sender of @src's channel.
 * Return: 0; -EINVAL for NULL handles or a dropped @src.
 * Context: any thread.
 */
PW_API int pw_xchan_tx_clone(struct pw_xchan_tx *dst,
			     const struct pw_xchan_tx *src);

/**
 * pw_xchan_tx_drop - drop a sender, cancelling its pending send. The
 * last sender's drop closes the sending side: the receiver drains what is
 * buffered and then sees the end. Dropping a dropped (or zeroed) handle
 * does nothing.
 * Context: any thread (a task's drop hook included).
 */
PW_API void pw_xchan_tx_drop(struct pw_xchan_tx *tx);

/**
 * pw_xchan_send_poll - send one item, waiting while the channel is full.
 * @item: the item (the channel's item size); read only when it is stored.
 * @res: receives 0 when the item is stored, or -errno.
 *
 * Return: PW_PENDING while there is no slot for it, or others wait before
 * it (the task is woken when a slot is granted or the channel closes);
 * PW_READY with *@res = 0 once stored (the receiver is woken), leaving the
 * handle idle for the next send; PW_READY with *@res = -EPIPE when the
 * channel is closed, -EINVAL for NULL arguments or a dropped @tx, or
 * the error of pw_waker_clone() when the waker cannot be kept. Counts
 * against the coop budget.
 * Context: a task on any shard or stealing worker.
 */
PW_API enum pw_poll pw_xchan_send_poll(struct pw_cx *cx, struct pw_xchan_tx *tx,
				       const void *item, int *res);

/**
 * pw_xchan_send_cancel - abandon @tx's pending send (a drop hook's call).
 * A waiting sender leaves the list; a slot granted to it passes on.
 * Return: 0 when a send was pending; -EALREADY when none was; -EINVAL for
 * NULL or a dropped @tx.
 * Context: the thread that owns @tx now.
 */
PW_API int pw_xchan_send_cancel(struct pw_xchan_tx *tx);

/**
 * pw_xchan_try_send - store @item now if there is room.
 * Return: 0; -EAGAIN when full or others wait; -EPIPE when closed;
 * -EINVAL for NULL arguments or a dropped @tx. It takes no part in
 * @tx's send in progress, if any.
 * Context: any thread.
 */
PW_API int pw_xchan_try_send(struct pw_xchan_tx *tx, const void *item);

/**
 * pw_xchan_send_blocking - send from a plain thread, sleeping (futex)
 * while the channel is full; waits in the same FIFO as tasks.
 * Return: 0 once stored; -EPIPE when closed (before or while waiting);
 * -EINVAL for NULL arguments, a dropped @tx or one with a send pending;
 * -EPERM on a shard or stealing worker
 * thread, which must not block (use pw_xchan_send_poll()).
 * Context: a thread that is not a runtime thread.
 */
PW_API int pw_xchan_send_blocking(struct pw_xchan_tx *tx, const void *item);

/**
 * pw_xchan_close_tx - close the sending side for every sender.
 * Return: 0; -EALREADY when already closed for sending; -EINVAL for NULL
 * or a dropped @tx.
 * Context: any thread.
 */
PW_API int pw_xchan_close_tx(struct pw_xchan_tx *tx);

/**
 * pw_xchan_is_closed - true when either side is closed (a send would get
 * -EPIPE), or @tx is NULL or dropped.
 * Context: any thread.
 */
PW_API bool pw_xchan_is_closed(const struct pw_xchan_tx *tx);

/**
 * pw_xchan_recv_poll - take the oldest item, waiting while empty.
 * @item: receives the item when *@res is 1.
 * @res: 1 (an item), 0 (closed and drained: the end), or -errno.
 *
 * Taking an item gives its slot to the oldest waiting sender. One task
 * receives at a time. Return: PW_PENDING while empty and open; PW_READY
 * with *@res set; *@res = -EINVAL for NULL arguments or a dropped @rx,
 * or the error of pw_waker_clone() when the waker cannot be kept. Counts
 * against the coop budget.
 * The same as pw_stream_poll_next() on pw_xchan_stream(@rx).
 * Context: the receiving task, on any shard or worker.
 */
PW_API enum pw_poll pw_xchan_recv_poll(struct pw_cx *cx, struct pw_xchan_rx *rx,
				       void *item, int *res);

/**
 * pw_xchan_try_recv - take the oldest item if there is one.
 * Return: 1 with *@item set; 0 when closed and drained; -EAGAIN when
 * empty and open (or a send that took a slot has not stored its item
 * yet); -EINVAL for NULL arguments or a dropped @rx.
 * Context: the receiver's thread (one at a time).
 */
PW_API int pw_xchan_try_recv(struct pw_xchan_rx *rx, void *item);

/**
 * pw_xchan_stream - the receiver as a stream (items of the channel's
 * size; its drop is pw_xchan_rx_drop()).
 * Return: the stream; NULL for NULL or a dropped @rx.
 * Context: any thread.
 */
PW_API struct pw_stream *pw_xchan_stream(struct pw_xchan_rx *rx);

/**
 * pw_xchan_close_rx - no more items are wanted: every later or waiting
 * send gets -EPIPE; what is buffered may still be drained.
 * Return: 0; -EALREADY when already closed for receiving; -EINVAL for
 * NULL or a dropped @rx.
 * Context: the receiver's thread.
 */
PW_API int pw_xchan_close_rx(struct pw_xchan_rx *rx);

/**
 * pw_xchan_rx_drop - close the receiving side, release the receiver's
 * waker and its reference; buffered items are discarded with the channel.
 * Dropping a dropped (or zeroed) receiver does nothing.
 * Context: the receiver's thread (a drop hook included).
 */
PW_API void pw_xchan_rx_drop(struct pw_xchan_rx *rx);

/**
 * pw_xchan_stats - copy the counters of @rx's channel into @out.
 * Return: 0; -EINVAL for NULL or a dropped @rx.
 * Context: the receiver's thread.
 */
PW_API int pw_xchan_stats(const struct pw_xchan_rx *rx,
			  struct pw_xchan_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_XCHANNEL_H */
