/* SPDX-License-Identifier: MIT */
/*
 * load.h - the load generator behind `pinwheel load`, callable in-process
 * (internal to the pinwheel command; `pinwheel bench` drives it too).
 *
 * pw_load_run() opens cfg->conns connections to a target from the shards
 * of a runtime the caller created (connection i on shard i % shards), and
 * drives one request at a time on each: an HTTP/1.1 keep-alive request
 * (GET by default; any method, header lines and body, built once by
 * apps/load_req.c and sent as the same bytes every time), an echo of
 * a fixed payload, or a datagram of it on a connected UDP socket, answered
 * within the timeout or lost (PW_LOAD_UDP: apps/load_udp.c). A target with several addresses (a name that
 * resolved to several) gets connection i on address i % naddrs. Two
 * ways to load:
 *
 *   - closed loop (rate 0): each connection sends its next request as soon
 *     as the previous answer is in, like wrk; latency is the service time;
 *   - open loop (rate R): requests are due on a fixed schedule, R per
 *     second over all connections, and latency counts from the time a
 *     request was due, not from when it could be sent, like wrk2: a stall
 *     shows in every request it delayed (coordinated omission corrected).
 *     The time from the actual send to the answer, the service time, goes
 *     to a second histogram.
 *
 * A run lasts a warm-up (whose samples are discarded) and then a duration
 * or a number of requests, whichever ends first; a stop asked for by the
 * caller's wait hook ends it early, still with results. Each shard
 * records into histograms of its own (3 significant digits: exact to the
 * ns below 2 us, within 1 us up to 2 ms, under 0.1% above), merged at the
 * end. Per-request timestamps are fresh CLOCK_MONOTONIC reads; sends that
 * wait for a due time wait on the shard's timer wheel, so a fine
 * pw_config.tick_ns (`pinwheel load` uses 10 us) keeps them on time.
 *
 * A connection that fails (connect error, reset, timeout, bad response)
 * is counted, closed and opened again; its next request follows on the
 * new connection. With cfg->requests set, every request that ends, well
 * or not, uses up one of the run's requests, so a failing target still
 * ends the run.
 *
 * With an interval hook, each shard also counts its answers in an
 * interval histogram and hands it to the thread in pw_load_run() at each
 * second of the measured run (see load.c), which merges them and calls
 * the hook: HdrHistogram interval logs are written from there.
 *
 * HTTP answers are read with the response side of apps/http_parse.h.
 */
#ifndef PW_APPS_LOAD_H
#define PW_APPS_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pinwheel.h"
#include "pinwheel/hist.h"
#include "pinwheel/net.h"

/* What a request is. */
enum pw_load_proto {
	PW_LOAD_HTTP, /* METHOD path HTTP/1.1, Host, headers, keep-alive */
	PW_LOAD_ECHO, /* size bytes out, the same bytes back */
	PW_LOAD_UDP,  /* a datagram of size bytes out, the same back, on a
			 connected UDP socket (apps/load_udp.h) */
};

/* Significant digits of the run's histograms. */
#define PW_LOAD_HIST_DIGITS 3

/* A progress report, once a second while a run goes (see wait below). */
struct pw_load_progress {
	uint64_t elapsed_ns; /* since the run started, warm-up included */
	bool warmup;	     /* still warming up */
	uint64_t requests;   /* measured requests answered so far */
	uint64_t errors;     /* measured requests failed so far */
	double rate;	     /* answers per second over the last report's
				interval, warm-up included */
	uint64_t p50_ns;     /* latency percentiles so far (shards that */
	uint64_t p99_ns;     /* did not answer in time are left out) */
};

/* One second of the measured run, for the interval hook. */
struct pw_load_interval {
	uint64_t index;		    /* 0, 1, 2, ... */
	uint64_t start_ns;	    /* since the measured run began */
	uint64_t length_ns;	    /* 1 s, except the last one */
	uint64_t run_wall_ns;	    /* CLOCK_REALTIME when the measured run
				   began */
	const struct pw_hist *hist; /* the latency of the answers that came
				       in it (PW_LOAD_HIST_DIGITS) */
};

/* A run's settings. Initialise with pw_load_config_init(), then adjust. */
struct pw_load_config {
	enum pw_load_proto proto;
	struct pw_net_addr target;
	/* Several addresses (naddrs > 0): connection i, and every connection
	 * that replaces it, goes to addrs[i % naddrs]; target is then only
	 * named in the reports. 0: every connection goes to target. */
	const struct pw_net_addr *addrs;
	unsigned naddrs;
	/* The target as the user gave it (a URL, HOST:PORT), named in the
	 * reports; NULL: the target's address. */
	const char *target_name;
	const char *host;   /* HTTP Host header; NULL: the target as text */
	const char *path;   /* HTTP request target, "/" by default */
	const char *method; /* HTTP method, a token; NULL: GET. The
				  answers to HEAD end with their head. */
	/* HTTP header lines, "Name: value", sent in order after Host (a
	 * "Host" line replaces the Host header); at most 64 lines and
	 * 8 KiB (apps/load_req.h has the rules). */
	const char *const *headers;
	unsigned nheaders;
	const char *body; /* HTTP request body of body_len bytes (up to
			     16 MiB), sent with a Content-Length; NULL:
			     none */
	size_t body_len;
	size_t size;	/* echo payload bytes, 1..16 MiB (64); udp 8..65507 */
	unsigned conns; /* connections, 1..65536 (1) */
	uint64_t rate;	/* requests/s over all connections; 0: closed
				  loop (the default) */
	uint64_t duration_ns; /* measured time; 0: until requests (10 s when
				  both are 0) */
	uint64_t requests;    /* measured requests; 0: until duration */
	uint64_t warmup_ns;   /* warm-up before measuring (1 s) */
	uint64_t timeout_ns;  /* per connect and per request (2 s); udp:
				 per datagram */
	/*
	 * Called by the thread in pw_load_run() between checks (every 10 ms
	 * or so): wait up to @ns, and return true to stop the run early.
	 * NULL: sleep.
	 */
	bool (*wait)(void *arg, uint64_t ns);
	/* Called by that thread once a second; NULL: no progress. */
	void (*progress)(void *arg, const struct pw_load_progress *p);
	/*
	 * Called by that thread after each second of the measured run and
	 * once for the rest at its end, in order; @iv and its histogram are
	 * valid during the call only. The intervals together hold every
	 * answer of res->latency. An answer counts in the interval its shard
	 * handed over next: a shard that answers nothing for a while hands
	 * its answers over late (the log then shows them a second later),
	 * none is lost. NULL: no interval histograms are kept.
	 */
	void (*interval)(void *arg, const struct pw_load_interval *iv);
	void *arg; /* passed to wait, progress and interval */
};

/* Failed requests, by cause. */
struct pw_load_errors {
	uint64_t connect; /* connects that failed or timed out */
	uint64_t reset;	  /* reset, broken pipe, or closed before a whole
			     answer */
	uint64_t timeout; /* no whole answer within timeout_ns */
	uint64_t bad;	  /* malformed answer, HTTP status outside
			     200..399, echo bytes that differ */
	uint64_t other;	  /* any other socket error */
};

/*
 * Datagrams of a UDP run (PW_LOAD_UDP), measured requests only. Every
 * request sent ends once: sent == received + lost + in_flight.
 */
struct pw_load_udp_stats {
	uint64_t sent;	      /* requests sent */
	uint64_t received;    /* answered within the timeout (= requests) */
	uint64_t lost;	      /* not answered within the timeout, or the
			       socket failed (err.timeout, part of err.other) */
	uint64_t in_flight;   /* neither when the run ended or was stopped */
	uint64_t late;	      /* answers to an earlier request of the
			       connection (one lost, or a duplicate) */
	uint64_t bad;	      /* datagrams that answer nothing: a length,
			       payload or sequence number never sent, or
			       truncated */
	uint64_t send_errors; /* sends that failed (err.other) */
	uint64_t icmp;	      /* ICMP errors the socket reported (port
				 unreachable...) */
};

/* A run's results. pw_load_run() sets it up; free with
 * pw_load_result_destroy(). */
struct pw_load_result {
	uint64_t requests; /* measured requests answered well */
	uint64_t errors;   /* measured requests failed (sum of err) */
	struct pw_load_errors err;
	uint64_t bad_status;	      /* of err.bad: well-formed, status out of
				       200..399 */
	uint64_t connects;	      /* connections opened, warm-up included */
	uint64_t bytes_sent;	      /* measured */
	uint64_t bytes_received;      /* measured */
	uint64_t elapsed_ns;	      /* measured time */
	double throughput;	      /* requests / elapsed, per second */
	unsigned shards;	      /* shards the connections ran on */
	bool stopped;		      /* the wait hook ended the run early */
	uint64_t start_wall_ns;	      /* CLOCK_REALTIME when the measured run
				    began */
	struct pw_hist latency;	      /* from due time (open loop) or send time
				       (closed loop) to the whole answer */
	struct pw_hist service;	      /* from the actual send to the answer */
	struct pw_load_udp_stats udp; /* PW_LOAD_UDP only */
};

/**
 * pw_load_config_init - fill @cfg with the defaults: HTTP, path "/",
 * 64-byte echo payload, one connection, closed loop, 10 s after a 1 s
 * warm-up, 2 s timeout, no hooks. The target is left empty: set it.
 * Context: any thread.
 */
void pw_load_config_init(struct pw_load_config *cfg);

/**
 * pw_load_run - run the load @cfg describes on the shards of @rt and wait
 * for it to end.
 *
 * Spawns one task per connection (pw_runtime_spawn), waits in cfg->wait,
 * reports progress, and once every connection task has finished merges
 * the shards' histograms and counters into @res. @rt must not be
 * destroyed while this runs; other work may share its shards.
 * Return: 0 with @res set up (also after an early stop, with stopped set);
 * -EINVAL for NULL arguments or a setting out of range (an empty target
 * and no addrs, conns 0, a path that is empty, not starting with '/' or
 * holding a blank or control byte, a host with one, a request that
 * pw_load_req_check() refuses, a method, header or body with the echo
 * or udp protocol, a udp size out of 8..65507); -ENOMEM; or the error of
 * pw_runtime_spawn() (the connections already spawned are stopped first,
 * and @res is left unset).
 * Context: any thread that is not a shard of @rt.
 */
int pw_load_run(struct pw_runtime *rt, const struct pw_load_config *cfg,
		struct pw_load_result *res);

/**
 * pw_load_result_destroy - free the histograms of @res. NULL is a no-op.
 * Context: any thread.
 */
void pw_load_result_destroy(struct pw_load_result *res);

/**
 * pw_load_print - write @res as a report: a line naming the target (and
 * its addresses when it had several, or was a name or URL), the
 * percentile table (p50, p90, p99, p99.9, p99.99, max) of latency and
 * service time in adaptive units (812.45us, 12.34ms, 1.03s: apps/units.h),
 * the mean and min, then requests, errors by cause, throughput and bytes;
 * for PW_LOAD_UDP a line of datagrams (struct pw_load_udp_stats).
 * Return: 0; -EINVAL for NULL arguments; -EIO when writing failed.
 * Context: any thread.
 */
int pw_load_print(const struct pw_load_config *cfg,
		  const struct pw_load_result *res, FILE *f);

/* Files a run's results were also written to, named in its JSON. */
struct pw_load_outputs {
	const char *hgrm;    /* the latency's percentile distribution */
	const char *hdr_log; /* the interval log */
};

/**
 * pw_load_write_json - write @res as one JSON object and a newline:
 * "proto", "target" (the first address), "url" (cfg->target_name or
 * null), "addresses" (every address connected to), "method" (null for
 * echo), "conns", "shards", "rate" (0: closed loop), "mode"
 * ("closed" or "open"), "elapsed_s", "start_wall_s", "requests", "errors"
 * (total), "error_causes" {connect, reset, timeout, bad, other},
 * "bad_status", "throughput_rps", "bytes_sent", "bytes_received",
 * "stopped", "latency" and "service" (pw_hist_write_json() objects, in
 * ns), "latency_hdr" (the latency histogram whole, in HdrHistogram's V2
 * compressed encoding as base64: what `pinwheel report` merges), and
 * "hgrm" and "hdr_log" (the file names in @out, or null; @out may be
 * NULL), and for PW_LOAD_UDP "udp" {sent, received, lost, in_flight,
 * late, bad, send_errors, icmp}.
 * Return: 0; -EINVAL for NULL arguments; -ENOMEM; -EIO when writing
 * failed.
 * Context: any thread.
 */
int pw_load_write_json(const struct pw_load_config *cfg,
		       const struct pw_load_result *res,
		       const struct pw_load_outputs *out, FILE *f);

#endif /* PW_APPS_LOAD_H */
