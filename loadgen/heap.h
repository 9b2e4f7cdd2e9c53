/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * heap.h - a binary min-heap of timers: each member is a struct
 * heap_node, embedded in what it times, with one time (key) at most.
 * Setting a member's time, removing it and finding the earliest take
 * O(log n), O(log n) and O(1), so a loop that sleeps until the earliest
 * due time never walks the members that are not due.  The keys live in
 * the heap's array, so comparisons touch nothing else.
 */
#ifndef HEAP_H
#define HEAP_H

#include <stdint.h>

struct heap_node {
	unsigned pos;		/* its index in the heap + 1; 0: not in it */
};

struct heap_ent {
	int64_t key;
	struct heap_node *node;
};

struct heap {
	struct heap_ent *v;
	unsigned n, cap;
};

/* Room for cap members; returns -1 when out of memory. */
int heap_init(struct heap *h, unsigned cap);
void heap_free(struct heap *h);
/* Give x the time key, adding it if it is not a member (n < cap). */
void heap_set(struct heap *h, struct heap_node *x, int64_t key);
/* Remove x, if it is a member. */
void heap_del(struct heap *h, struct heap_node *x);

/* The member with the earliest time, or NULL; and that time. */
static inline struct heap_node *heap_top(const struct heap *h)
{
	return h->n ? h->v[0].node : 0;
}

static inline int64_t heap_top_key(const struct heap *h)
{
	return h->n ? h->v[0].key : INT64_MAX;
}

#endif /* HEAP_H */
