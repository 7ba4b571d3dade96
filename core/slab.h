/* SPDX-License-Identifier: MIT */
/*
 * slab.h - the per-shard slab: fixed size classes, free lists, no locks.
 *
 * Task memory comes from here. Each size class keeps a LIFO free list of
 * blocks carved from chunks; a chunk is allocated when a class runs dry
 * and is only returned when the slab is destroyed, so after warm-up
 * allocation and release are a pointer pop and push: no allocator call,
 * no atomic. Owned by one shard thread.
 */
#ifndef PW_CORE_SLAB_H
#define PW_CORE_SLAB_H

#include <stddef.h>
#include <stdint.h>

#define PW__SLAB_MIN_SHIFT 7 /* smallest block: 128 bytes */
#define PW__SLAB_CLASSES   8 /* 128 .. 16384 bytes */
#define PW__SLAB_MAX	   ((size_t)1 << (PW__SLAB_MIN_SHIFT + PW__SLAB_CLASSES - 1))
#define PW__SLAB_CHUNK	   ((size_t)64 << 10) /* bytes per chunk, at least */

struct pw__slab_chunk;

struct pw__slab {
	struct pw__slab_free *free[PW__SLAB_CLASSES]; /* LIFO free lists */
	struct pw__slab_chunk *chunks; /* every chunk, for destroy */
	uint64_t nchunks;	       /* chunks allocated so far */
	uint64_t live;		       /* blocks handed out, not yet freed */
};

/** pw__slab_init - an empty slab. */
void pw__slab_init(struct pw__slab *s);

/** pw__slab_class - size class for @size bytes, or -1 when too large. */
static inline int pw__slab_class(size_t size)
{
	if (size > PW__SLAB_MAX)
		return -1;
	if (size <= ((size_t)1 << PW__SLAB_MIN_SHIFT))
		return 0;
	return (int)(64 - __builtin_clzll((unsigned long long)size - 1)) -
	       PW__SLAB_MIN_SHIFT;
}

/* A free block: the free-list link, then a marker that tells a walk
 * (pw__slab_walk) it is free. A block in use must never hold
 * PW__SLAB_FREE_MARK in its second word. */
struct pw__slab_free {
	struct pw__slab_free *next;
	uintptr_t mark;
};

#define PW__SLAB_FREE_MARK ((uintptr_t)0x5ab0f1ee5ab0f1eeull)

/* Carve a new chunk for class @cls: 0, or -1 when memory is short. */
int pw__slab_grow(struct pw__slab *s, int cls);

/**
 * pw__slab_alloc - a block of class @cls (64-byte aligned), or NULL when
 * a new chunk cannot be allocated. Context: the owning shard.
 */
static inline void *pw__slab_alloc(struct pw__slab *s, int cls)
{
	struct pw__slab_free *f = s->free[cls];

	if (__builtin_expect(!f, 0)) {
		if (pw__slab_grow(s, cls) < 0)
			return NULL;
		f = s->free[cls];
	}
	s->free[cls] = f->next;
	/* The next block is the next allocation's: start fetching it. */
	__builtin_prefetch(f->next, 1);
	s->live++;
	return f;
}

/** pw__slab_free - return a block of class @cls. */
static inline void pw__slab_free(struct pw__slab *s, void *p, int cls)
{
	struct pw__slab_free *f = p;

	f->next = s->free[cls];
	f->mark = PW__SLAB_FREE_MARK;
	s->free[cls] = f;
	s->live--;
}

/**
 * pw__slab_walk - call @fn on every block in use, oldest chunk last.
 * @fn may free blocks (they are skipped once free) but not allocate.
 */
void pw__slab_walk(struct pw__slab *s, void (*fn)(void *blk, void *arg),
		   void *arg);

/** pw__slab_destroy - free every chunk, live blocks included. */
void pw__slab_destroy(struct pw__slab *s);

#endif /* PW_CORE_SLAB_H */
