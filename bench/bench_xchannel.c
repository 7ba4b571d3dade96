/* SPDX-License-Identifier: MIT */
/*
 * bench_xchannel.c - items per second through a channel: the cross-shard
 * channel from a producer task on shard 1 to a consumer task on shard 0
 * (two CPUs), the same channel with both tasks on one shard, the local
 * channel beside it, and the mesh alternative (pw_submit_to() of each
 * item into a local channel, with a credit counter as backpressure).
 * Each iteration is one item received; 8-byte items, capacity 256.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "bench/bench.h"
#include "pinwheel.h"

#define BATCH 256
#define CAP   256

/* A runtime of @shards shards on CPUs 0 and 1 that poll @idle_poll ns
 * before they sleep; NULL after a skip. */
static struct pw_runtime *bench_rt(struct pw_bench *b, unsigned shards,
				   uint64_t idle_poll)
{
	static const int cpus[2] = { 0, 1 };
	struct pw_config cfg;
	struct pw_runtime *rt;

	if (shards > 1 && sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		pw_bench_skip(b, "needs 2 CPUs");
		return NULL;
	}
	pw_config_init(&cfg);
	cfg.shards = shards;
	cfg.cpus = cpus;
	cfg.idle_poll_ns = idle_poll;
	int err = pw_runtime_create(&rt, &cfg);
	if (err) {
		pw_bench_skip(b, pw_strerror_setup(err));
		return NULL;
	}
	return rt;
}

/* ---- the cross-shard channel ----------------------------------------- */

/* Sends 0, 1, 2, ... until the receiver is gone; with `spin`, by
 * pw_xchan_try_send() and a yield when full (never sleeping, as the mesh
 * producer below), else by pw_xchan_send_poll(). */
struct xproducer {
	struct pw_xchan_tx tx;
	uint64_t next;
	bool spin;
};

static enum pw_poll xproducer_poll(struct pw_cx *cx, void *state)
{
	struct xproducer *p = state;
	int res;

	while (p->spin) {
		res = pw_xchan_try_send(&p->tx, &p->next);
		if (res == -EAGAIN)
			return pw_yield(cx);
		if (res) {
			pw_xchan_tx_drop(&p->tx);
			return pw_ready(cx, 0);
		}
		p->next++;
		if (!pw_coop_proceed(cx))
			return PW_PENDING;
	}
	for (;;) {
		if (pw_xchan_send_poll(cx, &p->tx, &p->next, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res) {
			pw_xchan_tx_drop(&p->tx);
			return pw_ready(cx, 0);
		}
		p->next++;
	}
}

static void xproducer_drop(void *state)
{
	struct xproducer *p = state;

	pw_xchan_tx_drop(&p->tx);
}

/* Receives BATCH items per timed batch; checks their order. */
struct xconsumer {
	struct pw_bench *b;
	struct pw_xchan_rx rx;
	unsigned shard; /* where the producer runs */
	bool started;
	int left;
	uint64_t want;
	struct xproducer p;
};

static enum pw_poll xconsumer_poll(struct pw_cx *cx, void *state)
{
	struct xconsumer *c = state;
	uint64_t v;
	int res;

	if (!c->started) {
		c->started = true;
		if (pw_spawn_on(c->shard, xproducer_poll, &c->p, sizeof(c->p),
				xproducer_drop))
			return pw_ready(cx, -ENOMEM);
	}
	for (;;) {
		if (c->left == 0) {
			if (!pw_bench_run(c->b, BATCH)) {
				struct pw_xchan_stats st;
				pw_xchan_stats(&c->rx, &st);
				pw_bench_counter(c->b, "full_waits",
						 (double)st.full_waits, false);
				pw_xchan_rx_drop(&c->rx);
				return pw_ready(cx, 0);
			}
			c->left = BATCH;
		}
		if (pw_xchan_recv_poll(cx, &c->rx, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res != 1 || v != c->want++)
			return pw_ready(cx, -EPROTO);
		c->left--;
	}
}

static void run_xchan(struct pw_bench *b, unsigned shards, uint64_t idle_poll,
		      bool spin)
{
	struct pw_runtime *rt = bench_rt(b, shards, idle_poll);
	if (!rt)
		return;
	struct xconsumer c = { .b = b, .shard = shards - 1, .p.spin = spin };
	int64_t res = -1;

	if (pw_xchan_open(sizeof(uint64_t), CAP, &c.p.tx, &c.rx) == 0)
		pw_block_on(rt, xconsumer_poll, &c, &res);
	pw_bench_items(b, (int64_t)c.want);
	struct pw_shard_stats st;
	pw_runtime_stats(rt, 0, &st);
	pw_bench_counter(b, "msg_rings", (double)st.msg_rings, false);
	pw_runtime_destroy(rt);
	if (res)
		pw_bench_skip(b, "the channel failed");
}

/* The idle poll of the cross-shard runs: 0 (a shard with nothing to do
 * sleeps in the kernel at once, and each side's wake of the other costs a
 * MSG_RING and a scheduler wake-up), or 200 us (Seastar's default). */
static const int64_t idle_polls[] = { 0, 200000 };

/* Producer on shard 1 (CPU 1), consumer on shard 0 (CPU 0). */
static void bm_xchan_cross_shard(struct pw_bench *b)
{
	run_xchan(b, 2, (uint64_t)pw_bench_arg(b), false);
}
PW_BENCH_ARGS(bm_xchan_cross_shard, idle_polls);

/* The same with a producer that never sleeps (try_send, yield when
 * full): the data path alone, on the mesh producer's terms. */
static void bm_xchan_cross_shard_spin(struct pw_bench *b)
{
	run_xchan(b, 2, (uint64_t)pw_bench_arg(b), true);
}
PW_BENCH_ARGS(bm_xchan_cross_shard_spin, idle_polls);

/* Both on one shard: the atomics' price without a second core. */
static void bm_xchan_same_shard(struct pw_bench *b)
{
	run_xchan(b, 1, 0, false);
}
PW_BENCH(bm_xchan_same_shard);

/* ---- the local channel, one shard ------------------------------------ */

static struct pw_channel lch;
static uint64_t lstore[CAP];

struct lproducer {
	struct pw_channel_sender snd;
	uint64_t next;
};

static enum pw_poll lproducer_poll(struct pw_cx *cx, void *state)
{
	struct lproducer *p = state;
	int res;

	for (;;) {
		if (pw_channel_send_poll(cx, &lch, &p->snd, &p->next, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res)
			return pw_ready(cx, 0);
		p->next++;
	}
}

static void lproducer_drop(void *state)
{
	struct lproducer *p = state;

	pw_channel_send_cancel(&p->snd);
}

struct lconsumer {
	struct pw_bench *b;
	bool started;
	int left;
	uint64_t want;
};

static enum pw_poll lconsumer_poll(struct pw_cx *cx, void *state)
{
	struct lconsumer *c = state;
	uint64_t v;
	int res;

	if (!c->started) {
		struct lproducer p = { 0 };
		c->started = true;
		if (pw_spawn(NULL, lproducer_poll, &p, sizeof(p),
			     lproducer_drop))
			return pw_ready(cx, -ENOMEM);
	}
	for (;;) {
		if (c->left == 0) {
			if (!pw_bench_run(c->b, BATCH)) {
				pw_channel_close_rx(&lch);
				return pw_ready(cx, 0);
			}
			c->left = BATCH;
		}
		if (pw_channel_recv_poll(cx, &lch, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res != 1 || v != c->want++)
			return pw_ready(cx, -EPROTO);
		c->left--;
	}
}

static void bm_channel_local(struct pw_bench *b)
{
	struct pw_runtime *rt = bench_rt(b, 1, 0);
	if (!rt)
		return;
	struct lconsumer c = { .b = b };
	int64_t res = -1;

	pw_channel_init(&lch, sizeof(uint64_t), CAP, lstore);
	pw_block_on(rt, lconsumer_poll, &c, &res);
	pw_bench_items(b, (int64_t)c.want);
	pw_runtime_destroy(rt);
	if (res)
		pw_bench_skip(b, "the channel failed");
}
PW_BENCH(bm_channel_local);

/* ---- the mesh alternative -------------------------------------------- */

/* Each item is a pw_submit_to() from shard 1 whose function stores it in
 * a local channel on shard 0; the producer keeps at most CAP items in
 * flight with a credit counter the consumer refills. */
static _Atomic int64_t credits;
static _Atomic bool mesh_stop;

static void mesh_store(void *arg)
{
	uint64_t v = (uint64_t)(uintptr_t)arg;

	pw_channel_try_send(&lch, &v); /* credits keep room for it */
}

static enum pw_poll mproducer_poll(struct pw_cx *cx, void *state)
{
	uint64_t *next = state;

	/* relaxed: a stop flag, read at last. */
	while (!atomic_load_explicit(&mesh_stop, memory_order_relaxed)) {
		/* relaxed: the credit only bounds the items in flight; the
		 * mesh orders the items themselves. */
		if (atomic_load_explicit(&credits, memory_order_relaxed) <= 0)
			return pw_yield(cx);
		atomic_fetch_sub_explicit(&credits, 1, memory_order_relaxed);
		if (pw_submit_to(0, mesh_store, (void *)(uintptr_t)(*next)++))
			return pw_ready(cx, -ENOMEM);
		if (!pw_coop_proceed(cx))
			return PW_PENDING;
	}
	return pw_ready(cx, 0);
}

static enum pw_poll mconsumer_poll(struct pw_cx *cx, void *state)
{
	struct lconsumer *c = state;
	uint64_t v;
	int res;

	if (!c->started) {
		uint64_t zero = 0;
		c->started = true;
		if (pw_spawn_on(1, mproducer_poll, &zero, sizeof(zero), NULL))
			return pw_ready(cx, -ENOMEM);
	}
	for (;;) {
		if (c->left == 0) {
			if (!pw_bench_run(c->b, BATCH)) {
				atomic_store(&mesh_stop, true);
				return pw_ready(cx, 0);
			}
			c->left = BATCH;
		}
		if (pw_channel_recv_poll(cx, &lch, &v, &res) == PW_PENDING)
			return PW_PENDING;
		if (res != 1 || v != c->want++)
			return pw_ready(cx, -EPROTO);
		/* relaxed: see mproducer_poll(). */
		atomic_fetch_add_explicit(&credits, 1, memory_order_relaxed);
		c->left--;
	}
}

static void bm_mesh_submit_into_local_channel(struct pw_bench *b)
{
	struct pw_runtime *rt = bench_rt(b, 2, (uint64_t)pw_bench_arg(b));
	if (!rt)
		return;
	struct lconsumer c = { .b = b };
	int64_t res = -1;

	atomic_store(&credits, CAP);
	atomic_store(&mesh_stop, false);
	pw_channel_init(&lch, sizeof(uint64_t), CAP, lstore);
	pw_block_on(rt, mconsumer_poll, &c, &res);
	pw_bench_items(b, (int64_t)c.want);
	pw_runtime_destroy(rt);
	if (res)
		pw_bench_skip(b, "the mesh path failed");
}
PW_BENCH_ARGS(bm_mesh_submit_into_local_channel, idle_polls);
