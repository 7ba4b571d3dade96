/* SPDX-License-Identifier: MIT */
/*
 * http_static.c - the files of `pinwheel http --root DIR`: a request's
 * path resolved beneath the root, the file opened and described, the
 * response's head, and its body sent through the ring (see
 * http_static.h; the connection around it is http.c's).
 *
 * One record (struct pw_http_file) per response that reads a file,
 * taken from the shard's pool at the request and given back at its end,
 * so an idle connection holds none. It carries the one file call in
 * flight (open, read or splice), a send of its own for bodies sent by
 * reads, the statx record and the path the kernel reads.
 *
 * Opening: openat2() through the ring, RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS relative to the root, with O_NONBLOCK so that a
 * FIFO placed in the root never blocks the open (regular files ignore
 * the flag, but for a read through the ring that finds the pages out of
 * the page cache: that read fails with -EAGAIN, and is made again with
 * the flag cleared). The file is described by a statx(2) on the new
 * descriptor, made directly: the ring would run it in a worker thread,
 * a far dearer trip for a call that only reads the inode.
 *
 * Splicing: a pipe from the shard's pool (PIPE_SIZE bytes, at most
 * PIPES_MAX in use per shard; beyond, bodies go by reads) takes up to a
 * pipe of the file, then the whole pipe goes to the socket (the socket
 * blocks, in the kernel's worker, until it took all of it); a pipe that
 * may hold bytes after an error is closed, never pooled. The kernel
 * looks the descriptors of a splice up only when its worker starts it,
 * so none is closed while a call is in flight: the normal end waits for
 * the completion, a dropped connection cancels synchronously.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/file.h"
#include "pinwheel/net.h"
#include "apps/http_static.h"

#define SPLICE_MIN (64u << 10)	 /* smaller bodies go by reads */
#define PIPE_SIZE  (1024u << 10) /* bytes a pool's pipe holds (asked) */
#define PIPES_MAX  64		 /* pipes in use per shard at most */
#define PIPE_POOL  16		 /* idle pipes kept per shard */
#define FILE_POOL  64		 /* idle records kept per shard */
#define RESOLVE	   (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)

static const int statuses[PW_HTTP_STATIC_NSTATUS] = PW_HTTP_STATIC_STATUSES;

struct static_shard {
	/* Written only by this shard's thread, with a relaxed load and
	 * store; read by pw_http_static_stats(). */
	_Alignas(64) _Atomic uint64_t files, file_bytes, not_modified;
	_Atomic uint64_t spliced, copied, truncated;
	_Atomic uint64_t status[PW_HTTP_STATIC_NSTATUS];
	/* This shard's thread only: */
	struct pw_http_file *pool; /* idle records */
	unsigned npool;
	/* Records of connections dropped with a call in flight: its
	 * completion still writes into them, so they are freed with the
	 * server, after the runtime. */
	struct pw_http_file *orphans;
	int pipes[PIPE_POOL][2]; /* idle pipes, empty */
	unsigned npipes;
	/* Pipes lent to responses: taken and given back on the thread a
	 * response's task runs on, so under the stealing scheduler (a task
	 * moving between two polls) a shard's count is approximate, never
	 * below 0: PIPES_MAX bounds it loosely there. */
	unsigned pipes_out;
};

struct pw_http_static {
	int root; /* the root directory (O_PATH) */
	unsigned nshards;
	struct static_shard *sh;
};

/* Steps of a response. */
enum {
	F_OPEN,	 /* the path opens */
	F_INDEX, /* a directory's index.html opens */
	F_HEAD,	 /* the response's head is written */
	F_READ,	 /* a body read into the output buffer */
	F_DONE,	 /* the response is in the output buffer */
	B_FILL,	 /* splice: file into the pipe */
	B_DRAIN, /* splice: the pipe into the socket */
	B_READ,	 /* copy: a read into the buffer */
	B_SEND,	 /* copy: the buffer to the socket */
};

struct pw_http_file {
	struct pw_http_file *next; /* in a pool */
	struct pw_http_static *st;
	struct pw_file_req r; /* the file call in flight */
	struct pw_send tx;    /* the copy's sends */
	struct statx sx;
	int sock, fd, pipe[2];
	uint8_t step;
	bool head, keep, closes, body_left, nonblock;
	bool index; /* the file is a directory's index.html */
	int status;
	int64_t ims;	 /* If-Modified-Since, or -1 */
	uint64_t size;	 /* the body's Content-Length */
	uint64_t off;	 /* bytes of the file read (or spliced in) */
	uint64_t sent;	 /* bytes of the body sent */
	uint32_t chunk;	 /* B_DRAIN: bytes in the pipe; B_SEND: to send */
	uint32_t at;	 /* F_READ: where the body goes in the buffer */
	uint32_t start;	 /* F_READ: the buffer's length before the head */
	pw_time_t until; /* the deadline of the call in flight */
	uint64_t file_ns, send_ns;
	char path[PW_HTTP_TARGET_MAX];
};

static void bump(_Atomic uint64_t *c, uint64_t n)
{
	/* Relaxed load and store: only the owning shard writes @c; pairs
	 * with the relaxed loads in pw_http_static_stats(). */
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* The record of the shard running the caller, or NULL off a shard. */
static struct static_shard *here(struct pw_http_static *st)
{
	int id = pw_shard_id();

	return id >= 0 && (unsigned)id < st->nshards ? &st->sh[id] : NULL;
}

/* ---- the server's record ------------------------------------------------ */

int pw_http_static_create(struct pw_http_static **sp, const char *root,
			  unsigned nshards)
{
	struct pw_http_static *st;
	size_t bytes = nshards * sizeof(struct static_shard);

	if (!sp || !root || !nshards)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->sh = aligned_alloc(_Alignof(struct static_shard),
			       (bytes + 63) & ~(size_t)63);
	if (!st->sh) {
		free(st);
		return -ENOMEM;
	}
	memset(st->sh, 0, bytes);
	st->nshards = nshards;
	st->root = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (st->root < 0) {
		int err = -errno;

		free(st->sh);
		free(st);
		return err;
	}
	*sp = st;
	return 0;
}

void pw_http_static_destroy(struct pw_http_static *st)
{
	if (!st)
		return;
	for (unsigned i = 0; i < st->nshards; i++) {
		struct static_shard *h = &st->sh[i];

		while (h->pool) {
			struct pw_http_file *f = h->pool;

			h->pool = f->next;
			free(f);
		}
		while (h->orphans) {
			struct pw_http_file *f = h->orphans;

			h->orphans = f->next;
			free(f);
		}
		for (unsigned k = 0; k < h->npipes; k++) {
			close(h->pipes[k][0]);
			close(h->pipes[k][1]);
		}
	}
	close(st->root);
	free(st->sh);
	free(st);
}

int pw_http_static_stats(const struct pw_http_static *st, unsigned shard,
			 struct pw_http_static_stats *out)
{
	const struct static_shard *h;

	if (!st || !out)
		return -EINVAL;
	if (shard >= st->nshards)
		return -ENODEV;
	h = &st->sh[shard];
	/* Relaxed: pair with the stores in bump(); counters only. */
	out->files = atomic_load_explicit(&h->files, memory_order_relaxed);
	out->file_bytes =
		atomic_load_explicit(&h->file_bytes, memory_order_relaxed);
	out->not_modified =
		atomic_load_explicit(&h->not_modified, memory_order_relaxed);
	out->spliced = atomic_load_explicit(&h->spliced, memory_order_relaxed);
	out->copied = atomic_load_explicit(&h->copied, memory_order_relaxed);
	out->truncated =
		atomic_load_explicit(&h->truncated, memory_order_relaxed);
	for (unsigned i = 0; i < PW_HTTP_STATIC_NSTATUS; i++)
		out->status[i] = atomic_load_explicit(&h->status[i],
						      memory_order_relaxed);
	return 0;
}

/* ---- paths ---------------------------------------------------------------- */

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Whether the segment @s[0..@n) may be opened: not "", "." or "..". */
static bool segment_ok(const char *s, size_t n)
{
	return n && !(n == 1 && s[0] == '.') &&
	       !(n == 2 && s[0] == '.' && s[1] == '.');
}

int pw_http_static_path(const char *target, char *out, size_t cap)
{
	size_t n = 0, seg = 0;
	const char *t = target;

	if (!target || !out || !cap)
		return -400;
	if (*t != '/')
		return -400; /* "*", absolute-form: not a path */
	for (t++; *t && *t != '?' && *t != '#'; t++) {
		unsigned char c = (unsigned char)*t;

		if (c == '%') {
			int hi = hex(t[1]), lo = hi < 0 ? -1 : hex(t[2]);

			if (lo < 0)
				return -400;
			c = (unsigned char)(hi << 4 | lo);
			t += 2;
			if (c == '/')
				return -403; /* an encoded slash */
		} else if (c == '/') {
			if (!segment_ok(out + seg, n - seg))
				return -403;
			seg = n + 1;
		}
		if (c < 0x20 || c == 0x7f || c == '\\')
			return -403; /* NUL, controls, backslashes */
		if (n + 2 > cap)
			return -414;
		out[n++] = (char)c;
	}
	/* The last segment: empty only after a trailing slash. */
	if (n > seg && !segment_ok(out + seg, n - seg))
		return -403;
	if (!n)
		out[n++] = '.';
	out[n] = '\0';
	return (int)n;
}

/* ---- the request head ----------------------------------------------------- */

/* An IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", at @v (@n bytes):
 * seconds since the epoch, or -1. */
static int64_t imf_parse(const char *v, size_t n)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	struct tm tm = { 0 };
	int num[6];
	/* Offsets of the six numbers and their widths. */
	static const unsigned char at[6] = { 5, 12, 17, 20, 23, 26 };
	static const unsigned char w[6] = { 2, 4, 2, 2, 2, 0 };
	const char *m;

	if (n != PW_HTTP_DATE_LEN || v[3] != ',' || v[4] != ' ' ||
	    v[7] != ' ' || v[11] != ' ' || v[16] != ' ' || v[19] != ':' ||
	    v[22] != ':' || memcmp(v + 25, " GMT", 4))
		return -1;
	for (unsigned i = 0; i < 5; i++) {
		num[i] = 0;
		for (unsigned k = 0; k < w[i]; k++) {
			char c = v[at[i] + k];

			if (c < '0' || c > '9')
				return -1;
			num[i] = num[i] * 10 + (c - '0');
		}
	}
	m = strstr(months, (char[4]){ v[8], v[9], v[10], 0 });
	if (!m || (m - months) % 3)
		return -1;
	tm.tm_mday = num[0];
	tm.tm_mon = (int)(m - months) / 3;
	tm.tm_year = num[1] - 1900;
	tm.tm_hour = num[2];
	tm.tm_min = num[3];
	tm.tm_sec = num[4];
	if (tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
	    tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	return (int64_t)timegm(&tm);
}

int64_t pw_http_static_ims(const char *head, size_t len)
{
	static const char name[] = "if-modified-since:";
	const char *p = head, *end = head + len;
	const size_t nl = sizeof(name) - 1;

	if (!head)
		return -1;
	/* Skip the request line, then look at each field line. */
	while (p < end) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));
		const char *v, *e;

		if (!lf)
			break;
		p = lf + 1;
		if (p >= end || *p == '\r' || *p == '\n')
			break; /* the blank line */
		if ((size_t)(end - p) <= nl || strncasecmp(p, name, nl))
			continue;
		v = p + nl;
		e = memchr(v, '\n', (size_t)(end - v));
		if (!e)
			break;
		while (v < e && (*v == ' ' || *v == '\t'))
			v++;
		while (e > v &&
		       (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		return imf_parse(v, (size_t)(e - v));
	}
	return -1;
}

/* ---- a response ----------------------------------------------------------- */

struct pw_http_file *pw_http_static_begin(struct pw_http_static *st, int sock,
					  const struct pw_http_req *req,
					  const char *head, size_t head_len,
					  bool keep, uint64_t file_ns,
					  uint64_t send_ns)
{
	struct static_shard *h = here(st);
	struct pw_http_file *f = h ? h->pool : NULL;
	bool get = req->method_len == 3 && !memcmp(req->method, "GET", 3);
	bool is_head = req->method_len == 4 && !memcmp(req->method, "HEAD", 4);
	int n;

	if (f) {
		h->pool = f->next;
		h->npool--;
	} else if (!(f = malloc(sizeof(*f)))) {
		return NULL;
	}
	f->st = st;
	f->sock = sock;
	f->fd = f->pipe[0] = f->pipe[1] = -1;
	f->head = is_head;
	f->keep = keep;
	f->closes = !keep;
	f->body_left = false;
	f->index = false;
	f->nonblock = true;
	f->size = f->off = f->sent = 0;
	f->chunk = f->at = f->start = 0;
	f->file_ns = file_ns;
	f->send_ns = send_ns;
	f->ims = -1;
	f->status = 0;
	f->step = F_HEAD;
	pw_send_init(&f->tx, sock);
	memset(&f->r, 0, sizeof(f->r)); /* idle: never in flight */
	if (!get && !is_head) {
		f->status = 405;
		return f;
	}
	n = pw_http_static_path(req->target, f->path, sizeof(f->path));
	if (n < 0) {
		f->status = n == -414 ? 404 : -n;
		f->closes |= f->status == 400;
		return f;
	}
	f->ims = pw_http_static_ims(head, head_len);
	f->step = F_OPEN;
	f->until = pw_time_now() + file_ns;
	pw_file_openat2_init(&f->r, st->root, f->path,
			     O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, RESOLVE);
	return f;
}

/* The status of a failed open. */
static int open_status(int err)
{
	switch (err) {
	case -ENOENT:
	case -ENOTDIR:
	case -ENAMETOOLONG:
		return 404;
	case -ELOOP: /* a symlink */
	case -EXDEV: /* leaving the root */
	case -EACCES:
	case -EPERM:
	case -ENXIO:  /* a socket */
	case -EAGAIN: /* a symlink, with RESOLVE_CACHED */
		return 403;
	}
	return 500;
}

/* The Content-Type of @path by its extension. */
static const char *content_type(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{ "html", "text/html" },	{ "htm", "text/html" },
		{ "css", "text/css" },		{ "js", "text/javascript" },
		{ "json", "application/json" }, { "txt", "text/plain" },
		{ "png", "image/png" },		{ "jpg", "image/jpeg" },
		{ "jpeg", "image/jpeg" },	{ "svg", "image/svg+xml" },
		{ "wasm", "application/wasm" },
	};
	const char *dot = strrchr(path, '.');

	if (dot && !strchr(dot, '/'))
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (!strcasecmp(dot + 1, types[i].ext))
				return types[i].type;
	return "application/octet-stream";
}

/* Close the file's descriptor (no call of it in flight). */
static void file_close(struct pw_http_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/*
 * The descriptor just opened: a directory leads to its index.html, a
 * regular file is the answer (size and mtime from statx), anything else
 * is refused. Return: true when another open was started (F_INDEX).
 */
static bool file_opened(struct pw_http_file *f, int32_t fd)
{
	bool dir;

	if (fd < 0) {
		f->status = open_status(fd);
		return false;
	}
	f->fd = fd;
	f->index = f->step == F_INDEX;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE | STATX_MTIME,
		  &f->sx)) {
		f->status = 500;
		file_close(f);
		return false;
	}
	dir = S_ISDIR(f->sx.stx_mode);
	if (dir && f->step == F_OPEN) {
		f->step = F_INDEX;
		f->until = pw_time_now() + f->file_ns;
		pw_file_openat2_init(&f->r, fd, "index.html",
				     O_RDONLY | O_NONBLOCK | O_NOCTTY, 0,
				     RESOLVE);
		return true;
	}
	if (!S_ISREG(f->sx.stx_mode)) {
		f->status = dir ? 404 : 403;
		file_close(f);
		return false;
	}
	f->size = f->sx.stx_size;
	f->status = 200;
	if (f->ims >= 0 && f->ims >= f->sx.stx_mtime.tv_sec)
		f->status = 304;
	if (f->status == 304 || f->head)
		file_close(f);
	return false;
}

/* The reason phrase of a status this file answers. */
static const char *reason(int status)
{
	switch (status) {
	case 304:
		return "Not Modified";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 500:
		return "Internal Server Error";
	}
	return pw_http_reason(status);
}

/* Append the head of @f's response (body @len bytes) to @out; 0 when
 * it does not fit (never with PW_HTTP_CANNED_MAX free). */
static uint32_t head_build(struct pw_http_file *f, char *out, size_t room,
			   const char *date, uint64_t len)
{
	char lm[PW_HTTP_DATE_LEN + 1];
	const char *conn = f->closes ? "close" : "keep-alive";
	int n;

	if (f->status == 304) {
		pw_http_date(lm, (time_t)f->sx.stx_mtime.tv_sec);
		n = snprintf(out, room,
			     "HTTP/1.1 304 Not Modified\r\nServer: pinwheel\r\n"
			     "Date: %s\r\nLast-Modified: %s\r\n"
			     "Connection: %s\r\n\r\n",
			     date, lm, conn);
	} else if (f->status == 200) {
		pw_http_date(lm, (time_t)f->sx.stx_mtime.tv_sec);
		n = snprintf(out, room,
			     "HTTP/1.1 200 OK\r\nServer: pinwheel\r\n"
			     "Date: %s\r\nContent-Type: %s\r\n"
			     "Content-Length: %llu\r\nLast-Modified: %s\r\n"
			     "Connection: %s\r\n\r\n",
			     date,
			     f->index ? "text/html" : content_type(f->path),
			     (unsigned long long)len, lm, conn);
	} else {
		n = snprintf(out, room,
			     "HTTP/1.1 %d %s\r\nServer: pinwheel\r\n"
			     "Date: %s\r\nContent-Type: text/plain\r\n"
			     "Content-Length: %llu\r\n%sConnection: %s\r\n\r\n",
			     f->status, reason(f->status), date,
			     (unsigned long long)len,
			     f->status == 405 ? "Allow: GET, HEAD\r\n" : "",
			     conn);
	}
	return n > 0 && (size_t)n < room ? (uint32_t)n : 0;
}

/* Count @f's answer in the calling shard's record. */
static void count(struct pw_http_file *f)
{
	struct static_shard *h = here(f->st);

	if (!h)
		return;
	if (f->status == 200) {
		bump(&h->files, 1);
		return;
	}
	if (f->status == 304)
		bump(&h->not_modified, 1);
	for (unsigned i = 0; i < PW_HTTP_STATIC_NSTATUS; i++)
		if (statuses[i] == f->status)
			bump(&h->status[i], 1);
}

/*
 * Write the response into @out: an error with its reason as body, a 304
 * or HEAD alone, a 200 with its body when it fits (a read follows:
 * F_READ), else the head alone with the body left for
 * pw_http_static_body_poll().
 */
static void respond(struct pw_http_file *f, char *out, uint32_t *len,
		    uint32_t cap, const char *date)
{
	uint32_t n, room = cap - *len;
	const char *r;

	f->step = F_DONE;
	if (f->status != 200 && f->status != 304) {
		r = reason(f->status);
		n = head_build(f, out + *len, room, date, strlen(r));
		if (n && f->head) {
			*len += n; /* HEAD: the same head, no body */
		} else if (n && room - n > strlen(r)) {
			memcpy(out + *len + n, r, strlen(r));
			*len += n + (uint32_t)strlen(r);
		}
		return;
	}
	n = head_build(f, out + *len, room, date, f->size);
	f->start = *len;
	*len += n;
	if (f->status == 304 || f->head || !f->size || !n)
		return;
	if (f->size <= cap - *len) {
		f->step = F_READ;
		f->at = *len;
		f->until = pw_time_now() + f->file_ns;
		pw_file_read_init(&f->r, f->fd, out + f->at, (size_t)f->size,
				  0);
		return;
	}
	f->body_left = true;
}

/* The small body's read ended with @res: the response is whole, or it
 * is taken back (the file got shorter: *@status 0, the connection
 * closes). Return: true when the read was made again (-EAGAIN). */
static bool read_done(struct pw_http_file *f, int32_t res, char *out,
		      uint32_t *len, int *status)
{
	struct static_shard *h = here(f->st);

	if (res == -EAGAIN && f->nonblock) {
		/* Out of the page cache: read again, waiting. */
		f->nonblock = false;
		(void)fcntl(f->fd, F_SETFL, O_RDONLY);
		f->until = pw_time_now() + f->file_ns;
		pw_file_read_init(&f->r, f->fd, out + f->at, (size_t)f->size,
				  0);
		return true;
	}
	f->step = F_DONE;
	if (res >= 0 && (uint64_t)res == f->size) {
		*len = f->at + (uint32_t)f->size;
		if (h)
			bump(&h->file_bytes, f->size);
		return false;
	}
	/* Shorter than its Content-Length: take the head back, answer
	 * nothing, and close. */
	if (h)
		bump(&h->truncated, 1);
	*len = f->start;
	f->closes = true;
	f->status = 0;
	*status = 0;
	return false;
}

enum pw_poll pw_http_static_poll(struct pw_cx *cx, struct pw_http_file *f,
				 char *out, uint32_t *len, uint32_t cap,
				 const char *date, int *status)
{
	int32_t res;

	for (;;) {
		switch (f->step) {
		case F_OPEN:
		case F_INDEX:
			if (pw_file_poll(cx, &f->r, f->until, &res) ==
			    PW_PENDING)
				return PW_PENDING;
			if (f->step == F_INDEX)
				file_close(f); /* the directory */
			if (!file_opened(f, res))
				f->step = F_HEAD;
			break;
		case F_HEAD:
			respond(f, out, len, cap, date);
			break;
		case F_READ:
			if (pw_file_poll(cx, &f->r, f->until, &res) ==
			    PW_PENDING)
				return PW_PENDING;
			if (read_done(f, res, out, len, status))
				break;
			if (!f->status) {
				file_close(f);
				return PW_READY;
			}
			break;
		default: /* F_DONE */
			if (!f->body_left)
				file_close(f);
			count(f);
			*status = f->status;
			return PW_READY;
		}
	}
}

bool pw_http_static_body_left(const struct pw_http_file *f)
{
	return f && f->body_left;
}

bool pw_http_static_closes(const struct pw_http_file *f)
{
	return f && f->closes;
}

/* ---- the body ------------------------------------------------------------- */

/* A pipe of the calling shard's pool into f->pipe, or a new one; false
 * when PIPES_MAX are lent or no pipe can be made. */
static bool pipe_take(struct pw_http_file *f)
{
	struct static_shard *h = here(f->st);

	if (!h || h->pipes_out >= PIPES_MAX)
		return false;
	if (h->npipes) {
		h->npipes--;
		f->pipe[0] = h->pipes[h->npipes][0];
		f->pipe[1] = h->pipes[h->npipes][1];
	} else {
		if (pipe2(f->pipe, O_CLOEXEC))
			return false;
		/* Bigger pipes, fewer trips; the default when refused. */
		(void)fcntl(f->pipe[1], F_SETPIPE_SZ, (int)PIPE_SIZE);
	}
	h->pipes_out++;
	return true;
}

/* Give f->pipe back: to the pool when @empty, else closed. No call may
 * be in flight on it. */
static void pipe_give(struct pw_http_file *f, bool empty)
{
	struct static_shard *h = here(f->st);

	if (f->pipe[0] < 0)
		return;
	if (h && h->pipes_out)
		h->pipes_out--;
	if (h && empty && h->npipes < PIPE_POOL) {
		h->pipes[h->npipes][0] = f->pipe[0];
		h->pipes[h->npipes][1] = f->pipe[1];
		h->npipes++;
	} else {
		close(f->pipe[0]);
		close(f->pipe[1]);
	}
	f->pipe[0] = f->pipe[1] = -1;
}

/* The deadline of a send starting now. */
static pw_time_t send_deadline(const struct pw_http_file *f)
{
	return f->send_ns ? pw_time_now() + f->send_ns : PW_TIME_NEVER;
}

/* Start the next call of the body: a splice or a read, of what is left.
 * Return: false when the body is whole. */
static bool body_next(struct pw_http_file *f, char *buf, uint32_t cap)
{
	uint64_t left = f->size - f->off;

	if (f->sent >= f->size)
		return false;
	f->until = pw_time_now() + f->file_ns;
	if (f->pipe[0] >= 0) {
		f->step = B_FILL;
		pw_file_splice_init(&f->r, f->fd, f->off, f->pipe[1],
				    PW_FILE_POS,
				    left < PIPE_SIZE ? left : PIPE_SIZE,
				    PW_FILE_SPLICE_MOVE);
	} else {
		f->step = B_READ;
		pw_file_read_init(&f->r, f->fd, buf, left < cap ? left : cap,
				  f->off);
	}
	return true;
}

/* The body is cut by @err (no call in flight): count a truncation. */
static enum pw_poll body_fail(struct pw_http_file *f, int32_t err, int32_t *res)
{
	struct static_shard *h = here(f->st);

	if (err == -EPIPE && h)
		bump(&h->truncated, 1);
	pipe_give(f, false);
	file_close(f);
	f->body_left = false;
	*res = err;
	return PW_READY;
}

/* Splice the pipe's f->chunk bytes into the socket. */
static void drain_init(struct pw_http_file *f)
{
	f->step = B_DRAIN;
	f->until = send_deadline(f);
	pw_file_splice_init(&f->r, f->pipe[0], PW_FILE_POS, f->sock,
			    PW_FILE_POS, f->chunk,
			    f->off < f->size ? PW_FILE_SPLICE_MORE : 0);
}

/*
 * One completed file call of the body, with result @r.
 * Return: 1 when another call of the same chunk was started, 0 when the
 * chunk is sent (or read: B_SEND), -errno to cut the connection (-EPIPE:
 * the file ended early).
 */
static int32_t body_step(struct pw_http_file *f, int32_t r, char *buf)
{
	if (r == -EAGAIN && f->step == B_READ && f->nonblock) {
		/* Out of the page cache: read again, waiting. */
		f->nonblock = false;
		(void)fcntl(f->fd, F_SETFL, O_RDONLY);
		f->until = pw_time_now() + f->file_ns;
		pw_file_read_init(&f->r, f->fd, buf, f->r.len, f->off);
		return 1;
	}
	if (r <= 0)
		return r < 0 ? r : -EPIPE;
	switch (f->step) {
	case B_FILL:
		f->off += (uint64_t)r;
		f->chunk = (uint32_t)r;
		drain_init(f);
		return 1;
	case B_DRAIN:
		f->sent += (uint64_t)r;
		f->chunk -= (uint32_t)r;
		if (!f->chunk)
			return 0;
		drain_init(f); /* what the socket did not take yet */
		return 1;
	default: /* B_READ */
		f->off += (uint64_t)r;
		f->chunk = (uint32_t)r;
		f->step = B_SEND;
		f->until = send_deadline(f);
		return 0;
	}
}

/* The first call of the body: by splice when it is large and a pipe is
 * free, else by reads. */
static void body_start(struct pw_http_file *f, char *buf, uint32_t cap)
{
	struct static_shard *h = here(f->st);
	bool splice = f->size >= SPLICE_MIN && pipe_take(f);

	if (h)
		bump(splice ? &h->spliced : &h->copied, 1);
	body_next(f, buf, cap);
}

enum pw_poll pw_http_static_body_poll(struct pw_cx *cx, struct pw_http_file *f,
				      char *buf, uint32_t cap, int32_t *res)
{
	struct static_shard *h;
	int32_t r;

	if (f->step < B_FILL)
		body_start(f, buf, cap);
	for (;;) {
		if (f->step == B_SEND) {
			if (pw_send_poll(cx, &f->tx, buf, f->chunk, f->until,
					 &r) == PW_PENDING)
				return PW_PENDING;
			if (r < 0)
				return body_fail(f, r, res);
			f->sent += f->chunk;
			f->chunk = 0;
		} else {
			if (pw_file_poll(cx, &f->r, f->until, &r) == PW_PENDING)
				return PW_PENDING;
			r = body_step(f, r, buf);
			if (r < 0)
				return body_fail(f, r, res);
			if (r > 0 || f->step == B_SEND)
				continue;
		}
		if (!body_next(f, buf, cap))
			break;
	}
	h = here(f->st);
	if (h)
		bump(&h->file_bytes, f->size);
	pipe_give(f, true);
	file_close(f);
	f->body_left = false;
	*res = 0;
	return PW_READY;
}

void pw_http_static_end(struct pw_http_file *f)
{
	struct static_shard *h;
	bool busy;

	if (!f)
		return;
	busy = pw_file_in_flight(&f->r) || pw_send_in_flight(&f->tx);
	/* Synchronous: the kernel is done with the pipe and the file (and
	 * the output buffer a read wrote into) before they are closed. */
	if (pw_file_in_flight(&f->r))
		pw_file_cancel_sync(&f->r);
	pw_send_cancel(&f->tx);
	pipe_give(f, false);
	file_close(f);
	h = here(f->st);
	if (busy && h) {
		f->next = h->orphans;
		h->orphans = f;
	} else if (!busy && h && h->npool < FILE_POOL) {
		f->next = h->pool;
		h->pool = f;
		h->npool++;
	} else if (!busy) {
		free(f);
	}
	/* Busy off a shard: left to the process's end, never reused. */
}
