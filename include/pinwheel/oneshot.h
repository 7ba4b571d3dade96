/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/oneshot.h - a one-shot channel: one value, sent once.
 *
 * Tokio's oneshot in C. pw_oneshot_open() makes the channel and its two
 * handles; the sender may live on any shard, stealing worker or plain
 * thread, the receiver is a task (or polls with pw_oneshot_try_recv()).
 * The value is a copy of a size chosen at open, up to
 * PW_ONESHOT_VALUE_MAX bytes (0 for a bare signal). The channel's memory
 * is its own, freed when both handles are dropped, by whichever goes
 * last.
 *
 * Outcomes. The receiver gets the value, or -EPIPE when the sender is
 * dropped without sending. The sender's pw_oneshot_send() gives -EPIPE
 * when the receiver is gone (closed or dropped) first: the value was not
 * delivered. A sender may ask whether anyone still wants the value:
 * pw_oneshot_is_closed() checks, pw_oneshot_closed_poll() waits (Tokio's
 * Sender::closed()), so a producer can stop work nobody will read.
 *
 * No lock: one atomic state word. Whoever sets the last bit that matters
 * (the value sent, the receiver closed) wakes the other side's waker if
 * it is registered; a waker is touched by its owner only while its bit is
 * clear, so a wake never races a replacement.
 *
 * A handle is used by one thread at a time and may be copied (into a
 * spawned task's state) as long as only one copy is used and dropped.
 */
#ifndef PINWHEEL_ONESHOT_H
#define PINWHEEL_ONESHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pw_oneshot;

/* The largest value, in bytes. */
#define PW_ONESHOT_VALUE_MAX 4096u

/* The sending handle. Fields are the channel's. */
struct pw_oneshot_tx {
	struct pw_oneshot *o; /* NULL once sent or dropped */
};

/* The receiving handle. Fields are the channel's. */
struct pw_oneshot_rx {
	struct pw_oneshot *o; /* NULL once dropped */
	bool done;	      /* the outcome was taken */
};

/**
 * pw_oneshot_open - make a one-shot channel for a value of @size bytes.
 * Return: 0 with both handles set; -EINVAL for NULL handles or @size
 * above PW_ONESHOT_VALUE_MAX; -ENOMEM.
 * Context: any thread.
 */
PW_API int pw_oneshot_open(size_t size, struct pw_oneshot_tx *tx,
			   struct pw_oneshot_rx *rx);

/**
 * pw_oneshot_send - send @value (the channel's size; may be NULL when it
 * is 0) and drop @tx.
 * Return: 0 when the value was delivered (the receiver is woken); -EPIPE
 * when the receiver was gone (the value was not delivered); -EINVAL for
 * a NULL or already used @tx, or a NULL @value of non-zero size (@tx is
 * then left as it was).
 * Context: any thread.
 */
PW_API int pw_oneshot_send(struct pw_oneshot_tx *tx, const void *value);

/**
 * pw_oneshot_tx_drop - drop @tx without sending: the receiver gets
 * -EPIPE. Dropping a used or zeroed handle does nothing.
 * Context: any thread (a drop hook included).
 */
PW_API void pw_oneshot_tx_drop(struct pw_oneshot_tx *tx);

/**
 * pw_oneshot_is_closed - true when the receiver is closed or dropped (or
 * @tx is NULL or used).
 * Context: any thread.
 */
PW_API bool pw_oneshot_is_closed(const struct pw_oneshot_tx *tx);

/**
 * pw_oneshot_closed_poll - wait until the receiver is closed or dropped.
 * Return: PW_READY when it is (or @tx is NULL or used); PW_PENDING
 * otherwise, the task woken when it happens.
 * Context: a task holding @tx.
 */
PW_API enum pw_poll pw_oneshot_closed_poll(struct pw_cx *cx,
					   struct pw_oneshot_tx *tx);

/**
 * pw_oneshot_recv_poll - wait for the outcome.
 * @value: receives the value when *@res is 0 (may be NULL for size 0).
 * @res: 0 (the value), -EPIPE (the sender dropped without sending),
 *       -EALREADY (the outcome was taken before), -EINVAL, or the
 *       error of pw_waker_clone() when the waker cannot be kept.
 * Return: PW_PENDING until the sender sends or drops; then PW_READY.
 * Context: a task holding @rx.
 */
PW_API enum pw_poll pw_oneshot_recv_poll(struct pw_cx *cx,
					 struct pw_oneshot_rx *rx, void *value,
					 int *res);

/**
 * pw_oneshot_try_recv - take the outcome if there is one.
 * Return: 0 with *@value set; -EAGAIN while the sender has not sent or
 * dropped; -EPIPE, -EALREADY or -EINVAL as pw_oneshot_recv_poll().
 * Context: the thread holding @rx.
 */
PW_API int pw_oneshot_try_recv(struct pw_oneshot_rx *rx, void *value);

/**
 * pw_oneshot_close - the value is no longer wanted: a later send gets
 * -EPIPE and a waiting pw_oneshot_closed_poll() is woken. A value sent
 * before may still be taken with pw_oneshot_try_recv().
 * Return: 0; -EALREADY when closed before; -EINVAL for NULL or dropped.
 * Context: the thread holding @rx.
 */
PW_API int pw_oneshot_close(struct pw_oneshot_rx *rx);

/**
 * pw_oneshot_rx_drop - close and drop @rx (an unread value is
 * discarded). Dropping a dropped or zeroed handle does nothing.
 * Context: the thread holding @rx (a drop hook included).
 */
PW_API void pw_oneshot_rx_drop(struct pw_oneshot_rx *rx);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_ONESHOT_H */
