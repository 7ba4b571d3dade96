/* SPDX-License-Identifier: MIT */
/*
 * steal.c - stealing mode: Tokio's multi-thread scheduler on pinwheel's
 * workers (docs/stealing.md; the facts are Tokio 1.5x's, where 1.24
 * differs the comments say so).
 *
 * Each worker is a shard thread: its own io_uring ring, timer wheel, slab
 * and inbox, plus a 256-slot local queue and a LIFO slot. Runnable tasks
 * sit in the LIFO slot, a local queue, or the runtime's inject queue.
 *
 *   - A task woken on a worker goes to that worker's LIFO slot (the old
 *     occupant to the back of the local queue, with a notify); a task that
 *     woke itself while polled goes to the back (is_yield). A wake on any
 *     other thread goes to the inject queue and notifies a parked worker.
 *   - A full local queue moves its newest 128 tasks and the new one to the
 *     inject queue in one batch (1.24 moves the oldest 128).
 *   - Each tick polls one task: every global_queue_interval ticks the
 *     inject queue first; otherwise the LIFO slot, the local queue, then a
 *     batch from the inject queue. At most 3 LIFO polls follow one task.
 *   - Out of work, a worker searches (at most half of them at once): it
 *     steals half of a victim's queue, rounded up, starting at a random
 *     victim, then tries the inject queue, then parks.
 *   - Every event_interval ticks, and whenever it parks, the worker polls
 *     its ring, timers, inbox and mesh; completions and timers wake tasks
 *     through this worker's schedule_local, as Tokio's driver does.
 *
 * Timers and I/O stay per core: an operation is registered with the
 * ring or wheel of the worker that polled it and pins its task there.
 * A pinned task is bound to that worker: whichever worker obtains it
 * hands it over (the mesh, or the inbox from other threads) and the bound
 * worker polls it, so a wheel or ring is only ever touched by its owner.
 * Tasks without operations in flight, the common case for the counts
 * Tokio documents, move exactly as Tokio's do.
 *
 * Parking: a worker parks in its ring (io_uring_submit_and_wait_timeout
 * bounded by its next timer); a notifier sets its unpark flag and rouses
 * it through the eventfd, with the asleep-flag handshake of loop.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fault.h"
#include "shard/mesh_int.h"
#include "shard/sched.h"
#include "shard/steal.h"
#include "timer/time_int.h"

#define MAX_LIFO_POLLS	  3
#define TARGET_GQI_NS	  200000.0 /* 200 us between inject checks */
#define MAX_GQI		  127u
#define MIN_GQI		  2u
#define EWMA_ALPHA_KEEP	  0.9 /* 1 - Tokio's alpha of 0.1 */
#define IDLE_UNPARKED_ONE (1ull << 32)
#define IDLE_SEARCHING(v) ((uint32_t)(v))
#define IDLE_UNPARKED(v)  ((uint32_t)((v) >> 32))

#define WSTAT_ADD(w, f, n)                                                    \
	atomic_store_explicit(                                                \
		&(w)->st.f,                                                   \
		atomic_load_explicit(&(w)->st.f, memory_order_relaxed) + (n), \
		memory_order_relaxed)

static inline struct pw__steal *sh(struct pw__shard *s)
{
	return s->rt->steal;
}

/* ---- the queues (queue.h) ---------------------------------------------- */

static void push_back_or_overflow(struct pw__shard *s, struct pw__task *t)
{
	switch (pw__lq_push(&s->w->q, &sh(s)->inj, t)) {
	case PW__LQ_PUSHED:
		break;
	case PW__LQ_OVERFLOWED:
		s->w->overflows++;
		break;
	case PW__LQ_INJECTED:
		/* relaxed: a counter (a thief was at work: a remote
		 * schedule, as Tokio counts it). */
		atomic_fetch_add_explicit(&sh(s)->remote_schedules, 1,
					  memory_order_relaxed);
		break;
	}
}

/* Steal half of @v's local queue into @s's; a task to run, or NULL. */
static struct pw__task *lq_steal(struct pw__shard *s, struct pw__shard *v)
{
	uint32_t n;
	struct pw__task *t = pw__lq_steal_into(&s->w->q, &v->w->q, &n);

	if (t) {
		s->w->steals += n;
		s->w->steal_ops++;
	}
	return t;
}

/* ---- idle workers ------------------------------------------------------- */

static bool to_searching(struct pw__shard *s)
{
	struct pw__steal *g = sh(s);

	if (!s->w->searching) {
		/* seq_cst: the idle word orders against work pushes. */
		uint64_t v = atomic_load(&g->idle);
		if (2 * IDLE_SEARCHING(v) >= s->rt->nshards)
			return false;
		atomic_fetch_add(&g->idle, 1);
		s->w->searching = true;
	}
	return true;
}

static void notify_parked(struct pw_runtime *rt);

static void from_searching(struct pw__shard *s)
{
	if (!s->w->searching)
		return;
	s->w->searching = false;
	/* seq_cst: pairs with notify_parked()'s load. */
	if (IDLE_SEARCHING(atomic_fetch_sub(&sh(s)->idle, 1)) == 1)
		notify_parked(s->rt); /* the last searcher found work */
}

static bool should_wake(struct pw_runtime *rt)
{
	/* seq_cst: after the caller's push of work; pairs with the
	 * parking worker's update of the idle word before its last check. */
	uint64_t v = atomic_load(&rt->steal->idle);

	return IDLE_SEARCHING(v) == 0 && IDLE_UNPARKED(v) < rt->nshards;
}

static void unpark(struct pw__shard *w)
{
	/* seq_cst: pairs with the worker's seq_cst asleep store and its
	 * load of unpark in sleep_in_kernel(). */
	atomic_store(&w->w->unpark, 1);
	pw__shard_rouse(w);
}

/* Wake the most recently parked worker, as searching, unless a worker
 * is searching already or none is parked. Any thread. */
static void notify_parked(struct pw_runtime *rt)
{
	struct pw__steal *g = rt->steal;

	if (!should_wake(rt))
		return;
	pthread_mutex_lock(&g->idle_mu);
	if (!should_wake(rt) || !g->nsleepers) {
		pthread_mutex_unlock(&g->idle_mu);
		return;
	}
	atomic_fetch_add(&g->idle, IDLE_UNPARKED_ONE + 1);
	unsigned id = g->sleepers[--g->nsleepers];
	pthread_mutex_unlock(&g->idle_mu);
	unpark(rt->shards[id]);
}

/* Returns true when this was the last searching worker. */
static bool to_parked(struct pw__shard *s)
{
	struct pw__steal *g = sh(s);
	bool was = s->w->searching;

	pthread_mutex_lock(&g->idle_mu);
	uint64_t prev =
		atomic_fetch_sub(&g->idle, IDLE_UNPARKED_ONE + (was ? 1 : 0));
	g->sleepers[g->nsleepers++] = s->id;
	pthread_mutex_unlock(&g->idle_mu);
	s->w->searching = false;
	return was && IDLE_SEARCHING(prev) == 1;
}

/* Remove @s from the sleepers if it is there (woken by its own events). */
static bool unpark_by_id(struct pw__shard *s)
{
	struct pw__steal *g = sh(s);
	bool found = false;

	pthread_mutex_lock(&g->idle_mu);
	for (unsigned i = 0; i < g->nsleepers; i++) {
		if (g->sleepers[i] == s->id) {
			memmove(&g->sleepers[i], &g->sleepers[i + 1],
				(g->nsleepers - i - 1) * sizeof(unsigned));
			g->nsleepers--;
			atomic_fetch_add(&g->idle, IDLE_UNPARKED_ONE);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&g->idle_mu);
	return found;
}

static bool is_parked(struct pw__shard *s)
{
	struct pw__steal *g = sh(s);
	bool found = false;

	pthread_mutex_lock(&g->idle_mu);
	for (unsigned i = 0; i < g->nsleepers && !found; i++)
		found = g->sleepers[i] == s->id;
	pthread_mutex_unlock(&g->idle_mu);
	return found;
}

/* The last searcher parks: make sure queued work is not left behind. */
static void notify_if_work_pending(struct pw__shard *s)
{
	struct pw_runtime *rt = s->rt;

	for (unsigned i = 0; i < rt->nshards; i++) {
		if (rt->shards[i] != s && pw__lq_len(&rt->shards[i]->w->q)) {
			notify_parked(rt);
			return;
		}
	}
	if (pw__inject_len(&sh(s)->inj))
		notify_parked(rt);
}

/* ---- scheduling --------------------------------------------------------- */

static inline bool has_local_work(struct pw__worker *w)
{
	return w->lifo || w->bound_h || pw__lq_len(&w->q);
}

static void bound_push(struct pw__worker *w, struct pw__task *t)
{
	t->next = NULL;
	if (w->bound_t)
		w->bound_t->next = t;
	else
		w->bound_h = t;
	w->bound_t = t;
}

static struct pw__task *bound_pop(struct pw__worker *w)
{
	struct pw__task *t = w->bound_h;

	if (t) {
		w->bound_h = t->next;
		if (!w->bound_h)
			w->bound_t = NULL;
	}
	return t;
}

/* a0: the task, for this worker's bound queue. */
static void forward_handler(const struct pw__msg *m)
{
	bound_push(pw__cur_shard->w, m->a0);
}

/* Hand @t to the worker its pins bind it to. */
static void forward(struct pw__task *t, struct pw__shard *to)
{
	struct pw__shard *cur = pw__cur_shard;

	if (cur == to) {
		bound_push(cur->w, t);
		return;
	}
	if (cur && cur->rt == to->rt) {
		struct pw__msg m = { .fn = forward_handler, .a0 = t };
		cur->w->forwarded++;
		if (pw__mesh_send(cur, to->id, &m) == 0)
			return;
	}
	t->inbox.kind = PW__MSG_TASK;
	pw__shard_post(to, &t->inbox);
}

static void schedule_local(struct pw__shard *s, struct pw__task *t,
			   bool is_yield)
{
	struct pw__worker *w = s->w;
	bool notify = true;

	w->local_sched++;
	if (is_yield || !w->lifo_enabled) {
		push_back_or_overflow(s, t);
	} else {
		struct pw__task *prev = w->lifo;
		w->lifo = t;
		if (prev)
			push_back_or_overflow(s, prev);
		notify = prev != NULL;
	}
	if (notify && !w->in_park)
		notify_parked(s->rt);
}

void pw__steal_schedule(struct pw__task *t, bool is_yield)
{
	struct pw__shard *cur = pw__cur_shard;
	struct pw_runtime *rt = t->shard->rt;

	if (t->fixed || pw__pins(t)) {
		forward(t, t->bound);
		return;
	}
	if (cur && cur->rt == rt && cur->w && !cur->exiting) {
		schedule_local(cur, t, is_yield);
		return;
	}
	pw__inject_push(&rt->steal->inj, t, t, 1);
	/* relaxed: a counter. */
	atomic_fetch_add_explicit(&rt->steal->remote_schedules, 1,
				  memory_order_relaxed);
	notify_parked(rt);
}

void pw__steal_inbox(struct pw__shard *s, struct pw__task *t)
{
	if (t->inbox.kind == PW__MSG_FREE)
		pw__slab_free(&s->slab, t, t->cls);
	else
		bound_push(s->w, t);
}

/* a0: the task, back at its home shard's slab. */
static void free_handler(const struct pw__msg *m)
{
	struct pw__task *t = m->a0;

	pw__slab_free(&pw__cur_shard->slab, t, t->cls);
}

void pw__steal_free(struct pw__task *t)
{
	struct pw__shard *home = t->shard, *cur = pw__cur_shard;

	if (t->flags & PW__T_FIBER)
		pw__fiber_task_free(t);
	if (t->flags & PW__T_FOREIGN) {
		struct pw__steal *g = home->rt->steal;
		pthread_mutex_lock(&g->fslab_mu);
		pw__slab_free(&g->fslab, t, t->cls);
		pthread_mutex_unlock(&g->fslab_mu);
		return;
	}
	if (cur == home) {
		pw__slab_free(&home->slab, t, t->cls);
		return;
	}
	if (cur && cur->rt == home->rt) {
		struct pw__msg m = { .fn = free_handler, .a0 = t };
		if (pw__mesh_send(cur, home->id, &m) == 0)
			return;
	}
	t->inbox.kind = PW__MSG_FREE;
	pw__shard_post(home, &t->inbox);
}

int pw__steal_spawn_foreign(struct pw_runtime *rt, struct pw__task **tp,
			    pw_poll_fn fn, const void *state, size_t size,
			    pw_drop_fn drop)
{
	struct pw__steal *g = rt->steal;
	int cls = pw__slab_class(PW__TASK_HDR + size);

	if (cls < 0)
		return -EINVAL;
	pthread_mutex_lock(&g->fslab_mu);
	struct pw__task *t = pw__slab_alloc(&g->fslab, cls);
	if (t) {
		pw__task_init(t, rt->shards[0], cls, fn, state, size, drop,
			      true);
		t->flags |= PW__T_FOREIGN;
	}
	pthread_mutex_unlock(&g->fslab_mu);
	if (!t)
		return -ENOMEM;
	/* relaxed: a counter. */
	atomic_fetch_add_explicit(&g->spawned, 1, memory_order_relaxed);
	*tp = t;
	return 0;
}

/* ---- statistics ------------------------------------------------------- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void batch_start(struct pw__worker *w)
{
	w->batch_start_ns = mono_ns();
	w->batch_polls = w->polls;
}

/* A batch of polls ends: fold its mean poll time into the EWMA. */
static void batch_end(struct pw__worker *w)
{
	uint64_t n = w->polls - w->batch_polls;

	if (!n)
		return;
	double mean = (double)(mono_ns() - w->batch_start_ns) / (double)n;
	double keep = 1.0, f = EWMA_ALPHA_KEEP;
	for (uint64_t e = n; e && keep > 1e-12; e >>= 1, f *= f)
		if (e & 1)
			keep *= f;
	w->ewma_ns = (1.0 - keep) * mean + keep * w->ewma_ns;
	w->batch_polls = w->polls;
}

static void tune_interval(struct pw__shard *s)
{
	struct pw__worker *w = s->w;

	if (s->rt->cfg.global_queue_interval != PW_INTERVAL_AUTO)
		return;
	double per = w->ewma_ns > 0 ? TARGET_GQI_NS / w->ewma_ns : MAX_GQI;
	uint32_t next = per >= MAX_GQI ? MAX_GQI :
			per <= MIN_GQI ? MIN_GQI :
					 (uint32_t)per;
	uint32_t diff = next > w->gqi ? next - w->gqi : w->gqi - next;
	if (diff > 2)
		w->gqi = next;
}

static void pub_stats(struct pw__shard *s)
{
	struct pw__worker *w = s->w;
	/* relaxed: statistics for readers on other threads. */
#define PUB(f, v) atomic_store_explicit(&w->st.f, (v), memory_order_relaxed)
	PUB(polls, w->polls);
	PUB(steal_count, w->steals);
	PUB(steal_operations, w->steal_ops);
	PUB(overflow_count, w->overflows);
	PUB(park_count, w->parks);
	PUB(park_unpark_count, w->park_unparks);
	PUB(noop_count, w->noops);
	PUB(local_schedule_count, w->local_sched);
	PUB(busy_ns, w->busy_ns);
	PUB(mean_poll_ns, (uint64_t)w->ewma_ns);
	PUB(forwarded, w->forwarded);
#undef PUB
	atomic_store_explicit(&s->stats.polls, w->polls, memory_order_relaxed);
}

/* ---- the worker loop -------------------------------------------------- */

/* The next task of the LIFO slot, the local queue or the inject queue,
 * as Tokio's worker takes them. */
static struct pw__task *next_unbound(struct pw__shard *s)
{
	struct pw__worker *w = s->w;
	struct pw__steal *g = sh(s);
	struct pw__task *t, *first;

	if (w->tick % w->gqi == 0) {
		tune_interval(s);
		if (pw__inject_pop(&g->inj, 1, &t))
			return t;
		if ((t = w->lifo)) {
			w->lifo = NULL;
			return t;
		}
		return pw__lq_pop(&w->q);
	}
	if ((t = w->lifo)) {
		w->lifo = NULL;
		return t;
	}
	if ((t = pw__lq_pop(&w->q)))
		return t;
	uint64_t glen = pw__inject_len(&g->inj);
	if (!glen)
		return NULL;
	uint32_t room = pw__lq_room(&w->q);
	uint64_t n = glen / s->rt->nshards + 1;
	if (n > room)
		n = room;
	if (n > PW__LQ_CAP / 2)
		n = PW__LQ_CAP / 2;
	if (!n)
		n = 1;
	uint32_t got = pw__inject_pop(&g->inj, (uint32_t)n, &first);
	if (!got)
		return NULL;
	/* The first to run now, the rest to the local queue. */
	pw__lq_fill(&w->q, first->next, got - 1);
	return first;
}

/*
 * The bound queue (tasks whose pins or placement keep them here) and the
 * queues Tokio's worker has take turns: a bound task that keeps yielding
 * cannot starve the local and inject queues, nor they it.
 */
static struct pw__task *next_task(struct pw__shard *s)
{
	struct pw__worker *w = s->w;
	struct pw__task *t;

	if (!w->bound_last && (t = bound_pop(w))) {
		w->bound_last = true;
		return t;
	}
	w->bound_last = false;
	if ((t = next_unbound(s)))
		return t;
	if ((t = bound_pop(w)))
		w->bound_last = true;
	return t;
}

static struct pw__task *steal_work(struct pw__shard *s)
{
	struct pw_runtime *rt = s->rt;
	struct pw__worker *w = s->w;
	struct pw__task *t;
	unsigned n = rt->nshards;

	if (!to_searching(s))
		return NULL;
	/* xorshift64 */
	w->rand ^= w->rand << 13;
	w->rand ^= w->rand >> 7;
	w->rand ^= w->rand << 17;
	unsigned start = (unsigned)(w->rand % n);
	for (unsigned i = 0; i < n; i++) {
		unsigned v = (start + i) % n;
		if (v == s->id)
			continue;
		if ((t = lq_steal(s, rt->shards[v])))
			return t;
	}
	return pw__inject_pop(&sh(s)->inj, 1, &t) ? t : NULL;
}

/* Poll @t unless its pins bind it elsewhere. */
static void poll_one(struct pw__shard *s, struct pw__task *t, int *budget)
{
	if ((t->fixed || pw__pins(t)) && t->bound != s) {
		forward(t, t->bound);
		return;
	}
	s->w->polls++;
	pw__task_poll_steal(s, t, budget);
}

static void run_task(struct pw__shard *s, struct pw__task *t)
{
	struct pw__worker *w = s->w;
	int budget = PW_COOP_BUDGET;
	unsigned lifo_polls = 0;

	from_searching(s);
	poll_one(s, t, &budget);
	while ((t = w->lifo)) {
		w->lifo = NULL;
		if (!budget) {
			push_back_or_overflow(s, t);
			break;
		}
		if (++lifo_polls >= MAX_LIFO_POLLS)
			w->lifo_enabled = false;
		poll_one(s, t, &budget);
	}
	w->lifo_enabled = !(s->rt->cfg.flags & PW_CONFIG_NO_LIFO);
}

/* Poll the ring, timers, inbox and mesh; sleep first if @sleep. */
static void events(struct pw__shard *s, bool sleep)
{
	pw__shard_events(s, sleep);
	if (!s->stopping && atomic_load(&s->stop))
		pw__steal_begin_stop(s);
}

static void maintenance(struct pw__shard *s)
{
	struct pw__worker *w = s->w;

	if (w->tick % s->rt->cfg.event_interval)
		return;
	batch_end(w);
	events(s, false);
	pub_stats(s);
	batch_start(w);
}

static bool should_notify_others(struct pw__worker *w)
{
	return !w->searching && (w->lifo ? 1 : 0) + pw__lq_len(&w->q) > 1;
}

static bool from_parked(struct pw__shard *s)
{
	struct pw__worker *w = s->w;

	if (has_local_work(w) || s->stopping) {
		/* Woken by its own events: leave the sleepers unless a
		 * notifier took it out (then it is searching). */
		w->searching = !unpark_by_id(s);
		return true;
	}
	if (is_parked(s))
		return false;
	w->searching = true;
	return true;
}

static void park(struct pw__shard *s)
{
	struct pw__worker *w = s->w;

	if (has_local_work(w))
		return;
	if (to_parked(s))
		notify_if_work_pending(s);
	w->in_park = true;
	for (;;) {
		w->parks++;
		w->park_unparks++;
		if (w->polls_at_park == w->polls)
			w->noops++;
		w->polls_at_park = w->polls;
		w->busy_ns += mono_ns() - w->resume_ns;
		pub_stats(s);
		events(s, true);
		/* seq_cst: pairs with unpark(); a later notify sets it again. */
		atomic_store(&w->unpark, 0);
		w->park_unparks++;
		w->resume_ns = mono_ns();
		if (from_parked(s))
			break;
	}
	w->in_park = false;
	if (should_notify_others(w))
		notify_parked(s->rt);
}

bool pw__steal_has_work(struct pw__shard *s)
{
	return has_local_work(s->w) || pw__inject_len(&sh(s)->inj);
}

static void abort_block(void *blk, void *arg)
{
	struct pw__task *t = blk;
	(void)arg;

	/* relaxed: a hint; pw__task_abort_steal() re-checks. */
	if (!(atomic_load_explicit(&t->remote, memory_order_relaxed) &
	      PW__S_COMPLETE))
		pw__task_abort_steal(t);
}

void pw__steal_begin_stop(struct pw__shard *s)
{
	struct pw__steal *g = sh(s);

	s->stopping = true;
	pw__slab_walk(&s->slab, abort_block, NULL);
	if (s->id == 0) {
		pthread_mutex_lock(&g->fslab_mu);
		pw__slab_walk(&g->fslab, abort_block, NULL);
		pthread_mutex_unlock(&g->fslab_mu);
	}
}

void pw__steal_loop(struct pw__shard *s)
{
	struct pw__worker *w = s->w;

	w->resume_ns = mono_ns();
	batch_start(w);
	for (;;) {
		w->tick++;
		maintenance(s);
		struct pw__task *t = next_task(s);
		if (t) {
			run_task(s, t);
			continue;
		}
		batch_end(w);
		t = steal_work(s);
		if (t) {
			batch_start(w);
			run_task(s, t);
			continue;
		}
		pw__mesh_flush(s);
		if (s->stopping && pw__mpsc_empty(&s->inbox) &&
		    pw__mesh_stop_done(s)) {
			pub_stats(s);
			pw__shard_final(s);
			break;
		}
		park(s);
		batch_start(w);
	}
}

/* ---- set-up ------------------------------------------------------------- */

int pw__steal_create(struct pw_runtime *rt)
{
	struct pw__steal *g =
		pw__fault_calloc(PW__FAULT_RUNTIME, 1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->sleepers = pw__fault_calloc(PW__FAULT_RUNTIME, rt->nshards,
				       sizeof(unsigned));
	if (!g->sleepers) {
		free(g);
		return -ENOMEM;
	}
	pw__inject_init(&g->inj);
	pthread_mutex_init(&g->idle_mu, NULL);
	pthread_mutex_init(&g->fslab_mu, NULL);
	pw__slab_init(&g->fslab);
	/* Every worker starts unparked, none searching. */
	atomic_init(&g->idle, (uint64_t)rt->nshards << 32);
	rt->steal = g;
	for (unsigned i = 0; i < rt->nshards; i++) {
		struct pw__shard *s = rt->shards[i];
		struct pw__worker *w = pw__fault_aligned_alloc(
			PW__FAULT_RUNTIME, 64, (sizeof(*w) + 63) & ~(size_t)63);
		if (!w)
			return -ENOMEM;
		memset(w, 0, sizeof(*w));
		w->gqi = rt->cfg.global_queue_interval == PW_INTERVAL_AUTO ?
				 61 :
				 rt->cfg.global_queue_interval;
		w->ewma_ns = TARGET_GQI_NS / 61;
		w->lifo_enabled = !(rt->cfg.flags & PW_CONFIG_NO_LIFO);
		w->rand = 0x9e3779b97f4a7c15ull * (i + 1);
		s->w = w;
	}
	return 0;
}

void pw__steal_destroy(struct pw_runtime *rt)
{
	struct pw__steal *g = rt->steal;

	if (!g)
		return;
	for (unsigned i = 0; rt->shards && i < rt->nshards; i++)
		if (rt->shards[i]) {
			free(rt->shards[i]->w);
			rt->shards[i]->w = NULL;
		}
	pw__slab_destroy(&g->fslab);
	pw__inject_destroy(&g->inj);
	pthread_mutex_destroy(&g->idle_mu);
	pthread_mutex_destroy(&g->fslab_mu);
	free(g->sleepers);
	free(g);
	rt->steal = NULL;
}

uint32_t pw__steal_local_len(struct pw__shard *s)
{
	return pw__lq_len(&s->w->q);
}

uint64_t pw__steal_global_len(struct pw_runtime *rt)
{
	return pw__inject_len(&rt->steal->inj);
}
