/* SPDX-License-Identifier: MIT */
/*
 * channel.c - a local bounded channel: a ring of fixed-size items in
 * caller storage, used by the tasks of one shard.
 *
 * Everything runs on the owning shard's thread, so the state is plain
 * fields: no lock, no atomic. The owner is bound lazily by the first call
 * made on a shard and checked against the thread's shard on every call.
 *
 * Backpressure is a semaphore of slots with FIFO hand-off. A slot is free
 * when len + reserved < cap. A send that finds no free slot, or finds
 * senders already waiting, links its sender node at the tail of the
 * waiting list with an owned clone of its waker. Whenever a slot frees
 * (the receiver took an item, or a granted sender was cancelled) the head
 * of the list is unlinked, marked GRANTED, counted in `reserved` and woken;
 * its next poll stores its item in that slot. So waiting senders finish in
 * arrival order and no newcomer overtakes them. Closing unlinks and wakes
 * every waiting sender; they and any granted sender see -EPIPE when they
 * poll next, and a granted sender's reservation is returned then.
 *
 * The receiver keeps one owned waker clone, replaced when another task
 * polls, consumed by the wake that follows a store or a close.
 *
 * Stealing mode: the channel still belongs to one worker. A task that
 * polls it on another worker moves there (it is fixed to the channel's
 * worker and yields, and its next poll runs there); a task that cannot
 * move (placed on a shard, or with operations in flight here) gets
 * -EXDEV, as do the calls that take no context.
 */
#include <errno.h>
#include <string.h>

#include "pinwheel/channel.h"
#include "shard/sched.h"

static enum pw_poll stream_poll_next(struct pw_cx *cx, struct pw_stream *s,
				     void *item, int *res);
static void stream_drop(struct pw_stream *s);

static const struct pw_stream_ops chan_stream_ops = {
	.poll_next = stream_poll_next,
	.drop = stream_drop,
};

static inline bool valid(const struct pw_channel *ch)
{
	return ch && ch->rx.ops == &chan_stream_ops;
}

static inline bool closed(const struct pw_channel *ch)
{
	return ch->tx_closed || ch->rx_closed;
}

/* Bind @ch to the calling shard on first use; refuse other threads. */
static int bind_shard(struct pw_channel *ch)
{
	struct pw__shard *s = pw__cur_shard;

	if (!s)
		return -EPERM;
	if (!ch->shard)
		ch->shard = s;
	else if (ch->shard != s)
		return -EXDEV;
	return 0;
}

/* A poll's bind: in stealing mode the task stays with the channel, or
 * moves to it (1: return PW_PENDING, the next poll runs there). */
static int bind_task(struct pw_cx *cx, struct pw_channel *ch)
{
	int err = bind_shard(ch);
	struct pw__task *t = cx->task;

	if (!t->steal)
		return err;
	if (!err) {
		pw__task_fix(t, ch->shard);
		return 0;
	}
	if (err != -EXDEV || t->fixed || pw__pins(t))
		return err;
	pw__task_fix(t, ch->shard);
	t->flags |= PW__T_NOTIFIED; /* re-queued, then forwarded there */
	return 1;
}

/* Keep an owned clone of the current task's waker in @slot. */
static int keep_waker(struct pw_cx *cx, struct pw_waker *slot)
{
	struct pw_waker w = pw_cx_waker(cx);

	if (slot->task && pw_waker_will_wake(slot, &w))
		return 0;
	pw_waker_drop(slot);
	return pw_waker_clone(slot, &w);
}

/* Hand free slots to the oldest waiting senders. */
static void grant_slots(struct pw_channel *ch)
{
	while (!closed(ch) && ch->nwaiting &&
	       ch->len + ch->reserved < ch->cap) {
		struct pw_channel_sender *snd = pw_list_first_entry(
			&ch->waiters, struct pw_channel_sender, node);

		pw_list_del_init(&snd->node);
		ch->nwaiting--;
		ch->reserved++;
		snd->state = PW_CHANNEL_SENDER_GRANTED;
		pw_waker_wake(&snd->waker);
	}
}

static void store(struct pw_channel *ch, const void *item)
{
	size_t isz = ch->rx.item_size;
	uint32_t at = (uint32_t)(((uint64_t)ch->head + ch->len) % ch->cap);

	memcpy(ch->buf + (size_t)at * isz, item, isz);
	ch->len++;
	ch->sent++;
	pw_waker_wake(&ch->rx_waker);
}

static void take(struct pw_channel *ch, void *item)
{
	size_t isz = ch->rx.item_size;

	memcpy(item, ch->buf + (size_t)ch->head * isz, isz);
	ch->head = ch->head + 1 == ch->cap ? 0 : ch->head + 1;
	ch->len--;
	ch->received++;
	grant_slots(ch);
}

/* Return @snd to idle, undoing its wait or giving back its slot. */
static void sender_release(struct pw_channel *ch, struct pw_channel_sender *snd)
{
	if (snd->state == PW_CHANNEL_SENDER_WAITING) {
		pw_list_del_init(&snd->node);
		ch->nwaiting--;
		pw_waker_drop(&snd->waker);
	} else if (snd->state == PW_CHANNEL_SENDER_GRANTED) {
		ch->reserved--; /* its waker was consumed by the grant */
	}
	snd->state = PW_CHANNEL_SENDER_IDLE;
	snd->ch = NULL;
}

int pw_channel_init(struct pw_channel *ch, size_t item_size, size_t capacity,
		    void *storage)
{
	if (!ch || !storage || !item_size || !capacity ||
	    capacity > UINT32_MAX || item_size > SIZE_MAX / capacity)
		return -EINVAL;
	memset(ch, 0, sizeof(*ch));
	ch->rx.ops = &chan_stream_ops;
	ch->rx.item_size = item_size;
	ch->buf = storage;
	ch->cap = (uint32_t)capacity;
	pw_list_init(&ch->waiters);
	return 0;
}

enum pw_poll pw_channel_send_poll(struct pw_cx *cx, struct pw_channel *ch,
				  struct pw_channel_sender *snd,
				  const void *item, int *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !cx->task || !snd || !item || !valid(ch) ||
	    (snd->state != PW_CHANNEL_SENDER_IDLE && snd->ch != ch)) {
		*res = -EINVAL;
		return PW_READY;
	}
	int err = bind_task(cx, ch);
	if (err > 0)
		return PW_PENDING;
	if (err) {
		*res = err;
		return PW_READY;
	}
	if (closed(ch)) {
		sender_release(ch, snd);
		*res = -EPIPE;
		return PW_READY;
	}
	switch (snd->state) {
	case PW_CHANNEL_SENDER_IDLE:
		if (!ch->nwaiting && ch->len + ch->reserved < ch->cap) {
			if (!pw__coop_proceed(cx))
				return PW_PENDING;
			store(ch, item);
			*res = 0;
			return PW_READY;
		}
		snd->waker.task = NULL;
		err = keep_waker(cx, &snd->waker);
		if (err) {
			*res = err;
			return PW_READY;
		}
		snd->ch = ch;
		snd->state = PW_CHANNEL_SENDER_WAITING;
		pw_list_add_tail(&snd->node, &ch->waiters);
		ch->nwaiting++;
		ch->full_waits++;
		return PW_PENDING;
	case PW_CHANNEL_SENDER_WAITING:
		err = keep_waker(cx, &snd->waker);
		if (err) {
			sender_release(ch, snd);
			*res = err;
			return PW_READY;
		}
		return PW_PENDING;
	default: /* GRANTED */
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		ch->reserved--;
		snd->state = PW_CHANNEL_SENDER_IDLE;
		snd->ch = NULL;
		store(ch, item);
		*res = 0;
		return PW_READY;
	}
}

int pw_channel_send_cancel(struct pw_channel_sender *snd)
{
	if (!snd)
		return -EINVAL;
	if (snd->state == PW_CHANNEL_SENDER_IDLE)
		return -EALREADY;
	struct pw_channel *ch = snd->ch;
	if (!valid(ch))
		return -EINVAL;
	int err = bind_shard(ch);
	if (err)
		return err;
	bool granted = snd->state == PW_CHANNEL_SENDER_GRANTED;
	sender_release(ch, snd);
	if (granted)
		grant_slots(ch);
	return 0;
}

int pw_channel_try_send(struct pw_channel *ch, const void *item)
{
	if (!valid(ch) || !item)
		return -EINVAL;
	int err = bind_shard(ch);
	if (err)
		return err;
	if (closed(ch))
		return -EPIPE;
	if (ch->nwaiting || ch->len + ch->reserved >= ch->cap)
		return -EAGAIN;
	store(ch, item);
	return 0;
}

enum pw_poll pw_channel_recv_poll(struct pw_cx *cx, struct pw_channel *ch,
				  void *item, int *res)
{
	if (!res)
		return PW_READY;
	if (!cx || !cx->task || !item || !valid(ch)) {
		*res = -EINVAL;
		return PW_READY;
	}
	int err = bind_task(cx, ch);
	if (err > 0)
		return PW_PENDING;
	if (err) {
		*res = err;
		return PW_READY;
	}
	if (ch->len) {
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		take(ch, item);
		*res = 1;
		return PW_READY;
	}
	if (closed(ch)) {
		pw_waker_drop(&ch->rx_waker);
		*res = 0;
		return PW_READY;
	}
	err = keep_waker(cx, &ch->rx_waker);
	if (err) {
		*res = err;
		return PW_READY;
	}
	return PW_PENDING;
}

int pw_channel_try_recv(struct pw_channel *ch, void *item)
{
	if (!valid(ch) || !item)
		return -EINVAL;
	int err = bind_shard(ch);
	if (err)
		return err;
	if (ch->len) {
		take(ch, item);
		return 1;
	}
	return closed(ch) ? 0 : -EAGAIN;
}

struct pw_stream *pw_channel_stream(struct pw_channel *ch)
{
	return valid(ch) ? &ch->rx : NULL;
}

/* Wake everyone after a close: senders to see -EPIPE, the receiver to
 * drain and see the end. */
static void wake_all(struct pw_channel *ch)
{
	while (!pw_list_empty(&ch->waiters)) {
		struct pw_channel_sender *snd = pw_list_first_entry(
			&ch->waiters, struct pw_channel_sender, node);

		pw_list_del_init(&snd->node);
		ch->nwaiting--;
		snd->state = PW_CHANNEL_SENDER_IDLE;
		snd->ch = NULL;
		pw_waker_wake(&snd->waker);
	}
	pw_waker_wake(&ch->rx_waker);
}

int pw_channel_close_tx(struct pw_channel *ch)
{
	if (!valid(ch))
		return -EINVAL;
	int err = bind_shard(ch);
	if (err)
		return err;
	if (ch->tx_closed)
		return -EALREADY;
	ch->tx_closed = true;
	wake_all(ch);
	return 0;
}

int pw_channel_close_rx(struct pw_channel *ch)
{
	if (!valid(ch))
		return -EINVAL;
	int err = bind_shard(ch);
	if (err)
		return err;
	if (ch->rx_closed)
		return -EALREADY;
	ch->rx_closed = true;
	wake_all(ch);
	return 0;
}

int pw_channel_stats(const struct pw_channel *ch, struct pw_channel_stats *out)
{
	if (!valid(ch) || !out)
		return -EINVAL;
	out->sent = ch->sent;
	out->received = ch->received;
	out->full_waits = ch->full_waits;
	out->len = ch->len;
	out->capacity = ch->cap;
	out->waiting = ch->nwaiting;
	out->reserved = ch->reserved;
	out->tx_closed = ch->tx_closed;
	out->rx_closed = ch->rx_closed;
	return 0;
}

/* ---- the receiver as a pw_stream ------------------------------------- */

static enum pw_poll stream_poll_next(struct pw_cx *cx, struct pw_stream *s,
				     void *item, int *res)
{
	return pw_channel_recv_poll(
		cx, pw_container_of(s, struct pw_channel, rx), item, res);
}

static void stream_drop(struct pw_stream *s)
{
	struct pw_channel *ch = pw_container_of(s, struct pw_channel, rx);

	if (bind_shard(ch))
		return;
	pw_channel_close_rx(ch);
	pw_waker_drop(&ch->rx_waker);
}
