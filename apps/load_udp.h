/* SPDX-License-Identifier: MIT */
/*
 * load_udp.h - `pinwheel load --proto udp`: the task of one UDP
 * "connection" (a connected socket, one datagram in flight) and the UDP
 * lines of the run's reports, for apps/load.c (internal to the pinwheel
 * command).
 */
#ifndef PW_APPS_LOAD_UDP_H
#define PW_APPS_LOAD_UDP_H

#include <stdio.h>

#include "pinwheel.h"
#include "apps/expo.h"
#include "apps/load.h"

struct load_slot;

/* --size of a UDP run: the sequence number, up to IPv4's largest
 * payload. */
#define PW_LOAD_UDP_SIZE_MIN 8u
#define PW_LOAD_UDP_SIZE_MAX 65507u

/* The default time a datagram waits for its answer. */
#define PW_LOAD_UDP_TIMEOUT_NS PW_NSEC_PER_SEC

/**
 * pw__load_udp_spawn - spawn on @shard of @rt the task of slot @s (copied):
 * it opens a UDP socket connected to its address and sends one request at
 * a time until the run or the slot's quota is over (apps/load_udp.c).
 * Return: 0 or pw_runtime_spawn()'s error.
 * Context: the thread running pw_load_run().
 */
int pw__load_udp_spawn(struct pw_runtime *rt, unsigned shard,
		       const struct load_slot *s);

/**
 * pw__load_udp_add - add the counters of @one to @sum.
 * Context: any thread.
 */
void pw__load_udp_add(struct pw_load_udp_stats *sum,
		      const struct pw_load_udp_stats *one);

/**
 * pw__load_udp_print - the datagram line of pw_load_print(): sent,
 * received, lost, in flight, late, bad, send errors, ICMP errors.
 * Context: any thread.
 */
void pw__load_udp_print(const struct pw_load_udp_stats *u, FILE *f);

/**
 * pw__load_udp_json - the member ", "udp": {...}" of pw_load_write_json(),
 * the same counters under the names of struct pw_load_udp_stats.
 * Context: any thread.
 */
void pw__load_udp_json(const struct pw_load_udp_stats *u, FILE *f);

/**
 * pw__load_udp_counters - the same counters for a report
 * (pinwheel_load_udp_..._total).
 * Context: any thread.
 */
void pw__load_udp_counters(struct pw_expo *e,
			   const struct pw_load_udp_stats *u);

#endif /* PW_APPS_LOAD_UDP_H */
