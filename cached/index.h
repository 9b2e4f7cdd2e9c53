/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * index.h - the key index: a chained hash table of items in ordinary
 * memory.  An item knows its key, metadata and where its value lives in
 * the store; the value bytes themselves never live here, so a purge of the
 * store loses values but never the knowledge of which keys existed.
 *
 * Locking: cache_lock held exclusively, or cache_lock held shared plus
 * the stripe of the key's hash (index_lock) for a find, an insert
 * (index_insert_local) or a remove of that key.  Nothing but an exclusive
 * holder moves buckets or starts a doubling.
 */
#ifndef INDEX_H
#define INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum item_state {
	ITEM_OK = 0,      /* value readable at off */
	ITEM_LOST = 1,    /* value was purged or dropped; rebuild or miss */
};

struct item {
	struct item *hnext;            /* hash chain */
	struct item *snext, *sprev;    /* segment membership list */
	uint64_t cas;
	uint64_t upcas;                /* memcache origin's cas of this value, 0 = unknown */
	uint64_t off;                  /* value offset in the memfd */
	uint32_t vlen;                 /* value length without "\r\n" */
	uint32_t flags;                /* client flags */
	uint32_t exptime;              /* absolute unix time, 0 = never */
	uint32_t atime;                /* last access */
	uint32_t mtime;                /* last store */
	uint32_t seg;                  /* segment id in the store */
	uint32_t csum;                 /* value checksum with --verify */
	uint32_t hash;
	uint8_t keylen;
	uint8_t state;
	uint8_t mflags;                /* meta protocol bits (proto.h's MF_*) */
	char key[];
};

/*
 * The one bit of mflags that belongs to the key, not to its value (MF_BINKEY:
 * the key came in base64, and k prints it so): a value that replaces a lost
 * one keeps it, while the bits of the value (fetched, win token, stale,
 * purged placeholder) go with the value.
 */
#define ITEM_MF_KEY 0x08

/* The bit of mflags that says the value was read since it was stored
 * (proto.h's MF_FETCHED): an eviction counts those never read. */
#define ITEM_MF_FETCHED 0x01

/*
 * atime changes under the shared lock too (a hit on the get fast path
 * stores it atomically, as it does the fetched flag): code that reads it
 * under the shared lock reads it through this.
 */
static inline uint32_t item_atime(const struct item *it)
{
	return __atomic_load_n(&it->atime, __ATOMIC_RELAXED);
}

/*
 * exptime too: gat and gats set it under the shared lock (atomically,
 * item_set_exptime), so code that reads it under the shared lock reads it
 * through item_exptime.  Under the exclusive lock plain reads are safe.
 */
static inline uint32_t item_exptime(const struct item *it)
{
	return __atomic_load_n(&it->exptime, __ATOMIC_RELAXED);
}

static inline void item_set_exptime(struct item *it, uint32_t exptime)
{
	__atomic_store_n(&it->exptime, exptime, __ATOMIC_RELAXED);
}

/* Hash of a key (FNV-1a 32 bit, mixed). */
uint32_t index_hash(const char *key, size_t nkey);

/* Create the table with 2^hashpower buckets.  Returns 0 or -1. */
int index_init(unsigned hashpower);

/* Find the item of a key, or NULL. */
struct item *index_find(const char *key, size_t nkey, uint32_t hv);

/*
 * Insert an item (its key must not be present).  May start doubling the
 * table, and moves INDEX_REHASH_STEP buckets of a doubling under way.
 */
void index_insert(struct item *it);

/*
 * Key-local inserts (cache_lock shared, the key's stripe held): true
 * when index_insert_local may insert, i.e. no doubling is under way and
 * this insert would not start one.  Else the insert is made under the
 * exclusive lock (index_insert), which moves buckets.
 */
bool index_local_ok(void);

/* Push an item on its chain: no bucket moves, no doubling starts. */
void index_insert_local(struct item *it);

/*
 * The stripe locks: a key-local command holds its key's stripe (taken
 * after cache_lock, shared) for its find and its changes; a walk takes
 * the stripe of each bucket it visits.  A stripe is a mutex.
 */
#define INDEX_STRIPES 1024
void index_lock(uint32_t hv);
void index_unlock(uint32_t hv);

/* Times a stripe was found taken (stats: stripe_lock_waits). */
uint64_t index_stripe_waits(void);

/* Unlink an item from the table (does not free it); moves no bucket. */
void index_remove(struct item *it);

/* Allocate an unlinked item for a key; NULL on allocation failure. */
struct item *item_new(const char *key, size_t nkey, uint32_t hv);

/* Number of items in the table. */
uint64_t index_count(void);

/* Bytes of ordinary memory used by the table and the items. */
uint64_t index_mem_bytes(void);

/* Call fn for each item; fn may remove the item it is given. */
void index_foreach(void (*fn)(struct item *it, void *arg), void *arg);

/*
 * One step of a walk over every item, for walks that drop cache_lock
 * between steps (the scrapes): calls fn for the items of whole buckets
 * from *cursor on until at least budget items were seen, and advances
 * *cursor (0 starts a walk).  Returns true when the walk is complete.
 * Buckets are visited in reverse-binary order (as Redis' SCAN), so an
 * item present from the first step to the last is seen exactly once even
 * when the table doubles between steps; items added or removed meanwhile
 * may be seen or not.
 */
bool index_walk(uint64_t *cursor, unsigned int budget,
		void (*fn)(struct item *it, void *arg), void *arg);

/* log2 of the number of buckets (of the new array while doubling). */
unsigned int index_hashpower(void);

/* True while a doubling is under way (stats: hash_is_expanding). */
bool index_expanding(void);

/* Doublings started since index_init. */
uint64_t index_expansions(void);

/*
 * Move up to n buckets of a doubling under way into the new array (the
 * tick calls it, under cache_lock held exclusively); returns how many
 * moved, 0 when no doubling is under way.
 */
unsigned int index_rehash(unsigned int n);

/* Old buckets an insert or a remove moves while the table doubles. */
#define INDEX_REHASH_STEP 64
/* Old buckets the once-a-second tick moves, and per hold of the lock. */
#define INDEX_REHASH_TICK 16384
#define INDEX_REHASH_HOLD 4096

/* Items a scrape looks at per hold of the shared lock (index_walk). */
#define INDEX_WALK_STEP 1000

#endif
