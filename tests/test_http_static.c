/* SPDX-License-Identifier: MIT */
/*
 * test_http_static.c - `pinwheel http --root DIR` on loopback: the server
 * runs in-process (apps/http.c with apps/http_static.c) under the
 * scheduler of the pass and plain blocking sockets talk to it. Bodies of
 * 0 bytes, 4 KiB and 1 MiB byte for byte (read into the output buffer,
 * by reads after the head, spliced), HEAD, Last-Modified and
 * If-Modified-Since, the Content-Type table, 405, directories and their
 * index.html, traversal attempts (each refused, nothing outside the root
 * read), symlinks out of and inside the root, pipelined requests, a file
 * unlinked while sent (sent whole), a file truncated while sent (the
 * connection ends, the server serves on), a client that never reads (the
 * send timeout, on the paused clock), the path rules one by one, and the
 * command's flags.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/common.h"
#include "tests/http_fixtures.h"
#include "pinwheel/net.h"
#include "apps/http.h"
#include "apps/http_parse.h"
#include "apps/http_static.h"

/* ---- the folder ----------------------------------------------------------- */

/* top/ holds the root (top/root) and, beside it, the secret a traversal
 * would reach. */
static char top[PATH_MAX / 4], root[PATH_MAX / 2];

/* @n pseudo-random bytes from @seed. */
static void fill(char *p, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i < n; i++)
		p[i] = (char)(pw_test_rng(&s) >> 24);
}

static void put(const char *name, const char *p, size_t n)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, p + off, n - off);
		cr_assert_gt(w, 0);
		off += (size_t)w;
	}
	close(fd);
}

/* A file of @n bytes of @seed in the root; its bytes (free them). */
static char *make(const char *name, size_t n, uint64_t seed)
{
	char *p = malloc(n ? n : 1);

	cr_assert_not_null(p);
	fill(p, n, seed);
	put(name, p, n);
	return p;
}

static void tree_make(void)
{
	char p[PATH_MAX];

	snprintf(top, sizeof(top), "%s/test-static-XXXXXX", PW_BUILDDIR);
	cr_assert_not_null(mkdtemp(top), "mkdtemp: %s", strerror(errno));
	snprintf(root, sizeof(root), "%s/root", top);
	cr_assert_eq(mkdir(root, 0755), 0);
	snprintf(p, sizeof(p), "%s/x", top);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "SECRET", 6), 6);
	close(fd);
}

/* ---- the server ----------------------------------------------------------- */

/* A server of @o with --root root on one shard under the scheduler of
 * this pass, with the runtime flags @flags. */
static void srv_start_flags(struct pw_test_http *v,
			    const struct pw_http_opts *o, unsigned flags)
{
	struct pw_http_opts opts = { 0 };

	if (o)
		opts = *o;
	opts.root = root;
	pw_test_http_start(v, 1, &opts, pw_test_sched(), flags);
}

static void srv_start(struct pw_test_http *v, const struct pw_http_opts *o)
{
	srv_start_flags(v, o, 0);
}

static struct pw_http_static_stats files(struct pw_test_http *v)
{
	struct pw_http_static_stats st;

	cr_assert_eq(pw_http_static_stats(pw_http_server_files(v->s), 0, &st),
		     0);
	return st;
}

/* ---- a client ------------------------------------------------------------- */

/* A connection; @rcvbuf: its SO_RCVBUF (0: the kernel's). */
static int client_buf(const struct pw_test_http *v, int rcvbuf)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 10, 0 };
	int one = 1;

	cr_assert_geq(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	cr_assert_eq(connect(fd, &v->a.u.sa, v->a.len), 0, "connect: %s",
		     strerror(errno));
	return fd;
}

static int client(const struct pw_test_http *v)
{
	return client_buf(v, 0);
}

static void send_str(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
		cr_assert_gt(k, 0, "send: %s", strerror(errno));
		s += k;
		n -= (size_t)k;
	}
}

/* Read exactly @n bytes (fewer only at the end of the stream or a
 * reset). Return: the bytes read. */
static size_t read_n(int fd, char *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = recv(fd, p + got, n - got, 0);
		if (k <= 0) {
			cr_assert(k == 0 || errno == ECONNRESET, "recv: %s",
				  strerror(errno));
			break;
		}
		got += (size_t)k;
	}
	return got;
}

/* One response: its head (NUL-terminated) and status; *@len its
 * Content-Length (0 when absent). */
struct resp {
	char head[1024];
	int status;
	uint64_t len;
};

static void read_head(int fd, struct resp *r)
{
	size_t n = 0;
	const char *cl;

	/* A byte at a time: the body that follows stays in the socket. */
	while (n < sizeof(r->head) - 1) {
		cr_assert_eq(read_n(fd, r->head + n, 1), 1,
			     "the stream ended in a head");
		n++;
		r->head[n] = '\0';
		if (n >= 4 && !memcmp(r->head + n - 4, "\r\n\r\n", 4))
			break;
	}
	cr_assert_eq(sscanf(r->head, "HTTP/1.1 %d ", &r->status), 1, "%s",
		     r->head);
	cl = strstr(r->head, "Content-Length: ");
	r->len = cl ? strtoull(cl + 16, NULL, 10) : 0;
}

/* The value of header @name in @r's head, into @out. */
static const char *header(const struct resp *r, const char *name, char *out,
			  size_t cap)
{
	char line[64];
	const char *h;
	size_t n;

	snprintf(line, sizeof(line), "\r\n%s: ", name);
	h = strstr(r->head, line);
	cr_assert_not_null(h, "no %s in %s", name, r->head);
	h += strlen(line);
	n = (size_t)(strstr(h, "\r\n") - h);
	cr_assert_lt(n, cap);
	memcpy(out, h, n);
	out[n] = '\0';
	return out;
}

/* Read a response and expect @status and, with @body, its bytes. */
static void expect(int fd, int status, const char *body, size_t n)
{
	struct resp r;
	char *got;

	read_head(fd, &r);
	cr_assert_eq(r.status, status, "%s", r.head);
	if (!body)
		return;
	cr_assert_eq(r.len, n, "%s", r.head);
	got = malloc(n ? n : 1);
	cr_assert_eq(read_n(fd, got, n), n);
	cr_assert_eq(memcmp(got, body, n), 0, "the body differs");
	free(got);
}

/* GET @path on a new connection: the status (and the body read). */
static int get_status(struct pw_test_http *v, const char *path)
{
	char req[1200];
	struct resp r;
	char *skip;
	int fd = client(v);

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
	send_str(fd, req);
	read_head(fd, &r);
	skip = malloc(r.len + 1);
	cr_assert_eq(read_n(fd, skip, r.len), r.len);
	cr_assert_null(memmem(skip, r.len, "SECRET", 6),
		       "%s read the file outside the root", path);
	free(skip);
	close(fd);
	return r.status;
}

#define GET(p) "GET " p " HTTP/1.1\r\nHost: t\r\n\r\n"

/* ---- the path rules ------------------------------------------------------- */

Test(http_static, path_rules)
{
	static const struct {
		const char *target, *path;
		int ret;
	} cases[] = {
		{ "/", ".", 1 },
		{ "/a.html", "a.html", 6 },
		{ "/a/b.txt?x=1/../..", "a/b.txt", 7 },
		{ "/dir/", "dir/", 4 },
		{ "/%61%2e%68tml", "a.html", 6 },
		{ "/.well/x", ".well/x", 7 },
		{ "/a%20b", "a b", 3 },
		{ "/../x", NULL, -403 },
		{ "/a/../../x", NULL, -403 },
		{ "/%2e%2e/x", NULL, -403 },
		{ "/..%2fx", NULL, -403 },
		{ "/a%2f..%2f..%2fx", NULL, -403 },
		{ "/a%2Fb", NULL, -403 },
		{ "//etc/passwd", NULL, -403 },
		{ "/a//b", NULL, -403 },
		{ "/x%00.html", NULL, -403 },
		{ "/a\\..\\x", NULL, -403 },
		{ "/a%5c..%5cx", NULL, -403 },
		{ "/./x", NULL, -403 },
		{ "/a/..", NULL, -403 },
		{ "/a/.", NULL, -403 },
		{ "/%01", NULL, -403 },
		{ "/%7f", NULL, -403 },
		{ "/%", NULL, -400 },
		{ "/%4", NULL, -400 },
		{ "/%zz", NULL, -400 },
		{ "*", NULL, -400 },
		{ "http://h/a", NULL, -400 },
		{ "", NULL, -400 },
	};
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret =
			pw_http_static_path(cases[i].target, out, sizeof(out));

		cr_assert_eq(ret, cases[i].ret, "%s: %d", cases[i].target, ret);
		if (ret > 0)
			cr_assert_str_eq(out, cases[i].path);
	}
	cr_assert_eq(pw_http_static_path("/abcdefgh", out, 8), -414);
	cr_assert_eq(pw_http_static_path("/abcdefg", out, 9), 7);
	cr_assert_eq(pw_http_static_path(NULL, out, 8), -400);
}

Test(http_static, if_modified_since_dates)
{
	static const char h1[] = "GET / HTTP/1.1\r\nHost: t\r\n"
				 "If-Modified-Since: Sun, 06 Nov 1994 "
				 "08:49:37 GMT\r\n\r\n";
	static const char h2[] = "GET / HTTP/1.1\nif-modified-since:Thu, 01 "
				 "Jan 1970 00:00:00 GMT  \n\n";
	static const char h3[] = "GET / HTTP/1.1\r\nHost: t\r\n"
				 "If-Modified-Since: Sunday, 06-Nov-94 "
				 "08:49:37 GMT\r\n\r\n";
	static const char h4[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n"
				 "If-Modified-Since: Sun, 06 Nov 1994 "
				 "08:49:37 GMT\r\n\r\n";
	static const char h5[] = "GET / HTTP/1.1\r\nHost: t\r\n"
				 "If-Modified-Since: Sun, 06 Nox 1994 "
				 "08:49:37 GMT\r\n\r\n";

	cr_assert_eq(pw_http_static_ims(h1, strlen(h1)), 784111777);
	cr_assert_eq(pw_http_static_ims(h2, strlen(h2)), 0);
	cr_assert_eq(pw_http_static_ims(h3, strlen(h3)), -1); /* obsolete */
	cr_assert_eq(pw_http_static_ims(h4, strlen(h4)), -1); /* a body */
	cr_assert_eq(pw_http_static_ims(h5, strlen(h5)), -1);
	cr_assert_eq(pw_http_static_ims(NULL, 0), -1);
}

/* ---- bodies ---------------------------------------------------------------- */

/* 0 bytes, 4 KiB (in the output buffer), 20 KiB (reads after the head),
 * 1 MiB (spliced), byte for byte, each twice on one connection; HEAD
 * with the same Content-Length and no body (a GET right after it reads
 * exactly its own response). */
Test(http_static, bodies_byte_for_byte)
{
	static const struct {
		const char *name;
		size_t n;
	} f[] = { { "zero.txt", 0 },
		  { "four.bin", 4096 },
		  { "mid.bin", 20000 },
		  { "big.bin", 1 << 20 } };
	char *body[4];
	struct pw_test_http v;
	char req[256];
	struct resp r;

	tree_make();
	for (int i = 0; i < 4; i++)
		body[i] = make(f[i].name, f[i].n, (uint64_t)i + 1);
	srv_start(&v, NULL);
	int fd = client(&v);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 4; i++) {
			snprintf(req, sizeof(req),
				 "GET /%s HTTP/1.1\r\nHost: t\r\n\r\n",
				 f[i].name);
			send_str(fd, req);
			expect(fd, 200, body[i], f[i].n);
			snprintf(req, sizeof(req),
				 "HEAD /%s HTTP/1.1\r\nHost: t\r\n\r\n",
				 f[i].name);
			send_str(fd, req);
			read_head(fd, &r);
			cr_assert_eq(r.status, 200);
			cr_assert_eq(r.len, f[i].n);
		}
	send_str(fd, GET("/four.bin"));
	expect(fd, 200, body[1], 4096);
	close(fd);
	struct pw_http_static_stats st = files(&v);
	cr_assert_eq(st.files, 17);
	cr_assert_eq(st.file_bytes, 3 * 4096 + 2 * 20000 + 2 * (1 << 20));
	cr_assert_eq(st.spliced, 2);
	cr_assert_eq(st.copied, 2);
	pw_test_http_stop(&v);
	for (int i = 0; i < 4; i++)
		free(body[i]);
	pw_test_rm_tree(top, 2);
}

/* Last-Modified is the file's mtime; If-Modified-Since at it (or later)
 * gets 304 without a body, earlier gets 200; Content-Type by extension. */
Test(http_static, last_modified_and_if_modified_since)
{
	struct pw_test_http v;
	struct resp r;
	struct stat sb;
	char p[PATH_MAX], want[PW_HTTP_DATE_LEN + 1], got[128], req[512];
	char *b;

	tree_make();
	b = make("page.html", 100, 7);
	snprintf(p, sizeof(p), "%s/page.html", root);
	struct timespec ts[2] = { { 1600000000, 0 }, { 1600000000, 0 } };
	cr_assert_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
	cr_assert_eq(stat(p, &sb), 0);
	pw_http_date(want, sb.st_mtime);
	srv_start(&v, NULL);
	int fd = client(&v);
	send_str(fd, GET("/page.html"));
	read_head(fd, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(header(&r, "Last-Modified", got, sizeof(got)), want);
	cr_assert_str_eq(header(&r, "Content-Type", got, sizeof(got)),
			 "text/html");
	cr_assert_eq(read_n(fd, got, 100), 100);
	cr_assert_eq(memcmp(got, b, 100), 0);
	/* Equal, later, earlier. */
	snprintf(req, sizeof(req),
		 "GET /page.html HTTP/1.1\r\nHost: t\r\n"
		 "If-Modified-Since: %s\r\n\r\n",
		 want);
	send_str(fd, req);
	read_head(fd, &r);
	cr_assert_eq(r.status, 304, "%s", r.head);
	cr_assert_null(strstr(r.head, "Content-Length"));
	send_str(fd, "GET /page.html HTTP/1.1\r\nHost: t\r\nIf-Modified-"
		     "Since: Sat, 01 Jan 2050 00:00:00 GMT\r\n\r\n");
	read_head(fd, &r);
	cr_assert_eq(r.status, 304);
	send_str(fd, "GET /page.html HTTP/1.1\r\nHost: t\r\nIf-Modified-"
		     "Since: Sun, 13 Sep 2020 12:26:39 GMT\r\n\r\n");
	expect(fd, 200, b, 100); /* one second before the mtime */
	close(fd);
	cr_assert_eq(files(&v).not_modified, 2);
	pw_test_http_stop(&v);
	free(b);
	pw_test_rm_tree(top, 2);
}

/* Other methods get 405 with Allow; the connection stays; a HEAD of a
 * missing file gets the 404's head alone. */
Test(http_static, other_methods_405)
{
	struct pw_test_http v;
	struct resp r;
	char got[64];

	tree_make();
	free(make("a.txt", 5, 1));
	srv_start(&v, NULL);
	int fd = client(&v);
	send_str(fd, "POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: "
		     "3\r\n\r\nabc");
	read_head(fd, &r);
	cr_assert_eq(r.status, 405);
	cr_assert_str_eq(header(&r, "Allow", got, sizeof(got)), "GET, HEAD");
	cr_assert_eq(read_n(fd, got, r.len), r.len);
	/* HEAD of a missing file: the 404's head, no body. */
	send_str(fd, "HEAD /nope HTTP/1.1\r\nHost: t\r\n\r\n");
	read_head(fd, &r);
	cr_assert_eq(r.status, 404);
	cr_assert_eq(r.len, 9);
	send_str(fd, GET("/a.txt"));
	read_head(fd, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(header(&r, "Content-Type", got, sizeof(got)),
			 "text/plain");
	close(fd);
	pw_test_http_stop(&v);
	pw_test_rm_tree(top, 2);
}

/* ---- paths ------------------------------------------------------------------ */

/* Every traversal attempt is refused and the file beside the root is
 * never read; symlinks are refused, out of the root or in it; a
 * directory serves its index.html, else 404. */
Test(http_static, traversal_refused)
{
	static const char *const refused[] = {
		"/../x",
		"/a/../../x",
		"/%2e%2e/x",
		"/..%2fx",
		"/a%2f..%2f..%2fx",
		"//etc/passwd",
		"/x%00.html",
		"/out",
		"/in",
		"/sub/..%2f..%2fx",
		"/%2e%2e%2fx",
	};
	char p[PATH_MAX], t[PATH_MAX];
	struct pw_test_http v;

	tree_make();
	free(make("a.txt", 5, 1));
	snprintf(p, sizeof(p), "%s/sub", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	free(make("sub/index.html", 9, 2));
	snprintf(p, sizeof(p), "%s/empty", root);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/out", root);
	snprintf(t, sizeof(t), "%s/x", top);
	cr_assert_eq(symlink(t, p), 0);
	snprintf(p, sizeof(p), "%s/in", root);
	cr_assert_eq(symlink("a.txt", p), 0);
	srv_start(&v, NULL);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		cr_assert_eq(get_status(&v, refused[i]), 403, "%s", refused[i]);
	cr_assert_eq(get_status(&v, "/a.txt"), 200);
	cr_assert_eq(get_status(&v, "/sub/"), 200);
	int sfd = client(&v);
	struct resp sr;
	char ct[64];
	send_str(sfd, GET("/sub/"));
	read_head(sfd, &sr);
	cr_assert_str_eq(header(&sr, "Content-Type", ct, sizeof(ct)),
			 "text/html");
	close(sfd);
	cr_assert_eq(get_status(&v, "/sub"), 200);
	cr_assert_eq(get_status(&v, "/empty/"), 404);
	cr_assert_eq(get_status(&v, "/nothing"), 404);
	cr_assert_eq(get_status(&v, "/a.txt/"), 404);
	cr_assert_eq(files(&v).status[2], sizeof(refused) / sizeof(refused[0]));
	/* A target that is no path: 400, and the connection closes. */
	int fd = client(&v);
	send_str(fd, "GET * HTTP/1.1\r\nHost: t\r\n\r\n" GET("/a.txt"));
	expect(fd, 400, NULL, 0);
	char c;
	ssize_t k;
	struct resp r;
	(void)r;
	do
		k = recv(fd, &c, 1, 0);
	while (k > 0);
	cr_assert_leq(k, 0);
	close(fd);
	pw_test_http_stop(&v);
	pw_test_rm_tree(top, 2);
}

/* ---- connections ------------------------------------------------------------ */

/* Pipelined GETs of every size and status in one send: every answer in
 * order, byte for byte. */
Test(http_static, pipelined)
{
	struct pw_test_http v;
	char *small = NULL, *big = NULL, *mid = NULL;
	char *all = malloc(64 * 64);

	tree_make();
	small = make("s.bin", 4096, 3);
	mid = make("m.bin", 70000, 4);
	big = make("b.bin", 1 << 20, 5);
	all[0] = '\0';
	for (int i = 0; i < 8; i++) {
		strcat(all, GET("/s.bin"));
		strcat(all, GET("/b.bin"));
		strcat(all, GET("/nope"));
		strcat(all, GET("/m.bin"));
		strcat(all, "HEAD /b.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	}
	srv_start(&v, NULL);
	int fd = client(&v);
	send_str(fd, all);
	for (int i = 0; i < 8; i++) {
		struct resp r;

		expect(fd, 200, small, 4096);
		expect(fd, 200, big, 1 << 20);
		expect(fd, 404, "Not Found", 9);
		expect(fd, 200, mid, 70000);
		read_head(fd, &r);
		cr_assert_eq(r.status, 200);
		cr_assert_eq(r.len, 1u << 20);
	}
	send_str(fd, GET("/s.bin"));
	expect(fd, 200, small, 4096);
	close(fd);
	pw_test_http_stop(&v);
	free(all);
	free(small);
	free(mid);
	free(big);
	pw_test_rm_tree(top, 2);
}

/* A file unlinked while it is sent is sent whole (the open descriptor
 * keeps it); one truncated while it is sent ends the connection before
 * its Content-Length, and the server serves the next client. */
static void changed_under_send(bool truncate_it)
{
	enum { N = 8 << 20 };
	char p[PATH_MAX];
	struct pw_test_http v;
	struct resp r;
	char *b, *got = malloc(N);

	tree_make();
	b = make("f.bin", N, 9);
	free(make("a.txt", 5, 1));
	srv_start(&v, NULL);
	/* A small window: the send waits on the client after a few
	 * hundred KiB, far from the file's end. */
	int fd = client_buf(&v, 32 << 10);
	send_str(fd, GET("/f.bin"));
	read_head(fd, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, (uint64_t)N);
	cr_assert_eq(read_n(fd, got, 1000), 1000);
	snprintf(p, sizeof(p), "%s/f.bin", root);
	if (truncate_it)
		cr_assert_eq(truncate(p, 0), 0);
	else
		cr_assert_eq(unlink(p), 0);
	size_t n = 1000 + read_n(fd, got + 1000, N - 1000);
	if (truncate_it) {
		cr_assert_lt(n, (size_t)N, "a truncated file sent whole");
		cr_assert_eq(memcmp(got, b, 1000), 0);
		PW_TEST_WAIT_UNTIL(files(&v).truncated == 1, PW_TEST_WAIT_SECS,
				   "no send was cut");
	} else {
		cr_assert_eq(n, (size_t)N);
		cr_assert_eq(memcmp(got, b, N), 0);
		send_str(fd, GET("/a.txt"));
		expect(fd, 200, NULL, 0);
	}
	close(fd);
	cr_assert_eq(get_status(&v, "/a.txt"), 200);
	pw_test_http_stop(&v);
	free(b);
	free(got);
	pw_test_rm_tree(top, 2);
}

Test(http_static, unlinked_while_sent_is_whole)
{
	changed_under_send(false);
}

Test(http_static, truncated_while_sent_ends_the_connection)
{
	changed_under_send(true);
}

/* A client that never reads a large file: the splice into its socket
 * waits until the send timeout resets the connection; the server serves
 * on. */
Test(http_static, send_timeout_cuts_a_client_that_never_reads)
{
	struct pw_http_opts o = { .send_timeout_ns = 5 * PW_NSEC_PER_SEC,
				  .sndbuf = 16 << 10 };
	struct pw_test_http v;
	struct resp r;

	tree_make();
	free(make("f.bin", 4 << 20, 9));
	free(make("a.txt", 5, 1));
	srv_start_flags(&v, &o, PW_CONFIG_PAUSED_CLOCK);
	int fd = client_buf(&v, 16 << 10);
	send_str(fd, GET("/f.bin"));
	read_head(fd, &r);
	cr_assert_eq(r.status, 200);
	/* The splice into the socket may start after a first advance (the
	 * splice from the file comes first): move time a second at a step
	 * until the cut, which comes 5 s of virtual time after the splice
	 * into the socket started. */
	struct pw_http_stats st;
	PW_TEST_WAIT_UNTIL((pw_test_advance(v.rt, PW_NSEC_PER_SEC),
			    !pw_http_server_stats(v.s, 0, &st) &&
				    st.send_timeouts == 1),
			   PW_TEST_WAIT_SECS, "no send timeout");
	char buf[65536];
	ssize_t k;
	do
		k = recv(fd, buf, sizeof(buf), 0);
	while (k > 0);
	cr_assert(k == 0 || errno == ECONNRESET);
	close(fd);
	cr_assert_eq(get_status(&v, "/a.txt"), 200);
	pw_test_http_stop(&v);
	pw_test_rm_tree(top, 2);
}

Test(http_static, bad_root)
{
	struct pw_runtime *rt;
	struct pw_http_server *s;
	struct pw_net_addr any;
	struct pw_http_opts o = { .root = "/nonexistent/pinwheel-root" };

	rt = pw_test_runtime(1);
	cr_assert_eq(pw_net_addr_parse(&any, "127.0.0.1:0"), 0);
	cr_assert_eq(pw_http_server_start(&s, rt, &any, &o), -ENOENT);
	o.root = "/dev/null";
	cr_assert_eq(pw_http_server_start(&s, rt, &any, &o), -ENOTDIR);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* The command: --root with --body, or an empty root, exits 2 with a
 * message; a root that is no directory exits 1 at start; a good root
 * serves a file and SIGTERM stops it with status 0. */
Test(http_static, command_flags)
{
	char *both[] = { "pinwheel",	"http",	  "--listen",
			 "127.0.0.1:0", "--root", "/",
			 "--body",	"x",	  NULL };
	char *empty[] = { "pinwheel", "http", "--listen", "127.0.0.1:0",
			  "--root",   "",     NULL };
	char *nodir[] = { "pinwheel",	 "http",   "--listen",
			  "127.0.0.1:0", "--root", "/dev/null",
			  "--shards",	 "1",	   NULL };
	char out[4096];
	int fd;
	pid_t pid;

	pid = pw_test_cmd_start(both, &fd);
	cr_assert_eq(pw_test_cmd_wait(pid, fd, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--root and --body"), "%s", out);
	pid = pw_test_cmd_start(empty, &fd);
	cr_assert_eq(pw_test_cmd_wait(pid, fd, out, sizeof(out)), 2, "%s", out);
	pid = pw_test_cmd_start(nodir, &fd);
	cr_assert_eq(pw_test_cmd_wait(pid, fd, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "Not a directory"), "%s", out);

	struct pw_test_http v;
	size_t len = 0;
	tree_make();
	free(make("a.txt", 5, 1));
	char *serve[] = { "pinwheel",	 "http",   "--listen",
			  "127.0.0.1:0", "--root", root,
			  "--shards",	 "1",	   NULL };
	pid = pw_test_cmd_start(serve, &fd);
	pw_test_banner_addr(fd, out, sizeof(out), &len, &v.a);
	cr_assert_eq(get_status(&v, "/a.txt"), 200);
	cr_assert_eq(get_status(&v, "/../x"), 403);
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert_eq(pw_test_cmd_wait(pid, fd, out, sizeof(out)), 0, "%s", out);
	pw_test_rm_tree(top, 2);
}
