/* SPDX-License-Identifier: MIT */
/*
 * proxy_fifo.h - the byte FIFO of one direction of a proxied connection
 * (private to proxy.c and proxy_fifo.c).
 *
 * A FIFO is a chain of blocks: bytes are copied to the tail as they
 * arrive, sent from the head, and each block is freed once sent, so an
 * empty FIFO owns no memory. A small message into an empty FIFO gets a
 * block just its size; others get full-size blocks (16 KiB), which a
 * shard keeps a few of for reuse in its struct px_spares.
 *
 * Threads: a FIFO belongs to one connection; its calls run on the thread
 * polling that connection. A struct px_spares is touched only by the
 * thread running its shard, so the calls that take one run there.
 */
#ifndef PW_APPS_PROXY_FIFO_H
#define PW_APPS_PROXY_FIFO_H

#include <stddef.h>
#include <stdint.h>

/* One block of a FIFO: bytes [off, fill) of its cap wait to be sent. */
struct px_blk {
	struct px_blk *next;
	uint32_t off, fill, cap;
	char data[];
};

/* One direction's bytes waiting to be sent. All zero: empty. */
struct px_fifo {
	struct px_blk *head, *tail; /* NULL when empty */
	uint64_t queued;	    /* unsent bytes in the FIFO */
};

/* Full-size blocks a shard keeps for reuse. All zero: none. */
struct px_spares {
	struct px_blk *head;
	unsigned n;
};

/*
 * pw_proxy_fifo_head - the bytes waiting at the head of @f: their
 * address, their count in *@len. NULL (and *@len untouched) when @f is
 * empty. The address stays valid until pw_proxy_fifo_sent() drops them
 * or pw_proxy_fifo_free(); bytes put meanwhile may extend the head block
 * but never move it.
 */
static inline const char *pw_proxy_fifo_head(const struct px_fifo *f,
					     uint32_t *len)
{
	const struct px_blk *h = f->head;

	if (!h)
		return NULL;
	*len = h->fill - h->off;
	return h->data + h->off;
}

/*
 * pw_proxy_fifo_put - copy @n bytes at @p to the tail of @f, taking
 * blocks from @sp (or the allocator) as needed. Return: the bytes copied
 * (fewer than @n only when out of memory). Runs on @sp's shard.
 */
uint32_t pw_proxy_fifo_put(struct px_fifo *f, struct px_spares *sp,
			   const char *p, uint32_t n);

/*
 * pw_proxy_fifo_sent - a send of the first @n bytes of @f ended: drop
 * them (at most the bytes pw_proxy_fifo_head() gave). A block sent whole
 * is freed or kept among @sp. Runs on @sp's shard.
 */
void pw_proxy_fifo_sent(struct px_fifo *f, struct px_spares *sp, uint32_t n);

/*
 * pw_proxy_fifo_free - free every block of @f to the allocator and leave
 * it empty. It takes no spares: closing may run off the shard (a drop at
 * runtime shutdown), where the shard's spares are not the caller's. Any
 * thread holding @f.
 */
void pw_proxy_fifo_free(struct px_fifo *f);

/*
 * pw_proxy_spares_free - free the blocks kept in @sp and leave it empty.
 * Called once no thread uses @sp any more (the proxy's teardown).
 */
void pw_proxy_spares_free(struct px_spares *sp);

#endif /* PW_APPS_PROXY_FIFO_H */
