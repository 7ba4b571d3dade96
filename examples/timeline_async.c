/* SPDX-License-Identifier: MIT */
/*
 * timeline_async.c - the time-combinators timeline (timeout, retry,
 * debounce) as straight-line tasks: PW_AWAIT is Rust's .await
 * (pinwheel/async.h, docs/async.md). The Tokio version is
 * bench/peers/tokio/examples/timeline.rs; both print
 * examples/timeline.expected on a paused clock. Unlike the Rust, nothing
 * here writes the combinators: pinwheel supplies pw_timeout, pw_retry and
 * pw_debounce. A task's state is a struct: locals do not survive an
 * await. The set-up calls (inits, spawns) are not checked: with these
 * arguments they only fail when memory runs out.
 */
#include <errno.h>
#include <stdio.h>

#include <pinwheel.h>

#define MS PW_NSEC_PER_MSEC
/* println! with the virtual ms since the start in front. */
#define say(...)                                                    \
	(printf("%lld ", (long long)(pw_time_now() / (int64_t)MS)), \
	 printf(__VA_ARGS__))

/* One arm of join!(race("first", 30), race("second", 300)). */
struct race {
	pw_async_t at; /* where the body resumes: 0 at first */
	const char *name;
	int d;
	struct pw_delay work; /* async { sleep(d).await; v } */
	struct pw_timeout to;
	int64_t out;
};

static enum pw_poll race_poll(struct pw_cx *cx, void *state)
{
	struct race *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	pw_timeout_init(&s->to, 100 * MS,
			pw_delay_init(&s->work, s->d * MS, 0));
	PW_AWAIT(pw_timeout_poll(cx, &s->to, &s->out));
	if (s->out == -ETIMEDOUT)
		say("timeout: %s timed out\n", s->name);
	else
		say("timeout: %s ok after %d ms\n", s->name, s->d);
	PW_ASYNC_END();
}

/* The producer: key 'a' + i at t0 + typed[i] ms, then drop(tx). */
static const int typed[] = { 0, 50, 100, 400, 450, 800 };

struct typist {
	pw_async_t at;
	struct pw_channel *tx;
	uint64_t t0;
	int i, res;
	char key;
	struct pw_sleep sl;
	struct pw_channel_sender snd;
};

static enum pw_poll typist_poll(struct pw_cx *cx, void *state)
{
	struct typist *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	for (s->i = 0; s->i < 6; s->i++) {
		pw_sleep_init_at(&s->sl, s->t0 + typed[s->i] * MS);
		PW_AWAIT(pw_sleep_poll(cx, &s->sl));
		s->key = (char)('a' + s->i);
		say("key: %c\n", s->key);
		PW_AWAIT(pw_channel_send_poll(cx, s->tx, &s->snd, &s->key,
					      &s->res));
	}
	pw_channel_close_tx(s->tx);
	PW_ASYNC_END();
}

/* async fn main: its state, then its body. */
struct timeline {
	pw_async_t at;
	struct pw_join first, second;
	int64_t v;
	struct pw_delay work; /* the retried call, bounded by 50 ms */
	struct pw_timeout to;
	struct pw_retry retry;
	struct pw_channel keys;
	char buf[16], held[2], key;
	int res;
	struct pw_debounce deb;
};

/* Attempt n of the call (the closure `bounded`): it hangs, then it is
 * refused, then it answers. */
static int call_start(void *arg, unsigned n, struct pw_future **fut)
{
	static const int took[] = { 80, 20, 10 };
	static const int ans[] = { 0, -ECONNREFUSED, 0 };
	struct timeline *s = arg;

	pw_timeout_init(&s->to, 50 * MS,
			pw_delay_init(&s->work, took[n - 1] * MS, ans[n - 1]));
	*fut = pw_timeout_future(&s->to);
	return 0;
}

static void call_failed(void *arg, unsigned n, int64_t err, uint64_t delay)
{
	(void)arg;
	say("retry: attempt %u failed (%s), next in %d ms\n", n,
	    err == -ETIMEDOUT ? "timed out" : "refused", (int)(delay / MS));
}

static const struct pw_retry_ops call_ops = { .start = call_start,
					      .failed = call_failed };

static enum pw_poll timeline_poll(struct pw_cx *cx, void *state)
{
	struct timeline *s = state;

	PW_ASYNC_BEGIN(cx, &s->at);
	pw_spawn(&s->first, race_poll,
		 &(struct race){ .name = "first", .d = 30 },
		 sizeof(struct race), NULL);
	pw_spawn(&s->second, race_poll,
		 &(struct race){ .name = "second", .d = 300 },
		 sizeof(struct race), NULL);
	PW_AWAIT(pw_join_poll(cx, &s->first, &s->v));
	PW_AWAIT(pw_join_poll(cx, &s->second, &s->v));

	pw_retry_init(&s->retry, 3, 100 * MS, &call_ops, s);
	PW_AWAIT(pw_retry_poll(cx, &s->retry, &s->v));
	if (s->v == 0)
		say("retry: attempt %u ok\n", pw_retry_attempts(&s->retry));

	pw_channel_init(&s->keys, 1, sizeof(s->buf), s->buf); /* mpsc(16) */
	pw_spawn(NULL, typist_poll,
		 &(struct typist){ .tx = &s->keys, .t0 = pw_time_now() },
		 sizeof(struct typist), NULL);
	pw_debounce_init(&s->deb, pw_channel_stream(&s->keys), 200 * MS, 0,
			 s->held);
	do { /* while let Some(k) = debounced.next().await */
		PW_AWAIT(pw_debounce_poll_next(cx, &s->deb, &s->key, &s->res));
		if (s->res > 0)
			say("debounce: %c\n", s->key);
	} while (s->res > 0);
	pw_debounce_drop(&s->deb);
	PW_ASYNC_END();
}

/* #[tokio::main(flavor = "current_thread", start_paused = true)] */
int main(void)
{
	static struct timeline tl;
	struct pw_runtime *rt;
	struct pw_config cfg;
	int64_t res = -1;

	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.flags = PW_CONFIG_PAUSED_CLOCK;
	if (pw_runtime_create(&rt, &cfg) ||
	    pw_block_on(rt, timeline_poll, &tl, &res))
		return 1;
	pw_runtime_destroy(rt);
	return res != 0;
}
