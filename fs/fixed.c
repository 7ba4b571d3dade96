/* SPDX-License-Identifier: MIT */
/*
 * fixed.c - registered buffers: each shard's table of PW_FILE_FIXED_MAX
 * slots on its ring, for READ_FIXED (see pinwheel/file.h).
 *
 * The first registration on a shard registers a sparse table with the
 * kernel (every slot empty); each pw_file_fixed_register() then fills one
 * slot (io_uring_register_buffers_update_tag) and each unregister empties
 * it again. The table's record is thread-local: a shard's ring is used
 * by its own thread only (SINGLE_ISSUER), and its thread lives exactly
 * as long as the ring, so the record needs no link from the shard and no
 * teardown (closing the ring releases the kernel's table). It names the
 * shard it belongs to, so a record is never taken for another ring's.
 */
#include <errno.h>
#include <string.h>

#include "fs/file_int.h"

struct fixed_table {
	struct pw__shard *s; /* the shard whose ring holds the table */
	uint64_t used;	     /* a bit per slot */
};

static _Thread_local struct fixed_table tab;

/* The calling shard's table, registered with its ring on first use. */
static int table_get(struct pw__shard *s, struct fixed_table **out)
{
	if (tab.s != s) {
		int err = io_uring_register_buffers_sparse(&s->ring,
							   PW_FILE_FIXED_MAX);
		if (err)
			return err;
		tab.s = s;
		tab.used = 0;
	}
	*out = &tab;
	return 0;
}

int pw_file_fixed_register(struct pw_cx *cx, struct pw_file_fixed *fx,
			   void *mem, size_t len)
{
	struct fixed_table *t;

	if (!cx || !fx || !mem || !len || len > ((size_t)1 << 30))
		return -EINVAL;
	int err = table_get(cx->shard, &t);
	if (err)
		return err;
	if (t->used == UINT64_MAX)
		return -ENOSPC;
	int slot = __builtin_ctzll(~t->used);
	struct iovec iov = { .iov_base = mem, .iov_len = len };
	__u64 tag = 0;
	err = io_uring_register_buffers_update_tag(
		&cx->shard->ring, (unsigned)slot, &iov, &tag, 1);
	if (err < 0)
		return err;
	t->used |= 1ull << slot;
	pw__task_fix(cx->task, cx->shard);
	fx->base = mem;
	fx->len = len;
	fx->shard = cx->shard;
	fx->index = slot;
	return 0;
}

int pw__fs_fixed_slot(struct pw__shard *s, const struct pw_file_fixed *fx)
{
	if (!fx || fx->index < 0 || fx->index >= PW_FILE_FIXED_MAX ||
	    !fx->shard)
		return -EINVAL;
	if (fx->shard != s)
		return -EXDEV;
	if (tab.s != s || !(tab.used & (1ull << fx->index)))
		return -EINVAL;
	return fx->index;
}

int pw_file_fixed_unregister(struct pw_file_fixed *fx)
{
	struct pw__shard *s = pw__cur_shard;

	if (!fx)
		return -EINVAL;
	if (!s)
		return -EXDEV;
	int slot = pw__fs_fixed_slot(s, fx);
	if (slot < 0)
		return slot;
	/* An empty iovec empties the slot. */
	struct iovec iov = { .iov_base = NULL, .iov_len = 0 };
	__u64 tag = 0;
	(void)io_uring_register_buffers_update_tag(&s->ring, (unsigned)slot,
						   &iov, &tag, 1);
	tab.used &= ~(1ull << slot);
	fx->index = -1;
	fx->shard = NULL;
	return 0;
}
