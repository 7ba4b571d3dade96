/* SPDX-License-Identifier: MIT */
/*
 * load_udp.c - the requests of `pinwheel load --proto udp`.
 *
 * A "connection" is a UDP socket connected to the target (so it receives
 * the target's datagrams only) with one datagram in flight. Each
 * datagram is the run's payload with its first 8 bytes replaced by the
 * connection's sequence number (little endian, sent from an iovec of its
 * own, so the payload is shared). The task loops: wait for the next due
 * time (open loop), send, then read until the answer comes (the same
 * length, the same bytes, the same sequence number) or the request's
 * timeout passes: the request is then lost and the next one is sent. An
 * answer that comes later carries an older sequence number: it is counted
 * as late, never as the answer to the request in flight. Datagrams that
 * answer nothing sent (another length, other bytes, truncated) are
 * counted as bad.
 *
 * Exact accounting of the measured requests (those due after the
 * warm-up): each one sent ends exactly once, answered, lost, or in flight
 * when the run ended or was stopped, so sent == received + lost +
 * in_flight. A send that fails and a socket that cannot be opened use up
 * a request too (errors), but none was sent.
 *
 * The run's shards, histograms, progress and intervals are apps/load.c's
 * (apps/load_int.h); this file is only the task. A socket that fails
 * (closed under its receive) hands the slot to a fresh task, as a TCP
 * connection does: a leaf is never re-armed while the kernel may still
 * complete it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/net.h"
#include "apps/cli.h"
#include "apps/load_int.h"
#include "apps/load_udp.h"

enum { U_OPEN, U_BACKOFF, U_NEXT, U_WAIT, U_SEND, U_RECV };

/* What a step asks for next. */
enum { GO, WAIT, END };

struct udp_conn {
	struct load_slot s;
	int step;
	int fd;
	bool have;	  /* d is lent */
	bool measured;	  /* the request in flight counts */
	bool sending;	  /* its send has begun */
	bool handed_over; /* a new task carries the slot on */
	uint64_t seq;	  /* the request in flight's sequence number */
	uint64_t t_due, t_sent, t_limit; /* CLOCK_MONOTONIC ns */
	unsigned char hdr[8];
	struct iovec iov[2];
	struct pw_udp_dgram d;
	struct pw_udp_recv rx;
	struct pw_udp_send tx;
	struct pw_sleep sl;
};

static enum pw_poll udp_poll(struct pw_cx *cx, void *state);
static void udp_drop(void *state);

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The address of the slot's connection. */
static const struct pw_net_addr *udp_addr(const struct load_slot *s)
{
	const struct pw_load_config *cfg = s->run->cfg;

	return cfg->naddrs ? &cfg->addrs[s->idx % cfg->naddrs] : &cfg->target;
}

/* Whether a request due at @t_due is measured. */
static bool measured(const struct load_run *run, uint64_t t_due)
{
	return t_due >= run->measure && t_due < run->end;
}

/* One request of the slot's quota used up. */
static void use_quota(struct udp_conn *c)
{
	if (c->s.quota != NO_QUOTA && c->s.quota)
		c->s.quota--;
}

/* A request ended without being sent (@connect: no socket, else its
 * send failed); then a pause before the next try. */
static void not_sent(struct udp_conn *c, bool connect, uint64_t now)
{
	struct load_run *run = c->s.run;
	struct load_shard *sh = pw__load_shard(run);

	if (measured(run, c->t_due)) {
		use_quota(c);
		sh->last_done = now;
		sh->errors++;
		if (connect) {
			sh->err.connect++;
		} else {
			sh->err.other++;
			sh->udp.send_errors++;
		}
	}
	pw__load_ended(run, sh, false, c->t_due, c->t_sent, now);
	pw_sleep_init(&c->sl, BACKOFF_NS);
	c->step = U_BACKOFF;
}

/* The request in flight ended: answered (@ok) or lost (@failed: the
 * socket failed, else its time ran out). */
static void request_done(struct udp_conn *c, bool ok, bool failed)
{
	struct load_run *run = c->s.run;
	struct load_shard *sh = pw__load_shard(run);
	uint64_t now = pw_cli_mono_ns();

	if (c->measured) {
		use_quota(c);
		sh->last_done = now;
		if (ok) {
			sh->requests++;
			sh->udp.received++;
		} else {
			sh->errors++;
			sh->udp.lost++;
			if (failed)
				sh->err.other++;
			else
				sh->err.timeout++;
		}
	}
	pw__load_ended(run, sh, ok && c->measured, c->t_due, c->t_sent, now);
	c->measured = false;
	c->step = U_NEXT;
}

/* The run is over with the request in flight unanswered. */
static int in_flight_end(struct udp_conn *c)
{
	if (c->measured)
		pw__load_shard(c->s.run)->udp.in_flight++;
	c->measured = false;
	return END;
}

/* Whether the run (or the slot's quota) is over. */
static bool run_over(const struct udp_conn *c, uint64_t now)
{
	return pw__load_stopping(c->s.run) || now >= c->s.run->end ||
	       c->s.quota == 0;
}

/* U_OPEN: a socket connected to the slot's address. */
static int step_open(struct udp_conn *c)
{
	struct load_run *run = c->s.run;
	uint64_t now = pw_cli_mono_ns();
	int fd;

	if (run_over(c, now))
		return END;
	fd = pw_udp_open(NULL, udp_addr(&c->s), NULL);
	if (fd < 0) {
		c->t_due = c->t_sent = now;
		not_sent(c, true, now);
		return GO;
	}
	pw__load_shard(run)->connects++;
	c->fd = fd;
	pw_udp_recv_init(&c->rx, fd, 0);
	pw_udp_send_init(&c->tx, fd, 0);
	c->step = U_NEXT;
	return GO;
}

/* U_NEXT: the next request, now (closed loop) or when due (open loop). */
static int step_next(struct udp_conn *c)
{
	struct load_run *run = c->s.run;
	uint64_t now = pw_cli_mono_ns();

	if (run_over(c, now))
		return END;
	if (!run->interval) {
		c->t_due = now;
		c->step = U_SEND;
		return GO;
	}
	c->t_due = c->s.due;
	if (c->t_due >= run->end)
		return END; /* due after the end: nothing more to send */
	c->s.due += run->interval;
	c->step = U_WAIT;
	pw_sleep_init_at(&c->sl, pw__load_deadline(c->t_due, STOP_SLICE_NS));
	return GO;
}

/* U_WAIT: sleep until the request is due, a slice at a time. */
static int step_wait(struct pw_cx *cx, struct udp_conn *c)
{
	if (pw_cli_mono_ns() >= c->t_due) {
		pw_sleep_cancel(&c->sl);
		c->step = U_SEND;
		return GO;
	}
	if (pw_sleep_poll(cx, &c->sl) == PW_PENDING)
		return WAIT;
	if (pw__load_stopping(c->s.run))
		return END;
	pw_sleep_reset(&c->sl, pw__load_deadline(c->t_due, STOP_SLICE_NS));
	return GO;
}

/* U_SEND: the datagram, its sequence number first. */
static int step_send(struct pw_cx *cx, struct udp_conn *c)
{
	struct load_run *run = c->s.run;
	int32_t res;

	if (!c->sending) {
		c->sending = true;
		c->seq++;
		put_le64(c->hdr, c->seq);
		c->iov[0].iov_base = c->hdr;
		c->iov[0].iov_len = sizeof(c->hdr);
		c->iov[1].iov_base = run->msg + sizeof(c->hdr);
		c->iov[1].iov_len = run->msg_len - sizeof(c->hdr);
		c->t_sent = pw_cli_mono_ns();
	}
	if (pw_udp_send_poll(cx, &c->tx, c->iov, 2, NULL,
			     pw__load_deadline(c->t_sent + run->cfg->timeout_ns,
					       0),
			     &res) == PW_PENDING)
		return WAIT;
	c->sending = false;
	if (res < 0) {
		/* A pending ICMP error is reported by the next send too. */
		if (res == -ECONNREFUSED && measured(run, c->t_due))
			pw__load_shard(run)->udp.icmp++;
		not_sent(c, false, pw_cli_mono_ns());
		return GO;
	}
	c->measured = measured(run, c->t_due);
	if (c->measured) {
		pw__load_shard(run)->udp.sent++;
		pw__load_shard(run)->bytes_sent += (uint64_t)res;
	}
	c->t_limit = c->t_sent + run->cfg->timeout_ns;
	c->step = U_RECV;
	return GO;
}

/* A datagram received while c->seq is in flight: true when it is the
 * answer; else it is counted as late or bad. */
static bool check_answer(struct udp_conn *c, const struct pw_udp_dgram *d)
{
	const struct load_run *run = c->s.run;
	struct load_shard *sh = pw__load_shard(run);
	const unsigned char *p = d->data;
	bool whole = !(d->flags & PW_UDP_TRUNC) && d->len == run->msg_len &&
		     !memcmp(p + 8, run->msg + 8, d->len - 8);
	uint64_t seq = whole ? get_le64(p) : 0;

	if (c->measured)
		sh->bytes_recv += d->full_len;
	if (whole && seq == c->seq)
		return true;
	if (c->measured) {
		if (whole && seq && seq < c->seq)
			sh->udp.late++;
		else
			sh->udp.bad++;
	}
	return false;
}

/* Give the slot to a fresh task (a new socket after a pause): this one
 * keeps its leaves until the kernel is done with them. */
static void hand_over(struct udp_conn *c)
{
	struct udp_conn n;

	memset(&n, 0, sizeof(n));
	n.s = c->s;
	n.fd = -1;
	n.step = U_BACKOFF;
	pw_sleep_init(&n.sl, BACKOFF_NS);
	if (!pw_spawn(NULL, udp_poll, &n, sizeof(n), udp_drop))
		c->handed_over = true;
}

/* An error of the receive: an ICMP error is reported once and the
 * request goes on waiting; anything else ends the socket. */
static int recv_error(struct udp_conn *c, int32_t res)
{
	switch (res) {
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EHOSTDOWN:
	case -ENETDOWN:
		if (c->measured)
			pw__load_shard(c->s.run)->udp.icmp++;
		return GO;
	default:
		request_done(c, false, true);
		if (!run_over(c, pw_cli_mono_ns()))
			hand_over(c);
		return END;
	}
}

/*
 * Receive buffers that hold the answer whole, on the shard that arms the
 * receive, before its buffer ring is made (pw_net_configure() refuses
 * another geometry afterwards: the answers would come truncated, and be
 * counted bad). The default 4 KiB buffers hold payloads up to 3984 bytes.
 */
static void udp_buffers(const struct udp_conn *c)
{
	uint64_t need = c->s.run->msg_len + PW_UDP_RECV_OVERHEAD;
	struct pw_net_config cfg;

	pw_net_config_init(&cfg);
	if (need <= cfg.buf_size || pw_udp_recv_in_flight(&c->rx))
		return;
	cfg.buf_size = (uint32_t)((need + 63) / 64 * 64);
	if (cfg.buf_size > 16384)
		cfg.buf_count = 128; /* one answer in flight per socket */
	(void)pw_net_configure(&cfg);
}

/* U_RECV: datagrams until the answer, the request's timeout or the end. */
static int step_recv(struct pw_cx *cx, struct udp_conn *c)
{
	struct load_run *run = c->s.run;
	uint64_t limit = run->end < c->t_limit ? run->end : c->t_limit;
	int32_t res;
	bool ok;

	udp_buffers(c);
	if (pw_udp_recv_poll(cx, &c->rx,
			     pw__load_deadline(limit, STOP_SLICE_NS), &c->d,
			     &res) == PW_PENDING)
		return WAIT;
	if (res == -ETIMEDOUT) {
		uint64_t now = pw_cli_mono_ns();
		if (now >= c->t_limit)
			request_done(c, false, false);
		else if (pw__load_stopping(run) || now >= run->end)
			return in_flight_end(c);
		return GO;
	}
	if (res < 0)
		return recv_error(c, res);
	c->have = true;
	ok = check_answer(c, &c->d);
	pw_udp_dgram_release(&c->d);
	c->have = false;
	if (ok)
		request_done(c, true, false);
	return GO;
}

static enum pw_poll udp_poll(struct pw_cx *cx, void *state)
{
	struct udp_conn *c = state;
	int next;

	for (;;) {
		switch (c->step) {
		case U_OPEN:
			next = step_open(c);
			break;
		case U_BACKOFF:
			if (pw_sleep_poll(cx, &c->sl) == PW_PENDING)
				return PW_PENDING;
			c->step = c->fd < 0 ? U_OPEN : U_NEXT;
			continue;
		case U_NEXT:
			next = step_next(c);
			break;
		case U_WAIT:
			next = step_wait(cx, c);
			break;
		case U_SEND:
			next = step_send(cx, c);
			break;
		default: /* U_RECV */
			next = step_recv(cx, c);
			break;
		}
		if (next == WAIT)
			return PW_PENDING;
		if (next == END)
			return pw_ready(cx, 0);
	}
}

/* The task ends (or the runtime stops): cancel, close, and count the
 * task gone unless a new one carries the slot on. A request still in
 * flight (the runtime stopped under it) counts as in flight. */
static void udp_drop(void *state)
{
	struct udp_conn *c = state;
	struct load_run *run = c->s.run;

	if (c->measured)
		in_flight_end(c);
	if (c->have)
		pw_udp_dgram_release(&c->d);
	pw_udp_recv_cancel(&c->rx);
	pw_udp_send_cancel(&c->tx);
	pw_sleep_cancel(&c->sl);
	if (c->fd >= 0)
		close(c->fd); /* the kernel keeps its own reference */
	if (!c->handed_over)
		/* release: pairs with the acquire loads in pw_load_run();
		 * this shard's numbers are final for this task. */
		atomic_fetch_sub_explicit(&run->live, 1, memory_order_release);
}

int pw__load_udp_spawn(struct pw_runtime *rt, unsigned shard,
		       const struct load_slot *s)
{
	struct udp_conn c;

	memset(&c, 0, sizeof(c));
	c.s = *s;
	c.fd = -1;
	c.step = U_OPEN;
	return pw_runtime_spawn(rt, shard, udp_poll, &c, sizeof(c), udp_drop);
}

/* ---- reports ---------------------------------------------------------- */

void pw__load_udp_add(struct pw_load_udp_stats *sum,
		      const struct pw_load_udp_stats *one)
{
	sum->sent += one->sent;
	sum->received += one->received;
	sum->lost += one->lost;
	sum->in_flight += one->in_flight;
	sum->late += one->late;
	sum->bad += one->bad;
	sum->send_errors += one->send_errors;
	sum->icmp += one->icmp;
}

void pw__load_udp_print(const struct pw_load_udp_stats *u, FILE *f)
{
	fprintf(f,
		"  datagrams: sent %" PRIu64 ", received %" PRIu64
		", lost %" PRIu64 ", in flight at the end %" PRIu64
		"; late %" PRIu64 ", bad %" PRIu64 ", send errors %" PRIu64
		", ICMP errors %" PRIu64 "\n",
		u->sent, u->received, u->lost, u->in_flight, u->late, u->bad,
		u->send_errors, u->icmp);
}

void pw__load_udp_json(const struct pw_load_udp_stats *u, FILE *f)
{
	fprintf(f,
		", \"udp\": {\"sent\": %" PRIu64 ", \"received\": %" PRIu64
		", \"lost\": %" PRIu64 ", \"in_flight\": %" PRIu64
		", \"late\": %" PRIu64 ", \"bad\": %" PRIu64
		", \"send_errors\": %" PRIu64 ", \"icmp\": %" PRIu64 "}",
		u->sent, u->received, u->lost, u->in_flight, u->late, u->bad,
		u->send_errors, u->icmp);
}

void pw__load_udp_counters(struct pw_expo *e, const struct pw_load_udp_stats *u)
{
	const struct {
		const char *name, *help;
		uint64_t v;
	} c[] = {
		{ "udp_sent", "Datagram requests sent, measured.", u->sent },
		{ "udp_received", "Answered within the timeout.", u->received },
		{ "udp_lost", "Not answered within the timeout.", u->lost },
		{ "udp_in_flight", "Neither when the run ended.",
		  u->in_flight },
		{ "udp_late", "Answers that came after their timeout.",
		  u->late },
		{ "udp_bad", "Datagrams that answer no request.", u->bad },
		{ "udp_send_errors", "Sends that failed.", u->send_errors },
		{ "udp_icmp_errors", "ICMP errors reported.", u->icmp },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		pw_expo_metric(e, c[i].name, c[i].help, PW_EXPO_COUNTER);
		pw_expo_sample(e, NULL, c[i].v);
	}
}
