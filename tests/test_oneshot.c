/* SPDX-License-Identifier: MIT */
/*
 * test_oneshot.c - the one-shot channel: a value from another shard and
 * from a plain thread, a sender dropped without sending, a receiver gone
 * (the sender's closed poll wakes, its send fails), the try paths, a bare
 * signal, many channels between a thread and a task, and bad input.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"
#include "pinwheel/oneshot.h"

#define MS PW_NSEC_PER_MSEC

struct big {
	int64_t a, b, c;
};

/* On another shard: sleeps 5 ms, then sends {1, 2, 3} or, with `drop`,
 * drops its sender unsent; or, with `wait_closed`, waits until the
 * receiver is gone and then tries to send. */
struct sender {
	struct pw_oneshot_tx tx;
	bool drop, wait_closed;
	int phase;
	struct pw_sleep sl;
};

static enum pw_poll sender_poll(struct pw_cx *cx, void *state)
{
	struct sender *s = state;
	struct big v = { 1, 2, 3 };

	if (s->wait_closed) {
		if (pw_oneshot_closed_poll(cx, &s->tx) == PW_PENDING)
			return PW_PENDING;
		cr_assert(pw_oneshot_is_closed(&s->tx));
		return pw_ready(cx, pw_oneshot_send(&s->tx, &v));
	}
	if (s->phase == 0) {
		pw_sleep_init(&s->sl, 5 * MS);
		s->phase = 1;
	}
	if (pw_sleep_poll(cx, &s->sl) == PW_PENDING)
		return PW_PENDING;
	if (s->drop) {
		pw_oneshot_tx_drop(&s->tx);
		return pw_ready(cx, 0);
	}
	return pw_ready(cx, pw_oneshot_send(&s->tx, &v));
}

static void sender_drop(void *state)
{
	struct sender *s = state;

	pw_sleep_cancel(&s->sl);
	pw_oneshot_tx_drop(&s->tx);
}

/* On shard 0: starts the sender on shard 1 with a pw_call, receives (or,
 * with `leave`, drops the receiver after 5 ms), then joins the call. */
struct root {
	struct pw_oneshot_rx rx;
	struct sender s;
	struct pw_call call;
	struct pw_sleep sl;
	bool leave, got;
	int phase, res;
	struct big v;
	int64_t call_res;
};

static enum pw_poll root_poll(struct pw_cx *cx, void *state)
{
	struct root *r = state;

	if (r->phase == 0) {
		pw_call_init(&r->call, 1, sender_poll, &r->s, sizeof(r->s),
			     sender_drop);
		pw_sleep_init(&r->sl, 5 * MS);
		r->phase = 1;
		if (pw_call_poll(cx, &r->call, &r->call_res) == PW_READY)
			cr_assert_fail("the call finished at once");
	}
	if (r->phase == 1) {
		if (r->leave) {
			if (pw_sleep_poll(cx, &r->sl) == PW_PENDING)
				return PW_PENDING;
			pw_oneshot_rx_drop(&r->rx);
			cr_assert_null(r->rx.o);
		} else if (pw_oneshot_recv_poll(cx, &r->rx, &r->v, &r->res) ==
			   PW_PENDING) {
			return PW_PENDING;
		}
		r->phase = 2;
	}
	if (pw_call_poll(cx, &r->call, &r->call_res) == PW_PENDING)
		return PW_PENDING;
	if (!r->leave) {
		int again = 7;
		cr_assert_eq(pw_oneshot_recv_poll(cx, &r->rx, &r->v, &again),
			     PW_READY);
		cr_assert_eq(again, -EALREADY);
		pw_oneshot_rx_drop(&r->rx);
	}
	return pw_ready(cx, 0);
}

static struct root *run_root(bool drop, bool leave)
{
	static struct root r;
	struct pw_runtime *rt = pw_test_runtime(2);

	memset(&r, 0, sizeof(r));
	r.s.drop = drop;
	r.s.wait_closed = leave;
	r.leave = leave;
	cr_assert_eq(pw_oneshot_open(sizeof(struct big), &r.s.tx, &r.rx), 0);
	cr_assert_eq(pw_test_block_on(rt, root_poll, &r), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	return &r;
}

Test(oneshot, value_from_another_shard)
{
	struct root *r = run_root(false, false);

	cr_assert_eq(r->res, 0);
	cr_assert(r->v.a == 1 && r->v.b == 2 && r->v.c == 3);
	cr_assert_eq(r->call_res, 0, "the send was delivered");
}

Test(oneshot, sender_dropped_unsent_gives_epipe)
{
	struct root *r = run_root(true, false);

	cr_assert_eq(r->res, -EPIPE);
	cr_assert_eq(r->v.a, 0);
}

Test(oneshot, receiver_gone_wakes_closed_poll_and_fails_the_send)
{
	struct root *r = run_root(false, true);

	cr_assert_eq(r->call_res, -EPIPE);
}

/* A plain thread sends while the receiving task waits. */
static void *thread_send(void *arg)
{
	struct pw_oneshot_tx *tx = arg;
	struct big v = { 7, 8, 9 };

	usleep(5000);
	cr_assert_eq(pw_oneshot_send(tx, &v), 0);
	cr_assert_null(tx->o);
	return NULL;
}

struct waiter {
	struct pw_oneshot_rx rx;
	struct big v;
};

static enum pw_poll waiter_poll(struct pw_cx *cx, void *state)
{
	struct waiter *w = state;
	int res;

	if (pw_oneshot_recv_poll(cx, &w->rx, &w->v, &res) == PW_PENDING)
		return PW_PENDING;
	pw_oneshot_rx_drop(&w->rx);
	return pw_ready(cx, res);
}

Test(oneshot, value_from_a_plain_thread)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_oneshot_tx tx;
	struct waiter w;
	pthread_t th;

	cr_assert_eq(pw_oneshot_open(sizeof(struct big), &tx, &w.rx), 0);
	cr_assert_eq(pthread_create(&th, NULL, thread_send, &tx), 0);
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), 0);
	cr_assert(w.v.a == 7 && w.v.b == 8 && w.v.c == 9);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Many channels: a plain thread sends value i on channel i while a task
 * awaits them in order; under ThreadSanitizer this checks the wake and
 * the value's hand-over. */
#define MANY 64

struct many {
	struct pw_oneshot_tx tx[MANY];
	struct pw_oneshot_rx rx[MANY];
	int next;
};

static void *many_thread(void *arg)
{
	struct many *m = arg;

	for (int i = MANY - 1; i >= 0; i--) {
		int64_t v = i;
		if (i % 3 == 2)
			pw_oneshot_tx_drop(&m->tx[i]);
		else
			cr_assert_eq(pw_oneshot_send(&m->tx[i], &v), 0);
	}
	return NULL;
}

static enum pw_poll many_poll(struct pw_cx *cx, void *state)
{
	struct many *m = state;

	for (; m->next < MANY; m->next++) {
		int64_t v = -1;
		int res;
		if (pw_oneshot_recv_poll(cx, &m->rx[m->next], &v, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (m->next % 3 == 2) {
			cr_assert_eq(res, -EPIPE);
		} else {
			cr_assert_eq(res, 0);
			cr_assert_eq(v, m->next);
		}
		pw_oneshot_rx_drop(&m->rx[m->next]);
	}
	return pw_ready(cx, m->next);
}

Test(oneshot, many_channels_between_a_thread_and_a_task)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct many m;
	pthread_t th;
	int rounds = (int)(20 * pw_test_scale()) + 1;

	for (int r = 0; r < rounds; r++) {
		memset(&m, 0, sizeof(m));
		for (int i = 0; i < MANY; i++)
			cr_assert_eq(pw_oneshot_open(sizeof(int64_t), &m.tx[i],
						     &m.rx[i]),
				     0);
		cr_assert_eq(pthread_create(&th, NULL, many_thread, &m), 0);
		cr_assert_eq(pw_test_block_on(rt, many_poll, &m), MANY);
		cr_assert_eq(pthread_join(th, NULL), 0);
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* The try paths, a bare signal, a value sent before the close. */
Test(oneshot, try_paths_signal_and_close)
{
	struct pw_oneshot_tx tx;
	struct pw_oneshot_rx rx;
	int64_t v = 0, one = 1;

	cr_assert_eq(pw_oneshot_open(sizeof(v), &tx, &rx), 0);
	cr_assert_eq(pw_oneshot_try_recv(&rx, &v), -EAGAIN);
	cr_assert_not(pw_oneshot_is_closed(&tx));
	cr_assert_eq(pw_oneshot_send(&tx, &one), 0);
	cr_assert_eq(pw_oneshot_send(&tx, &one), -EINVAL, "used");
	cr_assert(pw_oneshot_is_closed(&tx), "a used sender");
	cr_assert_eq(pw_oneshot_close(&rx), 0);
	cr_assert_eq(pw_oneshot_close(&rx), -EALREADY);
	cr_assert_eq(pw_oneshot_try_recv(&rx, &v), 0, "sent before close");
	cr_assert_eq(v, 1);
	cr_assert_eq(pw_oneshot_try_recv(&rx, &v), -EALREADY);
	pw_oneshot_rx_drop(&rx);
	pw_oneshot_rx_drop(&rx); /* dropped: nothing */

	/* A bare signal: size 0, NULL values. */
	cr_assert_eq(pw_oneshot_open(0, &tx, &rx), 0);
	cr_assert_eq(pw_oneshot_try_recv(&rx, NULL), -EAGAIN);
	cr_assert_eq(pw_oneshot_send(&tx, NULL), 0);
	cr_assert_eq(pw_oneshot_try_recv(&rx, NULL), 0);
	pw_oneshot_rx_drop(&rx);

	/* Closed first: the send fails and says so. */
	cr_assert_eq(pw_oneshot_open(sizeof(v), &tx, &rx), 0);
	cr_assert_eq(pw_oneshot_close(&rx), 0);
	cr_assert(pw_oneshot_is_closed(&tx));
	cr_assert_eq(pw_oneshot_send(&tx, &one), -EPIPE);
	cr_assert_eq(pw_oneshot_try_recv(&rx, &v), -EPIPE);
	pw_oneshot_rx_drop(&rx);

	/* Dropped in the other order. */
	cr_assert_eq(pw_oneshot_open(sizeof(v), &tx, &rx), 0);
	pw_oneshot_rx_drop(&rx);
	pw_oneshot_tx_drop(&tx);
	pw_oneshot_tx_drop(&tx);
}

Test(oneshot, bad_input)
{
	struct pw_oneshot_tx tx = { 0 };
	struct pw_oneshot_rx rx = { 0 };
	int64_t v = 0;
	int res = 7;

	cr_assert_eq(pw_oneshot_open(PW_ONESHOT_VALUE_MAX + 1, &tx, &rx),
		     -EINVAL);
	cr_assert_eq(pw_oneshot_open(8, NULL, &rx), -EINVAL);
	cr_assert_eq(pw_oneshot_open(8, &tx, NULL), -EINVAL);
	cr_assert_eq(pw_oneshot_send(&tx, &v), -EINVAL);
	cr_assert_eq(pw_oneshot_send(NULL, &v), -EINVAL);
	cr_assert_eq(pw_oneshot_try_recv(&rx, &v), -EINVAL);
	cr_assert_eq(pw_oneshot_close(&rx), -EINVAL);
	cr_assert_eq(pw_oneshot_recv_poll(NULL, &rx, &v, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_oneshot_closed_poll(NULL, &tx), PW_READY);
	pw_oneshot_tx_drop(NULL);
	pw_oneshot_rx_drop(NULL);
	cr_assert_eq(pw_oneshot_open(sizeof(v), &tx, &rx), 0);
	cr_assert_eq(pw_oneshot_send(&tx, NULL), -EINVAL, "size 8, no value");
	cr_assert_eq(pw_oneshot_try_recv(&rx, NULL), -EINVAL);
	cr_assert_not_null(tx.o, "a refused send leaves the sender");
	pw_oneshot_tx_drop(&tx);
	cr_assert_eq(pw_oneshot_try_recv(&rx, &v), -EPIPE);
	pw_oneshot_rx_drop(&rx);
}
