/* SPDX-License-Identifier: MIT */
/*
 * proxy.h - the L4 TCP proxy behind `pinwheel proxy`, callable in-process.
 *
 * pw_proxy_start() creates a runtime, listens, and serves every accepted
 * connection by one task on the shard that accepted it: connect to an
 * upstream server (weighted round robin or least connections over the
 * servers up, failing over to the next on a connect error; servers
 * checked, marked down passively, names re-resolved: proxy_upstream.h),
 * then forward both directions through a bounded byte FIFO each (the
 * high-water mark, in memory the direction owns, so a stuck peer never
 * holds the shard's receive buffers), with half-close propagation, reset
 * propagation, an idle timeout, a send timeout and a connection cap
 * that leaves the excess in the backlog. pw_proxy_stop() stops accepting,
 * drains the open connections up to a deadline and tears everything
 * down. With accept_proxy a connection first reads a PROXY protocol
 * header from its client, with send_proxy it sends one to its upstream
 * before any client byte, and with access_log each closed connection
 * leaves one line there (access_log.h). docs/proxy.md describes the
 * design.
 */
#ifndef PW_APPS_PROXY_H
#define PW_APPS_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel/net.h"
#include "pinwheel/runtime.h"
#include "apps/resolve.h"

/* Most upstream servers one proxy forwards to (every address of every
 * name counted). */
#define PW_PROXY_MAX_UPSTREAMS 64
/* Longest --upstream item, "HOST:PORT", with its NUL. */
#define PW_PROXY_NAME_MAX (PW_RESOLVE_HOST_MAX + 9)
/* Heaviest weight of a server. */
#define PW_PROXY_MAX_WEIGHT 256

/* How a new connection's server is chosen. */
enum pw_proxy_balance {
	PW_PROXY_ROUNDROBIN, /* smooth weighted round robin, per shard */
	PW_PROXY_LEASTCONN,  /* fewest active connections of the shard,
				relative to the weight */
};

/* One --upstream item: a name (or numeric address) and its weight. */
struct pw_proxy_upstream_item {
	char name[PW_PROXY_NAME_MAX]; /* "HOST:PORT" as given, no weight */
	unsigned weight;	      /* 1..PW_PROXY_MAX_WEIGHT */
	bool numeric;		      /* an address: never re-resolved */
};

/* A resolver: pw_resolve() or a stand-in with its contract. */
typedef int (*pw_proxy_resolve_fn)(const char *text, int socktype,
				   struct pw_net_addr *out, unsigned max);

/* What a proxy does; pw_proxy_config_init() sets the defaults. */
struct pw_proxy_config {
	struct pw_net_addr listen;
	/* The servers at start: set by pw_proxy_upstreams_parse(), or
	 * directly (upstream[] and nupstreams; a zero weight is 1, and with
	 * no items each address is its own numeric item). */
	struct pw_net_addr upstream[PW_PROXY_MAX_UPSTREAMS];
	unsigned nupstreams;
	unsigned upstream_weight[PW_PROXY_MAX_UPSTREAMS];
	unsigned upstream_item[PW_PROXY_MAX_UPSTREAMS]; /* into item[] */
	struct pw_proxy_upstream_item item[PW_PROXY_MAX_UPSTREAMS];
	unsigned nitems;
	int balance;		      /* enum pw_proxy_balance */
	uint64_t check_interval_ns;   /* TCP connect check of each server
					 (0: off, the default here; the
					 command's default is 2 s) */
	uint64_t check_timeout_ns;    /* of one check (1 s) */
	unsigned rise, fall;	      /* good/bad checks in a row that
					 bring a server up/down (2, 3) */
	unsigned max_fails;	      /* client connect failures in a row
					 that mark a server down (3; 0 off) */
	uint64_t fail_timeout_ns;     /* with checks off, a server marked
					 down is tried again after it (10 s) */
	uint64_t resolve_interval_ns; /* names resolved again (60 s; 0 off) */
	pw_proxy_resolve_fn resolve;  /* NULL: pw_resolve() */
	uint64_t high_water;	      /* unsent bytes a direction holds in
					memory it owns; at it the side's
					reads stop (256 KiB) */
	uint64_t idle_timeout_ns;     /* no progress either way: close (60 s);
					0 turns it off */
	uint64_t send_timeout_ns;     /* a send with no progress: reset both
					sides (60 s); 0 turns it off */
	uint64_t connect_timeout_ns;  /* per upstream attempt (5 s) */
	uint64_t max_conns;	      /* open connections per shard, the
					accept pauses at it; 0: no limit
					(the default) */
	uint64_t sndbuf;	      /* SO_SNDBUF of both sockets of a
					connection, up to 1 GiB; 0: the
					kernel's autotuning (the default) */
	uint32_t listen_flags;	      /* PW_NET_LISTEN_SHARE_PORT or 0 */
	const int *adopt;	      /* with nadopt > 0: listen on these
					 sockets, bound and listening
					 (--takeover), owned by the proxy
					 from its start; else bind listen */
	unsigned nadopt;
	struct pw_config rt;	  /* the runtime's settings */
	struct pw_net_config net; /* each shard's buffer ring (1024
					buffers of 16 KiB) */
	/* The PROXY protocol and the access log (docs/proxy.md). */
	uint8_t send_proxy;		  /* header sent to the upstream
					      first: 0 none, 1 v1, 2 v2 */
	bool accept_proxy;		  /* each client sends a header
					      first (v1 or v2) */
	uint64_t accept_proxy_timeout_ns; /* for it to arrive (5 s) */
	const char *access_log;		  /* file, "-": stdout; NULL:
					      none (copied at start) */
	uint64_t access_log_buf;	  /* bytes of each shard's log
					      buffer; 0: 256 KiB */
};

/* Counters summed over the shards. */
struct pw_proxy_stats {
	uint64_t conns_open;	     /* client connections being served */
	uint64_t conns_total;	     /* client connections accepted */
	uint64_t bytes_up;	     /* client to upstream */
	uint64_t bytes_down;	     /* upstream to client */
	uint64_t connect_errors;     /* failed upstream attempts (timeouts
				      included) */
	uint64_t connect_timeouts;   /* of those, timed out */
	uint64_t upstream_failed;    /* clients closed: no upstream answered */
	uint64_t resets;	     /* connections ended by a socket error */
	uint64_t idle_closed;	     /* connections ended by the idle timeout */
	uint64_t send_timeouts;	     /* connections reset by the send timeout */
	uint64_t aborts;	     /* connections cut (a timeout, the drain
				      deadline) with bytes undelivered: reset */
	uint64_t accept_pauses;	     /* accepts paused at max_conns */
	uint64_t half_closes;	     /* end of stream passed on (SHUT_WR) */
	uint64_t drain_closed;	     /* closed by the drain deadline */
	uint64_t accept_errors;	     /* from the listener (EMFILE, ...), or a
				      connection whose task could not start */
	uint64_t buffered_peak;	     /* most bytes one direction's FIFO held */
	uint64_t bufs_borrowed;	     /* ring buffers out of the ring, last seen
				      (sampled every 50 ms) */
	uint64_t bufs_borrowed_peak; /* the most seen at one sample */
	uint64_t bufs_total;	     /* ring buffers on all shards */
	uint64_t release_errors;     /* buffers the ring refused back */
	uint64_t proxy_header_bad;   /* clients closed: a malformed PROXY
				      header */
	uint64_t proxy_header_timeout; /* clients closed: no whole PROXY
					header within the timeout */
	uint64_t access_log_records;   /* lines given to the access log */
	uint64_t access_log_dropped;   /* lines it lost (writer behind) */
	uint64_t access_log_errors;    /* its write or reopen errors */
	uint64_t no_upstream_up;   /* clients closed at once: no server up */
	uint64_t upstreams;	   /* servers in use (draining ones too) */
	uint64_t upstreams_up;	   /* of those, up */
	uint64_t upstreams_behind; /* shards that have not yet applied the
					last change of the servers' state */
};

/* A server's state in pw_proxy_upstream_stats. */
enum pw_proxy_upstream_state {
	PW_PROXY_UPSTREAM_UP,
	PW_PROXY_UPSTREAM_DOWN,
	PW_PROXY_UPSTREAM_DRAINING, /* its name no longer gives it: no new
				       connections, open ones finish */
};

/* One server's state and counters (pw_proxy_upstreams()). */
struct pw_proxy_upstream_stats {
	char addr[PW_NET_ADDR_STRLEN]; /* its address, as text */
	char name[PW_PROXY_NAME_MAX];  /* the --upstream item it came from */
	unsigned weight;
	int state;		   /* enum pw_proxy_upstream_state */
	uint64_t active;	   /* client connections open to it */
	uint64_t connects;	   /* successful connects of clients */
	uint64_t connect_failures; /* failed ones (timeouts included) */
	uint64_t checks_ok, checks_failed;
	uint64_t transitions; /* up to down and down to up */
	uint64_t bytes_up;    /* client to it */
	uint64_t bytes_down;  /* it to client */
	char last_error[64];  /* of the last failed check, or "" */
};

struct pw_proxy;

/**
 * pw_proxy_config_init - the defaults: no addresses, 256 KiB high water,
 * 60 s idle and send timeouts, 5 s connect timeout, no connection
 * limit, round robin, checks off (1 s timeout, rise 2, fall 3 when
 * turned on), max_fails 3, fail_timeout 10 s, resolve_interval 60 s,
 * no PROXY protocol (5 s header timeout), no access log,
 * pw_config_init()
 * and a ring of 1024 buffers of 16 KiB per shard.
 * Context: any thread.
 */
void pw_proxy_config_init(struct pw_proxy_config *cfg);

/**
 * pw_proxy_upstreams_parse - parse @text, "HOST:PORT[@WEIGHT][,...]"
 * (IPv6 as [::1]:80@2, WEIGHT 1..256), into @cfg's items and servers
 * (replacing them). Names are resolved now with cfg->resolve (NULL:
 * pw_resolve()); each of a name's addresses is a server.
 * Return: 0; -EINVAL for NULL or a malformed item; -ENOENT, -EAGAIN,
 * -EIO for a name that does not resolve (pw_resolve()); -E2BIG for more
 * than PW_PROXY_MAX_UPSTREAMS servers. On an error @cfg is unchanged.
 * Context: any thread but a shard (a lookup may block).
 */
int pw_proxy_upstreams_parse(struct pw_proxy_config *cfg, const char *text);

/**
 * pw_proxy_upstreams_set - pw_proxy_upstreams_parse(), and on an error
 * a message naming the item and what is wrong with it in @why ("'db:1':
 * name not known"; @why may be NULL).
 * Return: as pw_proxy_upstreams_parse().
 * Context: any thread but a shard.
 */
int pw_proxy_upstreams_set(struct pw_proxy_config *cfg, const char *text,
			   char *why, size_t whysize);

/**
 * pw_proxy_start - start serving @cfg (copied).
 * Return: 0 with *@pp set; -EINVAL for NULL, no upstream, a zero high
 * water or connect timeout, send_proxy above 2, accept_proxy with a zero
 * timeout; the error of pw_runtime_create(), pw_access_log_open() or
 * pw_net_listener_create() (nothing is left running then).
 * Context: any thread that is not a shard.
 */
int pw_proxy_start(struct pw_proxy **pp, const struct pw_proxy_config *cfg);

/**
 * pw_proxy_addr - the address the proxy listens on (the port chosen).
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
int pw_proxy_addr(const struct pw_proxy *p, struct pw_net_addr *out);

/**
 * pw_proxy_listener - the listener the proxy accepts from, for handing
 * its sockets over (pw_net_listener_fds()); NULL for NULL or once
 * pw_proxy_drain() closed it.
 * Context: the thread that calls pw_proxy_drain().
 */
struct pw_net_listener *pw_proxy_listener(struct pw_proxy *p);

/**
 * pw_proxy_runtime - the runtime serving @p (for metrics), or NULL.
 * Context: any thread.
 */
struct pw_runtime *pw_proxy_runtime(struct pw_proxy *p);

/**
 * pw_proxy_stats - read @p's counters, summed over shards.
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
int pw_proxy_stats(const struct pw_proxy *p, struct pw_proxy_stats *out);

/**
 * pw_proxy_drain - stop accepting (the listening sockets are closed) and
 * wait up to @drain_ns for the open connections to finish. Connections
 * keep being served; calling it again only waits.
 * Return: the connections still open; -EINVAL for NULL.
 * Context: any thread that is not a shard of @p.
 */
int pw_proxy_drain(struct pw_proxy *p, uint64_t drain_ns);

/**
 * pw_proxy_destroy - close every connection left (counted in
 * drain_closed), stop the runtime, write the access log's last records
 * (every connection closed is in the file then) and free @p, after
 * copying the final counters to @final when it is not NULL. Drains with
 * a zero deadline first if pw_proxy_drain() was not called.
 * Return: 0; -EINVAL for NULL @p.
 * Context: the thread that started @p, not a shard.
 */
int pw_proxy_destroy(struct pw_proxy *p, struct pw_proxy_stats *final);

/**
 * pw_proxy_stop - pw_proxy_drain() for @drain_ns, then
 * pw_proxy_destroy().
 * Return: 0; -EINVAL for NULL @p.
 * Context: the thread that started @p, not a shard.
 */
int pw_proxy_stop(struct pw_proxy *p, uint64_t drain_ns,
		  struct pw_proxy_stats *final);

/**
 * pw_proxy_upstreams - each server's state and counters (the servers in
 * use, draining ones included), up to @max into @out.
 * Return: the number of servers (more than @max: the rest left out);
 * -EINVAL for NULL @p, or NULL @out with @max not 0.
 * Context: any thread.
 */
int pw_proxy_upstreams(const struct pw_proxy *p,
		       struct pw_proxy_upstream_stats *out, unsigned max);

/**
 * pw_proxy_stats_line - write @s as one line of text (no newline):
 * connections open and total, bytes each way, errors, servers up.
 * Return: what snprintf() returns.
 * Context: any thread.
 */
int pw_proxy_stats_line(const struct pw_proxy_stats *s, char *buf, size_t size);

#endif /* PW_APPS_PROXY_H */
