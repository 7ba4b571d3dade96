/* SPDX-License-Identifier: MIT */
/*
 * bench_file.c - sequential read throughput of one large file: the
 * streaming reader (pinwheel/file.h, 4 reads in flight) against a plain
 * pread(2) loop with the same block size, through the page cache (warm:
 * the file was just written) and with O_DIRECT. Each iteration reads
 * one block; the bytes counter is the throughput. A read that reaches
 * the end starts again at offset 0. bm_file_stream_fixed_direct reads
 * into registered buffers (PW_FILE_STREAM_FIXED).
 *
 * The file (PW_BENCH_FILE_MB MiB, default 1024) is written once per
 * process in PW_BENCH_FILE_DIR (default /var/tmp) and removed at exit;
 * PW_BENCH_FILE names an existing file to read instead (kept).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "pinwheel.h"

#define DEPTH 4

static char file_path[512];

static void file_remove(void)
{
	if (file_path[0])
		unlink(file_path);
}

/* The file's path, written on first use; NULL when it cannot be. */
static const char *bench_file(struct pw_bench *b)
{
	if (file_path[0])
		return file_path;
	const char *given = getenv("PW_BENCH_FILE");
	if (given && *given)
		return given;
	const char *d = getenv("PW_BENCH_FILE_DIR");
	const char *mb = getenv("PW_BENCH_FILE_MB");
	size_t n = (size_t)(mb ? atol(mb) : 1024) << 20;
	snprintf(file_path, sizeof(file_path), "%s/pinwheel-bench-file-%d",
		 d ? d : "/var/tmp", (int)getpid());
	int fd = open(file_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	char *blk = malloc(1 << 20);
	bool ok = fd >= 0 && blk && n;
	for (size_t off = 0; ok && off < n; off += 1 << 20) {
		memset(blk, (int)(off >> 20), 1 << 20);
		ok = write(fd, blk, 1 << 20) == 1 << 20;
	}
	free(blk);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		unlink(file_path);
		file_path[0] = 0;
		pw_bench_skip(b, "cannot write the benchmark file");
		return NULL;
	}
	atexit(file_remove);
	return file_path;
}

/* pread(2) of one block after another on the calling thread. */
static void pread_loop(struct pw_bench *b, bool direct)
{
	const char *p = bench_file(b);
	uint32_t bs = (uint32_t)pw_bench_arg(b);
	if (!p)
		return;
	int fd = open(p, O_RDONLY | (direct ? O_DIRECT : 0));
	char *buf = pw_file_buf_alloc(bs);
	uint64_t off = 0, bytes = 0;
	if (fd < 0 || !buf) {
		pw_bench_skip(b, "open or allocation failed");
		goto out;
	}
	while (pw_bench_run(b, 64))
		for (int i = 0; i < 64; i++) {
			ssize_t r = pread(fd, buf, bs, (off_t)off);
			if (r <= 0) {
				off = 0;
				r = pread(fd, buf, bs, 0);
			}
			off += (uint64_t)r;
			bytes += (uint64_t)r;
		}
	pw_bench_counter(b, "bytes", (double)bytes, true);
out:
	if (fd >= 0)
		close(fd);
	pw_file_buf_free(buf);
}

struct stream_st {
	struct pw_bench *b;
	struct pw_file_stream st;
	int fd;
	uint32_t bs;
	unsigned flags;
	int left;
	uint64_t bytes;
};

/* Iterations are chunks; at the end a new stream starts from 0. */
static enum pw_poll stream_poll(struct pw_cx *cx, void *state)
{
	struct stream_st *s = state;
	struct pw_file_chunk c;
	int32_t res;

	for (;;) {
		if (!s->left) {
			if (!pw_bench_run(s->b, 64)) {
				pw_file_stream_cancel(&s->st);
				return pw_ready(cx, 0);
			}
			s->left = 64;
		}
		if (pw_file_stream_poll(cx, &s->st, PW_TIME_NEVER, &c, &res) ==
		    PW_PENDING)
			return PW_PENDING;
		if (res < 0) {
			pw_file_stream_cancel(&s->st);
			return pw_ready(cx, res);
		}
		if (!res) {
			pw_file_stream_cancel(&s->st);
			if (pw_file_stream_init(&s->st, s->fd, 0,
						PW_FILE_TO_EOF, s->bs, DEPTH,
						s->flags))
				return pw_ready(cx, -ENOMEM);
			continue;
		}
		s->bytes += (uint64_t)res;
		s->left--;
	}
}

/* @how: 1 O_DIRECT, 2 registered buffers (bits). */
static void stream_loop(struct pw_bench *b, int how)
{
	const char *p = bench_file(b);
	if (!p)
		return;
	struct pw_runtime *rt = pw_bench_runtime(b);
	if (!rt)
		return;
	struct stream_st s = { .b = b, .bs = (uint32_t)pw_bench_arg(b) };
	s.flags = ((how & 1) ? PW_FILE_STREAM_DIRECT : 0) |
		  ((how & 2) ? PW_FILE_STREAM_FIXED : 0);
	s.fd = open(p, O_RDONLY);
	if (s.fd < 0 || pw_file_stream_init(&s.st, s.fd, 0, PW_FILE_TO_EOF,
					    s.bs, DEPTH, s.flags)) {
		pw_bench_skip(b, "open or stream set-up failed");
	} else if (pw_bench_run_in_task(rt, stream_poll, &s)) {
		pw_bench_skip(b, "a read failed");
	} else {
		pw_bench_counter(b, "bytes", (double)s.bytes, true);
	}
	if (s.fd >= 0)
		close(s.fd);
	pw_runtime_destroy(rt);
}

static void bm_file_pread(struct pw_bench *b)
{
	pread_loop(b, false);
}

static void bm_file_stream(struct pw_bench *b)
{
	stream_loop(b, 0);
}

static void bm_file_pread_direct(struct pw_bench *b)
{
	pread_loop(b, true);
}

static void bm_file_stream_direct(struct pw_bench *b)
{
	stream_loop(b, 1);
}

static void bm_file_stream_fixed_direct(struct pw_bench *b)
{
	stream_loop(b, 3);
}

static const int64_t block_sizes[] = { 128 << 10, 1 << 20 };
PW_BENCH_ARGS(bm_file_pread, block_sizes);
PW_BENCH_ARGS(bm_file_stream, block_sizes);
PW_BENCH_ARGS(bm_file_pread_direct, block_sizes);
PW_BENCH_ARGS(bm_file_stream_direct, block_sizes);
PW_BENCH_ARGS(bm_file_stream_fixed_direct, block_sizes);
