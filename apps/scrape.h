/* SPDX-License-Identifier: MIT */
/*
 * scrape.h - the scrape endpoint of --metrics-listen: a small HTTP/1.1
 * server on shard 0 of a runtime that answers GET /metrics (Prometheus
 * text 0.0.4) and GET /metrics.json with what a write function produces
 * (internal to the pinwheel command; the driver starts one).
 *
 * One acceptor and at most PW_SCRAPE_MAX_CONNS connection tasks, all on
 * shard 0 (pinned there under stealing too), one listening socket.
 * Requests are read with apps/http_parse.h. HEAD is answered as GET
 * without the body; another path gets 404, another method 405 with
 * "Allow: GET, HEAD". Every state has its bound: a request head must be
 * whole PW_SCRAPE_HEAD_NS after its first byte (else 408 and close), a
 * response must be taken within PW_SCRAPE_SEND_NS (else the connection
 * is reset), a connection idle PW_SCRAPE_IDLE_NS between requests is
 * closed, and its PW_SCRAPE_MAX_REQUESTS-th request is answered with
 * "Connection: close". Connections past the cap wait in the backlog.
 *
 * The body is written by the write function into memory
 * (open_memstream()) and then sent, so a slow scraper holds a buffer,
 * never the shard. The write function runs on shard 0 while the rest of
 * the process goes on: it must read only what any thread may read
 * (relaxed counters, pw_metrics_read()).
 */
#ifndef PW_APPS_SCRAPE_H
#define PW_APPS_SCRAPE_H

#include <stdint.h>
#include <stdio.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/expo.h"

#define PW_SCRAPE_MAX_CONNS    8
#define PW_SCRAPE_MAX_REQUESTS 100
#define PW_SCRAPE_HEAD_NS      (5 * PW_NSEC_PER_SEC)
#define PW_SCRAPE_SEND_NS      (5 * PW_NSEC_PER_SEC)
#define PW_SCRAPE_IDLE_NS      (10 * PW_NSEC_PER_SEC)
#define PW_SCRAPE_HEAD_MAX     4096 /* a larger request head gets 431 */
#define PW_SCRAPE_BODY_MAX     4096 /* a larger request body gets 413 */

/*
 * Write the whole exposition to @f in format @fmt.
 * Return: 0, or -errno: the scrape is then answered 500.
 * Context: shard 0 of the scrape server's runtime.
 */
typedef int (*pw_scrape_write_fn)(void *arg, FILE *f, enum pw_expo_format fmt);

/* The server's counters, written on shard 0 and read from any thread. */
struct pw_scrape_stats {
	uint64_t scrapes;	/* GET or HEAD of either path, counted before
				   its body is written (a scrape sees
				   itself); a failed one is also a
				   write error */
	uint64_t connections;	/* connections accepted */
	uint64_t not_found;	/* 404: another path */
	uint64_t bad_method;	/* 405: another method */
	uint64_t bad_requests;	/* 400, 413, 414, 431, 505 */
	uint64_t head_timeouts; /* 408 */
	uint64_t send_timeouts; /* resets by the send timeout */
	uint64_t write_errors;	/* 500: the body could not be produced */
	uint64_t idle_closes;	/* closed by the idle timeout */
};

struct pw_scrape;

/**
 * pw_scrape_start - listen on @addr (port 0: any free one) and serve
 * scrapes on shard 0 of @rt, bodies from @fn(@arg, ...).
 * *@sp is set before the first task starts, so @fn may read it.
 * Return: 0 with *@sp set; -EINVAL for NULL arguments; -ENOMEM; the
 * errors of pw_net_listener_create() (-EADDRINUSE, ...) and
 * pw_runtime_spawn(). Nothing is left running or open on error.
 * Context: any thread that is not a shard of @rt.
 */
int pw_scrape_start(struct pw_scrape **sp, struct pw_runtime *rt,
		    const struct pw_net_addr *addr, pw_scrape_write_fn fn,
		    void *arg);

/**
 * pw_scrape_addr - the address it listens on (the port chosen).
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
int pw_scrape_addr(const struct pw_scrape *s, struct pw_net_addr *out);

/**
 * pw_scrape_read - the server's counters into @out (relaxed loads).
 * Return: 0; -EINVAL for NULL. Context: any thread, shard 0 included.
 */
int pw_scrape_read(const struct pw_scrape *s, struct pw_scrape_stats *out);

/**
 * pw_scrape_counters - write the counters of @s as metrics
 * pinwheel_scrapes_total, pinwheel_scrape_connections_total and
 * pinwheel_scrape_errors_total{cause=...} into @e (whose prefix this
 * sets to "pinwheel_").
 * Context: any thread, shard 0 included.
 */
void pw_scrape_counters(const struct pw_scrape *s, struct pw_expo *e);

/**
 * pw_scrape_stop - stop accepting, end the open connections (one in the
 * middle of a send is cut), wait for every task of the server to be gone
 * (up to a second for the acceptor), close the listener and free @s.
 * Call it before the runtime is destroyed. NULL is a no-op.
 * Context: any thread that is not a shard of the runtime.
 */
void pw_scrape_stop(struct pw_scrape *s);

#endif /* PW_APPS_SCRAPE_H */
