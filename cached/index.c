/*
 * index.c - chained hash table of items (see index.h).
 *
 * Buckets are a power of two; the table doubles when it holds 1.5 items
 * per bucket, rehashing in one step under cache_lock (cheap next to the
 * work that produced the items).  Items are malloc'd with the key inline.
 * Scrapes walk the table in steps (index_walk) and drop the lock between
 * them.
 */
#include "index.h"

#include <stdlib.h>
#include <string.h>

static struct item **buckets;
static unsigned hashpower;
static uint64_t nitems;
static uint64_t item_bytes;

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
	hashpower = hp < 4 ? 4 : hp;
	buckets = calloc((size_t)1 << hashpower, sizeof(*buckets));
	nitems = 0;
	item_bytes = 0;
	return buckets ? 0 : -1;
}

/* Look a key up in its chain. */
struct item *index_find(const char *key, size_t nkey, uint32_t hv)
{
	struct item *it = buckets[hv & ((1u << hashpower) - 1)];

	for (; it; it = it->hnext)
		if (it->hash == hv && it->keylen == nkey &&
		    memcmp(it->key, key, nkey) == 0)
			return it;
	return NULL;
}

/* Double the bucket array; on allocation failure keep the old one. */
static void index_grow(void)
{
	unsigned np = hashpower + 1;
	struct item **nb = calloc((size_t)1 << np, sizeof(*nb));

	if (!nb)
		return;
	for (size_t b = 0; b < ((size_t)1 << hashpower); b++) {
		struct item *it = buckets[b], *next;

		for (; it; it = next) {
			next = it->hnext;
			size_t nbk = it->hash & ((1u << np) - 1);
			it->hnext = nb[nbk];
			nb[nbk] = it;
		}
	}
	free(buckets);
	buckets = nb;
	hashpower = np;
}

/* Push an item on its chain; grow when the load passes 1.5. */
void index_insert(struct item *it)
{
	size_t b = it->hash & ((1u << hashpower) - 1);

	it->hnext = buckets[b];
	buckets[b] = it;
	nitems++;
	item_bytes += sizeof(*it) + it->keylen;
	if (hashpower < 31 && nitems > ((uint64_t)3 << hashpower) / 2)
		index_grow();
}

/* Unlink from the chain. */
void index_remove(struct item *it)
{
	struct item **pp = &buckets[it->hash & ((1u << hashpower) - 1)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == it) {
			*pp = it->hnext;
			it->hnext = NULL;
			nitems--;
			item_bytes -= sizeof(*it) + it->keylen;
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

uint64_t index_count(void)
{
	return nitems;
}

/* Items plus buckets. */
uint64_t index_mem_bytes(void)
{
	return item_bytes + (sizeof(struct item *) << hashpower);
}

/* Walk every chain; the next pointer is read before calling fn. */
void index_foreach(void (*fn)(struct item *it, void *arg), void *arg)
{
	for (size_t b = 0; b < ((size_t)1 << hashpower); b++) {
		struct item *it = buckets[b], *next;

		for (; it; it = next) {
			next = it->hnext;
			fn(it, arg);
		}
	}
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
 * neighbours, so the walk neither repeats nor skips them.
 */
bool index_walk(uint64_t *cursor, unsigned int budget,
		void (*fn)(struct item *it, void *arg), void *arg)
{
	uint64_t mask = ((uint64_t)1 << hashpower) - 1;
	uint64_t v = *cursor;
	unsigned int seen = 0;

	do {
		struct item *it = buckets[v & mask], *next;

		for (; it; it = next) {
			next = it->hnext;
			fn(it, arg);
			seen++;
		}
		v |= ~mask;
		v = rev64(rev64(v) + 1);
		if (v == 0) {
			*cursor = 0;
			return true;
		}
	} while (seen < budget);
	*cursor = v;
	return false;
}
