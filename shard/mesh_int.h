/* SPDX-License-Identifier: MIT */
/*
 * mesh_int.h - the mesh's calls (mesh.c) and what a shard keeps for each
 * destination: the SPSC rings between shards, their overflow and the
 * pw_call slots. Private to the library.
 */
#ifndef PW_SHARD_MESH_INT_H
#define PW_SHARD_MESH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "pinwheel/list.h"
#include "shard/spsc.h"

struct pw__shard;
struct pw__task;
struct pw_runtime;
struct pw__ovf;

/* Messages staged per destination before one batch publish. */
#define PW__STAGE 32

struct pw_net_op;

/* What a shard keeps for one destination shard. */
struct pw__outq {
	struct pw__spsc *ring;	  /* our ring to it */
	struct pw__ovf *ovf_head; /* waiting for room, oldest first */
	struct pw__ovf *ovf_tail;
	struct pw_list waiters; /* pw_calls waiting for a slot */
	uint32_t nstage;	/* messages in stage[] */
	uint32_t calls;		/* pw_calls in flight to it */
	bool pushed;		/* published since the last rouse */
	struct pw__msg stage[PW__STAGE];
};

/* Make and free @rt's rings and per-destination queues. The runtime's
 * creator thread; create returns 0 or -ENOMEM. */
int pw__mesh_create(struct pw_runtime *rt);
void pw__mesh_destroy(struct pw_runtime *rt);
/* Stage @m for shard @dst (published by the next flush): 0, or -ENOMEM
 * when neither the ring nor the overflow has room. Shard thread only. */
int pw__mesh_send(struct pw__shard *s, unsigned dst, const struct pw__msg *m);
/* Run the messages waiting in @s's inbound rings. Shard thread only. */
void pw__mesh_drain(struct pw__shard *s);
/* Publish the staged messages and rouse their receivers. Shard thread. */
void pw__mesh_flush(struct pw__shard *s);
/* No message waits in any inbound ring (no fence: for polling). */
bool pw__mesh_empty(struct pw__shard *s);
/* The same after a seq_cst fence: for the check after "asleep" is up. */
bool pw__mesh_idle(struct pw__shard *s);
/* Shutdown: true once every shard is stopping and quiet with no message
 * in flight (see mesh.c). Shard thread only. */
bool pw__mesh_stop_done(struct pw__shard *s);
/* The longest @s may sleep, in ns: a short poll interval while an
 * overflow backlog waits for room, else UINT64_MAX. Shard thread only. */
uint64_t pw__mesh_wait_cap(struct pw__shard *s);
/* Send @t's owner a message carrying one reference of ours: wake (if
 * @wake) and drop it. false if it could not be staged (no memory). */
bool pw__mesh_remote_wake(struct pw__shard *s, struct pw__task *t, bool wake);
/* Our MSG_RING to the shard named in @ud failed: kick its eventfd
 * instead. Shard thread only. */
void pw__mesh_send_failed(struct pw__shard *s, uint64_t ud);

#endif /* PW_SHARD_MESH_INT_H */
