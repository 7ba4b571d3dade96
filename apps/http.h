/* SPDX-License-Identifier: MIT */
/*
 * http.h - the server behind `pinwheel http`: a fixed-body HTTP/1.1
 * keep-alive responder (internal to the pinwheel command; the tests
 * drive it in-process).
 *
 * A server runs on a runtime the caller created: one acceptor task per
 * shard and one task per connection on the shard that accepted it. Each
 * received buffer is parsed whole (pipelined requests included) and every
 * response it calls for goes out in one send, copied from the shard's
 * canned responses: nothing is allocated per request.
 *
 * Scenario options make each request cost something before it is
 * answered, for comparing the schedulers: CPU work in a child task
 * (joined), a call to every shard (gathered), an idle timeout per
 * connection (reset by every request), and accepting on fewer shards
 * than run (so that the load starts skewed).
 *
 * Stopping: pw_http_server_drain() stops the acceptors and asks every
 * connection to finish: an idle one closes at once, one in the middle of
 * a request answers it with "Connection: close" and closes. The caller
 * waits for pw_http_server_open() to reach 0 (or its own deadline), then
 * destroys the runtime (which drops what is left) and the server.
 */
#ifndef PW_APPS_HTTP_H
#define PW_APPS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel/net.h"
#include "pinwheel/runtime.h"

/* The default body: 13 bytes. */
#define PW_HTTP_BODY_DEFAULT "Hello, world!"
/* The longest body a server serves (the canned responses' limit). */
#define PW_HTTP_BODY_MAX 256

/* Server options; zero fields take the defaults. */
struct pw_http_opts {
	const char *body;      /* NULL: PW_HTTP_BODY_DEFAULT; must outlive the
			     server */
	size_t body_len;       /* bytes of body (ignored when body is NULL) */
	size_t head_max;       /* cap on a request head, 64..1 MiB; 0: 8 KiB */
	uint32_t listen_flags; /* PW_NET_LISTEN_* */
	/* Per request, before the response: spawn a child task running
	 * @work iterations of unfoldable arithmetic and join it (0: none). */
	uint64_t work;
	/* Per request, before the response: pw_call() every shard and
	 * gather the answers. */
	bool fanout;
	/* Close a connection that completes no request for this long; every
	 * request resets it (0: no timeout). */
	uint64_t timeout_ns;
	/* Only shards 0..accept_shards-1 accept (0: all). Fewer than all
	 * makes the listener one shared socket. */
	unsigned accept_shards;
};

/* Counters of one shard, summed over the connections it served. */
struct pw_http_stats {
	uint64_t accepted; /* connections taken by the shard's acceptor */
	uint64_t requests; /* requests answered with 200 */
	uint64_t errors;   /* requests refused (400, 414, 431, 505) */
	uint64_t closed;   /* connections finished */
	uint64_t work;	   /* --work child tasks this shard ran */
	uint64_t calls;	   /* --fanout calls this shard answered */
	uint64_t timeouts; /* connections closed by the idle timeout */
	uint64_t reads;	   /* buffers of request bytes received */
};

struct pw_http_server;

/**
 * pw_http_server_start - listen on @addr and serve on every shard of @rt.
 * @o may be NULL for the defaults. Under the stealing scheduler the
 * listener always uses one shared socket (acceptors may move between
 * workers before they first run, so per-worker sockets could be left
 * without an acceptor).
 * Return: 0 with *@sp set; -EINVAL for NULL arguments or a bad option
 * (accept_shards over the runtime's shard count included);
 * -EMSGSIZE for a body over PW_HTTP_BODY_MAX bytes; -ENOMEM; the error of
 * pw_net_listener_create() (e.g. -EADDRINUSE) or pw_runtime_spawn().
 * Nothing is left running or open on error.
 * Context: any thread that is not a shard of @rt.
 */
int pw_http_server_start(struct pw_http_server **sp, struct pw_runtime *rt,
			 const struct pw_net_addr *addr,
			 const struct pw_http_opts *o);

/**
 * pw_http_server_addr - the address the server listens on (with the
 * port chosen). Return: 0; -EINVAL for NULL. Context: any thread.
 */
int pw_http_server_addr(const struct pw_http_server *s,
			struct pw_net_addr *out);

/**
 * pw_http_server_drain - stop accepting and ask every connection to
 * finish (see above). Calling it again does nothing.
 * Return: 0; -EINVAL for NULL.
 * Context: any thread that is not a shard of the server's runtime.
 */
int pw_http_server_drain(struct pw_http_server *s);

/**
 * pw_http_server_open - connections whose tasks are still alive.
 * Return: the count; -EINVAL for NULL. Context: any thread.
 */
int pw_http_server_open(struct pw_http_server *s);

/**
 * pw_http_server_stats - shard @shard's counters (updated by the shard
 * as it goes; they may lag by a request).
 * Return: 0; -EINVAL for NULL; -ENODEV for a shard out of range.
 * Context: any thread.
 */
int pw_http_server_stats(const struct pw_http_server *s, unsigned shard,
			 struct pw_http_stats *out);

/**
 * pw_http_server_destroy - close the listener and free @s. Call it after
 * pw_runtime_destroy() of the server's runtime, when no task of the
 * server is left.
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
int pw_http_server_destroy(struct pw_http_server *s);

#endif /* PW_APPS_HTTP_H */
