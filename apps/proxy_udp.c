/* SPDX-License-Identifier: MIT */
/*
 * proxy_udp.c - the UDP forwarder of proxy_udp.h (docs/proxy.md, "UDP"):
 * per-shard listeners, the flows and their table, the counters.
 *
 * Each shard has one SO_REUSEPORT socket and one listener task, placed
 * on that shard (pw_runtime_spawn() to it: it stays there in stealing
 * mode too). The kernel hashes a client's 4-tuple to one socket, so all
 * of a client's datagrams reach one shard, and the shard owns its flows
 * outright: a hash table keyed by the client's address, touched only by
 * the shard's thread, no lock.
 *
 * A flow is two pieces. Its record (struct pxd_flow, allocated) is what
 * the listener and the flow share: the client's address, the queue of
 * client datagrams waiting to go up (lent ring buffers, a few per flow
 * and at most half the shard's ring in all), the flow's waker and
 * counts. Its task (struct pxd_task, placed on the same shard with
 * pw_spawn_on()) owns the upstream socket and the leaves: it sends the
 * queue on the connected socket, receives the upstream's datagrams with
 * a multishot receive and sends each to the client from the shard's
 * listening socket. The leaves live in the task's own memory, which the
 * runtime keeps until their final completions, so a flow dropped at
 * shutdown never leaves the kernel writing into freed memory.
 *
 * The idle timeout is the receive's deadline: the last datagram either
 * way plus idle_ns. A flow closes by unlinking its record (the next
 * datagram of that client makes a new flow), cancelling its leaves,
 * waiting for their final completions, then closing its socket.
 *
 * Counters live in one slot per shard, written only by that shard's
 * thread (relaxed load and store) and read by any thread.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/mesh.h"
#include "pinwheel/net.h"
#include "apps/proxy_udp.h"
#include "apps/proxy_upstream.h"

#define NSRV PW_PROXY_MAX_UPSTREAMS
/* How often a listener looks at the drain flag when no datagram comes. */
#define PXD_TICK_NS (50 * PW_NSEC_PER_MSEC)
/* Client datagrams one flow may hold waiting for its upstream send, and
 * the most it sends in one batch (one submission). */
#define PXD_QUEUE 16
#define PXD_BATCH 8

/* Per-shard counters (indices into struct pxd_shard.c). */
enum {
	D_CREATED,
	D_CLOSED,
	D_EXPIRED,
	D_ANSWERED,
	D_DRAINED,
	D_FAILED,
	D_REFUSED,
	D_FLOW_ERR,
	D_IN,
	D_UP,
	D_BYTES_UP,
	D_REPLIES,
	D_DOWN,
	D_BYTES_DOWN,
	D_TRUNC_UP,
	D_TRUNC_DOWN,
	D_ERR_UP,
	D_ERR_DOWN,
	D_BACKLOG,
	D_CLOSED_DROP,
	D_UPSTREAM_ERR,
	D_FLOW_KDROPS,
	D_N,
};

struct pxd_flow;

struct pxd_shard {
	/* Written by the slot's shard thread (load + store), read by any
	 * thread; relaxed both ways: statistics, no data travels with
	 * them. dg: datagrams per upstream slot, up and down. */
	_Atomic uint64_t c[D_N];
	_Atomic uint64_t dg[NSRV][2];
	/* The shard thread's only. */
	struct pxd_flow **bucket;
	uint64_t mask;
	uint64_t nflows;
	uint32_t queued, queued_max; /* lent datagrams in flow queues */
	struct pxu_view *uv;
} __attribute__((aligned(64)));

struct pw_proxy_udp {
	struct pw_proxy_config cfg;
	struct pw_proxy_udp_opts o;
	struct pw_runtime *rt;
	struct pw_udp_socket *sock;
	struct pw_net_addr addr;
	struct pxu_table *up;
	unsigned nshards;
	uint64_t seed; /* of the flow hash */
	/* Set by pw_proxy_udp_drain() (release), read by the listeners and
	 * flows (acquire): pairs so that a flow sees the drain once woken. */
	_Atomic int draining;
	/* Listeners still reading: set before they are spawned, release
	 * sub by each as it ends, acquire load by pw_proxy_udp_drain(). */
	_Atomic unsigned live;
	struct pxd_shard *sh;
};

/* A client datagram held for its upstream send. */
struct pxd_held {
	void *data;
	uint32_t len;
	uint16_t bid;
};

/* A flow's shared record (see the top of the file). */
struct pxd_flow {
	struct pxd_flow *next; /* in its hash chain */
	struct pw_proxy_udp *u;
	struct pxd_shard *sh;
	struct pw_net_addr client;
	uint64_t hash;
	int fd, slot;
	int lfd; /* the shard's listening socket: replies go out on it */
	bool linked;
	uint8_t qh, qn;
	struct pxd_held q[PXD_QUEUE];
	struct pw_waker waker; /* borrowed: set by the task's first poll */
	pw_time_t last;	       /* the last datagram either way */
	uint64_t requests, replies;
};

/* A flow's task: the leaves, in the task's memory. */
struct pxd_task {
	struct pxd_flow *f;
	bool started, closing, cancelled, down_busy;
	int cause;   /* D_EXPIRED, D_ANSWERED, D_FAILED */
	unsigned nb; /* datagrams in the batch in flight, 0: none */
	struct pw_udp_recv rx;
	struct pw_udp_batch up;
	struct pw_udp_out out[PXD_BATCH];
	struct iovec iov[PXD_BATCH];
	struct pw_udp_send down;
	struct pw_udp_dgram dd; /* the reply being sent to the client */
};

struct pxd_listener {
	struct pw_proxy_udp *u;
	unsigned idx;
	bool started, stopped, cancelled, ended;
	pw_time_t tick;
	struct pw_udp_recv rx;
	struct pw_udp_dgram d;
};

static void ctr(struct pxd_shard *sh, int i, uint64_t n)
{
	/* Relaxed load + store: only this shard's thread writes it. */
	atomic_store_explicit(
		&sh->c[i],
		atomic_load_explicit(&sh->c[i], memory_order_relaxed) + n,
		memory_order_relaxed);
}

static void dg_add(struct pxd_shard *sh, int slot, int down)
{
	/* Relaxed load + store: as ctr(). */
	atomic_store_explicit(&sh->dg[slot][down],
			      atomic_load_explicit(&sh->dg[slot][down],
						   memory_order_relaxed) +
				      1,
			      memory_order_relaxed);
}

/* ---- the flow table ------------------------------------------------- */

/* The client's address as hashed and compared: family, port, address. */
struct pxd_key {
	uint64_t w[3];
};

static struct pxd_key addr_key(const struct pw_net_addr *a)
{
	struct pxd_key k;

	memset(&k, 0, sizeof(k));
	if (a->u.sa.sa_family == AF_INET) {
		k.w[0] = (uint64_t)AF_INET << 16 | a->u.in4.sin_port;
		memcpy(&k.w[1], &a->u.in4.sin_addr, 4);
	} else {
		k.w[0] = (uint64_t)a->u.sa.sa_family << 16 |
			 a->u.in6.sin6_port |
			 (uint64_t)a->u.in6.sin6_scope_id << 32;
		memcpy(&k.w[1], &a->u.in6.sin6_addr, 16);
	}
	return k;
}

/* A keyed mix of the key's words (the seed is random per proxy, so a
 * client cannot choose addresses that fall into one chain). */
static uint64_t key_hash(uint64_t seed, const struct pxd_key *k)
{
	uint64_t h = seed;

	for (int i = 0; i < 3; i++) {
		h ^= k->w[i];
		h *= 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
		h += seed >> 7;
	}
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

static struct pxd_flow *flow_find(struct pxd_shard *sh, uint64_t h,
				  const struct pxd_key *k)
{
	struct pxd_flow *f = sh->bucket[h & sh->mask];

	for (; f; f = f->next) {
		if (f->hash != h)
			continue;
		struct pxd_key fk = addr_key(&f->client);
		if (!memcmp(&fk, k, sizeof(fk)))
			return f;
	}
	return NULL;
}

static void flow_link(struct pxd_shard *sh, struct pxd_flow *f)
{
	struct pxd_flow **b = &sh->bucket[f->hash & sh->mask];

	f->next = *b;
	*b = f;
	f->linked = true;
	sh->nflows++;
}

static void flow_unlink(struct pxd_shard *sh, struct pxd_flow *f)
{
	struct pxd_flow **p = &sh->bucket[f->hash & sh->mask];

	if (!f->linked)
		return;
	while (*p && *p != f)
		p = &(*p)->next;
	if (*p)
		*p = f->next;
	f->linked = false;
	sh->nflows--;
}

/* Give back the datagrams @f still holds, counted in @why. */
static void flow_unqueue(struct pxd_flow *f, int why)
{
	while (f->qn) {
		struct pxd_held *h = &f->q[f->qh];
		struct pw_udp_dgram d = { .data = h->data, .bid = h->bid };

		(void)pw_udp_dgram_release(&d);
		f->qh = (uint8_t)((f->qh + 1) % PXD_QUEUE);
		f->qn--;
		f->sh->queued--;
		ctr(f->sh, why, 1);
	}
}

/* The record's last moment: its socket closed, its pick given back. */
static void flow_free(struct pxd_flow *f)
{
	uint64_t drops = 0;

	if (!pw_udp_drops(f->fd, &drops))
		ctr(f->sh, D_FLOW_KDROPS, drops);
	close(f->fd);
	pxu_release(f->sh->uv, f->slot);
	ctr(f->sh, D_CLOSED, 1);
	free(f);
}

/* ---- a flow's task -------------------------------------------------- */

/* The head of @f's queue, up to PXD_BATCH datagrams, as @t's batch. */
static void batch_fill(struct pxd_task *t, struct pxd_flow *f)
{
	t->nb = f->qn < PXD_BATCH ? f->qn : PXD_BATCH;
	for (unsigned i = 0; i < t->nb; i++) {
		struct pxd_held *h = &f->q[(f->qh + i) % PXD_QUEUE];

		t->iov[i] = (struct iovec){ h->data, h->len };
		t->out[i] =
			(struct pw_udp_out){ .iov = &t->iov[i], .iovcnt = 1 };
	}
}

/* Send the queued client datagrams up, a batch at a time. */
static void flow_up(struct pw_cx *cx, struct pxd_task *t)
{
	struct pxd_flow *f = t->f;
	int32_t res;

	while (f->qn) {
		if (!t->nb)
			batch_fill(t, f);
		if (pw_udp_batch_poll(cx, &t->up, t->out, t->nb, PW_TIME_NEVER,
				      &res) == PW_PENDING)
			return;
		for (unsigned i = 0; i < t->nb; i++) {
			struct pxd_held *h = &f->q[f->qh];
			struct pw_udp_dgram d = { .data = h->data,
						  .bid = h->bid };
			int32_t r = res < 0 ? res : t->out[i].res;

			if (r >= 0) {
				ctr(f->sh, D_UP, 1);
				ctr(f->sh, D_BYTES_UP, (uint64_t)r);
				dg_add(f->sh, f->slot, 0);
				pxu_bytes(f->sh->uv, f->slot, false,
					  (uint64_t)r);
			} else {
				ctr(f->sh, D_ERR_UP, 1);
			}
			(void)pw_udp_dgram_release(&d);
			f->qh = (uint8_t)((f->qh + 1) % PXD_QUEUE);
			f->qn--;
			f->sh->queued--;
		}
		t->nb = 0;
	}
}

static void flow_close(struct pxd_task *t, int cause)
{
	t->closing = true;
	t->cause = cause;
	flow_unlink(t->f->sh, t->f);
}

/* Take the upstream's next datagram into t->dd. Return: true with one
 * to send; false when none is ready (or the flow closes). */
static bool flow_take(struct pw_cx *cx, struct pxd_task *t)
{
	struct pxd_flow *f = t->f;
	int32_t res;

	for (;;) {
		if (pw_udp_recv_poll(cx, &t->rx, f->last + f->u->o.idle_ns,
				     &t->dd, &res) == PW_PENDING)
			return false;
		if (res == -ETIMEDOUT) {
			flow_close(t, D_EXPIRED);
			return false;
		}
		if (res == -EBADF || res == -ECANCELED || res == -ENOMEM ||
		    res == -EINVAL) {
			flow_close(t, D_FAILED);
			return false;
		}
		if (res < 0) {
			/* An ICMP error: told once, the next poll re-arms. */
			ctr(f->sh, D_UPSTREAM_ERR, 1);
			continue;
		}
		ctr(f->sh, D_REPLIES, 1);
		if (!(t->dd.flags & PW_UDP_TRUNC))
			return true;
		ctr(f->sh, D_TRUNC_DOWN, 1);
		(void)pw_udp_dgram_release(&t->dd);
	}
}

/* Receive the upstream's datagrams and send each to the client from
 * the listening socket. */
static void flow_down(struct pw_cx *cx, struct pxd_task *t)
{
	struct pxd_flow *f = t->f;
	int32_t res;

	while (!t->closing) {
		if (!t->down_busy && !(t->down_busy = flow_take(cx, t)))
			return;
		if (pw_udp_send_to_poll(cx, &t->down, t->dd.data, t->dd.len,
					&f->client, PW_TIME_NEVER,
					&res) == PW_PENDING)
			return;
		t->down_busy = false;
		(void)pw_udp_dgram_release(&t->dd);
		if (res < 0) {
			ctr(f->sh, D_ERR_DOWN, 1);
			continue;
		}
		ctr(f->sh, D_DOWN, 1);
		ctr(f->sh, D_BYTES_DOWN, (uint64_t)res);
		dg_add(f->sh, f->slot, 1);
		pxu_bytes(f->sh->uv, f->slot, true, (uint64_t)res);
		f->replies++;
		f->last = pw_time_now();
	}
}

/* Every client datagram has its replies: --udp-responses each, or one
 * while the proxy drains. */
static bool flow_answered(const struct pxd_task *t)
{
	const struct pxd_flow *f = t->f;
	uint64_t per = f->u->o.responses;

	/* Acquire: pairs with the release store in pw_proxy_udp_drain(). */
	if (!per && atomic_load_explicit(&f->u->draining, memory_order_acquire))
		per = 1;
	return per && !f->qn && !t->nb && !t->down_busy &&
	       f->replies >= f->requests * per;
}

/* Cancel the leaves, wait for their final completions, then give back
 * what the flow holds and free it. */
static enum pw_poll flow_end(struct pw_cx *cx, struct pxd_task *t)
{
	struct pxd_flow *f = t->f;

	if (!t->cancelled) {
		t->cancelled = true;
		pw_udp_recv_cancel(&t->rx);
		pw_udp_batch_cancel(&t->up);
		pw_udp_send_cancel(&t->down);
		ctr(f->sh, t->cause, 1);
	}
	if (pw_udp_recv_in_flight(&t->rx) || pw_udp_batch_in_flight(&t->up) ||
	    pw_udp_send_in_flight(&t->down))
		return PW_PENDING;
	flow_unqueue(f, D_CLOSED_DROP);
	t->nb = 0;
	if (t->down_busy)
		(void)pw_udp_dgram_release(&t->dd);
	t->down_busy = false;
	flow_free(f);
	t->f = NULL;
	return pw_ready(cx, 0);
}

static enum pw_poll flow_poll(struct pw_cx *cx, void *state)
{
	struct pxd_task *t = state;
	struct pxd_flow *f = t->f;

	if (!t->started) {
		t->started = true;
		f->waker = pw_cx_waker(cx);
		pw_udp_recv_init(&t->rx, f->fd, 0);
		pw_udp_batch_init(&t->up, f->fd);
		pw_udp_send_init(&t->down, f->lfd, 0);
	}
	if (!t->closing) {
		flow_up(cx, t);
		flow_down(cx, t);
		if (!t->closing && flow_answered(t))
			flow_close(t, D_ANSWERED);
	}
	if (t->closing)
		return flow_end(cx, t);
	return PW_PENDING;
}

/* Shutdown (or a spawn that failed on its shard): cut the flow. */
static void flow_drop(void *state)
{
	struct pxd_task *t = state;
	struct pxd_flow *f = t->f;

	if (!f)
		return;
	flow_unlink(f->sh, f);
	flow_unqueue(f, D_CLOSED_DROP);
	if (t->started) {
		if (t->down_busy)
			(void)pw_udp_dgram_release(&t->dd);
		pw_udp_recv_cancel(&t->rx);
		pw_udp_batch_cancel(&t->up);
		pw_udp_send_cancel(&t->down);
	}
	if (!t->cancelled)
		ctr(f->sh, t->started ? D_DRAINED : D_FLOW_ERR, 1);
	flow_free(f);
	t->f = NULL;
}

/* ---- the listeners -------------------------------------------------- */

/* A new client's flow on shard @idx: its upstream picked, its socket
 * opened, its task spawned. Return: the flow, or NULL (counted). */
static struct pxd_flow *flow_new(struct pw_proxy_udp *u, unsigned idx,
				 uint64_t h, const struct pw_net_addr *client)
{
	struct pxd_shard *sh = &u->sh[idx];
	struct pw_udp_opts uo = { .sndbuf = (int)u->cfg.sndbuf };
	struct pxd_task t;
	struct pxd_flow *f;
	int slot, fd;

	if (sh->nflows >= u->o.max_flows) {
		ctr(sh, D_REFUSED, 1);
		return NULL;
	}
	slot = pxu_pick(u->up, sh->uv, pw_time_now());
	if (slot < 0) {
		ctr(sh, D_FLOW_ERR, 1);
		return NULL;
	}
	fd = pw_udp_open(NULL, pxu_addr(u->up, slot), &uo);
	f = fd >= 0 ? calloc(1, sizeof(*f)) : NULL;
	if (!f)
		goto fail;
	f->u = u;
	f->sh = sh;
	f->client = *client;
	f->hash = h;
	f->fd = fd;
	f->slot = slot;
	f->lfd = pw_udp_socket_fd(u->sock, idx);
	f->last = pw_time_now();
	memset(&t, 0, sizeof(t));
	t.f = f;
	flow_link(sh, f);
	if (pw_spawn_on(idx, flow_poll, &t, sizeof(t), flow_drop)) {
		flow_unlink(sh, f);
		free(f);
		goto fail;
	}
	ctr(sh, D_CREATED, 1);
	pxu_connected(u->up, sh->uv, slot);
	return f;
fail:
	if (fd >= 0)
		close(fd);
	pxu_release(sh->uv, slot);
	ctr(sh, D_FLOW_ERR, 1);
	return NULL;
}

/* One client datagram @d: into its flow's queue, or dropped (counted). */
static void take(struct pxd_listener *l, struct pw_udp_dgram *d)
{
	struct pw_proxy_udp *u = l->u;
	struct pxd_shard *sh = &u->sh[l->idx];
	struct pxd_key k = addr_key(&d->peer);
	uint64_t h = key_hash(u->seed, &k);
	struct pxd_flow *f;

	ctr(sh, D_IN, 1);
	if (d->flags & PW_UDP_TRUNC) {
		ctr(sh, D_TRUNC_UP, 1);
		goto drop;
	}
	f = flow_find(sh, h, &k);
	if (!f && !(f = flow_new(u, l->idx, h, &d->peer)))
		goto drop;
	if (f->qn == PXD_QUEUE || sh->queued >= sh->queued_max) {
		ctr(sh, D_BACKLOG, 1);
		goto drop;
	}
	f->q[(f->qh + f->qn) % PXD_QUEUE] =
		(struct pxd_held){ d->data, d->len, d->bid };
	f->qn++;
	sh->queued++;
	f->requests++;
	f->last = pw_time_now();
	pw_waker_wake_by_ref(&f->waker); /* empty before its first poll */
	return;
drop:
	(void)pw_udp_dgram_release(d);
}

/* The drain: wake every flow of the shard, to look whether it is
 * answered. */
static void wake_all(struct pxd_shard *sh)
{
	for (uint64_t b = 0; b <= sh->mask; b++)
		for (struct pxd_flow *f = sh->bucket[b]; f; f = f->next)
			pw_waker_wake_by_ref(&f->waker);
}

static bool drain_asked(const struct pw_proxy_udp *u)
{
	/* Acquire: pairs with the release store in pw_proxy_udp_drain(). */
	return atomic_load_explicit(&u->draining, memory_order_acquire);
}

static void listener_end(struct pxd_listener *l)
{
	l->ended = true;
	/* Release: pairs with the acquire load in pw_proxy_udp_drain(). */
	atomic_fetch_sub_explicit(&l->u->live, 1, memory_order_release);
}

static enum pw_poll listener_poll(struct pw_cx *cx, void *state)
{
	struct pxd_listener *l = state;
	struct pw_proxy_udp *u = l->u;
	int32_t res;

	if (!l->started) {
		/* Before the first receive on this shard creates the ring;
		 * -EBUSY (a ring already made) keeps the old geometry. */
		(void)pw_net_configure(&u->cfg.net);
		pw_udp_recv_init(&l->rx, pw_udp_socket_fd(u->sock, l->idx), 0);
		l->tick = pw_time_now() + PXD_TICK_NS;
		l->started = true;
	}
	while (!l->stopped && !drain_asked(u)) {
		if (pw_udp_recv_poll(cx, &l->rx, l->tick, &l->d, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res == -ETIMEDOUT)
			l->tick = pw_time_now() + PXD_TICK_NS;
		else if (res >= 0)
			take(l, &l->d);
		else if (res == -EBADF || res == -ECANCELED || res == -ENOMEM ||
			 res == -EINVAL)
			l->stopped = true;
	}
	if (!l->cancelled) {
		l->cancelled = true;
		pw_udp_recv_cancel(&l->rx);
		wake_all(&u->sh[l->idx]);
	}
	if (pw_udp_recv_in_flight(&l->rx))
		return PW_PENDING;
	listener_end(l);
	return pw_ready(cx, 0);
}

static void listener_drop(void *state)
{
	struct pxd_listener *l = state;

	if (l->started)
		pw_udp_recv_cancel(&l->rx);
	if (!l->ended)
		listener_end(l);
}

/* ---- the API -------------------------------------------------------- */

void pw_proxy_udp_opts_init(struct pw_proxy_udp_opts *o)
{
	if (!o)
		return;
	o->idle_ns = 30 * PW_NSEC_PER_SEC;
	o->max_flows = 65536;
	o->responses = 0;
}

static bool ip_family(const struct pw_net_addr *a)
{
	return a->u.sa.sa_family == AF_INET || a->u.sa.sa_family == AF_INET6;
}

static int udp_check(const struct pw_proxy_config *cfg,
		     const struct pw_proxy_udp_opts *o)
{
	if (!cfg->nupstreams || cfg->nupstreams > NSRV ||
	    !ip_family(&cfg->listen) || o->idle_ns < PW_NSEC_PER_MSEC ||
	    !o->max_flows || o->max_flows > (1ull << 24))
		return -EINVAL;
	for (unsigned i = 0; i < cfg->nupstreams; i++)
		if (!ip_family(&cfg->upstream[i]))
			return -EINVAL;
	return 0;
}

/* The per-shard slots and their flow tables. */
static int shards_init(struct pw_proxy_udp *u)
{
	uint64_t nb = 64;

	while (nb < u->o.max_flows / 4)
		nb <<= 1;
	u->sh = aligned_alloc(64, u->nshards * sizeof(*u->sh));
	if (!u->sh)
		return -ENOMEM;
	memset(u->sh, 0, u->nshards * sizeof(*u->sh));
	for (unsigned i = 0; i < u->nshards; i++) {
		struct pxd_shard *sh = &u->sh[i];

		sh->bucket = calloc(nb, sizeof(*sh->bucket));
		if (!sh->bucket)
			return -ENOMEM;
		sh->mask = nb - 1;
		sh->queued_max =
			u->cfg.net.buf_count / 2 ? u->cfg.net.buf_count / 2 : 1;
		sh->uv = pxu_view(u->up, (int)i);
	}
	return 0;
}

static void udp_free(struct pw_proxy_udp *u)
{
	for (unsigned i = 0; u->sh && i < u->nshards; i++)
		free(u->sh[i].bucket);
	free(u->sh);
	if (u->up)
		pxu_destroy(u->up);
	free(u);
}

/* The runtime, the sockets, the tables and a listener per shard. */
static int udp_run(struct pw_proxy_udp *u, const struct pw_config *rt)
{
	struct pw_udp_opts so = { .sndbuf = (int)u->cfg.sndbuf };
	int n, err;

	err = pw_runtime_create(&u->rt, rt);
	if (err)
		return err;
	n = pw_runtime_shards(u->rt);
	u->nshards = n > 0 ? (unsigned)n : 1;
	u->up = pxu_create(&u->cfg, u->nshards);
	if (!u->up || shards_init(u))
		return -ENOMEM;
	if (u->cfg.listen_flags & PW_NET_LISTEN_SHARE_PORT)
		so.flags |= PW_UDP_SHARE_PORT;
	err = pw_udp_socket_create(&u->sock, u->rt, &u->cfg.listen, &so);
	if (err)
		return err;
	pw_udp_socket_addr(u->sock, &u->addr);
	/* Relaxed: the spawns publish it to the shards. */
	atomic_store_explicit(&u->live, u->nshards, memory_order_relaxed);
	for (unsigned i = 0; i < u->nshards; i++) {
		struct pxd_listener l;

		memset(&l, 0, sizeof(l));
		l.u = u;
		l.idx = i;
		err = pw_runtime_spawn(u->rt, i, listener_poll, &l, sizeof(l),
				       listener_drop);
		if (err) {
			/* Relaxed: as above; those not spawned never end. */
			atomic_fetch_sub_explicit(&u->live, u->nshards - i,
						  memory_order_relaxed);
			return err;
		}
	}
	return 0;
}

int pw_proxy_udp_start(struct pw_proxy_udp **up,
		       const struct pw_proxy_config *cfg,
		       const struct pw_proxy_udp_opts *o)
{
	struct pw_proxy_udp_opts def;
	struct pw_proxy_udp *u;
	int err;

	pw_proxy_udp_opts_init(&def);
	if (!up || !cfg)
		return -EINVAL;
	if (!o)
		o = &def;
	if ((err = udp_check(cfg, o)))
		return err;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->cfg = *cfg;
	u->cfg.rt.cpus = NULL; /* used by pw_runtime_create() only */
	u->cfg.check_interval_ns = 0;
	u->cfg.resolve_interval_ns = 0;
	u->cfg.max_fails = 0;
	u->o = *o;
	if (getrandom(&u->seed, sizeof(u->seed), GRND_NONBLOCK) !=
	    sizeof(u->seed))
		u->seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^
			  (uint64_t)(uintptr_t)u;
	err = udp_run(u, &cfg->rt);
	if (err) {
		if (u->rt)
			pw_runtime_destroy(u->rt);
		if (u->sock)
			pw_udp_socket_destroy(u->sock);
		udp_free(u);
		return err;
	}
	*up = u;
	return 0;
}

int pw_proxy_udp_addr(const struct pw_proxy_udp *u, struct pw_net_addr *out)
{
	if (!u || !out)
		return -EINVAL;
	*out = u->addr;
	return 0;
}

struct pw_runtime *pw_proxy_udp_runtime(struct pw_proxy_udp *u)
{
	return u ? u->rt : NULL;
}

static uint64_t sum(const struct pw_proxy_udp *u, int i)
{
	uint64_t v = 0;

	for (unsigned k = 0; k < u->nshards; k++)
		/* Relaxed: statistics (see struct pxd_shard). */
		v += atomic_load_explicit(&u->sh[k].c[i], memory_order_relaxed);
	return v;
}

int pw_proxy_udp_stats(const struct pw_proxy_udp *u,
		       struct pw_proxy_udp_stats *out)
{
	uint64_t drops = 0;

	if (!u || !out)
		return -EINVAL;
	for (unsigned k = 0; u->sock && k < u->nshards; k++) {
		uint64_t v;

		if (!pw_udp_drops(pw_udp_socket_fd(u->sock, k), &v))
			drops += v;
	}
	out->flows_created = sum(u, D_CREATED);
	out->flows_active = out->flows_created - sum(u, D_CLOSED);
	out->flows_expired = sum(u, D_EXPIRED);
	out->flows_answered = sum(u, D_ANSWERED);
	out->flows_drained = sum(u, D_DRAINED);
	out->flows_refused = sum(u, D_REFUSED);
	out->flows_failed = sum(u, D_FAILED);
	out->flow_errors = sum(u, D_FLOW_ERR);
	out->dgrams_in = sum(u, D_IN);
	out->dgrams_up = sum(u, D_UP);
	out->bytes_up = sum(u, D_BYTES_UP);
	out->replies_in = sum(u, D_REPLIES);
	out->dgrams_down = sum(u, D_DOWN);
	out->bytes_down = sum(u, D_BYTES_DOWN);
	out->trunc_up = sum(u, D_TRUNC_UP);
	out->trunc_down = sum(u, D_TRUNC_DOWN);
	out->send_err_up = sum(u, D_ERR_UP);
	out->send_err_down = sum(u, D_ERR_DOWN);
	out->backlog_dropped = sum(u, D_BACKLOG);
	out->closed_dropped = sum(u, D_CLOSED_DROP);
	out->upstream_errors = sum(u, D_UPSTREAM_ERR);
	out->kernel_drops = drops + sum(u, D_FLOW_KDROPS);
	return 0;
}

int pw_proxy_udp_drain(struct pw_proxy_udp *u)
{
	struct timespec ms = { 0, PW_NSEC_PER_MSEC };

	if (!u)
		return -EINVAL;
	/* Release: pairs with the acquire loads in drain_asked() and
	 * flow_answered(). */
	atomic_store_explicit(&u->draining, 1, memory_order_release);
	/* Each listener looks at the flag at its next datagram or tick. */
	for (int i = 0; i < 5000; i++) {
		/* Acquire: pairs with the release sub in listener_end(). */
		if (!atomic_load_explicit(&u->live, memory_order_acquire))
			return 0;
		nanosleep(&ms, NULL);
	}
	return -ETIMEDOUT;
}

int pw_proxy_udp_destroy(struct pw_proxy_udp *u,
			 struct pw_proxy_udp_stats *final)
{
	struct pw_proxy_udp_stats st;

	if (!u)
		return -EINVAL;
	pw_runtime_destroy(u->rt);
	pw_proxy_udp_stats(u, &st);
	if (final)
		*final = st;
	pw_udp_socket_destroy(u->sock);
	udp_free(u);
	return 0;
}

int pw_proxy_udp_stats_line(const struct pw_proxy_udp_stats *s, char *buf,
			    size_t size)
{
	return snprintf(
		buf, size,
		"flows=%llu created=%llu expired=%llu answered=%llu "
		"in=%llu up=%llu replies=%llu down=%llu dropped=(cap=%llu "
		"flow=%llu trunc=%llu/%llu send=%llu/%llu backlog=%llu "
		"closed=%llu kernel=%llu) upstream_errors=%llu",
		(unsigned long long)s->flows_active,
		(unsigned long long)s->flows_created,
		(unsigned long long)s->flows_expired,
		(unsigned long long)s->flows_answered,
		(unsigned long long)s->dgrams_in,
		(unsigned long long)s->dgrams_up,
		(unsigned long long)s->replies_in,
		(unsigned long long)s->dgrams_down,
		(unsigned long long)s->flows_refused,
		(unsigned long long)s->flow_errors,
		(unsigned long long)s->trunc_up,
		(unsigned long long)s->trunc_down,
		(unsigned long long)s->send_err_up,
		(unsigned long long)s->send_err_down,
		(unsigned long long)s->backlog_dropped,
		(unsigned long long)s->closed_dropped,
		(unsigned long long)s->kernel_drops,
		(unsigned long long)s->upstream_errors);
}

/* ---- the counters hook ---------------------------------------------- */

static void one(struct pw_expo *e, const char *name, const char *help,
		enum pw_expo_type type, uint64_t v)
{
	pw_expo_metric(e, name, help, type);
	pw_expo_sample(e, NULL, v);
}

/* A metric with one label @l taking the values @lv[0..n). */
static void labelled(struct pw_expo *e, const char *name, const char *help,
		     const char *l, const char *const *lv, const uint64_t *v,
		     int n)
{
	pw_expo_metric(e, name, help, PW_EXPO_COUNTER);
	for (int i = 0; i < n; i++)
		pw_expo_sample(e, (const char *[]){ l, lv[i], NULL }, v[i]);
}

static void flow_counters(struct pw_expo *e, const struct pw_proxy_udp_stats *s)
{
	one(e, "udp_flows_created", "UDP flows opened (a new client address).",
	    PW_EXPO_COUNTER, s->flows_created);
	one(e, "udp_flows_active", "UDP flows open now.", PW_EXPO_GAUGE,
	    s->flows_active);
	labelled(e, "udp_flows_closed",
		 "UDP flows closed, by cause: idle (--udp-idle), answered "
		 "(--udp-responses or the drain), drain (cut at the drain "
		 "deadline), error (of the flow's socket).",
		 "cause",
		 (const char *[]){ "idle", "answered", "drain", "error" },
		 (const uint64_t[]){ s->flows_expired, s->flows_answered,
				     s->flows_drained, s->flows_failed },
		 4);
	one(e, "udp_flows_refused",
	    "Datagrams of new clients dropped at --udp-max-flows.",
	    PW_EXPO_COUNTER, s->flows_refused);
	one(e, "udp_flow_errors",
	    "Datagrams of new clients dropped: no socket or task for the "
	    "flow.",
	    PW_EXPO_COUNTER, s->flow_errors);
}

static void dgram_counters(struct pw_expo *e,
			   const struct pw_proxy_udp_stats *s)
{
	static const char *const dir[] = { "up", "down" };

	labelled(e, "udp_datagrams_received",
		 "Datagrams received: up, from clients; down, from "
		 "upstreams.",
		 "direction", dir,
		 (const uint64_t[]){ s->dgrams_in, s->replies_in }, 2);
	labelled(e, "udp_datagrams_forwarded",
		 "Datagrams sent on: up, to an upstream; down, to a client.",
		 "direction", dir,
		 (const uint64_t[]){ s->dgrams_up, s->dgrams_down }, 2);
	labelled(e, "udp_bytes", "Payload bytes forwarded, by direction.",
		 "direction", dir,
		 (const uint64_t[]){ s->bytes_up, s->bytes_down }, 2);
	labelled(e, "udp_truncated",
		 "Datagrams dropped: longer than a receive buffer holds "
		 "(--buffer-size less 112).",
		 "direction", dir,
		 (const uint64_t[]){ s->trunc_up, s->trunc_down }, 2);
	labelled(e, "udp_send_errors", "Datagrams dropped: the send failed.",
		 "direction", dir,
		 (const uint64_t[]){ s->send_err_up, s->send_err_down }, 2);
	labelled(e, "udp_dropped",
		 "Client datagrams dropped: the flow's queue or the shard's "
		 "share of the ring full (backlog), queued when the flow was "
		 "cut (closed); datagrams the kernel dropped for a full "
		 "socket queue (kernel).",
		 "reason", (const char *[]){ "backlog", "closed", "kernel" },
		 (const uint64_t[]){ s->backlog_dropped, s->closed_dropped,
				     s->kernel_drops },
		 3);
	one(e, "udp_upstream_errors",
	    "Errors upstream sockets reported (ICMP refused, unreachable).",
	    PW_EXPO_COUNTER, s->upstream_errors);
}

/* Datagrams of upstream @slot in direction @down, summed over shards. */
static uint64_t dg_sum(const struct pw_proxy_udp *u, int slot, int down)
{
	uint64_t v = 0;

	for (unsigned k = 0; k < u->nshards; k++)
		/* Relaxed: statistics (see struct pxd_shard). */
		v += atomic_load_explicit(&u->sh[k].dg[slot][down],
					  memory_order_relaxed);
	return v;
}

/* Each upstream: flows, active flows, datagrams each way. The table is
 * static (no re-resolution), so its n servers are the slots 0..n-1. */
static void upstream_counters(struct pw_proxy_udp *u, struct pw_expo *e)
{
	struct pw_proxy_upstream_stats *s = calloc(NSRV, sizeof(*s));
	int n = s ? pxu_stats(u->up, s, NSRV) : 0;

	n = n > NSRV ? NSRV : n;
	pw_expo_metric(e, "udp_upstream_flows", "Flows opened to the server.",
		       PW_EXPO_COUNTER);
	for (int i = 0; i < n; i++)
		pw_expo_sample(e,
			       (const char *[]){ "upstream", s[i].addr, "name",
						 s[i].name, NULL },
			       s[i].connects);
	pw_expo_metric(e, "udp_upstream_active_flows",
		       "Flows open to the server now.", PW_EXPO_GAUGE);
	for (int i = 0; i < n; i++)
		pw_expo_sample(e,
			       (const char *[]){ "upstream", s[i].addr, "name",
						 s[i].name, NULL },
			       s[i].active);
	pw_expo_metric(e, "udp_upstream_datagrams",
		       "Datagrams sent to the server (up) and from it to "
		       "clients (down).",
		       PW_EXPO_COUNTER);
	for (int i = 0; i < n; i++)
		for (int d = 0; d < 2; d++)
			pw_expo_sample(
				e,
				(const char *[]){ "upstream", s[i].addr, "name",
						  s[i].name, "direction",
						  d ? "down" : "up", NULL },
				dg_sum(u, i, d));
	free(s);
}

void pw_proxy_udp_counters(struct pw_proxy_udp *u, struct pw_expo *e)
{
	struct pw_proxy_udp_stats st;

	if (!u || pw_proxy_udp_stats(u, &st))
		return;
	flow_counters(e, &st);
	dgram_counters(e, &st);
	upstream_counters(u, e);
}
