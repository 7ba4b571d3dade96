/* SPDX-License-Identifier: MIT */
/*
 * proxy.c - the L4 TCP proxy of proxy.h (docs/proxy.md): its acceptors,
 * its connections and its API. The `pinwheel proxy` command (flags,
 * banner, counters line) is proxy_cmd.c; a direction's byte FIFO is
 * proxy_fifo.c.
 *
 * One acceptor task per shard takes connections from the shard's
 * SO_REUSEPORT socket and spawns one task per connection on that shard,
 * up to --max-conns open at once: at the cap the acceptor pauses its
 * accept (the excess waits in the kernel's backlog) and the connection
 * that brings the count below the cap wakes it. The acceptor picks the
 * connection's server from its shard's view of the upstream table
 * (proxy_upstream.c: weighted round robin or least connections, servers
 * down skipped; none up: the client is closed at once). The connection
 * task connects to it (failing over to the next server up on an error or
 * timeout), then runs both directions in the same poll function.
 *
 * A direction is a multishot receive on its source, a byte FIFO of about
 * high_water bytes that the direction owns, and one send in flight to its
 * destination. Each received chunk is copied into the FIFO and its ring
 * buffer goes back at once, so a send that does not move (its peer does
 * not read) pins only the direction's own memory, never the shard's
 * ring. The FIFO is a chain of blocks allocated as bytes arrive and freed
 * as they are sent (full-size ones kept per shard for reuse, in the
 * shard's slot): an idle connection owns none. A FIFO at the mark stops
 * polling its receive and parks it (pw_recv_park(): the leaf copies what
 * still arrives into its own memory, then the socket buffer fills and
 * TCP's window stops the sender) until it is down to half the mark.
 *
 * End of stream on one side becomes shutdown(SHUT_WR) on the other once
 * the bytes before it are sent; the other direction goes on. A socket
 * error on either side closes both with a reset. One timer per
 * connection serves the idle timeout (no progress either way: bytes
 * received, partial sends, a kernel send queue that changed) and
 * the send timeout (a direction with bytes to send that made no
 * progress). A connection cut with bytes still undelivered resets the
 * side that loses them, never a clean end of stream.
 *
 * The PROXY protocol and the access log hang off a connection's struct
 * px_meta, allocated at its accept only when one of them is on: the
 * header phase (P_HEADER) receives on the client's d[0].rx, which the
 * forwarding then goes on using, so bytes after the header are never
 * lost; the header to the upstream is sent once connected, before the
 * first client byte; conn_end() gives the access log its record, with
 * the end code the first cause noted (conn_why()).
 *
 * Counters live in one slot per shard: a counter is written only by
 * the thread running that shard (relaxed load and store, no
 * read-modify-write) and read by any thread. The open-connection count
 * of an acceptor, which its connections decrement from wherever they run
 * (stealing mode), is the one read-modify-write.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/access_log.h"
#include "apps/cli.h"
#include "apps/proxy.h"
#include "apps/proxy_fifo.h"
#include "apps/proxy_protocol.h"
#include "apps/proxy_upstream.h"

/* How often an acceptor looks at the drain flag and samples the ring. */
#define PX_TICK_NS (50 * PW_NSEC_PER_MSEC)

/* Per-shard counters (indices into struct px_slot.c). */
enum {
	X_TOTAL,
	X_ENDED,
	X_UP,
	X_DOWN,
	X_CONNECT_ERR,
	X_CONNECT_TMO,
	X_UP_FAILED,
	X_RESETS,
	X_IDLE,
	X_SEND_TMO,
	X_ABORTS,
	X_HALF,
	X_DRAIN,
	X_RELEASE_ERR,
	X_SPAWN_ERR,
	X_PAUSES,
	X_BUFFERED_PEAK, /* a maximum, not a sum */
	X_BORROWED,	 /* a gauge */
	X_BORROWED_PEAK, /* a maximum */
	X_BUFS_TOTAL,	 /* a gauge */
	X_PP_BAD,
	X_PP_TMO,
	X_NONE_UP, /* clients closed at once: no server up */
	X_NCOUNTERS,
};

struct px_slot {
	/* Written by the slot's shard thread (load + store), read by any
	 * thread; relaxed both ways: they are statistics, no data travels
	 * with them. */
	_Atomic uint64_t c[X_NCOUNTERS];
	/* Connections open from this slot's acceptor: incremented by the
	 * acceptor, decremented by its connections on any thread. Relaxed
	 * read-modify-writes: the count is the only shared state (the
	 * wake below does not rely on their order). */
	_Atomic uint64_t open;
	_Atomic int acceptor_live; /* 1 while the acceptor runs */
	/* The acceptor's own waker while it runs (empty otherwise), woken
	 * by a connection whose end brings open below --max-conns. */
	pthread_mutex_t lock;
	struct pw_waker waker;
	/* Full-size FIFO blocks kept for reuse by the thread running this
	 * slot's shard (only that thread touches them): freeing and
	 * allocating 16 KiB per chunk would let the allocator hand pages
	 * back to the kernel and fault them in again. */
	struct px_spares spare;
	struct pxu_view *uv; /* this shard's view of the upstreams */
} __attribute__((aligned(64)));

struct pw_proxy {
	struct pw_proxy_config cfg;
	struct pw_runtime *rt;
	struct pw_net_listener *l;
	struct pw_net_addr addr;
	unsigned nshards;
	bool drained; /* pw_proxy_drain() closed the listener */
	struct pw_net_listener_stats lstats; /* its counters, kept then */
	/* Set by pw_proxy_drain(), read by the acceptors at each tick.
	 * Relaxed: a flag with no data behind it. */
	_Atomic bool draining;
	struct px_slot *slot;
	struct pw_access_log *log;	  /* NULL: no --access-log */
	struct pw_access_log_stats logst; /* its final counters */
	struct pxu_table *up;		  /* the upstream servers */
};

static inline void ctr_add(struct px_slot *s, int i, uint64_t v)
{
	/* Relaxed load + store: only this shard writes the slot (see
	 * struct px_slot). */
	atomic_store_explicit(
		&s->c[i],
		atomic_load_explicit(&s->c[i], memory_order_relaxed) + v,
		memory_order_relaxed);
}

static inline void ctr_max(struct px_slot *s, int i, uint64_t v)
{
	/* Relaxed: single writer, as ctr_add(). */
	if (v > atomic_load_explicit(&s->c[i], memory_order_relaxed))
		atomic_store_explicit(&s->c[i], v, memory_order_relaxed);
}

static inline void ctr_set(struct px_slot *s, int i, uint64_t v)
{
	/* Relaxed: single writer, as ctr_add(). */
	atomic_store_explicit(&s->c[i], v, memory_order_relaxed);
}

/* The counters of the shard running the caller. */
static struct px_slot *my_slot(struct pw_proxy *p)
{
	int id = pw_shard_id();

	return &p->slot[id >= 0 && (unsigned)id < p->nshards ? (unsigned)id : 0];
}

/* ---- one connection ---------------------------------------------------- */

enum { D_RUN, D_EOF, D_SHUT, D_DONE };
enum { P_CONNECT, P_RUN, P_CLOSE_SENDS, P_CLOSE_FDS, P_DONE, P_HEADER };

/* One direction: bytes received on src, sent to dst. */
struct px_dir {
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close sh; /* shutdown(dst, SHUT_WR) after end of stream */
	struct px_fifo q;   /* the bytes received, not yet sent */
	struct pw_net_buf direct; /* a ring buffer tried straight at dst,
				     kept until the try ends (len 0: none) */
	uint64_t rcvd;		  /* bytes received in all */
	uint64_t prog;		  /* pw_send_progress() when last seen */
	uint64_t outq;		  /* dst's unacknowledged bytes, last look */
	uint64_t wait_from;	  /* since when it waits on its send */
	uint32_t slen;		  /* bytes of the send in flight, 0: none */
	uint8_t st;		  /* D_* */
	bool rx_kept;		  /* rx began before the connect (the
				     PROXY header): dir_init() keeps it */
	bool waiting;		  /* bytes to send: wait_from counts */
	bool full;		  /* reached high water, not yet half */
	int ctr;		  /* X_UP or X_DOWN */
	int src, dst;
	int srv; /* the upstream's slot (its byte counters) */
};

/*
 * What a connection keeps for the PROXY protocol and the access log,
 * allocated at its accept only when one of them is on (NULL otherwise).
 */
struct px_meta {
	struct pw_net_addr client;   /* the peer, or the header's source */
	struct pw_net_addr listener; /* where it came, or the header's
					destination */
	struct pw_net_addr upstream; /* len 0 until connected */
	uint64_t t0, t_conn;	     /* pw_cli_mono_ns() at accept and
					connect (0: not connected) */
	uint64_t deadline;	     /* runtime ns: the header's or the
					header send's */
	const char *code;	     /* the end code, once known */
	char first_eof;		     /* 'C' or 'S': who ended first */
	bool rx_live;		     /* the header phase armed d[0].rx */
	uint8_t out_len;	     /* header bytes to send (--send-proxy) */
	char out[PW_PP_ENCODE_MAX];
	uint32_t hlen; /* header bytes received */
	char *hbuf;    /* PW_PP_MAX bytes (--accept-proxy) */
};

struct px_conn {
	struct px_meta *m; /* NULL without PROXY protocol or access log */
	struct pw_proxy *p;
	struct px_slot *home; /* the acceptor's slot (open count) */
	int cfd, ufd;
	uint8_t phase;
	bool ended;
	bool tx_idle[2];
	int srv;	     /* the upstream slot, -1: none */
	uint64_t tried;	     /* slots tried, a bit each */
	struct pxu_view *pv; /* the view srv was picked in */
	uint64_t attempt_deadline;
	uint64_t last;	/* runtime ns of the last progress */
	uint64_t moved; /* bytes received plus sent, when last seen */
	uint64_t armed; /* the timer's deadline */
	struct pw_connect conn;
	bool connecting;
	struct pw_sleep timer; /* idle and send timeouts */
	struct px_dir d[2]; /* 0: client to upstream; 1: upstream to client */
	struct pw_close cl[2];
	bool closed[2];
};

static void dir_init(struct px_dir *d, int src, int dst, int ctr)
{
	if (d->rx_kept) {
		memset(&d->tx, 0, sizeof(*d) - offsetof(struct px_dir, tx));
	} else {
		memset(d, 0, sizeof(*d));
		pw_recv_init(&d->rx, src);
	}
	pw_send_init(&d->tx, dst);
	d->st = D_RUN;
	d->ctr = ctr;
	d->src = src;
	d->dst = dst;
}

/* Free @d's FIFO and forget its send in flight (on any thread, as
 * pw_proxy_fifo_free()). A chunk tried straight from the ring goes back
 * only once its try ended: the kernel may read it until then (a drop at
 * the runtime's shutdown leaves it to the ring's end). */
static void dir_free(struct px_dir *d)
{
	pw_proxy_fifo_free(&d->q);
	d->slen = 0;
	if (d->direct.len && !pw_send_in_flight(&d->tx))
		(void)pw_net_buf_release(&d->direct);
	d->direct.len = 0;
}

/* Count @n bytes of @d as received (kept in the FIFO, or sent). */
static void dir_count(struct px_dir *d, struct px_slot *s, uint32_t n)
{
	d->rcvd += n;
	ctr_add(s, d->ctr, n);
	pxu_bytes(s->uv, d->srv, d->ctr == X_DOWN, n);
	ctr_max(s, X_BUFFERED_PEAK, d->q.queued);
}

/*
 * Copy the chunk @b, from byte @from on (the bytes before it were sent
 * straight), into @d's FIFO, as much as there is room for below @hw, and
 * give @b back; the tail that does not fit goes back to the leaf
 * (pw_recv_unread()). The bytes a parked receive gathered in its own
 * memory are taken whole, even past the mark: a poll that hands them out
 * re-arms the receive, so leaving a remainder there would let it gather
 * more at each resume than the resume takes.
 * Return: 0 or -ENOMEM (nothing kept).
 */
static int dir_keep(struct px_dir *d, struct px_slot *s, struct pw_net_buf *b,
		    uint32_t from, uint64_t hw)
{
	uint64_t room = hw > d->q.queued ? hw - d->q.queued : 0;
	uint32_t left = b->len - from;
	uint32_t want = (uint64_t)left < room || b->bid == PW_NET_BUF_OWN ?
				left :
				(uint32_t)room;
	uint32_t took = pw_proxy_fifo_put(&d->q, &s->spare,
					  (const char *)b->data + from, want);

	if (took < left) {
		if (pw_recv_unread(&d->rx, b, from + took)) {
			if (pw_net_buf_release(b))
				ctr_add(s, X_RELEASE_ERR, 1);
			return -ENOMEM;
		}
	} else if (pw_net_buf_release(b)) {
		ctr_add(s, X_RELEASE_ERR, 1);
	}
	if (!from && !took)
		return -ENOMEM;
	dir_count(d, s, from + took);
	return 0;
}

/*
 * The try of d->direct ended with @res (bytes taken, or -errno): what
 * the socket did not take is kept as any chunk is (dir_keep()).
 * Return: 0, or -errno for a socket error or -ENOMEM.
 */
static int direct_end(struct px_dir *d, struct px_slot *s, int32_t res,
		      uint64_t hw)
{
	struct pw_net_buf b = d->direct;

	d->direct.len = 0;
	if (res >= 0)
		return dir_keep(d, s, &b, (uint32_t)res, hw);
	if (pw_net_buf_release(&b))
		ctr_add(s, X_RELEASE_ERR, 1);
	return res;
}

/* Note @code as how @c ended, unless a cause came first. */
static void conn_why(struct px_conn *c, const char *code)
{
	if (c->m && !c->m->code)
		c->m->code = code;
}

/*
 * Receive for @d while its FIFO has room. A ring buffer that nothing
 * waits before (the FIFO empty) is tried straight at dst (d->direct):
 * no copy while the peer keeps up, and no buffer held while it does
 * not, since a try never waits. Other chunks, and the leaf's own bytes
 * (freed by a cancel that a cut may do while a try is in flight), are
 * copied into the FIFO (dir_keep()). A FIFO that reached the mark parks
 * the receive until it is down to half of it, so a slow peer costs one
 * park and one resume per half mark, not per send.
 * Return: 0, or -errno for a socket error or -ENOMEM.
 */
static int dir_recv(struct pw_cx *cx, struct px_conn *c, struct px_dir *d,
		    struct px_slot *s)
{
	uint64_t hw = c->p->cfg.high_water;

	if (d->full && d->q.queued > hw / 2)
		goto park;
	d->full = false;
	while (d->st == D_RUN && d->q.queued < hw) {
		struct pw_net_buf b;
		int32_t res;

		if (pw_recv_poll(cx, &d->rx, PW_TIME_NEVER, &b, &res) ==
		    PW_PENDING)
			return 0;
		if (res < 0) {
			conn_why(c, d == &c->d[0] ? "CD" : "SD");
			return res;
		}
		if (res == 0) {
			if (c->m && !c->m->first_eof)
				c->m->first_eof = d == &c->d[0] ? 'C' : 'S';
			d->st = D_EOF;
			return 0;
		}
		if (!d->q.queued && b.bid != PW_NET_BUF_OWN) {
			d->direct = b;
			return 0;
		}
		int err = dir_keep(d, s, &b, 0, hw);
		if (err)
			return err;
	}
	if (d->st != D_RUN)
		return 0;
	d->full = true;
park:
	pw_recv_park(&d->rx);
	return 0;
}

/*
 * Move what can be moved in direction @d: receive, send from the FIFO,
 * pass on the end of stream. Return: 0, or -errno for a socket error on
 * either side.
 */
static int dir_step(struct pw_cx *cx, struct px_conn *c, struct px_dir *d,
		    struct px_slot *s)
{
	for (;;) {
		const char *h;
		uint32_t len;
		int32_t res;
		int err;

		if (d->direct.len) {
			if (pw_send_try_poll(cx, &d->tx, d->direct.data,
					     d->direct.len, &res) == PW_PENDING)
				return 0;
			err = direct_end(d, s, res, c->p->cfg.high_water);
			if (err)
				return err;
		}
		err = dir_recv(cx, c, d, s);
		if (err)
			return err;
		if (d->direct.len)
			continue;
		h = pw_proxy_fifo_head(&d->q, &len);
		if (!h)
			break;
		if (!d->slen)
			d->slen = len;
		if (pw_send_poll(cx, &d->tx, h, d->slen, PW_TIME_NEVER, &res) ==
		    PW_PENDING)
			return 0;
		if (res < 0)
			return res;
		pw_proxy_fifo_sent(&d->q, &s->spare, d->slen);
		d->slen = 0;
	}
	if (d->st == D_EOF) {
		pw_shutdown_init(&d->sh, d->dst, SHUT_WR);
		d->st = D_SHUT;
	}
	if (d->st == D_SHUT) {
		int32_t res;
		if (pw_close_poll(cx, &d->sh, &res) == PW_PENDING)
			return 0;
		ctr_add(s, X_HALF, 1);
		d->st = D_DONE;
	}
	return 0;
}

static void meta_end(struct px_conn *c);

static void conn_end(struct px_conn *c, struct px_slot *s, bool wake)
{
	uint64_t cap = c->p->cfg.max_conns;
	uint64_t was;

	if (c->ended)
		return;
	c->ended = true;
	if (c->m)
		meta_end(c);
	ctr_add(s, X_ENDED, 1);
	if (c->srv >= 0)
		pxu_release(c->pv, c->srv);
	/* Relaxed: pairs with the fetch_add in acceptor_take(); a count. */
	was = atomic_fetch_sub_explicit(&c->home->open, 1,
					memory_order_relaxed);
	if (!wake || !cap || was != cap)
		return;
	/* Below the cap again: the acceptor may have paused. */
	pthread_mutex_lock(&c->home->lock);
	pw_waker_wake_by_ref(&c->home->waker);
	pthread_mutex_unlock(&c->home->lock);
}

/* Cancel both directions' leaves and go to the closing phases; with
 * @reset both sockets are reset instead of closed. */
static void begin_close(struct px_conn *c, bool reset)
{
	if (reset) {
		(void)pw_net_abort(c->cfd);
		if (c->ufd >= 0)
			(void)pw_net_abort(c->ufd);
	}
	for (int i = 0; i < 2 && c->ufd >= 0; i++) {
		pw_recv_cancel(&c->d[i].rx);
		pw_send_cancel(&c->d[i].tx);
		c->tx_idle[i] = false;
	}
	/* A PROXY header was read, no upstream connected. */
	if (c->ufd < 0 && c->d[0].rx_kept)
		pw_recv_cancel(&c->d[0].rx);
	c->phase = P_CLOSE_SENDS;
}

/* The bytes of @fd's send queue that @req (SIOCOUTQ: not yet
 * acknowledged; SIOCOUTQNSD: not yet sent) counts, or 0. */
static uint64_t outq(int fd, unsigned long req)
{
	int n = 0;

	if (ioctl(fd, req, &n) || n < 0)
		return 0;
	return (uint64_t)n;
}

/*
 * Cut the connection (a timeout, the drain deadline): each side that
 * would lose bytes the proxy received (in a FIFO, or in the kernel's send
 * queue not yet sent: its peer stopped reading) is reset, the others
 * closed. Bytes sent and not yet acknowledged are not lost: a close
 * still retransmits them.
 */
static void cut(struct px_conn *c, struct px_slot *s)
{
	bool lost = false;

	for (int i = 0; i < 2 && c->ufd >= 0; i++) {
		struct px_dir *d = &c->d[i];

		if (d->q.queued || d->direct.len || outq(d->dst, SIOCOUTQNSD)) {
			(void)pw_net_abort(d->dst);
			lost = true;
		}
	}
	if (lost)
		ctr_add(s, X_ABORTS, 1);
	begin_close(c, false);
}

/* ---- the PROXY protocol and the access log ------------------------------ */

/* Whether connections of @p need a struct px_meta. */
static bool meta_wanted(const struct pw_proxy *p)
{
	return p->log || p->cfg.send_proxy || p->cfg.accept_proxy;
}

/* The address of @fd's peer (@peer) or its own into @a (len 0 when it
 * cannot be read). */
static void sock_addr(int fd, bool peer, struct pw_net_addr *a)
{
	socklen_t len = sizeof(a->u);

	if ((peer ? getpeername(fd, &a->u.sa, &len) :
		    getsockname(fd, &a->u.sa, &len)) ||
	    len > sizeof(a->u))
		len = 0;
	a->len = len;
}

/* Whether @a is an IP wildcard (0.0.0.0 or ::), whose connections each
 * have a local address of their own. */
static bool addr_wildcard(const struct pw_net_addr *a)
{
	if (a->u.sa.sa_family == AF_INET)
		return a->u.in4.sin_addr.s_addr == htonl(INADDR_ANY);
	if (a->u.sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&a->u.in6.sin6_addr);
	return false;
}

static void meta_free(struct px_meta *m)
{
	if (m)
		free(m->hbuf);
	free(m);
}

/* At the accept of @c (its cfd set): its meta when @p needs one, and the
 * header phase with --accept-proxy. Return: 0; -ENOMEM. */
static int meta_start(struct pw_proxy *p, struct px_conn *c)
{
	struct px_meta *m;

	if (!meta_wanted(p))
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (p->cfg.accept_proxy && !(m->hbuf = malloc(PW_PP_MAX))) {
		free(m);
		return -ENOMEM;
	}
	m->t0 = pw_cli_mono_ns();
	sock_addr(c->cfd, true, &m->client);
	if (addr_wildcard(&p->addr))
		sock_addr(c->cfd, false, &m->listener);
	else
		m->listener = p->addr; /* what getsockname would say */
	c->m = m;
	if (p->cfg.accept_proxy)
		c->phase = P_HEADER;
	return 0;
}

/* The header is whole: its addresses replace the socket's (unless
 * local), the bytes of @b after it go back to the receive. Return: 0;
 * -ENOMEM. */
static int header_done(struct px_conn *c, const struct pw_pp_hdr *h,
		       struct pw_net_buf *b, uint32_t took)
{
	struct px_meta *m = c->m;
	uint32_t used = took - (uint32_t)(m->hlen - h->len);

	if (!h->local) {
		m->client = h->src;
		m->listener = h->dst;
	}
	free(m->hbuf);
	m->hbuf = NULL;
	if (used < b->len)
		return pw_recv_unread(&c->d[0].rx, b, used);
	(void)pw_net_buf_release(b);
	return 0;
}

/* The header failed (@code, counter @ctr): close the client. */
static void header_fail(struct px_conn *c, struct px_slot *s, const char *code,
			int ctr)
{
	conn_why(c, code);
	if (ctr >= 0)
		ctr_add(s, ctr, 1);
	begin_close(c, false);
}

/*
 * P_HEADER (--accept-proxy): receive on the client until a whole PROXY
 * header, at most PW_PP_MAX bytes, arrives before the deadline; then
 * connect. Bytes after it stay in the receive for the upstream.
 */
static enum pw_poll header_step(struct pw_cx *cx, struct px_conn *c,
				struct px_slot *s)
{
	struct px_meta *m = c->m;

	if (!c->d[0].rx_kept) {
		pw_recv_init(&c->d[0].rx, c->cfd);
		c->d[0].rx_kept = true;
		m->deadline = pw_time_now() + c->p->cfg.accept_proxy_timeout_ns;
	}
	for (;;) {
		struct pw_net_buf b;
		struct pw_pp_hdr h;
		const char *why;
		int32_t res;

		if (pw_recv_poll(cx, &c->d[0].rx, m->deadline, &b, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res <= 0) {
			if (res == -ETIMEDOUT)
				header_fail(c, s, "cH", X_PP_TMO);
			else /* closed or reset: bad when cut inside */
				header_fail(c, s, "CH",
					    m->hlen ? X_PP_BAD : -1);
			return PW_READY;
		}
		uint32_t took = b.len < PW_PP_MAX - m->hlen ?
					b.len :
					PW_PP_MAX - m->hlen;
		memcpy(m->hbuf + m->hlen, b.data, took);
		m->hlen += took;
		enum pw_pp_res r = pw_pp_parse(m->hbuf, m->hlen, &h, &why);
		if (r == PW_PP_MORE) {
			(void)pw_net_buf_release(&b);
			continue;
		}
		if (r == PW_PP_BAD) {
			(void)pw_net_buf_release(&b);
			header_fail(c, s, "PH", X_PP_BAD);
			return PW_READY;
		}
		if (header_done(c, &h, &b, took)) {
			(void)pw_net_buf_release(&b);
			header_fail(c, s, "RH", -1);
			return PW_READY;
		}
		c->phase = P_CONNECT;
		return PW_READY;
	}
}

/*
 * Once connected: note the upstream and the connect time, then send the
 * PROXY header (--send-proxy) before any client byte, within the connect
 * timeout. Return: PW_READY to go on (or once the connection closes on a
 * failed send); PW_PENDING while the header is being sent.
 */
static enum pw_poll header_send(struct pw_cx *cx, struct px_conn *c,
				struct px_slot *s)
{
	struct px_meta *m = c->m;
	uint8_t v = c->p->cfg.send_proxy;
	int32_t res;

	if (!m->t_conn) {
		m->t_conn = pw_cli_mono_ns();
		sock_addr(c->ufd, true, &m->upstream);
		if (!v)
			return PW_READY;
		int n = v == 1 ? pw_pp_encode_v1(m->out, sizeof(m->out),
						 &m->client, &m->listener) :
				 pw_pp_encode_v2(m->out, sizeof(m->out),
						 &m->client, &m->listener);
		m->out_len = n > 0 ? (uint8_t)n : 0;
		m->deadline = pw_time_now() + c->p->cfg.connect_timeout_ns;
	}
	if (!m->out_len)
		return PW_READY;
	if (pw_send_poll(cx, &c->d[0].tx, m->out, m->out_len, m->deadline,
			 &res) == PW_PENDING)
		return PW_PENDING;
	m->out_len = 0;
	if (res < 0) {
		conn_why(c, "SC");
		ctr_add(s, X_RESETS, 1);
		begin_close(c, true);
	}
	return PW_READY;
}

/* The access log record of a connection of @m ending now with @code. */
static void meta_record(struct pw_proxy *p, const struct px_meta *m,
			const char *code, uint64_t up, uint64_t down)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	struct pw_access_rec r = {
		.end_ns = (uint64_t)ts.tv_sec * PW_NSEC_PER_SEC +
			  (uint64_t)ts.tv_nsec,
		.client = &m->client,
		.listener = &m->listener,
		.upstream = &m->upstream,
		.connect_ns = m->t_conn ? (int64_t)(m->t_conn - m->t0) : -1,
		.duration_ns = pw_cli_mono_ns() - m->t0,
		.bytes_up = up,
		.bytes_down = down,
		.code = code,
	};
	pw_access_log_add(p->log, &r);
}

/* The client @fd closed at its accept, no server up: its record (the
 * socket's addresses, a PROXY header not read). */
static void meta_refused(struct pw_proxy *p, int fd)
{
	struct px_meta m;

	if (!p->log)
		return;
	memset(&m, 0, sizeof(m));
	m.t0 = pw_cli_mono_ns();
	sock_addr(fd, true, &m.client);
	if (addr_wildcard(&p->addr))
		sock_addr(fd, false, &m.listener);
	else
		m.listener = p->addr;
	meta_record(p, &m, "SC", 0, 0);
}

/* @c ends: its access log record, then its meta is freed. */
static void meta_end(struct px_conn *c)
{
	struct px_meta *m = c->m;
	struct pw_proxy *p = c->p;
	char code[3] = "--";

	if (m->code) {
		memcpy(code, m->code, 2);
	} else if (!m->t_conn) {
		code[0] = 'S'; /* no upstream answered */
		code[1] = 'C';
	} else if (m->first_eof) {
		code[0] = m->first_eof;
	}
	if (p->log)
		meta_record(p, m, code, c->ufd >= 0 ? c->d[0].rcvd : 0,
			    c->ufd >= 0 ? c->d[1].rcvd : 0);
	meta_free(m);
	c->m = NULL;
}

/*
 * The connect to c->srv failed: passive marking, then the next server up
 * not yet tried (never one down).
 * Return: true when none is left (the client is being closed).
 */
static bool connect_failed(struct px_conn *c, struct px_slot *s)
{
	struct pw_proxy *p = c->p;
	uint64_t now = pw_time_now();
	int next;

	pxu_failed(p->up, s->uv, c->srv, now);
	c->tried |= 1ull << c->srv;
	next = pxu_next(p->up, s->uv, c->srv, c->tried, now);
	pxu_release(c->pv, c->srv);
	c->srv = next;
	c->pv = s->uv;
	if (next >= 0)
		return false;
	ctr_add(s, X_UP_FAILED, 1);
	begin_close(c, false);
	return true;
}

static enum pw_poll connect_step(struct pw_cx *cx, struct px_conn *c,
				 struct px_slot *s)
{
	struct pw_proxy *p = c->p;

	for (;;) {
		int fd;

		if (!c->connecting) {
			pw_connect_init(&c->conn, pxu_addr(p->up, c->srv));
			c->attempt_deadline =
				pw_time_now() + p->cfg.connect_timeout_ns;
			c->connecting = true;
		}
		if (pw_connect_poll(cx, &c->conn, c->attempt_deadline, &fd) ==
		    PW_PENDING)
			return PW_PENDING;
		c->connecting = false;
		if (fd >= 0) {
			int sb = (int)c->p->cfg.sndbuf;
			/* The client side inherited it from the listener. */
			if (sb)
				(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb,
						 sizeof(sb));
			c->ufd = fd;
			dir_init(&c->d[0], c->cfd, fd, X_UP);
			dir_init(&c->d[1], fd, c->cfd, X_DOWN);
			c->d[0].srv = c->d[1].srv = c->srv;
			pxu_connected(p->up, s->uv, c->srv);
			pw_close_init(&c->cl[1], fd);
			c->last = pw_time_now();
			c->phase = P_RUN;
			return PW_READY;
		}
		ctr_add(s, X_CONNECT_ERR, 1);
		if (fd == -ETIMEDOUT)
			ctr_add(s, X_CONNECT_TMO, 1);
		if (connect_failed(c, s))
			return PW_READY;
	}
}

/* Note progress at @now: bytes received or sent (partial sends count). */
static void note_progress(struct px_conn *c, uint64_t now)
{
	uint64_t moved = 0;

	for (int i = 0; i < 2; i++) {
		struct px_dir *d = &c->d[i];
		uint64_t sent = pw_send_progress(&d->tx);

		moved += d->rcvd + sent;
		if (!d->q.head) {
			d->waiting = false;
		} else if (!d->waiting || sent != d->prog) {
			d->waiting = true;
			d->prog = sent;
			d->wait_from = now;
		}
	}
	if (moved != c->moved) {
		c->moved = moved;
		c->last = now;
	}
}

/*
 * The timer fired: a send queue in the kernel that changed since the last
 * look counts as progress too. A reader draining a full socket buffer
 * lets a send complete only once a third of it is free; its progress
 * shows here first. Two ioctls per firing, none per chunk.
 */
static void note_kernel(struct px_conn *c, uint64_t now)
{
	for (int i = 0; i < 2; i++) {
		struct px_dir *d = &c->d[i];
		uint64_t q = outq(d->dst, SIOCOUTQ);

		if (q != d->outq) {
			d->outq = q;
			c->last = now;
			d->wait_from = now;
		}
	}
}

/* The earliest deadline of the idle and send timeouts. */
static uint64_t next_deadline(const struct px_conn *c)
{
	const struct pw_proxy_config *cfg = &c->p->cfg;
	uint64_t t = PW_TIME_NEVER;

	if (cfg->idle_timeout_ns)
		t = c->last + cfg->idle_timeout_ns;
	for (int i = 0; i < 2 && cfg->send_timeout_ns; i++)
		if (c->d[i].waiting &&
		    c->d[i].wait_from + cfg->send_timeout_ns < t)
			t = c->d[i].wait_from + cfg->send_timeout_ns;
	return t;
}

/*
 * The timeouts, checked after each step. The timer is moved lazily: a
 * later deadline waits for it to fire, and it is then re-armed; only an
 * earlier one (a send begins to wait) re-files it.
 */
static void timers_step(struct pw_cx *cx, struct px_conn *c, struct px_slot *s)
{
	const struct pw_proxy_config *cfg = &c->p->cfg;
	uint64_t now, t;

	if (!cfg->idle_timeout_ns && !cfg->send_timeout_ns)
		return;
	now = pw_time_now();
	note_progress(c, now);
	t = next_deadline(c);
	if (t < c->armed) {
		pw_sleep_reset(&c->timer, t);
		c->armed = t;
	}
	while (pw_sleep_poll(cx, &c->timer) == PW_READY) {
		note_kernel(c, now);
		for (int i = 0; i < 2 && cfg->send_timeout_ns; i++) {
			struct px_dir *d = &c->d[i];

			if (d->waiting &&
			    now >= d->wait_from + cfg->send_timeout_ns) {
				conn_why(c, i ? "cD" : "sD");
				ctr_add(s, X_SEND_TMO, 1);
				ctr_add(s, X_ABORTS, 1);
				begin_close(c, true);
				return;
			}
		}
		if (cfg->idle_timeout_ns &&
		    now >= c->last + cfg->idle_timeout_ns) {
			ctr_add(s, X_IDLE, 1);
			conn_why(c, "iD");
			cut(c, s);
			return;
		}
		c->armed = next_deadline(c);
		pw_sleep_reset(&c->timer, c->armed);
	}
}

static void run_step(struct pw_cx *cx, struct px_conn *c, struct px_slot *s)
{
	for (int i = 0; i < 2; i++) {
		int r = dir_step(cx, c, &c->d[i], s);

		if (r < 0) {
			/* Not a receive's (marked there): dst's send. */
			conn_why(c, r == -ENOMEM ? "RD" : i ? "CD" : "SD");
			ctr_add(s, X_RESETS, 1);
			begin_close(c, true);
			return;
		}
	}
	if (c->d[0].st == D_DONE && c->d[1].st == D_DONE) {
		begin_close(c, false);
		return;
	}
	timers_step(cx, c, s);
}

/* P_CLOSE_SENDS: wait for the cancelled sends' final completions (the
 * kernel may read their bytes until then), then free the FIFOs. */
static enum pw_poll close_sends(struct pw_cx *cx, struct px_conn *c)
{
	int32_t res;

	/* A zero-byte poll waits for the final completion without starting
	 * another send. */
	for (int i = 0; i < 2 && c->ufd >= 0; i++)
		if (!c->tx_idle[i] &&
		    pw_send_poll(cx, &c->d[i].tx, NULL, 0, PW_TIME_NEVER,
				 &res) == PW_READY)
			c->tx_idle[i] = true;
	if (c->ufd >= 0 && !(c->tx_idle[0] && c->tx_idle[1]))
		return PW_PENDING;
	pw_sleep_cancel(&c->timer);
	if (c->ufd >= 0) {
		dir_free(&c->d[0]);
		dir_free(&c->d[1]);
	}
	c->phase = P_CLOSE_FDS;
	return PW_READY;
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct px_conn *c = state;
	struct px_slot *s = my_slot(c->p);
	int32_t res;

	if (c->phase == P_HEADER && header_step(cx, c, s) == PW_PENDING)
		return PW_PENDING;
	if (c->phase == P_CONNECT && connect_step(cx, c, s) == PW_PENDING)
		return PW_PENDING;
	if (c->phase == P_RUN && c->m && header_send(cx, c, s) == PW_PENDING)
		return PW_PENDING;
	if (c->phase == P_RUN)
		run_step(cx, c, s);
	if (c->phase == P_RUN)
		return PW_PENDING;
	if (c->phase == P_CLOSE_SENDS && close_sends(cx, c) == PW_PENDING)
		return PW_PENDING;
	if (c->phase == P_CLOSE_FDS) {
		for (int i = 0; i < 2; i++) {
			if (c->closed[i])
				continue;
			if (i == 1 && c->ufd < 0) {
				c->closed[i] = true;
				continue;
			}
			if (pw_close_poll(cx, &c->cl[i], &res) == PW_READY)
				c->closed[i] = true;
		}
		if (!c->closed[0] || !c->closed[1])
			return PW_PENDING;
		c->phase = P_DONE;
	}
	conn_end(c, s, true);
	return pw_ready(cx, 0);
}

static void conn_drop(void *state)
{
	struct px_conn *c = state;
	struct px_slot *s = my_slot(c->p);
	bool cut_short = !c->ended && c->phase != P_DONE;

	if (c->phase == P_CONNECT && c->connecting)
		pw_connect_cancel(&c->conn);
	pw_sleep_cancel(&c->timer);
	if (cut_short)
		conn_why(c, c->phase == P_HEADER  ? "KH" :
			    c->phase == P_CONNECT ? "KC" :
						    "KD");
	if (c->ufd < 0 && c->d[0].rx_kept)
		pw_recv_cancel(&c->d[0].rx);
	/* Cut by the drain deadline with bytes undelivered: reset. */
	if (cut_short && c->phase == P_RUN)
		cut(c, s);
	/* Only runtime shutdown drops a connection that has not finished:
	 * a send cancelled here may still read its block until its final
	 * completion, but the bytes go to a socket being closed. */
	if (c->ufd >= 0) {
		for (int i = 0; i < 2; i++) {
			pw_recv_cancel(&c->d[i].rx);
			pw_send_cancel(&c->d[i].tx);
			dir_free(&c->d[i]);
		}
	}
	if (cut_short)
		ctr_add(s, X_DRAIN, 1);
	if (!pw_close_cancel(&c->cl[0]))
		close(c->cfd);
	if (c->ufd >= 0 && !pw_close_cancel(&c->cl[1]))
		close(c->ufd);
	conn_end(c, s, false);
}

/* ---- the acceptor --------------------------------------------------- */

struct px_acceptor {
	struct pw_proxy *p;
	unsigned idx;
	bool started;
	bool paused; /* at --max-conns, counted once per pause */
	struct pw_sleep tick;
	struct pw_accept acc;
};

static void acceptor_sample(struct pw_proxy *p)
{
	struct px_slot *s = my_slot(p);
	struct pw_net_stats ns;

	if (pw_net_stats(&ns))
		return;
	ctr_set(s, X_BORROWED, ns.bufs_borrowed);
	ctr_max(s, X_BORROWED_PEAK, ns.bufs_borrowed);
	ctr_set(s, X_BUFS_TOTAL, ns.bufs_total);
}

/* The accept loop's stop: the proxy drains. */
static bool acceptor_stop(void *arg)
{
	struct px_acceptor *a = arg;

	/* Relaxed: pairs with the store in pw_proxy_drain(). */
	return atomic_load_explicit(&a->p->draining, memory_order_relaxed);
}

/* The accept loop's full: --max-conns connections are open. */
static bool acceptor_full(void *arg)
{
	struct px_acceptor *a = arg;
	struct pw_proxy *p = a->p;
	bool full;

	/* Relaxed: pairs with the fetch_sub in conn_end(), which wakes
	 * this task after it (under the slot's lock). */
	full = p->cfg.max_conns &&
	       atomic_load_explicit(&p->slot[a->idx].open,
				    memory_order_relaxed) >= p->cfg.max_conns;
	if (full && !a->paused)
		ctr_add(my_slot(p), X_PAUSES, 1);
	a->paused = full;
	return full;
}

/* The accept loop's start: start the connection task of @fd. It always
 * takes @fd (closed here when the task cannot start). */
static int acceptor_take(void *arg, int fd)
{
	struct px_acceptor *a = arg;
	struct pw_proxy *p = a->p;
	struct px_slot *home = &p->slot[a->idx];
	struct px_slot *s = my_slot(p);
	struct px_conn c;
	int srv = pxu_pick(p->up, s->uv, pw_time_now());

	if (srv < 0) {
		/* No server up: closed at once, as HAProxy does. */
		ctr_add(s, X_TOTAL, 1);
		ctr_add(s, X_ENDED, 1);
		ctr_add(s, X_NONE_UP, 1);
		meta_refused(p, fd);
		close(fd);
		return 0;
	}
	memset(&c, 0, sizeof(c));
	c.p = p;
	c.home = home;
	c.cfd = fd;
	c.ufd = -1;
	c.srv = srv;
	c.pv = s->uv;
	c.armed = PW_TIME_NEVER;
	pw_sleep_init_at(&c.timer, PW_TIME_NEVER);
	pw_close_init(&c.cl[0], fd);
	pw_close_init(&c.cl[1], -1);
	if (meta_start(p, &c)) {
		pxu_release(c.pv, srv);
		ctr_add(s, X_SPAWN_ERR, 1);
		close(fd);
		return 0;
	}
	/* Relaxed: pairs with the fetch_sub in conn_end(); a count. */
	atomic_fetch_add_explicit(&home->open, 1, memory_order_relaxed);
	if (pw_spawn(NULL, conn_poll, &c, sizeof(c), conn_drop)) {
		atomic_fetch_sub_explicit(&home->open, 1, memory_order_relaxed);
		pxu_release(c.pv, srv);
		ctr_add(s, X_SPAWN_ERR, 1);
		meta_free(c.m);
		close(fd);
		return 0;
	}
	ctr_add(s, X_TOTAL, 1);
	return 0;
}

/* The accept loop's error: one line on stderr. */
static void acceptor_error(void *arg, int err)
{
	(void)arg;
	fprintf(stderr, "pinwheel proxy: accept: %s\n", strerror(-err));
}

/* The acceptor ends: its waker is dropped, then the drain may close the
 * listener. */
static void acceptor_end(struct px_acceptor *a)
{
	struct px_slot *slot = &a->p->slot[a->idx];

	pw_sleep_cancel(&a->tick);
	pthread_mutex_lock(&slot->lock);
	pw_waker_drop(&slot->waker);
	pthread_mutex_unlock(&slot->lock);
	/* Release: pairs with the acquire load in pw_proxy_drain(), so the
	 * listener is closed only after this task stopped using it. */
	atomic_store_explicit(&slot->acceptor_live, 0, memory_order_release);
}

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct px_acceptor *a = state;
	struct pw_proxy *p = a->p;
	struct px_slot *slot = &p->slot[a->idx];
	struct pw_accept_loop loop = {
		.stop = acceptor_stop,
		.full = acceptor_full,
		.start = acceptor_take,
		.error = acceptor_error,
		.arg = a,
	};
	enum pw_poll r;

	if (!a->started) {
		struct pw_waker w = pw_cx_waker(cx);

		/* Before the first receive on this shard creates the ring;
		 * -EBUSY (a ring already made) keeps the old geometry. */
		(void)pw_net_configure(&p->cfg.net);
		a->started = true;
		pthread_mutex_lock(&slot->lock);
		(void)pw_waker_clone(&slot->waker, &w);
		pthread_mutex_unlock(&slot->lock);
		pw_sleep_init(&a->tick, PX_TICK_NS);
		acceptor_sample(p);
	}
	/* The tick samples the ring and brings the stop flag to a look. */
	while (pw_sleep_poll(cx, &a->tick) == PW_READY) {
		acceptor_sample(p);
		pw_sleep_reset(&a->tick, pw_time_now() + PX_TICK_NS);
	}
	r = pw_accept_loop_poll(cx, &a->acc, &loop);
	if (r == PW_READY)
		acceptor_end(a);
	return r;
}

static void acceptor_drop(void *state)
{
	struct px_acceptor *a = state;

	pw_accept_cancel(&a->acc);
	acceptor_end(a);
}

/* ---- the API ------------------------------------------------------------ */

void pw_proxy_config_init(struct pw_proxy_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->high_water = 256 * 1024;
	cfg->idle_timeout_ns = 60 * PW_NSEC_PER_SEC;
	cfg->send_timeout_ns = 60 * PW_NSEC_PER_SEC;
	cfg->connect_timeout_ns = 5 * PW_NSEC_PER_SEC;
	cfg->accept_proxy_timeout_ns = 5 * PW_NSEC_PER_SEC;
	cfg->check_timeout_ns = PW_NSEC_PER_SEC;
	cfg->rise = 2;
	cfg->fall = 3;
	cfg->max_fails = 3;
	cfg->fail_timeout_ns = 10 * PW_NSEC_PER_SEC;
	cfg->resolve_interval_ns = 60 * PW_NSEC_PER_SEC;
	pw_config_init(&cfg->rt);
	pw_net_config_init(&cfg->net);
	cfg->net.buf_count = 1024;
	cfg->net.buf_size = 16 * 1024;
}

static void slots_free(struct pw_proxy *p)
{
	for (unsigned i = 0; p->slot && i < p->nshards; i++) {
		struct px_slot *s = &p->slot[i];

		pw_proxy_spares_free(&s->spare);
		pthread_mutex_destroy(&s->lock);
	}
	free(p->slot);
}

int pw_proxy_start(struct pw_proxy **pp, const struct pw_proxy_config *cfg)
{
	struct pw_proxy *p;
	int err, n;

	if (!pp || !cfg || !cfg->nupstreams ||
	    cfg->nupstreams > PW_PROXY_MAX_UPSTREAMS || !cfg->high_water ||
	    !cfg->connect_timeout_ns || cfg->sndbuf > (1u << 30) ||
	    cfg->send_proxy > 2 ||
	    (cfg->accept_proxy && !cfg->accept_proxy_timeout_ns) ||
	    (cfg->check_interval_ns && !cfg->check_timeout_ns))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	p->cfg.rt.cpus = NULL; /* used by pw_runtime_create() only */
	err = pw_runtime_create(&p->rt, &cfg->rt);
	if (err) {
		free(p);
		return err;
	}
	n = pw_runtime_shards(p->rt);
	p->nshards = n > 0 ? (unsigned)n : 1;
	p->slot = aligned_alloc(64, p->nshards * sizeof(*p->slot));
	if (!p->slot) {
		err = -ENOMEM;
		goto fail;
	}
	memset(p->slot, 0, p->nshards * sizeof(*p->slot));
	p->up = pxu_create(&p->cfg, p->nshards);
	if (!p->up) {
		err = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < p->nshards; i++) {
		pthread_mutex_init(&p->slot[i].lock, NULL);
		p->slot[i].uv = pxu_view(p->up, (int)i);
	}
	if (cfg->access_log) {
		err = pw_access_log_open(&p->log, p->rt, cfg->access_log,
					 (size_t)cfg->access_log_buf);
		if (err)
			goto fail;
	}
	p->cfg.access_log = NULL; /* the log keeps its own copy */
	/* Stealing mode runs an acceptor on whichever worker takes it, and
	 * a multishot accept arms on the socket of the worker polling it:
	 * with one SO_REUSEPORT socket per shard, a socket might have no
	 * acceptor and its connections would wait forever. One shared
	 * socket is accepted from by every acceptor, wherever it runs. */
	struct pw_net_listen_opts lo = {
		.flags = cfg->rt.sched == PW_SCHED_STEAL ?
				 PW_NET_LISTEN_SHARED :
				 0
	};
	lo.flags |= cfg->listen_flags & PW_NET_LISTEN_SHARE_PORT;
	lo.sndbuf = (int)cfg->sndbuf;
	if (cfg->nadopt)
		err = pw_net_listener_adopt(&p->l, p->rt, cfg->adopt,
					    cfg->nadopt, &lo);
	else
		err = pw_net_listener_create(&p->l, p->rt, &cfg->listen, &lo);
	if (err)
		goto fail;
	pw_net_listener_addr(p->l, &p->addr);
	for (unsigned i = 0; i < p->nshards; i++) {
		struct px_acceptor a;

		memset(&a, 0, sizeof(a));
		a.p = p;
		a.idx = i;
		pw_accept_init(&a.acc, p->l, 0);
		pw_sleep_init(&a.tick, PX_TICK_NS);
		/* Relaxed: the spawn publishes it to the shard. */
		atomic_store_explicit(&p->slot[i].acceptor_live, 1,
				      memory_order_relaxed);
		err = pw_runtime_spawn(p->rt, i, acceptor_poll, &a, sizeof(a),
				       acceptor_drop);
		if (err) {
			atomic_store_explicit(&p->slot[i].acceptor_live, 0,
					      memory_order_relaxed);
			goto fail;
		}
	}
	err = pxu_start(p->up, p->rt);
	if (err)
		goto fail;
	*pp = p;
	return 0;
fail:
	pw_runtime_destroy(p->rt);
	pw_access_log_close(p->log, NULL);
	if (p->l)
		pw_net_listener_destroy(p->l);
	slots_free(p);
	pxu_destroy(p->up);
	free(p);
	return err;
}

struct pw_net_listener *pw_proxy_listener(struct pw_proxy *p)
{
	return p ? p->l : NULL;
}

int pw_proxy_addr(const struct pw_proxy *p, struct pw_net_addr *out)
{
	if (!p || !out)
		return -EINVAL;
	*out = p->addr;
	return 0;
}

struct pw_runtime *pw_proxy_runtime(struct pw_proxy *p)
{
	return p ? p->rt : NULL;
}

static uint64_t sum(const struct pw_proxy *p, int i)
{
	uint64_t v = 0;

	for (unsigned k = 0; k < p->nshards; k++)
		/* Relaxed: statistics (see struct px_slot). */
		v += atomic_load_explicit(&p->slot[k].c[i],
					  memory_order_relaxed);
	return v;
}

static uint64_t most(const struct pw_proxy *p, int i)
{
	uint64_t v = 0;

	for (unsigned k = 0; k < p->nshards; k++) {
		/* Relaxed: statistics (see struct px_slot). */
		uint64_t x = atomic_load_explicit(&p->slot[k].c[i],
						  memory_order_relaxed);
		v = x > v ? x : v;
	}
	return v;
}

int pw_proxy_stats(const struct pw_proxy *p, struct pw_proxy_stats *out)
{
	if (!p || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->conns_total = sum(p, X_TOTAL);
	uint64_t ended = sum(p, X_ENDED);
	out->conns_open = out->conns_total > ended ? out->conns_total - ended :
						     0;
	out->bytes_up = sum(p, X_UP);
	out->bytes_down = sum(p, X_DOWN);
	out->connect_errors = sum(p, X_CONNECT_ERR);
	out->connect_timeouts = sum(p, X_CONNECT_TMO);
	out->upstream_failed = sum(p, X_UP_FAILED);
	out->resets = sum(p, X_RESETS);
	out->idle_closed = sum(p, X_IDLE);
	out->send_timeouts = sum(p, X_SEND_TMO);
	out->aborts = sum(p, X_ABORTS);
	out->accept_pauses = sum(p, X_PAUSES);
	out->half_closes = sum(p, X_HALF);
	out->drain_closed = sum(p, X_DRAIN);
	out->release_errors = sum(p, X_RELEASE_ERR);
	out->buffered_peak = most(p, X_BUFFERED_PEAK);
	out->bufs_borrowed = sum(p, X_BORROWED);
	out->bufs_borrowed_peak = most(p, X_BORROWED_PEAK);
	out->bufs_total = sum(p, X_BUFS_TOTAL);
	if (p->l) {
		struct pw_net_listener_stats ls;
		if (!pw_net_listener_stats(p->l, &ls))
			out->accept_errors = ls.accept_errors;
	} else {
		out->accept_errors = p->lstats.accept_errors;
	}
	out->accept_errors += sum(p, X_SPAWN_ERR);
	out->proxy_header_bad = sum(p, X_PP_BAD);
	out->proxy_header_timeout = sum(p, X_PP_TMO);
	struct pw_access_log_stats ls = p->logst;
	if (p->log)
		pw_access_log_stats(p->log, &ls);
	out->access_log_records = ls.records;
	out->access_log_dropped = ls.dropped;
	out->access_log_errors = ls.write_errors;
	out->no_upstream_up = sum(p, X_NONE_UP);
	unsigned up;
	out->upstreams = pxu_count(p->up, &up);
	out->upstreams_up = up;
	out->upstreams_behind = pxu_behind(p->up);
	return 0;
}

int pw_proxy_upstreams(const struct pw_proxy *p,
		       struct pw_proxy_upstream_stats *out, unsigned max)
{
	if (!p || (!out && max))
		return -EINVAL;
	return pxu_stats(p->up, out, max);
}

int pw_proxy_stats_line(const struct pw_proxy_stats *s, char *buf, size_t size)
{
	if (!s || !buf)
		return -EINVAL;
	return snprintf(buf, size,
			"open=%llu total=%llu up=%llu down=%llu errors=%llu "
			"(connect=%llu timeouts=%llu no_upstream=%llu "
			"resets=%llu idle=%llu send=%llu accept=%llu "
			"none_up=%llu) aborts=%llu paused=%llu "
			"upstreams=%llu/%llu",
			(unsigned long long)s->conns_open,
			(unsigned long long)s->conns_total,
			(unsigned long long)s->bytes_up,
			(unsigned long long)s->bytes_down,
			(unsigned long long)(s->connect_errors +
					     s->upstream_failed + s->resets +
					     s->idle_closed + s->send_timeouts +
					     s->accept_errors +
					     s->no_upstream_up),
			(unsigned long long)s->connect_errors,
			(unsigned long long)s->connect_timeouts,
			(unsigned long long)s->upstream_failed,
			(unsigned long long)s->resets,
			(unsigned long long)s->idle_closed,
			(unsigned long long)s->send_timeouts,
			(unsigned long long)s->accept_errors,
			(unsigned long long)s->no_upstream_up,
			(unsigned long long)s->aborts,
			(unsigned long long)s->accept_pauses,
			(unsigned long long)s->upstreams_up,
			(unsigned long long)s->upstreams);
}

static bool acceptors_done(struct pw_proxy *p)
{
	for (unsigned i = 0; i < p->nshards; i++)
		/* Acquire: pairs with the release stores of the acceptor. */
		if (atomic_load_explicit(&p->slot[i].acceptor_live,
					 memory_order_acquire))
			return false;
	return true;
}

int pw_proxy_drain(struct pw_proxy *p, uint64_t drain_ns)
{
	struct pw_proxy_stats st;
	uint64_t t0 = pw_cli_mono_ns();

	if (!p)
		return -EINVAL;
	/* Relaxed: pairs with the loads in acceptor_poll(). */
	atomic_store_explicit(&p->draining, true, memory_order_relaxed);
	while (!p->drained && !acceptors_done(p) &&
	       pw_cli_mono_ns() - t0 < 10 * PX_TICK_NS)
		usleep(1000);
	if (!p->drained && acceptors_done(p)) {
		pw_net_listener_stats(p->l, &p->lstats);
		pw_net_listener_destroy(p->l);
		p->l = NULL;
		p->drained = true;
	}
	for (;;) {
		pw_proxy_stats(p, &st);
		if (!st.conns_open || pw_cli_mono_ns() - t0 >= drain_ns)
			break;
		usleep(2000);
	}
	return (int)st.conns_open;
}

int pw_proxy_destroy(struct pw_proxy *p, struct pw_proxy_stats *final)
{
	if (!p)
		return -EINVAL;
	if (!p->drained)
		pw_proxy_drain(p, 0);
	/* The log's writes run on the shards: before they stop. */
	pw_access_log_stop(p->log);
	pw_runtime_destroy(p->rt);
	pw_access_log_close(p->log, &p->logst);
	p->log = NULL;
	if (final)
		pw_proxy_stats(p, final);
	if (p->l)
		pw_net_listener_destroy(p->l);
	slots_free(p);
	pxu_destroy(p->up);
	free(p);
	return 0;
}

int pw_proxy_stop(struct pw_proxy *p, uint64_t drain_ns,
		  struct pw_proxy_stats *final)
{
	if (!p)
		return -EINVAL;
	pw_proxy_drain(p, drain_ns);
	return pw_proxy_destroy(p, final);
}
