/* SPDX-License-Identifier: MIT */
/*
 * bench_spsc.c - the SPSC message ring between two pinned cores.
 *
 *   bm_spsc_throughput/B     messages/s through a 1024-slot ring, B-message
 *                            batches on both sides (push_batch, pop_batch)
 *   bm_ck_ring_throughput/B  the same through Concurrency Kit's ck_ring
 *                            (spsc, 48-byte records, 1024 slots): B single
 *                            enqueues, then up to B single dequeues
 *   bm_spsc_roundtrip        CPU0 -> CPU1 -> CPU0 over two rings
 *   bm_pingpong_floor        one cache line flipped between the same cores
 *   bm_pingpong_two_lines    a line per direction: the first CPU writes one
 *                            the second polls, and polls one the second
 *                            writes (the least any ring pair can do)
 *
 * One iteration is one message (throughput) or one round trip (latency),
 * so the time column is ns per message or per round trip.
 *
 * Each benchmark creates its own two threads, pinned to the first two CPUs
 * of the process (CPU0 and CPU1 on a 2-core machine). The Google Benchmark
 * thread only hands out work: per pw_bench_run() batch it releases both
 * workers through a barrier and sleeps on a second one until they finish,
 * so it never competes with them for a CPU.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <ck_ring.h>

#include "bench/bench.h"
#include "shard/spsc.h"

#define RING_SLOTS 1024
#define MAX_BATCH  64
#define LINE	   64

/* Iterations per pw_bench_run(): large enough that the two barrier
 * hand-offs per batch are noise. */
#define TPUT_BATCH (1u << 18)
#define RTT_BATCH  (1u << 15)

/* ---- two pinned workers driven by the benchmark thread ---- */

struct duo;
typedef void (*duo_fn)(struct duo *d, uint64_t n);

struct duo {
	pthread_barrier_t start, end;
	pthread_t thr[2];
	duo_fn role[2]; /* role[0] runs on the first CPU, [1] on the next */
	uint64_t n;	/* work per round; 0 tells the workers to exit */
	void *ctx;	/* the benchmark's state */
	int cpu[2];
	_Atomic int ready; /* 0 starting, 1 both threads exist, -1 abandon */
};

struct duo_arg {
	struct duo *d;
	int id;
};

static void *duo_worker(void *p)
{
	struct duo_arg *a = p;
	struct duo *d = a->d;
	int id = a->id, ready;

	/* acquire: pairs with the release store in duo_start(); the barriers
	 * are used only once both workers exist. */
	while (!(ready = atomic_load_explicit(&d->ready, memory_order_acquire)))
		usleep(100);
	if (ready < 0)
		return NULL;
	for (;;) {
		/* The barriers order d->n and the shared state. */
		pthread_barrier_wait(&d->start);
		if (!d->n)
			return NULL;
		d->role[id](d, d->n);
		pthread_barrier_wait(&d->end);
	}
}

/* The first two CPUs this process may run on; false if there is one. */
static bool duo_pick_cpus(int cpu[2])
{
	cpu_set_t set;
	int found = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return false;
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
		if (CPU_ISSET(c, &set))
			cpu[found++] = c;
	return found == 2;
}

static struct duo_arg duo_args[2];

/* Start the two workers; false (benchmark skipped) if they cannot be. */
static bool duo_start(struct pw_bench *b, struct duo *d)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int started = 0, err = 0;

	if (!duo_pick_cpus(d->cpu)) {
		pw_bench_skip(b, "needs two CPUs");
		return false;
	}
	atomic_init(&d->ready, 0);
	for (; started < 2 && !err; started++) {
		duo_args[started].d = d;
		duo_args[started].id = started;
		CPU_ZERO(&set);
		CPU_SET(d->cpu[started], &set);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		err = pthread_create(&d->thr[started], &attr, duo_worker,
				     &duo_args[started]);
		pthread_attr_destroy(&attr);
	}
	if (err) {
		/* release: pairs with the acquire load in duo_worker(). */
		atomic_store_explicit(&d->ready, -1, memory_order_release);
		for (int i = 0; i < started - 1; i++)
			pthread_join(d->thr[i], NULL);
		pw_bench_skip(b, "cannot start a pinned thread");
		return false;
	}
	pthread_barrier_init(&d->start, NULL, 3);
	pthread_barrier_init(&d->end, NULL, 3);
	/* release: publishes the barriers; pairs with the acquire load in
	 * duo_worker(). */
	atomic_store_explicit(&d->ready, 1, memory_order_release);
	return true;
}

/* One round: both workers do @n units of work. */
static void duo_round(struct duo *d, uint64_t n)
{
	d->n = n;
	pthread_barrier_wait(&d->start);
	pthread_barrier_wait(&d->end);
}

static void duo_stop(struct duo *d)
{
	d->n = 0;
	pthread_barrier_wait(&d->start);
	pthread_join(d->thr[0], NULL);
	pthread_join(d->thr[1], NULL);
	pthread_barrier_destroy(&d->start);
	pthread_barrier_destroy(&d->end);
}

/* Run @d's roles for as long as Google Benchmark asks, @per at a time. */
static void duo_bench(struct pw_bench *b, struct duo *d, uint32_t per)
{
	uint64_t total = 0;

	if (!duo_start(b, d))
		return;
	while (pw_bench_run(b, per)) {
		duo_round(d, per);
		total += per;
	}
	duo_stop(d);
	pw_bench_items(b, (int64_t)total);
}

static void bench_msg_fn(const struct pw__msg *m)
{
	(void)m;
}

/* ---- throughput: pinwheel's ring ---- */

struct tput {
	struct pw__spsc ring;
	uint32_t batch;
	uint64_t seq;  /* producer: next sequence number */
	uint64_t sum;  /* consumer: sum of received sequence numbers */
	uint64_t recv; /* consumer: messages received */
};

static struct pw__spsc_slot tput_slots[RING_SLOTS];

static void spsc_producer(struct duo *d, uint64_t n)
{
	struct tput *t = d->ctx;
	struct pw__msg batch[MAX_BATCH];
	uint64_t seq = t->seq, end = t->seq + n;

	while (seq < end) {
		uint32_t k = t->batch, done = 0;

		if (k > end - seq)
			k = (uint32_t)(end - seq);
		for (uint32_t i = 0; i < k; i++) {
			batch[i].fn = bench_msg_fn;
			batch[i].a0 = t;
			batch[i].a1 = seq + i;
			batch[i].a2 = 0;
			batch[i].a3 = 0;
			batch[i].a4 = 0;
		}
		while (done < k) {
			uint32_t got = pw__spsc_push_batch(
				&t->ring, batch + done, k - done);
			if (!got)
				pw__cpu_relax();
			done += got;
		}
		seq += k;
	}
	t->seq = seq;
}

static void spsc_consumer(struct duo *d, uint64_t n)
{
	struct tput *t = d->ctx;
	struct pw__msg out[MAX_BATCH];
	uint64_t left = n, sum = 0;

	while (left) {
		uint32_t got = pw__spsc_pop_batch(&t->ring, out, t->batch);

		if (!got)
			pw__cpu_relax();
		for (uint32_t i = 0; i < got; i++)
			sum += out[i].a1;
		left -= got;
	}
	t->sum += sum;
	t->recv += n;
}

/* Every message arrived once: the sequence numbers 0..recv-1 add up. */
static void tput_check(struct pw_bench *b, const struct tput *t)
{
	if (t->recv && t->sum != t->recv * (t->recv - 1) / 2)
		pw_bench_skip(b, "messages lost or duplicated");
}

static void bm_spsc_throughput(struct pw_bench *b)
{
	static struct tput t;
	static struct duo d;

	memset(&t, 0, sizeof(t));
	pw__spsc_init(&t.ring, tput_slots, RING_SLOTS);
	t.batch = (uint32_t)pw_bench_arg(b);
	d.role[0] = spsc_producer;
	d.role[1] = spsc_consumer;
	d.ctx = &t;
	duo_bench(b, &d, TPUT_BATCH);
	tput_check(b, &t);
}
static const int64_t tput_args[] = { 1, 32 };
PW_BENCH_ARGS(bm_spsc_throughput, tput_args);

/* ---- throughput: ck_ring ---- */

CK_RING_PROTOTYPE(pw__msg, pw__msg)

struct ck_tput {
	struct ck_ring ring;
	struct tput t; /* batch and the checks, as above */
};

static struct pw__msg ck_slots[RING_SLOTS];

static void ck_producer(struct duo *d, uint64_t n)
{
	struct ck_tput *c = d->ctx;
	struct pw__msg m = { .fn = bench_msg_fn, .a0 = c, .a2 = 0 };
	uint64_t seq = c->t.seq, end = c->t.seq + n;

	while (seq < end) {
		uint32_t k = c->t.batch;

		if (k > end - seq)
			k = (uint32_t)(end - seq);
		/* ck publishes every message with its own store. */
		for (uint32_t i = 0; i < k; i++) {
			m.a1 = seq + i;
			while (!ck_ring_enqueue_spsc_pw__msg(&c->ring, ck_slots,
							     &m))
				pw__cpu_relax();
		}
		seq += k;
	}
	c->t.seq = seq;
}

static void ck_consumer(struct duo *d, uint64_t n)
{
	struct ck_tput *c = d->ctx;
	struct pw__msg out[MAX_BATCH];
	uint64_t left = n, sum = 0;

	while (left) {
		uint32_t got = 0, max = c->t.batch;

		if (max > left)
			max = (uint32_t)left;
		while (got < max && ck_ring_dequeue_spsc_pw__msg(
					    &c->ring, ck_slots, &out[got]))
			got++;
		if (!got)
			pw__cpu_relax();
		for (uint32_t i = 0; i < got; i++)
			sum += out[i].a1;
		left -= got;
	}
	c->t.sum += sum;
	c->t.recv += n;
}

static void bm_ck_ring_throughput(struct pw_bench *b)
{
	static struct ck_tput c;
	static struct duo d;

	memset(&c, 0, sizeof(c));
	ck_ring_init(&c.ring, RING_SLOTS);
	c.t.batch = (uint32_t)pw_bench_arg(b);
	d.role[0] = ck_producer;
	d.role[1] = ck_consumer;
	d.ctx = &c;
	duo_bench(b, &d, TPUT_BATCH);
	tput_check(b, &c.t);
}
PW_BENCH_ARGS(bm_ck_ring_throughput, tput_args);

/* ---- round trip over two rings ---- */

struct rtt {
	struct pw__spsc ping; /* first CPU -> second CPU */
	struct pw__spsc pong; /* second CPU -> first CPU */
	uint64_t bad;	      /* replies that did not match their ping */
};

static struct pw__spsc_slot ping_slots[RING_SLOTS], pong_slots[RING_SLOTS];

static void rtt_pinger(struct duo *d, uint64_t n)
{
	struct rtt *r = d->ctx;
	struct pw__msg m = { .fn = bench_msg_fn, .a0 = r }, back;
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++) {
		m.a1 = i;
		/* The ring is never full: one message in flight. */
		pw__spsc_push(&r->ping, &m);
		while (!pw__spsc_pop(&r->pong, &back))
			pw__cpu_relax();
		bad += back.a1 != i;
	}
	r->bad += bad;
}

static void rtt_ponger(struct duo *d, uint64_t n)
{
	struct rtt *r = d->ctx;
	struct pw__msg m;

	for (uint64_t i = 0; i < n; i++) {
		while (!pw__spsc_pop(&r->ping, &m))
			pw__cpu_relax();
		pw__spsc_push(&r->pong, &m);
	}
}

static void bm_spsc_roundtrip(struct pw_bench *b)
{
	static struct rtt r;
	static struct duo d;

	memset(&r, 0, sizeof(r));
	pw__spsc_init(&r.ping, ping_slots, RING_SLOTS);
	pw__spsc_init(&r.pong, pong_slots, RING_SLOTS);
	d.role[0] = rtt_pinger;
	d.role[1] = rtt_ponger;
	d.ctx = &r;
	duo_bench(b, &d, RTT_BATCH);
	if (r.bad)
		pw_bench_skip(b, "a reply did not match its ping");
}
PW_BENCH(bm_spsc_roundtrip);

/* ---- the floor: one cache line flipped between the two cores ---- */

struct floor_line {
	/* Even values: the first CPU's turn; odd: the second's. */
	_Alignas(LINE) _Atomic uint64_t turn;
	char pad[LINE - sizeof(uint64_t)];
};

static void floor_side(struct duo *d, uint64_t n, uint64_t parity)
{
	struct floor_line *f = d->ctx;
	/* relaxed: the barrier before this round ordered the last store. */
	uint64_t v = atomic_load_explicit(&f->turn, memory_order_relaxed);

	v = (v & ~(uint64_t)1) | parity; /* the value that is our turn */
	for (uint64_t i = 0; i < n; i++, v += 2) {
		/* acquire: pairs with the other side's release store. */
		while (atomic_load_explicit(&f->turn, memory_order_acquire) !=
		       v)
			pw__cpu_relax();
		/* release: hands the turn over; pairs with the acquire
		 * load above on the other side. */
		atomic_store_explicit(&f->turn, v + 1, memory_order_release);
	}
}

static void floor_first(struct duo *d, uint64_t n)
{
	floor_side(d, n, 0);
}

static void floor_second(struct duo *d, uint64_t n)
{
	floor_side(d, n, 1);
}

static void bm_pingpong_floor(struct pw_bench *b)
{
	static struct floor_line f;
	static struct duo d;

	atomic_init(&f.turn, 0);
	d.role[0] = floor_first;
	d.role[1] = floor_second;
	d.ctx = &f;
	duo_bench(b, &d, RTT_BATCH);
}
PW_BENCH(bm_pingpong_floor);

/* ---- two lines: one per direction, as a pair of rings uses ---- */

struct two_lines {
	struct floor_line there; /* written by the first CPU */
	struct floor_line back;	 /* written by the second CPU */
};

static void two_lines_side(struct floor_line *in, struct floor_line *out,
			   uint64_t n, bool first)
{
	/* relaxed: the barrier before this round ordered the last stores. */
	uint64_t v = atomic_load_explicit(&out->turn, memory_order_relaxed);

	for (uint64_t i = 0; i < n; i++, v++) {
		if (first)
			/* release: hands the round over; pairs with the
			 * acquire load below on the other side. */
			atomic_store_explicit(&out->turn, v + 1,
					      memory_order_release);
		/* acquire: pairs with the other side's release store. */
		while (atomic_load_explicit(&in->turn, memory_order_acquire) !=
		       v + 1)
			pw__cpu_relax();
		if (!first)
			/* release: as above. */
			atomic_store_explicit(&out->turn, v + 1,
					      memory_order_release);
	}
}

static void two_lines_first(struct duo *d, uint64_t n)
{
	struct two_lines *t = d->ctx;

	two_lines_side(&t->back, &t->there, n, true);
}

static void two_lines_second(struct duo *d, uint64_t n)
{
	struct two_lines *t = d->ctx;

	two_lines_side(&t->there, &t->back, n, false);
}

static void bm_pingpong_two_lines(struct pw_bench *b)
{
	static struct two_lines t;
	static struct duo d;

	atomic_init(&t.there.turn, 0);
	atomic_init(&t.back.turn, 0);
	d.role[0] = two_lines_first;
	d.role[1] = two_lines_second;
	d.ctx = &t;
	duo_bench(b, &d, RTT_BATCH);
}
PW_BENCH(bm_pingpong_two_lines);
