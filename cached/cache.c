// SPDX-License-Identifier: GPL-2.0-only
/*
 * cache.c - memcached item semantics over index.c and store.c.
 *
 * Values are stored with their trailing "\r\n" so a hit is served with one
 * copy.  Every function runs under cache_lock and does bounded work; the
 * only system call it can make is the unmark of a volatile range on the
 * first read of cold data (store_prepare_read).
 */
#include "cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "store.h"

#define REALTIME_MAXDELTA (60 * 60 * 24 * 30)

static uint64_t next_cas = 1;   /* atomic: key-local stores take cas too */

static uint64_t take_cas(void)
{
	return __atomic_fetch_add(&next_cas, 1, __ATOMIC_RELAXED);
}
static uint32_t oldest_live;   /* delayed flush_all: items stored by this second die, 0 = none */

int cache_init(uint64_t maxbytes, bool vol)
{
	/* -o hashpower, as memcached's: the first size, 2^16 by default */
	if (index_init(settings.hashpower_init ? settings.hashpower_init : 16) < 0)
		return -1;
	store_item_alive = cache_alive;
	return store_init(maxbytes, vol);
}

/* Absolute expiry as memcached computes it (see cache.h). */
uint32_t cache_exptime(int64_t e)
{
	uint32_t now = clock_secs();

	if (e < 0)
		return 1;           /* in the past: expired at once */
	if (e == 0)
		return 0;
	if (e > REALTIME_MAXDELTA) {
		if (e <= process_started)
			return 1;
		return e > UINT32_MAX ? UINT32_MAX : (uint32_t)e;
	}
	return now + (uint32_t)e;
}

/* FNV-1a 32 over the value. */
uint32_t cache_csum(const char *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 16777619u;
	}
	return h;
}

/* True when a delayed flush_all has taken the item. */
static bool flushed(const struct item *it, uint32_t now)
{
	return oldest_live && oldest_live <= now && it->mtime <= oldest_live;
}

/* True when the item is past its expiry or behind a flush. */
static bool dead(const struct item *it, uint32_t now, bool *expired)
{
	uint32_t exptime = item_exptime(it);

	if (exptime && exptime <= now) {
		*expired = true;
		return true;
	}
	return flushed(it, now);
}

/* A dead item found by a command: counted as memcached counts it. */
static void count_dead(bool expired)
{
	if (expired)
		STAT_ADD(get_expired);
	else
		STAT_ADD(get_flushed);
}

bool cache_alive(const struct item *it, uint32_t now)
{
	uint32_t exptime = item_exptime(it);   /* gat sets it under the shared lock */

	return !(exptime && exptime <= now) && !flushed(it, now);
}

struct item *cache_lookup(const char *key, size_t nkey, uint32_t hv,
			  bool *expired)
{
	struct item *it = index_find(key, nkey, hv);

	*expired = false;
	if (it && dead(it, clock_secs(), expired)) {
		/* as memcached, for every command that looks a key up */
		count_dead(*expired);
		store_forget(it);
		return NULL;
	}
	return it;
}

bool cache_readable(struct item *it)
{
	if (it->state != ITEM_OK)
		return false;
	if (store_prepare_read(it, clock_secs()) != 0)
		return false;
	it->atime = clock_secs();
	if (settings.verify &&
	    cache_csum(store_ptr(it->off), it->vlen + 2) != it->csum) {
		stats.verify_errors++;
		logmsg(0, "verify: checksum mismatch on key '%.*s': not served",
		       (int)it->keylen, it->key);
		store_lose(it);
		return false;
	}
	return true;
}

void cache_drop_lost(struct item *it)
{
	store_forget(it);
}

/*
 * A key whose bytes are lost (and that no origin rebuilt) is a miss, as a
 * key memcached evicted: forget it, so that add stores and replace, cas,
 * touch, delete, incr and decr answer as for an absent key.
 */
struct item *cache_drop_if_lost(struct item *it)
{
	if (it && store_probe(it)) {
		stats.purge_misses++;
		store_forget(it);
		return NULL;
	}
	return it;
}

bool cache_lost(const char *key, size_t nkey, uint32_t hv)
{
	bool expired;
	struct item *it = cache_lookup(key, nkey, hv, &expired);

	return it && store_probe(it);
}

/* Copy a value into fresh storage and point the item at it. */
static int put_value(struct item *it, const char *a, uint32_t alen,
		     const char *b, uint32_t blen)
{
	uint32_t seg;
	uint64_t off;
	char *p;

	if (store_reserve((size_t)alen + blen, &seg, &off) < 0)
		return -1;
	p = store_ptr(off);
	memcpy(p, a, alen);
	if (blen)
		memcpy(p + alen, b, blen);
	it->seg = seg;
	it->off = off;
	it->vlen = alen + blen - 2;
	it->csum = settings.verify ? cache_csum(p, alen + blen) : 0;
	store_link(it);
	return 0;
}

/* Fresh item with a value; inserted in the index, replacing old. */
static struct item *insert_new(const char *key, size_t nkey, uint32_t hv,
			       struct item *old, uint32_t flags,
			       uint32_t exptime, const char *a, uint32_t alen,
			       const char *b, uint32_t blen)
{
	struct item *it = item_new(key, nkey, hv);

	if (!it)
		return NULL;
	it->flags = flags;
	it->exptime = exptime;
	it->atime = it->mtime = clock_secs();
	it->cas = take_cas();
	if (old)
		store_forget(old);   /* first: its space can be reused */
	if (put_value(it, a, alen, b, blen) < 0) {
		free(it);
		return NULL;
	}
	index_insert(it);
	STAT_ADD(total_items);
	__atomic_store_n(&stats.curr_items, index_count(), __ATOMIC_RELAXED);
	return it;
}

/*
 * The key-local stores.  The caller holds cache_lock shared and the key's
 * stripe (cache_key_lock); what changes in the store changes under
 * store_lock.  Each handles the common case only (the key absent, or its
 * value readable without a system call; the new value appended to the
 * active segment; no doubling of the index due) and returns R_RETRY (or
 * -1) before it has changed anything that the exclusive path would not
 * change the same way: the caller then repeats the command under the
 * exclusive lock.  Forgetting an expired item is such a change.
 */
enum store_res cache_store_local(enum store_cmd cmd, const char *key,
				 size_t nkey, uint32_t hv, uint32_t flags,
				 uint32_t exptime, const char *data,
				 uint32_t vlen, uint64_t cas_in)
{
	struct item *old, *it;
	enum store_res r = R_RETRY;
	bool expired = false;
	uint32_t seg;
	uint64_t off;
	char *p;

	if (cmd == CMD_APPEND || cmd == CMD_PREPEND || !index_local_ok())
		return R_RETRY;
	old = index_find(key, nkey, hv);
	if (old && !store_item_hot(old))
		return R_RETRY;   /* lost, or volatile: the exclusive path */
	it = item_new(key, nkey, hv);
	if (!it)
		return R_RETRY;
	store_lock();
	if (old && dead(old, clock_secs(), &expired)) {
		count_dead(expired);
		store_forget(old);
		old = NULL;
	}
	switch (cmd) {
	case CMD_ADD:
		if (old) {
			__atomic_store_n(&old->atime, clock_secs(), __ATOMIC_RELAXED);
			r = R_NOT_STORED;
			goto out;
		}
		break;
	case CMD_REPLACE:
		if (!old) {
			r = R_NOT_STORED;
			goto out;
		}
		break;
	case CMD_CAS:
		if (!old) {
			STAT_ADD(cas_misses);
			r = R_NOT_FOUND;
			goto out;
		}
		if (old->cas != cas_in) {
			STAT_ADD(cas_badval);
			r = R_EXISTS;
			goto out;
		}
		break;
	default:
		break;
	}
	if (store_reserve_local((size_t)vlen + 2, &seg, &off) < 0)
		goto out;
	if (cmd == CMD_CAS)
		STAT_ADD(cas_hits);
	p = store_ptr(off);
	memcpy(p, data, (size_t)vlen + 2);
	it->flags = flags;
	it->exptime = exptime;
	it->atime = it->mtime = clock_secs();
	it->cas = take_cas();
	it->seg = seg;
	it->off = off;
	it->vlen = vlen;
	it->csum = settings.verify ? cache_csum(p, (size_t)vlen + 2) : 0;
	store_link(it);
	if (old)
		store_forget(old);
	index_insert_local(it);
	store_unlock();
	STAT_ADD(total_items);
	__atomic_store_n(&stats.curr_items, index_count(), __ATOMIC_RELAXED);
	return R_STORED;
out:
	store_unlock();
	free(it);
	return r;
}

int cache_delete_local(const char *key, size_t nkey, uint32_t hv)
{
	struct item *it = index_find(key, nkey, hv);
	bool expired = false, found;

	if (!it)
		return 0;
	if (!store_item_hot(it))
		return -1;
	found = !dead(it, clock_secs(), &expired);
	if (!found)
		count_dead(expired);
	store_lock();
	store_forget(it);
	store_unlock();
	return found;
}

int cache_touch_local(const char *key, size_t nkey, uint32_t hv,
		      uint32_t exptime)
{
	struct item *it = index_find(key, nkey, hv);
	bool expired = false;

	if (!it)
		return 0;
	if (!store_item_hot(it))
		return -1;
	if (dead(it, clock_secs(), &expired)) {
		count_dead(expired);
		store_lock();
		store_forget(it);
		store_unlock();
		return 0;
	}
	item_set_exptime(it, exptime);
	__atomic_store_n(&it->atime, clock_secs(), __ATOMIC_RELAXED);
	return 1;
}

enum store_res cache_store(enum store_cmd cmd, const char *key, size_t nkey,
			   uint32_t hv, uint32_t flags, uint32_t exptime,
			   const char *data, uint32_t vlen, uint64_t cas_in)
{
	bool expired;
	struct item *old = cache_lookup(key, nkey, hv, &expired);
	char *tmp = NULL;
	struct item *it;

	if (cmd != CMD_SET)
		old = cache_drop_if_lost(old);
	switch (cmd) {
	case CMD_ADD:
		if (old) {
			old->atime = clock_secs();
			return R_NOT_STORED;
		}
		break;
	case CMD_REPLACE:
		if (!old)
			return R_NOT_STORED;
		break;
	case CMD_CAS:
		if (!old) {
			STAT_ADD(cas_misses);
			return R_NOT_FOUND;
		}
		if (old->cas != cas_in) {
			STAT_ADD(cas_badval);
			return R_EXISTS;
		}
		STAT_ADD(cas_hits);
		break;
	case CMD_APPEND:
	case CMD_PREPEND:
		if (!old || !cache_readable(old)) {
			if (old && old->state == ITEM_LOST) {
				stats.purge_misses++;
				store_forget(old);
			}
			return R_NOT_STORED;
		}
		/* as memcached, whose joined item finds no room */
		if (!cache_item_fits(nkey, old->flags,
				     (uint64_t)old->vlen + vlen + 2))
			return R_NOT_STORED;
		/* old and new parts are joined in a bounded temporary copy */
		tmp = malloc((size_t)old->vlen + vlen + 2);
		if (!tmp)
			return R_NO_MEMORY;
		if (cmd == CMD_APPEND) {
			memcpy(tmp, store_ptr(old->off), old->vlen);
			memcpy(tmp + old->vlen, data, vlen + 2);
		} else {
			memcpy(tmp, data, vlen);
			memcpy(tmp + vlen, store_ptr(old->off), old->vlen + 2);
		}
		flags = old->flags;
		exptime = old->exptime;
		it = insert_new(key, nkey, hv, old, flags, exptime, tmp,
				old->vlen + vlen + 2, NULL, 0);
		free(tmp);
		return it ? R_STORED : R_NO_MEMORY;
	case CMD_SET:
		break;
	}
	it = insert_new(key, nkey, hv, old, flags, exptime, data, vlen + 2,
			NULL, 0);
	return it ? R_STORED : R_NO_MEMORY;
}

struct item *cache_fill(const char *key, size_t nkey, uint32_t hv,
			uint32_t flags, const char *data, uint32_t vlen)
{
	bool expired;
	struct item *it = cache_lookup(key, nkey, hv, &expired);

	if (it && it->state == ITEM_LOST) {
		/*
		 * Rebuild in place: new bytes, new cas, and what the origin
		 * gave with the bytes.  Its flags (0 from gen: and dir:, the
		 * upstream's from memcache:), not those the client gave the
		 * bytes that were lost, which may say how to decode them; none
		 * of the lost value's meta bits (fetched, win token, stale).
		 * The key keeps its expiry: the lifetime its client set (and
		 * wrote through to a memcache: origin), not the origin's.
		 */
		store_unlink(it);
		it->flags = flags;   /* before the link: its class counts them */
		if (put_value(it, data, vlen + 2, NULL, 0) < 0) {
			store_forget(it);
			return NULL;
		}
		it->mflags &= ITEM_MF_KEY;
		it->cas = take_cas();
		it->atime = it->mtime = clock_secs();
		return it;
	}
	if (it)
		return cache_readable(it) ? it : NULL;
	return insert_new(key, nkey, hv, NULL, flags, 0, data, vlen + 2,
			  NULL, 0);
}

/*
 * memcached's safe_strtoull on a stored value, of any length: memcached
 * parses the item's bytes in place (leading spaces and zeros included),
 * so a 40-byte "5" padded with spaces is the number 5.  Short values are
 * parsed from a stack copy, long ones from a heap copy.
 */
static bool value_to_u64(const char *p, uint32_t len, uint64_t *out)
{
	char sbuf[32], *buf = sbuf, *end;
	unsigned long long v;
	bool ok = false;

	if (len == 0)
		return false;
	if (len >= sizeof(sbuf) && !(buf = malloc((size_t)len + 1)))
		return false;
	memcpy(buf, p, len);
	buf[len] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno != ERANGE && end != buf &&
	    (*end == '\0' || *end == ' ' || (*end >= '\t' && *end <= '\r')) &&
	    !((long long)v < 0 && memchr(buf, '-', (size_t)(end - buf)))) {
		*out = v;
		ok = true;
	}
	if (buf != sbuf)
		free(buf);
	return ok;
}

enum delta_res cache_delta(const char *key, size_t nkey, uint32_t hv,
			   bool incr, uint64_t delta, char *buf)
{
	bool expired;
	struct item *it = cache_lookup(key, nkey, hv, &expired);
	uint64_t v;
	size_t res;

	if (it && !cache_readable(it)) {
		stats.purge_misses++;
		store_forget(it);
		it = NULL;
	}
	if (!it)
		return D_NOT_FOUND;
	if (!value_to_u64(store_ptr(it->off), it->vlen, &v))
		return D_NON_NUMERIC;
	if (incr)
		v += delta;
	else
		v = delta > v ? 0 : v - delta;
	if (incr)
		stats.incr_hits++;
	else
		stats.decr_hits++;
	res = (size_t)snprintf(buf, 24, "%llu", (unsigned long long)v);
	if (res <= it->vlen && !store_value_shared(it)) {
		/*
		 * In place, padded with spaces, as memcached does when nobody
		 * else holds the item.  A reply in flight may point at these
		 * bytes (zero copy) and must send the value of the cas it
		 * named: then, as memcached, a new value of the number's length.
		 */
		char *p = store_ptr(it->off);

		memcpy(p, buf, res);
		memset(p + res, ' ', it->vlen - res);
		it->cas = take_cas();
		it->mtime = clock_secs();
		if (settings.verify)
			it->csum = cache_csum(p, it->vlen + 2);
		return D_OK;
	} else {
		char tmp[32];

		memcpy(tmp, buf, res);
		memcpy(tmp + res, "\r\n", 2);
		if (!insert_new(key, nkey, hv, it, it->flags, it->exptime, tmp,
				(uint32_t)res + 2, NULL, 0))
			return D_NO_MEMORY;
	}
	return D_OK;
}

bool cache_delete(const char *key, size_t nkey, uint32_t hv)
{
	bool expired;
	struct item *it = cache_drop_if_lost(cache_lookup(key, nkey, hv, &expired));

	if (!it)
		return false;
	store_forget(it);
	return true;
}

bool cache_touch(const char *key, size_t nkey, uint32_t hv, uint32_t exptime)
{
	bool expired;
	struct item *it = cache_drop_if_lost(cache_lookup(key, nkey, hv, &expired));

	if (!it)
		return false;
	it->exptime = exptime;
	it->atime = clock_secs();
	return true;
}

void cache_flush(int32_t delay)
{
	if (delay > 0) {
		/*
		 * As memcached: the flush takes effect a second before the
		 * deadline and takes every item stored up to that second, so
		 * "flush_all 1" also hides what is stored in the current second.
		 * A deadline in the past (1 - 1 = 0) flushes nothing.
		 */
		oldest_live = cache_exptime(delay) - 1;
		/* memcached takes a cas unique for a flush that acts at once */
		if (oldest_live && oldest_live <= clock_secs())
			take_cas();
		return;
	}
	take_cas();
	oldest_live = 0;
	store_flush_all();
	__atomic_store_n(&stats.curr_items, index_count(), __ATOMIC_RELAXED);
}

uint64_t cache_new_cas(void)
{
	return take_cas();
}

bool cache_walk_step(uint64_t *cursor, void (*fn)(struct item *it, void *arg),
		     void *arg)
{
	bool done;

	cache_rdlock();
	done = index_walk(cursor, INDEX_WALK_STEP, fn, arg);
	cache_unlock();
	return done;
}

void cache_walk(void (*fn)(struct item *it, void *arg), void *arg,
		bool (*stop)(void *arg))
{
	uint64_t cursor = 0;

	while (!cache_walk_step(&cursor, fn, arg) && !(stop && stop(arg)))
		;
}

void cache_tick(uint32_t now, uint32_t idle_secs)
{
	static struct store_marks marks;   /* ticks do not overlap */
	uint32_t cursor = 0;
	bool more;

	do {
		cache_wrlock();
		more = store_tick_step(now, idle_secs, &cursor, STORE_TICK_MARKS, &marks);
		cache_unlock();
		store_marks_unlocked(&marks);   /* the system calls: no lock */
	} while (more);
	cache_wrlock();
	store_marks_settle(&marks);
	cache_unlock();
	for (int i = 0; i < INDEX_REHASH_TICK / INDEX_REHASH_HOLD; i++) {
		cache_wrlock();
		more = index_rehash(INDEX_REHASH_HOLD) == INDEX_REHASH_HOLD;
		cache_unlock();
		if (!more)
			break;
	}
}
