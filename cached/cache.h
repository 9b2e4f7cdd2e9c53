/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cache.h - item semantics on top of index and store: lookup with expiry
 * and flush, the six store commands, delete, touch, incr/decr, flush_all,
 * checksums.  Callers hold cache_lock exclusively for every function
 * here but the walks and cache_tick, which take it per step, and the
 * key-local ones (cache_store_local and co.), called under
 * cache_key_lock.
 */
#ifndef CACHE_H
#define CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"
#include "index.h"

/*
 * A key-local command (a get, a set, a delete, a touch): cache_lock
 * shared, then the key's index stripe (index.h).  What it changes in the
 * store it changes under the store's mutex too (store_lock, taken last).
 * Lock order: cache_lock, stripe, store mutex.
 */
static inline void cache_key_lock(uint32_t hv)
{
	cache_rdlock();
	index_lock(hv);
}

static inline void cache_key_unlock(uint32_t hv)
{
	index_unlock(hv);
	cache_unlock();
}

enum store_cmd { CMD_SET, CMD_ADD, CMD_REPLACE, CMD_APPEND, CMD_PREPEND, CMD_CAS };

/*
 * Does an item fit memcached's -I bound?  memcached counts a 48-byte
 * header, the key and its NUL, 4 bytes of client flags unless they are 0,
 * the value with its CRLF (nbytes) and 8 bytes of cas.  A set past it is
 * "object too large", an append or prepend NOT_STORED.
 */
static inline bool cache_item_fits(size_t nkey, uint32_t flags, uint64_t nbytes)
{
	return 48 + (uint64_t)nkey + 1 + (flags ? 4 : 0) + nbytes + 8 <=
	       settings.item_size_max;
}
enum store_res {
	R_STORED, R_NOT_STORED, R_EXISTS, R_NOT_FOUND, R_TOO_LARGE, R_NO_MEMORY,
	R_RETRY   /* cache_store_local: repeat under the exclusive lock */
};
enum delta_res { D_OK, D_NON_NUMERIC, D_NOT_FOUND, D_NO_MEMORY };

/* Initialise index and store.  Returns 0 or -1. */
int cache_init(uint64_t maxbytes, bool vol);

/* memcached's exptime rules: 0 never, <= 30 days relative, else absolute
 * unix time, negative = already expired.  Returns absolute time or 0. */
uint32_t cache_exptime(int64_t exptime);

/*
 * Find a live item: expired or flushed items are removed, counted in
 * get_expired or get_flushed as memcached counts them for any command, and
 * not found (*expired set when it was expired).  May return an ITEM_LOST
 * item.
 */
struct item *cache_lookup(const char *key, size_t nkey, uint32_t hv,
			  bool *expired);

/*
 * Make a found item's value readable (unmark volatile data, check the
 * checksum with --verify).  Returns true when it->off can be served; false
 * when the item is (now) ITEM_LOST.
 */
bool cache_readable(struct item *it);

/*
 * Store a value (data holds vlen bytes followed by "\r\n").  cas_in is
 * used by CMD_CAS.  *cas_out receives the new cas on success.
 */
enum store_res cache_store(enum store_cmd cmd, const char *key, size_t nkey,
			   uint32_t hv, uint32_t flags, uint32_t exptime,
			   const char *data, uint32_t vlen, uint64_t cas_in);

/*
 * cache_store, cache_delete and cache_touch for a caller that holds
 * cache_lock shared and the key's stripe (cache_key_lock) instead of the
 * exclusive lock: sets, adds, replaces and cas of hot or absent keys,
 * deletes and touches of hot ones, never a system call or another key's
 * item.  When the command needs more (a lost or volatile value, a new
 * segment, eviction, a doubling of the index, append or prepend) they
 * return R_RETRY (-1 for delete and touch), having changed nothing the
 * exclusive path would not: the caller repeats the command under the
 * exclusive lock.  Delete and touch return 1 found, 0 not found.
 */
enum store_res cache_store_local(enum store_cmd cmd, const char *key,
				 size_t nkey, uint32_t hv, uint32_t flags,
				 uint32_t exptime, const char *data,
				 uint32_t vlen, uint64_t cas_in);
int cache_delete_local(const char *key, size_t nkey, uint32_t hv);
int cache_touch_local(const char *key, size_t nkey, uint32_t hv,
		      uint32_t exptime);

/* Replace a lost item's value, or insert it, with a value from the origin.
 * Returns the item (readable) or NULL. */
struct item *cache_fill(const char *key, size_t nkey, uint32_t hv,
			uint32_t flags, const char *data, uint32_t vlen);

/* incr/decr; result text (no CRLF) in buf (>= 24 bytes). */
enum delta_res cache_delta(const char *key, size_t nkey, uint32_t hv,
			   bool incr, uint64_t delta, char *buf);

/* Delete a key; true when it existed. */
bool cache_delete(const char *key, size_t nkey, uint32_t hv);

/* Set a new exptime on a key; true when it existed. */
bool cache_touch(const char *key, size_t nkey, uint32_t hv, uint32_t exptime);

/* flush_all: delay 0 empties now; > 0 invalidates older items later. */
void cache_flush(int32_t delay);

/* False when the item has expired or a flush_all took it (read-only). */
bool cache_alive(const struct item *it, uint32_t now);

/* Checksum of a value (used with --verify). */
uint32_t cache_csum(const char *p, size_t n);

/*
 * True when the key is known but its bytes are lost (a purge found now
 * included): a rebuild from the origin should come first.
 */
bool cache_lost(const char *key, size_t nkey, uint32_t hv);
/*
 * NULL when it is NULL or its bytes are lost (then it is forgotten and
 * counted in purge_misses, as a key memcached evicted), else it.
 */
struct item *cache_drop_if_lost(struct item *it);

/* Drop a lost item from the index (it became a miss). */
void cache_drop_lost(struct item *it);

/* A fresh cas unique (md's invalidation gives the item a new one). */
uint64_t cache_new_cas(void);

/*
 * Call fn on every item of the index, INDEX_WALK_STEP items per hold of
 * the shared cache lock, which is dropped between steps; stop early when
 * stop (may be NULL) says so after a step.
 */
void cache_walk(void (*fn)(struct item *it, void *arg), void *arg,
		bool (*stop)(void *arg));

/*
 * One step of such a walk: fn on the items of INDEX_WALK_STEP items'
 * worth of buckets from *cursor on (0 starts a walk), under the shared
 * cache lock, taken and dropped here.  Returns true when the walk is
 * complete.  A caller may run anything between steps (index_walk says
 * what a walk sees of a table that changes meanwhile).
 */
bool cache_walk_step(uint64_t *cursor, void (*fn)(struct item *it, void *arg),
		     void *arg);

/*
 * The once-a-second upkeep, called without cache_lock (which it takes per
 * step): idle data goes volatile, and a doubling of the index under way
 * moves a bounded share of its buckets.  Each step is bounded and takes
 * the lock on its own, so gets and sets get in between the steps of a
 * tick that has much to mark; the marks a step claimed are made between
 * the steps, without the lock (store_marks_unlocked).
 */
void cache_tick(uint32_t now, uint32_t idle_secs);

#endif
