/* SPDX-License-Identifier: MIT */
/*
 * shard.c - the per-core engine: start, loop, inbox, stop.
 *
 * Each shard is one pinned thread running this loop:
 *
 *   1. drain the external inbox (bounded): foreign spawns and wakes;
 *   2. poll up to cfg.batch ready tasks, FIFO;
 *   3. fire expired timers;
 *   4. if nothing is runnable, publish "asleep", re-check the inbox and
 *      wait once in io_uring_submit_and_wait_timeout() bounded by the next
 *      timer; otherwise submit queued SQEs and enter the kernel only when
 *      there is something to submit or the kernel flagged completions;
 *   5. reap every CQE in one batch, waking their tasks.
 *
 * Waking a sleeping shard: producers push to the inbox (a seq_cst
 * exchange) and then read the asleep flag (seq_cst); the shard stores the
 * flag (seq_cst) and then checks the inbox (seq_cst). One of the two sees
 * the other, so either the shard notices the work or the producer writes
 * the shard's eventfd, whose read is always armed in the ring. No wake-up
 * is lost, and a producer makes no syscall while the shard is awake.
 *
 * Shutdown drops every task (their drop hooks cancel operations), cancels
 * the eventfd read, keeps reaping until no operation is in flight, then
 * releases the ring, the eventfd and the slab.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/fault.h"
#include "pinwheel/topo.h"
#include "pinwheel/version.h"
#include "shard/shard_int.h"
#include "timer/time_int.h"

/* A spawn or block_on request from another thread. */
struct pw__spawn_msg {
	struct pw__mpsc_node node;
	pw_poll_fn fn;
	pw_drop_fn drop;
	const void *state;
	size_t size;
	struct pw__blockon *bo;
	_Alignas(16) unsigned char data[];
};

struct pw__blockon {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;	/* memory released; the caller may return */
	bool have;	/* the task completed with a result */
	int err;	/* or why it could not be made (-ENOMEM) */
	int64_t result; /* its result */
	pw_poll_fn fn;
	void *state;
	struct pw_runtime *rt;
	/* Paused clock: who takes the caller back out of rt->blockers.
	 * 0 at first; the caller swaps in 1 once it has counted itself,
	 * the release swaps in 2. Whoever swaps second un-counts, each
	 * while @rt is surely alive: the caller before rt_leave(), the
	 * release on a shard of @rt. acq_rel exchanges: each pairs with
	 * the other's. */
	_Atomic int counted;
};

/* Registry of live runtimes: validates handles passed by other threads. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv = PTHREAD_COND_INITIALIZER;
static struct pw_runtime *reg_head;

static bool rt_enter(struct pw_runtime *rt)
{
	bool found = false;

	if (!rt)
		return false;
	pthread_mutex_lock(&reg_mu);
	for (struct pw_runtime *r = reg_head; r; r = r->reg_next) {
		if (r == rt) {
			rt->callers++;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&reg_mu);
	return found;
}

static void rt_leave(struct pw_runtime *rt)
{
	pthread_mutex_lock(&reg_mu);
	if (--rt->callers == 0)
		pthread_cond_broadcast(&reg_cv);
	pthread_mutex_unlock(&reg_mu);
}

void pw__shard_kick(struct pw__shard *s)
{
	uint64_t one = 1;
	ssize_t n = write(s->efd, &one, sizeof(one));
	(void)n; /* cannot fail: the counter never nears overflow */
}

void pw__shard_rouse(struct pw__shard *s)
{
	/* seq_cst load: pairs with the shard's seq_cst store of asleep
	 * that precedes its inbox check (see the top of this file). The
	 * exchange lets one producer of many make the syscall. */
	if (atomic_load(&s->asleep) && atomic_exchange(&s->asleep, 0)) {
		pw__shard_kick(s);
		/* relaxed: a statistic written by rousing threads only. */
		atomic_fetch_add_explicit(&s->stats.wakeups_sent, 1,
					  memory_order_relaxed);
	}
}

void pw__shard_post(struct pw__shard *s, struct pw__mpsc_node *n)
{
	pw__mpsc_push(&s->inbox, n);
	pw__shard_rouse(s);
}

static void arm_eventfd(struct pw__shard *s)
{
	struct io_uring_sqe *sqe = pw__shard_sqe(s);

	if (!sqe)
		return; /* retried at the next reap or turn */
	io_uring_prep_read(sqe, s->efd, &s->efd_buf, sizeof(s->efd_buf), 0);
	io_uring_sqe_set_data64(sqe, PW__UD_EVENTFD);
	s->efd_armed = true; /* not in inflight: it is always there */
}

static void blockon_signal(struct pw__blockon *bo)
{
	pthread_mutex_lock(&bo->mu);
	bo->done = true;
	pthread_cond_signal(&bo->cv);
	pthread_mutex_unlock(&bo->mu);
}

/*
 * Counters kept as plain fields elsewhere, published once per turn and
 * before a pw_block_on() caller is released (pw__blockon_release()).
 */
static void publish_stats(struct pw__shard *s)
{
	/* relaxed: statistics for readers on other threads. A reader that
	 * must see these values (a pw_block_on() caller) is ordered after
	 * them by the mutex in blockon_signal(). */
	atomic_store_explicit(&s->stats.inflight_ops, s->inflight,
			      memory_order_relaxed);
	atomic_store_explicit(&s->stats.live_tasks, s->slab.live,
			      memory_order_relaxed);
	atomic_store_explicit(&s->stats.slab_chunks, s->slab.nchunks,
			      memory_order_relaxed);
	atomic_store_explicit(&s->stats.mesh_sent, s->sent,
			      memory_order_relaxed);
	atomic_store_explicit(&s->stats.mesh_received, s->received,
			      memory_order_relaxed);
}

void pw__blockon_release(void *state)
{
	struct pw__shard *s = pw__cur_shard;

	/* The counters published at the end of the last turn may predate
	 * everything the task did in this one (its spawns, its SQEs): the
	 * caller, once back, reads them as they are now. */
	struct pw__blockon *bo = state;

	if (s)
		publish_stats(s);
	if (atomic_exchange_explicit(&bo->counted, 2, memory_order_acq_rel) ==
	    1)
		atomic_fetch_sub(&bo->rt->blockers, 1); /* seq_cst: time.c */
	blockon_signal(bo);
}

static enum pw_poll blockon_poll(struct pw_cx *cx, void *state)
{
	struct pw__blockon *bo = state;
	enum pw_poll r = bo->fn(cx, bo->state);

	if (r == PW_READY) {
		bo->result = cx->result;
		bo->have = true;
	}
	return r;
}

static void handle_spawn(struct pw__shard *s, struct pw__spawn_msg *m)
{
	struct pw__task *t;
	int err = -ESHUTDOWN;

	if (!s->stopping) {
		if (m->bo)
			err = pw__task_new(s, &t, blockon_poll, m->bo, 0, NULL);
		else
			err = pw__task_new(s, &t, m->fn,
					   m->size ? m->data : m->state,
					   m->size, m->drop);
	}
	if (!err && m->bo)
		t->flags |= PW__T_BLOCKON;
	if (!err)
		pw__task_start(t);
	if (err) {
		if (m->bo) {
			m->bo->err = err;
			blockon_signal(m->bo);
		} else {
			fprintf(stderr,
				"pinwheel: shard %u: spawn from another "
				"thread failed: %s\n",
				s->id, strerror(-err));
			if (m->drop)
				m->drop(m->size ? m->data : (void *)m->state);
		}
	}
	free(m);
}

static void drain_inbox(struct pw__shard *s, unsigned max)
{
	while (max--) {
		struct pw__mpsc_node *n = pw__mpsc_pop(&s->inbox);
		if (!n)
			break;
		PW__STAT_INC(s, inbox_msgs);
		if (n->kind == PW__MSG_TASK && !s->w)
			pw__task_remote_event(
				s, pw_container_of(n, struct pw__task, inbox));
		else if (n->kind == PW__MSG_TASK || n->kind == PW__MSG_FREE)
			pw__steal_inbox(s, pw_container_of(n, struct pw__task,
							   inbox));
		else if (n->kind == PW__MSG_BLOCKING)
			pw__pool_done(s, n);
		else
			handle_spawn(s, pw_container_of(n, struct pw__spawn_msg,
							node));
	}
}

static void dispatch(struct pw__shard *s, struct io_uring_cqe *cqe)
{
	uint64_t ud = cqe->user_data;

	switch (ud & PW__UD_TAG_MASK) {
	case 0:
		pw__op_complete(s, (struct pw_op *)(uintptr_t)ud, cqe);
		break;
	case PW__UD_EVENTFD:
		s->efd_armed = false;
		if (!s->exiting)
			arm_eventfd(s);
		break;
	case PW__UD_IGNORE: /* a cancel request's own completion */
		s->inflight--;
		break;
	case PW__UD_EFDCANCEL: /* the final cancel of the eventfd read */
		break;
	case PW__UD_NET:
		pw__net_complete(
			s,
			(struct pw_net_op *)(uintptr_t)(ud & ~PW__UD_TAG_MASK),
			cqe);
		break;
	case PW__UD_MSGSEND: /* our MSG_RING failed: rouse another way */
		pw__mesh_send_failed(s, ud);
		break;
	default: /* PW__UD_MSGRING: a peer woke us; the mesh has work */
		break;
	}
}

static void reap(struct pw__shard *s)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	io_uring_for_each_cqe (&s->ring, head, cqe) {
		dispatch(s, cqe);
		n++;
	}
	if (n) {
		io_uring_cq_advance(&s->ring, n);
		PW__STAT_ADD(s, cqes_reaped, n);
	}
}

static void note_submitted(struct pw__shard *s)
{
	if (s->sq_dirty) {
		PW__STAT_ADD(s, sqes_submitted, s->sq_dirty);
		s->sq_dirty = 0;
	}
}

/* Busy path: hand over SQEs, collect completions, never block. */
static void poke(struct pw__shard *s)
{
	/* relaxed: a hint the kernel sets when completions wait for us;
	 * a stale read only delays them to the next turn. */
	unsigned kflags = __atomic_load_n(s->ring.sq.kflags, __ATOMIC_RELAXED);

	if (s->sq_dirty || (kflags & IORING_SQ_TASKRUN)) {
		note_submitted(s);
		io_uring_submit_and_get_events(&s->ring);
	}
}

/*
 * Work that reaches an awake shard without a system call: an inbox push,
 * a mesh message, a completion the kernel posted or flagged, a stop or an
 * unpark. Plain loads: a miss is caught by the check after "asleep" goes
 * up, or by the next call.
 */
static bool work_arrived(struct pw__shard *s)
{
	/* relaxed: a hint, as in poke(). */
	unsigned kflags = __atomic_load_n(s->ring.sq.kflags, __ATOMIC_RELAXED);

	return !pw__mpsc_empty(&s->inbox) || !pw__mesh_empty(s) ||
	       io_uring_cq_ready(&s->ring) || (kflags & IORING_SQ_TASKRUN) ||
	       /* relaxed: stop and unpark are read again, seq_cst, before
		* the shard sleeps; here they only end the poll early. */
	       (!s->stopping &&
		atomic_load_explicit(&s->stop, memory_order_relaxed)) ||
	       (s->w &&
		atomic_load_explicit(&s->w->unpark, memory_order_relaxed));
}

/*
 * Idle poll (cfg.idle_poll_ns, as Seastar's idle-poll time): before it
 * sleeps, an idle shard watches for work_arrived() for up to that long,
 * or until its next timer. It stays "awake" meanwhile, so a peer that
 * sends it a message or a reply makes no MSG_RING and the shard pays no
 * kernel wake-up: a pw_call to a busy shard then costs the two ring
 * crossings, not two scheduler wake-ups. The price is a CPU kept busy
 * for that long after the last work. Not under the paused clock, whose
 * jump waits for every shard to sleep.
 * Return: true if work arrived (the loop turns again without sleeping).
 */
static bool idle_poll(struct pw__shard *s)
{
	uint64_t budget = s->rt->cfg.idle_poll_ns, next, end, now;

	if (!budget || s->rt->paused)
		return false;
	/* From the turn's now, not a fresh clock read: the poll may end
	 * early, never after the timer. */
	now = pw__now(s);
	next = pw__time_next_ns(s);
	if (next <= now)
		return true; /* a timer is due */
	end = next - now < budget ? next : now + budget;
	end += s->rt->start_ns; /* as pw__clock_ns() counts */
	if (s->sq_dirty) {
		/* What the sleep would submit must not wait for the poll. */
		note_submitted(s);
		io_uring_submit(&s->ring);
	}
	for (unsigned i = 1;; i++) {
		if (work_arrived(s))
			return true;
		if (!(i & 31) && pw__clock_ns() >= end)
			return false;
		pw__cpu_relax();
	}
}

/*
 * The batch wait (cfg.batch_wait_ns, Linux 6.12's min_wait_usec): the
 * kernel returns within the first batch_wait_ns of the wait only once
 * PW__BATCH_WAIT_NR completions are there, after it with any, and with
 * none by then it waits on for the first. So a loaded shard gathers
 * completions into fewer wake-ups, and one that woke for a lone event
 * lost at most batch_wait_ns. The window never outlasts @wait_ns, the
 * next timer, so no timer fires late. Without an overall timeout the
 * kernel would end the wait at the end of the window, so an idle shard
 * passes one of a day. liburing 2.3 has no call for this: publish the SQ
 * tail as io_uring_submit() does, then enter with the extended argument.
 */
#define PW__FEAT_MIN_TIMEOUT (1u << 15) /* IORING_FEAT_MIN_TIMEOUT */
#define PW__BATCH_WAIT_NR    32

/* struct io_uring_getevents_arg as of Linux 6.12 (pad became
 * min_wait_usec). */
struct pw__getevents_arg {
	uint64_t sigmask;
	uint32_t sigmask_sz;
	uint32_t min_wait_usec;
	uint64_t ts;
};

static void batch_wait(struct pw__shard *s, struct __kernel_timespec *tsp,
		       uint64_t wait_ns)
{
	struct io_uring_sq *sq = &s->ring.sq;
	struct __kernel_timespec day = { .tv_sec = 86400 };
	uint64_t win = s->rt->cfg.batch_wait_ns;
	struct pw__getevents_arg arg = {
		.ts = (uint64_t)(uintptr_t)(tsp ? tsp : &day),
	};
	unsigned tail = sq->sqe_tail, submit;

	if (win > wait_ns)
		win = wait_ns;
	/* In whole microseconds, at least one (0 would turn it off). */
	arg.min_wait_usec = (uint32_t)((win + 999) / 1000);
	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		/* release: the SQEs' contents before the tail the kernel
		 * reads (as liburing publishes it without SQPOLL). */
		__atomic_store_n(sq->ktail, tail, __ATOMIC_RELEASE);
	}
	/* acquire: pairs with the kernel's store of the SQ head. */
	submit = tail - __atomic_load_n(sq->khead, __ATOMIC_ACQUIRE);
	io_uring_enter2((unsigned)s->ring.ring_fd, submit, PW__BATCH_WAIT_NR,
			IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
			(sigset_t *)(void *)&arg, sizeof(arg));
}

/* Idle path: sleep in the kernel until a CQE, a rouse or the deadline. */
static void sleep_in_kernel(struct pw__shard *s)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts, *tsp = NULL;
	uint64_t wait_ns;

	if (idle_poll(s)) {
		poke(s);
		return;
	}
	pw__time_prepare_sleep(s);
	/* seq_cst store, then seq_cst loads of the inbox and stop flag:
	 * pairs with the producers' push and rouse (top of file). */
	atomic_store(&s->asleep, 1);
	if (!pw__mpsc_empty(&s->inbox) || !pw__mesh_idle(s) ||
	    (!s->stopping && atomic_load(&s->stop)) ||
	    (s->w && atomic_load(&s->w->unpark)) ||
	    !pw__time_may_sleep(s, &wait_ns)) {
		atomic_store_explicit(&s->asleep, 0, memory_order_relaxed);
		poke(s);
		return;
	}
	uint64_t cap = pw__mesh_wait_cap(s);
	if (cap < wait_ns)
		wait_ns = cap;
	if (wait_ns != UINT64_MAX) {
		ts.tv_sec = (long long)(wait_ns / 1000000000u);
		ts.tv_nsec = (long long)(wait_ns % 1000000000u);
		tsp = &ts;
	}
	PW__STAT_INC(s, kernel_waits);
	note_submitted(s);
	if (s->rt->cfg.batch_wait_ns && s->min_wait)
		batch_wait(s, tsp, wait_ns);
	else
		io_uring_submit_and_wait_timeout(&s->ring, &cqe, 1, tsp, NULL);
	/* relaxed: only the shard reads it as cleared; rousers that raced
	 * with the wake merely write the eventfd once more. */
	atomic_store_explicit(&s->asleep, 0, memory_order_relaxed);
}

/* Shutdown: every task not yet finished is dropped as if aborted. */
static void drop_task(void *blk, void *arg)
{
	struct pw__task *t = blk;

	if (!(t->flags & PW__T_DONE))
		pw__task_finish(arg, t, -ECANCELED, true);
}

static void begin_stop(struct pw__shard *s)
{
	s->stopping = true;
	pw__slab_walk(&s->slab, drop_task, s);
}

/*
 * Every shard is done: withdraw the eventfd read (rousers may still write
 * the eventfd, which stays open until the thread is joined) and wait for
 * its final completion, so the kernel never writes into freed memory.
 */
static void final_cancel(struct pw__shard *s)
{
	struct io_uring_cqe *cqe;

	s->exiting = true;
	while (s->efd_armed) {
		struct io_uring_sqe *sqe = pw__shard_sqe(s);
		if (sqe) {
			io_uring_prep_cancel64(sqe, PW__UD_EVENTFD, 0);
			io_uring_sqe_set_data64(sqe, PW__UD_EFDCANCEL);
		}
		note_submitted(s);
		io_uring_submit_and_wait_timeout(&s->ring, &cqe, 1, NULL, NULL);
		reap(s);
	}
}

void pw__shard_events(struct pw__shard *s, bool sleep)
{
	pw__mesh_flush(s);
	publish_stats(s);
	if (sleep)
		sleep_in_kernel(s);
	else
		poke(s);
	reap(s);
	pw__time_turn(s);
	pw__time_fire(s);
	drain_inbox(s, 4096);
	pw__mesh_drain(s);
}

void pw__shard_final(struct pw__shard *s)
{
	final_cancel(s);
}

static void shard_loop(struct pw__shard *s)
{
	unsigned batch = s->rt->cfg.batch;

	for (;;) {
		pw__time_turn(s);
		drain_inbox(s, 4096);
		pw__mesh_drain(s);
		/* seq_cst: pairs with the store in pw_runtime_destroy(). */
		if (!s->stopping && atomic_load(&s->stop))
			begin_stop(s);
		unsigned polled = 0;
		for (unsigned n = 0; n < batch; n++) {
			struct pw__task *t = pw__runq_pop(&s->runq);
			if (!t)
				break;
			polled += pw__task_run(s, t);
		}
		PW__STAT_ADD(s, polls, polled);
		pw__time_fire(s);
		pw__mesh_flush(s);
		publish_stats(s);
		if (s->stopping && pw__mpsc_empty(&s->inbox) &&
		    pw__mesh_stop_done(s)) {
			final_cancel(s);
			break;
		}
		if (s->runq.head)
			poke(s);
		else
			sleep_in_kernel(s);
		reap(s);
	}
}

static int ring_setup(struct pw__shard *s)
{
	const struct pw_config *c = &s->rt->cfg;
	struct io_uring_params p;
	unsigned base = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
	unsigned tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
			IORING_SETUP_TASKRUN_FLAG,
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		0,
	};
	int err = -EINVAL;

	for (unsigned i = (c->flags & PW_CONFIG_NO_DEFER) ? 1 : 0; i < 3; i++) {
		memset(&p, 0, sizeof(p));
		p.flags = base | tries[i];
		p.cq_entries = c->ring_entries * c->cq_factor;
		err = pw__fault(PW__FAULT_RING) ?
			      -ENOMEM :
			      io_uring_queue_init_params(c->ring_entries,
							 &s->ring, &p);
		if (!err) {
			s->defer = i == 0;
			s->min_wait = p.features & PW__FEAT_MIN_TIMEOUT;
			return 0;
		}
		if (err != -EINVAL)
			break; /* ENOSYS, EPERM, ENOMEM: no flag will help */
	}
	return err;
}

static int shard_start(struct pw__shard *s)
{
	if (s->cpu >= 0 && !(s->rt->cfg.flags & PW_CONFIG_NO_PIN)) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(s->cpu, &set);
		int err = pthread_setaffinity_np(pthread_self(), sizeof(set),
						 &set);
		if (err)
			return -err;
		/* Read it back: the thread runs on its planned CPU only. */
		cpu_set_t got;
		err = pthread_getaffinity_np(pthread_self(), sizeof(got), &got);
		if (err)
			return -err;
		if (!CPU_EQUAL(&got, &set))
			return -EIO;
	}
	pw__mem_shard_enter(s);
	/* Closed by rt_free(), after the thread is joined. */
	if (pw__fault(PW__FAULT_RING))
		return -ENOMEM;
	s->efd = eventfd(0, EFD_CLOEXEC);
	if (s->efd < 0)
		return -errno;
	int err = ring_setup(s);
	if (err)
		return err;
	s->ring_ok = true;
	pw__time_init(s);
	arm_eventfd(s);
	return 0;
}

static void shard_teardown(struct pw__shard *s)
{
	pw__net_teardown(s);
	if (s->ring_ok)
		io_uring_queue_exit(&s->ring);
	s->ring_ok = false;
	pw__slab_destroy(&s->slab);
	pw__slab_destroy(&s->aux);
	pw__mem_shard_exit(s);
	/* The eventfd stays open until the thread is joined: a rousing
	 * thread may still write to it (rt_free() closes it). */
}

/*
 * A shard whose loop will never run (its start failed, or its thread was
 * never created) has sent and received nothing: it counts as quiet, so
 * the shards that did start can stop (pw__mesh_stop_done()).
 */
static void never_runs(struct pw__shard *s)
{
	/* seq_cst store: read by scan() on the shards that started (pairs
	 * with its seq_cst loads); they only look once they are stopped,
	 * after pw_runtime_create() saw this shard's start report. */
	atomic_store(&s->quiet, 1);
}

static void *shard_main(void *arg)
{
	struct pw__shard *s = arg;
	struct pw_runtime *rt = s->rt;

	pw__cur_shard = s;
	int err = shard_start(s);

	if (err)
		never_runs(s);
	pthread_mutex_lock(&rt->start_mu);
	s->start_err = err;
	rt->started++;
	pthread_cond_broadcast(&rt->start_cv);
	pthread_mutex_unlock(&rt->start_mu);
	if (!err && s->w)
		pw__steal_loop(s);
	else if (!err)
		shard_loop(s);
	shard_teardown(s);
	pw__cur_shard = NULL;
	return NULL;
}

static void rt_free(struct pw_runtime *rt)
{
	if (rt->pool_live) {
		pw__pool_stop(&rt->pool);
		pw__pool_free(&rt->pool);
	}
	pw__mesh_destroy(rt);
	pw__steal_destroy(rt);
	if (rt->shards)
		for (unsigned i = 0; i < rt->nshards; i++) {
			if (rt->shards[i] && rt->shards[i]->efd >= 0)
				close(rt->shards[i]->efd);
			free(rt->shards[i]);
		}
	free(rt->shards);
	free(rt->cpus);
	pw__mem_rt_free(rt);
	pthread_mutex_destroy(&rt->start_mu);
	pthread_cond_destroy(&rt->start_cv);
	free(rt);
}

/* Stop and join shards [0, n). */
static void stop_shards(struct pw_runtime *rt, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		/* seq_cst store: pairs with the shard's load after it
		 * publishes asleep (sleep_in_kernel) and in its loop. */
		atomic_store(&rt->shards[i]->stop, true);
		pw__shard_rouse(rt->shards[i]);
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(rt->shards[i]->thread, NULL);
}

int pw_runtime_create(struct pw_runtime **rtp, const struct pw_config *cfg)
{
	struct pw_config defaults;
	struct pw_runtime *rt;
	unsigned launched = 0;
	int err;

	if (!rtp)
		return -EINVAL;
	*rtp = NULL;
	if (pw__cur_shard)
		return -EDEADLK;
	if (!cfg) {
		pw_config_init(&defaults);
		cfg = &defaults;
	}
	err = pw__config_fields(cfg, NULL, 0);
	if (err)
		return err;
	rt = pw__fault_calloc(PW__FAULT_RUNTIME, 1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->cfg = *cfg;
	rt->cfg.cpus = NULL;
	rt->nshards = cfg->shards;
	pthread_mutex_init(&rt->start_mu, NULL);
	pthread_cond_init(&rt->start_cv, NULL);
	rt->start_ns = pw__clock_ns();
	rt->paused = (cfg->flags & PW_CONFIG_PAUSED_CLOCK) != 0;
	atomic_init(&rt->vnow, 0);
	atomic_init(&rt->blockers, 0);
	rt->shards = pw__fault_calloc(PW__FAULT_RUNTIME, rt->nshards,
				      sizeof(*rt->shards));
	rt->cfg.cpus = cfg->cpus;
	err = !rt->shards ? -ENOMEM : pw__mem_place(rt);
	rt->cfg.cpus = NULL; /* the caller's array need not outlive us */
	if (!rt->cfg.mesh_slots)
		rt->cfg.mesh_slots = rt->nshards > 16 ? 64 : 256;
	if (err)
		goto out_free;
	for (unsigned i = 0; i < rt->nshards; i++) {
		struct pw__shard *s = pw__fault_aligned_alloc(
			PW__FAULT_RUNTIME, 4096,
			(sizeof(*s) + 4095) & ~(size_t)4095);
		if (!s) {
			err = -ENOMEM;
			goto out_free;
		}
		memset(s, 0, sizeof(*s));
		rt->shards[i] = s;
		s->rt = rt;
		s->id = i;
		s->cpu = rt->cpus[i];
		s->efd = -1;
		pw__slab_init(&s->slab);
		pw__slab_init(&s->aux);
		pw__mpsc_init(&s->inbox);
	}
	err = pw__mesh_create(rt);
	if (!err && rt->cfg.sched == PW_SCHED_STEAL)
		err = pw__steal_create(rt);
	if (err)
		goto out_free;
	pw__pool_init(&rt->pool, rt->cfg.max_blocking_threads,
		      rt->cfg.blocking_keep_alive_ns);
	rt->pool_live = true;
	for (; launched < rt->nshards; launched++) {
		struct pw__shard *s = rt->shards[launched];
		err = pw__fault(PW__FAULT_THREAD) ?
			      -EAGAIN :
			      -pthread_create(&s->thread, NULL, shard_main, s);
		if (err)
			break;
	}
	for (unsigned i = launched; i < rt->nshards; i++)
		never_runs(rt->shards[i]);
	pthread_mutex_lock(&rt->start_mu);
	while (rt->started < launched)
		pthread_cond_wait(&rt->start_cv, &rt->start_mu);
	pthread_mutex_unlock(&rt->start_mu);
	for (unsigned i = 0; !err && i < launched; i++)
		err = rt->shards[i]->start_err;
	if (err) {
		stop_shards(rt, launched);
		goto out_free;
	}
	pthread_mutex_lock(&reg_mu);
	rt->reg_next = reg_head;
	reg_head = rt;
	pthread_mutex_unlock(&reg_mu);
	*rtp = rt;
	return 0;

out_free:
	rt_free(rt);
	return err;
}

static bool on_shard_of(struct pw_runtime *rt)
{
	return pw__cur_shard && pw__cur_shard->rt == rt;
}

int pw_runtime_destroy(struct pw_runtime *rt)
{
	struct pw_runtime **pp;

	if (!rt)
		return -EINVAL;
	pthread_mutex_lock(&reg_mu);
	for (pp = &reg_head; *pp && *pp != rt; pp = &(*pp)->reg_next)
		;
	if (!*pp) {
		pthread_mutex_unlock(&reg_mu);
		return -EINVAL;
	}
	if (on_shard_of(rt)) {
		pthread_mutex_unlock(&reg_mu);
		return -EDEADLK;
	}
	*pp = rt->reg_next;
	/* No new caller can find it; wait for those inside a push. */
	while (rt->callers)
		pthread_cond_wait(&reg_cv, &reg_mu);
	pthread_mutex_unlock(&reg_mu);
	/* Running blocking jobs finish first, so their results reach shards
	 * that still run; queued ones are dropped with their tasks. */
	pw__pool_stop(&rt->pool);
	stop_shards(rt, rt->nshards);
	rt_free(rt);
	return 0;
}

static int post_spawn(struct pw_runtime *rt, unsigned shard, pw_poll_fn fn,
		      const void *state, size_t size, pw_drop_fn drop,
		      struct pw__blockon *bo)
{
	if (rt->steal) {
		/* Made here and queued on the inject queue, as Tokio's
		 * spawn from outside the runtime. */
		struct pw__task *t;
		int err = bo ? pw__steal_spawn_foreign(rt, &t, blockon_poll, bo,
						       0, NULL) :
			       pw__steal_spawn_foreign(rt, &t, fn, state, size,
						       drop);
		if (err)
			return err;
		if (bo)
			t->flags |= PW__T_BLOCKON;
		if (shard != PW_SHARD_ANY)
			pw__task_fix(t, rt->shards[shard]);
		pw__steal_schedule(t, false);
		return 0;
	}
	struct pw__spawn_msg *m =
		pw__fault_malloc(PW__FAULT_SPAWN, sizeof(*m) + size);

	if (!m)
		return -ENOMEM;
	m->node.kind = PW__MSG_SPAWN;
	m->fn = fn;
	m->drop = drop;
	m->state = state;
	m->size = size;
	m->bo = bo;
	if (size)
		memcpy(m->data, state, size);
	pw__shard_post(rt->shards[shard == PW_SHARD_ANY ? 0 : shard], &m->node);
	return 0;
}

int pw_runtime_spawn(struct pw_runtime *rt, unsigned shard, pw_poll_fn fn,
		     const void *state, size_t size, pw_drop_fn drop)
{
	if (!fn || size > PW_TASK_STATE_MAX || (size && !state))
		return -EINVAL;
	/* On a shard of @rt that is stopping (a drop hook run at shutdown,
	 * when @rt has left the registry): the shard outlives this call. */
	if (on_shard_of(rt) && pw__cur_shard->stopping)
		return -ESHUTDOWN;
	if (!rt_enter(rt))
		return -EINVAL;
	if (shard == PW_SHARD_ANY && !rt->steal)
		/* relaxed: only spreads the load. */
		shard = atomic_fetch_add_explicit(&rt->next_any, 1,
						  memory_order_relaxed) %
			rt->nshards;
	int err = shard >= rt->nshards && shard != PW_SHARD_ANY ?
			  -ENODEV :
			  post_spawn(rt, shard, fn, state, size, drop, NULL);
	rt_leave(rt);
	return err;
}

int pw_block_on(struct pw_runtime *rt, pw_poll_fn fn, void *state,
		int64_t *result)
{
	struct pw__blockon bo = { .fn = fn, .state = state, .rt = rt };

	if (!fn)
		return -EINVAL;
	if (on_shard_of(rt))
		return -EDEADLK;
	if (!rt_enter(rt))
		return -EINVAL;
	pthread_mutex_init(&bo.mu, NULL);
	pthread_cond_init(&bo.cv, NULL);
	bool paused = rt->paused; /* read while @rt is surely alive */
	int err = post_spawn(rt, PW_SHARD_ANY, NULL, NULL, 0, NULL, &bo);
	if (!err && paused) {
		/* The clock may move now: let idle shards look again. */
		atomic_fetch_add(&rt->blockers, 1);
		/* acq_rel: pairs with the exchange in pw__blockon_release(). */
		if (atomic_exchange_explicit(&bo.counted, 1,
					     memory_order_acq_rel) == 2)
			atomic_fetch_sub(&rt->blockers, 1); /* done already */
		for (unsigned i = 0; i < rt->nshards; i++)
			pw__shard_rouse(rt->shards[i]);
	}
	rt_leave(rt);
	if (!err) {
		/* From here on @rt is not touched: pw_runtime_destroy() may
		 * free it as soon as the task is gone. */
		pthread_mutex_lock(&bo.mu);
		while (!bo.done)
			pthread_cond_wait(&bo.cv, &bo.mu);
		pthread_mutex_unlock(&bo.mu);
		err = bo.have ? 0 : bo.err ? bo.err : -ESHUTDOWN;
		if (bo.have && result)
			*result = bo.result;
	}
	pthread_mutex_destroy(&bo.mu);
	pthread_cond_destroy(&bo.cv);
	return err;
}

int pw__runtime_pool_stats(struct pw_runtime *rt, struct pw_blocking_stats *out)
{
	if (!rt_enter(rt))
		return -EINVAL;
	pw__pool_read(&rt->pool, out);
	rt_leave(rt);
	return 0;
}

int pw_runtime_shards(struct pw_runtime *rt)
{
	if (!rt_enter(rt))
		return -EINVAL;
	int n = (int)rt->nshards;
	rt_leave(rt);
	return n;
}

int pw_shard_id(void)
{
	return pw__cur_shard ? (int)pw__cur_shard->id : -EPERM;
}

#define LOAD(f) atomic_load_explicit(&s->stats.f, memory_order_relaxed)

int pw_runtime_stats(struct pw_runtime *rt, unsigned shard,
		     struct pw_shard_stats *out)
{
	if (!out)
		return -EINVAL;
	if (!rt_enter(rt))
		return -EINVAL;
	if (shard >= rt->nshards) {
		rt_leave(rt);
		return -ENODEV;
	}
	struct pw__shard *s = rt->shards[shard];
	memset(out, 0, sizeof(*out));
	out->spawned = LOAD(spawned);
	out->polls = LOAD(polls);
	out->local_wakes = LOAD(local_wakes);
	out->remote_wakes = LOAD(remote_wakes);
	out->inbox_msgs = LOAD(inbox_msgs);
	out->budget_yields = LOAD(budget_yields);
	out->kernel_waits = LOAD(kernel_waits);
	out->wakeups_sent = LOAD(wakeups_sent);
	out->sqes_submitted = LOAD(sqes_submitted);
	out->cqes_reaped = LOAD(cqes_reaped);
	out->slab_chunks = LOAD(slab_chunks);
	out->live_tasks = LOAD(live_tasks);
	out->timers_fired = LOAD(timers_fired);
	out->inflight_ops = LOAD(inflight_ops);
	out->mesh_sent = LOAD(mesh_sent);
	out->mesh_received = LOAD(mesh_received);
	out->mesh_overflowed = LOAD(mesh_overflowed);
	out->msg_rings = LOAD(msg_rings);
	out->clock_reads = LOAD(clock_reads);
	out->defer_taskrun = s->defer;
	out->batch_wait = s->min_wait && rt->cfg.batch_wait_ns;
	out->cpu = (rt->cfg.flags & PW_CONFIG_NO_PIN) ? -1 : s->cpu;
	rt_leave(rt);
	return 0;
}

const char *pw_version(void)
{
	return PW_VERSION;
}

bool pw__rt_enter(struct pw_runtime *rt)
{
	return rt_enter(rt);
}

void pw__rt_leave(struct pw_runtime *rt)
{
	rt_leave(rt);
}
