/* SPDX-License-Identifier: MIT */
/*
 * http_hello_fiber.c - an HTTP/1.1 server that answers every request
 * "Hello, world!" and keeps the connection alive for the next; SIGINT
 * stops it. A fiber per connection: a plain C function on its own stack
 * whose blocking-style calls suspend only the fiber (pinwheel/fiber.h,
 * docs/fiber.md). http_hello_poll.c and http_hello_async.c are the same
 * server as poll functions; the Tokio one is
 * bench/peers/tokio/examples/http_hello.rs.
 *
 * No HTTP library, as in the Rust: the request head is read a line at a
 * time (pw_fiber_read_until(), BufReader::read_line) up to the empty one,
 * and the answer is one constant buffer.
 * Usage: http_hello_fiber [PORT]   (127.0.0.1, 8080 without one)
 */
#include <stdio.h>
#include <string.h>

#include <pinwheel.h>

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
			       "Content-Length: 13\r\n\r\nHello, world!";

/* The spawned task: serve(socket).await */
static int64_t conn(int fd, void *arg)
{
	struct pw_reader rd; /* the BufReader over fd */
	struct pw_send tx;
	char line[1024]; /* a longer head line ends the connection */
	int64_t n;

	(void)arg;
	pw_reader_init(&rd, fd);
	pw_send_init(&tx, fd);
	for (;;) {
		do { /* the request head: lines up to the empty one */
			n = pw_fiber_read_until(&rd, '\n', line, sizeof(line));
		} while (n > 0 && (n != 2 || line[0] != '\r'));
		if (n <= 0) /* end of stream, too long, error */
			break;
		n = pw_fiber_send(&tx, RESPONSE, sizeof(RESPONSE) - 1);
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
