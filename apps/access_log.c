/* SPDX-License-Identifier: MIT */
/*
 * access_log.c - the access log of access_log.h: the line's format, the
 * shards' side (a record appended to the calling shard's buffer, no
 * lock), the API, and the close's last writes. The tasks that write the
 * buffers through the file API are apps/access_log_task.c.
 *
 * A slot holds two buffers: the one its shard appends to (cur) and the
 * one handed out to the flusher (out_busy), written from out_off to
 * out_len. A record that does not fit in cur hands cur out when out is
 * free, and is dropped and counted otherwise. Every slot field but the
 * counters is touched only by the slot's shard thread (see
 * access_log_int.h), so appending takes no lock.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apps/access_log_int.h"
#include "apps/cli.h"

/* Whether pw_access_log_sighup_init() ran. Relaxed: written by the main
 * thread before any other starts, read by pw_access_log_open(). */
static _Atomic bool al_sighup;

int pw_access_log_sighup_init(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGHUP);
	int err = pthread_sigmask(SIG_BLOCK, &s, NULL);
	if (err)
		return -err;
	atomic_store_explicit(&al_sighup, true, memory_order_relaxed);
	return 0;
}

/* ---- formatting ---------------------------------------------------------- */

/* Append the decimal @v at @p; return the end. */
static char *put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* Append @s (@n bytes) at @p; return the end. */
static char *put(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* Append @a as text (IPv4 by hand, the rest by pw_net_addr_format()),
 * "-" for none; at most PW_NET_ADDR_STRLEN bytes. */
static char *put_addr(char *p, const struct pw_net_addr *a)
{
	if (a && a->len && a->u.sa.sa_family == AF_INET) {
		const uint8_t *b = (const uint8_t *)&a->u.in4.sin_addr;

		for (int i = 0; i < 4; i++) {
			p = put_u64(p, b[i]);
			*p++ = i < 3 ? '.' : ':';
		}
		return put_u64(p, ntohs(a->u.in4.sin_port));
	}
	int n = a && a->len ? pw_net_addr_format(a, p, PW_NET_ADDR_STRLEN) : -1;
	if (n > 0)
		return p + n;
	*p++ = '-';
	return p;
}

/* Append @ns as milliseconds with three decimals. */
static char *put_ms(char *p, uint64_t ns)
{
	uint64_t us = ns / 1000 % 1000;

	p = put_u64(p, ns / 1000000);
	*p++ = '.';
	*p++ = (char)('0' + us / 100);
	*p++ = (char)('0' + us / 10 % 10);
	*p++ = (char)('0' + us % 10);
	return p;
}

/* Append @ns of CLOCK_REALTIME as ISO 8601 UTC with milliseconds (24
 * bytes). The part down to the second is formatted once per second per
 * thread. */
static char *put_time(char *p, uint64_t ns)
{
	static _Thread_local time_t last = -1;
	static _Thread_local char head[24]; /* "YYYY-MM-DDTHH:MM:SS" */
	time_t t = (time_t)(ns / 1000000000ull);
	unsigned ms = (unsigned)(ns / 1000000 % 1000);

	if (t != last) {
		struct tm tm;

		gmtime_r(&t, &tm);
		snprintf(head, sizeof(head), "%04u-%02u-%02uT%02u:%02u:%02u",
			 (unsigned)(tm.tm_year + 1900) % 10000,
			 (unsigned)(tm.tm_mon + 1) % 100,
			 (unsigned)tm.tm_mday % 100, (unsigned)tm.tm_hour % 100,
			 (unsigned)tm.tm_min % 100, (unsigned)tm.tm_sec % 100);
		last = t;
	}
	p = put(p, head, 19);
	*p++ = '.';
	*p++ = (char)('0' + ms / 100);
	*p++ = (char)('0' + ms / 10 % 10);
	*p++ = (char)('0' + ms % 10);
	*p++ = 'Z';
	return p;
}

int pw_access_log_format(char *buf, size_t size, const struct pw_access_rec *r)
{
	char line[PW_ACCESS_LOG_LINE], *p = line;

	/* 24 + 3 * 128 + 2 * 24 + 2 * 21 + 2 + 9 separators: fits. */
	p = put_time(p, r->end_ns);
	*p++ = ' ';
	p = put_addr(p, r->client);
	*p++ = ' ';
	p = put_addr(p, r->listener);
	*p++ = ' ';
	p = put_addr(p, r->upstream);
	*p++ = ' ';
	if (r->connect_ns < 0)
		*p++ = '-';
	else
		p = put_ms(p, (uint64_t)r->connect_ns);
	*p++ = ' ';
	p = put_ms(p, r->duration_ns);
	*p++ = ' ';
	p = put_u64(p, r->bytes_up);
	*p++ = ' ';
	p = put_u64(p, r->bytes_down);
	*p++ = ' ';
	p = put(p, r->code ? r->code : "--", 2);
	*p++ = '\n';
	*p = '\0';
	return snprintf(buf, size, "%s", line);
}

/* ---- the shards' side ---------------------------------------------------- */

uint64_t al_lost(const struct al_slot *s, size_t n)
{
	const char *p = s->buf[s->cur ^ 1u] + s->out_len - n;
	uint64_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == '\n';
	return k && s->out_say ? k - 1 : k;
}

void al_hand_out(struct al_slot *s)
{
	unsigned o = s->cur;

	s->out_say = s->unsaid > 0;
	if (s->unsaid) {
		struct timespec ts;
		char *p = s->buf[o] + s->len[o], *e;

		clock_gettime(CLOCK_REALTIME, &ts);
		e = put_time(p, (uint64_t)ts.tv_sec * 1000000000ull +
					(uint64_t)ts.tv_nsec);
		e = put(e, " ", 1);
		e = put_u64(e, s->unsaid);
		e = put(e, " records dropped\n", 17);
		s->len[o] += (size_t)(e - p);
		s->added += (uint64_t)(e - p);
		s->unsaid = 0;
	}
	s->out_off = 0;
	s->out_len = s->len[o];
	s->out_busy = true;
	s->cur = o ^ 1u;
	s->len[s->cur] = 0;
}

void pw_access_log_add(struct pw_access_log *l, const struct pw_access_rec *r)
{
	char line[PW_ACCESS_LOG_LINE];
	struct al_slot *s;
	int id = pw_shard_id(), n;

	if (!l || !r)
		return;
	if (id < 0 || (unsigned)id >= l->nslots) {
		/* Relaxed: a count, from any thread. */
		atomic_fetch_add_explicit(&l->lost, 1, memory_order_relaxed);
		return;
	}
	s = &l->slot[id];
	n = pw_access_log_format(line, sizeof(line), r);
	if (n <= 0 || (size_t)n >= sizeof(line))
		n = 0;
	if (n && s->len[s->cur] + (size_t)n > l->cap && !s->out_busy &&
	    !s->ended) {
		al_hand_out(s);
		pw_waker_wake_by_ref(&s->flusher);
	}
	if (!n || s->len[s->cur] + (size_t)n > l->cap) {
		s->unsaid++;
		al_count(&s->dropped, 1);
		return;
	}
	memcpy(s->buf[s->cur] + s->len[s->cur], line, (size_t)n);
	s->len[s->cur] += (size_t)n;
	s->added += (uint64_t)n;
	al_count(&s->records, 1);
}

void al_say_error(struct pw_access_log *l, int err)
{
	/* Relaxed: the flag alone (see struct pw_access_log). */
	if (atomic_exchange_explicit(&l->err_said, true, memory_order_relaxed))
		return;
	fprintf(stderr, "pinwheel: access log %s: %s (records are dropped)\n",
		l->path ? l->path : "-", strerror(err));
}

/* ---- the close's last writes --------------------------------------------- */

/* Write the rest of @s's handed-out buffer to @f with write(2) (pieces
 * of whole lines to a pipe), waiting for room until @dl
 * (pw_cli_mono_ns()); what is not written counts as dropped. */
static void tail_write(struct pw_access_log *l, struct al_slot *s,
		       const struct al_file *f, uint64_t dl)
{
	while (s->out_off < s->out_len) {
		const char *p = s->buf[s->cur ^ 1u] + s->out_off;
		struct pollfd pf = { f->fd, POLLOUT, 0 };
		uint64_t now = pw_cli_mono_ns();
		size_t k = s->out_len - s->out_off;

		if (now >= dl ||
		    poll(&pf, 1, (int)((dl - now) / 1000000) + 1) < 0)
			break;
		if (!pf.revents)
			continue;
		if (f->pipe && k > PIPE_BUF) {
			const char *e = memrchr(p, '\n', PIPE_BUF);
			k = e ? (size_t)(e - p) + 1 : PIPE_BUF;
		}
		ssize_t w = write(f->fd, p, k);
		if (w > 0) {
			s->out_off += (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		al_count(&s->werrors, 1);
		al_say_error(l, w < 0 ? errno : EIO);
		break;
	}
	al_count(&s->wdropped, al_lost(s, s->out_len - s->out_off));
	s->out_off = s->out_len;
	s->out_busy = false;
}

/* Write what every slot still holds: its handed-out buffer's rest, then
 * its current buffer and its drops not said yet. */
static void write_tail(struct pw_access_log *l)
{
	const struct al_file *f = l->last;
	uint64_t dl = pw_cli_mono_ns() + AL_STOP_WAIT_NS;

	if (f->fd < 0)
		dl = 0;	    /* nothing to write to: all counted as dropped */
	else if (l->path) { /* our own descriptor: a write never hangs */
		int fl = fcntl(f->fd, F_GETFL);
		if (fl >= 0)
			(void)fcntl(f->fd, F_SETFL, fl | O_NONBLOCK);
	}
	for (unsigned i = 0; i < l->nslots; i++) {
		struct al_slot *s = &l->slot[i];

		if (s->out_busy)
			tail_write(l, s, f, dl);
		if (!s->len[s->cur] && !s->unsaid)
			continue;
		al_hand_out(s);
		tail_write(l, s, f, dl);
	}
}

/* ---- the API ------------------------------------------------------------- */

static void log_free(struct pw_access_log *l)
{
	struct al_file *f = l->last;

	while (f) {
		struct al_file *older = f->older;
		if (f->fd >= 0)
			close(f->fd);
		free(f);
		f = older;
	}
	for (unsigned i = 0; l->slot && i < l->nslots; i++) {
		free(l->slot[i].buf[0]);
		free(l->slot[i].buf[1]);
	}
	free(l->slot);
	free(l->flushers);
	free(l->path);
	free(l);
}

/* The slots, their buffers and the first opening of the file. */
static int log_build(struct pw_access_log *l)
{
	bool pipe = true;
	int fd;

	l->slot = aligned_alloc(64, l->nslots * sizeof(*l->slot));
	if (!l->slot)
		return -ENOMEM;
	memset(l->slot, 0, l->nslots * sizeof(*l->slot));
	for (unsigned i = 0; i < l->nslots; i++) {
		struct al_slot *s = &l->slot[i];

		pw_list_init(&s->waiters);
		s->buf[0] = malloc(l->cap + AL_SAY);
		s->buf[1] = malloc(l->cap + AL_SAY);
		if (!s->buf[0] || !s->buf[1])
			return -ENOMEM;
	}
	fd = al_open_sync(l->rt, l->path, &pipe);
	if (fd < 0)
		return fd;
	l->last = al_file_new(fd, l->nslots + 1, l->path != NULL, pipe);
	if (!l->last) {
		close(fd);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < l->nslots; i++)
		l->slot[i].file = l->last;
	return 0;
}

int pw_access_log_open(struct pw_access_log **lp, struct pw_runtime *rt,
		       const char *path, size_t buf_size)
{
	struct pw_access_log *l;
	int n = rt ? pw_runtime_shards(rt) : -EINVAL;
	int err;

	if (!lp || !path || n <= 0)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->rt = rt;
	l->nslots = (unsigned)n;
	l->cap = buf_size ? buf_size : PW_ACCESS_LOG_BUF;
	if (l->cap < PW_ACCESS_LOG_LINE)
		l->cap = PW_ACCESS_LOG_LINE;
	err = -ENOMEM;
	if (strcmp(path, "-") && !(l->path = strdup(path)))
		goto fail;
	err = log_build(l);
	if (err)
		goto fail;
	/* Relaxed: see al_sighup. */
	err = al_tasks_start(
		l, l->path && atomic_load_explicit(&al_sighup,
						   memory_order_relaxed));
	if (err)
		goto fail;
	*lp = l;
	return 0;
fail:
	log_free(l);
	return err;
}

void pw_access_log_stats(const struct pw_access_log *l,
			 struct pw_access_log_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!l)
		return;
	for (unsigned i = 0; i < l->nslots; i++) {
		const struct al_slot *s = &l->slot[i];

		/* Relaxed: counts (see struct al_slot). */
		out->records +=
			atomic_load_explicit(&s->records, memory_order_relaxed);
		out->dropped += atomic_load_explicit(&s->dropped,
						     memory_order_relaxed) +
				atomic_load_explicit(&s->wdropped,
						     memory_order_relaxed);
		out->write_errors +=
			atomic_load_explicit(&s->werrors, memory_order_relaxed);
	}
	/* Relaxed: counts (see struct pw_access_log). */
	out->dropped += atomic_load_explicit(&l->lost, memory_order_relaxed);
	out->write_errors +=
		atomic_load_explicit(&l->rerrors, memory_order_relaxed);
	out->reopens = atomic_load_explicit(&l->reopens, memory_order_relaxed);
}

int pw_access_log_flush(struct pw_access_log *l, uint64_t timeout_ns)
{
	if (!l)
		return -EINVAL;
	if (l->stopped)
		return -ESHUTDOWN;
	return al_tasks_flush(l, timeout_ns);
}

void pw_access_log_stop(struct pw_access_log *l)
{
	if (!l || l->stopped)
		return;
	al_tasks_stop(l);
	l->stopped = true;
}

void pw_access_log_close(struct pw_access_log *l,
			 struct pw_access_log_stats *final)
{
	if (!l)
		return;
	if (!l->stopped)
		al_tasks_reap(l);
	write_tail(l);
	if (final)
		pw_access_log_stats(l, final);
	log_free(l);
}
