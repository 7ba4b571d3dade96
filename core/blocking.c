/* SPDX-License-Identifier: MIT */
/*
 * blocking.c - the blocking pool (see pinwheel/blocking.h).
 *
 * One pool per runtime: a mutex, a condition variable, an unbounded FIFO
 * of jobs (intrusive, through pw_blocking.next) and counts of threads and
 * idle threads. Spawning queues the job, then signals an idle thread, or
 * starts one while fewer than max_blocking_threads exist, or leaves the job
 * queued (at the cap). A pool thread runs jobs until the queue stays empty
 * for the keep-alive time, then exits. The pool is not on any shard's hot
 * path, so a mutex is the simple, right tool here.
 *
 * A job's result travels back through the spawning shard's inbox: the
 * pool thread stores it, then pushes the job's embedded inbox node (the
 * push releases the store; the shard's pop acquires it). The shard marks
 * the job done, unpins the task (the job kept its memory alive) and wakes
 * it. Until then the pool thread may touch the job; after the push it
 * never does.
 *
 * Shutdown: jobs still queued are dropped (their tasks are being dropped
 * with the shards); running ones are waited for, so their results reach
 * shards that still run.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "core/fault.h"
#include "pinwheel/blocking.h"
#include "shard/sched.h"

_Static_assert(sizeof(struct pw__mpsc_node) <=
		       sizeof(((struct pw_blocking *)0)->node),
	       "pw_blocking.node holds an inbox node");
_Static_assert(_Alignof(struct pw__mpsc_node) <= 8, "node alignment");

static inline struct pw__mpsc_node *node_of(struct pw_blocking *b)
{
	return (struct pw__mpsc_node *)(void *)b->node;
}

static inline struct pw_blocking *job_of(struct pw__mpsc_node *n)
{
	return (struct pw_blocking *)(void *)((char *)n -
					      offsetof(struct pw_blocking,
						       node));
}

int pw__pool_init(struct pw__pool *p, unsigned max_threads,
		  uint64_t keep_alive_ns)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->max_threads = max_threads;
	p->keep_alive_ns = keep_alive_ns;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->work, &ca);
	pthread_cond_init(&p->gone, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

/* Called with the lock held: the next job, waiting up to keep-alive. */
static struct pw_blocking *next_job(struct pw__pool *p)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(p->keep_alive_ns / 1000000000u);
	until.tv_nsec += (long)(p->keep_alive_ns % 1000000000u);
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (!p->head && !p->stopping) {
		p->idle++;
		int err = pthread_cond_timedwait(&p->work, &p->mu, &until);
		p->idle--;
		if (err == ETIMEDOUT && !p->head)
			return NULL;
	}
	struct pw_blocking *b = p->head;
	if (b) {
		p->head = b->next;
		if (!p->head)
			p->tail = NULL;
		p->depth--;
		p->running++;
	}
	return b;
}

static void *pool_thread(void *arg)
{
	struct pw__pool *p = arg;
	struct pw_blocking *b;

	pthread_mutex_lock(&p->mu);
	while ((b = next_job(p))) {
		pthread_mutex_unlock(&p->mu);
		/* The task is pinned: its shard (read before the push that
		 * lets the shard free it) outlives the job. */
		struct pw__shard *s = b->shard;
		b->result = b->fn(b->arg);
		node_of(b)->kind = PW__MSG_BLOCKING;
		pthread_mutex_lock(&p->mu);
		p->running--;
		p->jobs_run++;
		pthread_cond_broadcast(&p->gone);
		pthread_mutex_unlock(&p->mu);
		/* Counted first, so a task that sees its result sees it
		 * counted; after the post this thread never touches @b. */
		pw__shard_post(s, node_of(b));
		pthread_mutex_lock(&p->mu);
	}
	p->threads--;
	pthread_cond_broadcast(&p->gone);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void pw__pool_stop(struct pw__pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	/* Queued jobs never run: their tasks go down with the shards. */
	p->head = p->tail = NULL;
	p->depth = 0;
	pthread_cond_broadcast(&p->work);
	while (p->threads)
		pthread_cond_wait(&p->gone, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void pw__pool_free(struct pw__pool *p)
{
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->gone);
}

bool pw__pool_busy(struct pw__pool *p)
{
	/* relaxed: a hint for the paused clock, refreshed each idle turn;
	 * a job queued later rouses its own shard when it finishes. */
	return atomic_load_explicit(&p->inflight, memory_order_relaxed) != 0;
}

void pw__pool_done(struct pw__shard *s, struct pw__mpsc_node *n)
{
	struct pw_blocking *b = job_of(n);
	struct pw__task *t = b->task;
	struct pw__pool *p = &s->rt->pool;

	/* relaxed: see pw__pool_busy(). */
	atomic_fetch_sub_explicit(&p->inflight, 1, memory_order_relaxed);
	b->state = PW_BLOCKING_DONE;
	b->task = NULL;
	pw__task_unpin_wake(s, t);
}

int pw_spawn_blocking(struct pw_blocking *b, int64_t (*fn)(void *arg),
		      void *arg)
{
	struct pw__shard *s = pw__cur_shard;
	pthread_t th;

	if (!b || !fn || (b->state == PW_BLOCKING_QUEUED))
		return -EINVAL;
	if (!s || !s->cur_task)
		return -EPERM;
	if (s->stopping)
		return -ESHUTDOWN;
	struct pw__pool *p = &s->rt->pool;
	b->fn = fn;
	b->arg = arg;
	b->next = NULL;
	b->task = s->cur_task;
	b->shard = s;
	pthread_mutex_lock(&p->mu);
	if (p->stopping) {
		pthread_mutex_unlock(&p->mu);
		return -ESHUTDOWN;
	}
	if (!p->idle && p->threads < p->max_threads) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		int err = pw__fault(PW__FAULT_THREAD) ?
				  EAGAIN :
				  pthread_create(&th, &a, pool_thread, p);
		pthread_attr_destroy(&a);
		if (!err)
			p->threads++;
		else if (!p->threads) {
			pthread_mutex_unlock(&p->mu);
			return -EAGAIN;
		}
	}
	if (p->tail)
		p->tail->next = b;
	else
		p->head = b;
	p->tail = b;
	p->depth++;
	/* relaxed: see pw__pool_busy(). */
	atomic_fetch_add_explicit(&p->inflight, 1, memory_order_relaxed);
	b->state = PW_BLOCKING_QUEUED;
	pw__task_pin(s, b->task);
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

enum pw_poll pw_blocking_poll(struct pw_cx *cx, struct pw_blocking *b,
			      int64_t *result)
{
	if (!cx || !b || !result || b->state == PW_BLOCKING_IDLE) {
		if (result)
			*result = -EINVAL;
		return PW_READY;
	}
	if (b->state == PW_BLOCKING_QUEUED)
		return PW_PENDING;
	if (!pw__coop_proceed(cx))
		return PW_PENDING;
	*result = b->result;
	b->state = PW_BLOCKING_IDLE;
	return PW_READY;
}

int pw_runtime_blocking_stats(struct pw_runtime *rt,
			      struct pw_blocking_stats *out)
{
	if (!rt || !out)
		return -EINVAL;
	return pw__runtime_pool_stats(rt, out);
}

void pw__pool_read(struct pw__pool *p, struct pw_blocking_stats *out)
{
	pthread_mutex_lock(&p->mu);
	out->num_blocking_threads = p->threads;
	out->num_idle_blocking_threads = p->idle;
	out->blocking_queue_depth = p->depth;
	out->jobs_run = p->jobs_run;
	pthread_mutex_unlock(&p->mu);
}
