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
 * Limits hold it under hostile clients, each off when 0 (the command's
 * defaults, nginx's, are the PW_HTTP_*_DEFAULT values): a timeout on
 * every state a connection waits in (a request head, the keep-alive
 * wait between requests, a send the client does not take), a cap on
 * connections per shard (the excess waits in the kernel's backlog), on
 * requests per connection and on a request's body. A connection waiting
 * on its send keeps no buffer of the shard's receive ring.
 *
 * Scenario options make each request cost something before it is
 * answered, for comparing the schedulers: CPU work in a child task
 * (joined), a call to every shard (gathered), and accepting on fewer
 * shards than run (so that the load starts skewed).
 *
 * Files: with a root (pw_http_opts.root) the server answers GET and HEAD
 * with the files beneath it instead of the fixed body (http_static.h).
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

/* The command's defaults of the limits (nginx's, but for the send
 * buffer, which nginx leaves to the kernel). */
#define PW_HTTP_HEAD_TIMEOUT_DEFAULT (60 * PW_NSEC_PER_SEC)
#define PW_HTTP_KEEPALIVE_DEFAULT    (75 * PW_NSEC_PER_SEC)
#define PW_HTTP_SEND_TIMEOUT_DEFAULT (60 * PW_NSEC_PER_SEC)
#define PW_HTTP_MAX_REQUESTS_DEFAULT 1000
#define PW_HTTP_MAX_BODY_DEFAULT     (1u << 20)
#define PW_HTTP_SNDBUF_DEFAULT	     (16u << 10)

/* Server options; zero fields take the defaults, and a limit of 0 is
 * off (the PW_HTTP_*_DEFAULT values are the command's, not these). */
struct pw_http_opts {
	const char *body;      /* NULL: PW_HTTP_BODY_DEFAULT; must outlive the
			     server */
	size_t body_len;       /* bytes of body (ignored when body is NULL) */
	size_t head_max;       /* cap on a request head, 64..1 MiB; 0: 8 KiB */
	uint32_t listen_flags; /* PW_NET_LISTEN_* */
	/* Listen on these sockets, already bound and listening (another
	 * process's, --takeover), instead of binding the address: the
	 * server then owns them (pw_net_listener_adopt()). nadopt 0: bind. */
	const int *adopt;
	unsigned nadopt;
	/* Per request, before the response: spawn a child task running
	 * @work iterations of unfoldable arithmetic and join it (0: none). */
	uint64_t work;
	/* Per request, before the response: pw_call() every shard and
	 * gather the answers. */
	bool fanout;
	/* Only shards 0..accept_shards-1 accept (0: all). Fewer than all
	 * makes the listener one shared socket. */
	unsigned accept_shards;
	/* Keep-alive: close a connection waiting to receive that has
	 * completed no request (nor sent a response) for this long. */
	uint64_t keepalive_ns;
	/* A request whose head (or body, between two reads) is not whole
	 * this long after its first byte gets 408 and the connection
	 * closes. */
	uint64_t head_timeout_ns;
	/* A send that moves no byte for this long: the connection is
	 * closed with a reset. */
	uint64_t send_timeout_ns;
	/* Connections open at once per shard; at the cap the shard's
	 * acceptor stops and the excess waits in the listen backlog. */
	unsigned max_conns;
	/* Requests per connection: the last one is answered with
	 * "Connection: close". */
	uint64_t max_requests;
	/* Body bytes a request may declare (Content-Length); above, 413
	 * and close, the body unread. */
	uint64_t max_body;
	/* SO_SNDBUF of each connection (0: the kernel's autotuning, which
	 * on loopback lets a client that never reads have megabytes of
	 * answers queued before its send blocks). Up to 1 GiB. */
	uint64_t sndbuf;
	/* The shards' receive settings (pw_net_configure()), applied by
	 * each acceptor before its shard's first receive; NULL: the
	 * defaults. Copied at start. */
	const struct pw_net_config *net;
	/* Serve the files beneath this directory (GET and HEAD, see
	 * http_static.h) instead of the fixed body; NULL: the body.
	 * Opened at start. */
	const char *root;
};

/* Why a connection closed: each closed connection counts under one. */
enum pw_http_close {
	PW_HTTP_CLOSE_OTHER,	    /* dropped: the runtime's end, no memory */
	PW_HTTP_CLOSE_CLIENT,	    /* the client closed, or asked to */
	PW_HTTP_CLOSE_KEEPALIVE,    /* the keep-alive timeout */
	PW_HTTP_CLOSE_HEAD_TIMEOUT, /* the head timeout (408) */
	PW_HTTP_CLOSE_SEND_TIMEOUT, /* the send timeout (reset) */
	PW_HTTP_CLOSE_RESET,	    /* a socket error (reset by the peer) */
	PW_HTTP_CLOSE_MAX_REQUESTS, /* the last request of max_requests */
	PW_HTTP_CLOSE_DRAIN,	    /* the drain */
	PW_HTTP_CLOSE_ERROR,	    /* after refusing a request (4xx, 505) */
	PW_HTTP_CLOSE_N,
};

/* The statuses other than 200 a server answers, counted one by one. */
#define PW_HTTP_STATUSES                     \
	{                                    \
		400, 408, 413, 414, 431, 505 \
	}
#define PW_HTTP_NSTATUS 6

/**
 * pw_http_close_name - the name of close cause @why ("client",
 * "keepalive_timeout", ...), or "other". Context: any thread.
 */
const char *pw_http_close_name(enum pw_http_close why);

/* Counters of one shard, summed over the connections it served. */
struct pw_http_stats {
	uint64_t accepted; /* connections taken by the shard's acceptor */
	uint64_t requests; /* requests answered with 200 */
	uint64_t errors;   /* requests refused (400, 413, 414, 431, 505) */
	uint64_t closed;   /* connections finished */
	uint64_t work;	   /* --work child tasks this shard ran */
	uint64_t calls;	   /* --fanout calls this shard answered */
	uint64_t timeouts; /* connections closed by the keep-alive timeout */
	uint64_t reads;	   /* buffers of request bytes received */
	uint64_t head_timeouts; /* requests answered 408 (head timeout) */
	uint64_t send_timeouts; /* connections reset by the send timeout */
	uint64_t too_large;	/* requests answered 413 (also in errors) */
	uint64_t capped;	/* connections closed by max_requests */
	uint64_t full;		/* times the acceptor stopped at max_conns */
	uint64_t linger_resets; /* closes reset: the client sent more than
				   the linger drops */
	uint64_t active;	/* connections open now */
	uint64_t bytes_in;	/* bytes received (request bytes, and those
				   the linger drops) */
	uint64_t bytes_out;	/* bytes of responses sent whole */
	uint64_t closes[PW_HTTP_CLOSE_N]; /* closed, by cause (their sum
					     is closed) */
	uint64_t status[PW_HTTP_NSTATUS]; /* answered with each status of
					     PW_HTTP_STATUSES */
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
 * opening the root (-ENOENT, -ENOTDIR...), of pw_net_listener_create()
 * (e.g. -EADDRINUSE) or of pw_runtime_spawn().
 * Nothing is left running or open on error.
 * Context: any thread that is not a shard of @rt.
 */
int pw_http_server_start(struct pw_http_server **sp, struct pw_runtime *rt,
			 const struct pw_net_addr *addr,
			 const struct pw_http_opts *o);

struct pw_http_static;

/**
 * pw_http_server_files - the file server of a server started with a
 * root (its counters: pw_http_static_stats()), or NULL.
 * Context: any thread, while the server lives.
 */
struct pw_http_static *pw_http_server_files(struct pw_http_server *s);

/**
 * pw_http_server_listener - the listener the server accepts from, for
 * handing its sockets over (pw_net_listener_fds()); NULL for NULL.
 * Context: any thread, while the server lives.
 */
struct pw_net_listener *pw_http_server_listener(struct pw_http_server *s);

/**
 * pw_http_server_listener_stats - the counters of the server's listener
 * (accepts, accept errors, sockets dropped unread).
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
int pw_http_server_listener_stats(const struct pw_http_server *s,
				  struct pw_net_listener_stats *out);

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
