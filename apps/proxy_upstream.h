/* SPDX-License-Identifier: MIT */
/*
 * proxy_upstream.h - the proxy's upstream table (docs/proxy.md,
 * "Upstreams and balancing"): the servers, their state, the pick of one
 * for a new connection, passive marking, active checks and the periodic
 * re-resolution of host names.
 *
 * The table has two halves. The authoritative one (each server's
 * address, name, weight, up/down/draining state, check counters) is
 * written under the table's lock by the upkeep task (checks and
 * re-resolution, on shard 0) and, rarely, by a shard that marks a
 * server down passively. Each shard has its own view: which servers it
 * may pick, their weights, the smooth weighted round robin state and
 * the per-server counters of its connections. A change of the
 * authoritative half is published to every shard through the mesh
 * (pw_submit_to()); each shard copies it into its view on its own
 * thread. A pick reads only the shard's view: no lock and no atomic
 * shared between shards on the data path.
 */
#ifndef PW_APPS_PROXY_UPSTREAM_H
#define PW_APPS_PROXY_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "apps/proxy.h"

struct pxu_table;
struct pxu_view;

/**
 * pxu_create - a table for @cfg's servers (upstream[], with their
 * items, weights and check settings) for @nshards shards.
 * Return: the table, or NULL without memory.
 * Context: any thread, before the shards use it.
 */
struct pxu_table *pxu_create(const struct pw_proxy_config *cfg,
			     unsigned nshards);

/** pxu_destroy - free @t (after its runtime stopped). Context: any. */
void pxu_destroy(struct pxu_table *t);

/**
 * pxu_view - the view of shard @shard (clamped to the shard count).
 * Context: any thread; only that shard's thread picks with it.
 */
struct pxu_view *pxu_view(struct pxu_table *t, int shard);

/**
 * pxu_pick - the server for a new connection on the caller's shard:
 * smooth weighted round robin or least connections over the servers up
 * in @v at @now. The pick's active count is raised (pxu_release()
 * lowers it).
 * Return: the slot, or -1 when no server is up.
 * Context: the thread running @v's shard.
 */
int pxu_pick(struct pxu_table *t, struct pxu_view *v, uint64_t now);

/**
 * pxu_next - the failover after @slot failed: the next server up in
 * @v in table order not in @tried, its active count raised.
 * Return: the slot, or -1 when none is left.
 * Context: the thread running @v's shard.
 */
int pxu_next(struct pxu_table *t, struct pxu_view *v, int slot, uint64_t tried,
	     uint64_t now);

/**
 * pxu_release - a connection counted on @slot of @v (the view of the
 * pick) ends or moves on.
 * Context: any thread (a relaxed atomic decrement).
 */
void pxu_release(struct pxu_view *v, int slot);

/** pxu_addr - the address of @slot. Context: a shard thread. */
const struct pw_net_addr *pxu_addr(struct pxu_table *t, int slot);

/**
 * pxu_connected - a connect to @slot succeeded: counted in @v, its run
 * of failures ended. Context: the thread running @v's shard.
 */
void pxu_connected(struct pxu_table *t, struct pxu_view *v, int slot);

/**
 * pxu_failed - a connect to @slot failed: counted in @v; at max_fails in
 * a row the server is marked down in @v at once, and with checks on in
 * the table too (published to every shard; rise good checks bring it
 * back); with checks off it is tried again on this shard after
 * fail_timeout. Context: the thread running @v's shard.
 */
void pxu_failed(struct pxu_table *t, struct pxu_view *v, int slot,
		uint64_t now);

/**
 * pxu_bytes - count @n bytes of @slot, upstream-bound (@down false) or
 * client-bound, in @v. Context: the thread running @v's shard.
 */
void pxu_bytes(struct pxu_view *v, int slot, bool down, uint64_t n);

/**
 * pxu_start - spawn the upkeep task (checks, re-resolution, removal of
 * drained servers) on shard 0 of @rt when checks or re-resolution are
 * on. Return: 0 or the error of pw_runtime_spawn().
 * Context: the thread that created @rt.
 */
int pxu_start(struct pxu_table *t, struct pw_runtime *rt);

/**
 * pxu_stats - the servers of @t (in use or draining), up to @max into
 * @out. Return: the number of servers (may exceed @max).
 * Context: any thread.
 */
int pxu_stats(struct pxu_table *t, struct pw_proxy_upstream_stats *out,
	      unsigned max);

/**
 * pxu_behind - the shards whose view has not applied the table's last
 * change yet (0 once a change reached every shard).
 * Context: any thread.
 */
unsigned pxu_behind(struct pxu_table *t);

/**
 * pxu_count - servers in use in @t, and of those up (*@up).
 * Context: any thread.
 */
unsigned pxu_count(struct pxu_table *t, unsigned *up);

#endif /* PW_APPS_PROXY_UPSTREAM_H */
