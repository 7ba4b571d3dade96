/* example.c - spawn tasks on a shard, await them, read a pipe. */
#include <liburing.h>
#include <pinwheel.h>
#include <stdio.h>
#include <unistd.h>

/* A task that squares its number. */
struct square {
	int64_t n;
};

static enum pw_poll square_poll(struct pw_cx *cx, void *state)
{
	struct square *s = state;
	return pw_ready(cx, s->n * s->n);
}

/* The root task: spawns three squares, awaits them, then reads from a
 * pipe through io_uring. State machines keep their progress in fields. */
struct root {
	int step, fds[2];
	int64_t sum;
	struct pw_join joins[3];
	struct pw_op read;
	char buf[16];
};

static void prep_read(struct io_uring_sqe *sqe, void *arg)
{
	struct root *r = arg;
	io_uring_prep_read(sqe, r->fds[0], r->buf, sizeof(r->buf), 0);
}

static enum pw_poll root_poll(struct pw_cx *cx, void *state)
{
	struct root *r = state;
	int64_t v;
	int32_t n;

	if (r->step == 0) {
		for (int i = 0; i < 3; i++) {
			struct square s = { i + 1 };
			pw_spawn(&r->joins[i], square_poll, &s, sizeof(s),
				 NULL);
		}
		r->step = 1;
	}
	for (; r->step <= 3; r->step++) {
		if (pw_join_poll(cx, &r->joins[r->step - 1], &v) == PW_PENDING)
			return PW_PENDING; /* woken when that task finishes */
		r->sum += v;
	}
	if (pw_op_poll(cx, &r->read, prep_read, r, &n) == PW_PENDING)
		return PW_PENDING; /* woken when the CQE arrives */
	printf("sum of squares %lld, read \"%.*s\"\n", (long long)r->sum,
	       n > 0 ? (int)n : 0, r->buf);
	return pw_ready(cx, r->sum);
}

int main(void)
{
	struct pw_runtime *rt;
	struct root r = { 0 };
	int64_t result;

	int err = pw_runtime_create(&rt, NULL);
	if (err) {
		fprintf(stderr, "pinwheel: %s\n", pw_strerror_setup(err));
		return 1;
	}
	if (pipe(r.fds) < 0 || write(r.fds[1], "hello", 5) != 5)
		return 1;
	pw_op_init(&r.read);
	pw_block_on(rt, root_poll, &r, &result);
	pw_runtime_destroy(rt);
	return result == 14 ? 0 : 1;
}
