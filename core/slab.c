/* SPDX-License-Identifier: MIT */
/*
 * slab.c - see slab.h. A chunk is one aligned allocation: a small header
 * followed by blocks of a single class. Blocks are pushed onto the class
 * free list when the chunk is carved; a freed block goes back on top, so
 * the hottest (most recently used, cache-warm) block is reused first.
 */
#include "slab.h"

#include <stdlib.h>

struct pw__slab_free {
	struct pw__slab_free *next;
};

struct pw__slab_chunk {
	struct pw__slab_chunk *next;
	char pad[56]; /* blocks start 64-byte aligned */
};

void pw__slab_init(struct pw__slab *s)
{
	for (int i = 0; i < PW__SLAB_CLASSES; i++)
		s->free[i] = NULL;
	s->chunks = NULL;
	s->nchunks = 0;
	s->live = 0;
}

static int slab_grow(struct pw__slab *s, int cls)
{
	size_t bsize = (size_t)1 << (PW__SLAB_MIN_SHIFT + cls);
	size_t n = PW__SLAB_CHUNK / bsize;

	if (n < 16)
		n = 16;
	size_t total = sizeof(struct pw__slab_chunk) + n * bsize;
	struct pw__slab_chunk *c = aligned_alloc(64, total);

	if (!c)
		return -1;
	c->next = s->chunks;
	s->chunks = c;
	s->nchunks++;
	/* Push in reverse so the first block handed out is the lowest. */
	char *base = (char *)(c + 1);
	for (size_t i = n; i-- > 0;) {
		struct pw__slab_free *f = (void *)(base + i * bsize);
		f->next = s->free[cls];
		s->free[cls] = f;
	}
	return 0;
}

void *pw__slab_alloc(struct pw__slab *s, int cls)
{
	struct pw__slab_free *f = s->free[cls];

	if (__builtin_expect(!f, 0)) {
		if (slab_grow(s, cls) < 0)
			return NULL;
		f = s->free[cls];
	}
	s->free[cls] = f->next;
	s->live++;
	return f;
}

void pw__slab_free(struct pw__slab *s, void *p, int cls)
{
	struct pw__slab_free *f = p;

	f->next = s->free[cls];
	s->free[cls] = f;
	s->live--;
}

void pw__slab_destroy(struct pw__slab *s)
{
	struct pw__slab_chunk *c = s->chunks;

	while (c) {
		struct pw__slab_chunk *next = c->next;
		free(c);
		c = next;
	}
	pw__slab_init(s);
}
