/* SPDX-License-Identifier: MIT */
/*
 * loop.c - the shard thread: its start, its loop, its stop.
 *
 * Each shard is one pinned thread (pw__shard_main()) running shard_loop();
 * every turn does, in order:
 *
 *   1. start a new turn of the clock: the next pw__now() reads it afresh
 *      (pw__time_turn()), unless the wait that ended the last turn just
 *      read it (busy time, below);
 *   2. drain the external inbox, at most 4096 nodes: remote wakes and
 *      drops, spawns from other threads, finished blocking jobs
 *      (drain_inbox());
 *   3. drain the mesh: run the messages other shards sent (pw__mesh_drain());
 *   4. if pw_runtime_destroy() raised the stop flag, begin the shutdown:
 *      drop every task (begin_stop());
 *   5. poll up to cfg.batch ready tasks, FIFO (pw__task_run());
 *   6. fire expired timers (pw__time_fire());
 *   7. publish the messages staged for other shards (pw__mesh_flush())
 *      and this turn's counters (pw__shard_publish_stats());
 *   8. once stopping with no inbox node left and every shard quiet,
 *      withdraw the eventfd read and leave (final_cancel());
 *   9. if tasks are ready, submit queued SQEs, entering the kernel only
 *      when there is something to submit or it flagged completions
 *      (poke()); otherwise idle-poll for cfg.idle_poll_ns, then publish
 *      "asleep", re-check the inbox, mesh and stop flag, and wait once in
 *      the kernel bounded by the next timer (sleep_in_kernel());
 *  10. reap every CQE in one batch, waking their tasks (reap()).
 *
 * In stealing mode the worker loop (steal.c) runs instead and calls
 * pw__shard_events() for steps 7, 9, 10, 1, 6, 2 and 3, in that order.
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
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/blocking_int.h"
#include "core/fault.h"
#include "net/net_int.h"
#include "numa/mem_int.h"
#include "shard/mesh_int.h"
#include "shard/op_int.h"
#include "shard/sched.h"
#include "shard/shard_int.h"
#include "shard/steal.h"
#include "timer/time_int.h"

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

/*
 * Counters kept as plain fields elsewhere, published once per turn and
 * before a pw_block_on() caller is released (pw__blockon_release()).
 */
void pw__shard_publish_stats(struct pw__shard *s)
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
			pw__runtime_spawn_arrived(s, n);
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

/*
 * Busy time in shard mode (stealing mode keeps its own, steal.c): the
 * time between the end of one kernel wait and the start of the next, on
 * the shard's clock. Both ends are read only on the way into and out of
 * a wait, next to its system call: the clock read on waking is kept by
 * the next turn as its now (clock_fresh) instead of reading again, so a
 * turn that does not wait reads the clock as before (at most once, at
 * its first use) and one that waits reads it once more, at the wait.
 * Not under the paused clock, where time stands still.
 */
static inline bool busy_tracked(const struct pw__shard *s)
{
	return !s->w && !s->rt->paused;
}

static void busy_end(struct pw__shard *s)
{
	pw__time_update(s);
	if (s->now_ns > s->woke_ns)
		PW__STAT_ADD(s, busy_ns, s->now_ns - s->woke_ns);
}

static void busy_begin(struct pw__shard *s)
{
	pw__time_update(s);
	s->woke_ns = s->now_ns;
	s->clock_fresh = true;
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
	bool busy = busy_tracked(s);
	if (busy)
		busy_end(s);
	if (s->rt->cfg.batch_wait_ns && s->min_wait)
		batch_wait(s, tsp, wait_ns);
	else
		io_uring_submit_and_wait_timeout(&s->ring, &cqe, 1, tsp, NULL);
	if (busy)
		busy_begin(s);
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
	pw__shard_publish_stats(s);
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

	s->woke_ns = s->now_ns; /* busy from here on (pw__time_init read it) */
	for (;;) {
		if (s->clock_fresh)
			s->clock_fresh = false; /* read on waking: keep it */
		else
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
		pw__shard_publish_stats(s);
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
void pw__shard_never_runs(struct pw__shard *s)
{
	/* seq_cst store: read by scan() on the shards that started (pairs
	 * with its seq_cst loads); they only look once they are stopped,
	 * after pw_runtime_create() saw this shard's start report. */
	atomic_store(&s->quiet, 1);
}

void *pw__shard_main(void *arg)
{
	struct pw__shard *s = arg;
	struct pw_runtime *rt = s->rt;

	pw__cur_shard = s;
	int err = shard_start(s);

	if (err)
		pw__shard_never_runs(s);
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
