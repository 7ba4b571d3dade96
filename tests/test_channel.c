/* SPDX-License-Identifier: MIT */
/*
 * test_channel.c - the local bounded channel: FIFO order, backpressure
 * with exact event order under the paused clock, FIFO among waiting
 * senders, close from either side, try_send/try_recv, a waiting or
 * granted sender aborted, the stream view and the coop budget, and bad
 * input.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"
#include "pinwheel/channel.h"
#include "pinwheel/stream.h"

#define MS PW_NSEC_PER_MSEC

/* Wait until shard 0 holds no task memory (stats lag a turn). */
static void assert_no_live_tasks(struct pw_runtime *rt)
{
	struct pw_shard_stats st = pw_test_wait_live(rt, 0, 0);

	cr_assert_eq(st.live_tasks, 0);
}

/* ---- an event log: (kind, value, virtual ms) -------------------------- */

struct ev {
	char kind; /* 'S' sent, 'R' received, 'E' end, 'P' -EPIPE, ... */
	int val;
	int64_t at;
};

static struct ev evs[64];
static int nev;

static void log_ev(char kind, int val)
{
	cr_assert_lt(nev, 64);
	evs[nev++] = (struct ev){ kind, val, (int64_t)(pw_time_now() / MS) };
}

static void assert_log(const struct ev *want, int n)
{
	for (int i = 0; i < nev && i < n; i++)
		cr_assert(evs[i].kind == want[i].kind &&
				  evs[i].val == want[i].val &&
				  evs[i].at == want[i].at,
			  "event %d is %c%d@%lld, want %c%d@%lld", i,
			  evs[i].kind, evs[i].val, (long long)evs[i].at,
			  want[i].kind, want[i].val, (long long)want[i].at);
	cr_assert_eq(nev, n, "%d events, want %d", nev, n);
}

/* ---- tasks ------------------------------------------------------------ */

static struct pw_channel ch;
static int storage[64];

/* Sends next..last, logging each completion; optionally closes after. */
struct producer {
	int next, last;
	bool close_after;
	struct pw_channel_sender snd;
};

static enum pw_poll producer_poll(struct pw_cx *cx, void *state)
{
	struct producer *p = state;

	while (p->next <= p->last) {
		int res = 1;
		if (pw_channel_send_poll(cx, &ch, &p->snd, &p->next, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res) {
			log_ev(res == -EPIPE ? 'P' : '?', p->next);
			return pw_ready(cx, res);
		}
		log_ev('S', p->next);
		p->next++;
	}
	if (p->close_after)
		cr_assert_eq(pw_channel_close_tx(&ch), 0);
	return pw_ready(cx, 0);
}

static void producer_drop(void *state)
{
	struct producer *p = state;

	pw_channel_send_cancel(&p->snd);
}

/* Receives until the end, sleeping `delay` before each receive. */
struct consumer {
	uint64_t delay;
	int phase, n;
	struct pw_sleep sl;
};

static enum pw_poll consumer_poll(struct pw_cx *cx, void *state)
{
	struct consumer *c = state;

	for (;;) {
		if (c->phase == 0) {
			pw_sleep_init(&c->sl, c->delay);
			c->phase = 1;
		}
		if (c->phase == 1) {
			if (pw_sleep_poll(cx, &c->sl) == PW_PENDING)
				return PW_PENDING;
			c->phase = 2;
		}
		int v = -1, res = 7;
		if (pw_channel_recv_poll(cx, &ch, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == 0) {
			log_ev('E', 0);
			return pw_ready(cx, c->n);
		}
		cr_assert_eq(res, 1);
		log_ev('R', v);
		c->n++;
		c->phase = 0;
	}
}

static void consumer_drop(void *state)
{
	struct consumer *c = state;

	pw_sleep_cancel(&c->sl);
}

/* A root that spawns up to 4 tasks in order, then joins them. */
struct spec {
	pw_poll_fn fn;
	const void *state;
	size_t size;
	pw_drop_fn drop;
};

struct group {
	int n, step, done;
	struct spec spec[4];
	struct pw_join j[4];
	int64_t res[4];
};

static enum pw_poll group_poll(struct pw_cx *cx, void *state)
{
	struct group *g = state;

	if (g->step == 0) {
		for (int i = 0; i < g->n; i++)
			cr_assert_eq(pw_spawn(&g->j[i], g->spec[i].fn,
					      g->spec[i].state, g->spec[i].size,
					      g->spec[i].drop),
				     0);
		g->step = 1;
	}
	for (; g->done < g->n; g->done++)
		if (pw_join_poll(cx, &g->j[g->done], &g->res[g->done]) ==
		    PW_PENDING)
			return PW_PENDING;
	return pw_ready(cx, pw_time_now());
}

/* ---- tests ------------------------------------------------------------ */

static enum pw_poll fifo_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	int v;
	int res;

	for (int i = 1; i <= 4; i++)
		cr_assert_eq(pw_channel_try_send(&ch, &i), 0);
	/* Through the poll, the stream view and try_recv: one order. */
	cr_assert_eq(pw_channel_recv_poll(cx, &ch, &v, &res), PW_READY);
	cr_assert_eq(res, 1);
	cr_assert_eq(v, 1);
	struct pw_stream *s = pw_channel_stream(&ch);
	cr_assert_not_null(s);
	cr_assert_eq(s->item_size, sizeof(int));
	cr_assert_eq(pw_stream_poll_next(cx, s, &v, &res), PW_READY);
	cr_assert_eq(res, 1);
	cr_assert_eq(v, 2);
	cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
	cr_assert_eq(v, 3);
	/* Wrap around the ring a few times. */
	for (int i = 5; i <= 40; i++) {
		cr_assert_eq(pw_channel_try_send(&ch, &i), 0);
		cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
		cr_assert_eq(v, i - 1);
	}
	cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
	cr_assert_eq(v, 40);
	cr_assert_eq(pw_channel_try_recv(&ch, &v), -EAGAIN);
	struct pw_channel_stats st;
	cr_assert_eq(pw_channel_stats(&ch, &st), 0);
	cr_assert_eq(st.sent, 40);
	cr_assert_eq(st.received, 40);
	cr_assert_eq(st.len, 0);
	cr_assert_eq(st.capacity, 4);
	cr_assert_eq(st.full_waits, 0);
	return pw_ready(cx, 0);
}

Test(channel, fifo_order_through_every_receive_path)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 4, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, fifo_poll, NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Capacity 2, five items, a receiver taking one every 10 ms: the sender
 * blocks at capacity and resumes right after each receive. */
Test(channel, sender_blocks_at_capacity_and_resumes_on_each_receive)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct producer p = { .next = 1, .last = 5, .close_after = true };
	struct consumer c = { .delay = 10 * MS };
	struct group g = {
		.n = 2,
		.spec = { { producer_poll, &p, sizeof(p), producer_drop },
			  { consumer_poll, &c, sizeof(c), consumer_drop } },
	};

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 2, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, group_poll, &g), (int64_t)(60 * MS));
	const struct ev want[] = {
		{ 'S', 1, 0 },	{ 'S', 2, 0 },	{ 'R', 1, 10 }, { 'S', 3, 10 },
		{ 'R', 2, 20 }, { 'S', 4, 20 }, { 'R', 3, 30 }, { 'S', 5, 30 },
		{ 'R', 4, 40 }, { 'R', 5, 50 }, { 'E', 0, 60 },
	};
	assert_log(want, 11);
	cr_assert_eq(g.res[0], 0);
	cr_assert_eq(g.res[1], 5);
	struct pw_channel_stats st;
	cr_assert_eq(pw_channel_stats(&ch, &st), 0);
	cr_assert_eq(st.full_waits, 3, "items 3, 4 and 5 waited");
	cr_assert_eq(st.sent, 5);
	cr_assert_eq(st.received, 5);
	cr_assert(st.tx_closed);
	assert_no_live_tasks(rt);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Three senders wait on a full channel of capacity 1: they complete in
 * the order they started waiting; a newcomer never overtakes them. */
struct fifo_root {
	int step, got;
	struct pw_join j[3];
	struct pw_sleep sl;
	int vals[4];
};

static enum pw_poll fifo_root_poll(struct pw_cx *cx, void *state)
{
	struct fifo_root *r = state;
	int v, res;

	switch (r->step) {
	case 0: {
		int zero = 0;
		cr_assert_eq(pw_channel_try_send(&ch, &zero), 0);
		for (int i = 0; i < 3; i++) {
			struct producer p = { .next = i + 1, .last = i + 1 };
			cr_assert_eq(pw_spawn(&r->j[i], producer_poll, &p,
					      sizeof(p), producer_drop),
				     0);
		}
		pw_sleep_init(&r->sl, 1 * MS);
		r->step = 1;
	}
		/* fall through */
	case 1: {
		if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
			return PW_PENDING;
		struct pw_channel_stats st;
		pw_channel_stats(&ch, &st);
		cr_assert_eq(st.waiting, 3);
		cr_assert_eq(st.full_waits, 3);
		/* Taking one grants the slot to the first waiter: a
		 * newcomer may not take it. */
		cr_assert_eq(pw_channel_try_recv(&ch, &r->vals[0]), 1);
		pw_channel_stats(&ch, &st);
		cr_assert_eq(st.waiting, 2);
		cr_assert_eq(st.reserved, 1);
		int x = 99;
		cr_assert_eq(pw_channel_try_send(&ch, &x), -EAGAIN);
		r->got = 1;
		r->step = 2;
	}
		/* fall through */
	default:
		while (r->got < 4) {
			if (pw_channel_recv_poll(cx, &ch, &v, &res) ==
			    PW_PENDING)
				return PW_PENDING;
			cr_assert_eq(res, 1);
			r->vals[r->got++] = v;
		}
		for (int i = 0; i < 3; i++) {
			int64_t jr;
			cr_assert_eq(pw_join_poll(cx, &r->j[i], &jr), PW_READY,
				     "senders are done");
			cr_assert_eq(jr, 0);
		}
		return pw_ready(cx, 0);
	}
}

Test(channel, waiting_senders_resume_in_fifo_order)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct fifo_root r = { 0 };

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 1, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, fifo_root_poll, &r), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(r.vals[i], i);
	const struct ev want[] = { { 'S', 1, 1 },
				   { 'S', 2, 1 },
				   { 'S', 3, 1 } };
	assert_log(want, 3);
	assert_no_live_tasks(rt);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Sender side closes: the receiver drains, then sees the end (fused);
 * later sends get -EPIPE. A receiver waiting on an empty channel wakes
 * with the end when the sender side closes at 5 ms. */
struct closer {
	struct pw_sleep sl;
	int step;
};

static enum pw_poll closer_poll(struct pw_cx *cx, void *state)
{
	struct closer *c = state;

	if (c->step == 0) {
		pw_sleep_init(&c->sl, 5 * MS);
		c->step = 1;
	}
	if (pw_sleep_poll(cx, &c->sl) == PW_PENDING)
		return PW_PENDING;
	log_ev('C', 0);
	cr_assert_eq(pw_channel_close_tx(&ch), 0);
	return pw_ready(cx, 0);
}

static enum pw_poll close_tx_poll(struct pw_cx *cx, void *state)
{
	int *step = state;
	int v = 0, res;

	if (*step == 0) {
		for (int i = 1; i <= 2; i++)
			cr_assert_eq(pw_channel_try_send(&ch, &i), 0);
		cr_assert_eq(pw_channel_close_tx(&ch), 0);
		cr_assert_eq(pw_channel_close_tx(&ch), -EALREADY);
		int x = 3;
		cr_assert_eq(pw_channel_try_send(&ch, &x), -EPIPE);
		struct pw_channel_sender snd = { 0 };
		cr_assert_eq(pw_channel_send_poll(cx, &ch, &snd, &x, &res),
			     PW_READY);
		cr_assert_eq(res, -EPIPE);
		for (int i = 1; i <= 2; i++) {
			cr_assert_eq(pw_channel_recv_poll(cx, &ch, &v, &res),
				     PW_READY);
			cr_assert_eq(res, 1);
			cr_assert_eq(v, i);
		}
		for (int i = 0; i < 3; i++) {
			cr_assert_eq(pw_channel_recv_poll(cx, &ch, &v, &res),
				     PW_READY);
			cr_assert_eq(res, 0, "the end, again and again");
		}
		cr_assert_eq(pw_channel_try_recv(&ch, &v), 0);
		/* A second channel: wait on it empty, close at 5 ms. */
		cr_assert_eq(pw_channel_init(&ch, sizeof(int), 2, storage), 0);
		struct closer c = { 0 };
		cr_assert_eq(pw_spawn(NULL, closer_poll, &c, sizeof(c), NULL),
			     0);
		*step = 1;
	}
	if (pw_channel_recv_poll(cx, &ch, &v, &res) == PW_PENDING)
		return PW_PENDING;
	cr_assert_eq(res, 0);
	log_ev('E', 0);
	return pw_ready(cx, 0);
}

Test(channel, close_tx_drains_then_ends_and_wakes_the_receiver)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	int step = 0;

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 4, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, close_tx_poll, &step), 0);
	const struct ev want[] = { { 'C', 0, 5 }, { 'E', 0, 5 } };
	assert_log(want, 2);
	assert_no_live_tasks(rt);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Receiver side closes while two senders wait and a third holds a granted
 * slot: all three get -EPIPE, the buffer can still be drained. */
struct close_rx_root {
	int step;
	struct pw_join j[3];
	struct pw_sleep sl;
};

static enum pw_poll close_rx_poll(struct pw_cx *cx, void *state)
{
	struct close_rx_root *r = state;
	struct pw_channel_stats st;
	int v;

	if (r->step == 0) {
		int zero = 0;
		cr_assert_eq(pw_channel_try_send(&ch, &zero), 0);
		for (int i = 0; i < 3; i++) {
			struct producer p = { .next = i + 1, .last = i + 1 };
			cr_assert_eq(pw_spawn(&r->j[i], producer_poll, &p,
					      sizeof(p), producer_drop),
				     0);
		}
		pw_sleep_init(&r->sl, 2 * MS);
		r->step = 1;
	}
	if (r->step == 1) {
		if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
			return PW_PENDING;
		/* Grant the slot to sender 1, then close before it runs. */
		cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
		cr_assert_eq(v, 0);
		int x = 7;
		cr_assert_eq(pw_channel_try_send(&ch, &x), -EAGAIN);
		cr_assert_eq(pw_channel_close_rx(&ch), 0);
		cr_assert_eq(pw_channel_close_rx(&ch), -EALREADY);
		pw_channel_stats(&ch, &st);
		cr_assert_eq(st.waiting, 0, "woken and unlinked");
		cr_assert_eq(st.reserved, 1, "returned when sender 1 polls");
		cr_assert_eq(pw_channel_try_send(&ch, &x), -EPIPE);
		r->step = 2;
	}
	for (int i = 0; i < 3; i++) {
		int64_t res;
		if (pw_join_poll(cx, &r->j[i], &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, -EPIPE);
	}
	pw_channel_stats(&ch, &st);
	cr_assert_eq(st.reserved, 0);
	cr_assert_eq(st.sent, 1);
	cr_assert_eq(pw_channel_try_recv(&ch, &v), 0, "drained: the end");
	return pw_ready(cx, 0);
}

Test(channel, close_rx_fails_waiting_and_granted_senders_with_epipe)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct close_rx_root r = { 0 };

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 1, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, close_rx_poll, &r), 0);
	const struct ev want[] = { { 'P', 1, 2 },
				   { 'P', 2, 2 },
				   { 'P', 3, 2 } };
	assert_log(want, 3);
	assert_no_live_tasks(rt);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Dropping the receiving stream closes the receiving side and releases
 * its waker; what is buffered can still be drained. */
static enum pw_poll stream_drop_poll(struct pw_cx *cx, void *state)
{
	int *step = state;
	int v, res;
	struct pw_stream *s = pw_channel_stream(&ch);

	if (*step == 0) {
		*step = 1;
		/* Park once so the channel holds our waker. */
		cr_assert_eq(pw_stream_poll_next(cx, s, &v, &res), PW_PENDING);
		cr_assert_not_null(ch.rx_waker.task);
		int one = 1;
		cr_assert_eq(pw_channel_try_send(&ch, &one), 0);
		return PW_PENDING; /* the send woke us */
	}
	pw_stream_drop(s);
	cr_assert_null(ch.rx_waker.task);
	int two = 2;
	cr_assert_eq(pw_channel_try_send(&ch, &two), -EPIPE);
	cr_assert_eq(pw_stream_poll_next(cx, s, &v, &res), PW_READY);
	cr_assert_eq(res, 1);
	cr_assert_eq(v, 1);
	cr_assert_eq(pw_stream_poll_next(cx, s, &v, &res), PW_READY);
	cr_assert_eq(res, 0);
	pw_stream_drop(s); /* twice: harmless */
	return pw_ready(cx, 0);
}

Test(channel, dropping_the_stream_closes_the_receiving_side)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	int step = 0;

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 2, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, stream_drop_poll, &step), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static enum pw_poll try_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	int v = 0;

	cr_assert_eq(pw_channel_try_recv(&ch, &v), -EAGAIN);
	for (int i = 10; i < 13; i++)
		cr_assert_eq(pw_channel_try_send(&ch, &i), 0);
	int x = 13;
	cr_assert_eq(pw_channel_try_send(&ch, &x), -EAGAIN, "full");
	cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
	cr_assert_eq(v, 10);
	cr_assert_eq(pw_channel_try_send(&ch, &x), 0);
	for (int i = 11; i <= 13; i++) {
		cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
		cr_assert_eq(v, i);
	}
	cr_assert_eq(pw_channel_try_recv(&ch, &v), -EAGAIN);
	struct pw_channel_stats st;
	cr_assert_eq(pw_channel_stats(&ch, &st), 0);
	cr_assert_eq(st.sent, 4);
	cr_assert_eq(st.received, 4);
	cr_assert_eq(st.full_waits, 0, "try_send never waits");
	return pw_ready(cx, 0);
}

Test(channel, try_send_and_try_recv)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 3, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, try_poll, NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Two senders wait; the first is aborted: its drop unlinks it and the
 * second gets the next slot. Then the same with the slot already granted
 * to the aborted one: the grant passes on. */
struct abort_root {
	int round, step;
	struct pw_join j[2];
	struct pw_sleep sl;
};

static enum pw_poll abort_poll(struct pw_cx *cx, void *state)
{
	struct abort_root *r = state;
	struct pw_channel_stats st;
	int64_t res;
	int v;

	switch (r->step) {
	case 0: {
		int zero = 0;
		cr_assert_eq(pw_channel_try_send(&ch, &zero), 0);
		for (int i = 0; i < 2; i++) {
			struct producer p = { .next = i + 1, .last = i + 1 };
			cr_assert_eq(pw_spawn(&r->j[i], producer_poll, &p,
					      sizeof(p), producer_drop),
				     0);
		}
		pw_sleep_init(&r->sl, 1 * MS);
		r->step = 1;
	}
		/* fall through */
	case 1:
		if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
			return PW_PENDING;
		pw_channel_stats(&ch, &st);
		cr_assert_eq(st.waiting, 2);
		if (r->round == 1) {
			/* Grant the slot to sender 1 before aborting it. */
			cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
			cr_assert_eq(v, 0);
			pw_channel_stats(&ch, &st);
			cr_assert_eq(st.reserved, 1);
			cr_assert_eq(st.waiting, 1);
		}
		cr_assert_eq(pw_join_abort(&r->j[0]), 0);
		r->step = 2;
		/* fall through */
	case 2:
		if (pw_join_poll(cx, &r->j[0], &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, -ECANCELED);
		pw_channel_stats(&ch, &st);
		if (r->round == 0) {
			/* Unlinked: sender 2 is the only one waiting. */
			cr_assert_eq(st.waiting, 1);
			cr_assert_eq(st.reserved, 0);
			cr_assert_eq(st.full_waits, 2);
			cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
			cr_assert_eq(v, 0);
		} else {
			/* The grant passed on to sender 2. */
			cr_assert_eq(st.waiting, 0);
			cr_assert_eq(st.reserved + st.len, 1);
		}
		r->step = 3;
		/* fall through */
	default:
		if (pw_join_poll(cx, &r->j[1], &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 0);
		cr_assert_eq(pw_channel_try_recv(&ch, &v), 1);
		cr_assert_eq(v, 2, "sender 2's item, sender 1's never came");
		cr_assert_eq(pw_channel_try_recv(&ch, &v), -EAGAIN);
		pw_channel_stats(&ch, &st);
		cr_assert_eq(st.reserved, 0);
		cr_assert_eq(st.waiting, 0);
		if (r->round++ == 0) {
			r->step = 0;
			return pw_yield(cx);
		}
		return pw_ready(cx, 0);
	}
}

Test(channel, aborted_waiting_sender_is_unlinked)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct abort_root r = { 0 };

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 1, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, abort_poll, &r), 0);
	cr_assert_eq(r.round, 2);
	/* Sender 2 completed twice; sender 1 never did. */
	const struct ev want[] = { { 'S', 2, 1 }, { 'S', 2, 2 } };
	assert_log(want, 2);
	assert_no_live_tasks(rt);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Receiving 300 ready items through the stream: the receive counts
 * against the coop budget, so the task yields twice on the way. */
struct budget_root {
	int n;
	int64_t sum;
};

static enum pw_poll budget_poll(struct pw_cx *cx, void *state)
{
	struct budget_root *b = state;
	struct pw_stream *s = pw_channel_stream(&ch);
	int v, res;

	if (b->n == 0 && b->sum == 0)
		for (int i = 1; i <= 300; i++)
			cr_assert_eq(pw_channel_try_send(&ch, &i), 0);
	for (;;) {
		if (pw_stream_poll_next(cx, s, &v, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 1);
		b->sum += v;
		if (++b->n == 300)
			return pw_ready(cx, b->sum);
	}
}

Test(channel, receiving_counts_against_the_coop_budget)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static int big[300];
	struct budget_root b = { 0 };

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 300, big), 0);
	cr_assert_eq(pw_test_block_on(rt, budget_poll, &b), 300 * 301 / 2);
	struct pw_shard_stats st;
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	/* 300 receives at 128 a poll: 128, 128, then 44 and the end. */
	cr_assert_eq(st.budget_yields, 2, "%llu forced yields",
		     (unsigned long long)st.budget_yields);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- bad input -------------------------------------------------------- */

static enum pw_poll bad_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	struct pw_channel zero;
	struct pw_channel_sender snd = { 0 };
	int v = 1, res = 5;

	memset(&zero, 0, sizeof(zero));
	/* Uninitialised channel. */
	cr_assert_eq(pw_channel_try_send(&zero, &v), -EINVAL);
	cr_assert_eq(pw_channel_try_recv(&zero, &v), -EINVAL);
	cr_assert_eq(pw_channel_close_tx(&zero), -EINVAL);
	cr_assert_eq(pw_channel_close_rx(&zero), -EINVAL);
	cr_assert_null(pw_channel_stream(&zero));
	cr_assert_eq(pw_channel_send_poll(cx, &zero, &snd, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_recv_poll(cx, &zero, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	/* NULLs. */
	cr_assert_eq(pw_channel_try_send(NULL, &v), -EINVAL);
	cr_assert_eq(pw_channel_try_send(&ch, NULL), -EINVAL);
	cr_assert_eq(pw_channel_try_recv(NULL, &v), -EINVAL);
	cr_assert_eq(pw_channel_try_recv(&ch, NULL), -EINVAL);
	cr_assert_eq(pw_channel_close_tx(NULL), -EINVAL);
	cr_assert_eq(pw_channel_close_rx(NULL), -EINVAL);
	cr_assert_eq(pw_channel_send_cancel(NULL), -EINVAL);
	cr_assert_eq(pw_channel_send_cancel(&snd), -EALREADY, "idle");
	cr_assert_null(pw_channel_stream(NULL));
	res = 5;
	cr_assert_eq(pw_channel_send_poll(NULL, &ch, &snd, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_send_poll(cx, NULL, &snd, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_send_poll(cx, &ch, NULL, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_send_poll(cx, &ch, &snd, NULL, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_send_poll(cx, &ch, &snd, &v, NULL), PW_READY);
	cr_assert_eq(pw_channel_recv_poll(NULL, &ch, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_recv_poll(cx, &ch, NULL, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_recv_poll(cx, &ch, &v, NULL), PW_READY);
	cr_assert_eq(pw_stream_poll_next(cx, NULL, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_stream_poll_next(NULL, pw_channel_stream(&ch), &v,
					 &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	pw_stream_drop(NULL);
	/* A sender pending on one channel, polled with another. */
	cr_assert_eq(pw_channel_try_send(&ch, &v), 0);
	cr_assert_eq(pw_channel_send_poll(cx, &ch, &snd, &v, &res), PW_PENDING);
	static struct pw_channel other;
	static int ost[2];
	cr_assert_eq(pw_channel_init(&other, sizeof(int), 2, ost), 0);
	cr_assert_eq(pw_channel_send_poll(cx, &other, &snd, &v, &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_channel_send_cancel(&snd), 0);
	cr_assert_eq(pw_channel_send_cancel(&snd), -EALREADY);
	struct pw_channel_stats st;
	cr_assert_eq(pw_channel_stats(&ch, &st), 0);
	cr_assert_eq(st.waiting, 0);
	cr_assert_eq(pw_channel_stats(&ch, NULL), -EINVAL);
	cr_assert_eq(pw_channel_stats(NULL, &st), -EINVAL);
	return pw_ready(cx, 0);
}

Test(channel, bad_input)
{
	static int st1[1];
	struct pw_channel c;

	cr_assert_eq(pw_channel_init(NULL, 4, 1, st1), -EINVAL);
	cr_assert_eq(pw_channel_init(&c, 0, 1, st1), -EINVAL);
	cr_assert_eq(pw_channel_init(&c, 4, 0, st1), -EINVAL);
	cr_assert_eq(pw_channel_init(&c, 4, 1, NULL), -EINVAL);
	cr_assert_eq(pw_channel_init(&c, 4, (size_t)UINT32_MAX + 1, st1),
		     -EINVAL);
	cr_assert_eq(pw_channel_init(&c, SIZE_MAX / 2, 3, st1), -EINVAL);

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 1, storage), 0);
	/* Off a shard: refused, nothing bound. */
	int v = 1;
	cr_assert_eq(pw_channel_try_send(&ch, &v), -EPERM);
	cr_assert_eq(pw_channel_try_recv(&ch, &v), -EPERM);
	cr_assert_eq(pw_channel_close_tx(&ch), -EPERM);
	cr_assert_eq(pw_channel_close_rx(&ch), -EPERM);
	cr_assert_null(ch.shard);

	struct pw_runtime *rt = pw_test_paused_runtime(1);
	cr_assert_eq(pw_test_block_on(rt, bad_poll, NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A channel bound to shard 0 refuses a task on shard 1: every call,
 * closing either side included, gets -EXDEV and changes nothing. */
static _Atomic int remote_res = 1;

static enum pw_poll remote_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	int v = 1, res = 0;
	struct pw_channel_sender snd = { 0 };

	cr_assert_eq(pw_channel_send_poll(cx, &ch, &snd, &v, &res), PW_READY);
	cr_assert_eq(res, -EXDEV);
	cr_assert_eq(pw_channel_recv_poll(cx, &ch, &v, &res), PW_READY);
	cr_assert_eq(res, -EXDEV);
	cr_assert_eq(pw_channel_try_recv(&ch, &v), -EXDEV);
	cr_assert_eq(pw_channel_close_tx(&ch), -EXDEV);
	cr_assert_eq(pw_channel_close_rx(&ch), -EXDEV);
	atomic_store(&remote_res, pw_channel_try_send(&ch, &v));
	return pw_ready(cx, 0);
}

static enum pw_poll bind_poll(struct pw_cx *cx, void *state)
{
	struct pw_runtime *rt = state;
	int v = 1;

	if (atomic_load(&remote_res) == 1) {
		cr_assert_eq(pw_channel_try_send(&ch, &v), 0);
		cr_assert_eq(
			pw_runtime_spawn(rt, 1, remote_poll, NULL, 0, NULL), 0);
		atomic_store(&remote_res, 2);
	}
	if (atomic_load(&remote_res) == 2)
		return pw_yield(cx);
	/* The refused calls changed nothing: still open both ways, the
	 * one item still buffered; the owner can close it. */
	struct pw_channel_stats st;
	cr_assert_eq(pw_channel_stats(&ch, &st), 0);
	cr_assert_not(st.rx_closed);
	cr_assert_not(st.tx_closed);
	cr_assert_eq(st.len, 1);
	cr_assert_eq(pw_channel_close_rx(&ch), 0);
	cr_assert_eq(pw_channel_close_rx(&ch), -EALREADY);
	return pw_ready(cx, atomic_load(&remote_res));
}

Test(channel, other_shard_gets_exdev)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_paused_runtime(2);

	cr_assert_eq(pw_channel_init(&ch, sizeof(int), 4, storage), 0);
	cr_assert_eq(pw_test_block_on(rt, bind_poll, rt), -EXDEV);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}
