/* SPDX-License-Identifier: MIT */
/*
 * shard.c - the runtime: its set-up and teardown, spawns and pw_block_on()
 * from threads outside it, and its statistics. The shard threads it
 * starts run shard/loop.c (or the stealing workers of shard/steal.c).
 *
 * Handles passed in by other threads are checked against a registry of
 * live runtimes (rt_enter()), so a call racing pw_runtime_destroy() gets
 * -EINVAL, never freed memory: destroy unlinks the runtime, then waits
 * for the callers inside before it stops the shards.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blocking_int.h"
#include "core/fault.h"
#include "numa/mem_int.h"
#include "pinwheel/topo.h"
#include "pinwheel/version.h"
#include "shard/mesh_int.h"
#include "shard/rjoin.h"
#include "shard/shard_int.h"
#include "shard/steal.h"
#include "timer/time_int.h"

/* A spawn or block_on request from another thread. */
struct pw__spawn_msg {
	struct pw__mpsc_node node;
	pw_poll_fn fn;
	pw_drop_fn drop;
	const void *state;
	size_t size;
	size_t out; /* output area (pw__runtime_spawn_out()), or 0 */
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

static void blockon_signal(struct pw__blockon *bo)
{
	pthread_mutex_lock(&bo->mu);
	bo->done = true;
	pthread_cond_signal(&bo->cv);
	pthread_mutex_unlock(&bo->mu);
}

void pw__blockon_release(void *state)
{
	struct pw__shard *s = pw__cur_shard;

	/* The counters published at the end of the last turn may predate
	 * everything the task did in this one (its spawns, its SQEs): the
	 * caller, once back, reads them as they are now. */
	struct pw__blockon *bo = state;

	if (s)
		pw__shard_publish_stats(s);
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

void pw__runtime_spawn_arrived(struct pw__shard *s, struct pw__mpsc_node *n)
{
	struct pw__spawn_msg *m =
		pw_container_of(n, struct pw__spawn_msg, node);
	const void *st = m->size ? m->data : m->state;
	struct pw__task *t;
	int err = -ESHUTDOWN;

	if (!s->stopping) {
		if (m->bo)
			err = pw__task_new(s, &t, blockon_poll, m->bo, 0, NULL);
		else if (m->out)
			err = pw__task_new(s, &t, m->fn, NULL,
					   pw__task_out_block(m->out, m->size),
					   m->drop);
		else
			err = pw__task_new(s, &t, m->fn, st, m->size, m->drop);
	}
	if (!err && m->out)
		pw__task_out_layout(t, m->out, st, m->size);
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
				m->drop((void *)st);
		}
	}
	free(m);
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

/* A runtime record for @cfg (checked), its memory placed; no shard yet.
 * NULL with *@err set on failure. */
static struct pw_runtime *rt_alloc(const struct pw_config *cfg, int *err)
{
	struct pw_runtime *rt =
		pw__fault_calloc(PW__FAULT_RUNTIME, 1, sizeof(*rt));

	if (!rt) {
		*err = -ENOMEM;
		return NULL;
	}
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
	*err = !rt->shards ? -ENOMEM : pw__mem_place(rt);
	rt->cfg.cpus = NULL; /* the caller's array need not outlive us */
	if (!rt->cfg.mesh_slots)
		rt->cfg.mesh_slots = rt->nshards > 16 ? 64 : 256;
	return rt;
}

/* The shard records, the mesh, the stealing scheduler and the blocking
 * pool of @rt: everything but the threads. */
static int rt_build(struct pw_runtime *rt)
{
	for (unsigned i = 0; i < rt->nshards; i++) {
		struct pw__shard *s = pw__fault_aligned_alloc(
			PW__FAULT_RUNTIME, 4096,
			(sizeof(*s) + 4095) & ~(size_t)4095);
		if (!s)
			return -ENOMEM;
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
	int err = pw__mesh_create(rt);
	if (!err && rt->cfg.sched == PW_SCHED_STEAL)
		err = pw__steal_create(rt);
	if (err)
		return err;
	pw__pool_init(&rt->pool, rt->cfg.max_blocking_threads,
		      rt->cfg.blocking_keep_alive_ns);
	rt->pool_live = true;
	return 0;
}

/* Start @rt's shard threads and wait for each to report its set-up. On
 * failure the threads that started are stopped again. */
static int rt_launch(struct pw_runtime *rt)
{
	unsigned launched = 0;
	int err = 0;

	for (; launched < rt->nshards; launched++) {
		struct pw__shard *s = rt->shards[launched];
		err = pw__fault(PW__FAULT_THREAD) ?
			      -EAGAIN :
			      -pthread_create(&s->thread, NULL, pw__shard_main,
					      s);
		if (err)
			break;
	}
	for (unsigned i = launched; i < rt->nshards; i++)
		pw__shard_never_runs(rt->shards[i]);
	pthread_mutex_lock(&rt->start_mu);
	while (rt->started < launched)
		pthread_cond_wait(&rt->start_cv, &rt->start_mu);
	pthread_mutex_unlock(&rt->start_mu);
	for (unsigned i = 0; !err && i < launched; i++)
		err = rt->shards[i]->start_err;
	if (err)
		stop_shards(rt, launched);
	return err;
}

int pw_runtime_create(struct pw_runtime **rtp, const struct pw_config *cfg)
{
	struct pw_config defaults;
	struct pw_runtime *rt;
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
	rt = rt_alloc(cfg, &err);
	if (!err)
		err = rt_build(rt);
	if (!err)
		err = rt_launch(rt);
	if (err) {
		if (rt)
			rt_free(rt);
		return err;
	}
	pthread_mutex_lock(&reg_mu);
	rt->reg_next = reg_head;
	reg_head = rt;
	pthread_mutex_unlock(&reg_mu);
	*rtp = rt;
	return 0;
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

/* Stealing mode's post_spawn(): made here and queued on the inject
 * queue, as Tokio's spawn from outside the runtime. */
static int post_foreign(struct pw_runtime *rt, unsigned shard, pw_poll_fn fn,
			const void *state, size_t size, pw_drop_fn drop,
			size_t out, struct pw__blockon *bo)
{
	struct pw__task *t;
	int err;

	if (bo)
		err = pw__steal_spawn_foreign(rt, &t, blockon_poll, bo, 0,
					      NULL);
	else if (out)
		err = pw__steal_spawn_foreign(
			rt, &t, fn, NULL, pw__task_out_block(out, size), drop);
	else
		err = pw__steal_spawn_foreign(rt, &t, fn, state, size, drop);
	if (err)
		return err;
	if (out)
		pw__task_out_layout(t, out, state, size);
	if (bo)
		t->flags |= PW__T_BLOCKON;
	if (shard != PW_SHARD_ANY)
		pw__task_fix(t, rt->shards[shard]);
	pw__steal_schedule(t, false);
	return 0;
}

static int post_spawn(struct pw_runtime *rt, unsigned shard, pw_poll_fn fn,
		      const void *state, size_t size, pw_drop_fn drop,
		      size_t out, struct pw__blockon *bo)
{
	if (rt->steal)
		return post_foreign(rt, shard, fn, state, size, drop, out, bo);
	struct pw__spawn_msg *m =
		pw__fault_malloc(PW__FAULT_SPAWN, sizeof(*m) + size);

	if (!m)
		return -ENOMEM;
	m->node.kind = PW__MSG_SPAWN;
	m->fn = fn;
	m->drop = drop;
	m->state = state;
	m->size = size;
	m->out = out;
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
	return pw__runtime_spawn_out(rt, shard, fn, state, size, drop, 0);
}

int pw__runtime_spawn_out(struct pw_runtime *rt, unsigned shard, pw_poll_fn fn,
			  const void *state, size_t size, pw_drop_fn drop,
			  size_t out)
{
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
	int err =
		shard >= rt->nshards && shard != PW_SHARD_ANY ?
			-ENODEV :
			post_spawn(rt, shard, fn, state, size, drop, out, NULL);
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
	int err = post_spawn(rt, PW_SHARD_ANY, NULL, NULL, 0, NULL, 0, &bo);
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
