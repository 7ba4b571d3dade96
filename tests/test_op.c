/* SPDX-License-Identifier: MIT */
/*
 * test_op.c - io_uring operations as leaf futures: NOP, pipes, files, a
 * full submission queue, and cancellation without leaks.
 */
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/common.h"
#include "shard/shard_int.h"

static void prep_nop(struct io_uring_sqe *sqe, void *arg)
{
	(void)arg;
	io_uring_prep_nop(sqe);
}

struct rw {
	int fd;
	void *buf;
	unsigned len;
	uint64_t off;
};

static void prep_read(struct io_uring_sqe *sqe, void *arg)
{
	struct rw *a = arg;
	io_uring_prep_read(sqe, a->fd, a->buf, a->len, a->off);
}

static void prep_write(struct io_uring_sqe *sqe, void *arg)
{
	struct rw *a = arg;
	io_uring_prep_write(sqe, a->fd, a->buf, a->len, a->off);
}

/* N NOPs in sequence through one op. */
struct nops {
	int left, done;
	struct pw_op op;
};

static enum pw_poll nops_poll(struct pw_cx *cx, void *state)
{
	struct nops *n = state;
	while (n->left > 0) {
		int32_t res = -1;
		if (pw_op_poll(cx, &n->op, prep_nop, NULL, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 0);
		cr_assert_eq(n->op.state, PW_OP_IDLE);
		n->left--;
		n->done++;
	}
	return pw_ready(cx, n->done);
}

Test(op, nop_in_sequence)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct nops n = { .left = 1000 };
	pw_op_init(&n.op);
	cr_assert_eq(pw_test_block_on(rt, nops_poll, &n), 1000);
	struct pw_shard_stats st;
	pw_runtime_stats(rt, 0, &st);
	cr_assert_geq(st.cqes_reaped, 1000);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Many NOPs at once from many tasks through a small ring: the full SQ is
 * flushed and nothing is lost. */
struct fan {
	int n, joined;
	int64_t sum;
	struct pw_join j[512];
};

static enum pw_poll fan_poll(struct pw_cx *cx, void *state)
{
	struct fan *f = state;
	if (!f->joined && !f->j[0].task && !f->sum) {
		for (int i = 0; i < f->n; i++) {
			struct nops n = { .left = 3 };
			pw_op_init(&n.op);
			cr_assert_eq(pw_spawn(&f->j[i], nops_poll, &n,
					      sizeof(n), NULL),
				     0);
		}
	}
	for (; f->joined < f->n; f->joined++) {
		int64_t v;
		if (pw_join_poll(cx, &f->j[f->joined], &v) == PW_PENDING)
			return PW_PENDING;
		f->sum += v;
	}
	return pw_ready(cx, f->sum);
}

Test(op, full_submission_queue_loses_nothing)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	pw_test_config_init(&cfg);
	cfg.ring_entries = 8;
	cfg.cq_factor = 1;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	struct fan f = { .n = 512 };
	cr_assert_eq(pw_test_block_on(rt, fan_poll, &f), 512 * 3);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Write then read through a pipe, checking bytes. */
struct pipe_rt {
	int fds[2];
	int step;
	char out[64], in[64];
	struct pw_op op;
};

static enum pw_poll pipe_poll(struct pw_cx *cx, void *state)
{
	struct pipe_rt *p = state;
	int32_t res;
	if (p->step == 0) {
		struct rw a = { p->fds[1], p->out, sizeof(p->out), 0 };
		if (pw_op_poll(cx, &p->op, prep_write, &a, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, (int32_t)sizeof(p->out));
		p->step = 1;
	}
	struct rw a = { p->fds[0], p->in, sizeof(p->in), 0 };
	if (pw_op_poll(cx, &p->op, prep_read, &a, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

Test(op, pipe_write_then_read)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pipe_rt p = { 0 };
	cr_assert_eq(pipe(p.fds), 0);
	for (int i = 0; i < 64; i++)
		p.out[i] = (char)(i * 7 + 1);
	pw_op_init(&p.op);
	cr_assert_eq(pw_test_block_on(rt, pipe_poll, &p), 64);
	cr_assert_eq(memcmp(p.in, p.out, 64), 0);
	close(p.fds[0]);
	close(p.fds[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A file: write 3 blocks at offsets, read them back out of order. */
struct file_rt {
	int fd, step;
	char blk[3][4096], back[4096];
	struct pw_op op;
};

static enum pw_poll file_poll(struct pw_cx *cx, void *state)
{
	struct file_rt *f = state;
	int32_t res;
	while (f->step < 3) {
		struct rw a = { f->fd, f->blk[f->step], 4096,
				(uint64_t)f->step * 4096 };
		if (pw_op_poll(cx, &f->op, prep_write, &a, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, 4096);
		f->step++;
	}
	struct rw a = { f->fd, f->back, 4096, 4096 };
	if (pw_op_poll(cx, &f->op, prep_read, &a, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

Test(op, file_write_and_read_at_offsets)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	static struct file_rt f;
	char path[] = "/tmp/pw-test-XXXXXX";
	f.fd = mkstemp(path);
	cr_assert_geq(f.fd, 0);
	unlink(path);
	for (int b = 0; b < 3; b++)
		memset(f.blk[b], 'a' + b, 4096);
	pw_op_init(&f.op);
	cr_assert_eq(pw_test_block_on(rt, file_poll, &f), 4096);
	cr_assert_eq(memcmp(f.back, f.blk[1], 4096), 0);
	char tail[10];
	cr_assert_eq(pread(f.fd, tail, 10, 8192), 10);
	cr_assert_eq(tail[0], 'c');
	close(f.fd);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A reader blocked on an empty pipe is aborted: its drop hook cancels the
 * read; its memory is released only after the final CQE. */
static int drops, reader_polls;
static int32_t last_res;

struct reader {
	int fd;
	char buf[16];
	struct pw_op op;
};

static enum pw_poll reader_poll(struct pw_cx *cx, void *state)
{
	struct reader *r = state;
	int32_t res;
	reader_polls++;
	struct rw a = { r->fd, r->buf, sizeof(r->buf), 0 };
	if (pw_op_poll(cx, &r->op, prep_read, &a, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

static void reader_drop(void *state)
{
	struct reader *r = state;
	drops++;
	last_res = pw_op_cancel(&r->op);
}

struct abort_root {
	int step, fds[2];
	struct pw_join j;
	struct pw_runtime *rt;
};

static uint64_t live(struct pw_runtime *rt, uint64_t *inflight)
{
	struct pw_shard_stats st;
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	if (inflight)
		*inflight = st.inflight_ops;
	return st.live_tasks;
}

static enum pw_poll abort_root_poll(struct pw_cx *cx, void *state)
{
	struct abort_root *a = state;
	switch (a->step) {
	case 0: {
		struct reader r = { .fd = a->fds[0] };
		pw_op_init(&r.op);
		cr_assert_eq(pw_spawn(&a->j, reader_poll, &r, sizeof(r),
				      reader_drop),
			     0);
		a->step = 1;
		return pw_yield(cx);
	}
	case 1:
		cr_assert_eq(reader_polls, 1);
		cr_assert_eq(pw_join_abort(&a->j), 0);
		a->step = 2;
		/* fall through */
	default: {
		int64_t v;
		if (pw_join_poll(cx, &a->j, &v) == PW_PENDING)
			return PW_PENDING;
		cr_assert(a->j.cancelled);
		return pw_ready(cx, v);
	}
	}
}

Test(op, abort_cancels_a_blocked_read_and_leaks_nothing)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(1);
	struct abort_root a = { .rt = rt };
	cr_assert_eq(pipe(a.fds), 0);
	cr_assert_eq(pw_test_block_on(rt, abort_root_poll, &a), -ECANCELED);
	cr_assert_eq(drops, 1);
	cr_assert_eq(reader_polls, 1, "an aborted task is not polled again");
	cr_assert_eq(last_res, 0, "the drop hook issued a cancel");
	/* The cancelled read's CQE releases the reader's memory. The read
	 * and its cancel may not even have reached the kernel yet, but the
	 * counters are current as of the root task's end (pw_block_on()),
	 * so they count both until their CQEs are in. */
	uint64_t inflight = 1, n = 1;
	PW_TEST_WAIT_UNTIL((n = live(rt, &inflight)) == 0 && inflight == 0,
			   PW_TEST_WAIT_SECS,
			   "%llu tasks live, %llu operations in flight",
			   (unsigned long long)n, (unsigned long long)inflight);
	cr_assert_eq(live(rt, &inflight), 0);
	cr_assert_eq(inflight, 0, "the cancelled read is still in flight");
	/* The pipe is untouched: data written now is still there. A read
	 * still pending in the kernel would take it: fail, do not hang. */
	cr_assert_eq(write(a.fds[1], "x", 1), 1);
	struct pollfd pf = { .fd = a.fds[0], .events = POLLIN };
	cr_assert_eq(poll(&pf, 1, 5000), 1,
		     "the byte is gone: a read was still pending");
	char c;
	cr_assert_eq(read(a.fds[0], &c, 1), 1);
	close(a.fds[0]);
	close(a.fds[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* Cancel and reuse: the owner cancels its own read, gets -ECANCELED from
 * the next poll, and can reuse the op. */
struct self_cancel {
	int fds[2], step;
	char buf[8];
	struct pw_op op;
};

static enum pw_poll self_cancel_poll(struct pw_cx *cx, void *state)
{
	struct self_cancel *c = state;
	int32_t res;
	struct rw a = { c->fds[0], c->buf, sizeof(c->buf), 0 };
	switch (c->step) {
	case 0:
		cr_assert_eq(pw_op_poll(cx, &c->op, prep_read, &a, &res),
			     PW_PENDING);
		cr_assert_eq(pw_op_cancel(&c->op), 0);
		cr_assert_eq(pw_op_cancel(&c->op), -EALREADY);
		cr_assert_eq(c->op.state, PW_OP_CANCELLING);
		c->step = 1;
		/* fall through */
	case 1:
		if (pw_op_poll(cx, &c->op, prep_read, &a, &res) == PW_PENDING)
			return PW_PENDING;
		cr_assert_eq(res, -ECANCELED);
		cr_assert_eq(write(c->fds[1], "hello", 5), 5);
		c->step = 2;
		/* fall through */
	default:
		if (pw_op_poll(cx, &c->op, prep_read, &a, &res) == PW_PENDING)
			return PW_PENDING;
		return pw_ready(cx, res);
	}
}

Test(op, cancel_then_reuse)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct self_cancel c = { 0 };
	cr_assert_eq(pipe(c.fds), 0);
	pw_op_init(&c.op);
	cr_assert_eq(pw_test_block_on(rt, self_cancel_poll, &c), 5);
	cr_assert_eq(memcmp(c.buf, "hello", 5), 0);
	close(c.fds[0]);
	close(c.fds[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static enum pw_poll bad_poll(struct pw_cx *cx, void *state)
{
	(void)state;
	struct pw_op op;
	int32_t res = 0;
	pw_op_init(&op);
	cr_assert_eq(pw_op_poll(NULL, &op, prep_nop, NULL, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	res = 0;
	cr_assert_eq(pw_op_poll(cx, NULL, prep_nop, NULL, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	res = 0;
	cr_assert_eq(pw_op_poll(cx, &op, NULL, NULL, &res), PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_op_poll(cx, &op, prep_nop, NULL, NULL), PW_READY);
	cr_assert_eq(op.state, PW_OP_IDLE, "nothing was submitted");
	cr_assert_eq(pw_op_cancel(NULL), -EINVAL);
	cr_assert_eq(pw_op_cancel(&op), -EALREADY);
	return pw_ready(cx, 0);
}

Test(op, bad_arguments)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	cr_assert_eq(pw_test_block_on(rt, bad_poll, NULL), 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- the batch wait ------------------------------------------------ */

#define GATHER_PIPES 16

/* Reads one byte from each of GATHER_PIPES pipes, which a thread fills
 * one at a time once the reads are armed; counts the shard's kernel waits
 * meanwhile. */
struct gather {
	struct pw_runtime *rt;
	int fds[GATHER_PIPES][2];
	char in[GATHER_PIPES];
	struct pw_op op[GATHER_PIPES];
	bool done[GATHER_PIPES];
	bool started;
	/* The writer's rule: with lockstep, byte i + 1 only once byte i was
	 * read and the shard went back to sleep; else the first byte once
	 * the shard sleeps, then one every millisecond. */
	bool lockstep;
	_Atomic bool armed;
	_Atomic int got; /* bytes read so far */
	const char *why; /* the writer's failure, or NULL */
	uint64_t t0, t1; /* CLOCK_MONOTONIC at the two snapshots */
	struct pw_shard_stats before, after;
};

static enum pw_poll gather_poll(struct pw_cx *cx, void *state)
{
	struct gather *g = state;
	int left = 0;

	if (!g->started) {
		g->started = true;
		g->t0 = pw_test_now_ns();
		cr_assert_eq(pw_runtime_stats(g->rt, 0, &g->before), 0);
	}
	for (int i = 0; i < GATHER_PIPES; i++) {
		struct rw a = { g->fds[i][0], &g->in[i], 1, 0 };
		int32_t res;

		if (g->done[i])
			continue;
		if (pw_op_poll(cx, &g->op[i], prep_read, &a, &res) ==
		    PW_PENDING) {
			left++;
			continue;
		}
		cr_assert_eq(res, 1);
		g->done[i] = true;
		/* release: the reads so far; pairs with the writer. */
		atomic_fetch_add_explicit(&g->got, 1, memory_order_release);
	}
	atomic_store(&g->armed, true);
	return left ? PW_PENDING : pw_ready(cx, 0);
}

/* The shard of @g waits in the kernel (or is just about to). */
static bool shard_waits(struct gather *g)
{
	/* seq_cst: the flag the shard raises before its kernel wait. */
	return atomic_load(&g->rt->shards[0]->asleep);
}

static void *gather_writer(void *arg)
{
	struct gather *g = arg;
	uint64_t dl = pw_test_now_ns() + PW_TEST_WAIT_SECS * 1000000000ull;

	while (!atomic_load(&g->armed))
		if (!pw_test_wait_step(dl))
			return g->why = "the reads were never armed", NULL;
	for (int i = 0; i < GATHER_PIPES; i++) {
		/* acquire: pairs with the reader's release; orders the load
		 * of asleep after the shard's clearing of it on waking. */
		while (g->lockstep &&
		       atomic_load_explicit(&g->got, memory_order_acquire) < i)
			if (!pw_test_wait_step(dl))
				return g->why = "a byte was never read", NULL;
		while ((g->lockstep || i == 0) && !shard_waits(g))
			if (!pw_test_wait_step(dl))
				return g->why = "the shard never slept", NULL;
		/* Else the workload under test: a trickle of completions
		 * 1 ms apart, which a batch wait gathers. */
		if (!g->lockstep && i > 0)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		if (write(g->fds[i][1], "x", 1) != 1)
			return g->why = "write failed", NULL;
	}
	return NULL;
}

/* Kernel waits of a shard with the batch wait @batch_wait_ns while the
 * GATHER_PIPES bytes come in by @lockstep's rule; *@in_effect whether
 * the kernel has the batch wait; *@took the time it was counted over. */
static uint64_t gather_waits(uint64_t batch_wait_ns, bool lockstep,
			     bool *in_effect, uint64_t *took)
{
	static struct gather g;
	struct pw_config cfg;
	pthread_t th;

	memset(&g, 0, sizeof(g));
	g.lockstep = lockstep;
	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cfg.batch_wait_ns = batch_wait_ns;
	cr_assert_eq(pw_runtime_create(&g.rt, &cfg), 0);
	for (int i = 0; i < GATHER_PIPES; i++) {
		cr_assert_eq(pipe(g.fds[i]), 0);
		pw_op_init(&g.op[i]);
	}
	cr_assert_eq(pthread_create(&th, NULL, gather_writer, &g), 0);
	cr_assert_eq(pw_test_block_on(g.rt, gather_poll, &g), 0);
	/* Current as of the root task's end. */
	cr_assert_eq(pw_runtime_stats(g.rt, 0, &g.after), 0);
	g.t1 = pw_test_now_ns();
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_null(g.why, "writer: %s", g.why);
	cr_assert_eq(atomic_load(&g.got), GATHER_PIPES);
	for (int i = 0; i < GATHER_PIPES; i++) {
		cr_assert_eq(g.in[i], 'x');
		close(g.fds[i][0]);
		close(g.fds[i][1]);
	}
	*in_effect = g.after.batch_wait;
	*took = g.t1 - g.t0;
	cr_assert_eq(pw_runtime_destroy(g.rt), 0);
	return g.after.kernel_waits - g.before.kernel_waits;
}

/*
 * Without the batch wait, a byte written only once the previous one was
 * read and the shard slept again wakes the shard each time: at least one
 * kernel wait per byte. With a 200 ms window the bytes, written 1 ms
 * apart, are gathered: a kernel wait ends only with 32 completions or
 * after the window, so there is at most one per window of the run, plus
 * the one under way at the start and one not yet counted then, where a
 * wake-up per byte would be 16.
 */
Test(op, batch_wait_gathers_completions_into_one_wake_up)
{
	const uint64_t win = 200 * PW_NSEC_PER_MSEC;
	bool on;
	uint64_t took, plain = gather_waits(0, true, &on, &took), batched;

	cr_assert(!on);
	cr_assert_geq(plain, (uint64_t)GATHER_PIPES, "%llu kernel waits",
		      (unsigned long long)plain);
	batched = gather_waits(win, false, &on, &took);
	if (!on)
		cr_skip_test("the kernel has no batch wait (Linux < 6.12)");
	cr_assert_leq(batched, 2 + took / win, "%llu kernel waits in %llu ns",
		      (unsigned long long)batched, (unsigned long long)took);
}

/* A 5 ms sleep; returns the time it took from its first poll. */
struct nap {
	struct pw_sleep sl;
	pw_time_t t0;
};

static enum pw_poll nap_poll(struct pw_cx *cx, void *state)
{
	struct nap *n = state;

	if (!n->t0)
		n->t0 = pw_time_now();
	if (pw_sleep_poll(cx, &n->sl) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, (int64_t)(pw_time_now() - n->t0));
}

/* A 5 ms sleep on a shard whose kernel waits gather completions for up
 * to 1 s: the window gives way to the timer, which fires, once, not
 * before its deadline. (That it fires after 5 ms, not 1 s, is measured
 * by bench_mesh_checks.c, bm_batch_wait_timer.) A window over the
 * maximum is refused. */
Test(op, batch_wait_never_delays_a_timer)
{
	struct pw_config cfg;
	struct pw_runtime *rt;
	struct nap n = { .t0 = 0 };
	struct pw_shard_stats st;

	pw_test_config_init(&cfg);
	cfg.shards = 1;
	cfg.batch_wait_ns = PW_BATCH_WAIT_MAX_NS;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), 0);
	pw_sleep_init(&n.sl, 5 * PW_NSEC_PER_MSEC);
	int64_t took = pw_test_block_on(rt, nap_poll, &n);
	cr_assert_geq(took, (int64_t)(5 * PW_NSEC_PER_MSEC), "took %lld ns",
		      (long long)took);
	cr_assert_eq(pw_runtime_stats(rt, 0, &st), 0);
	cr_assert_eq(st.timers_fired, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cfg.batch_wait_ns = PW_BATCH_WAIT_MAX_NS + 1;
	rt = NULL;
	cr_assert_eq(pw_runtime_create(&rt, &cfg), -EINVAL);
	cr_assert_null(rt);
}
