/* SPDX-License-Identifier: MIT */
/*
 * echo_poll.c - a TCP echo server, a task per connection, written as a
 * plain poll function: Rust's Future::poll by hand, a state machine
 * whose step says which await it is in (docs/task.md). echo_async.c and
 * echo_fiber.c are the same server in the other styles; the Tokio one is
 * bench/peers/tokio/examples/echo.rs (io::copy in a spawned task).
 *
 * pw_serve() is the accept loop: one listener and one acceptor per shard,
 * a task per connection whose state conn_init() sets up from the socket.
 * pw_server_run() is the select! against ctrl_c(): it serves until SIGINT
 * or SIGTERM, then waits a grace period for the connections to end.
 * Usage: echo_poll [PORT]   (127.0.0.1, 8080 without one)
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pinwheel.h>

/* The spawned future's state: pw_serve() copies it into the task. */
struct conn {
	int fd;
	bool sending;	       /* the await we are in: read or write_all */
	struct pw_recv rx;     /* a multishot receive on fd */
	struct pw_send tx;     /* a send of one buffer, in full */
	struct pw_net_buf buf; /* a chunk received, lent by the shard */
};

static int conn_init(void *state, int fd, void *arg)
{
	struct conn *c = state;

	(void)arg;
	c->fd = fd;
	pw_recv_init(&c->rx, fd);
	pw_send_init(&c->tx, fd);
	return 0;
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct conn *c = state;
	int32_t n;

	for (;;) {
		if (!c->sending) { /* let n = rd.read(&mut buf).await? */
			if (pw_recv_poll(cx, &c->rx, PW_TIME_NEVER, &c->buf,
					 &n) == PW_PENDING)
				return PW_PENDING;
			if (n <= 0) /* end of stream (0) or an error */
				return pw_ready(cx, n);
			c->sending = true;
		}
		/* wr.write_all(&buf[..n]).await?: the chunk goes back as is */
		if (pw_send_poll(cx, &c->tx, c->buf.data, c->buf.len,
				 PW_TIME_NEVER, &n) == PW_PENDING)
			return PW_PENDING;
		pw_net_buf_release(&c->buf);
		c->sending = false;
		if (n < 0)
			return pw_ready(cx, n);
	}
}

/* Drop: however the task ended, cancel what is in flight, close fd. */
static void conn_drop(void *state)
{
	struct conn *c = state;

	if (c->sending)
		pw_net_buf_release(&c->buf);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	close(c->fd);
}

int main(int argc, char **argv)
{
	struct pw_serve_opts o = { .conn_poll = conn_poll,
				   .conn_size = sizeof(struct conn),
				   .conn_init = conn_init,
				   .conn_drop = conn_drop };
	struct pw_runtime *rt = NULL;
	struct pw_server *srv = NULL;
	char addr[64];
	int err;

	snprintf(addr, sizeof(addr), "127.0.0.1:%s",
		 argc > 1 ? argv[1] : "8080");
	err = pw_net_addr_parse(&o.addr, addr);
	if (!err) /* before the shards start: they inherit the mask */
		err = pw_server_signals_block();
	if (!err) /* #[tokio::main]: a shard per core */
		err = pw_runtime_create(&rt, NULL);
	if (!err) /* TcpListener::bind + the accept loop, on every shard */
		err = pw_serve(&srv, rt, &o);
	if (err) {
		fprintf(stderr, "echo: %s\n", strerror(-err));
		return 1;
	}
	/* select! against ctrl_c(): serve until SIGINT or SIGTERM, then
	 * give the connections 5 s to end (and abort the rest). */
	int64_t aborted = pw_server_run(rt, srv, 5 * PW_NSEC_PER_SEC);
	pw_runtime_destroy(rt);
	pw_server_destroy(srv);
	return aborted < 0;
}
