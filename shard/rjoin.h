/* SPDX-License-Identifier: MIT */
/*
 * rjoin.h - the runtime's spawn from any thread with an output area, the
 * one call shard/rjoin.c (pw_runtime_spawn_join()) needs from
 * shard/shard.c. Private to the library.
 */
#ifndef PW_SHARD_RJOIN_H
#define PW_SHARD_RJOIN_H

#include <stddef.h>

#include "pinwheel/runtime.h"

/* pw_runtime_spawn() whose task gets an output area of @out bytes
 * (pw_task_output()); @out 0: none. The arguments are checked by the
 * caller, except @rt and @shard. Return: as pw_runtime_spawn(). Any
 * thread. */
int pw__runtime_spawn_out(struct pw_runtime *rt, unsigned shard, pw_poll_fn fn,
			  const void *state, size_t size, pw_drop_fn drop,
			  size_t out);

#endif /* PW_SHARD_RJOIN_H */
