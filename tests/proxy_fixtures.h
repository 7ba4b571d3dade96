/* SPDX-License-Identifier: MIT */
/*
 * proxy_fixtures.h - the TCP proxy the tests of pinwheel proxy
 * (test_proxy.c, test_upstream.c) run in process: a configuration on a
 * free loopback port under the test's scheduler, and its start.
 */
#ifndef PW_TESTS_PROXY_FIXTURES_H
#define PW_TESTS_PROXY_FIXTURES_H

#include "tests/common.h"
#include "pinwheel/net.h"
#include "apps/proxy.h"

/*
 * pw_test_proxy_cfg - @cfg at its defaults, listening on 127.0.0.1 with
 * the port chosen by the kernel, on @shards shards (oversubscribed) under
 * the scheduler of the test's pass. The test's thread.
 */
static inline void pw_test_proxy_cfg(struct pw_proxy_config *cfg,
				     unsigned shards)
{
	pw_proxy_config_init(cfg);
	cfg->rt.sched = pw_test_sched();
	cr_assert_eq(pw_net_addr_parse(&cfg->listen, "127.0.0.1:0"), 0);
	cfg->rt.shards = shards;
	cfg->rt.flags |= PW_CONFIG_OVERSUBSCRIBE;
}

/*
 * pw_test_proxy_up - start a proxy with @cfg and put where it listens in
 * *@addr. Return: the proxy; fails the test if it cannot start. The
 * test's thread.
 */
static inline struct pw_proxy *pw_test_proxy_up(struct pw_proxy_config *cfg,
						struct pw_net_addr *addr)
{
	struct pw_proxy *p = NULL;
	int err = pw_proxy_start(&p, cfg);

	cr_assert_eq(err, 0, "pw_proxy_start: %d", err);
	cr_assert_eq(pw_proxy_addr(p, addr), 0);
	return p;
}

#endif /* PW_TESTS_PROXY_FIXTURES_H */
