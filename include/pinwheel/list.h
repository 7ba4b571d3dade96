/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/list.h - intrusive doubly linked lists and container_of.
 *
 * The node lives inside the caller's struct; the list never allocates.
 * A list head is a node whose next/prev point at itself when empty. Every
 * operation is O(1) except iteration. pw_list_del() poisons the removed
 * node so that a use after unlink faults instead of corrupting a list, and
 * pw_list_del_init() leaves the node reusable and "unlinked"
 * (pw_list_unlinked() is then true).
 *
 * Nothing here is thread-safe: a list belongs to one thread (one shard).
 */
#ifndef PINWHEEL_LIST_H
#define PINWHEEL_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * pw_container_of - the struct that embeds @ptr as its @member.
 *
 * The pointer type is checked against the member's type at compile time:
 * comparing pointers to distinct types is a diagnostic (an error under
 * -Werror), and the comparison is never evaluated.
 */
#define pw_container_of(ptr, type, member)                       \
	((type *)(void *)((char *)(ptr)-offsetof(type, member) + \
			  0 * sizeof((ptr) == &((type *)0)->member)))

/* Poison values: non-canonical addresses that fault on dereference. */
#define PW_LIST_POISON1 ((struct pw_list *)(uintptr_t)0xdead000000000100ULL)
#define PW_LIST_POISON2 ((struct pw_list *)(uintptr_t)0xdead000000000122ULL)

/* A list head or a node embedded in an element. */
struct pw_list {
	struct pw_list *next; /* next node, or the head itself at the end */
	struct pw_list *prev; /* previous node, or the head at the start */
};

#define PW_LIST_INIT(name)       \
	{                        \
		&(name), &(name) \
	}

/** pw_list_init - make @l an empty list (or an unlinked node). */
static inline void pw_list_init(struct pw_list *l)
{
	l->next = l;
	l->prev = l;
}

/** pw_list_empty - true when the list headed by @h has no node. */
static inline bool pw_list_empty(const struct pw_list *h)
{
	return h->next == h;
}

/** pw_list_unlinked - true for a node that was initialised or del_init'ed. */
static inline bool pw_list_unlinked(const struct pw_list *n)
{
	return n->next == n;
}

static inline void pw__list_insert(struct pw_list *n, struct pw_list *prev,
				   struct pw_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

/** pw_list_add - insert @n right after the head @h (stack order). */
static inline void pw_list_add(struct pw_list *n, struct pw_list *h)
{
	pw__list_insert(n, h, h->next);
}

/** pw_list_add_tail - insert @n before the head @h (queue order). */
static inline void pw_list_add_tail(struct pw_list *n, struct pw_list *h)
{
	pw__list_insert(n, h->prev, h);
}

static inline void pw__list_unlink(struct pw_list *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
}

/** pw_list_del - unlink @n and poison it; @n must be linked. */
static inline void pw_list_del(struct pw_list *n)
{
	pw__list_unlink(n);
	n->next = PW_LIST_POISON1;
	n->prev = PW_LIST_POISON2;
}

/** pw_list_del_init - unlink @n and leave it as an empty, unlinked node. */
static inline void pw_list_del_init(struct pw_list *n)
{
	pw__list_unlink(n);
	pw_list_init(n);
}

/**
 * pw_list_splice_tail_init - move every node of @from to the tail of @to,
 * in order, leaving @from empty.
 */
static inline void pw_list_splice_tail_init(struct pw_list *from,
					    struct pw_list *to)
{
	if (pw_list_empty(from))
		return;
	struct pw_list *first = from->next, *last = from->prev;
	struct pw_list *at = to->prev;

	at->next = first;
	first->prev = at;
	last->next = to;
	to->prev = last;
	pw_list_init(from);
}

#define pw_list_entry(ptr, type, member) pw_container_of(ptr, type, member)

#define pw_list_first_entry(head, type, member) \
	pw_list_entry((head)->next, type, member)

/* Iterate over nodes; @pos must not be removed inside the loop. */
#define pw_list_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* Iterate over nodes; @pos may be removed, @tmp holds the next one. */
#define pw_list_for_each_safe(pos, tmp, head)                            \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif /* PINWHEEL_LIST_H */
