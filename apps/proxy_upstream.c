/* SPDX-License-Identifier: MIT */
/*
 * proxy_upstream.c - the proxy's upstream table of proxy_upstream.h: the
 * --upstream list, the servers and their state, each shard's view, the
 * pick (smooth weighted round robin, least connections), passive
 * marking, and the upkeep task (TCP connect checks, re-resolution of
 * names on the blocking pool, removal of drained servers).
 *
 * Choices (docs/proxy.md): the pick and the active counts of leastconn
 * are per shard, over the shard's own connections (as HAProxy's per
 * thread group balancing), so a pick touches no memory another shard
 * writes. No server up: the client is closed at once and counted, as
 * HAProxy does in TCP mode. A server a re-resolution adds starts down
 * when checks are on (rise good checks bring it in) and up otherwise.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pinwheel.h"
#include "pinwheel/blocking.h"
#include "pinwheel/mesh.h"
#include "apps/proxy_upstream.h"
#include "apps/resolve.h"

#define NSRV   PW_PROXY_MAX_UPSTREAMS
#define BIT(i) (1ull << (i))

/* One server. The fields are written under the table's lock; in_use,
 * draining, gen, addr, text, item and weight only by the upkeep task
 * (or before the shards start), which may read them without it. */
struct pxu_server {
	struct pw_net_addr addr;
	char text[PW_NET_ADDR_STRLEN];
	unsigned item, weight, gen; /* gen: bumped when the slot is reused */
	uint8_t state;		    /* PW_PROXY_UPSTREAM_UP or _DOWN */
	bool in_use, draining;
	uint64_t drain_gen; /* the table gen that published the drain */
	unsigned ok_run, bad_run;
	uint64_t checks_ok, checks_failed, transitions;
	char last_err[64];
};

/* Per-server counters of a view (indices into struct pxu_view.c). */
enum { U_ACTIVE, U_CONNECTS, U_FAILS, U_UP, U_DOWN, U_N };

struct pxu_view {
	/* Written and read by the view's shard thread only. */
	uint64_t up; /* a bit per slot: may be picked */
	unsigned weight[NSRV];
	unsigned gen[NSRV];
	int cur[NSRV]; /* smooth weighted round robin's current weights */
	unsigned fails[NSRV];	   /* connect failures in a row */
	uint64_t down_until[NSRV]; /* passive mark with checks off */
	unsigned rr;		   /* leastconn's tie breaker */
	/* The table gen last applied: release store by the view's shard,
	 * acquire load by the upkeep task (pairs: a drained slot is freed
	 * only once every view stopped picking it). */
	_Atomic uint64_t applied;
	/* U_ACTIVE: relaxed add by the picking thread, release sub by the
	 * ending one (any thread), acquire load by the upkeep task before
	 * it frees a slot. The others: relaxed load + store by the view's
	 * shard only, relaxed loads by readers (statistics). */
	_Atomic uint64_t c[NSRV][U_N];
} __attribute__((aligned(64)));

/* The upkeep task's state for one server's check. */
struct pxu_check {
	struct pw_connect conn;
	bool busy;
	unsigned gen; /* the slot gen this state is for */
	uint64_t next, deadline;
};

/* A re-resolution's answers, one row per item. */
struct pxu_rjob {
	struct pxu_table *t;
	int n[NSRV];
	struct pw_net_addr a[NSRV][PW_RESOLVE_MAX];
};

struct pxu_upkeep {
	struct pxu_table *t;
	struct pxu_check chk[NSRV];
	struct pw_sleep sleep;
	struct pw_blocking blk;
	bool resolving;
	uint64_t next_resolve;
	uint64_t rng;
	struct pxu_rjob job;
};

struct pxu_table {
	pthread_mutex_t lock;
	struct pxu_server srv[NSRV];
	struct pw_proxy_upstream_item item[NSRV];
	unsigned nitems;
	int balance;
	uint64_t interval, timeout, fail_timeout, resolve_interval;
	unsigned rise, fall, max_fails;
	pw_proxy_resolve_fn resolve;
	uint64_t gen; /* under the lock: bumped at each published change */
	/* Written under the lock, read relaxed by any thread (counts). */
	_Atomic unsigned n_in_use, n_up;
	unsigned nshards;
	struct pxu_view *view;
	struct pxu_upkeep *uk;
};

static inline void vc_add(struct pxu_view *v, int slot, int i, uint64_t n)
{
	/* Relaxed load + store: only the view's shard writes it. */
	atomic_store_explicit(
		&v->c[slot][i],
		atomic_load_explicit(&v->c[slot][i], memory_order_relaxed) + n,
		memory_order_relaxed);
}

/* Under the lock: the published counts of servers in use and up. */
static void recount(struct pxu_table *t)
{
	unsigned n = 0, up = 0;

	for (unsigned i = 0; i < NSRV; i++) {
		struct pxu_server *s = &t->srv[i];

		n += s->in_use;
		up += s->in_use && !s->draining &&
		      s->state == PW_PROXY_UPSTREAM_UP;
	}
	/* Relaxed: counts, read by pxu_count(). */
	atomic_store_explicit(&t->n_in_use, n, memory_order_relaxed);
	atomic_store_explicit(&t->n_up, up, memory_order_relaxed);
}

/* "upstream 127.0.0.1:9001" or "upstream 127.0.0.1:9001 (db:9001)". */
static void say(struct pxu_table *t, const struct pxu_server *s,
		const char *what)
{
	const struct pw_proxy_upstream_item *it = &t->item[s->item];

	if (it->numeric)
		fprintf(stderr, "pinwheel proxy: upstream %s %s\n", s->text,
			what);
	else
		fprintf(stderr, "pinwheel proxy: upstream %s (%s) %s\n",
			s->text, it->name, what);
}

/* ---- the views ---------------------------------------------------------- */

/* Copy the table's state into @v (on @v's shard). */
static void view_apply(struct pxu_table *t, struct pxu_view *v)
{
	uint64_t up = 0, g;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < NSRV; i++) {
		struct pxu_server *s = &t->srv[i];
		bool ok = s->in_use && !s->draining &&
			  s->state == PW_PROXY_UPSTREAM_UP;

		if (v->gen[i] != s->gen) {
			v->gen[i] = s->gen;
			v->cur[i] = 0;
		}
		v->weight[i] = s->weight;
		if (ok && !(v->up & BIT(i))) {
			/* Back up: a fresh run of failures. */
			v->fails[i] = 0;
			v->down_until[i] = 0;
		}
		up |= ok ? BIT(i) : 0;
	}
	v->up = up;
	g = t->gen;
	pthread_mutex_unlock(&t->lock);
	/* Release: pairs with the acquire load in reap(). */
	atomic_store_explicit(&v->applied, g, memory_order_release);
}

/* A published change arrives on a shard. */
static void apply_msg(void *arg)
{
	struct pxu_table *t = arg;

	view_apply(t, pxu_view(t, pw_shard_id()));
}

/* Send the table's state to every shard's view (the caller's own at
 * once). Context: a shard thread. */
static void publish(struct pxu_table *t)
{
	int me = pw_shard_id();

	for (unsigned k = 0; k < t->nshards; k++) {
		if ((int)k == me)
			view_apply(t, &t->view[k]);
		else if (pw_submit_to(k, apply_msg, t))
			fprintf(stderr,
				"pinwheel proxy: upstream state not sent to "
				"shard %u\n",
				k);
	}
}

struct pxu_view *pxu_view(struct pxu_table *t, int shard)
{
	return &t->view[shard >= 0 && (unsigned)shard < t->nshards ?
				(unsigned)shard :
				0];
}

const struct pw_net_addr *pxu_addr(struct pxu_table *t, int slot)
{
	return &t->srv[slot].addr;
}

static bool usable(const struct pxu_view *v, int i, uint64_t now)
{
	return (v->up & BIT(i)) && v->down_until[i] <= now;
}

static int take(struct pxu_view *v, int slot)
{
	/* Relaxed: pairs with the release sub in pxu_release(); a count
	 * that only this thread raises for this pick. */
	atomic_fetch_add_explicit(&v->c[slot][U_ACTIVE], 1,
				  memory_order_relaxed);
	return slot;
}

/* nginx's smooth weighted round robin: each server's current weight
 * grows by its weight, the largest is picked and loses the total. */
static int pick_swrr(struct pxu_view *v, uint64_t now)
{
	int best = -1, total = 0;

	for (int i = 0; i < NSRV; i++) {
		if (!usable(v, i, now))
			continue;
		v->cur[i] += (int)v->weight[i];
		total += (int)v->weight[i];
		if (best < 0 || v->cur[i] > v->cur[best])
			best = i;
	}
	if (best >= 0)
		v->cur[best] -= total;
	return best;
}

/* Fewest active connections per weight; ties go round the table. */
static int pick_least(struct pxu_view *v, uint64_t now)
{
	int best = -1;
	uint64_t ba = 0;

	for (int k = 0; k < NSRV; k++) {
		int i = (int)((v->rr + (unsigned)k) % NSRV);
		uint64_t a;

		if (!usable(v, i, now))
			continue;
		/* Relaxed: a count (see struct pxu_view). */
		a = atomic_load_explicit(&v->c[i][U_ACTIVE],
					 memory_order_relaxed);
		if (best < 0 || a * v->weight[best] < ba * v->weight[i]) {
			best = i;
			ba = a;
		}
	}
	if (best >= 0)
		v->rr = (unsigned)best + 1;
	return best;
}

int pxu_pick(struct pxu_table *t, struct pxu_view *v, uint64_t now)
{
	int i = t->balance == PW_PROXY_LEASTCONN ? pick_least(v, now) :
						   pick_swrr(v, now);

	return i < 0 ? -1 : take(v, i);
}

int pxu_next(struct pxu_table *t, struct pxu_view *v, int slot, uint64_t tried,
	     uint64_t now)
{
	(void)t;
	for (int k = 1; k <= NSRV; k++) {
		int i = (slot + k) % NSRV;

		if (usable(v, i, now) && !(tried & BIT(i)))
			return take(v, i);
	}
	return -1;
}

void pxu_release(struct pxu_view *v, int slot)
{
	/* Release: pairs with the acquire load in reap(), so this
	 * connection's counting is done before its slot may be freed. */
	atomic_fetch_sub_explicit(&v->c[slot][U_ACTIVE], 1,
				  memory_order_release);
}

void pxu_connected(struct pxu_table *t, struct pxu_view *v, int slot)
{
	(void)t;
	vc_add(v, slot, U_CONNECTS, 1);
	v->fails[slot] = 0;
}

void pxu_bytes(struct pxu_view *v, int slot, bool down, uint64_t n)
{
	vc_add(v, slot, down ? U_DOWN : U_UP, n);
}

void pxu_failed(struct pxu_table *t, struct pxu_view *v, int slot, uint64_t now)
{
	struct pxu_server *s = &t->srv[slot];
	bool changed = false;
	char what[96];

	vc_add(v, slot, U_FAILS, 1);
	if (!t->max_fails || ++v->fails[slot] < t->max_fails)
		return;
	v->fails[slot] = 0;
	snprintf(what, sizeof(what), "is DOWN (%u connect failures of clients)",
		 t->max_fails);
	if (!t->interval) {
		/* No checker: this shard alone tries it again later. */
		v->down_until[slot] = now + t->fail_timeout;
		pthread_mutex_lock(&t->lock);
		say(t, s, what);
		pthread_mutex_unlock(&t->lock);
		return;
	}
	v->up &= ~BIT(slot);
	pthread_mutex_lock(&t->lock);
	if (s->in_use && s->gen == v->gen[slot] &&
	    s->state == PW_PROXY_UPSTREAM_UP) {
		s->state = PW_PROXY_UPSTREAM_DOWN;
		s->ok_run = 0;
		s->transitions++;
		t->gen++;
		recount(t);
		say(t, s, what);
		changed = true;
	}
	pthread_mutex_unlock(&t->lock);
	if (changed)
		publish(t);
}

/* ---- the upkeep task: checks ------------------------------------------ */

/* A number in [0, @n) from the task's generator (xorshift). */
static uint64_t rnd(struct pxu_upkeep *u, uint64_t n)
{
	u->rng ^= u->rng << 13;
	u->rng ^= u->rng >> 7;
	u->rng ^= u->rng << 17;
	return n ? u->rng % n : 0;
}

/* A check of @slot ended: 0 or -errno. */
static void check_result(struct pxu_table *t, int slot, int err)
{
	struct pxu_server *s = &t->srv[slot];
	bool changed = false;
	char what[128];

	pthread_mutex_lock(&t->lock);
	if (!err) {
		s->checks_ok++;
		s->bad_run = 0;
		if (s->state == PW_PROXY_UPSTREAM_DOWN &&
		    ++s->ok_run >= t->rise) {
			s->state = PW_PROXY_UPSTREAM_UP;
			snprintf(what, sizeof(what), "is UP (%u checks)",
				 s->ok_run);
			changed = true;
		}
	} else {
		s->checks_failed++;
		s->ok_run = 0;
		snprintf(s->last_err, sizeof(s->last_err), "connect: %s",
			 err == -ETIMEDOUT ? "timeout" : strerror(-err));
		if (s->state == PW_PROXY_UPSTREAM_UP &&
		    ++s->bad_run >= t->fall) {
			s->state = PW_PROXY_UPSTREAM_DOWN;
			snprintf(what, sizeof(what), "is DOWN (%s, %u checks)",
				 s->last_err, s->bad_run);
			changed = true;
		}
	}
	if (changed) {
		s->ok_run = 0;
		s->bad_run = 0;
		s->transitions++;
		t->gen++;
		recount(t);
		say(t, s, what);
	}
	pthread_mutex_unlock(&t->lock);
	if (changed)
		publish(t);
}

/* Drive the check of @slot; *@wake: the earliest time it needs a look. */
static void check_step(struct pw_cx *cx, struct pxu_upkeep *u, int slot,
		       uint64_t now, uint64_t *wake)
{
	struct pxu_table *t = u->t;
	struct pxu_server *s = &t->srv[slot];
	struct pxu_check *c = &u->chk[slot];
	int fd;

	if (!s->in_use || s->draining || c->gen != s->gen) {
		if (c->busy)
			pw_connect_cancel(&c->conn);
		c->busy = false;
		/* The first check of a server lands anywhere in the first
		 * interval, so servers are not checked in lockstep. */
		c->gen = s->gen;
		c->next = now + rnd(u, t->interval);
		if (!s->in_use || s->draining)
			return;
	}
	if (!c->busy) {
		if (now < c->next) {
			*wake = c->next < *wake ? c->next : *wake;
			return;
		}
		pw_connect_init(&c->conn, &s->addr);
		c->deadline = now + t->timeout;
		c->busy = true;
	}
	if (pw_connect_poll(cx, &c->conn, c->deadline, &fd) == PW_PENDING)
		return;
	c->busy = false;
	if (fd >= 0)
		close(fd);
	check_result(t, slot, fd >= 0 ? 0 : fd);
	/* The next one an interval on, give or take a sixteenth. */
	c->next = now + t->interval - t->interval / 16 +
		  rnd(u, t->interval / 8 + 1);
	*wake = c->next < *wake ? c->next : *wake;
}

/* ---- the upkeep task: names ------------------------------------------- */

/* On the blocking pool: every name's addresses. */
static int64_t resolve_job(void *arg)
{
	struct pxu_rjob *j = arg;
	struct pxu_table *t = j->t;

	for (unsigned i = 0; i < t->nitems; i++)
		if (!t->item[i].numeric)
			j->n[i] = t->resolve(t->item[i].name, SOCK_STREAM,
					     j->a[i], PW_RESOLVE_MAX);
	return 0;
}

static bool same_addr(const struct pw_net_addr *a, const struct pw_net_addr *b)
{
	return a->len == b->len && !memcmp(&a->u, &b->u, a->len);
}

/* Under the lock: a free slot for @a of item @it, or -1 (logged). */
static int add_server(struct pxu_table *t, unsigned it,
		      const struct pw_net_addr *a)
{
	for (int i = 0; i < NSRV; i++) {
		struct pxu_server *s = &t->srv[i];
		unsigned gen = s->gen + 1;

		if (s->in_use)
			continue;
		memset(s, 0, sizeof(*s));
		s->addr = *a;
		pw_net_addr_format(a, s->text, sizeof(s->text));
		s->item = it;
		s->weight = t->item[it].weight;
		s->gen = gen;
		s->in_use = true;
		s->state = t->interval ? PW_PROXY_UPSTREAM_DOWN :
					 PW_PROXY_UPSTREAM_UP;
		say(t, s,
		    t->interval ? "added (DOWN until its checks pass)" :
				  "added (UP)");
		return i;
	}
	fprintf(stderr,
		"pinwheel proxy: %s: an address left out: %d servers "
		"already\n",
		t->item[it].name, NSRV);
	return -1;
}

/* Under the lock: item @it now has the @n addresses @a. */
static bool reconcile_item(struct pxu_table *t, unsigned it,
			   const struct pw_net_addr *a, int n)
{
	bool changed = false;

	for (int i = 0; i < NSRV; i++) {
		struct pxu_server *s = &t->srv[i];
		bool found = false;

		if (!s->in_use || s->item != it)
			continue;
		for (int k = 0; k < n && !found; k++)
			found = same_addr(&s->addr, &a[k]);
		if (found == !s->draining)
			continue;
		s->draining = !found;
		s->drain_gen = t->gen + 1;
		say(t, s,
		    found ? "is back in its name's addresses" :
			    "is DRAINING (no longer an address of its name)");
		changed = true;
	}
	for (int k = 0; k < n; k++) {
		bool found = false;

		for (int i = 0; i < NSRV && !found; i++)
			found = t->srv[i].in_use && t->srv[i].item == it &&
				same_addr(&t->srv[i].addr, &a[k]);
		if (!found && add_server(t, it, &a[k]) >= 0)
			changed = true;
	}
	return changed;
}

/* The answers of a re-resolution: servers added and drained. */
static void reconcile(struct pxu_table *t, struct pxu_rjob *j)
{
	bool changed = false;

	pthread_mutex_lock(&t->lock);
	for (unsigned it = 0; it < t->nitems; it++) {
		if (t->item[it].numeric)
			continue;
		if (j->n[it] <= 0) {
			fprintf(stderr,
				"pinwheel proxy: %s: %s; its addresses are "
				"kept\n",
				t->item[it].name,
				pw_resolve_strerror(j->n[it]));
			continue;
		}
		changed |= reconcile_item(t, it, j->a[it], j->n[it]);
	}
	if (changed) {
		t->gen++;
		recount(t);
	}
	pthread_mutex_unlock(&t->lock);
	if (changed)
		publish(t);
}

/* Drained servers no view picks any more and no connection uses go. */
static void reap(struct pxu_table *t)
{
	uint64_t seen = UINT64_MAX;
	bool changed = false;

	for (unsigned k = 0; k < t->nshards; k++) {
		/* Acquire: pairs with the release store in view_apply(). */
		uint64_t g = atomic_load_explicit(&t->view[k].applied,
						  memory_order_acquire);
		seen = g < seen ? g : seen;
	}
	for (int i = 0; i < NSRV; i++) {
		struct pxu_server *s = &t->srv[i];
		uint64_t active = 0;

		if (!s->in_use || !s->draining || s->drain_gen > seen)
			continue;
		for (unsigned k = 0; k < t->nshards; k++)
			/* Acquire: pairs with pxu_release(). */
			active +=
				atomic_load_explicit(&t->view[k].c[i][U_ACTIVE],
						     memory_order_acquire);
		if (active)
			continue;
		/* No connection counts on it any more: its counters go. */
		for (unsigned k = 0; k < t->nshards; k++)
			for (int c = 0; c < U_N; c++)
				/* Relaxed: nobody writes them now. */
				atomic_store_explicit(&t->view[k].c[i][c], 0,
						      memory_order_relaxed);
		pthread_mutex_lock(&t->lock);
		say(t, s, "removed (drained)");
		s->in_use = false;
		s->draining = false;
		t->gen++;
		recount(t);
		pthread_mutex_unlock(&t->lock);
		changed = true;
	}
	if (changed)
		publish(t);
}

/* Drive the re-resolution; *@wake as check_step(). */
static void resolve_step(struct pw_cx *cx, struct pxu_upkeep *u, uint64_t now,
			 uint64_t *wake)
{
	struct pxu_table *t = u->t;
	int64_t r;

	if (!u->resolving && now >= u->next_resolve) {
		u->job.t = t;
		if (pw_spawn_blocking(&u->blk, resolve_job, &u->job)) {
			u->next_resolve = now + t->resolve_interval;
		} else {
			u->resolving = true;
		}
	}
	if (u->resolving) {
		if (pw_blocking_poll(cx, &u->blk, &r) == PW_PENDING)
			return;
		u->resolving = false;
		reconcile(t, &u->job);
		u->next_resolve = now + t->resolve_interval;
	}
	*wake = u->next_resolve < *wake ? u->next_resolve : *wake;
}

static enum pw_poll upkeep_poll(struct pw_cx *cx, void *state)
{
	struct pxu_upkeep *u = state;
	struct pxu_table *t = u->t;

	for (;;) {
		uint64_t now = pw_time_now();
		/* At least a look a second: drained servers to remove. */
		uint64_t wake = now + PW_NSEC_PER_SEC;

		for (int i = 0; t->interval && i < NSRV; i++)
			check_step(cx, u, i, now, &wake);
		if (t->resolve_interval)
			resolve_step(cx, u, now, &wake);
		reap(t);
		pw_sleep_reset(&u->sleep, wake);
		if (pw_sleep_poll(cx, &u->sleep) == PW_PENDING)
			return PW_PENDING;
	}
}

static void upkeep_drop(void *state)
{
	struct pxu_upkeep *u = state;

	for (int i = 0; i < NSRV; i++)
		if (u->chk[i].busy)
			pw_connect_cancel(&u->chk[i].conn);
	pw_sleep_cancel(&u->sleep);
}

int pxu_start(struct pxu_table *t, struct pw_runtime *rt)
{
	bool names = false;

	for (unsigned i = 0; i < t->nitems; i++)
		names |= !t->item[i].numeric;
	if (!t->interval && !(names && t->resolve_interval))
		return 0;
	if (!names)
		t->resolve_interval = 0;
	t->uk->t = t;
	t->uk->rng = (uint64_t)(uintptr_t)t ^ 0x9e3779b97f4a7c15ull;
	t->uk->next_resolve = t->resolve_interval;
	for (int i = 0; i < NSRV; i++)
		t->uk->chk[i].gen = ~0u;
	pw_sleep_init(&t->uk->sleep, 0);
	return pw_runtime_spawn(rt, 0, upkeep_poll, t->uk, 0, upkeep_drop);
}

/* ---- the table ------------------------------------------------------- */

struct pxu_table *pxu_create(const struct pw_proxy_config *cfg,
			     unsigned nshards)
{
	struct pxu_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nshards = nshards ? nshards : 1;
	t->view = aligned_alloc(64, t->nshards * sizeof(*t->view));
	t->uk = calloc(1, sizeof(*t->uk));
	if (!t->view || !t->uk) {
		free(t->view);
		free(t->uk);
		free(t);
		return NULL;
	}
	memset(t->view, 0, t->nshards * sizeof(*t->view));
	pthread_mutex_init(&t->lock, NULL);
	t->balance = cfg->balance;
	t->interval = cfg->check_interval_ns;
	t->timeout = cfg->check_timeout_ns;
	t->rise = cfg->rise ? cfg->rise : 1;
	t->fall = cfg->fall ? cfg->fall : 1;
	t->max_fails = cfg->max_fails;
	t->fail_timeout = cfg->fail_timeout_ns;
	t->resolve_interval = cfg->resolve_interval_ns;
	t->resolve = cfg->resolve ? cfg->resolve : pw_resolve;
	t->nitems = cfg->nitems;
	memcpy(t->item, cfg->item, sizeof(t->item));
	for (unsigned i = 0; i < cfg->nupstreams; i++) {
		struct pxu_server *s = &t->srv[i];
		unsigned w = cfg->upstream_weight[i];

		s->addr = cfg->upstream[i];
		pw_net_addr_format(&s->addr, s->text, sizeof(s->text));
		s->weight = w ? w : 1;
		s->in_use = true;
		s->state = PW_PROXY_UPSTREAM_UP;
		if (!cfg->nitems) {
			/* Addresses given directly: each its own item. */
			static_assert(sizeof(s->text) <=
					      sizeof(t->item[i].name),
				      "an address fits a name");
			memcpy(t->item[i].name, s->text, sizeof(s->text));
			t->item[i].weight = s->weight;
			t->item[i].numeric = true;
			s->item = i;
		} else {
			s->item = cfg->upstream_item[i] < cfg->nitems ?
					  cfg->upstream_item[i] :
					  0;
		}
	}
	if (!cfg->nitems)
		t->nitems = cfg->nupstreams;
	recount(t);
	for (unsigned k = 0; k < t->nshards; k++)
		view_apply(t, &t->view[k]);
	return t;
}

void pxu_destroy(struct pxu_table *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->view);
	free(t->uk);
	free(t);
}

unsigned pxu_count(struct pxu_table *t, unsigned *up)
{
	/* Relaxed: counts (see recount()). */
	if (up)
		*up = atomic_load_explicit(&t->n_up, memory_order_relaxed);
	return atomic_load_explicit(&t->n_in_use, memory_order_relaxed);
}

unsigned pxu_behind(struct pxu_table *t)
{
	unsigned n = 0;
	uint64_t g;

	pthread_mutex_lock(&t->lock);
	g = t->gen;
	pthread_mutex_unlock(&t->lock);
	for (unsigned k = 0; k < t->nshards; k++)
		/* Acquire: pairs with the release store in view_apply(). */
		n += atomic_load_explicit(&t->view[k].applied,
					  memory_order_acquire) < g;
	return n;
}

/* The sum of counter @c of @slot over the views. */
static uint64_t vsum(struct pxu_table *t, int slot, int c)
{
	uint64_t v = 0;

	for (unsigned k = 0; k < t->nshards; k++)
		/* Relaxed: statistics (see struct pxu_view). */
		v += atomic_load_explicit(&t->view[k].c[slot][c],
					  memory_order_relaxed);
	return v;
}

int pxu_stats(struct pxu_table *t, struct pw_proxy_upstream_stats *out,
	      unsigned max)
{
	unsigned n = 0;

	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < NSRV; i++) {
		struct pxu_server *s = &t->srv[i];
		struct pw_proxy_upstream_stats *o = &out[n];

		if (!s->in_use)
			continue;
		if (n++ >= max)
			continue;
		memset(o, 0, sizeof(*o));
		snprintf(o->addr, sizeof(o->addr), "%s", s->text);
		snprintf(o->name, sizeof(o->name), "%s", t->item[s->item].name);
		o->weight = s->weight;
		o->state = s->draining ? PW_PROXY_UPSTREAM_DRAINING : s->state;
		o->active = vsum(t, i, U_ACTIVE);
		o->connects = vsum(t, i, U_CONNECTS);
		o->connect_failures = vsum(t, i, U_FAILS);
		o->bytes_up = vsum(t, i, U_UP);
		o->bytes_down = vsum(t, i, U_DOWN);
		o->checks_ok = s->checks_ok;
		o->checks_failed = s->checks_failed;
		o->transitions = s->transitions;
		snprintf(o->last_error, sizeof(o->last_error), "%s",
			 s->last_err);
	}
	pthread_mutex_unlock(&t->lock);
	return (int)n;
}

/* ---- the --upstream list ---------------------------------------------- */

/* The port of an IPv4 or IPv6 address, else 1 (a unix socket). */
static unsigned addr_port(const struct pw_net_addr *a)
{
	if (a->u.sa.sa_family == AF_INET)
		return ntohs(a->u.in4.sin_port);
	if (a->u.sa.sa_family == AF_INET6)
		return ntohs(a->u.in6.sin6_port);
	return 1;
}

/* The weight after '@' in @w: 1..PW_PROXY_MAX_WEIGHT, or 0. */
static unsigned parse_weight(const char *w)
{
	unsigned v = 0;

	if (!*w)
		return 0;
	for (; *w; w++) {
		if (*w < '0' || *w > '9' || v > PW_PROXY_MAX_WEIGHT)
			return 0;
		v = v * 10 + (unsigned)(*w - '0');
	}
	return v <= PW_PROXY_MAX_WEIGHT ? v : 0;
}

/* What is wrong with an item whose host:port is not one (the words of
 * pw_cli_addr(), with names). */
#define NOT_ADDR "is not an address (HOST:PORT, [IPv6]:PORT or unix:PATH)"

/* The addresses of the item @name (its weight cut off) into @a (room
 * for @room), with @res for a name; *@msg says what is wrong, after the
 * item and a space ("has port 0") or, for a lookup, a colon ("': name not
 * known", *@lookup set).
 * Return: the number of addresses, or -errno with *@msg set. */
static int item_addrs(const char *name, pw_proxy_resolve_fn res,
		      struct pw_net_addr *a, unsigned room, bool *numeric,
		      const char **msg, bool *lookup)
{
	char host[PW_RESOLVE_HOST_MAX + 1];
	uint16_t port = 0;
	int n;

	*numeric = pw_net_addr_parse(&a[0], name) == 0;
	if (*numeric) {
		*msg = addr_port(&a[0]) ? NULL : "has port 0";
		return *msg ? -EINVAL : 1;
	}
	n = pw_resolve_split(name, host, sizeof(host), &port);
	if (n == -ENAMETOOLONG) {
		*msg = "has a host name too long";
		return n;
	}
	if (n) {
		*msg = NOT_ADDR;
		return -EINVAL;
	}
	if (!port) {
		*msg = "has port 0";
		return -EINVAL;
	}
	n = res(name, SOCK_STREAM, a,
		room < PW_RESOLVE_MAX ? room : PW_RESOLVE_MAX);
	*msg = n < 0 ? pw_resolve_strerror(n) : NULL;
	*lookup = true;
	return n;
}

/* Parse one item @text (@len bytes) into @it and its addresses into
 * @a (room for @room); the message on an error into @why. Return: the
 * number of addresses, or -errno. */
static int parse_item(const struct pw_proxy_config *cfg, const char *text,
		      size_t len, struct pw_proxy_upstream_item *it,
		      struct pw_net_addr *a, unsigned room, char *why,
		      size_t whysize)
{
	char buf[PW_PROXY_NAME_MAX + 8];
	const char *msg = NULL;
	bool lookup = false;
	char *at;
	int n;

	if (!len || len >= sizeof(buf)) {
		snprintf(why, whysize, "'%.*s' %s", (int)(len > 64 ? 64 : len),
			 text, len ? "is too long" : NOT_ADDR);
		return len ? -ENAMETOOLONG : -EINVAL;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	memset(it, 0, sizeof(*it));
	it->weight = 1;
	at = strrchr(buf, '@');
	if (at) {
		*at = '\0';
		it->weight = parse_weight(at + 1);
	}
	if (strlen(buf) >= sizeof(it->name)) {
		snprintf(why, whysize, "'%.*s' is too long", 64, text);
		return -ENAMETOOLONG;
	}
	memcpy(it->name, buf, strlen(buf) + 1);
	if (!it->weight) {
		msg = "has a weight out of 1..256";
		n = -EINVAL;
	} else {
		n = item_addrs(buf, cfg->resolve ? cfg->resolve : pw_resolve, a,
			       room, &it->numeric, &msg, &lookup);
	}
	if (n < 0)
		snprintf(why, whysize, "'%.*s'%s%s", (int)len, text,
			 lookup ? ": " : " ", msg);
	return n;
}

int pw_proxy_upstreams_set(struct pw_proxy_config *cfg, const char *text,
			   char *why, size_t whysize)
{
	static __thread struct pw_proxy_config c;
	struct pw_net_addr a[PW_RESOLVE_MAX];
	char none[1];

	if (!why) {
		why = none;
		whysize = sizeof(none);
	}
	if (!cfg || !text) {
		snprintf(why, whysize, "no list");
		return -EINVAL;
	}
	c = *cfg;
	c.nupstreams = 0;
	c.nitems = 0;
	for (const char *p = text;;) {
		size_t len = strcspn(p, ",");
		unsigned room = NSRV - c.nupstreams;
		int n;

		if (c.nitems == NSRV) {
			snprintf(why, whysize,
				 "'%.*s' is one item too many (at most %d)",
				 (int)(len > 64 ? 64 : len), p, NSRV);
			return -E2BIG;
		}
		n = parse_item(cfg, p, len, &c.item[c.nitems], a,
			       room ? room : 1, why, whysize);
		if (n < 0)
			return n;
		if ((unsigned)n > room) {
			snprintf(why, whysize,
				 "'%.*s' makes more than %d servers", (int)len,
				 p, NSRV);
			return -E2BIG;
		}
		for (int k = 0; k < n; k++) {
			c.upstream[c.nupstreams] = a[k];
			c.upstream_weight[c.nupstreams] =
				c.item[c.nitems].weight;
			c.upstream_item[c.nupstreams++] = c.nitems;
		}
		c.nitems++;
		if (!p[len])
			break;
		p += len + 1;
	}
	*cfg = c;
	return 0;
}

int pw_proxy_upstreams_parse(struct pw_proxy_config *cfg, const char *text)
{
	return pw_proxy_upstreams_set(cfg, text, NULL, 0);
}
