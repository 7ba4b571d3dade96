/* SPDX-License-Identifier: MIT */
/*
 * test_fiber.c - fibers as tasks (pinwheel/fiber.h): spawn and join both
 * ways, the exact interleaving of yielding fibers, sleeps and deadlines
 * at exact virtual times, awaits of poll functions, channels and the
 * blocking pool, sockets (echo over loopback), cancellation at a
 * suspension point (sleep, recv) with the cleanup code running, runtime
 * shutdown with fibers blocked, and ten thousand fibers on one shard.
 *
 * Fibers record what they see; the test thread asserts after the run.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include "tests/common.h"
#include "pinwheel/channel.h"
#include "pinwheel/fiber.h"
#include "pinwheel/net.h"
#include "pinwheel/reader.h"

#define MS PW_NSEC_PER_MSEC

static int64_t now_ms(void)
{
	return pw_time_now() / (int64_t)MS;
}

static int64_t run(struct pw_runtime *rt, pw_fiber_fn fn, void *arg)
{
	int64_t res = -1;
	int err = pw_fiber_block_on(rt, fn, arg, &res);

	cr_assert_eq(err, 0, "pw_fiber_block_on: %d", err);
	return res;
}

/* ---- spawn and join ---------------------------------------------------- */

static int64_t add_one(void *arg)
{
	return (int64_t)(intptr_t)arg + 1;
}

struct two {
	int64_t a, b;
	int spawn_err;
};

static int64_t spawn_two(void *arg)
{
	struct two *t = arg;
	struct pw_join j1, j2;

	t->spawn_err = PW_FIBER_SPAWN(&j1, add_one, (void *)(intptr_t)41);
	t->spawn_err |= pw_fiber_spawn(
		&j2, add_one, (void *)(intptr_t)9,
		&(struct pw_fiber_opts){ .stack_size = 256 * 1024 });
	t->a = pw_fiber_join(&j1);
	t->b = pw_fiber_join(&j2);
	return t->a + t->b;
}

Test(fiber, spawn_and_join_results)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct two t = { 0 };

	cr_assert_eq(run(rt, add_one, (void *)(intptr_t)6), 7);
	cr_assert_eq(run(rt, spawn_two, &t), 52);
	cr_assert_eq(t.spawn_err, 0);
	cr_assert_eq(t.a, 42);
	cr_assert_eq(t.b, 10);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static int64_t bad_calls(void *arg)
{
	(void)arg;
	struct pw_join j = { 0 };
	int64_t r = 0;

	r |= pw_fiber_spawn(&j, NULL, NULL, NULL) == -EINVAL ? 0 : 1;
	r |= pw_fiber_spawn(&j, add_one, NULL,
			    &(struct pw_fiber_opts){
				    .stack_size = PW_FIBER_STACK_MAX + 1 }) ==
			     -EINVAL ?
		     0 :
		     2;
	r |= j.task == NULL ? 0 : 4;
	r |= pw_fiber_join(&j) == -EINVAL ? 0 : 8;
	r |= pw_fiber_is_running() ? 0 : 16;
	r |= pw_fiber_cx() != NULL ? 0 : 32;
	return r;
}

Test(fiber, errors_outside_and_inside_a_fiber)
{
	struct pw_runtime *rt = pw_test_runtime(1);

	cr_assert_eq(pw_fiber_sleep(1), -EPERM);
	cr_assert_eq(pw_fiber_yield(), -EPERM);
	cr_assert_eq(pw_fiber_await(NULL, NULL, NULL), -EPERM);
	cr_assert_eq(pw_fiber_set_deadline(0), -EPERM);
	cr_assert_eq(pw_fiber_deadline(), PW_TIME_NEVER);
	cr_assert_not(pw_fiber_is_running());
	cr_assert_null(pw_fiber_cx());
	cr_assert_eq(pw_fiber_block_on(rt, NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(run(rt, bad_calls, NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- interleaving ------------------------------------------------------- */

struct order {
	char log[64];
	int n;
};

struct worker {
	struct order *o;
	char id;
};

static int64_t yielder(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 3; i++) {
		w->o->log[w->o->n++] = w->id;
		if (pw_fiber_yield())
			return -1;
	}
	return w->id;
}

static int64_t three_yielders(void *arg)
{
	struct order *o = arg;
	struct worker w[3] = { { o, 'a' }, { o, 'b' }, { o, 'c' } };
	struct pw_join j[3];
	int64_t sum = 0;

	for (int i = 0; i < 3; i++)
		if (PW_FIBER_SPAWN(&j[i], yielder, &w[i]))
			return -1;
	for (int i = 0; i < 3; i++)
		sum += pw_fiber_join(&j[i]);
	return sum;
}

Test(fiber, yielding_fibers_interleave_in_order)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct order o = { 0 };

	cr_assert_eq(run(rt, three_yielders, &o), 'a' + 'b' + 'c');
	cr_assert_eq(o.n, 9);
	if (pw_test_steal())
		/* The newest spawn runs first from the LIFO slot, then each
		 * yield goes to the back of the queue. */
		cr_assert_str_eq(o.log, "cabcabcab", "%s", o.log);
	else
		cr_assert_str_eq(o.log, "abcabcabc", "%s", o.log);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- time ----------------------------------------------------------------- */

struct times {
	int64_t t[4];
	int rc[4];
};

static int64_t sleeper(void *arg)
{
	struct times *tm = arg;

	tm->t[0] = now_ms();
	tm->rc[0] = pw_fiber_sleep(30 * MS);
	tm->t[1] = now_ms();
	tm->rc[1] = pw_fiber_sleep(70 * MS);
	tm->t[2] = now_ms();
	return 0;
}

Test(fiber, sleep_30_then_70_ends_at_100_virtual)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct times tm = { 0 };

	cr_assert_eq(run(rt, sleeper, &tm), 0);
	cr_assert_eq(tm.rc[0], 0);
	cr_assert_eq(tm.rc[1], 0);
	cr_assert_eq(tm.t[1] - tm.t[0], 30);
	cr_assert_eq(tm.t[2] - tm.t[0], 100);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static int64_t deadliner(void *arg)
{
	struct times *tm = arg;
	struct pw_channel ch;
	int storage[2], item;

	pw_channel_init(&ch, sizeof(int), 2, storage);
	tm->t[0] = now_ms();
	pw_fiber_timeout(50 * MS);
	tm->rc[0] = pw_fiber_channel_recv(&ch, &item);
	tm->t[1] = now_ms();
	/* Past the deadline every call fails at once. */
	tm->rc[1] = pw_fiber_sleep(MS);
	tm->rc[2] = pw_fiber_yield(); /* not a wait: no deadline */
	tm->t[2] = now_ms();
	/* A sleep ends at the deadline when it comes first. */
	pw_fiber_timeout(20 * MS);
	tm->rc[3] = pw_fiber_sleep(100 * MS);
	tm->t[3] = now_ms();
	pw_fiber_set_deadline(PW_TIME_NEVER);
	return pw_fiber_sleep(5 * MS);
}

Test(fiber, deadline_times_out_at_the_exact_virtual_time)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct times tm = { 0 };

	cr_assert_eq(run(rt, deadliner, &tm), 0);
	cr_assert_eq(tm.rc[0], -ETIMEDOUT);
	cr_assert_eq(tm.t[1] - tm.t[0], 50);
	cr_assert_eq(tm.rc[1], -ETIMEDOUT);
	cr_assert_eq(tm.rc[2], 0);
	cr_assert_eq(tm.t[2] - tm.t[0], 50);
	cr_assert_eq(tm.rc[3], -ETIMEDOUT);
	cr_assert_eq(tm.t[3] - tm.t[0], 70);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

struct recv_deadline {
	int fd[2];
	int rc[3];
	int64_t t[2];
	char got;
};

static int64_t recv_times_out(void *arg)
{
	struct recv_deadline *d = arg;
	struct pw_recv r;
	char c = 0;

	pw_recv_init(&r, d->fd[0]);
	d->t[0] = now_ms();
	pw_fiber_timeout(40 * MS);
	d->rc[0] = (int)pw_fiber_recv(&r, &c, 1);
	d->t[1] = now_ms();
	/* The receive stays armed: a byte sent now is the next one read. */
	pw_fiber_set_deadline(PW_TIME_NEVER);
	d->rc[1] = (int)write(d->fd[1], "x", 1);
	d->rc[2] = (int)pw_fiber_recv(&r, &d->got, 1);
	pw_recv_cancel(&r);
	return 0;
}

Test(fiber, recv_deadline_times_out_and_loses_nothing)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct recv_deadline d = { 0 };

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d.fd),
		     0);
	cr_assert_eq(run(rt, recv_times_out, &d), 0);
	cr_assert_eq(d.rc[0], -ETIMEDOUT);
	cr_assert_eq(d.t[1] - d.t[0], 40);
	cr_assert_eq(d.rc[1], 1);
	cr_assert_eq(d.rc[2], 1);
	cr_assert_eq(d.got, 'x');
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(d.fd[0]);
	close(d.fd[1]);
}

/* ---- the buffered reader and vector sends ------------------------------ */

struct lines {
	int fd[2];
	int64_t rc[8];
	int64_t t[2];
	char got[5][16]; /* [2]: the long line's head, kept before [4] is
			    read into again */
	char peer[16];
};

static int64_t reads_lines(void *arg)
{
	struct lines *l = arg;
	struct pw_reader rd;
	struct pw_sendv v;
	struct iovec iov[3] = { { "a", 1 }, { "bc", 2 }, { "def", 3 } };

	pw_reader_init(&rd, l->fd[0]);
	pw_sendv_init(&v, l->fd[0]);
	l->rc[0] = pw_fiber_read_until(&rd, '\n', l->got[0], 16);
	/* "hel" waits for its end past the deadline: it stays in got[1],
	 * and the next read into got[1] goes on from it. */
	l->t[0] = now_ms();
	pw_fiber_timeout(40 * MS);
	l->rc[1] = pw_fiber_read_until(&rd, '\n', l->got[1], 16);
	l->t[1] = now_ms();
	pw_fiber_set_deadline(PW_TIME_NEVER);
	cr_assert_eq(write(l->fd[1], "lo\nABCDEtoolongline\n", 20), 20);
	l->rc[2] = pw_fiber_read_until(&rd, '\n', l->got[1], 16);
	l->rc[3] = pw_fiber_read_exact(&rd, l->got[3], 5);
	l->rc[4] = pw_fiber_read_until(&rd, '\n', l->got[4], 4);
	l->rc[5] = pw_fiber_sendv(&v, iov, 3);
	cr_assert_eq(shutdown(l->fd[1], SHUT_WR), 0);
	memcpy(l->got[2], l->got[4], 4); /* the long line's first part */
	l->rc[6] = pw_fiber_read_until(&rd, '\n', l->got[4], 16);
	l->rc[7] = pw_fiber_read_until(&rd, '\n', l->got[4], 16);
	pw_reader_cancel(&rd);
	return 0;
}

/* Lines split across writes, a deadline that keeps the partial line, an
 * exact read across the same chunk, a line longer than its buffer, an
 * iovec send, and the end of the stream. */
Test(fiber, reader_lines_exact_reads_and_vector_sends)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct lines l = { 0 };

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, l.fd),
		     0);
	cr_assert_eq(write(l.fd[1], "PING\nhel", 8), 8);
	cr_assert_eq(run(rt, reads_lines, &l), 0);
	cr_assert_eq(l.rc[0], 5);
	cr_assert_eq(memcmp(l.got[0], "PING\n", 5), 0);
	cr_assert_eq(l.rc[1], -ETIMEDOUT);
	cr_assert_eq(l.t[1] - l.t[0], 40);
	cr_assert_eq(l.rc[2], 6);
	cr_assert_eq(memcmp(l.got[1], "hello\n", 6), 0);
	cr_assert_eq(l.rc[3], 5);
	cr_assert_eq(memcmp(l.got[3], "ABCDE", 5), 0);
	cr_assert_eq(l.rc[4], -EMSGSIZE);
	cr_assert_eq(memcmp(l.got[2], "tool", 4), 0);
	cr_assert_eq(l.rc[5], 6);
	cr_assert_eq(read(l.fd[1], l.peer, sizeof(l.peer)), 6);
	cr_assert_eq(memcmp(l.peer, "abcdef", 6), 0);
	/* The long line's rest, then the end of the stream. */
	cr_assert_eq(l.rc[6], 8);
	cr_assert_eq(memcmp(l.got[4], "ongline\n", 8), 0);
	cr_assert_eq(l.rc[7], 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(l.fd[0]);
	close(l.fd[1]);
}

/* ---- await a poll function --------------------------------------------- */

struct gate {
	int left, polls;
};

static enum pw_poll gate_poll(struct pw_cx *cx, void *state)
{
	struct gate *g = state;

	g->polls++;
	if (g->left == 0)
		return pw_ready(cx, 99);
	g->left--;
	struct pw_waker w = pw_cx_waker(cx);
	pw_waker_wake_by_ref(&w);
	return PW_PENDING;
}

static int64_t awaiter(void *arg)
{
	return pw_fiber_await(gate_poll, arg, NULL);
}

Test(fiber, await_polls_until_ready)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct gate g = { .left = 3 };

	cr_assert_eq(run(rt, awaiter, &g), 99);
	cr_assert_eq(g.polls, 4);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- joins across styles -------------------------------------------- */

static enum pw_poll ready_after_gate(struct pw_cx *cx, void *state)
{
	struct gate *g = state;

	if (gate_poll(cx, g) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, 1000 + g->polls);
}

static int64_t joins_poll_task(void *arg)
{
	struct pw_join j;

	if (pw_spawn(&j, ready_after_gate, arg, sizeof(struct gate), NULL))
		return -1;
	return pw_fiber_join(&j);
}

struct poll_joins_fiber {
	struct pw_join j;
	bool spawned;
};

static enum pw_poll poll_joins_fiber(struct pw_cx *cx, void *state)
{
	struct poll_joins_fiber *p = state;
	int64_t res;

	if (!p->spawned) {
		if (pw_fiber_spawn(&p->j, add_one, (void *)(intptr_t)4, NULL))
			return pw_ready(cx, -1);
		p->spawned = true;
	}
	if (pw_join_poll(cx, &p->j, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

Test(fiber, joins_between_fibers_and_poll_tasks)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct gate g = { .left = 2 };
	struct poll_joins_fiber p = { 0 };

	/* The spawned task has a copy of g: 3 polls. */
	cr_assert_eq(run(rt, joins_poll_task, &g), 1003);
	cr_assert_eq(pw_test_block_on(rt, poll_joins_fiber, &p), 5);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- channels ------------------------------------------------------------ */

struct pingpong {
	struct pw_channel ping, pong;
	int ping_buf[1], pong_buf[1];
	int rounds, got, errs;
};

static int64_t ponger(void *arg)
{
	struct pingpong *p = arg;
	int v;

	while (pw_fiber_channel_recv(&p->ping, &v) == 1)
		if (pw_fiber_channel_send(&p->pong, &(int){ v + 1 }))
			p->errs++;
	pw_channel_close_tx(&p->pong);
	return 0;
}

static int64_t pinger(void *arg)
{
	struct pingpong *p = arg;
	struct pw_join j;
	int v = 0;

	pw_channel_init(&p->ping, sizeof(int), 1, p->ping_buf);
	pw_channel_init(&p->pong, sizeof(int), 1, p->pong_buf);
	if (PW_FIBER_SPAWN(&j, ponger, p))
		return -1;
	for (int i = 0; i < p->rounds; i++) {
		if (pw_fiber_channel_send(&p->ping, &v) ||
		    pw_fiber_channel_recv(&p->pong, &v) != 1)
			p->errs++;
		v++;
		p->got++;
	}
	pw_channel_close_tx(&p->ping);
	if (pw_fiber_join(&j) != 0 || pw_fiber_channel_recv(&p->pong, &v) != 0)
		p->errs++;
	return v;
}

Test(fiber, channel_ping_pong_between_two_fibers)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pingpong p = { .rounds = 1000 };

	cr_assert_eq(run(rt, pinger, &p), 2000);
	cr_assert_eq(p.got, 1000);
	cr_assert_eq(p.errs, 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- the blocking pool -------------------------------------------------- */

static int64_t slow_square(void *arg)
{
	int64_t v = (int64_t)(intptr_t)arg;
	struct timespec ms = { 0, 1000000 };

	nanosleep(&ms, NULL); /* blocks a pool thread, not the shard */
	return v * v;
}

static int64_t blocker(void *arg)
{
	(void)arg;
	int64_t sum = 0;

	for (int i = 1; i <= 4; i++)
		sum += pw_fiber_blocking(slow_square, (void *)(intptr_t)i);
	return sum;
}

Test(fiber, blocking_pool_calls_return_their_values)
{
	struct pw_runtime *rt = pw_test_runtime(1);

	cr_assert_eq(run(rt, blocker, NULL), 1 + 4 + 9 + 16);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- cancellation ------------------------------------------------------- */

struct victim {
	int rc[3];
	int64_t t_after;
	int cleanups;
	int fd;
	bool reached;
};

static int64_t sleeps_long(void *arg)
{
	struct victim *v = arg;

	v->reached = true;
	v->rc[0] = pw_fiber_sleep(1000 * MS);
	/* Cleanup: runs on the drop's resume; nothing suspends any more. */
	v->rc[1] = pw_fiber_sleep(MS);
	v->rc[2] = pw_fiber_yield();
	v->t_after = now_ms();
	v->cleanups++;
	return 5;
}

static int64_t aborts_sleeper(void *arg)
{
	struct victim *v = arg;
	struct pw_join j;
	int64_t res;

	if (PW_FIBER_SPAWN(&j, sleeps_long, v))
		return -1;
	pw_fiber_sleep(10 * MS);
	if (pw_join_abort(&j))
		return -2;
	res = pw_fiber_join(&j);
	return res == -ECANCELED && j.cancelled ? now_ms() : -3;
}

Test(fiber, abort_while_sleeping_unwinds_with_ecanceled)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct victim v = { 0 };

	cr_assert_eq(run(rt, aborts_sleeper, &v), 10);
	cr_assert(v.reached);
	cr_assert_eq(v.rc[0], -ECANCELED);
	cr_assert_eq(v.rc[1], -ECANCELED);
	cr_assert_eq(v.rc[2], -ECANCELED);
	cr_assert_eq(v.t_after, 10);
	cr_assert_eq(v.cleanups, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static int64_t recvs_forever(void *arg)
{
	struct victim *v = arg;
	struct pw_recv r;
	char buf[16];

	pw_recv_init(&r, v->fd);
	v->reached = true;
	v->rc[0] = (int)pw_fiber_recv(&r, buf, sizeof(buf));
	v->rc[1] = (int)pw_fiber_recv(&r, buf, sizeof(buf));
	pw_recv_cancel(&r);
	v->rc[2] = pw_fiber_close(v->fd);
	v->cleanups++;
	return 0;
}

static int64_t aborts_receiver(void *arg)
{
	struct victim *v = arg;
	struct pw_join j;

	if (PW_FIBER_SPAWN(&j, recvs_forever, v))
		return -1;
	for (int i = 0; i < 3; i++)
		pw_fiber_yield();
	if (pw_join_abort(&j))
		return -2;
	return pw_fiber_join(&j);
}

Test(fiber, abort_while_blocked_in_recv)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct victim v = { 0 };
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	v.fd = sv[0];
	cr_assert_eq(run(rt, aborts_receiver, &v), -ECANCELED);
	cr_assert(v.reached);
	cr_assert_eq(v.rc[0], -ECANCELED);
	cr_assert_eq(v.rc[1], -ECANCELED);
	cr_assert_eq(v.rc[2], 0);
	cr_assert_eq(v.cleanups, 1);
	/* The fiber closed its end: the peer sees the end of the stream. */
	char c;
	cr_assert_eq(read(sv[1], &c, 1), 0);
	close(sv[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- shutdown with fibers blocked -------------------------------------- */

static atomic_int shut_started, shut_cleanups;

static int64_t blocks_until_shutdown(void *arg)
{
	struct pw_channel *ch = arg;
	int item;

	/* relaxed: counters read after pw_runtime_destroy() joined us. */
	atomic_fetch_add_explicit(&shut_started, 1, memory_order_relaxed);
	int rc = ch ? pw_fiber_channel_recv(ch, &item) :
		      pw_fiber_sleep(3600 * PW_NSEC_PER_SEC);
	if (rc == -ECANCELED)
		atomic_fetch_add_explicit(&shut_cleanups, 1,
					  memory_order_relaxed);
	return rc;
}

Test(fiber, runtime_shutdown_unwinds_blocked_fibers)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	static struct pw_channel ch[2];
	static int storage[2][1];

	atomic_store(&shut_started, 0);
	atomic_store(&shut_cleanups, 0);
	for (unsigned i = 0; i < 2; i++) {
		pw_channel_init(&ch[i], sizeof(int), 1, storage[i]);
		cr_assert_eq(pw_fiber_spawn_on(rt, i, blocks_until_shutdown,
					       &ch[i], NULL),
			     0);
		cr_assert_eq(pw_fiber_spawn_on(rt, i, blocks_until_shutdown,
					       NULL, NULL),
			     0);
	}
	PW_TEST_WAIT_UNTIL(atomic_load(&shut_started) == 4, PW_TEST_WAIT_SECS,
			   "%d fibers started of 4",
			   atomic_load(&shut_started));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&shut_cleanups), 4);
}

/* ---- sockets: echo over loopback --------------------------------------- */

#define ECHO_BYTES (256 * 1024)

struct echo {
	struct pw_net_listener *l;
	struct pw_net_addr addr;
	unsigned char *out, *in;
	int64_t served, received;
	int errs;
};

static int64_t echo_server(void *arg)
{
	struct echo *e = arg;
	struct pw_accept a;
	struct pw_recv r;
	struct pw_send s;
	char buf[3000]; /* smaller than a ring buffer: unread tails */
	int64_t n;

	pw_accept_init(&a, e->l, 0);
	int fd = pw_fiber_accept(&a);
	pw_accept_cancel(&a);
	if (fd < 0)
		return fd;
	pw_recv_init(&r, fd);
	pw_send_init(&s, fd);
	while ((n = pw_fiber_recv(&r, buf, sizeof(buf))) > 0) {
		if (pw_fiber_send(&s, buf, (size_t)n) != n)
			e->errs++;
		e->served += n;
	}
	if (n < 0)
		e->errs++;
	pw_recv_cancel(&r);
	return pw_fiber_close(fd);
}

static int64_t echo_client(void *arg)
{
	struct echo *e = arg;
	struct pw_join j;
	struct pw_recv r;
	struct pw_send s;
	int64_t n;

	if (PW_FIBER_SPAWN(&j, echo_server, e))
		return -1;
	int fd = pw_fiber_connect(&e->addr);
	if (fd < 0)
		return fd;
	pw_recv_init(&r, fd);
	pw_send_init(&s, fd);
	/* Send in pieces, reading back what comes as we go. */
	for (size_t off = 0; off < ECHO_BYTES; off += 32768) {
		if (pw_fiber_send(&s, e->out + off, 32768) != 32768)
			e->errs++;
		while (e->received < (int64_t)(off + 32768)) {
			n = pw_fiber_recv(&r, e->in + e->received,
					  ECHO_BYTES - (size_t)e->received);
			if (n <= 0) {
				e->errs++;
				break;
			}
			e->received += n;
		}
	}
	shutdown(fd, SHUT_WR);
	n = pw_fiber_recv(&r, e->in, 1); /* the server's end of stream */
	pw_recv_cancel(&r);
	pw_fiber_close(fd);
	return n == 0 ? pw_fiber_join(&j) : -100;
}

Test(fiber, echo_over_loopback_keeps_bytes_intact)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_net_addr a;
	struct echo e = { 0 };

	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&e.l, rt, &a, NULL), 0);
	cr_assert_eq(pw_net_listener_addr(e.l, &e.addr), 0);
	e.out = malloc(ECHO_BYTES);
	e.in = malloc(ECHO_BYTES);
	uint64_t seed = 88172645463325252ull;
	for (size_t i = 0; i < ECHO_BYTES; i++)
		e.out[i] = (unsigned char)pw_test_rng(&seed);
	cr_assert_eq(run(rt, echo_client, &e), 0);
	cr_assert_eq(e.errs, 0);
	cr_assert_eq(e.served, ECHO_BYTES);
	cr_assert_eq(e.received, ECHO_BYTES);
	cr_assert_eq(memcmp(e.out, e.in, ECHO_BYTES), 0);
	free(e.out);
	free(e.in);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_net_listener_destroy(e.l), 0);
}

/* ---- many fibers -------------------------------------------------------- */

/* ThreadSanitizer counts each live fiber as a thread, 8128 at most. */
#if defined(__SANITIZE_THREAD__)
#define MANY 4000
#else
#define MANY 10000
#endif

static int64_t tiny(void *arg)
{
	int *count = arg;

	(*count)++;
	if (pw_fiber_yield())
		return -1;
	(*count)++;
	return 1;
}

static int64_t spawns_many(void *arg)
{
	int *count = arg;
	struct pw_join *j = malloc(MANY * sizeof(*j));
	int64_t sum = 0;

	if (!j)
		return -1;
	for (int i = 0; i < MANY; i++)
		if (pw_fiber_spawn(&j[i], tiny, count,
				   &(struct pw_fiber_opts){ .stack_size =
								    16384 }))
			return -2;
	for (int i = 0; i < MANY; i++)
		sum += pw_fiber_join(&j[i]);
	free(j);
	return sum;
}

Test(fiber, ten_thousand_fibers_finish_on_one_shard)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int count = 0;

	cr_assert_eq(run(rt, spawns_many, &count), MANY);
	cr_assert_eq(count, 2 * MANY);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- several workers ---------------------------------------------------- */

struct hopper {
	atomic_int done;
	atomic_int moves;
};

static int64_t hops(void *arg)
{
	struct hopper *h = arg;
	int64_t sum = 0;
	int last = pw_shard_id();

	for (int i = 0; i < 200; i++) {
		sum += i;
		if (pw_fiber_yield())
			return -1;
		/* Read again after every suspension: it may have moved. */
		int now = pw_shard_id();
		if (now != last)
			atomic_fetch_add_explicit(&h->moves, 1,
						  memory_order_relaxed);
		last = now;
	}
	/* relaxed: read after the joins, which order it. */
	atomic_fetch_add_explicit(&h->done, 1, memory_order_relaxed);
	return sum;
}

static int64_t spawns_hoppers(void *arg)
{
	struct pw_join j[64];
	int64_t sum = 0;

	for (int i = 0; i < 64; i++)
		if (PW_FIBER_SPAWN(&j[i], hops, arg))
			return -1;
	for (int i = 0; i < 64; i++)
		sum += pw_fiber_join(&j[i]);
	return sum;
}

Test(fiber, fibers_on_two_workers_all_finish)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct hopper h = { 0 };

	cr_assert_eq(run(rt, spawns_hoppers, &h), 64 * (199 * 200 / 2));
	cr_assert_eq(atomic_load(&h.done), 64);
	cr_log_info("moves: %d", atomic_load(&h.moves));
	/* Shard mode never moves a task; stealing mode may. */
	if (!pw_test_steal())
		cr_assert_eq(atomic_load(&h.moves), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}
