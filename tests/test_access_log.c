/* SPDX-License-Identifier: MIT */
/*
 * test_access_log.c - the proxy's PROXY protocol and access log
 * (apps/proxy.c, apps/access_log.c), in-process, on loopback: the exact
 * header bytes --send-proxy and --send-proxy-v2 send before the payload;
 * --accept-proxy with v1 and v2 headers (the payload after the header
 * intact, the header's client in the log), with a bad header (closed,
 * counted, nothing reaches the upstream) and with none before the
 * timeout; the access log's lines parsed field by field (one per
 * connection, bytes each way, end codes); and a log whose writer is
 * blocked (a pipe nobody reads): the proxy keeps forwarding, records
 * are dropped and counted, and the count is written once it catches up.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"
#include "pinwheel/net.h"
#include "apps/access_log.h"
#include "apps/proxy.h"

/* ---- an upstream that records what each connection sent ------------- */

#define UP_MAX 8

/* Accepts connections one after another: reads each to its end of
 * stream, keeps the first UP_MAX's bytes, answers "ok" and closes. */
struct upstream {
	int lfd;
	struct pw_net_addr addr;
	pthread_t thr;
	_Atomic bool stop;
	_Atomic unsigned accepted; /* release: pairs with the acquire in
				      up_wait(), the bytes before it */
	char got[UP_MAX][512];
	size_t len[UP_MAX];
};

static void up_serve(struct upstream *u, int fd, unsigned i)
{
	char buf[4096];
	size_t n = 0;

	for (;;) {
		ssize_t r;

		if (!pw_test_readable(fd, 10000))
			break;
		r = read(fd, buf, sizeof(buf));
		if (r <= 0)
			break;
		if (i < UP_MAX) {
			size_t k = (size_t)r;
			if (n + k > sizeof(u->got[i]))
				k = sizeof(u->got[i]) - n;
			memcpy(u->got[i] + n, buf, k);
			n += k;
		}
	}
	if (i < UP_MAX)
		u->len[i] = n;
	(void)!write(fd, "ok", 2);
	close(fd);
}

static void *up_main(void *arg)
{
	struct upstream *u = arg;

	/* Relaxed: the flag alone. */
	while (!atomic_load_explicit(&u->stop, memory_order_relaxed)) {
		int fd;

		if (!pw_test_readable(u->lfd, 20))
			continue;
		fd = accept(u->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		unsigned i = atomic_load_explicit(&u->accepted,
						  memory_order_relaxed);
		up_serve(u, fd, i);
		atomic_store_explicit(&u->accepted, i + 1,
				      memory_order_release);
	}
	return NULL;
}

static void up_start(struct upstream *u)
{
	memset(u, 0, sizeof(*u));
	u->lfd = pw_test_listen_any(&u->addr, 128);
	cr_assert_eq(pthread_create(&u->thr, NULL, up_main, u), 0);
}

/* Wait until @n connections were served. */
static void up_wait(struct upstream *u, unsigned n)
{
	PW_TEST_WAIT_UNTIL(atomic_load_explicit(&u->accepted,
						memory_order_acquire) >= n,
			   PW_TEST_WAIT_SECS, "upstream served %u of %u",
			   atomic_load(&u->accepted), n);
}

static void up_stop(struct upstream *u)
{
	atomic_store(&u->stop, true);
	pthread_join(u->thr, NULL);
	close(u->lfd);
}

/* ---- the proxy and its clients ---------------------------------------- */

struct fix {
	char dir[64], log[96];
	struct pw_proxy_config cfg;
	struct pw_proxy *p;
	struct pw_net_addr pa;
	struct pw_proxy_stats st;
	int fds0;
};

static void fix_begin(struct fix *f, const struct pw_net_addr *up)
{
	pw_test_time_limit(20);
	signal(SIGPIPE, SIG_IGN);
	f->fds0 = pw_test_open_fds();
	snprintf(f->dir, sizeof(f->dir), "/tmp/pw-alog-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->log, sizeof(f->log), "%s/access.log", f->dir);
	pw_proxy_config_init(&f->cfg);
	f->cfg.rt.sched = pw_test_sched();
	f->cfg.rt.shards = 2;
	f->cfg.rt.flags |= PW_CONFIG_OVERSUBSCRIBE;
	cr_assert_eq(pw_net_addr_parse(&f->cfg.listen, "127.0.0.1:0"), 0);
	f->cfg.upstream[0] = *up;
	f->cfg.nupstreams = 1;
	f->cfg.access_log = f->log;
}

static void fix_up(struct fix *f)
{
	int err = pw_proxy_start(&f->p, &f->cfg);
	cr_assert_eq(err, 0, "pw_proxy_start: %d", err);
	pw_proxy_addr(f->p, &f->pa);
}

/* Stop the proxy: every record is in the file then. */
static void fix_stop(struct fix *f)
{
	cr_assert_eq(pw_proxy_stop(f->p, 2 * PW_NSEC_PER_SEC, &f->st), 0);
	cr_assert_eq(f->st.conns_open, 0);
}

/* The end of a test whose upstream (opened before fix_begin(), one
 * descriptor) was stopped: no descriptor may be left open. */
static void fix_end(struct fix *f)
{
	unlink(f->log);
	rmdir(f->dir);
	cr_assert_eq(pw_test_open_fds(), f->fds0 - 1, "fds leaked");
}

/* The local port of the socket @fd. */
static unsigned port_of(int fd)
{
	struct pw_net_addr a;
	socklen_t len = sizeof(a.u);

	cr_assert_eq(getsockname(fd, &a.u.sa, &len), 0);
	return ntohs(a.u.in4.sin_port);
}

/* Send @n bytes at @b, end the stream, read the answer to its end into
 * @ans (up to @size - 1 bytes, NUL-terminated). Return: bytes read, or
 * -errno of the read that failed. */
static ssize_t exchange(int fd, const void *b, size_t n, char *ans, size_t size)
{
	size_t got = 0;

	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	shutdown(fd, SHUT_WR);
	for (;;) {
		cr_assert(pw_test_readable(fd, 10000), "no answer");
		ssize_t r = read(fd, ans + got, size - 1 - got);
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	ans[got] = '\0';
	return (ssize_t)got;
}

/* ---- the log's lines -------------------------------------------------- */

struct rec {
	char time[40], client[64], listener[64], upstream[64];
	char tc[32], tt[32], code[8];
	unsigned long long up, down;
};

static int spaces(const char *line)
{
	int n = 0;

	while ((line = strchr(line, ' ')))
		n++, line++;
	return n;
}

/* Read @path; parse its record lines into @r (up to @max), count the
 * records the "N records dropped" lines report into *@dropped. Return:
 * the number of records. */
static int read_log(const char *path, struct rec *r, int max,
		    unsigned long long *dropped)
{
	size_t len = 0;
	char *text = pw_test_slurp(path, &len);
	int n = 0;

	cr_assert_not_null(text, "%s", path);
	/* Whole lines only: the file ends with a newline, none is empty. */
	cr_assert(!len || text[len - 1] == '\n', "a torn last line");
	cr_assert_null(strstr(text, "\n\n"), "an empty line");
	*dropped = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long k;
		char t[40];

		if (strstr(line, " records dropped") &&
		    sscanf(line, "%39s %llu records dropped", t, &k) == 2) {
			cr_assert_eq(spaces(line), 3, "line: %s", line);
			*dropped += k;
			continue;
		}
		cr_assert_eq(spaces(line), 8, "line: %s", line);
		cr_assert_lt(n, max);
		struct rec *x = &r[n++];
		cr_assert_eq(sscanf(line,
				    "%39s %63s %63s %63s %31s %31s %llu "
				    "%llu %7s",
				    x->time, x->client, x->listener,
				    x->upstream, x->tc, x->tt, &x->up, &x->down,
				    x->code),
			     9, "line: %s", line);
		/* 2026-12-03T12:34:56.789Z */
		cr_assert_eq(strlen(x->time), 24, "%s", x->time);
		cr_assert_eq(x->time[10], 'T');
		cr_assert_eq(x->time[19], '.');
		cr_assert_eq(x->time[23], 'Z');
		cr_assert_eq(strlen(x->code), 2);
	}
	free(text);
	return n;
}

static const struct rec *find_client(const struct rec *r, int n,
				     const char *client)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(r[i].client, client))
			return &r[i];
	cr_assert_fail("no record of client %s", client);
	return NULL;
}

/* ---- --send-proxy ----------------------------------------------------- */

static void send_proxy(uint8_t version)
{
	struct upstream u;
	struct fix f;
	char ans[64], want[128];
	size_t wlen;
	int fd;

	up_start(&u);
	fix_begin(&f, &u.addr);
	f.cfg.send_proxy = version;
	fix_up(&f);
	fd = pw_test_dial(&f.pa);
	cr_assert_geq(fd, 0);
	unsigned cport = port_of(fd), pport = ntohs(f.pa.u.in4.sin_port);
	cr_assert_eq(exchange(fd, "payload", 7, ans, sizeof(ans)), 2);
	cr_assert_str_eq(ans, "ok");
	close(fd);
	up_wait(&u, 1);
	if (version == 1) {
		wlen = (size_t)snprintf(want, sizeof(want),
					"PROXY TCP4 127.0.0.1 127.0.0.1 %u "
					"%u\r\npayload",
					cport, pport);
	} else {
		const uint8_t h[28] = {
			0x0d,
			0x0a,
			0x0d,
			0x0a,
			0x00,
			0x0d,
			0x0a,
			0x51,
			0x55,
			0x49,
			0x54,
			0x0a,
			0x21,
			0x11,
			0x00,
			0x0c,
			127,
			0,
			0,
			1,
			127,
			0,
			0,
			1,
			(uint8_t)(cport >> 8),
			(uint8_t)cport,
			(uint8_t)(pport >> 8),
			(uint8_t)pport,
		};
		memcpy(want, h, sizeof(h));
		memcpy(want + sizeof(h), "payload", 7);
		wlen = sizeof(h) + 7;
	}
	cr_assert_eq(u.len[0], wlen, "upstream got %zu bytes, want %zu",
		     u.len[0], wlen);
	cr_assert_eq(memcmp(u.got[0], want, wlen), 0, "got %.*s", (int)u.len[0],
		     u.got[0]);
	fix_stop(&f);
	up_stop(&u);
	/* The log: the client as seen, 7 bytes up (the header is not
	 * counted), 2 down. */
	struct rec r[4];
	unsigned long long dropped;
	char client[64];
	cr_assert_eq(read_log(f.log, r, 4, &dropped), 1);
	snprintf(client, sizeof(client), "127.0.0.1:%u", cport);
	cr_assert_str_eq(r[0].client, client);
	cr_assert_eq(r[0].up, 7);
	cr_assert_eq(r[0].down, 2);
	fix_end(&f);
}

Test(access_log, send_proxy_v1_exact_bytes)
{
	send_proxy(1);
}

Test(access_log, send_proxy_v2_exact_bytes)
{
	send_proxy(2);
}

/* ---- --accept-proxy --------------------------------------------------- */

Test(access_log, accept_proxy_v1_and_v2_passed_on)
{
	struct upstream u;
	struct fix f;
	char ans[64], msg[256];
	int fd;

	up_start(&u);
	fix_begin(&f, &u.addr);
	f.cfg.accept_proxy = true;
	f.cfg.send_proxy = 1;
	fix_up(&f);
	/* v1, the payload in the same write as the header. */
	const char *h1 = "PROXY TCP4 192.0.2.1 198.51.100.2 1234 80\r\n";
	snprintf(msg, sizeof(msg), "%sfirst payload", h1);
	fd = pw_test_dial(&f.pa);
	cr_assert_geq(fd, 0);
	cr_assert_eq(exchange(fd, msg, strlen(msg), ans, sizeof(ans)), 2);
	close(fd);
	up_wait(&u, 1);
	cr_assert_eq(u.len[0], strlen(msg));
	cr_assert_eq(memcmp(u.got[0], msg, strlen(msg)), 0, "got %.*s",
		     (int)u.len[0], u.got[0]);
	/* v2 over IPv6, a TLV, the payload in a second write. */
	const uint8_t h2[16 + 36 + 4] = {
		0x0d, 0x0a, 0x0d,     0x0a, 0x00, 0x0d, 0x0a, 0x51,	0x55,
		0x49, 0x54, 0x0a,     0x21, 0x21, 0x00, 40,   0x20,	0x01,
		0x0d, 0xb8, [31] = 1, 0x20, 0x01, 0x0d, 0xb8, [47] = 2, 0x04,
		0xd2, 0x01, 0xbb,     0x04, 0x00, 0x01, 'x',
	};
	fd = pw_test_dial(&f.pa);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, h2, sizeof(h2)), (ssize_t)sizeof(h2));
	cr_assert_eq(exchange(fd, "second", 6, ans, sizeof(ans)), 2);
	close(fd);
	up_wait(&u, 2);
	const char *w2 = "PROXY TCP6 2001:db8::1 2001:db8::2 1234 443\r\n"
			 "second";
	cr_assert_eq(u.len[1], strlen(w2), "got %.*s", (int)u.len[1], u.got[1]);
	cr_assert_eq(memcmp(u.got[1], w2, strlen(w2)), 0);
	fix_stop(&f);
	up_stop(&u);
	cr_assert_eq(f.st.proxy_header_bad, 0);
	cr_assert_eq(f.st.proxy_header_timeout, 0);
	struct rec r[4];
	unsigned long long dropped;
	cr_assert_eq(read_log(f.log, r, 4, &dropped), 2);
	const struct rec *a = find_client(r, 2, "192.0.2.1:1234");
	cr_assert_str_eq(a->listener, "198.51.100.2:80");
	cr_assert_eq(a->up, strlen("first payload"));
	cr_assert_eq(a->down, 2);
	cr_assert_str_eq(a->code, "C-");
	a = find_client(r, 2, "[2001:db8::1]:1234");
	cr_assert_str_eq(a->listener, "[2001:db8::2]:443");
	cr_assert_eq(a->up, 6);
	fix_end(&f);
}

/* The proxy closes @fd without an answer (an end of stream or a reset). */
static void expect_closed(int fd)
{
	char b[16];

	cr_assert(pw_test_readable(fd, 10000), "not closed");
	ssize_t r = read(fd, b, sizeof(b));
	cr_assert(r == 0 || (r < 0 && errno == ECONNRESET), "read %zd", r);
}

Test(access_log, accept_proxy_bad_header_and_timeout)
{
	struct upstream u;
	struct fix f;
	int fd, fd2;

	up_start(&u);
	fix_begin(&f, &u.addr);
	f.cfg.accept_proxy = true;
	f.cfg.accept_proxy_timeout_ns = 200 * PW_NSEC_PER_MSEC;
	fix_up(&f);
	/* Not a header: closed at once, counted, nothing sent upstream. */
	fd = pw_test_dial(&f.pa);
	cr_assert_geq(fd, 0);
	const char *get = "GET / HTTP/1.0\r\n\r\n";
	cr_assert_eq(write(fd, get, strlen(get)), (ssize_t)strlen(get));
	expect_closed(fd);
	close(fd);
	/* Half a header, then nothing: closed at the timeout. */
	fd2 = pw_test_dial(&f.pa);
	cr_assert_geq(fd2, 0);
	cr_assert_eq(write(fd2, "PROXY TCP4 1.2", 14), 14);
	uint64_t t0 = pw_test_now_ns();
	expect_closed(fd2);
	cr_assert_geq(pw_test_now_ns() - t0, 150 * PW_NSEC_PER_MSEC);
	close(fd2);
	fix_stop(&f);
	up_stop(&u);
	cr_assert_eq(f.st.proxy_header_bad, 1);
	cr_assert_eq(f.st.proxy_header_timeout, 1);
	cr_assert_eq(f.st.connect_errors, 0);
	cr_assert_eq(atomic_load(&u.accepted), 0, "the upstream was reached");
	struct rec r[4];
	unsigned long long dropped;
	cr_assert_eq(read_log(f.log, r, 4, &dropped), 2);
	const char *codes[2] = { r[0].code, r[1].code };
	cr_assert(!strcmp(codes[0], "PH") || !strcmp(codes[1], "PH"));
	cr_assert(!strcmp(codes[0], "cH") || !strcmp(codes[1], "cH"));
	for (int i = 0; i < 2; i++) {
		cr_assert_str_eq(r[i].upstream, "-");
		cr_assert_str_eq(r[i].tc, "-");
		cr_assert_eq(r[i].up + r[i].down, 0);
	}
	fix_end(&f);
}

/* ---- the log's lines ---------------------------------------------------- */

#define NCONN 12

Test(access_log, one_line_per_connection_fields_exact)
{
	struct upstream u;
	struct fix f;
	char ans[64], payload[2048], clients[NCONN][64];
	int fd;

	up_start(&u);
	fix_begin(&f, &u.addr);
	fix_up(&f);
	memset(payload, 'a', sizeof(payload));
	for (int i = 0; i < NCONN; i++) {
		fd = pw_test_dial(&f.pa);
		cr_assert_geq(fd, 0);
		snprintf(clients[i], sizeof(clients[i]), "127.0.0.1:%u",
			 port_of(fd));
		cr_assert_eq(exchange(fd, payload, (size_t)(i + 1) * 100, ans,
				      sizeof(ans)),
			     2);
		close(fd);
	}
	up_wait(&u, NCONN);
	/* An upstream that refuses: connect failed. */
	struct pw_net_addr refused;
	int rfd = pw_test_refusing_port(&refused);
	fix_stop(&f);
	f.cfg.upstream[0] = refused;
	fix_up(&f);
	fd = pw_test_dial(&f.pa);
	cr_assert_geq(fd, 0);
	char rclient[64];
	snprintf(rclient, sizeof(rclient), "127.0.0.1:%u", port_of(fd));
	expect_closed(fd);
	close(fd);
	fix_stop(&f);
	close(rfd);
	up_stop(&u);
	cr_assert_eq(f.st.upstream_failed, 1);

	struct rec r[NCONN + 2];
	unsigned long long dropped;
	char listener[64];
	cr_assert_eq(read_log(f.log, r, NCONN + 2, &dropped), NCONN + 1);
	cr_assert_eq(dropped, 0);
	for (int i = 0; i < NCONN; i++) {
		const struct rec *x = find_client(r, NCONN + 1, clients[i]);
		cr_assert_eq(x->up, (unsigned long long)(i + 1) * 100);
		cr_assert_eq(x->down, 2);
		cr_assert_str_eq(x->code, "C-");
		cr_assert_neq(x->tc[0], '-');
		cr_assert_geq(strtod(x->tt, NULL), strtod(x->tc, NULL));
		pw_net_addr_format(&u.addr, listener, sizeof(listener));
		cr_assert_str_eq(x->upstream, listener);
		cr_assert_eq(strncmp(x->listener, "127.0.0.1:", 10), 0);
	}
	const struct rec *x = find_client(r, NCONN + 1, rclient);
	cr_assert_str_eq(x->code, "SC");
	cr_assert_str_eq(x->upstream, "-");
	cr_assert_str_eq(x->tc, "-");
	cr_assert_eq(x->up + x->down, 0);
	fix_end(&f);
}

/* ---- a writer that cannot write ------------------------------------------ */

struct drain {
	int fd;
	pthread_t thr;
	char *buf;
	size_t len, cap;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;

	for (;;) {
		if (d->len == d->cap) {
			d->cap = d->cap ? d->cap * 2 : 65536;
			d->buf = realloc(d->buf, d->cap);
		}
		if (!pw_test_readable(d->fd, 10000))
			break;
		ssize_t r = read(d->fd, d->buf + d->len, d->cap - d->len);
		if (r <= 0)
			break;
		d->len += (size_t)r;
	}
	return NULL;
}

#define NBLOCKED 300

Test(access_log, blocked_writer_drops_counts_and_forwarding_goes_on)
{
	struct upstream u;
	struct fix f;
	struct drain d = { 0 };
	char ans[16];

	up_start(&u);
	fix_begin(&f, &u.addr);
	cr_assert_eq(mkfifo(f.log, 0600), 0);
	d.fd = open(f.log, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	cr_assert_geq(d.fd, 0);
	cr_assert_geq(fcntl(d.fd, F_SETPIPE_SZ, 4096), 4096);
	f.cfg.rt.shards = 1;
	f.cfg.access_log_buf = 4096;
	fix_up(&f);
	/* Nobody reads: 4 KiB in the pipe, 4 KiB in the writer's hands,
	 * 4 KiB in the shard's buffer, the rest dropped. */
	for (int i = 0; i < NBLOCKED; i++) {
		int fd = pw_test_dial(&f.pa);
		cr_assert_geq(fd, 0);
		cr_assert_eq(exchange(fd, "x", 1, ans, sizeof(ans)), 2);
		close(fd);
	}
	struct pw_proxy_stats st;
	PW_TEST_WAIT_UNTIL(pw_proxy_stats(f.p, &st) == 0 &&
				   st.access_log_records +
						   st.access_log_dropped ==
					   NBLOCKED,
			   PW_TEST_WAIT_SECS, "records %llu dropped %llu",
			   (unsigned long long)st.access_log_records,
			   (unsigned long long)st.access_log_dropped);
	cr_assert_gt(st.access_log_dropped, 0);
	cr_assert_lt(st.access_log_records, NBLOCKED / 2);
	cr_assert_eq(st.conns_total, NBLOCKED);
	/* Reading again: the writer catches up and says what it dropped. */
	cr_assert_eq(pthread_create(&d.thr, NULL, drain_main, &d), 0);
	fix_stop(&f);
	pthread_join(d.thr, NULL);
	close(d.fd);
	up_stop(&u);
	cr_assert_eq(f.st.access_log_records + f.st.access_log_dropped,
		     NBLOCKED);
	cr_assert_eq(f.st.access_log_errors, 0);
	unsigned long long said = 0;
	int lines = 0;
	d.buf = realloc(d.buf, d.len + 1);
	d.buf[d.len] = '\0';
	for (char *l = strtok(d.buf, "\n"); l; l = strtok(NULL, "\n")) {
		unsigned long long k;
		char t[40];
		if (strstr(l, " records dropped") &&
		    sscanf(l, "%39s %llu records dropped", t, &k) == 2)
			said += k;
		else
			lines++;
	}
	free(d.buf);
	cr_assert_eq((unsigned long long)lines, f.st.access_log_records);
	cr_assert_eq(said, f.st.access_log_dropped);
	fix_end(&f);
}

/* ---- many connections on two shards ----------------------------------- */

/* A client thread: @n connections one after another, each sending one
 * byte and reading the answer to its end; counts those answered "ok".
 * No assertion here (not the test's thread): the test checks ok. */
struct dialer {
	const struct pw_net_addr *pa;
	int n, ok;
	pthread_t thr;
};

static bool dial_once(const struct pw_net_addr *pa)
{
	char ans[16];
	size_t got = 0;
	int fd = pw_test_dial(pa);

	if (fd < 0)
		return false;
	if (write(fd, "x", 1) != 1) {
		close(fd);
		return false;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t r;

		if (!pw_test_readable(fd, 10000) ||
		    (r = read(fd, ans + got, sizeof(ans) - 1 - got)) < 0)
			break;
		if (r == 0) {
			close(fd);
			return got == 2 && !memcmp(ans, "ok", 2);
		}
		got += (size_t)r;
	}
	close(fd);
	return false;
}

static void *dialer_main(void *arg)
{
	struct dialer *d = arg;

	for (int i = 0; i < d->n; i++)
		d->ok += dial_once(d->pa);
	return NULL;
}

#define NDIAL 4

/* @each connections from each of NDIAL threads at once; all answered. */
static void dial_many(const struct pw_net_addr *pa, int each)
{
	struct dialer d[NDIAL];

	for (int i = 0; i < NDIAL; i++) {
		d[i] = (struct dialer){ .pa = pa, .n = each };
		cr_assert_eq(
			pthread_create(&d[i].thr, NULL, dialer_main, &d[i]), 0);
	}
	for (int i = 0; i < NDIAL; i++) {
		pthread_join(d[i].thr, NULL);
		cr_assert_eq(d[i].ok, each, "dialer %d: %d of %d answered", i,
			     d[i].ok, each);
	}
}

/* NDIAL * @each connections through a proxy of two shards whose log
 * buffers hold @buf bytes; then the file is parsed line by line. */
static void two_shards(uint64_t buf, int each, bool exact)
{
	const unsigned long long n = (unsigned long long)NDIAL * each;
	struct upstream u;
	struct fix f;

	up_start(&u);
	fix_begin(&f, &u.addr);
	f.cfg.access_log_buf = buf;
	fix_up(&f);
	dial_many(&f.pa, each);
	up_wait(&u, (unsigned)n);
	fix_stop(&f);
	up_stop(&u);
	cr_assert_eq(f.st.conns_total, n);
	cr_assert_eq(f.st.access_log_errors, 0);
	cr_assert_eq(f.st.access_log_records + f.st.access_log_dropped, n);
	if (exact) {
		cr_assert_eq(f.st.access_log_records, n);
		cr_assert_eq(f.st.access_log_dropped, 0);
	}
	/* Every line whole and parsed (read_log()), one per record kept,
	 * the drops said in the file as counted. */
	struct rec *r = calloc(n, sizeof(*r));
	unsigned long long said;
	cr_assert_not_null(r);
	int lines = read_log(f.log, r, (int)n, &said);
	cr_assert_eq((unsigned long long)lines, f.st.access_log_records);
	cr_assert_eq(said, f.st.access_log_dropped);
	for (int i = 0; i < lines; i++) {
		cr_assert_eq(r[i].up, 1, "line %d", i);
		cr_assert_eq(r[i].down, 2, "line %d", i);
		cr_assert_str_eq(r[i].code, "C-", "line %d", i);
	}
	free(r);
	fix_end(&f);
}

/* Small buffers: many writes from both shards at once, each appending
 * whole lines; none is ever cut by the other shard's. */
Test(access_log, two_shards_never_mix_lines)
{
	two_shards(4096, 300, false);
}

/* Buffers that cannot fill: exactly one line per connection. */
Test(access_log, records_equal_connections_exactly)
{
	two_shards(0, 250, true);
}

/* ---- a write error -------------------------------------------------------- */

#define NFULL 40

/* Every write fails (ENOSPC): counted, each line counted as dropped, and
 * the proxy forwards every connection. */
Test(access_log, write_error_counted_and_forwarding_goes_on)
{
	struct upstream u;
	struct fix f;
	char ans[16];

	up_start(&u);
	fix_begin(&f, &u.addr);
	f.cfg.access_log = "/dev/full";
	fix_up(&f);
	for (int i = 0; i < NFULL; i++) {
		int fd = pw_test_dial(&f.pa);
		cr_assert_geq(fd, 0);
		cr_assert_eq(exchange(fd, "x", 1, ans, sizeof(ans)), 2);
		close(fd);
		if (i == NFULL / 2)	    /* two failed writes at least */
			usleep(150 * 1000); /* over a flush period */
	}
	fix_stop(&f);
	up_stop(&u);
	cr_assert_eq(f.st.conns_total, NFULL);
	cr_assert_eq(f.st.resets + f.st.connect_errors, 0);
	cr_assert_eq(f.st.access_log_records, NFULL);
	cr_assert_eq(f.st.access_log_dropped, NFULL);
	cr_assert_geq(f.st.access_log_errors, 1);
	fix_end(&f);
}

/* ---- the command: SIGHUP, standard output ---------------------------- */

/* Start `pinwheel proxy` on @up logging to @log with @shards; its
 * address into *@pa, its output's pipe into *@out. */
static pid_t px_cmd(const struct pw_net_addr *up, const char *log,
		    const char *shards, struct pw_net_addr *pa, int *out,
		    char *text, size_t size, size_t *len)
{
	char upaddr[PW_NET_ADDR_STRLEN + 1];
	char *argv[] = {
		"pinwheel",   "proxy",	      "--listen",	  "127.0.0.1:0",
		"--upstream", upaddr,	      "--access-log",	  (char *)log,
		"--shards",   (char *)shards, "--check-interval", "0",
		NULL
	};
	pid_t pid;

	static const char key[] = "listening on ";
	char addr[PW_NET_ADDR_STRLEN + 1];
	const char *at;
	size_t n;

	pw_net_addr_format(up, upaddr, sizeof(upaddr));
	pid = pw_test_cmd_start(argv, out);
	/* "listening on ADDR, 1 upstream ..." */
	at = pw_test_read_until(*out, text, size, len, key) + sizeof(key) - 1;
	n = strcspn(at, ", \n");
	cr_assert_lt(n, sizeof(addr), "%s", text);
	memcpy(addr, at, n);
	addr[n] = '\0';
	cr_assert_eq(pw_net_addr_parse(pa, addr), 0, "banner: %s", text);
	return pid;
}

static void dial_n(const struct pw_net_addr *pa, int n)
{
	for (int i = 0; i < n; i++)
		cr_assert(dial_once(pa), "connection %d not answered", i);
}

#define NROT 100

/* The newlines in @path (0 when it cannot be read). */
static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Rotation: the file renamed, SIGHUP, more connections: the lines of the
 * old and the new file together are one per connection. */
Test(access_log, command_sighup_rotation_loses_no_line)
{
	struct upstream u;
	struct pw_net_addr pa;
	char dir[64], log[96], old[100], text[16384];
	size_t len = 0;
	int out, st;

	if (access(PW_BUILDDIR "/pinwheel", X_OK))
		cr_skip_test("the pinwheel command is not built");
	pw_test_time_limit(20);
	up_start(&u);
	snprintf(dir, sizeof(dir), "/tmp/pw-alog-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(log, sizeof(log), "%s/access.log", dir);
	snprintf(old, sizeof(old), "%s.1", log);
	pid_t pid =
		px_cmd(&u.addr, log, "2", &pa, &out, text, sizeof(text), &len);
	dial_n(&pa, NROT);
	/* Written within a flush period. */
	PW_TEST_WAIT_UNTIL(count_lines(log) == NROT, PW_TEST_WAIT_SECS,
			   "%d lines of %d in %s", count_lines(log), NROT, log);
	cr_assert_eq(rename(log, old), 0);
	cr_assert_eq(kill(pid, SIGHUP), 0);
	/* The reopen creates the file again. */
	PW_TEST_WAIT_UNTIL(!access(log, F_OK), PW_TEST_WAIT_SECS,
			   "%s not reopened", log);
	dial_n(&pa, NROT);
	cr_assert_eq(kill(pid, SIGINT), 0);
	pw_test_read_rest(out, text, sizeof(text), &len);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "status %d: %s", st, text);
	up_stop(&u);
	cr_assert_not_null(strstr(text, "log=(records=200 dropped=0 errors=0)"),
			   "%s", text);
	struct rec *r = calloc(2 * NROT, sizeof(*r));
	unsigned long long d1, d2;
	cr_assert_not_null(r);
	int n1 = read_log(old, r, 2 * NROT, &d1);
	int n2 = read_log(log, r + n1, 2 * NROT - n1, &d2);
	cr_assert_eq(n1 + n2, 2 * NROT, "%d + %d lines", n1, n2);
	cr_assert_eq(d1 + d2, 0);
	cr_assert_geq(n1, NROT);
	free(r);
	unlink(log);
	unlink(old);
	rmdir(dir);
}

/* "-": the lines go to standard output, between the banner and the
 * summary. */
Test(access_log, command_log_to_stdout)
{
	struct upstream u;
	struct pw_net_addr pa;
	char text[16384];
	size_t len = 0;
	int out, st, lines = 0;

	if (access(PW_BUILDDIR "/pinwheel", X_OK))
		cr_skip_test("the pinwheel command is not built");
	pw_test_time_limit(20);
	up_start(&u);
	pid_t pid =
		px_cmd(&u.addr, "-", "1", &pa, &out, text, sizeof(text), &len);
	dial_n(&pa, 3);
	cr_assert_eq(kill(pid, SIGINT), 0);
	pw_test_read_rest(out, text, sizeof(text), &len);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "status %d: %s", st, text);
	up_stop(&u);
	for (const char *p = text; (p = strstr(p, " 1 2 C-\n")); p++)
		lines++;
	cr_assert_eq(lines, 3, "%s", text);
	cr_assert_not_null(strstr(text, "log=(records=3 dropped=0 errors=0)"),
			   "%s", text);
}

/* ---- the log alone ------------------------------------------------------ */

/* Add a record to the log from the shard running it. */
struct adder {
	struct pw_access_log *log;
	const struct pw_access_rec *r;
};

static enum pw_poll add_poll(struct pw_cx *cx, void *state)
{
	struct adder *a = state;

	pw_access_log_add(a->log, a->r);
	return pw_ready(cx, pw_shard_id());
}

/* Add @r on shard @shard of @rt; the shard that ran it must be @shard. */
static void add_on(struct pw_runtime *rt, unsigned shard,
		   struct pw_access_log *log, const struct pw_access_rec *r)
{
	struct adder a = { log, r };
	struct pw_rjoin *h;
	int64_t res = -1;

	cr_assert_eq(pw_runtime_spawn_join(rt, shard, add_poll, &a, sizeof(a),
					   NULL, 0, &h),
		     0);
	cr_assert_eq(pw_rjoin_wait(h, &res, NULL, 0), 0);
	cr_assert_eq(res, (int64_t)shard);
}

Test(access_log, format_and_flush)
{
	struct pw_net_addr c, l;
	char line[PW_ACCESS_LOG_LINE], dir[64], path[96];
	struct pw_access_log *log;
	struct pw_access_log_stats st;
	struct pw_runtime *rt;

	cr_assert_eq(pw_net_addr_parse(&c, "[::1]:5"), 0);
	cr_assert_eq(pw_net_addr_parse(&l, "127.0.0.1:80"), 0);
	struct pw_access_rec r = {
		.end_ns = 1764763200123456789ull, /* 2025-12-03T12:00:00.123 */
		.client = &c,
		.listener = &l,
		.upstream = NULL,
		.connect_ns = -1,
		.duration_ns = 1500000,
		.bytes_up = 3,
		.bytes_down = 0,
		.code = "SC",
	};
	pw_access_log_format(line, sizeof(line), &r);
	cr_assert_str_eq(line, "2025-12-03T12:00:00.123Z [::1]:5 "
			       "127.0.0.1:80 - - 1.500 3 0 SC\n");
	snprintf(dir, sizeof(dir), "/tmp/pw-alog-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.log", dir);
	rt = pw_test_runtime(2);
	cr_assert_eq(pw_access_log_open(&log, rt, path, 0), 0);
	add_on(rt, 0, log, &r);
	add_on(rt, 1, log, &r);
	add_on(rt, 1, log, &r);
	cr_assert_eq(pw_access_log_flush(log, 5 * PW_NSEC_PER_SEC), 0);
	size_t len = 0;
	char *text = pw_test_slurp(path, &len);
	cr_assert_not_null(text);
	cr_assert_eq(len, 3 * strlen(line));
	free(text);
	pw_access_log_stats(log, &st);
	cr_assert_eq(st.records, 3);
	cr_assert_eq(st.dropped, 0);
	/* One more, from a thread that is not a shard: counted as lost. */
	pw_access_log_add(log, &r);
	pw_access_log_stop(log);
	cr_assert_eq(pw_access_log_flush(log, PW_NSEC_PER_SEC), -ESHUTDOWN);
	struct pw_access_log *bad = NULL;
	cr_assert_eq(pw_access_log_open(&bad, rt, "/nonexistent/dir/a.log", 0),
		     -ENOENT);
	cr_assert_null(bad);
	pw_runtime_destroy(rt);
	pw_access_log_close(log, &st);
	cr_assert_eq(st.records, 3);
	cr_assert_eq(st.dropped, 1);
	cr_assert_eq(st.write_errors, 0);
	text = pw_test_slurp(path, &len);
	cr_assert_not_null(text);
	cr_assert_eq(len, 3 * strlen(line));
	free(text);
	unlink(path);
	rmdir(dir);
}
