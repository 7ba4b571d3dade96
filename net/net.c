/* SPDX-License-Identifier: MIT */
/*
 * net.c - per-shard networking: settings, the provided-buffer ring, and
 * the in-flight requests of the net leaves (see net_int.h).
 *
 * The buffer ring: buf_count buffers of buf_size bytes, registered as
 * buffer group PW__NET_BGID of the shard's ring when the first pw_recv is
 * polled, unregistered and freed at shard teardown. A buffer is in the
 * kernel's ring, queued in a pw_recv (filled, not yet taken) or lent to
 * the application; pw_net_buf_release() puts it back. Receives that ran
 * out of buffers (-ENOBUFS) wait on the shard's starved list and are
 * woken once enough buffers have come back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/fault.h"
#include "net/net_int.h"

void pw_net_config_init(struct pw_net_config *cfg)
{
	if (!cfg)
		return;
	cfg->buf_count = 512;
	cfg->buf_size = 4096;
	cfg->zc_threshold = 0;
}

static bool config_ok(const struct pw_net_config *c)
{
	return c->buf_count >= 1 && c->buf_count <= 32768 &&
	       !(c->buf_count & (c->buf_count - 1)) && c->buf_size >= 64 &&
	       c->buf_size <= (1u << 20);
}

struct pw__net *pw__net_get(struct pw__shard *s, int *err)
{
	if (!s) {
		*err = -EPERM;
		return NULL;
	}
	if (s->net)
		return s->net;
	struct pw__net *n = pw__fault_calloc(PW__FAULT_NET, 1, sizeof(*n));
	if (!n) {
		*err = -ENOMEM;
		return NULL;
	}
	pw_net_config_init(&n->cfg);
	pw_list_init(&n->starved);
	s->net = n;
	return n;
}

int pw_net_configure(const struct pw_net_config *cfg)
{
	int err = 0;

	if (!cfg || !config_ok(cfg))
		return -EINVAL;
	struct pw__net *n = pw__net_get(pw__cur_shard, &err);
	if (!n)
		return err;
	/* Each buffer starts on a cache line: the UDP receive reads the
	 * kernel's header and keeps a count in place at its start. */
	uint32_t size = (cfg->buf_size + 63) & ~63u;

	n->cfg.zc_threshold = cfg->zc_threshold;
	if (n->br) {
		if (cfg->buf_count != n->cfg.buf_count ||
		    size != n->cfg.buf_size)
			return -EBUSY;
		return 0;
	}
	n->cfg = *cfg;
	n->cfg.buf_size = size;
	return 0;
}

int pw_net_stats(struct pw_net_stats *out)
{
	struct pw__shard *s = pw__cur_shard;

	if (!out)
		return -EINVAL;
	if (!s)
		return -EPERM;
	memset(out, 0, sizeof(*out));
	if (s->net) {
		*out = s->net->st;
		out->bufs_total = s->net->br ? s->net->cfg.buf_count : 0;
		out->bufs_borrowed = s->net->out;
	}
	return 0;
}

/* ---- the buffer ring --------------------------------------------------- */

int pw__net_bufs_ready(struct pw__shard *s, struct pw__net *n)
{
	uint32_t cnt = n->cfg.buf_count, sz = n->cfg.buf_size;

	if (n->br)
		return 0;
	n->br_bytes = (cnt * sizeof(struct io_uring_buf) + 4095) & ~4095ul;
	void *br = pw__fault_mmap(PW__FAULT_NET, n->br_bytes);
	if (br == MAP_FAILED)
		return -ENOMEM;
	n->mem = pw__fault_aligned_alloc(PW__FAULT_NET, 64, (size_t)cnt * sz);
	n->next = pw__fault_calloc(PW__FAULT_NET, cnt, sizeof(*n->next));
	n->len = pw__fault_calloc(PW__FAULT_NET, cnt, sizeof(*n->len));
	n->where = pw__fault_calloc(PW__FAULT_NET, cnt, sizeof(*n->where));
	int err = -ENOMEM;
	if (n->mem && n->next && n->len && n->where) {
		struct io_uring_buf_reg reg;
		memset(&reg, 0, sizeof(reg));
		reg.ring_addr = (uint64_t)(uintptr_t)br;
		reg.ring_entries = cnt;
		reg.bgid = PW__NET_BGID;
		err = pw__fault(PW__FAULT_NET) ?
			      -ENOMEM :
			      io_uring_register_buf_ring(&s->ring, &reg, 0);
	}
	if (err) {
		munmap(br, n->br_bytes);
		free(n->mem);
		free(n->next);
		free(n->len);
		free(n->where);
		n->mem = NULL;
		n->next = NULL;
		n->len = NULL;
		n->where = NULL;
		return err;
	}
	n->br = br;
	io_uring_buf_ring_init(n->br);
	int mask = io_uring_buf_ring_mask(cnt);
	for (uint32_t i = 0; i < cnt; i++)
		io_uring_buf_ring_add(n->br, n->mem + (size_t)i * sz, sz,
				      (unsigned short)i, mask, (int)i);
	io_uring_buf_ring_advance(n->br, (int)cnt);
	n->recv_cap = cnt >= 4 * PW_NET_RECV_SHARE ? PW_NET_RECV_SHARE :
		      cnt / 4			   ? cnt / 4 :
						     1;
	return 0;
}

void pw__net_buf_recycle(struct pw__net *n, uint16_t bid)
{
	size_t sz = n->cfg.buf_size;

	n->where[bid] = PW__BUF_RING;
	n->out--;
	io_uring_buf_ring_add(n->br, n->mem + bid * sz, (unsigned)sz, bid,
			      io_uring_buf_ring_mask(n->cfg.buf_count), 0);
	io_uring_buf_ring_advance(n->br, 1);
	if (pw_list_empty(&n->starved))
		return;
	/* Wake the starved receives once a useful share came back. */
	uint32_t want = n->cfg.buf_count / 8 ? n->cfg.buf_count / 8 : 1;
	if (n->cfg.buf_count - n->out < want)
		return;
	while (!pw_list_empty(&n->starved)) {
		struct pw_recv *r = pw_list_first_entry(
			&n->starved, struct pw_recv, starved);
		pw__recv_unstarve(r);
		if (r->op.task)
			pw__task_wake_local(pw__cur_shard, r->op.task);
	}
}

bool pw__net_buf_lent(const struct pw__net *n, const struct pw_net_buf *buf)
{
	return n->br && buf->bid < n->cfg.buf_count &&
	       n->where[buf->bid] == PW__BUF_LENT &&
	       buf->data == n->mem + (size_t)buf->bid * n->cfg.buf_size;
}

int pw_net_buf_release(struct pw_net_buf *buf)
{
	struct pw__shard *s = pw__cur_shard;
	struct pw__net *n = s ? s->net : NULL;

	if (buf && n && buf->bid == PW_NET_BUF_OWN) {
		/* The receive's own memory: freed by its next call. */
		buf->data = NULL;
		buf->len = 0;
		return 0;
	}
	if (!buf || !n || !pw__net_buf_lent(n, buf))
		return -EINVAL;
	pw__net_buf_recycle(n, buf->bid);
	buf->data = NULL;
	buf->len = 0;
	return 0;
}

/* Shard teardown: every request has completed; free the ring. */
void pw__net_teardown(struct pw__shard *s)
{
	struct pw__net *n = s->net;

	if (!n)
		return;
	if (n->br) {
		if (s->ring_ok)
			io_uring_unregister_buf_ring(&s->ring, PW__NET_BGID);
		munmap(n->br, n->br_bytes);
	}
	free(n->mem);
	free(n->next);
	free(n->len);
	free(n->where);
	free(n);
	s->net = NULL;
}

/* ---- requests ---------------------------------------------------------- */

struct io_uring_sqe *pw__nop_sqe(struct pw_cx *cx)
{
	struct io_uring_sqe *sqe = pw__shard_sqe(cx->shard);

	if (!sqe)
		cx->task->flags |= PW__T_NOTIFIED; /* retry next turn */
	return sqe;
}

void pw__nop_arm(struct pw_cx *cx, struct pw_net_op *op,
		 struct io_uring_sqe *sqe, uint8_t kind)
{
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | PW__UD_NET);
	op->task = cx->task;
	op->kind = kind;
	op->state = PW__NS_ARMED;
	op->res = 0;
	op->cqe_flags = 0;
	/* Its socket's buffers and requests are this shard's. */
	pw__task_fix(cx->task, cx->shard);
	pw__task_pin(cx->shard, cx->task);
	cx->shard->inflight++;
}

void pw__nop_cancel(struct pw__shard *s, struct pw_net_op *op)
{
	if (op->state != PW__NS_ARMED)
		return;
	uint64_t ud = (uint64_t)(uintptr_t)op | PW__UD_NET;
	struct io_uring_sqe *sqe = pw__shard_sqe(s);

	op->state = PW__NS_CANCELLING;
	if (!sqe) {
		struct io_uring_sync_cancel_reg reg;
		memset(&reg, 0, sizeof(reg));
		reg.addr = ud;
		reg.fd = -1;
		reg.timeout.tv_sec = -1;
		reg.timeout.tv_nsec = -1;
		(void)io_uring_register_sync_cancel(&s->ring, &reg);
		return;
	}
	io_uring_prep_cancel64(sqe, ud, 0);
	io_uring_sqe_set_data64(sqe, PW__UD_IGNORE);
	s->inflight++;
}

void pw__net_complete(struct pw__shard *s, struct pw_net_op *op,
		      const struct io_uring_cqe *cqe)
{
	struct pw__task *t = op->task;
	bool final = !(cqe->flags & IORING_CQE_F_MORE);
	bool alive = !(t->flags & PW__T_DONE);

	switch (op->kind) {
	case PW__NK_ACCEPT:
		pw__accept_cqe(s, op, cqe, final, alive);
		break;
	case PW__NK_RECV:
		pw__recv_cqe(s, op, cqe, final, alive);
		break;
	case PW__NK_SEND:
		pw__send_cqe(s, op, cqe, final, alive);
		break;
	case PW__NK_CONNECT:
		pw__connect_cqe(s, op, cqe, final, alive);
		break;
	case PW__NK_UDP_RECV:
		pw__udp_recv_cqe(s, op, cqe, final, alive);
		break;
	case PW__NK_UDP_SEND:
		pw__udp_send_cqe(s, op, cqe, final, alive);
		break;
	case PW__NK_UDP_BATCH:
		pw__udp_batch_cqe(s, op, cqe, final, alive);
		break;
	default:
		pw__close_cqe(s, op, cqe, final, alive);
		break;
	}
	if (!final) {
		/* A multishot request of a finished task whose drop hook
		 * forgot it: end it, or it would pin the task forever. */
		if (!alive)
			pw__nop_cancel(s, op);
		else
			pw__task_wake_local(s, t);
		return;
	}
	s->inflight--;
	/* The op may live in the task's memory: not touched from here. */
	pw__task_unpin_wake(s, t);
}
