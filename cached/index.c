// SPDX-License-Identifier: GPL-2.0-only
/*
 * index.c - chained hash table of items (see index.h).
 *
 * Buckets are a power of two; the table doubles when it holds 1.5 items
 * per bucket.  A doubling is incremental, as memcached's assoc.c does it:
 * the new array is allocated at once (calloc: untouched pages cost
 * nothing), and then each insert moves INDEX_REHASH_STEP old buckets into
 * it, and the once-a-second tick INDEX_REHASH_TICK more, so no call holds
 * cache_lock for a whole table's rehash.  A remove moves nothing: walks
 * that remove the item they are given (index_foreach) must see the table
 * hold still.  Until a bucket has
 * moved, its items are found, inserted and removed in the old array, as
 * memcached does; index_find never moves anything, since gets call it
 * under the shared lock.  Items are malloc'd with the key inline.
 * Scrapes walk the table in steps (index_walk) and drop the lock between
 * them.
 */
#include "index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/*
 * The stripes: one mutex per INDEX_STRIPES-th of the hash space, each on
 * a cache line of its own.  The stripe of a hash value is its low bits,
 * and so are its buckets' indexes in either array (both hold at least
 * INDEX_STRIPES buckets from index_init on, or the walk locks every
 * stripe a bucket can hold), so a bucket's chain is only ever changed
 * under its stripe, or under cache_lock held exclusively.
 */
static struct {
	pthread_mutex_t mu;
} __attribute__((aligned(64))) stripes[INDEX_STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static uint64_t stripe_waits;

static void stripes_init(void)
{
	for (unsigned int i = 0; i < INDEX_STRIPES; i++)
		pthread_mutex_init(&stripes[i].mu, NULL);
}

static void stripe_lock(unsigned int i)
{
	if (pthread_mutex_trylock(&stripes[i].mu) == 0)
		return;
	__atomic_fetch_add(&stripe_waits, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&stripes[i].mu);
}

void index_lock(uint32_t hv)
{
	stripe_lock(hv & (INDEX_STRIPES - 1));
}

void index_unlock(uint32_t hv)
{
	pthread_mutex_unlock(&stripes[hv & (INDEX_STRIPES - 1)].mu);
}

uint64_t index_stripe_waits(void)
{
	return __atomic_load_n(&stripe_waits, __ATOMIC_RELAXED);
}

static struct item **buckets;           /* the primary array, 2^hashpower */
static unsigned hashpower;
static struct item **old_buckets;       /* while expanding: 2^(hashpower - 1) */
static uint64_t expand_bucket;          /* old buckets below it have moved */
static uint64_t nitems;
static uint64_t item_bytes;
static uint64_t expansions;

/* FNV-1a over the key, finished with a multiply-shift mix. */
uint32_t index_hash(const char *key, size_t nkey)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < nkey; i++) {
		h ^= (unsigned char)key[i];
		h *= 16777619u;
	}
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

/* Allocate the bucket array; 0 or -1. */
int index_init(unsigned hp)
{
	free(buckets);
	free(old_buckets);
	old_buckets = NULL;
	expand_bucket = 0;
	expansions = 0;
	pthread_once(&stripes_once, stripes_init);
	hashpower = hp < 4 ? 4 : hp;
	buckets = calloc((size_t)1 << hashpower, sizeof(*buckets));
	nitems = 0;
	item_bytes = 0;
	return buckets ? 0 : -1;
}

/*
 * The chain a hash value lives on: in the old array while its bucket there
 * has not moved yet, else in the primary one.
 */
static struct item **chain_of(uint32_t hv)
{
	if (old_buckets) {
		uint64_t ob = hv & ((1u << (hashpower - 1)) - 1);

		if (ob >= expand_bucket)
			return &old_buckets[ob];
	}
	return &buckets[hv & ((1u << hashpower) - 1)];
}

/* Look a key up in its chain. */
struct item *index_find(const char *key, size_t nkey, uint32_t hv)
{
	struct item *it = *chain_of(hv);

	for (; it; it = it->hnext)
		if (it->hash == hv && it->keylen == nkey &&
		    memcmp(it->key, key, nkey) == 0)
			return it;
	return NULL;
}

/*
 * Move up to n old buckets into the primary array; the last one moved
 * frees the old array.  Returns the buckets moved.
 */
unsigned int index_rehash(unsigned int n)
{
	uint64_t osize = (uint64_t)1 << (hashpower - 1);
	unsigned int moved = 0;

	if (!old_buckets)
		return 0;
	for (; moved < n && expand_bucket < osize; moved++, expand_bucket++) {
		struct item *it = old_buckets[expand_bucket], *next;

		for (; it; it = next) {
			size_t nbk = it->hash & ((1u << hashpower) - 1);

			next = it->hnext;
			it->hnext = buckets[nbk];
			buckets[nbk] = it;
		}
		old_buckets[expand_bucket] = NULL;
	}
	if (expand_bucket == osize) {
		free(old_buckets);
		old_buckets = NULL;
		expand_bucket = 0;
	}
	return moved;
}

/* Start doubling the bucket array; on allocation failure keep the old one. */
static void index_grow(void)
{
	struct item **nb = calloc((size_t)1 << (hashpower + 1), sizeof(*nb));

	if (!nb)
		return;
	old_buckets = buckets;
	buckets = nb;
	hashpower++;
	expand_bucket = 0;
	expansions++;
}

/* Push an item on its chain; no bucket moves. */
void index_insert_local(struct item *it)
{
	struct item **chain = chain_of(it->hash);

	it->hnext = *chain;
	__atomic_store_n(chain, it, __ATOMIC_RELAXED);
	__atomic_fetch_add(&nitems, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&item_bytes, sizeof(*it) + it->keylen, __ATOMIC_RELAXED);
}

/* Push an item on its chain; grow when the load passes 1.5. */
void index_insert(struct item *it)
{
	index_insert_local(it);
	if (old_buckets)
		index_rehash(INDEX_REHASH_STEP);
	else if (hashpower < 31 && nitems > ((uint64_t)3 << hashpower) / 2)
		index_grow();
}

bool index_local_ok(void)
{
	return !old_buckets && (hashpower >= 31 ||
	       __atomic_load_n(&nitems, __ATOMIC_RELAXED) + 1 <=
	       ((uint64_t)3 << hashpower) / 2);
}


/* Unlink from the chain. */
void index_remove(struct item *it)
{
	struct item **pp = chain_of(it->hash);

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == it) {
			__atomic_store_n(pp, it->hnext, __ATOMIC_RELAXED);
			it->hnext = NULL;
			__atomic_fetch_sub(&nitems, 1, __ATOMIC_RELAXED);
			__atomic_fetch_sub(&item_bytes, sizeof(*it) + it->keylen,
					   __ATOMIC_RELAXED);
			return;
		}
	}
}

/* Zeroed item with the key copied in. */
struct item *item_new(const char *key, size_t nkey, uint32_t hv)
{
	struct item *it = calloc(1, sizeof(*it) + nkey);

	if (!it)
		return NULL;
	memcpy(it->key, key, nkey);
	it->keylen = (uint8_t)nkey;
	it->hash = hv;
	it->seg = UINT32_MAX;   /* SEG_NONE: no storage yet */
	return it;
}

unsigned int index_hashpower(void)
{
	return hashpower;
}

bool index_expanding(void)
{
	return old_buckets != NULL;
}

uint64_t index_expansions(void)
{
	return expansions;
}

uint64_t index_count(void)
{
	return __atomic_load_n(&nitems, __ATOMIC_RELAXED);
}

/* Items plus buckets. */
uint64_t index_mem_bytes(void)
{
	return __atomic_load_n(&item_bytes, __ATOMIC_RELAXED) + (sizeof(struct item *) << hashpower) +
	       (old_buckets ? sizeof(struct item *) << (hashpower - 1) : 0);
}

/* Call fn on each item of a chain; the next pointer is read first. */
static unsigned int chain_each(struct item *it,
			       void (*fn)(struct item *it, void *arg), void *arg)
{
	struct item *next;
	unsigned int n = 0;

	for (; it; it = next, n++) {
		next = it->hnext;
		fn(it, arg);
	}
	return n;
}

/* Walk every chain of both arrays. */
void index_foreach(void (*fn)(struct item *it, void *arg), void *arg)
{
	if (old_buckets)
		for (size_t b = expand_bucket; b < ((size_t)1 << (hashpower - 1)); b++)
			chain_each(old_buckets[b], fn, arg);
	for (size_t b = 0; b < ((size_t)1 << hashpower); b++)
		chain_each(buckets[b], fn, arg);
}

static uint64_t rev64(uint64_t v)
{
	v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
	v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
	v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
	return __builtin_bswap64(v);
}

/*
 * The cursor counts in the bucket index's bits reversed: the next bucket
 * is the reversed increment of the current one.  After a doubling, bucket
 * b's items sit in b and b + old size, which in reversed order are
 * neighbours, so the walk neither repeats nor skips them.  While the table
 * expands, a step visits the cursor's old bucket (unless it has moved) and
 * both primary buckets it expands to, and advances the cursor in the old
 * array's size, as Redis' dictScan does with its two tables.
 */
/* The bucket after v in the walk's order (0 when the walk wrapped). */
static uint64_t walk_next(uint64_t v, uint64_t mask)
{
	v |= ~mask;
	return rev64(rev64(v) + 1);
}

/*
 * A walk visits buckets in reversed order, a new cache line (and often a
 * new page) of the bucket array each time, and then items scattered over
 * the heap: without help every bucket and every item costs a miss.  The
 * walk prefetches the bucket WALK_AHEAD visits ahead, and the first item
 * of the one half as far ahead (a hint only: it may be gone by then).
 */
#define WALK_AHEAD 16

struct walk_ahead {
	uint64_t slot_v, item_v;   /* the buckets to prefetch next */
	bool slot_end, item_end;   /* those cursors wrapped: nothing ahead */
};

static void walk_prefetch(struct walk_ahead *w, uint64_t mask)
{
	if (!w->slot_end) {
		__builtin_prefetch(&buckets[w->slot_v & mask]);
		w->slot_v = walk_next(w->slot_v, mask);
		w->slot_end = w->slot_v == 0;
	}
	if (!w->item_end) {
		/* a hint read outside the bucket's stripe */
		struct item *h = __atomic_load_n(&buckets[w->item_v & mask],
						 __ATOMIC_RELAXED);

		if (h) {
			__builtin_prefetch(h);
			__builtin_prefetch((char *)h + 64);
		}
		w->item_v = walk_next(w->item_v, mask);
		w->item_end = w->item_v == 0;
	}
}

/*
 * The stripes of bucket b of an array of mask + 1 buckets: its own when
 * the array has at least INDEX_STRIPES buckets (the loop runs once), else
 * every stripe whose low bits are b, in ascending order (a key-local
 * command holds one).
 */
static void walk_stripes(uint64_t b, uint64_t mask, bool lock)
{
	for (uint64_t i = b & (INDEX_STRIPES - 1); i < INDEX_STRIPES; i += mask + 1) {
		if (lock)
			stripe_lock((unsigned int)i);
		else
			pthread_mutex_unlock(&stripes[i].mu);
	}
}

bool index_walk(uint64_t *cursor, unsigned int budget,
		void (*fn)(struct item *it, void *arg), void *arg)
{
	unsigned int bits = old_buckets ? hashpower - 1 : hashpower;
	uint64_t mask = ((uint64_t)1 << bits) - 1;
	uint64_t v = *cursor;
	struct walk_ahead w = { .slot_v = v, .item_v = v };
	unsigned int seen = 0;

	if (!old_buckets) {
		/* start the pipeline: slots WALK_AHEAD on, items half as far */
		for (unsigned int i = 0; i < WALK_AHEAD / 2 && !w.item_end; i++) {
			w.item_v = walk_next(w.item_v, mask);
			w.item_end = w.item_v == 0;
		}
		for (unsigned int i = 0; i < WALK_AHEAD && !w.slot_end; i++) {
			__builtin_prefetch(&buckets[w.slot_v & mask]);
			w.slot_v = walk_next(w.slot_v, mask);
			w.slot_end = w.slot_v == 0;
		}
	}
	do {
		walk_stripes(v & mask, mask, true);
		if (old_buckets) {
			uint64_t ob = v & mask;

			if (ob >= expand_bucket)
				seen += chain_each(old_buckets[ob], fn, arg);
			seen += chain_each(buckets[ob], fn, arg);
			seen += chain_each(buckets[ob | (mask + 1)], fn, arg);
		} else {
			walk_prefetch(&w, mask);
			seen += chain_each(buckets[v & mask], fn, arg);
		}
		walk_stripes(v & mask, mask, false);
		v = walk_next(v, mask);
		if (v == 0) {
			*cursor = 0;
			return true;
		}
	} while (seen < budget);
	*cursor = v;
	return false;
}
