/* SPDX-License-Identifier: MIT */
/*
 * access_log_task.c - the access log's tasks: on each shard a flusher
 * that writes the shard's buffers through the file API, on shard 0 the
 * SIGHUP reader that reopens the file, and the short requests the log's
 * owner spawns on a shard to ask its flusher for a flush or for its end.
 *
 * Every task touching a slot is spawned for the slot's shard, which in
 * stealing mode fixes it to that worker: a slot is only ever touched by
 * one thread (pw_access_log_add() runs there too) and needs no lock.
 *
 * A flusher is one loop over these steps, each taken when the ones
 * before it have nothing to do:
 *   1. a request in flight (a write, or the close of an old opening):
 *      wait for its final completion and account for it;
 *   2. an opening it let go of last: close it;
 *   3. a buffer handed out and not all written: write its next piece
 *      (whole lines of at most PIPE_BUF bytes to a pipe, all of it to a
 *      file) at PW_FILE_POS of the O_APPEND descriptor;
 *   4. a newer opening published by the SIGHUP reader: move to it;
 *   5. records waiting and a reason to write them (the 100 ms tick, a
 *      full buffer, a flush asked for, the stop): hand the buffer out;
 *   6. stopping with nothing left: let go of the opening and end;
 *   7. otherwise wait for the tick or a wake.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/access_log_int.h"

/* ---- openings of the file ------------------------------------------------ */

struct al_file *al_file_new(int fd, unsigned refs, bool own, bool pipe)
{
	struct al_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fd = fd;
	f->pipe = pipe;
	atomic_init(&f->refs, refs);
	atomic_init(&f->next, NULL);
	if (own) {
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0 && (fl & O_NONBLOCK))
			(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	return f;
}

bool al_file_put(struct al_file *f)
{
	/* acq_rel: pairs with the other holders' fetch_sub (see struct
	 * al_file): their writes on f->fd end before the last closes it. */
	return atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) ==
	       1;
}

/* ---- opening the file ------------------------------------------------ */

/* Opening the file through the file API: the open, then a statx of the
 * descriptor for its type. O_NONBLOCK: a FIFO nobody reads fails
 * (-ENXIO) instead of waiting for a reader. */
struct al_opening {
	struct pw_file_req req;
	struct statx stx;
	int fd;	   /* the open's result, once the statx runs */
	bool stat; /* the statx is in flight */
};

static void opening_init(struct al_opening *o, const char *path)
{
	pw_file_open_init(&o->req, AT_FDCWD, path,
			  O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK, 0644);
	o->fd = -1;
	o->stat = false;
}

/* Return: PW_READY with *@res the descriptor (o->stx.stx_mode 0 when
 * the statx failed) or the open's -errno; PW_PENDING before. */
static enum pw_poll opening_poll(struct pw_cx *cx, struct al_opening *o,
				 int32_t *res)
{
	int32_t v;

	for (;;) {
		if (pw_file_poll(cx, &o->req, PW_TIME_NEVER, &v) == PW_PENDING)
			return PW_PENDING;
		if (o->stat || v < 0) {
			if (o->stat && v < 0)
				o->stx.stx_mode = 0;
			*res = o->stat ? o->fd : v;
			return PW_READY;
		}
		o->fd = v;
		o->stat = true;
		memset(&o->stx, 0, sizeof(o->stx));
		pw_file_statx_init(&o->req, v, "", AT_EMPTY_PATH, STATX_TYPE,
				   &o->stx);
	}
}

/* Whether the opening is not a regular file (unknown: not). */
static bool opening_pipe(const struct al_opening *o)
{
	return !S_ISREG(o->stx.stx_mode);
}

struct al_opener {
	const char *path;
	struct al_opening o;
	bool started;
};

static enum pw_poll opener_poll(struct pw_cx *cx, void *state)
{
	struct al_opener *op = state;
	int32_t res;

	if (!op->started) {
		op->started = true;
		opening_init(&op->o, op->path);
	}
	if (opening_poll(cx, &op->o, &res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, res);
}

int al_open_sync(struct pw_runtime *rt, const char *path, bool *pipe)
{
	struct al_opener op = { .path = path };
	int64_t res = -EIO;
	struct stat st;
	int err, fd;

	if (!path) {
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return -errno;
		*pipe = fstat(fd, &st) || !S_ISREG(st.st_mode);
		return fd;
	}
	err = pw_block_on(rt, opener_poll, &op, &res);
	*pipe = opening_pipe(&op.o);
	return err ? err : (int)res;
}

/* ---- the flusher ----------------------------------------------------------- */

struct al_flusher {
	struct pw_access_log *l;
	struct al_slot *s;
	struct pw_sleep tick;
	struct pw_file_req req;
	pw_time_t deadline; /* of each request: PW_TIME_NEVER until the
			       stop */
	int close_fd;	    /* an opening to close (step 2), or -1 */
	bool started;
	bool busy;    /* req is in flight */
	bool closing; /* ... and it is a close */
	bool due;     /* the tick fired since the last hand-out */
	bool retry;   /* the last write found no room (-EAGAIN): the
			 next waits for the tick */
};

/* A flush request waiting in a slot's list. */
struct al_kick {
	struct al_slot *s;
	struct pw_list node; /* in s->waiters while linked */
	struct pw_waker w;
	struct pw_sleep dl;
	uint64_t target, timeout;
	bool stop, started, linked;
};

static void wake_waiters(struct al_slot *s)
{
	struct pw_list *n;

	for (n = s->waiters.next; n != &s->waiters; n = n->next)
		pw_waker_wake_by_ref(
			&pw_list_entry(n, struct al_kick, node)->w);
}

/* The records of the handed-out buffer from out_off on are lost. */
static void out_lost(struct al_slot *s)
{
	size_t rest = s->out_len - s->out_off;

	al_count(&s->wdropped, al_lost(s, rest));
	s->done += rest;
	s->out_off = s->out_len;
}

/* Account for a write's result @res. */
static void fl_wrote(struct al_flusher *f, int32_t res)
{
	struct al_slot *s = f->s;

	if (res > 0) {
		s->out_off += (size_t)res; /* short: the rest goes next */
		s->done += (uint64_t)res;
		return;
	}
	if (res == -EAGAIN) { /* a descriptor shared in O_NONBLOCK */
		f->retry = true;
		return;
	}
	out_lost(s);
	if (res == -ETIMEDOUT || res == -ECANCELED)
		return; /* the stop's deadline */
	al_count(&s->werrors, 1);
	al_say_error(f->l, res ? -res : EIO);
}

/* Step 2: close the opening it let go of last. */
static void fl_close(struct al_flusher *f)
{
	pw_file_close_init(&f->req, f->close_fd);
	f->close_fd = -1;
	f->busy = f->closing = true;
}

/* Step 3: the next piece of the handed-out buffer. */
static void fl_write(struct al_flusher *f)
{
	struct al_slot *s = f->s;
	const char *p = s->buf[s->cur ^ 1u] + s->out_off;
	size_t n = s->out_len - s->out_off;

	if (s->file->pipe && n > PIPE_BUF) {
		const char *e = memrchr(p, '\n', PIPE_BUF);
		n = e ? (size_t)(e - p) + 1 : PIPE_BUF;
	}
	pw_file_write_init(&f->req, s->file->fd, p, n, PW_FILE_POS);
	f->busy = true;
	f->closing = false;
}

/* Step 4: move to the opening after s->file, if there is one. */
static bool fl_move(struct al_flusher *f)
{
	struct al_slot *s = f->s;
	/* Acquire: pairs with the release store of the SIGHUP reader. */
	struct al_file *n =
		atomic_load_explicit(&s->file->next, memory_order_acquire);

	if (!n)
		return false;
	if (al_file_put(s->file)) {
		f->close_fd = s->file->fd;
		s->file->fd = -1;
	}
	s->file = n;
	return true;
}

/* Whether the current buffer may not hold the next record. */
static bool cur_full(const struct pw_access_log *l, const struct al_slot *s)
{
	return s->len[s->cur] + PW_ACCESS_LOG_LINE > l->cap;
}

/* Steps 2 to 5. Return: whether one was taken. */
static bool fl_step(struct al_flusher *f)
{
	struct al_slot *s = f->s;

	if (f->close_fd >= 0) {
		fl_close(f);
		return true;
	}
	if (s->out_busy) {
		if (s->out_off == s->out_len) {
			s->out_busy = false;
			wake_waiters(s);
			return true;
		}
		if (f->retry && !f->due)
			return false;
		f->retry = f->due = false;
		fl_write(f);
		return true;
	}
	if (s->file && fl_move(f))
		return true;
	if ((s->len[s->cur] || s->unsaid) &&
	    (f->due || cur_full(f->l, s) || s->want > s->done || s->stopping)) {
		f->due = false;
		al_hand_out(s);
		return true;
	}
	return false;
}

/* Step 6: let go of the opening (its close, if this was the last
 * hold, is left to the loop) and of the waker; from now on the shard's
 * records stay in its buffer for the close. */
static void fl_end(struct al_flusher *f)
{
	struct al_slot *s = f->s;

	s->ended = true;
	if (al_file_put(s->file)) {
		f->close_fd = s->file->fd;
		s->file->fd = -1;
	}
	s->file = NULL;
	pw_sleep_cancel(&f->tick);
	pw_waker_drop(&s->flusher);
	wake_waiters(s);
}

static void fl_start(struct pw_cx *cx, struct al_flusher *f)
{
	struct pw_waker w = pw_cx_waker(cx);

	f->started = true;
	(void)pw_waker_clone(&f->s->flusher, &w);
	pw_sleep_init(&f->tick, AL_PERIOD_NS);
}

static enum pw_poll fl_poll(struct pw_cx *cx, void *state)
{
	struct al_flusher *f = state;
	struct al_slot *s = f->s;
	int32_t res;

	if (!f->started)
		fl_start(cx, f);
	if (s->stopping && f->deadline == PW_TIME_NEVER)
		f->deadline = pw_time_now() + AL_STOP_WAIT_NS;
	for (;;) {
		if (f->busy) { /* step 1; a close is never given up */
			if (pw_file_poll(cx, &f->req,
					 f->closing ? PW_TIME_NEVER :
						      f->deadline,
					 &res) == PW_PENDING)
				return PW_PENDING;
			f->busy = false;
			if (!f->closing)
				fl_wrote(f, res);
			continue;
		}
		if (s->ended) { /* only a close may be left */
			if (f->close_fd < 0)
				return pw_ready(cx, 0);
			fl_close(f);
			continue;
		}
		if (fl_step(f))
			continue;
		if (s->stopping && !s->out_busy && !s->len[s->cur] &&
		    !s->unsaid) {
			fl_end(f);
			continue;
		}
		if (pw_sleep_poll(cx, &f->tick) == PW_PENDING)
			return PW_PENDING;
		f->due = true;
		pw_sleep_reset_after(&f->tick, AL_PERIOD_NS);
	}
}

/* Dropped by the runtime's stop (no pw_access_log_stop() came first) or
 * an abort: a write in flight is cancelled and, its result unknown, its
 * lines are counted as dropped. */
static void fl_drop(void *state)
{
	struct al_flusher *f = state;
	struct al_slot *s = f->s;

	pw_file_cancel(&f->req);
	pw_sleep_cancel(&f->tick);
	if (f->busy && !f->closing && s->out_busy)
		out_lost(s);
	if (f->close_fd >= 0)
		close(f->close_fd);
	s->ended = true;
	pw_waker_drop(&s->flusher);
	wake_waiters(s);
}

/* ---- flush and stop requests ----------------------------------------- */

static void kick_unlink(struct al_kick *k)
{
	if (k->linked)
		pw_list_del(&k->node);
	k->linked = false;
	pw_waker_drop(&k->w);
	pw_sleep_cancel(&k->dl);
}

/* A request of the owner on a shard: stop its flusher (k->stop), or wait
 * until it wrote what the shard had added when the request came. */
static enum pw_poll kick_poll(struct pw_cx *cx, void *state)
{
	struct al_kick *k = state;
	struct al_slot *s = k->s;

	if (!k->started) {
		k->started = true;
		pw_waker_wake_by_ref(&s->flusher);
		if (k->stop) {
			s->stopping = true;
			return pw_ready(cx, 0);
		}
		struct pw_waker w = pw_cx_waker(cx);
		k->target = s->added;
		if (s->want < k->target)
			s->want = k->target;
		(void)pw_waker_clone(&k->w, &w);
		pw_list_add_tail(&k->node, &s->waiters);
		k->linked = true;
		pw_sleep_init(&k->dl, k->timeout);
	}
	if (s->done >= k->target || s->ended) {
		kick_unlink(k);
		return pw_ready(cx, s->done >= k->target ? 0 : -ESHUTDOWN);
	}
	if (pw_sleep_poll(cx, &k->dl) == PW_READY) {
		kick_unlink(k);
		return pw_ready(cx, -ETIMEDOUT);
	}
	return PW_PENDING;
}

/* A stop request never polled (shard mode: no memory for it on its
 * shard) still stops the flusher. */
static void kick_drop(void *state)
{
	struct al_kick *k = state;

	if (k->stop && !k->started) {
		k->s->stopping = true;
		pw_waker_wake_by_ref(&k->s->flusher);
	}
	kick_unlink(k);
}

/* ---- the SIGHUP reader ---------------------------------------------------- */

enum { R_WAIT, R_OPEN, R_CLOSE };

struct al_rotator {
	struct pw_access_log *l;
	struct pw_signal sig;
	struct al_opening o; /* its request also closes an old opening */
	int phase;	     /* R_* */
	bool started, sig_ok;
};

/* The reopen gave @res: publish the new opening to every flusher. */
static void rot_opened(struct al_rotator *r, int32_t res)
{
	struct pw_access_log *l = r->l;
	struct al_file *f, *old = l->last;

	r->phase = R_WAIT;
	f = res >= 0 ?
		    al_file_new(res, l->nslots + 1, true, opening_pipe(&r->o)) :
		    NULL;
	if (!f) {
		al_count(&l->rerrors, 1);
		al_say_error(l, res < 0 ? -res : ENOMEM);
		if (res >= 0) {
			pw_file_close_init(&r->o.req, res);
			r->phase = R_CLOSE;
		}
		return;
	}
	f->older = old;
	l->last = f;
	al_count(&l->reopens, 1);
	/* Relaxed: the flag alone (see struct pw_access_log). */
	atomic_store_explicit(&l->err_said, false, memory_order_relaxed);
	/* Release: pairs with the acquire load in fl_move(); the node is
	 * whole before a flusher can see it. */
	atomic_store_explicit(&old->next, f, memory_order_release);
	if (al_file_put(old)) {
		pw_file_close_init(&r->o.req, old->fd);
		old->fd = -1;
		r->phase = R_CLOSE;
	}
}

static bool rot_start(struct pw_cx *cx, struct al_rotator *r)
{
	struct pw_waker w = pw_cx_waker(cx);
	sigset_t set;
	int err;

	r->started = true;
	(void)pw_waker_clone(&r->l->rot_waker, &w);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	err = pw_signal_init(&r->sig, &set);
	if (err)
		al_say_error(r->l, -err);
	return !err;
}

static enum pw_poll rot_poll(struct pw_cx *cx, void *state)
{
	struct al_rotator *r = state;
	int32_t res;
	int signo;

	if (!r->started)
		r->sig_ok = rot_start(cx, r);
	for (;;) {
		if (r->phase == R_OPEN) {
			if (opening_poll(cx, &r->o, &res) == PW_PENDING)
				return PW_PENDING;
			rot_opened(r, res);
			continue;
		}
		if (r->phase == R_CLOSE) {
			if (pw_file_poll(cx, &r->o.req, PW_TIME_NEVER, &res) ==
			    PW_PENDING)
				return PW_PENDING;
			r->phase = R_WAIT;
			continue;
		}
		if (r->l->rot_stop || !r->sig_ok)
			break;
		if (pw_signal_poll(cx, &r->sig, &signo) == PW_PENDING)
			return PW_PENDING;
		if (signo < 0) {
			al_say_error(r->l, -signo);
			r->sig_ok = false;
			continue;
		}
		opening_init(&r->o, r->l->path);
		r->phase = R_OPEN;
	}
	pw_signal_close(&r->sig);
	pw_waker_drop(&r->l->rot_waker);
	return pw_ready(cx, 0);
}

static void rot_drop(void *state)
{
	struct al_rotator *r = state;

	pw_file_cancel(&r->o.req);
	pw_signal_close(&r->sig);
	if (r->started)
		pw_waker_drop(&r->l->rot_waker);
}

/* On shard 0: end the SIGHUP reader (once an open in flight is done). */
static enum pw_poll rot_stop_poll(struct pw_cx *cx, void *state)
{
	struct pw_access_log *l = *(struct pw_access_log **)state;

	l->rot_stop = true;
	pw_waker_wake_by_ref(&l->rot_waker);
	return pw_ready(cx, 0);
}

/* ---- starting and stopping them ------------------------------------------ */

int al_tasks_start(struct pw_access_log *l, bool sighup)
{
	int err = 0;

	l->flushers = calloc(l->nslots, sizeof(*l->flushers));
	if (!l->flushers)
		return -ENOMEM;
	for (unsigned i = 0; i < l->nslots && !err; i++) {
		struct al_flusher f = { .l = l,
					.s = &l->slot[i],
					.deadline = PW_TIME_NEVER,
					.close_fd = -1 };
		err = pw_runtime_spawn_join(l->rt, i, fl_poll, &f, sizeof(f),
					    fl_drop, 0, &l->flushers[i]);
	}
	if (!err && sighup) {
		struct al_rotator r = { .l = l, .phase = R_WAIT };
		(void)pw_signal_init(&r.sig, NULL); /* fd -1 until its start */
		err = pw_runtime_spawn_join(l->rt, 0, rot_poll, &r, sizeof(r),
					    rot_drop, 0, &l->rotator);
	}
	if (err)
		al_tasks_stop(l);
	return err;
}

void al_tasks_stop(struct pw_access_log *l)
{
	if (l->rotator) {
		if (pw_runtime_spawn(l->rt, 0, rot_stop_poll, &l, sizeof(l),
				     NULL))
			(void)pw_rjoin_abort(l->rotator);
		(void)pw_rjoin_wait(l->rotator, NULL, NULL, 0);
		l->rotator = NULL;
	}
	for (unsigned i = 0; l->flushers && i < l->nslots; i++) {
		struct al_kick k = { .s = &l->slot[i], .stop = true };
		if (l->flushers[i] && pw_runtime_spawn(l->rt, i, kick_poll, &k,
						       sizeof(k), kick_drop))
			(void)pw_rjoin_abort(l->flushers[i]);
	}
	for (unsigned i = 0; l->flushers && i < l->nslots; i++) {
		if (l->flushers[i])
			(void)pw_rjoin_wait(l->flushers[i], NULL, NULL, 0);
		l->flushers[i] = NULL;
	}
}

void al_tasks_reap(struct pw_access_log *l)
{
	if (l->rotator)
		(void)pw_rjoin_wait(l->rotator, NULL, NULL, 0);
	l->rotator = NULL;
	for (unsigned i = 0; l->flushers && i < l->nslots; i++) {
		if (l->flushers[i])
			(void)pw_rjoin_wait(l->flushers[i], NULL, NULL, 0);
		l->flushers[i] = NULL;
	}
}

int al_tasks_flush(struct pw_access_log *l, uint64_t timeout_ns)
{
	struct pw_rjoin **h = calloc(l->nslots, sizeof(*h));
	int rc = 0;

	if (!h)
		return -ENOMEM;
	for (unsigned i = 0; i < l->nslots; i++) {
		struct al_kick k = { .s = &l->slot[i], .timeout = timeout_ns };
		if (pw_runtime_spawn_join(l->rt, i, kick_poll, &k, sizeof(k),
					  kick_drop, 0, &h[i]))
			rc = -ESHUTDOWN;
	}
	for (unsigned i = 0; i < l->nslots; i++) {
		int64_t res = 0;

		if (h[i] && pw_rjoin_wait(h[i], &res, NULL, 0))
			res = -ESHUTDOWN; /* dropped: the runtime stops */
		if (res < 0 && !rc)
			rc = (int)res;
	}
	free(h);
	return rc;
}
