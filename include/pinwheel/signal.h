/* SPDX-License-Identifier: MIT */
/*
 * pinwheel/signal.h - signals as a stream: a signalfd read through
 * io_uring, one signal per poll, and Tokio's ctrl_c() on top.
 *
 * Thread rules. A signal sent to the process (kill(2), a terminal's ^C)
 * goes to any one thread that does not block it, and with the default
 * action SIGINT or SIGTERM ends the process there; a signalfd sees only
 * signals that every thread blocks. So block the signals in every thread:
 * call pw_signal_block() (or pw_signal_init()) on the main thread before
 * pw_runtime_create(), and the shard threads (and the blocking pool's)
 * inherit the mask. A signal raised by one thread for itself (raise(3),
 * pthread_kill(3)) is seen only by a read on that thread: send signals
 * to the process (kill(getpid(), signo)) instead.
 *
 * One pw_signal per set of signals, polled by one task. Each poll takes
 * the next signal: standard signals of one number sent twice before a
 * read count once (the kernel's rule), but a second SIGINT sent after the
 * first was read is the next poll's, so a server that drains on the
 * first can exit at once on the second.
 */
#ifndef PINWHEEL_SIGNAL_H
#define PINWHEEL_SIGNAL_H

#include <signal.h>
#include <stdbool.h>
#include <sys/signalfd.h>

#include "export.h"
#include "op.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A stream of signals (the fields are the runtime's). */
struct pw_signal {
	struct pw_op op;
	int fd;			      /* the signalfd; -1 when closed */
	struct signalfd_siginfo info; /* the read in flight */
};

/**
 * pw_signal_block - block @set in the calling thread (pthread_sigmask),
 * so threads it starts afterwards (a runtime's shards) inherit it.
 * Return: 0; -EINVAL for NULL or a set the kernel refuses.
 * Context: any thread; the main one before pw_runtime_create().
 */
PW_API int pw_signal_block(const sigset_t *set);

/**
 * pw_signal_init - open a stream of the signals of @set: blocks them in
 * the calling thread (see the thread rules above) and opens a signalfd.
 * Return: 0; -EINVAL for NULL or an empty set; -errno of signalfd(2)
 * (-EMFILE, -ENOMEM); then @s is closed (fd -1).
 * Context: any thread.
 */
PW_API int pw_signal_init(struct pw_signal *s, const sigset_t *set);

/**
 * pw_signal_poll - the next signal of the set.
 * Return: PW_READY with *@signo the signal's number (> 0), or -errno
 * (-EBADF once closed, -EINVAL for bad arguments); PW_PENDING until one
 * comes (one read is in flight on the shard's ring).
 * Context: a task on a shard; always the same task for one @s.
 */
PW_API enum pw_poll pw_signal_poll(struct pw_cx *cx, struct pw_signal *s,
				   int *signo);

/**
 * pw_signal_close - cancel the read in flight (its completion still
 * comes: the task's memory outlives it) and close the signalfd. The
 * signals stay blocked. Safe from a drop hook; harmless twice.
 * Context: the shard that polled @s (or any thread if it never was).
 */
PW_API void pw_signal_close(struct pw_signal *s);

/**
 * pw_ctrl_c_init - pw_signal_init() for SIGINT alone: Tokio's
 * signal::ctrl_c().
 * Return: as pw_signal_init(). Context: any thread.
 */
PW_API int pw_ctrl_c_init(struct pw_signal *s);

/**
 * pw_ctrl_c_poll - PW_READY once the next SIGINT came (*@res 0), or with
 * *@res -errno; PW_PENDING before. Poll it again for the next one.
 * Context: a task on a shard.
 */
PW_API enum pw_poll pw_ctrl_c_poll(struct pw_cx *cx, struct pw_signal *s,
				   int *res);

#ifdef __cplusplus
}
#endif

#endif /* PINWHEEL_SIGNAL_H */
