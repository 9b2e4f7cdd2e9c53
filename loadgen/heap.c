// SPDX-License-Identifier: GPL-2.0-only
/*
 * heap.c - the timer heap (see heap.h).  v[0] is the earliest; the
 * children of v[i] are v[2i+1] and v[2i+2]; a node's pos is its index + 1.
 */
#include <stdlib.h>

#include "heap.h"

int heap_init(struct heap *h, unsigned cap)
{
	h->n = 0;
	h->cap = cap;
	h->v = calloc(cap ? cap : 1, sizeof(*h->v));
	return h->v ? 0 : -1;
}

void heap_free(struct heap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}

static void place(struct heap *h, unsigned i, struct heap_ent e)
{
	h->v[i] = e;
	e.node->pos = i + 1;
}

/* Move the entry e, which belongs at or above i, up to its place. */
static void sift_up(struct heap *h, unsigned i, struct heap_ent e)
{
	while (i) {
		unsigned parent = (i - 1) / 2;

		if (h->v[parent].key <= e.key)
			break;
		place(h, i, h->v[parent]);
		i = parent;
	}
	place(h, i, e);
}

/* Move the entry e, which belongs at or below i, down to its place. */
static void sift_down(struct heap *h, unsigned i, struct heap_ent e)
{
	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1].key < h->v[c].key)
			c++;
		if (e.key <= h->v[c].key)
			break;
		place(h, i, h->v[c]);
		i = c;
	}
	place(h, i, e);
}

void heap_set(struct heap *h, struct heap_node *x, int64_t key)
{
	struct heap_ent e = { key, x };
	unsigned i;

	if (!x->pos) {
		if (h->n == h->cap)
			abort();	/* more members than the heap was made for */
		sift_up(h, h->n++, e);
		return;
	}
	i = x->pos - 1;
	if (key < h->v[i].key)
		sift_up(h, i, e);
	else
		sift_down(h, i, e);
}

void heap_del(struct heap *h, struct heap_node *x)
{
	unsigned i;
	struct heap_ent last;

	if (!x->pos)
		return;
	i = x->pos - 1;
	x->pos = 0;
	last = h->v[--h->n];
	if (i == h->n)
		return;
	/* the last entry fills the hole, then moves up or down */
	if (i && last.key < h->v[(i - 1) / 2].key)
		sift_up(h, i, last);
	else
		sift_down(h, i, last);
}
