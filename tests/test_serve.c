/* SPDX-License-Identifier: MIT */
/*
 * test_serve.c - pinwheel/serve.h over loopback: an echo server in a few
 * lines (pw_serve(), a task per connection), the connection cap holding
 * the next client in the backlog until one leaves, the drain (stop,
 * exact counts, connections that finish by themselves, the deadline
 * aborting the rest at the exact virtual time, the listener closed), a
 * connection started by a callback and counted in the caller's drain,
 * a fiber per connection (lines upper-cased, then aborted by the drain
 * at its suspension point; nothing run on its stack below the returned
 * conn_fiber's frame), pw_server_run() stopping on signals, and bad
 * input.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"
#include "pinwheel/blocking.h"
#include "pinwheel/fiber.h"
#include "pinwheel/reader.h"
#include "pinwheel/serve.h"

/* ---- an echo connection: the state pw_serve() initialises from fd ---- */

enum { E_RECV, E_SEND, E_CLOSE };

struct econn {
	int fd;
	int step;
	bool have; /* buf is borrowed */
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close cl;
};

static _Atomic int drops;	    /* connection drop hooks run */
static _Atomic uint64_t drop_at[8]; /* pw_time_now() in each */

static int econn_init(void *state, int fd, void *arg)
{
	struct econn *c = state;

	(void)arg;
	c->fd = fd;
	pw_recv_init(&c->rx, fd);
	pw_send_init(&c->tx, fd);
	pw_close_init(&c->cl, fd);
	return 0;
}

static enum pw_poll econn_poll(struct pw_cx *cx, void *state)
{
	struct econn *c = state;
	int32_t res;

	for (;;) {
		if (c->step == E_RECV) {
			if (pw_recv_poll(cx, &c->rx, PW_TIME_NEVER, &c->buf,
					 &res) == PW_PENDING)
				return PW_PENDING;
			c->have = res > 0;
			c->step = res > 0 ? E_SEND : E_CLOSE;
		} else if (c->step == E_SEND) {
			if (pw_send_poll(cx, &c->tx, c->buf.data, c->buf.len,
					 PW_TIME_NEVER, &res) == PW_PENDING)
				return PW_PENDING;
			pw_net_buf_release(&c->buf);
			c->have = false;
			c->step = res < 0 ? E_CLOSE : E_RECV;
		} else {
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			return pw_ready(cx, 0);
		}
	}
}

static void econn_drop(void *state)
{
	struct econn *c = state;
	int i = atomic_fetch_add(&drops, 1);

	if (i < 8)
		atomic_store(&drop_at[i], pw_time_now());
	if (c->have)
		pw_net_buf_release(&c->buf);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	if (!pw_close_cancel(&c->cl))
		close(c->fd);
}

static struct pw_server *echo_serve(struct pw_runtime *rt, uint64_t max,
				    struct pw_net_addr *addr)
{
	struct pw_serve_opts o = {
		.max_conns = max,
		.conn_poll = econn_poll,
		.conn_size = sizeof(struct econn),
		.conn_init = econn_init,
		.conn_drop = econn_drop,
	};
	struct pw_server *srv = NULL;

	atomic_store(&drops, 0);
	cr_assert_eq(pw_net_addr_parse(&o.addr, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_serve(&srv, rt, &o), 0);
	cr_assert_eq(pw_server_addr(srv, addr), 0);
	return srv;
}

/* Send @n bytes of a pattern on @fd and read them back, exactly. */
static void echo_check(int fd, size_t n, unsigned seed)
{
	char out[4096], in[4096];
	size_t got = 0;

	cr_assert_leq(n, sizeof(out));
	for (size_t i = 0; i < n; i++)
		out[i] = (char)(seed * 31 + i * 7);
	cr_assert_eq(write(fd, out, n), (ssize_t)n);
	while (got < n) {
		cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000));
		ssize_t r = read(fd, in + got, n - got);
		cr_assert_gt(r, 0, "read: %zd", r);
		got += (size_t)r;
	}
	cr_assert_eq(memcmp(in, out, n), 0, "bytes intact");
}

/* A task that drains @d with a deadline @ns from now. */
struct waiter {
	struct pw_drain *d;
	uint64_t ns;
	pw_time_t t0, t1; /* when the wait started and ended */
	struct pw_drain_wait w;
};

static enum pw_poll waiter_poll(struct pw_cx *cx, void *state)
{
	struct waiter *w = state;
	int64_t aborted;

	if (!w->t0)
		w->t0 = pw_time_now() + 1; /* + 1: 0 is "not yet" */
	if (pw_drain_wait_poll(cx, w->d, &w->w, w->t0 - 1 + w->ns, &aborted) ==
	    PW_PENDING)
		return PW_PENDING;
	w->t1 = pw_time_now();
	return pw_ready(cx, aborted);
}

/* ---- the tests ------------------------------------------------------ */

Test(serve, echo_in_a_few_lines_byte_exact)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_net_listener_stats st;
	struct pw_net_addr a;
	struct pw_server *srv = echo_serve(rt, 0, &a);
	struct pw_drain *d = pw_server_drain(srv);
	int fds[8];

	for (int i = 0; i < 8; i++) {
		fds[i] = pw_test_dial(&a);
		cr_assert_geq(fds[i], 0);
	}
	for (int i = 0; i < 8; i++)
		echo_check(fds[i], 1000 + (size_t)i * 300, (unsigned)i);
	cr_assert_eq(pw_drain_live(d), 8);
	for (int i = 0; i < 8; i++)
		close(fds[i]);
	PW_TEST_WAIT_UNTIL(pw_drain_live(d) == 0, PW_TEST_WAIT_SECS,
			   "live %llu", (unsigned long long)pw_drain_live(d));
	cr_assert_eq(pw_drain_total(d), 8);
	cr_assert_eq(atomic_load(&drops), 8);
	cr_assert_eq(pw_server_stats(srv, &st), 0);
	cr_assert_eq(st.accepted, 8);

	struct waiter w = { .d = d, .ns = PW_NSEC_PER_SEC };
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), 0, "none aborted");
	cr_assert(pw_drain_stopping(d));
	/* The acceptors ended and the last one closed the listener. */
	PW_TEST_WAIT_UNTIL(pw_test_listening(&a) == 0, PW_TEST_WAIT_SECS,
			   "the listener is still open");
	cr_assert_eq(pw_test_dial(&a), -ECONNREFUSED);
	cr_assert_eq(pw_server_stats(srv, &st), 0);
	cr_assert_eq(st.accepted, 8, "counters kept after the close: %llu",
		     (unsigned long long)st.accepted);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
}

Test(serve, limit_holds_the_next_client_until_one_leaves)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_net_addr a;
	struct pw_server *srv = echo_serve(rt, 2, &a);
	struct pw_drain *d = pw_server_drain(srv);
	int c1 = pw_test_dial(&a), c2 = pw_test_dial(&a);
	char ch;

	cr_assert_geq(c1, 0);
	cr_assert_geq(c2, 0);
	echo_check(c1, 10, 1);
	echo_check(c2, 10, 2);
	cr_assert(pw_drain_full(d));
	/* The third waits in the kernel's backlog: connected, not served. */
	int c3 = pw_test_dial(&a);
	cr_assert_geq(c3, 0);
	cr_assert_eq(write(c3, "x", 1), 1);
	cr_assert_not(pw_test_readable(c3, 300), "served beyond the cap");
	cr_assert_eq(pw_drain_live(d), 2);
	cr_assert_eq(pw_drain_total(d), 2);
	close(c1);
	cr_assert(pw_test_readable(c3, PW_TEST_WAIT_SECS * 1000),
		  "not served once one left");
	cr_assert_eq(read(c3, &ch, 1), 1);
	cr_assert_eq(ch, 'x');
	cr_assert_eq(pw_drain_total(d), 3);
	cr_assert_eq(pw_drain_live(d), 2);
	echo_check(c2, 10, 3);
	close(c2);
	close(c3);
	PW_TEST_WAIT_UNTIL(pw_drain_live(d) == 0, PW_TEST_WAIT_SECS,
			   "live %llu", (unsigned long long)pw_drain_live(d));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
}

/* Close the clients after a while, from another thread. */
struct closer {
	int *fds;
	int n;
};

static void *closer_main(void *arg)
{
	struct closer *c = arg;
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	nanosleep(&ts, NULL); /* the drain is waiting by then, or soon */
	for (int i = 0; i < c->n; i++)
		close(c->fds[i]);
	return NULL;
}

Test(serve, drain_waits_for_connections_that_finish)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_net_addr a;
	struct pw_server *srv = echo_serve(rt, 0, &a);
	struct pw_drain *d = pw_server_drain(srv);
	int fds[3];
	pthread_t th;

	for (int i = 0; i < 3; i++) {
		fds[i] = pw_test_dial(&a);
		cr_assert_geq(fds[i], 0);
		echo_check(fds[i], 100, (unsigned)i);
	}
	struct closer c = { fds, 3 };
	cr_assert_eq(pthread_create(&th, NULL, closer_main, &c), 0);
	struct waiter w = { .d = d, .ns = 60 * PW_NSEC_PER_SEC };
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), 0,
		     "they all finished by themselves");
	pthread_join(th, NULL);
	cr_assert_eq(pw_drain_live(d), 0);
	cr_assert_eq(pw_drain_total(d), 3);
	cr_assert_eq(atomic_load(&drops), 3);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
}

Test(serve, drain_deadline_aborts_the_rest_at_the_exact_time)
{
	struct pw_runtime *rt = pw_test_paused_runtime(2);
	struct pw_net_addr a;
	struct pw_server *srv = echo_serve(rt, 0, &a);
	struct pw_drain *d = pw_server_drain(srv);
	int fds[3];
	char ch;

	for (int i = 0; i < 3; i++) {
		fds[i] = pw_test_dial(&a);
		cr_assert_geq(fds[i], 0);
		echo_check(fds[i], 100, (unsigned)i);
	}
	struct waiter w = { .d = d, .ns = 100 * PW_NSEC_PER_MSEC };
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), 3, "3 aborted");
	cr_assert_eq(w.t1, w.t0 - 1 + 100 * PW_NSEC_PER_MSEC,
		     "ended at %llu, started at %llu", (unsigned long long)w.t1,
		     (unsigned long long)(w.t0 - 1));
	cr_assert_eq(atomic_load(&drops), 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(atomic_load(&drop_at[i]), w.t1,
			     "connection %d dropped at %llu", i,
			     (unsigned long long)atomic_load(&drop_at[i]));
		/* Its socket was closed: the client sees the end. */
		cr_assert(pw_test_readable(fds[i], PW_TEST_WAIT_SECS * 1000));
		cr_assert_leq(read(fds[i], &ch, 1), 0);
		close(fds[i]);
	}
	cr_assert_eq(pw_drain_live(d), 0);
	cr_assert_eq(pw_drain_total(d), 3);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
}

/* ---- a fiber per connection ------------------------------------------ */

static _Atomic int fiber_ends;	      /* conn_fiber returned */
static _Atomic int64_t fiber_last_rc; /* its last read's result */

/* Each line back upper-cased, until the stream ends or a read fails. */
static int64_t upper_lines(int fd, void *arg)
{
	struct pw_reader rd;
	struct pw_send tx;
	char line[64];
	int64_t n;

	(void)arg;
	pw_reader_init(&rd, fd);
	pw_send_init(&tx, fd);
	while ((n = pw_fiber_read_until(&rd, '\n', line, sizeof(line))) > 0) {
		for (int64_t i = 0; i < n; i++)
			if (line[i] >= 'a' && line[i] <= 'z')
				line[i] = (char)(line[i] - 'a' + 'A');
		if (pw_fiber_send(&tx, line, (size_t)n) < 0)
			break;
	}
	pw_reader_cancel(&rd);
	atomic_store(&fiber_last_rc, n);
	atomic_fetch_add(&fiber_ends, 1);
	return 0;
}

/* Two clients get their lines back; then, idle, the drain's deadline
 * aborts both fibers in their reads: -ECANCELED, their cleanup runs, the
 * sockets are closed, at exactly the deadline. */
Test(serve, a_fiber_per_connection_and_the_drain_aborts_it)
{
	struct pw_runtime *rt = pw_test_paused_runtime(2);
	struct pw_serve_opts o = { .conn_fiber = upper_lines };
	struct pw_server *srv = NULL;
	struct pw_net_addr a;
	char buf[32], ch;
	int fds[2];

	cr_assert_eq(pw_net_addr_parse(&o.addr, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_serve(&srv, rt, &o), 0);
	cr_assert_eq(pw_server_addr(srv, &a), 0);
	for (int i = 0; i < 2; i++) {
		fds[i] = pw_test_dial(&a);
		cr_assert_geq(fds[i], 0);
		cr_assert_eq(write(fds[i], "ping\nMixed ", 11), 11);
		cr_assert_eq(write(fds[i], "case\n", 5), 5);
		size_t got = 0;
		while (got < 16) {
			cr_assert(pw_test_readable(fds[i],
						   PW_TEST_WAIT_SECS * 1000));
			ssize_t r = read(fds[i], buf + got, 16 - got);
			cr_assert_gt(r, 0);
			got += (size_t)r;
		}
		cr_assert_eq(memcmp(buf, "PING\nMIXED CASE\n", 16), 0);
	}
	struct pw_drain *d = pw_server_drain(srv);
	cr_assert_eq(pw_drain_live(d), 2);
	struct waiter w = { .d = d, .ns = 250 * PW_NSEC_PER_MSEC };
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), 2, "2 aborted");
	cr_assert_eq(w.t1, w.t0 - 1 + 250 * PW_NSEC_PER_MSEC);
	cr_assert_eq(atomic_load(&fiber_ends), 2, "both cleanups ran");
	cr_assert_eq(atomic_load(&fiber_last_rc), -ECANCELED);
	cr_assert_eq(pw_drain_live(d), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert(pw_test_readable(fds[i], PW_TEST_WAIT_SECS * 1000));
		cr_assert_eq(read(fds[i], &ch, 1), 0, "closed by the server");
		close(fds[i]);
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
}

/* ---- the stack below a fiber connection that returned ------------------ */

/* The conn_fiber's frame, filled with a pattern, is read back by a
 * blocking job once the client saw its socket closed. The job pins the
 * fiber's task, so the stack stays the fiber's until the job is done. */
#define FRAME_LEN  512
#define FRAME_BYTE 0xa5
static volatile unsigned char *frame_at;
static _Atomic bool frame_eof;	 /* the client read the end */
static _Atomic int frame_intact; /* 0: not checked, 1: intact, -1: not */
static struct pw_blocking frame_job;

static int64_t frame_check(void *arg)
{
	uint64_t until = pw_test_now_ns() + PW_TEST_WAIT_SECS * PW_NSEC_PER_SEC;
	int ok = 1;

	(void)arg;
	while (!atomic_load(&frame_eof) && pw_test_now_ns() < until)
		sched_yield();
	for (int i = 0; i < FRAME_LEN; i++)
		if (frame_at[i] != FRAME_BYTE)
			ok = -1;
	atomic_store(&frame_intact, ok);
	return 0;
}

/* Fills its frame, leaves a job reading it, and returns: like a leaf in
 * flight, what its frame holds must stay as it is until the job ends. */
static int64_t frame_leave(int fd, void *arg)
{
	volatile unsigned char frame[FRAME_LEN];

	(void)fd;
	(void)arg;
	for (int i = 0; i < FRAME_LEN; i++)
		frame[i] = FRAME_BYTE;
	frame_at = frame;
	if (pw_spawn_blocking(&frame_job, frame_check, NULL))
		atomic_store(&frame_intact, -2);
	return 0;
}

/* Nothing runs on a connection fiber's stack below the frame of the
 * conn_fiber that returned, where a leaf may wait for its final
 * completion (a receive the drain cancelled): the socket's close ran
 * there (its frames, a lazy binding of close() saving the vector
 * registers), and the receive's completion read a task pointer out of
 * whatever it wrote. */
Test(serve, nothing_runs_below_a_returned_conn_fiber)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_serve_opts o = { .conn_fiber = frame_leave };
	struct pw_server *srv = NULL;
	struct pw_net_addr a;
	char ch;

	cr_assert_eq(pw_net_addr_parse(&o.addr, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_serve(&srv, rt, &o), 0);
	cr_assert_eq(pw_server_addr(srv, &a), 0);
	struct pw_drain *d = pw_server_drain(srv);
	int fd = pw_test_dial(&a);
	cr_assert_geq(fd, 0);
	cr_assert(pw_test_readable(fd, PW_TEST_WAIT_SECS * 1000));
	cr_assert_eq(read(fd, &ch, 1), 0, "closed by the server");
	close(fd);
	atomic_store(&frame_eof, true);
	PW_TEST_WAIT_UNTIL(atomic_load(&frame_intact) != 0, PW_TEST_WAIT_SECS,
			   "the job did not check");
	cr_assert_eq(atomic_load(&frame_intact), 1,
		     "the returned frame was written (%d)",
		     atomic_load(&frame_intact));
	PW_TEST_WAIT_UNTIL(pw_drain_live(d) == 0, PW_TEST_WAIT_SECS,
			   "the connection is still counted");
	cr_assert_eq(pw_drain_total(d), 1);
	struct waiter w = { .d = d, .ns = PW_NSEC_PER_SEC };
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), 0, "none aborted");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
}

/* ---- pw_server_run(): the end of a server's main ---------------------- */

struct stopper {
	struct pw_drain *d;
	int fds[2];
	bool second;  /* a second signal instead of the clients leaving */
	int64_t live; /* live connections when the first signal was read */
};

/* Once both clients are served, SIGINT; once the drain began, either a
 * second SIGINT or the clients close. (SIGTERM is left out: the test
 * runner's own threads handle it.) */
static void *stopper_main(void *arg)
{
	struct stopper *st = arg;

	PW_TEST_WAIT_UNTIL(pw_drain_live(st->d) == 2, PW_TEST_WAIT_SECS,
			   "clients not counted");
	cr_assert_eq(kill(getpid(), SIGINT), 0);
	PW_TEST_WAIT_UNTIL(pw_drain_stopping(st->d), PW_TEST_WAIT_SECS,
			   "the first signal was not read");
	st->live = (int64_t)pw_drain_live(st->d);
	if (st->second) {
		cr_assert_eq(kill(getpid(), SIGINT), 0);
	} else {
		for (int i = 0; i < 2; i++)
			close(st->fds[i]);
	}
	return NULL;
}

/* Serve two clients until the signals, with a grace of an hour: the
 * clients leave (0 aborted) or a second signal aborts both at once. */
static void run_until_signals(bool second)
{
	cr_assert_eq(pw_server_signals_block(), 0);
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_net_addr a;
	struct pw_server *srv = echo_serve(rt, 0, &a);
	struct stopper st = { .d = pw_server_drain(srv), .second = second };
	pthread_t th;
	char ch;

	for (int i = 0; i < 2; i++) {
		st.fds[i] = pw_test_dial(&a);
		cr_assert_geq(st.fds[i], 0);
		echo_check(st.fds[i], 64, (unsigned)i);
	}
	cr_assert_eq(pthread_create(&th, NULL, stopper_main, &st), 0);
	int64_t aborted = pw_server_run(rt, srv, 3600 * PW_NSEC_PER_SEC);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(st.live, 2, "both live when the drain began");
	cr_assert_eq(aborted, second ? 2 : 0);
	cr_assert_eq(atomic_load(&drops), 2);
	cr_assert_eq(pw_drain_live(st.d), 0);
	/* The listener is closed: a new client is refused. */
	cr_assert_lt(pw_test_dial(&a), 0);
	if (second) {
		for (int i = 0; i < 2; i++) {
			cr_assert(pw_test_readable(st.fds[i],
						   PW_TEST_WAIT_SECS * 1000));
			cr_assert_leq(read(st.fds[i], &ch, 1), 0);
			close(st.fds[i]);
		}
	}
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
}

Test(serve, run_drains_on_a_signal_until_the_clients_leave)
{
	run_until_signals(false);
}

Test(serve, run_aborts_at_once_on_a_second_signal)
{
	run_until_signals(true);
}

Test(serve, run_bad_input)
{
	cr_assert_eq(pw_server_run(NULL, NULL, 0), -EINVAL);
}

/* ---- a connection started by a callback, counted by hand ------------ */

static struct pw_drain own_drain;
static _Atomic int started;

struct hconn {
	struct econn e;
	struct pw_drain_token tok;
};

static enum pw_poll hconn_poll(struct pw_cx *cx, void *state)
{
	struct hconn *h = state;

	if (pw_drain_watch(cx, &own_drain, &h->tok))
		return pw_ready(cx, -ECANCELED);
	return econn_poll(cx, &h->e);
}

static void hconn_drop(void *state)
{
	struct hconn *h = state;

	econn_drop(&h->e);
	pw_drain_done(&own_drain, &h->tok);
}

/* What a fiber spawner would do: start the connection its own way. */
static int hconn_start(void *arg, int fd)
{
	struct hconn h;
	int err;

	(void)arg;
	memset(&h, 0, sizeof(h));
	econn_init(&h.e, fd, NULL);
	pw_drain_add(&own_drain, &h.tok);
	err = pw_spawn(NULL, hconn_poll, &h, sizeof(h), hconn_drop);
	if (err)
		pw_drain_done(&own_drain, &h.tok);
	atomic_fetch_add(&started, 1);
	return err;
}

Test(serve, start_callback_counts_in_the_callers_drain)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_serve_opts o = { .start = hconn_start, .drain = &own_drain };
	struct pw_server *srv;
	struct pw_net_addr a;

	atomic_store(&drops, 0);
	cr_assert_eq(pw_drain_init(&own_drain, 0), 0);
	cr_assert_eq(pw_net_addr_parse(&o.addr, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_serve(&srv, rt, &o), 0);
	cr_assert_eq(pw_server_drain(srv), &own_drain);
	cr_assert_eq(pw_server_addr(srv, &a), 0);
	int fd = pw_test_dial(&a);
	cr_assert_geq(fd, 0);
	echo_check(fd, 500, 9);
	cr_assert_eq(atomic_load(&started), 1);
	cr_assert_eq(pw_drain_live(&own_drain), 1);
	close(fd);
	PW_TEST_WAIT_UNTIL(pw_drain_live(&own_drain) == 0, PW_TEST_WAIT_SECS,
			   "live %llu",
			   (unsigned long long)pw_drain_live(&own_drain));
	struct waiter w = { .d = &own_drain, .ns = PW_NSEC_PER_SEC };
	cr_assert_eq(pw_test_block_on(rt, waiter_poll, &w), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_server_destroy(srv), 0);
	pw_drain_destroy(&own_drain);
}

/* ---- bad input ------------------------------------------------------- */

static enum pw_poll bad_loop_poll(struct pw_cx *cx, void *state)
{
	struct pw_accept_loop loop = { 0 };

	(void)state;
	cr_assert_eq(pw_accept_loop_poll(cx, NULL, &loop), PW_READY);
	cr_assert_eq(cx->result, -EINVAL);
	return pw_ready(cx, 7);
}

Test(serve, bad_input)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_serve_opts o = { 0 };
	struct pw_server *srv = NULL;

	cr_assert_eq(pw_net_addr_parse(&o.addr, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_serve(&srv, rt, &o), -EINVAL, "neither");
	o.conn_poll = econn_poll;
	o.start = hconn_start;
	cr_assert_eq(pw_serve(&srv, rt, &o), -EINVAL, "both");
	o.start = NULL;
	cr_assert_eq(pw_serve(&srv, rt, &o), -EINVAL, "no conn_init");
	o.conn_init = econn_init;
	o.conn_size = PW_SERVE_CONN_MAX + 1;
	cr_assert_eq(pw_serve(&srv, rt, &o), -EINVAL, "too large");
	o.conn_size = 0;
	o.conn_fiber = upper_lines;
	cr_assert_eq(pw_serve(&srv, rt, &o), -EINVAL, "conn_poll and fiber");
	o.conn_poll = NULL;
	o.fiber_stack = PW_FIBER_STACK_MAX + 1;
	cr_assert_eq(pw_serve(&srv, rt, &o), -EINVAL, "fiber stack");
	cr_assert_eq(pw_serve(NULL, rt, &o), -EINVAL);
	cr_assert_eq(pw_serve(&srv, NULL, &o), -EINVAL);
	cr_assert_null(srv, "untouched");
	cr_assert_eq(pw_test_block_on(rt, bad_loop_poll, NULL), 7);
	cr_assert_eq(pw_drain_init(NULL, 0), -EINVAL);
	cr_assert_eq(pw_drain_stop(NULL), -EINVAL);
	cr_assert_eq(pw_drain_live(NULL), 0);
	cr_assert_not(pw_drain_full(NULL));
	cr_assert_null(pw_server_drain(NULL));
	cr_assert_eq(pw_server_destroy(NULL), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}
