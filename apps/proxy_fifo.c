/* SPDX-License-Identifier: MIT */
/*
 * proxy_fifo.c - a proxy direction's byte FIFO (proxy_fifo.h): blocks
 * allocated as bytes arrive and freed as they are sent, and the
 * full-size blocks each shard keeps for reuse, so that a busy direction
 * does not free and allocate 16 KiB per chunk (the allocator would hand
 * pages back to the kernel and fault them in again).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "apps/proxy_fifo.h"

/* Most bytes in one block of a direction's FIFO. */
#define PX_BLK (16 * 1024)
/* A message this small into an empty FIFO gets a block its size. */
#define PX_SMALL 512
/* Full-size FIFO blocks a shard keeps for reuse (1 MiB). */
#define PX_SPARE_MAX 64

/*
 * A block for @n more bytes: for a small message into an empty FIFO, one
 * just big enough (from the allocator's per-thread cache); else a
 * full-size one, from @sp when it has one. NULL when out of memory.
 */
static struct px_blk *blk_new(struct px_spares *sp, bool first, uint32_t n)
{
	uint32_t cap = PX_BLK;
	struct px_blk *b;

	if (first && n <= PX_SMALL)
		cap = (n + 63) & ~63u;
	if (cap == PX_BLK && sp->head) {
		b = sp->head;
		sp->head = b->next;
		sp->n--;
	} else {
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
	}
	b->next = NULL;
	b->off = b->fill = 0;
	b->cap = cap;
	return b;
}

/* Free @b, or keep it among @sp. */
static void blk_free(struct px_spares *sp, struct px_blk *b)
{
	if (b->cap == PX_BLK && sp->n < PX_SPARE_MAX) {
		b->next = sp->head;
		sp->head = b;
		sp->n++;
		return;
	}
	free(b);
}

uint32_t pw_proxy_fifo_put(struct px_fifo *f, struct px_spares *sp,
			   const char *p, uint32_t n)
{
	uint32_t done = 0;

	while (done < n) {
		struct px_blk *t = f->tail;

		if (!t || t->fill == t->cap) {
			struct px_blk *b = blk_new(sp, !t, n - done);

			if (!b)
				break;
			if (t)
				t->next = b;
			else
				f->head = b;
			f->tail = t = b;
		}
		uint32_t k = t->cap - t->fill;
		if (k > n - done)
			k = n - done;
		memcpy(t->data + t->fill, p + done, k);
		t->fill += k;
		done += k;
	}
	f->queued += done;
	return done;
}

void pw_proxy_fifo_sent(struct px_fifo *f, struct px_spares *sp, uint32_t n)
{
	struct px_blk *h = f->head;

	h->off += n;
	f->queued -= n;
	if (h->off == h->fill) {
		/* Blocks before the tail are full: a sent head is done. */
		f->head = h->next;
		if (!f->head)
			f->tail = NULL;
		blk_free(sp, h);
	}
}

void pw_proxy_fifo_free(struct px_fifo *f)
{
	while (f->head) {
		struct px_blk *h = f->head;

		f->head = h->next;
		free(h);
	}
	f->tail = NULL;
	f->queued = 0;
}

void pw_proxy_spares_free(struct px_spares *sp)
{
	while (sp->head) {
		struct px_blk *b = sp->head;

		sp->head = b->next;
		free(b);
	}
	sp->n = 0;
}
