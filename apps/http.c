/* SPDX-License-Identifier: MIT */
/*
 * http.c - `pinwheel http`: a fixed-body HTTP/1.1 keep-alive responder
 * for load generators such as wrk (see http.h for the server's API).
 *
 * One acceptor task per shard; one task per connection, spawned on the
 * acceptor's shard. A connection takes each buffer its multishot recv
 * fills, feeds all of it to its parser and appends one canned response
 * per complete request to its output buffer (8 KiB, in the task's state);
 * before it sends, it takes whatever else is already queued, so requests
 * pipelined over several buffers still go out in one send. A full output
 * buffer is sent and parsing resumes where it stopped. Nothing is
 * allocated per request: responses are copied from the shard's canned
 * pair, whose Date is rebuilt at most once a second. A HEAD gets the
 * canned response's headers alone (the same bytes up to the body), so a
 * client pipelining HEAD and GET reads exactly what it expects.
 *
 * A response that closes the connection (HTTP/1.0 without keep-alive,
 * "Connection: close", a malformed or oversized request, or a drain) is
 * followed by a half-close and a short linger that reads and drops what
 * the client still sends, so that unread bytes do not turn the close into
 * a reset that would destroy the response in flight.
 *
 * Draining: the main thread sets the server's flag and wakes every task
 * registered with a shard's registry (a mutex-guarded list of owned
 * wakers, touched once per connection, never per request). Each task
 * checks the flag at every poll: an acceptor stops, an idle connection
 * closes, a connection in the middle of a request answers it with
 * "Connection: close".
 *
 * Scenario options (http.h) add a job between a complete request and its
 * response: a child task of spin work (spawned with a join handle, so the
 * stealing scheduler may move it to an idle worker), then one pw_call()
 * per shard, sent in batches of FANOUT_BATCH calls that run at once. While
 * a request's job runs, parsing waits, so responses stay in order. The
 * idle timeout is a pw_sleep in the connection's state, moved with
 * pw_sleep_reset() by every request and polled while the connection
 * waits for bytes.
 *
 * Counters live in per-shard, cache-line aligned records written only by
 * the thread of that shard (the worker running the task, under the
 * stealing scheduler too), read by any thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"
#include "apps/http.h"
#include "apps/http_parse.h"

#define OUT_MAX	     8192		   /* a connection's output buffer */
#define LINGER_NS    (1 * PW_NSEC_PER_SEC) /* reading after a closing reply */
#define FANOUT_BATCH 16 /* --fanout calls in flight per request */

/* A task the drain must wake: linked in a shard's registry. */
struct http_member {
	struct pw_list node;
	struct pw_waker waker; /* owned clone while linked */
	unsigned reg;	       /* index of the registry */
	bool linked;
};

struct http_shard {
	/* Guards members and open; taken once per connection. */
	_Alignas(64) pthread_mutex_t lock;
	struct pw_list members;
	unsigned open; /* connections spawned and not yet dropped */
	/* Written only by this shard's thread, with a relaxed load and store
	 * (no read-modify-write); read by pw_http_server_stats(). */
	_Atomic uint64_t accepted, requests, errors, closed;
	_Atomic uint64_t work, calls, timeouts, reads;
	struct pw_http_canned canned; /* this shard's thread only */
};

struct pw_http_server {
	struct pw_runtime *rt;
	struct pw_net_listener *l;
	size_t head_max;
	uint64_t work, timeout_ns;
	bool fanout;
	unsigned nshards, accept_shards;
	/* Set once by pw_http_server_drain(); pairs with the acquire loads
	 * in draining(). Tasks that were asleep also see it through the
	 * wake that follows the store, and tasks registering later through
	 * the registry's mutex. */
	atomic_bool drain;
	struct http_shard *sh;
};

static bool draining(const struct pw_http_server *s)
{
	/* Acquire: pairs with the release store in pw_http_server_drain(). */
	return atomic_load_explicit(&s->drain, memory_order_acquire);
}

static void bump(_Atomic uint64_t *c, uint64_t n)
{
	/* Relaxed load and store: only the owning shard writes @c; pairs
	 * with the relaxed loads in pw_http_server_stats(). */
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* The record of the shard running the caller. */
static struct http_shard *here(struct pw_http_server *s)
{
	int id = pw_shard_id();

	return id >= 0 && (unsigned)id < s->nshards ? &s->sh[id] : NULL;
}

static void member_link(struct pw_http_server *s, struct pw_cx *cx,
			struct http_member *m)
{
	struct http_shard *h = &s->sh[m->reg];
	struct pw_waker w = pw_cx_waker(cx);

	if (pw_waker_clone(&m->waker, &w))
		return;
	pthread_mutex_lock(&h->lock);
	pw_list_add_tail(&m->node, &h->members);
	m->linked = true;
	pthread_mutex_unlock(&h->lock);
}

/* Unlink @m; @conn also ends its connection's count. */
static void member_unlink(struct pw_http_server *s, struct http_member *m,
			  bool conn)
{
	struct http_shard *h = &s->sh[m->reg];

	pthread_mutex_lock(&h->lock);
	if (m->linked)
		pw_list_del(&m->node);
	m->linked = false;
	if (conn)
		h->open--;
	pthread_mutex_unlock(&h->lock);
	pw_waker_drop(&m->waker);
}

/* ---- a connection ------------------------------------------------------ */

/* State of a --work child task and of a --fanout call's handler. */
struct http_job {
	struct pw_http_server *srv;
	uint64_t k;
};

enum { C_RECV, C_JOB, C_SEND, C_SHUT, C_LINGER, C_CLOSE };

/* Steps of a request's job. */
enum { J_SPAWN, J_JOIN, J_FAN, J_DONE };

struct http_conn {
	struct http_member m;
	struct pw_http_server *srv;
	int fd, step;
	bool have;    /* buf is borrowed */
	bool partial; /* part of a request has been parsed */
	bool closing; /* close once out is sent */
	bool eof;     /* the client closed its side */
	bool keep;    /* the request whose job runs keeps the connection */
	bool head;    /* the request whose job runs is a HEAD */
	uint8_t job;  /* J_*: where the current request's job is */
	uint32_t off; /* bytes of buf parsed */
	uint32_t fan_pending;	  /* calls of the batch not yet answered */
	unsigned fan_base, fan_n; /* the batch: shards base..base+n-1 */
	uint64_t linger_until;
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close cl;
	struct pw_sleep idle; /* the idle timeout, when the server has one */
	struct pw_join child; /* the --work task */
	struct pw_call calls[FANOUT_BATCH];
	struct http_job fan; /* the calls' state: read when each starts */
	size_t out_len;
	struct pw_http_parser p;
	char out[OUT_MAX];
};

static void conn_release(struct http_conn *c)
{
	if (c->have)
		pw_net_buf_release(&c->buf);
	c->have = false;
}

static void conn_close(struct http_conn *c)
{
	conn_release(c);
	c->step = C_CLOSE;
	pw_close_init(&c->cl, c->fd);
}

/* Spin arithmetic the compiler cannot fold (bench/bench_sched.c's). */
static uint64_t spin_work(uint64_t k)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (uint64_t i = 0; i < k; i++) {
		x = x * 6364136223846793005ull + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static enum pw_poll work_poll(struct pw_cx *cx, void *state)
{
	struct http_job *j = state;
	struct http_shard *h = here(j->srv);

	if (h)
		bump(&h->work, 1);
	return pw_ready(cx, (int64_t)(spin_work(j->k) >> 1));
}

/* A --fanout handler: counts itself and answers with its shard. */
static enum pw_poll fan_poll(struct pw_cx *cx, void *state)
{
	struct http_job *j = state;
	struct http_shard *h = here(j->srv);

	if (h)
		bump(&h->calls, 1);
	return pw_ready(cx, pw_shard_id());
}

/*
 * Drive the job of the request just parsed: the --work child, then the
 * --fanout calls, a batch at a time. A child that cannot be spawned or a
 * call that fails does not hold the response back.
 * Return: PW_READY when the job is done, else PW_PENDING.
 */
static enum pw_poll conn_job(struct pw_cx *cx, struct http_conn *c)
{
	struct pw_http_server *s = c->srv;
	struct http_job j = { s, s->work };
	int64_t r;

	if (c->job == J_SPAWN) {
		c->job = J_FAN;
		if (s->work &&
		    !pw_spawn(&c->child, work_poll, &j, sizeof(j), NULL))
			c->job = J_JOIN;
		c->fan_base = 0;
		c->fan_n = 0;
		c->fan_pending = 0;
	}
	if (c->job == J_JOIN) {
		if (pw_join_poll(cx, &c->child, &r) == PW_PENDING)
			return PW_PENDING;
		c->job = J_FAN;
	}
	while (c->job == J_FAN) {
		if (!c->fan_pending) {
			c->fan_base += c->fan_n;
			c->fan_n = 0;
			if (!s->fanout || c->fan_base >= s->nshards) {
				c->job = J_DONE;
				break;
			}
			c->fan_n = s->nshards - c->fan_base;
			if (c->fan_n > FANOUT_BATCH)
				c->fan_n = FANOUT_BATCH;
			c->fan = j;
			for (unsigned i = 0; i < c->fan_n; i++)
				pw_call_init(&c->calls[i], c->fan_base + i,
					     fan_poll, &c->fan, sizeof(c->fan),
					     NULL);
			c->fan_pending = (uint32_t)((1ull << c->fan_n) - 1);
		}
		for (unsigned i = 0; i < c->fan_n; i++) {
			if (!(c->fan_pending & (1u << i)))
				continue;
			if (pw_call_poll(cx, &c->calls[i], &r) == PW_READY)
				c->fan_pending &= ~(1u << i);
		}
		if (c->fan_pending)
			return PW_PENDING;
	}
	return PW_READY;
}

/* Whether the request just parsed is a HEAD (methods are case-sensitive,
 * RFC 9110 section 9.1). */
static inline bool is_head(const struct pw_http_req *r)
{
	return r->method_len == 4 && !memcmp(r->method, "HEAD", 4);
}

/*
 * Append the canned 200 for a request that keeps the connection or not;
 * for a HEAD, the canned headers alone: the same status line and headers
 * (Content-Length that of the body a GET gets), without the body. The
 * headers are the canned response's first bytes, so the HEAD variant is
 * the same canned text cut short, never formatted per request.
 */
static inline void conn_append(struct http_conn *c, struct http_shard *h,
			       bool keep, bool head)
{
	size_t n;
	const char *r = pw_http_canned_get(&h->canned, keep, &n);

	if (head)
		n -= h->canned.body_len;
	memcpy(c->out + c->out_len, r, n);
	c->out_len += n;
	c->closing = !keep;
}

/* Answer the request whose job is done, and count it. */
static void conn_respond(struct http_conn *c, struct http_shard *h)
{
	conn_append(c, h, c->keep, c->head);
	bump(&h->requests, 1);
}

/*
 * Parse what is left of the borrowed buffer, appending a response per
 * request, until the buffer is used up, the output buffer has no room for
 * another response, or a response closes the connection.
 */
static void conn_parse(struct http_conn *c)
{
	struct http_shard *h = here(c->srv);
	const char *data = c->buf.data;
	bool drain = draining(c->srv);
	uint64_t ok = 0;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	pw_http_canned_tick(&h->canned, ts.tv_sec);
	while (c->off < c->buf.len && !c->closing) {
		size_t room = sizeof(c->out) - c->out_len, used;
		const char *r;
		int rc, status;

		if (room < PW_HTTP_CANNED_MAX || c->job != J_DONE)
			break;
		rc = pw_http_parse(&c->p, data + c->off, c->buf.len - c->off,
				   &used);
		c->off += (uint32_t)used;
		if (rc == 0) {
			c->partial = true;
			break;
		}
		if (rc == 1) {
			bool keep = c->p.req.keep_alive && !drain;

			c->partial = false;
			if (c->srv->timeout_ns)
				pw_sleep_reset_after(&c->idle,
						     c->srv->timeout_ns);
			if (c->srv->work || c->srv->fanout) {
				/* The response waits for the job. */
				c->keep = keep;
				c->head = is_head(&c->p.req);
				c->job = J_SPAWN;
				break;
			}
			conn_append(c, h, keep, is_head(&c->p.req));
			ok++;
			continue;
		}
		status = pw_http_error_status(rc);
		r = pw_http_reason(status);
		rc = pw_http_build(c->out + c->out_len, room, status, false,
				   h->canned.date, r, strlen(r));
		if (rc > 0)
			c->out_len += (size_t)rc;
		c->closing = true;
		bump(&h->errors, 1);
	}
	if (ok)
		bump(&h->requests, ok);
}

/* Whether the idle timeout fired; counts it. */
static bool idle_expired(struct pw_cx *cx, struct http_conn *c)
{
	struct http_shard *h;

	if (!c->srv->timeout_ns || pw_sleep_poll(cx, &c->idle) == PW_PENDING)
		return false;
	h = here(c->srv);
	if (h)
		bump(&h->timeouts, 1);
	return true;
}

/*
 * C_RECV found no bytes: send what is waiting, or close when draining
 * between requests or idle too long.
 * Return: true when the task must wait.
 */
static inline bool conn_idle(struct pw_cx *cx, struct http_conn *c)
{
	if (c->out_len)
		c->step = C_SEND;
	else if (draining(c->srv) && !c->partial)
		conn_close(c);
	else if (idle_expired(cx, c))
		conn_close(c);
	else
		return true;
	return false;
}

/* The receive ended with @res <= 0: an error closes, the client's close
 * sends what is waiting first. */
static inline void conn_ended(struct http_conn *c, int32_t res)
{
	if (res < 0) {
		conn_close(c);
		return;
	}
	c->eof = true;
	c->closing = true;
	if (c->out_len)
		c->step = C_SEND;
	else
		conn_close(c);
}

/*
 * C_RECV: take a buffer (unless one is half parsed), parse it, and move
 * on to the job, the send, or the next buffer.
 * Return: true when the task must wait.
 */
static inline bool conn_recv(struct pw_cx *cx, struct http_conn *c)
{
	int32_t res;

	if (!c->have) {
		if (pw_recv_poll(cx, &c->rx, PW_TIME_NEVER, &c->buf, &res) ==
		    PW_PENDING)
			return conn_idle(cx, c);
		if (res <= 0) {
			conn_ended(c, res);
			return false;
		}
		c->have = true;
		c->off = 0;
		bump(&here(c->srv)->reads, 1);
	}
	conn_parse(c);
	if (c->job != J_DONE) {
		c->step = C_JOB;
		return false;
	}
	if (c->closing || c->off >= c->buf.len)
		conn_release(c);
	if (c->closing || c->have)
		c->step = C_SEND;
	return false;
}

/* C_SEND: send the output buffer; then read on, or close (half-close
 * and linger while the client may still send). */
static inline bool conn_send(struct pw_cx *cx, struct http_conn *c)
{
	int32_t res;

	if (pw_send_poll(cx, &c->tx, c->out, c->out_len, PW_TIME_NEVER, &res) ==
	    PW_PENDING)
		return true;
	c->out_len = 0;
	if (res < 0 || (c->closing && c->eof)) {
		conn_close(c);
	} else if (c->closing) {
		c->step = C_SHUT;
		pw_shutdown_init(&c->cl, c->fd, SHUT_WR);
	} else {
		c->step = C_RECV;
	}
	return false;
}

/* C_SHUT and C_LINGER: the half-close, then read and drop until the
 * client closes or the linger ends. */
static inline bool conn_linger(struct pw_cx *cx, struct http_conn *c)
{
	int32_t res;

	if (c->step == C_SHUT) {
		if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
			return true;
		c->linger_until = (uint64_t)pw_time_now() + LINGER_NS;
		c->step = C_LINGER;
		pw_close_init(&c->cl, c->fd);
	}
	if (pw_recv_poll(cx, &c->rx, c->linger_until, &c->buf, &res) ==
	    PW_PENDING)
		return true;
	if (res > 0)
		pw_net_buf_release(&c->buf);
	else
		conn_close(c);
	return false;
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct http_conn *c = state;
	int32_t res;
	bool wait;

	if (!c->m.linked && !c->m.waker.task)
		member_link(c->srv, cx, &c->m);
	for (;;) {
		switch (c->step) {
		case C_RECV:
			wait = conn_recv(cx, c);
			break;
		case C_JOB:
			wait = conn_job(cx, c) == PW_PENDING;
			if (wait)
				break;
			conn_respond(c, here(c->srv));
			/* Parse on: the rest of the buffer, or a send. */
			c->step = C_RECV;
			break;
		case C_SEND:
			wait = conn_send(cx, c);
			break;
		case C_SHUT:
		case C_LINGER:
			wait = conn_linger(cx, c);
			break;
		default:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			return pw_ready(cx, 0);
		}
		if (wait)
			return PW_PENDING;
	}
}

static void conn_drop(void *state)
{
	struct http_conn *c = state;
	struct http_shard *h = here(c->srv);

	conn_release(c);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	pw_sleep_cancel(&c->idle);
	pw_join_detach(&c->child);
	for (unsigned i = 0; i < c->fan_n; i++)
		if (c->fan_pending & (1u << i))
			pw_call_cancel(&c->calls[i]);
	if (!pw_close_cancel(&c->cl))
		close(c->fd);
	member_unlink(c->srv, &c->m, true);
	if (h)
		bump(&h->closed, 1);
}

/* ---- the acceptor -------------------------------------------------------- */

struct http_acceptor {
	struct http_member m;
	struct pw_http_server *srv;
	struct pw_accept acc;
};

/* Start a connection task for @fd, counted in the registry @reg. */
static void conn_spawn(struct pw_http_server *s, unsigned reg, int fd)
{
	struct http_shard *h = &s->sh[reg];
	struct http_conn c = { .srv = s, .fd = fd, .job = J_DONE };

	c.m.reg = reg;
	if (s->timeout_ns)
		pw_sleep_init(&c.idle, s->timeout_ns);
	else
		pw_sleep_init_at(&c.idle, PW_TIME_NEVER);
	pw_http_parser_init(&c.p, s->head_max);
	pw_recv_init(&c.rx, fd);
	pw_send_init(&c.tx, fd);
	pw_close_init(&c.cl, fd);
	pthread_mutex_lock(&h->lock);
	h->open++;
	pthread_mutex_unlock(&h->lock);
	if (pw_spawn(NULL, conn_poll, &c, sizeof(c), conn_drop)) {
		close(fd);
		pthread_mutex_lock(&h->lock);
		h->open--;
		pthread_mutex_unlock(&h->lock);
	}
}

/* pw_cli_accept_loop()'s stop: the server drains. */
static bool acceptor_stop(void *arg)
{
	struct http_acceptor *a = arg;

	return draining(a->srv);
}

/* pw_cli_accept_loop()'s take: count @fd and start its task. */
static void acceptor_take(void *arg, int fd)
{
	struct http_acceptor *a = arg;
	struct http_shard *h = here(a->srv);

	if (h)
		bump(&h->accepted, 1);
	conn_spawn(a->srv, h ? (unsigned)(h - a->srv->sh) : a->m.reg, fd);
}

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct http_acceptor *a = state;

	if (!a->m.linked && !a->m.waker.task)
		member_link(a->srv, cx, &a->m);
	return pw_cli_accept_loop(cx, &a->acc, "pinwheel http", acceptor_stop,
				  NULL, acceptor_take, a);
}

static void acceptor_drop(void *state)
{
	struct http_acceptor *a = state;

	pw_accept_cancel(&a->acc);
	member_unlink(a->srv, &a->m, false);
}

/* ---- the server ---------------------------------------------------------- */

/*
 * A server for @n shards with @o's settings, its shards' records set up
 * (the canned responses of @body built), not yet listening.
 * Return: 0 with *@sp set; -ENOMEM; -EMSGSIZE from the canned responses.
 */
static int server_new(struct pw_http_server **sp, struct pw_runtime *rt,
		      unsigned n, const struct pw_http_opts *o,
		      const char *body, size_t body_len)
{
	struct pw_http_server *s = calloc(1, sizeof(*s));
	size_t bytes = n * sizeof(*s->sh);
	int err;

	if (s)
		s->sh = aligned_alloc(_Alignof(struct http_shard), bytes);
	if (!s || !s->sh) {
		free(s);
		return -ENOMEM;
	}
	memset(s->sh, 0, bytes);
	s->rt = rt;
	s->head_max = o->head_max;
	s->work = o->work;
	s->fanout = o->fanout;
	s->timeout_ns = o->timeout_ns;
	s->accept_shards = o->accept_shards ? o->accept_shards : n;
	for (unsigned i = 0; i < n; i++) {
		struct http_shard *h = &s->sh[i];

		s->nshards = i + 1; /* what pw_http_server_destroy() undoes */
		pthread_mutex_init(&h->lock, NULL);
		pw_list_init(&h->members);
		err = pw_http_canned_init(&h->canned, body, body_len,
					  time(NULL));
		if (err) {
			pw_http_server_destroy(s);
			return err;
		}
	}
	*sp = s;
	return 0;
}

/* One acceptor task on each accepting shard. On error the acceptors
 * already running are told to stop; the caller destroys @s after the
 * runtime. */
static int server_accept(struct pw_http_server *s)
{
	for (unsigned i = 0; i < s->accept_shards; i++) {
		struct http_acceptor a = { .srv = s };
		int err;

		a.m.reg = i;
		pw_accept_init(&a.acc, s->l, 0);
		err = pw_runtime_spawn(s->rt, i, acceptor_poll, &a, sizeof(a),
				       acceptor_drop);
		if (err) {
			pw_http_server_drain(s);
			return err;
		}
	}
	return 0;
}

int pw_http_server_start(struct pw_http_server **sp, struct pw_runtime *rt,
			 const struct pw_net_addr *addr,
			 const struct pw_http_opts *o)
{
	struct pw_http_opts def = { 0 };
	struct pw_net_listen_opts lo = { 0 };
	struct pw_http_server *s;
	struct pw_http_parser probe;
	const char *body;
	size_t body_len;
	int n, err;

	if (!sp || !rt || !addr)
		return -EINVAL;
	if (!o)
		o = &def;
	body = o->body ? o->body : PW_HTTP_BODY_DEFAULT;
	body_len = o->body ? o->body_len : strlen(PW_HTTP_BODY_DEFAULT);
	if (body_len > PW_HTTP_BODY_MAX)
		return -EMSGSIZE;
	if (pw_http_parser_init(&probe, o->head_max))
		return -EINVAL;
	n = pw_runtime_shards(rt);
	if (n <= 0 || o->accept_shards > (unsigned)n)
		return -EINVAL;
	err = server_new(&s, rt, (unsigned)n, o, body, body_len);
	if (err)
		return err;
	lo.flags = o->listen_flags;
	/* Per-shard sockets of shards that do not accept would keep the
	 * connections the kernel hands them: share one socket instead. */
	if (s->accept_shards < s->nshards)
		lo.flags |= PW_NET_LISTEN_SHARED;
	err = pw_net_listener_create(&s->l, rt, addr, &lo);
	if (err) {
		s->l = NULL;
		pw_http_server_destroy(s);
		return err;
	}
	*sp = s;
	/* Acceptors already running point at @s: on error the caller
	 * destroys it after the runtime. */
	return server_accept(s);
}

int pw_http_server_addr(const struct pw_http_server *s, struct pw_net_addr *out)
{
	if (!s || !out)
		return -EINVAL;
	return pw_net_listener_addr(s->l, out);
}

int pw_http_server_drain(struct pw_http_server *s)
{
	struct pw_list *pos;

	if (!s)
		return -EINVAL;
	/* Release: pairs with the acquire load in draining(). */
	atomic_store_explicit(&s->drain, true, memory_order_release);
	for (unsigned i = 0; i < s->nshards; i++) {
		struct http_shard *h = &s->sh[i];

		pthread_mutex_lock(&h->lock);
		pw_list_for_each (pos, &h->members) {
			struct http_member *m =
				pw_list_entry(pos, struct http_member, node);
			pw_waker_wake_by_ref(&m->waker);
		}
		pthread_mutex_unlock(&h->lock);
	}
	return 0;
}

int pw_http_server_open(struct pw_http_server *s)
{
	unsigned n = 0;

	if (!s)
		return -EINVAL;
	for (unsigned i = 0; i < s->nshards; i++) {
		pthread_mutex_lock(&s->sh[i].lock);
		n += s->sh[i].open;
		pthread_mutex_unlock(&s->sh[i].lock);
	}
	return (int)n;
}

int pw_http_server_stats(const struct pw_http_server *s, unsigned shard,
			 struct pw_http_stats *out)
{
	const struct http_shard *h;

	if (!s || !out)
		return -EINVAL;
	if (shard >= s->nshards)
		return -ENODEV;
	h = &s->sh[shard];
	/* Relaxed: pair with the stores in bump(); counters only. */
	out->accepted =
		atomic_load_explicit(&h->accepted, memory_order_relaxed);
	out->requests =
		atomic_load_explicit(&h->requests, memory_order_relaxed);
	out->errors = atomic_load_explicit(&h->errors, memory_order_relaxed);
	out->closed = atomic_load_explicit(&h->closed, memory_order_relaxed);
	out->work = atomic_load_explicit(&h->work, memory_order_relaxed);
	out->calls = atomic_load_explicit(&h->calls, memory_order_relaxed);
	out->timeouts =
		atomic_load_explicit(&h->timeouts, memory_order_relaxed);
	out->reads = atomic_load_explicit(&h->reads, memory_order_relaxed);
	return 0;
}

int pw_http_server_destroy(struct pw_http_server *s)
{
	if (!s)
		return -EINVAL;
	if (s->l)
		pw_net_listener_destroy(s->l);
	for (unsigned i = 0; i < s->nshards; i++)
		pthread_mutex_destroy(&s->sh[i].lock);
	free(s->sh);
	free(s);
	return 0;
}

/* ---- the command ---------------------------------------------------------- */

/* The flags of `pinwheel http` and the server they start. */
static struct http_cmd {
	const char *listen, *body;
	uint64_t head_max, drain_ns, work, timeout_ns, accept_shards;
	bool shared, fanout, reuse_port;
	struct pw_http_opts ho;
	struct pw_net_addr addr;
	struct pw_http_server *srv;
} H;

static const struct http_cmd http_defaults = {
	.head_max = PW_HTTP_HEAD_MAX_DEFAULT,
	.drain_ns = 5 * PW_NSEC_PER_SEC,
};

static const struct pw_cli_opt http_opts[] = {
	{ "--listen", PW_CLI_STRING, &H.listen, 0, 0, "ADDR",
	  "127.0.0.1:PORT, [::1]:PORT or unix:/path (required)" },
	{ "--body", PW_CLI_STRING, &H.body, 0, 0, "TEXT",
	  "the response body, up to 256 bytes (default "
	  "\"" PW_HTTP_BODY_DEFAULT "\")" },
	{ "--head-max", PW_CLI_SIZE, &H.head_max, 64, 1u << 20, "SIZE",
	  "cap on a request head; larger gets 431 (default 8k)" },
	{ "--drain", PW_CLI_DURATION, &H.drain_ns, 0, 3600 * PW_NSEC_PER_SEC,
	  "DURATION",
	  "on SIGINT/SIGTERM, time open connections get to "
	  "finish (default 5s)" },
	{ "--shared", PW_CLI_BOOL, &H.shared, 0, 0, NULL,
	  "one listening socket for all shards instead of one "
	  "SO_REUSEPORT socket per shard" },
	{ "--reuse-port", PW_CLI_BOOL, &H.reuse_port, 0, 0, NULL,
	  "share a port other servers already listen on (SO_REUSEPORT); "
	  "without it a port in use is refused" },
	{ "--work", PW_CLI_UINT, &H.work, 0, 1000000000, "K",
	  "per request, a child task spins K iterations; joined "
	  "before the response (default 0)" },
	{ "--fanout", PW_CLI_BOOL, &H.fanout, 0, 0, NULL,
	  "per request, call every shard and gather the answers "
	  "before the response" },
	{ "--timeout", PW_CLI_DURATION, &H.timeout_ns, PW_NSEC_PER_MSEC,
	  24 * 3600 * PW_NSEC_PER_SEC, "DURATION",
	  "close a connection idle this long; each request resets "
	  "it (default none)" },
	{ "--accept-shards", PW_CLI_UINT, &H.accept_shards, 1, PW_MAX_SHARDS,
	  "N", "only shards 0..N-1 accept connections (default all)" },
};

static const struct pw_cli_cmd http_cmd = {
	.name = "pinwheel http",
	.about = "Answers every HTTP/1.1 request with 200 and a fixed body, "
		 "keeping connections\nalive; pipelined requests are "
		 "answered in one send; HEAD gets the same headers\n"
		 "without the body. Malformed requests get 400 and "
		 "oversized heads 431, then the\nconnection closes. "
		 "SIGINT or SIGTERM stops accepting and drains; a second "
		 "one\ncloses the open connections at once and exits 130 "
		 "(SIGINT) or 143 (SIGTERM)\nafter the summary. SIGUSR1 "
		 "prints the counters with --metrics.\n"
		 "--work, --fanout, --timeout and --accept-shards "
		 "shape the load for comparing\nthe schedulers: CPU "
		 "work in a stealable child task, a call to every "
		 "shard,\na timer reset per request, connections "
		 "all landing on a few shards.",
	.opts = http_opts,
	.nopts = sizeof(http_opts) / sizeof(http_opts[0]),
	.common = PW_CLI_RUNTIME,
};

/* Check the flags and turn them into the server's options. */
static int http_setup(struct pw_drv *d)
{
	size_t body_len = H.body ? strlen(H.body) : 0;

	if (pw_cli_addr(&d->cli, "--listen", H.listen, PW_CLI_ADDR_LISTEN,
			&H.addr))
		return 2;
	if (body_len > PW_HTTP_BODY_MAX)
		return pw_cli_fail(&d->cli, 2,
				   "--body: %zu bytes is more than %d",
				   body_len, PW_HTTP_BODY_MAX);
	if (H.accept_shards > d->cfg.shards)
		return pw_cli_fail(&d->cli, 2,
				   "--accept-shards: %llu is more than the "
				   "%u shard%s",
				   (unsigned long long)H.accept_shards,
				   d->cfg.shards,
				   d->cfg.shards == 1 ? "" : "s");
	H.ho = (struct pw_http_opts){
		.body = H.body,
		.body_len = body_len,
		.head_max = (size_t)H.head_max,
		.listen_flags = (H.shared ? PW_NET_LISTEN_SHARED : 0) |
				(H.reuse_port ? PW_NET_LISTEN_SHARE_PORT : 0),
		.work = H.work,
		.fanout = H.fanout,
		.timeout_ns = H.timeout_ns,
		.accept_shards = (unsigned)H.accept_shards,
	};
	/* Under stealing an acceptor may run on any worker: accept from one
	 * socket so that no worker's socket is left without an acceptor. */
	if (d->cfg.sched == PW_SCHED_STEAL)
		H.ho.listen_flags |= PW_NET_LISTEN_SHARED;
	d->drain_ns = H.drain_ns;
	return 0;
}

static int http_start(struct pw_drv *d)
{
	int err = pw_http_server_start(&H.srv, d->rt, &H.addr, &H.ho);

	if (err)
		return pw_cli_fail(&d->cli, 1, "cannot serve on %s: %s",
				   H.listen, strerror(-err));
	pw_http_server_addr(H.srv, &d->addr);
	return 0;
}

static void http_banner(struct pw_drv *d, FILE *f)
{
	fprintf(f, " with %u shard%s (%s)", d->cfg.shards,
		d->cfg.shards == 1 ? "" : "s",
		d->cfg.sched == PW_SCHED_STEAL ? "steal" : "shard");
}

/* With --metrics: the runtime's metrics, then each shard's counters. */
static void http_report(struct pw_drv *d, bool final)
{
	(void) final;
	if (!d->cli.metrics)
		return;
	pw_drv_metrics(d, stdout);
	for (unsigned i = 0; i < H.srv->nshards; i++) {
		struct pw_http_stats st;

		pw_http_server_stats(H.srv, i, &st);
		printf("shard %u http: accepted=%llu requests=%llu "
		       "errors=%llu closed=%llu work=%llu calls=%llu "
		       "timeouts=%llu\n",
		       i, (unsigned long long)st.accepted,
		       (unsigned long long)st.requests,
		       (unsigned long long)st.errors,
		       (unsigned long long)st.closed,
		       (unsigned long long)st.work,
		       (unsigned long long)st.calls,
		       (unsigned long long)st.timeouts);
	}
	fflush(stdout);
}

static void http_drain(struct pw_drv *d)
{
	(void)d;
	pw_http_server_drain(H.srv);
}

static int http_open(struct pw_drv *d)
{
	(void)d;
	return pw_http_server_open(H.srv);
}

/* The runtime is gone: the totals, then the server. */
static int http_stop(struct pw_drv *d, int status)
{
	uint64_t acc = 0, req = 0, bad = 0;
	struct pw_net_listener_stats ls;

	if (!H.srv)
		return status;
	for (unsigned i = 0; d->served && i < H.srv->nshards; i++) {
		struct pw_http_stats st;

		pw_http_server_stats(H.srv, i, &st);
		acc += st.accepted;
		req += st.requests;
		bad += st.errors;
	}
	if (d->served && !pw_net_listener_stats(H.srv->l, &ls))
		printf("pinwheel http: stopped; %llu connections, %llu "
		       "requests, %llu refused, %llu accept errors, %llu "
		       "dropped unread\n",
		       (unsigned long long)acc, (unsigned long long)req,
		       (unsigned long long)bad,
		       (unsigned long long)ls.accept_errors,
		       (unsigned long long)ls.dropped);
	fflush(stdout); /* the summary reaches a pipe before anything else */
	pw_http_server_destroy(H.srv);
	return status;
}

static const struct pw_drv_ops http_ops = {
	.setup = http_setup,
	.start = http_start,
	.banner = http_banner,
	.report = http_report,
	.drain = http_drain,
	.open = http_open,
	.stop = http_stop,
};

int pw_app_http(int argc, char **argv)
{
	H = http_defaults;
	return pw_drv_main(&http_cmd, &http_ops, argc, argv);
}
