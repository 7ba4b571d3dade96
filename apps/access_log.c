/* SPDX-License-Identifier: MIT */
/*
 * access_log.c - the access log of access_log.h: per-shard buffers of
 * formatted lines, swapped out and written by one writer thread.
 *
 * A slot holds two buffers: the one its shard appends to (cur) and the
 * one the writer writes (out). The slot's mutex guards cur, its length
 * and its drop count; the writer takes it only to swap the two, so a
 * shard never waits for a write. The writer wakes every 100 ms, when a
 * flush is asked for, or when the log closes. SIGHUP (when
 * pw_access_log_sighup_init() was called) bumps a process-wide count
 * that each writer compares with the last it saw and reopens its file.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
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

#include "apps/access_log.h"
#include "apps/cli.h"

#define AL_PERIOD_NS	 (100 * 1000000ull)
#define AL_CLOSE_WAIT_NS (2000 * 1000000ull)

struct al_slot {
	pthread_mutex_t mu;
	char *cur, *out; /* cur: under mu; out: the writer's */
	size_t len;	 /* bytes in cur, under mu */
	uint64_t unsaid; /* drops not yet written as a line, under mu */
	/* Written under mu, read by any thread (stats); relaxed: counts. */
	_Atomic uint64_t records, dropped;
} __attribute__((aligned(64)));

struct pw_access_log {
	char *path; /* NULL: standard output */
	int fd;
	size_t cap;
	unsigned nslots;
	struct al_slot *slot;
	pthread_t thread;
	pthread_mutex_t mu; /* guards the fields below it */
	pthread_cond_t wake, done;
	bool stop;
	uint64_t asked, flushed; /* flush generations */
	uint64_t stop_deadline;	 /* CLOCK_MONOTONIC ns, once stopping */
	unsigned hup_seen;	 /* the writer's copy of al_hups */
	bool err_said;		 /* the writer's: an error was reported */
	/* Written by the writer, read by any thread; relaxed: counts. */
	_Atomic uint64_t wdropped, werrors, reopens;
};

/* SIGHUPs seen. Relaxed: stored by the handler, loaded by each writer at
 * its wake; the count itself is the only data. */
static _Atomic unsigned al_hups;

static void al_on_hup(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&al_hups, 1, memory_order_relaxed);
}

int pw_access_log_sighup_init(void)
{
	struct sigaction sa = { .sa_handler = al_on_hup };
	sigset_t s;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGHUP, &sa, NULL))
		return -errno;
	sigemptyset(&s);
	sigaddset(&s, SIGHUP);
	return -pthread_sigmask(SIG_BLOCK, &s, NULL);
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

static void fmt_time(char *buf, size_t size, uint64_t ns)
{
	char t[32];

	*put_time(t, ns) = '\0';
	snprintf(buf, size, "%s", t);
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

static void slot_count(_Atomic uint64_t *c)
{
	/* Relaxed: under the slot's mutex, a count (see struct al_slot). */
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

void pw_access_log_add(struct pw_access_log *l, unsigned slot,
		       const struct pw_access_rec *r)
{
	char line[PW_ACCESS_LOG_LINE];
	struct al_slot *s;
	int n;

	if (!l || !r)
		return;
	s = &l->slot[slot % l->nslots];
	n = pw_access_log_format(line, sizeof(line), r);
	if (n <= 0 || (size_t)n >= sizeof(line))
		n = 0;
	pthread_mutex_lock(&s->mu);
	if (n && l->cap - s->len >= (size_t)n) {
		memcpy(s->cur + s->len, line, (size_t)n);
		s->len += (size_t)n;
		slot_count(&s->records);
	} else {
		s->unsaid++;
		slot_count(&s->dropped);
	}
	pthread_mutex_unlock(&s->mu);
}

/* ---- the writer ---------------------------------------------------------- */

static uint64_t lines_in(const char *p, size_t n)
{
	uint64_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == '\n';
	return k;
}

/* Relaxed: a count only the writer writes. */
static void wcount(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static void say_error(struct pw_access_log *l, int err)
{
	wcount(&l->werrors, 1);
	if (l->err_said)
		return;
	l->err_said = true;
	fprintf(stderr, "pinwheel: access log %s: %s (records are dropped)\n",
		l->path ? l->path : "-", strerror(err));
}

/* Whether the close's deadline passed (the writer gives up then). */
static bool past_deadline(struct pw_access_log *l)
{
	bool stop;
	uint64_t dl;

	pthread_mutex_lock(&l->mu);
	stop = l->stop;
	dl = l->stop_deadline;
	pthread_mutex_unlock(&l->mu);
	return stop && pw_cli_mono_ns() >= dl;
}

/* Write @n bytes at @p, waiting for room while the log is open (and up to
 * the close's deadline after). What is not written counts as dropped. */
static void write_all(struct pw_access_log *l, const char *p, size_t n)
{
	size_t off = 0;

	while (off < n && l->fd >= 0) {
		ssize_t w = write(l->fd, p + off, n - off);

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN && !past_deadline(l)) {
			struct pollfd pf = { l->fd, POLLOUT, 0 };
			(void)poll(&pf, 1, 100);
			continue;
		}
		if (w < 0 && errno != EAGAIN)
			say_error(l, errno);
		break;
	}
	if (off < n)
		wcount(&l->wdropped, lines_in(p + off, n - off));
}

/* Swap each slot's buffer out and write it, then its drop line. */
static void flush_slots(struct pw_access_log *l)
{
	for (unsigned i = 0; i < l->nslots; i++) {
		struct al_slot *s = &l->slot[i];
		size_t len;
		uint64_t unsaid;
		char *b;

		pthread_mutex_lock(&s->mu);
		b = s->cur;
		s->cur = s->out;
		s->out = b;
		len = s->len;
		s->len = 0;
		unsaid = s->unsaid;
		s->unsaid = 0;
		pthread_mutex_unlock(&s->mu);
		if (len)
			write_all(l, b, len);
		if (unsaid) {
			char line[128], t[64];
			struct timespec ts;
			int n;

			clock_gettime(CLOCK_REALTIME, &ts);
			fmt_time(t, sizeof(t),
				 (uint64_t)ts.tv_sec * 1000000000ull +
					 (uint64_t)ts.tv_nsec);
			n = snprintf(line, sizeof(line),
				     "%s %llu records dropped\n", t,
				     (unsigned long long)unsaid);
			write_all(l, line, (size_t)n);
		}
	}
}

static int open_file(const char *path)
{
	int fd;

	if (!path) {
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC,
		  0644);
	return fd < 0 ? -errno : fd;
}

/* SIGHUP came since the last look: open the file again (the rotated one
 * keeps what was written to it). */
static void maybe_reopen(struct pw_access_log *l)
{
	/* Relaxed: see al_hups. */
	unsigned h = atomic_load_explicit(&al_hups, memory_order_relaxed);
	int fd;

	if (h == l->hup_seen || !l->path)
		return;
	l->hup_seen = h;
	fd = open_file(l->path);
	if (fd < 0) {
		say_error(l, -fd);
		return;
	}
	close(l->fd);
	l->fd = fd;
	l->err_said = false;
	wcount(&l->reopens, 1);
}

static void *writer_main(void *arg)
{
	struct pw_access_log *l = arg;
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGHUP);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	for (;;) {
		uint64_t asked;
		bool stop;
		struct timespec dl;

		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_nsec += (long)AL_PERIOD_NS;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&l->mu);
		while (!l->stop && l->asked == l->flushed &&
		       pthread_cond_timedwait(&l->wake, &l->mu, &dl) == 0)
			;
		stop = l->stop;
		asked = l->asked;
		pthread_mutex_unlock(&l->mu);
		maybe_reopen(l);
		flush_slots(l);
		pthread_mutex_lock(&l->mu);
		l->flushed = asked;
		pthread_cond_broadcast(&l->done);
		pthread_mutex_unlock(&l->mu);
		if (stop)
			return NULL;
	}
}

/* ---- the API ------------------------------------------------------------- */

static void log_free(struct pw_access_log *l)
{
	for (unsigned i = 0; l->slot && i < l->nslots; i++) {
		free(l->slot[i].cur);
		free(l->slot[i].out);
		pthread_mutex_destroy(&l->slot[i].mu);
	}
	free(l->slot);
	if (l->fd >= 0)
		close(l->fd);
	pthread_cond_destroy(&l->wake);
	pthread_cond_destroy(&l->done);
	pthread_mutex_destroy(&l->mu);
	free(l->path);
	free(l);
}

int pw_access_log_open(struct pw_access_log **lp, const char *path,
		       unsigned nslots, size_t buf_size)
{
	struct pw_access_log *l;
	pthread_condattr_t ca;
	int err;

	if (!lp || !path || !nslots)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = -1;
	l->cap = buf_size ? buf_size : PW_ACCESS_LOG_BUF;
	l->nslots = nslots;
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &ca);
	pthread_cond_init(&l->done, &ca);
	pthread_condattr_destroy(&ca);
	/* Relaxed: see al_hups. */
	l->hup_seen = atomic_load_explicit(&al_hups, memory_order_relaxed);
	err = -ENOMEM;
	if (strcmp(path, "-") && !(l->path = strdup(path)))
		goto fail;
	l->slot = aligned_alloc(64, nslots * sizeof(*l->slot));
	if (!l->slot)
		goto fail;
	memset(l->slot, 0, nslots * sizeof(*l->slot));
	for (unsigned i = 0; i < nslots; i++) {
		pthread_mutex_init(&l->slot[i].mu, NULL);
		l->slot[i].cur = malloc(l->cap);
		l->slot[i].out = malloc(l->cap);
		if (!l->slot[i].cur || !l->slot[i].out) {
			l->nslots = i + 1;
			goto fail;
		}
	}
	err = l->fd = open_file(l->path);
	if (err < 0)
		goto fail;
	err = -pthread_create(&l->thread, NULL, writer_main, l);
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
		/* Relaxed: counts (see struct al_slot). */
		out->records += atomic_load_explicit(&l->slot[i].records,
						     memory_order_relaxed);
		out->dropped += atomic_load_explicit(&l->slot[i].dropped,
						     memory_order_relaxed);
	}
	/* Relaxed: counts only the writer writes. */
	out->dropped +=
		atomic_load_explicit(&l->wdropped, memory_order_relaxed);
	out->write_errors =
		atomic_load_explicit(&l->werrors, memory_order_relaxed);
	out->reopens = atomic_load_explicit(&l->reopens, memory_order_relaxed);
}

int pw_access_log_flush(struct pw_access_log *l, uint64_t timeout_ns)
{
	struct timespec dl;
	uint64_t want, t;
	int err = 0;

	if (!l)
		return 0;
	t = pw_cli_mono_ns() + timeout_ns;
	dl.tv_sec = (time_t)(t / 1000000000ull);
	dl.tv_nsec = (long)(t % 1000000000ull);
	pthread_mutex_lock(&l->mu);
	want = ++l->asked;
	pthread_cond_signal(&l->wake);
	while (l->flushed < want && !err)
		err = pthread_cond_timedwait(&l->done, &l->mu, &dl);
	if (l->flushed >= want)
		err = 0;
	pthread_mutex_unlock(&l->mu);
	return err ? -ETIMEDOUT : 0;
}

void pw_access_log_close(struct pw_access_log *l,
			 struct pw_access_log_stats *final)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	l->stop_deadline = pw_cli_mono_ns() + AL_CLOSE_WAIT_NS;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	if (final)
		pw_access_log_stats(l, final);
	log_free(l);
}
