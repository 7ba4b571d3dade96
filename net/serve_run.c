/* SPDX-License-Identifier: MIT */
/*
 * serve_run.c - pw_server_run(): the end of a server's main, Tokio's
 * "select on ctrl_c, then shut down gracefully" as one call.
 *
 * One task on shard 0 reads SIGINT and SIGTERM from a signal stream
 * (net/signal.c). The first signal starts the drain (net/drain.c) with
 * a deadline @grace from then; a second signal moves that deadline to
 * now, so the connections still live are aborted at once. The caller's
 * thread waits in pw_block_on() meanwhile.
 */
#include <errno.h>
#include <signal.h>

#include "pinwheel/serve.h"
#include "pinwheel/signal.h"
#include "net/serve_int.h"

struct run {
	struct pw_server *srv;
	struct pw_drain *d;
	uint64_t grace;
	struct pw_signal sig;
	struct pw_drain_wait w;
	pw_time_t deadline;
	bool stopping; /* the first signal came */
	int64_t aborted;
};

static void stop_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

int pw_server_signals_block(void)
{
	sigset_t set;

	stop_set(&set);
	return pw_signal_block(&set);
}

/* The next signal's number; 0 while none came (the read stays armed);
 * -errno when the stream failed (then it is closed). */
static int next_signal(struct pw_cx *cx, struct run *r)
{
	int signo;

	if (r->sig.fd < 0)
		return 0;
	if (pw_signal_poll(cx, &r->sig, &signo) == PW_PENDING)
		return 0;
	if (signo < 0)
		pw_signal_close(&r->sig);
	return signo;
}

static enum pw_poll run_poll(struct pw_cx *cx, void *state)
{
	struct run *r = state;

	if (!r->stopping) {
		/* A failed stream stops the server too: it cannot hear. */
		if (next_signal(cx, r) == 0)
			return PW_PENDING;
		r->stopping = true;
		r->deadline = pw_time_now() + r->grace;
	}
	/* Polled again at once, so the read is armed for a second one. */
	if (next_signal(cx, r) > 0) {
		r->deadline = pw_time_now(); /* abort what is still live */
		if (r->w.d)
			pw_sleep_reset(&r->w.timer, r->deadline);
	}
	if (pw_drain_wait_poll(cx, r->d, &r->w, r->deadline, &r->aborted) ==
	    PW_PENDING)
		return PW_PENDING;
	/* An acceptor may still be taking back its cancelled accept (and
	 * serving what it took): the listener is closed when the last one
	 * ends, and the run returns only then, so that a client coming
	 * after it is refused. */
	if (!pw__server_acceptors_ended(r->srv, cx))
		return PW_PENDING;
	pw_signal_close(&r->sig);
	return pw_ready(cx, r->aborted);
}

int64_t pw_server_run(struct pw_runtime *rt, struct pw_server *srv,
		      uint64_t grace)
{
	struct run r = { .srv = srv,
			 .d = pw_server_drain(srv),
			 .grace = grace };
	sigset_t set;
	int64_t res;
	int err;

	if (!rt || !srv)
		return -EINVAL;
	stop_set(&set);
	err = pw_signal_init(&r.sig, &set);
	if (err)
		return err;
	err = pw_block_on(rt, run_poll, &r, &res);
	if (err) {
		pw_signal_close(&r.sig);
		return err;
	}
	return res;
}
