/* SPDX-License-Identifier: MIT */
/*
 * test_list.c - the intrusive list of pinwheel/list.h: empty, single and
 * many-node lists, the exact order after every operation (read forwards
 * and backwards), poisoning, del_init, splicing, removal during safe
 * iteration, container_of, and a randomised run against an array model.
 */
#include <stddef.h>
#include <stdint.h>

#include "tests/common.h"
#include "pinwheel/list.h"

/* An element whose node is not its first member: container_of must
 * subtract a non-zero offset. */
struct item {
	int64_t pad[3];
	int id;
	struct pw_list node;
	struct pw_list other;
};

#define MAXN 1024

/* An assertion that costs nothing when it holds (the walks below check
 * every link after every operation). */
#define CHECK(cond, ...)                             \
	do {                                         \
		if (!(cond))                         \
			cr_assert_fail(__VA_ARGS__); \
	} while (0)

/*
 * The ids of the list headed by @h, in order, into @out (at most MAXN);
 * returns their number. Walking backwards must give the same ids in the
 * opposite order, and every link must be mirrored (n->next->prev == n).
 */
static int ids(struct pw_list *h, int *out)
{
	struct pw_list *pos;
	int n = 0;

	pw_list_for_each (pos, h) {
		CHECK(n < MAXN, "the list does not come back to its head");
		CHECK(pos->next->prev == pos, "node %d: next->prev", n);
		CHECK(pos->prev->next == pos, "node %d: prev->next", n);
		out[n++] = pw_list_entry(pos, struct item, node)->id;
	}
	CHECK(h->next->prev == h && h->prev->next == h, "head links");
	int k = n;
	for (pos = h->prev; pos != h; pos = pos->prev) {
		CHECK(k > 0, "backwards walk is longer than forwards");
		k--;
		CHECK(pw_list_entry(pos, struct item, node)->id == out[k],
		      "backwards walk differs at %d", k);
	}
	CHECK(k == 0, "backwards walk is shorter than forwards");
	CHECK(pw_list_empty(h) == (n == 0), "empty() with %d nodes", n);
	return n;
}

/* Assert that the list headed by @h holds exactly the ids @want[0..n). */
static void expect_ids(struct pw_list *h, const int *want, int n)
{
	static int got[MAXN];
	int k = ids(h, got);

	CHECK(k == n, "the list has %d nodes, want %d", k, n);
	for (int i = 0; i < n; i++)
		CHECK(got[i] == want[i], "node %d is %d, want %d", i, got[i],
		      want[i]);
}

static struct item items[MAXN];

static void number_items(void)
{
	for (int i = 0; i < MAXN; i++)
		items[i].id = i;
}

/* PW_LIST_INIT and pw_list_init make an empty head that points at
 * itself; an initialised node is "unlinked". */
Test(list, init_makes_an_empty_list_and_an_unlinked_node)
{
	static struct pw_list st = PW_LIST_INIT(st);
	struct pw_list h;

	cr_assert_eq(st.next, &st);
	cr_assert_eq(st.prev, &st);
	cr_assert(pw_list_empty(&st));
	pw_list_init(&h);
	cr_assert_eq(h.next, &h);
	cr_assert_eq(h.prev, &h);
	cr_assert(pw_list_empty(&h));
	cr_assert(pw_list_unlinked(&h));
	expect_ids(&h, NULL, 0);
	expect_ids(&st, NULL, 0);
}

/* One node: first entry, both links to the head, then del_init leaves
 * the list empty and the node unlinked and reusable. */
Test(list, a_single_node)
{
	struct pw_list h;
	struct item it = { .id = 7 };

	pw_list_init(&h);
	pw_list_init(&it.node);
	pw_list_add(&it.node, &h);
	cr_assert(!pw_list_empty(&h));
	cr_assert(!pw_list_unlinked(&it.node));
	cr_assert_eq(h.next, &it.node);
	cr_assert_eq(h.prev, &it.node);
	cr_assert_eq(it.node.next, &h);
	cr_assert_eq(it.node.prev, &h);
	cr_assert_eq(pw_list_first_entry(&h, struct item, node), &it);
	expect_ids(&h, (int[]){ 7 }, 1);

	pw_list_del_init(&it.node);
	cr_assert(pw_list_empty(&h));
	cr_assert(pw_list_unlinked(&it.node));
	cr_assert_eq(h.next, &h);
	cr_assert_eq(h.prev, &h);

	/* Reused: now at the tail of the same list. */
	pw_list_add_tail(&it.node, &h);
	expect_ids(&h, (int[]){ 7 }, 1);
	pw_list_del(&it.node);
	cr_assert(pw_list_empty(&h));
}

/* pw_list_add pushes at the front (stack order), pw_list_add_tail at the
 * back (queue order); mixed, each lands where it says. */
Test(list, add_is_stack_order_and_add_tail_is_queue_order)
{
	struct pw_list s, q, m;

	number_items();
	pw_list_init(&s);
	pw_list_init(&q);
	pw_list_init(&m);
	for (int i = 0; i < 5; i++) {
		pw_list_add(&items[i].node, &s);
		pw_list_add_tail(&items[i].other, &q);
	}
	expect_ids(&s, (int[]){ 4, 3, 2, 1, 0 }, 5);
	cr_assert_eq(pw_list_first_entry(&s, struct item, node), &items[4]);
	cr_assert_eq(pw_list_first_entry(&q, struct item, other), &items[0]);
	/* q links the `other` members: walk it by hand. */
	int want_q[] = { 0, 1, 2, 3, 4 }, k = 0;
	struct pw_list *pos;
	pw_list_for_each (pos, &q) {
		cr_assert_lt(k, 5);
		cr_assert_eq(pw_list_entry(pos, struct item, other)->id,
			     want_q[k], "queue node %d", k);
		k++;
	}
	cr_assert_eq(k, 5);

	/* Mixed on one list: tail 10, front 11, tail 12, front 13. */
	pw_list_add_tail(&items[10].node, &m);
	pw_list_add(&items[11].node, &m);
	expect_ids(&m, (int[]){ 11, 10 }, 2);
	pw_list_add_tail(&items[12].node, &m);
	expect_ids(&m, (int[]){ 11, 10, 12 }, 3);
	pw_list_add(&items[13].node, &m);
	expect_ids(&m, (int[]){ 13, 11, 10, 12 }, 4);
	/* Adding after a node (it is a head of the rest). */
	pw_list_add(&items[14].node, &items[10].node);
	expect_ids(&m, (int[]){ 13, 11, 10, 14, 12 }, 5);
	pw_list_add_tail(&items[15].node, &items[10].node);
	expect_ids(&m, (int[]){ 13, 11, 15, 10, 14, 12 }, 6);
}

/* pw_list_del unlinks from the front, the middle and the back, keeps the
 * others in order, and poisons the removed node with the two values. */
Test(list, del_keeps_the_order_and_poisons_the_node)
{
	struct pw_list h;

	number_items();
	pw_list_init(&h);
	for (int i = 0; i < 6; i++)
		pw_list_add_tail(&items[i].node, &h);
	pw_list_del(&items[3].node); /* middle */
	expect_ids(&h, (int[]){ 0, 1, 2, 4, 5 }, 5);
	cr_assert_eq(items[3].node.next, PW_LIST_POISON1);
	cr_assert_eq(items[3].node.prev, PW_LIST_POISON2);
	cr_assert_neq(PW_LIST_POISON1, PW_LIST_POISON2);
	pw_list_del(&items[0].node); /* front */
	expect_ids(&h, (int[]){ 1, 2, 4, 5 }, 4);
	cr_assert_eq(pw_list_first_entry(&h, struct item, node), &items[1]);
	pw_list_del(&items[5].node); /* back */
	expect_ids(&h, (int[]){ 1, 2, 4 }, 3);
	cr_assert_eq(items[5].node.next, PW_LIST_POISON1);
	cr_assert_eq(items[5].node.prev, PW_LIST_POISON2);
	pw_list_del(&items[2].node);
	pw_list_del(&items[1].node);
	expect_ids(&h, (int[]){ 4 }, 1);
	pw_list_del(&items[4].node);
	expect_ids(&h, NULL, 0);
}

/* pw_list_del_init: the node is unlinked (and says so) and can go onto
 * another list at once; the rest keep their order. */
Test(list, del_init_leaves_a_reusable_unlinked_node)
{
	struct pw_list a, b;

	number_items();
	pw_list_init(&a);
	pw_list_init(&b);
	for (int i = 0; i < 4; i++)
		pw_list_add_tail(&items[i].node, &a);
	pw_list_del_init(&items[1].node);
	cr_assert(pw_list_unlinked(&items[1].node));
	cr_assert_eq(items[1].node.next, &items[1].node);
	cr_assert_eq(items[1].node.prev, &items[1].node);
	expect_ids(&a, (int[]){ 0, 2, 3 }, 3);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pw_list_unlinked(&items[i].node), i == 1,
			     "node %d", i);
	pw_list_add_tail(&items[1].node, &b);
	pw_list_del_init(&items[3].node);
	pw_list_add(&items[3].node, &b);
	expect_ids(&a, (int[]){ 0, 2 }, 2);
	expect_ids(&b, (int[]){ 3, 1 }, 2);
}

/* pw_list_splice_tail_init appends every node of @from, in order, and
 * leaves @from empty; an empty @from changes nothing. */
Test(list, splice_tail_init_appends_in_order_and_empties_the_source)
{
	struct pw_list from, to;

	number_items();
	pw_list_init(&from);
	pw_list_init(&to);
	/* Empty into empty. */
	pw_list_splice_tail_init(&from, &to);
	expect_ids(&from, NULL, 0);
	expect_ids(&to, NULL, 0);
	/* Empty into non-empty. */
	pw_list_add_tail(&items[0].node, &to);
	pw_list_add_tail(&items[1].node, &to);
	pw_list_splice_tail_init(&from, &to);
	expect_ids(&to, (int[]){ 0, 1 }, 2);
	expect_ids(&from, NULL, 0);
	/* One node into non-empty. */
	pw_list_add_tail(&items[2].node, &from);
	pw_list_splice_tail_init(&from, &to);
	expect_ids(&to, (int[]){ 0, 1, 2 }, 3);
	expect_ids(&from, NULL, 0);
	cr_assert_eq(from.next, &from);
	cr_assert_eq(from.prev, &from);
	/* Many into non-empty. */
	for (int i = 3; i < 8; i++)
		pw_list_add_tail(&items[i].node, &from);
	pw_list_splice_tail_init(&from, &to);
	expect_ids(&to, (int[]){ 0, 1, 2, 3, 4, 5, 6, 7 }, 8);
	expect_ids(&from, NULL, 0);
	/* Non-empty into empty; the source is reusable afterwards. */
	pw_list_splice_tail_init(&to, &from);
	expect_ids(&from, (int[]){ 0, 1, 2, 3, 4, 5, 6, 7 }, 8);
	expect_ids(&to, NULL, 0);
	pw_list_del(&items[4].node);
	pw_list_add_tail(&items[9].node, &to);
	pw_list_splice_tail_init(&from, &to);
	expect_ids(&to, (int[]){ 9, 0, 1, 2, 3, 5, 6, 7 }, 8);
	expect_ids(&from, NULL, 0);
}

/* pw_list_for_each_safe allows removing the current node: every other
 * node, then all of them, and moving nodes to another list mid-walk. */
Test(list, for_each_safe_allows_removing_the_current_node)
{
	struct pw_list h, moved;
	struct pw_list *pos, *tmp;
	int visited = 0;

	number_items();
	pw_list_init(&h);
	pw_list_init(&moved);
	for (int i = 0; i < 10; i++)
		pw_list_add_tail(&items[i].node, &h);
	pw_list_for_each_safe (pos, tmp, &h) {
		struct item *it = pw_list_entry(pos, struct item, node);
		cr_assert_eq(it->id, visited, "visit %d", visited);
		visited++;
		if (it->id % 2 == 0)
			pw_list_del(pos);
	}
	cr_assert_eq(visited, 10);
	expect_ids(&h, (int[]){ 1, 3, 5, 7, 9 }, 5);

	/* Move each node to the front of another list while walking. */
	visited = 0;
	pw_list_for_each_safe (pos, tmp, &h) {
		visited++;
		pw_list_del_init(pos);
		pw_list_add(pos, &moved);
	}
	cr_assert_eq(visited, 5);
	expect_ids(&h, NULL, 0);
	expect_ids(&moved, (int[]){ 9, 7, 5, 3, 1 }, 5);

	/* Remove every node. */
	visited = 0;
	pw_list_for_each_safe (pos, tmp, &moved) {
		visited++;
		pw_list_del(pos);
	}
	cr_assert_eq(visited, 5);
	expect_ids(&moved, NULL, 0);

	/* On an empty list the body never runs. */
	pw_list_for_each_safe (pos, tmp, &moved)
		cr_assert_fail("visited a node of an empty list");
	pw_list_for_each (pos, &moved)
		cr_assert_fail("visited a node of an empty list");
}

/* pw_container_of and pw_list_entry give back the embedding struct for
 * a member at any offset; pw_list_first_entry is the first node's. */
Test(list, container_of_finds_the_embedding_struct)
{
	struct item it = { .id = 3 };
	struct pw_list h;

	cr_assert_neq(offsetof(struct item, node), 0);
	cr_assert_eq(pw_container_of(&it.node, struct item, node), &it);
	cr_assert_eq(pw_container_of(&it.other, struct item, other), &it);
	cr_assert_eq(pw_list_entry(&it.other, struct item, other), &it);
	cr_assert_eq(pw_container_of(&it.id, struct item, id), &it);
	cr_assert_eq(pw_container_of(&it.pad[0], struct item, pad[0]), &it);
	pw_list_init(&h);
	pw_list_add(&items[5].node, &h);
	pw_list_add(&it.node, &h);
	cr_assert_eq(pw_list_first_entry(&h, struct item, node), &it);
	cr_assert_eq(pw_list_first_entry(&h, struct item, node)->id, 3);
}

/*
 * Many nodes: 5000 random operations (add, add_tail, del, del_init
 * and a re-add, splice of a second list) on up to 512 nodes, compared
 * after each with an array that holds the expected order.
 */
static int model[MAXN], nmodel;
static int model2[MAXN], nmodel2;
static bool on_main[MAXN], on_second[MAXN];

static void model_insert(int *m, int *n, int at, int id)
{
	for (int i = *n; i > at; i--)
		m[i] = m[i - 1];
	m[at] = id;
	(*n)++;
}

static void model_remove(int *m, int *n, int id)
{
	int at = 0;

	while (at < *n && m[at] != id)
		at++;
	cr_assert_lt(at, *n, "model: %d not found", id);
	for (int i = at; i + 1 < *n; i++)
		m[i] = m[i + 1];
	(*n)--;
}

Test(list, random_operations_match_an_array_model)
{
	struct pw_list h, h2;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	enum { N = 512, OPS = 5000 };

	number_items();
	pw_list_init(&h);
	pw_list_init(&h2);
	for (int i = 0; i < N; i++)
		pw_list_init(&items[i].node);
	for (int op = 0; op < OPS; op++) {
		int id = (int)(pw_test_rng(&rng) % N);
		unsigned what = (unsigned)(pw_test_rng(&rng) % 8);
		struct pw_list *n = &items[id].node;

		if (on_main[id] || on_second[id]) {
			bool first = on_main[id];
			if (what < 3) {
				pw_list_del(n);
				pw_list_init(n);
			} else {
				pw_list_del_init(n);
				cr_assert(pw_list_unlinked(n));
			}
			if (first)
				model_remove(model, &nmodel, id);
			else
				model_remove(model2, &nmodel2, id);
			on_main[id] = on_second[id] = false;
		} else if (what == 0) {
			pw_list_add(n, &h2);
			model_insert(model2, &nmodel2, 0, id);
			on_second[id] = true;
		} else if (what < 4) {
			pw_list_add(n, &h);
			model_insert(model, &nmodel, 0, id);
			on_main[id] = true;
		} else {
			pw_list_add_tail(n, &h);
			model_insert(model, &nmodel, nmodel, id);
			on_main[id] = true;
		}
		if (op % 97 == 0) {
			pw_list_splice_tail_init(&h2, &h);
			for (int i = 0; i < nmodel2; i++) {
				model[nmodel++] = model2[i];
				on_main[model2[i]] = true;
				on_second[model2[i]] = false;
			}
			nmodel2 = 0;
		}
		expect_ids(&h, model, nmodel);
		expect_ids(&h2, model2, nmodel2);
	}
	cr_assert_gt(nmodel, 100, "the run built a long list: %d", nmodel);
}
