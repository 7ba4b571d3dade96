/* SPDX-License-Identifier: MIT */
/*
 * fault.c - the armed rule of fault.h and its counters, under one lock.
 * Only allocations made while a rule is armed come here.
 */
#include "core/fault.h"

#include <pthread.h>

atomic_uint pw__fault_armed;

static pthread_mutex_t rule_mu = PTHREAD_MUTEX_INITIALIZER;
static enum pw__fault_site rule_site;
static unsigned long rule_skip, rule_count;
static unsigned long seen[PW__FAULT_NSITES], failed[PW__FAULT_NSITES];

bool pw__fault_hit(enum pw__fault_site site)
{
	bool fail = false;

	pthread_mutex_lock(&rule_mu);
	/* relaxed: the lock orders it against pw__fault_disarm(). */
	if (atomic_load_explicit(&pw__fault_armed, memory_order_relaxed)) {
		seen[site]++;
		seen[PW__FAULT_ANY]++;
		if (rule_site == PW__FAULT_ANY || rule_site == site) {
			if (rule_skip)
				rule_skip--;
			else if (rule_count) {
				rule_count--;
				fail = true;
				failed[site]++;
				failed[PW__FAULT_ANY]++;
			}
		}
	}
	pthread_mutex_unlock(&rule_mu);
	return fail;
}

void pw__fault_arm(enum pw__fault_site site, unsigned long skip,
		   unsigned long count)
{
	pthread_mutex_lock(&rule_mu);
	rule_site = site;
	rule_skip = skip;
	rule_count = count;
	for (int i = 0; i < PW__FAULT_NSITES; i++)
		seen[i] = failed[i] = 0;
	/* release: pairs with the relaxed load in pw__fault(); see there. */
	atomic_store_explicit(&pw__fault_armed, 1, memory_order_release);
	pthread_mutex_unlock(&rule_mu);
}

void pw__fault_disarm(void)
{
	pthread_mutex_lock(&rule_mu);
	/* relaxed: the lock orders it against pw__fault_hit(); an
	 * allocation that loaded 1 before this store still finds the rule
	 * disarmed there. */
	atomic_store_explicit(&pw__fault_armed, 0, memory_order_relaxed);
	pthread_mutex_unlock(&rule_mu);
}

unsigned long pw__fault_seen(enum pw__fault_site site)
{
	pthread_mutex_lock(&rule_mu);
	unsigned long n = seen[site];
	pthread_mutex_unlock(&rule_mu);
	return n;
}

unsigned long pw__fault_failed(enum pw__fault_site site)
{
	pthread_mutex_lock(&rule_mu);
	unsigned long n = failed[site];
	pthread_mutex_unlock(&rule_mu);
	return n;
}
