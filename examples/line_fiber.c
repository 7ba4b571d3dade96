/* SPDX-License-Identifier: MIT */
/*
 * line_fiber.c - a line server: "PING" is answered "PONG", any other line
 * comes back upper-cased, a connection idle for 10 s is closed, SIGINT
 * stops the server. A fiber per connection: a plain C function on its
 * own stack whose blocking-style calls suspend only the fiber
 * (pinwheel/fiber.h, docs/fiber.md). line_poll.c and line_async.c are
 * the same server as poll functions; the Tokio one is
 * bench/peers/tokio/examples/line.rs.
 *
 * pw_serve() is the accept loop (an acceptor per shard, a fiber per
 * connection, its socket closed once it returns); pw_reader is the
 * BufReader, pw_fiber_read_until() its read_until(b'\n'), and the
 * fiber's deadline (pw_fiber_timeout()) the time::timeout around it.
 * Usage: line_fiber [PORT]   (127.0.0.1, 8080 without one)
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <pinwheel.h>

#define IDLE (10 * PW_NSEC_PER_SEC)

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

/* The spawned task: serve(socket).await */
static int64_t conn(int fd, void *arg)
{
	struct pw_reader rd; /* the BufReader over fd */
	struct pw_send tx;
	char line[1024]; /* a longer line ends the connection */
	int64_t n;

	(void)arg;
	pw_reader_init(&rd, fd);
	pw_send_init(&tx, fd);
	for (;;) {
		/* timeout(IDLE, lines.next_line()): every call from here on
		 * fails with -ETIMEDOUT once the deadline passes */
		pw_fiber_timeout(IDLE);
		n = pw_fiber_read_until(&rd, '\n', line, sizeof(line));
		if (n <= 0) /* end of stream, idle, too long, error */
			break;
		reply(line, n);
		n = pw_fiber_send(&tx, line, (size_t)n);
		if (n < 0)
			break;
	}
	pw_reader_cancel(&rd); /* its receive stays armed between calls */
	return n;
}

int main(int argc, char **argv)
{
	struct pw_serve_opts o = { .conn_fiber = conn };
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
