/* SPDX-License-Identifier: MIT */
/*
 * net_int.h - the per-shard networking record and the in-flight request
 * machinery shared by the files of net/. Private to the library.
 *
 * A leaf's struct pw_net_op is its request: its SQE's user_data is the
 * op's address tagged PW__UD_NET, so the shard hands its CQEs to
 * pw__net_complete(). A request may post several CQEs (multishot accept
 * and recv, SEND_ZC's notification): it pins its task from submission to
 * the CQE without IORING_CQE_F_MORE, and counts once in s->inflight.
 */
#ifndef PW_NET_INT_H
#define PW_NET_INT_H

#include <liburing.h>

#include "pinwheel/net.h"
#include "shard/sched.h"

/* The buffer group of the per-shard provided-buffer ring. */
#define PW__NET_BGID 7

/* Kinds of request (pw_net_op.kind). */
enum {
	PW__NK_ACCEPT = 1,
	PW__NK_RECV,
	PW__NK_SEND,
	PW__NK_CONNECT,
	PW__NK_CLOSE,
	PW__NK_UDP_RECV,  /* net/udp_recv.c */
	PW__NK_UDP_SEND,  /* net/udp_send.c */
	PW__NK_UDP_BATCH, /* one datagram of a pw_udp_batch */
};

/* States of a request (pw_net_op.state). */
enum {
	PW__NS_IDLE = 0,   /* nothing in flight */
	PW__NS_ARMED,	   /* in flight */
	PW__NS_CANCELLING, /* in flight, cancel requested */
	PW__NS_DONE,	   /* one-shot: final CQE seen, res not yet taken */
};

/* pw_net_op.flags */
#define PW__NF_PAUSED	0x01u /* cancelled by us to stop a full queue */
#define PW__NF_STARVED	0x02u /* recv ended for lack of buffers */
#define PW__NF_BACKOFF	0x04u /* accept: a resource error, back off */
#define PW__NF_WAITING	0x08u /* accept: backoff sleep armed */
#define PW__NF_TIMEDOUT 0x10u /* the poll's deadline passed: cancelled */
#define PW__NF_DROPPED	0x20u /* the owner cancelled: discard results */
#define PW__NF_LIMITED	0x40u /* recv: armed with a byte limit */

/*
 * Where pw_accept_stop()'s sweep of the backlog is (pw_accept.sweep):
 * not begun, a one-shot accept that does not wait in flight, or over
 * (the backlog was empty, the kernel refused, or PW__SWEEP_MAX taken).
 */
enum { PW__SWEEP_NONE = 0, PW__SWEEP_ON, PW__SWEEP_DONE };
/* The most a sweep takes: the kernel's largest default backlog, more
 * than the connections whose wake-up one cancel can have taken. */
#define PW__SWEEP_MAX 4096u

/* Where a provided buffer is (pw__net.where[bid]). */
enum {
	PW__BUF_RING = 0, /* in the kernel's ring */
	PW__BUF_QUEUED,	  /* filled, queued in a pw_recv */
	PW__BUF_LENT,	  /* borrowed by the application */
};

/* One shard's networking. Shard thread only. */
struct pw__net {
	struct pw_net_config cfg;
	struct io_uring_buf_ring *br; /* NULL until the first recv */
	size_t br_bytes;	      /* its mapping */
	char *mem;		      /* buf_count * buf_size bytes */
	uint16_t *next;		      /* queue links of filled buffers */
	uint32_t *len;		      /* bytes in each filled buffer */
	uint8_t *where;		      /* PW__BUF_* per buffer */
	uint32_t out;		      /* buffers not in the ring */
	uint32_t recv_cap;	      /* queued buffers that pause a recv
					 (PW_NET_RECV_SHARE) */
	struct pw_list starved;	      /* pw_recvs waiting for buffers */
	uint8_t recv_limit;	      /* PW__LIMIT_*: the kernel's multishot
					 byte limit */
	struct pw_net_stats st;
};

/* Whether the kernel ends a multishot recv after a byte limit
 * (pw__net.recv_limit): not known yet, seen working, refused. */
enum { PW__LIMIT_UNKNOWN = 0, PW__LIMIT_WORKS, PW__LIMIT_REFUSED };

/* A listener's per-shard socket and counters. The counters are written
 * by that shard only (relaxed load + store, no read-modify-write) and
 * read by any thread (relaxed loads). */
struct pw__lshard {
	int fd;
	_Atomic uint64_t accepted, errors, dropped;
	/* Accepted sockets that arrived while a pw_accept's queue was full
	 * (a multishot accept keeps posting until its cancel lands): kept
	 * in order for the shard's acceptors. Shard thread only; closed by
	 * pw_net_listener_destroy(). */
	int *spill;
	uint32_t spill_head, spill_len, spill_cap;
};

struct pw_net_listener {
	struct pw_runtime *rt;
	unsigned n;		 /* shards */
	unsigned nfds;		 /* distinct sockets: per[0..nfds-1].fd */
	bool shared;		 /* one socket for all */
	bool handed;		 /* fds handed out: keep a Unix path */
	struct pw_net_addr addr; /* bound address */
	struct pw__lshard per[];
};

#define PW__LSTAT_ADD(p, f, v)                                             \
	atomic_store_explicit(                                             \
		&(p)->f,                                                   \
		atomic_load_explicit(&(p)->f, memory_order_relaxed) + (v), \
		memory_order_relaxed)

/* The calling shard's networking record, created on first use; NULL
 * (and *err set) off a shard or out of memory. */
struct pw__net *pw__net_get(struct pw__shard *s, int *err);

/* Create the buffer ring if it does not exist yet. 0 or -errno. */
int pw__net_bufs_ready(struct pw__shard *s, struct pw__net *n);

/* Take @r off the starved list if it is there. Its node is NULL while
 * unlinked, so a leaf copied into a task's state is never stale. */
static inline void pw__recv_unstarve(struct pw_recv *r)
{
	if (r->starved.next) {
		pw_list_del(&r->starved);
		r->starved.next = r->starved.prev = NULL;
	}
}

/* Whether @buf is a ring buffer of @n lent to the application. */
bool pw__net_buf_lent(const struct pw__net *n, const struct pw_net_buf *buf);

/* Put buffer @bid back into the kernel's ring. */
void pw__net_buf_recycle(struct pw__net *n, uint16_t bid);

/* Append filled buffer @bid (@len bytes) to receive @q's queue, in
 * order, through the ring's next[] links. Shard thread only. */
static inline void pw__net_buf_enqueue(struct pw__net *n, struct pw_recv *q,
				       uint16_t bid, uint32_t len)
{
	n->where[bid] = PW__BUF_QUEUED;
	n->len[bid] = len;
	n->next[bid] = 0;
	if (q->count)
		n->next[q->tail] = bid;
	else
		q->head = bid;
	q->tail = bid;
	q->count++;
}

/* The provided buffer a receive's CQE carries, if any: counted out of the
 * ring, then given back at once when the request's task is gone (!@alive),
 * its owner dropped it, or the CQE is an error or end of stream (return
 * false); else its id in *@bid, for the caller to queue (return true).
 * Shard thread only. */
static inline bool pw__net_cqe_buf(struct pw__net *n,
				   const struct pw_net_op *op,
				   const struct io_uring_cqe *cqe, bool alive,
				   uint16_t *bid)
{
	if (!(cqe->flags & IORING_CQE_F_BUFFER))
		return false;
	*bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
	n->out++;
	if (!alive || (op->flags & PW__NF_DROPPED) || cqe->res <= 0) {
		pw__net_buf_recycle(n, *bid);
		return false;
	}
	return true;
}

/*
 * An SQE for a request of @cx's task; NULL when the kernel takes nothing
 * (the task is then polled again next turn). Prepare it, then call
 * pw__nop_arm().
 */
struct io_uring_sqe *pw__nop_sqe(struct pw_cx *cx);

/* Tag @sqe as @op's request of @kind, pin the task, count it in flight. */
void pw__nop_arm(struct pw_cx *cx, struct pw_net_op *op,
		 struct io_uring_sqe *sqe, uint8_t kind);

/* Ask the kernel to cancel @op's request if it is armed. */
void pw__nop_cancel(struct pw__shard *s, struct pw_net_op *op);

/* Per-kind CQE handlers: consume the CQE's payload. @final is true for
 * the request's last CQE; @alive is false once the task finished. */
void pw__accept_cqe(struct pw__shard *s, struct pw_net_op *op,
		    const struct io_uring_cqe *cqe, bool final, bool alive);
void pw__recv_cqe(struct pw__shard *s, struct pw_net_op *op,
		  const struct io_uring_cqe *cqe, bool final, bool alive);
void pw__send_cqe(struct pw__shard *s, struct pw_net_op *op,
		  const struct io_uring_cqe *cqe, bool final, bool alive);
void pw__connect_cqe(struct pw__shard *s, struct pw_net_op *op,
		     const struct io_uring_cqe *cqe, bool final, bool alive);
void pw__close_cqe(struct pw__shard *s, struct pw_net_op *op,
		   const struct io_uring_cqe *cqe, bool final, bool alive);
void pw__udp_recv_cqe(struct pw__shard *s, struct pw_net_op *op,
		      const struct io_uring_cqe *cqe, bool final, bool alive);
void pw__udp_send_cqe(struct pw__shard *s, struct pw_net_op *op,
		      const struct io_uring_cqe *cqe, bool final, bool alive);
void pw__udp_batch_cqe(struct pw__shard *s, struct pw_net_op *op,
		       const struct io_uring_cqe *cqe, bool final, bool alive);

/* A CQE for net request @op arrived; free @s's networking at teardown
 * (net/net.c). Shard thread only. */
void pw__net_complete(struct pw__shard *s, struct pw_net_op *op,
		      const struct io_uring_cqe *cqe);
void pw__net_teardown(struct pw__shard *s);

#endif /* PW_NET_INT_H */
