/* SPDX-License-Identifier: MIT */
/*
 * proxy.c - `pinwheel proxy`: an L4 TCP proxy (see proxy.h, docs/proxy.md).
 *
 * One acceptor task per shard takes connections from the shard's
 * SO_REUSEPORT socket and spawns one task per connection on that shard.
 * The connection task connects to an upstream (round robin per acceptor,
 * failing over to the next upstream on an error or timeout), then runs
 * both directions in the same poll function. A direction is a multishot
 * receive on its source, a FIFO of buffers borrowed from the shard's ring
 * and one send in flight to its destination: bytes are sent from the very
 * buffer the kernel received them into, which then goes back to the ring.
 * A direction stops taking buffers from its receive while it holds
 * high_water unsent bytes (or its FIFO is full); the receive then pauses
 * itself once its own queue is full (net/stream.c), the socket buffer
 * fills and TCP's window stops the sender.
 *
 * End of stream on one side becomes shutdown(SHUT_WR) on the other once
 * the bytes before it are sent; the other direction goes on. A socket
 * error on either side closes both, with SO_LINGER 0 so that the other
 * peer sees a reset too. A connection that moves no byte for the idle
 * timeout is closed. Closing waits for every send in flight to end before
 * the buffers go back to the ring, then cancels-and-closes both sockets.
 *
 * Counters live in one cache line per shard: a counter is written only by
 * the thread running that shard (relaxed load and store, no
 * read-modify-write) and read by any thread. The open-connection count
 * of an acceptor, which its connections decrement from wherever they run
 * (stealing mode), is the one read-modify-write.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/apps.h"
#include "apps/cli.h"
#include "apps/driver.h"
#include "apps/proxy.h"

/* Buffers one direction holds, whatever their sizes. */
#define PX_QCAP 64
/* How often an acceptor looks at the drain flag and samples the ring. */
#define PX_TICK_NS (50 * PW_NSEC_PER_MSEC)

/* Per-shard counters (indices into struct px_slot.c). */
enum {
	X_TOTAL,
	X_ENDED,
	X_REJECTED,
	X_UP,
	X_DOWN,
	X_CONNECT_ERR,
	X_CONNECT_TMO,
	X_UP_FAILED,
	X_RESETS,
	X_IDLE,
	X_HALF,
	X_DRAIN,
	X_RELEASE_ERR,
	X_BUFFERED_PEAK, /* a maximum, not a sum */
	X_BORROWED,	 /* a gauge */
	X_BORROWED_PEAK, /* a maximum */
	X_BUFS_TOTAL,	 /* a gauge */
	X_NCOUNTERS,
};

struct px_slot {
	/* Written by the slot's shard thread (load + store), read by any
	 * thread; relaxed both ways: they are statistics, no data travels
	 * with them. */
	_Atomic uint64_t c[X_NCOUNTERS];
	/* Connections open from this slot's acceptor: incremented by the
	 * acceptor, decremented by its connections on any thread. Relaxed
	 * read-modify-writes: the count is the only shared state. */
	_Atomic uint64_t open;
	_Atomic int acceptor_live; /* 1 while the acceptor runs */
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
enum { P_CONNECT, P_RUN, P_CLOSE_SENDS, P_CLOSE_FDS, P_DONE };

/* One direction: bytes received on src, sent to dst. */
struct px_dir {
	struct pw_recv rx;
	struct pw_send tx;
	struct pw_close sh; /* shutdown(dst, SHUT_WR) after end of stream */
	struct pw_net_buf q[PX_QCAP];
	uint64_t queued; /* unsent bytes in q */
	uint16_t head, n;
	uint8_t st; /* D_* */
	bool busy;  /* a send of q[head] has begun */
	int ctr;    /* X_UP or X_DOWN */
	int src, dst;
};

struct px_conn {
	struct pw_proxy *p;
	struct px_slot *home; /* the acceptor's slot (open count) */
	int cfd, ufd;
	uint8_t phase;
	bool ended;
	bool reset; /* closing after a socket error: SO_LINGER 0 */
	bool tx_idle[2];
	unsigned up, tries;
	uint64_t attempt_deadline;
	uint64_t last; /* runtime ns of the last byte moved */
	struct pw_connect conn;
	bool connecting;
	struct pw_sleep idle;
	struct px_dir d[2]; /* 0: client to upstream; 1: upstream to client */
	struct pw_close cl[2];
	bool closed[2];
};

static void dir_init(struct px_dir *d, int src, int dst, int ctr)
{
	pw_recv_init(&d->rx, src);
	pw_send_init(&d->tx, dst);
	d->head = d->n = 0;
	d->queued = 0;
	d->st = D_RUN;
	d->busy = false;
	d->ctr = ctr;
	d->src = src;
	d->dst = dst;
}

static void release_all(struct px_dir *d, struct px_slot *s)
{
	while (d->n) {
		if (pw_net_buf_release(&d->q[d->head]))
			ctr_add(s, X_RELEASE_ERR, 1);
		d->head = (uint16_t)((d->head + 1) % PX_QCAP);
		d->n--;
	}
	d->queued = 0;
}

/*
 * Move what can be moved in direction @d. Return: 1 when a byte moved,
 * 0 when not, -errno for a socket error on either side.
 */
static int dir_step(struct pw_cx *cx, struct px_conn *c, struct px_dir *d,
		    struct px_slot *s)
{
	uint64_t hw = c->p->cfg.high_water;
	int moved = 0;

	for (;;) {
		while (d->st == D_RUN && d->n < PX_QCAP && d->queued < hw) {
			struct pw_net_buf b;
			int32_t res;

			if (pw_recv_poll(cx, &d->rx, PW_TIME_NEVER, &b, &res) ==
			    PW_PENDING)
				break;
			if (res < 0)
				return res;
			if (res == 0) {
				d->st = D_EOF;
				break;
			}
			d->q[(d->head + d->n) % PX_QCAP] = b;
			d->n++;
			d->queued += (uint64_t)res;
			ctr_add(s, d->ctr, (uint64_t)res);
			ctr_max(s, X_BUFFERED_PEAK, d->queued);
			moved = 1;
		}
		if (!d->n)
			break;
		struct pw_net_buf *b = &d->q[d->head];
		int32_t res;
		d->busy = true;
		if (pw_send_poll(cx, &d->tx, b->data, b->len, PW_TIME_NEVER,
				 &res) == PW_PENDING)
			return moved;
		d->busy = false;
		if (res < 0)
			return res;
		d->queued -= b->len;
		if (pw_net_buf_release(b))
			ctr_add(s, X_RELEASE_ERR, 1);
		d->head = (uint16_t)((d->head + 1) % PX_QCAP);
		d->n--;
		moved = 1;
	}
	if (d->st == D_EOF) {
		pw_shutdown_init(&d->sh, d->dst, SHUT_WR);
		d->st = D_SHUT;
	}
	if (d->st == D_SHUT) {
		int32_t res;
		if (pw_close_poll(cx, &d->sh, &res) == PW_PENDING)
			return moved;
		ctr_add(s, X_HALF, 1);
		d->st = D_DONE;
	}
	return moved;
}

static void conn_end(struct px_conn *c, struct px_slot *s)
{
	if (c->ended)
		return;
	c->ended = true;
	ctr_add(s, X_ENDED, 1);
	/* Relaxed: pairs with the fetch_add in acceptor_poll(); a count. */
	atomic_fetch_sub_explicit(&c->home->open, 1, memory_order_relaxed);
}

static void begin_close(struct px_conn *c, bool reset)
{
	c->reset = reset;
	if (reset) {
		struct linger lg = { 1, 0 };
		(void)setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg,
				 sizeof(lg));
		if (c->ufd >= 0)
			(void)setsockopt(c->ufd, SOL_SOCKET, SO_LINGER, &lg,
					 sizeof(lg));
	}
	for (int i = 0; i < 2 && c->ufd >= 0; i++) {
		pw_recv_cancel(&c->d[i].rx);
		pw_send_cancel(&c->d[i].tx);
		c->tx_idle[i] = false;
	}
	c->phase = P_CLOSE_SENDS;
}

static enum pw_poll connect_step(struct pw_cx *cx, struct px_conn *c,
				 struct px_slot *s)
{
	struct pw_proxy *p = c->p;

	for (;;) {
		int fd;

		if (!c->connecting) {
			pw_connect_init(&c->conn, &p->cfg.upstream[c->up]);
			c->attempt_deadline = (uint64_t)pw_time_now() +
					      p->cfg.connect_timeout_ns;
			c->connecting = true;
		}
		if (pw_connect_poll(cx, &c->conn, c->attempt_deadline, &fd) ==
		    PW_PENDING)
			return PW_PENDING;
		c->connecting = false;
		if (fd >= 0) {
			c->ufd = fd;
			dir_init(&c->d[0], c->cfd, fd, X_UP);
			dir_init(&c->d[1], fd, c->cfd, X_DOWN);
			pw_close_init(&c->cl[1], fd);
			c->last = (uint64_t)pw_time_now();
			pw_sleep_init_at(
				&c->idle,
				p->cfg.idle_timeout_ns ?
					c->last + p->cfg.idle_timeout_ns :
					PW_TIME_NEVER);
			c->phase = P_RUN;
			return PW_READY;
		}
		ctr_add(s, X_CONNECT_ERR, 1);
		if (fd == -ETIMEDOUT)
			ctr_add(s, X_CONNECT_TMO, 1);
		if (++c->tries >= p->cfg.nupstreams) {
			ctr_add(s, X_UP_FAILED, 1);
			begin_close(c, false);
			return PW_READY;
		}
		c->up = (c->up + 1) % p->cfg.nupstreams;
	}
}

static void run_step(struct pw_cx *cx, struct px_conn *c, struct px_slot *s)
{
	uint64_t idle = c->p->cfg.idle_timeout_ns;
	int moved = 0;

	for (int i = 0; i < 2; i++) {
		int r = dir_step(cx, c, &c->d[i], s);

		if (r < 0) {
			ctr_add(s, X_RESETS, 1);
			begin_close(c, true);
			return;
		}
		moved |= r;
	}
	if (c->d[0].st == D_DONE && c->d[1].st == D_DONE) {
		begin_close(c, false);
		return;
	}
	if (!idle)
		return;
	if (moved)
		c->last = (uint64_t)pw_time_now();
	/* The timer is moved lazily: when it fires early, it is re-armed
	 * for the last activity plus the timeout. */
	while (pw_sleep_poll(cx, &c->idle) == PW_READY) {
		if ((uint64_t)pw_time_now() >= c->last + idle) {
			ctr_add(s, X_IDLE, 1);
			begin_close(c, false);
			return;
		}
		pw_sleep_reset(&c->idle, c->last + idle);
	}
}

static enum pw_poll conn_poll(struct pw_cx *cx, void *state)
{
	struct px_conn *c = state;
	struct px_slot *s = my_slot(c->p);
	int32_t res;

	if (c->phase == P_CONNECT && connect_step(cx, c, s) == PW_PENDING)
		return PW_PENDING;
	if (c->phase == P_RUN)
		run_step(cx, c, s);
	if (c->phase == P_RUN)
		return PW_PENDING;
	if (c->phase == P_CLOSE_SENDS) {
		/* A cancelled send ends with its final completion; a zero-byte
		 * poll waits for that without starting another. */
		for (int i = 0; i < 2; i++)
			if (!c->tx_idle[i] && c->ufd >= 0 &&
			    pw_send_poll(cx, &c->d[i].tx, NULL, 0,
					 PW_TIME_NEVER, &res) == PW_READY)
				c->tx_idle[i] = true;
		if (c->ufd >= 0 && !(c->tx_idle[0] && c->tx_idle[1]))
			return PW_PENDING;
		pw_sleep_cancel(&c->idle);
		if (c->ufd >= 0) {
			release_all(&c->d[0], s);
			release_all(&c->d[1], s);
		}
		c->phase = P_CLOSE_FDS;
	}
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
	conn_end(c, s);
	return pw_ready(cx, 0);
}

static void conn_drop(void *state)
{
	struct px_conn *c = state;
	struct px_slot *s = my_slot(c->p);

	if (c->phase == P_CONNECT && c->connecting)
		pw_connect_cancel(&c->conn);
	pw_sleep_cancel(&c->idle);
	/* Only runtime shutdown drops a connection that has not finished:
	 * a send cancelled here may still read its buffer until its final
	 * completion, but the ring is freed only after that, and the bytes
	 * go to a socket being closed. */
	if (c->ufd >= 0) {
		for (int i = 0; i < 2; i++) {
			pw_recv_cancel(&c->d[i].rx);
			pw_send_cancel(&c->d[i].tx);
			release_all(&c->d[i], s);
		}
	}
	if (!c->ended && c->phase != P_DONE)
		ctr_add(s, X_DRAIN, 1);
	if (!pw_close_cancel(&c->cl[0]))
		close(c->cfd);
	if (c->ufd >= 0 && !pw_close_cancel(&c->cl[1]))
		close(c->ufd);
	conn_end(c, s);
}

/* ---- the acceptor --------------------------------------------------- */

struct px_acceptor {
	struct pw_proxy *p;
	unsigned idx;
	unsigned rr;
	bool started;
	uint64_t tick;
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

static void acceptor_spawn(struct px_acceptor *a, int fd)
{
	struct pw_proxy *p = a->p;
	struct px_slot *home = &p->slot[a->idx];
	struct px_slot *s = my_slot(p);
	struct px_conn c;

	/* Relaxed: pairs with the fetch_sub in conn_end(); a count. */
	if (p->cfg.max_conns &&
	    atomic_load_explicit(&home->open, memory_order_relaxed) >=
		    p->cfg.max_conns) {
		ctr_add(s, X_REJECTED, 1);
		close(fd);
		return;
	}
	memset(&c, 0, sizeof(c));
	c.p = p;
	c.home = home;
	c.cfd = fd;
	c.ufd = -1;
	c.up = a->rr++ % p->cfg.nupstreams;
	pw_sleep_init_at(&c.idle, PW_TIME_NEVER);
	pw_close_init(&c.cl[0], fd);
	pw_close_init(&c.cl[1], -1);
	/* Relaxed: pairs with the fetch_sub in conn_end(); a count. */
	atomic_fetch_add_explicit(&home->open, 1, memory_order_relaxed);
	if (pw_spawn(NULL, conn_poll, &c, sizeof(c), conn_drop)) {
		atomic_fetch_sub_explicit(&home->open, 1, memory_order_relaxed);
		ctr_add(s, X_REJECTED, 1);
		close(fd);
		return;
	}
	ctr_add(s, X_TOTAL, 1);
}

static enum pw_poll acceptor_poll(struct pw_cx *cx, void *state)
{
	struct px_acceptor *a = state;
	struct pw_proxy *p = a->p;

	if (!a->started) {
		/* Before the first receive on this shard creates the ring;
		 * -EBUSY (a ring already made) keeps the old geometry. */
		(void)pw_net_configure(&p->cfg.net);
		a->started = true;
		a->tick = (uint64_t)pw_time_now() + PX_TICK_NS;
		acceptor_sample(p);
	}
	for (;;) {
		int fd;

		/* Relaxed: pairs with the store in pw_proxy_drain(). */
		if (atomic_load_explicit(&p->draining, memory_order_relaxed))
			break;
		if (pw_accept_poll(cx, &a->acc, a->tick, &fd) == PW_PENDING)
			return PW_PENDING;
		if (fd == -ETIMEDOUT) {
			acceptor_sample(p);
			a->tick = (uint64_t)pw_time_now() + PX_TICK_NS;
			continue;
		}
		if (fd == -EINVAL || fd == -EBADF) {
			fprintf(stderr, "pinwheel proxy: accept: %s\n",
				strerror(-fd));
			break;
		}
		if (fd >= 0)
			acceptor_spawn(a, fd);
	}
	pw_accept_cancel(&a->acc);
	/* Release: pairs with the acquire load in pw_proxy_drain(), so the
	 * listener is closed only after this task stopped using it. */
	atomic_store_explicit(&p->slot[a->idx].acceptor_live, 0,
			      memory_order_release);
	return pw_ready(cx, 0);
}

static void acceptor_drop(void *state)
{
	struct px_acceptor *a = state;

	pw_accept_cancel(&a->acc);
	/* Release: as at the end of acceptor_poll(). */
	atomic_store_explicit(&a->p->slot[a->idx].acceptor_live, 0,
			      memory_order_release);
}

/* ---- the API ------------------------------------------------------------ */

void pw_proxy_config_init(struct pw_proxy_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->high_water = 256 * 1024;
	cfg->idle_timeout_ns = 60 * PW_NSEC_PER_SEC;
	cfg->connect_timeout_ns = 5 * PW_NSEC_PER_SEC;
	pw_config_init(&cfg->rt);
	pw_net_config_init(&cfg->net);
	cfg->net.buf_count = 1024;
	cfg->net.buf_size = 16 * 1024;
}

int pw_proxy_upstreams_parse(struct pw_proxy_config *cfg, const char *text)
{
	struct pw_net_addr a[PW_PROXY_MAX_UPSTREAMS];
	unsigned n = 0;
	char item[256];

	if (!cfg || !text)
		return -EINVAL;
	for (const char *p = text;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (!len || len >= sizeof(item))
			return -EINVAL;
		if (n == PW_PROXY_MAX_UPSTREAMS)
			return -E2BIG;
		memcpy(item, p, len);
		item[len] = '\0';
		if (pw_net_addr_parse(&a[n], item))
			return -EINVAL;
		n++;
		if (!e)
			break;
		p = e + 1;
	}
	memcpy(cfg->upstream, a, n * sizeof(a[0]));
	cfg->nupstreams = n;
	return 0;
}

int pw_proxy_start(struct pw_proxy **pp, const struct pw_proxy_config *cfg)
{
	struct pw_proxy *p;
	int err, n;

	if (!pp || !cfg || !cfg->nupstreams ||
	    cfg->nupstreams > PW_PROXY_MAX_UPSTREAMS || !cfg->high_water ||
	    !cfg->connect_timeout_ns)
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
	/* Stealing mode runs an acceptor on whichever worker takes it, and
	 * a multishot accept arms on the socket of the worker polling it:
	 * with one SO_REUSEPORT socket per shard, a socket might have no
	 * acceptor and its connections would wait forever. One shared
	 * socket is accepted from by every acceptor, wherever it runs. */
	struct pw_net_listen_opts lo = { 0, cfg->rt.sched == PW_SCHED_STEAL ?
						    PW_NET_LISTEN_SHARED :
						    0 };
	lo.flags |= cfg->listen_flags & PW_NET_LISTEN_SHARE_PORT;
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
	*pp = p;
	return 0;
fail:
	pw_runtime_destroy(p->rt);
	if (p->l)
		pw_net_listener_destroy(p->l);
	free(p->slot);
	free(p);
	return err;
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
	out->rejected = sum(p, X_REJECTED);
	out->bytes_up = sum(p, X_UP);
	out->bytes_down = sum(p, X_DOWN);
	out->connect_errors = sum(p, X_CONNECT_ERR);
	out->connect_timeouts = sum(p, X_CONNECT_TMO);
	out->upstream_failed = sum(p, X_UP_FAILED);
	out->resets = sum(p, X_RESETS);
	out->idle_closed = sum(p, X_IDLE);
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
	return 0;
}

int pw_proxy_stats_line(const struct pw_proxy_stats *s, char *buf, size_t size)
{
	if (!s || !buf)
		return -EINVAL;
	return snprintf(buf, size,
			"open=%llu total=%llu up=%llu down=%llu errors=%llu "
			"(connect=%llu timeouts=%llu no_upstream=%llu "
			"resets=%llu idle=%llu rejected=%llu accept=%llu)",
			(unsigned long long)s->conns_open,
			(unsigned long long)s->conns_total,
			(unsigned long long)s->bytes_up,
			(unsigned long long)s->bytes_down,
			(unsigned long long)(s->connect_errors +
					     s->upstream_failed + s->resets +
					     s->idle_closed + s->rejected +
					     s->accept_errors),
			(unsigned long long)s->connect_errors,
			(unsigned long long)s->connect_timeouts,
			(unsigned long long)s->upstream_failed,
			(unsigned long long)s->resets,
			(unsigned long long)s->idle_closed,
			(unsigned long long)s->rejected,
			(unsigned long long)s->accept_errors);
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
	pw_runtime_destroy(p->rt);
	if (final)
		pw_proxy_stats(p, final);
	if (p->l)
		pw_net_listener_destroy(p->l);
	free(p->slot);
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

/* ---- the command ---------------------------------------------------- */

/* The flags of `pinwheel proxy` and the proxy they start. */
static struct px_cmd {
	const char *listen, *upstreams;
	uint64_t hw, idle, cto, maxc, drain, nbufs, bufsz;
	bool stats, reuse_port;
	struct pw_proxy_config cfg;
	struct pw_proxy *p;
} P;

static const struct px_cmd px_defaults = {
	.hw = 256 * 1024,
	.idle = 60 * PW_NSEC_PER_SEC,
	.cto = 5 * PW_NSEC_PER_SEC,
	.drain = 5 * PW_NSEC_PER_SEC,
	.nbufs = 1024,
	.bufsz = 16 * 1024,
};

static const struct pw_cli_opt px_opts[] = {
	{ "--listen", PW_CLI_STRING, &P.listen, 0, 0, "ADDR",
	  "address to accept on, e.g. 127.0.0.1:8080 (required)" },
	{ "--upstream", PW_CLI_STRING, &P.upstreams, 0, 0, "ADDR[,ADDR...]",
	  "upstreams, used round robin with failover (required)" },
	{ "--high-water", PW_CLI_SIZE, &P.hw, 1, 1ull << 30, "SIZE",
	  "unsent bytes that pause reading a side (256k)" },
	{ "--idle-timeout", PW_CLI_DURATION, &P.idle, 0, 0, "DURATION",
	  "close connections idle this long; 0: never (60s)" },
	{ "--connect-timeout", PW_CLI_DURATION, &P.cto, 1,
	  3600 * PW_NSEC_PER_SEC, "DURATION",
	  "per upstream connect attempt (5s)" },
	{ "--max-conns", PW_CLI_UINT, &P.maxc, 0, 0, "N",
	  "open connections per shard; 0: no limit (0)" },
	{ "--drain", PW_CLI_DURATION, &P.drain, 0, 0, "DURATION",
	  "on SIGINT/SIGTERM, wait this long for connections (5s)" },
	{ "--buffers", PW_CLI_UINT, &P.nbufs, 1, 32768, "N",
	  "receive buffers per shard, a power of two (1024)" },
	{ "--buffer-size", PW_CLI_SIZE, &P.bufsz, 64, 1 << 20, "SIZE",
	  "bytes per receive buffer (16k)" },
	{ "--stats", PW_CLI_BOOL, &P.stats, 0, 0, NULL,
	  "print connections, bytes and errors every second" },
	{ "--reuse-port", PW_CLI_BOOL, &P.reuse_port, 0, 0, NULL,
	  "share a port other servers already listen on (SO_REUSEPORT); "
	  "without it a port in use is refused" },
};

static const struct pw_cli_cmd px_cmd = {
	.name = "pinwheel proxy",
	.about = "Forward TCP connections from --listen to the --upstream "
		 "servers until SIGINT or SIGTERM.",
	.opts = px_opts,
	.nopts = sizeof(px_opts) / sizeof(px_opts[0]),
	.common = PW_CLI_RUNTIME,
};

/* --upstream into P.cfg, or the message naming what is wrong in it:
 * each item goes through pw_cli_addr() (port 0 refused), then the list
 * into P.cfg. */
static int px_upstreams(struct pw_drv *d)
{
	const char *p = P.upstreams;
	struct pw_net_addr a;
	char item[256];
	int err;

	if (!p)
		return pw_cli_fail(&d->cli, 2,
				   "--upstream ADDR[,ADDR...] is required "
				   "(see --help)");
	err = pw_proxy_upstreams_parse(&P.cfg, p);
	if (err == -E2BIG)
		return pw_cli_fail(&d->cli, 2,
				   "--upstream: more than %d addresses",
				   PW_PROXY_MAX_UPSTREAMS);
	/* Every item (a longer one than item holds is no address either). */
	for (;; p += strcspn(p, ",") + 1) {
		size_t len = strcspn(p, ",");

		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		if (pw_cli_addr(&d->cli, "--upstream", item,
				PW_CLI_ADDR_CONNECT, &a))
			return 2;
		if (!p[len])
			break;
	}
	if (err)
		return pw_cli_fail(
			&d->cli, 2,
			"--upstream: '%s' is not a list of addresses",
			P.upstreams);
	return 0;
}

static int px_setup(struct pw_drv *d)
{
	if (pw_cli_addr(&d->cli, "--listen", P.listen, PW_CLI_ADDR_LISTEN,
			&P.cfg.listen))
		return 2;
	if (px_upstreams(d))
		return 2;
	if (P.nbufs & (P.nbufs - 1))
		return pw_cli_fail(&d->cli, 2,
				   "--buffers: %llu is not a power of two",
				   (unsigned long long)P.nbufs);
	P.cfg.high_water = P.hw;
	P.cfg.idle_timeout_ns = P.idle;
	P.cfg.connect_timeout_ns = P.cto;
	P.cfg.max_conns = P.maxc;
	P.cfg.listen_flags = P.reuse_port ? PW_NET_LISTEN_SHARE_PORT : 0;
	P.cfg.net.buf_count = (uint32_t)P.nbufs;
	P.cfg.net.buf_size = (uint32_t)P.bufsz;
	d->drain_ns = P.drain;
	d->tick_ns = P.stats ? PW_NSEC_PER_SEC : 0;
	return 0;
}

/* The proxy, with the runtime it creates. */
static int px_start(struct pw_drv *d)
{
	int err;

	P.cfg.rt = d->cfg;
	err = pw_proxy_start(&P.p, &P.cfg);
	if (err) {
		P.p = NULL;
		return pw_cli_fail(&d->cli, 1, "cannot start: %s",
				   err == -EADDRINUSE || err == -EACCES ||
						   err == -EADDRNOTAVAIL ?
					   strerror(-err) :
					   pw_strerror_setup(err));
	}
	d->rt = pw_proxy_runtime(P.p);
	pw_proxy_addr(P.p, &d->addr);
	return 0;
}

static void px_banner(struct pw_drv *d, FILE *f)
{
	int n = pw_runtime_shards(d->rt);

	fprintf(f, ", %u upstream%s, %d shard%s", P.cfg.nupstreams,
		P.cfg.nupstreams == 1 ? "" : "s", n, n == 1 ? "" : "s");
}

/* The counters as one line, "pinwheel proxy: open=...". */
static void px_line(void)
{
	struct pw_proxy_stats st;
	char line[512];

	pw_proxy_stats(P.p, &st);
	pw_proxy_stats_line(&st, line, sizeof(line));
	printf("pinwheel proxy: %s\n", line);
	fflush(stdout);
}

static void px_tick(struct pw_drv *d)
{
	(void)d;
	px_line();
}

/* On SIGUSR1 the counters, then (and at exit) the metrics. */
static void px_report(struct pw_drv *d, bool final)
{
	if (!final)
		px_line();
	pw_drv_metrics(d, stdout);
}

static void px_drain(struct pw_drv *d)
{
	(void)d;
	pw_proxy_drain(P.p, 0);
}

static int px_open(struct pw_drv *d)
{
	struct pw_proxy_stats st;

	(void)d;
	pw_proxy_stats(P.p, &st);
	return (int)st.conns_open;
}

/* Destroy the proxy and its runtime; the final counters. */
static int px_stop(struct pw_drv *d, int status)
{
	struct pw_proxy_stats st;
	char line[512];

	if (!P.p)
		return status;
	pw_proxy_destroy(P.p, &st);
	pw_proxy_stats_line(&st, line, sizeof(line));
	printf("pinwheel proxy: stopped (%d connection%s closed at the drain "
	       "deadline); %s\n",
	       d->left, d->left == 1 ? "" : "s", line);
	fflush(stdout);
	return status;
}

static const struct pw_drv_ops px_ops = {
	.setup = px_setup,
	.start = px_start,
	.banner = px_banner,
	.tick = px_tick,
	.report = px_report,
	.drain = px_drain,
	.open = px_open,
	.stop = px_stop,
	.own_runtime = true,
};

int pw_app_proxy(int argc, char **argv)
{
	P = px_defaults;
	pw_proxy_config_init(&P.cfg);
	return pw_drv_main(&px_cmd, &px_ops, argc, argv);
}
