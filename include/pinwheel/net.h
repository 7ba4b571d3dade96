/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/net.h - stream sockets over io_uring: TCP (IPv4, IPv6) and Unix.
 *
 * Addresses are parsed from text ("127.0.0.1:8080", "[::1]:8080",
 * "unix:/path"). A listener is a runtime-owned object holding one
 * SO_REUSEPORT socket per shard (the default) or one socket shared by
 * every shard. Tasks drive sockets through leaf futures embedded in their
 * state, like pw_op: pw_accept (multishot accept), pw_recv (multishot recv
 * into the shard's provided-buffer ring), pw_send (all bytes or an error),
 * pw_connect, pw_shutdown and pw_close. Each poll that can wait takes a
 * deadline: absolute ns on the runtime clock, PW_TIME_NEVER for none.
 *
 * Every leaf keeps its task's memory alive while the kernel holds one of
 * its requests ("pins" it), so a task whose state is dropped with
 * requests in flight is released only after their final completions.
 * A drop hook must call the leaf's *_cancel() for every leaf that may be
 * in flight (multishot requests never end on their own).
 *
 * A leaf is always polled by the same task, on the same shard.
 */
#ifndef PINWHEEL_NET_H
#define PINWHEEL_NET_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "export.h"
#include "list.h"
#include "runtime.h"
#include "task.h"
#include "time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- addresses --------------------------------------------------------- */

/* A socket address of any supported family. Plain value; copy freely. */
struct pw_net_addr {
	union {
		struct sockaddr sa;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
		struct sockaddr_un un;
	} u;
	socklen_t len; /* bytes of u in use; 0 for an empty address */
};

/* Longest text pw_net_addr_format() writes, with its NUL. */
#define PW_NET_ADDR_STRLEN 128

/**
 * pw_net_addr_parse - parse @text into @addr.
 *
 * Forms: "A.B.C.D:PORT", "[IPv6]:PORT", "unix:/path" (a path of at most
 * 107 bytes; "unix:@name" for the abstract namespace). PORT is 0..65535
 * in decimal; 0 asks the kernel for a free port when listening.
 * Return: 0; -EINVAL for NULL arguments or text of any other form, and
 * @addr is then left untouched.
 * Context: any thread.
 */
PW_API int pw_net_addr_parse(struct pw_net_addr *addr, const char *text);

/**
 * pw_net_addr_format - write @addr as text in the form parse accepts.
 * Return: the length written (without the NUL); -EINVAL for NULL or an
 * unsupported family; -ENOSPC when @size is too small.
 * Context: any thread.
 */
PW_API int pw_net_addr_format(const struct pw_net_addr *addr, char *buf,
			      size_t size);

/* ---- per-shard settings --------------------------------------------- */

/* Settings of one shard's networking. */
struct pw_net_config {
	uint32_t buf_count;    /* provided buffers, a power of 2, 1..32768 */
	uint32_t buf_size;     /* bytes per buffer, 64..1 MiB, rounded
				  up to a multiple of 64 */
	uint32_t zc_threshold; /* sends of at least this many bytes use
				  SEND_ZC; 0 turns zero-copy off */
};

/** pw_net_config_init - the defaults: 512 buffers of 4 KiB, no ZC. */
PW_API void pw_net_config_init(struct pw_net_config *cfg);

/**
 * pw_net_configure - set the calling shard's networking settings.
 *
 * The buffer ring is created lazily, by the first pw_recv polled on the
 * shard; its geometry can be changed only before then.
 * Return: 0; -EINVAL for NULL or a value out of range; -EBUSY when the
 * buffer ring exists and @cfg changes its geometry (the ZC threshold is
 * still updated); -EPERM off a shard; -ENOMEM.
 * Context: a shard thread.
 */
PW_API int pw_net_configure(const struct pw_net_config *cfg);

/* Counters of one shard's networking (read on that shard). */
struct pw_net_stats {
	uint64_t recv_bytes;	/* bytes delivered by pw_recv */
	uint64_t send_bytes;	/* bytes sent by pw_send */
	uint64_t zc_sends;	/* sends that used SEND_ZC */
	uint64_t enobufs;	/* multishot recvs ended for lack of buffers */
	uint64_t recv_pauses;	/* multishot recvs paused by a full queue */
	uint64_t parks;		/* pw_recv_park() calls that found work */
	uint64_t parked_bytes;	/* bytes copied into receives' own memory */
	uint32_t bufs_total;	/* buffers in the ring (0 before it exists) */
	uint32_t bufs_borrowed; /* buffers held by the application */
};

/**
 * pw_net_stats - the calling shard's counters.
 * Return: 0; -EINVAL for NULL; -EPERM off a shard.
 * Context: a shard thread.
 */
PW_API int pw_net_stats(struct pw_net_stats *out);

/* ---- the in-flight request of a leaf (fields are the runtime's) -------- */

struct pw_net_op {
	struct pw__task *task; /* the task pinned while in flight */
	int32_t res;	       /* result of a finished one-shot request */
	uint32_t cqe_flags;
	uint8_t kind;  /* which leaf embeds it */
	uint8_t state; /* idle, armed, cancelling, done */
	uint8_t flags;
	uint8_t stage;
};

/* ---- listeners ----------------------------------------------------------- */

/* Listener options. */
#define PW_NET_LISTEN_SHARED 0x1u /* one socket accepted from by all shards */
/* Share a TCP port another SO_REUSEPORT socket (another process, another
 * listener) already listens on, the kernel spreading the connections
 * over all of them; without it such a port is refused with -EADDRINUSE.
 * With PW_NET_LISTEN_SHARED the one socket gets SO_REUSEPORT too. No
 * effect on Unix sockets: a path has one listener. */
#define PW_NET_LISTEN_SHARE_PORT 0x2u

struct pw_net_listen_opts {
	int backlog;	/* listen(2) backlog; 0 means 1024 */
	uint32_t flags; /* PW_NET_LISTEN_* */
	/* SO_SNDBUF of the accepted sockets (set on the listening ones,
	 * which pass it on); 0 keeps the kernel's autotuning. A bound on
	 * what a client that does not read can have queued for it. */
	int sndbuf;
};

struct pw_net_listener;

/**
 * pw_net_listener_create - bind and listen on @addr for @rt's shards.
 *
 * TCP: one SO_REUSEPORT socket per shard, so the kernel spreads
 * connections over the shards, unless PW_NET_LISTEN_SHARED asks for one
 * socket every shard accepts from. Port 0 picks a free port, the same for
 * every shard (pw_net_listener_addr() tells which). Unix sockets always
 * use one shared socket. TCP_NODELAY is set on the listening sockets and
 * inherited by accepted ones, and so is @opts->sndbuf. @opts may be NULL.
 * A TCP port another socket listens on is refused with -EADDRINUSE, as
 * a second server on it would be (unless PW_NET_LISTEN_SHARE_PORT); a
 * Unix path that exists is replaced only when it is a socket nobody
 * listens on (a server killed before it removed it), never otherwise.
 * Return: 0 with *@lp set; -EINVAL for bad arguments (a negative
 * sndbuf among them); -EADDRINUSE for a
 * port or path in use; other -errno from socket/bind/listen; nothing is
 * left open on error.
 * Context: any thread.
 */
PW_API int pw_net_listener_create(struct pw_net_listener **lp,
				  struct pw_runtime *rt,
				  const struct pw_net_addr *addr,
				  const struct pw_net_listen_opts *opts);

/**
 * pw_net_listener_adopt - a listener for @rt's shards on sockets already
 * bound and listening, such as those another process handed over with
 * pw_net_listener_fds() and SCM_RIGHTS. Each of @fds must be a listening
 * stream socket (SO_ACCEPTCONN, SO_TYPE, SO_DOMAIN) of AF_INET, AF_INET6
 * or a named AF_UNIX socket, all bound to the same address
 * (getsockname), no socket twice. The shards map onto them in turn:
 * shard i accepts from socket i % @nfds, so with as many sockets as
 * shards each has its own, and one socket is shared by all. From
 * @opts (may be NULL) only sndbuf is applied, to each socket; the
 * sockets keep their backlog and options. On success the listener owns
 * the sockets (pw_net_listener_destroy() closes them).
 * Return: 0 with *@lp set; -EINVAL for bad arguments, for a socket that
 * is not listening, not a stream or bound elsewhere than the first, for
 * one given twice, and for PW_NET_LISTEN_SHARED with more than one
 * socket; -E2BIG for more sockets than shards (a socket no shard accepts
 * from would keep its connections waiting); -EBADF or -ENOTSOCK for a
 * descriptor that is not a socket; -ENOMEM. On error the caller still
 * owns @fds, none closed.
 * Context: any thread.
 */
PW_API int pw_net_listener_adopt(struct pw_net_listener **lp,
				 struct pw_runtime *rt, const int *fds,
				 unsigned nfds,
				 const struct pw_net_listen_opts *opts);

/**
 * pw_net_listener_fds - @l's distinct listening sockets, shard order
 * (one per shard, or the one shared): the first @cap of them go to @fds.
 * They stay owned by @l: a caller passes them on (SCM_RIGHTS) but never
 * closes them. As another process may now serve on them,
 * pw_net_listener_destroy() no longer unlinks a Unix socket's path.
 * Return: how many sockets @l has (at most its shards); -EINVAL for a
 * NULL @l, or a NULL @fds with @cap above 0.
 * Context: any thread, while @l lives, once per hand-over (not
 * concurrently with pw_net_listener_destroy()).
 */
PW_API int pw_net_listener_fds(struct pw_net_listener *l, int *fds,
			       unsigned cap);

/**
 * pw_net_listener_destroy - close the sockets and free @l (unlinking a
 * Unix socket's path). Call it once no task accepts from @l any more
 * (after those tasks finished, or after pw_runtime_destroy()).
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
PW_API int pw_net_listener_destroy(struct pw_net_listener *l);

/**
 * pw_net_listener_addr - the bound address (with the port chosen).
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
PW_API int pw_net_listener_addr(const struct pw_net_listener *l,
				struct pw_net_addr *out);

/* Counters of a listener, summed over shards. */
struct pw_net_listener_stats {
	uint64_t accepted;	/* connections handed to tasks */
	uint64_t accept_errors; /* accepts failed for lack of resources
				   (EMFILE, ENFILE, ENOMEM, ENOBUFS): each
				   one backs off and retries */
	uint64_t dropped;	/* accepted sockets closed unread because no
				   memory was left to keep them */
};

/**
 * pw_net_listener_stats - read @l's counters.
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
PW_API int pw_net_listener_stats(const struct pw_net_listener *l,
				 struct pw_net_listener_stats *out);

/* ---- accept --------------------------------------------------------- */

#define PW_ACCEPT_QUEUE 32

/* A multishot accept on the calling shard's socket of a listener. */
struct pw_accept {
	struct pw_net_op op;
	struct pw_sleep timer;	 /* the poll's deadline */
	struct pw_sleep backoff; /* after a resource error */
	struct pw_net_listener *l;
	uint64_t backoff_ns;
	int32_t err; /* an error to report, 0 if none */
	uint16_t head, count;
	uint16_t swept;		  /* pw_accept_stop(): backlog accepts so far */
	uint8_t sweep;		  /* pw_accept_stop(): where its sweep is */
	int fds[PW_ACCEPT_QUEUE]; /* accepted, not yet taken */
};

/**
 * pw_accept_init - an idle accept on @l. The first poll arms a multishot
 * accept on the socket of the polling shard; it stays armed across polls
 * (re-armed whenever the kernel ends it) until pw_accept_cancel().
 * After EMFILE, ENFILE, ENOMEM or ENOBUFS it waits @backoff_ns (0 means
 * 10 ms) and tries again; those errors are counted, never returned.
 * Context: any thread.
 */
PW_API void pw_accept_init(struct pw_accept *a, struct pw_net_listener *l,
			   uint64_t backoff_ns);

/**
 * pw_accept_poll - take the next accepted connection.
 * Return: PW_READY with *@res the new socket (close-on-exec, owned by the
 * caller), or -ETIMEDOUT when @deadline passed (the accept stays armed),
 * or another -errno the kernel reported (the next poll re-arms), or
 * -EINVAL for bad arguments; PW_PENDING otherwise.
 * Context: a task on a shard of the listener's runtime.
 */
PW_API enum pw_poll pw_accept_poll(struct pw_cx *cx, struct pw_accept *a,
				   pw_time_t deadline, int *res);

/**
 * pw_accept_cancel - stop accepting; close connections accepted but not
 * taken (now, or as their completions arrive). Safe from a drop hook;
 * harmless when idle. The accept can be polled again afterwards.
 * Context: the shard that polled @a.
 */
PW_API void pw_accept_cancel(struct pw_accept *a);

/**
 * pw_accept_pause - stop the multishot accept without closing the
 * connections already accepted and queued in @a (pw_accept_cancel()
 * closes them); the next pw_accept_poll() re-arms it. Connections that
 * arrive meanwhile wait in the kernel's backlog: how a server holds at a
 * connection cap. Harmless when idle.
 * Context: the shard that polled @a.
 */
PW_API void pw_accept_pause(struct pw_accept *a);

/**
 * pw_accept_stop - stop accepting without losing a connection: cancel
 * the multishot accept (the listening sockets stay open: what the kernel
 * has not handed out waits in their backlogs, for this or another
 * process to accept), then hand out, one per call, every connection
 * already accepted: queued in @a, kept in the shard's spill, or posted
 * by the kernel before the cancel landed. Then it takes, without
 * waiting, what the socket's backlog still holds: the kernel wakes one
 * waiting accept per new connection, and a wake-up that reached this
 * accept just before its cancel is lost to every other accept on the
 * socket (another process's after a hand-over), which would leave those
 * connections unaccepted until the next one arrives. Poll it until it
 * says -ECANCELED; pw_accept_cancel() instead closes them unanswered.
 * Return: PW_READY with *@res a new socket the caller owns and must
 * serve, or -ECANCELED once nothing is left and the accept is idle, or
 * -EINVAL for bad arguments; PW_PENDING while the cancel or a backlog
 * accept is in flight (its completion wakes the task).
 * Context: a task on the shard that polled @a.
 */
PW_API enum pw_poll pw_accept_stop(struct pw_cx *cx, struct pw_accept *a,
				   int *res);

/* ---- receive ------------------------------------------------------------ */

/* A buffer borrowed from the shard's ring: return it promptly with
 * pw_net_buf_release(), on the same shard. A buffer whose bid is
 * PW_NET_BUF_OWN holds bytes from its receive's own memory instead: they
 * stay valid until the next pw_recv_poll(), pw_recv_unread(),
 * pw_recv_park() or pw_recv_cancel() of that receive, and releasing it
 * is a no-op. */
#define PW_NET_BUF_OWN 0xFFFFu
struct pw_net_buf {
	void *data;
	uint32_t len;
	uint16_t bid; /* its index in the ring */
};

/*
 * Ring buffers one receive may queue: at this count its multishot
 * receive pauses (a ring of fewer than 16 buffers allows a quarter).
 */
#define PW_NET_RECV_SHARE 4u

/* A multishot receive on one socket. */
struct pw_recv {
	struct pw_net_op op;
	struct pw_sleep timer;
	struct pw_list starved; /* on the shard's list while out of buffers;
				   NULL links while not */
	int fd;
	int32_t err;   /* terminal error, or 0 */
	bool eof;      /* the peer closed its side */
	bool parked;   /* pw_recv_park() until the next poll */
	uint16_t head; /* queue of filled buffers (linked in the ring) */
	uint16_t tail;
	uint32_t count;
	/* Bytes the leaf owns (unread, or received while parked), handed
	 * out before the queue: own[own_off..own_len) wait. A chunk handed
	 * out is own[own_off..own_lent_end), kept until the next call
	 * (own_lent_end 0 when none is out). */
	char *own;
	uint32_t own_off, own_len, own_cap, own_lent_end;
};

/**
 * pw_recv_init - an idle receive on @fd (a connected stream socket).
 * Context: any thread.
 */
PW_API void pw_recv_init(struct pw_recv *r, int fd);

/**
 * pw_recv_poll - the next chunk of data received on the socket.
 *
 * Return: PW_READY with *@res > 0 bytes in *@buf (borrowed from the
 * shard's buffer ring: release it with pw_net_buf_release(); or, after
 * pw_recv_unread() or pw_recv_park(), PW_NET_BUF_OWN bytes from the
 * leaf's own memory, possibly more than a ring buffer); *@res = 0 at
 * end of stream (and from then on); -ETIMEDOUT when @deadline passed (the
 * receive stays armed: nothing is lost); another -errno for a socket error
 * (from then on). -EINVAL for bad arguments; -ENOMEM if the buffer ring
 * cannot be created. PW_PENDING otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_recv_poll(struct pw_cx *cx, struct pw_recv *r,
				 pw_time_t deadline, struct pw_net_buf *buf,
				 int32_t *res);

/**
 * pw_recv_cancel - stop receiving and give back queued buffers. Safe from a
 * drop hook; harmless when idle.
 * Context: the shard that polled @r.
 */
PW_API void pw_recv_cancel(struct pw_recv *r);

/**
 * pw_recv_unread - give back the unconsumed tail of the buffer @r lent
 * last: bytes @buf->data[@used..len) move into the leaf's own memory, a
 * ring buffer goes back to the ring at once (do not release @buf
 * afterwards), and the next poll returns those bytes first. @used equal
 * to the length just releases.
 * Return: 0; -EINVAL for NULL, @used past the end or a buffer this shard
 * did not lend; -ENOMEM (nothing changed: @buf is still borrowed).
 * Context: the shard that polled @r.
 */
PW_API int pw_recv_unread(struct pw_recv *r, struct pw_net_buf *buf,
			  uint32_t used);

/**
 * pw_recv_park - the task is about to wait on something other than @r
 * (its send, typically): until the next pw_recv_poll() the leaf holds
 * no ring buffer. What is queued now, and what arrives while parked, is
 * copied into the leaf's own memory and its buffers recycled at once;
 * once that memory holds PW_NET_RECV_SHARE ring buffers' worth of bytes
 * the multishot receive is cancelled, so the socket buffer and TCP's
 * window stop the peer. The next poll un-parks and returns the owned
 * bytes first, in one chunk. Costs a flag when nothing is queued or
 * arrives. Harmless when idle.
 * Context: the shard that polled @r.
 */
PW_API void pw_recv_park(struct pw_recv *r);

/**
 * pw_net_buf_release - give a borrowed buffer back to the calling shard's
 * ring (for a PW_NET_BUF_OWN buffer, nothing to do). Return: 0; -EINVAL
 * for NULL, a buffer of another shard or one not borrowed (nothing
 * changes). Context: the shard that lent it.
 */
PW_API int pw_net_buf_release(struct pw_net_buf *buf);

/* ---- send --------------------------------------------------------------- */

/* A send of one buffer, in full. */
struct pw_send {
	struct pw_net_op op;
	struct pw_sleep timer;
	int fd;
	int32_t err;
	const char *data;
	size_t len, done;
	uint64_t total; /* bytes sent since init: pw_send_progress() */
	bool started;
	bool zc;    /* the request in flight is a SEND_ZC */
	bool once;  /* pw_send_try_poll(): one attempt, no wait for room */
	bool tried; /* that attempt was made */
	bool vec;   /* the bytes are a pw_sendv's iovecs */
};

/** pw_send_init - an idle send on @fd. Context: any thread. */
PW_API void pw_send_init(struct pw_send *s, int fd);

/**
 * pw_send_progress - bytes @s has sent since pw_send_init(), over all
 * its sends, partial sends counted as each completes: a value that does
 * not change while a send is pending means the peer takes nothing.
 * Return: the count; 0 for NULL.
 * Context: the shard that polls @s.
 */
PW_API uint64_t pw_send_progress(const struct pw_send *s);

/**
 * pw_net_abort - make the next close of @fd send a reset instead of a
 * FIN (SO_LINGER on, zero seconds): for a connection cut while bytes it
 * received or queued are undelivered, so the peer cannot take the cut
 * for a clean end of stream.
 * Return: 0; -errno from setsockopt (-EBADF, -ENOTSOCK).
 * Context: any thread.
 */
PW_API int pw_net_abort(int fd);

/**
 * pw_send_poll - send @len bytes at @data, all of them, in order.
 *
 * One request is in flight at a time (MSG_NOSIGNAL always; SEND_ZC when
 * @len reaches the shard's zc_threshold). Pass the same @data and @len on
 * every poll of one send; they must stay valid until PW_READY.
 * Return: PW_READY with *@res = @len, or -errno (bytes may have been
 * partly sent: close the socket), -ETIMEDOUT when @deadline passed, or
 * -EINVAL for bad arguments; then @s is idle for the next send.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_send_poll(struct pw_cx *cx, struct pw_send *s,
				 const void *data, size_t len,
				 pw_time_t deadline, int32_t *res);

/**
 * pw_send_try_poll - one attempt to send @len bytes at @data that never
 * waits for room in the socket (MSG_DONTWAIT): the socket takes what fits
 * now. For bytes the caller must not hold while a peer stalls (a buffer
 * borrowed from the shard's ring): what the socket did not take can be
 * kept elsewhere and sent with pw_send_poll(). Never SEND_ZC. Pass the
 * same @data and @len on every poll of one attempt; they stay in use
 * until PW_READY.
 * Return: PW_READY with *@res = the bytes taken, 0..@len (0: no room),
 * or -errno (a socket error; -EINVAL for bad arguments); then @s is idle
 * for the next send. PW_PENDING until the attempt's completion arrives
 * (one turn of the shard).
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_send_try_poll(struct pw_cx *cx, struct pw_send *s,
				     const void *data, size_t len,
				     int32_t *res);

/** pw_send_cancel - cancel a send in flight (from a drop hook too). */
PW_API void pw_send_cancel(struct pw_send *s);

/*
 * A send of several buffers at once (a sendmsg(2) of iovecs through
 * io_uring): a header and a body without copying them together. It
 * embeds a pw_send (tx), so pw_send_poll(&v->tx, ...) sends single
 * buffers on it too, and pw_send_progress() and pw_send_in_flight() read
 * it. The message lives here while a request is in flight.
 */
struct pw_sendv {
	struct pw_send tx;
	const struct iovec *iov; /* the caller's vector */
	int iovcnt;
	struct iovec head; /* the rest of a partly sent iovec */
	struct msghdr msg;
};

/** pw_sendv_init - an idle vector send on @fd. Context: any thread. */
PW_API void pw_sendv_init(struct pw_sendv *v, int fd);

/**
 * pw_sendv_poll - send the @iovcnt buffers of @iov, all of their bytes,
 * in order: pw_send_poll() for a vector. One sendmsg in flight at a time
 * (MSG_NOSIGNAL; never SEND_ZC); after a short send the rest goes in the
 * next (an iovec partly sent goes alone, as its rest). Pass the same
 * vector on every poll of one send; it and its buffers must stay valid
 * until PW_READY.
 * Return: PW_READY with *@res the total bytes, or -errno (bytes may have
 * been partly sent: close the socket), -ETIMEDOUT when @deadline passed,
 * or -EINVAL for bad arguments (more than IOV_MAX iovecs, a total over
 * INT32_MAX bytes); then @v is idle for the next send. PW_PENDING
 * otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_sendv_poll(struct pw_cx *cx, struct pw_sendv *v,
				  const struct iovec *iov, int iovcnt,
				  pw_time_t deadline, int32_t *res);

/**
 * pw_sendv_try_poll - one attempt that never waits for room: the socket
 * takes what fits now (pw_send_try_poll() for a vector).
 * Return: PW_READY with *@res the bytes taken, 0 up to the total (0: no
 * room), or -errno; PW_PENDING until the attempt's completion arrives.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_sendv_try_poll(struct pw_cx *cx, struct pw_sendv *v,
				      const struct iovec *iov, int iovcnt,
				      int32_t *res);

/** pw_sendv_cancel - cancel a vector send in flight (from a drop hook). */
PW_API void pw_sendv_cancel(struct pw_sendv *v);

/**
 * pw_send_in_flight - whether the kernel may still read the bytes of
 * @s's last send: a request is in flight (cancelled or not) until its
 * final completion. The bytes may be reused or freed once it is false.
 * Return: the answer; false for NULL.
 * Context: the shard that polls @s.
 */
PW_API bool pw_send_in_flight(const struct pw_send *s);

/* ---- connect ------------------------------------------------------------ */

struct pw_connect {
	struct pw_net_op op;
	struct pw_sleep timer;
	struct pw_net_addr addr;
	int fd;
	bool timed_out;
};

/** pw_connect_init - an idle connect to @addr (copied). Context: any. */
PW_API void pw_connect_init(struct pw_connect *c,
			    const struct pw_net_addr *addr);

/**
 * pw_connect_poll - open a stream socket and connect it to the address.
 * TCP sockets get TCP_NODELAY.
 * Return: PW_READY with *@res the connected socket (owned by the caller),
 * or -ETIMEDOUT when @deadline passed first (the connect was cancelled and
 * the socket closed), -ECONNREFUSED and other -errno, -EINVAL for bad
 * arguments; PW_PENDING otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_connect_poll(struct pw_cx *cx, struct pw_connect *c,
				    pw_time_t deadline, int *res);

/** pw_connect_cancel - cancel a connect in flight; its socket is closed.
 * Safe from a drop hook. */
PW_API void pw_connect_cancel(struct pw_connect *c);

/* ---- shutdown and close ------------------------------------------------- */

/* A shutdown(2) or a cancel-then-close: a one-shot request that cannot
 * block, so it takes no deadline. */
struct pw_close {
	struct pw_net_op op;
	int fd;
	int how; /* SHUT_* for a shutdown, -1 for a close */
};

/** pw_shutdown_init - a half-close (@how: SHUT_RD, SHUT_WR, SHUT_RDWR). */
PW_API void pw_shutdown_init(struct pw_close *c, int fd, int how);

/** pw_close_init - a close of @fd. */
PW_API void pw_close_init(struct pw_close *c, int fd);

/**
 * pw_close_poll - run the shutdown or the close.
 *
 * A close first cancels every request in flight on the socket, then
 * closes it; the leaves that owned those requests see their final
 * completions (-ECANCELED) on their next polls.
 * Return: PW_READY with *@res 0 or -errno (-EINVAL for bad arguments);
 * PW_PENDING otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_close_poll(struct pw_cx *cx, struct pw_close *c,
				  int32_t *res);

/**
 * pw_close_cancel - for drop hooks. A close that has begun always
 * finishes: the socket is closed even if the task is gone.
 * Return: true when this close leaf has closed the socket or will;
 * false when the caller still owns it (a close never polled, or a
 * shutdown leaf), so the drop hook should close(2) it itself.
 * Context: the shard that polled @c.
 */
PW_API bool pw_close_cancel(struct pw_close *c);

/* ---- UDP ----------------------------------------------------------------- */

/*
 * Datagram sockets (IPv4, IPv6) over the same machinery: a receive is a
 * multishot recvmsg into the shard's provided-buffer ring, one datagram
 * per poll with its peer's address; sends are sendmsg requests from the
 * caller's iovecs, one datagram each, many per submission with a batch,
 * or one request of many equal segments with UDP_SEGMENT (GSO). Binding
 * and connecting are plain system calls: neither waits for a peer.
 * See docs/net.md, "UDP".
 */

/* Socket options (struct pw_udp_opts.flags). */
#define PW_UDP_SHARED 0x1u /* one socket for every shard */
#define PW_UDP_SHARE_PORT \
	0x2u /* join a port other SO_REUSEPORT sockets
				  hold, instead of -EADDRINUSE */

struct pw_udp_opts {
	uint32_t flags; /* PW_UDP_SHARED, PW_UDP_SHARE_PORT */
	int rcvbuf;	/* SO_RCVBUF, 0: the kernel's default */
	int sndbuf;	/* SO_SNDBUF, 0: the kernel's default */
};

/* A runtime-owned set of bound UDP sockets: one per shard. */
struct pw_udp_socket;

/**
 * pw_udp_socket_create - bind UDP sockets on @addr for @rt's shards.
 *
 * One SO_REUSEPORT socket per shard, all on one port (port 0 picks a free
 * one, the same for every shard), so the kernel hashes each peer's
 * datagrams to one shard; or one socket for all with PW_UDP_SHARED. A
 * port another socket holds is refused with -EADDRINUSE (unless
 * PW_UDP_SHARE_PORT). @opts may be NULL.
 * Return: 0 with *@up set; -EINVAL for bad arguments (a family other
 * than IPv4 or IPv6, unknown flags, negative sizes); -EADDRINUSE; other
 * -errno of socket/bind; nothing is left open on error.
 * Context: any thread.
 */
PW_API int pw_udp_socket_create(struct pw_udp_socket **up,
				struct pw_runtime *rt,
				const struct pw_net_addr *addr,
				const struct pw_udp_opts *opts);

/**
 * pw_udp_socket_fd - the socket of @shard (pw_shard_id() on a shard):
 * owned by @u, for pw_udp_recv_init() and pw_udp_send_init().
 * Return: the descriptor; -EINVAL for NULL or a shard out of range.
 * Context: any thread.
 */
PW_API int pw_udp_socket_fd(const struct pw_udp_socket *u, unsigned shard);

/**
 * pw_udp_socket_addr - the bound address, with the port chosen.
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
PW_API int pw_udp_socket_addr(const struct pw_udp_socket *u,
			      struct pw_net_addr *out);

/**
 * pw_udp_socket_destroy - close the sockets and free @u, once no leaf
 * uses them any more (their tasks finished, or the runtime destroyed).
 * Return: 0; -EINVAL for NULL. Context: any thread.
 */
PW_API int pw_udp_socket_destroy(struct pw_udp_socket *u);

/**
 * pw_udp_open - one UDP socket, owned by the caller: bound to @local
 * (NULL: an ephemeral port, on first use), connected to @peer (NULL: not
 * connected). A connected socket sends without an address and receives
 * only @peer's datagrams: a flow to one upstream. PW_UDP_SHARE_PORT sets
 * SO_REUSEPORT; PW_UDP_SHARED means nothing here.
 * Return: the descriptor (close-on-exec); -EINVAL for bad arguments
 * (both NULL, families that differ or are not IPv4/IPv6); -errno of
 * socket/bind/connect.
 * Context: any thread.
 */
PW_API int pw_udp_open(const struct pw_net_addr *local,
		       const struct pw_net_addr *peer,
		       const struct pw_udp_opts *opts);

/**
 * pw_udp_connect - connect @fd to @peer (NULL: dissolve the association).
 * Return: 0; -errno of connect(2). Context: any thread.
 */
PW_API int pw_udp_connect(int fd, const struct pw_net_addr *peer);

/**
 * pw_udp_drops - datagrams the kernel dropped on @fd's receive queue
 * since it was opened (full queue; the socket's drop counter, as
 * /proc/net/udp shows it), read at once with SO_MEMINFO.
 * Return: 0 with *@out set; -EINVAL for NULL; -errno of getsockopt.
 * Context: any thread.
 */
PW_API int pw_udp_drops(int fd, uint64_t *out);

/* Leaf options (pw_udp_recv_init(), pw_udp_send_init()). */
#define PW_UDP_NO_GRO 0x1u /* receive: never turn on UDP_GRO */
#define PW_UDP_NO_GSO 0x2u /* send: never use UDP_SEGMENT */

/* Bytes of each ring buffer a receive keeps for the kernel's header, the
 * peer's address and control messages: a datagram longer than the
 * shard's buf_size less this is truncated (reported, never silent). */
#define PW_UDP_RECV_OVERHEAD 112u

/* Payload room a buffer needs for UDP_GRO: a coalesced buffer holds up
 * to 64 KiB. With smaller buffers a receive leaves GRO off. */
#define PW_UDP_GRO_ROOM 65536u

/* The datagram was longer than its buffer: len bytes were kept,
 * full_len is its real length. */
#define PW_UDP_TRUNC 0x1u

/* A datagram lent by pw_udp_recv_poll(): give it back with
 * pw_udp_dgram_release(), on the same shard. */
struct pw_udp_dgram {
	void *data;		 /* len bytes of payload */
	uint32_t len;		 /* bytes at data (0 for an empty datagram) */
	uint32_t full_len;	 /* the datagram's length as sent */
	uint32_t flags;		 /* PW_UDP_TRUNC */
	uint16_t bid;		 /* the ring buffer holding it */
	struct pw_net_addr peer; /* who sent it (peer.len bytes of it) */
};

/* Ring buffers one UDP receive may queue before its multishot request
 * pauses (a quarter of a smaller ring). */
#define PW_UDP_RECV_SHARE 16u

/* Counters of one receive. */
struct pw_udp_recv_stats {
	uint64_t datagrams; /* handed out */
	uint64_t truncated; /* of which truncated */
	uint64_t gro_bufs;  /* buffers that held several datagrams (GRO) */
	uint64_t gro_lost;  /* datagrams past a truncated GRO buffer */
};

/* A multishot receive of datagrams on one socket. */
struct pw_udp_recv {
	struct pw_recv rx; /* the request, deadline, queue of buffers */
	struct msghdr msg; /* the layout the kernel writes each buffer in */
	uint32_t flags;	   /* PW_UDP_NO_GRO */
	uint32_t share;	   /* buffers queued before a pause; 0: default */
	uint8_t gro;	   /* not tried, on, off */
	bool sticky;	   /* rx.err is returned from now on */
	/* The buffer being handed out, datagram by datagram. */
	uint16_t cur_bid;
	uint16_t cur_left; /* datagrams left in it */
	uint32_t cur_seg;  /* GRO segment size, 0 for one datagram */
	uint32_t cur_off, cur_len, cur_full, cur_flags;
	struct pw_net_addr cur_peer;
	struct pw_udp_recv_stats st;
};

/**
 * pw_udp_recv_init - an idle receive on @fd (a UDP socket), @flags
 * PW_UDP_NO_GRO or 0. The first poll turns UDP_GRO on when the shard's
 * buffers hold PW_UDP_GRO_ROOM bytes of payload and the kernel agrees
 * (once; pw_udp_recv_gro() tells), so a burst of one peer's equal
 * datagrams arrives in one buffer; it is split back into datagrams.
 * A leaf used before may be initialised again only once
 * pw_udp_recv_in_flight() is false.
 * Context: any thread.
 */
PW_API void pw_udp_recv_init(struct pw_udp_recv *r, int fd, uint32_t flags);

/**
 * pw_udp_recv_poll - the next datagram received on the socket.
 *
 * The multishot recvmsg stays armed across polls (re-armed whenever the
 * kernel ends it) until pw_udp_recv_cancel(); a receive that queues its
 * share of the ring pauses until the task takes half of it, the kernel's
 * socket buffer holding (and, when full, dropping: pw_udp_drops()) what
 * comes meanwhile.
 * Return: PW_READY with *@res = @d->len >= 0 and the datagram in *@d
 * (lent: pw_udp_dgram_release() it); -ETIMEDOUT when @deadline passed
 * (still armed: nothing is lost); another -errno the kernel reported
 * (an ICMP error such as -ECONNREFUSED on a connected socket: returned
 * once, the next poll re-arms; -EBADF and -ECANCELED, the socket closed
 * under it, from then on); -EINVAL for bad arguments; -ENOMEM if the
 * buffer ring cannot be created. PW_PENDING otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_udp_recv_poll(struct pw_cx *cx, struct pw_udp_recv *r,
				     pw_time_t deadline, struct pw_udp_dgram *d,
				     int32_t *res);

/**
 * pw_udp_dgram_release - give a datagram back (its buffer returns to the
 * ring once no datagram of it is lent). @d's data is NULL afterwards.
 * Return: 0; -EINVAL for NULL, one released already or not lent here.
 * Context: the shard that lent it.
 */
PW_API int pw_udp_dgram_release(struct pw_udp_dgram *d);

/**
 * pw_udp_recv_cancel - stop receiving and give back queued buffers.
 * Datagrams already lent stay valid until released. Safe from a drop
 * hook; harmless when idle; the receive can be polled again afterwards
 * (datagrams that arrive meanwhile wait in the socket).
 * Context: the shard that polled @r.
 */
PW_API void pw_udp_recv_cancel(struct pw_udp_recv *r);

/**
 * pw_udp_recv_gro - whether @r's socket coalesces with UDP_GRO (known
 * after the first poll).
 * Return: the answer; false for NULL. Context: the shard that polls @r.
 */
PW_API bool pw_udp_recv_gro(const struct pw_udp_recv *r);

/**
 * pw_udp_recv_in_flight - whether the kernel still holds @r's request
 * (armed, or cancelled and not yet ended): @r may leave scope only once
 * it is false. Return: the answer; false for NULL.
 * Context: the shard that polls @r.
 */
PW_API bool pw_udp_recv_in_flight(const struct pw_udp_recv *r);

/* The largest segment count of one UDP_SEGMENT request. */
#define PW_UDP_GSO_SEGS 64u

/* A send of datagrams on one socket, one request in flight at a time. */
struct pw_udp_send {
	struct pw_net_op op;
	struct pw_sleep timer;
	int fd;
	uint32_t flags; /* PW_UDP_NO_GSO */
	int32_t err;
	bool started, sent_one, timed_out;
	uint8_t gso;		 /* not tried, works, refused */
	bool gso_in_flight;	 /* the request carries UDP_SEGMENT */
	const struct iovec *iov; /* one datagram's vector, or NULL */
	int iovcnt;
	const char *data; /* segments: len bytes cut every seg bytes */
	size_t len, done, chunk;
	uint32_t seg;
	struct pw_net_addr to; /* len 0: connected */
	struct iovec one;
	struct msghdr msg;
	union {
		char buf[24]; /* CMSG_SPACE(sizeof(uint16_t)) */
		uint64_t align;
	} cmsg;
	uint64_t datagrams; /* sent since init */
};

/**
 * pw_udp_send_init - an idle send on @fd, @flags PW_UDP_NO_GSO or 0.
 * Context: any thread.
 */
PW_API void pw_udp_send_init(struct pw_udp_send *s, int fd, uint32_t flags);

/**
 * pw_udp_send_poll - send one datagram made of the @iovcnt buffers of
 * @iov to @to (NULL on a connected socket). Pass the same arguments on
 * every poll of one send; they must stay valid until PW_READY (@to is
 * copied at the first).
 * Return: PW_READY with *@res the datagram's length, or -errno
 * (-EMSGSIZE for one too long, -ECONNREFUSED after an ICMP error on a
 * connected socket), -ETIMEDOUT when @deadline passed (the request is
 * cancelled first), -EINVAL for bad arguments; then @s is idle for the
 * next send. PW_PENDING otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_udp_send_poll(struct pw_cx *cx, struct pw_udp_send *s,
				     const struct iovec *iov, int iovcnt,
				     const struct pw_net_addr *to,
				     pw_time_t deadline, int32_t *res);

/**
 * pw_udp_send_to_poll - pw_udp_send_poll() of one buffer.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_udp_send_to_poll(struct pw_cx *cx, struct pw_udp_send *s,
					const void *data, size_t len,
					const struct pw_net_addr *to,
					pw_time_t deadline, int32_t *res);

/**
 * pw_udp_send_segs_poll - send @len bytes at @data as datagrams of @seg
 * bytes each (the last one shorter when @seg does not divide @len), in
 * order, to @to (NULL when connected). With UDP_SEGMENT one request
 * carries up to PW_UDP_GSO_SEGS of them (and at most 64 KiB); without it
 * (PW_UDP_NO_GSO, or a kernel or device that refuses it: tried once per
 * leaf and remembered) each goes in a request of its own. Pass the same
 * arguments on every poll of one send.
 * Return: PW_READY with *@res = @len, or -errno (some datagrams may have
 * been sent), -ETIMEDOUT, -EINVAL (@seg 0, or @len over INT32_MAX); then
 * @s is idle. PW_PENDING otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll
pw_udp_send_segs_poll(struct pw_cx *cx, struct pw_udp_send *s, const void *data,
		      size_t len, uint32_t seg, const struct pw_net_addr *to,
		      pw_time_t deadline, int32_t *res);

/** pw_udp_send_cancel - cancel a send in flight (from a drop hook too). */
PW_API void pw_udp_send_cancel(struct pw_udp_send *s);

/**
 * pw_udp_send_in_flight - whether the kernel may still read the bytes of
 * @s's last send (until its final completion, cancelled or not).
 * Return: the answer; false for NULL. Context: the shard that polls @s.
 */
PW_API bool pw_udp_send_in_flight(const struct pw_udp_send *s);

/**
 * pw_udp_send_gso - whether @s sends segments with UDP_SEGMENT: 1 yes,
 * 0 refused (or turned off), -1 not tried yet. Context: its shard.
 */
PW_API int pw_udp_send_gso(const struct pw_udp_send *s);

/* One datagram of a batch. Set iov, iovcnt and to (NULL when
 * connected); res is the outcome; the rest is the runtime's. */
struct pw_udp_out {
	struct pw_net_op op;
	const struct iovec *iov;
	int iovcnt;
	const struct pw_net_addr *to;
	int32_t res; /* bytes sent, or -errno */
	struct pw_udp_batch *batch;
	struct msghdr msg;
};

/* A batch of datagrams, all submitted at once (one SQE each, in one
 * submission), on one socket. */
struct pw_udp_batch {
	struct pw_sleep timer;
	int fd;
	bool started, timed_out;
	uint32_t pending; /* requests in flight */
	struct pw_udp_out *msgs;
	unsigned n;
};

/** pw_udp_batch_init - an idle batch on @fd. Context: any thread. */
PW_API void pw_udp_batch_init(struct pw_udp_batch *b, int fd);

/**
 * pw_udp_batch_poll - send the @n datagrams of @msgs: the first poll
 * prepares one sendmsg per datagram, submitted together with the shard's
 * next submission; PW_READY once all have completed. @msgs and the
 * buffers and addresses it names must stay valid until then.
 * Return: PW_READY with *@res the count of datagrams sent (each
 * @msgs[i].res holds its bytes or -errno), -ETIMEDOUT when @deadline
 * passed (those still in flight are cancelled first, their res
 * -ECANCELED), -EINVAL for bad arguments; then @b is idle. PW_PENDING
 * otherwise.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_udp_batch_poll(struct pw_cx *cx, struct pw_udp_batch *b,
				      struct pw_udp_out *msgs, unsigned n,
				      pw_time_t deadline, int32_t *res);

/** pw_udp_batch_cancel - cancel what is in flight (from a drop hook). */
PW_API void pw_udp_batch_cancel(struct pw_udp_batch *b);

/**
 * pw_udp_batch_in_flight - whether any request of @b is still in the
 * kernel. Return: the answer; false for NULL. Context: its shard.
 */
PW_API bool pw_udp_batch_in_flight(const struct pw_udp_batch *b);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_NET_H */
