/* SPDX-License-Identifier: MIT */
/*
 * echo_fiber.c - a TCP echo server, a fiber per connection: a plain C
 * function on its own stack whose blocking-style calls suspend only the
 * fiber (pinwheel/fiber.h, docs/fiber.md), so it reads as the Rust's
 * async block does. echo_poll.c and echo_async.c are the same server as
 * poll functions; the Tokio one is bench/peers/tokio/examples/echo.rs
 * (io::copy in a spawned task).
 *
 * pw_serve() is the accept loop: one listener and one acceptor per shard,
 * a fiber per connection, counted in the server's drain; the socket is
 * closed once the fiber returns. pw_server_run() is the select! against
 * ctrl_c(): it serves until SIGINT or SIGTERM, then waits a grace period
 * for the connections to end and cancels the rest (their blocked call
 * returns -ECANCELED).
 * Usage: echo_fiber [PORT]   (127.0.0.1, 8080 without one)
 */
#include <stdio.h>
#include <string.h>

#include <pinwheel.h>

/* The spawned task: io::copy(&mut rd, &mut wr).await */
static int64_t conn(int fd, void *arg)
{
	struct pw_recv rx; /* a multishot receive on fd */
	struct pw_send tx; /* a send of one buffer, in full */
	char buf[4096];
	int64_t n;

	(void)arg;
	pw_recv_init(&rx, fd);
	pw_send_init(&tx, fd);
	while ((n = pw_fiber_recv(&rx, buf, sizeof(buf))) > 0)
		if ((n = pw_fiber_send(&tx, buf, (size_t)n)) < 0)
			break;
	pw_recv_cancel(&rx); /* it stays armed between calls */
	return n;	     /* 0 at the end of the stream, or -errno */
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
