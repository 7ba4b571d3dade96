/* SPDX-License-Identifier: MIT */
/*
 * load.c - the load generator (see load.h) and `pinwheel load`.
 *
 * One task per connection. It connects, then loops: wait for the next
 * due time (open loop only), send the request, read until the answer is
 * whole, record it in the histograms of the shard it runs on. A task
 * that loses its connection hands its slot (quota, schedule) to a fresh
 * task and finishes: every leaf of a socket dies with the task that used
 * it, so no leaf is re-armed while the kernel may still complete it.
 * With --proto udp the task is apps/load_udp.c's; the run below (its
 * shards, histograms, progress and intervals, shared through
 * apps/load_int.h) and the reports are the same.
 *
 * Each shard's counters and histograms are written only by that shard's
 * thread. The thread in pw_load_run() reads them once every connection
 * task has gone (the live count), and, for progress, asks the shards for
 * a copy: it raises snap_req; the next answer recorded on each shard
 * copies the shard's numbers into the shard's snapshot and publishes
 * snap_done. The caller's thread reads a snapshot only while snap_done
 * equals its own request, and the shard writes it only after a new one.
 *
 * Interval histograms (with an interval hook) travel the other way, in
 * a one-slot mailbox per shard so that no answer is lost: the caller's
 * thread raises ivl_req at each second of the measured run; the next
 * answer on each shard, before it is recorded, swaps the shard's
 * interval histogram with the empty one in the mailbox and sets
 * ivl_full. The caller's thread merges a full mailbox, empties it and
 * clears ivl_full; a shard whose mailbox is still full keeps counting
 * into its own histogram and hands it over at a later request. Once
 * every task has gone, what is left in the shards is read directly.
 *
 * Waits in the tasks are cut into slices of at most STOP_SLICE_NS so that
 * a stop is seen promptly; a receive that times out stays armed, so no
 * byte is lost by that.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"
#include "apps/http_parse.h"
#include "apps/load.h"
#include "apps/load_int.h"
#include "apps/load_req.h"
#include "apps/load_udp.h"
#include "apps/resolve.h"
#include "apps/units.h"
#include "pinwheel/hist_hdr.h"

#define CHECK_NS       (10 * PW_NSEC_PER_MSEC)
#define SNAP_WAIT_NS   (200 * PW_NSEC_PER_MSEC)
#define LOAD_SIZE_MAX  PW_LOAD_BODY_MAX
#define LOAD_CONNS_MAX 65536u

/* ---- the run ----------------------------------------------------------- */

enum {
	ST_START,
	ST_CONNECT,
	ST_NEXT,
	ST_WAIT,
	ST_SEND,
	ST_RECV,
	ST_CLOSE,
	ST_BACKOFF,
};

/* How a request ended. */
enum {
	END_OK,
	END_CONNECT,
	END_RESET,
	END_TIMEOUT,
	END_BAD,
	END_BAD_STATUS,
	END_OTHER,
};

struct load_conn {
	struct load_slot s;
	int step;
	int fd;
	bool have_buf;
	bool handed_over;		 /* a new task carries the slot on */
	bool reconnect;			 /* after the close, connect again */
	bool sending;			 /* the send of the request has begun */
	uint64_t t_due, t_sent, t_limit; /* CLOCK_MONOTONIC ns */
	size_t got;			 /* echo bytes back so far */
	uint64_t rx_bytes;		 /* received for this request */
	struct pw_net_buf buf;
	struct pw_http_resp_parser hp;
	struct pw_connect cn;
	struct pw_send tx;
	struct pw_recv rx;
	struct pw_close cl;
	struct pw_sleep sl;
};

struct load_shard *pw__load_shard(const struct load_run *run)
{
	int id = pw_shard_id();

	return &run->shards[id >= 0 && (unsigned)id < run->nshards ? id : 0];
}

/* The runtime deadline @at (CLOCK_MONOTONIC) maps to, cut at @slice from
 * now when @slice is not 0. */
uint64_t pw__load_deadline(uint64_t at, uint64_t slice)
{
	uint64_t now = pw_cli_mono_ns();
	uint64_t left = at > now ? at - now : 0;
	pw_time_t rt = pw_time_now(); /* 0 off a shard */

	if (slice && left > slice)
		left = slice;
	return rt + left;
}

bool pw__load_stopping(const struct load_run *run)
{
	/* relaxed: pairs with the relaxed stores in pw_load_run(); a bare
	 * flag, no data travels with it. */
	return atomic_load_explicit(&run->stop, memory_order_relaxed);
}

/* Copy the shard's numbers for the progress line when asked to. */
static void maybe_snapshot(struct load_run *run, struct load_shard *sh)
{
	/* acquire: pairs with the release in take_snapshot(): the caller
	 * is done reading the previous snapshot before we overwrite it. */
	uint64_t want =
		atomic_load_explicit(&run->snap_req, memory_order_acquire);

	if (want == sh->served)
		return;
	sh->served = want;
	pw_hist_reset(&sh->snap);
	pw_hist_merge(&sh->snap, &sh->lat);
	sh->snap_requests = sh->requests;
	sh->snap_errors = sh->errors;
	sh->snap_answers = sh->answers;
	/* release: pairs with the acquire in take_snapshot(). */
	atomic_store_explicit(&sh->snap_done, want, memory_order_release);
}

/* Hand the shard's interval histogram over when asked to and the
 * mailbox is empty. */
static void hand_interval(struct load_run *run, struct load_shard *sh)
{
	/* relaxed: see ivl_req. */
	uint64_t want =
		atomic_load_explicit(&run->ivl_req, memory_order_relaxed);
	struct pw_hist t;

	if (want == sh->ivl_served ||
	    /* acquire: pairs with the release in take_intervals(): the
	     * caller's thread is done with ivl_out. */
	    atomic_load_explicit(&sh->ivl_full, memory_order_acquire))
		return;
	t = sh->ivl_out;
	sh->ivl_out = sh->ivl;
	sh->ivl = t;
	sh->ivl_served = want;
	/* release: pairs with the acquire in take_intervals(). */
	atomic_store_explicit(&sh->ivl_full, true, memory_order_release);
}

void pw__load_ended(struct load_run *run, struct load_shard *sh, bool ok,
		    uint64_t t_due, uint64_t t_sent, uint64_t now)
{
	if (run->intervals)
		hand_interval(run, sh);
	sh->answers++;
	if (ok) {
		pw_hist_record(&sh->lat, now - t_due);
		pw_hist_record(&sh->svc, now - t_sent);
		if (run->intervals)
			pw_hist_record(&sh->ivl, now - t_due);
	}
	maybe_snapshot(run, sh);
}

/* Count the end of the request in flight. */
static void request_end(struct load_conn *c, int how, uint64_t now)
{
	struct load_run *run = c->s.run;
	struct load_shard *sh = pw__load_shard(run);
	bool measured = c->t_due >= run->measure && now <= run->end;

	if (measured) {
		if (c->s.quota != NO_QUOTA && c->s.quota)
			c->s.quota--;
		sh->last_done = now;
		sh->bytes_sent += run->msg_len;
		sh->bytes_recv += c->rx_bytes;
		if (how == END_OK) {
			sh->requests++;
		} else {
			sh->errors++;
			switch (how) {
			case END_CONNECT:
				sh->err.connect++;
				sh->bytes_sent -= run->msg_len;
				break;
			case END_RESET:
				sh->err.reset++;
				break;
			case END_TIMEOUT:
				sh->err.timeout++;
				break;
			case END_BAD_STATUS:
				sh->bad_status++;
				/* fall through */
			case END_BAD:
				sh->err.bad++;
				break;
			default:
				sh->err.other++;
				break;
			}
		}
	}
	pw__load_ended(run, sh, measured && how == END_OK, c->t_due, c->t_sent,
		       now);
}

static int errno_end(int32_t res)
{
	switch (res) {
	case 0:
	case -ECONNRESET:
	case -EPIPE:
	case -ECONNABORTED:
		return END_RESET;
	case -ETIMEDOUT:
		return END_TIMEOUT;
	default:
		return END_OTHER;
	}
}

/* Close the connection; with @reconnect the slot goes on on a new one
 * unless the run is over. */
static void close_conn(struct load_conn *c, bool reconnect)
{
	c->reconnect = reconnect;
	c->step = ST_CLOSE;
	pw_close_init(&c->cl, c->fd);
}

/* End the request in flight and close; the slot goes on on a new
 * connection unless the run is over. */
static void fail(struct load_conn *c, int how)
{
	request_end(c, how, pw_cli_mono_ns());
	close_conn(c, true);
}

static void conn_drop(void *state);
static enum pw_poll conn_poll(struct pw_cx *cx, void *state);
static void nap_1ms(void);

/* Hand the slot to a fresh task: this one keeps its leaves until the
 * kernel is done with them. */
static void hand_over(struct load_conn *c)
{
	struct load_conn n;

	memset(&n, 0, sizeof(n));
	n.s = c->s;
	n.fd = -1;
	n.step = ST_START;
	if (!pw_spawn(NULL, conn_poll, &n, sizeof(n), conn_drop))
		c->handed_over = true;
}

/*
 * The answer to a HEAD, which ends with its head whatever its
 * Content-Length says (RFC 9110 9.3.2), while the parser, which has no
 * such mode, goes on to read a body by that length: the head is whole
 * once the parser has set resp.head_len, which it does at the blank line
 * (then returning 0 in the body, or -ENOTSUP for a head without a
 * length, which a HEAD answer may well be). Every byte received for the
 * request must belong to that head (a parser that returned 1 read a body
 * of Content-Length bytes: they are past the head, so bad too);
 * step_recv() starts the parser afresh for the next answer. @rc is the
 * parser's result. True once the answer is whole or bad, as consume().
 */
static bool head_answer(struct load_conn *c, int rc, int *how)
{
	const struct pw_http_resp *r = &c->hp.resp;

	if (rc == 0 && !r->head_len)
		return false;
	if ((rc < 0 && rc != -ENOTSUP) || !r->head_len ||
	    c->rx_bytes != r->head_len) {
		*how = END_BAD;
		return true;
	}
	*how = r->status >= 200 && r->status < 400 ? END_OK : END_BAD_STATUS;
	return true;
}

/* Consume the borrowed buffer; true once the answer is whole. @how gets
 * END_OK or why the answer is bad. */
static bool consume(struct load_conn *c, int *how)
{
	const struct load_run *run = c->s.run;
	const char *data = c->buf.data;
	size_t len = c->buf.len, used = 0;

	c->rx_bytes += len;
	if (run->cfg->proto == PW_LOAD_ECHO) {
		size_t want = run->msg_len - c->got;
		if (len > want || memcmp(data, run->msg + c->got, len)) {
			*how = END_BAD;
			return true;
		}
		c->got += len;
		*how = END_OK;
		return c->got == run->msg_len;
	}
	int rc = pw_http_resp_parse(&c->hp, data, len, &used);
	if (run->head_only)
		return head_answer(c, rc, how);
	if (rc < 0 || (rc == 1 && used != len)) {
		*how = END_BAD; /* malformed, or bytes nobody asked for */
		return true;
	}
	if (rc == 0)
		return false;
	*how = c->hp.resp.status >= 200 && c->hp.resp.status < 400 ?
		       END_OK :
		       END_BAD_STATUS;
	return true;
}

/* The address connection @idx of @cfg goes to. */
static const struct pw_net_addr *conn_addr(const struct pw_load_config *cfg,
					   unsigned idx)
{
	return cfg->naddrs ? &cfg->addrs[idx % cfg->naddrs] : &cfg->target;
}

/* What a step of conn_poll() asks for next. */
enum { GO, WAIT, END };

/* ST_START: connect, unless the run or the slot's quota is over. */
static int step_start(struct load_conn *c)
{
	struct load_run *run = c->s.run;

	if (pw__load_stopping(run) || pw_cli_mono_ns() >= run->end ||
	    c->s.quota == 0)
		return END;
	pw_connect_init(&c->cn, conn_addr(run->cfg, c->s.idx));
	c->t_due = c->t_sent = pw_cli_mono_ns();
	c->rx_bytes = 0;
	c->step = ST_CONNECT;
	return GO;
}

/* ST_CONNECT: a connection, or a failed connect and a back-off. */
static int step_connect(struct pw_cx *cx, struct load_conn *c)
{
	struct load_run *run = c->s.run;
	uint64_t limit = c->t_sent + run->cfg->timeout_ns;
	int fd;

	if (pw_connect_poll(cx, &c->cn, pw__load_deadline(limit, 0), &fd) ==
	    PW_PENDING)
		return WAIT;
	if (fd < 0) {
		/* A failed connect uses up a request. */
		request_end(c, END_CONNECT, pw_cli_mono_ns());
		pw_sleep_init(&c->sl, BACKOFF_NS);
		c->step = ST_BACKOFF;
		return GO;
	}
	pw__load_shard(run)->connects++;
	c->fd = fd;
	pw_recv_init(&c->rx, fd);
	pw_send_init(&c->tx, fd);
	pw_close_init(&c->cl, fd);
	pw_http_resp_parser_init(&c->hp);
	c->step = ST_NEXT;
	return GO;
}

/* ST_NEXT: the next request, sent now (closed loop) or when due (open
 * loop); the end of the run or of the quota closes instead. */
static int step_next(struct load_conn *c)
{
	struct load_run *run = c->s.run;
	uint64_t now = pw_cli_mono_ns();

	if (pw__load_stopping(run) || now >= run->end || c->s.quota == 0) {
		close_conn(c, false);
		return GO;
	}
	c->got = 0;
	c->rx_bytes = 0;
	if (!run->interval) {
		c->t_due = now;
		c->step = ST_SEND;
		return GO;
	}
	c->t_due = c->s.due;
	if (c->t_due >= run->end) {
		/* Due after the end: nothing more to send. */
		close_conn(c, false);
		return GO;
	}
	c->s.due += run->interval;
	c->step = ST_WAIT;
	pw_sleep_init_at(&c->sl, pw__load_deadline(c->t_due, STOP_SLICE_NS));
	return GO;
}

/* ST_WAIT: sleep until the request is due, a slice at a time. */
static int step_wait(struct pw_cx *cx, struct load_conn *c)
{
	if (pw_cli_mono_ns() >= c->t_due) {
		pw_sleep_cancel(&c->sl);
		c->step = ST_SEND;
		return GO;
	}
	if (pw_sleep_poll(cx, &c->sl) == PW_PENDING)
		return WAIT;
	if (pw__load_stopping(c->s.run)) {
		close_conn(c, false);
		return GO;
	}
	/* Woken early (a slice, or the clock's rounding): wait for the
	 * rest. */
	pw_sleep_reset(&c->sl, pw__load_deadline(c->t_due, STOP_SLICE_NS));
	return GO;
}

/* ST_SEND: the request, within the timeout. */
static int step_send(struct pw_cx *cx, struct load_conn *c)
{
	struct load_run *run = c->s.run;
	int32_t res;

	if (!c->sending) {
		c->sending = true;
		c->t_sent = pw_cli_mono_ns();
	}
	if (pw_send_poll(cx, &c->tx, run->msg, run->msg_len,
			 pw__load_deadline(c->t_sent + run->cfg->timeout_ns, 0),
			 &res) == PW_PENDING)
		return WAIT;
	c->sending = false;
	if (res < 0) {
		fail(c, errno_end(res));
		return GO;
	}
	c->t_limit = c->t_sent + run->cfg->timeout_ns;
	c->step = ST_RECV;
	return GO;
}

/* ST_RECV timed out: the run is over (the request in flight is neither
 * an answer nor an error), or the request is. */
static void recv_timeout(struct load_conn *c)
{
	struct load_run *run = c->s.run;
	uint64_t now = pw_cli_mono_ns();

	if (pw__load_stopping(run) || now >= run->end)
		close_conn(c, false);
	else if (now >= c->t_limit)
		fail(c, END_TIMEOUT);
}

/* ST_RECV: the answer, a buffer at a time, until it is whole. */
static int step_recv(struct pw_cx *cx, struct load_conn *c)
{
	struct load_run *run = c->s.run;
	uint64_t limit = run->end < c->t_limit ? run->end : c->t_limit;
	int32_t res;
	bool whole;
	int how;

	if (pw_recv_poll(cx, &c->rx, pw__load_deadline(limit, STOP_SLICE_NS),
			 &c->buf, &res) == PW_PENDING)
		return WAIT;
	if (res == -ETIMEDOUT) {
		recv_timeout(c);
		return GO;
	}
	if (res <= 0) {
		fail(c, errno_end(res));
		return GO;
	}
	c->have_buf = true;
	whole = consume(c, &how);
	pw_net_buf_release(&c->buf);
	c->have_buf = false;
	if (!whole)
		return GO;
	if (how != END_OK && how != END_BAD_STATUS) {
		fail(c, how);
		return GO;
	}
	request_end(c, how, pw_cli_mono_ns());
	if (run->cfg->proto == PW_LOAD_HTTP && !c->hp.resp.keep_alive) {
		close_conn(c, true);
		return GO;
	}
	if (run->head_only) /* the parser may be in a body: see head_answer() */
		pw_http_resp_parser_init(&c->hp);
	c->step = ST_NEXT;
	return GO;
}

/* ST_CLOSE: close, and hand the slot on when it reconnects. */
static int step_close(struct pw_cx *cx, struct load_conn *c)
{
	struct load_run *run = c->s.run;
	int32_t res;

	if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
		return WAIT;
	c->fd = -1;
	if (c->reconnect && !pw__load_stopping(run) &&
	    pw_cli_mono_ns() < run->end && c->s.quota)
		hand_over(c);
	return END;
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct load_conn *c = state;
	int next;

	for (;;) {
		switch (c->step) {
		case ST_START:
			next = step_start(c);
			break;
		case ST_CONNECT:
			next = step_connect(cx, c);
			break;
		case ST_BACKOFF:
			if (pw_sleep_poll(cx, &c->sl) == PW_PENDING)
				return PW_PENDING;
			c->step = ST_START;
			continue;
		case ST_NEXT:
			next = step_next(c);
			break;
		case ST_WAIT:
			next = step_wait(cx, c);
			break;
		case ST_SEND:
			next = step_send(cx, c);
			break;
		case ST_RECV:
			next = step_recv(cx, c);
			break;
		default: /* ST_CLOSE */
			next = step_close(cx, c);
			break;
		}
		if (next == WAIT)
			return PW_PENDING;
		if (next == END)
			return pw_ready(cx, 0);
	}
}

static void conn_drop(void *state)
{
	struct load_conn *c = state;
	struct load_run *run = c->s.run;

	if (c->have_buf)
		pw_net_buf_release(&c->buf);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	pw_connect_cancel(&c->cn);
	pw_sleep_cancel(&c->sl);
	if (c->fd >= 0 && !pw_close_cancel(&c->cl))
		close(c->fd);
	if (!c->handed_over)
		/* release: pairs with the acquire loads in pw_load_run();
		 * this shard's numbers are final for this task. */
		atomic_fetch_sub_explicit(&run->live, 1, memory_order_release);
}

void pw_load_config_init(struct pw_load_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->proto = PW_LOAD_HTTP;
	cfg->path = "/";
	cfg->size = 64;
	cfg->conns = 1;
	cfg->warmup_ns = PW_NSEC_PER_SEC;
	cfg->timeout_ns = 2 * PW_NSEC_PER_SEC;
}

/* The request (HTTP) or the payload (echo), malloc'd. */
static int build_msg(const struct pw_load_config *cfg, char **out, size_t *len)
{
	char host[PW_NET_ADDR_STRLEN];

	if (cfg->proto != PW_LOAD_HTTP) {
		char *p = malloc(cfg->size);
		if (!p)
			return -ENOMEM;
		for (size_t i = 0; i < cfg->size; i++)
			p[i] = (char)('a' + (i * 7 + i / 26) % 26);
		*out = p;
		*len = cfg->size;
		return 0;
	}
	/* The Host header, when nothing else gives one: the address. */
	if (pw_net_addr_format(conn_addr(cfg, 0), host, sizeof(host)) < 0)
		host[0] = '\0';
	return pw_load_req_build(cfg, host, out, len);
}

static int check_config(const struct pw_load_config *cfg)
{
	if ((!cfg->target.len && !cfg->naddrs) ||
	    (cfg->naddrs && !cfg->addrs) || !cfg->conns ||
	    cfg->conns > LOAD_CONNS_MAX || !cfg->timeout_ns)
		return -EINVAL;
	for (unsigned i = 0; i < cfg->naddrs; i++)
		if (!cfg->addrs[i].len)
			return -EINVAL;
	if (cfg->proto == PW_LOAD_UDP && (cfg->size < PW_LOAD_UDP_SIZE_MIN ||
					  cfg->size > PW_LOAD_UDP_SIZE_MAX))
		return -EINVAL;
	if (cfg->proto != PW_LOAD_HTTP)
		return cfg->size && cfg->size <= LOAD_SIZE_MAX &&
				       !cfg->method && !cfg->nheaders &&
				       !cfg->body ?
			       0 :
			       -EINVAL;
	if (cfg->proto != PW_LOAD_HTTP)
		return -EINVAL;
	return pw_load_req_check(cfg, NULL, 0);
}

static void free_shards(struct load_run *run)
{
	if (!run->shards)
		return;
	for (unsigned i = 0; i < run->nshards; i++) {
		pw_hist_destroy(&run->shards[i].lat);
		pw_hist_destroy(&run->shards[i].svc);
		pw_hist_destroy(&run->shards[i].snap);
		pw_hist_destroy(&run->shards[i].ivl);
		pw_hist_destroy(&run->shards[i].ivl_out);
	}
	free(run->shards);
	run->shards = NULL;
}

static int init_shards(struct load_run *run)
{
	size_t sz = sizeof(struct load_shard) * run->nshards;

	sz = (sz + 63) / 64 * 64;
	run->shards = aligned_alloc(64, sz);
	if (!run->shards)
		return -ENOMEM;
	memset(run->shards, 0, sz);
	for (unsigned i = 0; i < run->nshards; i++) {
		struct load_shard *sh = &run->shards[i];
		if (pw_hist_init(&sh->lat, 0, PW_LOAD_HIST_DIGITS) ||
		    pw_hist_init(&sh->svc, 0, PW_LOAD_HIST_DIGITS) ||
		    pw_hist_init(&sh->snap, 0, PW_LOAD_HIST_DIGITS) ||
		    (run->intervals &&
		     (pw_hist_init(&sh->ivl, 0, PW_LOAD_HIST_DIGITS) ||
		      pw_hist_init(&sh->ivl_out, 0, PW_LOAD_HIST_DIGITS)))) {
			free_shards(run);
			return -ENOMEM;
		}
		atomic_init(&sh->ivl_full, false);
	}
	return 0;
}

static bool wait_hook(const struct pw_load_config *cfg, uint64_t ns)
{
	if (cfg->wait)
		return cfg->wait(cfg->arg, ns);
	struct timespec ts = { (time_t)(ns / PW_NSEC_PER_SEC),
			       (long)(ns % PW_NSEC_PER_SEC) };
	nanosleep(&ts, NULL);
	return false;
}

/* Ask every shard for its numbers and report what came back in time. */
static void take_snapshot(struct load_run *run, struct pw_hist *sum,
			  uint64_t *prev_answers, uint64_t *prev_at)
{
	const struct pw_load_config *cfg = run->cfg;
	/* relaxed: this thread is the only writer; pairs with nothing. */
	uint64_t want =
		atomic_load_explicit(&run->snap_req, memory_order_relaxed) + 1;
	uint64_t t0 = pw_cli_mono_ns();
	bool got[PW_MAX_SHARDS] = { false };
	unsigned ngot = 0;
	/* Shards without connections never answer. */
	unsigned active = run->nshards < cfg->conns ? run->nshards : cfg->conns;

	/* release: our reads of the last snapshots come before the shards
	 * overwrite them; pairs with the acquire in maybe_snapshot(). */
	atomic_store_explicit(&run->snap_req, want, memory_order_release);
	struct pw_load_progress p = { 0 };
	uint64_t answers = 0;
	pw_hist_reset(sum);
	while (ngot < active) {
		for (unsigned i = 0; i < active; i++) {
			struct load_shard *sh = &run->shards[i];
			/* acquire: pairs with the release in
			 * maybe_snapshot(); the snapshot is then ours to
			 * read until the next request. */
			if (got[i] ||
			    atomic_load_explicit(&sh->snap_done,
						 memory_order_acquire) != want)
				continue;
			got[i] = true;
			ngot++;
			pw_hist_merge(sum, &sh->snap);
			p.requests += sh->snap_requests;
			p.errors += sh->snap_errors;
			answers += sh->snap_answers;
		}
		/* acquire: pairs with the release in conn_drop(). */
		if (ngot == active || pw_cli_mono_ns() - t0 > SNAP_WAIT_NS ||
		    atomic_load_explicit(&run->live, memory_order_acquire) == 0)
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	uint64_t now = pw_cli_mono_ns();
	p.elapsed_ns = now - run->start;
	p.warmup = now < run->measure;
	if (answers >= *prev_answers && now > *prev_at)
		p.rate = (double)(answers - *prev_answers) * 1e9 /
			 (double)(now - *prev_at);
	if (ngot == active) {
		*prev_answers = answers;
		*prev_at = now;
	}
	p.p50_ns = pw_hist_percentile(sum, 50);
	p.p99_ns = pw_hist_percentile(sum, 99);
	cfg->progress(cfg->arg, &p);
}

/* Give the interval hook run->ivl_sum as interval run->ivl_next, from
 * its second to @end_ns (since the measured run began), and empty it. */
static void emit_interval(struct load_run *run, uint64_t end_ns)
{
	uint64_t start = run->ivl_next * PW_NSEC_PER_SEC;
	struct pw_load_interval iv = {
		.index = run->ivl_next,
		.start_ns = start,
		.length_ns = end_ns > start ? end_ns - start : 0,
		.run_wall_ns = run->wall_measure,
		.hist = &run->ivl_sum,
	};

	run->cfg->interval(run->cfg->arg, &iv);
	pw_hist_reset(&run->ivl_sum);
	run->ivl_next++;
}

/* Take what the mailboxes hold; with @wait, wait up to SNAP_WAIT_NS for
 * every shard with connections to fill its own. */
static void take_intervals(struct load_run *run, bool wait)
{
	unsigned active = run->nshards < run->cfg->conns ? run->nshards :
							   run->cfg->conns;
	bool got[PW_MAX_SHARDS] = { false };
	uint64_t t0 = pw_cli_mono_ns();
	unsigned ngot = 0;

	for (;;) {
		for (unsigned i = 0; i < active; i++) {
			struct load_shard *sh = &run->shards[i];
			/* acquire: pairs with the release in
			 * hand_interval(); ivl_out is ours to read. */
			if (got[i] ||
			    !atomic_load_explicit(&sh->ivl_full,
						  memory_order_acquire))
				continue;
			got[i] = true;
			ngot++;
			pw_hist_merge(&run->ivl_sum, &sh->ivl_out);
			pw_hist_reset(&sh->ivl_out);
			/* release: pairs with the acquire in
			 * hand_interval(): the mailbox is empty again. */
			atomic_store_explicit(&sh->ivl_full, false,
					      memory_order_release);
		}
		/* acquire: pairs with the release in conn_drop(). */
		if (!wait || ngot == active ||
		    pw_cli_mono_ns() - t0 > SNAP_WAIT_NS ||
		    !atomic_load_explicit(&run->live, memory_order_acquire))
			return;
		nap_1ms();
	}
}

/* A second of the measured run is over: ask the shards for it. */
static void next_interval(struct load_run *run)
{
	/* relaxed: see ivl_req. */
	atomic_store_explicit(&run->ivl_req, run->ivl_next + 1,
			      memory_order_relaxed);
	take_intervals(run, true);
	emit_interval(run, (run->ivl_next + 1) * PW_NSEC_PER_SEC);
}

/* Every task has gone: the rest of every shard is the last interval,
 * to the end of the measured time. */
static void last_interval(struct load_run *run, uint64_t elapsed_ns)
{
	take_intervals(run, false);
	for (unsigned i = 0; i < run->nshards; i++)
		pw_hist_merge(&run->ivl_sum, &run->shards[i].ivl);
	if (pw_hist_count(&run->ivl_sum) || !run->ivl_next ||
	    elapsed_ns > run->ivl_next * PW_NSEC_PER_SEC)
		emit_interval(run, elapsed_ns);
}

static void collect(struct load_run *run, struct pw_load_result *res,
		    uint64_t stopped_at)
{
	uint64_t last = 0;

	for (unsigned i = 0; i < run->nshards; i++) {
		struct load_shard *sh = &run->shards[i];
		pw_hist_merge(&res->latency, &sh->lat);
		pw_hist_merge(&res->service, &sh->svc);
		res->requests += sh->requests;
		res->errors += sh->errors;
		res->err.connect += sh->err.connect;
		res->err.reset += sh->err.reset;
		res->err.timeout += sh->err.timeout;
		res->err.bad += sh->err.bad;
		res->err.other += sh->err.other;
		res->bad_status += sh->bad_status;
		res->connects += sh->connects;
		res->bytes_sent += sh->bytes_sent;
		res->bytes_received += sh->bytes_recv;
		pw__load_udp_add(&res->udp, &sh->udp);
		if (sh->last_done > last)
			last = sh->last_done;
	}
	/* Measured time: to the end of the duration or the stop; a run
	 * that ended by its request count ends at its last answer. */
	uint64_t end = run->end;
	if (stopped_at < end)
		end = stopped_at;
	if (run->cfg->requests && last && last < end)
		end = last;
	if (end == UINT64_MAX)
		end = pw_cli_mono_ns();
	res->elapsed_ns = end > run->measure ? end - run->measure : 0;
	res->throughput = res->elapsed_ns ? (double)res->requests * 1e9 /
						    (double)res->elapsed_ns :
					    0.0;
}

void pw_load_result_destroy(struct pw_load_result *res)
{
	if (!res)
		return;
	pw_hist_destroy(&res->latency);
	pw_hist_destroy(&res->service);
}

/* The run's clock and pace: start now, measure after the warm-up, end
 * after the duration (none: by request count only). */
static void run_clock(struct load_run *run)
{
	const struct pw_load_config *cfg = run->cfg;
	uint64_t duration = cfg->duration_ns;

	if (!duration && !cfg->requests)
		duration = 10 * PW_NSEC_PER_SEC;
	if (cfg->rate)
		run->interval = (uint64_t)((double)cfg->conns * 1e9 /
					   (double)cfg->rate);
	if (cfg->rate && !run->interval)
		run->interval = 1;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	run->start = pw_cli_mono_ns();
	run->measure = run->start + cfg->warmup_ns;
	run->wall_measure = (uint64_t)wall.tv_sec * PW_NSEC_PER_SEC +
			    (uint64_t)wall.tv_nsec + cfg->warmup_ns;
	atomic_init(&run->ivl_req, 0);
	run->end = duration ? run->measure + duration : UINT64_MAX;
	atomic_init(&run->stop, false);
	atomic_init(&run->snap_req, 0);
	atomic_init(&run->live, cfg->conns);
}

/* Set up @run for @cfg on @n shards, and @res; the clock starts. On
 * error (-ENOMEM, or -EINVAL from build_msg()) nothing is left. */
static int run_init(struct load_run *run, const struct pw_load_config *cfg,
		    unsigned n, struct pw_load_result *res)
{
	int err;

	memset(run, 0, sizeof(*run));
	run->cfg = cfg;
	run->nshards = n;
	run->intervals = cfg->interval != NULL;
	if ((err = build_msg(cfg, &run->msg, &run->msg_len)))
		return err;
	run->head_only = cfg->proto == PW_LOAD_HTTP &&
			 pw_load_req_head_only(cfg);
	if (run->intervals &&
	    pw_hist_init(&run->ivl_sum, 0, PW_LOAD_HIST_DIGITS)) {
		free(run->msg);
		return -ENOMEM;
	}
	if ((err = init_shards(run))) {
		pw_hist_destroy(&run->ivl_sum);
		free(run->msg);
		return err;
	}
	memset(res, 0, sizeof(*res));
	if (pw_hist_init(&res->latency, 0, PW_LOAD_HIST_DIGITS) ||
	    pw_hist_init(&res->service, 0, PW_LOAD_HIST_DIGITS)) {
		pw_load_result_destroy(res);
		free_shards(run);
		pw_hist_destroy(&run->ivl_sum);
		free(run->msg);
		return -ENOMEM;
	}
	res->shards = n;
	run_clock(run);
	return 0;
}

/* Spawn one task per connection, connection i on shard i % shards. On
 * error those already running are told to stop. */
static int spawn_conns(struct pw_runtime *rt, struct load_run *run)
{
	const struct pw_load_config *cfg = run->cfg;
	uint64_t share = cfg->requests / cfg->conns;
	uint64_t extra = cfg->requests % cfg->conns;
	unsigned i;
	int err = 0;

	for (i = 0; i < cfg->conns; i++) {
		struct load_conn c;

		memset(&c, 0, sizeof(c));
		c.s.run = run;
		c.s.idx = i;
		c.s.quota = cfg->requests ? share + (i < extra) : NO_QUOTA;
		/* Connection i starts i/R seconds in: together they make
		 * one evenly spaced schedule of R per second. */
		if (cfg->rate)
			c.s.due = run->start + (uint64_t)((double)i * 1e9 /
							  (double)cfg->rate);
		c.fd = -1;
		c.step = ST_START;
		if (cfg->proto == PW_LOAD_UDP)
			err = pw__load_udp_spawn(rt, i % run->nshards, &c.s);
		else
			err = pw_runtime_spawn(rt, i % run->nshards, conn_poll,
					       &c, sizeof(c), conn_drop);
		if (err)
			break;
	}
	if (err) {
		/* Stop what runs; the rest never started. relaxed: the flag
		 * pairs with the load in pw__load_stopping(); the count, with no
		 * writes to publish, joins the release sequence of
		 * conn_drop()'s decrements. */
		atomic_store_explicit(&run->stop, true, memory_order_relaxed);
		atomic_fetch_sub_explicit(&run->live, cfg->conns - i,
					  memory_order_relaxed);
	}
	return err;
}

static void nap_1ms(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

/*
 * Wait until every connection task has gone: a progress report once a
 * second, the wait hook in between until it asks to stop (not after a
 * failed spawn: the tasks are stopping already).
 * Return: when the hook stopped the run (res->stopped set), or
 * UINT64_MAX.
 */
static uint64_t run_wait(struct load_run *run, struct pw_load_result *res,
			 bool failed)
{
	const struct pw_load_config *cfg = run->cfg;
	struct pw_hist sum;
	bool have_sum = cfg->progress && !failed &&
			!pw_hist_init(&sum, 0, PW_LOAD_HIST_DIGITS);
	uint64_t next_report = run->start + PW_NSEC_PER_SEC;
	uint64_t next_ivl = run->measure + PW_NSEC_PER_SEC;
	uint64_t prev_answers = 0, prev_at = run->start;
	uint64_t stopped_at = UINT64_MAX;

	/* acquire: pairs with the release in conn_drop(). */
	while (atomic_load_explicit(&run->live, memory_order_acquire)) {
		if (run->intervals && !failed && pw_cli_mono_ns() >= next_ivl &&
		    next_ivl <= run->end) {
			next_interval(run);
			next_ivl += PW_NSEC_PER_SEC;
		} else if (have_sum && pw_cli_mono_ns() >= next_report) {
			take_snapshot(run, &sum, &prev_answers, &prev_at);
			next_report += PW_NSEC_PER_SEC;
		} else if (failed || stopped_at != UINT64_MAX) {
			nap_1ms();
		} else if (wait_hook(cfg, CHECK_NS)) {
			stopped_at = pw_cli_mono_ns();
			res->stopped = true;
			/* relaxed: pairs with the load in pw__load_stopping(). */
			atomic_store_explicit(&run->stop, true,
					      memory_order_relaxed);
		}
	}
	if (have_sum)
		pw_hist_destroy(&sum);
	return stopped_at;
}

int pw_load_run(struct pw_runtime *rt, const struct pw_load_config *cfg,
		struct pw_load_result *res)
{
	struct load_run run;
	uint64_t stopped_at;
	int err, n;

	if (!rt || !cfg || !res)
		return -EINVAL;
	if ((err = check_config(cfg)))
		return err;
	if ((n = pw_runtime_shards(rt)) < 1)
		return n < 0 ? n : -EINVAL;
	if ((err = run_init(&run, cfg, (unsigned)n, res)))
		return err;
	err = spawn_conns(rt, &run);
	stopped_at = run_wait(&run, res, err != 0);
	if (!err) {
		collect(&run, res, stopped_at);
		res->start_wall_ns = run.wall_measure;
		if (run.intervals)
			last_interval(&run, res->elapsed_ns);
	} else {
		pw_load_result_destroy(res);
	}
	free_shards(&run);
	pw_hist_destroy(&run.ivl_sum);
	free(run.msg);
	return err;
}

/* ---- the report ------------------------------------------------------- */

static const struct {
	const char *label, *key;
	double p;
} rows[] = {
	{ "p50", "50", 50 },	      { "p90", "90", 90 },
	{ "p99", "99", 99 },	      { "p99.9", "99.9", 99.9 },
	{ "p99.99", "99.99", 99.99 }, { "max", "100", 100 },
};

/* The name of @cfg's protocol in both reports. */
static const char *proto_name(const struct pw_load_config *cfg)
{
	return cfg->proto == PW_LOAD_ECHO ? "echo" :
	       cfg->proto == PW_LOAD_UDP  ? "udp" :
					    "http";
}

/* The first line: what was loaded, on how many connections and shards,
 * in which mode. A name or URL is followed by its addresses, several of
 * them by how the connections spread. */
static void print_target(const struct pw_load_config *cfg,
			 const struct pw_load_result *res, FILE *f)
{
	char a[PW_NET_ADDR_STRLEN] = "?";
	unsigned n = cfg->naddrs ? cfg->naddrs : 1;

	pw_net_addr_format(conn_addr(cfg, 0), a, sizeof(a));
	fprintf(f, "%s load of %s", proto_name(cfg),
		cfg->target_name ? cfg->target_name : a);
	for (unsigned i = 0; cfg->target_name && i < n; i++) {
		pw_net_addr_format(conn_addr(cfg, i), a, sizeof(a));
		fprintf(f, "%s%s", i ? ", " : " (", a);
	}
	if (cfg->target_name)
		fprintf(f, "%s)", n > 1 ? "; connections round robin" : "");
	fprintf(f, ": %u connection%s on %u shard%s, ", cfg->conns,
		cfg->conns == 1 ? "" : "s", res->shards,
		res->shards == 1 ? "" : "s");
	if (cfg->rate)
		fprintf(f, "open loop at %" PRIu64 " requests/s\n", cfg->rate);
	else
		fprintf(f, "closed loop\n");
}

int pw_load_print(const struct pw_load_config *cfg,
		  const struct pw_load_result *res, FILE *f)
{
	char l[PW_UNITS_LEN], s[PW_UNITS_LEN];

	if (!cfg || !res || !f)
		return -EINVAL;
	print_target(cfg, res, f);
	fprintf(f, "  %-10s %12s %12s\n", "percentile", "latency", "service");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		fprintf(f, "  %-10s %12s %12s\n", rows[i].label,
			pw_units_ns(pw_hist_percentile(&res->latency,
						       rows[i].p),
				    l, sizeof(l)),
			pw_units_ns(pw_hist_percentile(&res->service,
						       rows[i].p),
				    s, sizeof(s)));
	fprintf(f, "  mean %s, min %s (latency)\n",
		pw_units_ns((uint64_t)(pw_hist_mean(&res->latency) + 0.5), l,
			    sizeof(l)),
		pw_units_ns(pw_hist_min(&res->latency), s, sizeof(s)));
	fprintf(f,
		"  requests %" PRIu64 ", errors %" PRIu64 " (connect %" PRIu64
		", reset %" PRIu64 ", timeout %" PRIu64
		", bad response %" PRIu64 " of which bad status %" PRIu64
		", other %" PRIu64 ")\n",
		res->requests, res->errors, res->err.connect, res->err.reset,
		res->err.timeout, res->err.bad, res->bad_status,
		res->err.other);
	fprintf(f,
		"  throughput %.1f requests/s over %.3f s; %" PRIu64
		" bytes sent, %" PRIu64 " received; %" PRIu64
		" connections opened%s\n",
		res->throughput, (double)res->elapsed_ns / 1e9, res->bytes_sent,
		res->bytes_received, res->connects,
		res->stopped ? "; stopped early" : "");
	if (cfg->proto == PW_LOAD_UDP)
		pw__load_udp_print(&res->udp, f);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* ", "KEY": "S"" (a JSON string) or ", "KEY": null". */
static void json_str_or_null(FILE *f, const char *key, const char *name)
{
	fprintf(f, ", \"%s\": ", key);
	if (name)
		pw_cli_json_str(f, name);
	else
		fprintf(f, "null");
}

/* ", "url": ..., "addresses": [...], "method": ..." of @cfg. */
static void json_request(const struct pw_load_config *cfg, FILE *f)
{
	char a[PW_NET_ADDR_STRLEN];
	unsigned n = cfg->naddrs ? cfg->naddrs : 1;

	json_str_or_null(f, "url", cfg->target_name);
	fprintf(f, ", \"addresses\": [");
	for (unsigned i = 0; i < n; i++) {
		if (pw_net_addr_format(conn_addr(cfg, i), a, sizeof(a)) < 0)
			a[0] = '\0';
		fprintf(f, "%s", i ? ", " : "");
		pw_cli_json_str(f, a);
	}
	fprintf(f, "]");
	json_str_or_null(f, "method",
			 cfg->proto != PW_LOAD_HTTP ? NULL :
			 cfg->method		    ? cfg->method :
						      "GET");
}

int pw_load_write_json(const struct pw_load_config *cfg,
		       const struct pw_load_result *res,
		       const struct pw_load_outputs *out, FILE *f)
{
	char target[PW_NET_ADDR_STRLEN] = "";
	char *hdr = NULL;
	int err;

	if (!cfg || !res || !f)
		return -EINVAL;
	if ((err = pw_hist_encode_hdr(&res->latency, &hdr, NULL)))
		return err;
	pw_net_addr_format(conn_addr(cfg, 0), target, sizeof(target));
	fprintf(f, "{\"proto\": \"%s\", \"target\": ", proto_name(cfg));
	pw_cli_json_str(f, target);
	json_request(cfg, f);
	fprintf(f,
		", \"conns\": %u, \"shards\": %u, \"rate\": %" PRIu64
		", \"mode\": \"%s\", \"elapsed_s\": %.6f, \"start_wall_s\": %.6f"
		", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64
		", \"error_causes\": {\"connect\": %" PRIu64
		", \"reset\": %" PRIu64 ", \"timeout\": %" PRIu64
		", \"bad\": %" PRIu64 ", \"other\": %" PRIu64
		"}, \"bad_status\": %" PRIu64
		", \"throughput_rps\": %.3f, \"bytes_sent\": %" PRIu64
		", \"bytes_received\": %" PRIu64 ", \"connects\": %" PRIu64
		", \"stopped\": %s, \"latency\": ",
		cfg->conns, res->shards, cfg->rate,
		cfg->rate ? "open" : "closed", (double)res->elapsed_ns / 1e9,
		(double)res->start_wall_ns / 1e9, res->requests, res->errors,
		res->err.connect, res->err.reset, res->err.timeout,
		res->err.bad, res->err.other, res->bad_status, res->throughput,
		res->bytes_sent, res->bytes_received, res->connects,
		res->stopped ? "true" : "false");
	pw_hist_write_json(&res->latency, f);
	fprintf(f, ", \"service\": ");
	pw_hist_write_json(&res->service, f);
	fprintf(f, ", \"latency_hdr\": \"%s\"", hdr);
	free(hdr);
	json_str_or_null(f, "hgrm", out ? out->hgrm : NULL);
	json_str_or_null(f, "hdr_log", out ? out->hdr_log : NULL);
	if (cfg->proto == PW_LOAD_UDP)
		pw__load_udp_json(&res->udp, f);
	fprintf(f, "}\n");
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* ---- pinwheel load ----------------------------------------------------- */

/* The longest --duration and --warmup: deadlines stay far from
 * wrapping. */
#define LOAD_TIME_MAX (1000 * 3600 * PW_NSEC_PER_SEC)

/* The flags of `pinwheel load` and the run's results. */
static struct load_cmd {
	const char *proto, *target, *path, *host, *json;
	const char *method, *body, *body_file;
	const char *header; /* in the flag table for --help only */
	/* Taken out of argv by load_args(): -H/--header values (one more
	 * than the cap, to tell it was passed), a bare target, and what
	 * was wrong with them. */
	const char *headers[PW_LOAD_HEADERS_MAX + 1];
	unsigned nheaders;
	const char *bare, *args_error;
	char **argv;		/* the rest, for pw_cli_parse() (malloc'd) */
	char *body_buf;		/* --body-file read whole (malloc'd) */
	struct pw_load_url url; /* a URL target, split */
	struct pw_net_addr addrs[PW_RESOLVE_MAX]; /* a name's addresses */
	/* --hgrm, --hdr-log, --start-at */
	const char *hgrm, *hdr_log, *start_at;
	uint64_t start_wall_ns; /* --start-at as CLOCK_REALTIME ns, or 0 */
	FILE *hgrm_f, *log_f;	/* opened before the run */
	struct pw_hdr_log log;	/* started at the first interval */
	bool log_started;
	uint64_t size, conns, rate, duration, requests, warmup, timeout;
	uint64_t max_error_ppm; /* --max-error-rate, in millionths */
	bool quiet, have_res;
	FILE *json_f; /* --json FILE, opened before the run; NULL for - */
	struct pw_load_config lc;
	struct pw_load_result res;
} L;

static const struct load_cmd load_defaults = {
	.proto = "http",
	.size = 64,
	.conns = 1,
	.warmup = PW_NSEC_PER_SEC,
	.max_error_ppm = PW_CLI_PPM,
};

static const struct pw_cli_opt load_opts[] = {
	{ "--target", PW_CLI_STRING, &L.target, 0, 0, "T",
	  "server: URL, HOST:PORT or address, or T alone (required)" },
	{ "--proto", PW_CLI_STRING, &L.proto, 0, 0, "P",
	  "http (keep-alive requests, the default), echo, or udp "
	  "(datagrams, each answered or lost)" },
	{ "--method", PW_CLI_STRING, &L.method, 0, 0, "M",
	  "HTTP method, a token (default GET)" },
	{ "--header", PW_CLI_STRING, &L.header, 0, 0, "'N: V'",
	  "or -H: a header line; repeat for more (64, 8 KiB)" },
	{ "--body", PW_CLI_STRING, &L.body, 0, 0, "TEXT",
	  "HTTP request body, with its Content-Length" },
	{ "--body-file", PW_CLI_STRING, &L.body_file, 0, 0, "FILE",
	  "HTTP request body read from FILE (up to 16M)" },
	{ "--path", PW_CLI_STRING, &L.path, 0, 0, "PATH",
	  "HTTP request target (default: the URL's, else /)" },
	{ "--host", PW_CLI_STRING, &L.host, 0, 0, "HOST",
	  "HTTP Host header (default: the target as given)" },
	{ "--size", PW_CLI_SIZE, &L.size, 1, LOAD_SIZE_MAX, "N",
	  "echo payload, 1..16M, udp 8..65507 (default 64)" },
	{ "--conns", PW_CLI_UINT, &L.conns, 1, LOAD_CONNS_MAX, "N",
	  "connections, one request outstanding on each (default 1)" },
	{ "--rate", PW_CLI_UINT, &L.rate, 0, 1000000000ull, "R",
	  "open loop: R requests/s in total; 0: closed loop (default)" },
	{ "--duration", PW_CLI_DURATION, &L.duration, PW_NSEC_PER_MSEC,
	  LOAD_TIME_MAX, "D",
	  "measured time (default 10s, or until --requests)" },
	{ "--requests", PW_CLI_UINT, &L.requests, 1, 0, "N",
	  "measured requests (default: until --duration)" },
	{ "--warmup", PW_CLI_DURATION, &L.warmup, 0, LOAD_TIME_MAX, "D",
	  "warm-up whose samples are discarded (default 1s)" },
	{ "--timeout", PW_CLI_DURATION, &L.timeout, PW_NSEC_PER_MSEC,
	  3600 * PW_NSEC_PER_SEC, "D",
	  "per connect and per request, 1ms..1h (default 2s; udp: "
	  "per datagram, 1s)" },
	{ "--max-error-rate", PW_CLI_FRACTION, &L.max_error_ppm, 0, PW_CLI_PPM,
	  "R", "exit 1 when more than R fail, e.g. 1% or 0.01 (100%)" },
	{ "--json", PW_CLI_STRING, &L.json, 0, 0, "FILE",
	  "also write the results as JSON to FILE (- for stdout)" },
	{ "--hgrm", PW_CLI_STRING, &L.hgrm, 0, 0, "FILE",
	  "write the latency as an HdrHistogram .hgrm distribution (us)" },
	{ "--hdr-log", PW_CLI_STRING, &L.hdr_log, 0, 0, "FILE",
	  "write an HdrHistogram interval log, one histogram a second" },
	{ "--start-at", PW_CLI_STRING, &L.start_at, 0, 0, "TIME",
	  "start at Unix time TIME (seconds) or +D from now (e.g. +5s)" },
	{ "--quiet", PW_CLI_BOOL, &L.quiet, 0, 0, NULL,
	  "no progress line each second" },
};

static const struct pw_cli_cmd load_cmd = {
	.name = "pinwheel load",
	.about =
		"Loads an HTTP/1.1, echo or UDP echo server from the shards "
		"and reports latency\npercentiles (from the due time in "
		"open loop: coordinated omission corrected),\nerrors "
		"and throughput. SIGINT stops early and still "
		"reports.\n\n--proto udp: each connection is a connected "
		"UDP socket with one datagram in\nflight, carrying a "
		"sequence number; one not answered within --timeout (1s) "
		"is\nlost and the next is sent (sent = received + lost + "
		"in flight at the end).\n\nThe target: http://HOST[:PORT][/PATH][?QUERY] "
		"(its path and query are the\nrequest target, HOST[:PORT] "
		"the Host header; no https), HOST:PORT, or an\naddress. "
		"A name is resolved at start; connections spread round "
		"robin over\nits addresses. The request is built once and "
		"sent as the same bytes each time:\n  pinwheel load "
		"http://localhost:8080/api?id=7 --method POST \\\n"
		"    -H 'Content-Type: application/json' --body '{\"a\": 1}' "
		"--conns 16\n\nExit status: 0; 1 when no request "
		"succeeded, when more than --max-error-rate\nfailed, "
		"or when the run failed; 2 for a bad flag or a --json "
		"FILE that cannot\nbe opened (it is opened before the "
		"run); 130 or 143 after a second SIGINT or\nSIGTERM.\n\n--start-at lets load processes on several "
		"machines start together (clocks in sync,\ne.g. by "
		"NTP); `pinwheel report` merges their --json or --hdr-log "
		"files.",
	.opts = load_opts,
	.nopts = sizeof(load_opts) / sizeof(load_opts[0]),
	.common = PW_CLI_RUNTIME,
};

static bool load_wait(void *arg, uint64_t ns)
{
	return pw_drv_wait(arg, ns);
}

/* The last progress, for reports taken during the run (a scrape reads
 * them on shard 0): stored by the thread in pw_load_run(), loaded by any;
 * relaxed, counters only. */
static _Atomic uint64_t live_requests, live_errors;
/* Release once L.res holds the results (load_run()), acquire in
 * load_counters(): L.res is not written again while reports are made. */
static atomic_bool res_ready;

static void load_progress(void *arg, const struct pw_load_progress *p)
{
	char p50[PW_UNITS_LEN], p99[PW_UNITS_LEN];

	(void)arg;
	atomic_store_explicit(&live_requests, p->requests,
			      memory_order_relaxed);
	atomic_store_explicit(&live_errors, p->errors, memory_order_relaxed);
	if (L.quiet)
		return;
	fprintf(stderr,
		"  %6.1fs%s rate %.0f/s, requests %" PRIu64 ", errors %" PRIu64
		", p50 %s, p99 %s\n",
		(double)p->elapsed_ns / 1e9, p->warmup ? " warm-up," : "",
		p->rate, p->requests, p->errors,
		pw_units_ns(p->p50_ns, p50, sizeof(p50)),
		pw_units_ns(p->p99_ns, p99, sizeof(p99)));
}

/* --json FILE opened (created, truncated) now, so that a path that
 * cannot be written fails before the run rather than after it. */
static int load_open_json(struct pw_drv *d)
{
	if (!L.json || !strcmp(L.json, "-"))
		return 0;
	L.json_f = fopen(L.json, "we");
	if (!L.json_f)
		return pw_cli_fail(&d->cli, 2, "--json: cannot open '%s': %s",
				   L.json, strerror(errno));
	return 0;
}

/* --hgrm or --hdr-log FILE opened (created, truncated) now, like --json. */
static int load_open_out(struct pw_drv *d, const char *flag, const char *path,
			 FILE **f)
{
	if (!path)
		return 0;
	*f = fopen(path, "we");
	if (!*f)
		return pw_cli_fail(&d->cli, 2, "%s: cannot open '%s': %s", flag,
				   path, strerror(errno));
	return 0;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * PW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* --start-at: "+D" (a duration from now) or Unix seconds with up to 9
 * decimals; a time that has passed is refused. */
static int load_start_at(struct pw_drv *d)
{
	const char *s = L.start_at;
	uint64_t now = wall_ns(), at, ns;

	if (!s)
		return 0;
	if (s[0] == '+') {
		if (pw_cli_parse_duration(s + 1, &ns) || ns > LOAD_TIME_MAX)
			return pw_cli_fail(&d->cli, 2,
					   "--start-at: '%s' is not +DURATION "
					   "(e.g. +5s) or Unix seconds",
					   s);
		at = now + ns;
	} else {
		/* Unix seconds: a duration since the epoch, unit s. */
		if (!(s[0] >= '0' && s[0] <= '9') || strpbrk(s, "numhs") ||
		    pw_cli_parse_duration(s, &at))
			return pw_cli_fail(&d->cli, 2,
					   "--start-at: '%s' is not +DURATION "
					   "(e.g. +5s) or Unix seconds",
					   s);
		if (at <= now)
			return pw_cli_fail(&d->cli, 2,
					   "--start-at: %s is %.3f s in the "
					   "past (now is %.3f)",
					   s, (double)(now - at) / 1e9,
					   (double)now / 1e9);
		if (at - now > LOAD_TIME_MAX)
			return pw_cli_fail(&d->cli, 2,
					   "--start-at: %s is more than 1000 h "
					   "away",
					   s);
	}
	L.start_wall_ns = at;
	return 0;
}

/* A name's addresses on stderr, once the flags are checked: which the
 * connections go to, and that several share them round robin. */
static void load_banner(const char *t, unsigned n)
{
	char a[PW_NET_ADDR_STRLEN];

	fprintf(stderr, "pinwheel load: %s is ", t);
	for (unsigned i = 0; i < n; i++) {
		pw_net_addr_format(&L.addrs[i], a, sizeof(a));
		fprintf(stderr, "%s%s", i ? ", " : "", a);
	}
	fprintf(stderr, "%s\n", n > 1 ? ": connections round robin" : "");
}

/* HOST:PORT of @t (a URL's, or @t itself) through the one resolver into
 * L.addrs and the config. */
static int load_resolve(struct pw_drv *d, const char *t, const char *hp)
{
	struct pw_load_config *lc = &L.lc;
	char host[PW_RESOLVE_HOST_MAX + 1];
	uint16_t port;
	int n;

	if (pw_resolve_split(hp, host, sizeof(host), &port) == 0 && !port)
		return pw_cli_fail(&d->cli, 2,
				   "--target: '%s' has port 0, which no "
				   "server listens on",
				   t);
	n = pw_resolve(hp, SOCK_STREAM, L.addrs, PW_RESOLVE_MAX);
	if (n < 0) {
		/* A name that is not known is the user's to fix; a resolver
		 * that fails may work on the next try. */
		bool usage = n == -EINVAL || n == -ENOENT || n == -ENAMETOOLONG;
		return pw_cli_fail(&d->cli, usage ? 2 : 1, "--target: '%s': %s",
				   t, pw_resolve_strerror(n));
	}
	lc->target = L.addrs[0];
	lc->addrs = L.addrs;
	lc->naddrs = (unsigned)n;
	lc->target_name = t;
	return 0;
}

/*
 * The target, --target or bare: a URL (its path and Host taken), a
 * name with a port (resolved now), or an address as every command
 * takes it (pw_cli_addr(), which also says what is wrong with one that
 * is neither).
 */
static int load_target(struct pw_drv *d)
{
	const char *t = L.target ? L.target : L.bare, *why;
	struct pw_load_config *lc = &L.lc;
	char host[PW_RESOLVE_HOST_MAX + 1];
	struct pw_net_addr a;
	uint16_t port;
	int err;

	if (L.target && L.bare)
		return pw_cli_fail(&d->cli, 2,
				   "--target '%s' and a bare target '%s': "
				   "give one",
				   L.target, L.bare);
	if (t && pw_load_is_url(t)) {
		if ((err = pw_load_url_parse(t, &L.url, &why)))
			return pw_cli_fail(&d->cli, 2, "--target: '%s': %s", t,
					   why);
		if (L.path && L.url.has_path)
			return pw_cli_fail(&d->cli, 2,
					   "--path: the URL '%s' gives the "
					   "path already",
					   t);
		lc->path = L.path ? L.path : L.url.target;
		lc->host = L.host ? L.host : L.url.authority;
		return load_resolve(d, t, L.url.resolve);
	}
	if (!t || !pw_net_addr_parse(&a, t) ||
	    pw_resolve_split(t, host, sizeof(host), &port))
		return pw_cli_addr(&d->cli, "--target", t, PW_CLI_ADDR_CONNECT,
				   &lc->target) ?
			       2 :
			       0;
	lc->host = L.host ? L.host : t;
	return load_resolve(d, t, t);
}

/* --body-file FILE read whole into L.body_buf and the config; 0 or the
 * exit status. */
static int load_body_file(struct pw_drv *d)
{
	int err = pw_load_body_read(L.body_file, &L.body_buf, &L.lc.body_len);

	if (err == -EFBIG)
		return pw_cli_fail(&d->cli, 2, "--body-file: '%s' is over 16M",
				   L.body_file);
	if (err)
		return pw_cli_fail(&d->cli, 2,
				   "--body-file: cannot read '%s': %s",
				   L.body_file, strerror(-err));
	L.lc.body = L.body_buf;
	return 0;
}

/* The HTTP request's flags into the config, each refused with a message
 * naming it. */
static int load_request(struct pw_drv *d)
{
	struct pw_load_config *lc = &L.lc, t = *lc;
	char why[160];

	if (lc->proto != PW_LOAD_HTTP &&
	    (L.method || L.nheaders || L.body || L.body_file))
		return pw_cli_fail(&d->cli, 2,
				   "--method, -H and --body are for --proto "
				   "http");
	if (L.body && L.body_file)
		return pw_cli_fail(&d->cli, 2,
				   "--body and --body-file: give one");
	if (lc->proto != PW_LOAD_HTTP)
		return 0;
	if (pw_load_req_check(&t, NULL, 0))
		return pw_cli_fail(&d->cli, 2,
				   "--path or --host: must be non-empty, "
				   "without blanks or control characters (a "
				   "path starts with /)");
	t.method = lc->method = L.method;
	if (pw_load_req_check(&t, NULL, 0))
		return pw_cli_fail(&d->cli, 2,
				   "--method: '%s' is not a token of 1..%d "
				   "letters, digits or !#$%%&'*+-.^_`|~",
				   L.method, PW_LOAD_METHOD_MAX);
	if (L.body_file && load_body_file(d))
		return 2;
	if (L.body) {
		lc->body = L.body;
		lc->body_len = strlen(L.body);
	}
	lc->headers = L.headers;
	lc->nheaders = L.nheaders;
	if (pw_load_req_check(lc, why, sizeof(why)))
		return pw_cli_fail(&d->cli, 2, "%s", why);
	for (unsigned i = 0; L.host && i < L.nheaders; i++)
		if (!strncasecmp(L.headers[i], "Host:", 5))
			return pw_cli_fail(&d->cli, 2,
					   "--host and -H 'Host: ...' both "
					   "set the Host header: give one");
	return 0;
}

/* Check the flags and turn them into the run's config. */
static int load_setup(struct pw_drv *d)
{
	struct pw_load_config *lc = &L.lc;
	int st;

	pw_load_config_init(lc);
	if (L.args_error)
		return pw_cli_fail(&d->cli, 2, "%s", L.args_error);
	if (strcmp(L.proto, "http") && strcmp(L.proto, "echo") &&
	    strcmp(L.proto, "udp"))
		return pw_cli_fail(&d->cli, 2,
				   "--proto: '%s' is not http, echo or udp",
				   L.proto);
	lc->proto = !strcmp(L.proto, "http") ? PW_LOAD_HTTP :
		    !strcmp(L.proto, "echo") ? PW_LOAD_ECHO :
					       PW_LOAD_UDP;
	if (lc->proto == PW_LOAD_UDP &&
	    (L.size < PW_LOAD_UDP_SIZE_MIN || L.size > PW_LOAD_UDP_SIZE_MAX))
		return pw_cli_fail(&d->cli, 2,
				   "--size: %" PRIu64 " is out of range %u..%u "
				   "for --proto udp",
				   L.size, PW_LOAD_UDP_SIZE_MIN,
				   PW_LOAD_UDP_SIZE_MAX);
	lc->path = L.path ? L.path : "/";
	lc->host = L.host;
	if ((st = load_target(d)) || (st = load_request(d)))
		return st;
	lc->size = (size_t)L.size;
	lc->conns = (unsigned)L.conns;
	lc->rate = L.rate;
	lc->duration_ns = L.duration;
	lc->requests = L.requests;
	lc->warmup_ns = L.warmup;
	lc->timeout_ns = L.timeout		  ? L.timeout :
			 lc->proto == PW_LOAD_UDP ? PW_LOAD_UDP_TIMEOUT_NS :
						    2 * PW_NSEC_PER_SEC;
	if (load_start_at(d) || load_open_json(d) ||
	    load_open_out(d, "--hgrm", L.hgrm, &L.hgrm_f) ||
	    load_open_out(d, "--hdr-log", L.hdr_log, &L.log_f))
		return 2;
	d->cfg.tick_ns = 10 * PW_NSEC_PER_USEC; /* due times to within 10 us */
	/* The shard threads inherit it: timers end within 1 us, not the
	 * default 50 us slack. */
	prctl(PR_SET_TIMERSLACK, 1000ul, 0ul, 0ul, 0ul);
	return 0;
}

/* Each second of the measured run into the --hdr-log file; the log
 * starts (its StartTime) with the measured run. */
static void load_interval(void *arg, const struct pw_load_interval *iv)
{
	(void)arg;
	if (!L.log_started) {
		L.log_started = true;
		pw_hdr_log_init(&L.log, L.log_f, (double)iv->run_wall_ns / 1e9,
				PW_HDR_MS);
	}
	pw_hdr_log_write(&L.log, iv->hist, (double)iv->start_ns / 1e9,
			 (double)iv->length_ns / 1e9);
}

/* Wait for --start-at: in slices that a signal can cut, then to the
 * nanosecond. Return: 0, or 1 when a stop came first. */
static int load_wait_start(struct pw_drv *d)
{
	uint64_t now;

	if (!L.start_wall_ns)
		return 0;
	now = wall_ns();
	if (!L.quiet && now < L.start_wall_ns)
		fprintf(stderr, "  waiting %.3f s for --start-at %s\n",
			(double)(L.start_wall_ns - now) / 1e9, L.start_at);
	while ((now = wall_ns()) + 20 * PW_NSEC_PER_MSEC < L.start_wall_ns)
		if (pw_drv_wait(d,
				L.start_wall_ns - now - 10 * PW_NSEC_PER_MSEC))
			return pw_cli_fail(&d->cli, 1,
					   "stopped before --start-at");
	struct timespec ts = {
		(time_t)(L.start_wall_ns / PW_NSEC_PER_SEC),
		(long)(L.start_wall_ns % PW_NSEC_PER_SEC),
	};
	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
	return 0;
}

static int load_run(struct pw_drv *d)
{
	int err;

	if (L.lc.target_name && !L.quiet)
		load_banner(L.lc.target_name, L.lc.naddrs);
	if (load_wait_start(d))
		return 1;
	L.lc.wait = load_wait;
	/* Scrapes read the live counters the progress stores. */
	L.lc.progress = L.quiet && !d->cli.metrics_listen ? NULL :
							    load_progress;
	L.lc.interval = L.log_f ? load_interval : NULL;
	L.lc.arg = d;
	err = pw_load_run(d->rt, &L.lc, &L.res);
	if (err)
		return pw_cli_fail(&d->cli, 1, "%s", strerror(-err));
	L.have_res = true;
	/* Release: pairs with the acquire load in load_counters(). */
	atomic_store_explicit(&res_ready, true, memory_order_release);
	return 0;
}

/* SIGUSR1: the report on stderr (stdout may be the JSON); at exit,
 * with --metrics, on stdout before the table. */
static void load_report(struct pw_drv *d, bool final)
{
	if (final)
		pw_drv_metrics(d, stdout);
	else
		pw_drv_report(d, stderr, pw_drv_format(d));
}

static void load_one(struct pw_expo *e, const char *name, const char *help,
		     uint64_t v)
{
	pw_expo_metric(e, name, help, PW_EXPO_COUNTER);
	pw_expo_sample(e, NULL, v);
}

/* The run's counters: the results once the run is over, the last
 * progress (requests, errors) while it goes. Any thread. */
static void load_counters(struct pw_drv *d, struct pw_expo *e)
{
	const struct pw_load_result *r = &L.res;
	/* Relaxed: see live_requests. */
	uint64_t req =
		atomic_load_explicit(&live_requests, memory_order_relaxed);
	uint64_t err = atomic_load_explicit(&live_errors, memory_order_relaxed);

	(void)d;
	/* Acquire: pairs with the release store in load_run(). */
	if (!atomic_load_explicit(&res_ready, memory_order_acquire)) {
		load_one(e, "requests", "Measured requests answered well.",
			 req);
		load_one(e, "errors", "Measured requests failed.", err);
		return;
	}
	const struct {
		const char *cause;
		uint64_t v;
	} errs[] = {
		{ "connect", r->err.connect }, { "reset", r->err.reset },
		{ "timeout", r->err.timeout }, { "bad", r->err.bad },
		{ "other", r->err.other },
	};
	load_one(e, "requests", "Measured requests answered well.",
		 r->requests);
	load_one(e, "errors", "Measured requests failed.", r->errors);
	pw_expo_metric(e, "errors_by_cause",
		       "Measured requests failed, by cause (once the run is "
		       "over).",
		       PW_EXPO_COUNTER);
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		pw_expo_sample(e,
			       (const char *[]){ "cause", errs[i].cause, NULL },
			       errs[i].v);
	pw_expo_metric(e, "responses",
		       "Whole HTTP responses: ok, status 200..399; bad, "
		       "another status.",
		       PW_EXPO_COUNTER);
	pw_expo_sample(e, (const char *[]){ "status", "ok", NULL },
		       r->requests);
	pw_expo_sample(e, (const char *[]){ "status", "bad", NULL },
		       r->bad_status);
	load_one(e, "connects", "Connections opened, warm-up included.",
		 r->connects);
	load_one(e, "sent_bytes", "Bytes sent, measured.", r->bytes_sent);
	load_one(e, "received_bytes", "Bytes received, measured.",
		 r->bytes_received);
	if (L.lc.proto == PW_LOAD_UDP)
		pw__load_udp_counters(e, &r->udp);
}

/* The JSON with --json, to the file opened in load_open_json() or to
 * stdout; 0, or 1 when it could not be written. */
static int load_write_json(struct pw_drv *d)
{
	FILE *f = L.json_f ? L.json_f : stdout;
	struct pw_load_outputs out = { L.hgrm, L.hdr_log };
	bool bad = pw_load_write_json(&L.lc, &L.res, &out, f) != 0;

	if (L.json_f && fclose(L.json_f))
		bad = true;
	L.json_f = NULL;
	return bad ? pw_cli_fail(&d->cli, 1, "cannot write %s", L.json) : 0;
}

/*
 * The run's verdict: 1, with a line saying why, when no request
 * succeeded, or when the failed ones are more than --max-error-rate of
 * all that ended; else 0.
 */
static int load_verdict(struct pw_drv *d)
{
	const struct pw_load_result *r = &L.res;
	uint64_t all = r->requests + r->errors;

	if (!all)
		return pw_cli_fail(&d->cli, 1, "no request was answered");
	if (!r->requests)
		return pw_cli_fail(&d->cli, 1,
				   "every request failed (%" PRIu64 " errors)",
				   r->errors);
	/* errors / all > ppm / 1e6, in integers (128 bits: no overflow). */
	if ((unsigned __int128)r->errors * PW_CLI_PPM <=
	    (unsigned __int128)L.max_error_ppm * all)
		return 0;
	return pw_cli_fail(&d->cli, 1,
			   "%.2f%% of requests failed (%" PRIu64 " of %" PRIu64
			   "), more than --max-error-rate %g%%",
			   (double)r->errors * 100.0 / (double)all, r->errors,
			   all, (double)L.max_error_ppm / 1e4);
}

/* The --hgrm and --hdr-log files finished and closed; 0, or 1 when one
 * could not be written. */
static int load_write_hdr(struct pw_drv *d)
{
	int bad = 0;

	if (L.hgrm_f) {
		bool err = pw_hist_write_hgrm(&L.res.latency, L.hgrm_f,
					      PW_HDR_US, 0) != 0;
		if (fclose(L.hgrm_f) || err)
			bad = pw_cli_fail(&d->cli, 1, "cannot write %s",
					  L.hgrm);
		L.hgrm_f = NULL;
	}
	if (L.log_f) {
		if (!L.log_started)
			pw_hdr_log_init(&L.log, L.log_f,
					(double)L.res.start_wall_ns / 1e9,
					PW_HDR_MS);
		L.log_started = false;
		bool err = pw_hdr_log_close(&L.log) != 0;
		if (fclose(L.log_f) || err)
			bad = pw_cli_fail(&d->cli, 1, "cannot write %s",
					  L.hdr_log);
		L.log_f = NULL;
	}
	return bad;
}

/* Close what was opened for a run that did not happen. */
static void load_close_all(void)
{
	FILE **fs[] = { &L.json_f, &L.hgrm_f, &L.log_f };

	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
		if (*fs[i])
			fclose(*fs[i]);
		*fs[i] = NULL;
	}
}

/* The report, the JSON with --json, the HdrHistogram files, and the
 * verdict. */
static int load_stop(struct pw_drv *d, int status)
{
	if (!L.have_res) {
		load_close_all();
		return status;
	}
	status = pw_load_print(&L.lc, &L.res, stdout) ? 1 : 0;
	if (load_write_hdr(d))
		status = 1;
	if (L.json && load_write_json(d))
		status = 1;
	if (load_verdict(d))
		status = 1;
	pw_load_result_destroy(&L.res);
	return status;
}

static const struct pw_drv_ops load_ops = {
	.setup = load_setup,
	.run = load_run,
	.report = load_report,
	.counters = load_counters,
	.stop = load_stop,
};

/* Whether the flag @a takes the next argument as its value: every flag
 * of load_opts but --quiet, and every common one but --metrics. */
static bool takes_value(const char *a)
{
	if (strncmp(a, "--", 2) || strchr(a, '='))
		return false;
	for (size_t i = 0; i < sizeof(load_opts) / sizeof(load_opts[0]); i++)
		if (!strcmp(load_opts[i].name, a))
			return load_opts[i].type != PW_CLI_BOOL;
	return strcmp(a, "--metrics") && strcmp(a, "--help");
}

/*
 * Take out of @argv what the flag table cannot hold: -H/--header, which
 * repeats ("-H V", "-HV", "--header V", "--header=V"), and one bare
 * argument, the target (as curl and wrk take it). A flag's value is
 * never taken for either. The rest goes to L.argv for pw_cli_parse().
 * Return: the rest's count, or -ENOMEM.
 */
static int load_args(int argc, char **argv)
{
	const char *v;
	int n = 0;

	L.argv = calloc((size_t)argc + 1, sizeof(*L.argv));
	if (!L.argv)
		return -ENOMEM;
	L.argv[n++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-H") || !strcmp(a, "--header")) {
			if (i + 1 == argc) {
				L.args_error = "-H needs a value ('Name: "
					       "value')";
				continue;
			}
			v = argv[++i];
		} else if (!strncmp(a, "--header=", 9)) {
			v = a + 9;
		} else if (!strncmp(a, "-H", 2)) {
			v = a + 2;
		} else if (a[0] != '-' && !L.bare) {
			L.bare = a;
			continue;
		} else {
			L.argv[n++] = argv[i];
			if (takes_value(a) && i + 1 < argc)
				L.argv[n++] = argv[++i];
			continue;
		}
		/* One past the cap is kept, for the check to refuse. */
		if (L.nheaders <= PW_LOAD_HEADERS_MAX)
			L.headers[L.nheaders++] = v;
	}
	return n;
}

int pw_app_load(int argc, char **argv)
{
	int n, st;

	L = load_defaults;
	atomic_store_explicit(&res_ready, false, memory_order_relaxed);
	n = load_args(argc, argv);
	if (n < 0) {
		fprintf(stderr, "pinwheel load: out of memory\n");
		return 1;
	}
	st = pw_drv_main(&load_cmd, &load_ops, n, L.argv);
	free(L.argv);
	free(L.body_buf);
	return st;
}
