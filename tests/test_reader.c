/* SPDX-License-Identifier: MIT */
/*
 * test_reader.c - pinwheel/reader.h and pw_sendv over a Unix socket pair:
 * lines split across many tiny sends, a line longer than the caller's
 * memory (-EMSGSIZE, nothing lost), read_exact across many small ring
 * buffers holding none of them between reads, the end of stream in the
 * middle of a line and of an exact read, a deadline that keeps the
 * partial line; sendv's bytes intact across short sends, a try that
 * takes what fits, and bad input.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"
#include "pinwheel/reader.h"

#define MS PW_NSEC_PER_MSEC

/* ---- the peer: a thread writing in small pieces ---------------------- */

struct writer {
	int fd;
	const char *data;
	size_t len;
	size_t piece;	  /* bytes per write (1..piece, varying) */
	unsigned gap_us;  /* pause between writes */
	bool close_after; /* shut the socket at the end */
	pthread_t th;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t seed = 42;
	size_t off = 0;

	while (off < w->len) {
		size_t k = 1 + (size_t)(pw_test_rng(&seed) % w->piece);

		if (k > w->len - off)
			k = w->len - off;
		cr_assert_eq(write(w->fd, w->data + off, k), (ssize_t)k);
		off += k;
		if (w->gap_us) {
			struct timespec ts = { 0, (long)w->gap_us * 1000 };
			nanosleep(&ts, NULL); /* so each write arrives alone */
		}
	}
	if (w->close_after)
		shutdown(w->fd, SHUT_WR);
	return NULL;
}

static void writer_start(struct writer *w)
{
	cr_assert_eq(pthread_create(&w->th, NULL, writer_main, w), 0);
}

/* ---- the reading task --------------------------------------------------- */

enum { OP_LINE, OP_EXACT };

/* One read and what it must give. */
struct step {
	int op;
	size_t cap;	   /* @cap or @n */
	int64_t res;	   /* the expected result */
	const char *bytes; /* the expected bytes (res of them, or cap for
			       -EMSGSIZE) */
	uint64_t timeout;  /* a deadline this far from now; 0: none */
};

struct reading {
	int fd;
	uint32_t buf_size; /* the shard's ring buffers; 0: default */
	const struct step *steps;
	int nsteps;
	int i;
	bool started, armed;
	pw_time_t deadline;
	struct pw_reader rd;
	char out[4096];
	uint32_t max_borrowed; /* ring buffers out of the ring (queued in
				  the receive) after a read */
};

static void reading_check(struct reading *g, const struct step *s, int64_t res)
{
	size_t n = res == -EMSGSIZE ? s->cap : res > 0 ? (size_t)res : 0;
	struct pw_net_stats st;

	cr_assert_eq(res, s->res, "read %d: %lld, not %lld", g->i,
		     (long long)res, (long long)s->res);
	if (s->bytes)
		cr_assert_eq(memcmp(g->out, s->bytes, n), 0,
			     "read %d: '%.*s', not '%.*s'", g->i, (int)n,
			     g->out, (int)n, s->bytes);
	cr_assert_not(g->rd.have, "read %d: a chunk kept after the read", g->i);
	cr_assert_eq(pw_net_stats(&st), 0);
	if (st.bufs_borrowed > g->max_borrowed)
		g->max_borrowed = st.bufs_borrowed;
}

static enum pw_poll reading_poll(struct pw_cx *cx, void *state)
{
	struct reading *g = state;
	int64_t res;

	if (!g->started) {
		struct pw_net_config cfg;

		pw_net_config_init(&cfg);
		if (g->buf_size) {
			cfg.buf_size = g->buf_size;
			cfg.buf_count = 16;
		}
		cr_assert_eq(pw_net_configure(&cfg), 0);
		pw_reader_init(&g->rd, g->fd);
		g->started = true;
	}
	while (g->i < g->nsteps) {
		const struct step *s = &g->steps[g->i];
		enum pw_poll p;

		if (!g->armed) {
			g->deadline = s->timeout ? pw_time_now() + s->timeout :
						   PW_TIME_NEVER;
			g->armed = true;
		}
		if (s->op == OP_LINE)
			p = pw_read_until_poll(cx, &g->rd, '\n', g->out, s->cap,
					       g->deadline, &res);
		else
			p = pw_read_exact_poll(cx, &g->rd, g->out, s->cap,
					       g->deadline, &res);
		if (p == PW_PENDING)
			return PW_PENDING;
		reading_check(g, s, res);
		g->i++;
		g->armed = false;
	}
	pw_reader_cancel(&g->rd);
	return pw_ready(cx, g->i);
}

/* Run @steps against a peer writing @data in pieces of up to @piece. */
static struct reading run(const struct step *steps, int n, const char *data,
			  size_t len, size_t piece, uint32_t buf_size)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct writer w = { .fd = sv[1],
			    .data = data,
			    .len = len,
			    .piece = piece,
			    .gap_us = piece < 8 ? 200 : 0,
			    .close_after = true };
	struct reading g = {
		.fd = sv[0], .steps = steps, .nsteps = n, .buf_size = buf_size
	};

	writer_start(&w);
	cr_assert_eq(pw_test_block_on(rt, reading_poll, &g), n);
	pthread_join(w.th, NULL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
	return g;
}

Test(reader, lines_split_across_many_tiny_sends)
{
	static const char text[] = "PING\nhello world\n\nx\n"
				   "a somewhat longer line of text\nlast\n";
	const struct step steps[] = {
		{ OP_LINE, 64, 5, "PING\n", 0 },
		{ OP_LINE, 64, 12, "hello world\n", 0 },
		{ OP_LINE, 64, 1, "\n", 0 },
		{ OP_LINE, 64, 2, "x\n", 0 },
		{ OP_LINE, 64, 31, "a somewhat longer line of text\n", 0 },
		{ OP_LINE, 64, 5, "last\n", 0 },
		{ OP_LINE, 64, 0, NULL, 0 },
		{ OP_LINE, 64, 0, NULL, 0 },
	};

	run(steps, 8, text, sizeof(text) - 1, 3, 0);
}

Test(reader, a_line_longer_than_cap_loses_nothing)
{
	static const char text[] = "abcdefghij\nxy\nlen12bytes!\n";
	const struct step steps[] = {
		{ OP_LINE, 4, -EMSGSIZE, "abcd", 0 },
		{ OP_LINE, 4, -EMSGSIZE, "efgh", 0 },
		{ OP_LINE, 4, 3, "ij\n", 0 },
		{ OP_LINE, 4, 3, "xy\n", 0 },
		{ OP_LINE, 12, 12, "len12bytes!\n", 0 },
		{ OP_LINE, 4, 0, NULL, 0 },
	};

	run(steps, 6, text, sizeof(text) - 1, 5, 0);
}

Test(reader, read_exact_across_buffers_holds_no_ring_buffer)
{
	static char text[3000 + 9];
	uint64_t seed = 7;

	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)(pw_test_rng(&seed) >> 24);
	/* A header line, 3000 bytes over 64-byte buffers, then 5 more. */
	memcpy(text, "LEN 3000\n", 9);
	const struct step steps[] = {
		{ OP_LINE, 64, 9, "LEN 3000\n", 0 },
		{ OP_EXACT, 1000, 1000, text + 9, 0 },
		{ OP_EXACT, 1995, 1995, text + 1009, 0 },
		{ OP_EXACT, 5, 5, text + 3004, 0 },
		{ OP_EXACT, 5, 0, NULL, 0 },
	};
	struct reading g = run(steps, 5, text, sizeof(text), 700, 64);

	cr_assert_leq(g.max_borrowed, PW_NET_RECV_SHARE,
		      "%u ring buffers held between reads", g.max_borrowed);
}

Test(reader, end_of_stream_mid_line_and_mid_exact)
{
	static const char text[] = "one\npartial";
	const struct step lines[] = {
		{ OP_LINE, 64, 4, "one\n", 0 },
		{ OP_LINE, 64, 7, "partial", 0 },
		{ OP_LINE, 64, 0, NULL, 0 },
	};
	const struct step exact[] = {
		{ OP_EXACT, 4, 4, "one\n", 0 },
		{ OP_EXACT, 10, 7, "partial", 0 },
		{ OP_EXACT, 10, 0, NULL, 0 },
	};

	run(lines, 3, text, sizeof(text) - 1, 2, 0);
	run(exact, 3, text, sizeof(text) - 1, 2, 0);
}

/* The deadline test on the paused clock: "ab" waits, the read times out
 * at exactly 30 ms keeping it, the rest is written, the same read goes
 * on. */
struct partial {
	int peer;
	int i;
	bool started;
	pw_time_t t0, t1;
	struct pw_reader rd;
	char out[64], next[64];
	int64_t res[4];
};

static enum pw_poll partial_poll(struct pw_cx *cx, void *state)
{
	struct partial *p = state;
	char *out = p->i < 2 ? p->out : p->next;

	if (!p->started) {
		p->t0 = pw_time_now();
		p->started = true;
	}
	while (p->i < 4) {
		pw_time_t dl = p->i == 0 ? p->t0 + 30 * MS : PW_TIME_NEVER;
		if (pw_read_until_poll(cx, &p->rd, '\n', out, 64, dl,
				       &p->res[p->i]) == PW_PENDING)
			return PW_PENDING;
		if (p->i == 0) {
			p->t1 = pw_time_now();
			cr_assert_eq(write(p->peer, "c\nd\n", 4), 4);
			cr_assert_eq(shutdown(p->peer, SHUT_WR), 0);
		}
		out = ++p->i < 2 ? p->out : p->next;
	}
	pw_reader_cancel(&p->rd);
	return pw_ready(cx, 0);
}

Test(reader, deadline_keeps_the_partial_line)
{
	struct pw_runtime *rt = pw_test_paused_runtime(1);
	struct partial p = { 0 };
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(write(sv[1], "ab", 2), 2);
	p.peer = sv[1];
	pw_reader_init(&p.rd, sv[0]);
	cr_assert_eq(pw_test_block_on(rt, partial_poll, &p), 0);
	cr_assert_eq(p.res[0], -ETIMEDOUT);
	cr_assert_eq(p.t1 - p.t0, 30 * MS, "timed out after %llu ns",
		     (unsigned long long)(p.t1 - p.t0));
	cr_assert_eq(p.res[1], 4);
	cr_assert_eq(memcmp(p.out, "abc\n", 4), 0, "'%.4s'", p.out);
	cr_assert_eq(p.res[2], 2);
	cr_assert_eq(memcmp(p.next, "d\n", 2), 0);
	cr_assert_eq(p.res[3], 0);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
}

/* ---- sendv ------------------------------------------------------------ */

#define BODY (1u << 20)

struct sending {
	int fd;
	bool once;
	struct iovec iov[3];
	int iovcnt;
	struct pw_sendv v;
	int32_t res, res2;
	bool started;
};

static enum pw_poll sending_poll(struct pw_cx *cx, void *state)
{
	struct sending *s = state;

	if (!s->started) {
		pw_sendv_init(&s->v, s->fd);
		s->started = true;
	}
	if (!s->once)
		return pw_sendv_poll(cx, &s->v, s->iov, s->iovcnt,
				     PW_TIME_NEVER, &s->res) == PW_PENDING ?
			       PW_PENDING :
			       pw_ready(cx, s->res);
	if (pw_sendv_try_poll(cx, &s->v, s->iov, s->iovcnt, &s->res) ==
	    PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, s->res);
}

/* Read @n bytes from @fd into @buf. */
struct drainer {
	int fd;
	char *buf;
	size_t n, got;
	pthread_t th;
};

static void *drainer_main(void *arg)
{
	struct drainer *d = arg;

	while (d->got < d->n) {
		ssize_t r = read(d->fd, d->buf + d->got, d->n - d->got);
		if (r <= 0)
			break;
		d->got += (size_t)r;
	}
	return NULL;
}

static void fill_iov(struct sending *s, char *body, uint64_t seed)
{
	static char head[] = "HEADER 10\n", tail[] = "TAIL.";

	for (size_t i = 0; i < BODY; i++)
		body[i] = (char)(pw_test_rng(&seed) >> 24);
	s->iov[0] = (struct iovec){ head, 10 };
	s->iov[1] = (struct iovec){ body, BODY };
	s->iov[2] = (struct iovec){ tail, 5 };
	s->iovcnt = 3;
}

/* The bytes @iov hold, from @off on, equal @got's @n. */
static void same(const struct iovec *iov, int cnt, const char *got, size_t n)
{
	size_t at = 0;

	for (int i = 0; i < cnt && at < n; i++) {
		size_t k = iov[i].iov_len < n - at ? iov[i].iov_len : n - at;
		cr_assert_eq(memcmp(got + at, iov[i].iov_base, k), 0,
			     "iovec %d differs", i);
		at += k;
	}
	cr_assert_eq(at, n);
}

Test(sendv, bytes_intact_across_short_sends)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	static char body[BODY], got[BODY + 15];
	struct sending s = { 0 };
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fill_iov(&s, body, 3);
	s.fd = sv[0];
	struct drainer d = { .fd = sv[1], .buf = got, .n = BODY + 15 };
	cr_assert_eq(pthread_create(&d.th, NULL, drainer_main, &d), 0);
	cr_assert_eq(pw_test_block_on(rt, sending_poll, &s), BODY + 15);
	pthread_join(d.th, NULL);
	cr_assert_eq(d.got, BODY + 15);
	same(s.iov, 3, got, d.got);
	cr_assert_eq(pw_send_progress(&s.v.tx), BODY + 15);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
}

Test(sendv, a_try_takes_what_fits)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	static char body[BODY], got[BODY + 15];
	struct sending s = { .once = true };
	int sv[2], small = 4096;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small,
				sizeof(small)),
		     0);
	fill_iov(&s, body, 4);
	s.fd = sv[0];
	int64_t took = pw_test_block_on(rt, sending_poll, &s);
	cr_assert_gt(took, 10, "more than the header: %lld", (long long)took);
	cr_assert_lt(took, BODY + 15, "not all of it");
	/* The peer reads exactly the vector's first @took bytes. */
	struct drainer d = { .fd = sv[1], .buf = got, .n = (size_t)took };
	drainer_main(&d);
	same(s.iov, 3, got, d.got);
	cr_assert(!pw_test_readable(sv[1], 50), "nothing more was sent");
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	close(sv[0]);
	close(sv[1]);
}

static enum pw_poll bad_sendv_poll(struct pw_cx *cx, void *state)
{
	struct pw_sendv v;
	struct iovec iov[1] = { { NULL, 5 } };
	int32_t res;

	(void)state;
	pw_sendv_init(&v, 0);
	cr_assert_eq(pw_sendv_poll(cx, &v, iov, -1, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_sendv_poll(cx, &v, NULL, 2, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_sendv_poll(cx, &v, iov, 1, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL, "a NULL base with a length");
	cr_assert_eq(pw_sendv_poll(cx, &v, iov, IOV_MAX + 1, PW_TIME_NEVER,
				   &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_sendv_poll(cx, NULL, iov, 1, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_sendv_poll(cx, &v, NULL, 0, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, 0, "an empty vector is a send of nothing");
	return pw_ready(cx, 1);
}

static enum pw_poll bad_reader_poll(struct pw_cx *cx, void *state)
{
	struct pw_reader rd;
	char out[4];
	int64_t res;

	(void)state;
	pw_reader_init(&rd, 0);
	cr_assert_eq(pw_read_until_poll(cx, &rd, '\n', out, 0, PW_TIME_NEVER,
					&res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL, "cap 0");
	cr_assert_eq(pw_read_until_poll(cx, &rd, 256, out, 4, PW_TIME_NEVER,
					&res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL, "not a byte");
	cr_assert_eq(pw_read_until_poll(cx, NULL, '\n', out, 4, PW_TIME_NEVER,
					&res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_read_exact_poll(cx, &rd, NULL, 4, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, -EINVAL);
	cr_assert_eq(pw_read_exact_poll(cx, &rd, out, 0, PW_TIME_NEVER, &res),
		     PW_READY);
	cr_assert_eq(res, 0, "nothing to read");
	pw_reader_park(NULL);
	pw_reader_cancel(NULL);
	pw_reader_cancel(&rd);
	return pw_ready(cx, 1);
}

Test(sendv, bad_input)
{
	struct pw_runtime *rt = pw_test_runtime(1);

	cr_assert_eq(pw_test_block_on(rt, bad_sendv_poll, NULL), 1);
	cr_assert_eq(pw_test_block_on(rt, bad_reader_poll, NULL), 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}
