/* SPDX-License-Identifier: MIT */
/*
 * test_nomem.c - every allocation failure path, taken on purpose with the
 * library's fault injection (core/fault.h): the caller gets the exact
 * error, nothing half-made stays behind (LeakSanitizer in `make asan`,
 * open fds here), no task or callback runs or is lost, and the same call
 * succeeds once nothing fails any more.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "tests/common.h"
#include "core/fault.h"
#include "pinwheel/blocking.h"
#include "pinwheel/hist.h"
#include "pinwheel/metrics.h"
#include "pinwheel/net.h"
#include "pinwheel/topo.h"

static struct pw_config config(unsigned shards)
{
	struct pw_config cfg;

	pw_test_config_init(&cfg);
	cfg.shards = shards;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE;
	return cfg;
}

/* The sites pw_runtime_create() allocates at. */
static const enum pw__fault_site create_sites[] = {
	PW__FAULT_RUNTIME, PW__FAULT_MESH, PW__FAULT_RING,
	PW__FAULT_THREAD,  PW__FAULT_TOPO,
};
#define NCREATE (sizeof(create_sites) / sizeof(create_sites[0]))

/*
 * pw_runtime_create() with the Nth of its allocations failing, for every
 * N until it needs no more: each time -ENOMEM (-EAGAIN for a thread, as
 * pthread_create() says), no runtime, no fd left open (leaks are
 * LeakSanitizer's); then it succeeds. Every kind of allocation it makes
 * failed at least once.
 */
Test(nomem, create_fails_at_every_allocation)
{
	struct pw_config cfg = config(2);
	unsigned long failed_at[PW__FAULT_NSITES] = { 0 };
	int fds = pw_test_open_fds();
	unsigned long n;

	for (n = 0; n < 200; n++) {
		struct pw_runtime *rt = (void *)1;
		pw__fault_arm(PW__FAULT_ANY, n, 1);
		int err = pw_runtime_create(&rt, &cfg);
		pw__fault_disarm();
		unsigned long failed = pw__fault_failed(PW__FAULT_ANY);
		if (!failed) {
			cr_assert_eq(err, 0, "nothing failed, create: %d", err);
			cr_assert_eq(pw__fault_seen(PW__FAULT_ANY), n);
			cr_assert_eq(pw_runtime_destroy(rt), 0);
			break;
		}
		cr_assert_eq(failed, 1);
		int want = pw__fault_failed(PW__FAULT_THREAD) ? -EAGAIN :
								-ENOMEM;
		cr_assert_eq(err, want, "allocation %lu failed: create %d", n,
			     err);
		cr_assert_null(rt, "allocation %lu failed: a runtime", n);
		cr_assert_eq(pw_test_open_fds(), fds,
			     "allocation %lu failed: fds left open", n);
		for (int s = 0; s < PW__FAULT_NSITES; s++)
			failed_at[s] += pw__fault_failed(s);
	}
	cr_assert_lt(n, 200, "create still allocates after 200 allocations");
	for (size_t i = 0; i < NCREATE; i++)
		cr_expect_gt(failed_at[create_sites[i]], 0,
			     "site %d never failed", create_sites[i]);
	cr_assert_eq(pw_test_open_fds(), fds);
}

/*
 * What a 2-shard runtime allocates, site by site: the hooks are where
 * they belong, and nothing else asks while it is created.
 */
Test(nomem, create_counts_its_allocations)
{
	struct pw_config cfg = config(2);
	struct pw_runtime *rt = NULL;
	bool steal = pw_test_steal();

	pw__fault_arm(PW__FAULT_ANY, ULONG_MAX, 0);
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	pw__fault_disarm();
	/* runtime, shard table, cpus, nodes, placement, 2 shards; stealing:
	 * its state, sleepers, 2 workers */
	cr_expect_eq(pw__fault_seen(PW__FAULT_RUNTIME), steal ? 11 : 7);
	/* the ring region, then each shard's out and in tables */
	cr_expect_eq(pw__fault_seen(PW__FAULT_MESH), 5);
	/* each shard's eventfd and io_uring */
	cr_expect_eq(pw__fault_seen(PW__FAULT_RING), 4);
	cr_expect_eq(pw__fault_seen(PW__FAULT_THREAD), 2);
	/* the topology (4), placement scratch (3) */
	cr_expect_eq(pw__fault_seen(PW__FAULT_TOPO), 7);
	cr_expect_eq(pw__fault_seen(PW__FAULT_SLAB), 0);
	cr_expect_eq(pw__fault_failed(PW__FAULT_ANY), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- tasks ----------------------------------------------------------- */

static atomic_int polls, drops;

static enum pw_poll counted_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	atomic_fetch_add(&polls, 1);
	return pw_ready(cx, 7);
}

static void counted_drop(void *state)
{
	(void)state;
	atomic_fetch_add(&drops, 1);
}

/* State large enough for a size class no task used yet: its first spawn
 * must carve a new slab chunk. */
struct big {
	char pad[3000];
};

struct spawner {
	int step;
	struct pw_join j;
	int err_fail, err_ok;
	bool join_cleared;
	int polls_after_fail, drops_after_fail;
	unsigned long failed;
	int64_t res;
};

static enum pw_poll spawner_poll(struct pw_cx *cx, void *state)
{
	struct spawner *s = state;
	struct big b = { { 0 } };

	if (s->step == 0) {
		s->j.task = (void *)1;
		pw__fault_arm(PW__FAULT_SLAB, 0, 1);
		s->err_fail = pw_spawn(&s->j, counted_poll, &b, sizeof(b),
				       counted_drop);
		pw__fault_disarm();
		s->failed = pw__fault_failed(PW__FAULT_SLAB);
		s->join_cleared = s->j.task == NULL;
		s->err_ok = pw_spawn(&s->j, counted_poll, &b, sizeof(b),
				     counted_drop);
		s->polls_after_fail = atomic_load(&polls);
		s->drops_after_fail = atomic_load(&drops);
		s->step = 1;
	}
	if (pw_join_poll(cx, &s->j, &s->res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, 0);
}

/*
 * pw_spawn() whose slab must grow and cannot: -ENOMEM, a cleared join
 * handle, neither poll nor drop called; the same spawn then succeeds and
 * its task runs exactly once.
 */
Test(nomem, spawn_slab_refill)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct spawner s = { 0 };

	cr_assert_eq(pw_test_block_on(rt, spawner_poll, &s), 0);
	cr_assert_eq(s.failed, 1);
	cr_assert_eq(s.err_fail, -ENOMEM);
	cr_assert(s.join_cleared);
	cr_assert_eq(s.polls_after_fail, 0);
	cr_assert_eq(s.drops_after_fail, 0);
	cr_assert_eq(s.err_ok, 0);
	cr_assert_eq(s.res, 7);
	cr_assert_eq(atomic_load(&polls), 1);
	cr_assert_eq(atomic_load(&drops), 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

struct on_state {
	int err_fail, err_ok;
	unsigned long failed;
};

static enum pw_poll spawn_on_poll(struct pw_cx *cx, void *state)
{
	struct on_state *o = state;
	struct big b = { { 0 } };

	/* The staged copy of a state comes from the sender's aux slab. */
	pw__fault_arm(PW__FAULT_SLAB, 0, 1);
	o->err_fail = pw_spawn_on(1, counted_poll, &b, sizeof(b), counted_drop);
	pw__fault_disarm();
	o->failed = pw__fault_failed(PW__FAULT_SLAB);
	o->err_ok = pw_spawn_on(1, counted_poll, &b, sizeof(b), counted_drop);
	return pw_ready(cx, 0);
}

/*
 * pw_spawn_on() that cannot stage the state it copies: -ENOMEM, nothing
 * reaches the other shard; the same call then succeeds and the task runs
 * there once.
 */
Test(nomem, spawn_on_stage)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct on_state o = { 0 };

	cr_assert_eq(pw_test_block_on(rt, spawn_on_poll, &o), 0);
	cr_assert_eq(o.failed, 1);
	cr_assert_eq(o.err_fail, -ENOMEM);
	cr_assert_eq(o.err_ok, 0);
	PW_TEST_WAIT_UNTIL(atomic_load(&drops) == 1, PW_TEST_WAIT_SECS,
			   "the spawned task finished: %d polls, %d drops",
			   atomic_load(&polls), atomic_load(&drops));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&polls), 1);
	cr_assert_eq(atomic_load(&drops), 1);
}

/*
 * pw_runtime_spawn() whose first allocation fails (the message to the
 * shard; in stealing mode the foreign slab's chunk): -ENOMEM to the
 * caller, nothing called; then it succeeds and the task runs once.
 */
Test(nomem, runtime_spawn)
{
	struct pw_runtime *rt = pw_test_runtime(2);

	pw__fault_arm(PW__FAULT_ANY, 0, 1);
	int err = pw_runtime_spawn(rt, 1, counted_poll, NULL, 0, counted_drop);
	pw__fault_disarm();
	cr_assert_eq(err, -ENOMEM);
	cr_assert_eq(pw__fault_failed(pw_test_steal() ? PW__FAULT_SLAB :
							PW__FAULT_SPAWN),
		     1);
	cr_assert_eq(pw_runtime_spawn(rt, 1, counted_poll, NULL, 0,
				      counted_drop),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&drops) == 1, PW_TEST_WAIT_SECS,
			   "the spawned task finished: %d polls, %d drops",
			   atomic_load(&polls), atomic_load(&drops));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&polls), 1);
	cr_assert_eq(atomic_load(&drops), 1);
}

/*
 * Shard mode: pw_runtime_spawn() has returned 0 when the shard finds its
 * slab cannot grow. The task is never polled and its drop hook runs
 * exactly once, so what its state owns is not lost; the next spawn runs.
 */
Test(nomem, runtime_spawn_shard_slab)
{
	PW_TEST_SHARD_ONLY();
	struct pw_runtime *rt = pw_test_runtime(1);

	pw__fault_arm(PW__FAULT_SLAB, 0, 1);
	cr_assert_eq(pw_runtime_spawn(rt, 0, counted_poll, NULL, 0,
				      counted_drop),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&drops) == 1, PW_TEST_WAIT_SECS,
			   "the failed spawn's drop hook: %d drops",
			   atomic_load(&drops));
	pw__fault_disarm();
	cr_assert_eq(pw__fault_failed(PW__FAULT_SLAB), 1);
	cr_assert_eq(atomic_load(&polls), 0);
	cr_assert_eq(pw_runtime_spawn(rt, 0, counted_poll, NULL, 0,
				      counted_drop),
		     0);
	PW_TEST_WAIT_UNTIL(atomic_load(&drops) == 2, PW_TEST_WAIT_SECS,
			   "the second task finished: %d polls, %d drops",
			   atomic_load(&polls), atomic_load(&drops));
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(atomic_load(&polls), 1);
	cr_assert_eq(atomic_load(&drops), 2);
}

static enum pw_poll block_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	atomic_fetch_add(&polls, 1);
	return pw_ready(cx, 42);
}

/*
 * pw_block_on() whose task cannot be made (the shard's slab, or in
 * stealing mode the foreign slab): -ENOMEM, the function never polled;
 * then it runs and returns its result.
 */
Test(nomem, block_on_slab)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int64_t res = -1;

	pw__fault_arm(PW__FAULT_SLAB, 0, 1);
	int err = pw_block_on(rt, block_poll, NULL, &res);
	pw__fault_disarm();
	cr_assert_eq(err, -ENOMEM);
	cr_assert_eq(res, -1);
	cr_assert_eq(pw__fault_failed(PW__FAULT_SLAB), 1);
	cr_assert_eq(atomic_load(&polls), 0);
	cr_assert_eq(pw_block_on(rt, block_poll, NULL, &res), 0);
	cr_assert_eq(res, 42);
	cr_assert_eq(atomic_load(&polls), 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- the mesh's overflow ------------------------------------------- */

#define OVF_LIMIT 4096

static atomic_bool blocker_in, release;
static atomic_int ran[OVF_LIMIT + 1];
static atomic_bool marked;

/* Holds shard 1's loop, so nothing drains its incoming rings. */
static enum pw_poll blocker_poll(struct pw_cx *cx, void *state)
{
	uint64_t end = pw_test_now_ns() + PW_TEST_WAIT_SECS * 1000000000ull;

	(void)state;
	atomic_store(&blocker_in, true);
	while (!atomic_load(&release))
		if (pw_test_now_ns() > end)
			return pw_ready(cx, -ETIMEDOUT);
	return pw_ready(cx, 0);
}

/* A task spawned by number (the state pointer is the number). */
static enum pw_poll numbered_poll(struct pw_cx *cx, void *state)
{
	uintptr_t i = (uintptr_t)state;

	atomic_fetch_add(&ran[i < OVF_LIMIT ? i : OVF_LIMIT], 1);
	return pw_ready(cx, 0);
}

static void mark(void *arg)
{
	(void)arg;
	atomic_store(&marked, true);
}

struct sender {
	int sent, err, extra_err, mark_err;
	unsigned long failed;
};

static enum pw_poll sender_poll(struct pw_cx *cx, void *state)
{
	struct sender *s = state;
	int err = 0;

	/* The first overflow chunk is carved; no later one can be. */
	pw__fault_arm(PW__FAULT_SLAB, 1, ULONG_MAX);
	while (s->sent < OVF_LIMIT - 8) {
		err = pw_spawn_on(1, numbered_poll, (void *)(uintptr_t)s->sent,
				  0, NULL);
		if (err)
			break;
		s->sent++;
	}
	pw__fault_disarm();
	s->failed = pw__fault_failed(PW__FAULT_SLAB);
	s->err = err;
	for (int k = 0; k < 4 && !s->extra_err; k++) {
		s->extra_err = pw_spawn_on(1, numbered_poll,
					   (void *)(uintptr_t)s->sent, 0, NULL);
		if (!s->extra_err)
			s->sent++;
	}
	s->mark_err = pw_submit_to(1, mark, NULL);
	atomic_store(&release, true);
	return pw_ready(cx, 0);
}

/*
 * A full mesh ring whose overflow runs out of memory halfway through a
 * batch: the messages that found room are sent once, the rest stay
 * staged in order, the send that finds the stage full gets -ENOMEM, and
 * once memory is back every message sent arrives exactly once (none
 * lost, none twice). The overflow holds 128 blocks of 10 messages, the
 * ring 2, the stage 32: 1314 sends succeed.
 */
Test(nomem, mesh_overflow_runs_dry)
{
	struct pw_config cfg = config(2);
	struct pw_runtime *rt = NULL;
	struct sender s = { 0 };

	cfg.mesh_slots = 2;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	cr_assert_eq(pw_runtime_spawn(rt, 1, blocker_poll, NULL, 0, NULL), 0);
	PW_TEST_WAIT_UNTIL(atomic_load(&blocker_in), PW_TEST_WAIT_SECS,
			   "shard 1 runs the blocker");
	int64_t r = pw_test_block_on(rt, sender_poll, &s);
	cr_assert_eq(r, 0);
	cr_assert_eq(s.err, -ENOMEM, "the overflow never ran dry: %d sent",
		     s.sent);
	cr_assert_eq(s.failed, 2, "%lu chunks failed, %d sent", s.failed,
		     s.sent);
	cr_assert_eq(s.extra_err, 0);
	cr_assert_eq(s.mark_err, 0);
	cr_assert_eq(s.sent, 2 + 128 * 10 + 32 + 4);
	PW_TEST_WAIT_UNTIL(atomic_load(&marked), PW_TEST_WAIT_SECS,
			   "shard 1 handled every message from shard 0");
	pw_test_wait_live(rt, 1, 0);
	for (int i = 0; i <= OVF_LIMIT; i++)
		cr_assert_eq(atomic_load(&ran[i]), i < s.sent ? 1 : 0,
			     "task %d ran %d times (%d sent)", i,
			     atomic_load(&ran[i]), s.sent);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- the blocking pool --------------------------------------------- */

static atomic_int jobs;

static int64_t job(void *arg)
{
	(void)arg;
	atomic_fetch_add(&jobs, 1);
	return 5;
}

struct blocker {
	int step;
	struct pw_blocking b;
	int err_fail, err_ok;
	uint8_t state_after_fail;
	unsigned long failed;
	int64_t res;
};

static enum pw_poll blocking_poll(struct pw_cx *cx, void *state)
{
	struct blocker *k = state;

	if (k->step == 0) {
		pw__fault_arm(PW__FAULT_THREAD, 0, 1);
		k->err_fail = pw_spawn_blocking(&k->b, job, NULL);
		pw__fault_disarm();
		k->failed = pw__fault_failed(PW__FAULT_THREAD);
		k->state_after_fail = k->b.state;
		k->err_ok = pw_spawn_blocking(&k->b, job, NULL);
		k->step = 1;
		if (k->err_ok)
			return pw_ready(cx, k->err_ok);
	}
	return pw_blocking_poll(cx, &k->b, &k->res);
}

/*
 * The first blocking job when no pool thread can start and none exists:
 * -EAGAIN (the pool's word for it), the job neither queued nor run; the
 * same call then starts a thread and the job runs once.
 */
Test(nomem, blocking_pool_thread)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct blocker k = { 0 };

	pw_test_block_on(rt, blocking_poll, &k);
	cr_assert_eq(k.failed, 1);
	cr_assert_eq(k.err_fail, -EAGAIN);
	cr_assert_neq(k.state_after_fail, PW_BLOCKING_QUEUED);
	cr_assert_eq(k.err_ok, 0);
	cr_assert_eq(k.res, 5);
	cr_assert_eq(atomic_load(&jobs), 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- networking ----------------------------------------------------- */

struct netter {
	int step;
	int sv[2];
	struct pw_recv r;
	int cfg_fail, cfg_ok;
	int32_t res[6];
	unsigned long seen[6], failed[6];
	unsigned long seen_ok;
	unsigned bufs_after_fail;
	ssize_t wrote;
	int32_t got;
	char data[64];
};

static enum pw_poll netter_poll(struct pw_cx *cx, void *state)
{
	struct netter *n = state;
	struct pw_net_buf buf;
	int32_t res = 0;

	if (n->step == 0) {
		struct pw_net_config cfg;
		struct pw_net_stats st;

		pw_net_config_init(&cfg);
		/* The shard's net state. */
		pw__fault_arm(PW__FAULT_NET, 0, 1);
		n->cfg_fail = pw_net_configure(&cfg);
		pw__fault_disarm();
		n->cfg_ok = pw_net_configure(&cfg);
		/* Each allocation of the buffer ring in turn: its mmap,
		 * buffers, three tables, its registration. */
		pw_recv_init(&n->r, n->sv[0]);
		for (int k = 0; k < 6; k++) {
			n->res[k] = 1;
			pw__fault_arm(PW__FAULT_NET, (unsigned long)k, 1);
			enum pw_poll p = pw_recv_poll(cx, &n->r, PW_TIME_NEVER,
						      &buf, &n->res[k]);
			pw__fault_disarm();
			if (p != PW_READY)
				n->res[k] = 1;
			n->seen[k] = pw__fault_seen(PW__FAULT_NET);
			n->failed[k] = pw__fault_failed(PW__FAULT_NET);
		}
		pw_net_stats(&st);
		n->bufs_after_fail = st.bufs_total;
		n->wrote = write(n->sv[1], "intact bytes", 12);
		n->step = 1;
		pw__fault_arm(PW__FAULT_NET, ULONG_MAX, 0);
		enum pw_poll p =
			pw_recv_poll(cx, &n->r, PW_TIME_NEVER, &buf, &res);
		pw__fault_disarm();
		n->seen_ok = pw__fault_seen(PW__FAULT_NET);
		if (p == PW_PENDING)
			return PW_PENDING;
	} else if (pw_recv_poll(cx, &n->r, PW_TIME_NEVER, &buf, &res) ==
		   PW_PENDING) {
		return PW_PENDING;
	}
	n->got = res;
	if (res > 0) {
		memcpy(n->data, buf.data, (size_t)res < 63 ? (size_t)res : 63);
		pw_net_buf_release(&buf);
	}
	pw_recv_cancel(&n->r);
	return pw_ready(cx, 0);
}

/*
 * The shard's net state and each of the buffer ring's six allocations
 * fail in turn: -ENOMEM each time from the call that needed it, no ring
 * left half-made; then the ring is built and the bytes arrive intact.
 */
Test(nomem, net_state_and_buffer_ring)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct netter n = { 0 };

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, n.sv),
		     0);
	int fds = pw_test_open_fds();
	pw_test_block_on(rt, netter_poll, &n);
	cr_assert_eq(n.cfg_fail, -ENOMEM);
	cr_assert_eq(n.cfg_ok, 0);
	for (int k = 0; k < 6; k++) {
		cr_assert_eq(n.res[k], -ENOMEM, "allocation %d: %d", k,
			     n.res[k]);
		/* a failed mmap ends it; the four heap tables are all
		 * asked for before any is checked; then the registration */
		unsigned long want = k == 0 ? 1 : k < 5 ? 5 : 6;
		cr_assert_eq(n.seen[k], want, "allocation %d: %lu seen", k,
			     n.seen[k]);
		cr_assert_eq(n.failed[k], 1, "allocation %d: %lu failed", k,
			     n.failed[k]);
	}
	cr_assert_eq(n.bufs_after_fail, 0);
	cr_assert_eq(n.wrote, 12);
	cr_assert_eq(n.seen_ok, 6);
	cr_assert_eq(n.got, 12);
	cr_assert_str_eq(n.data, "intact bytes");
	cr_assert_eq(pw_test_open_fds(), fds);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(n.sv[0]);
	close(n.sv[1]);
}

/*
 * A listener whose memory cannot be had: -ENOMEM, no listener, no
 * socket left open; then it is created.
 */
Test(nomem, listener_create)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_net_listener *l = (void *)1;
	struct pw_net_addr a;

	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	int fds = pw_test_open_fds();
	pw__fault_arm(PW__FAULT_LISTENER, 0, 1);
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, NULL), -ENOMEM);
	pw__fault_disarm();
	cr_assert_null(l);
	cr_assert_eq(pw__fault_failed(PW__FAULT_LISTENER), 1);
	cr_assert_eq(pw_test_open_fds(), fds);
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, NULL), 0);
	cr_assert_eq(pw_test_open_fds(), fds + 2); /* one per shard */
	cr_assert_eq(pw_net_listener_destroy(l), 0);
	cr_assert_eq(pw_test_open_fds(), fds);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- metrics, histograms, topology ---------------------------------- */

/* pw_metrics_read(): -ENOMEM with @out zeroed, then the workers. */
Test(nomem, metrics_read)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_metrics m;

	memset(&m, 0xff, sizeof(m));
	pw__fault_arm(PW__FAULT_METRICS, 0, 1);
	cr_assert_eq(pw_metrics_read(rt, &m), -ENOMEM);
	pw__fault_disarm();
	cr_assert_null(m.workers);
	cr_assert_eq(m.num_workers, 0);
	cr_assert_eq(pw_metrics_read(rt, &m), 0);
	cr_assert_eq(m.num_workers, 2);
	cr_assert_not_null(m.workers);
	pw_metrics_free(&m);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* pw_hist_init(): -ENOMEM, then a histogram. */
Test(nomem, hist_init)
{
	struct pw_hist h;

	pw__fault_arm(PW__FAULT_HIST, 0, 1);
	cr_assert_eq(pw_hist_init(&h, 1000000, 3), -ENOMEM);
	pw__fault_disarm();
	cr_assert_eq(pw__fault_failed(PW__FAULT_HIST), 1);
	cr_assert_eq(pw_hist_init(&h, 1000000, 3), 0);
	pw_hist_destroy(&h);
}

#define SYNTH "pack:1 numa:1 core:2 pu:2"

/*
 * The topology calls with each of their allocations failing in turn:
 * -ENOMEM and nothing returned, until they need no more and succeed.
 */
Test(nomem, topology_every_allocation)
{
	struct pw_topo *t = NULL;
	struct pw_placement pl;
	struct pw_placement_opts o = { .unit = PW_PLACE_CORES,
				       .cpus = "0-3",
				       .shards = 2 };
	int cpus[8];
	unsigned long n;

	for (n = 0;; n++) {
		struct pw_topo *x = (void *)1;
		pw__fault_arm(PW__FAULT_TOPO, n, 1);
		int err = pw_topo_load_synthetic(&x, SYNTH);
		pw__fault_disarm();
		if (!pw__fault_failed(PW__FAULT_TOPO)) {
			cr_assert_eq(err, 0);
			t = x;
			break;
		}
		cr_assert_eq(err, -ENOMEM, "allocation %lu: %d", n, err);
		cr_assert_null(x);
	}
	cr_assert_eq(n, 4, "pw_topo_load_synthetic allocates %lu times", n);
	/* pw_topo_place with a CPU list: three tables, the list's bitmap
	 * (parsed twice) and its numbers. */
	for (n = 0;; n++) {
		pw__fault_arm(PW__FAULT_TOPO, n, 1);
		int err = pw_topo_place(t, &o, &pl);
		pw__fault_disarm();
		if (!pw__fault_failed(PW__FAULT_TOPO)) {
			cr_assert_eq(err, 2);
			break;
		}
		cr_assert_eq(err, -ENOMEM, "allocation %lu: %d", n, err);
	}
	cr_assert_eq(n, 6, "pw_topo_place allocates %lu times", n);
	pw__fault_arm(PW__FAULT_TOPO, 0, 1);
	cr_assert_eq(pw_cpulist_parse("0-3", cpus, 8), -ENOMEM);
	pw__fault_disarm();
	cr_assert_eq(pw_cpulist_parse("0-3", cpus, 8), 4);
	pw_topo_free(t);
}
