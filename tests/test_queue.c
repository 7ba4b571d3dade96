/* SPDX-License-Identifier: MIT */
/*
 * test_queue.c - the stealing scheduler's run queues alone (shard/queue.h),
 * as Tokio tests its queue: push and pop order, the capacity, an overflow
 * moving half of the queue and the new task to the inject queue, steals of
 * half (rounded up) with exact counts, the inject queue's FIFO order, and
 * an owner and a thief racing, every task taken exactly once.
 *
 * No runtime, worker or shard: plain queues and task records, so every
 * count is exact.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common.h"
#include "core/task_int.h"
#include "shard/queue.h"

static struct pw__task tasks[600];

static struct pw__lq *lq_new(void)
{
	struct pw__lq *q = aligned_alloc(64, sizeof(*q));
	cr_assert_not_null(q);
	memset(q, 0, sizeof(*q));
	return q;
}

static uint32_t h_steal_of(struct pw__lq *q)
{
	return pw__lq_h_steal(atomic_load(&q->head));
}

static uint32_t h_real_of(struct pw__lq *q)
{
	return pw__lq_h_real(atomic_load(&q->head));
}

Test(queue, push_then_pop_is_fifo)
{
	struct pw__lq *q = lq_new();
	struct pw__inject inj;

	pw__inject_init(&inj);
	cr_assert_null(pw__lq_pop(q));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 100; i++)
			cr_assert_eq(pw__lq_push(q, &inj, &tasks[i]),
				     PW__LQ_PUSHED);
		cr_assert_eq(pw__lq_len(q), 100);
		for (int i = 0; i < 100; i++)
			cr_assert_eq(pw__lq_pop(q), &tasks[i]);
		cr_assert_null(pw__lq_pop(q));
		cr_assert_eq(pw__lq_len(q), 0);
	}
	cr_assert_eq(pw__inject_len(&inj), 0);
	pw__inject_destroy(&inj);
	free(q);
}

Test(queue, capacity_is_exactly_256)
{
	struct pw__lq *q = lq_new();
	struct pw__inject inj;

	pw__inject_init(&inj);
	cr_assert_eq(PW__LQ_CAP, 256);
	for (int i = 0; i < 256; i++) {
		cr_assert_eq(pw__lq_room(q), 256u - (uint32_t)i);
		cr_assert_eq(pw__lq_push(q, &inj, &tasks[i]), PW__LQ_PUSHED);
	}
	cr_assert_eq(pw__lq_len(q), 256);
	cr_assert_eq(pw__lq_room(q), 0);
	cr_assert_eq(pw__inject_len(&inj), 0);
	/* A pop frees one slot; the next push fits without an overflow. */
	cr_assert_eq(pw__lq_pop(q), &tasks[0]);
	cr_assert_eq(pw__lq_push(q, &inj, &tasks[256]), PW__LQ_PUSHED);
	cr_assert_eq(pw__inject_len(&inj), 0);
	cr_assert_eq(pw__lq_push(q, &inj, &tasks[257]), PW__LQ_OVERFLOWED);
	pw__inject_destroy(&inj);
	free(q);
}

Test(queue, overflow_moves_the_newest_128_and_the_new_task)
{
	struct pw__lq *q = lq_new();
	struct pw__inject inj;

	pw__inject_init(&inj);
	for (int i = 0; i < 256; i++)
		pw__lq_push(q, &inj, &tasks[i]);
	cr_assert_eq(pw__inject_len(&inj), 0);
	cr_assert_eq(pw__lq_push(q, &inj, &tasks[256]), PW__LQ_OVERFLOWED);
	cr_assert_eq(pw__lq_len(q), 128);
	cr_assert_eq(pw__inject_len(&inj), 129);
	/* Inject: the 128 newest in queue order, then the new task. */
	struct pw__task *t = inj.head;
	for (int i = 128; i < 256; i++, t = t->next)
		cr_assert_eq(t, &tasks[i], "inject position %d", i - 128);
	cr_assert_eq(t, &tasks[256]);
	cr_assert_null(t->next);
	cr_assert_eq(inj.tail, &tasks[256]);
	/* Local: the oldest 128, in order; thieves are let in again. */
	cr_assert_eq(h_steal_of(q), h_real_of(q));
	for (int i = 0; i < 128; i++)
		cr_assert_eq(pw__lq_pop(q), &tasks[i]);
	cr_assert_null(pw__lq_pop(q));
	pw__inject_destroy(&inj);
	free(q);
}

Test(queue, full_while_a_thief_copies_sends_the_task_alone)
{
	struct pw__lq *q = lq_new();
	struct pw__inject inj;

	pw__inject_init(&inj);
	for (int i = 0; i < 256; i++)
		pw__lq_push(q, &inj, &tasks[i]);
	/* A thief between its claim and its release: steal != real. */
	uint64_t h = atomic_load(&q->head);
	atomic_store(&q->head,
		     pw__lq_pack(pw__lq_h_real(h), pw__lq_h_real(h) + 10));
	cr_assert_eq(pw__lq_push(q, &inj, &tasks[256]), PW__LQ_INJECTED);
	cr_assert_eq(pw__inject_len(&inj), 1);
	cr_assert_eq(inj.head, &tasks[256]);
	cr_assert_eq(pw__lq_len(q), 246);
	pw__inject_destroy(&inj);
	free(q);
}

/* Steal from a victim holding @len: the thief gets len - len/2. */
static void steal_case(uint32_t len)
{
	struct pw__lq *v = lq_new(), *th = lq_new();
	struct pw__inject inj;
	uint32_t moved = 99;

	pw__inject_init(&inj);
	for (uint32_t i = 0; i < len; i++)
		pw__lq_push(v, &inj, &tasks[i]);
	cr_assert_eq(pw__lq_len(v), len);
	uint32_t n = len - len / 2;
	struct pw__task *got = pw__lq_steal_into(th, v, &moved);
	if (!len) {
		cr_assert_null(got);
		cr_assert_eq(moved, 0);
		goto out;
	}
	/* The oldest n move; the thief runs the last of them. */
	cr_assert_eq(got, &tasks[n - 1], "len %u", len);
	cr_assert_eq(pw__lq_len(th), n - 1, "len %u", len);
	cr_assert_eq(pw__lq_len(v), len - n, "len %u", len);
	for (uint32_t i = 0; i + 1 < n; i++)
		cr_assert_eq(pw__lq_pop(th), &tasks[i]);
	for (uint32_t i = n; i < len; i++)
		cr_assert_eq(pw__lq_pop(v), &tasks[i]);
	cr_assert_eq(moved, n);
	cr_assert_eq(h_steal_of(v), h_real_of(v));
out:
	cr_assert_eq(pw__inject_len(&inj), 0);
	pw__inject_destroy(&inj);
	free(v);
	free(th);
}

Test(queue, steal_takes_half_rounded_up)
{
	uint32_t lens[] = { 0, 1, 2, 3, 128, 170, 171, 255, 256 };
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		steal_case(lens[i]);
	/* 170 -> 85, 171 -> 86, 256 -> 128 (Tokio's figures). */
}

Test(queue, thief_more_than_half_full_does_not_steal)
{
	struct pw__lq *v = lq_new(), *th = lq_new();
	struct pw__inject inj;
	uint32_t moved = 99;

	pw__inject_init(&inj);
	for (int i = 0; i < 10; i++)
		pw__lq_push(v, &inj, &tasks[i]);
	for (int i = 10; i < 10 + 129; i++)
		pw__lq_push(th, &inj, &tasks[i]);
	cr_assert_null(pw__lq_steal_into(th, v, &moved));
	cr_assert_eq(pw__lq_len(v), 10);
	cr_assert_eq(moved, 0);
	/* At exactly half it still steals. */
	cr_assert_eq(pw__lq_pop(th), &tasks[10]);
	cr_assert_not_null(pw__lq_steal_into(th, v, &moved));
	cr_assert_eq(moved, 5);
	pw__inject_destroy(&inj);
	free(v);
	free(th);
}

Test(queue, inject_is_fifo)
{
	struct pw__inject inj;
	struct pw__task *t;

	pw__inject_init(&inj);
	cr_assert_eq(pw__inject_pop(&inj, 1, &t), 0);
	for (int i = 0; i < 10; i++)
		pw__inject_push(&inj, &tasks[i], &tasks[i], 1);
	/* A chain of three, linked by the caller. */
	tasks[10].next = &tasks[11];
	tasks[11].next = &tasks[12];
	pw__inject_push(&inj, &tasks[10], &tasks[12], 3);
	cr_assert_eq(pw__inject_len(&inj), 13);
	cr_assert_eq(pw__inject_pop(&inj, 4, &t), 4);
	for (int i = 0; i < 4; i++, t = t->next)
		cr_assert_eq(t, &tasks[i]);
	cr_assert_null(t);
	cr_assert_eq(pw__inject_len(&inj), 9);
	cr_assert_eq(pw__inject_pop(&inj, 100, &t), 9);
	for (int i = 4; i < 13; i++, t = t->next)
		cr_assert_eq(t, &tasks[i]);
	cr_assert_null(t);
	cr_assert_eq(pw__inject_len(&inj), 0);
	cr_assert_null(inj.head);
	cr_assert_null(inj.tail);
	cr_assert_eq(pw__inject_pop(&inj, 1, &t), 0);
	pw__inject_destroy(&inj);
}

Test(queue, fill_appends_a_chain_after_the_tail)
{
	struct pw__lq *q = lq_new();
	struct pw__inject inj;

	pw__inject_init(&inj);
	pw__lq_push(q, &inj, &tasks[0]);
	for (int i = 1; i < 5; i++)
		tasks[i].next = &tasks[i + 1];
	pw__lq_fill(q, &tasks[1], 4);
	cr_assert_eq(pw__lq_len(q), 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(pw__lq_pop(q), &tasks[i]);
	cr_assert_null(pw__lq_pop(q));
	pw__inject_destroy(&inj);
	free(q);
}

/*
 * A thief thread steals from a full victim that does nothing meanwhile:
 * exactly half comes over, and each task is in one queue only.
 */
struct one_steal {
	struct pw__lq *v, *th;
	struct pw__task *got;
	uint32_t moved;
};

static void *steal_once(void *arg)
{
	struct one_steal *o = arg;

	o->got = pw__lq_steal_into(o->th, o->v, &o->moved);
	return NULL;
}

Test(queue, steal_from_another_thread_takes_exact_half)
{
	struct one_steal o = { lq_new(), lq_new(), NULL, 0 };
	struct pw__inject inj;
	pthread_t th;

	pw__inject_init(&inj);
	for (int i = 0; i < 256; i++)
		pw__lq_push(o.v, &inj, &tasks[i]);
	cr_assert_eq(pthread_create(&th, NULL, steal_once, &o), 0);
	pthread_join(th, NULL);
	cr_assert_eq(o.moved, 128);
	cr_assert_eq(o.got, &tasks[127]);
	cr_assert_eq(pw__lq_len(o.th), 127);
	cr_assert_eq(pw__lq_len(o.v), 128);
	for (int i = 0; i < 127; i++)
		cr_assert_eq(pw__lq_pop(o.th), &tasks[i]);
	for (int i = 128; i < 256; i++)
		cr_assert_eq(pw__lq_pop(o.v), &tasks[i]);
	pw__inject_destroy(&inj);
	free(o.v);
	free(o.th);
}

/*
 * The owner pushes (overflowing into the inject queue) and pops while a
 * thief steals without pause: every task comes out exactly once, and the
 * thief's counts add up to what it took.
 */
static struct pw__lq *qv, *qth;
static struct pw__inject qinj;
static struct pw__task *qtasks;
static _Atomic uint8_t *qseen;
static _Atomic int qdone;
static uint64_t qstolen, qtaken_by_thief;

static void qtake(struct pw__task *t)
{
	size_t i = (size_t)(t - qtasks);
	cr_assert_eq(atomic_fetch_add(&qseen[i], 1), 0, "task %zu twice", i);
}

static void *qthief(void *arg)
{
	struct pw__task *t;
	uint32_t moved;
	(void)arg;

	while (!atomic_load(&qdone)) {
		if ((t = pw__lq_steal_into(qth, qv, &moved))) {
			qstolen += moved;
			qtaken_by_thief++;
			qtake(t);
		}
		while ((t = pw__lq_pop(qth))) {
			qtaken_by_thief++;
			qtake(t);
		}
	}
	return NULL;
}

static void drain_inject(void)
{
	struct pw__task *t;
	uint64_t k = 0;

	pthread_mutex_lock(&qinj.mu);
	for (t = qinj.head; t; t = t->next, k++)
		qtake(t);
	cr_assert_eq(k, atomic_load(&qinj.len));
	qinj.head = qinj.tail = NULL;
	atomic_store(&qinj.len, 0);
	pthread_mutex_unlock(&qinj.mu);
}

Test(queue, concurrent_push_pop_overflow_and_steal_exactly_once)
{
	pw_test_time_limit(120);
	size_t n = (size_t)(4e6 * pw_test_scale());
	unsigned seed = 7;
	struct pw__task *t;
	pthread_t th;

	qv = lq_new();
	qth = lq_new();
	pw__inject_init(&qinj);
	qtasks = calloc(n, sizeof(*qtasks));
	qseen = calloc(n, 1);
	atomic_store(&qdone, 0);
	cr_assert_eq(pthread_create(&th, NULL, qthief, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		pw__lq_push(qv, &qinj, &qtasks[i]);
		if (rand_r(&seed) % 3 == 0 && (t = pw__lq_pop(qv)))
			qtake(t);
		if (rand_r(&seed) % 500 == 0)
			drain_inject();
	}
	atomic_store(&qdone, 1);
	pthread_join(th, NULL);
	/* Every task the thief stole it ran or popped. */
	cr_assert_eq(qstolen, qtaken_by_thief);
	while ((t = pw__lq_pop(qv)))
		qtake(t);
	cr_assert_null(pw__lq_pop(qth));
	drain_inject();
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(qseen[i], 1, "task %zu seen %u times", i,
			     qseen[i]);
	pw__inject_destroy(&qinj);
	free(qv);
	free(qth);
	free(qtasks);
	free((void *)qseen);
}
