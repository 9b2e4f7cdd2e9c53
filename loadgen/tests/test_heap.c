// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_heap.c - the timer heap against a plain array: after every one of
 * many random operations (set a new time, move a member earlier or later,
 * remove it, take the earliest away), the earliest member must be the
 * reference's, every member's position must point back at it, and the
 * array must have the heap property.
 */
#include <stdlib.h>

#include "heap.h"
#include "zipf.h"
#include "tap.h"

#define NODES 1000

static struct heap_node nodes[NODES];
static int64_t ref_key[NODES];
static int ref_in[NODES];

static void check_heap(const struct heap *h, unsigned members)
{
	int64_t min = INT64_MAX;

	CHECK(h->n == members, "heap holds %u, reference %u", h->n, members);
	for (unsigned i = 1; i < h->n; i++)
		CHECK(h->v[(i - 1) / 2].key <= h->v[i].key, "heap order broken at %u", i);
	for (int i = 0; i < NODES; i++) {
		if (!ref_in[i]) {
			CHECK(!nodes[i].pos, "node %d out but pos %u", i, nodes[i].pos);
			continue;
		}
		CHECK(nodes[i].pos && h->v[nodes[i].pos - 1].node == &nodes[i] &&
		      h->v[nodes[i].pos - 1].key == ref_key[i],
		      "node %d: pos %u does not lead back to it", i, nodes[i].pos);
		if (ref_key[i] < min)
			min = ref_key[i];
	}
	CHECK(heap_top_key(h) == min, "earliest %lld, reference %lld",
	      (long long)heap_top_key(h), (long long)min);
	CHECK(!members || (heap_top(h) && ref_key[heap_top(h) - nodes] == min),
	      "top node is not an earliest one");
}

/* keys from a small range (many ties) or the whole range */
static int64_t draw_key(struct rng *r)
{
	switch (rng_below(r, 4)) {
	case 0:
		return (int64_t)rng_below(r, 20);
	case 1:
		return (int64_t)rng_next(r);	/* negative ones too */
	case 2:
		return INT64_MAX - 1 - (int64_t)rng_below(r, 3);
	default:
		return (int64_t)rng_below(r, 1000000);
	}
}

static void run_ops(unsigned cap, unsigned ops, uint64_t seed)
{
	struct heap h;
	struct rng r;
	unsigned members = 0;

	for (int i = 0; i < NODES; i++) {
		nodes[i].pos = 0;
		ref_in[i] = 0;
	}
	CHECK(!heap_init(&h, cap), "heap_init");
	rng_seed(&r, seed);
	check_heap(&h, 0);
	for (unsigned k = 0; k < ops; k++) {
		int i = (int)rng_below(&r, cap);
		unsigned what = (unsigned)rng_below(&r, 10);

		if (what < 6) {		/* add, or move earlier or later */
			ref_key[i] = draw_key(&r);
			members += !ref_in[i];
			ref_in[i] = 1;
			heap_set(&h, &nodes[i], ref_key[i]);
		} else if (what < 8) {	/* remove (a no-op when absent) */
			members -= ref_in[i];
			ref_in[i] = 0;
			heap_del(&h, &nodes[i]);
		} else if (heap_top(&h)) {	/* take the earliest away */
			int top = (int)(heap_top(&h) - nodes);

			CHECK(ref_in[top], "top %d is no member", top);
			ref_in[top] = 0;
			members--;
			heap_del(&h, heap_top(&h));
		}
		check_heap(&h, members);
		if (tap_cur_failed)
			break;
	}
	/* emptied from the top, the keys come out in order */
	for (int64_t last = INT64_MIN; heap_top(&h); ) {
		int top = (int)(heap_top(&h) - nodes);

		CHECK(ref_key[top] >= last, "out of order: %lld after %lld",
		      (long long)ref_key[top], (long long)last);
		last = ref_key[top];
		ref_in[top] = 0;
		members--;
		heap_del(&h, heap_top(&h));
	}
	check_heap(&h, 0);
	heap_free(&h);
}

static void test_heap_one(void)
{
	run_ops(1, 1000, 1);
}

static void test_heap_small(void)
{
	for (unsigned cap = 2; cap <= 9; cap++)
		run_ops(cap, 5000, cap);
}

static void test_heap_random(void)
{
	run_ops(NODES, 100000, 42);
}

int main(int argc, char **argv)
{
	TAP_INIT(argc, argv);
	RUN(test_heap_one);
	RUN(test_heap_small);
	RUN(test_heap_random);
	return tap_failed;
}
