/* SPDX-License-Identifier: MIT */
/*
 * http.c - the server of `pinwheel http`: a fixed-body HTTP/1.1
 * keep-alive responder for load generators such as wrk (see http.h for
 * its API; the command's flags and report are http_cmd.c).
 *
 * One acceptor task per shard; one task per connection, spawned on the
 * acceptor's shard. A connection takes each buffer its multishot recv
 * fills, feeds all of it to its parser and appends one canned response
 * per complete request to its output buffer; before it sends, it takes
 * whatever else is already queued, so requests pipelined over several
 * buffers still go out in one send. A full output buffer is sent and
 * parsing resumes where it stopped. Nothing is allocated per request:
 * responses are copied from the shard's canned pair, whose Date is
 * rebuilt at most once a second. A HEAD gets the canned response's
 * headers alone (the same bytes up to the body), so a client pipelining
 * HEAD and GET reads exactly what it expects.
 *
 * Memory per connection. The output buffer (OUT_MAX) is taken from a
 * small per-shard free list when the first response is appended and
 * given back when its send completes with no half-parsed buffer left,
 * so an idle keep-alive connection holds only its task state (under 2
 * KiB: see the static assertion below). The --work child and the
 * --fanout calls sit at the end of the state only when they are on.
 *
 * Bounded receive buffers. A connection about to wait on its send gives
 * the unparsed tail of its borrowed buffer back to its receive
 * (pw_recv_unread()) and parks the receive (pw_recv_park()): a client
 * that sends without reading then holds no buffer of the shard's ring,
 * only the receive's own bounded bytes, and TCP's window stops it.
 * Parsing resumes from the receive's next chunk: the parser is
 * incremental.
 *
 * Timeouts. One pw_sleep per connection serves every state, its
 * deadline that of the state the task waits in: receiving between
 * requests (keep-alive: from the last response sent), receiving a
 * request (head timeout: from its first byte, or for a body from its
 * last read; 408 and close), sending (send timeout: from the send's last
 * progress, pw_send_progress(); a reset). Moving a deadline later only
 * stores it (the wheel re-files the entry when the old slot expires), so
 * the timers cost nothing per request.
 *
 * A response that closes the connection (HTTP/1.0 without keep-alive,
 * "Connection: close", the last of --max-requests, a malformed or
 * oversized request, a head timeout, or a drain) is followed by a
 * half-close and a short linger that reads and drops what the client
 * still sends, so that unread bytes do not turn the close into a reset
 * that would destroy the response in flight. The linger drops at most
 * LINGER_BYTES: a client still sending past that gets a reset, so that
 * a flood after the close costs the shard no more than that.
 *
 * Draining: the main thread sets the server's flag and wakes every task
 * registered with a shard's registry (a mutex-guarded list of owned
 * wakers, touched once per connection, never per request). Each task
 * checks the flag at every poll: an acceptor stops (serving what it
 * accepted already), an idle connection closes once silent for
 * DRAIN_IDLE_NS (one that has sent no request yet waits for its first), a connection in the middle of a request answers it with
 * "Connection: close". The registry also counts the shard's open
 * connections: an acceptor at --max-conns stops accepting (the excess
 * waits in the listen backlog) and the connection whose end takes the
 * count below the cap wakes it.
 *
 * Scenario options (http.h) add a job between a complete request and its
 * response: a child task of spin work (spawned with a join handle, so the
 * stealing scheduler may move it to an idle worker), then one pw_call()
 * per shard, sent in batches of FANOUT_BATCH calls that run at once. While
 * a request's job runs, parsing waits, so responses stay in order.
 *
 * Files (--root): a whole request takes a file record of http_static.c
 * (conn_file_begin()) and the response waits for it as for a job: the
 * file opens, and the head (with a body that fits) is written into the
 * output buffer (conn_file_job()); parsing stops while a larger body is
 * still to send, the output buffer goes out, and the body follows it in
 * C_FILE (conn_file(), parked like a send), before parsing resumes.
 *
 * Counters live in per-shard, cache-line aligned records written only by
 * the thread of that shard (the worker running the task, under the
 * stealing scheduler too), read by any thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
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
#include "apps/http_static.h"

#define OUT_MAX	     8192		   /* a connection's output buffer */
#define OUT_POOL     64			   /* free output buffers per shard */
#define LINGER_NS    (1 * PW_NSEC_PER_SEC) /* reading after a closing reply */
#define LINGER_BYTES (64u << 10)	   /* the most it drops: then a reset */
/* How long a drain lets an idle connection send its next request. */
#define DRAIN_IDLE_NS (250 * PW_NSEC_PER_MSEC)
#define FANOUT_BATCH  16 /* --fanout calls in flight per request */

/* A task the drain must wake: linked in a shard's registry. */
struct http_member {
	struct pw_list node;
	struct pw_waker waker; /* owned clone while linked */
	unsigned reg;	       /* index of the registry */
	bool linked;
	bool acceptor; /* the registry's acceptor (woken below the cap) */
};

struct http_shard {
	/* Guards members, open and acceptor; taken once per connection. */
	_Alignas(64) pthread_mutex_t lock;
	struct pw_list members;
	unsigned open; /* connections spawned and not yet dropped */
	struct http_member *acceptor; /* linked acceptor, or NULL */
	/* Written only by this shard's thread, with a relaxed load and store
	 * (no read-modify-write); read by pw_http_server_stats(). */
	_Atomic uint64_t accepted, requests, errors, closed;
	_Atomic uint64_t work, calls, timeouts, reads;
	_Atomic uint64_t head_timeouts, send_timeouts, too_large, capped, full;
	_Atomic uint64_t linger_resets, bytes_in, bytes_out;
	_Atomic uint64_t closes[PW_HTTP_CLOSE_N];
	_Atomic uint64_t status[PW_HTTP_NSTATUS];
	/* This shard's thread only: */
	struct pw_http_canned canned;
	char *pool;	/* free output buffers, linked by their first word */
	unsigned npool; /* buffers in pool */
};

struct pw_http_server {
	struct pw_runtime *rt;
	struct pw_net_listener *l;
	size_t head_max;
	uint64_t work, keepalive_ns, head_ns, send_ns;
	uint64_t max_body;
	uint32_t max_requests;
	unsigned max_conns;
	bool fanout, has_net;
	struct pw_net_config net;
	unsigned nshards, accept_shards;
	/* Set once by pw_http_server_drain(); pairs with the acquire loads
	 * in draining(). Tasks that were asleep also see it through the
	 * wake that follows the store, and tasks registering later through
	 * the registry's mutex. */
	atomic_bool drain;
	struct http_shard *sh;
	struct pw_http_static *st; /* --root: the files (http_static.c) */
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
	if (m->acceptor)
		h->acceptor = m;
	pthread_mutex_unlock(&h->lock);
}

/* Unlink @m; @conn also ends its connection's count, waking the
 * registry's acceptor when that takes the count below the cap. */
static void member_unlink(struct pw_http_server *s, struct http_member *m,
			  bool conn)
{
	struct http_shard *h = &s->sh[m->reg];

	pthread_mutex_lock(&h->lock);
	if (m->linked)
		pw_list_del(&m->node);
	m->linked = false;
	if (h->acceptor == m)
		h->acceptor = NULL;
	if (conn) {
		h->open--;
		if (s->max_conns && h->open + 1 == s->max_conns && h->acceptor)
			pw_waker_wake_by_ref(&h->acceptor->waker);
	}
	pthread_mutex_unlock(&h->lock);
	pw_waker_drop(&m->waker);
}

/* Whether the registry @reg holds its cap of connections. */
static bool registry_full(struct pw_http_server *s, unsigned reg)
{
	struct http_shard *h = &s->sh[reg];
	bool full;

	if (!s->max_conns)
		return false;
	pthread_mutex_lock(&h->lock);
	full = h->open >= s->max_conns;
	pthread_mutex_unlock(&h->lock);
	return full;
}

/* ---- output buffers -------------------------------------------------- */

/* An output buffer from the calling shard's free list, or a new one;
 * NULL when memory is short. */
static char *out_take(struct pw_http_server *s)
{
	struct http_shard *h = here(s);
	char *b = h ? h->pool : NULL;

	if (!b)
		return malloc(OUT_MAX);
	memcpy(&h->pool, b, sizeof(h->pool));
	h->npool--;
	return b;
}

/* Give @b back to the calling shard's free list (freed when it is full
 * or off a shard). */
static void out_give(struct pw_http_server *s, char *b)
{
	struct http_shard *h = here(s);

	if (!b)
		return;
	if (!h || h->npool >= OUT_POOL) {
		free(b);
		return;
	}
	memcpy(b, &h->pool, sizeof(h->pool));
	h->pool = b;
	h->npool++;
}

/* ---- a connection ------------------------------------------------------ */

/* State of a --work child task and of a --fanout call's handler. */
struct http_job {
	struct pw_http_server *srv;
	uint64_t k;
};

enum { C_RECV, C_JOB, C_SEND, C_FILE, C_SHUT, C_LINGER, C_CLOSE };

/* Steps of a request's job. */
enum { J_SPAWN, J_JOIN, J_FAN, J_DONE };

/* The --fanout calls of a request: a call in flight keeps the task's
 * memory alive, so the calls must live there. */
struct http_fan {
	uint32_t pending;    /* calls of the batch not yet answered */
	unsigned base, n;    /* the batch: shards base..base+n-1 */
	struct http_job job; /* the calls' state: read when each starts */
	struct pw_call calls[FANOUT_BATCH];
};

/* A request's job, at the end of a connection's state with --work or
 * --fanout only: the child, then (with --fanout) the calls. */
struct http_jobs {
	struct pw_join child; /* the --work task */
	struct http_fan fan;
};

/* Bytes of struct http_jobs a server with --work and/or --fanout needs. */
#define JOBS_SIZE(s)                                     \
	((s)->fanout ? sizeof(struct http_jobs) :        \
	 (s)->work   ? offsetof(struct http_jobs, fan) : \
		       0)

struct http_conn {
	struct http_member m;
	struct pw_http_server *srv;
	int fd;
	uint8_t step;	  /* C_* */
	uint8_t job;	  /* J_*: where the current request's job is */
	bool have;	  /* buf is borrowed */
	bool partial;	  /* part of a request has been received */
	bool closing;	  /* close once out is sent */
	bool eof;	  /* the client closed its side */
	bool keep;	  /* the request whose job runs keeps the connection */
	bool answered;	  /* a whole request came: a drain may close it idle */
	bool drain_seen;  /* drain_at() started its grace (at t_idle) */
	bool head;	  /* the request whose job runs is a HEAD */
	bool sending;	  /* the send of out has waited: t_send and sent hold */
	uint8_t cause;	  /* why it closes (PW_HTTP_CLOSE_*), once known */
	uint32_t off;	  /* bytes of buf parsed */
	uint32_t out_len; /* bytes of out to send */
	uint32_t nreq;	  /* requests answered, counted with max_requests */
	uint32_t sent;	  /* C_SEND: pw_send_progress() at t_send, its low
			     32 bits (a send moves far less between two
			     polls); C_LINGER: the bytes dropped */
	uint64_t t_idle;  /* keep-alive: when the last response went out */
	uint64_t t_req;	  /* head timeout: the request's first byte, or for
			     a body its last read */
	uint64_t t_send;  /* C_SEND: when the send last moved; C_LINGER:
			     the linger's end */
	uint64_t armed;	  /* the timer's deadline while armed (0: never
			     armed; stale once due) */
	char *out;	  /* the output buffer, while there is output */
	struct pw_http_file *file; /* --root: the response being made */
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close cl;
	struct pw_sleep timer; /* the deadline of the state waited in */
	struct pw_http_parser p;
	struct http_jobs jobs[]; /* JOBS_SIZE() bytes of one */
};

/*
 * An idle keep-alive connection holds its task's slab block and nothing
 * else: keep the state, with the task's header (112 bytes on x86-64),
 * within a 2 KiB block. The state is 1936 bytes on x86-64 today.
 */
_Static_assert(sizeof(struct http_conn) <= 2048 - 112,
	       "a connection's state outgrew its 2 KiB slab block");

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

/* Note why the connection will close; the first cause given wins. */
static inline void conn_cause(struct http_conn *c, enum pw_http_close why)
{
	if (!c->cause)
		c->cause = (uint8_t)why;
}

static const int statuses[PW_HTTP_NSTATUS] = PW_HTTP_STATUSES;

/* Count an answer with @status (not 200) in the shard's record. */
static void count_status(struct http_shard *h, int status)
{
	for (unsigned i = 0; i < PW_HTTP_NSTATUS; i++)
		if (statuses[i] == status) {
			bump(&h->status[i], 1);
			return;
		}
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

/* The --fanout part of a job: one batch of calls at a time.
 * Return: PW_READY when every shard answered, else PW_PENDING. */
static enum pw_poll conn_fan(struct pw_cx *cx, struct http_conn *c)
{
	struct pw_http_server *s = c->srv;
	struct http_fan *f = &c->jobs->fan;
	int64_t r;

	for (;;) {
		if (!f->pending) {
			f->base += f->n;
			f->n = 0;
			if (f->base >= s->nshards)
				return PW_READY;
			f->n = s->nshards - f->base;
			if (f->n > FANOUT_BATCH)
				f->n = FANOUT_BATCH;
			f->job = (struct http_job){ s, s->work };
			for (unsigned i = 0; i < f->n; i++)
				pw_call_init(&f->calls[i], f->base + i,
					     fan_poll, &f->job, sizeof(f->job),
					     NULL);
			f->pending = (uint32_t)((1ull << f->n) - 1);
		}
		for (unsigned i = 0; i < f->n; i++) {
			if (!(f->pending & (1u << i)))
				continue;
			if (pw_call_poll(cx, &f->calls[i], &r) == PW_READY)
				f->pending &= ~(1u << i);
		}
		if (f->pending)
			return PW_PENDING;
	}
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

	if (c->job == J_DONE)
		return PW_READY;
	if (c->job == J_SPAWN) {
		c->job = J_FAN;
		if (s->work &&
		    !pw_spawn(&c->jobs->child, work_poll, &j, sizeof(j), NULL))
			c->job = J_JOIN;
		if (s->fanout)
			c->jobs->fan.base = c->jobs->fan.n =
				c->jobs->fan.pending = 0;
	}
	if (c->job == J_JOIN) {
		if (pw_join_poll(cx, &c->jobs->child, &r) == PW_PENDING)
			return PW_PENDING;
		c->job = J_FAN;
	}
	if (s->fanout && conn_fan(cx, c) == PW_PENDING)
		return PW_PENDING;
	c->job = J_DONE;
	return PW_READY;
}

/* Whether the request just parsed is a HEAD (methods are case-sensitive,
 * RFC 9110 section 9.1). */
static inline bool is_head(const struct pw_http_req *r)
{
	return r->method_len == 4 && !memcmp(r->method, "HEAD", 4);
}

/* Make sure there is an output buffer. Return: false when memory is
 * short; the connection then closes (closing set, nothing to send). */
static bool conn_out(struct http_conn *c)
{
	if (!c->out && !(c->out = out_take(c->srv))) {
		c->closing = true;
		return false;
	}
	return true;
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

	if (__builtin_expect(!c->out, 0) && !conn_out(c))
		return;
	if (head)
		n -= h->canned.body_len;
	memcpy(c->out + c->out_len, r, n);
	c->out_len += (uint32_t)n;
	c->closing = !keep;
}

/* Answer the request whose job is done, and count it. */
static void conn_respond(struct http_conn *c, struct http_shard *h)
{
	conn_append(c, h, c->keep, c->head);
	bump(&h->requests, 1);
}

/* Append an error response, @status with its reason as the body, after
 * which the connection closes. The caller leaves PW_HTTP_CANNED_MAX
 * bytes of room. */
static void conn_refuse(struct http_conn *c, struct http_shard *h, int status)
{
	const char *r = pw_http_reason(status);
	int n;

	if (conn_out(c)) {
		n = pw_http_build(c->out + c->out_len, OUT_MAX - c->out_len,
				  status, false, h->canned.date, r, strlen(r));
		if (n > 0)
			c->out_len += (uint32_t)n;
	}
	c->closing = true;
}

/* A complete request: whether it keeps the connection (not when
 * draining, nor past --max-requests, counted). */
static inline bool conn_keeps(struct http_conn *c, struct http_shard *h,
			      bool drain)
{
	uint32_t max = c->srv->max_requests;

	c->answered = true;
	if (!c->p.req.keep_alive || drain) {
		conn_cause(c,
			   drain ? PW_HTTP_CLOSE_DRAIN : PW_HTTP_CLOSE_CLIENT);
		return false;
	}
	if (max && ++c->nreq >= max) {
		bump(&h->capped, 1);
		conn_cause(c, PW_HTTP_CLOSE_MAX_REQUESTS);
		return false;
	}
	return true;
}

/* ---- --root: the file hooks (http_static.c does the work) ---------------- */

/* A whole request of a --root server: take its file record (the job
 * that follows opens the file). @head, @len: its head as received, or
 * NULL when it came in several reads. No memory: the connection closes
 * unanswered. */
static void conn_file_begin(struct http_conn *c, const char *head, size_t len)
{
	struct pw_http_server *s = c->srv;
	uint64_t file_ns = s->send_ns ? s->send_ns :
					PW_HTTP_SEND_TIMEOUT_DEFAULT;

	if (conn_out(c))
		c->file = pw_http_static_begin(s->st, c->fd, &c->p.req, head,
					       len, c->keep, file_ns,
					       s->send_ns);
	if (!c->file) {
		c->closing = true;
		c->job = J_DONE;
	}
}

/* The file part of a request's job: the response written into the
 * output buffer (a body too large for it is sent after it, C_FILE). */
static enum pw_poll conn_file_job(struct pw_cx *cx, struct http_conn *c)
{
	struct http_shard *h = here(c->srv);
	int status;

	if (pw_http_static_poll(cx, c->file, c->out, &c->out_len, OUT_MAX,
				h->canned.date, &status) == PW_PENDING)
		return PW_PENDING;
	if (status == 200)
		bump(&h->requests, 1);
	if (pw_http_static_closes(c->file)) {
		c->closing = true;
		if (status == 400 || !status) {
			if (status)
				count_status(h, 400);
			bump(&h->errors, 1);
			conn_cause(c, PW_HTTP_CLOSE_ERROR);
		}
	}
	if (!pw_http_static_body_left(c->file)) {
		pw_http_static_end(c->file);
		c->file = NULL;
	}
	return PW_READY;
}

/*
 * Parse what is left of the borrowed buffer, appending a response per
 * request, until the buffer is used up, the output buffer has no room for
 * another response, or a response closes the connection.
 */
static void conn_parse(struct http_conn *c)
{
	struct pw_http_server *s = c->srv;
	struct http_shard *h = here(s);
	const char *data = c->buf.data;
	bool drain = draining(s);
	uint64_t ok = 0;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	pw_http_canned_tick(&h->canned, ts.tv_sec);
	while (c->off < c->buf.len && !c->closing) {
		const char *head = c->partial ? NULL : data + c->off;
		size_t used;
		int rc;

		if (OUT_MAX - c->out_len < PW_HTTP_CANNED_MAX ||
		    c->job != J_DONE || c->file)
			break;
		rc = pw_http_parse(&c->p, data + c->off, c->buf.len - c->off,
				   &used);
		c->off += (uint32_t)used;
		if (rc == 0) {
			if (!c->partial)
				c->t_req = pw_time_now();
			c->partial = true;
			break;
		}
		if (rc == 1) {
			bool keep = conn_keeps(c, h, drain);

			c->partial = false;
			if (s->work || s->fanout || s->st) {
				/* The response waits for the job. */
				c->keep = keep;
				c->head = is_head(&c->p.req);
				c->job = J_SPAWN;
				if (s->st)
					conn_file_begin(c, head, used);
				break;
			}
			conn_append(c, h, keep, is_head(&c->p.req));
			ok++;
			continue;
		}
		conn_refuse(c, h, pw_http_error_status(rc));
		conn_cause(c, PW_HTTP_CLOSE_ERROR);
		count_status(h, pw_http_error_status(rc));
		bump(&h->errors, 1);
		if (rc == -EFBIG)
			bump(&h->too_large, 1);
	}
	if (ok)
		bump(&h->requests, ok);
}

/*
 * Wait for @at (PW_TIME_NEVER: nothing to wait for) on the connection's
 * one timer. The timer is left alone while it is armed no later than
 * @at and not yet due: it wakes the task early at worst, and this runs
 * again then. So a deadline that moves later with every request (the
 * keep-alive's, the send's) costs no timer operation per request, only
 * one when the old deadline comes, and the time it fires stays exact.
 * Return: true once @at has passed.
 */
static inline bool conn_timer(struct pw_cx *cx, struct http_conn *c,
			      uint64_t at)
{
	uint64_t now;

	if (at == PW_TIME_NEVER)
		return false;
	now = pw_time_now();
	if (at <= now)
		return true;
	if (c->armed > now && c->armed <= at)
		return false;
	pw_sleep_reset(&c->timer, at);
	if (pw_sleep_poll(cx, &c->timer) == PW_READY)
		return true;
	c->armed = at;
	return false;
}

/*
 * When a drain closes @c, idle: never before its first request (it was
 * accepted before the stop: that one is answered), else DRAIN_IDLE_NS
 * after the drain reached it, so that a request already on its way is
 * answered (with "Connection: close") rather than met by a close. The
 * grace starts at t_idle, reset then. PW_TIME_NEVER when not draining.
 */
static inline uint64_t drain_at(struct http_conn *c)
{
	if (c->partial || !c->answered || !draining(c->srv))
		return PW_TIME_NEVER;
	if (!c->drain_seen) {
		c->drain_seen = true;
		c->t_idle = pw_time_now();
	}
	return c->t_idle + DRAIN_IDLE_NS;
}

/*
 * C_RECV found no bytes: send what is waiting, or close when draining
 * between requests (drain_at()); else wait, under the keep-alive timeout (closes,
 * counted in timeouts) and, with part of a request in, the head timeout
 * (408, then close; the earlier of the two wins, 408 on a tie).
 * Return: true when the task must wait.
 */
static inline bool conn_idle(struct pw_cx *cx, struct http_conn *c)
{
	struct pw_http_server *s = c->srv;
	uint64_t at = PW_TIME_NEVER, head = PW_TIME_NEVER;
	uint64_t drain = drain_at(c);
	struct http_shard *h;

	if (c->out_len) {
		c->step = C_SEND;
		return false;
	}
	if (s->keepalive_ns)
		at = c->t_idle + s->keepalive_ns;
	if (c->partial && s->head_ns)
		head = c->t_req + s->head_ns;
	if (head < at)
		at = head;
	if (drain < at)
		at = drain;
	if (!conn_timer(cx, c, at))
		return true;
	h = here(s);
	if (at == drain) {
		conn_cause(c, PW_HTTP_CLOSE_DRAIN);
		conn_close(c);
	} else if (at == head) {
		bump(&h->head_timeouts, 1);
		count_status(h, 408);
		conn_cause(c, PW_HTTP_CLOSE_HEAD_TIMEOUT);
		pw_http_canned_tick(&h->canned, time(NULL));
		conn_refuse(c, h, 408);
		c->step = C_SEND;
	} else {
		bump(&h->timeouts, 1);
		conn_cause(c, PW_HTTP_CLOSE_KEEPALIVE);
		conn_close(c);
	}
	return false;
}

/* The receive ended with @res <= 0: an error closes, the client's close
 * sends what is waiting first. */
static inline void conn_ended(struct http_conn *c, int32_t res)
{
	if (res < 0) {
		conn_cause(c, PW_HTTP_CLOSE_RESET);
		conn_close(c);
		return;
	}
	conn_cause(c, PW_HTTP_CLOSE_CLIENT);
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

	if (c->file) { /* a body waits behind the output */
		c->step = C_SEND;
		return false;
	}
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
		struct http_shard *h = here(c->srv);
		bump(&h->reads, 1);
		bump(&h->bytes_in, (uint64_t)res);
		if (c->partial && c->p.body_left)
			c->t_req = pw_time_now(); /* a body moved */
	}
	conn_parse(c);
	if (c->job != J_DONE) {
		c->step = C_JOB;
		return false;
	}
	if (c->closing || c->off >= c->buf.len)
		conn_release(c);
	if (c->closing || c->have || c->file)
		c->step = C_SEND;
	return false;
}

/*
 * The send waits: give the unparsed tail of the borrowed buffer back to
 * the receive and park it (the connection then holds no ring buffer),
 * and watch the send's progress against the send timeout.
 * Return: true to wait; false once the timeout cut the connection (a
 * reset, counted).
 */
static void conn_park(struct http_conn *c)
{
	if (c->have && !pw_recv_unread(&c->rx, &c->buf, c->off))
		c->have = false;
	if (!c->have)
		pw_recv_park(&c->rx);
}

static bool conn_send_wait(struct pw_cx *cx, struct http_conn *c)
{
	struct pw_http_server *s = c->srv;
	uint32_t sent;

	conn_park(c);
	if (!s->send_ns)
		return true;
	sent = (uint32_t)pw_send_progress(&c->tx);
	if (!c->sending || sent != c->sent) {
		c->sending = true;
		c->sent = sent;
		c->t_send = pw_time_now();
	}
	if (!conn_timer(cx, c, c->t_send + s->send_ns))
		return true;
	bump(&here(s)->send_timeouts, 1);
	conn_cause(c, PW_HTTP_CLOSE_SEND_TIMEOUT);
	(void)pw_net_abort(c->fd);
	conn_close(c);
	return false;
}

static void conn_sent(struct http_conn *c, bool failed);

/* C_SEND: send the output buffer; then read on, or close (half-close
 * and linger while the client may still send). The buffer goes back to
 * the shard unless a half-parsed buffer waits; a --root body still to
 * send goes next (C_FILE). */
static inline bool conn_send(struct pw_cx *cx, struct http_conn *c)
{
	int32_t res = 0;

	if (c->out_len && pw_send_poll(cx, &c->tx, c->out, c->out_len,
				       PW_TIME_NEVER, &res) == PW_PENDING)
		return conn_send_wait(cx, c);
	if (res > 0)
		bump(&here(c->srv)->bytes_out, (uint64_t)res);
	else if (res < 0)
		conn_cause(c, PW_HTTP_CLOSE_RESET);
	c->out_len = 0;
	c->sending = false;
	if (c->file && res >= 0) {
		c->step = C_FILE; /* the body follows its head */
		return false;
	}
	conn_sent(c, res < 0);
	return false;
}

/*
 * The response is out (@failed: the send failed): the output buffer goes
 * back to the shard unless a half-parsed buffer waits; then read on, or
 * close (half-close and linger while the client may still send).
 */
static void conn_sent(struct http_conn *c, bool failed)
{
	if (!c->have) {
		out_give(c->srv, c->out);
		c->out = NULL;
	}
	c->t_idle = pw_time_now();
	if (failed || (c->closing && c->eof)) {
		conn_close(c);
	} else if (c->closing) {
		c->step = C_SHUT;
		pw_shutdown_init(&c->cl, c->fd, SHUT_WR);
	} else {
		c->step = C_RECV;
	}
}

/*
 * C_FILE: the body of a --root response, after its head (parked like a
 * send). A body cut (the send timeout, a file that got shorter, a
 * socket error) resets the connection: its Content-Length is not met.
 */
static bool conn_file(struct pw_cx *cx, struct http_conn *c)
{
	int32_t res;

	if (pw_http_static_body_poll(cx, c->file, c->out, OUT_MAX, &res) ==
	    PW_PENDING) {
		conn_park(c);
		return true;
	}
	pw_http_static_end(c->file);
	c->file = NULL;
	if (res < 0) {
		if (res == -ETIMEDOUT)
			bump(&here(c->srv)->send_timeouts, 1);
		conn_cause(c, res == -ETIMEDOUT ? PW_HTTP_CLOSE_SEND_TIMEOUT :
						  PW_HTTP_CLOSE_RESET);
		(void)pw_net_abort(c->fd);
		conn_release(c);
		out_give(c->srv, c->out);
		c->out = NULL;
		conn_close(c);
		return false;
	}
	conn_sent(c, false);
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
		c->t_send = pw_time_now() + LINGER_NS;
		c->sent = 0;
		c->step = C_LINGER;
		pw_close_init(&c->cl, c->fd);
	}
	if (pw_recv_poll(cx, &c->rx, c->t_send, &c->buf, &res) == PW_PENDING)
		return true;
	if (res > 0) {
		pw_net_buf_release(&c->buf);
		bump(&here(c->srv)->bytes_in, (uint64_t)res);
		c->sent += (uint32_t)res;
		if (c->sent <= LINGER_BYTES)
			return false;
		/* A client that keeps sending after the closing answer
		 * would have the shard drop its bytes for the whole
		 * linger: it gets the reset instead. */
		bump(&here(c->srv)->linger_resets, 1);
		(void)pw_net_abort(c->fd);
	}
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
			if (!wait && c->file)
				wait = conn_file_job(cx, c) == PW_PENDING;
			if (wait)
				break;
			if (!c->srv->st)
				conn_respond(c, here(c->srv));
			/* Parse on: the rest of the buffer, or a send. */
			c->step = C_RECV;
			break;
		case C_SEND:
			wait = conn_send(cx, c);
			break;
		case C_FILE:
			wait = conn_file(cx, c);
			break;
		case C_SHUT:
		case C_LINGER:
			wait = conn_linger(cx, c);
			break;
		default:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			/* Closed: nothing reads the output buffer any more. */
			pw_http_static_end(c->file);
			c->file = NULL;
			out_give(c->srv, c->out);
			c->out = NULL;
			return pw_ready(cx, 0);
		}
		if (wait)
			return PW_PENDING;
	}
}

static void conn_drop(void *state)
{
	struct http_conn *c = state;
	struct pw_http_server *s = c->srv;
	struct http_shard *h = here(s);

	conn_release(c);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	pw_sleep_cancel(&c->timer);
	pw_http_static_end(c->file); /* its calls stopped: see there */
	c->file = NULL;
	if (s->work)
		pw_join_detach(&c->jobs->child);
	for (unsigned i = 0; s->fanout && i < c->jobs->fan.n; i++)
		if (c->jobs->fan.pending & (1u << i))
			pw_call_cancel(&c->jobs->fan.calls[i]);
	if (!pw_close_cancel(&c->cl))
		close(c->fd);
	/* Dropped in the middle of a send (the runtime going away): the
	 * cancelled send may still read the buffer, so it is not handed to
	 * another connection. */
	if (c->step == C_SEND || c->step == C_FILE)
		free(c->out);
	else
		out_give(s, c->out);
	c->out = NULL;
	member_unlink(s, &c->m, true);
	if (h) {
		bump(&h->closed, 1);
		bump(&h->closes[c->cause], 1);
	}
}

/* ---- the acceptor -------------------------------------------------------- */

struct http_acceptor {
	struct http_member m;
	struct pw_http_server *srv;
	struct pw_accept acc;
	bool started;
};

/* Start a connection task for @fd, counted in the registry @reg. */
static void conn_spawn(struct pw_http_server *s, unsigned reg, int fd)
{
	struct http_shard *h = &s->sh[reg];
	union {
		struct http_conn c;
		char room[sizeof(struct http_conn) + sizeof(struct http_jobs)];
	} u;
	struct http_conn *c = &u.c;
	size_t size = sizeof(*c) + JOBS_SIZE(s);

	memset(&u, 0, size);
	c->srv = s;
	c->fd = fd;
	c->job = J_DONE;
	c->m.reg = reg;
	c->t_idle = pw_time_now();
	pw_sleep_init_at(&c->timer, PW_TIME_NEVER);
	pw_http_parser_init(&c->p, s->head_max);
	c->p.body_max = s->max_body;
	pw_recv_init(&c->rx, fd);
	pw_send_init(&c->tx, fd);
	pw_close_init(&c->cl, fd);
	pthread_mutex_lock(&h->lock);
	h->open++;
	pthread_mutex_unlock(&h->lock);
	if (pw_spawn(NULL, conn_poll, c, size, conn_drop)) {
		close(fd);
		pthread_mutex_lock(&h->lock);
		h->open--;
		pthread_mutex_unlock(&h->lock);
	}
}

/* The accept loop's stop: the server drains. */
static bool acceptor_stop(void *arg)
{
	struct http_acceptor *a = arg;

	return draining(a->srv);
}

/* The accept loop's full: the acceptor's registry holds
 * --max-conns connections (counted); the last of them to end wakes it. */
static bool acceptor_full(void *arg)
{
	struct http_acceptor *a = arg;
	struct http_shard *h;

	if (!registry_full(a->srv, a->m.reg))
		return false;
	h = here(a->srv);
	if (h)
		bump(&h->full, 1);
	return true;
}

/* The accept loop's start: count @fd and start its task, counted in
 * the acceptor's registry (whose cap full() checks). It always takes
 * @fd (conn_spawn() closes it when the task cannot start). */
static int acceptor_take(void *arg, int fd)
{
	struct http_acceptor *a = arg;
	struct http_shard *h = here(a->srv);

	if (h)
		bump(&h->accepted, 1);
	conn_spawn(a->srv, a->m.reg, fd);
	return 0;
}

/* The accept loop's error: one line on stderr. */
static void acceptor_error(void *arg, int err)
{
	(void)arg;
	fprintf(stderr, "pinwheel http: accept: %s\n", strerror(-err));
}

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct http_acceptor *a = state;

	if (!a->started) {
		/* Before this shard's first receive makes its ring; -EBUSY
		 * (a ring already made) keeps the old geometry. */
		if (a->srv->has_net)
			(void)pw_net_configure(&a->srv->net);
		a->started = true;
	}
	if (!a->m.linked && !a->m.waker.task)
		member_link(a->srv, cx, &a->m);
	struct pw_accept_loop loop = {
		.stop = acceptor_stop,
		.full = acceptor_full,
		.start = acceptor_take,
		.error = acceptor_error,
		.arg = a,
	};

	return pw_accept_loop_poll(cx, &a->acc, &loop);
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
	s->keepalive_ns = o->keepalive_ns;
	s->head_ns = o->head_timeout_ns;
	s->send_ns = o->send_timeout_ns;
	s->max_conns = o->max_conns;
	/* Over 2^32 - 1 requests on one connection: no cap. */
	s->max_requests =
		o->max_requests > UINT32_MAX ? 0 : (uint32_t)o->max_requests;
	s->max_body = o->max_body;
	s->has_net = o->net != NULL;
	if (o->net)
		s->net = *o->net;
	s->accept_shards = o->accept_shards ? o->accept_shards : n;
	if (o->root && (err = pw_http_static_create(&s->st, o->root, n))) {
		free(s->sh);
		free(s);
		return err;
	}
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
		a.m.acceptor = true;
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
	if (o->sndbuf > (1u << 30))
		return -EINVAL;
	if (pw_http_parser_init(&probe, o->head_max))
		return -EINVAL;
	n = pw_runtime_shards(rt);
	if (n <= 0 || o->accept_shards > (unsigned)n)
		return -EINVAL;
	err = server_new(&s, rt, (unsigned)n, o, body, body_len);
	if (err)
		return err;
	lo.flags = o->listen_flags;
	lo.sndbuf = (int)o->sndbuf;
	/* Per-shard sockets of shards that do not accept would keep the
	 * connections the kernel hands them: share one socket instead. */
	if (s->accept_shards < s->nshards)
		lo.flags |= PW_NET_LISTEN_SHARED;
	if (o->nadopt)
		err = pw_net_listener_adopt(&s->l, rt, o->adopt, o->nadopt,
					    &lo);
	else
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

struct pw_http_static *pw_http_server_files(struct pw_http_server *s)
{
	return s ? s->st : NULL;
}

struct pw_net_listener *pw_http_server_listener(struct pw_http_server *s)
{
	return s ? s->l : NULL;
}

int pw_http_server_listener_stats(const struct pw_http_server *s,
				  struct pw_net_listener_stats *out)
{
	if (!s)
		return -EINVAL;
	return pw_net_listener_stats(s->l, out);
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
	out->head_timeouts =
		atomic_load_explicit(&h->head_timeouts, memory_order_relaxed);
	out->send_timeouts =
		atomic_load_explicit(&h->send_timeouts, memory_order_relaxed);
	out->too_large =
		atomic_load_explicit(&h->too_large, memory_order_relaxed);
	out->capped = atomic_load_explicit(&h->capped, memory_order_relaxed);
	out->full = atomic_load_explicit(&h->full, memory_order_relaxed);
	out->linger_resets =
		atomic_load_explicit(&h->linger_resets, memory_order_relaxed);
	out->bytes_in =
		atomic_load_explicit(&h->bytes_in, memory_order_relaxed);
	out->bytes_out =
		atomic_load_explicit(&h->bytes_out, memory_order_relaxed);
	for (unsigned i = 0; i < PW_HTTP_CLOSE_N; i++)
		out->closes[i] = atomic_load_explicit(&h->closes[i],
						      memory_order_relaxed);
	for (unsigned i = 0; i < PW_HTTP_NSTATUS; i++)
		out->status[i] = atomic_load_explicit(&h->status[i],
						      memory_order_relaxed);
	/* The open count is the registry's, under its lock. */
	pthread_mutex_lock((pthread_mutex_t *)&h->lock);
	out->active = h->open;
	pthread_mutex_unlock((pthread_mutex_t *)&h->lock);
	return 0;
}

const char *pw_http_close_name(enum pw_http_close why)
{
	static const char *const names[PW_HTTP_CLOSE_N] = {
		[PW_HTTP_CLOSE_OTHER] = "other",
		[PW_HTTP_CLOSE_CLIENT] = "client",
		[PW_HTTP_CLOSE_KEEPALIVE] = "keepalive_timeout",
		[PW_HTTP_CLOSE_HEAD_TIMEOUT] = "head_timeout",
		[PW_HTTP_CLOSE_SEND_TIMEOUT] = "send_timeout",
		[PW_HTTP_CLOSE_RESET] = "reset",
		[PW_HTTP_CLOSE_MAX_REQUESTS] = "max_requests",
		[PW_HTTP_CLOSE_DRAIN] = "drain",
		[PW_HTTP_CLOSE_ERROR] = "error",
	};

	return (unsigned)why < PW_HTTP_CLOSE_N ? names[why] : "other";
}

int pw_http_server_destroy(struct pw_http_server *s)
{
	if (!s)
		return -EINVAL;
	if (s->l)
		pw_net_listener_destroy(s->l);
	for (unsigned i = 0; i < s->nshards; i++) {
		struct http_shard *h = &s->sh[i];

		pthread_mutex_destroy(&h->lock);
		while (h->pool) {
			char *b = h->pool;

			memcpy(&h->pool, b, sizeof(h->pool));
			free(b);
		}
	}
	pw_http_static_destroy(s->st);
	free(s->sh);
	free(s);
	return 0;
}
