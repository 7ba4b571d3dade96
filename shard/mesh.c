/* SPDX-License-Identifier: MIT */
/*
 * mesh.c - the shard mesh: one SPSC ring per ordered pair of shards.
 *
 * Sending. A message for shard d goes into a small per-destination stage;
 * at the end of each loop turn (or when the stage fills) the stage is
 * copied into the ring, each slot published by a release store of its
 * sequence word (shard/spsc.h). What does not fit waits in a
 * per-destination overflow list of slab blocks, oldest first, and later
 * messages queue behind it, so order per pair is kept and nothing is
 * dropped; the producer's loop never blocks (it polls the backlog each
 * turn, sleeping at most PW__OVF_POLL_NS while one remains).
 *
 * Rousing. After publishing, the producer issues a seq_cst fence and
 * reads each destination's asleep flag; a consumer going to sleep stores
 * its flag, issues a seq_cst fence and re-checks every incoming ring by
 * loading the sequence word of the slot it would read next. With both
 * fences one of the two sees the other: either the consumer's load sees
 * the word the producer stored before its fence (the consumer waits at a
 * position at or before the producer's, and every position before the
 * producer's was published before that fence), or the producer's load
 * sees the flag stored before the consumer's fence, takes the flag
 * (exchange, so one producer of many) and sends one IORING_OP_MSG_RING to
 * the consumer's ring, which ends its kernel wait. An awake consumer costs
 * the producer no system call. Should the MSG_RING fail, its CQE comes
 * back to the producer, which writes the consumer's eventfd instead.
 *
 * Receiving. Every turn the shard drains each incoming ring, at most
 * cfg.mesh_batch messages per ring, in place (peek, run, release), so a
 * flooding peer cannot starve the other rings or the shard's own tasks.
 * It probes a ring's slots at most once per turn, and not at all when an
 * earlier check already saw messages there: a probe past the last
 * published message loads a line the producer owns.
 *
 * Stopping. After every shard dropped its tasks, messages may still fly
 * (call replies, wakes, frees). A stopping shard with nothing left to do
 * marks itself quiet and publishes its sent and received counts; it exits
 * when every shard is quiet, the sums of sent and received messages are
 * equal, and a second scan sees no shard having returned to work in
 * between. Then no message is in flight and none can appear.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fault.h"
#include "pinwheel/mesh.h"
#include "shard/mesh_int.h"
#include "shard/sched.h"
#include "shard/steal.h"

/* Longest kernel wait while an overflow backlog remains. */
#define PW__OVF_POLL_NS 100000u

/* An overflow block: a slab block of messages waiting for ring room;
 * 16 + 10 * 48 = 496 bytes, one 512-byte slab block. */
#define PW__OVF_MSGS 10
struct pw__ovf {
	struct pw__ovf *next;
	uint32_t first, n; /* messages [first, n) still to publish */
	struct pw__msg msgs[PW__OVF_MSGS];
};
_Static_assert(sizeof(struct pw__ovf) <= 512, "an overflow block fits 512");

#define OVF_CLASS pw__slab_class(sizeof(struct pw__ovf))

int pw__mesh_create(struct pw_runtime *rt)
{
	unsigned n = rt->nshards;
	size_t slots = rt->cfg.mesh_slots;

	int err = pw__mem_mesh_alloc(rt, slots); /* on each dst's node */
	if (err)
		return err;
	for (unsigned i = 0; i < n; i++) {
		struct pw__shard *s = rt->shards[i];
		s->out = pw__fault_calloc(PW__FAULT_MESH, n, sizeof(*s->out));
		s->in = pw__fault_calloc(PW__FAULT_MESH, n, sizeof(*s->in));
		if (!s->out || !s->in)
			return -ENOMEM;
		for (unsigned d = 0; d < n; d++) {
			s->out[d].ring = pw__mem_mesh_ring(rt, i, d);
			pw_list_init(&s->out[d].waiters);
			s->in[d] = pw__mem_mesh_ring(rt, d, i);
		}
	}
	return 0;
}

void pw__mesh_destroy(struct pw_runtime *rt)
{
	for (unsigned i = 0; rt->shards && i < rt->nshards; i++) {
		if (!rt->shards[i])
			continue;
		free(rt->shards[i]->out);
		free(rt->shards[i]->in);
	}
	pw__mem_mesh_free(rt);
}

/* Append up to @k messages to @q's overflow list, in order: how many
 * were appended, fewer than @k only when no memory is left for a new
 * block (the first ones may still have filled the last block). */
static uint32_t ovf_append(struct pw__shard *s, struct pw__outq *q,
			   const struct pw__msg *m, uint32_t k)
{
	uint32_t done = 0;

	while (k) {
		struct pw__ovf *o = q->ovf_tail;
		if (!o || o->n == PW__OVF_MSGS) {
			o = pw__slab_alloc(&s->aux, OVF_CLASS);
			if (!o)
				return done;
			o->next = NULL;
			o->first = o->n = 0;
			if (q->ovf_tail)
				q->ovf_tail->next = o;
			else
				q->ovf_head = o;
			q->ovf_tail = o;
		}
		uint32_t room = PW__OVF_MSGS - o->n;
		uint32_t take = k < room ? k : room;
		memcpy(&o->msgs[o->n], m, take * sizeof(*m));
		o->n += take;
		m += take;
		k -= take;
		done += take;
		PW__STAT_ADD(s, mesh_overflowed, take);
	}
	return done;
}

static uint32_t publish(struct pw__shard *s, struct pw__outq *q,
			const struct pw__msg *m, uint32_t k)
{
	uint32_t n = pw__spsc_push_batch(q->ring, m, k);

	if (n) {
		q->pushed = true;
		s->sent += n;
	}
	return n;
}

/* Move @q's backlog, then its stage, into its ring; the rest overflows. */
static void flush_one(struct pw__shard *s, struct pw__outq *q)
{
	bool backlog = q->ovf_head != NULL;

	while (q->ovf_head) {
		struct pw__ovf *o = q->ovf_head;
		o->first += publish(s, q, &o->msgs[o->first], o->n - o->first);
		if (o->first < o->n)
			break; /* the ring is full */
		q->ovf_head = o->next;
		if (!q->ovf_head)
			q->ovf_tail = NULL;
		pw__slab_free(&s->aux, o, OVF_CLASS);
	}
	if (q->nstage) {
		uint32_t n = q->ovf_head ? 0 :
					   publish(s, q, q->stage, q->nstage);
		if (n < q->nstage)
			n += ovf_append(s, q, q->stage + n, q->nstage - n);
		if (n < q->nstage) {
			/* No memory: keep the rest staged, in order. */
			memmove(q->stage, q->stage + n,
				(q->nstage - n) * sizeof(q->stage[0]));
			q->nstage -= n;
		} else {
			q->nstage = 0;
		}
	}
	if (backlog && !q->ovf_head)
		s->ovf_dests--;
	else if (!backlog && q->ovf_head)
		s->ovf_dests++;
}

int pw__mesh_send(struct pw__shard *s, unsigned dst, const struct pw__msg *m)
{
	struct pw__outq *q = &s->out[dst];

	if (q->nstage == PW__STAGE) {
		flush_one(s, q);
		if (q->nstage == PW__STAGE)
			return -ENOMEM;
	}
	q->stage[q->nstage++] = *m;
	return 0;
}

static void rouse_peer(struct pw__shard *s, struct pw__shard *o)
{
	/* relaxed load, then the exchange: ordered after our publish by
	 * the seq_cst fence in pw__mesh_flush(); pairs with the fence in
	 * pw__mesh_idle() on the consumer. */
	if (!atomic_load_explicit(&o->asleep, memory_order_relaxed) ||
	    !atomic_exchange(&o->asleep, 0))
		return;
	struct io_uring_sqe *sqe = pw__shard_sqe(s);
	if (!sqe) {
		pw__shard_kick(o);
		return;
	}
	io_uring_prep_msg_ring(sqe, o->ring.ring_fd, 0, PW__UD_MSGRING, 0);
	io_uring_sqe_set_data64(sqe, ((uint64_t)o->id << 3) | PW__UD_MSGSEND);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	PW__STAT_INC(s, msg_rings);
}

void pw__mesh_send_failed(struct pw__shard *s, uint64_t ud)
{
	unsigned id = (unsigned)(ud >> 3);

	if (id < s->rt->nshards)
		pw__shard_kick(s->rt->shards[id]);
}

void pw__mesh_flush(struct pw__shard *s)
{
	struct pw_runtime *rt = s->rt;
	bool any = false;

	for (unsigned d = 0; d < rt->nshards; d++) {
		struct pw__outq *q = &s->out[d];
		if (q->nstage || q->ovf_head)
			flush_one(s, q);
		any |= q->pushed;
	}
	if (!any)
		return;
	/* seq_cst fence: orders the release stores of the slots' sequence
	 * words (pw__spsc_push_batch()) before the loads of the asleep flags
	 * in rouse_peer(); pairs with the fence in pw__mesh_idle() (see the
	 * top of this file). */
	atomic_thread_fence(memory_order_seq_cst);
	for (unsigned d = 0; d < rt->nshards; d++) {
		struct pw__outq *q = &s->out[d];
		if (!q->pushed)
			continue;
		q->pushed = false;
		if (d != s->id)
			rouse_peer(s, rt->shards[d]);
	}
}

void pw__mesh_drain(struct pw__shard *s)
{
	struct pw_runtime *rt = s->rt;
	uint32_t bound = rt->cfg.mesh_batch;
	uint64_t got = 0;

	for (unsigned src = 0; src < rt->nshards; src++) {
		struct pw__spsc *r = s->in[src];
		uint32_t left = bound, known, n;
		struct pw__spsc_slot *sl;

		for (;;) {
			/* Messages seen published already (by the idle poll
			 * or the sleep check) are taken without a probe: the
			 * slot after them is one the producer is about to
			 * write and has fetched for writing, and loading it
			 * would cost a cross-core transfer before these
			 * messages run. */
			known = pw__spsc_known(r);
			n = pw__spsc_peek(r, &sl,
					  known && known < left ? known : left);
			if (!n)
				break;
			for (uint32_t i = 0; i < n; i++) {
				const struct pw__msg *m = &sl[i].msg;
				m->fn(m);
			}
			pw__spsc_release(r, n);
			left -= n;
			got += n;
			/* Probe on only across the end of the slot array (the
			 * run stopped there), or while more are known; what
			 * arrives meanwhile waits for the next turn. */
			if (!left || (!pw__spsc_known(r) &&
				      (r->cons.pos & r->cons.mask)))
				break;
		}
	}
	s->received += got;
}

bool pw__mesh_empty(struct pw__shard *s)
{
	for (unsigned src = 0; src < s->rt->nshards; src++)
		if (!pw__spsc_empty_consumer(s->in[src]))
			return false;
	return true;
}

/* Out of line: GCC rejects (-Wtsan) a fence it finds inlined into the
 * shutdown checks in a TSan build. */
__attribute__((noinline)) bool pw__mesh_idle(struct pw__shard *s)
{
	/* seq_cst fence: orders our store of asleep (the caller's, before
	 * this call) before the loads of the next slots' sequence words in
	 * pw__spsc_empty_consumer(); pairs with the fence in
	 * pw__mesh_flush(). */
	atomic_thread_fence(memory_order_seq_cst);
	return pw__mesh_empty(s);
}

uint64_t pw__mesh_wait_cap(struct pw__shard *s)
{
	return s->ovf_dests ? PW__OVF_POLL_NS : UINT64_MAX;
}

/* ---- stopping ------------------------------------------------------- */

static bool shard_has_work(struct pw__shard *s)
{
	if (s->runq.head || s->inflight || s->ovf_dests)
		return true;
	if (s->w && pw__steal_has_work(s))
		return true;
	for (unsigned d = 0; d < s->rt->nshards; d++)
		if (s->out[d].nstage)
			return true;
	return !pw__mesh_idle(s);
}

/* One scan: every shard quiet and sent == received; *@act gets the sum
 * of activity counters. seq_cst loads: pair with the seq_cst stores of
 * each shard in pw__mesh_stop_done(). */
static bool scan(struct pw_runtime *rt, uint64_t *act)
{
	uint64_t sent = 0, recv = 0, a = 0;

	for (unsigned i = 0; i < rt->nshards; i++) {
		struct pw__shard *o = rt->shards[i];
		if (!atomic_load(&o->quiet))
			return false;
		a += atomic_load(&o->activity);
		sent += atomic_load(&o->sent_pub);
		recv += atomic_load(&o->recv_pub);
	}
	*act = a;
	return sent == recv;
}

bool pw__mesh_stop_done(struct pw__shard *s)
{
	struct pw_runtime *rt = s->rt;
	uint64_t a, b;

	if (shard_has_work(s)) {
		if (atomic_load_explicit(&s->quiet, memory_order_relaxed)) {
			/* seq_cst: seen by scan() before or after. */
			atomic_store(&s->quiet, 0);
			atomic_store(&s->activity,
				     atomic_load(&s->activity) + 1);
		}
		return false;
	}
	/* seq_cst stores: read by scan() on any shard. */
	atomic_store(&s->sent_pub, s->sent);
	atomic_store(&s->recv_pub, s->received);
	atomic_store(&s->quiet, 1);
	if (!scan(rt, &a) || !scan(rt, &b) || a != b)
		return false;
	for (unsigned i = 0; i < rt->nshards; i++)
		if (rt->shards[i] != s)
			pw__shard_kick(rt->shards[i]);
	return true;
}

/* ---- public operations ------------------------------------------------ */

static int check_target(struct pw__shard **sp, unsigned shard)
{
	struct pw__shard *s = pw__cur_shard;

	if (!s)
		return -EPERM;
	if (shard >= s->rt->nshards)
		return -ENODEV;
	if (s->stopping)
		return -ESHUTDOWN;
	*sp = s;
	return 0;
}

int pw_shard_count(void)
{
	struct pw__shard *s = pw__cur_shard;

	return s ? (int)s->rt->nshards : -EPERM;
}

/* a0: the argument; a1: the function. */
static void submit_handler(const struct pw__msg *m)
{
	((void (*)(void *))(uintptr_t)m->a1)(m->a0);
}

int pw_submit_to(unsigned shard, void (*fn)(void *arg), void *arg)
{
	struct pw__shard *s;

	if (!fn)
		return -EINVAL;
	int err = check_target(&s, shard);
	if (err)
		return err;
	struct pw__msg m = {
		.fn = submit_handler,
		.a0 = arg,
		.a1 = (uint64_t)(uintptr_t)fn,
	};
	return pw__mesh_send(s, shard, &m);
}

/* A spawn whose state is staged in the sender's slab: the target copies
 * it into a task, then sends the block back to be freed. */
struct spawn_stage {
	pw_poll_fn fn;
	pw_drop_fn drop;
	size_t size;
	int cls;
	_Alignas(16) unsigned char data[];
};

/* a0: the stage block, back at the shard that allocated it. */
static void stage_free_handler(const struct pw__msg *m)
{
	struct spawn_stage *st = m->a0;

	pw__slab_free(&pw__cur_shard->aux, st, st->cls);
}

/* a0: the stage block; a1: the sender, which frees it. */
static void spawn_handler(const struct pw__msg *m)
{
	struct pw__shard *s = pw__cur_shard;
	struct spawn_stage *st = m->a0;
	unsigned src = (unsigned)m->a1;
	struct pw__task *t;

	int err = s->stopping ? -ESHUTDOWN :
				pw__task_new(s, &t, st->fn, st->data, st->size,
					     st->drop);
	if (err && st->drop)
		st->drop(st->data);
	if (!err) {
		/* Placed by the program: it stays here in stealing mode. */
		pw__task_fix(t, s);
		pw__task_start(t);
	}
	struct pw__msg back = { .fn = stage_free_handler, .a0 = st };
	if (pw__mesh_send(s, src, &back) < 0)
		/* Kept by the sender's slab until shutdown: not lost. */
		PW__STAT_INC(s, mesh_overflowed);
}

/* a0: the state pointer; a1: the poll function; a2: the drop hook. */
static void spawn_ptr_handler(const struct pw__msg *m)
{
	struct pw__shard *s = pw__cur_shard;
	pw_poll_fn fn = (pw_poll_fn)(uintptr_t)m->a1;
	pw_drop_fn d = (pw_drop_fn)(uintptr_t)m->a2;
	void *state = m->a0;
	struct pw__task *t;

	int err = s->stopping ? -ESHUTDOWN :
				pw__task_new(s, &t, fn, state, 0, d);
	if (err && d)
		d(state);
	if (!err) {
		/* Placed by the program: it stays here in stealing mode. */
		pw__task_fix(t, s);
		pw__task_start(t);
	}
}

int pw_spawn_on(unsigned shard, pw_poll_fn fn, const void *state, size_t size,
		pw_drop_fn drop)
{
	struct pw__shard *s;

	if (!fn || size > PW_TASK_STATE_MAX || (size && !state))
		return -EINVAL;
	int err = check_target(&s, shard);
	if (err)
		return err;
	if (!size) {
		struct pw__msg m = {
			.fn = spawn_ptr_handler,
			.a0 = (void *)state,
			.a1 = (uint64_t)(uintptr_t)fn,
			.a2 = (uint64_t)(uintptr_t)drop,
		};
		return pw__mesh_send(s, shard, &m);
	}
	int cls = pw__slab_class(sizeof(struct spawn_stage) + size);
	struct spawn_stage *st = cls < 0 ? NULL : pw__slab_alloc(&s->aux, cls);
	if (!st)
		return -ENOMEM;
	st->fn = fn;
	st->drop = drop;
	st->size = size;
	st->cls = cls;
	memcpy(st->data, state, size);
	struct pw__msg m = { .fn = spawn_handler, .a0 = st, .a1 = s->id };
	err = pw__mesh_send(s, shard, &m);
	if (err)
		pw__slab_free(&s->aux, st, cls);
	return err;
}

/* ---- calls --------------------------------------------------------- */

/*
 * A call request carries everything the target needs: a0 the caller's
 * struct pw_call (only handed back in the reply), a1 the poll function,
 * a2 the drop hook, a3 the state pointer, and a4 the caller's shard id
 * (low 32 bits) with the state size (high 32), all taken from the
 * struct pw_call when the request is sent. The target never reads that
 * struct, whose line the caller's core owns: had it to, every call would
 * wait for one more line to come over after the slot. Besides the slot
 * it reads only the state it copies (size > 0), which no message could
 * carry. The reply is a0 the struct pw_call, a1 the result and a2 the
 * replying shard.
 */
_Static_assert(PW_TASK_STATE_MAX <= UINT32_MAX, "a call's size fits 32 bits");

/* The task that runs a call on the target shard. */
struct call_task {
	struct pw_call *call; /* in the caller's memory (pinned) */
	pw_poll_fn fn;
	pw_drop_fn drop;
	void *user; /* the user state: data below, or the caller's pointer */
	unsigned caller;
	bool replied;
	_Alignas(16) unsigned char data[];
};

static void call_reply_handler(const struct pw__msg *m);

static void call_reply(struct pw__shard *s, struct call_task *ct,
		       int64_t result)
{
	struct pw__msg m = {
		.fn = call_reply_handler,
		.a0 = ct->call,
		.a1 = (uint64_t)result,
		.a2 = s->id,
	};

	ct->replied = true;
	if (pw__mesh_send(s, ct->caller, &m) < 0)
		/* Out of memory for the overflow: the caller's memory stays
		 * pinned until shutdown rather than being freed early. */
		PW__STAT_INC(s, mesh_overflowed);
}

static enum pw_poll call_task_poll(struct pw_cx *cx, void *state)
{
	struct call_task *ct = state;
	enum pw_poll r = ct->fn(cx, ct->user);

	if (r == PW_READY)
		call_reply(cx->shard, ct, cx->result);
	return r;
}

static void call_task_drop(void *state)
{
	struct call_task *ct = state;

	if (ct->drop)
		ct->drop(ct->user);
	if (!ct->replied)
		call_reply(pw__cur_shard, ct, -ECANCELED);
}

/* The request (see above): built from the message alone. */
static void call_request_handler(const struct pw__msg *m)
{
	struct pw__shard *s = pw__cur_shard;
	const void *arg = (const void *)(uintptr_t)m->a3;
	size_t size = (size_t)(m->a4 >> 32);
	struct call_task head = {
		.call = m->a0,
		.fn = (pw_poll_fn)(uintptr_t)m->a1,
		.drop = (pw_drop_fn)(uintptr_t)m->a2,
		.caller = (uint32_t)m->a4,
	};
	struct pw__task *t;

	int err = s->stopping ?
			  -ESHUTDOWN :
			  pw__task_new(s, &t, call_task_poll, NULL,
				       sizeof(head) + size, call_task_drop);
	if (err) {
		call_reply(s, &head, err);
		return;
	}
	struct call_task *ct = t->state;
	*ct = head;
	if (size) {
		memcpy(ct->data, arg, size);
		ct->user = ct->data;
	} else {
		ct->user = (void *)arg;
	}
	/* A call runs on the shard it was made to, in both modes. */
	pw__task_fix(t, s);
	pw__task_start(t);
}

static void call_send(struct pw__shard *s, struct pw_call *c)
{
	/* c->size <= PW_TASK_STATE_MAX: checked by pw_call_poll(). */
	struct pw__msg m = {
		.fn = call_request_handler,
		.a0 = c,
		.a1 = (uint64_t)(uintptr_t)c->fn,
		.a2 = (uint64_t)(uintptr_t)c->drop,
		.a3 = (uint64_t)(uintptr_t)c->arg,
		.a4 = (uint64_t)s->id | (uint64_t)c->size << 32,
	};

	s->out[c->shard].calls++;
	c->state = PW_CALL_SENT;
	if (pw__mesh_send(s, c->shard, &m) < 0) {
		/* Could not even stage it: fail the call, unpin. */
		s->out[c->shard].calls--;
		c->result = -ENOMEM;
		c->state = PW_CALL_DONE;
		pw__task_unpin_wake(s, c->task);
	}
}

static void call_reply_handler(const struct pw__msg *m)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw_call *c = m->a0;
	int64_t result = (int64_t)m->a1;
	struct pw__outq *q = &s->out[m->a2];
	struct pw__task *t = c->task;

	q->calls--;
	if (!pw_list_empty(&q->waiters)) {
		struct pw_call *w =
			pw_list_first_entry(&q->waiters, struct pw_call, wait);
		pw_list_del_init(&w->wait);
		call_send(s, w);
	}
	c->result = result;
	c->state = PW_CALL_DONE;
	c->task = NULL;
	pw__task_unpin_wake(s, t);
}

void pw_call_init(struct pw_call *c, unsigned shard, pw_poll_fn fn,
		  const void *state, size_t size, pw_drop_fn drop)
{
	if (!c)
		return;
	memset(c, 0, sizeof(*c));
	c->fn = fn;
	c->drop = drop;
	c->arg = state;
	c->size = size;
	c->shard = shard;
	pw_list_init(&c->wait);
}

enum pw_poll pw_call_poll(struct pw_cx *cx, struct pw_call *c, int64_t *result)
{
	if (!cx || !c || !result) {
		if (result)
			*result = -EINVAL;
		return PW_READY;
	}
	struct pw__shard *s = cx->shard;

	switch (c->state) {
	case PW_CALL_DONE:
		if (!pw__coop_proceed(cx))
			return PW_PENDING;
		*result = c->result;
		c->state = PW_CALL_IDLE;
		return PW_READY;
	case PW_CALL_SENT:
	case PW_CALL_WAITING:
		return PW_PENDING;
	default:
		break;
	}
	if (!c->fn || c->size > PW_TASK_STATE_MAX || (c->size && !c->arg)) {
		*result = -EINVAL;
		return PW_READY;
	}
	if (c->shard >= s->rt->nshards) {
		*result = -ENODEV;
		return PW_READY;
	}
	if (s->stopping) {
		*result = -ESHUTDOWN;
		return PW_READY;
	}
	struct pw__outq *q = &s->out[c->shard];
	c->task = cx->task;
	pw__task_pin(s, cx->task);
	if (s->rt->cfg.max_calls && q->calls >= s->rt->cfg.max_calls) {
		c->state = PW_CALL_WAITING;
		pw_list_add_tail(&c->wait, &q->waiters);
		return PW_PENDING;
	}
	call_send(s, c);
	return PW_PENDING;
}

int pw_call_cancel(struct pw_call *c)
{
	if (!c || c->state != PW_CALL_WAITING)
		return -EALREADY;
	struct pw__task *t = c->task;

	pw_list_del_init(&c->wait);
	c->state = PW_CALL_IDLE;
	c->task = NULL;
	pw__task_unpin(pw__cur_shard, t);
	return 0;
}

/* ---- cross-shard wakes ---------------------------------------------- */

/* a0: the task; a1: 1 wake, 2 drop the reference the message carries. */
static void wake_handler(const struct pw__msg *m)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__task *t = m->a0;
	uint64_t flags = m->a1;

	if (flags & 1) {
		PW__STAT_INC(s, remote_wakes);
		pw__task_schedule(s, t);
	}
	if (flags & 2)
		pw__task_unref(s, t);
}

bool pw__mesh_remote_wake(struct pw__shard *s, struct pw__task *t, bool wake)
{
	struct pw__msg m = {
		.fn = wake_handler,
		.a0 = t,
		.a1 = wake ? 3u : 2u,
	};

	return pw__mesh_send(s, t->shard->id, &m) == 0;
}
