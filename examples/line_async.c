/* SPDX-License-Identifier: MIT */
/*
 * line_async.c - a line server: "PING" is answered "PONG", any other line
 * comes back upper-cased, a connection idle for 10 s is closed, SIGINT
 * stops the server. Written with the straight-line macros: PW_AWAIT is
 * Rust's .await (pinwheel/async.h, docs/async.md). line_poll.c and
 * line_fiber.c are the same server in the other styles; the Tokio one is
 * bench/peers/tokio/examples/line.rs.
 *
 * pw_serve() is the accept loop (an acceptor per shard, a task per
 * connection); pw_reader is the BufReader, pw_read_until_poll() its
 * read_until(b'\n'), whose deadline is the time::timeout around it.
 * Usage: line_async [PORT]   (127.0.0.1, 8080 without one)
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pinwheel.h>

#define IDLE (10 * PW_NSEC_PER_SEC)

/* The async block's state: what lives across an await lives here. */
struct conn {
	pw_async_t at; /* where the body resumes: 0 at first */
	int fd;
	int32_t res;
	pw_time_t idle;	     /* the read's deadline */
	int64_t n;	     /* the line's length */
	struct pw_reader rd; /* the BufReader over fd */
	struct pw_send tx;
	char line[1024]; /* a longer line ends the connection */
};

/* The reply to a line, in place: PING gets PONG, any other line comes
 * back upper-cased (its line ending kept as it came). */
static void reply(char *line, int64_t n)
{
	int64_t len = n - (n > 0 && line[n - 1] == '\n');

	len -= len > 0 && line[len - 1] == '\r';
	if (len == 4 && memcmp(line, "PING", 4) == 0)
		memcpy(line, "PONG", 4);
	for (int64_t i = 0; i < n; i++)
		line[i] = (char)toupper((unsigned char)line[i]);
}

static int conn_init(void *state, int fd, void *arg)
{
	struct conn *c = state;

	(void)arg;
	c->fd = fd;
	pw_reader_init(&c->rd, fd);
	pw_send_init(&c->tx, fd);
	return 0;
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct conn *c = state;

	PW_ASYNC_BEGIN(cx, &c->at);
	for (;;) { /* while let Ok(line) = timeout(IDLE, next_line()).await */
		c->idle = pw_time_now() + IDLE;
		PW_AWAIT(pw_read_until_poll(cx, &c->rd, '\n', c->line,
					    sizeof(c->line), c->idle, &c->n));
		if (c->n <= 0) /* end of stream, idle, too long, error */
			PW_RETURN(c->n);
		reply(c->line, c->n);
		PW_AWAIT(pw_send_poll(cx, &c->tx, c->line, (size_t)c->n,
				      PW_TIME_NEVER, &c->res));
		if (c->res < 0)
			PW_RETURN(c->res);
	}
	PW_ASYNC_END();
}

/* Drop: however the task ended, cancel what is in flight, close fd. */
static void conn_drop(void *state)
{
	struct conn *c = state;

	pw_reader_cancel(&c->rd);
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
		fprintf(stderr, "line: %s\n", strerror(-err));
		return 1;
	}
	/* select! against ctrl_c(): serve until SIGINT or SIGTERM, then
	 * give the connections 5 s to end (and abort the rest). */
	int64_t aborted = pw_server_run(rt, srv, 5 * PW_NSEC_PER_SEC);
	pw_runtime_destroy(rt);
	pw_server_destroy(srv);
	return aborted < 0;
}
