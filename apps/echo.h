/* SPDX-License-Identifier: MIT */
/* echo.h - the echo service of `pinwheel echo`, for other programs. */
#ifndef PW_APPS_ECHO_H
#define PW_APPS_ECHO_H

#include "pinwheel.h"
#include "pinwheel/net.h"

/*
 * Spawn on shard @shard of @rt the task that accepts connections from @l
 * and echoes each one in a task of its own (end of stream answered with
 * a half-close). It runs until the runtime is destroyed. Returns 0 or
 * pw_runtime_spawn()'s error.
 */
int pw_echo_serve(struct pw_runtime *rt, unsigned shard,
		  struct pw_net_listener *l);

#endif /* PW_APPS_ECHO_H */
