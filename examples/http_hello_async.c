/* SPDX-License-Identifier: MIT */
/*
 * http_hello_async.c - an HTTP/1.1 server that answers every request
 * "Hello, world!" and keeps the connection alive for the next; SIGINT
 * stops it. Written with the straight-line macros: PW_AWAIT is Rust's
 * .await (pinwheel/async.h, docs/async.md). http_hello_poll.c and
 * http_hello_fiber.c are the same server in the other styles; the Tokio
 * one is bench/peers/tokio/examples/http_hello.rs.
 *
 * No HTTP library, as in the Rust: the request head is read a line at a
 * time (pw_read_until_poll(), BufReader::read_line) up to the empty one,
 * and the answer is one constant buffer.
 * Usage: http_hello_async [PORT]   (127.0.0.1, 8080 without one)
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pinwheel.h>

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
			       "Content-Length: 13\r\n\r\nHello, world!";

/* The async block's state: what lives across an await lives here. */
struct conn {
	pw_async_t at; /* where the body resumes: 0 at first */
	int fd;
	int32_t res;
	int64_t n;	     /* the line's length */
	struct pw_reader rd; /* the BufReader over fd */
	struct pw_send tx;
	char line[1024]; /* a longer head line ends the connection */
};

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
	for (;;) {
		do { /* the request head: lines up to the empty one */
			PW_AWAIT(pw_read_until_poll(cx, &c->rd, '\n', c->line,
						    sizeof(c->line),
						    PW_TIME_NEVER, &c->n));
			if (c->n <= 0) /* end of stream, too long, error */
				PW_RETURN(c->n);
		} while (c->n != 2 || c->line[0] != '\r');
		PW_AWAIT(pw_send_poll(cx, &c->tx, RESPONSE,
				      sizeof(RESPONSE) - 1, PW_TIME_NEVER,
				      &c->res));
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
		fprintf(stderr, "http_hello: %s\n", strerror(-err));
		return 1;
	}
	/* select! against ctrl_c(): serve until SIGINT or SIGTERM, then
	 * give the connections 5 s to end (and abort the rest). */
	int64_t aborted = pw_server_run(rt, srv, 5 * PW_NSEC_PER_SEC);
	pw_runtime_destroy(rt);
	pw_server_destroy(srv);
	return aborted < 0;
}
