/* SPDX-License-Identifier: MIT */
/*
 * slab.c - see slab.h. A chunk is one aligned allocation: a small header
 * followed by blocks of a single class. Blocks are pushed onto the class
 * free list when the chunk is carved; a freed block goes back on top, so
 * the hottest (most recently used, cache-warm) block is reused first.
 */
#include "core/slab.h"

#include "core/fault.h"
#include "numa/mem_int.h"

#include <stdlib.h>

struct pw__slab_chunk {
	struct pw__slab_chunk *next;
	size_t bsize;  /* bytes per block */
	size_t blocks; /* blocks in this chunk */
	size_t mapped; /* for pw__mem_chunk_free() */
	char pad[32];  /* blocks start 64-byte aligned */
};

void pw__slab_init(struct pw__slab *s)
{
	for (int i = 0; i < PW__SLAB_CLASSES; i++)
		s->free[i] = NULL;
	s->chunks = NULL;
	s->nchunks = 0;
	s->live = 0;
}

int pw__slab_grow(struct pw__slab *s, int cls)
{
	size_t bsize = (size_t)1 << (PW__SLAB_MIN_SHIFT + cls);
	size_t n = PW__SLAB_CHUNK / bsize;

	if (n < 16)
		n = 16;
	size_t total = sizeof(struct pw__slab_chunk) + n * bsize;
	size_t mapped;
	struct pw__slab_chunk *c = pw__fault(PW__FAULT_SLAB) ?
					   NULL :
					   pw__mem_chunk_alloc(total, &mapped);

	if (!c)
		return -1;
	c->mapped = mapped;
	c->next = s->chunks;
	c->bsize = bsize;
	c->blocks = n;
	s->chunks = c;
	s->nchunks++;
	/* Push in reverse so the first block handed out is the lowest. */
	char *base = (char *)(c + 1);
	for (size_t i = n; i-- > 0;) {
		struct pw__slab_free *f = (void *)(base + i * bsize);
		f->next = s->free[cls];
		f->mark = PW__SLAB_FREE_MARK;
		s->free[cls] = f;
	}
	return 0;
}

void pw__slab_walk(struct pw__slab *s, void (*fn)(void *blk, void *arg),
		   void *arg)
{
	for (struct pw__slab_chunk *c = s->chunks; c; c = c->next) {
		char *base = (char *)(c + 1);
		for (size_t i = 0; i < c->blocks; i++) {
			struct pw__slab_free *f = (void *)(base + i * c->bsize);
			if (f->mark != PW__SLAB_FREE_MARK)
				fn(f, arg);
		}
	}
}

void pw__slab_destroy(struct pw__slab *s)
{
	struct pw__slab_chunk *c = s->chunks;

	while (c) {
		struct pw__slab_chunk *next = c->next;
		pw__mem_chunk_free(c, c->mapped);
		c = next;
	}
	pw__slab_init(s);
}
