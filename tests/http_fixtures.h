/* SPDX-License-Identifier: MIT */
/*
 * http_fixtures.h - the HTTP server the tests of the http command
 * (test_http.c, test_http_static.c) run: started on a runtime of its own
 * on a free loopback port, stopped with the check that no connection
 * and no descriptor is left.
 */
#ifndef PW_TESTS_HTTP_FIXTURES_H
#define PW_TESTS_HTTP_FIXTURES_H

#include "tests/common.h"
#include "pinwheel/net.h"
#include "apps/http.h"

/* A server and its runtime. */
struct pw_test_http {
	struct pw_runtime *rt;
	struct pw_http_server *s;
	struct pw_net_addr a; /* where it listens */
	int fds;	      /* open before the runtime started */
};

/*
 * Start a server with @o (NULL: the defaults) on 127.0.0.1, port chosen by
 * the kernel (in @v->a), on a runtime of @shards shards under @sched with
 * the runtime flags @flags on top of PW_CONFIG_OVERSUBSCRIBE; under
 * PW_SCHED_STEAL the listener is shared (PW_NET_LISTEN_SHARED). Fails the
 * test if the runtime or the server cannot start. The test's thread.
 */
static inline void pw_test_http_start(struct pw_test_http *v, unsigned shards,
				      const struct pw_http_opts *o,
				      enum pw_sched sched, unsigned flags)
{
	struct pw_config cfg;
	struct pw_net_addr any;
	struct pw_http_opts def = { 0 };

	v->fds = pw_test_open_fds();
	pw_config_init(&cfg);
	cfg.shards = shards;
	cfg.flags = PW_CONFIG_OVERSUBSCRIBE | flags;
	cfg.sched = sched;
	int err = pw_runtime_create(&v->rt, &cfg);
	cr_assert_eq(err, 0, "pw_runtime_create: %d (%s)", err,
		     pw_strerror_setup(err));
	if (!o)
		o = &def;
	struct pw_http_opts opts = *o;
	if (sched == PW_SCHED_STEAL)
		opts.listen_flags |= PW_NET_LISTEN_SHARED;
	cr_assert_eq(pw_net_addr_parse(&any, "127.0.0.1:0"), 0);
	err = pw_http_server_start(&v->s, v->rt, &any, &opts);
	cr_assert_eq(err, 0, "pw_http_server_start: %d", err);
	cr_assert_eq(pw_http_server_addr(v->s, &v->a), 0);
}

/*
 * Drain the server of pw_test_http_start() (every client is closed by
 * now), stop it and its runtime, and check that every connection task
 * ended (within PW_TEST_WAIT_SECS) and no descriptor is left. The test's
 * thread.
 */
static inline void pw_test_http_stop(struct pw_test_http *v)
{
	cr_assert_eq(pw_http_server_drain(v->s), 0);
	PW_TEST_WAIT_UNTIL(pw_http_server_open(v->s) == 0, PW_TEST_WAIT_SECS,
			   "%d connections left open after the drain",
			   pw_http_server_open(v->s));
	cr_assert_eq(pw_runtime_destroy(v->rt), 0);
	cr_assert_eq(pw_http_server_destroy(v->s), 0);
	cr_assert_eq(pw_test_open_fds(), v->fds, "descriptor leak");
}

#endif /* PW_TESTS_HTTP_FIXTURES_H */
