/* SPDX-License-Identifier: MIT */
/*
 * timeline_fiber.c - the time-combinators timeline (timeout, retry,
 * debounce) with fibers: plain C functions on their own stacks whose
 * blocking-style calls suspend only the fiber (pinwheel/fiber.h,
 * docs/fiber.md), so main reads as the Rust's async fn main does.
 * timeline_poll.c and timeline_async.c are the same program as poll
 * functions; the Tokio version is bench/peers/tokio/examples/timeline.rs.
 * All print examples/timeline.expected on a paused clock.
 *
 * A fiber's timeout is its deadline (pw_fiber_timeout()): every blocking
 * call fails with -ETIMEDOUT once it passes. The retry is a loop; the
 * debounce is pinwheel's pw_debounce over the channel, which a fiber
 * awaits as any poll function (pw_fiber_await()). The set-up calls are
 * not checked: with these arguments they only fail when memory runs out.
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
struct arm {
	const char *name;
	int d;
};

static int64_t race(void *arg)
{
	struct arm *a = arg;

	pw_fiber_timeout(100 * MS); /* timeout(ms(100), sleep(ms(d))) */
	if (pw_fiber_sleep(a->d * MS) == -ETIMEDOUT)
		say("timeout: %s timed out\n", a->name);
	else
		say("timeout: %s ok after %d ms\n", a->name, a->d);
	return 0;
}

/* The call the retry repeats: it hangs, then it is refused, then it
 * answers. */
static int call(unsigned n)
{
	static const int took[] = { 80, 20, 10 };
	static const int ans[] = { 0, -ECONNREFUSED, 0 };
	int err = pw_fiber_sleep(took[n - 1] * MS);

	return err ? err : ans[n - 1];
}

/* The producer: key 'a' + i at t0 + typed[i] ms, then drop(tx). */
static int64_t typist(void *arg)
{
	static const int typed[] = { 0, 50, 100, 400, 450, 800 };
	struct pw_channel *tx = arg;
	pw_time_t t0 = pw_time_now();

	for (int i = 0; i < 6; i++) {
		char key = (char)('a' + i);

		pw_fiber_sleep_until(t0 + typed[i] * MS);
		say("key: %c\n", key);
		pw_fiber_channel_send(tx, &key);
	}
	pw_channel_close_tx(tx);
	return 0;
}

/* debounced.next().await, as a poll function a fiber can await. */
struct next {
	struct pw_debounce *deb;
	char key;
	int res;
};

static enum pw_poll next_poll(struct pw_cx *cx, void *state)
{
	struct next *n = state;

	if (pw_debounce_poll_next(cx, n->deb, &n->key, &n->res) == PW_PENDING)
		return PW_PENDING;
	return pw_ready(cx, n->res);
}

/* async fn main */
static int64_t timeline(void *arg)
{
	static struct arm arms[] = { { "first", 30 }, { "second", 300 } };
	struct pw_join join[2];
	struct pw_channel keys;
	char buf[16], held[2];
	struct pw_debounce deb;
	struct next next = { .deb = &deb };

	(void)arg;
	for (int i = 0; i < 2; i++)
		PW_FIBER_SPAWN(&join[i], race, &arms[i]);
	for (int i = 0; i < 2; i++)
		pw_fiber_join(&join[i]);

	for (unsigned n = 1, delay = 100;; n++, delay *= 2) {
		pw_fiber_timeout(50 * MS); /* each attempt: 50 ms at most */
		int err = call(n);

		pw_fiber_set_deadline(PW_TIME_NEVER);
		if (!err) {
			say("retry: attempt %u ok\n", n);
			break;
		}
		if (n == 3)
			break;
		say("retry: attempt %u failed (%s), next in %u ms\n", n,
		    err == -ETIMEDOUT ? "timed out" : "refused", delay);
		pw_fiber_sleep(delay * MS);
	}

	pw_channel_init(&keys, 1, sizeof(buf), buf); /* mpsc::channel(16) */
	PW_FIBER_SPAWN(NULL, typist, &keys);
	pw_debounce_init(&deb, pw_channel_stream(&keys), 200 * MS, 0, held);
	while (pw_fiber_await(next_poll, &next, NULL) > 0)
		say("debounce: %c\n", next.key);
	pw_debounce_drop(&deb);
	return 0;
}

/* #[tokio::main(flavor = "current_thread", start_paused = true)] */
int main(void)
{
	struct pw_runtime *rt;
	struct pw_config cfg;
	int64_t res = -1;

	pw_config_init(&cfg);
	cfg.shards = 1;
	cfg.flags = PW_CONFIG_PAUSED_CLOCK;
	if (pw_runtime_create(&rt, &cfg) ||
	    pw_fiber_block_on(rt, timeline, NULL, &res))
		return 1;
	pw_runtime_destroy(rt);
	return res != 0;
}
