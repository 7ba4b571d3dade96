/* SPDX-License-Identifier: MIT */
/*
 * test_xchannel.c - the cross-shard channel: FIFO through every receive
 * path, backpressure with exact event times across two shards, FIFO among
 * senders waiting on different shards, close from either side (waiting
 * and granted senders), aborted waiting and granted senders, the stream
 * under a debounce, the last sender's drop, a stress of tasks on two
 * shards and plain threads (exact counts, per-sender order), a ping-pong
 * across shards that hangs on any lost wake-up, bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "pinwheel/xchannel.h"

#define MS PW_NSEC_PER_MSEC

/* ---- an event log from any shard: (kind, value, virtual ms) ----------- */

struct ev {
	char kind; /* 'S' sent, 'R' received, 'E' end, 'P' -EPIPE */
	int val;
	int64_t at;
};

static struct ev evs[64];
static _Atomic int nev;

static void log_ev(char kind, int val)
{
	int i = atomic_fetch_add(&nev, 1);

	cr_assert_lt(i, 64);
	evs[i] = (struct ev){ kind, val, pw_time_now() / (int64_t)MS };
}

/* Events of one virtual millisecond happen on two shards at once: order
 * them by time, then receive before send before end. */
static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	const char *rank = "RSPE";

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return (int)(strchr(rank, x->kind) - strchr(rank, y->kind));
}

static void assert_log(const struct ev *want, int n)
{
	int got = atomic_load(&nev);

	qsort(evs, (size_t)got, sizeof(evs[0]), ev_cmp);
	for (int i = 0; i < got && i < n; i++)
		cr_assert(evs[i].kind == want[i].kind &&
				  evs[i].val == want[i].val &&
				  evs[i].at == want[i].at,
			  "event %d is %c%d@%lld, want %c%d@%lld", i,
			  evs[i].kind, evs[i].val, (long long)evs[i].at,
			  want[i].kind, want[i].val, (long long)want[i].at);
	cr_assert_eq(got, n, "%d events, want %d", got, n);
}

/* ---- tasks ------------------------------------------------------------ */

/* Sleeps until `start` ms, sends next..last, then drops its handle. */
struct producer {
	struct pw_xchan_tx tx;
	int next, last, phase;
	uint64_t start;
	struct pw_sleep sl;
};

static enum pw_poll producer_poll(struct pw_cx *cx, void *state)
{
	struct producer *p = state;

	if (p->phase == 0) {
		pw_sleep_init_at(&p->sl, p->start * MS);
		p->phase = 1;
	}
	if (pw_sleep_poll(cx, &p->sl) == PW_PENDING)
		return PW_PENDING;
	while (p->next <= p->last) {
		int res = 1;
		if (pw_xchan_send_poll(cx, &p->tx, &p->next, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res) {
			log_ev(res == -EPIPE ? 'P' : '?', p->next);
			pw_xchan_tx_drop(&p->tx);
			return pw_ready(cx, res);
		}
		log_ev('S', p->next);
		p->next++;
	}
	pw_xchan_tx_drop(&p->tx);
	return pw_ready(cx, 0);
}

static void producer_drop(void *state)
{
	struct producer *p = state;

	pw_sleep_cancel(&p->sl);
	pw_xchan_tx_drop(&p->tx);
}

/* Receives until the end, sleeping `delay` ms before each receive. */
struct consumer {
	struct pw_xchan_rx rx;
	uint64_t delay;
	int phase, n;
	struct pw_sleep sl;
};

static enum pw_poll consumer_poll(struct pw_cx *cx, void *state)
{
	struct consumer *c = state;

	for (;;) {
		if (c->phase == 0) {
			pw_sleep_init(&c->sl, c->delay * MS);
			c->phase = 1;
		}
		if (c->phase == 1) {
			if (pw_sleep_poll(cx, &c->sl) == PW_PENDING)
				return PW_PENDING;
			c->phase = 2;
		}
		int v = -1, res = 7;
		if (pw_xchan_recv_poll(cx, &c->rx, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == 0) {
			log_ev('E', 0);
			pw_xchan_rx_drop(&c->rx);
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
	pw_xchan_rx_drop(&c->rx);
}

/* Runs up to 4 tasks, each on its shard through a pw_call, and joins
 * them; its result is the virtual time at the end. */
struct spec {
	unsigned shard;
	pw_poll_fn fn;
	const void *state;
	size_t size;
	pw_drop_fn drop;
};

struct group {
	int n;
	bool started, fin[4];
	struct spec spec[4];
	struct pw_call call[4];
	int64_t res[4];
};

static enum pw_poll group_poll(struct pw_cx *cx, void *state)
{
	struct group *g = state;
	int pending = 0;

	if (!g->started)
		for (int i = 0; i < g->n; i++)
			pw_call_init(&g->call[i], g->spec[i].shard,
				     g->spec[i].fn, g->spec[i].state,
				     g->spec[i].size, g->spec[i].drop);
	g->started = true;
	for (int i = 0; i < g->n; i++) {
		if (g->fin[i])
			continue;
		if (pw_call_poll(cx, &g->call[i], &g->res[i]) == PW_PENDING)
			pending++;
		else
			g->fin[i] = true;
	}
	return pending ? PW_PENDING : pw_ready(cx, pw_time_now());
}

/* ---- tests ------------------------------------------------------------ */

static struct pw_xchan_tx gtx;
static struct pw_xchan_rx grx;

static enum pw_poll fifo_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	int v, res;

	for (int i = 1; i <= 4; i++)
		cr_assert_eq(pw_xchan_try_send(&gtx, &i), 0);
	cr_assert_eq(pw_xchan_try_send(&gtx, &v), -EAGAIN, "full");
	cr_assert_eq(pw_xchan_recv_poll(cx, &grx, &v, &res), PW_READY);
	cr_assert_eq(res, 1);
	cr_assert_eq(v, 1);
	struct pw_stream *s = pw_xchan_stream(&grx);
	cr_assert_not_null(s);
	cr_assert_eq(s->item_size, sizeof(int));
	cr_assert_eq(pw_stream_poll_next(cx, s, &v, &res), PW_READY);
	cr_assert_eq(res, 1);
	cr_assert_eq(v, 2);
	cr_assert_eq(pw_xchan_try_recv(&grx, &v), 1);
	cr_assert_eq(v, 3);
	for (int i = 5; i <= 40; i++) { /* around the ring many times */
		cr_assert_eq(pw_xchan_try_send(&gtx, &i), 0);
		cr_assert_eq(pw_xchan_try_recv(&grx, &v), 1);
		cr_assert_eq(v, i - 1);
	}
	cr_assert_eq(pw_xchan_try_recv(&grx, &v), 1);
	cr_assert_eq(v, 40);
	cr_assert_eq(pw_xchan_try_recv(&grx, &v), -EAGAIN);
	cr_assert_eq(pw_xchan_recv_poll(cx, &grx, &v, &res), PW_PENDING);
	struct pw_xchan_stats st;
	cr_assert_eq(pw_xchan_stats(&grx, &st), 0);
	cr_assert_eq(st.sent, 40);
	cr_assert_eq(st.received, 40);
	cr_assert_eq(st.len, 0);
	cr_assert_eq(st.capacity, 4);
	cr_assert_eq(st.full_waits, 0);
	cr_assert_eq(st.senders, 1);
	cr_assert(!st.tx_closed && !st.rx_closed);
	/* The last sender's drop ends the stream. */
	pw_xchan_tx_drop(&gtx);
	cr_assert_null(gtx.ch);
	pw_xchan_tx_drop(&gtx); /* a dropped handle: nothing */
	cr_assert_eq(pw_xchan_recv_poll(cx, &grx, &v, &res), PW_READY);
	cr_assert_eq(res, 0);
	cr_assert_eq(pw_xchan_try_recv(&grx, &v), 0);
	cr_assert_eq(pw_xchan_stats(&grx, &st), 0);
	cr_assert(st.tx_closed && !st.rx_closed);
	cr_assert_eq(st.senders, 0);
	pw_xchan_rx_drop(&grx);
	cr_assert_null(pw_xchan_stream(&grx));
	return pw_ready(cx, 0);
}

Test(xchannel, fifo_order_through_every_receive_path)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);

	cr_assert_eq(pw_xchan_open(sizeof(int), 4, &gtx, &grx), 0);
	cr_assert_eq(pw_test_block_on(rt, fifo_poll, NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Capacity 2, five items from shard 1, a receiver on shard 0 taking one
 * every 10 ms: the sender blocks at capacity and resumes right after
 * each receive, in the same virtual millisecond. */
Test(xchannel, sender_on_another_shard_blocks_at_capacity)
{
	struct pw_runtime *rt = pw_test_paused_runtime(2);
	struct producer p = { .next = 1, .last = 5 };
	struct consumer c = { .delay = 10 };

	atomic_store(&nev, 0);
	cr_assert_eq(pw_xchan_open(sizeof(int), 2, &p.tx, &c.rx), 0);
	struct group g = {
		.n = 2,
		.spec = { { 1, producer_poll, &p, sizeof(p), producer_drop },
			  { 0, consumer_poll, &c, sizeof(c), consumer_drop } },
	};
	cr_assert_eq(pw_test_block_on(rt, group_poll, &g), (int64_t)(60 * MS));
	const struct ev want[] = {
		{ 'S', 1, 0 },	{ 'S', 2, 0 },	{ 'R', 1, 10 }, { 'S', 3, 10 },
		{ 'R', 2, 20 }, { 'S', 4, 20 }, { 'R', 3, 30 }, { 'S', 5, 30 },
		{ 'R', 4, 40 }, { 'R', 5, 50 }, { 'E', 0, 60 },
	};
	assert_log(want, 11);
	cr_assert_eq(g.res[0], 0);
	cr_assert_eq(g.res[1], 5);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Capacity 1, full; senders start waiting at 1, 2 and 3 ms on shards 1,
 * 0 and 1: they complete in that order, and while they wait no newcomer
 * gets a slot. */
struct fifo_root {
	struct pw_xchan_tx tx;
	struct pw_xchan_rx rx;
	struct producer p[3];
	struct group g;
	struct pw_sleep sl;
	int step, got, vals[4];
};

static enum pw_poll fifo_root_poll(struct pw_cx *cx, void *state)
{
	struct fifo_root *r = state;
	struct pw_xchan_stats st;
	int v, res;

	switch (r->step) {
	case 0: {
		int zero = 0;
		cr_assert_eq(pw_xchan_try_send(&r->tx, &zero), 0);
		for (int i = 0; i < 3; i++) {
			r->p[i] = (struct producer){ .next = i + 1,
						     .last = i + 1,
						     .start = (uint64_t)i + 1 };
			cr_assert_eq(pw_xchan_tx_clone(&r->p[i].tx, &r->tx), 0);
			r->g.spec[i] = (struct spec){ i == 1 ? 0u : 1u,
						      producer_poll, &r->p[i],
						      sizeof(r->p[i]),
						      producer_drop };
		}
		r->g.n = 3;
		pw_sleep_init(&r->sl, 10 * MS);
		r->step = 1;
	}
		/* fall through */
	case 1:
		group_poll(cx, &r->g);
		if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(pw_xchan_stats(&r->rx, &st), 0);
		cr_assert_eq(st.waiting, 3);
		cr_assert_eq(st.full_waits, 3);
		cr_assert_eq(st.senders, 4);
		/* Taking one grants the slot to the first waiter. */
		cr_assert_eq(pw_xchan_try_recv(&r->rx, &r->vals[0]), 1);
		cr_assert_eq(pw_xchan_stats(&r->rx, &st), 0);
		cr_assert_eq(st.waiting, 2);
		int x = 99;
		cr_assert_eq(pw_xchan_try_send(&r->tx, &x), -EAGAIN);
		pw_xchan_tx_drop(&r->tx);
		r->got = 1;
		r->step = 2;
		/* fall through */
	default:
		group_poll(cx, &r->g);
		for (;;) {
			if (pw_xchan_recv_poll(cx, &r->rx, &v, &res) ==
			    PW_PENDING)
				return PW_PENDING;
			if (res == 0)
				break;
			cr_assert_eq(res, 1);
			cr_assert_lt(r->got, 4);
			r->vals[r->got++] = v;
		}
		if (group_poll(cx, &r->g) == PW_PENDING)
			return PW_PENDING;
		pw_xchan_rx_drop(&r->rx);
		return pw_ready(cx, r->got);
	}
}

Test(xchannel, senders_waiting_on_two_shards_resume_in_fifo_order)
{
	struct pw_runtime *rt = pw_test_paused_runtime(2);
	static struct fifo_root r;

	memset(&r, 0, sizeof(r));
	atomic_store(&nev, 0);
	cr_assert_eq(pw_xchan_open(sizeof(int), 1, &r.tx, &r.rx), 0);
	cr_assert_eq(pw_test_block_on(rt, fifo_root_poll, &r), 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(r.vals[i], i);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(r.g.res[i], 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Waiting senders on one shard: close_tx or close_rx refuses them; a
 * granted sender that had not stored its item yet gets -EPIPE and gives
 * the slot back; the receiver drains the buffer, then sees the end. */
struct close_root {
	struct pw_xchan_tx tx;
	struct pw_xchan_rx rx;
	struct producer p[2];
	struct group g;
	struct pw_sleep sl;
	bool by_rx;
	int step, got;
};

static enum pw_poll close_root_poll(struct pw_cx *cx, void *state)
{
	struct close_root *r = state;
	int v, res;

	if (r->step == 0) {
		int zero = 0;
		cr_assert_eq(pw_xchan_try_send(&r->tx, &zero), 0);
		for (int i = 0; i < 2; i++) {
			r->p[i] = (struct producer){ .next = 10 + i,
						     .last = 10 + i,
						     .start = (uint64_t)i + 1 };
			cr_assert_eq(pw_xchan_tx_clone(&r->p[i].tx, &r->tx), 0);
			r->g.spec[i] = (struct spec){ 0, producer_poll,
						      &r->p[i], sizeof(r->p[i]),
						      producer_drop };
		}
		r->g.n = 2;
		pw_sleep_init(&r->sl, 5 * MS);
		r->step = 1;
	}
	if (r->step == 1) {
		group_poll(cx, &r->g);
		if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
			return PW_PENDING;
		if (r->by_rx) {
			/* Grant the slot to sender 10, then close before it
			 * runs: it must not store. */
			cr_assert_eq(pw_xchan_try_recv(&r->rx, &v), 1);
			cr_assert_eq(v, 0);
			r->got = 1;
			cr_assert_eq(pw_xchan_close_rx(&r->rx), 0);
			cr_assert_eq(pw_xchan_close_rx(&r->rx), -EALREADY);
		} else {
			cr_assert_eq(pw_xchan_close_tx(&r->tx), 0);
			cr_assert_eq(pw_xchan_close_tx(&r->tx), -EALREADY);
		}
		cr_assert(pw_xchan_is_closed(&r->tx));
		cr_assert_eq(pw_xchan_try_send(&r->tx, &v), -EPIPE);
		r->step = 2;
	}
	group_poll(cx, &r->g);
	for (;;) {
		if (pw_xchan_recv_poll(cx, &r->rx, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == 0)
			break;
		cr_assert_eq(v, 0);
		r->got++;
	}
	if (group_poll(cx, &r->g) == PW_PENDING)
		return PW_PENDING;
	struct pw_xchan_stats st;
	cr_assert_eq(pw_xchan_stats(&r->rx, &st), 0);
	cr_assert_eq(st.full_waits, 2);
	cr_assert_eq(st.waiting, 0);
	cr_assert_eq(st.sent, 1);
	cr_assert_eq(st.received, 1);
	cr_assert_eq(st.rx_closed, r->by_rx);
	cr_assert_eq(st.tx_closed, !r->by_rx);
	pw_xchan_tx_drop(&r->tx);
	pw_xchan_rx_drop(&r->rx);
	return pw_ready(cx, r->got);
}

static void run_close(bool by_rx)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct close_root r;

	memset(&r, 0, sizeof(r));
	atomic_store(&nev, 0);
	r.by_rx = by_rx;
	cr_assert_eq(pw_xchan_open(sizeof(int), 1, &r.tx, &r.rx), 0);
	cr_assert_eq(pw_test_block_on(rt, close_root_poll, &r), 1);
	cr_assert_eq(r.g.res[0], -EPIPE);
	cr_assert_eq(r.g.res[1], -EPIPE);
	const struct ev want[] = { { 'P', 10, 5 }, { 'P', 11, 5 } };
	assert_log(want, 2);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(xchannel, close_tx_refuses_waiting_senders_and_drains)
{
	run_close(false);
}

Test(xchannel, close_rx_refuses_waiting_and_granted_senders)
{
	run_close(true);
}

/* Three senders wait on a full channel; the first is aborted while
 * waiting (its drop unlinks it), the second right after it was granted
 * the slot (the slot passes to the third). */
struct abort_root {
	struct pw_xchan_tx tx;
	struct pw_xchan_rx rx;
	struct pw_join j[3];
	struct pw_sleep sl;
	int step;
};

static enum pw_poll abort_root_poll(struct pw_cx *cx, void *state)
{
	struct abort_root *r = state;
	struct pw_xchan_stats st;
	int v, res;
	int64_t jr;

	switch (r->step) {
	case 0: {
		int zero = 0;
		cr_assert_eq(pw_xchan_try_send(&r->tx, &zero), 0);
		for (int i = 0; i < 3; i++) {
			struct producer p = { .next = i + 1,
					      .last = i + 1,
					      .start = (uint64_t)i + 1 };
			cr_assert_eq(pw_xchan_tx_clone(&p.tx, &r->tx), 0);
			cr_assert_eq(pw_spawn(&r->j[i], producer_poll, &p,
					      sizeof(p), producer_drop),
				     0);
		}
		pw_sleep_init(&r->sl, 5 * MS);
		r->step = 1;
	}
		/* fall through */
	case 1:
		if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(pw_xchan_stats(&r->rx, &st), 0);
		cr_assert_eq(st.waiting, 3);
		cr_assert_eq(pw_join_abort(&r->j[0]), 0);
		pw_sleep_init(&r->sl, 1 * MS);
		r->step = 2;
		/* fall through */
	case 2:
		if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(pw_xchan_stats(&r->rx, &st), 0);
		cr_assert_eq(st.waiting, 2, "the aborted waiter left");
		cr_assert_eq(st.senders, 3);
		cr_assert_eq(pw_xchan_try_recv(&r->rx, &v), 1);
		cr_assert_eq(v, 0);
		cr_assert_eq(pw_join_abort(&r->j[1]), 0); /* granted */
		pw_xchan_tx_drop(&r->tx);
		r->step = 3;
		/* fall through */
	default:
		if (pw_xchan_recv_poll(cx, &r->rx, &v, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 1);
		cr_assert_eq(v, 3, "the granted slot passed to sender 3");
		for (int i = 0; i < 3; i++) {
			cr_assert_eq(pw_join_poll(cx, &r->j[i], &jr), PW_READY);
			cr_assert_eq(jr, i == 2 ? 0 : -ECANCELED);
		}
		cr_assert_eq(pw_xchan_try_recv(&r->rx, &v), 0, "the end");
		pw_xchan_rx_drop(&r->rx);
		return pw_ready(cx, 0);
	}
}

Test(xchannel, aborted_waiting_and_granted_senders)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	static struct abort_root r;

	memset(&r, 0, sizeof(r));
	atomic_store(&nev, 0);
	cr_assert_eq(pw_xchan_open(sizeof(int), 1, &r.tx, &r.rx), 0);
	cr_assert_eq(pw_test_block_on(rt, abort_root_poll, &r), 0);
	const struct ev want[] = { { 'S', 3, 6 } };
	assert_log(want, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Keystrokes from shard 1 at 0, 10 and 20 ms and at 200 ms, through a
 * 50 ms debounce on shard 0: 3 at 70 ms, 4 at 250 ms, the end when the
 * producer drops its sender at 300 ms. */
struct keys {
	struct pw_xchan_tx tx;
	int step;
	struct pw_sleep sl;
};

static enum pw_poll keys_poll(struct pw_cx *cx, void *state)
{
	static const int at[] = { 0, 10, 20, 200, 300 };
	struct keys *k = state;

	while (k->step < 5) {
		if (pw_sleep_poll(cx, &k->sl) == PW_PENDING)
			return PW_PENDING;
		if (k->step == 4)
			break;
		int v = k->step + 1, res;
		cr_assert_eq(pw_xchan_send_poll(cx, &k->tx, &v, &res),
			     PW_READY);
		cr_assert_eq(res, 0);
		k->step++;
		pw_sleep_init_at(&k->sl, (uint64_t)at[k->step] * MS);
	}
	pw_xchan_tx_drop(&k->tx);
	return pw_ready(cx, 0);
}

static void keys_drop(void *state)
{
	struct keys *k = state;

	pw_sleep_cancel(&k->sl);
	pw_xchan_tx_drop(&k->tx);
}

struct debounced {
	struct pw_xchan_rx rx;
	struct pw_debounce d;
	int store[2], n;
	bool init;
};

static enum pw_poll debounced_poll(struct pw_cx *cx, void *state)
{
	struct debounced *d = state;
	int v, res;

	if (!d->init) {
		cr_assert_eq(pw_debounce_init(&d->d, pw_xchan_stream(&d->rx),
					      50 * MS, 0, d->store),
			     0);
		d->init = true;
	}
	for (;;) {
		if (pw_debounce_poll_next(cx, &d->d, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == 0) {
			log_ev('E', 0);
			return pw_ready(cx, d->n);
		}
		cr_assert_eq(res, 1);
		log_ev('R', v);
		d->n++;
	}
}

static void debounced_drop(void *state)
{
	struct debounced *d = state;

	if (d->init)
		pw_debounce_drop(&d->d); /* drops the channel's stream */
	else
		pw_xchan_rx_drop(&d->rx);
}

Test(xchannel, stream_feeds_a_debounce_across_shards)
{
	struct pw_runtime *rt = pw_test_paused_runtime(2);
	struct keys k = { 0 };
	struct debounced d = { 0 };

	atomic_store(&nev, 0);
	cr_assert_eq(pw_xchan_open(sizeof(int), 8, &k.tx, &d.rx), 0);
	pw_sleep_init_at(&k.sl, 0);
	struct group g = {
		.n = 2,
		.spec = { { 1, keys_poll, &k, sizeof(k), keys_drop },
			  { 0, debounced_poll, &d, sizeof(d),
			    debounced_drop } },
	};
	pw_test_block_on(rt, group_poll, &g);
	const struct ev want[] = { { 'R', 3, 70 },
				   { 'R', 4, 250 },
				   { 'E', 0, 300 } };
	assert_log(want, 3);
	cr_assert_eq(g.res[1], 2);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- the stress: tasks on two shards and plain threads ---------------- */

#define STRESS_TASKS   4 /* two per shard */
#define STRESS_THREADS 2 /* plain threads, blocking sends */
#define STRESS_SENDERS (STRESS_TASKS + STRESS_THREADS)

static int stress_n(void)
{
	return (int)(10000 * pw_test_scale());
}

struct stress_tx {
	struct pw_xchan_tx tx;
	uint64_t id, seq;
	int n;
};

static enum pw_poll stress_send_poll(struct pw_cx *cx, void *state)
{
	struct stress_tx *s = state;

	while (s->seq < (uint64_t)s->n) {
		uint64_t v = s->id << 32 | s->seq;
		int res;
		if (pw_xchan_send_poll(cx, &s->tx, &v, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 0);
		s->seq++;
		if (s->seq % 64 == 0)
			return pw_yield(cx);
	}
	pw_xchan_tx_drop(&s->tx);
	return pw_ready(cx, 0);
}

static void stress_send_drop(void *state)
{
	struct stress_tx *s = state;

	pw_xchan_tx_drop(&s->tx);
}

static void *stress_thread(void *arg)
{
	struct stress_tx *s = arg;

	for (; s->seq < (uint64_t)s->n; s->seq++) {
		uint64_t v = s->id << 32 | s->seq;
		cr_assert_eq(pw_xchan_send_blocking(&s->tx, &v), 0);
	}
	pw_xchan_tx_drop(&s->tx);
	return NULL;
}

struct stress_rx {
	struct pw_xchan_rx rx;
	uint64_t next[STRESS_SENDERS];
	uint64_t total;
};

static enum pw_poll stress_recv_poll(struct pw_cx *cx, void *state)
{
	struct stress_rx *r = state;
	uint64_t v;
	int res;

	for (;;) {
		if (pw_xchan_recv_poll(cx, &r->rx, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == 0)
			break;
		cr_assert_eq(res, 1);
		uint64_t id = v >> 32, seq = v & 0xffffffffu;
		cr_assert_lt(id, STRESS_SENDERS);
		cr_assert_eq(seq, r->next[id], "sender %llu: %llu, want %llu",
			     (unsigned long long)id, (unsigned long long)seq,
			     (unsigned long long)r->next[id]);
		r->next[id]++;
		r->total++;
	}
	struct pw_xchan_stats st;
	cr_assert_eq(pw_xchan_stats(&r->rx, &st), 0);
	cr_assert_eq(st.sent, r->total);
	cr_assert_eq(st.received, r->total);
	cr_assert_eq(st.senders, 0);
	pw_xchan_rx_drop(&r->rx);
	return pw_ready(cx, (int64_t)r->total);
}

/* Every sender's task or thread runs while the receiver (on shard 0)
 * takes items one at a time out of a channel of 4: each item arrives
 * once, each sender's in order, and the end comes after the last drop. */
struct stress_root {
	struct stress_tx tx[STRESS_TASKS];
	struct stress_rx rx;
	struct group g;
};

static enum pw_poll stress_root_poll(struct pw_cx *cx, void *state)
{
	struct stress_root *r = state;

	return group_poll(cx, &r->g);
}

Test(xchannel, stress_tasks_on_two_shards_and_plain_threads)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	static struct stress_root r;
	static struct stress_tx th[STRESS_THREADS];
	pthread_t tid[STRESS_THREADS];
	struct pw_xchan_tx first;
	int n = stress_n();

	memset(&r, 0, sizeof(r));
	cr_assert_eq(pw_xchan_open(sizeof(uint64_t), 4, &first, &r.rx.rx), 0);
	for (int i = 0; i < STRESS_SENDERS; i++) {
		struct stress_tx *s = i < STRESS_TASKS ? &r.tx[i] :
							 &th[i - STRESS_TASKS];
		*s = (struct stress_tx){ .id = (uint64_t)i, .n = n };
		cr_assert_eq(pw_xchan_tx_clone(&s->tx, &first), 0);
	}
	pw_xchan_tx_drop(&first);
	r.g.n = STRESS_TASKS;
	for (int i = 0; i < STRESS_TASKS; i++)
		r.g.spec[i] = (struct spec){ (unsigned)i % 2, stress_send_poll,
					     &r.tx[i], sizeof(r.tx[i]),
					     stress_send_drop };
	for (int i = 0; i < STRESS_THREADS; i++)
		cr_assert_eq(pthread_create(&tid[i], NULL, stress_thread,
					    &th[i]),
			     0);
	cr_assert_eq(pw_runtime_spawn(rt, 0, stress_root_poll, &r, 0, NULL), 0);
	int64_t got = pw_test_block_on(rt, stress_recv_poll, &r.rx);
	cr_assert_eq(got, (int64_t)n * STRESS_SENDERS);
	for (int i = 0; i < STRESS_SENDERS; i++)
		cr_assert_eq(r.rx.next[i], (uint64_t)n);
	for (int i = 0; i < STRESS_THREADS; i++)
		cr_assert_eq(pthread_join(tid[i], NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- ping-pong: one item in flight, so any lost wake-up hangs --------- */

/* Sends round r on `out`, then waits for r back on `in`; `first` starts. */
struct pinger {
	struct pw_xchan_tx out;
	struct pw_xchan_rx in;
	bool first, sent;
	uint32_t round, rounds;
};

static enum pw_poll pinger_poll(struct pw_cx *cx, void *state)
{
	struct pinger *p = state;
	uint32_t v;
	int res;

	while (p->round < p->rounds) {
		if (p->first && !p->sent) {
			if (pw_xchan_send_poll(cx, &p->out, &p->round, &res) ==
			    PW_PENDING)
				return PW_PENDING;
			cr_assert_eq(res, 0);
			p->sent = true;
		}
		if (pw_xchan_recv_poll(cx, &p->in, &v, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 1);
		cr_assert_eq(v, p->round);
		if (!p->first) {
			cr_assert_eq(pw_xchan_try_send(&p->out, &v), 0,
				     "capacity 1, one item in flight");
		}
		p->round++;
		p->sent = false;
	}
	pw_xchan_tx_drop(&p->out);
	pw_xchan_rx_drop(&p->in);
	return pw_ready(cx, p->round);
}

static void pinger_drop(void *state)
{
	struct pinger *p = state;

	pw_xchan_tx_drop(&p->out);
	pw_xchan_rx_drop(&p->in);
}

/* Two channels of capacity 1 between shards 0 and 1: every round both
 * receivers park and are woken from the other shard. A wake lost in the
 * park/publish race would stop the game. */
Test(xchannel, ping_pong_across_shards_loses_no_wake)
{
	struct pw_config cfg;
	struct pw_runtime *rt;

	/* Polling shards: a round takes a few microseconds, so a receiver
	 * parks just as the other side publishes, again and again. */
	pw_test_config_init(&cfg);
	cfg.shards = 2;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	cfg.idle_poll_ns = 1000000;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	uint32_t rounds = (uint32_t)(20000 * pw_test_scale());
	struct pinger a = { .first = true, .rounds = rounds };
	struct pinger b = { .rounds = rounds };

	cr_assert_eq(pw_xchan_open(sizeof(uint32_t), 1, &a.out, &b.in), 0);
	cr_assert_eq(pw_xchan_open(sizeof(uint32_t), 1, &b.out, &a.in), 0);
	struct group g = {
		.n = 2,
		.spec = { { 1, pinger_poll, &a, sizeof(a), pinger_drop },
			  { 0, pinger_poll, &b, sizeof(b), pinger_drop } },
	};
	pw_test_block_on(rt, group_poll, &g);
	cr_assert_eq(g.res[0], rounds);
	cr_assert_eq(g.res[1], rounds);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A plain thread sends round r and spins until the receiving task on a
 * polling shard acknowledges it, then sends the next at once: the task
 * parks right as the next item is published, round after round. A lost
 * wake-up leaves the acknowledgement missing: the thread gives up after
 * PW_TEST_WAIT_SECS and the test fails by name. */
struct spin_pong {
	struct pw_xchan_tx tx;
	struct pw_xchan_rx rx;
	_Atomic uint32_t ack;
	uint32_t rounds, lost;
};

static void *spin_pong_thread(void *arg)
{
	struct spin_pong *sp = arg;
	uint64_t deadline =
		pw_test_now_ns() + PW_TEST_WAIT_SECS * 1000000000ull;

	for (uint32_t r = 0; r < sp->rounds && !sp->lost; r++) {
		cr_assert_eq(pw_xchan_try_send(&sp->tx, &r), 0);
		for (uint32_t spins = 0; atomic_load(&sp->ack) != r + 1;)
			if (++spins % 4096 == 0 &&
			    pw_test_now_ns() > deadline) {
				sp->lost = r + 1;
				break;
			}
	}
	pw_xchan_tx_drop(&sp->tx);
	return NULL;
}

static enum pw_poll spin_pong_poll(struct pw_cx *cx, void *state)
{
	struct spin_pong *sp = state;
	uint32_t v;
	int res;

	for (;;) {
		if (pw_xchan_recv_poll(cx, &sp->rx, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == 0)
			break;
		cr_assert_eq(v, atomic_load(&sp->ack));
		atomic_store(&sp->ack, v + 1);
	}
	pw_xchan_rx_drop(&sp->rx);
	return pw_ready(cx, atomic_load(&sp->ack));
}

Test(xchannel, thread_ping_pong_loses_no_wake)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	static struct spin_pong sp;
	pthread_t th;

	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	cfg.idle_poll_ns = 1000000;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	memset(&sp, 0, sizeof(sp));
	sp.rounds = (uint32_t)(100000 * pw_test_scale());
	cr_assert_eq(pw_xchan_open(sizeof(uint32_t), 1, &sp.tx, &sp.rx), 0);
	cr_assert_eq(pthread_create(&th, NULL, spin_pong_thread, &sp), 0);
	int64_t got = pw_test_block_on(rt, spin_pong_poll, &sp);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(sp.lost, 0, "round %u was never received", sp.lost - 1);
	cr_assert_eq(got, sp.rounds);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- bad input -------------------------------------------------------- */

static enum pw_poll on_shard_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	int v = 1;

	return pw_ready(cx, pw_xchan_send_blocking(&gtx, &v));
}

Test(xchannel, bad_input)
{
	struct pw_xchan_tx tx = { 0 };
	struct pw_xchan_rx rx = { 0 };
	struct pw_xchan_stats st;
	int v = 0, res = 7;

	cr_assert_eq(pw_xchan_open(0, 4, &tx, &rx), -EINVAL);
	cr_assert_eq(pw_xchan_open(4, 0, &tx, &rx), -EINVAL);
	cr_assert_eq(pw_xchan_open(PW_XCHAN_ITEM_MAX + 1, 4, &tx, &rx),
		     -EINVAL);
	cr_assert_eq(pw_xchan_open(4, PW_XCHAN_CAP_MAX + 1ull, &tx, &rx),
		     -EINVAL);
	cr_assert_eq(pw_xchan_open(4, 4, NULL, &rx), -EINVAL);
	cr_assert_eq(pw_xchan_open(4, 4, &tx, NULL), -EINVAL);
	/* Zeroed (never opened) handles. */
	cr_assert_eq(pw_xchan_try_send(&tx, &v), -EINVAL);
	cr_assert_eq(pw_xchan_send_blocking(&tx, &v), -EINVAL);
	cr_assert_eq(pw_xchan_send_cancel(&tx), -EINVAL);
	cr_assert_eq(pw_xchan_close_tx(&tx), -EINVAL);
	cr_assert_eq(pw_xchan_tx_clone(&tx, &tx), -EINVAL);
	cr_assert(pw_xchan_is_closed(&tx));
	cr_assert_eq(pw_xchan_try_recv(&rx, &v), -EINVAL);
	cr_assert_eq(pw_xchan_close_rx(&rx), -EINVAL);
	cr_assert_eq(pw_xchan_stats(&rx, &st), -EINVAL);
	cr_assert_null(pw_xchan_stream(&rx));
	pw_xchan_tx_drop(&tx);
	pw_xchan_rx_drop(&rx);
	pw_xchan_tx_drop(NULL);
	pw_xchan_rx_drop(NULL);
	cr_assert_eq(pw_xchan_send_poll(NULL, &tx, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_xchan_recv_poll(NULL, &rx, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	/* Open handles: NULL items, an idle cancel, closing after the
	 * receiver's drop, a blocking send on a shard. */
	cr_assert_eq(pw_xchan_open(sizeof(int), 2, &gtx, &grx), 0);
	cr_assert_eq(pw_xchan_try_send(&gtx, NULL), -EINVAL);
	cr_assert_eq(pw_xchan_send_blocking(&gtx, NULL), -EINVAL);
	cr_assert_eq(pw_xchan_try_recv(&grx, NULL), -EINVAL);
	cr_assert_eq(pw_xchan_stats(&grx, NULL), -EINVAL);
	cr_assert_eq(pw_xchan_send_cancel(&gtx), -EALREADY);
	struct pw_runtime *rt = pw_test_runtime(1);
	cr_assert_eq(pw_test_block_on(rt, on_shard_poll, NULL), -EPERM);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_xchan_send_blocking(&gtx, &v), 0, "a plain thread");
	pw_xchan_rx_drop(&grx);
	cr_assert(pw_xchan_is_closed(&gtx));
	cr_assert_eq(pw_xchan_try_send(&gtx, &v), -EPIPE);
	cr_assert_eq(pw_xchan_send_blocking(&gtx, &v), -EPIPE);
	cr_assert_eq(pw_xchan_close_tx(&gtx), 0);
	pw_xchan_tx_drop(&gtx);
}
