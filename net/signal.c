/* SPDX-License-Identifier: MIT */
/*
 * signal.c - a stream of signals (pinwheel/signal.h): a non-blocking
 * signalfd whose reads go through the shard's ring as a pw_op, so a
 * task waits for a signal like for any completion, and the shard sleeps
 * in the kernel meanwhile.
 *
 * io_uring finds the signalfd empty, arms a poll on it and reads again
 * when a signal is queued, in the shard thread's own context: the read
 * takes a signal pending for the process (or for that thread).
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "pinwheel/signal.h"

int pw_signal_block(const sigset_t *set)
{
	if (!set)
		return -EINVAL;
	return -pthread_sigmask(SIG_BLOCK, set, NULL);
}

int pw_signal_init(struct pw_signal *s, const sigset_t *set)
{
	int err;

	if (!s)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	pw_op_init(&s->op);
	if (!set || sigisemptyset(set))
		return -EINVAL;
	err = pw_signal_block(set);
	if (err)
		return err;
	s->fd = signalfd(-1, set, SFD_NONBLOCK | SFD_CLOEXEC);
	return s->fd < 0 ? -errno : 0;
}

/* The read of one siginfo, prepared on the shard's ring. */
static void signal_prep(struct io_uring_sqe *sqe, void *arg)
{
	struct pw_signal *s = arg;

	io_uring_prep_read(sqe, s->fd, &s->info, sizeof(s->info), 0);
}

enum pw_poll pw_signal_poll(struct pw_cx *cx, struct pw_signal *s, int *signo)
{
	int32_t res;

	if (!signo)
		return PW_READY;
	if (!cx || !s) {
		*signo = -EINVAL;
		return PW_READY;
	}
	if (s->fd < 0 && s->op.state == PW_OP_IDLE) {
		*signo = -EBADF;
		return PW_READY;
	}
	for (;;) {
		if (pw_op_poll(cx, &s->op, signal_prep, s, &res) == PW_PENDING)
			return PW_PENDING;
		if (res == -EAGAIN || res == -EINTR)
			continue; /* nothing there after all: read again */
		if (res == (int32_t)sizeof(s->info))
			*signo = (int)s->info.ssi_signo;
		else
			*signo = res < 0 ? res : -EIO;
		return PW_READY;
	}
}

void pw_signal_close(struct pw_signal *s)
{
	if (!s)
		return;
	(void)pw_op_cancel(&s->op);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int pw_ctrl_c_init(struct pw_signal *s)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	return pw_signal_init(s, &set);
}

enum pw_poll pw_ctrl_c_poll(struct pw_cx *cx, struct pw_signal *s, int *res)
{
	int signo;

	if (!res)
		return PW_READY;
	if (pw_signal_poll(cx, s, &signo) == PW_PENDING)
		return PW_PENDING;
	*res = signo < 0 ? signo : 0;
	return PW_READY;
}
