/* SPDX-License-Identifier: MIT */
/*
 * buf.c - memory and descriptor settings for O_DIRECT (see
 * pinwheel/file.h): page-aligned buffers and the O_DIRECT switch.
 *
 * The buffers come from aligned_alloc(), not from the shard's slab: the
 * slab serves task blocks of 128 bytes to 16 KiB at no particular
 * alignment and keeps its chunks until the shard ends, while a direct
 * read wants page-aligned buffers of any size, given back when done. On
 * a shard, aligned_alloc() is served by the shard's own jemalloc arena,
 * bound to its NUMA node (numa/mem.c), so the memory is local all the
 * same.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "pinwheel/file.h"

void *pw_file_buf_alloc(size_t size)
{
	if (!size || size > SIZE_MAX - PW_FILE_ALIGN)
		return NULL;
	size = (size + PW_FILE_ALIGN - 1) & ~(size_t)(PW_FILE_ALIGN - 1);
	return aligned_alloc(PW_FILE_ALIGN, size);
}

void pw_file_buf_free(void *buf)
{
	free(buf);
}

int pw_file_direct(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	int want = on ? fl | O_DIRECT : fl & ~O_DIRECT;
	if (want != fl && fcntl(fd, F_SETFL, want) < 0)
		return -errno;
	return 0;
}
