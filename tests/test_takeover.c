/* SPDX-License-Identifier: MIT */
/*
 * test_takeover.c - restarts that lose nothing: the listener calls that
 * pass sockets between processes (pw_net_listener_adopt(),
 * pw_net_listener_fds()) and `--takeover PATH` of pinwheel http and
 * pinwheel proxy, run as child processes: a hand-over under connection
 * churn that counts every request, a fresh bind, a stale socket file, a
 * path that is not a socket, garbage on PATH, and new processes that
 * end before they are ready (the old one keeps serving).
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
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/net_fixtures.h"
#include "pinwheel/net.h"
#include "apps/http.h"

/* ---- the listener calls ------------------------------------------------ */

/* A listening socket on 127.0.0.1 port @port (0: any), address in @a. */
static int listen_on(unsigned port, struct pw_net_addr *a)
{
	char text[32];

	snprintf(text, sizeof(text), "127.0.0.1:%u", port);
	cr_assert_eq(pw_net_addr_parse(a, text), 0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	cr_assert_geq(fd, 0);
	cr_assert_eq(
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), 0);
	cr_assert_eq(bind(fd, &a->u.sa, a->len), 0);
	cr_assert_eq(listen(fd, 16), 0);
	pw_test_local_addr(fd, a);
	return fd;
}

/* Whether @fd is still open. */
static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/*
 * A listener's sockets, handed out, are adopted by a listener on another
 * runtime (same address, one per shard); every malformed set is refused
 * with its error and leaves the descriptors open.
 */
Test(takeover, adopt_checks_each_socket)
{
	struct pw_runtime *rt = pw_test_runtime(2), *one = pw_test_runtime(1);
	struct pw_net_listener *l, *m;
	struct pw_net_addr a, b, got;
	int fds[4], d[2];

	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&l, rt, &a, NULL), 0);
	cr_assert_eq(pw_net_listener_fds(l, NULL, 0), 2);
	cr_assert_eq(pw_net_listener_fds(l, fds, 1), 2);
	cr_assert_eq(pw_net_listener_fds(l, fds, 4), 2);
	cr_assert_eq(pw_net_listener_fds(NULL, fds, 4), -EINVAL);
	d[0] = dup(fds[0]);
	d[1] = dup(fds[1]);
	cr_assert_eq(pw_net_listener_adopt(&m, one, d, 2, NULL), -E2BIG);
	struct pw_net_listen_opts shared = { .flags = PW_NET_LISTEN_SHARED };
	cr_assert_eq(pw_net_listener_adopt(&m, rt, d, 2, &shared), -EINVAL);
	int twice[2] = { d[0], fds[0] };
	cr_assert_eq(pw_net_listener_adopt(&m, rt, twice, 2, NULL), -EINVAL);
	int bad = -1;
	cr_assert_eq(pw_net_listener_adopt(&m, rt, &bad, 1, NULL), -EBADF);
	int file = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_eq(pw_net_listener_adopt(&m, rt, &file, 1, NULL), -ENOTSOCK);
	close(file);
	int idle = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(pw_net_listener_adopt(&m, rt, &idle, 1, NULL), -EINVAL);
	close(idle);
	int other = listen_on(0, &b);
	int mixed[2] = { d[0], other };
	cr_assert_eq(pw_net_listener_adopt(&m, rt, mixed, 2, NULL), -EINVAL);
	close(other);
	cr_assert_eq(pw_net_listener_adopt(&m, rt, d, 0, NULL), -EINVAL);
	cr_assert(is_open(d[0]) && is_open(d[1]));

	cr_assert_eq(pw_net_listener_adopt(&m, rt, d, 2, NULL), 0);
	cr_assert_eq(pw_net_listener_addr(m, &got), 0);
	pw_net_listener_addr(l, &a);
	cr_assert_eq(got.len, a.len);
	cr_assert_eq(memcmp(&got.u, &a.u, a.len), 0);
	int out[2];
	cr_assert_eq(pw_net_listener_fds(m, out, 2), 2);
	cr_assert(out[0] == d[0] && out[1] == d[1]);
	pw_runtime_destroy(one);
	pw_runtime_destroy(rt);
	cr_assert_eq(pw_net_listener_destroy(m), 0);
	cr_assert(!is_open(d[0]) && !is_open(d[1]));
	/* The originals still listen: the sockets were shared, not moved. */
	int c = pw_test_dial(&a);
	cr_assert_geq(c, 0);
	close(c);
	pw_net_listener_destroy(l);
}

/* Fewer sockets than shards: shard i accepts from socket i % n, so one
 * socket serves every shard; the listener closes it once. */
Test(takeover, adopt_one_socket_for_all_shards)
{
	struct pw_runtime *rt = pw_test_runtime(3);
	struct pw_net_listener *m;
	struct pw_net_addr a;
	int fd = listen_on(0, &a);

	cr_assert_eq(pw_net_listener_adopt(&m, rt, &fd, 1, NULL), 0);
	int out[3] = { -1, -1, -1 };
	cr_assert_eq(pw_net_listener_fds(m, out, 3), 1);
	cr_assert_eq(out[0], fd);
	pw_runtime_destroy(rt);
	cr_assert_eq(pw_net_listener_destroy(m), 0);
	cr_assert(!is_open(fd));
}

/* The task of accept_stop_takes_what_its_cancel_swallowed. */
struct stop_race {
	struct pw_accept acc;
	struct pw_sleep nap;
	struct pw_net_addr a;
	int step, client, served;
};

static enum pw_poll stop_race_poll(struct pw_cx *cx, void *state)
{
	struct stop_race *t = state;
	int fd;

	if (t->step == 0) {
		/* Arm the multishot accept; the nap makes the shard submit
		 * it, so that it waits on the socket. */
		if (pw_accept_poll(cx, &t->acc, PW_TIME_NEVER, &fd) == PW_READY)
			return pw_ready(cx, -EPROTO);
		pw_sleep_reset(&t->nap, pw_time_now() + PW_NSEC_PER_MSEC);
		t->step = 1;
	}
	if (t->step == 1) {
		if (pw_sleep_poll(cx, &t->nap) == PW_PENDING)
			return PW_PENDING;
		/* The connection wakes our accept, whose work waits for the
		 * shard's next entry into the kernel: the cancel gets there
		 * first. */
		t->client = pw_test_dial(&t->a);
		t->step = 2;
	}
	for (;;) {
		if (pw_accept_stop(cx, &t->acc, &fd) == PW_PENDING)
			return PW_PENDING;
		if (fd < 0)
			return pw_ready(cx, fd);
		t->served++;
		close(fd);
	}
}

/*
 * A connection arrives just before the accept waiting on the socket is
 * cancelled (the old process's, at a hand-over): the kernel woke that
 * accept alone, so no other accept on the socket (the new process's)
 * hears of it. pw_accept_stop() takes it from the backlog: nothing is
 * left there for a wake-up that will not come.
 */
Test(takeover, accept_stop_takes_what_its_cancel_swallowed)
{
	int fds0 = pw_test_open_fds();
	struct pw_runtime *rt = pw_test_runtime(1);
	struct pw_net_listener *l;
	static struct stop_race t;

	memset(&t, 0, sizeof(t));
	cr_assert_eq(pw_net_addr_parse(&t.a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_net_listener_create(&l, rt, &t.a, NULL), 0);
	cr_assert_eq(pw_net_listener_addr(l, &t.a), 0);
	pw_accept_init(&t.acc, l, 0);
	pw_sleep_init_at(&t.nap, PW_TIME_NEVER);
	cr_assert_eq(pw_test_block_on(rt, stop_race_poll, &t), -ECANCELED);
	cr_assert_geq(t.client, 0);
	cr_assert_eq(t.served, 1, "%d served", t.served);
	close(t.client);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
	cr_assert_eq(pw_net_listener_destroy(l), 0);
	cr_assert_eq(pw_test_open_fds(), fds0, "fds leaked");
}

/* ---- clients that count every request -------------------------------- */

enum { ANS_OK, ANS_EOF, ANS_RESET, ANS_SHORT, ANS_BAD, ANS_HUNG };

/* Clients of one test: each request's fate, counted. */
struct load {
	struct pw_net_addr a;
	atomic_bool stop;
	_Atomic uint64_t ok, refused, resets, eofs, shorts, bad, hung, retried;
	pthread_t th[8];
	unsigned n;
};

static const char request[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

/* Read one response on @fd: ANS_OK for a whole 200, ANS_EOF or ANS_RESET
 * when the connection ended before its first byte, ANS_SHORT after some,
 * ANS_HUNG when nothing came for 5 s, ANS_BAD for another status or a
 * response that makes no sense. */
static int response(int fd)
{
	char buf[1024];
	size_t got = 0, need = 0;
	char *end = NULL;

	for (;;) {
		ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (r <= 0) {
			if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return ANS_HUNG;
			if (got)
				return ANS_SHORT;
			return r == 0 ? ANS_EOF : ANS_RESET;
		}
		got += (size_t)r;
		buf[got] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			const char *cl = strstr(buf, "Content-Length: ");
			if (strncmp(buf, "HTTP/1.1 200 ", 13) || !cl)
				return ANS_BAD;
			need = (size_t)(end + 4 - buf) +
			       strtoul(cl + 16, NULL, 10);
		}
		if (end && got >= need)
			return got == need ? ANS_OK : ANS_BAD;
		if (got == sizeof(buf) - 1)
			return ANS_BAD;
	}
}

/* Send a request on @fd and read its response, as response(). */
static int exchange(int fd)
{
	ssize_t r = send(fd, request, sizeof(request) - 1, MSG_NOSIGNAL);

	if (r != (ssize_t)sizeof(request) - 1)
		return r < 0 && errno == EPIPE ? ANS_EOF : ANS_RESET;
	return response(fd);
}

/* A new connection, or -1 (counted as refused or reset). */
static int dial(struct load *L)
{
	int fd = pw_test_dial(&L->a);
	struct timeval tv = { 5, 0 }; /* a hang fails the test, counted */

	if (fd < 0) {
		atomic_fetch_add(fd == -ECONNREFUSED ? &L->refused : &L->resets,
				 1);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void count(struct load *L, int r)
{
	_Atomic uint64_t *c[] = { &L->ok,     &L->eofs, &L->resets,
				  &L->shorts, &L->bad,	&L->hung };

	atomic_fetch_add(c[r], 1);
}

/* Connection churn: a new connection for every request. */
static void *churn(void *arg)
{
	struct load *L = arg;

	while (!atomic_load(&L->stop)) {
		int fd = dial(L);
		if (fd < 0)
			continue;
		count(L, exchange(fd));
		close(fd);
	}
	return NULL;
}

/*
 * Keep-alive: 20 requests per connection. A reused connection the
 * server closed between two requests (a drain closes idle ones) is what
 * HTTP clients retry on a new connection: counted as retried, and the
 * retry's fate counted as any request's.
 */
static void *keepalive(void *arg)
{
	struct load *L = arg;

	while (!atomic_load(&L->stop)) {
		int fd = dial(L);
		if (fd < 0)
			continue;
		for (int i = 0; i < 20 && !atomic_load(&L->stop); i++) {
			int r = exchange(fd);
			if (i && (r == ANS_EOF || r == ANS_RESET)) {
				atomic_fetch_add(&L->retried, 1);
				close(fd);
				if ((fd = dial(L)) < 0)
					break;
				r = exchange(fd);
			}
			count(L, r);
			if (r != ANS_OK)
				break;
		}
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static void load_start(struct load *L, const struct pw_net_addr *a)
{
	memset(L, 0, sizeof(*L));
	L->a = *a;
	for (L->n = 0; L->n < 6; L->n++)
		cr_assert_eq(pthread_create(&L->th[L->n], NULL,
					    L->n < 4 ? churn : keepalive, L),
			     0);
}

static void load_stop(struct load *L)
{
	atomic_store(&L->stop, true);
	for (unsigned i = 0; i < L->n; i++)
		pthread_join(L->th[i], NULL);
}

/* Wait until @L counted @n good answers. */
static void load_until(struct load *L, uint64_t n)
{
	PW_TEST_WAIT_UNTIL(atomic_load(&L->ok) >= n, 20,
			   "%llu answers, %llu awaited",
			   (unsigned long long)atomic_load(&L->ok),
			   (unsigned long long)n);
}

/* ---- the commands ------------------------------------------------------ */

/* A fresh directory for PATH, its name in @dir, PATH in @path. */
static void tmp_path(char *dir, size_t dlen, char *path, size_t plen)
{
	snprintf(dir, dlen, "/tmp/pw-takeover-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, plen, "%s/sock", dir);
}

static void tmp_clean(const char *dir, const char *path)
{
	unlink(path);
	cr_assert_eq(rmdir(dir), 0, "%s left files behind", dir);
}

/* A running command and what it said so far. */
struct gen {
	pid_t pid;
	int fd;
	char text[8192];
	size_t len;
	struct pw_net_addr a;
};

static void gen_start(struct gen *g, char *const argv[])
{
	memset(g, 0, sizeof(*g));
	g->pid = pw_test_cmd_start(argv, &g->fd);
	const char *at = pw_test_read_until(g->fd, g->text, sizeof(g->text),
					    &g->len, "listening on ");
	char addr[PW_NET_ADDR_STRLEN];

	/* "listening on ADDR with ..." (http), "... ADDR, 1 upstream" */
	at += strlen("listening on ");
	snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(at, " ,\n"), at);
	cr_assert_eq(pw_net_addr_parse(&g->a, addr), 0, "%s", g->text);
}

/* Wait for @g to exit; its status, all it said in g->text. */
static int gen_wait(struct gen *g)
{
	char rest[8192];
	int st = pw_test_cmd_wait(g->pid, g->fd, rest, sizeof(rest));

	snprintf(g->text + g->len, sizeof(g->text) - g->len, "%s", rest);
	return st;
}

static int gen_stop(struct gen *g)
{
	kill(g->pid, SIGTERM);
	return gen_wait(g);
}

/* One request on a new connection to @a answered with 200. */
static void one_request(const struct pw_net_addr *a)
{
	int fd = pw_test_dial(a);

	cr_assert_geq(fd, 0);
	cr_assert_eq(exchange(fd), ANS_OK);
	close(fd);
}

#define BIN PW_BUILDDIR "/pinwheel"

static void need_bin(void)
{
	if (access(BIN, X_OK))
		cr_skip_test("%s is not built", BIN);
}

/*
 * Generation A of @argv serves clients (connection churn and
 * keep-alive), B starts with the same command line and takes A's
 * sockets, A drains and exits 0, and B serves on: every request got a
 * whole 200, none refused, reset or cut short.
 */
static void handover(char *const argv[])
{
	struct gen a, b;
	struct load L;

	gen_start(&a, argv);
	load_start(&L, &a.a);
	load_until(&L, 200);
	gen_start(&b, argv);
	cr_assert_eq(memcmp(&a.a, &b.a, sizeof(a.a)), 0, "B: %s", b.text);
	cr_assert_eq(gen_wait(&a), 0, "A: %s", a.text);
	cr_assert(strstr(a.text, "handed the listening sockets to pid"),
		  "A: %s", a.text);
	load_until(&L, atomic_load(&L.ok) + 200);
	load_stop(&L);
	unsigned long long ok = L.ok, refused = L.refused, resets = L.resets,
			   eofs = L.eofs, shorts = L.shorts, bad = L.bad,
			   hung = L.hung;
	cr_expect_eq(refused, 0, "%llu of %llu refused", refused, ok);
	cr_expect_eq(resets, 0, "%llu of %llu reset; A said: %s", resets, ok,
		     a.text);
	cr_expect_eq(eofs, 0, "%llu of %llu closed unanswered", eofs, ok);
	cr_expect_eq(shorts, 0, "%llu of %llu cut short", shorts, ok);
	cr_expect_eq(bad, 0, "%llu of %llu not a 200", bad, ok);
	cr_expect_eq(hung, 0, "%llu of %llu unanswered for 5 s; A said: %s",
		     hung, ok, a.text);
	cr_log_info("handover: %llu answers, %llu keep-alive retries", ok,
		    (unsigned long long)atomic_load(&L.retried));
	one_request(&b.a);
	cr_assert_eq(gen_stop(&b), 0, "B: %s", b.text);
}

Test(takeover, http_under_churn_loses_nothing)
{
	char dir[64], path[96];

	need_bin();
	tmp_path(dir, sizeof(dir), path, sizeof(path));
	char *argv[] = { "pinwheel", "http",	 "--takeover",
			 path,	     "--listen", "127.0.0.1:0",
			 "--shards", "2",	 NULL };
	handover(argv);
	tmp_clean(dir, path);
}

Test(takeover, proxy_under_churn_loses_nothing)
{
	char dir[64], path[96], up[PW_NET_ADDR_STRLEN];
	struct gen u;

	need_bin();
	tmp_path(dir, sizeof(dir), path, sizeof(path));
	char *http[] = { "pinwheel", "http", "--listen", "127.0.0.1:0",
			 "--shards", "1",    NULL };
	gen_start(&u, http);
	pw_net_addr_format(&u.a, up, sizeof(up));
	char *argv[] = { "pinwheel", "proxy",	    "--takeover", path,
			 "--listen", "127.0.0.1:0", "--upstream", up,
			 "--shards", "2",	    NULL };
	handover(argv);
	cr_assert_eq(gen_stop(&u), 0, "upstream: %s", u.text);
	tmp_clean(dir, path);
}

/* The mode bits of @path's socket, or -1 when it is not a socket. */
static int sock_mode(const char *path)
{
	struct stat st;

	if (lstat(path, &st) || !S_ISSOCK(st.st_mode))
		return -1;
	return (int)(st.st_mode & 0777);
}

/*
 * Nobody on PATH: the first generation binds fresh and puts its socket
 * there (0600), removed when it stops. A socket file left by a dead
 * process is replaced the same way.
 */
Test(takeover, fresh_bind_and_stale_socket)
{
	char dir[64], path[96];
	struct gen a;

	need_bin();
	tmp_path(dir, sizeof(dir), path, sizeof(path));
	char *argv[] = { "pinwheel", "http",	 "--takeover",
			 path,	     "--listen", "127.0.0.1:0",
			 "--shards", "2",	 NULL };
	gen_start(&a, argv);
	cr_assert_eq(sock_mode(path), 0600, "mode %o: %s", sock_mode(path),
		     a.text);
	one_request(&a.a);
	cr_assert_eq(gen_stop(&a), 0, "%s", a.text);
	cr_assert_eq(sock_mode(path), -1, "PATH left behind");

	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int dead = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(dead, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(dead); /* a socket file nobody listens on */
	gen_start(&a, argv);
	cr_assert_eq(sock_mode(path), 0600, "mode %o: %s", sock_mode(path),
		     a.text);
	one_request(&a.a);
	cr_assert_eq(gen_stop(&a), 0, "%s", a.text);
	tmp_clean(dir, path);
}

/* A PATH that is not a socket is never replaced: exit 1, said why. */
Test(takeover, path_not_a_socket_is_refused)
{
	char dir[64], path[96], out[4096];

	need_bin();
	tmp_path(dir, sizeof(dir), path, sizeof(path));
	int f = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(f, 0);
	cr_assert_eq(write(f, "keep", 4), 4);
	close(f);
	char *argv[] = { "pinwheel", "http",	    "--takeover", path,
			 "--listen", "127.0.0.1:0", NULL };
	cr_assert_eq(pw_test_run_cmd(out, sizeof(out), argv), 1, "%s", out);
	cr_assert(strstr(out, "exists and is not a socket; not replaced"), "%s",
		  out);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode) && st.st_size == 4);
	tmp_clean(dir, path);
}

/* Connect to the Unix socket @path. */
static int dial_path(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/*
 * Garbage on PATH is dropped with a line on stderr; a new process of
 * another command is refused before any socket moves; one that takes
 * the sockets and then ends before "ready" (here: it wants another
 * address) leaves the old one serving, which says so. The old one then
 * still hands over to a good new one.
 */
Test(takeover, bad_clients_leave_the_old_one_serving)
{
	char dir[64], path[96], out[4096], junk[400];
	struct gen a, b;

	need_bin();
	tmp_path(dir, sizeof(dir), path, sizeof(path));
	char *argv[] = { "pinwheel", "http",	 "--takeover",
			 path,	     "--listen", "127.0.0.1:0",
			 "--shards", "2",	 NULL };
	gen_start(&a, argv);

	int g = dial_path(path);
	memset(junk, 'x', sizeof(junk));
	cr_assert_eq(send(g, junk, sizeof(junk), MSG_NOSIGNAL),
		     (ssize_t)sizeof(junk));
	cr_assert(pw_test_readable(g, 10000));
	cr_assert_leq(recv(g, junk, sizeof(junk), 0), 0, "answered garbage");
	close(g);
	pw_test_read_until(a.fd, a.text, sizeof(a.text), &a.len,
			   "not a takeover request");

	char *proxy[] = { "pinwheel",	"proxy",       "--takeover",
			  path,		"--listen",    "127.0.0.1:0",
			  "--upstream", "127.0.0.1:9", NULL };
	cr_assert_eq(pw_test_run_cmd(out, sizeof(out), proxy), 1, "%s", out);
	cr_assert(strstr(out, "refused: this process runs pinwheel http, "
			      "not pinwheel proxy"),
		  "%s", out);

	char *other[] = { "pinwheel", "http",	  "--takeover",
			  path,	      "--listen", "127.0.0.2:0",
			  "--shards", "2",	  NULL };
	cr_assert_eq(pw_test_run_cmd(out, sizeof(out), other), 1, "%s", out);
	cr_assert(strstr(out, "the running process serves 127.0.0.1:"), "%s",
		  out);
	pw_test_read_until(a.fd, a.text, sizeof(a.text), &a.len,
			   "ended before it was ready");
	cr_assert(strstr(a.text, "still serving"), "%s", a.text);
	one_request(&a.a);

	gen_start(&b, argv);
	cr_assert_eq(gen_wait(&a), 0, "A: %s", a.text);
	one_request(&b.a);
	cr_assert_eq(gen_stop(&b), 0, "B: %s", b.text);
	cr_assert_eq(sock_mode(path), -1, "PATH left behind");
	tmp_clean(dir, path);
}

/* ---- pinwheel http's drain -------------------------------------------- */

/*
 * A connection accepted before the drain whose request comes after it
 * (a client of the old process at a hand-over) is answered, with
 * "Connection: close", never closed unanswered; one idle after a
 * request is closed once silent for the drain's grace.
 */
Test(takeover, http_drain_answers_a_fresh_connection)
{
	struct pw_runtime *rt = pw_test_runtime(2);
	struct pw_http_server *s;
	struct pw_net_addr a;

	cr_assert_eq(pw_net_addr_parse(&a, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_http_server_start(&s, rt, &a, NULL), 0);
	cr_assert_eq(pw_http_server_addr(s, &a), 0);
	int used = pw_test_dial(&a), fresh = pw_test_dial(&a);
	cr_assert(used >= 0 && fresh >= 0);
	cr_assert_eq(exchange(used), ANS_OK);
	PW_TEST_WAIT_UNTIL(pw_http_server_open(s) == 2, 20, "%d open",
			   pw_http_server_open(s));
	cr_assert_eq(pw_http_server_drain(s), 0);
	char c;
	cr_assert_eq(recv(used, &c, 1, 0), 0, "the idle one closes");
	cr_assert_eq(send(fresh, request, sizeof(request) - 1, 0),
		     (ssize_t)sizeof(request) - 1);
	char buf[512];
	ssize_t n = recv(fresh, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(n, 0, "closed unanswered");
	buf[n] = '\0';
	cr_assert(strstr(buf, "HTTP/1.1 200 ") == buf, "%s", buf);
	cr_assert(strstr(buf, "Connection: close"), "%s", buf);
	close(used);
	close(fresh);
	PW_TEST_WAIT_UNTIL(pw_http_server_open(s) == 0, 20, "%d open",
			   pw_http_server_open(s));
	pw_runtime_destroy(rt);
	pw_http_server_destroy(s);
}
