/* SPDX-License-Identifier: MIT */
/*
 * test_file.c - files over io_uring (pinwheel/file.h): writes read back
 * byte for byte, short reads at the end of a file, a file unlinked while
 * read, statx against stat(2), rename and unlink, O_DIRECT, registered
 * buffers, the streaming reader from a poll task, a fiber and the async
 * macros, splice from a file into a pipe and a socket, deadlines, and
 * reads cancelled in flight (on a pipe, where a
 * read really waits) whose buffers the kernel never writes afterwards.
 *
 * Files live in a fresh folder under the build folder: a disk
 * filesystem, where O_DIRECT works (tmpfs may refuse it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tests/common.h"
#include "pinwheel/file.h"

/* ---- the folder and the files ----------------------------------------- */

static char dir[PATH_MAX / 2];

static void dir_make(void)
{
	snprintf(dir, sizeof(dir), "%s/test-file-XXXXXX", PW_BUILDDIR);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s: %s", dir,
			   strerror(errno));
}

static const char *path_in(char *buf, size_t n, const char *name)
{
	int len = snprintf(buf, n, "%s/%s", dir, name);

	cr_assert(len > 0 && (size_t)len < n);
	return buf;
}

/* @n pseudo-random bytes from @seed. */
static void fill(char *p, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;

	for (size_t i = 0; i < n; i++) {
		if (!(i & 7))
			s = pw_test_rng(&s) + seed;
		p[i] = (char)(s >> ((i & 7) * 8));
	}
}

/* A file of @n pseudo-random bytes, written with write(2); its FNV. */
static uint64_t make_file(const char *path, size_t n, uint64_t seed)
{
	char *p = malloc(n ? n : 1);
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	cr_assert(p && fd >= 0);
	fill(p, n, seed);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, p + off, n - off);
		cr_assert_gt(w, 0);
		off += (size_t)w;
	}
	cr_assert_eq(fsync(fd), 0);
	close(fd);
	uint64_t h = pw_test_fnv(14695981039346656037ull, p, n);
	free(p);
	return h;
}

/* ---- one request, run to its end ------------------------------------- */

struct one {
	struct pw_file_req r;
	pw_time_t deadline;
	int32_t res;
};

static enum pw_poll one_poll(struct pw_cx *cx, void *state)
{
	struct one *o = state;

	if (pw_file_poll(cx, &o->r, o->deadline, &o->res) == PW_PENDING)
		return PW_PENDING;
	cr_assert(!pw_file_in_flight(&o->r));
	return pw_ready(cx, o->res);
}

/* Run @o's request (its init done) on @rt's shard 0. */
static int32_t run(struct pw_runtime *rt, struct one *o)
{
	o->deadline = PW_TIME_NEVER;
	return (int32_t)pw_test_block_on(rt, one_poll, o);
}

static int open_at(struct pw_runtime *rt, const char *path, int flags)
{
	struct one o;

	pw_file_open_init(&o.r, AT_FDCWD, path, flags, 0644);
	return run(rt, &o);
}

/* ---- reads and writes --------------------------------------------------- */

Test(file, write_then_read_back)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	struct one o;
	enum { BIG = 300000, PIECE = 65536, RD = 48000 };
	char *want = malloc(BIG), *got = malloc(BIG);

	dir_make();
	fill(want, BIG, 7);
	int fd = open_at(rt, path_in(p, sizeof(p), "a"),
			 O_CREAT | O_RDWR | O_TRUNC);
	cr_assert_geq(fd, 0, "open: %d", fd);
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* Pieces at their offsets, out of order: one buffer, then iovecs. */
	for (int i = BIG / PIECE; i >= 0; i--) {
		size_t off = (size_t)i * PIECE;
		size_t n = BIG - off < PIECE ? BIG - off : PIECE;
		if (i & 1) {
			pw_file_write_init(&o.r, fd, want + off, n, off);
		} else {
			struct iovec v[3] = { { want + off, 100 },
					      { want + off + 100, 0 },
					      { want + off + 100, n - 100 } };
			pw_file_writev_init(&o.r, fd, v, 3, off);
			cr_assert_eq(run(rt, &o), (int32_t)n);
			continue;
		}
		cr_assert_eq(run(rt, &o), (int32_t)n);
	}
	pw_file_fsync_init(&o.r, fd);
	cr_assert_eq(run(rt, &o), 0);
	pw_file_fdatasync_init(&o.r, fd);
	cr_assert_eq(run(rt, &o), 0);
	/* Back in pieces of another size: one buffer. */
	memset(got, 0, BIG);
	for (size_t off = 0; off < BIG; off += RD) {
		size_t n = BIG - off < RD ? BIG - off : RD;
		pw_file_read_init(&o.r, fd, got + off, RD, off);
		cr_assert_eq(run(rt, &o), (int32_t)n);
	}
	cr_assert_eq(memcmp(got, want, BIG), 0);
	/* And iovecs: three buffers filled in order. */
	memset(got, 0, BIG);
	struct iovec v[3] = { { got, 1 },
			      { got + 1, 4095 },
			      { got + 4096, BIG } };
	pw_file_readv_init(&o.r, fd, v, 3, 0);
	cr_assert_eq(run(rt, &o), BIG);
	cr_assert_eq(memcmp(got, want, BIG), 0);
	/* The file's own position: PW_FILE_POS reads on from it. */
	cr_assert_eq(lseek(fd, 10, SEEK_SET), 10);
	pw_file_read_init(&o.r, fd, got, 5, PW_FILE_POS);
	cr_assert_eq(run(rt, &o), 5);
	cr_assert_eq(memcmp(got, want + 10, 5), 0);
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), 15);
	pw_file_close_init(&o.r, fd);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(fcntl(fd, F_GETFD), -1);
	free(want);
	free(got);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, short_read_at_end_of_file)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX], buf[8192], want[1000];
	struct one o;

	dir_make();
	make_file(path_in(p, sizeof(p), "s"), 1000, 3);
	fill(want, sizeof(want), 3);
	int fd = open_at(rt, p, O_RDONLY);
	cr_assert_geq(fd, 0);
	pw_file_read_init(&o.r, fd, buf, 4096, 0);
	cr_assert_eq(run(rt, &o), 1000);
	cr_assert_eq(memcmp(buf, want, 1000), 0);
	pw_file_read_init(&o.r, fd, buf, 200, 900);
	cr_assert_eq(run(rt, &o), 100);
	cr_assert_eq(memcmp(buf, want + 900, 100), 0);
	pw_file_read_init(&o.r, fd, buf, 4096, 1000);
	cr_assert_eq(run(rt, &o), 0);
	pw_file_read_init(&o.r, fd, buf, 4096, 1u << 30);
	cr_assert_eq(run(rt, &o), 0);
	struct iovec v[2] = { { buf, 600 }, { buf + 600, 600 } };
	pw_file_readv_init(&o.r, fd, v, 2, 0);
	cr_assert_eq(run(rt, &o), 1000);
	close(fd);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, unlinked_while_open_still_reads)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX], buf[70000], want[70000];
	struct one o;
	struct statx sx;

	dir_make();
	make_file(path_in(p, sizeof(p), "gone"), sizeof(want), 11);
	fill(want, sizeof(want), 11);
	int fd = open_at(rt, p, O_RDONLY);
	cr_assert_geq(fd, 0);
	pw_file_unlink_init(&o.r, AT_FDCWD, p, 0);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(access(p, F_OK), -1);
	pw_file_read_init(&o.r, fd, buf, sizeof(buf), 0);
	cr_assert_eq(run(rt, &o), (int32_t)sizeof(want));
	cr_assert_eq(memcmp(buf, want, sizeof(want)), 0);
	pw_file_statx_init(&o.r, fd, "", AT_EMPTY_PATH,
			   STATX_NLINK | STATX_SIZE, &sx);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(sx.stx_nlink, 0);
	cr_assert_eq(sx.stx_size, sizeof(want));
	pw_file_close_init(&o.r, fd);
	cr_assert_eq(run(rt, &o), 0);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A file spliced into a pipe and the pipe into a socket, byte for byte:
 * the pages never pass through user space; a splice at the end of the
 * file moves 0 bytes; one from a range past a truncation moves what is
 * left. Bad arguments are refused at the poll. */
Test(file, splice_file_pipe_socket)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	enum { N = 300000 };
	char p[PATH_MAX];
	char *want = malloc(N), *got = malloc(N);
	int pfd[2], sv[2];
	struct one o;
	size_t have = 0;
	uint64_t off = 0;

	cr_assert(want && got);
	dir_make();
	make_file(path_in(p, sizeof(p), "spliced"), N, 21);
	fill(want, N, 21);
	int fd = open_at(rt, p, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	while (off < N) {
		pw_file_splice_init(&o.r, fd, off, pfd[1], PW_FILE_POS, N - off,
				    0);
		int32_t in = run(rt, &o);
		cr_assert_gt(in, 0, "file into the pipe: %d", in);
		/* Out of the pipe: it returns once the pipe is empty. */
		pw_file_splice_init(&o.r, pfd[0], PW_FILE_POS, sv[0],
				    PW_FILE_POS, N, PW_FILE_SPLICE_MORE);
		cr_assert_eq(run(rt, &o), in);
		off += (uint64_t)in;
		while (have < off) {
			ssize_t r = read(sv[1], got + have, N - have);
			cr_assert_gt(r, 0);
			have += (size_t)r;
		}
	}
	cr_assert_eq(have, (size_t)N);
	cr_assert_eq(memcmp(got, want, N), 0);
	pw_file_splice_init(&o.r, fd, N, pfd[1], PW_FILE_POS, 4096, 0);
	cr_assert_eq(run(rt, &o), 0); /* at the end of the file */
	cr_assert_eq(truncate(p, 1000), 0);
	pw_file_splice_init(&o.r, fd, 500, pfd[1], PW_FILE_POS, 4096, 0);
	cr_assert_eq(run(rt, &o), 500); /* the rest of the shorter file */
	pw_file_splice_init(&o.r, pfd[0], PW_FILE_POS, sv[0], PW_FILE_POS, 4096,
			    PW_FILE_SPLICE_NONBLOCK);
	cr_assert_eq(run(rt, &o), 500);
	cr_assert_eq(read(sv[1], got, 4096), 500);
	cr_assert_eq(memcmp(got, want + 500, 500), 0);
	/* An empty pipe, not waited on. */
	pw_file_splice_init(&o.r, pfd[0], PW_FILE_POS, sv[0], PW_FILE_POS, 4096,
			    PW_FILE_SPLICE_NONBLOCK);
	cr_assert_eq(run(rt, &o), -EAGAIN);
	pw_file_splice_init(&o.r, -1, 0, pfd[1], PW_FILE_POS, 1, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_splice_init(&o.r, fd, 0, pfd[1], PW_FILE_POS,
			    (size_t)INT32_MAX + 1, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_splice_init(&o.r, fd, 0, pfd[1], PW_FILE_POS, 1, 0x80);
	cr_assert_eq(run(rt, &o), -EINVAL);
	close(fd);
	close(pfd[0]);
	close(pfd[1]);
	close(sv[0]);
	close(sv[1]);
	free(want);
	free(got);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A splice out of an empty pipe waits; its deadline cancels it (the
 * kernel's worker is interrupted) and the poll returns only at the final
 * completion. */
Test(file, splice_waiting_is_cancelled_by_its_deadline)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int pfd[2], sv[2];
	struct one o;

	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pw_file_splice_init(&o.r, pfd[0], PW_FILE_POS, sv[0], PW_FILE_POS, 4096,
			    0);
	o.deadline = pw_time_now() + 20 * PW_NSEC_PER_MSEC;
	int32_t got = (int32_t)pw_test_block_on(rt, one_poll, &o);
	cr_assert_eq(got, -ETIMEDOUT, "%d", got);
	close(pfd[0]);
	close(pfd[1]);
	close(sv[0]);
	close(sv[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, statx_matches_stat)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	struct one o;
	struct statx sx;
	struct stat st;

	dir_make();
	make_file(path_in(p, sizeof(p), "st"), 12345, 5);
	cr_assert_eq(chmod(p, 0640), 0);
	cr_assert_eq(stat(p, &st), 0);
	memset(&sx, 0, sizeof(sx));
	pw_file_statx_init(&o.r, AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(sx.stx_mask & STATX_BASIC_STATS, STATX_BASIC_STATS);
	cr_assert_eq(sx.stx_size, (uint64_t)st.st_size);
	cr_assert_eq(sx.stx_mode, st.st_mode);
	cr_assert_eq(sx.stx_ino, st.st_ino);
	cr_assert_eq(sx.stx_nlink, st.st_nlink);
	cr_assert_eq(sx.stx_uid, st.st_uid);
	cr_assert_eq(sx.stx_gid, st.st_gid);
	cr_assert_eq(sx.stx_blocks, (uint64_t)st.st_blocks);
	cr_assert_eq(sx.stx_blksize, (uint32_t)st.st_blksize);
	cr_assert_eq(sx.stx_mtime.tv_sec, st.st_mtim.tv_sec);
	cr_assert_eq(sx.stx_mtime.tv_nsec, (uint32_t)st.st_mtim.tv_nsec);
	cr_assert_eq(makedev(sx.stx_dev_major, sx.stx_dev_minor), st.st_dev);
	/* A missing file, relative to a directory descriptor. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	pw_file_statx_init(&o.r, dfd, "nothing", 0, STATX_SIZE, &sx);
	cr_assert_eq(run(rt, &o), -ENOENT);
	pw_file_statx_init(&o.r, dfd, "st", 0, STATX_SIZE, &sx);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(sx.stx_size, 12345);
	close(dfd);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

static uint64_t file_size(struct pw_runtime *rt, int dfd, const char *name)
{
	struct one o;
	struct statx sx;

	pw_file_statx_init(&o.r, dfd, name, 0, STATX_SIZE, &sx);
	int32_t res = run(rt, &o);
	return res ? (uint64_t)(int64_t)res : sx.stx_size;
}

Test(file, rename_and_unlink)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	struct one o;

	dir_make();
	make_file(path_in(p, sizeof(p), "a"), 10, 1);
	make_file(path_in(p, sizeof(p), "b"), 20, 2);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
	/* NOREPLACE onto a file that exists: refused, nothing moved. */
	pw_file_rename_init(&o.r, dfd, "a", dfd, "b", RENAME_NOREPLACE);
	cr_assert_eq(run(rt, &o), -EEXIST);
	cr_assert_eq(file_size(rt, dfd, "a"), 10);
	/* EXCHANGE swaps the two. */
	pw_file_rename_init(&o.r, dfd, "a", dfd, "b", RENAME_EXCHANGE);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(file_size(rt, dfd, "a"), 20);
	cr_assert_eq(file_size(rt, dfd, "b"), 10);
	/* A plain rename replaces; the old name is gone. */
	pw_file_rename_init(&o.r, dfd, "a", AT_FDCWD,
			    path_in(p, sizeof(p), "c"), 0);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(file_size(rt, dfd, "a"), (uint64_t)(int64_t)-ENOENT);
	cr_assert_eq(file_size(rt, dfd, "c"), 20);
	/* Unlink: a file, a missing one, a folder (only as a folder). */
	pw_file_unlink_init(&o.r, dfd, "c", 0);
	cr_assert_eq(run(rt, &o), 0);
	pw_file_unlink_init(&o.r, dfd, "c", 0);
	cr_assert_eq(run(rt, &o), -ENOENT);
	cr_assert_eq(mkdirat(dfd, "sub", 0755), 0);
	pw_file_unlink_init(&o.r, dfd, "sub", 0);
	cr_assert_eq(run(rt, &o), -EISDIR);
	pw_file_unlink_init(&o.r, dfd, "sub", AT_REMOVEDIR);
	cr_assert_eq(run(rt, &o), 0);
	cr_assert_eq(faccessat(dfd, "sub", F_OK, 0), -1);
	close(dfd);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, openat2_keeps_paths_beneath)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	struct one o;

	dir_make();
	make_file(path_in(p, sizeof(p), "in"), 10, 1);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
	cr_assert_eq(symlinkat("in", dfd, "link"), 0);
	cr_assert_eq(symlinkat("/etc/passwd", dfd, "out"), 0);
	static const struct {
		const char *path;
		uint64_t resolve;
		int res; /* 1: a descriptor */
	} cases[] = {
		{ "in", RESOLVE_BENEATH, 1 },
		{ "link", RESOLVE_BENEATH, 1 },
		{ "link", RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, -ELOOP },
		{ "out", RESOLVE_BENEATH, -EXDEV },
		{ "../x", RESOLVE_BENEATH, -EXDEV },
		{ "/etc/passwd", RESOLVE_BENEATH, -EXDEV },
		{ "nothing", RESOLVE_BENEATH, -ENOENT },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pw_file_openat2_init(&o.r, dfd, cases[i].path, O_RDONLY, 0,
				     cases[i].resolve);
		int32_t res = run(rt, &o);
		if (cases[i].res == 1) {
			cr_assert_geq(res, 0, "%s: %d", cases[i].path, res);
			cr_assert(fcntl(res, F_GETFD) & FD_CLOEXEC);
			close(res);
		} else {
			cr_assert_eq(res, cases[i].res, "%s: %d", cases[i].path,
				     res);
		}
	}
	pw_file_openat2_init(&o.r, dfd, NULL, O_RDONLY, 0, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	close(dfd);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, bad_arguments)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	struct one o;
	char b[8];
	struct pw_file_stream st;
	struct pw_file_fixed fx = { .index = -1 };

	memset(&o, 0, sizeof(o));
	cr_assert_eq(run(rt, &o), -EINVAL); /* never initialised */
	pw_file_read_init(&o.r, 0, b, (size_t)INT32_MAX + 1, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_read_init(&o.r, -1, b, sizeof(b), 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_read_init(&o.r, 0, NULL, 1, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_readv_init(&o.r, 0, NULL, 1, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_open_init(&o.r, AT_FDCWD, NULL, O_RDONLY, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_statx_init(&o.r, AT_FDCWD, "/", 0, STATX_SIZE, NULL);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_read_fixed_init(&o.r, 0, &fx, 0, 1, 0);
	cr_assert_eq(run(rt, &o), -EINVAL);
	pw_file_read_init(&o.r, 12345, b, sizeof(b), 0);
	cr_assert_eq(run(rt, &o), -EBADF);
	cr_assert_eq(pw_file_stream_init(&st, 0, 0, 10, 100, 4, 0), -EINVAL);
	cr_assert_eq(pw_file_stream_init(&st, 0, 0, 10, 4096, 0, 0), -EINVAL);
	cr_assert_eq(pw_file_stream_init(&st, 0, 0, 10, 4096,
					 PW_FILE_STREAM_MAX + 1, 0),
		     -EINVAL);
	cr_assert_eq(pw_file_stream_init(&st, 0, 1, PW_FILE_TO_EOF, 4096, 1,
					 PW_FILE_STREAM_DIRECT),
		     -EINVAL);
	cr_assert_eq(pw_file_stream_init(&st, -1, 0, 10, 4096, 1, 0), -EINVAL);
	cr_assert_null(pw_file_buf_alloc(0));
	cr_assert_eq(pw_file_fixed_unregister(NULL), -EINVAL);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- O_DIRECT ------------------------------------------------------------ */

Test(file, direct_reads_with_aligned_buffers)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	struct one o;
	enum { N = (1 << 20) + 1000 };
	char *want = malloc(N);

	dir_make();
	make_file(path_in(p, sizeof(p), "d"), N, 9);
	fill(want, N, 9);
	int fd = open_at(rt, p, O_RDONLY | O_DIRECT);
	if (fd == -EINVAL) {
		free(want);
		pw_test_rm_tree(dir, 1);
		cr_assert_eq(pw_runtime_destroy(rt), 0);
		cr_skip_test("O_DIRECT: %s refuses it (EINVAL)", dir);
		return;
	}
	cr_assert_geq(fd, 0, "open O_DIRECT: %d", fd);
	/* Room for whole blocks: the kernel may pin every page asked for. */
	char *buf = pw_file_buf_alloc(N + (256 << 10));
	cr_assert_not_null(buf);
	cr_assert_eq((uintptr_t)buf % PW_FILE_ALIGN, 0);
	/* Whole blocks; the last read is short at the end of the file. */
	size_t got = 0;
	for (;;) {
		pw_file_read_init(&o.r, fd, buf + got, 256 << 10, got);
		int32_t res = run(rt, &o);
		cr_assert_geq(res, 0, "direct read: %d", res);
		got += (size_t)res;
		if (res < (256 << 10))
			break;
	}
	cr_assert_eq(got, N);
	cr_assert_eq(memcmp(buf, want, N), 0);
	/* A misaligned offset is the kernel's to refuse. */
	pw_file_read_init(&o.r, fd, buf, 4096, 1);
	cr_assert_eq(run(rt, &o), -EINVAL);
	/* pw_file_direct() turns it off and on again. */
	cr_assert_eq(pw_file_direct(fd, false), 0);
	cr_assert_eq(fcntl(fd, F_GETFL) & O_DIRECT, 0);
	pw_file_read_init(&o.r, fd, buf, 10, 1);
	cr_assert_eq(run(rt, &o), 10);
	cr_assert_eq(memcmp(buf, want + 1, 10), 0);
	cr_assert_eq(pw_file_direct(fd, true), 0);
	cr_assert_neq(fcntl(fd, F_GETFL) & O_DIRECT, 0);
	cr_assert_eq(pw_file_direct(-1, true), -EBADF);
	close(fd);
	pw_file_buf_free(buf);
	free(want);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- registered buffers ------------------------------------------------ */

struct fixed_st {
	int fd;
	const char *want;
	size_t n;
	char *mem;
	int step;
	bool started;
	int32_t res;
	struct pw_file_fixed fx;
	struct pw_file_req r;
};

/* Register, read the file into the buffer in four quarters, reversed,
 * twice over; check; unregister; a read then is refused. */
static enum pw_poll fixed_poll(struct pw_cx *cx, void *state)
{
	struct fixed_st *s = state;
	size_t q = s->n / 4;

	if (s->step == 0) {
		cr_assert_eq(pw_file_fixed_register(cx, &s->fx, s->mem, s->n),
			     0);
		cr_assert_geq(s->fx.index, 0);
		s->step = 1;
	}
	for (; s->step <= 8; s->step++) {
		size_t i = (size_t)(8 - s->step) % 4;
		if (!s->started)
			pw_file_read_fixed_init(&s->r, s->fd, &s->fx, i * q, q,
						i * q);
		s->started = true;
		if (pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res) ==
		    PW_PENDING)
			return PW_PENDING;
		s->started = false;
		cr_assert_eq(s->res, (int32_t)q, "read_fixed: %d", s->res);
	}
	cr_assert_eq(memcmp(s->mem, s->want, s->n), 0);
	/* Past the buffer's end: refused before the kernel sees it. */
	pw_file_read_fixed_init(&s->r, s->fd, &s->fx, q, s->n, 0);
	cr_assert_eq(pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res), PW_READY);
	cr_assert_eq(s->res, -EINVAL);
	cr_assert_eq(pw_file_fixed_unregister(&s->fx), 0);
	cr_assert_eq(pw_file_fixed_unregister(&s->fx), -EINVAL);
	pw_file_read_fixed_init(&s->r, s->fd, &s->fx, 0, q, 0);
	cr_assert_eq(pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res), PW_READY);
	cr_assert_eq(s->res, -EINVAL);
	return pw_ready(cx, 0);
}

/* Every slot of the shard's table, then one more. */
static enum pw_poll fixed_full_poll(struct pw_cx *cx, void *state)
{
	static struct pw_file_fixed fx[PW_FILE_FIXED_MAX + 1];
	char *mem = state;

	for (int i = 0; i < PW_FILE_FIXED_MAX; i++)
		cr_assert_eq(pw_file_fixed_register(cx, &fx[i], mem, 4096), 0);
	cr_assert_eq(pw_file_fixed_register(cx, &fx[PW_FILE_FIXED_MAX], mem,
					    4096),
		     -ENOSPC);
	cr_assert_eq(pw_file_fixed_unregister(&fx[5]), 0);
	cr_assert_eq(pw_file_fixed_register(cx, &fx[PW_FILE_FIXED_MAX], mem,
					    4096),
		     0);
	cr_assert_eq(fx[PW_FILE_FIXED_MAX].index, 5);
	for (int i = 0; i <= PW_FILE_FIXED_MAX; i++)
		if (i != 5)
			cr_assert_eq(pw_file_fixed_unregister(&fx[i]), 0);
	return pw_ready(cx, 0);
}

Test(file, registered_buffer_reads)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	enum { N = 1 << 20 };
	struct fixed_st s = { .n = N };
	char *want = malloc(N);

	dir_make();
	make_file(path_in(p, sizeof(p), "f"), N, 21);
	fill(want, N, 21);
	s.want = want;
	s.mem = pw_file_buf_alloc(N);
	s.fd = open(p, O_RDONLY);
	cr_assert_geq(s.fd, 0);
	cr_assert_eq(pw_test_block_on(rt, fixed_poll, &s), 0);
	cr_assert_eq(pw_test_block_on(rt, fixed_full_poll, s.mem), 0);
	close(s.fd);
	pw_file_buf_free(s.mem);
	free(want);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- the streaming reader ---------------------------------------------- */

#define STREAM_N ((size_t)4 << 20)

/* What a stream handed out: bytes, a checksum, chunks in file order. */
struct tally {
	uint64_t h, bytes, next_off;
	int chunks;
};

static void tally_add(struct tally *t, const struct pw_file_chunk *c,
		      int32_t res)
{
	cr_assert_eq(c->len, (uint32_t)res);
	cr_assert_eq(c->off, t->next_off, "chunk at %llu, %llu expected",
		     (unsigned long long)c->off,
		     (unsigned long long)t->next_off);
	t->h = pw_test_fnv(t->h, c->data, c->len);
	t->bytes += c->len;
	t->next_off += c->len;
	t->chunks++;
}

/* A poll task by hand. */
struct sum_st {
	struct pw_file_stream st;
	struct tally t;
};

static enum pw_poll sum_poll(struct pw_cx *cx, void *state)
{
	struct sum_st *s = state;
	struct pw_file_chunk c;
	int32_t res;

	for (;;) {
		if (pw_file_stream_poll(cx, &s->st, PW_TIME_NEVER, &c, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res <= 0)
			break;
		tally_add(&s->t, &c, res);
	}
	/* The end stays the end. */
	cr_assert_eq(pw_file_stream_poll(cx, &s->st, PW_TIME_NEVER, &c, &res),
		     PW_READY);
	cr_assert_eq(res, 0);
	pw_file_stream_cancel(&s->st);
	pw_file_stream_cancel(&s->st); /* harmless twice */
	return pw_ready(cx, res);
}

/* Stream @len bytes from @off of @path (@flags) with a poll task. */
static struct tally stream_poll_task(struct pw_runtime *rt, const char *path,
				     uint64_t off, uint64_t len, uint32_t chunk,
				     uint32_t depth, unsigned flags)
{
	struct sum_st s = { .t = { .h = 14695981039346656037ull,
				   .next_off = off } };
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pw_file_stream_init(&s.st, fd, off, len, chunk, depth,
					 flags),
		     0);
	cr_assert_eq(pw_test_block_on(rt, sum_poll, &s), 0);
	close(fd);
	return s.t;
}

Test(file, stream_4mib_from_a_poll_task)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];

	dir_make();
	uint64_t h = make_file(path_in(p, sizeof(p), "big"), STREAM_N, 33);
	/* Depth 1 (one read at a time) to the maximum, chunks of 4 KiB to
	 * 1 MiB: the same bytes, in order. */
	static const uint32_t chunks[] = { 4096, 65536, 131072, 1 << 20 };
	static const uint32_t depths[] = { 1, 4, 8, PW_FILE_STREAM_MAX };
	for (int i = 0; i < 8; i++) {
		/* The second four with registered buffers. */
		unsigned fl = i < 4 ? 0 : PW_FILE_STREAM_FIXED;
		struct tally t = stream_poll_task(rt, p, 0, PW_FILE_TO_EOF,
						  chunks[i % 4], depths[i % 4],
						  fl);
		cr_assert_eq(t.bytes, STREAM_N);
		cr_assert_eq(t.h, h, "chunk %u depth %u flags %u",
			     chunks[i % 4], depths[i % 4], fl);
		cr_assert_eq(t.chunks, (int)(STREAM_N / chunks[i % 4]));
	}
	/* A range inside the file, its end not on a chunk boundary. */
	char *want = malloc(STREAM_N);
	fill(want, STREAM_N, 33);
	struct tally t = stream_poll_task(rt, p, 5000, 1000000, 65536, 4, 0);
	cr_assert_eq(t.bytes, 1000000);
	cr_assert_eq(t.h, pw_test_fnv(14695981039346656037ull, want + 5000,
				      1000000));
	/* A range past the end: the bytes there are, then the end. */
	t = stream_poll_task(rt, p, STREAM_N - 10000, 1 << 20, 8192, 4, 0);
	cr_assert_eq(t.bytes, 10000);
	cr_assert_eq(t.h, pw_test_fnv(14695981039346656037ull,
				      want + STREAM_N - 10000, 10000));
	/* A file whose size is no multiple of the chunk: the short read
	 * ends it. */
	make_file(p, 300001, 34);
	fill(want, 300001, 34);
	t = stream_poll_task(rt, p, 0, PW_FILE_TO_EOF, 65536, 3, 0);
	cr_assert_eq(t.bytes, 300001);
	cr_assert_eq(t.h, pw_test_fnv(14695981039346656037ull, want, 300001));
	free(want);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, stream_direct)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];

	dir_make();
	uint64_t h =
		make_file(path_in(p, sizeof(p), "big"), STREAM_N + 4000, 35);
	int fd = open(p, O_RDONLY);
	int err = pw_file_direct(fd, true);
	close(fd);
	if (err == -EINVAL) {
		pw_test_rm_tree(dir, 1);
		cr_assert_eq(pw_runtime_destroy(rt), 0);
		cr_skip_test("O_DIRECT: %s refuses it (EINVAL)", dir);
		return;
	} else {
		cr_assert_eq(err, 0);
		struct tally t = stream_poll_task(rt, p, 0, PW_FILE_TO_EOF,
						  256 << 10, 8,
						  PW_FILE_STREAM_DIRECT);
		cr_assert_eq(t.bytes, STREAM_N + 4000);
		cr_assert_eq(t.h, h);
		t = stream_poll_task(rt, p, 0, PW_FILE_TO_EOF, 256 << 10, 8,
				     PW_FILE_STREAM_DIRECT |
					     PW_FILE_STREAM_FIXED);
		cr_assert_eq(t.bytes, STREAM_N + 4000);
		cr_assert_eq(t.h, h);
	}
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* Every slot taken: a stream asking for registered buffers reads with
 * plain reads, the same bytes; a slot freed, it registers again. */
struct full_stream_st {
	struct pw_file_fixed fx[PW_FILE_FIXED_MAX];
	char *mem;
	int step;
	struct sum_st s;
};

static enum pw_poll full_stream_poll(struct pw_cx *cx, void *state)
{
	struct full_stream_st *f = state;

	if (f->step == 0) {
		for (int i = 0; i < PW_FILE_FIXED_MAX; i++)
			cr_assert_eq(pw_file_fixed_register(cx, &f->fx[i],
							    f->mem, 4096),
				     0);
		f->step = 1;
	}
	if (sum_poll(cx, &f->s) == PW_PENDING)
		return PW_PENDING;
	for (int i = 0; i < PW_FILE_FIXED_MAX; i++)
		cr_assert_eq(pw_file_fixed_unregister(&f->fx[i]), 0);
	return pw_ready(cx, 0);
}

Test(file, stream_with_every_slot_taken)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	static struct full_stream_st f;

	dir_make();
	uint64_t h = make_file(path_in(p, sizeof(p), "big"), 1 << 20, 38);
	int fd = open(p, O_RDONLY);
	f.mem = pw_file_buf_alloc(4096);
	f.s.t.h = 14695981039346656037ull;
	cr_assert_eq(pw_file_stream_init(&f.s.st, fd, 0, PW_FILE_TO_EOF, 65536,
					 4, PW_FILE_STREAM_FIXED),
		     0);
	cr_assert_eq(pw_test_block_on(rt, full_stream_poll, &f), 0);
	cr_assert_eq(f.s.t.bytes, 1 << 20);
	cr_assert_eq(f.s.t.h, h);
	close(fd);
	pw_file_buf_free(f.mem);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* The same with the async macros: open, stream, close, each awaited. */
struct macro_st {
	pw_async_t at;
	const char *path;
	struct pw_file_req r;
	struct pw_file_stream st;
	struct pw_file_chunk c;
	struct tally t;
	int fd;
	int32_t res;
};

static enum pw_poll macro_poll(struct pw_cx *cx, void *state)
{
	struct macro_st *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	pw_file_open_init(&s->r, AT_FDCWD, s->path, O_RDONLY, 0);
	PW_AWAIT(pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res));
	cr_assert_geq(s->res, 0);
	s->fd = s->res;
	cr_assert_eq(pw_file_stream_init(&s->st, s->fd, 0, PW_FILE_TO_EOF,
					 128 << 10, 6, 0),
		     0);
	for (;;) {
		PW_AWAIT(pw_file_stream_poll(cx, &s->st, PW_TIME_NEVER, &s->c,
					     &s->res));
		if (s->res <= 0)
			break;
		tally_add(&s->t, &s->c, s->res);
	}
	cr_assert_eq(s->res, 0);
	pw_file_stream_cancel(&s->st);
	pw_file_close_init(&s->r, s->fd);
	PW_AWAIT(pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res));
	PW_RETURN(s->res);
	PW_ASYNC_END();
}

Test(file, stream_4mib_from_the_macros)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];

	dir_make();
	uint64_t h = make_file(path_in(p, sizeof(p), "big"), STREAM_N, 36);
	struct macro_st s = { .path = p,
			      .t = { .h = 14695981039346656037ull } };
	cr_assert_eq(pw_test_block_on(rt, macro_poll, &s), 0);
	cr_assert_eq(s.t.bytes, STREAM_N);
	cr_assert_eq(s.t.h, h);
	cr_assert_eq(s.t.chunks, (int)(STREAM_N / (128 << 10)));
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- fibers ---------------------------------------------------------- */

struct fib_arg {
	const char *dir;
	uint64_t want_h;
	struct tally t;
};

/* Every call in its fiber form: write a file, sync it, stat it, read it
 * back (one buffer, iovecs, a registered buffer), stream it, rename and
 * unlink it. Buffers on the fiber's stack and heap. */
static int64_t fib_main(void *arg)
{
	struct fib_arg *a = arg;
	char p[PATH_MAX], q[PATH_MAX], small[3000], back[3000];
	struct statx sx;

	snprintf(p, sizeof(p), "%s/fa", a->dir);
	snprintf(q, sizeof(q), "%s/fb", a->dir);
	fill(small, sizeof(small), 41);
	int fd = pw_fiber_file_open(AT_FDCWD, p, O_CREAT | O_RDWR | O_TRUNC,
				    0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pw_fiber_file_write(fd, small, 1000, 0), 1000);
	struct iovec wv[2] = { { small + 1000, 1500 }, { small + 2500, 500 } };
	cr_assert_eq(pw_fiber_file_writev(fd, wv, 2, 1000), 2000);
	cr_assert_eq(pw_fiber_file_fsync(fd, false), 0);
	cr_assert_eq(pw_fiber_file_fsync(fd, true), 0);
	cr_assert_eq(
		pw_fiber_file_statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, &sx), 0);
	cr_assert_eq(sx.stx_size, sizeof(small));
	cr_assert_eq(pw_fiber_file_read(fd, back, sizeof(back) + 0, 0),
		     (int64_t)sizeof(small));
	cr_assert_eq(memcmp(back, small, sizeof(small)), 0);
	memset(back, 0, sizeof(back));
	struct iovec rv[2] = { { back, 7 }, { back + 7, sizeof(back) - 7 } };
	cr_assert_eq(pw_fiber_file_readv(fd, rv, 2, 0), (int64_t)sizeof(small));
	cr_assert_eq(memcmp(back, small, sizeof(small)), 0);
	cr_assert_eq(pw_fiber_file_read(fd, back, 100, 2950), 50);
	cr_assert_eq(pw_fiber_file_read(fd, back, 100, 3000), 0);
	/* A registered buffer. */
	struct pw_file_fixed fx;
	char *mem = pw_file_buf_alloc(8192);
	cr_assert_eq(pw_file_fixed_register(pw_fiber_cx(), &fx, mem, 8192), 0);
	cr_assert_eq(pw_fiber_file_read_fixed(fd, &fx, 100, 3000, 0), 3000);
	cr_assert_eq(memcmp(mem + 100, small, sizeof(small)), 0);
	cr_assert_eq(pw_file_fixed_unregister(&fx), 0);
	pw_file_buf_free(mem);
	cr_assert_eq(pw_fiber_file_close(fd), 0);
	fd = pw_fiber_file_openat2(AT_FDCWD, p, O_RDONLY, 0, RESOLVE_NO_XDEV);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pw_fiber_file_close(fd), 0);
	cr_assert_eq(pw_fiber_file_rename(AT_FDCWD, p, AT_FDCWD, q, 0), 0);
	cr_assert_eq(pw_fiber_file_statx(AT_FDCWD, p, 0, STATX_SIZE, &sx),
		     -ENOENT);
	cr_assert_eq(pw_fiber_file_unlink(AT_FDCWD, q, 0), 0);
	cr_assert_eq(pw_fiber_file_unlink(AT_FDCWD, q, 0), -ENOENT);
	/* The 4 MiB file, streamed. */
	snprintf(p, sizeof(p), "%s/big", a->dir);
	fd = pw_fiber_file_open(AT_FDCWD, p, O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	struct pw_file_stream st;
	struct pw_file_chunk c;
	int64_t n;
	cr_assert_eq(pw_file_stream_init(&st, fd, 0, PW_FILE_TO_EOF, 64 << 10,
					 8, 0),
		     0);
	while ((n = pw_fiber_file_stream_read(&st, &c)) > 0)
		tally_add(&a->t, &c, (int32_t)n);
	cr_assert_eq(n, 0);
	pw_file_stream_cancel(&st);
	cr_assert_eq(pw_fiber_file_close(fd), 0);
	return 0;
}

Test(file, every_call_from_a_fiber)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	char p[PATH_MAX];
	int64_t res = -1;

	dir_make();
	struct fib_arg a = { .dir = dir,
			     .t = { .h = 14695981039346656037ull } };
	a.want_h = make_file(path_in(p, sizeof(p), "big"), STREAM_N, 37);
	cr_assert_eq(pw_fiber_block_on(rt, fib_main, &a, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(a.t.bytes, STREAM_N);
	cr_assert_eq(a.t.h, a.want_h);
	cr_assert_eq(pw_fiber_file_read(0, p, 1, 0), -EPERM);
	pw_test_rm_tree(dir, 1);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* ---- deadlines and cancellation --------------------------------------- */

/* Wait until shard 0 has no kernel operation in flight: every final
 * completion, of cancelled reads too, has been reaped. */
static void wait_no_inflight(struct pw_runtime *rt)
{
	struct pw_shard_stats st = { 0 };

	PW_TEST_WAIT_UNTIL(pw_runtime_stats(rt, 0, &st) == 0 &&
				   st.inflight_ops == 0,
			   PW_TEST_WAIT_SECS, "%llu operations in flight",
			   (unsigned long long)st.inflight_ops);
}

/* What the pipe holds now, read without waiting: nothing consumed the
 * bytes written after the reads were cancelled. */
static void pipe_holds(int rfd, int wfd, const char *text)
{
	char got[64];
	size_t n = strlen(text);

	cr_assert_eq(write(wfd, text, n), (ssize_t)n);
	int fl = fcntl(rfd, F_GETFL);
	fcntl(rfd, F_SETFL, fl | O_NONBLOCK);
	cr_assert_eq(read(rfd, got, sizeof(got)), (ssize_t)n);
	cr_assert_eq(memcmp(got, text, n), 0);
	cr_assert_eq(read(rfd, got, sizeof(got)), -1);
	fcntl(rfd, F_SETFL, fl);
}

struct pipe_st {
	int rfd;
	int step;
	int32_t res;
	struct pw_file_req r;
	struct pw_file_stream st;
	struct pw_file_chunk c;
	char buf[4096];
};

/* Reads on an empty pipe (one buffer, a stream), cancelled once they are
 * surely in the kernel; the single read's end is awaited. */
static enum pw_poll pipe_cancel_poll(struct pw_cx *cx, void *state)
{
	struct pipe_st *s = state;

	if (s->step == 0) {
		pw_file_read_init(&s->r, s->rfd, s->buf, sizeof(s->buf),
				  PW_FILE_POS);
		cr_assert_eq(pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res),
			     PW_PENDING);
		cr_assert_eq(pw_file_stream_init(&s->st, s->rfd, 0,
						 PW_FILE_TO_EOF, 4096, 4, 0),
			     0);
		cr_assert_eq(pw_file_stream_poll(cx, &s->st, PW_TIME_NEVER,
						 &s->c, &s->res),
			     PW_PENDING);
		s->step = 1;
		return pw_yield(cx); /* the loop submits them */
	}
	if (s->step == 1) {
		cr_assert(pw_file_in_flight(&s->r));
		pw_file_cancel(&s->r);
		pw_file_stream_cancel(&s->st); /* its buffers go at the end */
		s->step = 2;
	}
	if (pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res) == PW_PENDING)
		return PW_PENDING;
	cr_assert(!pw_file_in_flight(&s->r));
	return pw_ready(cx, s->res);
}

Test(file, cancel_reads_in_flight)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	struct pipe_st s = { .rfd = fds[0] };
	cr_assert_eq(pw_test_block_on(rt, pipe_cancel_poll, &s), -ECANCELED);
	/* Handed back: the kernel never writes the buffer again. */
	memset(s.buf, 0x5a, sizeof(s.buf));
	wait_no_inflight(rt);
	pipe_holds(fds[0], fds[1], "after the cancel");
	for (size_t i = 0; i < sizeof(s.buf); i++)
		cr_assert_eq(s.buf[i], 0x5a);
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, deadline_cancels_and_waits)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int fds[2];
	struct one o;
	char buf[256];

	cr_assert_eq(pipe(fds), 0);
	pw_file_read_init(&o.r, fds[0], buf, sizeof(buf), PW_FILE_POS);
	o.deadline = 0; /* passed already: nothing is submitted */
	cr_assert_eq(pw_test_block_on(rt, one_poll, &o), -ETIMEDOUT);
	pw_file_read_init(&o.r, fds[0], buf, sizeof(buf), PW_FILE_POS);
	struct pw_shard_stats st0;
	pw_runtime_stats(rt, 0, &st0);
	/* 20 ms from now on the runtime's clock: the read waits in the
	 * kernel (the pipe stays empty), so the deadline ends it. */
	o.deadline = pw_time_now() + 20 * PW_NSEC_PER_MSEC;
	cr_assert_eq(pw_test_block_on(rt, one_poll, &o), -ETIMEDOUT);
	memset(buf, 0x33, sizeof(buf));
	wait_no_inflight(rt);
	pipe_holds(fds[0], fds[1], "after the deadline");
	for (size_t i = 0; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0x33);
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

/* A task that reads an empty pipe (one read into its state, a stream)
 * until it is aborted; its drop hook cancels both. */
struct reader_st {
	int rfd;
	bool *armed;
	int32_t res;
	struct pw_file_req r;
	struct pw_file_stream st;
	struct pw_file_chunk c;
	char buf[4096];
};

static enum pw_poll reader_poll(struct pw_cx *cx, void *state)
{
	struct reader_st *s = state;

	if (!*s->armed) {
		pw_file_read_init(&s->r, s->rfd, s->buf, sizeof(s->buf),
				  PW_FILE_POS);
		cr_assert_eq(pw_file_stream_init(&s->st, s->rfd, 0,
						 PW_FILE_TO_EOF, 8192, 8, 0),
			     0);
		*s->armed = true;
	}
	(void)pw_file_poll(cx, &s->r, PW_TIME_NEVER, &s->res);
	(void)pw_file_stream_poll(cx, &s->st, PW_TIME_NEVER, &s->c, &s->res);
	return PW_PENDING;
}

static void reader_drop(void *state)
{
	struct reader_st *s = state;

	pw_file_cancel(&s->r);
	pw_file_stream_cancel(&s->st);
}

static int64_t fiber_reader(void *arg)
{
	struct reader_st *s = arg;
	char buf[4096]; /* on the fiber's stack */

	*s->armed = true;
	int64_t n = pw_fiber_file_read(s->rfd, buf, sizeof(buf), PW_FILE_POS);
	cr_assert_eq(n, -ECANCELED);
	/* Whatever runs on after the cancel may reuse that stack. */
	memset(buf, 0x77, sizeof(buf));
	return n;
}

struct abort_st {
	int rfd;
	bool fiber;
	bool armed;
	int step;
	struct pw_join j;
};

static enum pw_poll abort_poll(struct pw_cx *cx, void *state)
{
	struct abort_st *a = state;
	struct reader_st r = { .rfd = a->rfd, .armed = &a->armed };
	static struct reader_st fr;
	int64_t v;

	if (a->step == 0) {
		if (a->fiber) {
			fr = r;
			cr_assert_eq(PW_FIBER_SPAWN(&a->j, fiber_reader, &fr),
				     0);
		} else {
			cr_assert_eq(pw_spawn(&a->j, reader_poll, &r, sizeof(r),
					      reader_drop),
				     0);
		}
		a->step = 1;
	}
	if (a->step == 1) {
		if (!a->armed)
			return pw_yield(cx);
		/* One more turn: the reads reach the kernel. */
		a->step = 2;
		return pw_yield(cx);
	}
	if (a->step == 2) {
		cr_assert_eq(pw_join_abort(&a->j), 0);
		a->step = 3;
	}
	if (pw_join_poll(cx, &a->j, &v) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, v);
}

static void abort_reader(bool fiber)
{
	struct pw_runtime *rt = pw_test_runtime(1);
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	struct abort_st a = { .rfd = fds[0], .fiber = fiber };
	cr_assert_eq(pw_test_block_on(rt, abort_poll, &a), -ECANCELED);
	/* The aborted task's memory goes once its reads have ended. */
	wait_no_inflight(rt);
	pw_test_wait_live(rt, 0, 0);
	pipe_holds(fds[0], fds[1], fiber ? "fiber gone" : "task gone");
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(pw_runtime_destroy(rt), 0);
}

Test(file, abort_a_task_reading)
{
	abort_reader(false);
}

Test(file, abort_a_fiber_reading)
{
	abort_reader(true);
}
