/* SPDX-License-Identifier: MIT */
/*
 * scrape.c - the --metrics-listen server (see scrape.h): an acceptor and
 * a task per connection, all on shard 0, counted and capped by a
 * struct pw_drain (pinwheel/serve.h), which also ends them at the stop.
 *
 * A connection loops: receive under the idle or head deadline, parse
 * with the one request parser, and for each whole request build the
 * whole response in memory (headers, then the body the write function
 * put in a memstream) and send it under the send deadline. Before a send
 * the unparsed tail of the receive buffer goes back to the receive
 * (pw_recv_unread()), so a connection holds no ring buffer while a
 * scraper is slow to read. Pipelined requests are answered in turn.
 *
 * Counters are written only by shard 0's thread (relaxed load and store)
 * and read by any thread.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/serve.h"
#include "apps/cli.h"
#include "apps/http_parse.h"
#include "apps/scrape.h"

struct pw_scrape {
	struct pw_runtime *rt;
	struct pw_net_listener *l;
	pw_scrape_write_fn fn;
	void *arg;
	struct pw_drain drain; /* the cap and the stop */
	/* Set by the acceptor's drop (release), read by pw_scrape_stop()
	 * (acquire): the acceptor no longer touches the listener. */
	atomic_bool acceptor_gone;
	/* Shard 0's thread only writes them (relaxed load and store);
	 * pw_scrape_read() loads them relaxed: counters, no order. */
	_Atomic uint64_t scrapes, connections, not_found, bad_method;
	_Atomic uint64_t bad_requests, head_timeouts, send_timeouts;
	_Atomic uint64_t write_errors, idle_closes;
};

static void bump(_Atomic uint64_t *c)
{
	/* Relaxed: one writer (shard 0); pairs with the loads in
	 * pw_scrape_read(). */
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

enum { S_RECV, S_SEND, S_SHUT, S_CLOSE };

struct scrape_conn {
	struct pw_scrape *srv;
	struct pw_drain_token tok;
	int fd;
	int step;	  /* S_* */
	bool have;	  /* buf is borrowed */
	bool partial;	  /* part of a request is in */
	bool closing;	  /* close once out is sent */
	uint32_t off;	  /* bytes of buf parsed */
	uint32_t nreq;	  /* requests answered */
	pw_time_t t_idle; /* the last response went out (or the accept) */
	pw_time_t t_req;  /* the request's first byte */
	pw_time_t t_send; /* the send's deadline */
	char *out;	  /* the response being sent (malloc'd) */
	size_t out_len;
	struct pw_net_buf buf;
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close cl;
	struct pw_http_parser p;
};

/* ---- responses ---------------------------------------------------------- */

/* The body of a scrape in @fmt, malloc'd in *@body. Return: 0 or -errno. */
static int scrape_body(struct pw_scrape *s, enum pw_expo_format fmt,
		       char **body, size_t *len)
{
	FILE *f = open_memstream(body, len);
	int err;

	if (!f)
		return -ENOMEM;
	err = s->fn(s->arg, f, fmt);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*body);
		*body = NULL;
	}
	return err;
}

/* The reason phrase of @status, with those the parser's table lacks. */
static const char *reason(int status)
{
	if (status == 405)
		return "Method Not Allowed";
	if (status == 500)
		return "Internal Server Error";
	return pw_http_reason(status);
}

/* The whole response into c->out: status line, headers, then @body
 * (not for a HEAD). Return: false when memory is short. */
static bool respond(struct scrape_conn *c, int status, const char *type,
		    const char *body, size_t len, bool head)
{
	char hdr[512];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.1 %d %s\r\nServer: pinwheel\r\n"
			 "Content-Type: %s\r\nContent-Length: %zu\r\n"
			 "%sConnection: %s\r\n\r\n",
			 status, reason(status), type, len,
			 status == 405 ? "Allow: GET, HEAD\r\n" : "",
			 c->closing ? "close" : "keep-alive");
	size_t blen = head ? 0 : len;

	c->out = malloc((size_t)n + blen);
	if (!c->out)
		return false;
	memcpy(c->out, hdr, (size_t)n);
	if (blen)
		memcpy(c->out + n, body, blen);
	c->out_len = (size_t)n + blen;
	return true;
}

static const char prom_type[] = "text/plain; version=0.0.4; charset=utf-8";
static const char json_type[] = "application/json";
static const char text_type[] = "text/plain; charset=utf-8";

/* Answer the request in c->p.req (GET or HEAD of /metrics or
 * /metrics.json; 404, 405 else). Return: false when memory is short. */
static bool answer(struct scrape_conn *c)
{
	struct pw_scrape *s = c->srv;
	const struct pw_http_req *r = &c->p.req;
	bool head = !strcmp(r->method, "HEAD");
	bool json = !strcmp(r->target, "/metrics.json");
	char *body = NULL;
	size_t len = 0;
	bool ok;

	if (!head && strcmp(r->method, "GET")) {
		bump(&s->bad_method);
		return respond(c, 405, text_type, "Method Not Allowed\n", 19,
			       head);
	}
	if (!json && strcmp(r->target, "/metrics")) {
		bump(&s->not_found);
		return respond(c, 404, text_type, "Not Found\n", 10, head);
	}
	bump(&s->scrapes); /* first: the scrape counts itself */
	if (scrape_body(s, json ? PW_EXPO_JSON : PW_EXPO_PROMETHEUS, &body,
			&len)) {
		bump(&s->write_errors);
		c->closing = true;
		return respond(c, 500, text_type, "Internal Server Error\n", 22,
			       head);
	}
	ok = respond(c, 200, json ? json_type : prom_type, body, len, head);
	free(body);
	return ok;
}

/* A refused request (parser error @err): its status, then close. */
static bool refuse(struct scrape_conn *c, int status)
{
	const char *r = reason(status);
	char body[64];
	int n = snprintf(body, sizeof(body), "%s\n", r);

	c->closing = true;
	return respond(c, status, text_type, body, (size_t)n, false);
}

/* ---- a connection ---------------------------------------------------------- */

static void conn_close(struct scrape_conn *c)
{
	if (c->have)
		pw_net_buf_release(&c->buf);
	c->have = false;
	c->step = S_CLOSE;
	pw_close_init(&c->cl, c->fd);
}

/* Parse the borrowed buffer on; at a whole request (or an error), build
 * the answer and go to S_SEND, giving the rest of the buffer back. */
static void conn_parse(struct scrape_conn *c)
{
	struct pw_scrape *s = c->srv;
	bool built = false;
	size_t used;
	int rc;

	if (!c->partial)
		c->t_req = pw_time_now();
	c->partial = true;
	rc = pw_http_parse(&c->p, (const char *)c->buf.data + c->off,
			   c->buf.len - c->off, &used);
	c->off += (uint32_t)used;
	if (rc == 0) {
		pw_net_buf_release(&c->buf);
		c->have = false;
		return;
	}
	c->partial = false;
	if (rc == 1) {
		c->closing = !c->p.req.keep_alive ||
			     pw_drain_stopping(&s->drain) ||
			     ++c->nreq >= PW_SCRAPE_MAX_REQUESTS;
		built = answer(c);
	} else {
		bump(&s->bad_requests);
		built = refuse(c, pw_http_error_status(rc));
	}
	if (c->off < c->buf.len && !c->closing &&
	    !pw_recv_unread(&c->rx, &c->buf, c->off))
		c->have = false;
	if (c->have)
		pw_net_buf_release(&c->buf);
	c->have = false;
	if (!built) {
		conn_close(c);
		return;
	}
	c->t_send = pw_time_now() + PW_SCRAPE_SEND_NS;
	c->step = S_SEND;
}

/* S_RECV: the next bytes, under the idle or the head deadline. Return:
 * true to wait. */
static bool conn_recv(struct pw_cx *cx, struct scrape_conn *c)
{
	struct pw_scrape *s = c->srv;
	pw_time_t at = c->partial ? c->t_req + PW_SCRAPE_HEAD_NS :
				    c->t_idle + PW_SCRAPE_IDLE_NS;
	int32_t res;

	if (!c->partial && pw_drain_stopping(&s->drain)) {
		conn_close(c);
		return false;
	}
	if (pw_recv_poll(cx, &c->rx, at, &c->buf, &res) == PW_PENDING)
		return true;
	if (res == -ETIMEDOUT && c->partial) {
		bump(&s->head_timeouts);
		if (!refuse(c, 408)) {
			conn_close(c);
			return false;
		}
		c->t_send = pw_time_now() + PW_SCRAPE_SEND_NS;
		c->step = S_SEND;
		return false;
	}
	if (res <= 0) {
		if (res == -ETIMEDOUT)
			bump(&s->idle_closes);
		conn_close(c);
		return false;
	}
	c->have = true;
	c->off = 0;
	conn_parse(c);
	return false;
}

/* S_SEND: the response, under the send deadline; then read on or close. */
static bool conn_send(struct pw_cx *cx, struct scrape_conn *c)
{
	int32_t res;

	if (pw_send_poll(cx, &c->tx, c->out, c->out_len, c->t_send, &res) ==
	    PW_PENDING) {
		pw_recv_park(&c->rx);
		return true;
	}
	free(c->out);
	c->out = NULL;
	c->t_idle = pw_time_now();
	if (res < 0) {
		if (res == -ETIMEDOUT) {
			bump(&c->srv->send_timeouts);
			(void)pw_net_abort(c->fd);
		}
		conn_close(c);
	} else if (c->closing) {
		c->step = S_SHUT;
		pw_shutdown_init(&c->cl, c->fd, SHUT_WR);
	} else {
		c->step = S_RECV;
	}
	return false;
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct scrape_conn *c = state;
	int32_t res;
	bool wait = false;

	if (pw_drain_watch(cx, &c->srv->drain, &c->tok))
		return pw_ready(cx, -ECANCELED); /* the drop cleans up */
	while (!wait) {
		switch (c->step) {
		case S_RECV:
			wait = conn_recv(cx, c);
			break;
		case S_SEND:
			wait = conn_send(cx, c);
			break;
		case S_SHUT:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			c->step = S_CLOSE;
			pw_close_init(&c->cl, c->fd);
			break;
		default:
			if (pw_close_poll(cx, &c->cl, &res) == PW_PENDING)
				return PW_PENDING;
			c->fd = -1;
			return pw_ready(cx, 0);
		}
	}
	return PW_PENDING;
}

static void conn_drop(void *state)
{
	struct scrape_conn *c = state;

	if (c->have)
		pw_net_buf_release(&c->buf);
	pw_recv_cancel(&c->rx);
	pw_send_cancel(&c->tx);
	if (c->fd >= 0 && !pw_close_cancel(&c->cl))
		close(c->fd);
	free(c->out);
	pw_drain_done(&c->srv->drain, &c->tok);
}

/* ---- the acceptor ----------------------------------------------------------- */

struct scrape_acceptor {
	struct pw_scrape *srv;
	struct pw_accept acc;
	struct pw_drain_wait w;
};

static bool acceptor_stop(void *arg)
{
	struct pw_scrape *s = arg;

	return pw_drain_stopping(&s->drain);
}

static bool acceptor_full(void *arg)
{
	struct pw_scrape *s = arg;

	return pw_drain_full(&s->drain);
}

/* A connection task for @fd, on shard 0, counted in the drain. */
static int acceptor_start(void *arg, int fd)
{
	struct pw_scrape *s = arg;
	struct scrape_conn c;
	int err;

	memset(&c, 0, sizeof(c));
	c.srv = s;
	c.fd = fd;
	c.t_idle = pw_time_now();
	pw_http_parser_init(&c.p, PW_SCRAPE_HEAD_MAX);
	c.p.body_max = PW_SCRAPE_BODY_MAX;
	pw_recv_init(&c.rx, fd);
	pw_send_init(&c.tx, fd);
	pw_close_init(&c.cl, fd);
	pw_drain_token_init(&c.tok);
	bump(&s->connections);
	pw_drain_add(&s->drain, &c.tok);
	err = pw_runtime_spawn(s->rt, 0, conn_poll, &c, sizeof(c), conn_drop);
	if (err) {
		pw_drain_done(&s->drain, &c.tok);
		return err; /* the loop closes fd */
	}
	return 0;
}

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct scrape_acceptor *a = state;
	struct pw_accept_loop loop = {
		.stop = acceptor_stop,
		.full = acceptor_full,
		.start = acceptor_start,
		.arg = a->srv,
	};

	/* Before the checks: a stop or a free slot after them wakes us. */
	pw_drain_wake_me(cx, &a->srv->drain, &a->w);
	return pw_accept_loop_poll(cx, &a->acc, &loop);
}

static void acceptor_drop(void *state)
{
	struct scrape_acceptor *a = state;

	pw_accept_cancel(&a->acc);
	pw_drain_wait_cancel(&a->w);
	/* Release: pairs with the acquire load in pw_scrape_stop(). */
	atomic_store_explicit(&a->srv->acceptor_gone, true,
			      memory_order_release);
}

/* ---- the server ------------------------------------------------------------- */

int pw_scrape_start(struct pw_scrape **sp, struct pw_runtime *rt,
		    const struct pw_net_addr *addr, pw_scrape_write_fn fn,
		    void *arg)
{
	struct pw_net_listen_opts lo = { .flags = PW_NET_LISTEN_SHARED };
	struct scrape_acceptor a = { 0 };
	struct pw_scrape *s;
	int err;

	if (!sp || !rt || !addr || !fn)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->rt = rt;
	s->fn = fn;
	s->arg = arg;
	pw_drain_init(&s->drain, PW_SCRAPE_MAX_CONNS);
	err = pw_net_listener_create(&s->l, rt, addr, &lo);
	if (err) {
		pw_drain_destroy(&s->drain);
		free(s);
		return err;
	}
	a.srv = s;
	pw_accept_init(&a.acc, s->l, 0);
	/* Before the spawn, which orders it before every task of the
	 * server: a scrape's write function may read *@sp. */
	*sp = s;
	err = pw_runtime_spawn(rt, 0, acceptor_poll, &a, sizeof(a),
			       acceptor_drop);
	if (err) {
		*sp = NULL;
		pw_net_listener_destroy(s->l);
		pw_drain_destroy(&s->drain);
		free(s);
		return err;
	}
	return 0;
}

int pw_scrape_addr(const struct pw_scrape *s, struct pw_net_addr *out)
{
	if (!s || !out)
		return -EINVAL;
	return pw_net_listener_addr(s->l, out);
}

#define LOAD(s, f) atomic_load_explicit(&(s)->f, memory_order_relaxed)

int pw_scrape_read(const struct pw_scrape *s, struct pw_scrape_stats *out)
{
	if (!s || !out)
		return -EINVAL;
	/* Relaxed: counters (see struct pw_scrape). */
	out->scrapes = LOAD(s, scrapes);
	out->connections = LOAD(s, connections);
	out->not_found = LOAD(s, not_found);
	out->bad_method = LOAD(s, bad_method);
	out->bad_requests = LOAD(s, bad_requests);
	out->head_timeouts = LOAD(s, head_timeouts);
	out->send_timeouts = LOAD(s, send_timeouts);
	out->write_errors = LOAD(s, write_errors);
	out->idle_closes = LOAD(s, idle_closes);
	return 0;
}

void pw_scrape_counters(const struct pw_scrape *s, struct pw_expo *e)
{
	struct pw_scrape_stats st;
	const struct {
		const char *cause;
		const uint64_t *v;
	} errs[] = {
		{ "not_found", &st.not_found },
		{ "bad_method", &st.bad_method },
		{ "bad_request", &st.bad_requests },
		{ "head_timeout", &st.head_timeouts },
		{ "send_timeout", &st.send_timeouts },
		{ "write_error", &st.write_errors },
	};

	if (pw_scrape_read(s, &st) || pw_expo_prefix(e, NULL))
		return;
	pw_expo_metric(
		e, "scrapes",
		"Scrapes of /metrics or /metrics.json, this one included.",
		PW_EXPO_COUNTER);
	pw_expo_sample(e, NULL, st.scrapes);
	pw_expo_metric(e, "scrape_connections",
		       "Connections the scrape endpoint accepted.",
		       PW_EXPO_COUNTER);
	pw_expo_sample(e, NULL, st.connections);
	pw_expo_metric(e, "scrape_errors",
		       "Scrape requests refused or failed, by cause.",
		       PW_EXPO_COUNTER);
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		pw_expo_sample(e,
			       (const char *[]){ "cause", errs[i].cause, NULL },
			       *errs[i].v);
}

/* The state of the stop task. */
struct scrape_stopper {
	struct pw_scrape *s;
	struct pw_drain_wait w;
};

/* The stop task: stop the drain and end every connection at once. */
static enum pw_poll stop_poll(struct pw_cx *cx, void *state)
{
	struct scrape_stopper *t = state;
	int64_t aborted;

	if (pw_drain_wait_poll(cx, &t->s->drain, &t->w, 0, &aborted) ==
	    PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, aborted);
}

void pw_scrape_stop(struct pw_scrape *s)
{
	struct scrape_stopper t;
	uint64_t deadline;
	int64_t r;

	if (!s)
		return;
	memset(&t, 0, sizeof(t));
	t.s = s;
	if (pw_block_on(s->rt, stop_poll, &t, &r))
		pw_drain_stop(&s->drain); /* the runtime is stopping */
	deadline = pw_cli_mono_ns() + PW_NSEC_PER_SEC;
	/* Acquire: pairs with the release store in acceptor_drop(). */
	while (!atomic_load_explicit(&s->acceptor_gone, memory_order_acquire) &&
	       pw_cli_mono_ns() < deadline)
		usleep(1000);
	if (!atomic_load_explicit(&s->acceptor_gone, memory_order_acquire))
		return; /* the runtime's end drops it: leak rather than crash */
	pw_net_listener_destroy(s->l);
	pw_drain_destroy(&s->drain);
	free(s);
}
