/* SPDX-License-Identifier: MIT */
/*
 * fiber_stack.h - fiber stacks: a pool per thread, a guard page under
 * each stack, and the report of an overflow. Private to the library.
 *
 * A stack is a private mapping whose lowest page is a guard page (a
 * guard region where the kernel has them, else PROT_NONE). Stacks are
 * sized in power-of-two classes of whole pages and kept for reuse in the
 * calling thread's pool (bounded per class); on a bound shard the
 * mapping prefers the shard's memory node. A fault in the guard page of
 * the fiber running on a thread ends the process with a message naming
 * the fiber's function; every other SIGSEGV goes to the handler that was
 * there before.
 */
#ifndef PW_CORE_FIBER_STACK_H
#define PW_CORE_FIBER_STACK_H

#include <stdbool.h>
#include <stddef.h>

#define PW_FIBER_STACK_DEFAULT (64 * 1024)	  /* usable bytes */
#define PW__FSTACK_MAX	       ((size_t)64 << 20) /* largest request */

struct pw__fstack {
	void *lo;	/* lowest usable byte (just above the guard page) */
	size_t size;	/* usable bytes */
	void *map;	/* the mapping, guard page included */
	size_t map_len; /* its length */
};

/*
 * pw__fstack_get - a stack of at least @size usable bytes (0:
 * PW_FIBER_STACK_DEFAULT) into *@st: from the calling thread's pool, or
 * newly mapped with a guard page below it (placed on the shard's memory
 * node when the calling shard is bound). The first call on a thread also
 * installs the overflow handler (once per process).
 * Return: 0; -EINVAL for a @size above PW__FSTACK_MAX; -ENOMEM.
 * Context: a shard thread (any thread works; the pool is the thread's).
 */
int pw__fstack_get(size_t size, struct pw__fstack *st);

/*
 * pw__fstack_put - give @st back to the calling thread's pool, kept for
 * reuse up to a bound per size class, unmapped beyond it. The stack may
 * come from another thread's pool (a stolen fiber ends elsewhere).
 * Context: a shard thread; @st must not be in use.
 */
void pw__fstack_put(struct pw__fstack *st);

/*
 * pw__fstack_pool_free - unmap every stack in the calling thread's pool
 * and its alternate signal stack. Runs by itself when the thread ends;
 * call it earlier to drop the memory. Context: any thread, for its own
 * pool.
 */
void pw__fstack_pool_free(void);

/* What the overflow report reads: the fiber running on this thread.
 * initial-exec: the signal handler reads it without __tls_get_addr. */
struct pw__fstack_cur {
	const struct pw__fstack *st; /* its stack, or NULL */
	const char *name;	     /* its function's name */
	bool ready; /* pw__fstack_thread_setup() ran on this thread */
};
extern _Thread_local struct pw__fstack_cur pw__fstack_cur
	__attribute__((tls_model("initial-exec")));

/*
 * pw__fstack_thread_setup - once per thread (pw__fstack_get() and
 * pw__fstack_running() call it): install the overflow handler (once per
 * process), arrange for the pool to be freed when the thread ends, and
 * give the thread an alternate signal stack unless it has one.
 * Context: the thread itself.
 */
void pw__fstack_thread_setup(void);

/*
 * pw__fstack_running - name the fiber now running on this thread for the
 * overflow report: @st its stack, @name its function's name (a string
 * that outlives the fiber). Call it on each switch into a fiber, and with
 * NULL, NULL on the way out. The first call on a thread sets the thread
 * up (an alternate signal stack, where the report runs). Two stores
 * after the first call. Context: the thread that runs the fiber.
 */
static inline void pw__fstack_running(const struct pw__fstack *st,
				      const char *name)
{
	struct pw__fstack_cur *c = &pw__fstack_cur;

	if (__builtin_expect(!c->ready, 0) && st)
		pw__fstack_thread_setup();
	c->st = st;
	c->name = name;
}

#endif /* PW_CORE_FIBER_STACK_H */
