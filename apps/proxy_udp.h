/* SPDX-License-Identifier: MIT */
/*
 * proxy_udp.h - the UDP forwarder behind `pinwheel proxy --udp`,
 * callable in-process (docs/proxy.md, "UDP").
 *
 * pw_proxy_udp_start() creates a runtime, binds one SO_REUSEPORT UDP
 * socket per shard on the listen address and forwards datagrams by FLOW:
 * a client address (ip:port) on a shard. A flow's first datagram picks
 * its upstream (the proxy's upstream table, proxy_upstream.h: weighted
 * round robin or least flows, per shard) and opens one UDP socket
 * connected to it; the client's datagrams go out on that socket, and
 * what the upstream answers goes back to the client from the listening
 * socket, so the client sees its replies come from the address it sent
 * to. Datagrams keep their boundaries; one too long for a receive
 * buffer is counted and dropped, never forwarded cut. A flow closes
 * when idle for idle_ns (traffic either way resets it), after
 * responses replies per datagram when responses is set, or at the
 * drain. At max_flows flows on a shard, datagrams of new clients are
 * dropped and counted.
 */
#ifndef PW_APPS_PROXY_UDP_H
#define PW_APPS_PROXY_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pinwheel/net.h"
#include "pinwheel/runtime.h"
#include "apps/expo.h"
#include "apps/proxy.h"

/* What a UDP forwarder does beyond its struct pw_proxy_config (which
 * gives the listen address, the upstreams, the balance, the runtime,
 * the buffer ring, sndbuf and listen_flags' PW_NET_LISTEN_SHARE_PORT). */
struct pw_proxy_udp_opts {
	uint64_t idle_ns;   /* a flow with no datagram either way this long
			       closes (30 s); at least 1 ms */
	uint64_t max_flows; /* flows per shard (65536); at least 1 */
	uint64_t responses; /* close a flow once it has this many replies
			       per client datagram (DNS: 1); 0: never */
};

/* Counters summed over the shards. */
struct pw_proxy_udp_stats {
	uint64_t flows_created;	 /* flows opened */
	uint64_t flows_active;	 /* open now */
	uint64_t flows_expired;	 /* closed by the idle timeout */
	uint64_t flows_answered; /* closed once answered (responses, or
				    the drain) */
	uint64_t flows_drained;	 /* closed at the drain deadline */
	uint64_t flows_refused;	 /* datagrams of new clients dropped at
				    max_flows */
	uint64_t flows_failed;	 /* closed by an error of their socket */
	uint64_t flow_errors;	 /* datagrams of new clients dropped: the
				    flow's socket or task could not be made */
	uint64_t dgrams_in;	 /* datagrams received from clients */
	uint64_t dgrams_up;	 /* of those, sent to an upstream */
	uint64_t bytes_up;
	uint64_t replies_in;  /* datagrams received from upstreams */
	uint64_t dgrams_down; /* of those, sent to their client */
	uint64_t bytes_down;
	uint64_t trunc_up, trunc_down;	     /* dropped: longer than a
						buffer holds */
	uint64_t send_err_up, send_err_down; /* dropped: the send failed */
	uint64_t backlog_dropped; /* client datagrams dropped: the flow's
				     queue or the shard's share was full */
	uint64_t closed_dropped;  /* client datagrams queued when their flow
				     closed (the drain deadline) */
	uint64_t upstream_errors; /* errors an upstream socket reported
				     (ICMP: refused, unreachable) */
	uint64_t kernel_drops;	  /* datagrams the kernel dropped on the
				     listening sockets and on flow sockets
				     (closed ones, and open ones at the last
				     look) for a full receive queue */
};

struct pw_proxy_udp;

/**
 * pw_proxy_udp_opts_init - the defaults: 30 s idle, 65536 flows per
 * shard, no response count.
 * Context: any thread.
 */
void pw_proxy_udp_opts_init(struct pw_proxy_udp_opts *o);

/**
 * pw_proxy_udp_start - start forwarding @cfg's listen address to its
 * upstreams (nupstreams, weights; IPv4 or IPv6 only) with @o (NULL: the
 * defaults); both are copied. Checks, passive marking and re-resolution
 * are not used: the servers are those of @cfg, always up.
 * Return: 0 with *@up set; -EINVAL for NULL, no upstream, an upstream or
 * listen address not IPv4 or IPv6, bad @o; -EADDRINUSE; the error of
 * pw_runtime_create() or pw_udp_socket_create() (nothing is left
 * running then).
 * Context: any thread that is not a shard.
 */
int pw_proxy_udp_start(struct pw_proxy_udp **up,
		       const struct pw_proxy_config *cfg,
		       const struct pw_proxy_udp_opts *o);

/**
 * pw_proxy_udp_addr - the bound address (with the port chosen).
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
int pw_proxy_udp_addr(const struct pw_proxy_udp *u, struct pw_net_addr *out);

/** pw_proxy_udp_runtime - the runtime, or NULL. Context: any thread. */
struct pw_runtime *pw_proxy_udp_runtime(struct pw_proxy_udp *u);

/**
 * pw_proxy_udp_stats - the counters, summed over the shards.
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
int pw_proxy_udp_stats(const struct pw_proxy_udp *u,
		       struct pw_proxy_udp_stats *out);

/**
 * pw_proxy_udp_drain - stop reading clients (datagrams that arrive
 * afterwards wait in the sockets, unread); flows go on receiving
 * replies, and each closes once answered (every client datagram has
 * its replies: responses each, else one), when idle, or when the
 * proxy is destroyed. Returns once every listener has stopped reading
 * (each looks at the drain at its next datagram, or within 50 ms).
 * Calling it again only waits.
 * Return: 0; -ETIMEDOUT when a listener still reads after 5 s; -EINVAL
 * for NULL. Context: any thread but a shard.
 */
int pw_proxy_udp_drain(struct pw_proxy_udp *u);

/**
 * pw_proxy_udp_destroy - close every flow left (counted in
 * flows_drained), stop the runtime, close the sockets and free @u,
 * after copying the final counters to @final when it is not NULL.
 * Return: 0; -EINVAL for NULL. Context: the thread that started @u.
 */
int pw_proxy_udp_destroy(struct pw_proxy_udp *u,
			 struct pw_proxy_udp_stats *final);

/**
 * pw_proxy_udp_stats_line - @s as one line of text (no newline).
 * Return: what snprintf() returns. Context: any thread.
 */
int pw_proxy_udp_stats_line(const struct pw_proxy_udp_stats *s, char *buf,
			    size_t size);

/**
 * pw_proxy_udp_counters - @u's counters and each upstream's into @e
 * (names pinwheel_proxy_udp_...): the counters hook of
 * `pinwheel proxy --udp`.
 * Context: any thread (a scrape calls it on shard 0).
 */
void pw_proxy_udp_counters(struct pw_proxy_udp *u, struct pw_expo *e);

#endif /* PW_APPS_PROXY_UDP_H */
